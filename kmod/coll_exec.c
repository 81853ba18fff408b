// SPDX-License-Identifier: GPL-2.0
/*
 * Execution of a schedule between the pinned pages of local ranks.
 *
 * Cooperative: every thread that participates (each blocking caller and one
 * work item per non-blocking caller) claims chunks of the current round from
 * one counter, copies or reduces them directly between the ranks' pinned
 * pages (a single copy, no staging) and the thread that finishes the last
 * chunk of a round opens the next one.  Chunks are numbered across rounds in
 * order, so a claim never runs ahead of its round.
 *
 * Abort protocol with coll_op_abort(): an executor raises nactive before it
 * looks at status (smp_mb between them), the aborter writes status before it
 * looks at nactive; so either the executor sees the abort and touches no
 * buffer, or the aborter sees it active and the last one out finishes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/slab.h>
#include <asm/fpu/api.h>

#include "coll_loc.h"
#include "coll_trace.h"

/* Allocation hooks of coll_sched.c */
void *coll_sched_zalloc(size_t n, size_t size)
{
	return kvcalloc(n, size, GFP_KERNEL);
}

void coll_sched_free_mem(void *p)
{
	kvfree(p);
}

/* A place in a rank's buffer: the obuf and a byte position in it. */
struct coll_cur {
	struct coll_obuf *ob;
	u64 pos;
};

static struct coll_cur coll_cur_of(const struct coll_task *task,
				   const struct coll_bref *b, u64 elem)
{
	const struct coll_slot *slot = &task->slot[b->rank];

	return (struct coll_cur){
		.ob = slot->ob[b->buf],
		.pos = slot->base[b->buf] + (b->off + elem) * task->esize,
	};
}

static unsigned int coll_cur_page_left(const struct coll_cur *c, u64 done)
{
	return PAGE_SIZE - offset_in_page(c->ob->first_off + c->pos + done);
}

static void *coll_cur_map(const struct coll_cur *c, u64 done)
{
	u64 at = c->ob->first_off + c->pos + done;

	return kmap_local_page(c->ob->pages[at >> PAGE_SHIFT]) +
	       offset_in_page(at);
}

/* Byte copies for an element that straddles a page boundary. */
static void coll_cur_read(const struct coll_cur *c, u64 done, u8 *buf,
			  unsigned int len)
{
	while (len) {
		unsigned int n = min(len, coll_cur_page_left(c, done));
		u8 *p = coll_cur_map(c, done);

		memcpy(buf, p, n);
		kunmap_local(p);
		buf += n;
		done += n;
		len -= n;
	}
}

static void coll_cur_write(const struct coll_cur *c, u64 done, const u8 *buf,
			   unsigned int len)
{
	while (len) {
		unsigned int n = min(len, coll_cur_page_left(c, done));
		u8 *p = coll_cur_map(c, done);

		memcpy(p, buf, n);
		kunmap_local(p);
		buf += n;
		done += n;
		len -= n;
	}
}

static void coll_swap_bytes(u8 *a, u8 *b, unsigned int len)
{
	u8 tmp[128];

	while (len) {
		unsigned int n = min_t(unsigned int, len, sizeof(tmp));

		memcpy(tmp, a, n);
		memcpy(a, b, n);
		memcpy(b, tmp, n);
		a += n;
		b += n;
		len -= n;
	}
}

struct coll_range {
	const struct coll_task *task;
	const struct coll_step *step;
	const struct coll_bref *srcs;
	struct coll_cur dst;
	coll_reduce_fn fn;
	bool fpu;
	bool avg;
};

static struct coll_cur coll_range_src(const struct coll_range *r, u32 j,
				      u64 elem)
{
	return coll_cur_of(r->task, &r->srcs[j], elem);
}

/* One element that straddles a page in some buffer, through the stack. */
static void coll_range_bounce(const struct coll_range *r, u64 elem, u64 done)
{
	unsigned int es = r->task->esize;
	struct coll_cur s;
	u8 d[8], b[8];
	u32 j;

	s = coll_range_src(r, 0, elem);
	coll_cur_read(&s, done, d, es);
	switch (r->step->kind) {
	case COLL_STEP_COPY:
		break;
	case COLL_STEP_SWAP:
		coll_cur_read(&r->dst, done, b, es);
		coll_cur_write(&s, done, b, es);
		break;
	case COLL_STEP_REDUCE:
		for (j = 1; j < r->step->nsrc; j++) {
			s = coll_range_src(r, j, elem);
			coll_cur_read(&s, done, b, es);
			r->fn(d, d, b, 1);
		}
		if (r->avg)
			coll_reduce_div(r->task->desc.dtype, d, 1,
					r->task->nranks);
		break;
	}
	coll_cur_write(&r->dst, done, d, es);
}

