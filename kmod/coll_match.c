// SPDX-License-Identifier: GPL-2.0
/*
 * Matching: COLL_SUBMIT, from the caller's argument to its place in a task.
 *
 * Every rank submits its collectives in the same order; the n-th submission
 * of each rank lands in the same struct coll_task, found by sequence number
 * in the communicator's in-flight list.  The last rank to arrive hands the
 * task to coll_run_start(), which checks that all ranks agree, plans and
 * starts it.
 *
 * The order of a submission (iommufd's rule: finalize only once nothing can
 * fail): validate; take a reference on the membership and reserve the
 * request handle (under the descriptor's lock); pin the buffers and
 * allocate the rank's part (no lock held, so a large pin never stalls the
 * descriptor's other threads); write the handle to the caller; only then
 * publish the part in its task, which takes a sequence number and cannot
 * fail but for the communicator's death.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/uaccess.h>

#include "coll_loc.h"
#include "coll_trace.h"

/* Checks that need no communicator (also for each op of a group). */
int coll_op_check(const struct coll_op *arg)
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

/* Locks: comm->lock. */
struct coll_task *coll_task_find(struct coll_comm *comm, u64 seq)
{
	struct coll_task *task;

	lockdep_assert_held(&comm->lock);
	list_for_each_entry(task, &comm->tasks, node)
		if (task->seq == seq)
			return task;
	return NULL;
}

/* Is the task of this member's next collective already there? */
static bool coll_match_peek(struct coll_member *m)
{
	struct coll_comm *comm = m->comm;
	bool found;

	spin_lock(&comm->lock);
	found = comm->dead || coll_task_find(comm, m->next_seq);
	spin_unlock(&comm->lock);
	return found;
}

/*
 * Locks: comm->lock, the communicator alive.  Put @sub into the task of
 * @m's next collective, creating it from *@cand (then set to NULL) if it is
 * not there yet.  Return: the task, or NULL if it had to be created and
 * *@cand was NULL, or, if the first rank of that collective took the eager
 * path (coll_eager_meet_locked()), ERR_PTR(-EXDEV) when this submission
 * must follow it there, ERR_PTR(-EPROTO) when it cannot (the caller wakes
 * the slot's waiters).
 */
static struct coll_task *coll_match_publish_locked(struct coll_member *m,
						   struct coll_sub *sub,
						   struct coll_task **cand,
						   bool *start)
{
	struct coll_comm *comm = m->comm;
	struct coll_task *task;
	int err;

	lockdep_assert_held(&comm->lock);
	err = coll_eager_meet_locked(m, sub);
	if (err)
		return ERR_PTR(err == -EAGAIN ? -EXDEV : err);
	task = coll_task_find(comm, m->next_seq);
	if (!task) {
		if (!*cand)
			return NULL;
		task = *cand;
		*cand = NULL;
		task->seq = m->next_seq;
		kref_get(&comm->kref);
		task->comm = comm;
		list_add_tail(&task->node, &comm->tasks);
		atomic64_inc(&coll_stats.ops);
		if (task->xt)
			coll_xhost_adopt_early(task);
	}
	m->next_seq++;
	sub->task = task;
	task->sub[m->rank] = sub;
	if (!sub->req)
		coll_task_get(task);	/* the blocking caller's */
	*start = ++task->narrived == task->nlocal;
	if (*start)
		coll_task_get(task);	/* the starter's */
	trace_coll_op_submit(task, m->rank, &sub->desc, !!sub->req);
	return task;
}

/**
 * coll_match_publish() - put a rank's part into its task
 * @m: the membership (a reference held)
 * @sub: the part, pinned
 * @cand: a task allocated in case this rank is the first to arrive; set
 *        to NULL if it was used
 * @start: set if this rank was the last to arrive
 *
 * Locks: takes comm->lock.
 *
 * After this, @sub belongs to the task; the caller may touch the task only
 * through the references it gets here: one for a blocking caller, one more
 * for the last to arrive, which starts it.
 *
 * Return: the task, or ERR_PTR(-ECONNRESET) for a dead communicator, or
 * ERR_PTR(-EAGAIN) if a task had to be created and @cand was NULL, or
 * ERR_PTR(-ENOSPC) if it may not be created yet (coll_xhost_too_far()),
 * or ERR_PTR(-EPROTO) if the collective went the eager path (the
 * sequence number is spent), or ERR_PTR(-EXDEV) if it went the eager path
 * and this submission must follow it there (nothing done).
 */
