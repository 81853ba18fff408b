// SPDX-License-Identifier: GPL-2.0
/*
 * Collectives as requests: validation, buffer pinning, matching across
 * ranks by sequence number, completion, waiting and aborting.
 *
 * Every rank submits its collectives in the same order; the n-th submission
 * of each rank lands in the same struct coll_task.  The last rank to arrive
 * checks that all ranks agree, builds the schedule and starts execution.
 * Execution (coll_exec.c) is cooperative: every blocking caller, and a work
 * item for every non-blocking one, claims chunks of the current round.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "coll_loc.h"
#include "coll_trace.h"

static bool coll_prim_reduces(u32 prim)
{
	return prim == COLL_ALLREDUCE || prim == COLL_REDUCE ||
	       prim == COLL_REDUCESCATTER;
}

static bool coll_prim_rooted(u32 prim)
{
	return prim == COLL_REDUCE || prim == COLL_BROADCAST ||
	       prim == COLL_SCATTER || prim == COLL_GATHER;
}

/* Checks that need no communicator. */
static int coll_op_check(const struct coll_op *arg)
{
	if (arg->flags & ~COLL_OP_F_ALL)
		return -EOPNOTSUPP;
	if (arg->__reserved)
		return -EINVAL;
	if (arg->prim >= COLL_PRIM_MAX || arg->dtype >= COLL_DTYPE_MAX ||
	    arg->redop >= COLL_REDOP_MAX || arg->algo >= COLL_ALGO_MAX)
		return -EOPNOTSUPP;
	if (!coll_prim_reduces(arg->prim) && arg->redop)
		return -EINVAL;
	if (!coll_prim_rooted(arg->prim) && arg->root)
		return -EINVAL;
	if (arg->prim == COLL_BARRIER &&
	    (arg->count || arg->sendbuf || arg->recvbuf || arg->dtype))
		return -EINVAL;
	if (arg->count > COLL_MAX_BYTES)
		return -EOVERFLOW;
	return 0;
}

