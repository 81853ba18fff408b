// SPDX-License-Identifier: GPL-2.0
/*
 * Running a collective: the task's one state machine and its cooperative
 * execution.
 *
 * States (enum coll_task_state) only move forward, ARRIVING -> RUNNING ->
 * DONE or ARRIVING -> DONE, and only through coll_task_set_state(), under
 * task->lock.  The state is written with smp_store_release() after what it
 * publishes (the execution set-up for RUNNING; status and the buffers'
 * contents for DONE) and read locklessly with smp_load_acquire()
 * (coll_task_state()).  Whoever moves a task to DONE calls coll_run_finish()
 * exactly once: that is where requests get their result.
 *
 * Execution is cooperative: every blocking caller, and a work item for
 * every non-blocking one, claims chunks of the current round from one
 * counter and runs them through the task's transport (xport->chunk); the
 * thread that finishes the last chunk of a round opens the next one.
 * Chunks are numbered across rounds in order, so a claim never runs ahead
 * of its round.  Small collectives (solo_bytes) are run by the last rank
 * to arrive alone, the others only wait for DONE.
 *
 * Abort protocol with coll_run_abort(): an executor raises nactive before
 * it looks at status (a full barrier between them), the aborter writes
 * status before it looks at nactive (likewise); so either the executor sees
 * the abort and touches no buffer, or the aborter sees it active and the
 * last one out finishes.
 *
 * A thread with a fatal signal stops at once and kills the communicator
 * (coll_comm_kill()): its peers hear of it now, and no holder of the same
 * membership (a descriptor shared by fork or SCM_RIGHTS) can go on out of
 * step.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>

#include "coll_loc.h"
#include "coll_trace.h"

/* Locks: task->lock.  The one place a task's state changes. */
static void coll_task_set_state(struct coll_task *task,
				enum coll_task_state state)
{
	lockdep_assert_held(&task->lock);
	WARN_ON_ONCE(state <= task->state);
	/* pairs with smp_load_acquire() in coll_task_state() */
	smp_store_release(&task->state, state);
}

/* Locks: task->lock.  Record the result, once; DONE publishes it. */
static void coll_task_set_status(struct coll_task *task, int err)
{
	lockdep_assert_held(&task->lock);
	if (!task->status)
		WRITE_ONCE(task->status, err);
}

/*
 * The task became DONE: leave the in-flight list, give requests their
 * result, wake everyone.  Called exactly once, by whoever made the
 * transition, with a reference besides the list's, never under a lock.
 */
static void coll_run_finish(struct coll_task *task)
{
	struct coll_comm *comm = task->comm;
	int status = READ_ONCE(task->status);
	u32 r;

	spin_lock(&comm->lock);
	list_del_init(&task->node);
	spin_unlock(&comm->lock);

	atomic64_dec(&coll_stats.ops);
	if (!status) {
		atomic64_inc(&coll_stats.ops_total);
		atomic64_add(task->bytes, &coll_stats.bytes_total);
	}
	trace_coll_op_done(task, status);
	/*
	 * sub[] is stable: every rank arrived (a normal end), or the
	 * communicator is dead (an abort), which stops publication.
	 */
	for (r = 0; r < task->nranks; r++) {
		struct coll_sub *sub = task->sub[r];

		if (sub && sub->req)
			coll_req_complete(sub->req, sub->cf, status);
	}
	wake_up_all(&task->wq);
	coll_task_put(task);		/* the list's reference */
}

/*
 * Move a RUNNING task to DONE if @aborted says how it ended: normally (the
 * last chunk of the last round is done, no error) or aborted (an error, and
 * the last executor has left).
 */
static void coll_run_end(struct coll_task *task, bool aborted)
{
	bool fin = false;

	spin_lock(&task->lock);
	if (task->state == COLL_TASK_RUNNING && !!task->status == aborted &&
	    (!aborted || !atomic_read(&task->nactive))) {
		coll_task_set_state(task, COLL_TASK_DONE);
		fin = true;
	}
	spin_unlock(&task->lock);
	if (fin)
		coll_run_finish(task);
}

