/* SPDX-License-Identifier: GPL-2.0 */
/*
 * collective: private declarations, grouped by the file that defines them.
 *
 * Object model and lifetimes
 * --------------------------
 * struct coll_file   one per open descriptor; kref held by the descriptor,
 *                    by every op slot it filled and by nothing else.
 * struct coll_member one per (descriptor, communicator) membership; owned by
 *                    the coll_file (its xarray), holds a kref on the comm.
 * struct coll_comm   a communicator; kref held by its members, by the
 *                    registry while joinable/ready, and by its ops.
 * struct coll_task   one collective, matched across ranks by sequence
 *                    number; kref held by the comm's in-flight list (until
 *                    done), by each blocking caller and non-blocking request,
 *                    and by each executor (work item) while it runs.
 *                    Releasing the last ref unpins every rank's buffers, so
 *                    no page is unpinned while anyone may still touch it.
 *
 * Locks, outermost first
 * ----------------------
 * coll_file.lock   (mutex)    the descriptor's members and requests.
 * coll_comms_lock  (mutex)    the registry; comm->state, members, njoined.
 * coll_comm.lock   (spinlock) comm->dead, next_seq of members, in-flight ops.
 * coll_task.lock   (spinlock) op->state and op->status.
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

/* Per-module statistics, read by COLL_INFO. */
struct coll_stats {
	atomic64_t pinned_pages;
	atomic64_t comms;
	atomic64_t ops;
	atomic64_t ops_total;
	atomic64_t bytes_total;
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

struct coll_file {
	struct kref kref;
	struct mutex lock;		/* members, reqs */
	struct xarray members;		/* handle -> struct coll_member */
	struct xarray reqs;		/* handle -> struct coll_req */
	wait_queue_head_t pollwq;
};

void coll_file_release(struct kref *kref);

/* coll_comm.c */
enum coll_comm_state {
	COLL_COMM_JOINING,
	COLL_COMM_READY,
	COLL_COMM_GONE,		/* left the registry */
};

struct coll_comm {
	struct kref kref;
	struct list_head node;		/* coll_comms, under coll_comms_lock */
	u8 id[COLL_ID_BYTES];		/* secret: never printed */
	u32 serial;			/* names it in traces and logs */
	u32 nranks;
	u32 njoined;			/* coll_comms_lock */
	enum coll_comm_state state;	/* coll_comms_lock */
	wait_queue_head_t join_wq;
	spinlock_t lock;		/* dead, ops, members' next_seq */
	bool dead;			/* lock */
	struct list_head ops;		/* lock: in-flight coll_task.node */
	struct coll_member **members;	/* coll_comms_lock */
};

struct coll_member {
	struct coll_comm *comm;		/* holds a ref */
	u32 rank;
	u64 next_seq;			/* comm->lock */
};

int coll_comm_join(struct coll_file *cf, struct coll_comm_init *arg);
int coll_comm_leave(struct coll_file *cf, u32 handle);
void coll_comm_leave_all(struct coll_file *cf);
void coll_comm_put(struct coll_comm *comm);

/* coll_task.c */
enum coll_op_state {
	COLL_OP_ARRIVING,	/* not every rank has submitted */
	COLL_OP_RUNNING,
	COLL_OP_DONE,		/* final: no one touches the buffers */
};

struct coll_op_desc {
	u32 prim;
	u32 dtype;
	u32 redop;
	u32 root;
	u32 algo;
	u64 count;
	bool inplace;
};

struct coll_slot {
	bool nonblock;
	unsigned long released;		/* bit 0: buffers unpinned */
	struct coll_op_desc desc;
	struct coll_obuf *ob[2];	/* by enum coll_sbuf; may be the same */
	u64 base[2];			/* byte offset of each buffer in ob */
	struct coll_file *cf;		/* holds a ref, for poll wake-ups */
	struct work_struct work;	/* non-blocking progress */
	struct coll_task *op;
};

struct coll_task {
	struct kref kref;
	struct list_head node;		/* comm->ops */
	struct list_head abort_node;	/* private list of coll_comm_kill() */
	struct coll_comm *comm;		/* holds a ref */
	u64 seq;
	u32 nranks;
	u32 narrived;			/* comm->lock */
	spinlock_t lock;		/* state, status */
	enum coll_op_state state;	/* lock */
	int status;			/* lock; 0 or -errno, final once set */
	wait_queue_head_t wq;
	u64 bytes;			/* user bytes moved, for statistics */
	struct work_struct free_work;	/* unpins what ranks left pinned */

	/* execution, set up once by the last arriving rank */
	struct coll_op_desc desc;
	u32 esize;
	struct coll_sched sched;
	u64 chunk_elems;
	u32 *chunk_first;		/* nsteps + 1: first chunk of each step */
	atomic_t next_chunk;
	atomic_t round_left;
	u32 cur_round;			/* written with release semantics */
	atomic_t nactive;
	bool solo;			/* small: the last rank to arrive runs it
					 * alone, the others just wait for DONE
					 */

	struct coll_slot slot[];
};

/*
 * Lockless read of a task's state, for waiters.  state is written under
 * task->lock and only ever moves forward; the acquire makes what the writer
 * did before (status, the buffers' contents) visible once DONE is seen.
 */
static inline enum coll_op_state coll_task_state(struct coll_task *task)
{
	/* pairs with spin_unlock() after the state change */
	return smp_load_acquire(&task->state);
}

struct coll_req {
	struct coll_task *op;		/* holds a ref */
	u32 rank;
};

int coll_op_submit(struct coll_file *cf, struct coll_op *arg);
int coll_op_wait(struct coll_file *cf, struct coll_wait *arg, bool test);
void coll_op_put(struct coll_task *op);
void coll_op_abort(struct coll_task *op, int err);
void coll_task_complete(struct coll_task *task);
void coll_task_try_finish(struct coll_task *task);
void coll_req_free(struct coll_req *req);
bool coll_file_has_done(struct coll_file *cf);

/* coll_exec.c */
int coll_exec_prepare(struct coll_task *task);
int coll_exec_participate(struct coll_task *task, bool killable);
void coll_exec_solo(struct coll_task *task);

/* coll_obuf.c */
struct coll_obuf {
	struct page **pages;
	unsigned long npages;
	unsigned int first_off;		/* offset of the buffer in pages[0] */
	u64 len;
	bool writable;
	struct mm_struct *mm;		/* mmgrab'ed: pinned_vm is charged there */
};

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
