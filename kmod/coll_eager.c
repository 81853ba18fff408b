// SPDX-License-Identifier: GPL-2.0
/*
 * The eager path: small blocking collectives between the ranks of one host
 * through kernel slots, with no task, no pinning, no plan and no allocation
 * once a communicator has its slots.
 *
 * A communicator gets a ring of COLL_EAGER_SLOTS slots at its first eager
 * collective; the collective of sequence number seq uses slot seq %
 * COLL_EAGER_SLOTS.  A rank claims the slot of its next collective, copies
 * its send buffer into its input area there (copy_from_user(), no lock
 * held), then arrives.  The last rank to arrive reduces the inputs in rank
 * order into the result area and marks the slot complete (all_in).  Each
 * rank copies its own result out (copy_to_user()) as soon as what it needs
 * is there: the root of a Broadcast or a Scatter, and a sender of a Reduce
 * or a Gather, need nothing of the others and return at once; the other
 * ranks of a Broadcast or a Scatter need only the root's arrival (root_in);
 * every other rank waits for all_in.  A slot is free again once each rank
 * has left it, so a root may run up to COLL_EAGER_SLOTS collectives ahead;
 * a blocking call, only COLL_EAGER_LEAD (below).
 *
 * The path of a collective is decided by the first rank to reach it, under
 * comm->lock, where both the tasks in flight (coll_match.c) and the slots
 * are seen: it claims the slot if the call may go this way (blocking, one
 * host, COLL_ALGO_AUTO with no algorithm forced by the tunables, its data
 * within slot_bytes), and it makes a task otherwise.  Later ranks follow
 * the first: an eager call that finds a task joins the task; a call that
 * finds the slot arrives there (a blocking one sent to the task path in
 * the meantime comes back, coll_eager_meet_locked()), and if it disagrees
 * with the first rank (its descriptor, or it is not blocking, as MPI's
 * blocking and non-blocking collectives do not match), the collective
 * fails with EPROTO for every rank that had not returned yet, with nothing
 * written.
 *
 * Waiting polls for at most spin_ns, yielding the CPU to any other task
 * that wants it, then sleeps, killable, keyed by what it waits for
 * (wait_var_event(): a slot's result at &s->all_in, a slot's release at
 * &s->busy), so that each event wakes only the ranks that wait for it; a
 * killed rank kills the communicator, and coll_comm_end() wakes every
 * waiter (coll_eager_wake()).
 *
 * io_uring commands (coll_uring.c) take this path as blocking calls do,
 * and match as they do, but never wait: a command whose result is there
 * when it arrives completes at once; one that would wait parks in its
 * slot (s->ucmd[rank]) with a reference on the communicator, and whoever
 * makes what it needs available (the last arriver, the root, a disagreeing
 * rank, the communicator's death) kicks it, under comm->lock, to its
 * submitter's task work (coll_eager_kick()), which copies the result out
 * in the submitter's context, leaves the slot and posts the completion.
 * A first rank that finds its slot still busy (COLL_EAGER_SLOTS
 * collectives ahead) takes the task path instead of waiting.
 *
 * Locks: comm->lock guards each slot's bookkeeping (busy, seq, desc, the
 * counters, status, the parked commands).  A rank's input area is its own between its claim and
 * its arrival; the result area is the last arriver's until it sets all_in.
 * all_in and root_in are written with smp_store_release() after the data
 * they publish and read with smp_load_acquire().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/pagemap.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>
#include <asm/fpu/api.h>

#include "coll_loc.h"
#include "coll_uring.h"
#include "coll_trace.h"

#define COLL_EAGER_SLOTS	16
/*
 * How far a blocking first rank (a root, say) may run ahead: when the
 * collective COLL_EAGER_LEAD before its own is still held, it waits for
 * the one COLL_EAGER_LEAD / 2 before its own to be left by everyone, and
 * then runs the next COLL_EAGER_LEAD / 2 without waiting: a root that
 * leads wakes once per COLL_EAGER_LEAD / 2 collectives, not once per
 * collective (4 ranks on 2 vCPUs, an 8-byte Reduce with three ranks on
 * one vCPU: measured in README "Ranks waiting on each other").
 * Measured (4 ranks on 2 vCPUs, 8-512 B): rooted collectives took 30-60 us
 * a call with 8 slots and 150-250 us with 16 when a root could lead by
 * all of them; with 16 slots and this lead, 30-60 again.  io_uring
 * commands use all 16 (a rank with 8 in flight finds its next slots free).
 * Not when the caller's descriptor has io_uring commands in flight: one of
 * its own, parked in that slot, could leave it only in this task's task
 * work, which does not run while it waits.
 */
