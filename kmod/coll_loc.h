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
 *                    DONE; the task's release unpins what is left (all of
 *                    a failed collective across hosts, after its grants
 *                    are revoked).
 * struct coll_req    a non-blocking request's handle and result; kref held
 *                    by the descriptor's xarray (or, submitted through
 *                    io_uring, by the io_uring command until its
 *                    completion is posted) and by its coll_sub.
 * struct coll_reg    a pinned buffer of a descriptor's registration cache
 *                    (coll_regcache.c); kref held by the cache while linked
 *                    or stale, and by each coll_sub using it; holds a kref
 *                    on its coll_file.
 *
 * Locks, outermost first
 * ----------------------
 * coll_file.lock   (mutex)    the descriptor's members and requests.
 * coll_comms_lock  (mutex)    the registry; comm->state, members, njoined.
 * coll_tune_lock   (mutex)    writers of tunables (coll_tune.c).
 * coll_plan_cache.lock (mutex) a comm's plans.
 * coll_comm.lock   (spinlock) comm->dead, members' next_seq, in-flight
 *                             tasks and their narrived and sub[].
 * coll_task.lock   (spinlock) task state transitions (coll_run.c).
 * coll_procs_lock  (spinlock) per-process communicator counts.
 * coll_comms_all_lock (spinlock, irqsave) the list of every communicator
 *                             alive, for netlink (coll_comm.c); innermost.
 * coll_file.ulock  (spinlock, irqsave) the descriptor's io_uring commands
 *                             in flight (coll_uring.c); taken alone, from
 *                             wherever a collective ends.
 * coll_regcache.lock (spinlock) a descriptor's registration cache; taken
 *                             alone, also in mmu notifier callbacks (under
 *                             mmap_lock, in reclaim): nothing sleeps,
 *                             allocates or unpins under it.
 */
#ifndef COLL_LOC_H
#define COLL_LOC_H

#include <linux/errno.h>
#include <linux/hashtable.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <linux/uidgid.h>
#include <linux/collective.h>
#include <linux/collective_nl.h>

#include "coll_sched.h"
#include "coll_wire.h"

struct coll_comm;
struct io_uring_cmd;
struct coll_file;
struct coll_obuf;
struct coll_proc;
struct coll_task;
struct coll_link;
struct coll_xtask;
struct coll_eager;
struct coll_map;
struct crypto_shash;
struct net;
struct socket;

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
	atomic64_t mr_allocs;		/* FRWR regions allocated */
	atomic64_t mr_reuses;		/* taken from a device's pool */
	atomic64_t reg_hits;		/* buffers found in a registration cache */
	atomic64_t reg_misses;		/* looked up there and pinned */
	atomic64_t reg_evictions;	/* unused entries dropped for room */
};

/* coll_main.c */
extern struct coll_stats coll_stats;
extern struct workqueue_struct *coll_wq;
extern unsigned int coll_join_timeout_ms;
extern unsigned int coll_default_algo;
extern unsigned int coll_ring_chunk_bytes;
extern unsigned int coll_mr_pool;
extern unsigned int coll_busy_poll_us;
extern unsigned int coll_rdma_qps;
extern unsigned int coll_exec_chunk_bytes;
extern unsigned int coll_solo_bytes;
extern unsigned int coll_spin_ns;
extern unsigned int coll_max_requests;
extern unsigned int coll_max_comms;
extern unsigned int coll_plan_cache_size;
extern unsigned int coll_port;
extern unsigned int coll_eager_bytes;
extern unsigned int coll_hier_bytes;
extern unsigned int coll_peer_timeout_ms;
extern unsigned int coll_slot_bytes;
extern unsigned int coll_map_bytes;
extern unsigned int coll_map_slots;

/* coll_regcache.c: the registration cache of a descriptor */
struct coll_reg;

#define COLL_REG_HASH_BITS	6	/* 64 chains: 4 entries each at 256 */

struct coll_regcache {
	spinlock_t lock;		/* all below; innermost (see the file) */
	struct mm_struct *mm;		/* the user's, mmgrab'ed at first use */
	struct list_head entries;	/* servable, least recently used first */
	/* the same entries, by address: a lookup, or a miss, walks one chain */
	DECLARE_HASHTABLE(index, COLL_REG_HASH_BITS);
	struct list_head stale;		/* invalidated: the cache's ref to drop */
	u32 nentries;			/* in entries */
	bool closed;			/* the descriptor is closing */
	struct work_struct reap_work;	/* drops the stale ones */
};

extern unsigned int coll_reg_cache;
void coll_regcache_init(struct coll_regcache *rc);
int coll_regcache_pin(struct coll_file *cf, u64 uaddr, u64 len,
		      bool writable, struct coll_obuf **out, bool *hit);
void coll_regcache_unuse(struct coll_reg *e, bool keep);
u32 coll_regcache_get_segs(struct coll_file *cf, struct coll_obuf *comp,
			   bool writable);
