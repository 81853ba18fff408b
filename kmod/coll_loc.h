/* SPDX-License-Identifier: GPL-2.0 */
/*
 * collective: private declarations, grouped by the file that defines them.
 *
 * Object model and lifetimes
 * --------------------------
 * struct coll_file   one per open descriptor; kref held by the descriptor
 *                    and by each rank's part (coll_sub) it submitted.
 * struct coll_member one per (descriptor, communicator) membership; kref
 *                    held by the descriptor's xarray and by each submission
 *                    in progress; holds a kref on the comm.
 * struct coll_comm   a communicator; kref held by its members, by the
 *                    registry while joinable/ready, and by its tasks.
 * struct coll_plan   a cached schedule; kref held by the comm's cache and by
 *                    each task running it (coll_plan.c).
 * struct coll_task   one collective, matched across ranks by sequence
 *                    number; kref held by the comm's in-flight list (until
 *                    DONE), by each blocking caller and by each work item
 *                    while it runs.  Nothing outlives the collective:
 *                    requests keep only their result.
 * struct coll_sub    one rank's part of a task (its buffers, pinned); owned
 *                    by the task.  Each rank unpins its own once it sees
 *                    DONE; the task's release unpins what is left.
 * struct coll_req    a non-blocking request's handle and result; kref held
 *                    by the descriptor's xarray and by its coll_sub.
 *
 * Locks, outermost first
 * ----------------------
 * coll_file.lock   (mutex)    the descriptor's members and requests.
 * coll_comms_lock  (mutex)    the registry; comm->state, members, njoined.
 * coll_plan_cache.lock (mutex) a comm's plans.
 * coll_comm.lock   (spinlock) comm->dead, members' next_seq, in-flight
 *                             tasks and their narrived and sub[].
 * coll_task.lock   (spinlock) task state transitions (coll_run.c).
 * coll_procs_lock  (spinlock) per-process communicator counts.
 */
#ifndef COLL_LOC_H
#define COLL_LOC_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <linux/collective.h>

#include "coll_sched.h"

struct coll_obuf;
struct coll_proc;
struct net;

/* Module-wide statistics, read by COLL_INFO. */
struct coll_stats {
	atomic64_t pinned_pages;
	atomic64_t comms;
	atomic64_t ops;
	atomic64_t ops_total;
	atomic64_t bytes_total;
	atomic64_t reqs;
	atomic64_t kbytes;
	atomic64_t plans;
};

/* coll_main.c */
extern struct coll_stats coll_stats;
extern struct workqueue_struct *coll_wq;
extern unsigned int coll_join_timeout_ms;
extern unsigned int coll_default_algo;
extern unsigned int coll_ring_chunk_bytes;
extern unsigned int coll_exec_chunk_bytes;
extern unsigned int coll_solo_bytes;
extern unsigned int coll_spin_ns;
extern unsigned int coll_max_requests;
extern unsigned int coll_max_comms;
extern unsigned int coll_plan_cache_size;

/* The argument of an ioctl, as the handlers see it (iommufd_ucmd). */
struct coll_ucmd {
	void __user *ubuf;	/* the caller's struct */
	u32 usize;		/* its size as the caller gave it */
	void *cmd;		/* the kernel's copy, zero-extended */
};

struct coll_file {
	struct kref kref;
	struct mutex lock;		/* members, reqs, cursors, nreqs */
	struct xarray members;		/* handle -> struct coll_member */
	struct xarray reqs;		/* handle -> struct coll_req */
	u32 member_next;		/* xa_alloc_cyclic() cursors */
	u32 req_next;
	u32 nreqs;			/* requests held, reserved included */
	atomic_t ndone;			/* requests complete, not collected */
	wait_queue_head_t wq;		/* their completions: WAIT, poll() */
};

void coll_file_release(struct kref *kref);

/* coll_acct.c */
void *coll_kvzalloc(size_t size);
void coll_kvfree(void *p, size_t size);
int coll_proc_charge(struct coll_proc **out);
void coll_proc_uncharge(struct coll_proc *proc);

/* coll_comm.c */
enum coll_comm_state {
	COLL_COMM_JOINING,
	COLL_COMM_READY,
	COLL_COMM_GONE,		/* left the registry */
};

struct coll_plan_cache {
	struct mutex lock;		/* plans, nplans */
	struct list_head plans;		/* most recently used first */
	u32 nplans;
};