#define COLL_EAGER_LEAD		8
#define COLL_EAGER_MAX_BYTES	(256U << 10)	/* slot_bytes is capped here */

struct coll_eslot {
	u64 seq;		/* comm->lock: the collective, if busy */
	bool busy;		/* comm->lock */
	bool root_in;		/* the root arrived: release/acquire */
	bool all_in;		/* all arrived, result there: release/acquire */
	struct coll_desc desc;	/* comm->lock: the first rank's */
	u32 nclaimed;		/* comm->lock: ranks copying in */
	u32 narrived;		/* comm->lock */
	u32 nleft;		/* comm->lock */
	int status;		/* comm->lock; 0 or -EPROTO */
	u64 t_first;		/* ns: claimed */
	u64 t_start;		/* ns: the last rank arrived */
	unsigned long *arrived;	/* comm->lock: nranks bits, for netlink */
	struct coll_eucmd *ucmd; /* comm->lock: nranks parked commands */
	u8 *data;		/* slot_bytes: the inputs, then the result */
};

/* An io_uring command parked in a slot, waiting for its result. */
struct coll_eucmd {
	struct io_uring_cmd *cmd;	/* NULL: none */
	void *owner;			/* its submitter's files (flush) */
};

/* What a parked command keeps in its pdu, for its completion. */
struct coll_eager_pdu {
	struct coll_comm *comm;		/* holds a reference */
	struct coll_eslot *s;
	u64 recvbuf;
	u32 recv;			/* bytes to copy out */
	u8 rank;
	u8 need;			/* enum coll_eneed */
};

struct coll_eager {
	u32 slot_bytes;
	u32 nucmds;		/* comm->lock (written): commands parked */
	size_t alloc_bytes;
	struct coll_eslot slot[COLL_EAGER_SLOTS];
	u8 data[];
};

/* Where a collective's data lies in its slot, and what one rank moves. */
struct coll_eshape {
	u64 stride;		/* bytes of one rank's input area */
	u64 res;		/* the result area's offset */
	u64 total;		/* bytes of the slot used */
	u64 send, recv;		/* this rank's buffers' bytes */
};

/* Broadcast and Scatter have one input: the root's, at offset 0. */
static bool coll_eager_one_src(u32 prim)
{
	return prim == COLL_BROADCAST || prim == COLL_SCATTER;
}

/* Called with a count already checked by coll_op_layout(): no overflow. */
static void coll_eager_shape(const struct coll_desc *d, u32 n,
			     struct coll_eshape *sh)
{
	u64 c = d->count * coll_desc_esize(d), all = c * n;
	u64 in;

	switch (d->prim) {
	case COLL_REDUCESCATTER:
	case COLL_SCATTER:
	case COLL_ALLTOALL:
		sh->stride = all;
		break;
	case COLL_BARRIER:
		sh->stride = 0;
		break;
	default:
		sh->stride = c;
	}
	in = (coll_eager_one_src(d->prim) ? 1 : n) * sh->stride;
	sh->res = in;
	sh->total = in;
	if (coll_prim_reduces(d->prim))
		sh->total += d->prim == COLL_REDUCESCATTER ? all : c;
}

enum coll_eneed {
	COLL_ENEED_NONE,	/* nothing to receive: leave at arrival */
	COLL_ENEED_SELF,	/* only its own input (a root) */
	COLL_ENEED_ROOT,	/* the root's input */
	COLL_ENEED_ALL,		/* everyone's, or the result */
};

static enum coll_eneed coll_eager_need(const struct coll_desc *d, u32 rank)
{
	switch (d->prim) {
	case COLL_REDUCE:
	case COLL_GATHER:
		return rank == d->root ? COLL_ENEED_ALL : COLL_ENEED_NONE;
	case COLL_BROADCAST:
	case COLL_SCATTER:
		return rank == d->root ? COLL_ENEED_SELF : COLL_ENEED_ROOT;
	default:
		return COLL_ENEED_ALL;
	}
}

