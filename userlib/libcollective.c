// SPDX-License-Identifier: MIT
/*
 * libcollective: communicators and collectives over /dev/collective.
 *
 * Each coll_comm_t owns one descriptor, so communicators are independent and
 * closing one (or the process dying) makes the module drop exactly that
 * membership.  Every function returns 0 or -errno and leaves errno alone
 * (it is saved and restored around the system calls made here).
 *
 * EINTR: the ABI says a failed ioctl changes nothing, and EINTR means a
 * fatal signal hit a sleeping caller.  COLL_COMM_INIT, COLL_COMM_DESTROY,
 * COLL_WAIT, COLL_TEST and COLL_INFO are retried on EINTR (a retried WAIT
 * only waits for what is left of its timeout).  COLL_SUBMIT is not: a
 * blocking collective interrupted half-way has already been matched with
 * the other ranks' calls, and submitting it again would desynchronise them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/io_uring.h>

#include "libcollective.h"
#include "libcollective_int.h"

#define COLL_DEFAULT_PATH "/dev/" COLL_DEVICE_NAME

static const char *device_path(void)
{
	const char *p = getenv("COLL_DEVICE");

	return p && *p ? p : COLL_DEFAULT_PATH;
}

/* ioctl returning 0 or -errno; errno preserved. */
static int do_ioctl(int fd, unsigned long cmd, void *arg, int retry_eintr)
{
	int saved = errno, ret;

	do {
		ret = ioctl(fd, cmd, arg);
		if (ret < 0)
			ret = -errno;
	} while (ret == -EINTR && retry_eintr);
	errno = saved;
	return ret < 0 ? ret : 0;
}

static int open_device(void)
{
	int saved = errno, fd;

	fd = open(device_path(), O_RDWR | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	errno = saved;
	return fd;
}

static void close_keep_errno(int fd)
{
	int saved = errno;

	close(fd);
	errno = saved;
}

/*
 * Communicators of one host ask for mapped slots (COLL_COMM_F_MAP) unless
 * COLL_MAP=0: every rank must agree (the module says EPROTO otherwise).
 */
static int map_wanted(void)
{
	const char *s = getenv("COLL_MAP");

	return !s || strcmp(s, "0");
}

int coll_comm_init(coll_comm_t **commp, int nranks, int rank,
		   const coll_id_t *id, unsigned int timeout_ms)
{
	if (!commp)
		return -EINVAL;
	*commp = NULL;
	if (!id || nranks < 1 || rank < 0 || rank >= nranks)
		return -EINVAL;
	return coll_comm_init_tables(commp, nranks, rank, id, 0, NULL, NULL,
				     timeout_ms, 0);
}

int coll_comm_init_tables(coll_comm_t **commp, int nranks, int rank,
			  const coll_id_t *id, unsigned int nhosts,
			  const struct coll_host *hosts,
			  const uint32_t *rank_hosts, unsigned int timeout_ms,
			  unsigned int flags)
{
	struct coll_comm_init ci;
	coll_comm_t *c;
	int fd, ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	fd = open_device();
	if (fd < 0) {
		ret = fd;
		goto err_free;
	}

	memset(&ci, 0, sizeof(ci));
	ci.size = sizeof(ci);
	ci.nranks = (uint32_t)nranks;
	ci.rank = (uint32_t)rank;
	memcpy(ci.id, id->bytes, sizeof(ci.id));
	ci.timeout_ms = timeout_ms;
	ci.flags = nhosts ? flags : map_wanted() ? COLL_COMM_F_MAP : 0;
	ci.nhosts = nhosts;
	ci.hosts_uptr = (uintptr_t)hosts;
	ci.rank_hosts_uptr = (uintptr_t)rank_hosts;
	ret = do_ioctl(fd, COLL_COMM_INIT, &ci, 1);
	if (ret)
		goto err_close;

	c->fd = fd;
	c->handle = ci.out_comm;
	c->rank = rank;
	c->nranks = nranks;
	c->algo = COLL_ALGO_AUTO;
	if (ci.flags & COLL_COMM_F_MAP) {
		/* the peers will use the slots: without them, leave */
		ret = coll_map_setup(c);
		if (ret) {
			coll_comm_destroy(c);
			return ret;
		}
	}
	*commp = c;
	return 0;

err_close:
	close_keep_errno(fd);
err_free:
	free(c);
	return ret;
}

/* Strict decimal integer in [min, max]. */
static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;
	int saved = errno;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max) {
		errno = saved;
		return -EINVAL;
	}
	errno = saved;
	*out = v;
	return 0;
}

