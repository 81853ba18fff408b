// SPDX-License-Identifier: GPL-2.0
/*
 * coll_wire_fuzz: a userspace attacker of the module's wire protocol
 * (kmod/coll_wire.h), for hosts-security.sh.  Two qemu guests: guest 0 is
 * the victim (real module ranks), guest 1 the attacker; meanwhile both run
 * two live communicators between real ranks, one over RDMA and one over
 * TCP, whose AllReduces are checked (--role live).
 *
 *   coll_wire_fuzz --role attacker --phase PHASE --victim IP --attacker IP
 *   coll_wire_fuzz --role victim   --phase PHASE --victim IP --attacker IP
 *   coll_wire_fuzz --role live  --victim IP --node I --stop FILE --ready FILE
 *   coll_wire_fuzz --role info                  (COLL_INFO's kernel bytes)
 *   coll_wire_fuzz --role idle --kernel-bytes N (all back to the load's)
 *
 * COLL_ID (32 hex digits, the same on both guests) seeds every id used.
 * Phases (the attacker prints one TAP line per case, with what the victim
 * saw when the case involves it):
 *
 *   unauth     no id: TCP and rdma_cm clients at the victim's module port
 *              that send random bytes, truncated, foreign or oversized
 *              HELLOs, hang, or come by the hundred.  Each is dropped
 *              within the handshake timeout; at most the module's bound of
 *              handshakes is held at once.
 *   tag        the attacker knows the id and plays host 0 of a 2-host
 *              communicator whose host 1 is a victim rank (the victim's
 *              module accepts): wrong layout, wrong PROOF, PROOF replayed
 *              from an earlier exchange (same and fresh HELLO), no PROOF,
 *              garbage before PROOF; only the last, proper handshake joins.
 *   fake-tcp   the attacker plays host 1 (the victim's module connects to
 *              it) over TCP; after the handshake it speaks the protocol
 *              (an honest run gives the victim a correct AllReduce) and
 *              then, per case, sends what no honest peer sends: the link
 *              must be dropped, the victim's collective fail with the
 *              documented errno in bounded time, its guard bytes and send
 *              buffer untouched.
 *   fake-rdma  the same over RDMA (rdma_cm, RC queue pair): garbage SENDs,
 *              RDMA READ/WRITE with made-up keys, reads and writes just
 *              outside a granted buffer.
 *
 * The victim and the attacker keep in step over a line-based control
 * connection (the attacker listens on --ctl-port): "case K ..." from the
 * attacker, "done K ..." back from the victim once its collective is over.
 */
#include <getopt.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "coll_selftest.h"
#include <libcollective.h>
#include "coll_sha256.h"

/* The wire format, from the module's own header. */
typedef uint8_t u8;
#define __packed __attribute__((packed))
#include "../kmod/coll_wire.h"

#define SLACK_MS	3000	/* TCG: what "at once" may take */
#define FAST_MS		SLACK_MS
#define MAX_FRAME	(sizeof(struct coll_wire_hdr) + COLL_WIRE_MAX_PAYLOAD)
#define MODULE_PENDING	64	/* COLL_NET_MAX_PENDING: handshakes held */
#define MODULE_RDMA_RECV 8	/* COLL_RDMA_RECV: the credits a frame may give */
#define MODULE_UNPROVEN	16	/* COLL_RDMA_MAX_UNPROVEN: RDMA links awaiting PROOF */

static struct {
	const char *role, *phase, *victim_ip, *attacker_ip, *stop, *ready;
	int port, fake_port, ctl_port, rdv_port, node;
	int peer_timeout_ms, handshake_ms;
	int flood_tcp, flood_rdma, flood_rdma_tag;
	uint8_t base_id[16];
} o = {
	.port = 20571, .fake_port = 20572, .ctl_port = 20573,
	.rdv_port = 29500, .peer_timeout_ms = 4000, .handshake_ms = 5000,
	.flood_tcp = 160, .flood_rdma = 24, .flood_rdma_tag = 40,
};

/* ---- TAP ---------------------------------------------------------------- */

static int tap_n, tap_failed;

static void __attribute__((format(printf, 2, 3)))
tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	if (!ok)
		tap_failed++;
	printf("%s %d ", ok ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void __attribute__((format(printf, 1, 2))) diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static int64_t now_ms(void)
{
	return st_now_ns() / 1000000;
}

/* ---- randomness --------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static void rnd_fill(void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)rnd();
}

static void nonce(uint8_t *p, size_t len)
{
	if (getrandom(p, len, 0) != (ssize_t)len)
		rnd_fill(p, len);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Element @i of rank @rank's send buffer in case @k (victim and attacker). */
static int32_t pattern(int k, int rank, uint64_t i)
{
	return (int32_t)mix(((uint64_t)k << 48) ^ ((uint64_t)rank << 40) ^ i);
}

/* ---- ids, tags, MACs (coll_auth.c, coll_hosts.c) ------------------------ */

static void hmac(const uint8_t id[16], const char *label, const void *a,
		 size_t alen, const void *b, size_t blen, uint8_t out[32])
{
	const void *parts[3] = { label, a ? a : "", b ? b : "" };
	size_t lens[3] = { strlen(label) + 1, a ? alen : 0, b ? blen : 0 };

	coll_hmac_sha256(id, 16, parts, lens, 3, out);
}

struct tables {
	struct coll_host h[2];
	uint32_t rank_host[2];
};

struct ids {
	uint8_t id[16];
	uint8_t tag[COLL_WIRE_TAG_BYTES];
	uint8_t layout[COLL_WIRE_MAC_BYTES];
	struct tables t;
};

enum { PH_TAG = 1, PH_FAKE_TCP, PH_FAKE_RDMA, PH_LIVE_RDMA, PH_LIVE_TCP };

static void v4mapped(uint8_t a[16], const char *ip)
{
	memset(a, 0, 16);
	a[10] = 0xff;
	a[11] = 0xff;
	if (ip)
		inet_pton(AF_INET, ip, a + 12);
}

/*
 * The id and tables of case @k of @phase: two hosts, one rank each; the
 * victim is host 0 (it connects: fake phases) or host 1 (it accepts).
 */
static void ids_for(struct ids *x, int phase, int k, bool victim_host0,
		    uint32_t flags)
{
	char label[48];

	memcpy(x->id, o.base_id, 16);
	x->id[12] ^= 0x5a;
	x->id[13] ^= (uint8_t)phase;
	x->id[14] ^= (uint8_t)(k >> 8);
	x->id[15] ^= (uint8_t)k;
	memset(&x->t, 0, sizeof(x->t));
	v4mapped(x->t.h[0].addr, victim_host0 ? o.victim_ip : o.attacker_ip);
	x->t.h[0].port = victim_host0 ? o.port : o.fake_port;
	v4mapped(x->t.h[1].addr, victim_host0 ? o.attacker_ip : o.victim_ip);
	x->t.h[1].port = victim_host0 ? o.fake_port : o.port;
	x->t.rank_host[0] = 0;
	x->t.rank_host[1] = 1;
	{
		uint8_t mac[32];

		hmac(x->id, "collective tag v1", NULL, 0, NULL, 0, mac);
		memcpy(x->tag, mac, sizeof(x->tag));
	}
	/* the module's label: the victim's COLL_COMM_INIT flags enter it */
	snprintf(label, sizeof(label), "collective layout v1 flags %u", flags);
	hmac(x->id, label, x->t.h, sizeof(x->t.h),
	     x->t.rank_host, sizeof(x->t.rank_host), x->layout);
}

static void hello_make(struct coll_wire_hello *h, const struct ids *x,
		       uint16_t src, uint16_t dst, bool rdma)
{
	memset(h, 0, sizeof(*h));
	h->magic = htole32(COLL_WIRE_MAGIC);
	h->version = htole16(COLL_WIRE_VERSION);
	h->flags = htole16(rdma ? COLL_WIRE_F_RDMA : 0);
	memcpy(h->tag, x->tag, sizeof(h->tag));
	h->src_host = htole16(src);
	h->dst_host = htole16(dst);
	memcpy(&h->layout, x->layout, sizeof(h->layout));
	nonce(h->nonce, sizeof(h->nonce));
}

/* A HELLO for no communicator: a random tag. */
static void hello_random(struct coll_wire_hello *h, bool rdma)
{
	struct ids x;

	memset(&x, 0, sizeof(x));
	nonce(x.tag, sizeof(x.tag));
	nonce(x.layout, sizeof(x.layout));
	hello_make(h, &x, 0, 1, rdma);
}

static void reply_mac(const struct ids *x, const struct coll_wire_hello *h,
		      const uint8_t *nonceb, uint8_t out[32])
{
	hmac(x->id, "collective reply v1", h, sizeof(*h), nonceb,
	     COLL_WIRE_NONCE_BYTES, out);
}

static void proof_make(const struct ids *x, const struct coll_wire_hello *h,
		       const struct coll_wire_reply *r,
		       struct coll_wire_proof *p)
{
	memset(p, 0, sizeof(*p));
	p->magic = htole32(COLL_WIRE_MAGIC);
	hmac(x->id, "collective proof v1", h, sizeof(*h), r, sizeof(*r),
	     p->mac);
}

static void reply_make(const struct ids *x, const struct coll_wire_hello *h,
		       struct coll_wire_reply *r)
{
	memset(r, 0, sizeof(*r));
	r->magic = htole32(COLL_WIRE_MAGIC);
	r->version = htole16(COLL_WIRE_VERSION);
	r->status = htole16(COLL_WIRE_OK);
	nonce(r->nonce, sizeof(r->nonce));
	reply_mac(x, h, r->nonce, r->mac);
}

static bool reply_valid(const struct ids *x, const struct coll_wire_hello *h,
			const struct coll_wire_reply *r)
{
	uint8_t mac[32];

	reply_mac(x, h, r->nonce, mac);
	return le32toh(r->magic) == COLL_WIRE_MAGIC &&
	       le16toh(r->status) == COLL_WIRE_OK &&
	       !memcmp(mac, r->mac, sizeof(mac));
}

static void hdr_make(struct coll_wire_hdr *h, uint8_t type, uint32_t len,
		     uint32_t round, uint64_t seq, uint64_t arg)
{
	memset(h, 0, sizeof(*h));
	h->magic = htole32(COLL_WIRE_MAGIC);
	h->type = type;
	h->len = htole32(len);
	h->round = htole32(round);
	h->seq = htole64(seq);
	h->arg = htole64(arg);
}

/* ---- TCP ------------------------------------------------------------------ */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -errno : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int tcp_dial(const char *ip, int port, int timeout_ms)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, r;
	struct pollfd pf;
	socklen_t sl = sizeof(r);

	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, ip, &sin.sin_addr);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	set_nonblock(fd);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) &&
	    errno != EINPROGRESS) {
		r = -errno;
		close(fd);
		return r;
	}
	pf = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&pf, 1, timeout_ms) != 1) {
		close(fd);
		return -ETIMEDOUT;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &sl) || r) {
		close(fd);
		return r ? -r : -EIO;
	}
	return fd;
}

static int tcp_listen(int port, int backlog)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_ANY) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(fd, backlog)) {
		int r = -errno;

		close(fd);
		return r;
	}
	set_nonblock(fd);
	return fd;
}

