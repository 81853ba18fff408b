// SPDX-License-Identifier: GPL-2.0
/*
 * The TCP transport: a kernel socket per peer host of a communicator, for
 * when RDMA does not reach the peer or is not wanted.
 *
 * Each link has a receive thread and a send thread, so that receiving
 * never waits for sending (two hosts answering each other's reads would
 * otherwise deadlock on full socket buffers).  Frames are a struct
 * coll_wire_hdr and a payload.  A peer's reads (READ_REQ) are answered
 * from the pinned pages themselves with kernel_sendpage() (no copy), and
 * answers to our reads (READ_RESP) are received straight into the reader's
 * kernel memory.  Every frame is validated before anything acts on it;
 * one that does not fails the link.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in6.h>
#include <linux/kthread.h>
#include <linux/net.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "coll_loc.h"

#define COLL_TCP_HANDSHAKE_MS	5000
#define COLL_TCP_POLL_MS	200

/* An item to send: a frame, or a READ_RESP's data from pinned pages. */
struct coll_tcp_tx {
	struct list_head node;
	struct coll_msg *msg;		/* header and payload */
	struct coll_task *task;		/* READ_RESP: holds the pages pinned */
	struct coll_obuf *ob;
	u64 pos;			/* byte position in ob */
	u64 len;
};

struct coll_tcp {
	struct coll_link link;
	struct socket *sock;
	struct task_struct *rx;
	struct task_struct *tx;
	struct list_head txq;		/* link.lock */
	wait_queue_head_t txwq;
	struct list_head reads;		/* link.lock: our pending reads */
	u64 next_cookie;		/* link.lock */
	bool stopping;
};

static struct coll_tcp *coll_tcp_of(struct coll_link *l)
{
	return container_of(l, struct coll_tcp, link);
}

/* ---- socket helpers ---------------------------------------------------- */

/* All of @len bytes, or -errno; gives up when the link stops. */
static int coll_tcp_recv_full(struct coll_tcp *t, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		struct kvec iov = { buf + done, len - done };
		struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
		int r = kernel_recvmsg(t->sock, &msg, &iov, 1, len - done,
				       MSG_WAITALL);

		if (r == -EAGAIN || r == -EINTR) {
			if (READ_ONCE(t->stopping) || kthread_should_stop())
				return -ECONNRESET;
			continue;
		}
		if (r <= 0)
			return r ? r : -ECONNRESET;
		done += r;
	}
	return 0;
}

static int coll_tcp_send_full(struct socket *sock, const void *buf, size_t len,
			      bool more)
{
	size_t done = 0;

	while (done < len) {
		struct kvec iov = { (void *)buf + done, len - done };
		struct msghdr msg = {
			.msg_flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0),
		};
		int r = kernel_sendmsg(sock, &msg, &iov, 1, len - done);

		if (r == -EAGAIN || r == -EINTR)
			continue;
		if (r <= 0)
			return r ? r : -ECONNRESET;
		done += r;
	}
	return 0;
}

/* Bytes of pinned pages, without copying them where the kernel allows. */
static int coll_tcp_send_pages(struct socket *sock, struct coll_obuf *ob,
			       u64 pos, u64 len)
{
	while (len) {
		u64 at = ob->first_off + pos;
		struct page *page = coll_obuf_page(ob, at >> PAGE_SHIFT);
		unsigned int off = offset_in_page(at);
		size_t n = min_t(u64, len, PAGE_SIZE - off);
		int r;

#ifdef COLL_HAVE_KERNEL_SENDPAGE
		r = kernel_sendpage(sock, page, off, n,
				    MSG_NOSIGNAL | (len > n ? MSG_MORE : 0));
#else
		{
			struct bio_vec bv;
			struct msghdr msg = {
				.msg_flags = MSG_NOSIGNAL | MSG_SPLICE_PAGES |
					     (len > n ? MSG_MORE : 0),
			};

			bvec_set_page(&bv, page, n, off);
			iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, &bv, 1, n);
			r = sock_sendmsg(sock, &msg);
		}
#endif
		if (r == -EAGAIN || r == -EINTR)
			continue;
		if (r <= 0)
			return r ? r : -ECONNRESET;
		pos += r;
		len -= r;
	}
	return 0;
}

