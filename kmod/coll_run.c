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
 * (coll_comm_kill_why()): its peers hear of it now, and no holder of the same
 * membership (a descriptor shared by fork or SCM_RIGHTS) can go on out of
 * step.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/ktime.h>

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
	coll_stats_task_done(task, status);
	spin_unlock(&comm->lock);

	coll_stats_global_done(task->bytes, status);
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
	if (task->xt)
		coll_comm_drained(comm);
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
	    (!aborted || (!atomic_read(&task->nactive) &&
			  coll_xhost_heard_all(task)))) {
		coll_task_set_state(task, COLL_TASK_DONE);
		fin = true;
	}
	spin_unlock(&task->lock);
	if (fin)
		coll_run_finish(task);
}

/*
 * Fail a collective: executors stop claiming chunks; the task becomes DONE
 * once the last one has left, so no buffer is touched after a waiter
 * returns.  A task still ARRIVING ends at once only if @now (the
 * communicator is dead, so no rank will arrive); otherwise it keeps the
 * error and ends when its last rank arrives (coll_run_start()), so that
 * the ranks still to come find it rather than start a new one.
 */
static void coll_run_stop(struct coll_task *task, int err, bool now)
{
	bool fin = false;

	spin_lock(&task->lock);
	if (task->state != COLL_TASK_DONE) {
		coll_task_set_status(task, err);
		/* status before nactive: pairs with coll_exec_enter() */
		smp_mb();
		if ((task->state == COLL_TASK_ARRIVING && now) ||
		    (task->state == COLL_TASK_RUNNING &&
		     !atomic_read(&task->nactive) &&
		     coll_xhost_heard_all(task))) {
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

/**
 * coll_run_heard() - a peer host had its say on a collective
 * @task: the collective, across hosts; the caller holds a reference
 *
 * If it failed and waits only for the peers to be heard from
 * (coll_xhost_heard_all()), it ends now.
 */
void coll_run_heard(struct coll_task *task)
{
	if (READ_ONCE(task->status))
		coll_run_end(task, true);
}

/**
 * coll_run_abort() - fail a collective on every rank: its communicator died
 * @task: the collective; the caller holds a reference
 * @err: negative errno
 *
 * Called by coll_comm_end(), after the communicator is marked dead.
 */
void coll_run_abort(struct coll_task *task, int err)
{
	coll_run_stop(task, err, true);
}

/**
 * coll_run_fail() - fail a collective, the communicator living on
 * @task: the collective; the caller holds a reference
 * @err: negative errno
 */
void coll_run_fail(struct coll_task *task, int err)
{
	coll_run_stop(task, err, false);
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
	if (!sub)
		return false;
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
		/* another host's: it checks what it serves */
		if (p.rank < task->nranks && !coll_xhost_local(task, p.rank))
			continue;
		if (!coll_run_place_ok(task, &p, ch->n, swap))
			return false;
	}
	return true;
}

/*
 * A chunk with sources on other hosts: fetch them (in pieces small enough
 * for the staging limit) and run each piece through the transport.
 */
static int coll_exec_remote(struct coll_task *task, const struct coll_chunk *ch)
{
	u32 nsrc = ch->step->nsrc;
	u64 per = max_t(u64, 1, (1U << 20) / task->esize / nsrc), done = 0;
	const void **src;
	int err = 0;

	src = kcalloc(nsrc, sizeof(*src), GFP_KERNEL);
	if (!src)
		return -ENOMEM;
	while (!err && done < ch->n) {
		struct coll_chunk piece = *ch;
		void *staging;
		size_t slen;

		piece.elem = ch->elem + done;
		piece.n = min(per, ch->n - done);
		err = coll_xhost_fetch(task, &piece, src, &staging, &slen);
		if (!err)
			task->xport->chunk(task, &piece, src);
		kvfree(staging);
		done += piece.n;
	}
	kfree(src);
	return err;
}

/* Run chunk @c of round @round. */
static void coll_exec_chunk(struct coll_task *task, u32 round, u32 c)
{
	struct coll_chunk ch;
	struct coll_place dst;
	int err = 0;

	coll_sched_chunk(task->sched, round, c, &ch);
	if (!ch.n)
		return;		/* an empty or short instance */
	if (task->xt) {
		coll_step_inst(task->sched, ch.step, ch.a, ch.b, &dst);
		if (!coll_xhost_local(task, dst.rank))
			return;	/* another host's */
	}
	trace_coll_chunk(task, round, ch.step - task->sched->steps, ch.a,
			 ch.b, ch.elem, ch.n);
	if (WARN_ON_ONCE(!coll_run_chunk_ok(task, &ch)))
		err = -EINVAL;
	else if (task->xt)
		err = coll_exec_remote(task, &ch);
	else
		task->xport->chunk(task, &ch, NULL);
	if (err) {
		spin_lock(&task->lock);
		coll_task_set_status(task, err);
		spin_unlock(&task->lock);
	}
}

/**
 * coll_run_open() - round @round may be claimed (spanning hosts: the gate
 * in coll_xhost.c says so)
 * @task: the task
 * @round: the round; nrounds ends the task
 */
void coll_run_open(struct coll_task *task, u32 round)
{
	const struct coll_sched *s = task->sched;

	if (round == s->nrounds) {
		coll_run_end(task, false);
		return;
	}
	atomic_set(&task->round_left, coll_sched_round_end(s, round) -
		   (round ? coll_sched_round_end(s, round - 1) : 0));
	/* round_left before phase: pairs with the acquire loads below */
	smp_store_release(&task->phase, 2 * round + 1);
	wake_up_all(&task->wq);
}

/* The last chunk of @round is done here: open the next round or complete. */
static void coll_exec_advance(struct coll_task *task, u32 round)
{
	if (!task->xt) {
		coll_run_open(task, round + 1);
		return;
	}
	/* Closed until the peers are ready for it too. */
	smp_store_release(&task->phase, 2 * (round + 1));
	coll_xhost_finished(task, round);
}

typedef bool (*coll_exec_cond)(struct coll_task *task, u32 round);

/* The phase moved on from @phase (or the task is over). */
static bool coll_exec_moved(struct coll_task *task, u32 phase)
{
	if (READ_ONCE(task->status) || coll_task_state(task) == COLL_TASK_DONE)
		return true;
	/* pairs with smp_store_release() in coll_run_open() */
	return smp_load_acquire(&task->phase) != phase;
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
/*
 * Busy polling (module parameter busy_poll_us): before it spins and sleeps,
 * a rank of a communicator spanning hosts polls the completion queues of
 * its links itself, so what a peer host sends reaches the collective
 * without an interrupt, a work item and a wake-up in between.  As the spin
 * below, only while no one else wants this CPU.
 */
static void coll_exec_busy_poll(struct coll_task *task, bool killable,
				coll_exec_cond cond, u32 round)
{
	u32 us = coll_tune_get(task->comm, COLL_TUNE_BUSY_POLL_US);
	u32 links, got, polled = 0;
	struct coll_poll p;
	u64 start, until;
	bool done;

	if (!us || !task->comm->hosts || cond(task, round))
		return;
	coll_link_poll_begin(task->comm, &p);
	if (!p.n)
		return;
	links = p.n;
	start = local_clock();
	until = start + (u64)us * NSEC_PER_USEC;
	for (;;) {
		done = cond(task, round);
		if (done || local_clock() >= until || need_resched() ||
		    !single_task_running() ||
		    (killable && fatal_signal_pending(current)))
			break;
		got = coll_link_poll(&p);
		if (!got)
			cpu_relax();
		polled += got;
	}
	coll_link_poll_end(&p);
	trace_coll_busy_poll(task, round, links, polled,
			     local_clock() - start, done);
}

static int coll_exec_sleep(struct coll_task *task, bool killable,
			   coll_exec_cond cond, u32 round)
{
	u64 until;

	coll_exec_busy_poll(task, killable, cond, round);
	until = local_clock() + coll_tune_get(task->comm, COLL_TUNE_SPIN_NS);
	while (!cond(task, round) && coll_may_poll(until, killable))
		cpu_relax();
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

/* Is there nothing left for executors to do? */
static bool coll_exec_over(struct coll_task *task)
{
	return READ_ONCE(task->status) || coll_exec_done(task, 0);
}

/* A small collective, in the caller's thread alone (one host only). */
static void coll_exec_solo(struct coll_task *task)
{
	u32 phase;

	coll_exec_enter(task);
	while (!coll_exec_over(task)) {
		/* pairs with smp_store_release() in coll_run_open() */
		phase = smp_load_acquire(&task->phase);
		if (WARN_ON_ONCE(!(phase & 1)))
			break;
		coll_exec_claim(task, phase / 2, false);
	}
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
	bool killed = false;
	u32 phase;

	if (coll_exec_sleep(task, killable, coll_exec_started, 0))
		goto killed;

	if (task->solo)		/* run by the last rank to arrive */
		goto wait_done;

	coll_exec_enter(task);
	while (!coll_exec_over(task)) {
		/* pairs with smp_store_release() in coll_run_open() */
		phase = smp_load_acquire(&task->phase);
		if (phase & 1)
			killed = coll_exec_claim(task, phase / 2, killable);
		/* Everything of this round is claimed: wait for the next. */
		coll_exec_leave(task);
		if (killed ||
		    coll_exec_sleep(task, killable, coll_exec_moved, phase))
			goto killed;
		coll_exec_enter(task);
	}
	coll_exec_leave(task);

wait_done:
	if (coll_exec_sleep(task, killable, coll_exec_done, 0))
		goto killed;
	return READ_ONCE(task->status);

killed:
	coll_comm_kill_why(task->comm, -ECONNRESET,
			   "a rank was killed in a collective");
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

/*
 * COLL_ALGO_AUTO: the algorithm the tunables force (coll_tune_algo(): the
 * communicator's or the module's, for this primitive or all; the module's
 * "algo" is the module parameter), if one is; else,
 * within one host, the measured rules (coll_algo.c), DIRECT without one
 * (every rank reads its peers' pages once); across hosts, HIER for
 * AllReduce, AllGather and Broadcast whose result buffer holds hier_bytes
 * or more, when the ranks are laid out host by host, several on each
 * (every part crosses between two hosts once, the local ranks carrying
 * theirs in parallel), and DIRECT otherwise (the fewest rounds, and every
 * round costs a round trip between hosts).  The default threshold is where
 * HIER overtook DIRECT for all three on 2 hosts x 2 ranks over rxe
 * (README.md).  Every host must decide alike: the hosts compare the
 * outcome (coll_xhost.c).
 */
static u32 coll_pick_algo(struct coll_comm *comm, const struct coll_desc *d)
{
	const struct coll_hosts *h = comm->hosts;
	u32 prim = d->prim, algo = d->algo;
	u64 bytes = d->count * coll_desc_esize(d);

	if (algo != COLL_ALGO_AUTO)
		return algo;
	algo = coll_tune_algo(comm, prim);
	if (algo != COLL_ALGO_AUTO)
		return algo;
	if (!h)
		return coll_algo_choose(prim, comm->nranks, bytes);
	if (prim == COLL_ALLGATHER)
		bytes *= comm->nranks;		/* the count is per rank */
	if (h->local > 1 && bytes >= coll_tune_get(comm, COLL_TUNE_HIER_BYTES) &&
	    (prim == COLL_ALLREDUCE || prim == COLL_ALLGATHER ||
	     prim == COLL_BROADCAST))
		return COLL_ALGO_HIER;
	return COLL_ALGO_DIRECT;
}

/*
 * The plan's key for a rank's call: the resolved algorithm and the chunk
 * sizes in elements.  In-place AlltoAll across hosts runs the out-of-place
 * plan over a snapshot (coll_run_snapshot()).
 */
static void coll_run_key(struct coll_comm *comm, const struct coll_desc *d,
			 struct coll_plan_key *key)
{
	u32 esize = coll_desc_esize(d);

	memset(key, 0, sizeof(*key));	/* compared with memcmp() */
	key->prim = d->prim;
	key->algo = coll_pick_algo(comm, d);
	key->root = d->root;
	key->count = d->count;
	key->chunk = max_t(u64, 1, coll_tune_get(comm,
						 COLL_TUNE_RING_CHUNK_BYTES) /
			   esize);
	key->exec_chunk = max_t(u64, 1, coll_tune_get(comm,
						      COLL_TUNE_EXEC_CHUNK_BYTES) /
				esize);
	if (d->prim == COLL_ALLTOALL && d->inplace &&
	    !(comm->hosts && d->count))
		key->flags |= COLL_SCHED_F_INPLACE;
}

/**
 * coll_run_plan_ahead() - find or build a rank's plan before it is published
 * @comm: the communicator
 * @sub: the rank's part, pinned, not yet published
 *
 * A failure here fails the call, which has changed nothing yet; the task
 * that starts later takes the plan from one of its parts
 * (coll_run_prepare()) and allocates none, so that a collective that has
 * been accepted does not fail for want of memory for its plan.
 *
 * May sleep.  Return: 0 or -errno (-ENOMEM).
 */
int coll_run_plan_ahead(struct coll_comm *comm, struct coll_sub *sub)
{
	struct coll_plan_key key;
	struct coll_plan *plan;

	coll_run_key(comm, &sub->desc, &key);
	plan = coll_plan_get(comm, &key);
	if (IS_ERR(plan))
		return PTR_ERR(plan);
	sub->plan = plan;
	return 0;
}

/*
 * In-place AlltoAll across hosts: a rank's blocks are read by peers while
 * it receives theirs, so each local rank sends from a kernel copy of its
 * buffer taken now, and the plan is the out-of-place one.
 */
static int coll_run_snapshot(struct coll_task *task)
{
	u32 r;
	int err;

	for (r = 0; r < task->nranks; r++) {
		struct coll_sub *sub = task->sub[r];
		struct coll_obuf *snap;

		if (!sub)
			continue;
		err = coll_obuf_snapshot(sub->ob[COLL_SBUF_RECV],
					 sub->base[COLL_SBUF_RECV],
					 task->esize * task->desc.count *
					 task->nranks, &snap);
		if (err)
			return err;
		sub->ob[COLL_SBUF_SEND] = snap;
		sub->base[COLL_SBUF_SEND] = 0;
	}
	return 0;
}

/* Elements of @rank's larger buffer (coll_sched_buf_elems()). */
static u64 coll_run_larger(const struct coll_desc *d, u32 nranks, u32 rank)
{
	return max(coll_sched_buf_elems(d->prim, nranks, d->root, rank,
					COLL_SBUF_SEND, d->count),
		   coll_sched_buf_elems(d->prim, nranks, d->root, rank,
					COLL_SBUF_RECV, d->count));
}

/*
 * What a collective moves, as solo_bytes counts it: each rank's larger
 * buffer, summed over the ranks (every rank but a root has the same
 * buffers).  Saturates rather than wraps.
 */
static u64 coll_run_moved(const struct coll_desc *d, u32 esize, u32 nranks)
{
	u64 others, bytes;

	if (check_mul_overflow(coll_run_larger(d, nranks, (d->root + 1) %
						nranks),
			       (u64)(nranks - 1), &others) ||
	    check_add_overflow(others, coll_run_larger(d, nranks, d->root),
			       &bytes) ||
	    check_mul_overflow(bytes, (u64)esize, &bytes))
		return U64_MAX;
	return bytes;
}

/* Agreement, algorithm, plan and counters, before anyone runs. */
static int coll_run_prepare(struct coll_task *task)
{
	const struct coll_desc *d0 = NULL;
	struct coll_plan_key key;
	struct coll_plan *plan = NULL;
	u32 r;
	int err;

	/* The ranks of this host; hosts agree at round 0 (coll_xhost.c). */
	for (r = 0; r < task->nranks; r++) {
		if (!task->sub[r])
			continue;
		if (!d0)
			d0 = &task->sub[r]->desc;
		else if (!coll_desc_equal(d0, &task->sub[r]->desc))
			return -EPROTO;
	}
	task->desc = *d0;
	task->esize = coll_desc_esize(d0);
	task->bytes = d0->count * task->esize;
	coll_run_key(task->comm, d0, &key);
	task->desc.algo = key.algo;
	if (d0->prim == COLL_ALLTOALL && d0->inplace && task->xt && d0->count) {
		err = coll_run_snapshot(task);
		if (err)
			return err;
	}
	/* Built ahead by a rank, unless a tunable changed in between. */
	for (r = 0; r < task->nranks && !plan; r++) {
		struct coll_sub *sub = task->sub[r];

		if (sub && sub->plan &&
		    !memcmp(&sub->plan->key, &key, sizeof(key))) {
			plan = sub->plan;
			kref_get(&plan->kref);
		}
	}
	if (!plan) {
		plan = coll_plan_get(task->comm, &key);
		if (IS_ERR(plan))
			return PTR_ERR(plan);
	}
	task->plan = plan;
	task->sched = &plan->sched;
	task->xport = &coll_xport_local;
	atomic_set(&task->next_chunk, 0);
	if (task->xt) {
		task->phase = 0;	/* round 0 opens when the peers are ready */
		task->solo = false;
	} else {
		task->phase = 1;
		if (task->sched->nrounds)
			atomic_set(&task->round_left,
				   coll_sched_round_end(task->sched, 0));
		task->solo = coll_run_moved(&task->desc, task->esize,
					    task->nranks) <=
			     coll_tune_get(task->comm, COLL_TUNE_SOLO_BYTES);
	}
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
	int err = READ_ONCE(task->status);	/* a peer host aborted it */
	bool fin = false, tell = false, idle = false;
	u32 r;

	task->t_start = ktime_get_ns();
	if (!err)
		err = coll_run_prepare(task);
	/*
	 * The peers wait to hear from us (coll_xhost_heard_all()), also
	 * when a peer's ABORT came before our ranks did: ABORT, once.
	 */
	tell = err && task->xt;
	trace_coll_op_start(task, err);
	if (tell)
		coll_xhost_failed(task, err);
	spin_lock(&task->lock);
	if (task->state == COLL_TASK_DONE) {	/* aborted meanwhile */
		spin_unlock(&task->lock);
		return;
	}
	if (err && !coll_xhost_heard_all(task)) {
		/*
		 * Failed, but it ends once every peer host is heard from
		 * (coll_run_heard()): its ranks wait for DONE, nothing runs.
		 */
		coll_task_set_status(task, err);
		coll_task_set_state(task, COLL_TASK_RUNNING);
		idle = true;
	} else if (err || (!task->xt && !task->sched->nrounds)) {
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
	if (idle) {
		wake_up_all(&task->wq);
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

		if (!sub || !sub->req)
			continue;
		coll_task_get(task);	/* the work item's */
		queue_work(coll_wq, &sub->work);
	}
	if (task->xt)
		coll_xhost_start(task);
}