static int tcp_accept(int lfd, int timeout_ms)
{
	struct pollfd pf = { .fd = lfd, .events = POLLIN };
	int fd, one = 1;

	if (poll(&pf, 1, timeout_ms) != 1)
		return -ETIMEDOUT;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Write all of @len bytes: 0, -ETIMEDOUT, or -errno (the peer closed). */
static int io_wr(int fd, const void *buf, size_t len, int timeout_ms)
{
	const uint8_t *p = buf;
	int64_t end = now_ms() + timeout_ms;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		int64_t left = end - now_ms();
		ssize_t r;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pf, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		r = send(fd, p, len, MSG_NOSIGNAL);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r < 0)
			return -errno;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/*
 * Read @len bytes: @len, or fewer if the peer closed first (0 for a
 * connection closed at once), -ETIMEDOUT, or -errno.
 */
static ssize_t io_rd(int fd, void *buf, size_t len, int timeout_ms)
{
	uint8_t *p = buf;
	size_t got = 0;
	int64_t end = now_ms() + timeout_ms;

	while (got < len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int64_t left = end - now_ms();
		ssize_t r;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pf, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		r = recv(fd, p + got, len - got, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r < 0)
			return got ? (ssize_t)got : -errno;
		if (!r)
			return (ssize_t)got;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/*
 * Wait for the peer to close (EOF or reset), draining what it sends.
 * Return: milliseconds it took, or -1 if it did not within @timeout_ms.
 */
static int64_t wait_closed(int fd, int timeout_ms)
{
	int64_t t0 = now_ms(), end = t0 + timeout_ms;
	uint8_t buf[4096];

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int64_t left = end - now_ms();
		ssize_t r;

		if (left <= 0)
			return -1;
		if (poll(&pf, 1, (int)left) < 0 && errno != EINTR)
			return now_ms() - t0;
		r = recv(fd, buf, sizeof(buf), 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0)
			return now_ms() - t0;
	}
}

/* ---- watching connections that should be dropped ------------------------ */

struct watch {
	int fd;
	int64_t t0;		/* ms */
	int64_t closed;		/* ms after t0, -1 while open */
	size_t got;		/* bytes the module sent */
};

struct watchset {
	struct watch *w;
	int n;
	int timeout_ms;
	pthread_t thr;
};

static void *watch_thread(void *arg)
{
	struct watchset *ws = arg;
	struct pollfd *pf = calloc((size_t)ws->n, sizeof(*pf));
	int64_t end = now_ms() + ws->timeout_ms;
	uint8_t buf[4096];
	int i, open;

	if (!pf)
		return NULL;
	for (;;) {
		open = 0;
		for (i = 0; i < ws->n; i++) {
			pf[i].fd = ws->w[i].closed < 0 ? ws->w[i].fd : -1;
			pf[i].events = POLLIN;
			pf[i].revents = 0;
			open += ws->w[i].closed < 0;
		}
		if (!open || now_ms() > end)
			break;
		if (poll(pf, (nfds_t)ws->n, 50) <= 0)
			continue;
		for (i = 0; i < ws->n; i++) {
			ssize_t r;

			if (!pf[i].revents)
				continue;
			r = recv(ws->w[i].fd, buf, sizeof(buf), 0);
			if (r > 0)
				ws->w[i].got += (size_t)r;
			else if (r == 0 || (errno != EAGAIN && errno != EINTR))
				ws->w[i].closed = now_ms() - ws->w[i].t0;
		}
	}
	free(pf);
	return NULL;
}

static void watch_start(struct watchset *ws, struct watch *w, int n,
			int timeout_ms)
{
	ws->w = w;
	ws->n = n;
	ws->timeout_ms = timeout_ms;
	pthread_create(&ws->thr, NULL, watch_thread, ws);
}

static void watch_end(struct watchset *ws)
{
	int i;

	pthread_join(ws->thr, NULL);
	for (i = 0; i < ws->n; i++)
		if (ws->w[i].fd >= 0)
			close(ws->w[i].fd);
}

/* ---- the control connection ---------------------------------------------- */

struct ctl {
	int fd;
	char buf[512];
	size_t have;
};

static int ctl_printf(struct ctl *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int ctl_printf(struct ctl *c, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return io_wr(c->fd, line, (size_t)n, 10000);
}

/* The next line (without its newline), or -ETIMEDOUT / -ECONNRESET. */
static int ctl_line(struct ctl *c, char *out, size_t len, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(c->buf, '\n', c->have);
		struct pollfd pf = { .fd = c->fd, .events = POLLIN };
		int64_t left;
		ssize_t r;

		if (nl) {
			size_t n = (size_t)(nl - c->buf);

			snprintf(out, len, "%.*s", (int)n, c->buf);
			memmove(c->buf, nl + 1, c->have - n - 1);
			c->have -= n + 1;
			return 0;
		}
		left = end - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		if (c->have == sizeof(c->buf))
			return -EPROTO;
		poll(&pf, 1, (int)left);
		r = recv(c->fd, c->buf + c->have, sizeof(c->buf) - c->have, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0)
			return -ECONNRESET;
		c->have += (size_t)r;
	}
}

/* ---- RDMA (librdmacm, RC) -------------------------------------------------- */

#define R_SLOTS		16
#define R_SEND_BYTES	(128 * 1024)
#define R_READ_BYTES	(256 * 1024)
#define R_MODEL_BYTES	(2 * 256 * 1024)

enum { RS_NEW, RS_ROUTE, RS_CONNECTING, RS_UP, RS_REJECTED, RS_ERROR,
       RS_DOWN };

struct rconn {
	bool big;		/* room to read, write and serve */
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *mem;
	size_t slot, memlen;
	int state;
	bool was_up;		/* it was established once */
	int64_t t_state;	/* ms, when state last changed */
	uint8_t priv[256];
	int priv_len;
	int owed;		/* receives reposted and not yet told */
	const void *cpriv;	/* active: what to connect with */
	uint8_t cpriv_len;
	struct ibv_wc last;	/* the last completion that was not a receive */
	bool have_last;
};

static struct rdma_event_channel *r_ch;

/* CONNECT_REQUESTs waiting to be looked at (the fake host's listener). */
struct rreq {
	struct rdma_cm_id *id;
	uint8_t priv[256];
	int priv_len;
	uint8_t rr, id_depth;	/* the requester's responder resources, depth */
};

static struct rreq r_reqs[32];
static int r_nreqs;

static uint8_t *r_send_buf(struct rconn *rc)
{
	return rc->mem + R_SLOTS * rc->slot;
}

static uint8_t *r_read_buf(struct rconn *rc)
{
	return r_send_buf(rc) + R_SEND_BYTES;
}

static uint8_t *r_model(struct rconn *rc)
{
	return r_read_buf(rc) + R_READ_BYTES;
}

static int r_post_recv(struct rconn *rc, int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(rc->mem + (size_t)i * rc->slot),
		.length = (uint32_t)rc->slot,
		.lkey = rc->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(rc->id->qp, &wr, &bad);
}

/* PD, CQ, memory, QP, receives posted: before connect or accept. */
static int r_setup(struct rconn *rc)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 64, .max_recv_wr = R_SLOTS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	int i;

	rc->pd = ibv_alloc_pd(rc->id->verbs);
	rc->cq = rc->pd ? ibv_create_cq(rc->id->verbs, 256, NULL, NULL, 0) :
		 NULL;
	rc->memlen = R_SLOTS * rc->slot + (rc->big ? R_SEND_BYTES +
					    R_READ_BYTES + R_MODEL_BYTES : 8192);
	rc->mem = rc->cq ? aligned_alloc(4096, rc->memlen) : NULL;
	if (!rc->mem)
		return -ENOMEM;
	memset(rc->mem, 0, rc->memlen);
	rc->mr = ibv_reg_mr(rc->pd, rc->mem, rc->memlen,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!rc->mr)
		return -errno;
	qa.send_cq = rc->cq;
	qa.recv_cq = rc->cq;
	if (rdma_create_qp(rc->id, rc->pd, &qa))
		return -errno;
	for (i = 0; i < R_SLOTS; i++)
		if (r_post_recv(rc, i))
			return -EIO;
	return 0;
}

static struct rconn *r_new(size_t slot, bool big)
{
	struct rconn *rc = calloc(1, sizeof(*rc));

	if (rc) {
		rc->slot = slot;
		rc->big = big;
	}
	return rc;
}

static void r_free(struct rconn *rc)
{
	if (!rc)
		return;
	if (rc->id) {
		if (rc->id->qp)
			rdma_destroy_qp(rc->id);
		rdma_destroy_id(rc->id);
	}
	if (rc->mr)
		ibv_dereg_mr(rc->mr);
	free(rc->mem);
	if (rc->cq)
		ibv_destroy_cq(rc->cq);
	if (rc->pd)
		ibv_dealloc_pd(rc->pd);
	free(rc);
}

/* Was it up, and has the peer dropped it since? */
static bool r_gone(const struct rconn *rc)
{
	return rc->was_up && rc->state != RS_UP;
}

static void r_set(struct rconn *rc, int state)
{
	rc->state = state;
	rc->t_state = now_ms();
}

static void r_copy_priv(struct rconn *rc, const struct rdma_cm_event *ev)
{
	rc->priv_len = ev->param.conn.private_data ?
		       ev->param.conn.private_data_len : 0;
	if (rc->priv_len > (int)sizeof(rc->priv))
		rc->priv_len = sizeof(rc->priv);
	if (rc->priv_len)
		memcpy(rc->priv, ev->param.conn.private_data,
		       (size_t)rc->priv_len);
}

/* An event for one of our connections. */
static void r_event(struct rconn *rc, const struct rdma_cm_event *ev)
{
	struct rdma_conn_param cp = {
		.responder_resources = 16,
		.initiator_depth = 16,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(rc->id, 2000))
			r_set(rc, RS_ERROR);
		else
			r_set(rc, RS_ROUTE);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		cp.private_data = rc->cpriv;
		cp.private_data_len = rc->cpriv_len;
		if (r_setup(rc) || rdma_connect(rc->id, &cp))
			r_set(rc, RS_ERROR);
		else
			r_set(rc, RS_CONNECTING);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		r_copy_priv(rc, ev);
		r_set(rc, RS_UP);
		rc->was_up = true;
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (!rc->was_up)
			r_copy_priv(rc, ev);
		r_set(rc, RS_REJECTED);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		r_set(rc, RS_ERROR);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		r_set(rc, RS_DOWN);
		break;
	default:
		break;
	}
}

/* Handle one CM event if one comes within @timeout_ms: 1, or 0. */
static int r_service(int timeout_ms)
{
	struct pollfd pf = { .fd = r_ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pf, 1, timeout_ms) != 1)
		return 0;
	if (rdma_get_cm_event(r_ch, &ev))
		return 0;
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		if (r_nreqs < (int)(sizeof(r_reqs) / sizeof(r_reqs[0]))) {
			struct rreq *q = &r_reqs[r_nreqs++];

			q->id = ev->id;
			q->priv_len = ev->param.conn.private_data ?
				      ev->param.conn.private_data_len : 0;
			if (q->priv_len > (int)sizeof(q->priv))
				q->priv_len = sizeof(q->priv);
			memcpy(q->priv, ev->param.conn.private_data,
			       (size_t)q->priv_len);
			q->rr = ev->param.conn.responder_resources;
			q->id_depth = ev->param.conn.initiator_depth;
			ev->id->context = NULL;
		} else {
			rdma_reject(ev->id, NULL, 0);
		}
	} else if (ev->id && ev->id->context) {
		r_event(ev->id->context, ev);
	}
	rdma_ack_cm_event(ev);
	return 1;
}

/* Handle every CM event already there. */
static void r_service_all(void)
{
	while (r_service(0))
		;
}

static void r_sockaddr(struct sockaddr_in *sin, const char *ip, int port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	inet_pton(AF_INET, ip, &sin->sin_addr);
}

/* Start connecting to @ip:@port with @priv as the request's private data. */
static struct rconn *r_connect_start(const char *ip, int port,
				     const void *priv, uint8_t len,
				     size_t slot)
{
	struct rconn *rc = r_new(slot, false);
	struct sockaddr_in sin;

	if (!rc)
		return NULL;
	rc->cpriv = priv;
	rc->cpriv_len = len;
	if (rdma_create_id(r_ch, &rc->id, rc, RDMA_PS_TCP)) {
		rc->id = NULL;
		r_set(rc, RS_ERROR);
		return rc;
	}
	r_sockaddr(&sin, ip, port);
	if (rdma_resolve_addr(rc->id, NULL, (struct sockaddr *)&sin, 2000))
		r_set(rc, RS_ERROR);
	else
		r_set(rc, RS_NEW);
	return rc;
}

static bool r_settled(const struct rconn *rc)
{
	return rc->state >= RS_UP;
}

/* Wait until every connection is up, rejected or failed. */
static void r_wait_settled(struct rconn **rc, int n, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	int i;

	for (;;) {
		for (i = 0; i < n && (!rc[i] || r_settled(rc[i])); i++)
			;
		if (i == n || now_ms() > end)
			return;
		r_service(20);
	}
}

/* One connection, to the end of its connect: its state. */
static struct rconn *r_connect(const char *ip, int port, const void *priv,
			       uint8_t len, size_t slot)
{
	struct rconn *rc = r_connect_start(ip, port, priv, len, slot);

	if (rc)
		r_wait_settled(&rc, 1, 10000);
	return rc;
}

/*
 * Wait for the peer to drop a connection that was up: ms it took, or -1.
 * A peer that drops it before its CM has seen our RTU rejects it (REJ)
 * rather than disconnects.
 */
static int64_t r_wait_down(struct rconn *rc, int timeout_ms)
{
	int64_t t0 = now_ms(), end = t0 + timeout_ms;

	while (rc->state == RS_UP && now_ms() < end)
		r_service(20);
	if (rc->state != RS_UP)
		return (rc->t_state > t0 ? rc->t_state : now_ms()) - t0;
	return -1;
}

/* The next completion within @timeout_ms: 1, or 0. */
static int r_poll(struct rconn *rc, struct ibv_wc *wc, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;

	for (;;) {
		int n = ibv_poll_cq(rc->cq, 1, wc);

		if (n > 0)
			return 1;
		if (n < 0 || now_ms() > end || r_gone(rc))
			return 0;
		r_service_all();
		st_sleep_us(300);
	}
}

/*
 * The next message the peer sent: its length, or -ETIMEDOUT, or
 * -ECONNRESET (a receive completed in error: the QP is down).  Other
 * completions are kept in rc->last.
 */
static int r_recv(struct rconn *rc, void *buf, size_t len, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	struct ibv_wc wc;

	for (;;) {
		int64_t left = end - now_ms();

		if (left <= 0 || !r_poll(rc, &wc, (int)left))
			return r_gone(rc) ? -ECONNRESET : -ETIMEDOUT;
		if (wc.wr_id >= R_SLOTS) {
			rc->last = wc;
			rc->have_last = true;
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS)
			return -ECONNRESET;
		if (wc.byte_len > len)
			return -EMSGSIZE;
		memcpy(buf, rc->mem + wc.wr_id * rc->slot, wc.byte_len);
		if (r_post_recv(rc, (int)wc.wr_id))
			return -ECONNRESET;
		rc->owed++;
		return (int)wc.byte_len;
	}
}

/* Post one work request from our memory and wait for it: its status. */
static int r_post_wait(struct rconn *rc, enum ibv_wr_opcode op, uint64_t wrid,
		       uint8_t *local, uint32_t len, uint64_t raddr,
		       uint32_t rkey, int timeout_ms)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = len,
			       .lkey = rc->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wrid, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;
	int64_t end = now_ms() + timeout_ms;
	struct ibv_wc wc;

	rc->have_last = false;
	if (ibv_post_send(rc->id->qp, &wr, &bad))
		return -1;
	while (now_ms() < end) {
		if (rc->have_last && rc->last.wr_id == wrid)
			return rc->last.status;
		if (!r_poll(rc, &wc, 50)) {
			if (r_gone(rc))
				return -3;
			continue;
		}
		if (wc.wr_id == wrid)
			return wc.status;
		if (wc.wr_id < R_SLOTS) {
			/* a message while we wait: repost, count */
			if (wc.status == IBV_WC_SUCCESS &&
			    !r_post_recv(rc, (int)wc.wr_id))
				rc->owed++;
		}
	}
	return -2;
}

/* One SEND of @len raw bytes: its completion status (0 = success). */
static int r_send_raw(struct rconn *rc, const void *buf, size_t len)
{
	if (len > (rc->big ? R_SEND_BYTES : 8192))
		return -1;
	memcpy(r_send_buf(rc), buf, len);
	return r_post_wait(rc, IBV_WR_SEND, 100, r_send_buf(rc), (uint32_t)len,
			   0, 0, 5000);
}

/* Accept a request on the fake host's listener, REPLY as private data. */
static int r_accept(struct rconn *rc, const struct rreq *q, const void *priv,
		    uint8_t len)
{
	uint8_t depth = q->rr < q->id_depth ? q->rr : q->id_depth;
	struct rdma_conn_param cp = {
		.private_data = priv,
		.private_data_len = len,
		.responder_resources = depth < 16 ? depth : 16,
		.initiator_depth = depth < 16 ? depth : 16,
		.rnr_retry_count = 7,
	};
	int64_t end = now_ms() + 10000;

	rc->id = q->id;
	rc->id->context = rc;
	if (r_setup(rc) || rdma_accept(rc->id, &cp))
		return -EIO;
	r_set(rc, RS_CONNECTING);
	while (rc->state == RS_CONNECTING && now_ms() < end)
		r_service(20);
	return rc->state == RS_UP ? 0 : -ECONNRESET;
}

/* ---- one link, as the fake host sees it ----------------------------------- */

struct peer {
	bool rdma;
	int fd;			/* TCP */
	struct rconn *rc;	/* RDMA */
	struct ids x;
	int k;			/* the case: inputs are pattern(k, rank, i) */
	uint32_t count;		/* int32 elements of the collective */
	int replay;		/* 1: RETRY, 2: an old REPLY, 3: done */
	struct coll_wire_reply old_reply;
	/* what the module told us */
	bool have_ready0;
	uint64_t seq;
	struct coll_wire_desc desc;
	struct coll_wire_export exp[64];
	uint32_t nexp;
	uint32_t mod_ready;	/* READY rounds received */
	uint32_t reads;		/* READ_REQs served */
	bool bye;
	bool aborted;
	uint64_t abort_arg;
	/* a received frame */
	struct coll_wire_hdr h;
	uint8_t *data;
	uint32_t len;
	uint8_t *buf;		/* MAX_FRAME */
};

