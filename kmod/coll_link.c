// SPDX-License-Identifier: GPL-2.0
/*
 * Links: the connection of a communicator to one peer host's module, over
 * whichever transport reaches it (coll_xport_tcp.c, coll_xport_rdma.c).
 *
 * The host with the lower index connects (coll_links_connect(), from a
 * work item once every local rank has joined); the other accepts
 * (coll_net.c).  A link is attached to its communicator only once the peer
 * has proven that it knows the id (coll_wire.h); when the last peer is
 * attached the communicator is READY.
 *
 * Everything a link receives goes through coll_link_recv(): the header is
 * checked here, the payload by the handler of its type (coll_xhost.c); a
 * frame that does not validate fails the link, which kills the
 * communicator (ECONNRESET) and closes the connection.  A link that hears
 * nothing for peer_timeout_ms fails the same way; each side pings the other
 * four times per timeout when it has nothing else to say.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/slab.h>

#include "coll_loc.h"

struct coll_msg *coll_msg_alloc(u32 len)
{
	struct coll_msg *m;

	if (len > COLL_WIRE_MAX_PAYLOAD)
		return NULL;
	m = kvzalloc(struct_size(m, data, len), GFP_KERNEL | __GFP_NOWARN);
	if (m) {
		INIT_LIST_HEAD(&m->node);
		m->len = len;
	}
	return m;
}

void coll_msg_free(struct coll_msg *m)
{
	kvfree(m);
}

static unsigned long coll_link_timeout(void)
{
	return msecs_to_jiffies(max_t(unsigned int, 100,
				      READ_ONCE(coll_peer_timeout_ms)));
}

static void coll_link_discard_work(struct work_struct *work);

static void coll_link_hb(struct work_struct *work)
{
	struct coll_link *l = container_of(to_delayed_work(work),
					   struct coll_link, hb_work);
	unsigned long timeout = coll_link_timeout();

	if (READ_ONCE(l->dead))
		return;
	if (!READ_ONCE(l->attached)) {
		/* an accepted connection whose peer never proved itself */
		if (time_after(jiffies, l->born + timeout))
			coll_link_fail(l, -ETIMEDOUT, "no proof from the peer");
		else
			queue_delayed_work(coll_wq, &l->hb_work, timeout / 4 ?: 1);
		return;
	}
	if (time_after(jiffies, READ_ONCE(l->last_rx) + timeout)) {
		coll_link_fail(l, -ECONNRESET, "no word within peer_timeout_ms");
		return;
	}
	coll_link_send(l, COLL_MSG_PING, 0, 0, 0, NULL, 0);
	queue_delayed_work(coll_wq, &l->hb_work, timeout / 4 ?: 1);
}

void coll_link_init(struct coll_link *l, struct coll_comm *comm, u32 host,
		    const struct coll_link_ops *ops)
{
	kref_init(&l->kref);
	kref_get(&comm->kref);
	l->comm = comm;
	l->host = host;
	l->ops = ops;
	spin_lock_init(&l->lock);
	l->last_rx = jiffies;
	l->born = jiffies;
	l->max_eager = COLL_WIRE_MAX_PAYLOAD / 2;
	INIT_DELAYED_WORK(&l->hb_work, coll_link_hb);
	atomic64_set(&l->bytes_tx, 0);
	atomic64_set(&l->bytes_rx, 0);
}

static void coll_link_release(struct kref *kref)
{
	struct coll_link *l = container_of(kref, struct coll_link, kref);
	struct coll_comm *comm = l->comm;

	l->ops->free(l);
	coll_comm_put(comm);
}

void coll_link_get(struct coll_link *l)
{
	kref_get(&l->kref);
}

void coll_link_put(struct coll_link *l)
{
	kref_put(&l->kref, coll_link_release);
}

/**
 * coll_link_send() - send a frame
 * @l: the link
 * @type: enum coll_msg_type
 * @seq: the collective
 * @round: its round
 * @arg: type-specific
 * @payload: bytes that follow the header, or NULL
 * @len: their length
 *
 * Return: 0, or -ENOMEM, or -ECONNRESET for a dead link.
 */
