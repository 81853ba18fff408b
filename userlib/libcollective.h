/* SPDX-License-Identifier: MIT */
/*
 * libcollective: a small C library over /dev/collective.
 *
 * Every function returns 0 or a negative errno (see <linux/collective.h> for
 * what each errno means); none sets errno.
 */
#ifndef LIBCOLLECTIVE_H
#define LIBCOLLECTIVE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/collective.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct coll_comm coll_comm_t;	/* opaque */

typedef struct {
	uint8_t bytes[COLL_ID_BYTES];
} coll_id_t;

typedef struct {
	coll_comm_t *comm;
	uint32_t handle;
} coll_req_t;

/* Fresh random id (getrandom). */
int coll_get_unique_id(coll_id_t *id);
/* 32 hex digits <-> id; buf must hold 33 bytes. */
int coll_id_to_str(const coll_id_t *id, char *buf, size_t len);
int coll_id_from_str(coll_id_t *id, const char *str);

/*
 * Join a communicator: opens /dev/collective (or $COLL_DEVICE), blocks until
 * all nranks joined or timeout_ms (0: module default) passed.
 */
int coll_comm_init(coll_comm_t **comm, int nranks, int rank,
		   const coll_id_t *id, unsigned int timeout_ms);
/*
 * Same, from the environment the launcher sets: RANK, WORLD_SIZE, COLL_ID;
 * with COLL_ROOT=host:port (or MASTER_ADDR and MASTER_PORT: the rendezvous
 * is at MASTER_PORT + 1) the ranks may be on several hosts, and
 * COLL_TRANSPORT (auto, tcp, rdma) picks how hosts are reached.
 */
int coll_comm_init_env(coll_comm_t **comm);

/*
 * Ranks on several hosts: rank 0 listens at @root ("host:port" or
 * "[v6]:port") until every other rank has reported there; every rank then
 * knows the hosts and joins.  Both ends prove they know @id (HMAC-SHA256
 * over fresh nonces); the id never crosses the network.  @flags:
 * COLL_COMM_F_TCP, COLL_COMM_F_REQUIRE_RDMA or 0.
 */
int coll_comm_init_root(coll_comm_t **comm, int nranks, int rank,
			const coll_id_t *id, const char *root,
			unsigned int timeout_ms, unsigned int flags);
/*
 * The same with the tables already known (a framework's own rendezvous):
 * @nhosts hosts (struct coll_host, port in host byte order) and the host of
 * each rank; every rank must pass the same tables.
 */
int coll_comm_init_hosts(coll_comm_t **comm, int nranks, int rank,
			 const coll_id_t *id, unsigned int nhosts,
			 const struct coll_host *hosts,
			 const uint32_t *rank_hosts, unsigned int timeout_ms,
			 unsigned int flags);
/*
 * Topology (COLL_COMM_QUERY): counts in @q, and for hosts 0..npeers-1 what
 * reaches them (transport, fallback, device, MTU, bytes moved).
 */
int coll_comm_query(coll_comm_t *comm, struct coll_comm_query *q,
		    struct coll_peer_info *peers, unsigned int npeers);
/*
 * Leave and free.  Pending requests of other ranks fail with ECONNRESET.
 * Requests of this communicator must not be used afterwards (wait for them
 * first).  NULL is a no-op returning 0.
 */
int coll_comm_destroy(coll_comm_t *comm);
int coll_comm_rank(const coll_comm_t *comm);
int coll_comm_size(const coll_comm_t *comm);
/* The descriptor, for poll(): EPOLLIN while a request is complete. */
int coll_comm_fd(const coll_comm_t *comm);
/* Algorithm for later calls on this communicator (enum coll_algo). */
int coll_comm_set_algo(coll_comm_t *comm, int algo);

/* Size in bytes of one element, or 0 for an unknown type. */
size_t coll_dtype_size(int dtype);
/* Names of enum values ("float", "sum", ...), or "unknown" out of range. */
const char *coll_dtype_name(int dtype);
const char *coll_redop_name(int redop);
const char *coll_prim_name(int prim);
const char *coll_algo_name(int algo);
/* Message for a value these functions returned (negative or positive). */
const char *coll_strerror(int err);

/*
 * Names -> values (additions to the first draft of this header).  Each takes
 * the names the *_name() functions print, case-insensitively, plus a few
 * common aliases (float32/fp32, float16/fp16, bf16, all_reduce, bcast, ...),
 * and returns the enum value, or -EINVAL for an unknown name.
 */