void coll_regcache_unuse_segs(struct coll_obuf *comp, bool keep);
void coll_regcache_flush(struct coll_regcache *rc);
void coll_regcache_destroy(struct coll_regcache *rc);

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
	spinlock_t ulock;		/* ucmds, nucmds (coll_uring.c) */
	struct list_head ucmds;		/* io_uring commands in flight */
	u32 nucmds;			/* their number, reserved included (read unlocked too) */
	struct coll_regcache rc;	/* pinned buffers kept (coll_regcache.c) */
	struct coll_obuf *gstage;	/* a fused group's buffer kept (coll_group.c; xchg) */
	struct coll_gmem *gmem;		/* a group call's arrays kept (coll_group.c; xchg) */
};

void coll_file_release(struct kref *kref);
void coll_group_mem_free(struct coll_gmem *gm);

/* coll_acct.c */
void *coll_kvzalloc(size_t size);
void coll_kvfree(void *p, size_t size);
int coll_proc_charge(struct coll_proc **out);
void coll_proc_uncharge(struct coll_proc *proc);

/* coll_auth.c */
struct coll_auth {
	struct crypto_shash *tfm;	/* hmac(sha256) keyed with the id */
	u8 tag[COLL_WIRE_TAG_BYTES];	/* names the communicator on the wire */
};

int coll_auth_init(struct coll_auth *auth, const u8 *id);
void coll_auth_destroy(struct coll_auth *auth);
int coll_auth_mac(struct coll_auth *auth, const char *label, const void *a,
		  size_t alen, const void *b, size_t blen, u8 *out);
bool coll_auth_equal(const u8 *a, const u8 *b);

/* coll_hosts.c: the hosts of a communicator that spans several */
struct coll_hosts {
	u32 nhosts;
	u32 self;			/* this host's index */
	u32 nlocal;			/* ranks on this host */
	u32 local;			/* ranks per host (rank r on r / local), or 0 */
	u32 flags;			/* COLL_COMM_F_* */
	struct coll_host *tab;		/* nhosts, as the user gave them */
	u32 *rank_host;			/* nranks: the host of each rank */
	u32 *host_nranks;		/* nhosts */
	u8 layout[COLL_WIRE_MAC_BYTES];	/* HMAC(id, tables) */
	size_t bytes;
};

int coll_hosts_from_user(const struct coll_comm_init *arg,
			 struct coll_hosts **out);
void coll_hosts_free(struct coll_hosts *h);
bool coll_hosts_equal(const struct coll_hosts *a, const struct coll_hosts *b);
int coll_hosts_layout(struct coll_hosts *h, struct coll_auth *auth);
static inline u32 coll_hosts_of(const struct coll_hosts *h, u32 rank)
{
	return h->rank_host[rank];
}

/* coll_algo.c: the automatic choice of algorithm within one host */
u32 coll_algo_choose(u32 prim, u32 nranks, u64 bytes);

/* coll_tune.c: tunables, module-wide and per communicator */
enum coll_tune_id {
	COLL_TUNE_ALGO,
	COLL_TUNE_PRIM_ALGO,	/* + prim: COLL_PRIM_MAX of them */
	COLL_TUNE_SOLO_BYTES = COLL_TUNE_PRIM_ALGO + COLL_PRIM_MAX,
	COLL_TUNE_EAGER_BYTES,
	COLL_TUNE_HIER_BYTES,
	COLL_TUNE_RING_CHUNK_BYTES,
	COLL_TUNE_EXEC_CHUNK_BYTES,
	COLL_TUNE_SPIN_NS,
	COLL_TUNE_JOIN_TIMEOUT_MS,
	COLL_TUNE_PEER_TIMEOUT_MS,
	COLL_TUNE_PLAN_CACHE,
	COLL_TUNE_MAX_REQUESTS,
	COLL_TUNE_MAX_COMMS,
	COLL_TUNE_BUSY_POLL_US,
	COLL_TUNE_RDMA_QPS,
	COLL_TUNE_MR_POOL,
	COLL_TUNE_NR,
};

/* A communicator's overrides: val[id] counts where bit id of set is. */
struct coll_tune {
	u32 val[COLL_TUNE_NR];		/* written under coll_tune_lock */
	DECLARE_BITMAP(set, COLL_TUNE_NR);
};

struct coll_tune_desc {
	const char *name;		/* as in the spec: "solo-bytes" */
	unsigned int *global;		/* the module-wide value */
	bool per_comm;			/* a communicator may override it */
};

extern const struct coll_tune_desc coll_tune_descs[COLL_TUNE_NR];
u32 coll_tune_get(const struct coll_comm *comm, enum coll_tune_id id);
u32 coll_tune_algo(const struct coll_comm *comm, u32 prim);
void coll_tune_set(struct coll_comm *comm, enum coll_tune_id id, u32 val);
void coll_tune_reset(struct coll_comm *comm);
void coll_tune_lock(void);
void coll_tune_unlock(void);

/* coll_stats.c: statistics per communicator and primitive */
#define COLL_STAT_NERR	8	/* distinct errnos counted per primitive */