static bool coll_ranges_overlap(u64 a, u64 alen, u64 b, u64 blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/*
 * Work out what this rank pins: sizes (with overflow checks), the in-place
 * layout if the buffers overlap, then pin.  Fills slot->ob/base/desc.
 */
static int coll_slot_pin(struct coll_slot *slot, const struct coll_op *arg,
			 u32 nranks, u32 rank)
{
	u64 addr[2] = { arg->sendbuf, arg->recvbuf };
	u64 bytes[2], total, off;
	u32 esize = coll_dtype_size(arg->dtype);
	u32 outer, inner, b;
	int ret;

	if (arg->prim == COLL_BARRIER)
		esize = 1;
	if (check_mul_overflow(arg->count, (u64)nranks, &total) ||
	    check_mul_overflow(total, (u64)esize, &total) ||
	    total > COLL_MAX_BYTES)
		return -EOVERFLOW;
	for (b = 0; b < 2; b++)
		bytes[b] = coll_sched_buf_elems(arg->prim, nranks, arg->root,
						rank, b, arg->count) * esize;

	if (coll_ranges_overlap(addr[0], bytes[0], addr[1], bytes[1])) {
		if (!coll_sched_inplace_layout(arg->prim, nranks, arg->root,
					       rank, arg->count, &outer,
					       &inner, &off))
			return -EINVAL;
		off *= esize;
		if (addr[inner] != addr[outer] + off ||
		    off + bytes[inner] > bytes[outer])
			return -EINVAL;
		ret = coll_obuf_pin(addr[outer], bytes[outer], true,
				    &slot->ob[outer]);
		if (ret)
			return ret;
		slot->ob[inner] = slot->ob[outer];
		slot->base[inner] = off;
		slot->desc.inplace = true;
		return 0;
	}

	for (b = 0; b < 2; b++) {
		if (!bytes[b])
			continue;
		ret = coll_obuf_pin(addr[b], bytes[b], b == COLL_SBUF_RECV,
				    &slot->ob[b]);
		if (ret)
			goto err_release;
	}
	return 0;

err_release:
	coll_obuf_release(slot->ob[0]);
	slot->ob[0] = NULL;
	return ret;
}

static void coll_slot_release(struct coll_slot *slot)
{
	if (slot->ob[1] != slot->ob[0])
		coll_obuf_release(slot->ob[1]);
	coll_obuf_release(slot->ob[0]);
	slot->ob[0] = NULL;
	slot->ob[1] = NULL;
}

static void coll_task_work(struct work_struct *work);

/*
 * A rank's own buffers, once its caller has seen the task DONE (no thread
 * touches any buffer after that): unpinned by that rank, in its own thread,
 * so that the cost is spread and the last rank to let go does not unpin
 * everyone's.  Whatever is left goes with the last reference.
 */
static void coll_task_release_rank(struct coll_task *task, u32 rank)
{
	if (coll_task_state(task) != COLL_OP_DONE ||
	    test_and_set_bit(0, &task->slot[rank].released))
		return;
	coll_slot_release(&task->slot[rank]);
}

/* Locks: comm->lock. */
static struct coll_task *coll_task_find(struct coll_comm *comm, u64 seq)
{
	struct coll_task *task;

	lockdep_assert_held(&comm->lock);
	list_for_each_entry(task, &comm->ops, node)
		if (task->seq == seq)
			return task;
	return NULL;
}

static struct coll_task *coll_task_alloc(struct coll_comm *comm)
{
	struct coll_task *task;
	u32 r;

	task = kvzalloc(struct_size(task, slot, comm->nranks), GFP_KERNEL);
	if (!task)
		return NULL;
	kref_init(&task->kref);		/* the comm's in-flight list */
	INIT_LIST_HEAD(&task->node);
	spin_lock_init(&task->lock);
	init_waitqueue_head(&task->wq);
	task->nranks = comm->nranks;
	task->state = COLL_OP_ARRIVING;
	for (r = 0; r < comm->nranks; r++) {
		task->slot[r].op = task;
		INIT_WORK(&task->slot[r].work, coll_task_work);
	}
	return task;
}

static void coll_task_free(struct coll_task *task)
{
	u32 r;

	for (r = 0; r < task->nranks; r++) {
		struct coll_slot *slot = &task->slot[r];

		coll_slot_release(slot);
		if (slot->cf)
			kref_put(&slot->cf->kref, coll_file_release);
	}
	coll_sched_destroy(&task->sched);
	kvfree(task->chunk_first);
	if (task->comm)
		coll_comm_put(task->comm);
	kvfree(task);
}

static void coll_task_free_work(struct work_struct *work)
{
	coll_task_free(container_of(work, struct coll_task, free_work));
}

/*
 * The last reference.  Buffers still pinned here belong to ranks that did
 * not collect the task (killed, or closed with the request pending):
 * unpinning them can take long, so it is not done in whoever's thread this
 * happens to be, but in the module's workqueue.
 */
static void coll_task_release(struct kref *kref)
{
	struct coll_task *task = container_of(kref, struct coll_task, kref);
	u32 r;

	for (r = 0; r < task->nranks; r++) {
		if (task->slot[r].ob[0] || task->slot[r].ob[1]) {
			INIT_WORK(&task->free_work, coll_task_free_work);
			queue_work(coll_wq, &task->free_work);
			return;
		}
	}
	coll_task_free(task);
}

/* May sleep (unpinning): never call with a spinlock held. */
void coll_op_put(struct coll_task *task)
{
	might_sleep();
	kref_put(&task->kref, coll_task_release);
}

/*
 * The task became DONE: leave the in-flight list, wake everyone.  Called
 * exactly once, by whoever made the transition, with a reference besides
 * the list's.
 */
static void coll_task_finish(struct coll_task *task)
{
	struct coll_comm *comm = task->comm;
	u32 r;

	spin_lock(&comm->lock);
	list_del_init(&task->node);
	spin_unlock(&comm->lock);

	atomic64_dec(&coll_stats.ops);
	if (!task->status) {
		atomic64_inc(&coll_stats.ops_total);
		atomic64_add(task->bytes, &coll_stats.bytes_total);
	}
	trace_coll_op_done(task, task->status);
	wake_up_all(&task->wq);
	for (r = 0; r < task->nranks; r++)
		if (task->slot[r].nonblock)
			wake_up_interruptible_poll(&task->slot[r].cf->pollwq,
						   EPOLLIN | EPOLLRDNORM);
	coll_op_put(task);		/* the list's reference */
}

/*
 * Move a RUNNING task to DONE if @aborted says how it ended: normally (the
 * last chunk of the last round is done, no error) or aborted (an error, and
 * the last executor has left).
 */
static void coll_task_end(struct coll_task *task, bool aborted)
{
	bool fin = false;

	spin_lock(&task->lock);
	if (task->state == COLL_OP_RUNNING && !!task->status == aborted &&
	    (!aborted || !atomic_read(&task->nactive))) {
		task->state = COLL_OP_DONE;
		fin = true;
	}
	spin_unlock(&task->lock);
	if (fin)
		coll_task_finish(task);
}

/* Normal end: the last chunk of the last round is done. */
void coll_task_complete(struct coll_task *task)
{
	coll_task_end(task, false);
}

/* Aborted end: the last executor left after an abort. */
void coll_task_try_finish(struct coll_task *task)
{
	coll_task_end(task, true);
}

/**
 * coll_op_abort() - fail a collective on every rank
 * @task: the collective; the caller holds a reference
 * @err: negative errno
 *
 * Executors stop claiming chunks; the task becomes DONE once the last one
 * has left, so no buffer is touched after a waiter returns.
 */
void coll_op_abort(struct coll_task *task, int err)
{
	bool fin = false;

	spin_lock(&task->lock);
	if (task->state != COLL_OP_DONE) {
		if (!task->status)
			task->status = err;
		/* status before nactive: pairs with coll_exec_participate() */
		smp_mb();
		if (task->state == COLL_OP_ARRIVING ||
		    !atomic_read(&task->nactive)) {
			task->state = COLL_OP_DONE;
			fin = true;
		}
	}
	spin_unlock(&task->lock);
	if (fin)
		coll_task_finish(task);
	else
		wake_up_all(&task->wq);
}

static u32 coll_pick_algo(u32 algo)
{
	if (algo != COLL_ALGO_AUTO)
		return algo;
	algo = READ_ONCE(coll_default_algo);
	if (algo == COLL_ALGO_AUTO || algo >= COLL_ALGO_MAX)
		algo = COLL_ALGO_DIRECT;
	return algo;
}

/*
 * Ring pipelining chunk in elements: the tunable, but never so small that
 * the schedule has more than COLL_RING_MAX_SLABS slabs (its size grows with
 * the number of slabs).
 */
#define COLL_RING_MAX_SLABS 64

static u64 coll_ring_chunk(const struct coll_op_desc *d, u32 nranks,
			   u32 esize)
{
	u64 chunk = max_t(u64, 1, READ_ONCE(coll_ring_chunk_bytes) / esize);
	u64 per = d->prim == COLL_ALLREDUCE ? nranks : 1;

	return max(chunk, DIV_ROUND_UP(d->count, per * COLL_RING_MAX_SLABS));
}

static bool coll_desc_equal(const struct coll_op_desc *a,
			    const struct coll_op_desc *b)
{
	return a->prim == b->prim && a->dtype == b->dtype &&
	       a->redop == b->redop && a->root == b->root &&
	       a->algo == b->algo && a->count == b->count;
}

/* Every rank has arrived: check agreement, plan, run. */
static void coll_task_start(struct coll_task *task)
{
	const struct coll_op_desc *d0 = &task->slot[0].desc;
	struct coll_sched_args args = {};
	bool fin = false;
	int err = 0;
	u32 r;

	for (r = 1; r < task->nranks && !err; r++) {
		const struct coll_op_desc *d = &task->slot[r].desc;

		if (!coll_desc_equal(d0, d) ||
		    (d0->prim == COLL_ALLTOALL && d->inplace != d0->inplace))
			err = -EPROTO;
	}
	task->desc = *d0;
	task->esize = d0->prim == COLL_BARRIER ? 1 : coll_dtype_size(d0->dtype);
	task->bytes = d0->count * task->esize;
	if (!err) {
		args.prim = d0->prim;
		args.algo = coll_pick_algo(d0->algo);
		args.nranks = task->nranks;
		args.root = d0->root;
		args.count = d0->count;
		args.chunk = coll_ring_chunk(d0, task->nranks, task->esize);
		if (d0->prim == COLL_ALLTOALL && d0->inplace)
			args.flags |= COLL_SCHED_F_INPLACE;
		task->desc.algo = args.algo;
		err = coll_sched_build(&args, &task->sched);
	}
	if (!err)
		err = coll_exec_prepare(task);
	trace_coll_op_start(task, err);

	spin_lock(&task->lock);
	if (task->state == COLL_OP_DONE) {	/* aborted meanwhile */
		spin_unlock(&task->lock);
		return;
	}
	if (err || !task->sched.nrounds) {
		task->status = err;
		task->state = COLL_OP_DONE;
		fin = true;
	} else {
		task->solo = task->bytes * task->nranks <=
			     READ_ONCE(coll_solo_bytes);
		task->state = COLL_OP_RUNNING;
	}
	spin_unlock(&task->lock);

	if (fin) {
		coll_task_finish(task);
		return;
	}
	if (task->solo) {
		/* Cheaper than waking everyone for each round. */
		coll_exec_solo(task);
		return;
	}
	wake_up_all(&task->wq);
	for (r = 0; r < task->nranks; r++) {
		if (!task->slot[r].nonblock)
			continue;
		kref_get(&task->kref);	/* the work item's */
		queue_work(coll_wq, &task->slot[r].work);
	}
}

/* Progress on behalf of a non-blocking rank. */
static void coll_task_work(struct work_struct *work)
{
	struct coll_slot *slot = container_of(work, struct coll_slot, work);
	struct coll_task *task = slot->op;

	coll_exec_participate(task, false);
	coll_task_release_rank(task, slot - task->slot);
	coll_op_put(task);
}

/**
 * coll_op_submit() - COLL_SUBMIT
 * @cf: the caller's descriptor
 * @arg: the argument; out_req is filled for non-blocking calls
 *
 * Locks: takes cf->lock, then comm->lock; neither is held while waiting.
 *
 * Return: 0 or -errno as documented in the uapi header; for a blocking
 * call, the collective's own result.
 */
int coll_op_submit(struct coll_file *cf, struct coll_op *arg)
{
	bool nonblock = arg->flags & COLL_OP_F_NONBLOCK;
	struct coll_task *task, *cand = NULL;
	struct coll_req *req = NULL;
	struct coll_slot pinned = {};
	struct coll_member *m;
	struct coll_comm *comm;
	struct coll_slot *slot;
	bool start;
	u32 rhandle = 0, rank;
	int ret;

	ret = coll_op_check(arg);
	if (ret)
		return ret;

	mutex_lock(&cf->lock);
	m = xa_load(&cf->members, arg->comm);
	if (!m) {
		ret = -ENOENT;
		goto err_unlock;
	}
	comm = m->comm;
	rank = m->rank;
	if (coll_prim_rooted(arg->prim) && arg->root >= comm->nranks) {
		ret = -EINVAL;
		goto err_unlock;
	}
	pinned.desc.prim = arg->prim;
	pinned.desc.dtype = arg->dtype;
	pinned.desc.redop = arg->redop;
	pinned.desc.root = arg->root;
	pinned.desc.algo = arg->algo;
	pinned.desc.count = arg->count;
	ret = coll_slot_pin(&pinned, arg, comm->nranks, m->rank);
	if (ret)
		goto err_unlock;

	if (nonblock) {
		req = kzalloc(sizeof(*req), GFP_KERNEL);
		if (!req) {
			ret = -ENOMEM;
			goto err_release;
		}
		ret = xa_alloc(&cf->reqs, &rhandle, NULL, xa_limit_31b,
			       GFP_KERNEL);
		if (ret)
			goto err_free_req;
	}

	/*
	 * The first rank to arrive creates the task; allocate (it is sized by
	 * nranks) only when none is there, outside the spinlock.
	 */
	for (;;) {
		spin_lock(&comm->lock);
		if (comm->dead) {
			spin_unlock(&comm->lock);
			ret = -ECONNRESET;
			goto err_free_cand;
		}
		task = coll_task_find(comm, m->next_seq);
		if (task || cand)
			break;
		spin_unlock(&comm->lock);
		cand = coll_task_alloc(comm);
		if (!cand) {
			ret = -ENOMEM;
			goto err_erase_req;
		}
	}
	if (!task) {
		task = cand;
		cand = NULL;
		task->seq = m->next_seq;
		kref_get(&comm->kref);
		task->comm = comm;
		list_add_tail(&task->node, &comm->ops);
		atomic64_inc(&coll_stats.ops);
	}
	m->next_seq++;
	slot = &task->slot[m->rank];
	slot->desc = pinned.desc;
	slot->ob[0] = pinned.ob[0];
	slot->ob[1] = pinned.ob[1];
	slot->base[0] = pinned.base[0];
	slot->base[1] = pinned.base[1];
	slot->nonblock = nonblock;
	kref_get(&cf->kref);
	slot->cf = cf;
	kref_get(&task->kref);		/* the caller's or the request's */
	start = ++task->narrived == task->nranks;
	spin_unlock(&comm->lock);
	trace_coll_op_submit(task, m->rank, arg);

	if (nonblock) {
		req->op = task;
		req->rank = m->rank;
		xa_store(&cf->reqs, rhandle, req, GFP_KERNEL);
		arg->out_req = rhandle;
	}
	mutex_unlock(&cf->lock);
	kvfree(cand);

	if (start)
		coll_task_start(task);
	if (nonblock)
		return 0;
	ret = coll_exec_participate(task, true);
	coll_task_release_rank(task, rank);
	coll_op_put(task);
	return ret;

err_free_cand:
	kvfree(cand);
err_erase_req:
	if (nonblock)
		xa_erase(&cf->reqs, rhandle);
err_free_req:
	kfree(req);
err_release:
	coll_slot_release(&pinned);
err_unlock:
	mutex_unlock(&cf->lock);
	return ret;
}

void coll_req_free(struct coll_req *req)
{
	coll_op_put(req->op);
	kfree(req);
}

static bool coll_task_done(struct coll_task *task)
{
	return coll_task_state(task) == COLL_OP_DONE;
}

/**
 * coll_op_wait() - COLL_WAIT and COLL_TEST
 * @cf: the caller's descriptor
 * @arg: the argument
 * @test: COLL_TEST: do not block
 *
 * Locks: takes cf->lock, not held while waiting.
 */
int coll_op_wait(struct coll_file *cf, struct coll_wait *arg, bool test)
{
	struct coll_task *task;
	struct coll_req *req;
	long left;
	u32 rank;
	int ret;

	if (arg->flags)
		return -EOPNOTSUPP;
	if (test && arg->timeout_ms)
		return -EINVAL;

	mutex_lock(&cf->lock);
	req = xa_load(&cf->reqs, arg->req);
	if (!req) {
		mutex_unlock(&cf->lock);
		return -ENOENT;
	}
	task = req->op;
	rank = req->rank;
	kref_get(&task->kref);
	mutex_unlock(&cf->lock);

	if (test) {
		if (!coll_task_done(task)) {
			ret = -EAGAIN;
			goto out_put;
		}
	} else {
		left = wait_event_killable_timeout(task->wq,
						   coll_task_done(task),
						   arg->timeout_ms ?
						   msecs_to_jiffies(arg->timeout_ms) :
						   MAX_SCHEDULE_TIMEOUT);
		if (left < 0) {
			ret = -EINTR;
			goto out_put;
		}
		if (!left) {
			ret = -ETIMEDOUT;
			goto out_put;
		}
	}

	ret = READ_ONCE(task->status);
	coll_task_release_rank(task, rank);
	mutex_lock(&cf->lock);
	if (xa_load(&cf->reqs, arg->req) == req) {
		xa_erase(&cf->reqs, arg->req);
		coll_req_free(req);
	} else {
		ret = -ENOENT;		/* collected by another thread */
	}
	mutex_unlock(&cf->lock);
out_put:
	coll_op_put(task);
	return ret;
}

/* poll(): is a request of this descriptor complete and not collected? */
bool coll_file_has_done(struct coll_file *cf)
{
	struct coll_req *req;
	unsigned long index;
	bool done = false;

	mutex_lock(&cf->lock);
	xa_for_each(&cf->reqs, index, req) {
		if (coll_task_done(req->op)) {
			done = true;
			break;
		}
	}
	mutex_unlock(&cf->lock);
	return done;
}