/**
 * coll_run_abort() - fail a collective on every rank
 * @task: the collective; the caller holds a reference
 * @err: negative errno
 *
 * Executors stop claiming chunks; the task becomes DONE once the last one
 * has left, so no buffer is touched after a waiter returns.  Called by
 * coll_comm_kill(), after the communicator is marked dead.
 */
void coll_run_abort(struct coll_task *task, int err)
{
	bool fin = false;

	spin_lock(&task->lock);
	if (task->state != COLL_TASK_DONE) {
		coll_task_set_status(task, err);
		/* status before nactive: pairs with coll_exec_enter() */
		smp_mb();
		if (task->state == COLL_TASK_ARRIVING ||
		    !atomic_read(&task->nactive)) {
			coll_task_set_state(task, COLL_TASK_DONE);
			fin = true;
		}
	}
	spin_unlock(&task->lock);
	if (fin)
		coll_run_finish(task);
	else
		wake_up_all(&task->wq);
}

/* ---- execution ------------------------------------------------------- */

static bool coll_run_place_ok(const struct coll_task *task,
			      const struct coll_place *p, u64 n, bool write)
{
	const struct coll_sub *sub;
	const struct coll_obuf *ob;
	u64 end;

	if (p->rank >= task->nranks || p->buf > COLL_SBUF_RECV)
		return false;
	sub = task->sub[p->rank];
	ob = sub->ob[p->buf];
	if (!ob || check_add_overflow(p->off, n, &end) ||
	    check_mul_overflow(end, (u64)task->esize, &end) ||
	    check_add_overflow(end, sub->base[p->buf], &end))
		return false;
	return end <= ob->len && (!write || ob->writable);
}

/*
 * Every place a chunk names must lie in a pinned buffer (writable where
 * written): a schedule bug must not become a wild write.
 */
static bool coll_run_chunk_ok(const struct coll_task *task,
			      const struct coll_chunk *ch)
{
	const struct coll_step *st = ch->step;
	bool swap = st->kind == COLL_STEP_SWAP;
	struct coll_place p;
	u32 j;

	coll_step_inst(task->sched, st, ch->a, ch->b, &p);
	p.off += ch->elem;
	if (!coll_run_place_ok(task, &p, ch->n, true))
		return false;
	for (j = 0; j < st->nsrc; j++) {
		coll_step_src(task->sched, st, ch->a, ch->b, j, &p);
		p.off += ch->elem;
		if (!coll_run_place_ok(task, &p, ch->n, swap))
			return false;
	}
	return true;
}

/* Run chunk @c of round @round. */
static void coll_exec_chunk(struct coll_task *task, u32 round, u32 c)
{
	struct coll_chunk ch;

	coll_sched_chunk(task->sched, round, c, &ch);
	if (!ch.n)
		return;		/* an empty or short instance */
	trace_coll_chunk(task, round, ch.step - task->sched->steps, ch.a,
			 ch.b, ch.elem, ch.n);
	if (WARN_ON_ONCE(!coll_run_chunk_ok(task, &ch))) {
		spin_lock(&task->lock);
		coll_task_set_status(task, -EINVAL);
		spin_unlock(&task->lock);
		return;
	}
	task->xport->chunk(task, &ch);
}

/* The last chunk of @round is done: open the next round or complete. */
static void coll_exec_advance(struct coll_task *task, u32 round)
{
	const struct coll_sched *s = task->sched;
	u32 next = round + 1;

	if (next == s->nrounds) {
		coll_run_end(task, false);
		return;
	}
	atomic_set(&task->round_left, coll_sched_round_end(s, next) -
		   coll_sched_round_end(s, round));
	/* round_left before cur_round: pairs with the acquire loads below */
	smp_store_release(&task->cur_round, next);
	wake_up_all(&task->wq);
}

typedef bool (*coll_exec_cond)(struct coll_task *task, u32 round);

static bool coll_exec_moved(struct coll_task *task, u32 round)
{
	if (READ_ONCE(task->status) || coll_task_state(task) == COLL_TASK_DONE)
		return true;
	/* pairs with smp_store_release() in coll_exec_advance() */
	return smp_load_acquire(&task->cur_round) != round;
}

