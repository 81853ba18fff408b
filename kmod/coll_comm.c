// SPDX-License-Identifier: GPL-2.0
/*
 * Communicators: a registry of 128-bit ids, joining and leaving.
 *
 * A communicator is joinable while some of its ranks are missing; once all
 * have joined it is READY and no one else can enter it.  When a member of a
 * READY communicator leaves (COMM_DESTROY, close or death), the communicator
 * leaves the registry, is marked dead and every in-flight op fails with
 * ECONNRESET, so that no peer waits for a rank that will never come.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/algapi.h>
#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "coll_loc.h"
#include "coll_trace.h"

static LIST_HEAD(coll_comms);
static atomic_t coll_comm_serial = ATOMIC_INIT(0);
static DEFINE_MUTEX(coll_comms_lock);

static void coll_comm_release(struct kref *kref)
{
	struct coll_comm *comm = container_of(kref, struct coll_comm, kref);

	WARN_ON(!list_empty(&comm->ops));
	atomic64_dec(&coll_stats.comms);
	kfree(comm->members);
	kfree(comm);
}

void coll_comm_put(struct coll_comm *comm)
{
	kref_put(&comm->kref, coll_comm_release);
}

/* Locks: coll_comms_lock. */
static struct coll_comm *coll_comm_find(const u8 *id)
{
	struct coll_comm *comm;

	lockdep_assert_held(&coll_comms_lock);
	list_for_each_entry(comm, &coll_comms, node)
		if (!crypto_memneq(comm->id, id, COLL_ID_BYTES))
			return comm;
	return NULL;
}

/* Locks: coll_comms_lock. */
static struct coll_comm *coll_comm_create(const u8 *id, u32 nranks)
{
	struct coll_comm *comm;

	lockdep_assert_held(&coll_comms_lock);
	comm = kzalloc(sizeof(*comm), GFP_KERNEL);
	if (!comm)
		return NULL;
	comm->members = kcalloc(nranks, sizeof(*comm->members), GFP_KERNEL);
	if (!comm->members) {
		kfree(comm);
		return NULL;
	}
	kref_init(&comm->kref);		/* the registry's reference */
	memcpy(comm->id, id, COLL_ID_BYTES);
	comm->nranks = nranks;
	comm->serial = atomic_inc_return(&coll_comm_serial);
	comm->state = COLL_COMM_JOINING;
	init_waitqueue_head(&comm->join_wq);
	spin_lock_init(&comm->lock);
	INIT_LIST_HEAD(&comm->ops);
	list_add(&comm->node, &coll_comms);
	atomic64_inc(&coll_stats.comms);
	return comm;
}

/* Locks: coll_comms_lock.  Drops the registry's reference. */
static void coll_comm_unlist(struct coll_comm *comm)
{
	lockdep_assert_held(&coll_comms_lock);
	if (comm->state == COLL_COMM_GONE)
		return;
	comm->state = COLL_COMM_GONE;
	list_del_init(&comm->node);
	coll_comm_put(comm);
}

/*
 * Mark the communicator dead and fail its in-flight ops.
 * Locks: takes comm->lock; the caller holds no op or comm spinlock.
 */
static void coll_comm_kill(struct coll_comm *comm, int err)
{
	struct coll_task *op, *tmp;
	LIST_HEAD(doomed);

	spin_lock(&comm->lock);
	comm->dead = true;
	list_for_each_entry(op, &comm->ops, node) {
		kref_get(&op->kref);
		list_add_tail(&op->abort_node, &doomed);
	}
	spin_unlock(&comm->lock);

	list_for_each_entry_safe(op, tmp, &doomed, abort_node) {
		list_del(&op->abort_node);
		coll_op_abort(op, err);
		coll_op_put(op);
	}
}

/* Locks: coll_comms_lock.  Frees @m. */
static void coll_member_remove(struct coll_member *m)
{
	struct coll_comm *comm = m->comm;

	lockdep_assert_held(&coll_comms_lock);
	comm->members[m->rank] = NULL;
	comm->njoined--;
	if (comm->state == COLL_COMM_JOINING && !comm->njoined)
		coll_comm_unlist(comm);
	kfree(m);
}

static void coll_member_leave(struct coll_member *m)
{
	struct coll_comm *comm = m->comm;
	bool kill;

	mutex_lock(&coll_comms_lock);
	kill = comm->state != COLL_COMM_JOINING;
	if (kill)
		coll_comm_unlist(comm);
	trace_coll_comm_leave(comm, m->rank, comm->njoined - 1);
	coll_member_remove(m);
	mutex_unlock(&coll_comms_lock);

	if (kill)
		coll_comm_kill(comm, -ECONNRESET);
	coll_comm_put(comm);
}