static struct coll_task *coll_match_publish(struct coll_member *m,
					    struct coll_sub *sub,
					    struct coll_task **cand,
					    bool *start)
{
	struct coll_comm *comm = m->comm;
	struct coll_task *task = ERR_PTR(-ECONNRESET);

	spin_lock(&comm->lock);
	if (comm->dead)
		goto out_unlock;
	task = ERR_PTR(-ENOSPC);
	if (*cand && (*cand)->xt && !coll_task_find(comm, m->next_seq) &&
	    coll_xhost_too_far(comm, m->next_seq))
		goto out_unlock;
	task = coll_match_publish_locked(m, sub, cand, start);
	if (!task)
		task = ERR_PTR(-EAGAIN);
out_unlock:
	spin_unlock(&comm->lock);
	if (PTR_ERR_OR_ZERO(task) == -EPROTO)
		coll_eager_wake(comm);
	return task;
}

/**
 * coll_match_publish_group() - put the parts of a group into their tasks
 * @m: the membership (a reference held)
 * @subs: the parts, ready as for coll_match_publish()
 * @cands: a task allocated for each part; those used are set to NULL
 * @n: parts, > 0
 * @tasks: filled with the task of each part, each with the blocking
 *         caller's reference (and the starter's where @starts says), or
 *         ERR_PTR(-EPROTO) for a part whose collective went the eager
 *         path (its sequence number spent, its part still the caller's;
 *         a part of a group never follows a collective there)
 * @starts: filled: this rank was the last to arrive at that task
 *
 * All or nothing, in one hold of comm->lock: the group takes @n
 * consecutive sequence numbers, and no other submission of the membership
 * comes between them.
 *
 * Locks: takes comm->lock.
 *
 * Return: 0, -ECONNRESET for a dead communicator, or -ENOSPC if a task
 * would be created too far ahead of the peer hosts (coll_xhost_too_far()).
 */
int coll_match_publish_group(struct coll_member *m, struct coll_sub **subs,
			     struct coll_task **cands, u32 n,
			     struct coll_task **tasks, bool *starts)
{
	struct coll_comm *comm = m->comm;
	bool met = false;
	int ret = 0;
	u32 i;

	spin_lock(&comm->lock);
	if (comm->dead) {
		ret = -ECONNRESET;
		goto out_unlock;
	}
	if (cands[0]->xt && coll_xhost_too_far(comm, m->next_seq + n - 1)) {
		ret = -ENOSPC;
		goto out_unlock;
	}
	for (i = 0; i < n; i++) {
		tasks[i] = coll_match_publish_locked(m, subs[i], &cands[i],
						     &starts[i]);
		/* a candidate for every part: never NULL */
		if (WARN_ON_ONCE(!tasks[i]))
			break;
		met |= IS_ERR(tasks[i]);	/* a slot's, now EPROTO */
	}
out_unlock:
	spin_unlock(&comm->lock);
	if (met)
		coll_eager_wake(comm);
	return ret;
}

/* Undo the reservation of a request handle. */
static void coll_match_unreserve(struct coll_file *cf, u32 handle)
{
	mutex_lock(&cf->lock);
	xa_erase(&cf->reqs, handle);
	cf->nreqs--;
	mutex_unlock(&cf->lock);
}

/**
 * coll_op_submit_one() - submit one collective
 * @cf: the caller's descriptor
 * @arg: the argument, the kernel's copy
 * @uarg: the caller's, where out_req is written back for a non-blocking
 *        ioctl; NULL for io_uring
 * @ioucmd: the io_uring command that submits it (coll_uring.c), or NULL
 *          for the ioctl
 *
 * An io_uring command is a non-blocking submission without a handle: its
 * request completes the command instead.
 *
 * Locks: takes cf->lock, then (not nested) comm->lock; neither is held
 * while pinning or waiting.
 *
 * Return: 0 or -errno as documented in the uapi header; for a blocking
 * call, the collective's own result; -EIOCBQUEUED for a command queued.
 */
int coll_op_submit_one(struct coll_file *cf, struct coll_op *arg,
		       struct coll_op __user *uarg,
		       struct io_uring_cmd *ioucmd)
{
	bool nonblock = (arg->flags & COLL_OP_F_NONBLOCK) || ioucmd;
	bool handle_out = nonblock && !ioucmd;
	struct coll_task *task, *cand = NULL;
	struct coll_req *req = NULL;
	struct coll_member *m;
	struct coll_sub *sub;
	bool start = false, written = false;
	u32 handle = 0, rank;
	int ret;

	ret = coll_op_check(arg);
	if (ret)
		return ret;

