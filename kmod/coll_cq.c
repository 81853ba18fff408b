// SPDX-License-Identifier: GPL-2.0
/*
 * Completion queues of the RDMA links, polled either from their interrupts
 * or by the ranks that wait on them: NAPI's busy polling, for a verbs CQ.
 *
 * By default a completion event queues a work item, which polls the CQ
 * (calling each work request's ib_cqe.done), then re-arms it: the core's
 * IB_POLL_WORKQUEUE, on the module's own workqueue.  With the module
 * parameter busy_poll_us set, a rank that waits for a peer host first
 * polls the CQs of its communicator's links itself (coll_link_poll_*()),
 * up to that long, and only then sleeps: a small message then costs no
 * interrupt-to-work-item-to-rank wake-up chain.
 *
 * Whoever polls owns the CQ (bit COLL_CQ_OWNED), so the done() callbacks of
 * one CQ never run concurrently and run in the CQ's order, whoever runs
 * them; both pollers run them in process context.  The owner re-arms the
 * CQ when it lets go, asking for missed events, and an event (or a work
 * item) that found the CQ owned leaves COLL_CQ_MISSED for the owner to see
 * after it let go: no completion is stranded between the two pollers.  The CQ's teardown
 * takes the bit for good, so a rank still holding the link fails to own it
 * afterwards.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "coll_loc.h"

#define COLL_CQ_BUDGET	64	/* completions per turn of the work item */

static struct workqueue_struct *coll_cq_wq;

/*
 * A completion event (the device's interrupt context).  While a poller
 * owns the CQ, it only leaves COLL_CQ_MISSED for the owner to find when it
 * lets go, so that a rank busy-polling is not raced by a work item it
 * would wake: the interrupt stays off while polling, as in NAPI.
 */
static void coll_cq_event(struct ib_cq *cq, void *ctx)
{
	struct coll_cq *c = ctx;

	set_bit(COLL_CQ_MISSED, &c->flags);
	smp_mb__after_atomic();		/* pairs with coll_cq_release() */
	if (!test_bit(COLL_CQ_OWNED, &c->flags))
		queue_work(coll_cq_wq, &c->work);
}

/**
 * coll_cq_own() - become the CQ's only poller
 * @c: the CQ
 *
 * Return: true if the caller owns it now (coll_cq_release() to let go);
 * false if another poller does, or there is no CQ (yet, or any more: the
 * teardown keeps the bit).
 */
bool coll_cq_own(struct coll_cq *c)
{
	return READ_ONCE(c->cq) && !test_and_set_bit_lock(COLL_CQ_OWNED,
							  &c->flags);
}

/**
 * coll_cq_process() - reap and handle completions, as the owner
 * @c: the CQ, owned by the caller
 * @budget: at most this many
 *
 * Context: process; the done() callbacks may sleep.
 *
 * Return: the completions handled.
 */
int coll_cq_process(struct coll_cq *c, int budget)
{
	int done = 0, n, i;

	while (done < budget) {
		n = ib_poll_cq(c->cq, min_t(int, COLL_CQ_BATCH, budget - done),
			       c->wc);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			struct ib_wc *wc = &c->wc[i];

			if (wc->wr_cqe)
				wc->wr_cqe->done(c->cq, wc);
			else
				WARN_ON_ONCE(wc->status == IB_WC_SUCCESS);
		}
		done += n;
		if (n < COLL_CQ_BATCH)
			break;
	}
	return done;
}

/**
 * coll_cq_release() - stop owning the CQ, and re-arm it
 * @c: the CQ, owned by the caller
 * @more: the owner left completions in it (queue the work item at once)
 *
 * The CQ is re-armed and the work item queued while the caller still owns
 * it, so that the teardown, which takes the CQ before it destroys it, comes
 * after both.  An event or a work item that came in between and found the
 * CQ owned left COLL_CQ_MISSED: the CQ is taken back and polled again.
 *
 * Context: process (it may handle completions).
 */
void coll_cq_release(struct coll_cq *c, bool more)
{
	for (;;) {
		/*
		 * What was missed before is in the CQ, which re-arming with
		 * IB_CQ_REPORT_MISSED_EVENTS sees: only events from here on
		 * need the owner's second look.
		 */
		clear_bit(COLL_CQ_MISSED, &c->flags);
		smp_mb__after_atomic();	/* pairs with coll_cq_event() */
		if (more || ib_req_notify_cq(c->cq, IB_CQ_NEXT_COMP |
					     IB_CQ_REPORT_MISSED_EVENTS) > 0)
			queue_work(coll_cq_wq, &c->work);
		clear_bit_unlock(COLL_CQ_OWNED, &c->flags);
		smp_mb__after_atomic();	/* pairs with coll_cq_event(), _work() */
		if (!test_bit(COLL_CQ_MISSED, &c->flags) || !coll_cq_own(c))
			return;
		more = coll_cq_process(c, COLL_CQ_BUDGET) >= COLL_CQ_BUDGET;
	}
}

static void coll_cq_work(struct work_struct *work)
{
	struct coll_cq *c = container_of(work, struct coll_cq, work);

	/* Said before trying: the owner looks after it lets go. */
	set_bit(COLL_CQ_MISSED, &c->flags);
	smp_mb__after_atomic();		/* pairs with coll_cq_release() */
	if (!coll_cq_own(c))
		return;
	clear_bit(COLL_CQ_MISSED, &c->flags);
	coll_cq_release(c, coll_cq_process(c, COLL_CQ_BUDGET) >=
			COLL_CQ_BUDGET);
}

/**
 * coll_cq_create() - a CQ polled from its interrupts or by waiting ranks
 * @c: where it lives (in the link: it must outlive every poller)
 * @ib: the device
 * @cqe: entries
 *
 * Return: 0, or a negative errno.
 */
int coll_cq_create(struct coll_cq *c, struct ib_device *ib, int cqe)
{
	struct ib_cq_init_attr attr = { .cqe = cqe };

	c->flags = 0;
	INIT_WORK(&c->work, coll_cq_work);
	c->wc = kcalloc(COLL_CQ_BATCH, sizeof(*c->wc), GFP_KERNEL);
	if (!c->wc)
		return -ENOMEM;
	c->cq = ib_create_cq(ib, coll_cq_event, NULL, c, &attr);
	if (IS_ERR(c->cq)) {
		int err = PTR_ERR(c->cq);

		c->cq = NULL;
		kfree(c->wc);
		c->wc = NULL;
		return err;
	}
	ib_req_notify_cq(c->cq, IB_CQ_NEXT_COMP);
	return 0;
}

/**
 * coll_cq_destroy() - after the queue pairs on it are destroyed
 * @c: the CQ
 *
 * Takes the CQ from any poller for good, destroys it (no event comes after
 * that), then waits for the work item.  May sleep.
 */
void coll_cq_destroy(struct coll_cq *c)
{
	if (!c->cq)
		return;
	while (test_and_set_bit_lock(COLL_CQ_OWNED, &c->flags))
		usleep_range(10, 100);
	ib_destroy_cq(c->cq);
	WRITE_ONCE(c->cq, NULL);
	cancel_work_sync(&c->work);
	kfree(c->wc);
	c->wc = NULL;
}

int coll_cq_init(void)
{
	coll_cq_wq = alloc_workqueue("coll_cq", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	return coll_cq_wq ? 0 : -ENOMEM;
}

void coll_cq_exit(void)
{
	destroy_workqueue(coll_cq_wq);
}