/* A window that lies within one page of every buffer involved. */
static void coll_range_window(const struct coll_range *r, u64 elem, u64 done,
			      unsigned int len)
{
	size_t n = len / r->task->esize;
	struct coll_cur s;
	void *d, *a, *b;
	u32 j;

	d = coll_cur_map(&r->dst, done);
	s = coll_range_src(r, 0, elem);
	a = coll_cur_map(&s, done);
	switch (r->step->kind) {
	case COLL_STEP_COPY:
		memcpy(d, a, len);
		kunmap_local(a);
		break;
	case COLL_STEP_SWAP:
		coll_swap_bytes(d, a, len);
		kunmap_local(a);
		break;
	case COLL_STEP_REDUCE:
		s = coll_range_src(r, 1, elem);
		b = coll_cur_map(&s, done);
		r->fn(d, a, b, n);
		kunmap_local(b);
		kunmap_local(a);
		for (j = 2; j < r->step->nsrc; j++) {
			s = coll_range_src(r, j, elem);
			b = coll_cur_map(&s, done);
			r->fn(d, d, b, n);
			kunmap_local(b);
		}
		if (r->avg)
			coll_reduce_div(r->task->desc.dtype, d, n,
					r->task->nranks);
		break;
	}
	kunmap_local(d);
}

/* Elements [elem, elem + n) of one step. */
static void coll_exec_range(struct coll_task *task,
			    const struct coll_step *step, u64 elem, u64 n)
{
	struct coll_range r = {
		.task = task,
		.step = step,
		.srcs = &task->sched.srcs[step->src_first],
	};
	unsigned int es = task->esize;
	u64 done = 0, total = n * es;
	struct coll_cur s;
	u32 j;

	r.dst = coll_cur_of(task, &step->dst, elem);
	s = coll_range_src(&r, 0, elem);
	if (step->kind == COLL_STEP_COPY && s.ob == r.dst.ob &&
	    s.pos == r.dst.pos)
		return;		/* in place: already there */
	if (step->kind == COLL_STEP_REDUCE) {
		r.fn = coll_reduce_get(task->desc.dtype, task->desc.redop,
				       &r.fpu);
		r.avg = task->desc.redop == COLL_AVG &&
			(step->flags & COLL_STEP_F_AVG);
	}

	while (done < total) {
		unsigned int len = min_t(u64, total - done, PAGE_SIZE);

		len = min(len, coll_cur_page_left(&r.dst, done));
		for (j = 0; j < step->nsrc; j++) {
			s = coll_range_src(&r, j, elem);
			len = min(len, coll_cur_page_left(&s, done));
		}
		len -= len % es;
		if (r.fpu)
			kernel_fpu_begin();
		if (len)
			coll_range_window(&r, elem, done, len);
		else
			coll_range_bounce(&r, elem, done);
		if (r.fpu)
			kernel_fpu_end();
		done += len ? len : es;
	}
}

static u32 coll_round_chunks_end(const struct coll_task *task, u32 round)
{
	return task->chunk_first[task->sched.round_first[round + 1]];
}

/* Run chunk @c of round @round. */
static void coll_exec_chunk(struct coll_task *task, u32 round, u32 c)
{
	const struct coll_sched *s = &task->sched;
	u32 lo = s->round_first[round], hi = s->round_first[round + 1] - 1;
	const struct coll_step *step;
	u64 elem, n;

	while (lo < hi) {	/* last step whose first chunk is <= c */
		u32 mid = lo + (hi - lo + 1) / 2;

		if (task->chunk_first[mid] <= c)
			lo = mid;
		else
			hi = mid - 1;
	}
	step = &s->steps[lo];
	elem = (u64)(c - task->chunk_first[lo]) * task->chunk_elems;
	n = min(task->chunk_elems, step->count - elem);
	trace_coll_chunk(task, round, lo, elem, n);
	coll_exec_range(task, step, elem, n);
}

/* The last chunk of @round is done: open the next round or complete. */
static void coll_exec_advance(struct coll_task *task, u32 round)
{
	u32 next = round + 1;

	if (next == task->sched.nrounds) {
		coll_task_complete(task);
		return;
	}
	atomic_set(&task->round_left, coll_round_chunks_end(task, next) -
		   coll_round_chunks_end(task, round));
	/* round_left before cur_round: pairs with the acquire loads below */
	smp_store_release(&task->cur_round, next);
	wake_up_all(&task->wq);
}

static bool coll_check_bref(const struct coll_task *task,
			    const struct coll_bref *b, u64 count, bool write)
{
	const struct coll_slot *slot;
	u64 end;

	if (b->rank >= task->nranks || b->buf > COLL_SBUF_RECV)
		return false;
	slot = &task->slot[b->rank];
	end = slot->base[b->buf] + (b->off + count) * task->esize;
	return slot->ob[b->buf] && end <= slot->ob[b->buf]->len &&
	       (!write || slot->ob[b->buf]->writable);
}

