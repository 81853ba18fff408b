// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA transport: in-kernel verbs over an RC queue pair per peer host
 * of a communicator, connected with rdma_cm (a kernel caller's
 * ib_modify_qp() does not resolve a RoCE peer's MAC; rdma_cm does).
 *
 * Frames (READY, ABORT, PING, BYE) go as SENDs from a small pool of
 * pre-registered bounce buffers into the peer's posted receive buffers:
 * the copy path, used for everything small, eager data included.  Sends
 * are flow-controlled by credits: a side may send only into a receive
 * buffer the peer has posted and told it about (credits ride on every
 * frame; an explicit CREDIT frame when none is going the other way; the
 * last credit is kept for it, so the two sides never both wait).
 *
 * Large data moves without a copy on the side that has it: for each
 * collective, a host grants its peers read access to its ranks' pinned
 * buffers with fast-registration memory regions (FRWR, rkeys sent with
 * READY(0)), and the peers RDMA READ what they need.  The grant lasts the
 * collective: when it ends (every peer has said it is done reading), the
 * regions are invalidated (LOCAL_INV) before the pages are unpinned, so no
 * stale key can reach them, and go back to the device's pool (coll_ib.c)
 * for the next grants; a region whose link died before it could be
 * invalidated is deregistered instead.
 *
 * With module parameter rdma_qps above 1, the connecting host opens more
 * queue pairs to each peer (data channels, their HELLO says which), each
 * authenticated as the first; they join the link once it is attached, and
 * the link spreads its reads over all of them (the peers' grants are
 * regions of the device's protection domain, which every queue pair on it
 * reaches).  Frames stay on the first, so their order holds.  A channel
 * whose queue pair fails takes the communicator down, as the link would; it goes down with
 * the link.
 *
 * The connection proves knowledge of the id as the TCP one does
 * (coll_wire.h): HELLO in the connect request's private data, REPLY in the
 * accept's, PROOF as the first SEND, before which nothing else is taken.
 * A link fails (and its communicator with it) on any error completion but
 * a flush, on a disconnect, on a frame that does not validate, or when its
 * device goes away; the teardown disconnects and drains the queue pair
 * before anything it touched is freed (nvme-rdma's order).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "coll_loc.h"

#define COLL_RDMA_RECV		8	/* receive buffers: the peer's credits */
#define COLL_RDMA_SEND		8	/* send buffers */
#define COLL_RDMA_MSG		SZ_64K	/* a frame, header included */
#define COLL_RDMA_SQ		256	/* send queue: sends, reads, REG, INV */
#define COLL_RDMA_CM_MS		3000	/* address and route resolution */
#define COLL_RDMA_MAX_UNPROVEN	16	/* accepted links without a PROOF yet */
#define COLL_RDMA_MAX_QPS	8	/* queue pairs per peer host, at most */

/*
 * Accepted links whose peer has not proven itself yet, module-wide: each
 * holds a queue pair and its receive buffers (1 MiB) for up to
 * peer_timeout_ms, so a peer that has seen a tag on the wire could
 * otherwise make the module hold any number of them.  Beyond the bound,
 * requests get RETRY (an honest peer tries again).
 */
static atomic_t coll_rdma_unproven = ATOMIC_INIT(0);

struct coll_rdma;

struct coll_rdma_buf {
	struct ib_cqe cqe;
	struct coll_rdma *r;
	void *data;
	u64 dma;
	struct list_head node;		/* the free send buffers */
};

struct coll_rdma {
	struct coll_link link;
	struct rdma_cm_id *cm;
	struct coll_ibdev *dev;		/* a reference, from the QP's set-up
					 * until the link is freed: grants
					 * (which hold the link) deregister
					 * their regions on it after the
					 * link's shutdown
					 */
	struct list_head dev_node;	/* dev->links */
	struct coll_cq cq;		/* sends, reads, receives */
	struct ib_qp *qp;
	bool active;			/* we connected */
	bool authed;			/* PROOF checked (passive side) */
	bool unproven;			/* counted in coll_rdma_unproven */
	bool connected;
	bool peer_closed;		/* the peer disconnected */
	u32 channel;			/* 0: the link; else a data channel */

	/* the link's data channels (channel 0 only) */
	struct coll_rdma *chan[COLL_RDMA_MAX_QPS - 1];	/* link.lock */
	u32 nchan;			/* link.lock */
	u32 next_qp;			/* link.lock: reads, round robin */

	/* the connection being made */
	struct completion cm_done;
	int cm_err;
	u8 priv[64];			/* the accept's private data (active) */
	u8 priv_len;
	struct coll_wire_hello hello;	/* for checking PROOF (passive) */
	struct coll_wire_reply reply;

	struct coll_rdma_buf rx[COLL_RDMA_RECV];
	struct coll_rdma_buf tx[COLL_RDMA_SEND];
	struct list_head tx_free;	/* link.lock */
	struct list_head tx_wait;	/* link.lock: frames waiting */
	int credits;			/* link.lock */
	int owed;			/* link.lock */
	atomic_t sq_avail;		/* free send queue slots */
	rwlock_t post_lock;		/* posting vs. destroying the QP */
	wait_queue_head_t wq;
	u32 max_sge;
};

static struct coll_rdma *coll_rdma_of(struct coll_link *l)
{
	return container_of(l, struct coll_rdma, link);
}

static struct ib_device *coll_rdma_ib(struct coll_rdma *r)
{
	return r->dev->ib;
}

/* ---- send queue slots ------------------------------------------------- */

/* Wait for @n send queue slots (or the link's death). */
static int coll_rdma_sq_get(struct coll_rdma *r, int n)
{
	for (;;) {
		int avail = atomic_read(&r->sq_avail);

		if (READ_ONCE(r->link.dead))
			return -ECONNRESET;
		if (avail >= n) {
			if (atomic_cmpxchg(&r->sq_avail, avail, avail - n) ==
			    avail)
				return 0;
			continue;
		}
		wait_event_timeout(r->wq, READ_ONCE(r->link.dead) ||
				   atomic_read(&r->sq_avail) >= n, HZ);
	}
}

static void coll_rdma_sq_put(struct coll_rdma *r, int n)
{
	atomic_add(n, &r->sq_avail);
	wake_up_all(&r->wq);
}

/*
 * Post to the send queue of a link that is not dead.  Task threads post
 * (frames, reads, grants and their revocation) while the link may be shut
 * down: the shutdown marks it dead, then waits for posters here before it
 * drains and destroys the queue pair.
 */
static int coll_rdma_post(struct coll_rdma *r, const struct ib_send_wr *wr)
{
	int err = -ECONNRESET;

	read_lock(&r->post_lock);
	if (!READ_ONCE(r->link.dead))
		err = ib_post_send(r->qp, wr, NULL);
	read_unlock(&r->post_lock);
	return err;
}

static void coll_rdma_wc_error(struct coll_rdma *r, struct ib_wc *wc,
			       const char *what)
{
	if (wc->status == IB_WC_WR_FLUSH_ERR) {
		/*
		 * Our own teardown (the link is dead first), or an accepted
		 * link not attached yet (its expiry drops it): quietly.
		 * Otherwise the queue pair went into error under a live
		 * link, for example when the peer sent a request with a
		 * bad key, and only the flushes tell.
		 */
		if (READ_ONCE(r->link.dead) || !READ_ONCE(r->link.attached))
			return;
		coll_link_fail(&r->link, -ECONNRESET,
			       READ_ONCE(r->peer_closed) ?
			       "RDMA disconnected" :
			       "RDMA queue pair in error");
		return;
	}
	pr_warn_ratelimited("comm %u: host %u: %s: %s\n", r->link.comm->serial,
			    r->link.host, what, ib_wc_status_msg(wc->status));
	coll_link_fail(&r->link, -ECONNRESET, "RDMA work request failed");
}

/*
 * Locks: link.lock.  Should the credits we owe go in a CREDIT frame?  When
 * enough are owed and no frame waits to carry them, or frames wait but
 * cannot go: a frame needs a credit beyond the last, which is kept for
 * CREDIT frames.  Without this, two sides out of credits, each with frames
 * waiting (many collectives in flight at once), would never send again.
 */
static bool coll_rdma_credit_due(struct coll_rdma *r)
{
	lockdep_assert_held(&r->link.lock);
	return r->owed >= COLL_RDMA_RECV / 2 &&
	       (list_empty(&r->tx_wait) || r->credits < 2);
}

/* ---- receiving ------------------------------------------------------------ */

static void coll_rdma_recv_done(struct ib_cq *cq, struct ib_wc *wc);

static int coll_rdma_post_recv(struct coll_rdma_buf *b)
{
	struct coll_rdma *r = b->r;
	struct ib_sge sge = {
		.addr = b->dma,
		.length = COLL_RDMA_MSG,
		.lkey = r->dev->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &b->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	b->cqe.done = coll_rdma_recv_done;
	ib_dma_sync_single_for_device(coll_rdma_ib(r), b->dma, COLL_RDMA_MSG,
				      DMA_FROM_DEVICE);
	return ib_post_recv(r->qp, &wr, NULL);
}

static void coll_rdma_kick(struct coll_rdma *r);
static int coll_rdma_send_credit(struct coll_rdma *r);
static int coll_rdma_attach_chan(struct coll_rdma *r);

/* An accepted link's peer proved itself (or the link goes): uncount it. */
static void coll_rdma_proven(struct coll_rdma *r)
{
	if (r->unproven) {
		r->unproven = false;
		atomic_dec(&coll_rdma_unproven);
	}
}

static const char coll_mac_proof[] = "collective proof v1";

/* The passive side's first message: the peer's PROOF. */
static int coll_rdma_check_proof(struct coll_rdma *r, const void *data,
				 u32 len)
{
	const struct coll_wire_proof *p = data;
	u8 mac[COLL_WIRE_MAC_BYTES];
	int err;

	if (len != sizeof(*p) || le32_to_cpu(p->magic) != COLL_WIRE_MAGIC ||
	    p->__reserved)
		return -EPROTO;
	err = coll_auth_mac(&r->link.comm->auth, coll_mac_proof, &r->hello,
			    sizeof(r->hello), &r->reply, sizeof(r->reply),
			    mac);
	if (err || !coll_auth_equal(mac, p->mac))
		err = -EACCES;
	memzero_explicit(mac, sizeof(mac));
	return err;
}

static int coll_rdma_frame(struct coll_rdma *r, const void *data, u32 len)
{
	const struct coll_wire_hdr *h = data;
	struct coll_msg *m;
	bool bad;
	u32 plen;

	if (len < sizeof(*h) || le32_to_cpu(h->magic) != COLL_WIRE_MAGIC)
		return -EPROTO;
	plen = le32_to_cpu(h->len);
	if (plen != len - sizeof(*h))
		return -EPROTO;
	/*
	 * The peer gives back receive buffers we have used: never more than
	 * it posted (COLL_RDMA_RECV), counting those we may still use.
	 */
	spin_lock(&r->link.lock);
	bad = le16_to_cpu(h->credits) > COLL_RDMA_RECV - r->credits;
	if (!bad)
		r->credits += le16_to_cpu(h->credits);
	spin_unlock(&r->link.lock);
	if (bad)
		return -EPROTO;
	if (h->credits)
		coll_rdma_kick(r);
	if (h->type == COLL_MSG_CREDIT) {
		WRITE_ONCE(r->link.last_rx, jiffies);
		return plen || h->seq || h->round || h->arg ? -EPROTO : 0;
	}
	/* a data channel carries reads, and pings for its liveness */
	if (r->channel && h->type != COLL_MSG_PING)
		return -EPROTO;
	m = coll_msg_alloc(plen);
	if (!m)
		return -ENOMEM;
	m->hdr = *h;
	m->hdr.credits = 0;	/* the transport's own, consumed above */
	memcpy(m->data, data + sizeof(*h), plen);
	return coll_link_recv(&r->link, m);
}

static void coll_rdma_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct coll_rdma_buf *b = container_of(wc->wr_cqe,
					       struct coll_rdma_buf, cqe);
	struct coll_rdma *r = b->r;
	bool tell;
	int err;

	if (wc->status != IB_WC_SUCCESS) {
		coll_rdma_wc_error(r, wc, "receive");
		return;
	}
	ib_dma_sync_single_for_cpu(coll_rdma_ib(r), b->dma, COLL_RDMA_MSG,
				   DMA_FROM_DEVICE);
	if (!r->active && !r->authed) {
		err = coll_rdma_check_proof(r, b->data, wc->byte_len);
		if (!err) {
			r->authed = true;
			coll_rdma_proven(r);
			err = r->channel ? coll_rdma_attach_chan(r) :
			      coll_link_attach(r->link.comm, &r->link);
			if (err) {
				/* a duplicate, or too late: goes down quietly */
				coll_link_fail(&r->link, -ECONNRESET,
					       "not attached");
				return;
			}
		}
	} else {
		err = coll_rdma_frame(r, b->data, wc->byte_len);
	}
	if (err) {
		coll_link_fail(&r->link, -ECONNRESET,
			       err == -EACCES ? "the peer does not know the id" :
			       "invalid frame from the peer");
		return;
	}
	if (coll_rdma_post_recv(b)) {
		coll_link_fail(&r->link, -ECONNRESET, "cannot repost");
		return;
	}
	spin_lock(&r->link.lock);
	r->owed++;
	tell = coll_rdma_credit_due(r);
	spin_unlock(&r->link.lock);
	if (tell)
		coll_rdma_send_credit(r);
}

/* ---- sending ------------------------------------------------------------------ */

static void coll_rdma_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct coll_rdma_buf *b = container_of(wc->wr_cqe,
					       struct coll_rdma_buf, cqe);
	struct coll_rdma *r = b->r;
	bool due;

	coll_rdma_sq_put(r, 1);
	spin_lock(&r->link.lock);
	list_add(&b->node, &r->tx_free);
	spin_unlock(&r->link.lock);
	wake_up_all(&r->wq);		/* coll_rdma_tx_idle() */
	if (wc->status != IB_WC_SUCCESS) {
		coll_rdma_wc_error(r, wc, "send");
		return;
	}
	coll_rdma_kick(r);
	/* a CREDIT that found no free buffer when it was due */
	spin_lock(&r->link.lock);
	due = coll_rdma_credit_due(r);
	spin_unlock(&r->link.lock);
	if (due)
		coll_rdma_send_credit(r);
}

/* Post one frame from a free buffer (the caller took a credit and a buffer). */
static int coll_rdma_post_send(struct coll_rdma *r, struct coll_rdma_buf *b,
			       const struct coll_wire_hdr *h,
			       const void *payload, u32 len)
{
	struct ib_sge sge = {
		.addr = b->dma,
		.length = sizeof(*h) + len,
		.lkey = r->dev->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &b->cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	int err;

	b->cqe.done = coll_rdma_send_done;
	memcpy(b->data, h, sizeof(*h));
	if (len)
		memcpy(b->data + sizeof(*h), payload, len);
	ib_dma_sync_single_for_device(coll_rdma_ib(r), b->dma, sge.length,
				      DMA_TO_DEVICE);
	err = coll_rdma_sq_get(r, 1);
	if (!err) {
		err = coll_rdma_post(r, &wr);
		if (err)
			coll_rdma_sq_put(r, 1);
	}
	if (err) {
		spin_lock(&r->link.lock);
		list_add(&b->node, &r->tx_free);
		spin_unlock(&r->link.lock);
		return err;
	}
	atomic64_add(sge.length, &r->link.bytes_tx);
	return 0;
}

/*
 * Send what waits, as far as buffers and credits allow.  A frame needs a
 * credit beyond the last one, which is kept for CREDIT frames.
 */
static void coll_rdma_kick(struct coll_rdma *r)
{
	struct coll_rdma_buf *b;
	struct coll_msg *m;
	int err;

	for (;;) {
		spin_lock(&r->link.lock);
		m = list_first_entry_or_null(&r->tx_wait, struct coll_msg,
					     node);
		b = list_first_entry_or_null(&r->tx_free,
					     struct coll_rdma_buf, node);
		if (!m || !b || r->credits < 2 || r->link.dead) {
			spin_unlock(&r->link.lock);
			return;
		}
		list_del_init(&m->node);
		list_del(&b->node);
		r->credits--;
		m->hdr.credits = cpu_to_le16(r->owed);
		r->owed = 0;
		spin_unlock(&r->link.lock);
		err = coll_rdma_post_send(r, b, &m->hdr, m->data, m->len);
		coll_msg_free(m);
		if (err) {
			coll_link_fail(&r->link, -ECONNRESET, "RDMA send failed");
			return;
		}
	}
}

static int coll_rdma_send(struct coll_link *l, struct coll_msg *m)
{
	struct coll_rdma *r = coll_rdma_of(l);
	bool dead;

	if (sizeof(m->hdr) + m->len > COLL_RDMA_MSG) {
		coll_msg_free(m);
		return -EMSGSIZE;
	}
	spin_lock(&l->lock);
	dead = l->dead;
	if (!dead)
		list_add_tail(&m->node, &r->tx_wait);
	spin_unlock(&l->lock);
	if (dead) {
		coll_msg_free(m);
		return -ECONNRESET;
	}
	coll_rdma_kick(r);
	return 0;
}

/* Give back receive credits, with the credit kept for this. */
static int coll_rdma_send_credit(struct coll_rdma *r)
{
	struct coll_wire_hdr h = {
		.magic = cpu_to_le32(COLL_WIRE_MAGIC),
		.type = COLL_MSG_CREDIT,
	};
	struct coll_rdma_buf *b;

	spin_lock(&r->link.lock);
	b = list_first_entry_or_null(&r->tx_free, struct coll_rdma_buf, node);
	if (!b || r->credits < 1 || !r->owed || r->link.dead) {
		spin_unlock(&r->link.lock);
		return 0;
	}
	list_del(&b->node);
	r->credits--;
	h.credits = cpu_to_le16(r->owed);
	r->owed = 0;
	spin_unlock(&r->link.lock);
	return coll_rdma_post_send(r, b, &h, NULL, 0);
}

/* ---- reads --------------------------------------------------------------------- */

struct coll_rdma_rd {
	struct ib_cqe cqe;
	struct coll_rdma *r;		/* the queue pair's (referenced) */
	struct coll_link *acct;		/* the link's (referenced): bytes */
	struct coll_rread *rr;
	atomic_t pending;
	int status;
	int nmap;
	int nwr;
	struct {
		u64 dma;
		u32 len;
	} map[];
};

static void coll_rdma_read_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct coll_rdma_rd *rd = container_of(wc->wr_cqe, struct coll_rdma_rd,
					       cqe);
	struct coll_rdma *r = rd->r;
	int i;

	coll_rdma_sq_put(r, 1);
	if (wc->status != IB_WC_SUCCESS) {
		if (!rd->status)
			rd->status = -ECONNRESET;
		coll_rdma_wc_error(r, wc, "read");
	}
	if (!atomic_dec_and_test(&rd->pending))
		return;
	for (i = 0; i < rd->nmap; i++)
		ib_dma_unmap_page(coll_rdma_ib(r), rd->map[i].dma,
				  rd->map[i].len, DMA_FROM_DEVICE);
	if (!rd->status)
		atomic64_add(rd->rr->len, &rd->acct->bytes_rx);
	coll_rread_complete(rd->rr, rd->status);
	coll_link_put(rd->acct);
	coll_link_put(&r->link);
	kfree(rd);
}

static struct page *coll_rdma_page(void *p)
{
	return is_vmalloc_addr(p) ? vmalloc_to_page(p) : virt_to_page(p);
}

/*
 * Read @rr->len bytes at the peer's @rr->raddr (key @rr->rkey) into the
 * kernel memory at @rr->sink, a page at a time into as many scatter
 * entries as a read takes, in as many reads as that needs.
 */
/*
 * The queue pair for the next read of @p's link: its own or one of its
 * data channels, in turn.  Return: it, with a reference on its link.
 */
static struct coll_rdma *coll_rdma_pick(struct coll_rdma *p)
{
	struct coll_rdma *r = p;
	u32 i;

	spin_lock(&p->link.lock);
	if (p->nchan) {
		i = p->next_qp++ % (p->nchan + 1);
		if (i)
			r = p->chan[i - 1];
	}
	coll_link_get(&r->link);
	spin_unlock(&p->link.lock);
	return r;
}

static int coll_rdma_read(struct coll_link *l, struct coll_rread *rr)
{
	struct coll_rdma *r = coll_rdma_pick(coll_rdma_of(l));
	struct ib_device *ib = coll_rdma_ib(r);
	int npages = DIV_ROUND_UP(offset_in_page(rr->sink) + rr->len,
				  PAGE_SIZE), i, k, nwr, err;
	struct ib_sge *sge;
	struct ib_rdma_wr *wr;
	struct coll_rdma_rd *rd;
	u64 done = 0, raddr = rr->raddr;

	rd = kzalloc(struct_size(rd, map, npages), GFP_KERNEL);
	sge = kcalloc(npages, sizeof(*sge), GFP_KERNEL);
	nwr = DIV_ROUND_UP(npages, r->max_sge);
	wr = kcalloc(nwr, sizeof(*wr), GFP_KERNEL);
	if (!rd || !sge || !wr) {
		err = -ENOMEM;
		goto err_free;
	}
	rd->r = r;			/* holds the pick's reference */
	rd->rr = rr;
	rd->cqe.done = coll_rdma_read_done;
	for (i = 0; done < rr->len; i++) {
		void *p = rr->sink + done;
		u32 n = min_t(u64, rr->len - done, PAGE_SIZE - offset_in_page(p));
		u64 dma = ib_dma_map_page(ib, coll_rdma_page(p),
					  offset_in_page(p), n,
					  DMA_FROM_DEVICE);

		if (ib_dma_mapping_error(ib, dma)) {
			err = -ENOMEM;
			goto err_unmap;
		}
		rd->map[i].dma = dma;
		rd->map[i].len = n;
		rd->nmap++;
		sge[i] = (struct ib_sge){
			.addr = dma, .length = n,
			.lkey = r->dev->pd->local_dma_lkey,
		};
		done += n;
	}
	for (k = 0, i = 0; k < nwr; k++) {
		int ns = min_t(int, r->max_sge, rd->nmap - i), j;
		u64 bytes = 0;

		for (j = 0; j < ns; j++)
			bytes += sge[i + j].length;
		wr[k].wr.wr_cqe = &rd->cqe;
		wr[k].wr.sg_list = &sge[i];
		wr[k].wr.num_sge = ns;
		wr[k].wr.opcode = IB_WR_RDMA_READ;
		wr[k].wr.send_flags = IB_SEND_SIGNALED;
		wr[k].remote_addr = raddr;
		wr[k].rkey = rr->rkey;
		wr[k].wr.next = k + 1 < nwr ? &wr[k + 1].wr : NULL;
		raddr += bytes;
		i += ns;
	}
	err = coll_rdma_sq_get(r, nwr);
	if (err)
		goto err_unmap;
	atomic_set(&rd->pending, nwr);
	rd->nwr = nwr;
	rd->acct = l;
	coll_link_get(l);
	err = coll_rdma_post(r, &wr[0].wr);
	if (err) {
		coll_rdma_sq_put(r, nwr);
		coll_link_put(l);
		goto err_unmap;
	}
	kfree(sge);
	kfree(wr);
	return 0;

err_unmap:
	for (i = 0; i < rd->nmap; i++)
		ib_dma_unmap_page(ib, rd->map[i].dma, rd->map[i].len,
				  DMA_FROM_DEVICE);
err_free:
	kfree(rd);
	kfree(sge);
	kfree(wr);
	coll_link_put(&r->link);	/* the pick's */
	return err;
}

/* ---- grants: the peer may read our buffers for one collective ------------------- */

struct coll_rdma_mr {
	struct ib_mr *mr;
	struct sg_table sgt;
	int nents;			/* mapped */
	u64 off;			/* buffer bytes it covers */
	u64 len;
	u64 addr;			/* the address of byte off for the peer */
};

struct coll_rdma_grant {
	struct coll_rdma *r;
	int nmr;
	struct coll_rdma_mr mr[];
};

struct coll_rdma_wait {
	struct ib_cqe cqe;
	struct coll_rdma *r;
	struct completion done;
	int status;
};

static void coll_rdma_wait_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct coll_rdma_wait *w = container_of(wc->wr_cqe,
						struct coll_rdma_wait, cqe);

	/*
	 * An error leaves the queue pair in the error state: the link fails
	 * (quietly if it is a flush: it is failing already), and so does
	 * the collective, with ECONNRESET as every collective of a dead
	 * communicator.
	 */
	w->status = 0;
	if (wc->status != IB_WC_SUCCESS) {
		coll_rdma_wc_error(w->r, wc, "memory registration");
		w->status = -ECONNRESET;
	}
	complete(&w->done);
}

