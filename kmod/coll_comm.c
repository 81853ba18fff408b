// SPDX-License-Identifier: GPL-2.0
/*
 * Communicators: a registry of 128-bit ids, joining and leaving.
 *
 * The registry is a hash table keyed by a keyed hash (siphash, with a key
 * drawn at load) of the id, so that neither the lookup's cost nor its
 * timing depends on how many communicators exist or on how close an id is
 * to someone else's; entries match only within the network namespace of
 * the process that created them.
 *
 * A communicator is joinable while some of its ranks are missing; once all
 * have joined it is READY and no one else can enter it.  When a member of a
 * READY communicator leaves (COMM_DESTROY, close or death), or a member's
 * thread is killed in the middle of a collective, the communicator leaves
 * the registry, is marked dead and every in-flight collective fails with
 * ECONNRESET, so that no peer waits for a rank that will never come.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/algapi.h>
#include <linux/hashtable.h>
#include <linux/jiffies.h>
#include <linux/nsproxy.h>
#include <linux/random.h>
#include <linux/sched/signal.h>
#include <linux/siphash.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>

#include "coll_loc.h"
#include "coll_trace.h"

#define COLL_COMMS_BITS 8

static DEFINE_HASHTABLE(coll_comms, COLL_COMMS_BITS);
static siphash_key_t coll_comms_key __read_mostly;
static atomic_t coll_comm_serial = ATOMIC_INIT(0);
static DEFINE_MUTEX(coll_comms_lock);

int coll_comm_init_registry(void)
{
	get_random_bytes(&coll_comms_key, sizeof(coll_comms_key));
	return 0;
}

static u64 coll_comm_hash(const u8 *id)
{
	return siphash(id, COLL_ID_BYTES, &coll_comms_key);
}

static void coll_comm_release(struct kref *kref)
{
	struct coll_comm *comm = container_of(kref, struct coll_comm, kref);

	WARN_ON(!list_empty(&comm->tasks));
	coll_plan_cache_flush(&comm->plans);
	atomic64_dec(&coll_stats.comms);
	put_net(comm->net);
	memzero_explicit(comm->id, sizeof(comm->id));
	coll_kvfree(comm->members, comm->nranks * sizeof(*comm->members));
	coll_kvfree(comm, sizeof(*comm));
}

void coll_comm_put(struct coll_comm *comm)
{
	kref_put(&comm->kref, coll_comm_release);
}

/* Locks: coll_comms_lock. */
static struct coll_comm *coll_comm_find(struct net *net, const u8 *id)
{
	struct coll_comm *comm;

	lockdep_assert_held(&coll_comms_lock);
	hash_for_each_possible(coll_comms, comm, node, coll_comm_hash(id))
		if (net_eq(comm->net, net) &&
		    !crypto_memneq(comm->id, id, COLL_ID_BYTES))
			return comm;
	return NULL;
}

/* Locks: coll_comms_lock. */
static struct coll_comm *coll_comm_create(struct net *net, const u8 *id,
					  u32 nranks)
{
	struct coll_comm *comm;

	lockdep_assert_held(&coll_comms_lock);
	comm = coll_kvzalloc(sizeof(*comm));
	if (!comm)
		return NULL;
	comm->members = coll_kvzalloc(nranks * sizeof(*comm->members));
	if (!comm->members) {
		coll_kvfree(comm, sizeof(*comm));
		return NULL;
	}
	kref_init(&comm->kref);		/* the registry's reference */
	comm->net = get_net(net);
	memcpy(comm->id, id, COLL_ID_BYTES);
	comm->nranks = nranks;
	comm->serial = atomic_inc_return(&coll_comm_serial);
	comm->state = COLL_COMM_JOINING;
	init_waitqueue_head(&comm->join_wq);
	spin_lock_init(&comm->lock);
	INIT_LIST_HEAD(&comm->tasks);
	coll_plan_cache_init(&comm->plans);
	hash_add(coll_comms, &comm->node, coll_comm_hash(id));
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
	hash_del(&comm->node);
	coll_comm_put(comm);
}

/**
 * coll_comm_kill() - the communicator is dead for everyone
 * @comm: a communicator the caller holds a reference on
 * @err: negative errno for its in-flight collectives
 *
 * Takes it out of the registry (its id may be used again), marks it dead so
 * that every later submission fails with ECONNRESET, and fails every
 * collective in flight.
 *
 * Locks: takes coll_comms_lock, then comm->lock; the caller holds neither
 * and no task lock.  May sleep.
 */
void coll_comm_kill(struct coll_comm *comm, int err)
{
	struct coll_task *task, *tmp;
	LIST_HEAD(doomed);

	mutex_lock(&coll_comms_lock);
	if (comm->state == COLL_COMM_READY)
		coll_comm_unlist(comm);
	mutex_unlock(&coll_comms_lock);

	spin_lock(&comm->lock);
	comm->dead = true;
	list_for_each_entry(task, &comm->tasks, node) {
		coll_task_get(task);
		list_add_tail(&task->abort_node, &doomed);
	}
	spin_unlock(&comm->lock);

	list_for_each_entry_safe(task, tmp, &doomed, abort_node) {
		list_del(&task->abort_node);
		coll_run_abort(task, err);
		coll_task_put(task);
	}
}

static void coll_member_release(struct kref *kref)
{
	struct coll_member *m = container_of(kref, struct coll_member, kref);

	coll_proc_uncharge(m->proc);
	coll_comm_put(m->comm);
	coll_kvfree(m, sizeof(*m));
}

void coll_member_put(struct coll_member *m)
{
	kref_put(&m->kref, coll_member_release);
}