static bool coll_exec_done(struct coll_task *task, u32 round)
{
	return coll_task_state(task) == COLL_TASK_DONE;
}

static bool coll_exec_started(struct coll_task *task, u32 round)
{
	return coll_task_state(task) != COLL_TASK_ARRIVING;
}

/*
 * Wait on the task: poll for up to spin_ns first, as long as no other task
 * is runnable on this CPU (the ranks we wait for are running elsewhere, and
 * sleeping costs a wake-up, often an IPI, and two context switches), then
 * sleep, killable for user threads, idle for work items.
 */
static int coll_exec_sleep(struct coll_task *task, bool killable,
			   coll_exec_cond cond, u32 round)
{
	u64 until = local_clock() + READ_ONCE(coll_spin_ns);

	/* As KVM's halt polling: only while no one else wants this CPU. */
	while (!cond(task, round) && local_clock() < until) {
		if (need_resched() || !single_task_running() ||
		    (killable && fatal_signal_pending(current)))
			break;
		cpu_relax();
	}
	if (killable)
		return wait_event_killable(task->wq, cond(task, round));
	wait_event_idle(task->wq, cond(task, round));
	return 0;
}

/*
 * Claim and run chunks of the current round until none is left.  A user
 * thread with a fatal signal stops at once (returns true).
 */
static bool coll_exec_claim(struct coll_task *task, u32 round, bool killable)
{
	u32 end = coll_sched_round_end(task->sched, round);
	int c;

	for (;;) {
		if (killable && fatal_signal_pending(current))
			return true;
		c = atomic_read(&task->next_chunk);
		if (c >= end || READ_ONCE(task->status))
			return false;
		if (atomic_cmpxchg(&task->next_chunk, c, c + 1) != c)
			continue;
		coll_exec_chunk(task, round, c);
		if (atomic_dec_and_test(&task->round_left))
			coll_exec_advance(task, round);
		cond_resched();
	}
}

/*
 * An executor enters before it claims and leaves when it has nothing to
 * claim; the last one to leave an aborted task finishes it.
 */
static void coll_exec_enter(struct coll_task *task)
{
	atomic_inc(&task->nactive);
	/* nactive before status: pairs with smp_mb() in coll_run_abort() */
	smp_mb__after_atomic();
}

static void coll_exec_leave(struct coll_task *task)
{
	if (atomic_dec_and_test(&task->nactive))
		coll_run_end(task, true);
}

/* The round to work on, or false if there is nothing left to do. */
static bool coll_exec_round(struct coll_task *task, u32 *round)
{
	if (READ_ONCE(task->status) || coll_exec_done(task, 0))
		return false;
	/* pairs with smp_store_release() in coll_exec_advance() */
	*round = smp_load_acquire(&task->cur_round);
	return *round < task->sched->nrounds;
}

/* A small collective, in the caller's thread alone. */
static void coll_exec_solo(struct coll_task *task)
{
	u32 round;

	coll_exec_enter(task);
	while (coll_exec_round(task, &round))
		coll_exec_claim(task, round, false);
	coll_exec_leave(task);
}

/**
 * coll_run_participate() - help run a collective until it is done
 * @task: the collective; the caller holds a reference
 * @killable: sleep killable (a user thread) rather than idle (a work item)
 *
 * Return: the collective's result, or -EINTR if the caller got a fatal
 * signal (the communicator is then dead: ECONNRESET for everyone else).
 */
int coll_run_participate(struct coll_task *task, bool killable)
{
	bool killed;
	u32 round;

	if (coll_exec_sleep(task, killable, coll_exec_started, 0))
		goto killed;

	if (task->solo)		/* run by the last rank to arrive */
		goto wait_done;

	coll_exec_enter(task);
	while (coll_exec_round(task, &round)) {
		killed = coll_exec_claim(task, round, killable);
		/* Everything of this round is claimed: wait for the next. */
		coll_exec_leave(task);
		if (killed ||
		    coll_exec_sleep(task, killable, coll_exec_moved, round))
			goto killed;
		coll_exec_enter(task);
	}
	coll_exec_leave(task);

wait_done:
	if (coll_exec_sleep(task, killable, coll_exec_done, 0))
		goto killed;
	return READ_ONCE(task->status);

killed:
	coll_comm_kill(task->comm, -ECONNRESET);
	return -EINTR;
}

