// SPDX-License-Identifier: GPL-2.0
/*
 * The collective object (struct coll_task), its ranks' parts (struct
 * coll_sub) and their lifetimes.  Matching is in coll_match.c, the state
 * machine and execution in coll_run.c.
 *
 * A task lives from the first rank's arrival until its DONE state has been
 * seen by everyone who runs or waits on it; non-blocking requests keep only
 * their result (coll_req.c), so nothing of a task outlives the collective,
 * however long its requests go uncollected.  A task is sized by the number
 * of ranks (a pointer per rank); each rank's part is allocated by that rank
 * and charged to it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/ktime.h>

#include "coll_loc.h"

struct coll_sub *coll_sub_alloc(void)
{
	struct coll_sub *sub = coll_kvzalloc(sizeof(*sub));

	if (sub)
		INIT_WORK(&sub->work, coll_run_work);
	return sub;
}

static void coll_sub_put_obuf(struct coll_sub *sub, struct coll_obuf *ob,
			      bool keep);

/* A composite: what its own pieces hold, then itself. */
static void coll_sub_put_composite(struct coll_sub *sub, struct coll_obuf *ob,
				   bool keep)
{
	u32 i;

	coll_regcache_unuse_segs(ob, keep);	/* the cache's, at once */
	for (i = 0; i < ob->nsegs; i++)
		if (ob->segs[i].own && ob->segs[i].ob &&
		    !WARN_ON_ONCE(ob->segs[i].ob->segs))
			coll_sub_put_obuf(sub, ob->segs[i].ob, keep);
	coll_obuf_composite_free(ob);
}

/*
 * Give back one buffer: a composite piece by piece; to the registration
 * cache if it came from there; to the descriptor if it is a fused group's
 * kernel buffer and the collective ended well.
 */
static void coll_sub_put_obuf(struct coll_sub *sub, struct coll_obuf *ob,
			      bool keep)
{
	if (ob && ob->segs)
		coll_sub_put_composite(sub, ob, keep);
	else if (ob && ob->reg)
		coll_regcache_unuse(ob->reg, keep);
	else if (ob && ob->stage && keep && sub->cf)
		coll_group_stage_keep(sub->cf, ob);
	else
		coll_obuf_release(ob);
}

/**
 * coll_sub_pin_buf() - pin one buffer for a rank's part
 * @sub: the part, whose counters (npins, npinned, nhits) count it
 * @cf: the caller's descriptor, whose registration cache is used
 * @addr: user address
 * @len: bytes, more than 0
 * @writable: pinned for writing
 * @ob: the obuf; coll_sub_unpin() gives it back (through a composite of
 *      @sub's that owns it)
 *
 * Return: 0 or coll_regcache_pin()'s errors.
 */
int coll_sub_pin_buf(struct coll_sub *sub, struct coll_file *cf, u64 addr,
		     u64 len, bool writable, struct coll_obuf **ob)
{
	bool hit;
	int ret;

	ret = coll_regcache_pin(cf, addr, len, writable, ob, &hit);
	if (ret)
		return ret;
	if (hit) {
		sub->nhits++;
	} else {
		sub->npins++;
		sub->npinned += (*ob)->npages;
	}
	return 0;
}

/**
 * coll_op_layout() - the bytes of a rank's buffers, and an in-place layout
 * @arg: the validated argument
 * @nranks: the communicator's size
 * @rank: the caller's rank
 * @lay: filled: bytes[] by enum coll_sbuf; if the buffers overlap
 *       (inplace), the inner one lies at byte off of the outer one
 *
 * Needs no lock; reads no user memory.
 *
 * Return: 0, -EOVERFLOW (the collective moves more than COLL_MAX_BYTES, or
 * a buffer's range wraps) or -EINVAL (the buffers overlap in a way no in-place call does).
 */
int coll_op_layout(const struct coll_op *arg, u32 nranks, u32 rank,
		   struct coll_layout *lay)
{
	u64 addr[2] = { arg->sendbuf, arg->recvbuf };
	u32 esize = coll_dtype_size(arg->dtype);
	u64 total, off;
	u32 b;