/* The last arriver: the result, reducing in rank order as DIRECT does. */
static void coll_eager_reduce(struct coll_eslot *s,
			      const struct coll_eshape *sh, u32 n)
{
	const struct coll_desc *d = &s->desc;
	u32 esize = coll_desc_esize(d);
	u64 len = sh->total - sh->res;
	size_t elems = len / esize;
	u8 *res = s->data + sh->res;
	coll_reduce_fn fn;
	bool fpu;
	u32 j;

	if (!len)
		return;
	if (n == 1) {
		memcpy(res, s->data, len);
		return;
	}
	fn = coll_reduce_get(d->dtype, d->redop, &fpu);
	if (fpu)
		coll_fpu_begin();
	fn(res, s->data, s->data + sh->stride, elems);
	for (j = 2; j < n; j++)
		fn(res, res, s->data + j * sh->stride, elems);
	if (d->redop == COLL_AVG)
		coll_reduce_div(d->dtype, res, elems, n);
	if (fpu)
		kernel_fpu_end();
}

/* Copy this rank's result from the slot to its receive buffer. */
static int coll_eager_copy_out(const struct coll_eslot *s,
			       const struct coll_eshape *sh, u32 n, u32 rank,
			       u64 recvbuf)
{
	const struct coll_desc *d = &s->desc;
	u64 c = d->count * coll_desc_esize(d);
	u8 __user *dst = u64_to_user_ptr(recvbuf);
	const u8 *src;
	u32 j;

	if (!sh->recv)
		return 0;
	switch (d->prim) {
	case COLL_ALLREDUCE:
	case COLL_REDUCE:
		src = s->data + sh->res;
		break;
	case COLL_REDUCESCATTER:
		src = s->data + sh->res + rank * c;
		break;
	case COLL_SCATTER:
		src = s->data + rank * c;
		break;
	case COLL_ALLTOALL:
		for (j = 0; j < n; j++)
			if (copy_to_user(dst + j * c,
					 s->data + j * sh->stride + rank * c, c))
				return -EFAULT;
		return 0;
	default:	/* AllGather, Gather, Broadcast: the inputs in order */
		src = s->data;
	}
	return copy_to_user(dst, src, sh->recv) ? -EFAULT : 0;
}

static void coll_eager_kick(struct coll_comm *comm);

/*
 * The keys waiters sleep on (wait_var_event()): a slot's result (root_in,
 * all_in or its status), and the slot's release.
 */
static void *coll_eager_key(struct coll_eslot *s, bool release)
{
	return release ? (void *)&s->busy : (void *)&s->all_in;
}

/* Wake the waiters of @s's result, published, and kick the commands. */
static void coll_eager_wake_result(struct coll_comm *comm,
				   struct coll_eslot *s)
{
	/* published, then looked for sleepers: pairs with the waiter's mb */
	smp_mb();
	wake_up_var(coll_eager_key(s, false));
	coll_eager_kick(comm);
}

/* Wake the waiters of @s's release, once it is free. */
static void coll_eager_wake_release(struct coll_eslot *s)
{
	smp_mb();	/* as in coll_eager_wake_result() */
	wake_up_var(coll_eager_key(s, true));
}

/*
 * Wake every waiter of @comm's slots, whatever it waits for, and kick its
 * commands: for the communicator's death and a disagreement.
 */
void coll_eager_wake(struct coll_comm *comm)
{
	struct coll_eager *e = READ_ONCE(comm->eager);
	u32 i;

	smp_mb();	/* as in coll_eager_wake_result() */
	for (i = 0; e && i < COLL_EAGER_SLOTS; i++) {
		wake_up_var(coll_eager_key(&e->slot[i], false));
		wake_up_var(coll_eager_key(&e->slot[i], true));
	}
	coll_eager_kick(comm);
}

/*
 * Locks: comm->lock.  A rank is done with @s; the last one frees it (and
 * then wakes, once it drops the lock, a first rank waiting for the slot).
 * Return: true if it did.
 */
static bool coll_eager_leave_locked(struct coll_comm *comm,
				    struct coll_eslot *s)
{
	lockdep_assert_held(&comm->lock);
	if (++s->nleft < comm->nranks)
		return false;
	WRITE_ONCE(s->busy, false);
	coll_stats_eager_done(comm, &s->desc, s->t_start, s->status);
	coll_stats_global_done(s->desc.count * coll_desc_esize(&s->desc),
			       s->status);
	return true;
}

static void coll_eager_leave(struct coll_comm *comm, struct coll_eslot *s)
{
	bool freed;

	spin_lock(&comm->lock);
	freed = coll_eager_leave_locked(comm, s);
	spin_unlock(&comm->lock);
	if (freed)
		coll_eager_wake_release(s);
}

