// SPDX-License-Identifier: GPL-2.0
/*
 * Non-blocking requests: handles, results, COLL_WAIT, COLL_TEST and poll().
 *
 * A request is only a handle and a result.  The collective behind it (the
 * task) may be long gone when the request is collected: the task's finish
 * writes the result into the request and wakes the descriptor's waiters,
 * then frees everything else.  So an uncollected request costs one small
 * object, and a descriptor may hold at most max_requests of them.
 *
 * Handles are allocated cyclically (xa_alloc_cyclic()), so a released handle
 * is not reused soon, and a waiter holds a reference on the request it
 * waits for, so comparing pointers cannot be fooled by reuse.  Concurrent
 * waits on one handle: all waiters return when it completes; the first to
 * take it from the descriptor returns its result, the others ENOENT.
 *
 * COLL_WAIT polls for up to the module's spin_ns before it sleeps, as
 * the task path's waits do, and only while no other task wants this CPU
 * (as KVM's halt polling): a sleeping waiter's CPU goes idle, and waking
 * it costs an IPI and two context switches, which for a small collective
 * is most of its time; but a rank or work item that could run here must
 * not wait for the poll to end.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/poll.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "coll_loc.h"

struct coll_req *coll_req_alloc(void)
{
	struct coll_req *req = coll_kvzalloc(sizeof(*req));

	if (req)
		kref_init(&req->kref);
	return req;
}

static void coll_req_free(struct kref *kref)
{
	coll_kvfree(container_of(kref, struct coll_req, kref),
		    sizeof(struct coll_req));
}

void coll_req_put(struct coll_req *req)
{
	kref_put(&req->kref, coll_req_free);
}

static bool coll_req_done(const struct coll_req *req)
{
	/* pairs with smp_store_release() in coll_req_complete() */
	return smp_load_acquire(&req->done);
}

/**
 * coll_req_complete() - the collective behind a request ended
 * @req: the request (the caller holds a reference)
 * @cf: its descriptor
 * @status: the result
 *
 * A request of io_uring completes its command instead (coll_uring.c).
 */
void coll_req_complete(struct coll_req *req, struct coll_file *cf,
		       int status)
{
	if (req->ioucmd) {
		coll_uring_complete(req, cf, status);
		return;
	}
	WRITE_ONCE(req->status, status);
	/* status before done: pairs with coll_req_done() */
	smp_store_release(&req->done, true);
	atomic_inc(&cf->ndone);
	wake_up_all(&cf->wq);		/* COLL_WAIT and poll() */
}

/* Locks: cf->lock.  Drop the descriptor's hold on @req at @handle. */
static void coll_req_unlist(struct coll_file *cf, unsigned long handle,
			    struct coll_req *req)
{
	lockdep_assert_held(&cf->lock);
	xa_erase(&cf->reqs, handle);
	cf->nreqs--;
	if (coll_req_done(req))
		atomic_dec(&cf->ndone);
	atomic64_dec(&coll_stats.reqs);
	coll_req_put(req);
}

/**
 * coll_req_wait() - COLL_WAIT and COLL_TEST
 * @cf: the caller's descriptor
 * @arg: the argument
 * @test: COLL_TEST: do not block
 *
 * Locks: takes cf->lock, not held while waiting.
 */
int coll_req_wait(struct coll_file *cf, struct coll_wait *arg, bool test)
{
	struct coll_req *req;
	u64 until;
	long left;
	int ret;

	if (arg->flags)
		return -EOPNOTSUPP;
	if (test && arg->timeout_ms)
		return -EINVAL;

	mutex_lock(&cf->lock);
	req = xa_load(&cf->reqs, arg->req);
	if (req)
		kref_get(&req->kref);
	mutex_unlock(&cf->lock);
	if (!req)
		return -ENOENT;

	if (test) {
		if (!coll_req_done(req)) {
			ret = -EAGAIN;
			goto out_put;
		}
	} else {
		until = local_clock() + coll_tune_get(NULL, COLL_TUNE_SPIN_NS);
		while (!coll_req_done(req) && coll_may_poll(until, true))
			cpu_relax();
		left = wait_event_killable_timeout(cf->wq, coll_req_done(req),
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

	mutex_lock(&cf->lock);
	if (xa_load(&cf->reqs, arg->req) == req) {
		ret = READ_ONCE(req->status);
		coll_req_unlist(cf, arg->req, req);
	} else {
		ret = -ENOENT;		/* collected by another thread */
	}
	mutex_unlock(&cf->lock);
out_put:
	coll_req_put(req);
	return ret;
}

/* The descriptor is going away: drop every request. */
void coll_req_release_all(struct coll_file *cf)
{
	struct coll_req *req;
	unsigned long index;

	mutex_lock(&cf->lock);
	xa_for_each(&cf->reqs, index, req)
		coll_req_unlist(cf, index, req);
	mutex_unlock(&cf->lock);
}

/* poll(): is a request of this descriptor complete and not collected? */
bool coll_file_has_done(struct coll_file *cf)
{
	return atomic_read(&cf->ndone) > 0;
}