/* Send a frame; credits: -1 gives back what we owe (RDMA), else as given. */
static int peer_send(struct peer *p, uint8_t type, uint32_t round,
		     uint64_t seq, uint64_t arg, const void *payload,
		     uint32_t len, int credits)
{
	struct coll_wire_hdr h;

	hdr_make(&h, type, len, round, seq, arg);
	if (!p->rdma) {
		int r = io_wr(p->fd, &h, sizeof(h), 5000);

		if (!r && len)
			r = io_wr(p->fd, payload, len, 5000);
		return r;
	}
	if (credits < 0) {
		credits = p->rc->owed > MODULE_RDMA_RECV ?
			  MODULE_RDMA_RECV : p->rc->owed;
		p->rc->owed -= credits;
	}
	h.credits = htole16((uint16_t)credits);
	if (sizeof(h) + len > R_SEND_BYTES)
		return -EMSGSIZE;
	memcpy(r_send_buf(p->rc), &h, sizeof(h));
	if (len)
		memcpy(r_send_buf(p->rc) + sizeof(h), payload, len);
	return r_post_wait(p->rc, IBV_WR_SEND, 100, r_send_buf(p->rc),
			   (uint32_t)(sizeof(h) + len), 0, 0, 5000) ?
	       -ECONNRESET : 0;
}

/* Raw bytes: on TCP as they are, on RDMA as one SEND. */
static int peer_raw(struct peer *p, const void *buf, size_t len)
{
	if (!p->rdma)
		return io_wr(p->fd, buf, len, 5000);
	return r_send_raw(p->rc, buf, len) ? -ECONNRESET : 0;
}

/* The next frame into p->h, p->data, p->len: 0, -ETIMEDOUT, -ECONNRESET. */
static int peer_recv(struct peer *p, int timeout_ms)
{
	ssize_t r;

	if (p->rdma) {
		int n = r_recv(p->rc, p->buf, MAX_FRAME, timeout_ms);

		if (n < 0)
			return n;
		if (n < (int)sizeof(p->h))
			return -EPROTO;
		memcpy(&p->h, p->buf, sizeof(p->h));
		p->data = p->buf + sizeof(p->h);
		p->len = (uint32_t)n - sizeof(p->h);
		return le32toh(p->h.len) == p->len ? 0 : -EPROTO;
	}
	r = io_rd(p->fd, &p->h, sizeof(p->h), timeout_ms);
	if (r == -ETIMEDOUT)
		return (int)r;
	if (r != sizeof(p->h))
		return -ECONNRESET;
	p->len = le32toh(p->h.len);
	if (le32toh(p->h.magic) != COLL_WIRE_MAGIC ||
	    p->len > COLL_WIRE_MAX_PAYLOAD)
		return -EPROTO;
	p->data = p->buf;
	r = p->len ? io_rd(p->fd, p->data, p->len, 5000) : 0;
	return r == (ssize_t)p->len ? 0 : -ECONNRESET;
}

/* The bytes [off, off + len) of rank 1's buffer @buf, as an honest host 1. */
static void model_bytes(const struct peer *p, uint32_t buf, uint64_t off,
			uint64_t len, uint8_t *out)
{
	uint64_t i;

	for (i = 0; i < len; i++) {
		uint64_t e = (off + i) / 4;
		int32_t v = e < p->count ? pattern(p->k, 1, e) : 0;

		if (buf == 1 && e < p->count)
			v = (int32_t)((uint32_t)v +
				      (uint32_t)pattern(p->k, 0, e));
		out[i] = (uint8_t)((uint32_t)v >> (8 * ((off + i) % 4)));
	}
}

/* Our READY(@round); round 0 carries the agreement (and our grants). */
static int peer_ready(struct peer *p, uint32_t round, bool bad_exports,
		      bool bad_key)
{
	uint8_t pl[sizeof(struct coll_wire_desc) +
		   2 * sizeof(struct coll_wire_export)];
	struct coll_wire_desc d = p->desc;
	struct coll_wire_export e[2];
	uint32_t len = 0, n = 0, b;

	if (!round) {
		if (p->rdma) {
			memset(e, 0, sizeof(e));
			for (b = 0; b < 2; b++) {
				uint8_t *m = r_model(p->rc) + b * (R_MODEL_BYTES / 2);

				model_bytes(p, b, 0, (uint64_t)p->count * 4, m);
				e[b].rank = htole32(1);
				e[b].buf = htole32(b);
				e[b].rkey = htole32(p->rc->mr->rkey ^
						    (bad_key ? 0x5a5a00 : 0));
				e[b].off = 0;
				e[b].len = htole64((uint64_t)p->count * 4 +
						   (bad_exports ? 4096 : 0));
				e[b].addr = htole64((uintptr_t)m);
			}
			n = 2;
		}
		d.nexports = htole32(n);
		memcpy(pl, &d, sizeof(d));
		memcpy(pl + sizeof(d), e, n * sizeof(e[0]));
		len = sizeof(d) + n * sizeof(e[0]);
	}
	/* eager limit 0: the module reads everything it needs from us */
	return peer_send(p, COLL_MSG_READY, round, p->seq, 0, pl, len, -1);
}

/* Take in what the module sent in p->h (READY(0): the agreement, grants). */
static void peer_note(struct peer *p)
{
	uint32_t i;

	switch (p->h.type) {
	case COLL_MSG_READY:
		if (!le32toh(p->h.round) && p->len >= sizeof(p->desc)) {
			p->have_ready0 = true;
			p->seq = le64toh(p->h.seq);
			memcpy(&p->desc, p->data, sizeof(p->desc));
			p->nexp = le32toh(p->desc.nexports);
			if (p->nexp > 64)
				p->nexp = 64;
			for (i = 0; i < p->nexp &&
			     sizeof(p->desc) + (i + 1) * sizeof(p->exp[0]) <= p->len;
			     i++)
				memcpy(&p->exp[i], p->data + sizeof(p->desc) +
				       i * sizeof(p->exp[0]), sizeof(p->exp[0]));
			p->nexp = i;
		}
		p->mod_ready = le32toh(p->h.round) + 1;
		break;
	case COLL_MSG_ABORT:
		p->aborted = true;
		p->abort_arg = le64toh(p->h.arg);
		break;
	case COLL_MSG_BYE:
		p->bye = true;
		break;
	default:
		break;
	}
}

/* Answer a READ_REQ honestly. */
static int peer_serve(struct peer *p)
{
	struct coll_wire_read rd;
	uint64_t len;
	uint8_t *out;
	int r;

	if (p->len != sizeof(rd))
		return -EPROTO;
	memcpy(&rd, p->data, sizeof(rd));
	len = le64toh(rd.len);
	if (le32toh(rd.rank) != 1 || len > COLL_WIRE_MAX_PAYLOAD)
		return -EPROTO;
	out = malloc(len ? len : 1);
	if (!out)
		return -ENOMEM;
	model_bytes(p, le32toh(rd.buf), le64toh(rd.off), len, out);
	r = peer_send(p, COLL_MSG_READ_RESP, 0, le64toh(p->h.seq),
		      le64toh(p->h.arg), out, (uint32_t)len, 0);
	free(out);
	p->reads++;
	return r;
}

/* Honest handling of p->h: mirror READY, serve reads. */
static int peer_honest(struct peer *p)
{
	peer_note(p);
	if (p->h.type == COLL_MSG_READY)
		return peer_ready(p, le32toh(p->h.round), false, false);
	if (p->h.type == COLL_MSG_READ_REQ)
		return peer_serve(p);
	return 0;
}

/* Has the module closed the link?  ms it took, or -1 after @timeout_ms. */
static int64_t peer_wait_closed(struct peer *p, int timeout_ms)
{
	return p->rdma ? r_wait_down(p->rc, timeout_ms) :
	       wait_closed(p->fd, timeout_ms);
}

static void peer_close(struct peer *p)
{
	if (p->rdma) {
		if (p->rc && p->rc->state == RS_UP)
			rdma_disconnect(p->rc->id);
		r_free(p->rc);
		p->rc = NULL;
	} else if (p->fd >= 0) {
		close(p->fd);
	}
	p->fd = -1;
	free(p->buf);
	p->buf = NULL;
}

/*
 * Be host 1 for case @k: take the module's connection (TCP or rdma_cm) on
 * the fake host's listener, REPLY, check its PROOF.  Connections for other
 * tags (a previous case's retries) are turned away.
 */
static int peer_accept(struct peer *p, int lfd, char *why, size_t wl)
{
	int64_t end = now_ms() + 40000;
	struct coll_wire_hello hello;
	struct coll_wire_reply reply;
	struct coll_wire_proof proof, want;

	p->buf = malloc(MAX_FRAME);
	if (!p->buf)
		return -ENOMEM;
	while (now_ms() < end) {
		if (!p->rdma) {
			int fd = tcp_accept(lfd, 1000);
			ssize_t r;

			if (fd < 0)
				continue;
			r = io_rd(fd, &hello, sizeof(hello), 5000);
			if (r != sizeof(hello) ||
			    memcmp(hello.tag, p->x.tag, sizeof(hello.tag))) {
				close(fd);
				continue;
			}
			if (p->replay == 1) {
				/* RETRY; the REPLY it would have got, kept */
				reply_make(&p->x, &hello, &p->old_reply);
				reply = p->old_reply;
				reply.status = htole16(COLL_WIRE_RETRY);
				io_wr(fd, &reply, sizeof(reply), 5000);
				close(fd);
				p->replay = 2;
				continue;
			}
			if (p->replay == 2) {
				/* the kept REPLY, for another HELLO */
				io_wr(fd, &p->old_reply, sizeof(reply), 5000);
				r = io_rd(fd, &proof, sizeof(proof), 5000);
				close(fd);
				if (r > 0) {
					snprintf(why, wl, "the module sent %zd bytes of PROOF after a replayed REPLY",
						 r);
					return -EPROTO;
				}
				p->replay = 3;
				continue;
			}
			reply_make(&p->x, &hello, &reply);
			if (io_wr(fd, &reply, sizeof(reply), 5000) ||
			    io_rd(fd, &proof, sizeof(proof), 5000) !=
			    sizeof(proof)) {
				close(fd);
				snprintf(why, wl, "the module sent no PROOF");
				return -EPROTO;
			}
			p->fd = fd;
		} else {
			struct rreq q;
			int n;

			if (!r_nreqs) {
				r_service(200);
				continue;
			}
			q = r_reqs[0];
			memmove(r_reqs, r_reqs + 1,
				--r_nreqs * sizeof(r_reqs[0]));
			memcpy(&hello, q.priv, sizeof(hello));
			if (q.priv_len < (int)sizeof(hello) ||
			    memcmp(hello.tag, p->x.tag, sizeof(hello.tag))) {
				/* RETRY: a module of another case tries again */
				memset(&reply, 0, sizeof(reply));
				reply.magic = htole32(COLL_WIRE_MAGIC);
				reply.version = htole16(COLL_WIRE_VERSION);
				reply.status = htole16(COLL_WIRE_RETRY);
				rdma_reject(q.id, &reply, sizeof(reply));
				rdma_destroy_id(q.id);
				continue;
			}
			if (le16toh(hello.flags) != COLL_WIRE_F_RDMA) {
				snprintf(why, wl, "HELLO flags %#x over RDMA",
					 le16toh(hello.flags));
				rdma_reject(q.id, NULL, 0);
				rdma_destroy_id(q.id);
				return -EPROTO;
			}
			if (p->replay == 1) {
				reply_make(&p->x, &hello, &p->old_reply);
				reply = p->old_reply;
				reply.status = htole16(COLL_WIRE_RETRY);
				rdma_reject(q.id, &reply, sizeof(reply));
				rdma_destroy_id(q.id);
				p->replay = 2;
				continue;
			}
			if (p->replay == 2) {
				p->rc = r_new(65536, true);
				n = -1;
				if (p->rc && !r_accept(p->rc, &q, &p->old_reply,
						       sizeof(p->old_reply)))
					n = r_recv(p->rc, p->buf, MAX_FRAME, 3000);
				r_free(p->rc);
				p->rc = NULL;
				if (n > 0) {
					snprintf(why, wl, "the module sent a %d-byte message after a replayed REPLY",
						 n);
					return -EPROTO;
				}
				p->replay = 3;
				continue;
			}
			reply_make(&p->x, &hello, &reply);
			p->rc = r_new(65536, true);
			if (!p->rc || r_accept(p->rc, &q, &reply,
					       sizeof(reply))) {
				snprintf(why, wl, "rdma_accept failed");
				return -EIO;
			}
			n = r_recv(p->rc, p->buf, MAX_FRAME, 5000);
			if (n != sizeof(proof)) {
				snprintf(why, wl, "the module's first message has %d bytes, not a PROOF",
					 n);
				return -EPROTO;
			}
			memcpy(&proof, p->buf, sizeof(proof));
		}
		if (le16toh(hello.src_host) != 0 ||
		    le16toh(hello.dst_host) != 1 ||
		    memcmp(&hello.layout, p->x.layout, sizeof(hello.layout))) {
			snprintf(why, wl, "HELLO src %u dst %u or layout unexpected",
				 le16toh(hello.src_host), le16toh(hello.dst_host));
			return -EPROTO;
		}
		proof_make(&p->x, &hello, &reply, &want);
		if (memcmp(&proof, &want, sizeof(want))) {
			snprintf(why, wl, "the module's PROOF does not verify");
			return -EPROTO;
		}
		return 0;
	}
	snprintf(why, wl, "the module never connected");
	return -ETIMEDOUT;
}

/* ---- the fake host's cases ------------------------------------------------ */

enum trig {
	T_AUTH,		/* right after the handshake */
	T_READY0,	/* at the module's READY(0), instead of answering */
	T_REPLIED0,	/* at the module's READY(0), after answering it */
	T_READREQ,	/* at the module's first READ_REQ, instead of serving */
	T_NEVER,	/* an honest host throughout */
};

enum act {
	A_NONE, A_RAW_RANDOM, A_BAD_MAGIC, A_PING_PAYLOAD, A_LEN, A_FLAGS,
	A_CREDITS, A_PING_ARG, A_TYPE, A_READY, A_ABORT, A_READ,
	A_READ_IN_OUT, A_RESP_STATUS, A_RESP_SHORT, A_RESP_LONG,
	A_RESP_COOKIE, A_RESP_TWICE, A_STALL, A_SILENCE, A_RANDOM_FRAMES,
	A_BYE, A_SHORT_SEND, A_LEN_MISMATCH, A_OVERSIZE_SEND, A_CREDIT_FLOOD,
	A_RDMA_BADKEY, A_GRANT_OUTSIDE, A_GRANT_WRITE, A_EXPORTS,
};

/* A_READY's payloads */
enum { RP_NONE, RP_SHORT, RP_NEXPORTS, RP_DESC, RP_DESC_OTHER };

#define TCP	1
#define RDMA	2

struct fcase {
	const char *name;
	unsigned int on;	/* TCP, RDMA */
	enum trig trig;
	enum act act;
	int64_t a, b, c, d, e, f;	/* the action's arguments */
	bool rel_end;		/* A_READ: c is from the buffer's end */
	int verr;		/* the victim's collective: 0 or an errno */
	bool slow;		/* bounded by peer_timeout_ms, not at once */
	uint32_t count;		/* int32 elements (default 1024) */
	uint32_t unalign;	/* bytes the victim's buffers are off a page */
	uint32_t sleep_ms;	/* the victim waits this long before its op */
	bool replay;		/* first, a REPLY replayed (see peer_accept()) */
};