struct coll_comm {
	struct kref kref;
	struct hlist_node node;		/* registry, under coll_comms_lock */
	struct net *net;		/* the namespace it lives in (a ref) */
	u8 id[COLL_ID_BYTES];		/* secret: never printed */
	u32 serial;			/* names it in traces and logs */
	u32 nranks;
	u32 njoined;			/* coll_comms_lock */
	enum coll_comm_state state;	/* coll_comms_lock */
	wait_queue_head_t join_wq;
	spinlock_t lock;		/* dead, tasks, members' next_seq */
	bool dead;			/* lock */
	struct list_head tasks;		/* lock: in-flight coll_task.node */
	struct coll_member **members;	/* coll_comms_lock */
	struct coll_plan_cache plans;
};

struct coll_member {
	struct kref kref;
	struct coll_comm *comm;		/* holds a ref */
	struct coll_proc *proc;		/* charged for this membership */
	u32 rank;
	u64 next_seq;			/* comm->lock */
};

int coll_comm_join(struct coll_file *cf, struct coll_ucmd *ucmd);
int coll_comm_leave(struct coll_file *cf, u32 handle);
void coll_comm_leave_all(struct coll_file *cf);
void coll_comm_put(struct coll_comm *comm);
void coll_member_put(struct coll_member *m);
void coll_comm_kill(struct coll_comm *comm, int err);
int coll_comm_init_registry(void);

/* coll_plan.c */
struct coll_plan_key {
	u32 prim;
	u32 algo;		/* resolved, never AUTO */
	u32 root;
	u32 flags;		/* COLL_SCHED_F_* */
	u64 count;
	u64 chunk;		/* ring chunk, elements */
	u64 exec_chunk;		/* claim unit, elements */
};

struct coll_plan {
	struct kref kref;
	struct list_head node;		/* the comm's cache */
	struct coll_plan_key key;
	struct coll_sched sched;
	size_t bytes;
};

struct coll_plan *coll_plan_get(struct coll_comm *comm,
				const struct coll_plan_key *key);
void coll_plan_put(struct coll_plan *plan);
void coll_plan_cache_init(struct coll_plan_cache *pc);
void coll_plan_cache_flush(struct coll_plan_cache *pc);

/* coll_task.c: the collective object, its ranks' parts and its lifetime */
enum coll_task_state {
	COLL_TASK_ARRIVING,	/* not every rank has submitted */
	COLL_TASK_RUNNING,
	COLL_TASK_DONE,		/* final: no one touches the buffers */
};

/* What every rank must agree on (EPROTO otherwise). */
struct coll_desc {
	u32 prim;
	u32 dtype;
	u32 redop;
	u32 root;
	u32 algo;
	u64 count;
	bool inplace;		/* agreed on for AlltoAll only */
};

#define COLL_SUB_RELEASED	0	/* sub->flags: buffers unpinned */

struct coll_sub {
	struct coll_desc desc;		/* as this rank asked */
	struct coll_obuf *ob[2];	/* by enum coll_sbuf; may be the same */
	u64 base[2];			/* byte offset of each buffer in ob */
	struct coll_file *cf;		/* holds a ref, for wake-ups */
	struct coll_req *req;		/* non-blocking: holds a ref */
	struct work_struct work;	/* non-blocking progress */
	struct coll_task *task;
	u32 rank;
	unsigned long flags;
};

struct coll_task {
	struct kref kref;
	struct list_head node;		/* comm->tasks */
	struct list_head abort_node;	/* private list of coll_comm_kill() */
	struct coll_comm *comm;		/* holds a ref */
	u64 seq;
	u32 nranks;
	u32 narrived;			/* comm->lock */
	spinlock_t lock;		/* state transitions (coll_run.c) */
	enum coll_task_state state;	/* see coll_task_state() */
	int status;			/* 0 or -errno, final once DONE */
	wait_queue_head_t wq;
	u64 bytes;			/* user bytes moved, for statistics */
	size_t alloc_bytes;
	struct work_struct free_work;	/* unpins what ranks left pinned */

	/* execution, set up once by the last arriving rank (coll_run.c) */
	struct coll_desc desc;
	u32 esize;
	struct coll_plan *plan;		/* holds a ref */
	const struct coll_sched *sched;	/* &plan->sched */
	const struct coll_xport_ops *xport;
	atomic_t next_chunk;
	atomic_t round_left;
	u32 cur_round;			/* release/acquire, see coll_run.c */
	atomic_t nactive;
	bool solo;			/* small: the last rank to arrive runs it
					 * alone, the others just wait for DONE
					 */