/* Post one signaled work request and wait for it (never in a CQ's context). */
static int coll_rdma_post_wait(struct coll_rdma *r, struct ib_send_wr *wr)
{
	struct coll_rdma_wait w;
	int err;

	init_completion(&w.done);
	w.r = r;
	w.cqe.done = coll_rdma_wait_done;
	wr->wr_cqe = &w.cqe;
	wr->send_flags = IB_SEND_SIGNALED;
	err = coll_rdma_sq_get(r, 1);
	if (err)
		return err;
	err = coll_rdma_post(r, wr);
	if (err) {
		coll_rdma_sq_put(r, 1);
		return err;
	}
	/* a completion comes even if the QP dies: flushed */
	wait_for_completion(&w.done);
	coll_rdma_sq_put(r, 1);
	return w.status;
}

/* @invalidated: no key of the region is valid (back to the pool). */
static void coll_rdma_mr_free(struct coll_rdma *r, struct coll_rdma_mr *m,
			      bool invalidated)
{
	if (m->nents)
		ib_dma_unmap_sg(coll_rdma_ib(r), m->sgt.sgl, m->sgt.orig_nents,
				DMA_BIDIRECTIONAL);
	sg_free_table(&m->sgt);
	if (m->mr)
		coll_ibdev_mr_put(r->dev, m->mr, invalidated);
}

