// SPDX-License-Identifier: MIT
/*
 * Joining a communicator whose ranks span hosts.
 *
 * The rendezvous follows NCCL and torch.distributed: rank 0's process
 * listens at a root address; every other rank connects, says who it is
 * (its rank, a key naming its host and network namespace, the address by
 * which it reached the root and its module's port) and gets back the full
 * tables, which every rank then hands to COLL_COMM_INIT; the modules
 * connect to each other from there.  Nothing is taken on trust: each side
 * proves it knows the communicator's id with an HMAC-SHA256 over fresh
 * nonces (the id itself never crosses the network), and the root accepts
 * nothing else from a client that fails its proof.
 *
 * Hosts are numbered by their lowest rank (rank 0's host is host 0); a
 * host's address is the one its lowest rank reached the root from (for
 * host 0, the one the clients reached the root at).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "coll_sha256.h"
#include "libcollective.h"
#include "libcollective_int.h"

#define RDV_MAGIC	"COLLRDV1"
#define RDV_MAX_PENDING	64

struct rdv_hello {
	char magic[8];
	uint32_t rank;		/* little-endian, as every field */
	uint32_t nranks;
	uint32_t flags;		/* COLL_COMM_F_* this rank asks for */
	uint16_t port;
	uint16_t pad;
	uint8_t hostkey[32];
	uint8_t addr[16];
	uint8_t nonce[16];
	uint8_t mac[32];	/* HMAC(id, "rdv hello" || banner nonce || all above) */
} __attribute__((packed));

struct rdv_banner {
	char magic[8];
	uint8_t nonce[16];
} __attribute__((packed));

struct rdv_reply {
	char magic[8];
	int32_t status;		/* 0 or an errno */
	uint32_t nhosts;
	uint32_t nranks;
	uint32_t pad;
} __attribute__((packed));
/* then nhosts struct coll_host (port little-endian), nranks u32, 32-byte MAC */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint32_t le32(uint32_t v)
{
	return htole32(v);
}

static void mac(const coll_id_t *id, const char *label, const void *a,
		size_t alen, const void *b, size_t blen, uint8_t out[32])
{
	const void *parts[3] = { label, a, b };
	size_t lens[3] = { strlen(label) + 1, alen, blen };

	coll_hmac_sha256(id->bytes, sizeof(id->bytes), parts, lens, 3, out);
}

/* SHA-256 of the boot id and the network namespace: one per host and ns. */
static int host_key(uint8_t key[32])
{
	struct coll_sha256 s;
	char boot[64] = { 0 };
	struct stat st;
	ssize_t n;
	int fd;

	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, boot, sizeof(boot) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	if (stat("/proc/self/ns/net", &st))
		memset(&st, 0, sizeof(st));
	coll_sha256_init(&s);
	coll_sha256_update(&s, boot, (size_t)n);
	coll_sha256_update(&s, &st.st_ino, sizeof(st.st_ino));
	coll_sha256_update(&s, &st.st_dev, sizeof(st.st_dev));
	coll_sha256_final(&s, key);
	return 0;
}