	if (arg->prim == COLL_BARRIER)
		esize = 1;
	if (check_mul_overflow(arg->count, (u64)nranks, &total) ||
	    check_mul_overflow(total, (u64)esize, &total) ||
	    total > COLL_MAX_BYTES)
		return -EOVERFLOW;
	for (b = 0; b < 2; b++) {
		lay->bytes[b] = coll_sched_buf_elems(arg->prim, nranks,
						     arg->root, rank, b,
						     arg->count) * esize;
		/* a range that wraps (as coll_obuf_pin() would say) */
		if (check_add_overflow(addr[b], lay->bytes[b], &off))
			return -EOVERFLOW;
	}
	lay->inplace = false;
	if (!coll_ranges_overlap(addr[0], lay->bytes[0], addr[1],
				 lay->bytes[1]))
		return 0;
	if (!coll_sched_inplace_layout(arg->prim, nranks, arg->root, rank,
				       arg->count, &lay->outer, &lay->inner,
				       &off))
		return -EINVAL;
	off *= esize;
	if (addr[lay->inner] != addr[lay->outer] + off ||
	    off + lay->bytes[lay->inner] > lay->bytes[lay->outer])
		return -EINVAL;
	lay->off = off;
	lay->inplace = true;
	return 0;
}

/**
 * coll_sub_pin() - pin what this rank's part of a collective uses
 * @sub: the part; desc, ob[] and base[] are filled
 * @cf: the caller's descriptor, whose registration cache is used
 * @arg: the validated argument
 * @nranks: the communicator's size
 * @rank: the caller's rank
 *
 * Works out the sizes and the in-place layout (coll_op_layout()), then
 * pins (or finds them pinned in @cf's registration cache).  Needs no lock.
 *
 * Return: 0, or -EOVERFLOW, -EINVAL (a bad overlap) or coll_obuf_pin()'s
 * errors, with nothing pinned.
 */
int coll_sub_pin(struct coll_sub *sub, struct coll_file *cf,
		 const struct coll_op *arg, u32 nranks, u32 rank)
{
	u64 addr[2] = { arg->sendbuf, arg->recvbuf };
	struct coll_layout lay;
	u32 b;
	int ret;

	sub->rank = rank;
	ret = coll_op_layout(arg, nranks, rank, &lay);
	sub->desc = coll_desc_of(arg, !ret && lay.inplace);
	if (ret)
		return ret;
	if (lay.inplace) {
		ret = coll_sub_pin_buf(sub, cf, addr[lay.outer],
				       lay.bytes[lay.outer], true,
				       &sub->ob[lay.outer]);
		if (ret)
			return ret;
		sub->ob[lay.inner] = sub->ob[lay.outer];
		sub->base[lay.inner] = lay.off;
		return 0;
	}

	for (b = 0; b < 2; b++) {
		if (!lay.bytes[b])
			continue;
		ret = coll_sub_pin_buf(sub, cf, addr[b], lay.bytes[b],
				       b == COLL_SBUF_RECV, &sub->ob[b]);
		if (ret)
			goto err_release;
	}
	return 0;

err_release:
	coll_sub_put_obuf(sub, sub->ob[0], false);
	sub->ob[0] = NULL;
	return ret;
}

/**
 * coll_sub_unpin() - give back the buffers of a rank's part
 * @sub: the part
 * @keep: its collective ended well: what it pinned may stay pinned in the
 *        descriptor's registration cache (else it is unpinned, so that a
 *        failed call leaves nothing behind)
 *
 * May sleep.
 */
void coll_sub_unpin(struct coll_sub *sub, bool keep)
{
	if (sub->ob[1] != sub->ob[0])
		coll_sub_put_obuf(sub, sub->ob[1], keep);
	coll_sub_put_obuf(sub, sub->ob[0], keep);
	sub->ob[0] = NULL;
	sub->ob[1] = NULL;
}

/* A part that never joined a task, or whose task is being freed. */
void coll_sub_free(struct coll_sub *sub)
{
	if (!sub)
		return;
	coll_sub_unpin(sub, false);
	coll_plan_put(sub->plan);
	if (sub->req)
		coll_req_put(sub->req);
	if (sub->cf)
		kref_put(&sub->cf->kref, coll_file_release);
	coll_kvfree(sub, sizeof(*sub));
}

/**
 * coll_task_release_rank() - a rank is done with a DONE task: unpin its part
 * @task: the task, DONE
 * @rank: the rank whose thread (or work item) saw DONE
 *
 * No thread touches any buffer after DONE, so each rank unpins its own, in
 * its own thread: the cost is spread, and the last rank to let go does not
 * unpin everyone's.  Whatever is left goes with the task.
 */
void coll_task_release_rank(struct coll_task *task, u32 rank)
{
	struct coll_sub *sub = task->sub[rank];

	if (coll_task_state(task) != COLL_TASK_DONE || !sub)
		return;
	/*
	 * A collective across hosts that failed ended without every peer
	 * saying it was done with this host's buffers: one may still be
	 * reading them, through a grant (RDMA READ) or an answer its link
	 * queued with the task held (TCP).  Their pages go with the task,
	 * once the grants are revoked (coll_task_free()).
	 */
	if (task->xt && READ_ONCE(task->status))
		return;
	if (test_and_set_bit(COLL_SUB_RELEASED, &sub->flags))
		return;
	coll_sub_unpin(sub, !READ_ONCE(task->status));
}