static long coll_join_timeout(u32 timeout_ms)
{
	if (!timeout_ms)
		timeout_ms = READ_ONCE(coll_join_timeout_ms);
	return max_t(long, 1, msecs_to_jiffies(timeout_ms));
}

/**
 * coll_comm_join() - COLL_COMM_INIT
 * @cf: the caller's descriptor
 * @arg: the validated-size argument; out_comm is filled on success
 *
 * Locks: takes cf->lock and coll_comms_lock (in that order), not held while
 * waiting for the other ranks.
 *
 * Return: 0 or -errno as documented in the uapi header.
 */
int coll_comm_join(struct coll_file *cf, struct coll_comm_init *arg)
{
	struct coll_member *m;
	struct coll_comm *comm;
	long left;
	u32 handle;
	int ret;

	if (arg->flags)
		return -EOPNOTSUPP;
	if (arg->__reserved)
		return -EINVAL;
	if (arg->nhosts || arg->hosts_uptr)
		return -EOPNOTSUPP;
	if (!arg->nranks || arg->nranks > COLL_MAX_RANKS ||
	    arg->rank >= arg->nranks)
		return -EINVAL;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->rank = arg->rank;

	mutex_lock(&cf->lock);
	ret = xa_alloc(&cf->members, &handle, NULL, xa_limit_31b, GFP_KERNEL);
	if (ret)
		goto err_unlock_cf;

	mutex_lock(&coll_comms_lock);
	comm = coll_comm_find(arg->id);
	if (comm && comm->nranks != arg->nranks) {
		ret = -EPROTO;
		goto err_unlock_comms;
	}
	if (comm && (comm->state != COLL_COMM_JOINING ||
		     comm->members[arg->rank])) {
		ret = -EBUSY;
		goto err_unlock_comms;
	}
	if (!comm) {
		comm = coll_comm_create(arg->id, arg->nranks);
		if (!comm) {
			ret = -ENOMEM;
			goto err_unlock_comms;
		}
	}
	kref_get(&comm->kref);		/* the member's reference */
	m->comm = comm;
	comm->members[m->rank] = m;
	comm->njoined++;
	if (comm->njoined == comm->nranks) {
		comm->state = COLL_COMM_READY;
		wake_up_all(&comm->join_wq);
	}
	trace_coll_comm_join(comm, m->rank, comm->njoined);
	mutex_unlock(&coll_comms_lock);
	mutex_unlock(&cf->lock);

	/*
	 * The handle stays reserved (a NULL entry) until the join succeeds,
	 * so no other thread of this descriptor can reach @m meanwhile.
	 */
	left = wait_event_killable_timeout(comm->join_wq,
					   READ_ONCE(comm->state) !=
					   COLL_COMM_JOINING,
					   coll_join_timeout(arg->timeout_ms));
	mutex_lock(&cf->lock);
	mutex_lock(&coll_comms_lock);
	if (comm->state != COLL_COMM_JOINING) {
		mutex_unlock(&coll_comms_lock);
		xa_store(&cf->members, handle, m, GFP_KERNEL);
		mutex_unlock(&cf->lock);
		arg->out_comm = handle;
		return 0;
	}
	/* Timed out or killed: undo the join as if it never happened. */
	ret = left < 0 ? -EINTR : -ETIMEDOUT;
	coll_member_remove(m);
	mutex_unlock(&coll_comms_lock);
	xa_erase(&cf->members, handle);
	mutex_unlock(&cf->lock);
	coll_comm_put(comm);
	return ret;

err_unlock_comms:
	mutex_unlock(&coll_comms_lock);
	xa_erase(&cf->members, handle);
err_unlock_cf:
	mutex_unlock(&cf->lock);
	kfree(m);
	return ret;
}

/**
 * coll_comm_leave() - COLL_COMM_DESTROY
 * @cf: the caller's descriptor
 * @handle: the membership
 *
 * Locks: takes cf->lock.
 */
int coll_comm_leave(struct coll_file *cf, u32 handle)
{
	struct coll_member *m;

	mutex_lock(&cf->lock);
	m = xa_load(&cf->members, handle);
	if (m)
		xa_erase(&cf->members, handle);
	mutex_unlock(&cf->lock);
	if (!m)
		return -ENOENT;
	coll_member_leave(m);
	return 0;
}

/* Leave every communicator of a descriptor being released. */
void coll_comm_leave_all(struct coll_file *cf)
{
	struct coll_member *m;
	unsigned long index;

	xa_for_each(&cf->members, index, m) {
		xa_erase(&cf->members, index);
		coll_member_leave(m);
	}
}