/*
 * Register bytes [@pos, @pos + @len) of @ob's pages for remote reads, and
 * nothing else: the region starts and ends with those bytes (the first and
 * last scatter entries cover part of their page), so that a key for it
 * reaches none of the process's memory that shares their first or last
 * page.
 */
static int coll_rdma_mr_reg(struct coll_rdma *r, struct coll_obuf *ob,
			    u64 pos, u64 len, struct coll_rdma_mr *m)
{
	struct ib_device *ib = coll_rdma_ib(r);
	struct ib_reg_wr wr = {
		.wr.opcode = IB_WR_REG_MR,
		.access = IB_ACCESS_REMOTE_READ | IB_ACCESS_LOCAL_WRITE,
	};
	unsigned long first = pos >> PAGE_SHIFT;
	unsigned int off = offset_in_page(pos);
	unsigned int n = DIV_ROUND_UP(off + len, PAGE_SIZE);
	struct scatterlist *sg;
	unsigned int i;
	int err;

	err = sg_alloc_table(&m->sgt, n, GFP_KERNEL);
	if (err)
		return err;
	for_each_sg(m->sgt.sgl, sg, n, i) {
		unsigned int bytes = min_t(u64, len, PAGE_SIZE - off);

		sg_set_page(sg, coll_obuf_page(ob, first + i), bytes, off);
		len -= bytes;
		off = 0;
	}
	m->nents = ib_dma_map_sg(ib, m->sgt.sgl, n, DMA_BIDIRECTIONAL);
	if (!m->nents)
		return -ENOMEM;
	m->mr = coll_ibdev_mr_get(r->dev);
	if (IS_ERR(m->mr)) {
		err = PTR_ERR(m->mr);
		m->mr = NULL;
		return err;
	}
	if (ib_map_mr_sg(m->mr, m->sgt.sgl, m->nents, NULL, PAGE_SIZE) !=
	    m->nents)
		return -EINVAL;
	ib_update_fast_reg_key(m->mr, ib_inc_rkey(m->mr->rkey));
	wr.mr = m->mr;
	wr.key = m->mr->rkey;
	return coll_rdma_post_wait(r, &wr.wr);
}