static void coll_tcp_timeouts(struct socket *sock, unsigned int ms)
{
	long t = msecs_to_jiffies(ms);

	sock->sk->sk_rcvtimeo = t;
	sock->sk->sk_sndtimeo = t;
}

/* ---- sending --------------------------------------------------------------- */

static void coll_tcp_tx_free(struct coll_tcp_tx *tx)
{
	coll_msg_free(tx->msg);
	if (tx->task)
		coll_task_put(tx->task);
	kfree(tx);
}

static int coll_tcp_queue(struct coll_tcp *t, struct coll_tcp_tx *tx)
{
	bool dead;

	spin_lock(&t->link.lock);
	dead = t->link.dead || t->stopping;
	if (!dead)
		list_add_tail(&tx->node, &t->txq);
	spin_unlock(&t->link.lock);
	if (dead) {
		coll_tcp_tx_free(tx);
		return -ECONNRESET;
	}
	wake_up(&t->txwq);
	return 0;
}

static int coll_tcp_send(struct coll_link *l, struct coll_msg *m)
{
	struct coll_tcp_tx *tx = kzalloc(sizeof(*tx), GFP_KERNEL);

	if (!tx) {
		coll_msg_free(m);
		return -ENOMEM;
	}
	tx->msg = m;
	return coll_tcp_queue(coll_tcp_of(l), tx);
}

static int coll_tcp_tx_thread(void *arg)
{
	struct coll_tcp *t = arg;
	struct coll_tcp_tx *tx;
	int r;

	while (!kthread_should_stop()) {
		wait_event_interruptible(t->txwq, kthread_should_stop() ||
					 READ_ONCE(t->stopping) ||
					 !list_empty_careful(&t->txq));
		spin_lock(&t->link.lock);
		tx = list_first_entry_or_null(&t->txq, struct coll_tcp_tx,
					      node);
		if (tx)
			list_del(&tx->node);
		spin_unlock(&t->link.lock);
		if (!tx) {
			if (READ_ONCE(t->stopping))
				break;
			continue;
		}
		r = coll_tcp_send_full(t->sock, &tx->msg->hdr,
				       sizeof(tx->msg->hdr),
				       tx->msg->len || tx->len);
		if (!r && tx->msg->len)
			r = coll_tcp_send_full(t->sock, tx->msg->data,
					       tx->msg->len, tx->len);
		if (!r && tx->len)
			r = coll_tcp_send_pages(t->sock, tx->ob, tx->pos,
						tx->len);
		if (!r)
			atomic64_add(sizeof(tx->msg->hdr) + tx->msg->len +
				     tx->len, &t->link.bytes_tx);
		coll_tcp_tx_free(tx);
		wake_up(&t->txwq);	/* a shutdown waiting for the queue */
		if (r) {
			if (!READ_ONCE(t->stopping))
				coll_link_fail(&t->link, -ECONNRESET,
					       "TCP send failed");
			break;
		}
	}
	/* Whatever is left is never sent. */
	spin_lock(&t->link.lock);
	while ((tx = list_first_entry_or_null(&t->txq, struct coll_tcp_tx,
					      node))) {
		list_del(&tx->node);
		spin_unlock(&t->link.lock);
		coll_tcp_tx_free(tx);
		spin_lock(&t->link.lock);
	}
	spin_unlock(&t->link.lock);
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
	return 0;
}

/* ---- reads ------------------------------------------------------------------ */

static int coll_tcp_read(struct coll_link *l, struct coll_rread *rr)
{
	struct coll_tcp *t = coll_tcp_of(l);
	struct coll_wire_read rd = {
		.rank = cpu_to_le32(rr->rank),
		.buf = cpu_to_le32(rr->buf),
		.off = cpu_to_le64(rr->off),
		.len = cpu_to_le64(rr->len),
	};
	bool dead;
	int ret;

	spin_lock(&l->lock);
	dead = l->dead || t->stopping;
	if (!dead) {
		rr->cookie = ++t->next_cookie;
		coll_link_get(l);
		rr->link = l;
		list_add_tail(&rr->node, &t->reads);
	}
	spin_unlock(&l->lock);
	if (dead)
		return -ECONNRESET;
	ret = coll_link_send(l, COLL_MSG_READ_REQ, rr->seq, 0, rr->cookie,
			     &rd, sizeof(rd));
	if (ret) {
		/* The link is failing: its shutdown completes the read. */
		coll_link_fail(l, -ECONNRESET, "TCP read request not sent");
	}
	return 0;
}