int coll_dtype_from_name(const char *name);
int coll_redop_from_name(const char *name);
int coll_prim_from_name(const char *name);
int coll_algo_from_name(const char *name);
/* Algorithm set by coll_comm_set_algo() (COLL_ALGO_AUTO at init). */
int coll_comm_algo(const coll_comm_t *comm);

/* Blocking primitives; counts as in struct coll_op. */
int coll_allreduce(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t count, int dtype, int redop);
int coll_reduce(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		size_t count, int dtype, int redop, int root);
int coll_reducescatter(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		       size_t recvcount, int dtype, int redop);
int coll_allgather(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t sendcount, int dtype);
int coll_broadcast(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t count, int dtype, int root);
int coll_scatter(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		 size_t recvcount, int dtype, int root);
int coll_gather(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		size_t sendcount, int dtype, int root);
int coll_alltoall(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		  size_t count, int dtype);
int coll_barrier(coll_comm_t *c);

/* Non-blocking primitives: *req is valid until coll_wait/coll_test ends it. */
int coll_iallreduce(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t count, int dtype, int redop, coll_req_t *req);
int coll_ireduce(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		 size_t count, int dtype, int redop, int root, coll_req_t *req);
int coll_ireducescatter(coll_comm_t *c, const void *sendbuf, void *recvbuf,
			size_t recvcount, int dtype, int redop,
			coll_req_t *req);
int coll_iallgather(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t sendcount, int dtype, coll_req_t *req);
int coll_ibroadcast(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t count, int dtype, int root, coll_req_t *req);
int coll_iscatter(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		  size_t recvcount, int dtype, int root, coll_req_t *req);
int coll_igather(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		 size_t sendcount, int dtype, int root, coll_req_t *req);
int coll_ialltoall(coll_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t count, int dtype, coll_req_t *req);
int coll_ibarrier(coll_comm_t *c, coll_req_t *req);

/* Generic form of all of the above (flags: COLL_OP_F_NONBLOCK). */
int coll_submit(coll_comm_t *c, int prim, const void *sendbuf, void *recvbuf,
		size_t count, int dtype, int redop, int root,
		unsigned int flags, coll_req_t *req);

/*
 * Groups (COLL_GROUP, as NCCL's ncclGroupStart/End): after
 * coll_group_start(), the blocking primitives on the communicator are
 * recorded, not run: each returns 0 at once, and its buffers must stay valid
 * until the group ends.  coll_group_end() runs them as one group (small
 * AllReduces fused unless flags has COLL_GROUP_F_NOFUSE) and returns 0 or
 * the first error; nested start/end pairs run at the outermost end.  Inside
 * a group, a non-blocking primitive is -EINVAL and an op beyond
 * COLL_GROUP_MAX_OPS is -ENOSPC, neither of them recorded.
 */
int coll_group_start(coll_comm_t *c);
int coll_group_end(coll_comm_t *c, unsigned int flags);

/*
 * io_uring (IORING_OP_URING_CMD; coll_uring_prep(3)): fill *sqe, a 128-byte
 * entry of a ring set up with IORING_SETUP_SQE128 (liburing:
 * io_uring_queue_init(n, &ring, IORING_SETUP_SQE128)), to submit the
 * collective coll_submit() would submit with COLL_OP_F_NONBLOCK; it
 * matches the other ranks' non-blocking submissions.  Set user_data after.
 * The CQE's res is the collective's result: 0 or -errno.  The buffers
 * must stay valid until then.  -EINVAL inside a group.
 */
struct io_uring_sqe;
int coll_uring_prep(coll_comm_t *c, struct io_uring_sqe *sqe, int prim,
		    const void *sendbuf, void *recvbuf, size_t count,
		    int dtype, int redop, int root);

/* 0 or the request's error; timeout_ms 0 waits forever (-ETIMEDOUT). */
int coll_wait(coll_req_t *req, unsigned int timeout_ms);
/* -EAGAIN while pending; otherwise as coll_wait. */
int coll_test(coll_req_t *req);

/* Module-wide counters (struct coll_info), from a fresh descriptor. */
int coll_get_info(struct coll_info *info);

#ifdef __cplusplus
}
#endif
#endif /* LIBCOLLECTIVE_H */