/* COLL_TRANSPORT: "auto" (or unset), "tcp", "rdma" -> COLL_COMM_F_*. */
static int transport_flags(unsigned int *flags)
{
	const char *s = getenv("COLL_TRANSPORT");

	*flags = 0;
	if (!s || !*s || !strcmp(s, "auto"))
		return 0;
	if (!strcmp(s, "tcp"))
		*flags = COLL_COMM_F_TCP;
	else if (!strcmp(s, "rdma"))
		*flags = COLL_COMM_F_REQUIRE_RDMA;
	else
		return -EINVAL;
	return 0;
}

/*
 * RANK, WORLD_SIZE and COLL_ID (32 hex digits) are required; a missing or
 * malformed one is -EINVAL.  COLL_TIMEOUT_MS (decimal, optional) is the
 * join timeout, 0 or unset meaning the module's default.  Ranks on several
 * hosts meet at COLL_ROOT (host:port), or, torch-style, at MASTER_ADDR and
 * MASTER_PORT + 1 (MASTER_PORT itself is usually taken by the framework's
 * own store); COLL_TRANSPORT picks the transport between hosts.
 */
int coll_comm_init_env(coll_comm_t **commp)
{
	long rank, size, timeout = 0, mport;
	const char *s, *maddr;
	char root[300];
	unsigned int flags;
	coll_id_t id;
	int ret;

	if (!commp)
		return -EINVAL;
	*commp = NULL;
	ret = parse_long(getenv("WORLD_SIZE"), 1, COLL_MAX_RANKS, &size);
	if (ret)
		return ret;
	ret = parse_long(getenv("RANK"), 0, size - 1, &rank);
	if (ret)
		return ret;
	ret = coll_id_from_str(&id, getenv("COLL_ID"));
	if (ret)
		return ret;
	s = getenv("COLL_TIMEOUT_MS");
	if (s && *s) {
		ret = parse_long(s, 0, UINT_MAX > LONG_MAX ? LONG_MAX : (long)UINT_MAX,
				 &timeout);
		if (ret)
			return ret;
	}
	ret = transport_flags(&flags);
	if (ret)
		return ret;
	s = getenv("COLL_ROOT");
	maddr = getenv("MASTER_ADDR");
	if (s && *s)
		return coll_comm_init_root(commp, (int)size, (int)rank, &id, s,
					   (unsigned int)timeout, flags);
	if (maddr && *maddr) {
		ret = parse_long(getenv("MASTER_PORT"), 1, 65534, &mport);
		if (ret)
			return ret;
		snprintf(root, sizeof(root), strchr(maddr, ':') ? "[%s]:%ld" :
			 "%s:%ld", maddr, mport + 1);
		return coll_comm_init_root(commp, (int)size, (int)rank, &id,
					   root, (unsigned int)timeout, flags);
	}
	return coll_comm_init(commp, (int)size, (int)rank, &id,
			      (unsigned int)timeout);
}

int coll_comm_query(coll_comm_t *c, struct coll_comm_query *q,
		    struct coll_peer_info *peers, unsigned int npeers)
{
	struct coll_comm_query tmp;
	int ret;

	if (!c || !q || (npeers && !peers))
		return -EINVAL;
	memset(&tmp, 0, sizeof(tmp));
	tmp.size = sizeof(tmp);
	tmp.comm = c->handle;
	tmp.npeers = npeers;
	tmp.peers_uptr = (uintptr_t)peers;
	tmp.peer_size = sizeof(*peers);
	ret = do_ioctl(c->fd, COLL_COMM_QUERY, &tmp, 1);
	if (!ret)
		*q = tmp;
	return ret;
}

/*
 * Leave the communicator and free it.  The descriptor is closed whatever the
 * ioctl says (closing alone also leaves), and the ioctl's error is returned.
 * NULL is a no-op returning 0, so error paths can call it unconditionally.
 */