struct coll_pstat {
	u64 calls;			/* ended, well or not */
	u64 bytes;			/* per rank, of those that ended well */
	u64 time_ns;			/* last arrival to the end, summed */
	u64 hist[COLLECTIVE_HIST_BUCKETS];	/* calls by size */
	u64 hist_bytes[COLLECTIVE_HIST_BUCKETS];	/* their bytes */
	u64 algo[COLL_ALGO_MAX];	/* calls by the algorithm run */
	u64 pins;			/* buffers pinned for those calls */
	u64 pinned_pages;		/* their pages */
	u64 reg_hits;			/* buffers found pinned (reg. cache) */
	u64 eager;			/* calls run through the slots */
	u32 err_no[COLL_STAT_NERR];	/* positive errno, 0: free slot */
	u64 err_count[COLL_STAT_NERR];	/* the last slot also counts others */
};

struct coll_comm_stats {
	struct coll_pstat prim[COLL_PRIM_MAX];
};

u32 coll_stats_bucket(u64 bytes);
void coll_stats_task_done(struct coll_task *task, int status);
struct coll_desc;
void coll_stats_eager_done(struct coll_comm *comm, const struct coll_desc *d,
			   u64 t_start, int status);
void coll_stats_global_done(u64 bytes, int status);

/* coll_comm.c */
enum coll_comm_state {
	COLL_COMM_JOINING,	/* ranks of this host arriving */
	COLL_COMM_CONNECTING,	/* all here; peer hosts being connected */
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
	bool formed;			/* coll_comms_lock: it reached READY */
	wait_queue_head_t join_wq;
	spinlock_t lock;		/* dead, tasks, members' next_seq */
	bool dead;			/* lock */
	struct list_head tasks;		/* lock: in-flight coll_task.node */
	struct coll_member **members;	/* coll_comms_lock */
	struct coll_plan_cache plans;

	/* spanning several hosts (hosts != NULL), all set before publication */
	struct coll_hosts *hosts;
	struct coll_auth auth;
	struct hlist_node tag_node;	/* registry by tag, coll_comms_lock */
	int join_err;			/* coll_comms_lock: joining failed */
	unsigned long join_deadline;	/* jiffies, for connecting */
	struct mutex links_lock;	/* links[], nlinks_up */
	struct coll_link **links;	/* nhosts; NULL for self */
	u32 nlinks_up;
	struct work_struct connect_work;
	struct work_struct shutdown_work;
	unsigned long shutdown_queued;	/* bit 0 */
	u64 next_task_seq;		/* lock: 1 + the last task's seq */
	struct list_head *early;	/* lock: nhosts: frames of tasks not
					 * created yet (coll_xhost_stash())
					 */

	/* seen and tuned through netlink (coll_netlink.c) */
	struct list_head all_node;	/* coll_comms_all_lock */
	kuid_t owner;			/* the creator's effective uid */
	unsigned long born;		/* jiffies */
	int error;			/* lock: why it died (negative errno) */
	struct coll_tune tune;		/* coll_tune.c */
	struct coll_comm_stats *stats;	/* lock */

	/* small collectives of one host (coll_eager.c) */
	struct coll_eager *eager;	/* lock: NULL until the first */

	/* mapped slots (coll_map.c), fixed when made */
	bool map_asked;			/* joined with COLL_COMM_F_MAP */
	u32 map_bytes;			/* a slot's bytes; 0: no slots */
	u32 map_slots;			/* how many slots */
	struct coll_map *map;		/* lock: NULL until COLL_COMM_MAP */
};

struct coll_member {
	struct kref kref;
	struct coll_comm *comm;		/* holds a ref */
	struct coll_proc *proc;		/* charged for this membership */
	u32 rank;
	u64 next_seq;			/* comm->lock */
};

int coll_comm_join(struct coll_file *cf, struct coll_ucmd *ucmd);
int coll_comm_query(struct coll_file *cf, struct coll_ucmd *ucmd);
int coll_comm_leave(struct coll_file *cf, u32 handle);
struct coll_comm *coll_comm_find_tag(struct net *net, const u8 *tag);
void coll_comm_links_up(struct coll_comm *comm);
void coll_comm_join_failed(struct coll_comm *comm, int err);
void coll_comm_leave_all(struct coll_file *cf);
void coll_comm_put(struct coll_comm *comm);
void coll_member_put(struct coll_member *m);
struct coll_member *coll_member_get(struct coll_file *cf, u32 handle);
void coll_comm_peer_left(struct coll_comm *comm, u32 host);
void coll_comm_drained(struct coll_comm *comm);
void coll_comm_kill_why(struct coll_comm *comm, int err, const char *why);
void coll_comm_kill_link(struct coll_comm *comm, int err, u32 host,
			 const char *why);