/* Locks: coll_comms_lock.  Takes @m out of its communicator. */
static void coll_member_remove(struct coll_member *m)
{
	struct coll_comm *comm = m->comm;

	lockdep_assert_held(&coll_comms_lock);
	comm->members[m->rank] = NULL;
	comm->njoined--;
	if (comm->state == COLL_COMM_JOINING && !comm->njoined)
		coll_comm_unlist(comm);
}

/* Leave, for the descriptor's reference on @m, which it drops. */
static void coll_member_leave(struct coll_member *m)
{
	struct coll_comm *comm = m->comm;
	bool kill;

	mutex_lock(&coll_comms_lock);
	kill = comm->state != COLL_COMM_JOINING;
	trace_coll_comm_leave(comm, m->rank, comm->njoined - 1);
	coll_member_remove(m);
	mutex_unlock(&coll_comms_lock);

	if (kill)
		coll_comm_kill(comm, -ECONNRESET);
	coll_member_put(m);
}

static long coll_join_timeout(u32 timeout_ms)
{
	if (!timeout_ms)
		timeout_ms = READ_ONCE(coll_join_timeout_ms);
	return max_t(long, 1, msecs_to_jiffies(timeout_ms));
}

static int coll_comm_check(const struct coll_comm_init *arg)
{
	if (arg->flags)
		return -EOPNOTSUPP;
	if (arg->__reserved)
		return -EINVAL;
	if (arg->nhosts || arg->hosts_uptr)
		return -EOPNOTSUPP;
	if (!arg->nranks || arg->nranks > COLL_MAX_RANKS ||
	    arg->rank >= arg->nranks)
		return -EINVAL;
	return 0;
}

/* Locks: coll_comms_lock.  Enters @m into the communicator of @arg's id. */
static int coll_comm_enter(struct coll_member *m,
			   const struct coll_comm_init *arg)
{
	struct net *net = current->nsproxy->net_ns;
	struct coll_comm *comm;

	lockdep_assert_held(&coll_comms_lock);
	comm = coll_comm_find(net, arg->id);
	if (comm && comm->nranks != arg->nranks)
		return -EPROTO;
	if (comm && (comm->state != COLL_COMM_JOINING ||
		     comm->members[arg->rank]))
		return -EBUSY;
	if (!comm) {
		comm = coll_comm_create(net, arg->id, arg->nranks);
		if (!comm)
			return -ENOMEM;
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
	return 0;
}

/**
 * coll_comm_join() - COLL_COMM_INIT
 * @cf: the caller's descriptor
 * @ucmd: the argument (struct coll_comm_init)
 *
 * The handle is reserved and written to the caller's out_comm before the
 * caller enters the communicator, so an unwritable argument fails with
 * nothing joined; if the join fails later, out_comm gets back the value
 * the caller passed.
 *
 * Locks: takes cf->lock and coll_comms_lock, never both, neither held while
 * waiting for the other ranks.
 *
 * Return: 0 or -errno as documented in the uapi header.
 */
int coll_comm_join(struct coll_file *cf, struct coll_ucmd *ucmd)
{
	struct coll_comm_init *arg = ucmd->cmd;
	struct coll_comm_init __user *uarg = ucmd->ubuf;
	struct coll_member *m;
	struct coll_comm *comm;
	long left;
	u32 handle;
	int ret;

	ret = coll_comm_check(arg);
	if (ret)
		return ret;

	m = coll_kvzalloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	kref_init(&m->kref);		/* the descriptor's */
	m->rank = arg->rank;
	ret = coll_proc_charge(&m->proc);
	if (ret)
		goto err_free_m;

	mutex_lock(&cf->lock);
	ret = xa_alloc_cyclic(&cf->members, &handle, NULL, xa_limit_31b,
			      &cf->member_next, GFP_KERNEL_ACCOUNT);
	mutex_unlock(&cf->lock);
	if (ret < 0)
		goto err_uncharge;

	/* The output first: nothing is published if it cannot be written. */
	if (put_user(handle, &uarg->out_comm)) {
		ret = -EFAULT;
		goto err_erase;
	}

	mutex_lock(&coll_comms_lock);
	ret = coll_comm_enter(m, arg);
	mutex_unlock(&coll_comms_lock);
	if (ret)
		goto err_restore;
	comm = m->comm;

	/*
	 * The handle stays reserved (a NULL entry) until the join succeeds,
	 * so no other thread of this descriptor can reach @m meanwhile.
	 */
	left = wait_event_killable_timeout(comm->join_wq,
					   READ_ONCE(comm->state) !=
					   COLL_COMM_JOINING,
					   coll_join_timeout(arg->timeout_ms));
	mutex_lock(&coll_comms_lock);
	if (comm->state != COLL_COMM_JOINING) {
		mutex_unlock(&coll_comms_lock);
		/* Storing into a reserved entry allocates nothing. */
		mutex_lock(&cf->lock);
		xa_store(&cf->members, handle, m, GFP_KERNEL_ACCOUNT);
		mutex_unlock(&cf->lock);
		return 0;
	}
	/* Timed out or killed: undo the join as if it never happened. */
	ret = left < 0 ? -EINTR : -ETIMEDOUT;
	trace_coll_comm_leave(comm, m->rank, comm->njoined - 1);
	coll_member_remove(m);
	mutex_unlock(&coll_comms_lock);

err_restore:
	/* Best effort: give the caller back its own value. */
	(void)put_user(arg->out_comm, &uarg->out_comm);
err_erase:
	mutex_lock(&cf->lock);
	xa_erase(&cf->members, handle);
	mutex_unlock(&cf->lock);
	if (m->comm) {
		coll_member_put(m);	/* drops the comm and the charge */
		return ret;
	}
err_uncharge:
	coll_proc_uncharge(m->proc);
err_free_m:
	coll_kvfree(m, sizeof(*m));
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