/* Our read @cookie, taken off the pending list, or NULL. */
static struct coll_rread *coll_tcp_take_read(struct coll_tcp *t, u64 cookie)
{
	struct coll_rread *rr, *found = NULL;

	spin_lock(&t->link.lock);
	list_for_each_entry(rr, &t->reads, node) {
		if (rr->cookie == cookie) {
			list_del_init(&rr->node);
			found = rr;
			break;
		}
	}
	spin_unlock(&t->link.lock);
	return found;
}

static void coll_tcp_end_read(struct coll_rread *rr, int status)
{
	struct coll_link *l = rr->link;

	coll_rread_complete(rr, status);
	coll_link_put(l);
}

/* A peer asks for bytes of one of our buffers. */
static int coll_tcp_serve(struct coll_tcp *t, const struct coll_wire_hdr *h)
{
	struct coll_wire_read rd;
	struct coll_tcp_tx *tx;
	struct coll_task *task = NULL;
	struct coll_obuf *ob = NULL;
	struct coll_msg *m;
	u64 pos = 0, len;
	int err;

	if (le32_to_cpu(h->len) != sizeof(rd) || h->round)
		return -EPROTO;
	err = coll_tcp_recv_full(t, &rd, sizeof(rd));
	if (err)
		return err;
	err = coll_xhost_serve_read(&t->link, le64_to_cpu(h->seq), &rd, &task,
				    &ob, &pos);
	if (err == -EPROTO)
		return err;
	len = err ? 0 : le64_to_cpu(rd.len);
	m = coll_msg_alloc(0);
	tx = kzalloc(sizeof(*tx), GFP_KERNEL);
	if (!m || !tx) {
		coll_msg_free(m);
		kfree(tx);
		if (task)
			coll_task_put(task);
		return -ENOMEM;
	}
	m->hdr.magic = cpu_to_le32(COLL_WIRE_MAGIC);
	m->hdr.type = COLL_MSG_READ_RESP;
	m->hdr.len = cpu_to_le32(len);
	m->hdr.round = cpu_to_le32(err ? -err : 0);
	m->hdr.seq = h->seq;
	m->hdr.arg = h->arg;
	tx->msg = m;
	tx->task = task;
	tx->ob = ob;
	tx->pos = pos;
	tx->len = len;
	coll_tcp_queue(t, tx);
	return 0;
}

/* The answer to one of our reads: straight into its sink. */
static int coll_tcp_answer(struct coll_tcp *t, const struct coll_wire_hdr *h)
{
	u32 len = le32_to_cpu(h->len), status = le32_to_cpu(h->round);
	struct coll_rread *rr = coll_tcp_take_read(t, le64_to_cpu(h->arg));
	int err;

	/*
	 * A read the link cannot finish fails as the link does (ECONNRESET:
	 * its communicator dies), not with the frame's own error, so that
	 * the collective says what happened to it.
	 */
	if (!rr || (status ? len : len != rr->len) ||
	    (status && !coll_link_errno_ok(status))) {
		if (rr)
			coll_tcp_end_read(rr, -ECONNRESET);
		return -EPROTO;
	}
	err = len ? coll_tcp_recv_full(t, rr->sink, len) : 0;
	atomic64_add(len, &t->link.bytes_rx);
	coll_tcp_end_read(rr, err ? -ECONNRESET : -(int)status);
	return err;
}

static int coll_tcp_rx_thread(void *arg)
{
	struct coll_tcp *t = arg;
	struct coll_wire_hdr h;
	struct coll_msg *m;
	int err;

	while (!kthread_should_stop()) {
		err = coll_tcp_recv_full(t, &h, sizeof(h));
		if (err)
			break;
		WRITE_ONCE(t->link.last_rx, jiffies);
		if (le32_to_cpu(h.magic) != COLL_WIRE_MAGIC ||
		    le32_to_cpu(h.len) > COLL_WIRE_MAX_PAYLOAD) {
			err = -EPROTO;
			break;
		}
		if (h.type == COLL_MSG_READ_REQ) {
			err = coll_tcp_serve(t, &h);
		} else if (h.type == COLL_MSG_READ_RESP) {
			err = coll_tcp_answer(t, &h);
		} else {
			m = coll_msg_alloc(le32_to_cpu(h.len));
			if (!m) {
				err = -ENOMEM;
				break;
			}
			m->hdr = h;
			err = m->len ? coll_tcp_recv_full(t, m->data, m->len) : 0;
			if (err)
				coll_msg_free(m);
			else
				err = coll_link_recv(&t->link, m);
		}
		if (err)
			break;
	}
	if (!READ_ONCE(t->stopping))
		coll_link_fail(&t->link, -ECONNRESET,
			       err == -EPROTO ? "invalid frame from the peer" :
			       "TCP connection lost");
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
	return 0;
}