int coll_comm_destroy(coll_comm_t *c)
{
	struct coll_comm_destroy cd;
	int ret;

	if (!c)
		return 0;
	memset(&cd, 0, sizeof(cd));
	cd.size = sizeof(cd);
	cd.comm = c->handle;
	ret = do_ioctl(c->fd, COLL_COMM_DESTROY, &cd, 1);
	coll_map_teardown(c);
	close_keep_errno(c->fd);
	free(c->group);
	free(c);
	return ret;
}

int coll_comm_rank(const coll_comm_t *c)
{
	return c ? c->rank : -EINVAL;
}

int coll_comm_size(const coll_comm_t *c)
{
	return c ? c->nranks : -EINVAL;
}

int coll_comm_fd(const coll_comm_t *c)
{
	return c ? c->fd : -EINVAL;
}

int coll_comm_algo(const coll_comm_t *c)
{
	return c ? c->algo : -EINVAL;
}

/*
 * Any non-negative value is kept: the module, not the library, knows which
 * algorithms it supports (EOPNOTSUPP at the next submit otherwise).
 */
int coll_comm_set_algo(coll_comm_t *c, int algo)
{
	if (!c || algo < 0)
		return -EINVAL;
	c->algo = algo;
	return 0;
}

/* In a group: keep the op for coll_group_end(). */
static int group_record(coll_comm_t *c, const struct coll_op *op)
{
	if (op->flags)
		return -EINVAL;
	if (c->ngroup == COLL_GROUP_MAX_OPS)
		return -ENOSPC;
	if (c->ngroup == c->group_cap) {
		unsigned int cap = c->group_cap ? 2 * c->group_cap : 16;
		struct coll_op *g = realloc(c->group, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		c->group = g;
		c->group_cap = cap;
	}
	c->group[c->ngroup++] = *op;
	return 0;
}

int coll_group_start(coll_comm_t *c)
{
	if (!c)
		return -EINVAL;
	c->group_depth++;
	return 0;
}

int coll_group_end(coll_comm_t *c, unsigned int flags)
{
	struct coll_group g;
	int ret;

	if (!c || !c->group_depth)
		return -EINVAL;
	if (--c->group_depth)
		return 0;
	memset(&g, 0, sizeof(g));
	g.size = sizeof(g);
	g.flags = flags;
	g.comm = c->handle;
	g.nops = c->ngroup;
	g.ops_uptr = (uintptr_t)c->group;
	g.op_size = sizeof(struct coll_op);
	c->ngroup = 0;
	if (!g.nops)
		return 0;
	if (c->map) {
		ret = coll_map_agree_group(c, c->group, g.nops, flags);
		if (ret)
			return ret;
	}
	ret = do_ioctl(c->fd, COLL_GROUP, &g, 0);
	return ret;
}

/*
 * The generic submit passes prim, dtype, redop and root to the module as
 * given; the typed wrappers below pass 0 for the fields a primitive does not
 * use, as the ABI requires.  With COLL_OP_F_NONBLOCK, req receives the
 * request; without it, req may be NULL and is not touched.
 */
static void op_fill(struct coll_op *op, const coll_comm_t *c, int prim,
		    const void *sendbuf, void *recvbuf, size_t count,
		    int dtype, int redop, int root, unsigned int flags)
{
	memset(op, 0, sizeof(*op));
	op->size = sizeof(*op);
	op->flags = flags;
	op->comm = c->handle;
	op->prim = (uint32_t)prim;
	op->dtype = (uint32_t)dtype;
	op->redop = (uint32_t)redop;
	op->root = (uint32_t)root;
	op->algo = (uint32_t)c->algo;
	op->sendbuf = (uintptr_t)sendbuf;
	op->recvbuf = (uintptr_t)recvbuf;
	op->count = count;
}

int coll_submit(coll_comm_t *c, int prim, const void *sendbuf, void *recvbuf,
		size_t count, int dtype, int redop, int root,
		unsigned int flags, coll_req_t *req)
{
	struct coll_op op;
	int ret;

	if (!c || prim < 0 || dtype < 0 || redop < 0 || root < 0)
		return -EINVAL;
	if ((flags & COLL_OP_F_NONBLOCK) && !req)
		return -EINVAL;

	op_fill(&op, c, prim, sendbuf, recvbuf, count, dtype, redop, root,
		flags);
	if (c->group_depth)
		return group_record(c, &op);
	if (c->map && !(flags & COLL_OP_F_NONBLOCK)) {
		ret = coll_map_submit(c, &op);
		if (ret != COLL_MAP_KERNEL)
			return ret;
	}
	ret = do_ioctl(c->fd, COLL_SUBMIT, &op, 0);
	if (ret)
		return ret;
	if (flags & COLL_OP_F_NONBLOCK) {
		req->comm = c;
		req->handle = op.out_req;
	}
	return 0;
}

/* The command area of a 128-byte SQE, from cmd to the entry's end. */
#define URING_CMD_BYTES (2 * sizeof(struct io_uring_sqe) - \
			 offsetof(struct io_uring_sqe, cmd))