/*
 * Locks: comm->lock.  @m's next collective has a slot: the slot, if so.
 */
static struct coll_eslot *coll_eager_find_locked(struct coll_member *m)
{
	struct coll_eager *e = m->comm->eager;
	struct coll_eslot *s;

	lockdep_assert_held(&m->comm->lock);
	if (!e)
		return NULL;
	s = &e->slot[m->next_seq % COLL_EAGER_SLOTS];
	return s->busy && s->seq == m->next_seq ? s : NULL;
}

/*
 * Locks: comm->lock.  @m arrives at @s with a collective that disagrees:
 * the collective fails with EPROTO, and @m leaves at once.
 */
static void coll_eager_disagree_slot(struct coll_member *m,
				     struct coll_eslot *s)
{
	struct coll_comm *comm = m->comm;

	lockdep_assert_held(&comm->lock);
	trace_coll_eager(comm, m->rank, &s->desc, m->next_seq,
			 COLL_TRACE_EAGER_DISAGREE);
	if (!s->status)
		s->status = -EPROTO;
	__set_bit(m->rank, s->arrived);
	m->next_seq++;
	if (++s->narrived == comm->nranks) {
		s->t_start = ktime_get_ns();
		/* pairs with smp_load_acquire() in coll_eager_ready() */
		smp_store_release(&s->all_in, true);
	}
	coll_eager_leave_locked(comm, s);
}

/**
 * coll_eager_meet_locked() - a task-path submission meets a slot
 * @m: the membership, about to publish its next collective as a task
 * @sub: its part
 *
 * If the first rank of @m's next collective took the eager path, a
 * blocking submission (or an io_uring command) outside a group that
 * agrees with it was sent to the task path only because the slot was
 * still busy when it looked (or its tunables said so): it must follow
 * into the slot instead.  Any other
 * (non-blocking, in a group, or disagreeing) cannot match it: it arrives
 * there, failing the collective with EPROTO, and the caller wakes the
 * slot's waiters (coll_eager_wake()) once it drops the lock.
 *
 * Locks: comm->lock.
 *
 * Return: 0 if no slot holds @m's next collective, -EAGAIN if @sub should
 * go the eager path (nothing done), or -EPROTO (its sequence number spent).
 */
int coll_eager_meet_locked(struct coll_member *m, const struct coll_sub *sub)
{
	struct coll_eslot *s = coll_eager_find_locked(m);

	if (!s)
		return 0;
	if ((!sub->req || sub->req->ioucmd) && !sub->desc.group &&
	    coll_desc_equal(&s->desc, &sub->desc))
		return -EAGAIN;
	coll_eager_disagree_slot(m, s);
	return -EPROTO;
}

/* Give @comm its slots, unless it has them; quietly, on failure. */
static void coll_eager_alloc(struct coll_comm *comm, u32 slot_bytes)
{
	size_t words = BITS_TO_LONGS(comm->nranks);
	size_t data = round_up((size_t)slot_bytes, sizeof(long));
	size_t ucmds = comm->nranks * sizeof(struct coll_eucmd);
	size_t bytes = struct_size((struct coll_eager *)NULL, data,
				   (data + words * sizeof(long) + ucmds) *
				   COLL_EAGER_SLOTS);
	struct coll_eager *e = coll_kvzalloc(bytes);
	u8 *p;
	u32 i;

	if (!e)
		return;
	e->slot_bytes = slot_bytes;
	e->alloc_bytes = bytes;
	/*
	 * The data areas, then the bitmaps, then the parked commands (each
	 * long-aligned: data and bitmaps are, and struct coll_eucmd is two
	 * pointers).
	 */
	for (i = 0; i < COLL_EAGER_SLOTS; i++) {
		p = e->data + COLL_EAGER_SLOTS * data;
		e->slot[i].data = e->data + i * data;
		e->slot[i].arrived = (unsigned long *)p + i * words;
		p += COLL_EAGER_SLOTS * words * sizeof(long);
		e->slot[i].ucmd = (struct coll_eucmd *)(p + i * ucmds);
	}
	spin_lock(&comm->lock);
	if (!comm->eager) {
		comm->eager = e;
		e = NULL;
	}
	spin_unlock(&comm->lock);
	if (e)
		coll_kvfree(e, bytes);
}