/*
 * Grant the peer read access to @len bytes of @ob (from its start as the
 * rank sees it), for the collective in progress.  Fills @exp[0..*nexp).
 */
static int coll_rdma_grant(struct coll_link *l, struct coll_obuf *ob, u64 pos,
			   u64 len, struct coll_wire_export *exp, u32 maxexp,
			   u32 *nexp, void **cookie)
{
	struct coll_rdma *r = coll_rdma_of(l);
	u32 per = r->dev->mr_pages;
	u64 at = ob->first_off + pos;	/* byte 0's place in the obuf's pages */
	unsigned long p0 = at >> PAGE_SHIFT;
	unsigned long np = DIV_ROUND_UP(at + len, PAGE_SIZE) - p0, p;
	struct coll_rdma_grant *g;
	int err = 0, k;

	if (!per)
		return -EOPNOTSUPP;
	g = kzalloc(struct_size(g, mr, DIV_ROUND_UP(np, per)), GFP_KERNEL);
	if (!g)
		return -ENOMEM;
	g->r = r;
	for (p = 0; p < np && !err; p += per) {
		struct coll_rdma_mr *m = &g->mr[g->nmr++];
		unsigned int n = min_t(unsigned long, per, np - p);
		/* the region's pages, in bytes from byte 0 of the buffer */
		u64 start = (p0 + p) * PAGE_SIZE, end = (p0 + p + n) * PAGE_SIZE;

		if (g->nmr > maxexp) {
			err = -E2BIG;
			break;
		}
		m->off = p ? start - at : 0;
		m->len = min_t(u64, len, end - at) - m->off;
		err = coll_rdma_mr_reg(r, ob, at + m->off, m->len, m);
		/* the region's first byte is the buffer's byte m->off */
		m->addr = m->mr ? m->mr->iova : 0;
	}
	if (err) {
		/* registered regions keep valid keys: deregistered */
		for (k = 0; k < g->nmr; k++)
			coll_rdma_mr_free(r, &g->mr[k], false);
		kfree(g);
		return err;
	}
	for (k = 0; k < g->nmr; k++) {
		exp[k].rkey = cpu_to_le32(g->mr[k].mr->rkey);
		exp[k].addr = cpu_to_le64(g->mr[k].addr);
		exp[k].off = cpu_to_le64(g->mr[k].off);
		exp[k].len = cpu_to_le64(g->mr[k].len);
		exp[k].__reserved = 0;
	}
	*nexp = g->nmr;
	coll_link_get(l);
	*cookie = g;
	return 0;
}