int coll_link_send(struct coll_link *l, u8 type, u64 seq, u32 round, u64 arg,
		   const void *payload, u32 len)
{
	struct coll_msg *m;

	if (READ_ONCE(l->dead))
		return -ECONNRESET;
	m = coll_msg_alloc(len);
	if (!m)
		return -ENOMEM;
	m->hdr.magic = cpu_to_le32(COLL_WIRE_MAGIC);
	m->hdr.type = type;
	m->hdr.len = cpu_to_le32(len);
	m->hdr.round = cpu_to_le32(round);
	m->hdr.seq = cpu_to_le64(seq);
	m->hdr.arg = cpu_to_le64(arg);
	if (len)
		memcpy(m->data, payload, len);
	return l->ops->send(l, m);
}

/**
 * coll_link_fail() - the link is broken: so is the communicator
 * @l: the link
 * @err: what its collectives fail with
 * @why: for the log (rate limited)
 *
 * Safe from any context that may sleep.  The transport's shutdown runs
 * from coll_comm_kill_link() through coll_links_shutdown().
 */
void coll_link_fail(struct coll_link *l, int err, const char *why)
{
	struct coll_comm *comm = l->comm;
	bool first, attached;

	/* dead and attached together: pairs with coll_link_attach() */
	spin_lock(&l->lock);
	first = !l->dead;
	l->dead = true;
	attached = l->attached;
	spin_unlock(&l->lock);
	if (!first)
		return;
	if (!attached) {
		/*
		 * Not the communicator's yet: its connector discards it, or,
		 * for an accepted connection that no one owns, a work item.
		 */
		if (!l->owned) {
			coll_link_get(l);
			INIT_WORK(&l->discard_work, coll_link_discard_work);
			queue_work(coll_wq, &l->discard_work);
		}
		return;
	}
	if (err == -ESHUTDOWN)		/* an orderly leave: not news */
		pr_debug("comm %u: host %u (%s): %s\n", comm->serial,
			 l->host, l->ops->name, why);
	else
		pr_warn_ratelimited("comm %u: host %u (%s): %s\n",
				    comm->serial, l->host, l->ops->name, why);
	if (READ_ONCE(comm->state) == COLL_COMM_CONNECTING)
		coll_comm_join_failed(comm, err == -ESHUTDOWN ?
				      -ECONNRESET : err);
	else if (err == -ESHUTDOWN)
		coll_comm_peer_left(comm, l->host);
	else
		coll_comm_kill_link(comm, err, l->host, why);
}

/**
 * coll_link_recv() - a frame arrived
 * @l: the link
 * @m: the frame; consumed
 *
 * Return: 0, or -EPROTO if it does not validate (the caller then fails the
 * link).
 */
int coll_link_recv(struct coll_link *l, struct coll_msg *m)
{
	const struct coll_wire_hdr *h = &m->hdr;
	int ret = 0;

	WRITE_ONCE(l->last_rx, jiffies);
	atomic64_add(sizeof(*h) + m->len, &l->bytes_rx);
	if (le32_to_cpu(h->magic) != COLL_WIRE_MAGIC || h->flags ||
	    h->credits || le32_to_cpu(h->len) != m->len) {
		coll_msg_free(m);
		return -EPROTO;
	}
	switch (h->type) {
	case COLL_MSG_READY:
		return coll_xhost_on_ready(l, m);
	case COLL_MSG_ABORT:
		return coll_xhost_on_abort(l, m);
	case COLL_MSG_PING:
		if (m->len || h->seq || h->round || h->arg)
			ret = -EPROTO;
		break;
	case COLL_MSG_BYE:
		if (m->len)
			ret = -EPROTO;
		else
			coll_link_fail(l, -ESHUTDOWN, "a rank of the peer left");
		break;
	default:
		/* READ_REQ/READ_RESP/CREDIT are the transport's own. */
		ret = -EPROTO;
		break;
	}
	coll_msg_free(m);
	return ret;
}

/**
 * coll_link_attach() - a link has authenticated its peer: put it to work
 * @comm: the communicator (the caller holds a reference)
 * @l: the link, whose reference passes to the communicator
 *
 * A link that failed meanwhile (an accepted one can time out while its
 * PROOF is on the way) is not attached: whoever failed it saw it
 * unattached and has it discarded.
 *
 * Locks: takes comm->links_lock, then l->lock.
 *
 * Return: 0, or -EBUSY if that peer already has a link, or -ECONNRESET if
 * the communicator is no longer connecting or the link failed.
 */