/* The communicator is going: its slots, and collectives left in them. */
void coll_eager_free(struct coll_comm *comm)
{
	struct coll_eager *e = comm->eager;
	u32 i;

	if (!e)
		return;
	for (i = 0; i < COLL_EAGER_SLOTS; i++)
		if (e->slot[i].busy)
			atomic64_dec(&coll_stats.ops);
	coll_kvfree(e, e->alloc_bytes);
}

/**
 * coll_eager_op_locked() - a collective of @comm's slots, for netlink
 * @comm: the communicator
 * @from: the lowest sequence number wanted
 * @op: filled with the collective of the lowest sequence number from
 *      @from on that has a slot; op->arrived stays valid while the lock
 *      is held
 *
 * Locks: comm->lock.
 *
 * Return: true if there is one.
 */
bool coll_eager_op_locked(struct coll_comm *comm, u64 from,
			  struct coll_eager_op *op)
{
	struct coll_eager *e = comm->eager;
	struct coll_eslot *s, *best = NULL;
	u32 i;

	lockdep_assert_held(&comm->lock);
	for (i = 0; e && i < COLL_EAGER_SLOTS; i++) {
		s = &e->slot[i];
		if (s->busy && s->seq >= from && (!best || s->seq < best->seq))
			best = s;
	}
	if (!best)
		return false;
	*op = (struct coll_eager_op){
		.seq = best->seq,
		.desc = best->desc,
		.narrived = best->narrived,
		.t_first = best->t_first,
		.arrived = best->arrived,
	};
	return true;
}

/* Is what @need names there? */
static bool coll_eager_have(struct coll_eslot *s, enum coll_eneed need)
{
	if (need == COLL_ENEED_ROOT)	/* pairs with the root's release */
		return smp_load_acquire(&s->root_in);
	/* pairs with smp_store_release() of the last arriver */
	return smp_load_acquire(&s->all_in);
}

static bool coll_eager_ready(struct coll_comm *comm, struct coll_eslot *s,
			     enum coll_eneed need)
{
	return READ_ONCE(comm->dead) || READ_ONCE(s->status) ||
	       coll_eager_have(s, need);
}

/* Is slot @s no longer held by the collective @seq (or is all lost)? */
static bool coll_eager_freed(struct coll_comm *comm, struct coll_eslot *s,
			     u64 seq)
{
	return READ_ONCE(comm->dead) || !READ_ONCE(s->busy) ||
	       READ_ONCE(s->seq) != seq;
}

/*
 * What a waiter waits for: what @need names, or for @need ==
 * COLL_ENEED_NONE, slot @s no longer holding the collective @old.
 */
static bool coll_eager_cond(struct coll_comm *comm, struct coll_eslot *s,
			    enum coll_eneed need, u64 old)
{
	if (need == COLL_ENEED_NONE)
		return coll_eager_freed(comm, s, old);
	return coll_eager_ready(comm, s, need);
}

/*
 * Wait (see coll_eager_cond()): poll for up to spin_ns, then sleep.  While
 * another task wants this CPU (more ranks than CPUs: often the rank this
 * one waits for), poll by letting it run rather than by sleeping: the rank
 * that is working runs, and nobody needs waking (a wake-up costs an IPI
 * and two context switches).  Measured with 4 ranks on 2 vCPUs, 8-byte
 * AllReduce: 195 us a call sleeping, 77 us yielding.
 *
 * Return: 0, or -EINTR (killed).
 */
static int coll_eager_wait(struct coll_comm *comm, struct coll_eslot *s,
			   enum coll_eneed need, u64 old)
{
	u64 until = local_clock() + coll_tune_get(comm, COLL_TUNE_SPIN_NS);

	while (!coll_eager_cond(comm, s, need, old) &&
	       local_clock() < until) {
		if (fatal_signal_pending(current))
			break;
		if (need_resched() || !single_task_running())
			schedule();	/* runnable: the others go first */
		else
			cpu_relax();
	}
	return wait_var_event_killable(coll_eager_key(s, need ==
						       COLL_ENEED_NONE),
				       coll_eager_cond(comm, s, need, old));
}

/*
 * A rank's result, once what it needs is there (or lost): 0, or the slot's
 * error, -ECONNRESET (the communicator died first) or -EFAULT.
 */