int coll_comm_init_registry(void);
struct coll_comm *coll_comm_next(struct net *net, u32 after);
struct coll_comm *coll_comm_get_serial(struct net *net, u32 serial);
u32 coll_comm_nl_state(struct coll_comm *comm, u32 *njoined, int *error);
u32 coll_comm_nlocal(const struct coll_comm *comm);
void coll_comm_peer_info(struct coll_comm *comm, u32 h,
			 struct coll_peer_info *pi);

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
	u32 group;		/* the group's fingerprint, 0 outside one */
};

#define COLL_SUB_RELEASED	0	/* sub->flags: buffers unpinned */

struct coll_sub {
	struct coll_desc desc;		/* as this rank asked */
	struct coll_obuf *ob[2];	/* by enum coll_sbuf; may be the same */
	u64 base[2];			/* byte offset of each buffer in ob */
	struct coll_file *cf;		/* holds a ref, for wake-ups */
	struct coll_req *req;		/* non-blocking: holds a ref */
	struct work_struct work;	/* non-blocking progress */
	struct coll_plan *plan;		/* built ahead: holds a ref */
	u32 npins;			/* buffers pinned for the call */
	unsigned long npinned;		/* their pages; set once, by the pin */
	u32 nhits;			/* buffers found pinned (reg. cache) */
	struct coll_task *task;
	u32 rank;
	unsigned long flags;
};