	mutex_lock(&cf->lock);
	m = xa_load(&cf->members, arg->comm);
	if (!m) {
		mutex_unlock(&cf->lock);
		return -ENOENT;
	}
	kref_get(&m->kref);
	if (handle_out) {
		if (cf->nreqs >= READ_ONCE(coll_max_requests))
			ret = -ENOSPC;
		else
			ret = xa_alloc_cyclic(&cf->reqs, &handle, NULL,
					      xa_limit_31b, &cf->req_next,
					      GFP_KERNEL_ACCOUNT);
		if (ret >= 0) {
			cf->nreqs++;
			ret = 0;
		}
	}
	mutex_unlock(&cf->lock);
	if (!ret && ioucmd)
		ret = coll_uring_reserve(cf);
	if (ret)
		goto err_put_member;

	rank = m->rank;
	if (coll_prim_rooted(arg->prim) && arg->root >= m->comm->nranks) {
		ret = -EINVAL;
		goto err_unreserve;
	}
	/* its peers run it in user space, in the mapped slots */
	if (!nonblock) {
		ret = coll_map_takes(m->comm, rank, arg);
		if (ret)
			goto err_unreserve;
	}
retry_eager:
	if (!nonblock || ioucmd) {
		ret = coll_eager_submit(cf, m, arg, ioucmd);
		if (ret == -EIOCBQUEUED) {	/* parked: its reservation too */
			coll_member_put(m);
			return ret;
		}
		if (ret != -EAGAIN)
			goto err_unreserve;
	}
	sub = coll_sub_alloc();
	if (!sub) {
		ret = -ENOMEM;
		goto err_unreserve;
	}
	ret = coll_sub_pin(sub, cf, arg, m->comm->nranks, rank);
	if (ret)
		goto err_free_sub;
	if (nonblock) {
		req = coll_req_alloc();		/* the part's reference */
		if (!req) {
			ret = -ENOMEM;
			goto err_free_sub;
		}
		sub->req = req;
		kref_get(&req->kref);	/* the descriptor's, or the command's */
	}
	kref_get(&cf->kref);
	sub->cf = cf;
	/* The first to arrive allocates the task: only if none is there. */
	if (!coll_match_peek(m)) {
		cand = coll_task_alloc(m->comm);
		if (!cand) {
			ret = -ENOMEM;
			goto err_free_sub;
		}
	}

	/* The output, before anything is published. */
	if (handle_out) {
		if (put_user(handle, &uarg->out_req)) {
			ret = -EFAULT;
			goto err_free_cand;
		}
		written = true;
	}
	/* Last before publication: a call that fails leaves no plan behind. */
	ret = coll_run_plan_ahead(m->comm, sub);
	if (ret)
		goto err_free_cand;

	if (ioucmd)
		coll_uring_track(cf, req, ioucmd);
	for (;;) {
		task = coll_match_publish(m, sub, &cand, &start);
		if (PTR_ERR_OR_ZERO(task) != -EAGAIN)
			break;
		/* Another thread of this membership took the peeked slot. */
		cand = coll_task_alloc(m->comm);
		if (!cand) {
			ret = -ENOMEM;
			goto err_untrack;
		}
	}
	if (IS_ERR(task)) {
		ret = PTR_ERR(task);
		goto err_untrack;
	}
	coll_task_free_unused(cand);

	if (handle_out) {
		/* Storing into a reserved entry allocates nothing. */
		mutex_lock(&cf->lock);
		xa_store(&cf->reqs, handle, req, GFP_KERNEL_ACCOUNT);
		mutex_unlock(&cf->lock);
		atomic64_inc(&coll_stats.reqs);
	}
	coll_member_put(m);

	if (start) {
		coll_run_start(task);
		coll_task_put(task);
	}
	if (nonblock)
		return ioucmd ? -EIOCBQUEUED : 0;
	ret = coll_run_participate(task, true);
	coll_task_release_rank(task, rank);
	coll_task_put(task);
	return ret;

err_untrack:
	if (ioucmd)
		coll_uring_untrack(cf, req);
err_free_cand:
	coll_task_free_unused(cand);
	if (written)
		(void)put_user(arg->out_req, &uarg->out_req);
err_free_sub:
	coll_sub_free(sub);
	if (req)
		coll_req_put(req);
	/* blocking (or io_uring), its collective went the eager path after all */
	if (ret == -EXDEV) {
		cand = NULL;
		goto retry_eager;
	}
err_unreserve:
	if (ioucmd)
		coll_uring_unreserve(cf);
	else if (nonblock)
		coll_match_unreserve(cf, handle);
err_put_member:
	coll_member_put(m);
	return ret;
}

/**
 * coll_op_submit() - COLL_SUBMIT
 * @cf: the caller's descriptor
 * @ucmd: the argument (struct coll_op); out_req is written for
 *        non-blocking calls, nothing for blocking ones
 *
 * Return: as coll_op_submit_one().
 */
int coll_op_submit(struct coll_file *cf, struct coll_ucmd *ucmd)
{
	return coll_op_submit_one(cf, ucmd->cmd, ucmd->ubuf, NULL);
}