/* The collective is over: invalidate, then free.  May sleep. */
static void coll_rdma_revoke(void *cookie)
{
	struct coll_rdma_grant *g = cookie;
	struct coll_rdma *r = g->r;
	int k;

	for (k = 0; k < g->nmr; k++) {
		struct ib_send_wr wr = {
			.opcode = IB_WR_LOCAL_INV,
			.ex.invalidate_rkey = g->mr[k].mr->rkey,
		};
		bool inv = false;

		/*
		 * A dead QP reaches nothing, but the key stays valid in the
		 * domain until the region is deregistered.
		 */
		if (!READ_ONCE(r->link.dead))
			inv = !coll_rdma_post_wait(r, &wr);
		coll_rdma_mr_free(r, &g->mr[k], inv);
	}
	coll_link_put(&r->link);
	kfree(g);
}

/* ---- the queue pair -------------------------------------------------------------- */

static void coll_rdma_free_bufs(struct coll_rdma *r)
{
	int i;

	for (i = 0; i < COLL_RDMA_RECV + COLL_RDMA_SEND; i++) {
		struct coll_rdma_buf *b = i < COLL_RDMA_RECV ? &r->rx[i] :
					  &r->tx[i - COLL_RDMA_RECV];

		if (!b->data)
			continue;
		if (b->dma)
			ib_dma_unmap_single(coll_rdma_ib(r), b->dma,
					    COLL_RDMA_MSG, DMA_BIDIRECTIONAL);
		kvfree(b->data);
		b->data = NULL;
	}
}

/* CQ, QP, buffers, receives posted: before connect or accept. */
static int coll_rdma_setup_qp(struct coll_rdma *r)
{
	struct ib_device *ib;
	struct ib_qp_init_attr qa = {};
	int i, err;

	r->dev = coll_ibdev_get(r->cm->device);
	if (!r->dev)
		return -ENODEV;
	coll_ibdev_add_link(r->dev, &r->dev_node);
	ib = coll_rdma_ib(r);
	r->max_sge = clamp_t(u32, ib->attrs.max_sge_rd, 1, 32);
	err = coll_cq_create(&r->cq, ib, COLL_RDMA_SQ + COLL_RDMA_RECV + 8);
	if (err)
		return err;
	qa.send_cq = r->cq.cq;
	qa.recv_cq = r->cq.cq;
	qa.qp_type = IB_QPT_RC;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.cap.max_send_wr = COLL_RDMA_SQ;
	qa.cap.max_recv_wr = COLL_RDMA_RECV;
	qa.cap.max_send_sge = r->max_sge;
	qa.cap.max_recv_sge = 1;
	err = rdma_create_qp(r->cm, r->dev->pd, &qa);
	if (err)
		return err;
	r->qp = r->cm->qp;
	atomic_set(&r->sq_avail, COLL_RDMA_SQ - 1);	/* one for drain */
	for (i = 0; i < COLL_RDMA_RECV + COLL_RDMA_SEND; i++) {
		struct coll_rdma_buf *b = i < COLL_RDMA_RECV ? &r->rx[i] :
					  &r->tx[i - COLL_RDMA_RECV];

		b->r = r;
		b->data = kmalloc(COLL_RDMA_MSG, GFP_KERNEL);
		if (!b->data)
			return -ENOMEM;
		b->dma = ib_dma_map_single(ib, b->data, COLL_RDMA_MSG,
					   DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(ib, b->dma)) {
			b->dma = 0;
			return -ENOMEM;
		}
		if (i < COLL_RDMA_RECV) {
			err = coll_rdma_post_recv(b);
			if (err)
				return err;
		} else {
			list_add_tail(&b->node, &r->tx_free);
		}
	}
	r->credits = COLL_RDMA_RECV;
	return 0;
}

/* Has every frame posted completed (the peer's HCA acknowledged it)? */
static bool coll_rdma_tx_idle(struct coll_rdma *r)
{
	struct coll_rdma_buf *b;
	int n = 0;

	spin_lock(&r->link.lock);
	list_for_each_entry(b, &r->tx_free, node)
		n++;
	spin_unlock(&r->link.lock);
	return n == COLL_RDMA_SEND;
}

static void coll_rdma_shutdown(struct coll_link *l)
{
	struct coll_rdma *r = coll_rdma_of(l);
	struct coll_rdma *chan[ARRAY_SIZE(r->chan)];
	struct coll_msg *m, *t;
	u32 i, n;

	/* the data channels first: dead with the link (it is dead) */
	spin_lock(&l->lock);
	n = r->nchan;
	memcpy(chan, r->chan, n * sizeof(*chan));
	r->nchan = 0;
	spin_unlock(&l->lock);
	for (i = 0; i < n; i++)
		coll_link_discard(&chan[i]->link);

	/*
	 * An orderly leave: the BYE, and every frame before it, reaches the
	 * peer before the disconnect, which would flush what is still on the
	 * send queue (the peer would then fail a collective it could have
	 * finished).  As TCP's, bounded by a peer that takes nothing.
	 */
	if (l->bye && r->qp)
		wait_event_timeout(r->wq, coll_rdma_tx_idle(r),
				   msecs_to_jiffies(500));
	wake_up_all(&r->wq);
	/* dead already: whoever is still posting is done after this */
	write_lock(&r->post_lock);
	write_unlock(&r->post_lock);
	if (r->qp) {
		if (r->connected)
			rdma_disconnect(r->cm);
		/* every posted work request completes (flushed) first */
		ib_drain_qp(r->qp);
		rdma_destroy_qp(r->cm);
		r->qp = NULL;
	}
	if (r->cm) {
		rdma_destroy_id(r->cm);
		r->cm = NULL;
	}
	coll_cq_destroy(&r->cq);
	if (r->dev)
		coll_rdma_free_bufs(r);
	list_for_each_entry_safe(m, t, &r->tx_wait, node) {
		list_del(&m->node);
		coll_msg_free(m);
	}
	/*
	 * Off the device's list (its removal has nothing left to fail here),
	 * but the device stays referenced until the link is freed: grants
	 * of collectives not yet freed still hold memory regions on it,
	 * which coll_rdma_revoke() deregisters and unmaps.
	 */
	if (r->dev)
		coll_ibdev_del_link(r->dev, &r->dev_node);
}

/* Busy polling by a waiting rank (module parameter busy_poll_us). */
static bool coll_rdma_poll_begin(struct coll_link *l)
{
	return coll_cq_own(&coll_rdma_of(l)->cq);
}