int coll_link_attach(struct coll_comm *comm, struct coll_link *l)
{
	bool up = false;
	int ret = 0;

	mutex_lock(&comm->links_lock);
	if (READ_ONCE(comm->state) != COLL_COMM_CONNECTING || comm->dead ||
	    READ_ONCE(comm->join_err))
		ret = -ECONNRESET;
	else if (comm->links[l->host])
		ret = -EBUSY;
	if (!ret) {
		spin_lock(&l->lock);
		if (l->dead)
			ret = -ECONNRESET;
		else
			WRITE_ONCE(l->attached, true);
		spin_unlock(&l->lock);
	}
	if (!ret) {
		comm->links[l->host] = l;
		up = ++comm->nlinks_up == comm->hosts->nhosts - 1;
		WRITE_ONCE(l->last_rx, jiffies);
		queue_delayed_work(coll_wq, &l->hb_work,
				   coll_link_timeout() / 4 ?: 1);
	}
	mutex_unlock(&comm->links_lock);
	if (up)
		coll_comm_links_up(comm);
	return ret;
}

/*
 * Connect to every peer host of higher index, until the join deadline; the
 * others connect to us.  Runs in the module's workqueue.
 */
static void coll_links_connect_work(struct work_struct *work)
{
	struct coll_comm *comm = container_of(work, struct coll_comm,
					      connect_work);
	struct coll_hosts *h = comm->hosts;
	u32 j;
	int ret;

	for (j = h->self + 1; j < h->nhosts; j++) {
		u32 why = COLL_FALLBACK_ASKED;

		if (READ_ONCE(comm->join_err) || comm->dead)
			break;
		ret = -ENODEV;
		if (!(h->flags & COLL_COMM_F_TCP)) {
			ret = coll_rdma_connect(comm, j, comm->join_deadline);
			why = ret == -ECONNREFUSED ? COLL_FALLBACK_CONNECT :
			      COLL_FALLBACK_NO_DEVICE;
		}
		if (ret == -ENODEV || ret == -EHOSTUNREACH ||
		    ret == -ECONNREFUSED) {
			if (h->flags & COLL_COMM_F_REQUIRE_RDMA) {
				ret = -EHOSTUNREACH;
			} else {
				if (why != COLL_FALLBACK_ASKED)
					pr_notice("comm %u: host %u not reached over RDMA (%s): TCP\n",
						  comm->serial, j,
						  why == COLL_FALLBACK_CONNECT ?
						  "connection refused" :
						  "no RDMA device or route reaches it");
				ret = coll_tcp_connect(comm, j,
						       comm->join_deadline,
						       why);
			}
		}
		if (ret) {
			coll_comm_join_failed(comm, ret);
			break;
		}
	}
	coll_comm_put(comm);		/* the work's */
}

/**
 * coll_links_connect() - every local rank has joined: reach the peers
 * @comm: a communicator that spans hosts, CONNECTING
 *
 * Return: 0 (the work runs on its own; joiners wait for READY).
 */
int coll_links_connect(struct coll_comm *comm)
{
	INIT_WORK(&comm->connect_work, coll_links_connect_work);
	kref_get(&comm->kref);
	queue_work(coll_wq, &comm->connect_work);
	return 0;
}

/*
 * A link that was never attached (a duplicate, or too late): drop it.  Its
 * heartbeat is cancelled once the transport has stopped: an accepted
 * RDMA link's is queued from rdma_cm's handler, which may still be
 * running when a bad PROOF fails the link, and the shutdown waits for it.
 */
void coll_link_discard(struct coll_link *l)
{
	spin_lock(&l->lock);
	l->dead = true;
	spin_unlock(&l->lock);
	l->ops->shutdown(l);
	cancel_delayed_work_sync(&l->hb_work);
	coll_link_put(l);
}

/* An accepted link that failed before it was attached: no owner drops it. */
static void coll_link_discard_work(struct work_struct *work)
{
	struct coll_link *l = container_of(work, struct coll_link,
					   discard_work);

	coll_link_discard(l);		/* the reference the link was born with */
	coll_link_put(l);		/* the work's */
}