/* Progress on behalf of a non-blocking rank (its part's work item). */
void coll_run_work(struct work_struct *work)
{
	struct coll_sub *sub = container_of(work, struct coll_sub, work);
	struct coll_task *task = sub->task;

	coll_run_participate(task, false);
	coll_task_release_rank(task, sub->rank);
	coll_task_put(task);
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

static bool coll_desc_equal(const struct coll_desc *a,
			    const struct coll_desc *b)
{
	return a->prim == b->prim && a->dtype == b->dtype &&
	       a->redop == b->redop && a->root == b->root &&
	       a->algo == b->algo && a->count == b->count &&
	       (a->prim != COLL_ALLTOALL || a->inplace == b->inplace);
}

/* Agreement, algorithm, plan and counters, before anyone runs. */
static int coll_run_prepare(struct coll_task *task)
{
	const struct coll_desc *d0 = &task->sub[0]->desc;
	struct coll_plan_key key = {};
	struct coll_plan *plan;
	u32 r;

	for (r = 1; r < task->nranks; r++)
		if (!coll_desc_equal(d0, &task->sub[r]->desc))
			return -EPROTO;
	task->desc = *d0;
	task->esize = d0->prim == COLL_BARRIER ? 1 : coll_dtype_size(d0->dtype);
	task->bytes = d0->count * task->esize;
	task->desc.algo = coll_pick_algo(d0->algo);

	key.prim = d0->prim;
	key.algo = task->desc.algo;
	key.root = d0->root;
	key.count = d0->count;
	key.chunk = max_t(u64, 1, READ_ONCE(coll_ring_chunk_bytes) /
			  task->esize);
	key.exec_chunk = max_t(u64, 1, READ_ONCE(coll_exec_chunk_bytes) /
			       task->esize);
	if (d0->prim == COLL_ALLTOALL && d0->inplace)
		key.flags |= COLL_SCHED_F_INPLACE;
	plan = coll_plan_get(task->comm, &key);
	if (IS_ERR(plan))
		return PTR_ERR(plan);
	task->plan = plan;
	task->sched = &plan->sched;
	task->xport = &coll_xport_local;
	atomic_set(&task->next_chunk, 0);
	task->cur_round = 0;
	if (task->sched->nrounds)
		atomic_set(&task->round_left,
			   coll_sched_round_end(task->sched, 0));
	task->solo = task->bytes * task->nranks <= READ_ONCE(coll_solo_bytes);
	return 0;
}

/**
 * coll_run_start() - every rank has arrived: check, plan, run
 * @task: the task; the caller (the last to arrive) holds a reference
 *
 * May sleep (building a plan).
 */
void coll_run_start(struct coll_task *task)
{
	int err = coll_run_prepare(task);
	bool fin = false;
	u32 r;

	trace_coll_op_start(task, err);
	spin_lock(&task->lock);
	if (task->state == COLL_TASK_DONE) {	/* aborted meanwhile */
		spin_unlock(&task->lock);
		return;
	}
	if (err || !task->sched->nrounds) {
		coll_task_set_status(task, err);
		coll_task_set_state(task, COLL_TASK_DONE);
		fin = true;
	} else {
		coll_task_set_state(task, COLL_TASK_RUNNING);
	}
	spin_unlock(&task->lock);

	if (fin) {
		coll_run_finish(task);
		return;
	}
	if (task->solo) {
		/* Cheaper than waking everyone for each round. */
		coll_exec_solo(task);
		return;
	}
	wake_up_all(&task->wq);
	for (r = 0; r < task->nranks; r++) {
		struct coll_sub *sub = task->sub[r];

		if (!sub->req)
			continue;
		coll_task_get(task);	/* the work item's */
		queue_work(coll_wq, &sub->work);
	}
}