	struct coll_sub *sub[];		/* by rank; comm->lock until started */
};

/*
 * Lockless read of a task's state.  The state only moves forward and is
 * written with smp_store_release() after everything it publishes (status,
 * the execution set-up, the buffers' contents): this acquire pairs with it.
 */
static inline enum coll_task_state coll_task_state(struct coll_task *task)
{
	/* pairs with smp_store_release() in coll_task_set_state() */
	return smp_load_acquire(&task->state);
}

struct coll_task *coll_task_alloc(struct coll_comm *comm);
void coll_task_free_unused(struct coll_task *task);
void coll_task_get(struct coll_task *task);
void coll_task_put(struct coll_task *task);
struct coll_sub *coll_sub_alloc(void);
void coll_sub_free(struct coll_sub *sub);
int coll_sub_pin(struct coll_sub *sub, const struct coll_op *arg, u32 nranks,
		 u32 rank);
void coll_sub_unpin(struct coll_sub *sub);
void coll_task_release_rank(struct coll_task *task, u32 rank);

/* coll_match.c: submissions, matched across ranks by sequence number */
int coll_op_submit(struct coll_file *cf, struct coll_ucmd *ucmd);
bool coll_prim_reduces(u32 prim);
bool coll_prim_rooted(u32 prim);

/* coll_run.c: the one state machine, and cooperative execution */
void coll_run_start(struct coll_task *task);
int coll_run_participate(struct coll_task *task, bool killable);
void coll_run_abort(struct coll_task *task, int err);
void coll_run_work(struct work_struct *work);

/* coll_xport_local.c: data movement between the pinned pages of local ranks */
struct coll_xport_ops {
	const char *name;
	/* Run one chunk whose places have been checked against the buffers. */
	void (*chunk)(struct coll_task *task, const struct coll_chunk *ch);
};

extern const struct coll_xport_ops coll_xport_local;

/* coll_req.c: non-blocking requests */
struct coll_req {
	struct kref kref;
	int status;			/* valid once done */
	bool done;			/* release/acquire */
};

struct coll_req *coll_req_alloc(void);
void coll_req_put(struct coll_req *req);
void coll_req_complete(struct coll_req *req, struct coll_file *cf,
		       int status);
int coll_req_wait(struct coll_file *cf, struct coll_wait *arg, bool test);
void coll_req_release_all(struct coll_file *cf);
bool coll_file_has_done(struct coll_file *cf);

/* coll_obuf.c */
#define COLL_OBUF_LEAF	(PAGE_SIZE / sizeof(struct page *))

struct coll_obuf {
	struct page ***leaves;		/* page pointers, a page of them each */
	unsigned long npages;
	unsigned long nleaves;
	unsigned int first_off;		/* offset of the buffer in page 0 */
	u64 len;
	bool writable;
	struct mm_struct *mm;		/* mmgrab'ed: pinned_vm is charged there */
};

static inline struct page *coll_obuf_page(const struct coll_obuf *ob,
					  unsigned long i)
{
	return ob->leaves[i / COLL_OBUF_LEAF][i % COLL_OBUF_LEAF];
}

int coll_obuf_pin(u64 uaddr, u64 len, bool writable, struct coll_obuf **out);
void coll_obuf_release(struct coll_obuf *ob);

/* coll_reduce.c */
typedef void (*coll_reduce_fn)(void *dst, const void *a, const void *b,
			       size_t n);
u32 coll_dtype_size(u32 dtype);
bool coll_dtype_is_float(u32 dtype);
coll_reduce_fn coll_reduce_get(u32 dtype, u32 redop, bool *fpu);
void coll_reduce_select(void);
void coll_reduce_div(u32 dtype, void *dst, size_t n, u32 div);

/* coll_reduce_fp.c (built with the FPU enabled: call inside kernel_fpu_*) */
coll_reduce_fn coll_reduce_fp_get(u32 dtype, u32 redop);
void coll_reduce_fp_div(u32 dtype, void *dst, size_t n, u32 div);

/* coll_reduce_avx2.c (built with AVX2: only if the CPU has it) */
coll_reduce_fn coll_reduce_avx2_get(u32 dtype, u32 redop);

#endif /* COLL_LOC_H */