static int coll_rdma_poll(struct coll_link *l)
{
	return coll_cq_process(&coll_rdma_of(l)->cq, COLL_CQ_BATCH);
}

static void coll_rdma_poll_end(struct coll_link *l)
{
	coll_cq_release(&coll_rdma_of(l)->cq, false);
}

/*
 * The last reference: no grant of the link is left, so no memory region on
 * the device, and the device may go.
 */
static void coll_rdma_free(struct coll_link *l)
{
	struct coll_rdma *r = coll_rdma_of(l);

	coll_rdma_proven(r);		/* the queue pair is gone */
	if (r->dev)
		coll_ibdev_put(r->dev);	/* no grant is left on it */
	kfree(r);
}

static void coll_rdma_info(struct coll_link *l, struct coll_peer_info *pi)
{
	struct coll_rdma *r = coll_rdma_of(l);
	struct rdma_cm_id *cm = r->cm;
	union ib_gid sgid, dgid;
	struct ib_port_attr pa;

	if (!cm || !r->dev)
		return;
	strscpy(pi->ibdev, dev_name(&r->dev->ib->dev), sizeof(pi->ibdev));
	pi->rdma_port = cm->port_num;
	spin_lock(&l->lock);
	pi->qps = 1 + r->nchan;
	spin_unlock(&l->lock);
	rdma_read_gids(cm, &sgid, &dgid);
	memcpy(pi->gid, sgid.raw, sizeof(pi->gid));
	if (!ib_query_port(r->dev->ib, cm->port_num, &pa)) {
		int speed;
		u16 sp = 0;
		u8 w = 0;

		pi->mtu = ib_mtu_enum_to_int(pa.active_mtu);
		sp = pa.active_speed;
		w = pa.active_width;
		speed = ib_width_enum_to_int(w) *
			(sp == IB_SPEED_SDR ? 2500 : sp == IB_SPEED_DDR ? 5000 :
			 sp == IB_SPEED_QDR ? 10000 : sp == IB_SPEED_FDR10 ? 10000 :
			 sp == IB_SPEED_FDR ? 14000 : sp == IB_SPEED_EDR ? 25000 :
			 sp == IB_SPEED_HDR ? 50000 : 100000);
		pi->speed_mbps = speed > 0 ? speed : 0;
	}
}

static const struct coll_link_ops coll_rdma_ops = {
	.name = "rdma",
	.send = coll_rdma_send,
	.read = coll_rdma_read,
	.grant = coll_rdma_grant,
	.revoke = coll_rdma_revoke,
	.poll_begin = coll_rdma_poll_begin,
	.poll = coll_rdma_poll,
	.poll_end = coll_rdma_poll_end,
	.shutdown = coll_rdma_shutdown,
	.free = coll_rdma_free,
	.info = coll_rdma_info,
};

static struct coll_rdma *coll_rdma_alloc(struct coll_comm *comm, u32 host,
					 bool active)
{
	struct coll_rdma *r = kzalloc(sizeof(*r), GFP_KERNEL);

	if (!r)
		return NULL;
	coll_link_init(&r->link, comm, host, &coll_rdma_ops);
	r->link.transport = COLL_TRANSPORT_RDMA;
	r->link.owned = active;
	/* room for READY(0)'s agreement and grants beside the eager data */
	r->link.max_eager = (COLL_RDMA_MSG - sizeof(struct coll_wire_hdr) -
			     sizeof(struct coll_wire_desc)) / 2;
	r->active = active;
	init_completion(&r->cm_done);
	INIT_LIST_HEAD(&r->tx_free);
	INIT_LIST_HEAD(&r->tx_wait);
	INIT_LIST_HEAD(&r->dev_node);
	init_waitqueue_head(&r->wq);
	rwlock_init(&r->post_lock);
	return r;
}

/* A device went away: every link on it fails (coll_ib.c). */
void coll_rdma_device_gone(struct coll_ibdev *d)
{
	struct coll_rdma *r, **all;
	int n = 0, i;

	spin_lock(&d->lock);
	list_for_each_entry(r, &d->links, dev_node)
		n++;
	spin_unlock(&d->lock);
	all = kcalloc(n ?: 1, sizeof(*all), GFP_KERNEL | __GFP_NOFAIL);
	spin_lock(&d->lock);
	i = 0;
	list_for_each_entry(r, &d->links, dev_node) {
		if (i == n)
			break;
		coll_link_get(&r->link);
		all[i++] = r;
	}
	spin_unlock(&d->lock);
	while (i--) {
		coll_link_fail(&all[i]->link, -ECONNRESET,
			       "RDMA device removed");
		coll_link_put(&all[i]->link);
	}
	kfree(all);
}

/* ---- connection management ---------------------------------------------------------- */

static const char coll_mac_reply[] = "collective reply v1";

/* Events of an established (or being established) link. */
static int coll_rdma_cm_event(struct rdma_cm_id *cm,
			      struct rdma_cm_event *ev)
{
	struct coll_rdma *r = cm->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		r->cm_err = 0;
		complete(&r->cm_done);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (r->active) {
			r->priv_len = min_t(u8, ev->param.conn.private_data_len,
					    sizeof(r->priv));
			memcpy(r->priv, ev->param.conn.private_data,
			       r->priv_len);
		}
		r->connected = true;
		r->cm_err = 0;
		complete(&r->cm_done);
		break;
	case RDMA_CM_EVENT_REJECTED:
		r->priv_len = min_t(u8, ev->param.conn.private_data_len,
				    sizeof(r->priv));
		if (ev->param.conn.private_data)
			memcpy(r->priv, ev->param.conn.private_data,
			       r->priv_len);
		else
			r->priv_len = 0;
		r->cm_err = -ECONNREFUSED;
		complete(&r->cm_done);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		r->cm_err = -EHOSTUNREACH;
		complete(&r->cm_done);
		coll_link_fail(&r->link, -ECONNRESET, "RDMA connection error");
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (READ_ONCE(r->link.attached) && !READ_ONCE(r->link.dead) &&
		    r->connected) {
			/*
			 * The disconnect request may overtake the completions
			 * of what the peer sent before it (its last READY, its
			 * BYE): put the queue pair into error, so that those
			 * are handled first and the flushes that follow them
			 * fail the link (coll_rdma_wc_error()).
			 */
			WRITE_ONCE(r->peer_closed, true);
			r->connected = false;
			rdma_disconnect(cm);
			break;
		}
		fallthrough;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		r->connected = ev->event == RDMA_CM_EVENT_DISCONNECTED ?
			       false : r->connected;
		r->cm_err = -ECONNRESET;
		complete(&r->cm_done);
		coll_link_fail(&r->link, -ECONNRESET,
			       ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ?
			       "RDMA device removed" : "RDMA disconnected");
		break;
	default:
		break;
	}
	/* ids are destroyed by the link's shutdown, never from here */
	return 0;
}

static int coll_rdma_wait_cm(struct coll_rdma *r)
{
	if (!wait_for_completion_timeout(&r->cm_done,
					 msecs_to_jiffies(COLL_RDMA_CM_MS * 2)))
		return -ETIMEDOUT;
	reinit_completion(&r->cm_done);
	return r->cm_err;
}

static void coll_rdma_sockaddr(const struct coll_host *hst,
			       struct sockaddr_storage *ss)
{
	static const u8 v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	memset(ss, 0, sizeof(*ss));
	if (!memcmp(hst->addr, v4mapped, sizeof(v4mapped))) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(hst->port);
		memcpy(&sin->sin_addr, hst->addr + 12, 4);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(hst->port);
		memcpy(&sin6->sin6_addr, hst->addr, 16);
	}
}