/**
 * coll_exec_prepare() - cut the schedule into chunks and check it
 * @task: a task whose schedule is built
 *
 * Every place the schedule names must lie in a pinned buffer (writable
 * where written): a schedule bug must not become a wild write.
 *
 * Return: 0, -ENOMEM, or -EINVAL for a schedule that fails the check.
 */
int coll_exec_prepare(struct coll_task *task)
{
	const struct coll_sched *s = &task->sched;
	u64 total = 0;
	u32 i, j;

	task->chunk_elems = max_t(u64, 1, READ_ONCE(coll_exec_chunk_bytes) /
				  task->esize);
	task->chunk_first = kvmalloc_array(s->nsteps + 1, sizeof(u32),
					   GFP_KERNEL);
	if (!task->chunk_first)
		return -ENOMEM;
	for (i = 0; i < s->nsteps; i++) {
		const struct coll_step *st = &s->steps[i];
		bool rw = st->kind == COLL_STEP_SWAP;

		if (WARN_ON_ONCE(!st->count || !st->nsrc ||
				 !coll_check_bref(task, &st->dst, st->count,
						  true)))
			return -EINVAL;
		for (j = 0; j < st->nsrc; j++)
			if (WARN_ON_ONCE(!coll_check_bref(task,
							  &s->srcs[st->src_first + j],
							  st->count, rw)))
				return -EINVAL;
		task->chunk_first[i] = total;
		total += DIV_ROUND_UP(st->count, task->chunk_elems);
		if (total > U32_MAX / 2)
			return -EOVERFLOW;
	}
	task->chunk_first[s->nsteps] = total;
	atomic_set(&task->next_chunk, 0);
	task->cur_round = 0;
	if (s->nrounds)
		atomic_set(&task->round_left, coll_round_chunks_end(task, 0));
	return 0;
}

typedef bool (*coll_exec_cond)(struct coll_task *task, u32 round);

/*
 * The acquire loads below pair with the release store of cur_round in
 * coll_exec_advance() and of state in coll_task_finish() callers: a thread
 * that sees the new round also sees its round_left, a thread that sees DONE
 * sees the final status.
 */
static bool coll_exec_moved(struct coll_task *task, u32 round)
{
	if (READ_ONCE(task->status) || coll_task_state(task) == COLL_OP_DONE)
		return true;
	/* pairs with smp_store_release() in coll_exec_advance() */
	return smp_load_acquire(&task->cur_round) != round;
}

static bool coll_exec_done(struct coll_task *task, u32 round)
{
	return coll_task_state(task) == COLL_OP_DONE;
}

static bool coll_exec_started(struct coll_task *task, u32 round)
{
	return coll_task_state(task) != COLL_OP_ARRIVING;
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
 * thread with a fatal signal stops at once (returns true): its process is
 * dying and its peers should hear of it now, not after this round.
 */
static bool coll_exec_claim(struct coll_task *task, u32 round, bool killable)
{
	u32 end = coll_round_chunks_end(task, round);
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
	/* nactive before status: pairs with smp_mb() in coll_op_abort() */
	smp_mb__after_atomic();
}

static void coll_exec_leave(struct coll_task *task)
{
	if (atomic_dec_and_test(&task->nactive))
		coll_task_try_finish(task);
}

/* The round to work on, or false if there is nothing left to do. */
static bool coll_exec_round(struct coll_task *task, u32 *round)
{
	if (READ_ONCE(task->status) || coll_exec_done(task, 0))
		return false;
	/* pairs with smp_store_release() in coll_exec_advance() */
	*round = smp_load_acquire(&task->cur_round);
	return *round < task->sched.nrounds;
}

/**
 * coll_exec_solo() - run a small collective in the caller's thread alone
 * @task: a RUNNING task with solo set; the caller holds a reference
 *
 * The other ranks wait for DONE and never claim chunks, so this thread
 * passes every round without waiting.
 */
void coll_exec_solo(struct coll_task *task)
{
	u32 round;

	coll_exec_enter(task);
	while (coll_exec_round(task, &round))
		coll_exec_claim(task, round, false);
	coll_exec_leave(task);
}

/**
 * coll_exec_participate() - help run a collective until it is done
 * @task: the collective; the caller holds a reference
 * @killable: sleep killable (a user thread) rather than idle (a work item)
 *
 * Return: the collective's result, or -EINTR if the caller got a fatal
 * signal (the collective then fails for everyone with ECONNRESET).
 */
int coll_exec_participate(struct coll_task *task, bool killable)
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
		if (killed)
			coll_op_abort(task, -ECONNRESET);
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
	/*
	 * A fatal signal: the process is going away and its descriptor will
	 * kill the communicator; fail the collective for the peers now.
	 */
	coll_op_abort(task, -ECONNRESET);
	return -EINTR;
}