#define ECR ECONNRESET

static const struct fcase fcases[] = {
	/* the controls: a fake host that follows the protocol */
	{ "honest host: the victim's AllReduce is right", TCP | RDMA, T_NEVER,
	  A_NONE, .verr = 0 },
	{ "honest host, large: read from us, not sent", TCP | RDMA, T_NEVER,
	  A_NONE, .verr = 0, .count = 40000 },
	{ "a REPLY replayed on a later HELLO gets no PROOF", TCP | RDMA,
	  T_NEVER, A_NONE, .verr = 0, .replay = true },
	{ "READY that disagrees: EPROTO, the link lives", TCP | RDMA,
	  T_READY0, A_READY, 0, 0, RP_DESC_OTHER, .verr = EPROTO },
	{ "ABORT with EIO: the collective fails with EIO", TCP | RDMA,
	  T_READY0, A_ABORT, EIO, .verr = EIO },
	/* headers */
	{ "random bytes", TCP | RDMA, T_READY0, A_RAW_RANDOM, 65536,
	  .verr = ECR },
	{ "bad magic", TCP | RDMA, T_READY0, A_BAD_MAGIC, .verr = ECR },
	{ "PING with a payload", TCP | RDMA, T_READY0, A_PING_PAYLOAD,
	  .verr = ECR },
	{ "length above COLL_WIRE_MAX_PAYLOAD", TCP | RDMA, T_READY0, A_LEN,
	  COLL_WIRE_MAX_PAYLOAD + 1, .verr = ECR },
	{ "length 0xffffffff", TCP | RDMA, T_READY0, A_LEN, 0xffffffffLL,
	  .verr = ECR },
	{ "nonzero flags", TCP | RDMA, T_READY0, A_FLAGS, .verr = ECR },
	{ "nonzero credits over TCP", TCP, T_READY0, A_CREDITS, 1,
	  .verr = ECR },
	{ "credits above the receive buffers", RDMA, T_READY0, A_CREDITS,
	  MODULE_RDMA_RECV + 1, .verr = ECR },
	{ "credits given back twice over", RDMA, T_READY0, A_CREDIT_FLOOD,
	  .verr = ECR },
	{ "PING with an argument", TCP | RDMA, T_READY0, A_PING_ARG,
	  .verr = ECR },
	{ "frame type 0", TCP | RDMA, T_READY0, A_TYPE, 0, .verr = ECR },
	{ "frame type 99", TCP | RDMA, T_READY0, A_TYPE, 99, .verr = ECR },
	{ "CREDIT over TCP", TCP, T_READY0, A_TYPE, COLL_MSG_CREDIT,
	  .verr = ECR },
	{ "READ_REQ over RDMA", RDMA, T_READY0, A_TYPE, COLL_MSG_READ_REQ,
	  .verr = ECR },
	{ "READ_RESP nobody asked for", TCP, T_READY0, A_TYPE,
	  COLL_MSG_READ_RESP, .verr = ECR },
	{ "40 random frames", TCP | RDMA, T_READY0, A_RANDOM_FRAMES,
	  .verr = ECR },
	{ "truncated SEND", RDMA, T_READY0, A_SHORT_SEND, .verr = ECR },
	{ "SEND longer than its header says", RDMA, T_READY0,
	  A_LEN_MISMATCH, .verr = ECR },
	{ "SEND larger than the receive buffers", RDMA, T_READY0,
	  A_OVERSIZE_SEND, .verr = ECR },
	/* READY out of turn */
	{ "READY for round 5", TCP | RDMA, T_READY0, A_READY, 5, 0, RP_NONE,
	  .verr = ECR },
	{ "READY(0) twice", TCP | RDMA, T_REPLIED0, A_READY, 0, 0, RP_DESC,
	  .verr = ECR },
	/* a peer may start COLL_XHOST_AHEAD collectives ahead, not more */
	{ "READY(0) of a collective 65 ahead", TCP | RDMA, T_READY0, A_READY,
	  0, COLL_XHOST_AHEAD + 1, RP_DESC, .verr = ECR },
	{ "READY(0) without its agreement", TCP | RDMA, T_READY0, A_READY,
	  0, 0, RP_SHORT, .verr = ECR },
	{ "READY(0) with 2000 grants", TCP | RDMA, T_READY0, A_READY, 0, 0,
	  RP_NEXPORTS, .verr = ECR },
	{ "READY(0) that omits the data", TCP, T_READY0, A_READY, 0, 0,
	  RP_DESC, 1, .verr = ECR },
	{ "READY(1) before the collective", TCP | RDMA, T_AUTH, A_READY, 1, 0,
	  RP_NONE, .verr = ECR, .sleep_ms = 1000 },
	/* ABORT */
	{ "ABORT with errno 0", TCP | RDMA, T_READY0, A_ABORT, 0,
	  .verr = ECR },
	{ "ABORT with errno 5000", TCP | RDMA, T_READY0, A_ABORT, 5000,
	  .verr = ECR },
	{ "ABORT with ERESTARTSYS", TCP | RDMA, T_READY0, A_ABORT, 512,
	  .verr = ECR },
	{ "early ABORT with errno -1", TCP | RDMA, T_AUTH, A_ABORT,
	  0xffffffffLL, .verr = ECR, .sleep_ms = 1000 },
	{ "early ABORT with ERESTARTSYS", TCP | RDMA, T_AUTH, A_ABORT, 512,
	  .verr = ECR, .sleep_ms = 1000 },
	{ "early ABORT twice", TCP | RDMA, T_AUTH, A_ABORT, EIO, 0, 2,
	  .verr = ECR, .sleep_ms = 1000 },
	/* reads (TCP: the module serves them) */
	{ "READ_REQ inside the buffer, then past its end", TCP, T_READY0,
	  A_READ_IN_OUT, .verr = ECR },
	{ "READ_REQ of a rank of ours", TCP, T_READY0, A_READ, 1, 0, 0, 64,
	  .verr = ECR },
	{ "READ_REQ of buffer 2", TCP, T_READY0, A_READ, 0, 2, 0, 64,
	  .verr = ECR },
	{ "READ_REQ of 0 bytes", TCP, T_READY0, A_READ, 0, 0, 0, 0,
	  .verr = ECR },
	{ "READ_REQ of more than 1 MiB", TCP, T_READY0, A_READ, 0, 0, 0,
	  (1 << 20) + 1, .verr = ECR, .count = 300000 },
	{ "READ_REQ whose end wraps", TCP, T_READY0, A_READ, 0, 0, -8, 64,
	  .verr = ECR },
	{ "READ_REQ across the receive buffer's end", TCP, T_READY0, A_READ,
	  0, 1, -2, 4, .rel_end = true, .verr = ECR },
	{ "READ_REQ of no collective", TCP, T_READY0, A_READ, 0, 0, 0, 64,
	  100, .verr = ECR },
	{ "READ_REQ with a short payload", TCP, T_READY0, A_READ, 0, 0, 0, 64,
	  0, 16, .verr = ECR },
	{ "READ_RESP with ERESTARTSYS", TCP, T_READREQ, A_RESP_STATUS, 512,
	  .verr = ECR },
	{ "READ_RESP shorter than asked", TCP, T_READREQ, A_RESP_SHORT,
	  .verr = ECR },
	{ "READ_RESP longer than asked", TCP, T_READREQ, A_RESP_LONG,
	  .verr = ECR },
	{ "READ_RESP for another read", TCP, T_READREQ, A_RESP_COOKIE,
	  .verr = ECR },
	{ "READ_RESP twice", TCP, T_READREQ, A_RESP_TWICE, .verr = ECR },
	/* RDMA: keys and grants */
	{ "RDMA WRITE with a made-up key", RDMA, T_READY0, A_RDMA_BADKEY, 1,
	  .verr = ECR },
	{ "RDMA READ with a made-up key", RDMA, T_READY0, A_RDMA_BADKEY, 0,
	  .verr = ECR },
	{ "RDMA READ of the grant, then the byte before it", RDMA, T_READY0,
	  A_GRANT_OUTSIDE, -4, .verr = ECR, .count = 16384, .unalign = 256 },
	{ "RDMA READ of the grant, then the byte after it", RDMA, T_READY0,
	  A_GRANT_OUTSIDE, 0, .verr = ECR, .count = 16384, .unalign = 256 },
	{ "RDMA WRITE into a grant", RDMA, T_READY0, A_GRANT_WRITE,
	  .verr = ECR, .count = 16384, .unalign = 256 },
	{ "grants past our buffers", RDMA, T_NEVER, A_EXPORTS, 1,
	  .verr = ECR, .count = 40000 },
	{ "grants with a wrong key", RDMA, T_NEVER, A_EXPORTS, 2,
	  .verr = ECR, .count = 40000 },
	/* silence */
	{ "a frame cut short, then silence", TCP, T_READY0, A_STALL,
	  .verr = ECR, .slow = true },
	{ "silence", TCP | RDMA, T_READY0, A_SILENCE, .verr = ECR,
	  .slow = true },
	{ "BYE", TCP | RDMA, T_READY0, A_BYE, .verr = ECR },
};

#define NFCASES ((int)(sizeof(fcases) / sizeof(fcases[0])))

static int bound_ms(const struct fcase *c)
{
	return c->slow ? o.peer_timeout_ms + 1000 + SLACK_MS : FAST_MS;
}

/* A frame with @type and nothing else, with header fields as given. */
static int send_hdr(struct peer *p, uint8_t type, uint32_t len, uint8_t flags,
		    uint16_t credits, uint32_t round, uint64_t seq, uint64_t arg)
{
	struct coll_wire_hdr h;

	hdr_make(&h, type, len, round, seq, arg);
	h.flags = flags;
	h.credits = htole16(credits);
	return peer_raw(p, &h, sizeof(h));
}

static int send_read(struct peer *p, uint32_t rank, uint32_t buf,
		     uint64_t off, uint64_t len, uint64_t seq, uint32_t plen,
		     uint64_t cookie)
{
	struct coll_wire_read rd = {
		.rank = htole32(rank), .buf = htole32(buf),
		.off = htole64(off), .len = htole64(len),
	};

	return peer_send(p, COLL_MSG_READ_REQ, 0, seq, cookie, &rd,
			 plen ? plen : sizeof(rd), 0);
}

/* The answer to our READ_REQ @cookie (PINGs skipped): 0 and its data. */
static int wait_resp(struct peer *p, uint64_t cookie)
{
	int64_t end = now_ms() + 5000;

	while (now_ms() < end) {
		int r = peer_recv(p, (int)(end - now_ms()));

		if (r)
			return r;
		if (p->h.type == COLL_MSG_READ_RESP &&
		    le64toh(p->h.arg) == cookie)
			return le32toh(p->h.round) ? -EREMOTEIO : 0;
		peer_note(p);
	}
	return -ETIMEDOUT;
}

/* Do the victim's bytes [off, off + len) of rank 0's send buffer match? */
static bool victim_bytes_ok(const struct peer *p, uint64_t off,
			    const uint8_t *got, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++) {
		uint64_t e = (off + i) / 4;
		uint32_t v = (uint32_t)pattern(p->k, 0, e);

		if (got[i] != (uint8_t)(v >> (8 * ((off + i) % 4))))
			return false;
	}
	return true;
}

/* The module's grant of rank 0's send buffer, or NULL. */
static const struct coll_wire_export *send_grant(const struct peer *p)
{
	uint32_t i;

	for (i = 0; i < p->nexp; i++)
		if (!le32toh(p->exp[i].rank) && !le32toh(p->exp[i].buf))
			return &p->exp[i];
	return NULL;
}

/*
 * The case's own action.  Return 0 if it went as the case wants (a read
 * inside a grant gave the victim's bytes, one outside failed), else -1
 * with @note saying what went wrong.
 */