/* ---- link life -------------------------------------------------------------- */

static void coll_tcp_shutdown(struct coll_link *l)
{
	struct coll_tcp *t = coll_tcp_of(l);
	struct coll_rread *rr;

	/* What is queued (a BYE) goes out first, if the peer takes it soon. */
	if (t->tx)
		wait_event_timeout(t->txwq, list_empty_careful(&t->txq),
				   msecs_to_jiffies(500));
	WRITE_ONCE(t->stopping, true);
	wake_up(&t->txwq);
	kernel_sock_shutdown(t->sock, SHUT_RDWR);
	if (t->rx)
		kthread_stop(t->rx);
	if (t->tx)
		kthread_stop(t->tx);
	t->rx = NULL;
	t->tx = NULL;
	/* Reads that will never be answered. */
	for (;;) {
		spin_lock(&l->lock);
		rr = list_first_entry_or_null(&t->reads, struct coll_rread,
					      node);
		if (rr)
			list_del_init(&rr->node);
		spin_unlock(&l->lock);
		if (!rr)
			break;
		coll_tcp_end_read(rr, -ECONNRESET);
	}
}

static void coll_tcp_free(struct coll_link *l)
{
	struct coll_tcp *t = coll_tcp_of(l);

	if (t->sock)
		sock_release(t->sock);
	kfree(t);
}

static void coll_tcp_info(struct coll_link *l, struct coll_peer_info *pi)
{
	struct coll_tcp *t = coll_tcp_of(l);

	pi->mtu = tcp_sk(t->sock->sk)->mss_cache;
}

static const struct coll_link_ops coll_tcp_ops = {
	.name = "tcp",
	.send = coll_tcp_send,
	.read = coll_tcp_read,
	.shutdown = coll_tcp_shutdown,
	.free = coll_tcp_free,
	.info = coll_tcp_info,
};

/* Wrap an authenticated socket in a link and start its threads. */
static struct coll_tcp *coll_tcp_link(struct coll_comm *comm, u32 host,
				      struct socket *sock, u32 fallback)
{
	struct coll_tcp *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	coll_link_init(&t->link, comm, host, &coll_tcp_ops);
	t->link.transport = COLL_TRANSPORT_TCP;
	t->link.owned = true;
	t->link.fallback = fallback;
	t->sock = sock;
	INIT_LIST_HEAD(&t->txq);
	INIT_LIST_HEAD(&t->reads);
	init_waitqueue_head(&t->txwq);
	coll_tcp_timeouts(sock, COLL_TCP_POLL_MS);
	t->rx = kthread_run(coll_tcp_rx_thread, t, "coll_rx/%u:%u",
			    comm->serial, host);
	if (IS_ERR(t->rx)) {
		t->rx = NULL;
		goto err_put;
	}
	t->tx = kthread_run(coll_tcp_tx_thread, t, "coll_tx/%u:%u",
			    comm->serial, host);
	if (IS_ERR(t->tx)) {
		t->tx = NULL;
		goto err_put;
	}
	return t;

err_put:
	coll_tcp_shutdown(&t->link);
	t->sock = NULL;		/* the caller releases it */
	coll_link_put(&t->link);
	return NULL;
}

static void coll_tcp_tune(struct socket *sock)
{
	tcp_sock_set_nodelay(sock->sk);
	sock_set_keepalive(sock->sk);
}

/* ---- the handshake ------------------------------------------------------------ */

static void coll_tcp_hello(struct coll_comm *comm, u32 host,
			   struct coll_wire_hello *hello)
{
	memset(hello, 0, sizeof(*hello));
	hello->magic = cpu_to_le32(COLL_WIRE_MAGIC);
	hello->version = cpu_to_le16(COLL_WIRE_VERSION);
	memcpy(hello->tag, comm->auth.tag, sizeof(hello->tag));
	hello->src_host = cpu_to_le16(comm->hosts->self);
	hello->dst_host = cpu_to_le16(host);
	memcpy(&hello->layout, comm->hosts->layout, sizeof(hello->layout));
	get_random_bytes(hello->nonce, sizeof(hello->nonce));
}

