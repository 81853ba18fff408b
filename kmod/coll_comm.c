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
#include <asm/unaligned.h>
#include <linux/hashtable.h>
#include <linux/jiffies.h>
#include <linux/nsproxy.h>
#include <linux/random.h>
#include <linux/sched/signal.h>
#include <linux/siphash.h>
#include <linux/cred.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>

#include "coll_loc.h"
#include "coll_trace.h"

#define COLL_COMMS_BITS 8

static DEFINE_HASHTABLE(coll_comms, COLL_COMMS_BITS);
static DEFINE_HASHTABLE(coll_comms_tag, COLL_COMMS_BITS);
static siphash_key_t coll_comms_key __read_mostly;
static atomic_t coll_comm_serial = ATOMIC_INIT(0);
static DEFINE_MUTEX(coll_comms_lock);

/*
 * Every communicator alive, in the order of their serial numbers, for
 * netlink: also those that left the registry and wait for their members
 * to let go.  A spinlock (irqsave): the last reference may go anywhere.
 */
static LIST_HEAD(coll_comms_all);
static DEFINE_SPINLOCK(coll_comms_all_lock);

int coll_comm_init_registry(void)
{
	get_random_bytes(&coll_comms_key, sizeof(coll_comms_key));
	return 0;
}

static u64 coll_comm_hash(const u8 *id)
{
	return siphash(id, COLL_ID_BYTES, &coll_comms_key);
}

static void coll_comm_free_hosts(struct coll_comm *comm)
{
	u32 h;

	if (!comm->hosts)
		return;
	for (h = 0; comm->early && h < comm->hosts->nhosts; h++) {
		struct coll_msg *t, *n;

		list_for_each_entry_safe(t, n, &comm->early[h], node)
			coll_msg_free(t);
	}
	coll_kvfree(comm->early, comm->hosts->nhosts * sizeof(*comm->early));
	coll_kvfree(comm->links, comm->hosts->nhosts * sizeof(*comm->links));
	coll_auth_destroy(&comm->auth);
	coll_hosts_free(comm->hosts);
}