static int coll_eager_result(struct coll_comm *comm, struct coll_eslot *s,
			     enum coll_eneed need, u32 rank, u64 recvbuf,
			     u64 recv)
{
	struct coll_eshape sh;
	int ret = READ_ONCE(s->status);

	if (!ret && need != COLL_ENEED_SELF && !coll_eager_have(s, need))
		ret = -ECONNRESET;	/* woken by the communicator's death */
	if (ret)
		return ret;
	coll_eager_shape(&s->desc, comm->nranks, &sh);
	sh.recv = recv;
	return coll_eager_copy_out(s, &sh, comm->nranks, rank, recvbuf);
}

static struct coll_eager_pdu *coll_eager_pdu(struct io_uring_cmd *cmd)
{
	BUILD_BUG_ON(sizeof(struct coll_eager_pdu) > sizeof(cmd->pdu));
	return (struct coll_eager_pdu *)cmd->pdu;
}

/*
 * Task work of a parked command's submitter (or io_uring's fallback worker
 * if it is exiting, where the copy out fails): its result, then the slot
 * left, then the completion.
 */
static void coll_eager_ucmd_done(struct io_uring_cmd *cmd,
				 unsigned int issue_flags)
{
	struct coll_eager_pdu *pdu = coll_eager_pdu(cmd);
	struct coll_comm *comm = pdu->comm;
	struct coll_eslot *s = pdu->s;
	int ret;

	ret = coll_eager_result(comm, s, pdu->need, pdu->rank, pdu->recvbuf,
				pdu->recv);
	coll_eager_leave(comm, s);
	coll_uring_unreserve(cmd->file->private_data);
	coll_comm_put(comm);
	io_uring_cmd_done(cmd, ret, 0, issue_flags);
}

/*
 * Kick the parked commands whose result is there (or lost) to their
 * submitters' task work.  Called once what they wait for is published.
 *
 * Locks: takes comm->lock (io_uring_cmd_complete_in_task() only queues
 * the work and wakes the task).
 */
static void coll_eager_kick(struct coll_comm *comm)
{
	struct coll_eager *e = READ_ONCE(comm->eager);
	struct coll_eslot *s;
	struct io_uring_cmd *cmd;
	u32 i, r;

	/* published, then read: pairs with smp_mb() in coll_eager_park() */
	smp_mb();
	if (!e || !READ_ONCE(e->nucmds))
		return;
	spin_lock(&comm->lock);
	for (i = 0; i < COLL_EAGER_SLOTS && e->nucmds; i++) {
		s = &e->slot[i];
		for (r = 0; r < comm->nranks; r++) {
			cmd = s->ucmd[r].cmd;
			if (!cmd ||
			    !coll_eager_ready(comm, s, coll_eager_pdu(cmd)->need))
				continue;
			s->ucmd[r].cmd = NULL;
			WRITE_ONCE(e->nucmds, e->nucmds - 1);
			io_uring_cmd_complete_in_task(cmd, coll_eager_ucmd_done);
		}
	}
	spin_unlock(&comm->lock);
}

/*
 * Park the io_uring command @cmd of @rank, arrived at @s, until what @need
 * names is there; it holds a reference on @comm until it completes.
 *
 * Locks: takes comm->lock.
 *
 * Return: true if parked, false if what it needs is there already (the
 * caller completes it now).
 */
static bool coll_eager_park(struct coll_comm *comm, struct coll_eslot *s,
			    u32 rank, enum coll_eneed need,
			    struct io_uring_cmd *cmd, u64 recvbuf, u64 recv)
{
	struct coll_eager *e = comm->eager;

	*coll_eager_pdu(cmd) = (struct coll_eager_pdu){
		.comm = comm,
		.s = s,
		.recvbuf = recvbuf,
		.recv = recv,
		.rank = rank,
		.need = need,
	};
	spin_lock(&comm->lock);
	s->ucmd[rank] = (struct coll_eucmd){
		.cmd = cmd,
		.owner = current->files,
	};
	WRITE_ONCE(e->nucmds, e->nucmds + 1);
	/* parked, then checked: pairs with smp_mb() in coll_eager_kick() */
	smp_mb();
	if (coll_eager_ready(comm, s, need)) {
		s->ucmd[rank].cmd = NULL;
		WRITE_ONCE(e->nucmds, e->nucmds - 1);
		spin_unlock(&comm->lock);
		return false;
	}
	kref_get(&comm->kref);
	spin_unlock(&comm->lock);
	return true;
}

/**
 * coll_eager_owns() - does a command of @m from file table @id wait here?
 * @m: a membership
 * @id: a file table (coll_uring_flush())
 *
 * Locks: takes comm->lock.
 *
 * Return: true if an io_uring command of @m, submitted from @id, is parked
 * in one of its communicator's slots.
 */