static struct socket *coll_tcp_dial(struct coll_comm *comm, u32 host)
{
	const struct coll_host *hst = &comm->hosts->tab[host];
	struct sockaddr_in6 sin6 = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(hst->port),
	};
	struct socket *sock;
	int r;

	memcpy(&sin6.sin6_addr, hst->addr, sizeof(sin6.sin6_addr));
	r = sock_create_kern(comm->net, AF_INET6, SOCK_STREAM, IPPROTO_TCP,
			     &sock);
	if (r)
		return ERR_PTR(r);
	coll_tcp_timeouts(sock, COLL_TCP_HANDSHAKE_MS);
	r = kernel_connect(sock, (struct sockaddr *)&sin6, sizeof(sin6), 0);
	if (r) {
		sock_release(sock);
		return ERR_PTR(r);
	}
	coll_tcp_tune(sock);
	return sock;
}

static const char coll_mac_reply[] = "collective reply v1";
static const char coll_mac_proof[] = "collective proof v1";

/*
 * One attempt to connect to @host and prove ourselves.  Return: 0 (the link
 * is attached), -EAGAIN (try again: not there yet), or a final -errno.
 */
static int coll_tcp_try(struct coll_comm *comm, u32 host, u32 fallback)
{
	struct coll_wire_hello hello;
	struct coll_wire_reply reply;
	struct coll_wire_proof proof = {
		.magic = cpu_to_le32(COLL_WIRE_MAGIC),
	};
	u8 mac[COLL_WIRE_MAC_BYTES];
	struct coll_tcp *t;
	struct socket *sock;
	int r;

	sock = coll_tcp_dial(comm, host);
	if (IS_ERR(sock))
		return -EAGAIN;
	coll_tcp_hello(comm, host, &hello);
	r = coll_tcp_send_full(sock, &hello, sizeof(hello), false);
	if (!r) {
		struct kvec iov = { &reply, sizeof(reply) };
		struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };

		r = kernel_recvmsg(sock, &msg, &iov, 1, sizeof(reply),
				   MSG_WAITALL);
		r = r == sizeof(reply) ? 0 : -EAGAIN;
	}
	if (r)
		goto err_release;
	r = -EAGAIN;
	if (le32_to_cpu(reply.magic) != COLL_WIRE_MAGIC ||
	    le16_to_cpu(reply.version) != COLL_WIRE_VERSION)
		goto err_release;
	if (le16_to_cpu(reply.status) == COLL_WIRE_REFUSED) {
		r = -EPROTO;	/* the peer has other tables */
		goto err_release;
	}
	if (le16_to_cpu(reply.status) != COLL_WIRE_OK)
		goto err_release;
	r = coll_auth_mac(&comm->auth, coll_mac_reply, &hello, sizeof(hello),
			  reply.nonce, sizeof(reply.nonce), mac);
	if (r || !coll_auth_equal(mac, reply.mac)) {
		r = -EAGAIN;	/* not who we want: keep trying */
		goto err_release;
	}
	r = coll_auth_mac(&comm->auth, coll_mac_proof, &hello, sizeof(hello),
			  &reply, sizeof(reply), proof.mac);
	if (!r)
		r = coll_tcp_send_full(sock, &proof, sizeof(proof), false);
	if (r) {
		r = -EAGAIN;
		goto err_release;
	}
	t = coll_tcp_link(comm, host, sock, fallback);
	if (!t) {
		r = -ENOMEM;
		goto err_release;
	}
	r = coll_link_attach(comm, &t->link);
	if (r)
		coll_link_discard(&t->link);
	return r;

err_release:
	memzero_explicit(mac, sizeof(mac));
	sock_release(sock);
	return r;
}

/**
 * coll_tcp_connect() - connect to a peer host's module, until a deadline
 * @comm: the communicator (the caller holds a reference)
 * @host: the peer's index
 * @deadline: jiffies
 * @fallback: why not RDMA (enum coll_fallback), for COLL_COMM_QUERY
 *
 * Return: 0 (the link is attached), -ETIMEDOUT, -EPROTO (the peer was
 * given other tables), or another -errno.
 */