/**
 * coll_task_alloc() - a task for the first rank to arrive
 * @comm: the communicator (the caller holds a reference; the task takes one
 *        when it is published)
 *
 * Return: the task, not yet published, or NULL.
 */
struct coll_task *coll_task_alloc(struct coll_comm *comm)
{
	size_t bytes = struct_size((struct coll_task *)NULL, sub, comm->nranks);
	struct coll_task *task;

	task = coll_kvzalloc(bytes);
	if (!task)
		return NULL;
	task->alloc_bytes = bytes;
	kref_init(&task->kref);		/* the comm's in-flight list */
	INIT_LIST_HEAD(&task->node);
	spin_lock_init(&task->lock);
	init_waitqueue_head(&task->wq);
	task->nranks = comm->nranks;
	task->nlocal = comm->hosts ? comm->hosts->nlocal : comm->nranks;
	task->state = COLL_TASK_ARRIVING;
	task->t_first = ktime_get_ns();
	if (comm->hosts && coll_xtask_alloc(task, comm)) {
		coll_kvfree(task, bytes);
		return NULL;
	}
	return task;
}

/**
 * coll_task_prim() - the primitive of a task, started or not
 * @task: the task; the caller holds comm->lock or the task has started
 *
 * Return: the primitive, or COLL_PRIM_MAX if no rank's part says.
 */
u32 coll_task_prim(const struct coll_task *task)
{
	u32 r;

	if (coll_task_state((struct coll_task *)task) != COLL_TASK_ARRIVING &&
	    task->sched)
		return task->desc.prim;
	for (r = 0; r < task->nranks; r++)
		if (task->sub[r])
			return task->sub[r]->desc.prim;
	return COLL_PRIM_MAX;
}

/* A task allocated by coll_task_alloc() that was never published. */
void coll_task_free_unused(struct coll_task *task)
{
	if (!task)
		return;
	coll_xtask_free(task);
	coll_kvfree(task, task->alloc_bytes);
}

static void coll_task_free(struct coll_task *task)
{
	u32 r;

	/* the grants first: no peer can reach the pages once they go */
	coll_xtask_free(task);
	for (r = 0; r < task->nranks; r++) {
		struct coll_sub *sub = task->sub[r];

		/* a rank that did not let go itself: cache only on success */
		if (sub && !test_and_set_bit(COLL_SUB_RELEASED, &sub->flags))
			coll_sub_unpin(sub, coll_task_state(task) ==
					    COLL_TASK_DONE && !task->status);
		coll_sub_free(sub);
	}
	coll_plan_put(task->plan);
	if (task->comm)
		coll_comm_put(task->comm);
	coll_kvfree(task, task->alloc_bytes);
}

static void coll_task_free_work(struct work_struct *work)
{
	coll_task_free(container_of(work, struct coll_task, free_work));
}

/* Pages a task still has pinned (each obuf counted once). */
static unsigned long coll_task_pinned(const struct coll_task *task)
{
	unsigned long n = 0;
	u32 r;

	for (r = 0; r < task->nranks; r++) {
		const struct coll_sub *sub = task->sub[r];

		if (!sub)
			continue;
		if (sub->ob[0])
			n += sub->ob[0]->npages;
		if (sub->ob[1] && sub->ob[1] != sub->ob[0])
			n += sub->ob[1]->npages;
	}
	return n;
}

/* Leftovers up to this many pages are unpinned by whoever lets go last. */
#define COLL_TASK_INLINE_UNPIN	256

/*
 * The last reference.  Buffers still pinned here belong to ranks that did
 * not see DONE themselves (killed, closed, or non-blocking ranks of a task
 * run solo): unpinning many can take long, so then it is not done in
 * whoever's thread this happens to be, but in the module's workqueue.
 */
static void coll_task_release(struct kref *kref)
{
	struct coll_task *task = container_of(kref, struct coll_task, kref);

	/*
	 * Across hosts, grants are revoked (waiting for the device) before the
	 * pages go: never in whatever context let go last, which may be a
	 * completion queue's.
	 */
	if (task->xt || coll_task_pinned(task) > COLL_TASK_INLINE_UNPIN) {
		INIT_WORK(&task->free_work, coll_task_free_work);
		queue_work(coll_wq, &task->free_work);
		return;
	}
	coll_task_free(task);
}

void coll_task_get(struct coll_task *task)
{
	kref_get(&task->kref);
}

/* May sleep (unpinning): never call with a spinlock held. */
void coll_task_put(struct coll_task *task)
{
	might_sleep();
	kref_put(&task->kref, coll_task_release);
}