struct coll_task {
	struct kref kref;
	struct list_head node;		/* comm->tasks */
	struct list_head abort_node;	/* private list of coll_comm_end() */
	struct coll_comm *comm;		/* holds a ref */
	u64 seq;
	u32 nranks;
	u32 nlocal;			/* ranks of this host */
	u32 narrived;			/* comm->lock */
	spinlock_t lock;		/* state transitions (coll_run.c) */
	enum coll_task_state state;	/* see coll_task_state() */
	int status;			/* 0 or -errno, final once DONE */
	wait_queue_head_t wq;
	u64 bytes;			/* user bytes moved, for statistics */
	u64 t_first;			/* ns: the first rank arrived */
	u64 t_start;			/* ns: the last rank arrived (started) */
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
	u32 phase;			/* 2 * round + open, release/acquire */
	atomic_t nactive;
	struct coll_xtask *xt;		/* spanning hosts: coll_xhost.c */
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
int coll_sub_pin_buf(struct coll_sub *sub, struct coll_file *cf, u64 addr,
		     u64 len, bool writable, struct coll_obuf **ob);
int coll_sub_pin(struct coll_sub *sub, struct coll_file *cf,
		 const struct coll_op *arg, u32 nranks, u32 rank);
void coll_sub_unpin(struct coll_sub *sub, bool keep);
void coll_task_release_rank(struct coll_task *task, u32 rank);

/* The bytes of a rank's buffers, and how they overlap (in place). */
struct coll_layout {
	u64 bytes[2];		/* by enum coll_sbuf */
	bool inplace;		/* the buffers overlap, as follows */
	u32 outer, inner;	/* enum coll_sbuf */
	u64 off;		/* bytes: inner = outer + off */
};

int coll_op_layout(const struct coll_op *arg, u32 nranks, u32 rank,
		   struct coll_layout *lay);

/* What a rank's validated argument says of its collective. */
static inline struct coll_desc coll_desc_of(const struct coll_op *arg,
					    bool inplace)
{
	return (struct coll_desc){
		.prim = arg->prim,
		.dtype = arg->dtype,
		.redop = arg->redop,
		.root = arg->root,
		.algo = arg->algo,
		.count = arg->count,
		.inplace = inplace,
	};
}

/* Do two ranks' parts agree on a collective (EPROTO otherwise)? */
static inline bool coll_desc_equal(const struct coll_desc *a,
				   const struct coll_desc *b)
{
	return a->prim == b->prim && a->dtype == b->dtype &&
	       a->redop == b->redop && a->root == b->root &&
	       a->algo == b->algo && a->count == b->count &&
	       a->group == b->group &&
	       (a->prim != COLL_ALLTOALL || a->inplace == b->inplace);
}

u32 coll_task_prim(const struct coll_task *task);

/* Do byte ranges [a, a + alen) and [b, b + blen) share a byte? */
static inline bool coll_ranges_overlap(u64 a, u64 alen, u64 b, u64 blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/* coll_match.c: submissions, matched across ranks by sequence number */
int coll_op_submit(struct coll_file *cf, struct coll_ucmd *ucmd);
int coll_op_submit_one(struct coll_file *cf, struct coll_op *arg,
		       struct coll_op __user *uarg,
		       struct io_uring_cmd *ioucmd);
int coll_op_check(const struct coll_op *arg);
int coll_match_publish_group(struct coll_member *m, struct coll_sub **subs,
			     struct coll_task **cands, u32 n,
			     struct coll_task **tasks, bool *starts);

struct coll_task *coll_task_find(struct coll_comm *comm, u64 seq);

/* coll_eager.c: small collectives of one host through kernel slots */
struct coll_eager_op {		/* a collective in a slot, for netlink */
	u64 seq;
	struct coll_desc desc;
	u32 narrived;
	u64 t_first;		/* ns: its first rank came */
	const unsigned long *arrived;	/* nranks bits */
};

bool coll_eager_op_locked(struct coll_comm *comm, u64 from,
			  struct coll_eager_op *op);
int coll_eager_submit(struct coll_file *cf, struct coll_member *m,
		      const struct coll_op *arg, struct io_uring_cmd *ioucmd);
bool coll_eager_owns(struct coll_member *m, void *id);
int coll_eager_meet_locked(struct coll_member *m, const struct coll_sub *sub);
void coll_eager_wake(struct coll_comm *comm);
void coll_eager_free(struct coll_comm *comm);

/* coll_map.c: mapped slots, small collectives in user space */
#define COLL_MAP_MAX_BYTES	(256U << 10)	/* map_bytes is capped here */
#define COLL_MAP_MIN_SLOTS	2		/* map_slots' range */
#define COLL_MAP_MAX_SLOTS	256
#define COLL_MAP_SLOTS_OWN	16		/* map_slots 0: ranks <= CPUs */
#define COLL_MAP_SLOTS_SHARED	64		/* ranks > CPUs */
u32 coll_map_slot_bytes(void);
u32 coll_map_nslots(u32 nlocal);
int coll_map_takes(struct coll_comm *comm, u32 rank,
		   const struct coll_op *arg);
int coll_map_ioctl_map(struct coll_file *cf, struct coll_ucmd *ucmd);
int coll_map_ioctl_wait(struct coll_file *cf, struct coll_ucmd *ucmd);
int coll_map_ioctl_wake(struct coll_file *cf, struct coll_ucmd *ucmd);
int coll_map_mmap(struct coll_file *cf, struct vm_area_struct *vma);
void coll_map_kill(struct coll_comm *comm);
void coll_map_free(struct coll_comm *comm);
struct coll_map_op {		/* the collective that waits, for netlink */
	struct coll_map *map;
	u64 seq;
	u32 prim;
	u64 bytes;
	u32 narrived;
	u64 t_wait;		/* ns, CLOCK_MONOTONIC: 0 unknown */
};

bool coll_map_op_locked(struct coll_comm *comm, struct coll_map_op *op);
bool coll_map_missing(const struct coll_map_op *op, u32 rank);

/* coll_group.c: several collectives in one call (COLL_GROUP) */
int coll_group_submit(struct coll_file *cf, struct coll_ucmd *ucmd);
void coll_group_stage_keep(struct coll_file *cf, struct coll_obuf *ob);

/* What a primitive is (inline: the eager path's) */
static inline bool coll_prim_reduces(u32 prim)
{
	return prim == COLL_ALLREDUCE || prim == COLL_REDUCE ||
	       prim == COLL_REDUCESCATTER;
}

static inline bool coll_prim_rooted(u32 prim)
{
	return prim == COLL_REDUCE || prim == COLL_BROADCAST ||
	       prim == COLL_SCATTER || prim == COLL_GATHER;
}

/*
 * May a waiting thread go on polling until @until (local_clock())?  As
 * KVM's halt polling: only while no other task wants this CPU, and (if
 * @killable) while it has no fatal signal.  The task path's waits and
 * COLL_WAIT use it; the eager path's waits yield instead (coll_eager.c).
 */
static inline bool coll_may_poll(u64 until, bool killable)
{
	return local_clock() < until && !need_resched() &&
	       single_task_running() &&
	       !(killable && fatal_signal_pending(current));
}

/* coll_run.c: the one state machine, and cooperative execution */
int coll_run_plan_ahead(struct coll_comm *comm, struct coll_sub *sub);
void coll_run_start(struct coll_task *task);
int coll_run_participate(struct coll_task *task, bool killable);
void coll_run_abort(struct coll_task *task, int err);
void coll_run_fail(struct coll_task *task, int err);
void coll_run_heard(struct coll_task *task);
void coll_run_open(struct coll_task *task, u32 round);
void coll_run_work(struct work_struct *work);

/* coll_xport_local.c: data movement between the pinned pages of local ranks */
struct coll_xport_ops {
	const char *name;
	/*
	 * Run one chunk whose places have been checked against the buffers.
	 * @remote, if not NULL, gives for each source j either NULL (a rank of
	 * this host) or kernel memory holding exactly the chunk's elements of
	 * that source (fetched from a peer host).
	 */
	void (*chunk)(struct coll_task *task, const struct coll_chunk *ch,
		      const void *const *remote);
};

extern const struct coll_xport_ops coll_xport_local;

/* coll_link.c: connections to the modules of peer hosts */
struct coll_msg {			/* a frame, received or to send */
	struct list_head node;
	struct coll_wire_hdr hdr;
	u32 len;			/* payload bytes */
	u8 data[];
};

struct coll_msg *coll_msg_alloc(u32 len);
void coll_msg_free(struct coll_msg *m);

/* A read of a peer's buffer into kernel memory (coll_xhost.c starts them). */
struct coll_rread {
	struct list_head node;		/* the transport's pending reads */
	struct coll_link *link;		/* holds a ref while pending */
	u64 seq;
	u32 rank;			/* a rank of the peer */
	u32 buf;
	u64 off;			/* bytes */
	u64 len;
	void *sink;
	u64 cookie;
	u32 rkey;			/* RDMA: the peer's grant */
	u64 raddr;
	int status;			/* valid once done */
	bool done;			/* release/acquire */
	wait_queue_head_t *wq;		/* woken when done */
};

void coll_rread_complete(struct coll_rread *rr, int status);

struct coll_link_ops {
	const char *name;
	/* Queue a frame; takes @m whatever happens.  Never waits for the peer. */
	int (*send)(struct coll_link *l, struct coll_msg *m);
	/*
	 * Start a read; 0 means it completes (coll_rread_complete()) exactly
	 * once, an error that it was not started.
	 */
	int (*read)(struct coll_link *l, struct coll_rread *rr);
	/*
	 * RDMA: let the peer read @len bytes of @ob from byte @pos (a rank's
	 * buffer) for the collective in progress; fills exports (rkey, addr,
	 * off, len, offsets from @pos) and a cookie for revoke().  NULL for
	 * transports whose reads the module serves.
	 */
	int (*grant)(struct coll_link *l, struct coll_obuf *ob, u64 pos,
		     u64 len, struct coll_wire_export *exp, u32 maxexp,
		     u32 *nexp, void **cookie);
	/* Invalidate and free a grant.  May sleep; never in a CQ's context. */
	void (*revoke)(void *cookie);
	/*
	 * Busy polling (optional): own the link's completions (false: someone
	 * else does), handle what has come (how many), let go.  Process
	 * context, with a reference on the link.
	 */
	bool (*poll_begin)(struct coll_link *l);
	int (*poll)(struct coll_link *l);
	void (*poll_end)(struct coll_link *l);
	/* Stop all I/O; pending reads complete with an error.  May sleep. */
	void (*shutdown)(struct coll_link *l);
	void (*free)(struct coll_link *l);
	void (*info)(struct coll_link *l, struct coll_peer_info *pi);
};

struct coll_link {
	struct kref kref;
	struct coll_comm *comm;		/* holds a ref */
	u32 host;			/* the peer's index */
	u32 transport;			/* enum coll_transport */
	u32 fallback;			/* enum coll_fallback */
	const struct coll_link_ops *ops;
	spinlock_t lock;		/* dead, the transport's lists */
	bool dead;
	bool attached;			/* links_lock and lock: in links[] */
	bool owned;			/* its connector discards it if need be */
	bool bye;			/* we said BYE: let it reach the peer */
	u32 max_eager;			/* eager bytes a frame can carry */
	unsigned long born;		/* jiffies */
	unsigned long last_rx;		/* jiffies */
	struct delayed_work hb_work;	/* liveness: ping, timeout */
	struct work_struct discard_work;
	atomic64_t bytes_tx;
	atomic64_t bytes_rx;
};

void coll_link_init(struct coll_link *l, struct coll_comm *comm, u32 host,
		    const struct coll_link_ops *ops);
void coll_link_get(struct coll_link *l);
void coll_link_put(struct coll_link *l);
int coll_link_recv(struct coll_link *l, struct coll_msg *m);

/*
 * May a peer fail a collective (ABORT) or a read (READ_RESP) with this
 * errno?  Only with one a user may see: never 0, never negative once
 * negated, and never one of the kernel's own (ERESTARTSYS and above), which
 * would reach userspace through the collective's status.
 */
static inline bool coll_link_errno_ok(u64 err)
{
	return err && err < ERESTARTSYS;
}

void coll_link_fail(struct coll_link *l, int err, const char *why);
int coll_link_send(struct coll_link *l, u8 type, u64 seq, u32 round, u64 arg,
		   const void *payload, u32 len);
int coll_links_connect(struct coll_comm *comm);
void coll_links_shutdown(struct coll_comm *comm, bool bye);
void coll_links_shutdown_async(struct coll_comm *comm);
void coll_link_discard(struct coll_link *l);
void coll_link_expire(struct coll_link *l);
int coll_link_attach(struct coll_comm *comm, struct coll_link *l);

/* The links a waiting rank busy-polls (coll_link_poll_begin()). */
#define COLL_POLL_LINKS	16
struct coll_poll {
	int n;
	struct coll_link *l[COLL_POLL_LINKS];	/* owned, referenced */
};

void coll_link_poll_begin(struct coll_comm *comm, struct coll_poll *p);
int coll_link_poll(struct coll_poll *p);
void coll_link_poll_end(struct coll_poll *p);

/* coll_xhost.c: collectives across hosts (rounds, agreement, data) */
bool coll_xhost_spans(const struct coll_task *task);
bool coll_xhost_heard_from(struct coll_task *task, u32 host);
bool coll_xhost_heard_last(struct coll_task *task, u32 host);
int coll_xtask_alloc(struct coll_task *task, struct coll_comm *comm);
void coll_xtask_free(struct coll_task *task);
void coll_xhost_adopt_early(struct coll_task *task);
bool coll_xhost_too_far(struct coll_comm *comm, u64 seq);
void coll_xhost_start(struct coll_task *task);
void coll_xhost_finished(struct coll_task *task, u32 round);
void coll_xhost_failed(struct coll_task *task, int err);
bool coll_xhost_heard_all(struct coll_task *task);
int coll_xhost_on_ready(struct coll_link *l, struct coll_msg *m);
int coll_xhost_on_abort(struct coll_link *l, struct coll_msg *m);
bool coll_xhost_local(const struct coll_task *task, u32 rank);
int coll_xhost_fetch(struct coll_task *task, const struct coll_chunk *ch,
		     const void **src, void **staging, size_t *staging_len);
int coll_xhost_serve_read(struct coll_link *l, u64 seq,
			  const struct coll_wire_read *rd,
			  struct coll_task **task, struct coll_obuf **ob,
			  u64 *pos);

/* coll_net.c: listening for peer hosts, per network namespace */
int coll_net_init(void);
void coll_net_exit(void);
int coll_net_listen(struct net *net);

/* coll_cq.c: completion queues, from interrupts or busy-polled */
#define COLL_CQ_BATCH	16
enum { COLL_CQ_OWNED, COLL_CQ_MISSED };

struct ib_cq;
struct ib_device;
struct coll_cq {
	struct ib_cq *cq;
	unsigned long flags;		/* COLL_CQ_*: one poller at a time */
	struct work_struct work;	/* polls after an event */
	struct ib_wc *wc;		/* COLL_CQ_BATCH, the owner's */
};

int coll_cq_init(void);
void coll_cq_exit(void);
int coll_cq_create(struct coll_cq *c, struct ib_device *ib, int cqe);
void coll_cq_destroy(struct coll_cq *c);
bool coll_cq_own(struct coll_cq *c);
int coll_cq_process(struct coll_cq *c, int budget);
void coll_cq_release(struct coll_cq *c, bool more);

/* coll_ib.c: RDMA devices */

#define COLL_IB_MR_PAGES	512	/* pages per memory region, at most */
struct ib_pd;

struct coll_ibdev {
	struct kref kref;		/* the client's, and each link's */
	struct list_head node;		/* the devices, coll_ibdevs_lock */
	struct ib_device *ib;
	struct ib_pd *pd;
	bool removing;			/* coll_ibdevs_lock */
	spinlock_t lock;		/* links, mrs, nmrs */
	struct list_head links;		/* struct coll_rdma.dev_node */
	struct list_head mrs;		/* invalidated regions (qp_entry) */
	unsigned int nmrs;
	u32 mr_pages;			/* pages one region maps, at most */
	struct completion released;	/* the last reference is gone */
};

int coll_ib_init(void);
void coll_ib_exit(void);
struct coll_ibdev *coll_ibdev_get(struct ib_device *ib);
void coll_ibdev_put(struct coll_ibdev *d);
void coll_ibdev_add_link(struct coll_ibdev *d, struct list_head *node);
void coll_ibdev_del_link(struct coll_ibdev *d, struct list_head *node);
u32 coll_ib_count(void);
struct ib_mr *coll_ibdev_mr_get(struct coll_ibdev *d);
void coll_ibdev_mr_put(struct coll_ibdev *d, struct ib_mr *mr,
		       bool invalidated);

/* coll_xport_rdma.c: the RDMA transport */
struct rdma_cm_id;
struct rdma_cm_event;

int coll_rdma_connect(struct coll_comm *comm, u32 host,
		      unsigned long deadline);
int coll_rdma_request(struct rdma_cm_id *cm, struct rdma_cm_event *ev,
		      struct net *net);
void coll_rdma_device_gone(struct coll_ibdev *d);

/* coll_xport_tcp.c: the TCP transport */
int coll_tcp_connect(struct coll_comm *comm, u32 host, unsigned long deadline,
		     u32 fallback);
void coll_tcp_accepted(struct net *net, struct socket *sock);

/* coll_netlink.c: the generic netlink family "collective" */
int coll_nl_init(void);
void coll_nl_exit(void);
void coll_nl_notify(struct coll_comm *comm, u32 event, int err,
		    const char *reason, u32 host, u32 fallback, gfp_t gfp);

/* coll_req.c: non-blocking requests */
struct coll_req {
	struct kref kref;
	int status;			/* valid once done */
	bool done;			/* release/acquire */
	struct io_uring_cmd *ioucmd;	/* submitted through io_uring */
	void *owner;			/* its submitter's files (flush) */
	struct list_head unode;		/* in cf->ucmds, under cf->ulock */
};

struct coll_req *coll_req_alloc(void);
void coll_req_put(struct coll_req *req);
void coll_req_complete(struct coll_req *req, struct coll_file *cf,
		       int status);
int coll_req_wait(struct coll_file *cf, struct coll_wait *arg, bool test);
void coll_req_release_all(struct coll_file *cf);
bool coll_file_has_done(struct coll_file *cf);

/* coll_uring.c: IORING_OP_URING_CMD submission */
void coll_uring_init(struct coll_file *cf);
int coll_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);
int coll_uring_reserve(struct coll_file *cf);
void coll_uring_unreserve(struct coll_file *cf);
void coll_uring_track(struct coll_file *cf, struct coll_req *req,
		      struct io_uring_cmd *ioucmd);
void coll_uring_untrack(struct coll_file *cf, struct coll_req *req);
void coll_uring_complete(struct coll_req *req, struct coll_file *cf,
			 int status);
int coll_uring_flush(struct coll_file *cf, void *id);

/* coll_obuf.c */
#define COLL_OBUF_LEAF	(PAGE_SIZE / sizeof(struct page *))

/*
 * A piece of a composite obuf: its bytes [at, at + len), those of user
 * range [uaddr, uaddr + len) pinned as @ob (NULL while being built).
 */
struct coll_oseg {
	u64 at;
	u64 uaddr;
	u64 len;
	struct coll_obuf *ob;
	bool own;			/* the composite holds @ob's use */
};

struct coll_obuf {
	struct page ***leaves;		/* page pointers, a page of them at most */
	unsigned long npages;
	unsigned long nleaves;
	unsigned int first_off;		/* offset of the buffer in page 0 */
	void *vaddr;			/* the pages vmapped, or NULL */
	u64 len;
	bool writable;
	bool kernel;			/* kernel pages (a snapshot), not pinned */
	bool stage;			/* a fused group's: kept by its descriptor */
	struct mm_struct *mm;		/* mmgrab'ed: pinned_vm is charged there */
	struct coll_reg *reg;		/* cached: released through the cache */
	/*
	 * Composite (a fused group's, coll_group.c): no pages of its own;
	 * its bytes are those of @nsegs obufs end to end, by at.  Only the
	 * local transport's cursor reads it (coll_xport_local.c).
	 */
	struct coll_oseg *segs;
	u32 nsegs;
	u32 maxsegs;			/* of segs allocated */
};

static inline struct page *coll_obuf_page(const struct coll_obuf *ob,
					  unsigned long i)
{
	return ob->leaves[i / COLL_OBUF_LEAF][i % COLL_OBUF_LEAF];
}

int coll_obuf_pin(u64 uaddr, u64 len, bool writable, struct coll_obuf **out);
int coll_obuf_snapshot(const struct coll_obuf *src, u64 pos, u64 len,
		       struct coll_obuf **out);
int coll_obuf_alloc_kernel(u64 len, struct coll_obuf **out);
int coll_user_writable(u64 addr, u64 len);
int coll_obuf_copy_user(const struct coll_obuf *ob, u64 pos, u64 uaddr,
			u64 len, bool to_user);
void coll_obuf_release(struct coll_obuf *ob);
int coll_obuf_composite(u32 maxsegs, struct coll_obuf **out);
void coll_obuf_composite_free(struct coll_obuf *ob);

/* coll_reduce.c */
typedef void (*coll_reduce_fn)(void *dst, const void *a, const void *b,
			       size_t n);
/* Bytes per element of @dtype, 0 for none (inline: the eager path's) */
static inline u32 coll_dtype_size(u32 dtype)
{
	switch (dtype) {
	case COLL_INT8:
	case COLL_UINT8:
		return 1;
	case COLL_FP16:
	case COLL_BF16:
		return 2;
	case COLL_INT32:
	case COLL_UINT32:
	case COLL_FP32:
		return 4;
	case COLL_INT64:
	case COLL_UINT64:
	case COLL_FP64:
		return 8;
	default:
		return 0;
	}
}

/* Bytes per element of a call; a Barrier's count is of nothing. */
static inline u32 coll_desc_esize(const struct coll_desc *d)
{
	return d->prim == COLL_BARRIER ? 1 : coll_dtype_size(d->dtype);
}

static inline bool coll_dtype_is_float(u32 dtype)
{
	return dtype >= COLL_FP16 && dtype <= COLL_FP64;
}

coll_reduce_fn coll_reduce_get(u32 dtype, u32 redop, bool *fpu);
void coll_reduce_select(void);
void coll_fpu_begin(void);
void coll_reduce_div(u32 dtype, void *dst, size_t n, u32 div);

/* coll_copy.c: the local transport's copy kernel (copy_kernel) */
#define COLL_COPY_MEMCPY	0
#define COLL_COPY_WORDS		1
void coll_copy_select(void);
void coll_copy(void *dst, const void *src, size_t len);

/* coll_reduce_fp.c (built with the FPU enabled: call inside kernel_fpu_*) */
coll_reduce_fn coll_reduce_fp_get(u32 dtype, u32 redop);
void coll_reduce_fp_div(u32 dtype, void *dst, size_t n, u32 div);

/* coll_reduce_avx2.c (built with AVX2: only if the CPU has it) */
coll_reduce_fn coll_reduce_avx2_get(u32 dtype, u32 redop);

#endif /* COLL_LOC_H */