bool coll_eager_owns(struct coll_member *m, void *id)
{
	struct coll_comm *comm = m->comm;
	struct coll_eager *e;
	struct coll_eucmd *u;
	bool mine = false;
	u32 i;

	spin_lock(&comm->lock);
	e = comm->eager;
	for (i = 0; e && i < COLL_EAGER_SLOTS && !mine; i++) {
		u = &e->slot[i].ucmd[m->rank];
		mine = u->cmd && u->owner == id;
	}
	spin_unlock(&comm->lock);
	return mine;
}

/*
 * May the first rank of a collective take the eager path?  Not if an
 * algorithm is forced, or slot_bytes (now) says no.  Later ranks follow
 * the first whatever the tunables say by then.
 */
/* slot_bytes, as it is now, within its cap. */
static u32 coll_eager_cap(void)
{
	return min(READ_ONCE(coll_slot_bytes), COLL_EAGER_MAX_BYTES);
}

static bool coll_eager_may(struct coll_comm *comm, const struct coll_desc *d,
			   const struct coll_eshape *sh)
{
	u32 cap = coll_eager_cap();

	return cap && sh->total <= cap &&
	       coll_tune_algo(comm, d->prim) == COLL_ALGO_AUTO;
}

/**
 * coll_eager_submit() - a blocking COLL_SUBMIT through the slots
 * @cf: the caller's descriptor
 * @m: the membership (a reference held)
 * @arg: the validated argument, blocking, its root checked
 * @ioucmd: the io_uring command that submits it, or NULL for the ioctl
 *
 * Locks: takes comm->lock, never held while copying or waiting.
 *
 * Return: -EAGAIN if the collective goes the task path (the caller runs it
 * there, nothing was done), else the call's result: 0, -EPROTO (the ranks
 * disagree), -EFAULT (a buffer that cannot be read or written, found
 * before anything happened), -EINVAL or -EOVERFLOW (as coll_op_layout()),
 * -ECONNRESET (the communicator died) or -EINTR (killed); or, for a
 * command, -EIOCBQUEUED: parked, it completes later.
 */