int coll_uring_prep(coll_comm_t *c, struct io_uring_sqe *sqe, int prim,
		    const void *sendbuf, void *recvbuf, size_t count,
		    int dtype, int redop, int root)
{
	struct coll_op op;

	_Static_assert(sizeof(op) <= URING_CMD_BYTES, "struct coll_op fits");
	if (!c || !sqe || prim < 0 || dtype < 0 || redop < 0 || root < 0)
		return -EINVAL;
	if (c->group_depth)
		return -EINVAL;
	op_fill(&op, c, prim, sendbuf, recvbuf, count, dtype, redop, root,
		COLL_OP_F_NONBLOCK);
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = c->fd;
	sqe->cmd_op = COLL_SUBMIT;
	memcpy(sqe->cmd, &op, sizeof(op));
	return 0;
}

int coll_allreduce(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t count, int dtype, int redop)
{
	return coll_submit(c, COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype,
			   redop, 0, 0, NULL);
}

int coll_reduce(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		size_t count, int dtype, int redop, int root)
{
	return coll_submit(c, COLL_REDUCE, sendbuf, recvbuf, count, dtype,
			   redop, root, 0, NULL);
}

int coll_reducescatter(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		       size_t recvcount, int dtype, int redop)
{
	return coll_submit(c, COLL_REDUCESCATTER, sendbuf, recvbuf, recvcount,
			   dtype, redop, 0, 0, NULL);
}

int coll_allgather(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t sendcount, int dtype)
{
	return coll_submit(c, COLL_ALLGATHER, sendbuf, recvbuf, sendcount,
			   dtype, 0, 0, 0, NULL);
}

int coll_broadcast(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t count, int dtype, int root)
{
	return coll_submit(c, COLL_BROADCAST, sendbuf, recvbuf, count, dtype,
			   0, root, 0, NULL);
}

int coll_scatter(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		 size_t recvcount, int dtype, int root)
{
	return coll_submit(c, COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype,
			   0, root, 0, NULL);
}

int coll_gather(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		size_t sendcount, int dtype, int root)
{
	return coll_submit(c, COLL_GATHER, sendbuf, recvbuf, sendcount, dtype,
			   0, root, 0, NULL);
}

int coll_alltoall(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		  size_t count, int dtype)
{
	return coll_submit(c, COLL_ALLTOALL, sendbuf, recvbuf, count, dtype,
			   0, 0, 0, NULL);
}

/* A barrier passes no buffers and count 0; dtype 0 is COLL_INT8. */
int coll_barrier(coll_comm_t *c)
{
	return coll_submit(c, COLL_BARRIER, NULL, NULL, 0, 0, 0, 0, 0, NULL);
}

int coll_iallreduce(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t count, int dtype, int redop, coll_req_t *req)
{
	return coll_submit(c, COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype,
			   redop, 0, COLL_OP_F_NONBLOCK, req);
}

int coll_ireduce(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		 size_t count, int dtype, int redop, int root, coll_req_t *req)
{
	return coll_submit(c, COLL_REDUCE, sendbuf, recvbuf, count, dtype,
			   redop, root, COLL_OP_F_NONBLOCK, req);
}