static int fake_act(struct peer *p, const struct fcase *c, char *note,
		    size_t nl)
{
	uint64_t seq = p->seq;
	uint8_t *junk;
	int i, r = 0;

	switch (c->act) {
	case A_NONE:
	case A_SILENCE:
		break;
	case A_RAW_RANDOM:
		junk = malloc((size_t)c->a);
		rnd_fill(junk, (size_t)c->a);
		peer_raw(p, junk, p->rdma ? 4096 : (size_t)c->a);
		free(junk);
		break;
	case A_BAD_MAGIC: {
		struct coll_wire_hdr h;

		hdr_make(&h, COLL_MSG_PING, 0, 0, 0, 0);
		h.magic = htole32(COLL_WIRE_MAGIC + 1);
		peer_raw(p, &h, sizeof(h));
		break;
	}
	case A_PING_PAYLOAD: {
		uint64_t x = 0;

		peer_send(p, COLL_MSG_PING, 0, 0, 0, &x, sizeof(x), 0);
		break;
	}
	case A_LEN:
		send_hdr(p, COLL_MSG_READY, (uint32_t)c->a, 0, 0, 1, seq, 0);
		break;
	case A_FLAGS:
		send_hdr(p, COLL_MSG_PING, 0, 1, 0, 0, 0, 0);
		break;
	case A_CREDITS:
		send_hdr(p, COLL_MSG_PING, 0, 0, (uint16_t)c->a, 0, 0, 0);
		break;
	case A_CREDIT_FLOOD:
		for (i = 0; i < 3; i++)
			send_hdr(p, COLL_MSG_PING, 0, 0, MODULE_RDMA_RECV, 0, 0,
				 0);
		break;
	case A_PING_ARG:
		send_hdr(p, COLL_MSG_PING, 0, 0, 0, 0, 0, 1);
		break;
	case A_TYPE:
		send_hdr(p, (uint8_t)c->a, 0, 0, 0, 0, seq, 77);
		break;
	case A_RANDOM_FRAMES:
		junk = malloc(512);
		for (i = 0; i < 40; i++) {
			struct coll_wire_hdr h;
			uint32_t len = (uint32_t)(rnd() % 512);

			rnd_fill(&h, sizeof(h));
			rnd_fill(junk, len);
			h.magic = htole32(COLL_WIRE_MAGIC);
			h.type = (uint8_t)(rnd() % COLL_MSG_TYPE_MAX);
			h.len = htole32(len);
			if (!p->rdma) {
				if (io_wr(p->fd, &h, sizeof(h), 2000) ||
				    io_wr(p->fd, junk, len, 2000))
					break;
			} else {
				uint8_t *s = r_send_buf(p->rc);

				memcpy(s, &h, sizeof(h));
				memcpy(s + sizeof(h), junk, len);
				if (r_post_wait(p->rc, IBV_WR_SEND, 100, s,
						sizeof(h) + len, 0, 0, 2000))
					break;
			}
		}
		free(junk);
		break;
	case A_SHORT_SEND: {
		uint8_t b[10] = { 0x43, 0x6f, 0x6c, 0x6c };

		peer_raw(p, b, sizeof(b));
		break;
	}
	case A_LEN_MISMATCH: {
		uint8_t b[sizeof(struct coll_wire_hdr) + 12] = { 0 };
		struct coll_wire_hdr h;

		hdr_make(&h, COLL_MSG_PING, 8, 0, 0, 0);
		memcpy(b, &h, sizeof(h));
		peer_raw(p, b, sizeof(b));
		break;
	}
	case A_OVERSIZE_SEND: {
		uint32_t len = 70000;
		struct coll_wire_hdr h;

		junk = calloc(1, len);
		hdr_make(&h, COLL_MSG_READY, len - sizeof(h), 1, seq, 0);
		memcpy(junk, &h, sizeof(h));
		peer_raw(p, junk, len);
		free(junk);
		break;
	}
	case A_READY: {
		uint8_t pl[sizeof(struct coll_wire_desc)] = { 0 };
		struct coll_wire_desc d = p->desc;
		uint32_t len = 0;

		d.nexports = 0;
		if (c->c == RP_SHORT) {
			len = 8;
		} else if (c->c == RP_NEXPORTS) {
			d.nexports = htole32(2000);
			len = sizeof(d);
		} else if (c->c == RP_DESC || c->c == RP_DESC_OTHER) {
			if (c->c == RP_DESC_OTHER)
				d.count = htole64(le64toh(d.count) + 1);
			len = sizeof(d);
		}
		memcpy(pl, &d, sizeof(d));
		/* RP_DESC with d: say we send eagerly, then do not */
		peer_send(p, COLL_MSG_READY, (uint32_t)c->a,
			  seq + (uint64_t)c->b, c->d ? 65536 : 0, pl, len,
			  c->c == RP_DESC_OTHER ? -1 : 0);
		break;
	}
	case A_ABORT:
		for (i = 0; i < (c->c ? c->c : 1); i++)
			peer_send(p, COLL_MSG_ABORT, 0, seq, (uint64_t)c->a,
				  NULL, 0, 0);
		break;
	case A_READ:
		send_read(p, (uint32_t)c->a, (uint32_t)c->b,
			  (uint64_t)c->c + (c->rel_end ?
					    (uint64_t)p->count * 4 : 0),
			  (uint64_t)c->d, seq + (uint64_t)c->e, (uint32_t)c->f,
			  1);
		break;
	case A_READ_IN_OUT: {
		uint64_t len = (uint64_t)p->count * 4;

		send_read(p, 0, 0, 0, len, seq, 0, 11);
		r = wait_resp(p, 11);
		if (r || p->len != len || !victim_bytes_ok(p, 0, p->data, len)) {
			snprintf(note, nl, "an honest READ_REQ got %s, %u bytes%s",
				 r ? st_errname(r) : "an answer", p->len,
				 r ? "" : ", not the victim's");
			return -1;
		}
		send_read(p, 0, 0, len - 4, 8, seq, 0, 12);
		break;
	}
	case A_STALL: {
		uint8_t b[10] = { 0 };

		send_hdr(p, COLL_MSG_READY, 100, 0, 0, 1, seq, 0);
		peer_raw(p, b, sizeof(b));
		break;
	}
	case A_BYE:
		peer_send(p, COLL_MSG_BYE, 0, 0, 0, NULL, 0, 0);
		break;
	case A_RDMA_BADKEY: {
		uint64_t raddr = rnd() & 0x7ffffffff000ULL;
		uint32_t rkey = (uint32_t)rnd();

		r = r_post_wait(p->rc, c->a ? IBV_WR_RDMA_WRITE :
				IBV_WR_RDMA_READ, 200, r_read_buf(p->rc), 64,
				raddr, rkey, 5000);
		if (!r) {
			snprintf(note, nl, "an RDMA %s with a made-up key worked",
				 c->a ? "WRITE" : "READ");
			return -1;
		}
		r = 0;
		break;
	}
	case A_GRANT_OUTSIDE:
	case A_GRANT_WRITE: {
		const struct coll_wire_export *e = send_grant(p);
		uint64_t addr, off, len;
		uint32_t rkey;
		int st;

		if (!e) {
			snprintf(note, nl, "READY(0) granted no send buffer (%u grants)",
				 p->nexp);
			return -1;
		}
		addr = le64toh(e->addr);
		off = le64toh(e->off);
		len = le64toh(e->len);
		rkey = le32toh(e->rkey);
		if (len > R_READ_BYTES)
			len = R_READ_BYTES;
		st = r_post_wait(p->rc, IBV_WR_RDMA_READ, 200,
				 r_read_buf(p->rc), (uint32_t)len, addr, rkey,
				 5000);
		if (st || !victim_bytes_ok(p, off, r_read_buf(p->rc), len)) {
			snprintf(note, nl, "reading the grant: %s",
				 st ? ibv_wc_status_str(st) :
				 "not the victim's bytes");
			return -1;
		}
		if (c->act == A_GRANT_WRITE) {
			memset(r_read_buf(p->rc), 0x66, 64);
			st = r_post_wait(p->rc, IBV_WR_RDMA_WRITE, 201,
					 r_read_buf(p->rc), 64, addr, rkey,
					 5000);
		} else {
			uint64_t at = c->a < 0 ? addr - 4 :
				      addr + le64toh(e->len);

			memset(r_read_buf(p->rc), 0, 64);
			st = r_post_wait(p->rc, IBV_WR_RDMA_READ, 201,
					 r_read_buf(p->rc), 4, at, rkey, 5000);
		}
		if (!st) {
			snprintf(note, nl, "the %s outside what READY(0) granted worked (%02x%02x%02x%02x)",
				 c->act == A_GRANT_WRITE ? "WRITE" : "READ",
				 r_read_buf(p->rc)[0], r_read_buf(p->rc)[1],
				 r_read_buf(p->rc)[2], r_read_buf(p->rc)[3]);
			return -1;
		}
		break;
	}
	default:
		break;
	}
	return 0;
}

/* At the module's first READ_REQ (in p->h): answer it wrongly. */
static void fake_resp(struct peer *p, const struct fcase *c)
{
	struct coll_wire_read rd;
	uint64_t len, cookie = le64toh(p->h.arg), seq = le64toh(p->h.seq);
	uint8_t *out;

	memcpy(&rd, p->data, sizeof(rd));
	len = le64toh(rd.len);
	out = calloc(1, len + 64);
	model_bytes(p, le32toh(rd.buf), le64toh(rd.off), len, out);
	switch (c->act) {
	case A_RESP_STATUS:
		send_hdr(p, COLL_MSG_READ_RESP, 0, 0, 0, (uint32_t)c->a, seq,
			 cookie);
		break;
	case A_RESP_SHORT:
		peer_send(p, COLL_MSG_READ_RESP, 0, seq, cookie, out,
			  (uint32_t)len - 1, 0);
		break;
	case A_RESP_LONG:
		peer_send(p, COLL_MSG_READ_RESP, 0, seq, cookie, out,
			  (uint32_t)len + 64, 0);
		break;
	case A_RESP_COOKIE:
		peer_send(p, COLL_MSG_READ_RESP, 0, seq, cookie + 1000, out,
			  (uint32_t)len, 0);
		break;
	case A_RESP_TWICE:
		peer_send(p, COLL_MSG_READ_RESP, 0, seq, cookie, out,
			  (uint32_t)len, 0);
		peer_send(p, COLL_MSG_READ_RESP, 0, seq, cookie, out,
			  (uint32_t)len, 0);
		break;
	default:
		break;
	}
	free(out);
}

/*
 * Run case @c on an authenticated link: honest until its trigger, then its
 * action, then wait for the module to drop the link (or, for a case whose
 * victim may succeed, for the victim to leave).  Fills @note.
 */
static bool fake_run(struct peer *p, const struct fcase *c, char *note,
		     size_t nl, int64_t *closed_ms)
{
	int64_t end = now_ms() + 30000;
	bool acted = false;
	int r;

	*closed_ms = -1;
	if (c->trig == T_AUTH) {
		/*
		 * The module attaches the link just after its PROOF: give it
		 * that moment, so that the frame comes to a communicator that
		 * is up (and keeps it for the collective the victim has not
		 * submitted yet).
		 */
		st_sleep_ms(300);
		if (fake_act(p, c, note, nl))
			return false;
		acted = true;
	}
	while (!acted && now_ms() < end) {
		r = peer_recv(p, (int)(end - now_ms()));
		if (r == -ECONNRESET && c->trig == T_NEVER && c->act == A_NONE) {
			/* the victim has its result and left (RDMA: no BYE) */
			*closed_ms = 0;
			return true;
		}
		if (r) {
			snprintf(note, nl, "the link ended before the trigger (%s)",
				 st_errname(r));
			return false;
		}
		if (p->h.type == COLL_MSG_READY && !p->h.round &&
		    (c->trig == T_READY0 || c->trig == T_REPLIED0)) {
			peer_note(p);
			if (c->trig == T_REPLIED0)
				peer_ready(p, 0, false, false);
			if (fake_act(p, c, note, nl))
				return false;
			acted = true;
		} else if (p->h.type == COLL_MSG_READ_REQ &&
			   c->trig == T_READREQ) {
			peer_note(p);
			fake_resp(p, c);
			acted = true;
		} else if (p->h.type == COLL_MSG_READY && !p->h.round &&
			   c->act == A_EXPORTS) {
			peer_note(p);
			peer_ready(p, 0, c->a == 1, c->a == 2);
			acted = true;
		} else if (c->trig == T_NEVER) {
			if (peer_honest(p)) {
				snprintf(note, nl, "could not answer the module");
				return false;
			}
			if (p->bye)
				acted = true;
		} else {
			peer_honest(p);
		}
	}
	if (!acted) {
		snprintf(note, nl, "no trigger within 30 s");
		return false;
	}
	/*
	 * The module drops the link; or, for a victim that may succeed or
	 * fail alone, closes it when the victim leaves.
	 */
	if (c->verr && c->verr != ECR) {
		int64_t t0 = now_ms();

		while (now_ms() - t0 < bound_ms(c) + 10000) {
			if (peer_recv(p, 1000) == -ECONNRESET)
				break;
			peer_note(p);
			if (p->bye)
				break;
		}
		*closed_ms = now_ms() - t0;
		if (c->verr != EPROTO || (p->aborted &&
					 p->abort_arg == EPROTO))
			return true;
		snprintf(note, nl, "the module did not ABORT with EPROTO");
		return false;
	}
	if (c->trig == T_NEVER && c->act == A_NONE) {
		/* honest: the victim leaves once it has its result */
		*closed_ms = peer_wait_closed(p, 30000);
		return *closed_ms >= 0;
	}
	*closed_ms = peer_wait_closed(p, bound_ms(c) + 10000);
	return true;
}

/* ---- the victim's side ------------------------------------------------------ */

struct vbuf {
	uint8_t *map;
	size_t maplen;
	uint8_t *p;		/* the buffer, unalign bytes into its 2nd page */
	size_t len;
};

static int vbuf_get(struct vbuf *b, size_t len, uint32_t unalign)
{
	b->len = len;
	b->maplen = 4096 + ((unalign + len + 4096 + 4095) & ~(size_t)4095);
	b->map = st_map(b->maplen);
	if (!b->map)
		return -ENOMEM;
	memset(b->map, 0xa5, b->maplen);
	b->p = b->map + 4096 + unalign;
	return 0;
}

static bool vbuf_guards_ok(const struct vbuf *b)
{
	size_t head = (size_t)(b->p - b->map), tail = b->maplen - head - b->len;

	return st_find_not(b->map, 0xa5, head) == head &&
	       st_find_not(b->p + b->len, 0xa5, tail) == tail;
}