static void coll_rdma_hello(struct coll_comm *comm, u32 host, u32 channel,
			    struct coll_wire_hello *hello)
{
	memset(hello, 0, sizeof(*hello));
	hello->magic = cpu_to_le32(COLL_WIRE_MAGIC);
	hello->version = cpu_to_le16(COLL_WIRE_VERSION);
	hello->flags = cpu_to_le16(COLL_WIRE_F_RDMA |
				   channel << COLL_WIRE_F_CHAN_SHIFT);
	memcpy(hello->tag, comm->auth.tag, sizeof(hello->tag));
	hello->src_host = cpu_to_le16(comm->hosts->self);
	hello->dst_host = cpu_to_le16(host);
	memcpy(&hello->layout, comm->hosts->layout, sizeof(hello->layout));
	get_random_bytes(hello->nonce, sizeof(hello->nonce));
}

static void coll_rdma_discard(struct coll_rdma *r)
{
	coll_link_discard(&r->link);
}

/*
 * A data channel proved itself (or we connected it): it joins the link to
 * its host, attached (its failure fails the communicator), and goes down
 * with it.  Only on the link's device: the peer's grants are in its
 * protection domain.  Locks: the channel's link.lock, then the link's
 * (nested); takes comm->links_lock before.
 */
static int coll_rdma_attach_chan(struct coll_rdma *r)
{
	struct coll_comm *comm = r->link.comm;
	struct coll_link *l;
	struct coll_rdma *p;
	int err = 0;
	u32 i;

	mutex_lock(&comm->links_lock);
	l = comm->links[r->link.host];
	if (l && l->ops == r->link.ops)
		coll_link_get(l);
	else
		l = NULL;
	mutex_unlock(&comm->links_lock);
	if (!l)
		return -ENOENT;
	p = coll_rdma_of(l);
	if (p->dev != r->dev) {
		err = -EXDEV;
		goto out;
	}
	spin_lock(&r->link.lock);
	spin_lock_nested(&p->link.lock, SINGLE_DEPTH_NESTING);
	if (r->link.dead || p->link.dead)
		err = -ECONNRESET;
	else if (p->nchan == ARRAY_SIZE(p->chan))
		err = -EBUSY;
	for (i = 0; !err && i < p->nchan; i++)
		if (p->chan[i]->channel == r->channel)
			err = -EBUSY;
	if (!err) {
		p->chan[p->nchan++] = r;
		WRITE_ONCE(r->link.attached, true);
	}
	spin_unlock(&p->link.lock);
	spin_unlock(&r->link.lock);
	if (!err) {
		/* liveness as any link's: pings both ways */
		WRITE_ONCE(r->link.last_rx, jiffies);
		coll_link_expire(&r->link);
	}
out:
	coll_link_put(l);
	return err;
}

/* PROOF goes as a bare SEND from a send buffer (it takes a credit). */
static int coll_rdma_post_proof(struct coll_rdma *r,
				const struct coll_wire_proof *proof)
{
	struct coll_rdma_buf *b;
	struct ib_sge sge;
	struct ib_send_wr wr = {
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
		.sg_list = &sge,
	};
	int err;

	spin_lock(&r->link.lock);
	b = list_first_entry_or_null(&r->tx_free, struct coll_rdma_buf, node);
	if (b) {
		list_del(&b->node);
		r->credits--;
	}
	spin_unlock(&r->link.lock);
	if (!b)
		return -ENOBUFS;
	memcpy(b->data, proof, sizeof(*proof));
	sge.addr = b->dma;
	sge.length = sizeof(*proof);
	sge.lkey = r->dev->pd->local_dma_lkey;
	b->cqe.done = coll_rdma_send_done;
	wr.wr_cqe = &b->cqe;
	ib_dma_sync_single_for_device(coll_rdma_ib(r), b->dma, sge.length,
				      DMA_TO_DEVICE);
	err = coll_rdma_sq_get(r, 1);
	if (!err) {
		err = coll_rdma_post(r, &wr);
		if (err)
			coll_rdma_sq_put(r, 1);
	}
	return err;
}

/*
 * One attempt: resolve, connect, check the peer's REPLY, send PROOF,
 * attach.  Return: 0, -EAGAIN (the peer is not ready: try again), or
 * -ENODEV / -EHOSTUNREACH / -ECONNREFUSED (RDMA does not reach it: the
 * caller may fall back), or another -errno.
 */
static int coll_rdma_try(struct coll_comm *comm, u32 host, u32 channel)
{
	struct rdma_conn_param cp = {};
	struct coll_wire_proof proof = {
		.magic = cpu_to_le32(COLL_WIRE_MAGIC),
	};
	struct coll_wire_reply *reply;
	u8 mac[COLL_WIRE_MAC_BYTES];
	struct sockaddr_storage dst;
	struct coll_rdma *r;
	int err;

	r = coll_rdma_alloc(comm, host, true);
	if (!r)
		return -ENOMEM;
	r->channel = channel;
	r->cm = rdma_create_id(comm->net, coll_rdma_cm_event, r, RDMA_PS_TCP,
			       IB_QPT_RC);
	if (IS_ERR(r->cm)) {
		err = PTR_ERR(r->cm);
		r->cm = NULL;
		goto err_discard;
	}
	coll_rdma_sockaddr(&comm->hosts->tab[host], &dst);
	err = rdma_resolve_addr(r->cm, NULL, (struct sockaddr *)&dst,
				COLL_RDMA_CM_MS);
	if (!err)
		err = coll_rdma_wait_cm(r);
	if (!err)
		err = rdma_resolve_route(r->cm, COLL_RDMA_CM_MS);
	if (!err)
		err = coll_rdma_wait_cm(r);
	if (err) {
		err = -EHOSTUNREACH;
		goto err_discard;
	}
	err = coll_rdma_setup_qp(r);
	if (err)
		goto err_discard;

	coll_rdma_hello(comm, host, channel, &r->hello);
	cp.private_data = &r->hello;
	cp.private_data_len = sizeof(r->hello);
	cp.responder_resources = min_t(int, 16,
				       coll_rdma_ib(r)->attrs.max_qp_rd_atom);
	cp.initiator_depth = min_t(int, 16,
				   coll_rdma_ib(r)->attrs.max_qp_init_rd_atom);
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	err = rdma_connect(r->cm, &cp);
	if (!err)
		err = coll_rdma_wait_cm(r);
	reply = (struct coll_wire_reply *)r->priv;
	if (err == -ECONNREFUSED && r->priv_len >= sizeof(*reply) &&
	    le32_to_cpu(reply->magic) == COLL_WIRE_MAGIC) {
		err = le16_to_cpu(reply->status) == COLL_WIRE_REFUSED ?
		      -EPROTO : -EAGAIN;
		goto err_discard;
	}
	if (err)
		goto err_discard;
	err = -EAGAIN;		/* not who we want: keep trying */
	if (r->priv_len < sizeof(*reply) ||
	    le32_to_cpu(reply->magic) != COLL_WIRE_MAGIC ||
	    le16_to_cpu(reply->status) != COLL_WIRE_OK)
		goto err_discard;
	if (coll_auth_mac(&comm->auth, coll_mac_reply, &r->hello,
			  sizeof(r->hello), reply->nonce, sizeof(reply->nonce),
			  mac) || !coll_auth_equal(mac, reply->mac))
		goto err_discard;
	r->reply = *reply;
	err = coll_auth_mac(&comm->auth, coll_mac_proof, &r->hello,
			    sizeof(r->hello), &r->reply, sizeof(r->reply),
			    proof.mac);
	if (err)
		goto err_discard;
	/* PROOF: a bare message, the peer's first */
	err = coll_rdma_post_proof(r, &proof);
	if (err)
		goto err_discard;
	err = channel ? coll_rdma_attach_chan(r) :
	      coll_link_attach(comm, &r->link);
	if (err)
		coll_rdma_discard(r);
	return err;

err_discard:
	memzero_explicit(mac, sizeof(mac));
	coll_rdma_discard(r);
	return err;
}