int coll_ireducescatter(coll_comm_t *c, const void *sendbuf, void *recvbuf,
			size_t recvcount, int dtype, int redop,
			coll_req_t *req)
{
	return coll_submit(c, COLL_REDUCESCATTER, sendbuf, recvbuf, recvcount,
			   dtype, redop, 0, COLL_OP_F_NONBLOCK, req);
}

int coll_iallgather(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t sendcount, int dtype, coll_req_t *req)
{
	return coll_submit(c, COLL_ALLGATHER, sendbuf, recvbuf, sendcount,
			   dtype, 0, 0, COLL_OP_F_NONBLOCK, req);
}

int coll_ibroadcast(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t count, int dtype, int root, coll_req_t *req)
{
	return coll_submit(c, COLL_BROADCAST, sendbuf, recvbuf, count, dtype,
			   0, root, COLL_OP_F_NONBLOCK, req);
}

int coll_iscatter(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		  size_t recvcount, int dtype, int root, coll_req_t *req)
{
	return coll_submit(c, COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype,
			   0, root, COLL_OP_F_NONBLOCK, req);
}

int coll_igather(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		 size_t sendcount, int dtype, int root, coll_req_t *req)
{
	return coll_submit(c, COLL_GATHER, sendbuf, recvbuf, sendcount, dtype,
			   0, root, COLL_OP_F_NONBLOCK, req);
}

int coll_ialltoall(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t count, int dtype, coll_req_t *req)
{
	return coll_submit(c, COLL_ALLTOALL, sendbuf, recvbuf, count, dtype,
			   0, 0, COLL_OP_F_NONBLOCK, req);
}

int coll_ibarrier(coll_comm_t *c, coll_req_t *req)
{
	return coll_submit(c, COLL_BARRIER, NULL, NULL, 0, 0, 0, 0,
			   COLL_OP_F_NONBLOCK, req);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether the kernel released the handle along with this result. */
static int req_ended(int ret, int cmd_is_test)
{
	if (ret == -EINTR)
		return 0;
	return cmd_is_test ? ret != -EAGAIN : ret != -ETIMEDOUT;
}

/*
 * Returns the request's result.  Once the module has released the handle
 * (every result but -ETIMEDOUT), req->comm is cleared so that a second wait
 * on the same coll_req_t fails with -EINVAL instead of reaching a handle the
 * module may have reused.
 */
int coll_wait(coll_req_t *req, unsigned int timeout_ms)
{
	struct coll_wait w;
	uint64_t deadline = 0;
	int ret;

	if (!req || !req->comm)
		return -EINVAL;
	if (timeout_ms)
		deadline = now_ms() + timeout_ms;
	for (;;) {
		memset(&w, 0, sizeof(w));
		w.size = sizeof(w);
		w.req = req->handle;
		w.timeout_ms = timeout_ms;
		ret = do_ioctl(req->comm->fd, COLL_WAIT, &w, 0);
		if (ret != -EINTR)
			break;
		if (timeout_ms) {
			uint64_t t = now_ms();

			if (t >= deadline)
				return -ETIMEDOUT;
			timeout_ms = (unsigned int)(deadline - t);
		}
	}
	if (req_ended(ret, 0))
		req->comm = NULL;
	return ret;
}

int coll_test(coll_req_t *req)
{
	struct coll_wait w;
	int ret;

	if (!req || !req->comm)
		return -EINVAL;
	memset(&w, 0, sizeof(w));
	w.size = sizeof(w);
	w.req = req->handle;
	ret = do_ioctl(req->comm->fd, COLL_TEST, &w, 1);
	if (req_ended(ret, 1))
		req->comm = NULL;
	return ret;
}

int coll_get_info(struct coll_info *info)
{
	struct coll_info tmp;
	int fd, ret;

	if (!info)
		return -EINVAL;
	fd = open_device();
	if (fd < 0)
		return fd;
	memset(&tmp, 0, sizeof(tmp));
	tmp.size = sizeof(tmp);
	ret = do_ioctl(fd, COLL_INFO, &tmp, 1);
	close_keep_errno(fd);
	if (!ret)
		*info = tmp;
	return ret;
}