static int ioctl_err(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

/* Join case @k as host (@host0 ? 0 : 1): the handle, or -errno. */
static int victim_join(int fd, const struct ids *x, bool host0,
		       uint32_t flags, uint32_t timeout_ms)
{
	struct coll_comm_init ci = {
		.size = sizeof(ci),
		.flags = flags,
		.nranks = 2,
		.rank = host0 ? 0 : 1,
		.timeout_ms = timeout_ms,
		.nhosts = 2,
		.hosts_uptr = (uintptr_t)x->t.h,
		.rank_hosts_uptr = (uintptr_t)x->t.rank_host,
	};
	int err;

	memcpy(ci.id, x->id, sizeof(ci.id));
	err = ioctl_err(fd, COLL_COMM_INIT, &ci);
	return err ? -err : (int)ci.out_comm;
}

static void victim_leave(int fd, uint32_t comm)
{
	struct coll_comm_destroy cd = { .size = sizeof(cd), .comm = comm };

	ioctl(fd, COLL_COMM_DESTROY, &cd);
}

struct vresult {
	int err;		/* 0, an errno, or 1000 + the join's errno */
	int64_t ms;		/* the collective took */
	bool guards, send, result;
};

/*
 * One AllReduce (int32 sum, direct) of @count elements on communicator
 * @comm, rank @rank, inputs pattern(k, rank, i), waiting at most @wait_ms.
 */
static void victim_op(int fd, uint32_t comm, int k, int rank, uint32_t count,
		      uint32_t unalign, uint32_t wait_ms, struct vresult *res)
{
	struct vbuf s, r;
	struct coll_op op = {
		.size = sizeof(op), .flags = COLL_OP_F_NONBLOCK, .comm = comm,
		.prim = COLL_ALLREDUCE, .dtype = COLL_INT32, .redop = COLL_SUM,
		.algo = COLL_ALGO_DIRECT, .count = count,
	};
	struct coll_wait w = { .size = sizeof(w), .timeout_ms = wait_ms };
	int64_t t0;
	uint32_t i;

	if (vbuf_get(&s, (size_t)count * 4, unalign) ||
	    vbuf_get(&r, (size_t)count * 4, unalign)) {
		res->err = ENOMEM;
		return;
	}
	for (i = 0; i < count; i++) {
		int32_t v = pattern(k, rank, i);

		memcpy(s.p + 4 * i, &v, 4);
	}
	op.sendbuf = (uintptr_t)s.p;
	op.recvbuf = (uintptr_t)r.p;
	t0 = now_ms();
	res->err = ioctl_err(fd, COLL_SUBMIT, &op);
	if (!res->err) {
		w.req = op.out_req;
		res->err = ioctl_err(fd, COLL_WAIT, &w);
		if (res->err == ETIMEDOUT) {
			/* it hangs: leave, then collect it */
			victim_leave(fd, comm);
			w.timeout_ms = 10000;
			ioctl_err(fd, COLL_WAIT, &w);
			res->err = ETIMEDOUT;
		}
	}
	res->ms = now_ms() - t0;
	res->guards = vbuf_guards_ok(&s) && vbuf_guards_ok(&r);
	res->send = true;
	res->result = true;
	for (i = 0; i < count; i++) {
		int32_t v, want = pattern(k, rank, i);

		memcpy(&v, s.p + 4 * i, 4);
		if (v != want)
			res->send = false;
		memcpy(&v, r.p + 4 * i, 4);
		want = (int32_t)((uint32_t)pattern(k, 0, i) +
				 (uint32_t)pattern(k, 1, i));
		if (v != want)
			res->result = false;
	}
	munmap(s.map, s.maplen);
	munmap(r.map, r.maplen);
}

/* The victim's part of a phase: what the attacker's control lines say. */
static int victim_main(void)
{
	struct ctl c = { .fd = -1 };
	int64_t end = now_ms() + 120000;
	char line[256];
	int n = 0;

	while (c.fd < 0 && now_ms() < end) {
		c.fd = tcp_dial(o.attacker_ip, o.ctl_port, 2000);
		if (c.fd < 0)
			st_sleep_ms(200);
	}
	if (c.fd < 0) {
		tap(false, "victim %s: no control connection from the attacker",
		    o.phase);
		return 1;
	}
	for (;;) {
		unsigned int k, flags, count, unalign, sleep_ms, wait_ms, host0;
		struct vresult res = { 0 };
		struct ids x;
		int fd, comm;

		if (ctl_line(&c, line, sizeof(line), 600000))
			break;
		if (!strcmp(line, "end"))
			break;
		if (sscanf(line, "case %u %u %u %u %u %u %u", &k, &flags,
			   &count, &unalign, &sleep_ms, &wait_ms, &host0) != 7)
			break;
		n++;
		ids_for(&x, host0 ? (flags & COLL_COMM_F_TCP ? PH_FAKE_TCP :
					PH_FAKE_RDMA) : PH_TAG,
			(int)k, host0, flags);
		fd = st_dev_open();
		comm = fd < 0 ? fd : victim_join(fd, &x, host0, flags,
						 host0 ? 30000 : 90000);
		if (comm < 0) {
			res.err = 1000 - comm;
			res.guards = res.send = res.result = true;
		} else {
			if (!host0)
				ctl_printf(&c, "joined %u\n", k);
			st_sleep_ms(sleep_ms);
			victim_op(fd, (uint32_t)comm, (int)k, host0 ? 0 : 1,
				  count, unalign, wait_ms, &res);
			victim_leave(fd, (uint32_t)comm);
		}
		if (fd >= 0)
			close(fd);
		ctl_printf(&c, "done %u %d %lld %d %d %d\n", k, res.err,
			   (long long)res.ms, res.guards, res.send,
			   res.result);
	}
	close(c.fd);
	tap(true, "victim %s: %d cases answered", o.phase, n);
	return 0;
}

/* ---- the attacker's side of the fake phases -------------------------------- */

static int ctl_accept(struct ctl *c, int lfd)
{
	memset(c, 0, sizeof(*c));
	c->fd = tcp_accept(lfd, 120000);
	return c->fd < 0 ? c->fd : 0;
}

/* The victim's "done K ..." for case @k: 0, or -errno. */
static int ctl_done(struct ctl *c, unsigned int k, int timeout_ms,
		    struct vresult *res)
{
	int64_t end = now_ms() + timeout_ms;
	char line[256];

	while (now_ms() < end) {
		unsigned int kk;
		long long ms;
		int g, s, r;

		if (ctl_line(c, line, sizeof(line), (int)(end - now_ms())))
			return -ETIMEDOUT;
		if (sscanf(line, "done %u %d %lld %d %d %d", &kk, &res->err,
			   &ms, &g, &s, &r) == 6 && kk == k) {
			res->ms = ms;
			res->guards = g;
			res->send = s;
			res->result = r;
			return 0;
		}
	}
	return -ETIMEDOUT;
}

static const char *verr_name(int err)
{
	static char buf[64];

	if (err >= 1000) {
		snprintf(buf, sizeof(buf), "join failed (%s)",
			 st_errname(err - 1000));
		return buf;
	}
	return st_errname(err);
}

static int attacker_fake(bool rdma)
{
	const char *ph = rdma ? "fake-rdma" : "fake-tcp";
	struct rdma_cm_id *lid = NULL;
	int lfd = -1, cfd, i;
	struct ctl c;

	cfd = tcp_listen(o.ctl_port, 4);
	if (rdma) {
		struct sockaddr_in sin;

		r_sockaddr(&sin, "0.0.0.0", o.fake_port);
		if (rdma_create_id(r_ch, &lid, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(lid, (struct sockaddr *)&sin) ||
		    rdma_listen(lid, 16)) {
			tap(false, "%s: rdma_cm listener on port %d: %s", ph,
			    o.fake_port, strerror(errno));
			return 1;
		}
	} else {
		lfd = tcp_listen(o.fake_port, 16);
	}
	if (cfd < 0 || (!rdma && lfd < 0) || ctl_accept(&c, cfd)) {
		tap(false, "%s: no victim on the control port", ph);
		return 1;
	}
	for (i = 0; i < NFCASES; i++) {
		const struct fcase *fc = &fcases[i];
		struct peer p = { .fd = -1, .rdma = rdma, .k = i };
		uint32_t count = fc->count ? fc->count : 1024;
		struct vresult vr = { .err = -1 };
		char note[256] = "", why[160] = "";
		int64_t closed = -1, t0 = now_ms();
		bool aok, vok;

		if (!(fc->on & (rdma ? RDMA : TCP)))
			continue;
		rng_state = mix(0x1234 + (uint64_t)i);
		ids_for(&p.x, rdma ? PH_FAKE_RDMA : PH_FAKE_TCP, i, true,
			rdma ? COLL_COMM_F_REQUIRE_RDMA : COLL_COMM_F_TCP);
		p.count = count;
		p.replay = fc->replay;
		ctl_printf(&c, "case %d %u %u %u %u %d 1\n", i,
			   (unsigned int)(rdma ? COLL_COMM_F_REQUIRE_RDMA :
					  COLL_COMM_F_TCP),
			   count, fc->unalign, fc->sleep_ms,
			   bound_ms(fc) + 10000);
		aok = !peer_accept(&p, lfd, why, sizeof(why));
		if (aok && fc->replay && p.replay != 3) {
			aok = false;
			snprintf(note, sizeof(note), "the module never came back after RETRY");
		} else if (aok) {
			aok = fake_run(&p, fc, note, sizeof(note), &closed);
			if (aok && fc->replay)
				snprintf(note, sizeof(note),
					 "after RETRY, a replayed REPLY got no PROOF");
		} else {
			snprintf(note, sizeof(note), "%s", why);
		}
		peer_close(&p);
		if (ctl_done(&c, (unsigned int)i, bound_ms(fc) + 60000, &vr))
			snprintf(note + strlen(note), sizeof(note) - strlen(note),
				 "%sno word from the victim", *note ? "; " : "");
		/* a frame right after the handshake may beat the attach */
		if (fc->trig == T_AUTH && vr.err == 1000 + ECR)
			vr.err = ECR;
		vok = vr.err == fc->verr && vr.ms <= bound_ms(fc) &&
		      vr.guards && vr.send && (fc->verr || vr.result);
		if (aok && fc->verr == ECR && (closed < 0 || closed > bound_ms(fc))) {
			aok = false;
			snprintf(note + strlen(note), sizeof(note) - strlen(note),
				 "%sthe module kept the link %s", *note ? "; " : "",
				 closed < 0 ? "open" : "too long");
		}
		if (closed < 0)
			snprintf(why, sizeof(why), "kept the link");
		else if (fc->verr == ECR)
			snprintf(why, sizeof(why), "dropped the link in %lld ms",
				 (long long)closed);
		else
			snprintf(why, sizeof(why), "closed the link %lld ms later, as the victim left",
				 (long long)closed);
		tap(aok && vok,
		    "%s %s: module %s; victim %s in %lld ms (want %s within %d ms)%s%s%s%s # %.1f s",
		    ph, fc->name, why, verr_name(vr.err), (long long)vr.ms,
		    st_errname(fc->verr), bound_ms(fc),
		    vr.guards ? "" : ", GUARD BYTES WRITTEN",
		    vr.send ? "" : ", SEND BUFFER WRITTEN",
		    *note ? "; " : "", note, (now_ms() - t0) / 1000.0);
		if (!fc->verr && !vr.result)
			diag("%s %s: the victim's AllReduce result is wrong",
			     ph, fc->name);
	}
	ctl_printf(&c, "end\n");
	close(c.fd);
	close(cfd);
	if (lfd >= 0)
		close(lfd);
	if (lid)
		rdma_destroy_id(lid);
	return 0;
}

/* ---- the tag phase: the attacker knows the id, the victim accepts ---------- */

/*
 * Dial the victim's module and send @len bytes of @hello; read its REPLY.
 * Return: the REPLY's bytes (0: closed without one), or -errno; the
 * connection stays open in *@fdp.
 */
static ssize_t tcp_hello(const void *hello, size_t len,
			 struct coll_wire_reply *reply, int *fdp)
{
	int fd = tcp_dial(o.victim_ip, o.port, 5000);
	ssize_t r;

	*fdp = fd;
	if (fd < 0)
		return fd;
	r = io_wr(fd, hello, len, 5000);
	if (r)
		return r;
	memset(reply, 0, sizeof(*reply));
	return io_rd(fd, reply, sizeof(*reply), o.handshake_ms + SLACK_MS);
}

/* A HELLO's REPLY status, or -1 if none came. */
static int tcp_hello_status(const struct coll_wire_hello *h)
{
	struct coll_wire_reply r;
	ssize_t n;
	int fd;

	n = tcp_hello(h, sizeof(*h), &r, &fd);
	if (fd >= 0)
		close(fd);
	return n == sizeof(r) && le32toh(r.magic) == COLL_WIRE_MAGIC ?
	       le16toh(r.status) : -1;
}

/* A proper HELLO and REPLY; the connection is left open in *fdp. */
static int tcp_handshake(const struct ids *x, struct coll_wire_hello *h,
			 struct coll_wire_reply *r, int *fdp)
{
	hello_make(h, x, 0, 1, false);
	if (tcp_hello(h, sizeof(*h), r, fdp) != sizeof(*r) ||
	    !reply_valid(x, h, r)) {
		if (*fdp >= 0)
			close(*fdp);
		*fdp = -1;
		return -EPROTO;
	}
	return 0;
}

/* Send @proof on @fd and see whether the module drops us: ms, or -1. */
static int64_t tcp_proof_dropped(int fd, const struct coll_wire_proof *proof)
{
	int64_t ms = -1;

	if (!io_wr(fd, proof, sizeof(*proof), 5000))
		ms = wait_closed(fd, FAST_MS + 2000);
	close(fd);
	return ms;
}

static void tag_tcp(struct ctl *c, int k)
{
	struct coll_wire_hello h, h1;
	struct coll_wire_reply r, r1, r2;
	struct coll_wire_proof pf, pf1;
	struct watch w[2];
	struct watchset ws;
	struct ids x;
	struct vresult vr = { .err = -1 };
	int64_t end = now_ms() + 60000, ms;
	int st = -1, fd, i;
	char line[64];
	bool ok;

	ids_for(&x, PH_TAG, k, false, COLL_COMM_F_TCP);
	ctl_printf(c, "case %d %u 256 0 0 20000 0\n", k,
		   (unsigned int)COLL_COMM_F_TCP);
	/* other tables: REFUSED once the victim's communicator exists */
	do {
		hello_make(&h, &x, 0, 1, false);
		h.layout ^= htole32(1);
		st = tcp_hello_status(&h);
		if (st != COLL_WIRE_REFUSED)
			st_sleep_ms(200);
	} while (st != COLL_WIRE_REFUSED && now_ms() < end);
	tap(st == COLL_WIRE_REFUSED,
	    "tag tcp: a HELLO with other host tables is REFUSED (status %d)",
	    st);
	hello_make(&h, &x, 1, 1, false);
	st = tcp_hello_status(&h);
	tap(st == COLL_WIRE_REFUSED,
	    "tag tcp: a HELLO from host 1 to host 1 is REFUSED (status %d)", st);
	hello_make(&h, &x, 0, 2, false);
	st = tcp_hello_status(&h);
	tap(st == COLL_WIRE_REFUSED,
	    "tag tcp: a HELLO for host 2 is REFUSED (status %d)", st);
	hello_make(&h, &x, 0, 1, false);
	h.version = htole16(COLL_WIRE_VERSION + 1);
	st = tcp_hello_status(&h);
	tap(st == -1, "tag tcp: a HELLO of another version gets no REPLY (status %d)",
	    st);
	hello_make(&h, &x, 0, 1, true);
	st = tcp_hello_status(&h);
	tap(st == -1, "tag tcp: a HELLO with the RDMA flag gets no REPLY (status %d)",
	    st);

	/* PROOFs that must not do */
	ok = !tcp_handshake(&x, &h, &r, &fd);
	tap(ok, "tag tcp: the module's REPLY proves that it knows the id");
	if (ok) {
		proof_make(&x, &h, &r, &pf);
		nonce(pf.mac, sizeof(pf.mac));
		ms = tcp_proof_dropped(fd, &pf);
		tap(ms >= 0, "tag tcp: a wrong PROOF is dropped (%lld ms)",
		    (long long)ms);
	}
	for (i = 0; i < 2; i++) {
		ms = -1;
		ok = !tcp_handshake(&x, &h, &r, &fd);
		if (ok) {
			proof_make(&x, &h, &r, &pf);
			if (i)
				pf.__reserved = htole32(1);
			else
				pf.magic ^= htole32(1);
			ms = tcp_proof_dropped(fd, &pf);
		}
		tap(ok && ms >= 0, "tag tcp: a PROOF with the right MAC but %s is dropped (%lld ms)",
		    i ? "a reserved field set" : "a bad magic", (long long)ms);
	}
	/* replay: a PROOF from an earlier exchange */
	ms = -1;
	ok = !tcp_handshake(&x, &h1, &r1, &fd);
	if (ok) {
		proof_make(&x, &h1, &r1, &pf1);
		close(fd);		/* never sent */
		ok = tcp_hello(&h1, sizeof(h1), &r2, &fd) == sizeof(r2) &&
		     le16toh(r2.status) == COLL_WIRE_OK &&
		     memcmp(r1.nonce, r2.nonce, sizeof(r1.nonce));
		ms = ok ? tcp_proof_dropped(fd, &pf1) : -1;
		if (!ok && fd >= 0)
			close(fd);
	}
	tap(ok && ms >= 0,
	    "tag tcp: a PROOF replayed with its own HELLO meets a fresh nonce and is dropped (%lld ms)",
	    (long long)ms);
	ok = !tcp_handshake(&x, &h, &r, &fd);
	ms = ok ? tcp_proof_dropped(fd, &pf1) : -1;
	tap(ok && ms >= 0,
	    "tag tcp: a PROOF replayed on a new HELLO is dropped (%lld ms)",
	    (long long)ms);
	/* no PROOF, and half a PROOF: the handshake timeout */
	for (i = 0; i < 2; i++) {
		w[i].fd = -1;
		w[i].closed = -1;
		w[i].got = 0;
		if (!tcp_handshake(&x, &h, &r, &w[i].fd) && i)
			io_wr(w[i].fd, &pf1, 20, 2000);
		w[i].t0 = now_ms();
	}
	watch_start(&ws, w, 2, o.handshake_ms + SLACK_MS + 2000);
	watch_end(&ws);
	for (i = 0; i < 2; i++)
		tap(w[i].closed >= 0 &&
		    w[i].closed <= o.handshake_ms + SLACK_MS,
		    "tag tcp: %s is dropped within the handshake timeout (%lld ms)",
		    i ? "half a PROOF" : "no PROOF", (long long)w[i].closed);

	/* the proper handshake, last: only it joins */
	ok = !tcp_handshake(&x, &h, &r, &fd);
	if (ok) {
		struct peer p = { .fd = fd };
		int64_t t0 = now_ms();

		proof_make(&x, &h, &r, &pf);
		io_wr(fd, &pf, sizeof(pf), 2000);
		p.buf = malloc(MAX_FRAME);
		/* the module pings an attached link */
		ok = false;
		while (!ok && now_ms() - t0 < o.peer_timeout_ms + SLACK_MS) {
			if (peer_recv(&p, 1000) == -ECONNRESET)
				break;
			ok = p.h.type == COLL_MSG_PING ||
			     p.h.type == COLL_MSG_READY;
		}
		free(p.buf);
	}
	tap(ok, "tag tcp: the proper PROOF, sent last, is the one attached");
	ok = ok && !ctl_line(c, line, sizeof(line), 20000) &&
	     !strncmp(line, "joined", 6);
	tap(ok, "tag tcp: the victim's rank joined through it");
	if (fd >= 0)
		close(fd);
	ctl_done(c, (unsigned int)k, 60000, &vr);
	tap(vr.err == ECONNRESET && vr.ms <= FAST_MS && vr.guards && vr.send,
	    "tag tcp: the victim's collective fails with ECONNRESET when the fake host goes (%s, %lld ms)",
	    verr_name(vr.err), (long long)vr.ms);
}

/* Connect to the victim's module over rdma_cm with @hello. */
static struct rconn *rdma_hello(const void *hello, uint8_t len)
{
	return r_connect(o.victim_ip, o.port, hello, len, 4096);
}

static int reply_status(const struct rconn *rc)
{
	const struct coll_wire_reply *r = (const void *)rc->priv;

	if (rc->priv_len < (int)sizeof(*r) ||
	    le32toh(r->magic) != COLL_WIRE_MAGIC)
		return -1;
	return le16toh(r->status);
}

/* What became of a connection, for the log. */
static const char *rdesc(const struct rconn *rc)
{
	static char buf[96];

	if (!rc)
		return "no connection";
	snprintf(buf, sizeof(buf), "state %d, %d bytes of private data, status %d",
		 rc->state, rc->priv_len, reply_status(rc));
	return buf;
}

/* Accepted, with a REPLY that proves the id?  (the HELLO in @h) */
static bool rdma_accepted(const struct ids *x, const struct rconn *rc,
			  const struct coll_wire_hello *h)
{
	return rc && rc->state == RS_UP &&
	       rc->priv_len >= (int)sizeof(struct coll_wire_reply) &&
	       reply_valid(x, h, (const void *)rc->priv);
}

static void tag_rdma(struct ctl *c, int k)
{
	int64_t slow = o.peer_timeout_ms + 1000 + SLACK_MS;
	struct coll_wire_hello h, ha, *fh;
	struct coll_wire_proof pf, pfa;
	struct vresult vr = { .err = -1 };
	struct rconn *rc, *ra, **fl;
	int64_t end = now_ms() + 60000, ms;
	int st = -1, i, up, rej, down;
	char line[64];
	struct ids x;
	bool ok;

	ids_for(&x, PH_TAG, k, false, COLL_COMM_F_REQUIRE_RDMA);
	ctl_printf(c, "case %d %u 256 0 0 20000 0\n", k,
		   (unsigned int)COLL_COMM_F_REQUIRE_RDMA);
	do {
		hello_make(&h, &x, 0, 1, true);
		h.layout ^= htole32(1);
		rc = rdma_hello(&h, sizeof(h));
		st = rc->state == RS_REJECTED ? reply_status(rc) : -2;
		r_free(rc);
		if (st != COLL_WIRE_REFUSED)
			st_sleep_ms(200);
	} while (st != COLL_WIRE_REFUSED && now_ms() < end);
	tap(st == COLL_WIRE_REFUSED,
	    "tag rdma: a HELLO with other host tables is REFUSED (status %d)",
	    st);
	hello_make(&h, &x, 0, 1, false);
	rc = rdma_hello(&h, sizeof(h));
	tap(rc->state == RS_REJECTED,
	    "tag rdma: a HELLO without the RDMA flag is rejected (state %d)",
	    rc->state);
	r_free(rc);
	hello_make(&h, &x, 1, 1, true);
	rc = rdma_hello(&h, sizeof(h));
	tap(rc->state == RS_REJECTED && reply_status(rc) == COLL_WIRE_REFUSED,
	    "tag rdma: a HELLO from host 1 to host 1 is REFUSED (state %d)",
	    rc->state);
	r_free(rc);

	/* accepted, then a first message that is not the PROOF */
	for (i = 0; i < 2; i++) {
		hello_make(&h, &x, 0, 1, true);
		rc = rdma_hello(&h, sizeof(h));
		ok = rdma_accepted(&x, rc, &h);
		if (!i)
			tap(ok, "tag rdma: the module's REPLY proves that it knows the id");
		ms = -1;
		if (ok) {
			uint8_t junk[200];

			proof_make(&x, &h, (const void *)rc->priv, &pf);
			nonce(pf.mac, sizeof(pf.mac));
			rnd_fill(junk, sizeof(junk));
			if (i)
				r_send_raw(rc, junk, sizeof(junk));
			else
				r_send_raw(rc, &pf, sizeof(pf));
			ms = r_wait_down(rc, FAST_MS + 2000);
		}
		tap(ok && ms >= 0 && ms <= FAST_MS,
		    "tag rdma: %s as the first message is disconnected (%lld ms)",
		    i ? "200 random bytes" : "a wrong PROOF", (long long)ms);
		r_free(rc);
	}
	/*
	 * Replay.  The first connection stays up meanwhile: its queue pair
	 * number must not come back for the others (the CM would reject a
	 * request from a QPN it still has in time-wait as stale).
	 */
	hello_make(&ha, &x, 0, 1, true);
	ra = rdma_hello(&ha, sizeof(ha));
	ok = rdma_accepted(&x, ra, &ha);
	if (ok)
		proof_make(&x, &ha, (const void *)ra->priv, &pfa);
	else
		diag("tag rdma: the first connection: %s", rdesc(ra));
	for (i = 0; i < 2; i++) {
		if (i)
			hello_make(&h, &x, 0, 1, true);
		else
			h = ha;		/* its own HELLO again */
		rc = rdma_hello(&h, sizeof(h));
		ms = -1;
		if (ok && rdma_accepted(&x, rc, &h)) {
			int st = r_send_raw(rc, &pfa, sizeof(pfa));

			ms = r_wait_down(rc, FAST_MS + 2000);
			if (st || ms < 0)
				diag("tag rdma: replay %d: the SEND: %s; %s", i,
				     st > 0 ? ibv_wc_status_str(st) :
				     st ? "not posted" : "done", rdesc(rc));
		} else {
			diag("tag rdma: replay %d: %s", i, rdesc(rc));
		}
		tap(ok && ms >= 0 && ms <= FAST_MS,
		    "tag rdma: a PROOF replayed %s is disconnected (%lld ms)",
		    i ? "on a new HELLO" : "with its own HELLO", (long long)ms);
		r_free(rc);
	}
	if (ra && ra->state == RS_UP)
		rdma_disconnect(ra->id);
	r_free(ra);
	/* accepted and then silent, or an RDMA WRITE with a made-up key */
	for (i = 0; i < 2; i++) {
		hello_make(&h, &x, 0, 1, true);
		rc = rdma_hello(&h, sizeof(h));
		ms = -1;
		if (rdma_accepted(&x, rc, &h)) {
			int64_t t0 = now_ms();

			if (i)
				r_post_wait(rc, IBV_WR_RDMA_WRITE, 300,
					    r_send_buf(rc), 64,
					    rnd() & 0x7ffffffff000ULL,
					    (uint32_t)rnd(), 3000);
			ms = r_wait_down(rc, (int)slow + 2000);
			if (ms >= 0)
				ms = now_ms() - t0;
		}
		if (ms < 0)
			diag("tag rdma: silent %d: %s", i, rdesc(rc));
		tap(ms >= 0 && ms <= slow,
		    "tag rdma: %s is disconnected within peer_timeout_ms (%lld ms)",
		    i ? "an RDMA WRITE with a made-up key instead of a PROOF" :
		    "no PROOF", (long long)ms);
		r_free(rc);
	}
	/* a flood of connections that never prove anything */
	fl = calloc((size_t)o.flood_rdma_tag, sizeof(*fl));
	fh = calloc((size_t)o.flood_rdma_tag, sizeof(*fh));
	for (i = 0; i < o.flood_rdma_tag; i++) {
		hello_make(&fh[i], &x, 0, 1, true);
		fl[i] = r_connect_start(o.victim_ip, o.port, &fh[i],
					sizeof(fh[i]), 4096);
	}
	r_wait_settled(fl, o.flood_rdma_tag, 30000);
	up = rej = 0;
	for (i = 0; i < o.flood_rdma_tag; i++) {
		up += fl[i]->was_up;
		rej += !fl[i]->was_up && fl[i]->state == RS_REJECTED &&
		       reply_status(fl[i]) == COLL_WIRE_RETRY;
	}
	{
		int64_t t0 = now_ms();

		do {
			r_service(50);
			for (down = 0, i = 0; i < o.flood_rdma_tag; i++)
				down += r_gone(fl[i]);
		} while (down < up && now_ms() - t0 < slow + 5000);
	}
	tap(up <= MODULE_UNPROVEN && up + rej == o.flood_rdma_tag && down == up,
	    "tag rdma: %d connections without a PROOF: %d accepted (at most %d), %d rejected with RETRY, %d of the accepted dropped",
	    o.flood_rdma_tag, up, MODULE_UNPROVEN, rej, down);
	for (i = 0; i < o.flood_rdma_tag; i++)
		r_free(fl[i]);
	free(fl);
	free(fh);

	/* the proper handshake, last (RETRY while the flood's are pending) */
	end = now_ms() + 20000;
	for (;;) {
		hello_make(&h, &x, 0, 1, true);
		rc = rdma_hello(&h, sizeof(h));
		if (rc->state != RS_REJECTED ||
		    reply_status(rc) != COLL_WIRE_RETRY || now_ms() > end)
			break;
		r_free(rc);
		st_sleep_ms(500);
	}
	ok = rdma_accepted(&x, rc, &h);
	if (ok) {
		uint8_t buf[4096];
		int64_t t0 = now_ms();
		int n;

		proof_make(&x, &h, (const void *)rc->priv, &pf);
		r_send_raw(rc, &pf, sizeof(pf));
		ok = false;
		while (!ok && now_ms() - t0 < o.peer_timeout_ms + SLACK_MS) {
			n = r_recv(rc, buf, sizeof(buf), 1000);
			if (n == -ECONNRESET || r_gone(rc))
				break;
			ok = n >= (int)sizeof(struct coll_wire_hdr);
		}
	}
	if (!ok)
		diag("tag rdma: the proper handshake: %s", rdesc(rc));
	tap(ok, "tag rdma: the proper PROOF, sent last, is the one attached");
	ok = ok && !ctl_line(c, line, sizeof(line), 20000) &&
	     !strncmp(line, "joined", 6);
	tap(ok, "tag rdma: the victim's rank joined through it");
	if (rc && rc->state == RS_UP)
		rdma_disconnect(rc->id);
	r_free(rc);
	ctl_done(c, (unsigned int)k, 60000, &vr);
	tap(vr.err == ECONNRESET && vr.ms <= FAST_MS && vr.guards && vr.send,
	    "tag rdma: the victim's collective fails with ECONNRESET when the fake host goes (%s, %lld ms)",
	    verr_name(vr.err), (long long)vr.ms);
}

static int attacker_tag(void)
{
	int cfd = tcp_listen(o.ctl_port, 4);
	struct ctl c;

	if (cfd < 0 || ctl_accept(&c, cfd)) {
		tap(false, "tag: no victim on the control port");
		return 1;
	}
	tag_tcp(&c, 0);
	tag_rdma(&c, 1);
	ctl_printf(&c, "end\n");
	close(c.fd);
	close(cfd);
	return 0;
}

/* ---- the unauth phase: no id -------------------------------------------------- */

/* Does the module still answer a HELLO (RETRY for a random tag)? */
static bool tcp_listener_answers(void)
{
	struct coll_wire_hello h;

	hello_random(&h, false);
	return tcp_hello_status(&h) == COLL_WIRE_RETRY;
}

/* Dial, send @len bytes (maybe none), keep it open to be watched. */
static void watch_open(struct watch *w, const void *buf, size_t len)
{
	w->closed = -1;
	w->got = 0;
	w->fd = tcp_dial(o.victim_ip, o.port, 5000);
	if (w->fd >= 0 && len)
		io_wr(w->fd, buf, len, 2000);
	w->t0 = now_ms();
	if (w->fd < 0)
		w->closed = 0;
}

static void unauth_tcp(void)
{
	int hs = o.handshake_ms + SLACK_MS;
	struct coll_wire_hello h;
	struct coll_wire_reply r;
	struct watch slowc[2], *fw;
	struct watchset ws, fws;
	uint8_t *junk;
	int64_t ms;
	ssize_t n;
	int fd, i, held, closed, late;

	/* the slow ones first, watched while the rest runs */
	hello_random(&h, false);
	watch_open(&slowc[0], NULL, 0);
	watch_open(&slowc[1], &h, 20);
	watch_start(&ws, slowc, 2, hs + 20000);

	junk = malloc(1 << 20);
	rnd_fill(junk, 1 << 20);
	fd = tcp_dial(o.victim_ip, o.port, 5000);
	ms = fd < 0 ? -1 : (io_wr(fd, junk, 4096, 2000), wait_closed(fd, hs));
	tap(ms >= 0 && ms <= FAST_MS,
	    "unauth tcp: 4 KiB of random bytes are dropped at once (%lld ms)",
	    (long long)ms);
	if (fd >= 0)
		close(fd);

	for (i = 0; i < 2; i++) {
		hello_random(&h, false);
		if (i)
			h.flags = htole16(0x8000);
		else
			h.version = htole16(COLL_WIRE_VERSION + 1);
		n = tcp_hello(&h, sizeof(h), &r, &fd);
		ms = fd < 0 || n ? -1 : wait_closed(fd, hs);
		tap(n == 0 && ms >= 0,
		    "unauth tcp: a HELLO with %s is closed without a REPLY (%zd bytes back)",
		    i ? "unknown flags" : "another version", n);
		if (fd >= 0)
			close(fd);
	}

	hello_random(&h, false);
	n = tcp_hello(&h, sizeof(h), &r, &fd);
	ms = fd >= 0 ? wait_closed(fd, hs) : -1;
	tap(n == sizeof(r) && le32toh(r.magic) == COLL_WIRE_MAGIC &&
	    le16toh(r.status) == COLL_WIRE_RETRY &&
	    st_find_not(r.mac, 0, sizeof(r.mac)) == sizeof(r.mac) && ms >= 0,
	    "unauth tcp: a HELLO with a random tag gets RETRY, no MAC, and is closed (status %d)",
	    n == sizeof(r) ? le16toh(r.status) : -1);
	if (fd >= 0)
		close(fd);

	/* a HELLO and then 1 MiB at once */
	hello_random(&h, false);
	memcpy(junk, &h, sizeof(h));
	fd = tcp_dial(o.victim_ip, o.port, 5000);
	ms = -1;
	if (fd >= 0) {
		io_wr(fd, junk, 1 << 20, 3000);
		ms = wait_closed(fd, hs);
		close(fd);
	}
	tap(ms >= 0 && ms <= FAST_MS,
	    "unauth tcp: a HELLO followed by 1 MiB is closed at once (%lld ms)",
	    (long long)ms);

	/* truncated, then closed by us */
	fd = tcp_dial(o.victim_ip, o.port, 5000);
	if (fd >= 0) {
		io_wr(fd, &h, 20, 2000);
		close(fd);
	}
	tap(tcp_listener_answers(),
	    "unauth tcp: after a truncated HELLO and close, the listener still answers");
	free(junk);

	/* many at once */
	fw = calloc((size_t)o.flood_tcp, sizeof(*fw));
	for (i = 0; i < o.flood_tcp; i++)
		watch_open(&fw[i], NULL, 0);
	watch_start(&fws, fw, o.flood_tcp, 2 * hs + 5000);
	watch_end(&fws);
	held = closed = late = 0;
	for (i = 0; i < o.flood_tcp; i++) {
		closed += fw[i].closed >= 0;
		held += fw[i].closed > 1500;
		late += fw[i].closed < 0 || fw[i].closed > 2 * hs;
	}
	tap(closed == o.flood_tcp && !late && held <= MODULE_PENDING,
	    "unauth tcp: %d idle connections at once: all dropped (%d), at most %d held past 1.5 s (%d), none past %d ms (%d)",
	    o.flood_tcp, closed, MODULE_PENDING, held, 2 * hs, late);
	free(fw);
	tap(tcp_listener_answers(),
	    "unauth tcp: after the flood, the listener still answers");

	watch_end(&ws);
	for (i = 0; i < 2; i++)
		tap(slowc[i].closed >= 0 && slowc[i].closed <= hs,
		    "unauth tcp: %s is dropped within the handshake timeout (%lld ms)",
		    i ? "a truncated HELLO, then silence" : "a silent connection",
		    (long long)slowc[i].closed);
}

static void unauth_rdma(void)
{
	struct coll_wire_hello h;
	uint8_t junk[56];
	struct rconn *rc, **fl;
	struct coll_wire_hello *fh;
	int i, rej, st;
	int64_t t0;

	rc = rdma_hello(NULL, 0);
	tap(rc->state == RS_REJECTED,
	    "unauth rdma: a connect request without private data is rejected (state %d)",
	    rc->state);
	r_free(rc);
	rnd_fill(junk, sizeof(junk));
	rc = rdma_hello(junk, sizeof(junk));
	tap(rc->state == RS_REJECTED,
	    "unauth rdma: 56 random bytes of private data are rejected (state %d)",
	    rc->state);
	r_free(rc);
	hello_random(&h, true);
	rc = rdma_hello(&h, 20);
	tap(rc->state == RS_REJECTED,
	    "unauth rdma: a truncated HELLO is rejected (state %d)", rc->state);
	r_free(rc);
	{
		uint8_t big[255];

		/* more than a connect request carries (56 bytes for RC) */
		hello_random(&h, true);
		memset(big, 0x5a, sizeof(big));
		memcpy(big, &h, sizeof(h));
		rc = rdma_hello(big, sizeof(big));
		tap(rc->state == RS_REJECTED || rc->state == RS_ERROR,
		    "unauth rdma: 255 bytes of private data are not accepted (state %d: %s)",
		    rc->state, rc->state == RS_ERROR ?
		    "the CM refuses to send them" : "rejected");
		r_free(rc);
	}
	hello_random(&h, true);
	h.version = htole16(COLL_WIRE_VERSION + 1);
	rc = rdma_hello(&h, sizeof(h));
	tap(rc->state == RS_REJECTED,
	    "unauth rdma: a HELLO of another version is rejected (state %d)",
	    rc->state);
	r_free(rc);
	hello_random(&h, false);
	rc = rdma_hello(&h, sizeof(h));
	tap(rc->state == RS_REJECTED,
	    "unauth rdma: a HELLO without the RDMA flag is rejected (state %d)",
	    rc->state);
	r_free(rc);
	hello_random(&h, true);
	rc = rdma_hello(&h, sizeof(h));
	st = reply_status(rc);
	tap(rc->state == RS_REJECTED && st == COLL_WIRE_RETRY,
	    "unauth rdma: a HELLO with a random tag is rejected with RETRY (state %d, status %d)",
	    rc->state, st);
	r_free(rc);

	fl = calloc((size_t)o.flood_rdma, sizeof(*fl));
	fh = calloc((size_t)o.flood_rdma, sizeof(*fh));
	t0 = now_ms();
	for (i = 0; i < o.flood_rdma; i++) {
		hello_random(&fh[i], true);
		fl[i] = r_connect_start(o.victim_ip, o.port, &fh[i],
					sizeof(fh[i]), 4096);
	}
	r_wait_settled(fl, o.flood_rdma, 20000);
	for (rej = 0, i = 0; i < o.flood_rdma; i++) {
		rej += fl[i]->state == RS_REJECTED;
		r_free(fl[i]);
	}
	tap(rej == o.flood_rdma,
	    "unauth rdma: %d requests with random tags at once: %d rejected (%lld ms)",
	    o.flood_rdma, rej, (long long)(now_ms() - t0));
	free(fl);
	free(fh);
}

/* ---- the live communicators -------------------------------------------------- */

static bool file_exists(const char *path)
{
	struct stat st;

	return path && !stat(path, &st);
}

/* Real ranks on both guests, collectives checked, until told to stop. */
static int live_main(void)
{
	static const uint32_t sizes[] = { 1, 1000, 20000, 70000 };
	const char *names[2] = { "rdma", "tcp" };
	coll_comm_t *comm[2] = { NULL, NULL };
	int64_t ops[2] = { 0, 0 }, bad[2] = { 0, 0 };
	int err[2] = { 0, 0 }, it, j, r;
	char root[64], why[2][128] = { "", "" };
	int32_t *s = malloc(70000 * 4), *d = malloc(70000 * 4);

	for (j = 0; j < 2; j++) {
		struct ids x;
		coll_id_t id;
		struct coll_comm_query q;
		struct coll_peer_info pi[2];

		ids_for(&x, j ? PH_LIVE_TCP : PH_LIVE_RDMA, 0, true,
			j ? COLL_COMM_F_TCP : 0);
		memcpy(id.bytes, x.id, sizeof(id.bytes));
		snprintf(root, sizeof(root), "%s:%d", o.victim_ip,
			 o.rdv_port + j);
		r = coll_comm_init_root(&comm[j], 2, o.node, &id, root, 120000,
					j ? COLL_COMM_F_TCP : 0);
		if (r) {
			tap(false, "live %s: join: %s", names[j],
			    coll_strerror(r));
			return 1;
		}
		r = coll_comm_query(comm[j], &q, pi, 2);
		if (r || pi[!o.node].transport != (j ? COLL_TRANSPORT_TCP :
						   COLL_TRANSPORT_RDMA))
			diag("live %s: the peer is reached over transport %u",
			     names[j], r ? 99 : pi[!o.node].transport);
	}
	if (o.ready) {
		FILE *f = fopen(o.ready, "w");

		if (f)
			fclose(f);
	}
	for (it = 0;; it++) {
		int32_t stop;

		for (j = 0; j < 2 && !err[0] && !err[1]; j++) {
			uint32_t n = sizes[(it + j) % 4], i;

			for (i = 0; i < n; i++)
				s[i] = pattern(it * 2 + j, o.node, i);
			memset(d, 0xa5, (size_t)n * 4);
			r = coll_allreduce(comm[j], s, d, n, COLL_INT32,
					   COLL_SUM);
			ops[j]++;
			if (r) {
				err[j] = r;
				snprintf(why[j], sizeof(why[j]),
					 "collective %d (%u elements): %s", it,
					 n, coll_strerror(r));
				break;
			}
			for (i = 0; i < n; i++) {
				int32_t want = (int32_t)
					((uint32_t)pattern(it * 2 + j, 0, i) +
					 (uint32_t)pattern(it * 2 + j, 1, i));

				if (d[i] != want) {
					bad[j]++;
					snprintf(why[j], sizeof(why[j]),
						 "collective %d: element %u is %d, not %d",
						 it, i, d[i], want);
					break;
				}
			}
		}
		if (err[0] || err[1])
			break;
		stop = file_exists(o.stop);
		r = coll_allreduce(comm[0], &stop, &stop, 1, COLL_INT32,
				   COLL_MAX);
		if (r) {
			err[0] = r;
			snprintf(why[0], sizeof(why[0]), "the stop vote: %s",
				 coll_strerror(r));
			break;
		}
		if (stop)
			break;
	}
	for (j = 0; j < 2; j++) {
		tap(!err[j] && !bad[j] && ops[j] >= 3,
		    "live %s (guest %d): %lld collectives during the attacks, %lld wrong%s%s",
		    names[j], o.node, (long long)ops[j], (long long)bad[j],
		    *why[j] ? ": " : "", why[j]);
	}
	/* leave together: a peer still finishing sees no ECONNRESET */
	{
		int32_t one = 1;

		if (!err[0] && !err[1])
			coll_allreduce(comm[1], &one, &one, 1, COLL_INT32,
				       COLL_SUM);
	}
	coll_comm_destroy(comm[0]);
	coll_comm_destroy(comm[1]);
	free(s);
	free(d);
	return 0;
}

/* ---- nothing left behind ----------------------------------------------------- */

/*
 * COLL_INFO back to what it said right after the module was loaded
 * (--kernel-bytes: its out_kernel_bytes then, which counts the asking
 * descriptor itself).
 */
static int idle_main(uint64_t kbytes0)
{
	struct coll_info in;
	int64_t end = now_ms() + 20000;
	bool idle;
	int r;

	do {
		r = st_info_fresh(&in);
		idle = !r && !in.out_comms && !in.out_ops &&
		       !in.out_pinned_pages && !in.out_reqs &&
		       in.out_kernel_bytes == kbytes0;
		if (idle)
			break;
		st_sleep_ms(200);
	} while (now_ms() < end);
	tap(idle,
	    "idle (guest %d): no communicator, collective, pinned page, request or kernel memory left (%llu, %llu, %llu, %llu, %llu bytes; %llu at load)",
	    o.node, (unsigned long long)in.out_comms,
	    (unsigned long long)in.out_ops,
	    (unsigned long long)in.out_pinned_pages,
	    (unsigned long long)in.out_reqs,
	    (unsigned long long)in.out_kernel_bytes,
	    (unsigned long long)kbytes0);
	return 0;
}

/* ---- main ---------------------------------------------------------------------- */

static int hexid(const char *s, uint8_t out[16])
{
	int i;

	if (!s || strlen(s) != 32)
		return -1;
	for (i = 0; i < 16; i++)
		if (sscanf(s + 2 * i, "%2hhx", &out[i]) != 1)
			return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "role", required_argument, NULL, 'r' },
		{ "phase", required_argument, NULL, 'p' },
		{ "victim", required_argument, NULL, 'v' },
		{ "attacker", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'P' },
		{ "fake-port", required_argument, NULL, 'F' },
		{ "ctl-port", required_argument, NULL, 'C' },
		{ "node", required_argument, NULL, 'n' },
		{ "stop", required_argument, NULL, 's' },
		{ "ready", required_argument, NULL, 'R' },
		{ "peer-timeout-ms", required_argument, NULL, 't' },
		{ "kernel-bytes", required_argument, NULL, 'k' },
		{ 0 }
	};
	uint64_t kbytes0 = 0;
	int opt, ret = 0;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'r': o.role = optarg; break;
		case 'p': o.phase = optarg; break;
		case 'v': o.victim_ip = optarg; break;
		case 'a': o.attacker_ip = optarg; break;
		case 'P': o.port = atoi(optarg); break;
		case 'F': o.fake_port = atoi(optarg); break;
		case 'C': o.ctl_port = atoi(optarg); break;
		case 'n': o.node = atoi(optarg); break;
		case 's': o.stop = optarg; break;
		case 'R': o.ready = optarg; break;
		case 't': o.peer_timeout_ms = atoi(optarg); break;
		case 'k': kbytes0 = strtoull(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (!o.role || hexid(getenv("COLL_ID"), o.base_id)) {
		fprintf(stderr, "usage: COLL_ID=<32 hex digits> coll_wire_fuzz --role attacker|victim|live|idle|info [--phase unauth|tag|fake-tcp|fake-rdma] --victim IP --attacker IP\n");
		return 2;
	}
	rng_state ^= mix(o.base_id[0] | (uint64_t)o.base_id[15] << 8);
	if (!strcmp(o.role, "info")) {
		struct coll_info in;

		if (st_info_fresh(&in))
			return 1;
		printf("%llu\n", (unsigned long long)in.out_kernel_bytes);
		return 0;
	}
	printf("TAP version 13\n");
	if (!strcmp(o.role, "idle"))
		return idle_main(kbytes0);
	if (!o.victim_ip) {
		fprintf(stderr, "--victim IP is needed\n");
		return 2;
	}
	if (!strcmp(o.role, "live")) {
		ret = live_main();
	} else if (!o.attacker_ip || !o.phase) {
		fprintf(stderr, "--attacker IP and --phase are needed\n");
		return 2;
	} else if (!strcmp(o.role, "victim")) {
		ret = victim_main();
	} else if (!strcmp(o.role, "attacker")) {
		r_ch = rdma_create_event_channel();
		if (!r_ch) {
			tap(false, "attacker: no rdma_cm event channel: %s",
			    strerror(errno));
			return 1;
		}
		set_nonblock(r_ch->fd);
		if (!strcmp(o.phase, "unauth")) {
			unauth_tcp();
			unauth_rdma();
		} else if (!strcmp(o.phase, "tag")) {
			ret = attacker_tag();
		} else if (!strcmp(o.phase, "fake-tcp")) {
			ret = attacker_fake(false);
		} else if (!strcmp(o.phase, "fake-rdma")) {
			ret = attacker_fake(true);
		} else {
			fprintf(stderr, "unknown phase %s\n", o.phase);
			return 2;
		}
		rdma_destroy_event_channel(r_ch);
	} else {
		fprintf(stderr, "unknown role %s\n", o.role);
		return 2;
	}
	printf("1..%d\n", tap_n);
	return ret || tap_failed ? 1 : 0;
}