int coll_tcp_connect(struct coll_comm *comm, u32 host, unsigned long deadline,
		     u32 fallback)
{
	unsigned int backoff = 20;
	int r;

	for (;;) {
		r = coll_tcp_try(comm, host, fallback);
		if (r != -EAGAIN)
			return r;
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		if (READ_ONCE(comm->join_err) || comm->dead)
			return -ECONNRESET;
		msleep(backoff);
		backoff = min(backoff * 2, 500U);
	}
}

/**
 * coll_tcp_accepted() - a connection came in on our listener
 * @net: its namespace
 * @sock: the new socket, ours to keep or release
 *
 * Runs in the module's workqueue: reads the HELLO and answers it with a
 * bounded wait, so that a slow or hostile client holds nothing else up.
 */
void coll_tcp_accepted(struct net *net, struct socket *sock)
{
	struct coll_wire_hello hello;
	struct coll_wire_reply reply = {
		.magic = cpu_to_le32(COLL_WIRE_MAGIC),
		.version = cpu_to_le16(COLL_WIRE_VERSION),
	};
	struct coll_wire_proof proof;
	struct coll_comm *comm = NULL;
	u8 mac[COLL_WIRE_MAC_BYTES];
	struct kvec iov;
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	struct coll_tcp *t;
	u32 src, dst;
	int r;

	coll_tcp_timeouts(sock, COLL_TCP_HANDSHAKE_MS);
	iov = (struct kvec){ &hello, sizeof(hello) };
	r = kernel_recvmsg(sock, &msg, &iov, 1, sizeof(hello), MSG_WAITALL);
	if (r != sizeof(hello) || le32_to_cpu(hello.magic) != COLL_WIRE_MAGIC ||
	    le16_to_cpu(hello.version) != COLL_WIRE_VERSION || hello.flags)
		goto out_release;
	src = le16_to_cpu(hello.src_host);
	dst = le16_to_cpu(hello.dst_host);
	comm = coll_comm_find_tag(net, hello.tag);
	reply.status = cpu_to_le16(COLL_WIRE_RETRY);
	if (comm && comm->hosts &&
	    (dst != comm->hosts->self || src >= dst ||
	     memcmp(&hello.layout, comm->hosts->layout,
		    sizeof(hello.layout)))) {
		/* Not a peer of this communicator as we know it. */
		reply.status = cpu_to_le16(COLL_WIRE_REFUSED);
		coll_comm_put(comm);
		comm = NULL;
	}
	if (comm && READ_ONCE(comm->state) == COLL_COMM_CONNECTING) {
		reply.status = cpu_to_le16(COLL_WIRE_OK);
		get_random_bytes(reply.nonce, sizeof(reply.nonce));
		if (coll_auth_mac(&comm->auth, coll_mac_reply, &hello,
				  sizeof(hello), reply.nonce,
				  sizeof(reply.nonce), reply.mac))
			goto out_put;
	}
	if (coll_tcp_send_full(sock, &reply, sizeof(reply), false) ||
	    le16_to_cpu(reply.status) != COLL_WIRE_OK)
		goto out_put;

	iov = (struct kvec){ &proof, sizeof(proof) };
	r = kernel_recvmsg(sock, &msg, &iov, 1, sizeof(proof), MSG_WAITALL);
	if (r != sizeof(proof) || le32_to_cpu(proof.magic) != COLL_WIRE_MAGIC ||
	    proof.__reserved)
		goto out_put;
	if (coll_auth_mac(&comm->auth, coll_mac_proof, &hello, sizeof(hello),
			  &reply, sizeof(reply), mac) ||
	    !coll_auth_equal(mac, proof.mac))
		goto out_put;		/* does not know the id */
	coll_tcp_tune(sock);
	/* the peer chose TCP: asked to, or RDMA did not reach us */
	t = coll_tcp_link(comm, src, sock, comm->hosts->flags &
			  COLL_COMM_F_TCP ? COLL_FALLBACK_ASKED :
			  COLL_FALLBACK_PEER);
	if (!t)
		goto out_put;
	if (coll_link_attach(comm, &t->link))
		coll_link_discard(&t->link);
	coll_comm_put(comm);
	return;

out_put:
	memzero_explicit(mac, sizeof(mac));
	if (comm)
		coll_comm_put(comm);
out_release:
	sock_release(sock);
}