int coll_eager_submit(struct coll_file *cf, struct coll_member *m,
		      const struct coll_op *arg, struct io_uring_cmd *ioucmd)
{
	struct coll_comm *comm = m->comm;
	u32 n = comm->nranks, rank = m->rank;
	struct coll_layout lay;
	struct coll_eshape sh;
	struct coll_desc d;
	struct coll_eager *e;
	struct coll_eslot *s;
	enum coll_eneed need;
	bool last, root, freed;
	u64 seq;
	int ret;

	if (comm->hosts || arg->algo != COLL_ALGO_AUTO)
		return -EAGAIN;
	ret = coll_op_layout(arg, n, rank, &lay);
	if (ret)
		return ret;
	d = coll_desc_of(arg, lay.inplace);
	coll_eager_shape(&d, n, &sh);
	sh.send = lay.bytes[COLL_SBUF_SEND];
	sh.recv = lay.bytes[COLL_SBUF_RECV];
	/* Could it go this way at all: as the first, or following one? */
	e = READ_ONCE(comm->eager);
	if (!e) {
		if (!coll_eager_may(comm, &d, &sh))
			return -EAGAIN;
		coll_eager_alloc(comm, coll_eager_cap());
		e = READ_ONCE(comm->eager);
	}
	if (!e || sh.total > e->slot_bytes)
		return -EAGAIN;
	/* As a pin would: a receive buffer that cannot be written fails now. */
	if (coll_user_writable(arg->recvbuf, sh.recv))
		return -EFAULT;
	need = coll_eager_need(&d, rank);
	root = coll_eager_one_src(d.prim) && rank == d.root;

retry:
	spin_lock(&comm->lock);
	if (comm->dead) {
		spin_unlock(&comm->lock);
		return -ECONNRESET;
	}
	seq = m->next_seq;
	if (coll_task_find(comm, seq)) {
		/* the first rank made a task: follow it */
		spin_unlock(&comm->lock);
		return -EAGAIN;
	}
	s = coll_eager_find_locked(m);
	if (!s) {
		s = &e->slot[seq % COLL_EAGER_SLOTS];
		if (!coll_eager_may(comm, &d, &sh)) {
			spin_unlock(&comm->lock);
			return -EAGAIN;
		}
		if (!ioucmd && !READ_ONCE(cf->nucmds)) {
			const u32 half = COLL_EAGER_LEAD / 2;
			struct coll_eslot *o, *h;

			o = &e->slot[(seq - COLL_EAGER_LEAD) % COLL_EAGER_SLOTS];
			h = &e->slot[(seq - half) % COLL_EAGER_SLOTS];
			/*
			 * Wait, as for a busy slot, for the one half the
			 * lead back (slots are left in sequence order, so
			 * that one too), if it is still held.
			 */
			if (o->busy && o->seq + COLL_EAGER_LEAD == seq)
				s = h->busy && h->seq + half == seq ? h : o;
		}
		if (s->busy) {
			/*
			 * This rank (a root, say) is COLL_EAGER_SLOTS (a
			 * blocking call: COLL_EAGER_LEAD) collectives
			 * ahead of another: wait for it to leave that
			 * slot (a blocking call: the one half the lead
			 * back), as a blocking call waits for its peers; a
			 * command never waits, and takes the task path.
			 */
			u64 old = s->seq;

			spin_unlock(&comm->lock);
			if (ioucmd)
				return -EAGAIN;
			if (coll_eager_wait(comm, s, COLL_ENEED_NONE, old))
				goto killed;
			goto retry;
		}
		*s = (struct coll_eslot){
			.seq = seq,
			.desc = d,
			.t_first = ktime_get_ns(),
			.arrived = s->arrived,
			.ucmd = s->ucmd,
			.data = s->data,
		};
		bitmap_zero(s->arrived, n);
		WRITE_ONCE(s->busy, true);
		atomic64_inc(&coll_stats.ops);
	}
	if (!coll_desc_equal(&s->desc, &d)) {
		coll_eager_disagree_slot(m, s);
		spin_unlock(&comm->lock);
		coll_eager_wake(comm);
		return -EPROTO;
	}
	s->nclaimed++;
	spin_unlock(&comm->lock);

	if (sh.send &&
	    copy_from_user(s->data + (root ? 0 : rank * sh.stride),
			   u64_to_user_ptr(arg->sendbuf), sh.send)) {
		spin_lock(&comm->lock);
		/* nobody else holds it: it is free again, for any path */
		if (!--s->nclaimed && !s->narrived) {
			WRITE_ONCE(s->busy, false);
			atomic64_dec(&coll_stats.ops);
		}
		spin_unlock(&comm->lock);
		return -EFAULT;
	}

	spin_lock(&comm->lock);
	s->nclaimed--;
	if (m->next_seq != seq || comm->dead) {
		/* another thread of this membership arrived first */
		spin_unlock(&comm->lock);
		goto retry;
	}
	m->next_seq++;
	__set_bit(rank, s->arrived);
	last = ++s->narrived == n;
	if (last)
		s->t_start = ktime_get_ns();
	if (root)	/* pairs with smp_load_acquire() in coll_eager_ready() */
		smp_store_release(&s->root_in, true);
	ret = s->status;
	trace_coll_eager(comm, rank, &d, seq, last ? COLL_TRACE_EAGER_LAST :
			 COLL_TRACE_EAGER_ARRIVE);
	freed = need == COLL_ENEED_NONE && !last &&
		coll_eager_leave_locked(comm, s);
	spin_unlock(&comm->lock);

	if (last) {
		if (!ret && coll_prim_reduces(d.prim))
			coll_eager_reduce(s, &sh, n);
		/* pairs with smp_load_acquire() in coll_eager_ready() */
		smp_store_release(&s->all_in, true);
	}
	if (last || root)
		coll_eager_wake_result(comm, s);
	if (freed)
		coll_eager_wake_release(s);
	if (need == COLL_ENEED_NONE) {
		if (last)
			coll_eager_leave(comm, s);
		return ret;
	}

	if (ioucmd) {
		if (need != COLL_ENEED_SELF &&
		    coll_eager_park(comm, s, rank, need, ioucmd, arg->recvbuf,
				    sh.recv))
			return -EIOCBQUEUED;
	} else if (need != COLL_ENEED_SELF &&
		   coll_eager_wait(comm, s, need, 0)) {
		coll_eager_leave(comm, s);
		goto killed;
	}
	ret = coll_eager_result(comm, s, need, rank, arg->recvbuf, sh.recv);
	coll_eager_leave(comm, s);
	return ret;

killed:
	coll_comm_kill_why(comm, -ECONNRESET,
			   "a rank was killed in a collective");
	return -EINTR;
}