static void coll_comm_release(struct kref *kref)
{
	struct coll_comm *comm = container_of(kref, struct coll_comm, kref);
	unsigned long flags;

	WARN_ON(!list_empty(&comm->tasks));
	spin_lock_irqsave(&coll_comms_all_lock, flags);
	list_del(&comm->all_node);
	spin_unlock_irqrestore(&coll_comms_all_lock, flags);
	coll_nl_notify(comm, COLLECTIVE_EVENT_DESTROYED, comm->error, NULL, 0,
		       0, GFP_ATOMIC);
	coll_kvfree(comm->stats, sizeof(*comm->stats));
	coll_eager_free(comm);
	coll_map_free(comm);
	coll_plan_cache_flush(&comm->plans);
	coll_comm_free_hosts(comm);
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

/**
 * coll_comm_find_tag() - the communicator a peer host's HELLO names
 * @net: the namespace the connection came in
 * @tag: its tag
 *
 * Locks: takes coll_comms_lock.
 *
 * Return: the communicator with a reference, or NULL.
 */
struct coll_comm *coll_comm_find_tag(struct net *net, const u8 *tag)
{
	struct coll_comm *comm, *found = NULL;
	u64 key = get_unaligned((const u64 *)tag);

	mutex_lock(&coll_comms_lock);
	hash_for_each_possible(coll_comms_tag, comm, tag_node, key) {
		if (net_eq(comm->net, net) &&
		    !crypto_memneq(comm->auth.tag, tag, COLL_WIRE_TAG_BYTES)) {
			kref_get(&comm->kref);
			found = comm;
			break;
		}
	}
	mutex_unlock(&coll_comms_lock);
	return found;
}

/* The parts of a communicator that spans hosts.  Takes @hosts. */
static int coll_comm_set_hosts(struct coll_comm *comm,
			       struct coll_hosts *hosts)
{
	u32 nh = hosts->nhosts;
	int ret;

	comm->hosts = hosts;
	mutex_init(&comm->links_lock);
	comm->links = coll_kvzalloc(nh * sizeof(*comm->links));
	comm->early = coll_kvzalloc(nh * sizeof(*comm->early));
	if (!comm->links || !comm->early)
		return -ENOMEM;
	while (nh--)
		INIT_LIST_HEAD(&comm->early[nh]);
	ret = coll_auth_init(&comm->auth, comm->id);
	if (!ret)
		ret = coll_hosts_layout(hosts, &comm->auth);
	return ret;
}

/* Locks: coll_comms_lock.  Takes @hosts (NULL: one host). */
static struct coll_comm *coll_comm_create(struct net *net, const u8 *id,
					  u32 nranks, struct coll_hosts *hosts,
					  int *err)
{
	struct coll_comm *comm;
	unsigned long flags;

	lockdep_assert_held(&coll_comms_lock);
	*err = -ENOMEM;
	comm = coll_kvzalloc(sizeof(*comm));
	if (!comm) {
		coll_hosts_free(hosts);
		return NULL;
	}
	comm->members = coll_kvzalloc(nranks * sizeof(*comm->members));
	comm->stats = coll_kvzalloc(sizeof(*comm->stats));
	if (!comm->members || !comm->stats) {
		coll_hosts_free(hosts);
		coll_kvfree(comm->stats, sizeof(*comm->stats));
		coll_kvfree(comm->members, nranks * sizeof(*comm->members));
		coll_kvfree(comm, sizeof(*comm));
		return NULL;
	}
	kref_init(&comm->kref);		/* the registry's reference */
	comm->net = get_net(net);
	memcpy(comm->id, id, COLL_ID_BYTES);
	comm->nranks = nranks;
	comm->serial = atomic_inc_return(&coll_comm_serial);
	comm->owner = current_euid();
	comm->born = jiffies;
	comm->state = COLL_COMM_JOINING;
	init_waitqueue_head(&comm->join_wq);
	spin_lock_init(&comm->lock);
	INIT_LIST_HEAD(&comm->tasks);
	coll_plan_cache_init(&comm->plans);
	atomic64_inc(&coll_stats.comms);
	/* serials grow under coll_comms_lock: the list stays in their order */
	spin_lock_irqsave(&coll_comms_all_lock, flags);
	list_add_tail(&comm->all_node, &coll_comms_all);
	spin_unlock_irqrestore(&coll_comms_all_lock, flags);
	if (hosts) {
		*err = coll_comm_set_hosts(comm, hosts);
		if (*err) {
			coll_comm_put(comm);
			return NULL;
		}
		hash_add(coll_comms_tag, &comm->tag_node,
			 get_unaligned((const u64 *)comm->auth.tag));
	}
	hash_add(coll_comms, &comm->node, coll_comm_hash(id));
	coll_nl_notify(comm, COLLECTIVE_EVENT_CREATED, 0, NULL, 0, 0,
		       GFP_KERNEL);
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
	if (comm->hosts)
		hash_del(&comm->tag_node);
	coll_comm_put(comm);
}

/* No host spared, or no host to blame: coll_comm_end(). */
#define COLL_NO_HOST	U32_MAX

/*
 * Take @comm out of the registry (its id may be used again), mark it dead
 * (the first to do so says why: the notification FAILED, with @why and
 * the peer host @from whose link it came from, unless COLL_NO_HOST)
 * so that every later submission fails with ECONNRESET, and fail its
 * collectives in flight with @err, but those that have heard the last of
 * peer host @spare (coll_xhost_heard_last()).  Its links close now, or
 * once the last collective spared has ended (coll_comm_drained()).
 *
 * Locks: takes coll_comms_lock, then comm->lock and task locks; the caller
 * holds none of them.  May sleep.
 */
static void coll_comm_end(struct coll_comm *comm, int err, u32 spare,
			  u32 from, const char *why)
{
	struct coll_task *task, *tmp;
	LIST_HEAD(doomed);
	u32 spared = 0;
	bool first;

	mutex_lock(&coll_comms_lock);
	if (comm->state == COLL_COMM_READY ||
	    comm->state == COLL_COMM_CONNECTING)
		coll_comm_unlist(comm);
	mutex_unlock(&coll_comms_lock);

	spin_lock(&comm->lock);
	first = !comm->dead;
	comm->dead = true;
	if (first)
		comm->error = err;
	list_for_each_entry(task, &comm->tasks, node) {
		if (spare != COLL_NO_HOST &&
		    coll_xhost_heard_last(task, spare)) {
			spared++;
			continue;
		}
		coll_task_get(task);
		list_add_tail(&task->abort_node, &doomed);
	}
	spin_unlock(&comm->lock);
	coll_eager_wake(comm);
	coll_map_kill(comm);
	if (first)
		coll_nl_notify(comm, COLLECTIVE_EVENT_FAILED, err, why, from,
			       0, GFP_KERNEL);
	if (!spared)
		coll_links_shutdown_async(comm);

	list_for_each_entry_safe(task, tmp, &doomed, abort_node) {
		list_del(&task->abort_node);
		coll_run_abort(task, err);
		coll_task_put(task);
	}
}

/**
 * coll_comm_kill_why() - the communicator is dead for everyone
 * @comm: a communicator the caller holds a reference on
 * @err: negative errno for its in-flight collectives
 * @why: what happened, for the notification (a constant string)
 *
 * Every later submission fails with ECONNRESET, every collective in
 * flight with @err; the links close.
 *
 * Locks: as coll_comm_end().  May sleep.
 */
void coll_comm_kill_why(struct coll_comm *comm, int err, const char *why)
{
	coll_comm_end(comm, err, COLL_NO_HOST, COLL_NO_HOST, why);
}

/**
 * coll_comm_kill_link() - coll_comm_kill_why(), because the link to @host
 * failed
 * @comm: a communicator the caller holds a reference on
 * @err: negative errno for its in-flight collectives
 * @host: the peer host
 * @why: what happened to the link (a constant string)
 *
 * Locks: as coll_comm_end().  May sleep.
 */
void coll_comm_kill_link(struct coll_comm *comm, int err, u32 host,
			 const char *why)
{
	coll_comm_end(comm, err, COLL_NO_HOST, host, why);
}

/**
 * coll_comm_peer_left() - a rank of peer host @host left in good order (BYE)
 * @comm: a communicator the caller holds a reference on, READY
 * @host: the peer host
 *
 * Everything the peer sent came before its BYE.  A collective that has
 * finished every round here and has the peer's READY for its end needs
 * nothing more from it, only the other peers' last READY: it may still
 * end well (with three hosts, the first to finish may leave before the
 * second's last READY reaches the third).  Every other collective fails
 * with ECONNRESET, as does every later submission; the other links close
 * once the last survivor has ended (coll_comm_drained()), or when one of
 * them fails.
 *
 * Locks: as coll_comm_end().  May sleep.
 */
void coll_comm_peer_left(struct coll_comm *comm, u32 host)
{
	coll_comm_end(comm, -ECONNRESET, host, host,
		      "a rank of a peer host left");
}

/**
 * coll_comm_drained() - a collective left the in-flight list
 * @comm: its communicator
 *
 * A dead communicator whose last collective ended closes its links (those
 * coll_comm_peer_left() kept for the survivors).  Any context that may
 * queue work.
 */
void coll_comm_drained(struct coll_comm *comm)
{
	bool empty;

	spin_lock(&comm->lock);
	empty = comm->dead && list_empty(&comm->tasks);
	spin_unlock(&comm->lock);
	if (empty)
		coll_links_shutdown_async(comm);
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

/**
 * coll_member_get() - the caller's membership of a handle, referenced
 * @cf: the caller's descriptor
 * @handle: from COLL_COMM_INIT
 *
 * Locks: takes cf->lock.  Return: the membership (drop it with
 * coll_member_put()), or NULL for a handle the descriptor does not hold.
 */
struct coll_member *coll_member_get(struct coll_file *cf, u32 handle)
{
	struct coll_member *m;

	mutex_lock(&cf->lock);
	m = xa_load(&cf->members, handle);
	if (m)
		kref_get(&m->kref);
	mutex_unlock(&cf->lock);
	return m;
}

/* Locks: coll_comms_lock.  Takes @m out of its communicator. */
static void coll_member_remove(struct coll_member *m)
{
	struct coll_comm *comm = m->comm;

	lockdep_assert_held(&coll_comms_lock);
	comm->members[m->rank] = NULL;
	comm->njoined--;
	if (!comm->njoined && (comm->state == COLL_COMM_JOINING ||
			       comm->state == COLL_COMM_CONNECTING))
		coll_comm_unlist(comm);
}

/*
 * Leave, for the descriptor's reference on @m, which it drops; @why says
 * how, should that end the communicator for the others.
 */
static void coll_member_leave(struct coll_member *m, const char *why)
{
	struct coll_comm *comm = m->comm;
	bool kill;

	mutex_lock(&coll_comms_lock);
	kill = comm->state == COLL_COMM_READY;
	trace_coll_comm_leave(comm, m->rank, comm->njoined - 1);
	coll_member_remove(m);
	mutex_unlock(&coll_comms_lock);

	if (kill)
		coll_comm_kill_why(comm, -ECONNRESET, why);
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
	if (arg->flags & ~(COLL_COMM_F_ALL | COLL_COMM_F_MAP))
		return -EOPNOTSUPP;
	if (arg->__reserved)
		return -EINVAL;
	if (!arg->nranks || arg->nranks > COLL_MAX_RANKS ||
	    arg->rank >= arg->nranks)
		return -EINVAL;
	if (!arg->nhosts && ((arg->flags & ~COLL_COMM_F_MAP) ||
			     arg->hosts_uptr || arg->rank_hosts_uptr))
		return -EINVAL;
	if (arg->nhosts && (arg->flags & COLL_COMM_F_MAP))
		return -EINVAL;
	if ((arg->flags & COLL_COMM_F_ALL) == COLL_COMM_F_ALL)
		return -EINVAL;
	return 0;
}

/* How many of the communicator's ranks join here. */
u32 coll_comm_nlocal(const struct coll_comm *comm)
{
	return comm->hosts ? comm->hosts->nlocal : comm->nranks;
}

/*
 * Locks: coll_comms_lock.  Every rank of this host is in: READY, or (ranks
 * on other hosts) CONNECTING until every peer host is linked.
 */
static void coll_comm_local_complete(struct coll_comm *comm,
				     unsigned long deadline)
{
	lockdep_assert_held(&coll_comms_lock);
	if (!comm->hosts || comm->hosts->nhosts == 1) {
		comm->state = COLL_COMM_READY;
		comm->formed = true;
		wake_up_all(&comm->join_wq);
		coll_nl_notify(comm, COLLECTIVE_EVENT_READY, 0, NULL, 0, 0,
			       GFP_KERNEL);
		return;
	}
	comm->state = COLL_COMM_CONNECTING;
	comm->join_deadline = deadline;
	coll_links_connect(comm);
}

/**
 * coll_comm_links_up() - every peer host is linked: the communicator is READY
 * @comm: the communicator
 *
 * Locks: takes coll_comms_lock.
 */
void coll_comm_links_up(struct coll_comm *comm)
{
	bool ready = false;
	u32 h;

	mutex_lock(&coll_comms_lock);
	if (comm->state == COLL_COMM_CONNECTING && !comm->join_err) {
		comm->state = COLL_COMM_READY;
		comm->formed = true;
		ready = true;
		pr_debug("comm %u: %u hosts linked\n", comm->serial,
			 comm->hosts->nhosts);
	}
	mutex_unlock(&coll_comms_lock);
	wake_up_all(&comm->join_wq);
	if (!ready)
		return;
	/* the peers that fell back from RDMA, then READY */
	mutex_lock(&comm->links_lock);
	for (h = 0; h < comm->hosts->nhosts; h++) {
		struct coll_link *l = comm->links[h];

		/* TCP because this host or the peer asked is no fallback */
		if (l && l->fallback > COLL_FALLBACK_ASKED)
			coll_nl_notify(comm, COLLECTIVE_EVENT_FALLBACK, 0,
				       NULL, h, l->fallback, GFP_KERNEL);
	}
	mutex_unlock(&comm->links_lock);
	coll_nl_notify(comm, COLLECTIVE_EVENT_READY, 0, NULL, 0, 0,
		       GFP_KERNEL);
}

/**
 * coll_comm_join_failed() - the peer hosts cannot be joined: fail every
 * local joiner with @err
 * @comm: the communicator, CONNECTING
 * @err: -ETIMEDOUT, -EPROTO, -EHOSTUNREACH, ...
 *
 * Locks: takes coll_comms_lock.
 */
void coll_comm_join_failed(struct coll_comm *comm, int err)
{
	bool first = false;

	mutex_lock(&coll_comms_lock);
	if (comm->state == COLL_COMM_CONNECTING && !comm->join_err) {
		comm->join_err = err;
		first = true;
	}
	mutex_unlock(&coll_comms_lock);
	if (first)
		coll_nl_notify(comm, COLLECTIVE_EVENT_FAILED, err,
			       "the peer hosts could not be joined",
			       COLL_NO_HOST, 0,
			       GFP_KERNEL);
	coll_links_shutdown_async(comm);
	wake_up_all(&comm->join_wq);
}

/*
 * Locks: coll_comms_lock.  Enters @m into the communicator of @arg's id.
 * Takes @hosts (the caller's tables, or NULL for one host).
 */
static int coll_comm_enter(struct coll_member *m,
			   const struct coll_comm_init *arg,
			   struct coll_hosts *hosts, unsigned long deadline)
{
	struct net *net = current->nsproxy->net_ns;
	struct coll_comm *comm;
	int err;

	lockdep_assert_held(&coll_comms_lock);
	comm = coll_comm_find(net, arg->id);
	if (comm) {
		bool same = !comm->hosts == !hosts &&
			    (!hosts || coll_hosts_equal(comm->hosts, hosts));

		coll_hosts_free(hosts);
		if (comm->nranks != arg->nranks || !same ||
		    comm->map_asked != !!(arg->flags & COLL_COMM_F_MAP))
			return -EPROTO;
		if (comm->state != COLL_COMM_JOINING ||
		    comm->members[arg->rank])
			return -EBUSY;
	} else {
		comm = coll_comm_create(net, arg->id, arg->nranks, hosts,
					&err);
		if (!comm)
			return err;
		if (arg->flags & COLL_COMM_F_MAP) {
			comm->map_asked = true;
			comm->map_bytes = coll_map_slot_bytes();
			comm->map_slots =
				coll_map_nslots(coll_comm_nlocal(comm));
		}
	}
	kref_get(&comm->kref);		/* the member's reference */
	m->comm = comm;
	comm->members[m->rank] = m;
	comm->njoined++;
	if (comm->njoined == coll_comm_nlocal(comm))
		coll_comm_local_complete(comm, deadline);
	trace_coll_comm_join(comm, m->rank, comm->njoined);
	return 0;
}

static bool coll_comm_joined(struct coll_comm *comm)
{
	return READ_ONCE(comm->formed) || READ_ONCE(comm->join_err) ||
	       READ_ONCE(comm->state) == COLL_COMM_GONE;
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
	long timeout = coll_join_timeout(arg->timeout_ms);
	struct coll_hosts *hosts = NULL;
	struct coll_member *m;
	struct coll_comm *comm;
	long left;
	u32 handle;
	int ret;

	ret = coll_comm_check(arg);
	if (ret)
		return ret;
	if (arg->nhosts) {
		ret = coll_hosts_from_user(arg, &hosts);
		if (ret)
			return ret;
		/*
		 * Peers will connect to this namespace's listener.  Set up
		 * before coll_comms_lock: rdma_cm calls coll_rdma_request()
		 * with its handler mutex held, and that takes coll_comms_lock.
		 */
		if (hosts->nhosts > 1) {
			ret = coll_net_listen(current->nsproxy->net_ns);
			if (ret) {
				coll_hosts_free(hosts);
				return ret;
			}
		}
	}

	m = coll_kvzalloc(sizeof(*m));
	if (!m) {
		coll_hosts_free(hosts);
		return -ENOMEM;
	}
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
	ret = coll_comm_enter(m, arg, hosts, jiffies + timeout);
	hosts = NULL;
	mutex_unlock(&coll_comms_lock);
	if (ret)
		goto err_restore;
	comm = m->comm;

	/*
	 * The handle stays reserved (a NULL entry) until the join succeeds,
	 * so no other thread of this descriptor can reach @m meanwhile.
	 */
	left = wait_event_killable_timeout(comm->join_wq,
					   coll_comm_joined(comm), timeout);
	mutex_lock(&coll_comms_lock);
	/*
	 * Formed is success even if a peer has left since (the membership is
	 * then dead: ECONNRESET at the first collective), as it would be had
	 * this thread run a moment earlier.
	 */
	if (comm->formed && !comm->join_err) {
		mutex_unlock(&coll_comms_lock);
		/* Storing into a reserved entry allocates nothing. */
		mutex_lock(&cf->lock);
		xa_store(&cf->members, handle, m, GFP_KERNEL_ACCOUNT);
		mutex_unlock(&cf->lock);
		return 0;
	}
	/* Timed out, killed or failed: undo the join as if it never happened. */
	ret = comm->join_err ?: left < 0 ? -EINTR : -ETIMEDOUT;
	if (comm->state == COLL_COMM_CONNECTING && !comm->join_err)
		comm->join_err = ret;	/* the other local joiners too */
	trace_coll_comm_leave(comm, m->rank, comm->njoined - 1);
	coll_member_remove(m);
	mutex_unlock(&coll_comms_lock);
	if (comm->hosts) {
		coll_links_shutdown_async(comm);
		wake_up_all(&comm->join_wq);
	}

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
	coll_hosts_free(hosts);
	coll_kvfree(m, sizeof(*m));
	return ret;
}

/**
 * coll_comm_peer_info() - what COLL_COMM_QUERY and netlink say of host @h
 * @comm: the communicator (a reference held)
 * @h: the host (0 for a communicator on one host)
 * @pi: filled
 *
 * Locks: takes comm->links_lock.
 */
void coll_comm_peer_info(struct coll_comm *comm, u32 h,
			 struct coll_peer_info *pi)
{
	const struct coll_hosts *hs = comm->hosts;
	struct coll_link *l = NULL;

	memset(pi, 0, sizeof(*pi));
	pi->host = h;
	if (!hs) {
		pi->nranks = comm->nranks;
		pi->transport = COLL_TRANSPORT_SELF;
		return;
	}
	pi->nranks = hs->host_nranks[h];
	memcpy(pi->addr, hs->tab[h].addr, sizeof(pi->addr));
	pi->port = hs->tab[h].port;
	if (h == hs->self) {
		pi->transport = COLL_TRANSPORT_SELF;
		return;
	}
	pi->transport = COLL_TRANSPORT_NONE;
	mutex_lock(&comm->links_lock);
	l = comm->links[h];
	if (l) {
		pi->transport = l->transport;
		pi->fallback = l->fallback;
		pi->bytes_sent = atomic64_read(&l->bytes_tx);
		pi->bytes_received = atomic64_read(&l->bytes_rx);
		if (l->ops->info)
			l->ops->info(l, pi);
	}
	mutex_unlock(&comm->links_lock);
}

/**
 * coll_comm_query() - COLL_COMM_QUERY
 * @cf: the caller's descriptor
 * @ucmd: the argument (struct coll_comm_query)
 *
 * Locks: takes cf->lock, then a comm's links_lock.
 *
 * Return: 0, -ENOENT, -EINVAL, -EFAULT.
 */
int coll_comm_query(struct coll_file *cf, struct coll_ucmd *ucmd)
{
	struct coll_comm_query *arg = ucmd->cmd;
	struct coll_peer_info pi;
	struct coll_member *m;
	struct coll_comm *comm;
	u32 h, nh, n;
	int ret = 0;

	if (arg->flags)
		return -EOPNOTSUPP;
	if (arg->__reserved || (arg->npeers && !arg->peers_uptr) ||
	    (arg->npeers && arg->peer_size < offsetofend(struct coll_peer_info,
							 bytes_received)))
		return -EINVAL;
	m = coll_member_get(cf, arg->comm);
	if (!m)
		return -ENOENT;
	comm = m->comm;
	nh = comm->hosts ? comm->hosts->nhosts : 1;
	n = min(arg->npeers, nh);
	for (h = 0; h < n && !ret; h++) {
		void __user *dst = u64_to_user_ptr(arg->peers_uptr +
						   (u64)h * arg->peer_size);

		coll_comm_peer_info(comm, comm->hosts ? h : 0, &pi);
		if (copy_to_user(dst, &pi, min_t(u32, arg->peer_size,
						 sizeof(pi))) ||
		    (arg->peer_size > sizeof(pi) &&
		     clear_user(dst + sizeof(pi),
				arg->peer_size - sizeof(pi))))
			ret = -EFAULT;
	}
	if (!ret) {
		arg->out_nranks = comm->nranks;
		arg->out_rank = m->rank;
		arg->out_nhosts = nh;
		arg->out_host = comm->hosts ? comm->hosts->self : 0;
		arg->out_local_ranks = coll_comm_nlocal(comm);
		arg->out_serial = comm->serial;
		if (copy_to_user(ucmd->ubuf, arg,
				 min_t(u32, ucmd->usize, sizeof(*arg))))
			ret = -EFAULT;
	}
	coll_member_put(m);
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
	coll_member_leave(m, "a rank left (COLL_COMM_DESTROY)");
	return 0;
}

/*
 * Leave every communicator of a descriptor being released, or of one an
 * exiting process leaves with io_uring commands in flight (coll_uring.c),
 * which COLL_COMM_DESTROY of another process may race: whoever erases a
 * membership leaves it.
 *
 * Locks: takes cf->lock, then (not nested) coll_comms_lock.
 */
void coll_comm_leave_all(struct coll_file *cf)
{
	struct coll_member *m;
	unsigned long index;
	bool mine;

	xa_for_each(&cf->members, index, m) {
		mutex_lock(&cf->lock);
		mine = xa_erase(&cf->members, index) == m;
		mutex_unlock(&cf->lock);
		if (mine)
			coll_member_leave(m, "a rank closed its descriptor or died");
	}
}

/* ---- for netlink (coll_netlink.c) --------------------------------------- */

/**
 * coll_comm_next() - the communicator of @net after serial @after
 * @net: the namespace
 * @after: a serial number, 0 for the first
 *
 * Locks: takes coll_comms_all_lock.
 *
 * Return: the communicator with the lowest serial above @after, with a
 * reference, or NULL.
 */
struct coll_comm *coll_comm_next(struct net *net, u32 after)
{
	struct coll_comm *comm, *found = NULL;
	unsigned long flags;

	spin_lock_irqsave(&coll_comms_all_lock, flags);
	list_for_each_entry(comm, &coll_comms_all, all_node) {
		if (comm->serial <= after || !net_eq(comm->net, net))
			continue;
		if (kref_get_unless_zero(&comm->kref)) {
			found = comm;
			break;
		}
	}
	spin_unlock_irqrestore(&coll_comms_all_lock, flags);
	return found;
}

/**
 * coll_comm_get_serial() - the communicator of @net with serial @serial
 * @net: the namespace
 * @serial: its serial number
 *
 * Locks: takes coll_comms_all_lock.
 *
 * Return: it with a reference, or NULL.
 */
struct coll_comm *coll_comm_get_serial(struct net *net, u32 serial)
{
	struct coll_comm *comm = serial ? coll_comm_next(net, serial - 1) :
				 NULL;

	if (comm && comm->serial != serial) {
		coll_comm_put(comm);
		comm = NULL;
	}
	return comm;
}

/**
 * coll_comm_nl_state() - where a communicator is, as netlink says it
 * @comm: the communicator (a reference held)
 * @njoined: set to the local ranks in it now
 * @error: set to why it died or failed to join (negative errno), or 0
 *
 * Locks: takes coll_comms_lock, then comm->lock.
 *
 * Return: enum collective_comm_state.
 */
u32 coll_comm_nl_state(struct coll_comm *comm, u32 *njoined, int *error)
{
	static const u32 map[] = {
		[COLL_COMM_JOINING] = COLLECTIVE_COMM_STATE_JOINING,
		[COLL_COMM_CONNECTING] = COLLECTIVE_COMM_STATE_CONNECTING,
		[COLL_COMM_READY] = COLLECTIVE_COMM_STATE_READY,
		[COLL_COMM_GONE] = COLLECTIVE_COMM_STATE_GONE,
	};
	u32 state;

	mutex_lock(&coll_comms_lock);
	state = map[comm->state];
	*njoined = comm->njoined;
	*error = comm->join_err;
	spin_lock(&comm->lock);
	if (comm->dead) {
		state = COLLECTIVE_COMM_STATE_DEAD;
		*error = comm->error;
	}
	spin_unlock(&comm->lock);
	mutex_unlock(&coll_comms_lock);
	return state;
}