/* One queue pair to @host (@channel 0: the link), retried until @deadline. */
static int coll_rdma_connect_qp(struct coll_comm *comm, u32 host,
				u32 channel, unsigned long deadline)
{
	unsigned int backoff = 20;
	int err;

	for (;;) {
		err = coll_rdma_try(comm, host, channel);
		if (err != -EAGAIN)
			return err;
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		if (READ_ONCE(comm->join_err) || comm->dead)
			return -ECONNRESET;
		msleep(backoff);
		backoff = min(backoff * 2, 500U);
	}
}

/**
 * coll_rdma_connect() - connect to a peer host over RDMA, until a deadline
 * @comm: the communicator
 * @host: the peer
 * @deadline: jiffies
 *
 * The link first, then its data channels (module parameter rdma_qps).
 *
 * Return: 0 (attached), or -ENODEV / -EHOSTUNREACH / -ECONNREFUSED when
 * RDMA does not reach the peer (the caller may fall back to TCP), -EPROTO
 * (other tables), -ETIMEDOUT, or another -errno.
 */
int coll_rdma_connect(struct coll_comm *comm, u32 host,
		      unsigned long deadline)
{
	u32 n = clamp_t(u32, READ_ONCE(coll_rdma_qps), 1, COLL_RDMA_MAX_QPS);
	u32 ch;
	int err;

	err = coll_rdma_connect_qp(comm, host, 0, deadline);
	/*
	 * Data channels: the link works without them, so one that cannot be
	 * had (the peer's module allows fewer, a device differs) is left out.
	 */
	for (ch = 1; !err && ch < n; ch++) {
		int e = coll_rdma_connect_qp(comm, host, ch, deadline);

		if (e) {
			pr_notice("comm %u: host %u: %u of %u RDMA queue pairs (%d)\n",
				  comm->serial, host, ch, n, e);
			break;
		}
	}
	return err;
}

/*
 * A connect request on a listener: the new id's HELLO names a
 * communicator; answer with REPLY and accept, or reject.  Runs in
 * rdma_cm's handler context for the new id (rdma_accept wants that).
 * Return: non-zero to have rdma_cm destroy the new id.
 */
int coll_rdma_request(struct rdma_cm_id *cm, struct rdma_cm_event *ev,
		      struct net *net)
{
	const struct coll_wire_hello *hello = ev->param.conn.private_data;
	struct coll_wire_reply reply = {
		.magic = cpu_to_le32(COLL_WIRE_MAGIC),
		.version = cpu_to_le16(COLL_WIRE_VERSION),
		.status = cpu_to_le16(COLL_WIRE_RETRY),
	};
	struct rdma_conn_param cp = {};
	struct coll_comm *comm = NULL;
	struct coll_rdma *r = NULL;
	u32 src, dst, channel, state;
	int err;

	if (!hello || ev->param.conn.private_data_len < sizeof(*hello) ||
	    le32_to_cpu(hello->magic) != COLL_WIRE_MAGIC ||
	    le16_to_cpu(hello->version) != COLL_WIRE_VERSION ||
	    (le16_to_cpu(hello->flags) & ~COLL_WIRE_F_CHAN) != COLL_WIRE_F_RDMA)
		goto reject;
	src = le16_to_cpu(hello->src_host);
	dst = le16_to_cpu(hello->dst_host);
	channel = (le16_to_cpu(hello->flags) & COLL_WIRE_F_CHAN) >>
		  COLL_WIRE_F_CHAN_SHIFT;
	if (channel >= COLL_RDMA_MAX_QPS) {
		reply.status = cpu_to_le16(COLL_WIRE_REFUSED);
		goto reject;
	}
	comm = coll_comm_find_tag(net, hello->tag);
	state = comm ? READ_ONCE(comm->state) : COLL_COMM_CONNECTING;
	/* a data channel may come once the communicator is ready */
	if (!comm || (state != COLL_COMM_CONNECTING &&
		      (!channel || state != COLL_COMM_READY)))
		goto reject;		/* RETRY: not joined (yet) */
	if (!comm->hosts || dst != comm->hosts->self || src >= dst ||
	    memcmp(&hello->layout, comm->hosts->layout,
		   sizeof(hello->layout)) ||
	    (comm->hosts->flags & COLL_COMM_F_TCP)) {
		reply.status = cpu_to_le16(COLL_WIRE_REFUSED);
		goto reject;
	}
	/*
	 * A data channel once its link is attached (the link's PROOF may not
	 * have been handled yet: RETRY).  Only a gate, read without the
	 * links' lock (rdma_cm's handler context): the channel's PROOF
	 * attaches it under the lock, or drops it.
	 */
	if (channel && !READ_ONCE(comm->links[src]))
		goto reject;

	if (atomic_inc_return(&coll_rdma_unproven) > COLL_RDMA_MAX_UNPROVEN) {
		atomic_dec(&coll_rdma_unproven);
		goto reject;		/* RETRY: too many handshakes at once */
	}
	r = coll_rdma_alloc(comm, src, false);
	if (!r) {
		atomic_dec(&coll_rdma_unproven);
		goto reject;
	}
	r->unproven = true;
	r->channel = channel;
	r->cm = cm;
	cm->context = r;
	cm->event_handler = coll_rdma_cm_event;
	err = coll_rdma_setup_qp(r);
	if (err)
		goto reject_link;
	r->hello = *hello;
	reply.status = cpu_to_le16(COLL_WIRE_OK);
	get_random_bytes(reply.nonce, sizeof(reply.nonce));
	if (coll_auth_mac(&comm->auth, coll_mac_reply, hello, sizeof(*hello),
			  reply.nonce, sizeof(reply.nonce), reply.mac))
		goto reject_link;
	r->reply = reply;
	cp.private_data = &reply;
	cp.private_data_len = sizeof(reply);
	cp.responder_resources = min_t(int, 16,
				       coll_rdma_ib(r)->attrs.max_qp_rd_atom);
	cp.initiator_depth = min_t(int, 16,
				   coll_rdma_ib(r)->attrs.max_qp_init_rd_atom);
	cp.rnr_retry_count = 7;
	err = rdma_accept(cm, &cp);
	if (err)
		goto reject_link;
	/* attached when PROOF arrives (coll_rdma_recv_done()), or dropped */
	coll_link_expire(&r->link);
	coll_comm_put(comm);
	return 0;

reject_link:
	/* rdma_cm destroys the id (we return 1): the link must not */
	if (r->qp) {
		ib_drain_qp(r->qp);
		rdma_destroy_qp(cm);
		r->qp = NULL;
	}
	r->cm = NULL;
	reply.status = cpu_to_le16(COLL_WIRE_RETRY);
	rdma_reject(cm, &reply, sizeof(reply), IB_CM_REJ_CONSUMER_DEFINED);
	coll_rdma_discard(r);
	coll_comm_put(comm);
	return 1;

reject:
	rdma_reject(cm, &reply, sizeof(reply), IB_CM_REJ_CONSUMER_DEFINED);
	if (comm)
		coll_comm_put(comm);
	return 1;
}