static void sa_to_v6(const struct sockaddr_storage *ss, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (ss->ss_family == AF_INET6) {
		memcpy(addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	} else if (ss->ss_family == AF_INET) {
		addr[10] = 0xff;
		addr[11] = 0xff;
		memcpy(addr + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	}
}

/* Read or write exactly @len bytes before @deadline (ms). */
static int io_full(int fd, void *buf, size_t len, int writing, uint64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = writing ? POLLOUT : POLLIN };
		uint64_t t = now_ms();
		ssize_t r;

		if (t >= deadline)
			return -ETIMEDOUT;
		r = poll(&pf, 1, (int)(deadline - t));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -ETIMEDOUT;
		r = writing ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			return r ? -errno : -ECONNRESET;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/* "host:port" or "[v6]:port" -> its parts. */
static int split_root(const char *root, char *host, size_t hlen, char *port,
		      size_t plen)
{
	const char *colon;
	size_t n;

	if (!root || !*root)
		return -EINVAL;
	if (root[0] == '[') {
		const char *end = strchr(root, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		n = (size_t)(end - root - 1);
		colon = end + 1;
		root++;
	} else {
		colon = strrchr(root, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - root);
	}
	if (!n || n >= hlen || strlen(colon + 1) >= plen || !colon[1])
		return -EINVAL;
	memcpy(host, root, n);
	host[n] = 0;
	strcpy(port, colon + 1);
	return 0;
}

/* ---- the root (rank 0) ------------------------------------------------------ */

struct rdv_client {
	int fd;
	size_t got;
	struct rdv_banner banner;
	struct rdv_hello hello;
	struct sockaddr_storage local;	/* where it reached us */
};

struct rdv_tables {
	uint32_t nhosts;
	struct coll_host *hosts;
	uint32_t *rank_hosts;
};

static int listen_on(const char *port)
{
	struct addrinfo hints = {
		.ai_family = AF_INET6,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE,
	}, *ai;
	int fd, one = 1, zero = 0, r;

	r = getaddrinfo(NULL, port, &hints, &ai);
	if (r)
		return -EINVAL;
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return -errno;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	r = bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128) ? -errno : 0;
	freeaddrinfo(ai);
	if (r) {
		close(fd);
		return r;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/* Build the tables from every rank's hello (rank 0's is @self). */
static int build_tables(const struct rdv_hello *by_rank, uint32_t nranks,
			struct rdv_tables *t)
{
	uint32_t r, h;

	t->hosts = calloc(nranks, sizeof(*t->hosts));
	t->rank_hosts = calloc(nranks, sizeof(*t->rank_hosts));
	if (!t->hosts || !t->rank_hosts)
		return -ENOMEM;
	t->nhosts = 0;
	for (r = 0; r < nranks; r++) {
		for (h = 0; h < r; h++)
			if (!memcmp(by_rank[h].hostkey, by_rank[r].hostkey, 32))
				break;
		if (h < r) {
			t->rank_hosts[r] = t->rank_hosts[h];
			continue;
		}
		memcpy(t->hosts[t->nhosts].addr, by_rank[r].addr, 16);
		t->hosts[t->nhosts].port = le16toh(by_rank[r].port);
		t->rank_hosts[r] = t->nhosts++;
	}
	return 0;
}

static int send_reply(int fd, const coll_id_t *id, const struct rdv_hello *h,
		      int status, const struct rdv_tables *t, uint32_t nranks,
		      uint64_t deadline)
{
	size_t hbytes = t ? t->nhosts * sizeof(struct coll_host) : 0;
	size_t rbytes = t ? nranks * sizeof(uint32_t) : 0;
	size_t len = sizeof(struct rdv_reply) + hbytes + rbytes + 32;
	struct rdv_reply *rp;
	uint8_t *buf = calloc(1, len), *p;
	uint32_t i;
	int r;

	if (!buf)
		return -ENOMEM;
	rp = (struct rdv_reply *)buf;
	memcpy(rp->magic, RDV_MAGIC, 8);
	rp->status = (int32_t)le32((uint32_t)status);
	rp->nhosts = le32(t ? t->nhosts : 0);
	rp->nranks = le32(t ? nranks : 0);
	p = buf + sizeof(*rp);
	for (i = 0; t && i < t->nhosts; i++) {
		struct coll_host hs = t->hosts[i];

		hs.port = htole16(hs.port);
		memcpy(p, &hs, sizeof(hs));
		p += sizeof(hs);
	}
	for (i = 0; t && i < nranks; i++) {
		uint32_t v = le32(t->rank_hosts[i]);

		memcpy(p, &v, 4);
		p += 4;
	}
	mac(id, "rdv tables v1", h->nonce, sizeof(h->nonce), buf,
	    (size_t)(p - buf), p);
	r = io_full(fd, buf, len, 1, deadline);
	free(buf);
	return r;
}

static int root_serve(const coll_id_t *id, int nranks, const char *port,
		      const struct rdv_hello *self, uint64_t deadline,
		      struct rdv_tables *out)
{
	struct rdv_client *cl = calloc(RDV_MAX_PENDING, sizeof(*cl));
	struct rdv_hello *by_rank = calloc((size_t)nranks, sizeof(*by_rank));
	int *rank_fd = calloc((size_t)nranks, sizeof(*rank_fd));
	struct sockaddr_storage root_local = { 0 };
	int lfd, have = 1, i, ret = 0;
	bool have_local = false;

	if (!cl || !by_rank || !rank_fd) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < RDV_MAX_PENDING; i++)
		cl[i].fd = -1;
	for (i = 0; i < nranks; i++)
		rank_fd[i] = -1;
	by_rank[0] = *self;
	lfd = listen_on(port);
	if (lfd < 0) {
		ret = lfd;
		goto out;
	}
	while (have < nranks) {
		struct pollfd pf[RDV_MAX_PENDING + 1];
		uint64_t t = now_ms();
		int n = 0, r;

		if (t >= deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		pf[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (i = 0; i < RDV_MAX_PENDING; i++)
			pf[n++] = (struct pollfd){ .fd = cl[i].fd,
						   .events = POLLIN };
		r = poll(pf, (nfds_t)n, (int)(deadline - t));
		if (r < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		if (r <= 0)
			continue;
		if (pf[0].revents & POLLIN) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			for (i = 0; fd >= 0 && i < RDV_MAX_PENDING; i++)
				if (cl[i].fd < 0)
					break;
			if (fd >= 0 && i == RDV_MAX_PENDING) {
				close(fd);
			} else if (fd >= 0) {
				socklen_t sl = sizeof(cl[i].local);

				memset(&cl[i], 0, sizeof(cl[i]));
				cl[i].fd = fd;
				getsockname(fd, (struct sockaddr *)&cl[i].local, &sl);
				memcpy(cl[i].banner.magic, RDV_MAGIC, 8);
				if (getrandom(cl[i].banner.nonce, 16, 0) != 16 ||
				    io_full(fd, &cl[i].banner, sizeof(cl[i].banner),
					    1, now_ms() + 1000)) {
					close(fd);
					cl[i].fd = -1;
				}
			}
		}
		for (i = 0; i < RDV_MAX_PENDING; i++) {
			struct rdv_client *c = &cl[i];
			uint8_t want[32];
			uint32_t rk;
			ssize_t got;

			if (c->fd < 0 || !(pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			got = recv(c->fd, (uint8_t *)&c->hello + c->got,
				   sizeof(c->hello) - c->got, MSG_DONTWAIT);
			if (got <= 0) {
				if (got < 0 && (errno == EAGAIN || errno == EINTR))
					continue;
				close(c->fd);
				c->fd = -1;
				continue;
			}
			c->got += (size_t)got;
			if (c->got < sizeof(c->hello))
				continue;
			mac(id, "rdv hello v1", c->banner.nonce, 16, &c->hello,
			    offsetof(struct rdv_hello, mac), want);
			rk = le32toh(c->hello.rank);
			if (memcmp(c->hello.magic, RDV_MAGIC, 8) ||
			    coll_memneq(want, c->hello.mac, 32) ||
			    le32toh(c->hello.nranks) != (uint32_t)nranks ||
			    le32toh(c->hello.flags) != le32toh(self->flags) ||
			    !rk || rk >= (uint32_t)nranks || rank_fd[rk] >= 0) {
				/* not one of ours, or a rank twice: drop it */
				close(c->fd);
				c->fd = -1;
				continue;
			}
			by_rank[rk] = c->hello;
			rank_fd[rk] = c->fd;
			if (!have_local) {
				root_local = c->local;
				have_local = true;
			}
			c->fd = -1;
			have++;
		}
	}
	close(lfd);
	if (!ret) {
		sa_to_v6(&root_local, by_rank[0].addr);
		ret = build_tables(by_rank, (uint32_t)nranks, out);
	}
	for (i = 1; i < nranks; i++) {
		if (rank_fd[i] < 0)
			continue;
		send_reply(rank_fd[i], id, &by_rank[i], ret ? -ret : 0,
			   ret ? NULL : out, (uint32_t)nranks, deadline);
		close(rank_fd[i]);
	}
out:
	for (i = 0; cl && i < RDV_MAX_PENDING; i++)
		if (cl[i].fd >= 0)
			close(cl[i].fd);
	free(cl);
	free(by_rank);
	free(rank_fd);
	return ret;
}

/* ---- the other ranks ------------------------------------------------------------- */

static int dial(const char *host, const char *port, uint64_t deadline)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *a;
	int fd = -ETIMEDOUT, one = 1;
	unsigned int backoff = 20;

	while (now_ms() < deadline) {
		if (getaddrinfo(host, port, &hints, &ai) == 0) {
			for (a = ai; a; a = a->ai_next) {
				fd = socket(a->ai_family,
					    SOCK_STREAM | SOCK_CLOEXEC, 0);
				if (fd < 0)
					continue;
				if (!connect(fd, a->ai_addr, a->ai_addrlen))
					break;
				close(fd);
				fd = -ECONNREFUSED;
			}
			freeaddrinfo(ai);
			if (a) {
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
					   sizeof(one));
				return fd;
			}
		}
		usleep(backoff * 1000);
		if (backoff < 500)
			backoff *= 2;
	}
	return -ETIMEDOUT;
}

static int client_join(const coll_id_t *id, int nranks, const char *host,
		       const char *port, struct rdv_hello *self,
		       uint64_t deadline, struct rdv_tables *out)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct rdv_banner banner;
	struct rdv_reply rp;
	uint8_t *buf = NULL, want[32];
	size_t hbytes, rbytes;
	uint32_t i;
	int fd, ret;

	fd = dial(host, port, deadline);
	if (fd < 0)
		return fd;
	ret = io_full(fd, &banner, sizeof(banner), 0, deadline);
	if (!ret && memcmp(banner.magic, RDV_MAGIC, 8))
		ret = -EPROTO;
	if (ret)
		goto out_close;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	sa_to_v6(&ss, self->addr);
	mac(id, "rdv hello v1", banner.nonce, 16, self,
	    offsetof(struct rdv_hello, mac), self->mac);
	ret = io_full(fd, self, sizeof(*self), 1, deadline);
	if (!ret)
		ret = io_full(fd, &rp, sizeof(rp), 0, deadline);
	if (ret)
		goto out_close;
	ret = -EPROTO;
	if (memcmp(rp.magic, RDV_MAGIC, 8))
		goto out_close;
	if (rp.status) {
		ret = -(int)le32toh((uint32_t)rp.status);
		goto out_close;
	}
	out->nhosts = le32toh(rp.nhosts);
	if (!out->nhosts || out->nhosts > (uint32_t)nranks ||
	    le32toh(rp.nranks) != (uint32_t)nranks)
		goto out_close;
	hbytes = out->nhosts * sizeof(struct coll_host);
	rbytes = (size_t)nranks * 4;
	buf = malloc(sizeof(rp) + hbytes + rbytes + 32);
	out->hosts = calloc(out->nhosts, sizeof(*out->hosts));
	out->rank_hosts = calloc((size_t)nranks, sizeof(*out->rank_hosts));
	if (!buf || !out->hosts || !out->rank_hosts) {
		ret = -ENOMEM;
		goto out_close;
	}
	memcpy(buf, &rp, sizeof(rp));
	ret = io_full(fd, buf + sizeof(rp), hbytes + rbytes + 32, 0, deadline);
	if (ret)
		goto out_close;
	/* The root proves it knows the id too, over our nonce. */
	mac(id, "rdv tables v1", self->nonce, sizeof(self->nonce), buf,
	    sizeof(rp) + hbytes + rbytes, want);
	ret = -EPROTO;
	if (coll_memneq(want, buf + sizeof(rp) + hbytes + rbytes, 32))
		goto out_close;
	memcpy(out->hosts, buf + sizeof(rp), hbytes);
	for (i = 0; i < out->nhosts; i++)
		out->hosts[i].port = le16toh(out->hosts[i].port);
	for (i = 0; i < (uint32_t)nranks; i++) {
		uint32_t v;

		memcpy(&v, buf + sizeof(rp) + hbytes + 4 * i, 4);
		out->rank_hosts[i] = le32toh(v);
	}
	ret = 0;
out_close:
	free(buf);
	close(fd);
	return ret;
}

/* ---- the public functions ---------------------------------------------------------- */

int coll_comm_init_hosts(coll_comm_t **commp, int nranks, int rank,
			 const coll_id_t *id, unsigned int nhosts,
			 const struct coll_host *hosts,
			 const uint32_t *rank_hosts, unsigned int timeout_ms,
			 unsigned int flags)
{
	if (!commp)
		return -EINVAL;
	*commp = NULL;
	if (!id || nranks < 1 || rank < 0 || rank >= nranks ||
	    (nhosts && (!hosts || !rank_hosts)))
		return -EINVAL;
	return coll_comm_init_tables(commp, nranks, rank, id, nhosts, hosts,
				     rank_hosts, timeout_ms, flags);
}

int coll_comm_init_root(coll_comm_t **commp, int nranks, int rank,
			const coll_id_t *id, const char *root,
			unsigned int timeout_ms, unsigned int flags)
{
	struct rdv_tables t = { 0 };
	struct rdv_hello self = { 0 };
	struct coll_info info;
	char host[256], port[32];
	uint64_t deadline;
	int ret;

	if (!commp)
		return -EINVAL;
	*commp = NULL;
	if (!id || nranks < 1 || rank < 0 || rank >= nranks)
		return -EINVAL;
	ret = split_root(root, host, sizeof(host), port, sizeof(port));
	if (ret)
		return ret;
	if (nranks == 1)
		return coll_comm_init(commp, nranks, rank, id, timeout_ms);
	ret = coll_get_info(&info);
	if (ret)
		return ret;
	ret = host_key(self.hostkey);
	if (ret)
		return ret;
	memcpy(self.magic, RDV_MAGIC, 8);
	self.rank = le32((uint32_t)rank);
	self.nranks = le32((uint32_t)nranks);
	self.flags = le32(flags);
	self.port = htole16((uint16_t)info.out_port);
	if (getrandom(self.nonce, sizeof(self.nonce), 0) != sizeof(self.nonce))
		return -EIO;
	deadline = now_ms() + (timeout_ms ? timeout_ms : 30000);
	if (rank == 0)
		ret = root_serve(id, nranks, port, &self, deadline, &t);
	else
		ret = client_join(id, nranks, host, port, &self, deadline, &t);
	if (!ret) {
		uint64_t left = now_ms() < deadline ? deadline - now_ms() : 1;

		/* Everyone on one host: no tables needed. */
		if (t.nhosts == 1)
			ret = coll_comm_init(commp, nranks, rank, id,
					     (unsigned int)left);
		else
			ret = coll_comm_init_tables(commp, nranks, rank, id,
						    t.nhosts, t.hosts,
						    t.rank_hosts,
						    (unsigned int)left, flags);
	}
	free(t.hosts);
	free(t.rank_hosts);
	return ret;
}