/* An accepted link waits for its PROOF at most peer_timeout_ms. */
void coll_link_expire(struct coll_link *l)
{
	queue_delayed_work(coll_wq, &l->hb_work, coll_link_timeout() / 4 ?: 1);
}

/*
 * Close every link of a communicator: in a work item, never in a link's
 * own threads (which the transport's shutdown stops and waits for).
 */
static void coll_links_shutdown_work(struct work_struct *work)
{
	struct coll_comm *comm = container_of(work, struct coll_comm,
					      shutdown_work);

	coll_links_shutdown(comm, true);
	coll_comm_put(comm);		/* the work's */
}

/**
 * coll_links_shutdown_async() - close every link, soon
 * @comm: the communicator, dead or failed to join
 *
 * Once only; callable from any context that may sleep, a link's own
 * threads included.
 */
void coll_links_shutdown_async(struct coll_comm *comm)
{
	if (!comm->hosts || test_and_set_bit(0, &comm->shutdown_queued))
		return;
	INIT_WORK(&comm->shutdown_work, coll_links_shutdown_work);
	kref_get(&comm->kref);
	queue_work(coll_wq, &comm->shutdown_work);
}

/**
 * coll_links_shutdown() - close every link of a communicator
 * @comm: the communicator, dead or failed to join
 * @bye: tell the peers first (an orderly leave)
 *
 * Locks: takes comm->links_lock.  May sleep; never call it from a link's
 * threads (coll_links_shutdown_async() is for them).
 */
void coll_links_shutdown(struct coll_comm *comm, bool bye)
{
	struct coll_link *l;
	u32 j;

	if (!comm->hosts)
		return;
	for (j = 0; j < comm->hosts->nhosts; j++) {
		mutex_lock(&comm->links_lock);
		l = comm->links[j];
		comm->links[j] = NULL;
		mutex_unlock(&comm->links_lock);
		if (!l)
			continue;
		if (bye && !READ_ONCE(l->dead) &&
		    !coll_link_send(l, COLL_MSG_BYE, 0, 0, 0, NULL, 0))
			l->bye = true;
		spin_lock(&l->lock);
		l->dead = true;
		spin_unlock(&l->lock);
		cancel_delayed_work_sync(&l->hb_work);
		l->ops->shutdown(l);
		/* re-armed by rdma_cm's handler, which the shutdown waited for */
		cancel_delayed_work_sync(&l->hb_work);
		coll_link_put(l);
	}
}

/* A read has ended: record and wake. */
void coll_rread_complete(struct coll_rread *rr, int status)
{
	WRITE_ONCE(rr->status, status);
	/* status before done: pairs with the acquire in coll_xhost.c */
	smp_store_release(&rr->done, true);
	wake_up_all(rr->wq);
}

/**
 * coll_link_poll_begin() - take the completions of @comm's links to poll
 * @comm: a communicator spanning hosts
 * @p: filled with the links (of the first COLL_POLL_LINKS peer hosts)
 *     whose transport busy-polls and whose completions nobody else polls,
 *     each referenced and owned until coll_link_poll_end()
 *
 * Locks: takes comm->links_lock.  Context: process.
 */
void coll_link_poll_begin(struct coll_comm *comm, struct coll_poll *p)
{
	u32 h;

	p->n = 0;
	mutex_lock(&comm->links_lock);
	for (h = 0; h < comm->hosts->nhosts && p->n < COLL_POLL_LINKS; h++) {
		struct coll_link *l = comm->links[h];

		if (!l || !l->ops->poll_begin || READ_ONCE(l->dead))
			continue;
		if (!l->ops->poll_begin(l))
			continue;
		coll_link_get(l);
		p->l[p->n++] = l;
	}
	mutex_unlock(&comm->links_lock);
}

/* Handle what has come on the links of @p.  Return: completions handled. */
int coll_link_poll(struct coll_poll *p)
{
	int i, n = 0;

	for (i = 0; i < p->n; i++)
		n += p->l[i]->ops->poll(p->l[i]);
	return n;
}

/* Let go of the links of @p (their completions go back to interrupts). */
void coll_link_poll_end(struct coll_poll *p)
{
	int i;

	for (i = 0; i < p->n; i++) {
		p->l[i]->ops->poll_end(p->l[i]);
		coll_link_put(p->l[i]);
	}
	p->n = 0;
}
