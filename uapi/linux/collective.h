/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * collective: collective communication provided by the kernel.
 *
 * Copyright (C) 2026 The collective authors
 */
#ifndef _UAPI_LINUX_COLLECTIVE_H
#define _UAPI_LINUX_COLLECTIVE_H

#include <linux/types.h>
#include <linux/ioctl.h>
#include <linux/const.h>

#define COLL_DEVICE_NAME "collective"
/*
 * The ioctl type code: 0xC5 is unused in the kernel's table
 * (Documentation/userspace-api/ioctl/ioctl-number.rst, 6.1 through 6.12).
 * ';' belongs to vfio (0x64-0x7F) and iommufd (0x80-0x8F).
 */
#define COLL_TYPE 0xC5
#define COLL_ABI_VERSION 6

/* Collectives in flight at once on a host, per communicator spanning hosts */
#define COLL_XHOST_AHEAD 64

/**
 * DOC: General ioctl format
 *
 * Every ioctl takes a pointer to a struct that starts with ``__u32 size``
 * (the size of the struct as the caller knows it) and ``__u32 flags``.  The
 * kernel accepts any size from the size of the first version of the struct
 * upwards: a shorter caller struct is zero-extended, a longer one must have a
 * zero tail.  Pointers and lengths are ``__aligned_u64``; fields the kernel
 * writes are named ``out_*``.  Reserved fields must be zero.  A failed ioctl
 * changes nothing that the caller can observe: no communicator is joined, no
 * request is created, no collective is submitted and no user memory is
 * written.  Outputs are written before anything is published, so an
 * argument that cannot be written back (EFAULT) fails the call with nothing
 * done; should a later step still fail (a peer died meanwhile), the output
 * field is restored to the value the caller passed.
 *
 * Errors, as returned in errno:
 *
 * - ENOTTY: unknown ioctl command.
 * - EINVAL: ``size`` shorter than the first version of the struct, a
 *   non-zero reserved field, or a field out of range (rank >= nranks,
 *   nranks == 0 or above %COLL_MAX_RANKS, root >= nranks, a count, type or
 *   buffer given to a barrier, send and receive buffers that overlap other than in the
 *   documented in-place layouts, in-place AlltoAll of a different layout).
 * - E2BIG: ``size`` larger than the kernel's struct with a non-zero tail.
 * - EOPNOTSUPP: a flag, primitive, data type, reduction op or algorithm this
 *   kernel does not know.
 * - ENOENT: unknown communicator or request handle.
 * - EFAULT: a pointer that cannot be read or written, or a buffer that
 *   cannot be pinned.
 * - EOVERFLOW: count * element size * nranks, or an address range, does not
 *   fit in 64 bits (or exceeds %COLL_MAX_BYTES).
 * - ENOMEM: out of memory, or pinning the buffers would exceed
 *   RLIMIT_MEMLOCK (for callers without CAP_IPC_LOCK).  Pinned memory is
 *   charged before anything is allocated for it.
 * - ENOSPC: the descriptor already holds the module's limit of
 *   non-blocking requests not yet collected (module parameter
 *   max_requests, %out_max_requests of COLL_INFO): collect some first.
 *   Or, in a communicator that spans hosts, %COLL_XHOST_AHEAD collectives
 *   are in flight on this host already (peers keep the first frames of
 *   that many, not more): wait for the oldest first.
 * - EMFILE: the calling process is already a member of the module's limit
 *   of communicators (module parameter max_comms, %out_max_comms).
 * - EBUSY: the rank is already taken in that communicator (joining a full
 *   communicator).
 * - EPROTO: the ranks of a communicator disagree: a different nranks for the
 *   same id, different host tables (local ranks or peer hosts), or a
 *   collective whose primitive, count, type, op, root or algorithm differs
 *   between ranks, or that some ranks submit blocking and others not (see
 *   struct coll_op).  A collective that disagrees fails on every rank
 *   without touching any buffer, once every rank has called it (across
 *   hosts: once every host has); the communicator stays usable.  On the
 *   eager path (struct coll_op), the ranks still waiting fail as soon as a
 *   rank that disagrees calls, and a rank that had already returned (a
 *   root of a Broadcast or Scatter, a sender of a Reduce or Gather) keeps
 *   its 0.
 * - ETIMEDOUT: not every rank (or peer host) joined within the join timeout
 *   (for example a wrong id), or a wait timed out (the request stays
 *   pending).
 * - EHOSTUNREACH: COLL_COMM_F_REQUIRE_RDMA and a peer host is not reached
 *   over RDMA.
 * - EADDRNOTAVAIL: a communicator that spans hosts, but the module cannot
 *   listen in the caller's network namespace (the port is taken).
 * - EAGAIN: COLL_TEST on a request that is not complete yet.
 * - ECONNRESET: a peer rank left the communicator (closed its descriptor,
 *   destroyed the communicator or was killed), or a thread of any member
 *   got a fatal signal in the middle of a collective, or a peer host's
 *   connection failed (an RDMA device on either side went away), stopped
 *   answering (module parameter peer_timeout_ms: the host died, or the
 *   network between the two did) or sent a message that does not
 *   validate.  The communicator is then dead for every member and every
 *   holder of a member's descriptor (after fork or SCM_RIGHTS): every
 *   pending and later collective on it fails with ECONNRESET.
 * - EINTR: the caller got a fatal signal while waiting.
 * - EXDEV: a blocking collective that a communicator's mapped slots take
 *   (see "Mapped slots" below) submitted through the ioctl.
 *
 * Communicators are found by id within the network namespace of the
 * process that joins: the same id in two namespaces names two different
 * communicators.
 */

/* Limits */
#define COLL_MAX_RANKS		1024
#define COLL_MAX_HOSTS		COLL_MAX_RANKS
#define COLL_MAX_BYTES		_BITULL(40)
#define COLL_ID_BYTES		16

enum {
	COLL_CMD_BASE = 0x00,
	COLL_CMD_INFO = COLL_CMD_BASE,
	COLL_CMD_COMM_INIT,
	COLL_CMD_COMM_DESTROY,
	COLL_CMD_SUBMIT,
	COLL_CMD_WAIT,
	COLL_CMD_TEST,
	COLL_CMD_COMM_QUERY,
	COLL_CMD_GROUP,
	COLL_CMD_COMM_MAP,
	COLL_CMD_MAP_WAIT,
	COLL_CMD_MAP_WAKE,
};

/**
 * struct coll_info - COLL_INFO: module-wide facts and counters
 * @size: sizeof(struct coll_info)
 * @flags: must be 0
 * @out_abi_version: %COLL_ABI_VERSION
 * @out_max_ranks: %COLL_MAX_RANKS
 * @out_pinned_pages: pages pinned by the module right now, all processes
 * @out_comms: live communicators (joined or joining), all processes
 * @out_ops: collectives in flight, all processes
 * @out_ops_total: collectives completed since load
 * @out_bytes_total: user bytes moved by completed collectives since load
 * @out_reqs: non-blocking requests not yet collected, all processes
 * @out_kernel_bytes: kernel memory the module holds for communicators,
 *                    collectives, requests, plans and page tables (not
 *                    counting the pinned pages themselves)
 * @out_plans: cached plans, all communicators
 * @out_max_requests: requests not collected one descriptor may hold
 * @out_max_comms: communicators one process may be a member of
 * @out_port: the port the module listens on for its peers on other hosts
 *            (module parameter port): in the initial network namespace
 *            from load, in another from its first communicator that spans
 *            hosts
 * @out_rdma_devs: RDMA devices the module can use
 * @out_mr_allocs: fast-registration memory regions allocated since load
 *                 (grants of zero-copy reads to peer hosts)
 * @out_mr_reuses: grants' regions taken instead from a device's pool of
 *                 invalidated ones (module parameter mr_pool)
 * @out_reg_hits: buffers of collectives found already pinned in their
 *                descriptor's registration cache since load (module
 *                parameter reg_cache; cached pages count in
 *                @out_pinned_pages until evicted, invalidated or closed)
 * @out_reg_misses: buffers looked up in a registration cache and pinned
 *                  since load
 * @out_reg_evictions: unused cached buffers unpinned to make room (the
 *                     cache's limit, or RLIMIT_MEMLOCK) since load
 *
 * Needs no communicator; any process that can open the device may ask.
 * Fields after @out_bytes_total came with ABI version 2, those after
 * @out_rdma_devs with version 3, those after @out_mr_reuses with version
 * 4; a caller passing an earlier version's size gets that version's
 * fields.
 */
struct coll_info {
	__u32 size;
	__u32 flags;
	__u32 out_abi_version;
	__u32 out_max_ranks;
	__aligned_u64 out_pinned_pages;
	__aligned_u64 out_comms;
	__aligned_u64 out_ops;
	__aligned_u64 out_ops_total;
	__aligned_u64 out_bytes_total;
	__aligned_u64 out_reqs;
	__aligned_u64 out_kernel_bytes;
	__aligned_u64 out_plans;
	__u32 out_max_requests;
	__u32 out_max_comms;
	__u32 out_port;
	__u32 out_rdma_devs;
	__aligned_u64 out_mr_allocs;
	__aligned_u64 out_mr_reuses;
	__aligned_u64 out_reg_hits;
	__aligned_u64 out_reg_misses;
	__aligned_u64 out_reg_evictions;
};

#define COLL_INFO _IO(COLL_TYPE, COLL_CMD_INFO)

/**
 * struct coll_host - a host of a communicator that spans several hosts
 * @addr: the address its module is reached at: IPv6, or IPv4-mapped IPv6
 *        (::ffff:a.b.c.d) for IPv4
 * @port: the port that module listens on (%out_port of COLL_INFO there),
 *        host byte order
 * @__reserved16: must be 0
 * @__reserved: must be 0
 */
struct coll_host {
	__u8 addr[16];
	__u16 port;
	__u16 __reserved16;
	__u32 __reserved;
};

/* struct coll_comm_init flags */
#define COLL_COMM_F_REQUIRE_RDMA _BITUL(0)	/* no TCP fallback */
#define COLL_COMM_F_TCP		_BITUL(1)	/* TCP even where RDMA reaches */
#define COLL_COMM_F_ALL		(COLL_COMM_F_REQUIRE_RDMA | COLL_COMM_F_TCP)
/* small blocking collectives through the mapped slots (one host) */
#define COLL_COMM_F_MAP		_BITUL(2)

/**
 * struct coll_comm_init - COLL_COMM_INIT: join a communicator
 * @size: sizeof(struct coll_comm_init)
 * @flags: %COLL_COMM_F_* (for communicators that span hosts; must be 0
 *         otherwise, but for %COLL_COMM_F_MAP).  %COLL_COMM_F_REQUIRE_RDMA:
 *         fail with EHOSTUNREACH rather than fall back to TCP for a peer
 *         host that RDMA does not reach.  %COLL_COMM_F_TCP: use the TCP
 *         transport for every peer host.  Both at once is EINVAL.
 *         %COLL_COMM_F_MAP (@nhosts 0 only, EINVAL otherwise): the
 *         communicator has mapped slots (COLL_COMM_MAP), unless module
 *         parameter map_bytes was 0 when its first rank joined.  Every
 *         rank of every host must pass the same flags (EPROTO otherwise).
 * @nranks: number of ranks, 1..%COLL_MAX_RANKS
 * @rank: this caller's rank, 0..@nranks-1
 * @id: 128-bit communicator id; it acts as a secret.  Processes of one host
 *      and one network namespace that join with the same id form one
 *      communicator.  It never crosses the network: modules of different
 *      hosts prove to each other that they know it (HMAC-SHA256 over fresh
 *      nonces) before anything else is accepted.
 * @timeout_ms: how long to wait for every rank (and every peer host) to
 *              join; 0 means the module's default (module parameter
 *              join_timeout_ms).  On ETIMEDOUT the caller is not a member
 *              of anything.
 * @nhosts: 0: every rank is a process of this host.  Otherwise the number
 *          of hosts, 1..%COLL_MAX_HOSTS, described by @hosts_uptr and
 *          @rank_hosts_uptr; every local rank must pass the same tables
 *          (EPROTO otherwise), and so must every peer host's.
 * @hosts_uptr: with @nhosts, @nhosts struct coll_host, distinct
 * @out_comm: handle of the communicator, valid on this descriptor only
 * @__reserved: must be 0
 * @rank_hosts_uptr: with @nhosts, @nranks __u32: the host of each rank (an
 *                   index into @hosts_uptr; every host has a rank).  The
 *                   caller's own host is the host of @rank.
 *
 * Blocks until all @nranks ranks have joined (or a fatal signal, or the
 * timeout): the ranks of this host in the module, and, across hosts, once
 * every peer host's module is connected and authenticated.  The membership
 * lives no longer than the descriptor that created it; one descriptor may
 * be a member of several communicators.  Handles are not reused soon after
 * they are released.
 */
struct coll_comm_init {
	__u32 size;
	__u32 flags;
	__u32 nranks;
	__u32 rank;
	__u8 id[COLL_ID_BYTES];
	__u32 timeout_ms;
	__u32 nhosts;
	__aligned_u64 hosts_uptr;
	__u32 out_comm;
	__u32 __reserved;
	__aligned_u64 rank_hosts_uptr;
};

#define COLL_COMM_INIT _IO(COLL_TYPE, COLL_CMD_COMM_INIT)

/**
 * struct coll_comm_destroy - COLL_COMM_DESTROY: leave a communicator
 * @size: sizeof(struct coll_comm_destroy)
 * @flags: must be 0
 * @comm: handle from COLL_COMM_INIT
 * @__reserved: must be 0
 *
 * Leaving makes every pending and later collective of the other ranks fail
 * with ECONNRESET.  This rank's own pending requests fail the same way; their
 * handles stay valid until waited on.
 */
struct coll_comm_destroy {
	__u32 size;
	__u32 flags;
	__u32 comm;
	__u32 __reserved;
};

#define COLL_COMM_DESTROY _IO(COLL_TYPE, COLL_CMD_COMM_DESTROY)

/* Primitives.  Counts follow NCCL: see struct coll_op. */
enum coll_prim {
	COLL_ALLREDUCE = 0,
	COLL_REDUCE,
	COLL_REDUCESCATTER,
	COLL_ALLGATHER,
	COLL_BROADCAST,
	COLL_SCATTER,
	COLL_GATHER,
	COLL_ALLTOALL,
	COLL_BARRIER,
	COLL_PRIM_MAX,
};

enum coll_dtype {
	COLL_INT8 = 0,
	COLL_UINT8,
	COLL_INT32,
	COLL_UINT32,
	COLL_INT64,
	COLL_UINT64,
	COLL_FP16,
	COLL_BF16,
	COLL_FP32,
	COLL_FP64,
	COLL_DTYPE_MAX,
};

/*
 * Reduction ops.  COLL_AVG is the sum computed in the element type (integers
 * wrap) divided by nranks at the end (integers truncate toward zero).
 * Floating-point results may differ from a sequential sum in rounding; the
 * selftests state the bound per type.
 */
enum coll_redop {
	COLL_SUM = 0,
	COLL_PROD,
	COLL_MIN,
	COLL_MAX,
	COLL_AVG,
	COLL_REDOP_MAX,
};

/*
 * Algorithms.  COLL_ALGO_AUTO lets the module choose by primitive, size
 * and topology (within one host by the measured table of module parameter
 * "algo_rules"; module parameter "algo" forces one).  Primitives with a
 * single sensible schedule (Scatter, Gather, AlltoAll, Barrier) accept
 * every value and run that schedule; TREE and HIER apply to AllReduce and
 * Broadcast (HIER also to AllGather) and run DIRECT elsewhere, HIER also
 * where the communicator's ranks are not laid out host by host with as
 * many on every host.
 */
enum coll_algo {
	COLL_ALGO_AUTO = 0,
	COLL_ALGO_RING,		/* reduce-scatter then all-gather, pipelined */
	COLL_ALGO_DIRECT,	/* each rank reduces its slice reading all */
	COLL_ALGO_NAIVE,	/* everything through the root (baseline) */
	COLL_ALGO_TREE,		/* binomial trees: log2(ranks) rounds each way */
	COLL_ALGO_HIER,		/* within each host, across hosts, within again */
	COLL_ALGO_MAX,
};

/* struct coll_op flags */
#define COLL_OP_F_NONBLOCK	_BITUL(0)	/* return a request handle */
#define COLL_OP_F_ALL		(COLL_OP_F_NONBLOCK)

/**
 * struct coll_op - COLL_SUBMIT: run one collective
 * @size: sizeof(struct coll_op)
 * @flags: %COLL_OP_F_*
 * @comm: communicator handle
 * @prim: enum coll_prim
 * @dtype: enum coll_dtype
 * @redop: enum coll_redop (reducing primitives; must be 0 otherwise)
 * @root: root rank (Reduce, Broadcast, Scatter, Gather; must be 0 otherwise)
 * @algo: enum coll_algo
 * @sendbuf: user address of the send buffer
 * @recvbuf: user address of the receive buffer
 * @count: element count, as NCCL defines it per primitive:
 *
 *   ==============  ===================  ===================
 *   primitive       send elements        receive elements
 *   ==============  ===================  ===================
 *   AllReduce       count                count
 *   Reduce          count                count (root only)
 *   ReduceScatter   count * nranks       count
 *   AllGather       count                count * nranks
 *   Broadcast       count (root only)    count
 *   Scatter         count * nranks(root) count
 *   Gather          count                count * nranks (root)
 *   AlltoAll        count * nranks       count * nranks
 *   Barrier         0                    0
 *   ==============  ===================  ===================
 *
 *   A buffer a rank does not use is ignored.  Barrier needs count,
 *   dtype and both buffers 0.  In-place operation uses the NCCL layouts:
 *   sendbuf == recvbuf (AllReduce, Reduce, Broadcast, AlltoAll);
 *   sendbuf == recvbuf + rank * count * esize (AllGather, Gather at root);
 *   recvbuf == sendbuf + rank * count * esize (ReduceScatter, Scatter at
 *   root).  Any other overlap is EINVAL.  Every rank must pass the same
 *   prim, dtype, redop, root, algo and count (EPROTO otherwise), and an
 *   AlltoAll is in place on every rank or on none (EPROTO otherwise).
 * @out_req: request handle, with %COLL_OP_F_NONBLOCK (a blocking call
 *           writes nothing back)
 * @__reserved: must be 0
 *
 * Without %COLL_OP_F_NONBLOCK the call returns when the collective is
 * complete on this rank.  With it, the call returns once the buffers are
 * pinned and the request is queued; COLL_WAIT or COLL_TEST collect the
 * result, and poll() on the descriptor reports EPOLLIN while a request of
 * this descriptor is complete and not yet collected.  Collectives of one
 * communicator are matched across ranks in the order each rank submits them.
 *
 * The eager path: a blocking call with %COLL_ALGO_AUTO (and no algorithm
 * forced by the tunables) on a communicator of one host, whose data fits
 * in the communicator's eager slots (every rank's input, plus the result
 * of a reduction, at most module parameter slot_bytes), goes through
 * kernel buffers: its send buffer is copied in, its result copied out,
 * nothing is pinned, and a rank whose part needs nothing of the others
 * (the root of a Broadcast or a Scatter, a sender of a Reduce or a Gather)
 * returns without waiting for them.  As in MPI, blocking and non-blocking
 * submissions of one collective do not match: when a blocking rank takes
 * the eager path first, a non-blocking submission of that collective (or a
 * COLL_GROUP, or one forced to an algorithm) fails with EPROTO, and so do
 * the ranks waiting for it.
 */
struct coll_op {
	__u32 size;
	__u32 flags;
	__u32 comm;
	__u32 prim;
	__u32 dtype;
	__u32 redop;
	__u32 root;
	__u32 algo;
	__aligned_u64 sendbuf;
	__aligned_u64 recvbuf;
	__aligned_u64 count;
	__u32 out_req;
	__u32 __reserved;
};

#define COLL_SUBMIT _IO(COLL_TYPE, COLL_CMD_SUBMIT)

/*
 * io_uring submission.  IORING_OP_URING_CMD on a /dev/collective descriptor,
 * from a ring set up with IORING_SETUP_SQE128, with cmd_op %COLL_SUBMIT and
 * a struct coll_op (size at most 80; bytes beyond the kernel's struct must
 * be 0) in the SQE's command area, submits that collective.  It matches
 * the other ranks' submissions as a blocking call does (the eager path
 * included: a small command there never pins and completes as soon as its
 * result is there), but nothing waits, %COLL_OP_F_NONBLOCK is allowed and
 * means nothing, no request handle is taken, and out_req is ignored: the
 * CQE, which carries the SQE's user_data, is posted when the collective
 * ends on this rank, its res the result (0 or -errno, as for COLL_WAIT).
 * Commands are matched in the order io_uring issues them, which is the
 * order of the SQ unless the program asks otherwise (IOSQE_ASYNC, links).
 * An SQE the ioctl would refuse completes at once with the ioctl's errno,
 * and changes nothing; besides, EINVAL without SQE128, with a size below
 * the kernel's struct or above 80, or with uring_cmd_flags set; E2BIG for
 * a non-zero tail; ENOTTY for another cmd_op; EOPNOTSUPP on an IOPOLL ring;
 * ENOSPC with max_requests commands of the descriptor in flight.  The
 * buffers must stay valid until the CQE.  A process that exits (or is
 * killed) with commands of its own in flight on a descriptor leaves that
 * descriptor's communicators, as closing it would, and the commands
 * complete with ECONNRESET.
 */

/**
 * struct coll_wait - COLL_WAIT / COLL_TEST: collect a request
 * @size: sizeof(struct coll_wait)
 * @flags: must be 0
 * @req: handle from COLL_SUBMIT with %COLL_OP_F_NONBLOCK
 * @timeout_ms: COLL_WAIT only: 0 waits forever; otherwise ETIMEDOUT after
 *              that long with the request still pending.  Must be 0 for
 *              COLL_TEST.
 *
 * The ioctl returns the request's own result (0, or an errno from the list
 * above) and releases the handle, except for ETIMEDOUT (COLL_WAIT) and
 * EAGAIN (COLL_TEST), which leave it pending.
 *
 * Several threads may wait on one handle at once: all of them return when
 * the request completes, exactly one of them returns its result and
 * releases the handle, the others return ENOENT, as a wait that came after
 * would.  Request handles are not reused soon after they are released, so
 * a late waiter cannot collect a newer request by mistake.
 */
struct coll_wait {
	__u32 size;
	__u32 flags;
	__u32 req;
	__u32 timeout_ms;
};

#define COLL_WAIT _IO(COLL_TYPE, COLL_CMD_WAIT)
#define COLL_TEST _IO(COLL_TYPE, COLL_CMD_TEST)

/* Transports, per peer host */
enum coll_transport {
	COLL_TRANSPORT_SELF = 0,	/* this host: single copy */
	COLL_TRANSPORT_RDMA,		/* in-kernel verbs, RC queue pairs */
	COLL_TRANSPORT_TCP,		/* kernel TCP sockets */
	COLL_TRANSPORT_NONE,		/* not connected (yet) */
};

/* Why a peer host is not reached over RDMA */
enum coll_fallback {
	COLL_FALLBACK_NONE = 0,		/* it is (or it is this host) */
	COLL_FALLBACK_ASKED,		/* COLL_COMM_F_TCP */
	COLL_FALLBACK_NO_DEVICE,	/* no RDMA device reaches its address */
	COLL_FALLBACK_CONNECT,		/* rdma_cm could not connect */
	COLL_FALLBACK_PEER,		/* the peer chose TCP */
};

/**
 * struct coll_peer_info - one host of a communicator, as COLL_COMM_QUERY sees it
 * @host: its index (struct coll_comm_init's tables)
 * @nranks: its ranks
 * @transport: enum coll_transport
 * @fallback: enum coll_fallback
 * @addr: its address, as in struct coll_host
 * @port: its port
 * @rdma_port: the local RDMA port that reaches it (transport RDMA)
 * @ibdev: the local RDMA device's name (transport RDMA), NUL-terminated
 * @gid: the local GID used (transport RDMA)
 * @mtu: the path MTU in bytes (RDMA), or the TCP MSS
 * @qps: queue pairs to it (RDMA; module parameter rdma_qps on the host
 *       that connected): the first carries the frames, reads go over all
 * @speed_mbps: the local link's speed in Mb/s, 0 if unknown
 * @bytes_sent: bytes this host sent it for collectives, since the join
 * @bytes_received: bytes this host received from it, since the join
 */
struct coll_peer_info {
	__u32 host;
	__u32 nranks;
	__u32 transport;
	__u32 fallback;
	__u8 addr[16];
	__u16 port;
	__u16 __reserved16;
	__u32 rdma_port;
	char ibdev[32];
	__u8 gid[16];
	__u32 mtu;
	__u32 qps;
	__aligned_u64 speed_mbps;
	__aligned_u64 bytes_sent;
	__aligned_u64 bytes_received;
};

/**
 * struct coll_comm_query - COLL_COMM_QUERY: a communicator's topology
 * @size: sizeof(struct coll_comm_query)
 * @flags: must be 0
 * @comm: handle from COLL_COMM_INIT
 * @npeers: entries at @peers_uptr (0: only the counts are wanted)
 * @peers_uptr: struct coll_peer_info[@npeers], filled for hosts 0 .. min(
 *              @npeers, @out_nhosts) - 1, this host included (transport
 *              SELF)
 * @peer_size: sizeof(struct coll_peer_info) as the caller knows it
 * @out_nranks: ranks in all
 * @out_rank: the caller's rank
 * @out_nhosts: hosts (1 for a communicator of one host)
 * @out_host: the caller's host
 * @out_local_ranks: ranks on the caller's host
 * @out_serial: the communicator's serial number (names it in traces and
 *              logs; never the id)
 *
 * Fills the counts and the table.  A query changes nothing in the kernel;
 * when it fails with EFAULT, entries of the table may have been written.
 */
struct coll_comm_query {
	__u32 size;
	__u32 flags;
	__u32 comm;
	__u32 npeers;
	__aligned_u64 peers_uptr;
	__u32 peer_size;
	__u32 out_nranks;
	__u32 out_rank;
	__u32 out_nhosts;
	__u32 out_host;
	__u32 out_local_ranks;
	__u32 out_serial;
	__u32 __reserved;
};

#define COLL_COMM_QUERY _IO(COLL_TYPE, COLL_CMD_COMM_QUERY)

/* Groups: collectives per call, and what is fused (struct coll_group) */
#define COLL_GROUP_MAX_OPS	1024
#define COLL_GROUP_FUSE_BYTES	16384U
#define COLL_GROUP_BUCKET_BYTES	0x100000U

/* struct coll_group flags */
#define COLL_GROUP_F_NOFUSE	_BITUL(0)	/* one collective per op */
#define COLL_GROUP_F_ALL	(COLL_GROUP_F_NOFUSE)

/**
 * struct coll_group - COLL_GROUP: several collectives of one communicator
 *                     in one call, matched as one
 * @size: sizeof(struct coll_group)
 * @flags: %COLL_GROUP_F_*
 * @comm: communicator handle
 * @nops: entries at @ops_uptr, 0 .. %COLL_GROUP_MAX_OPS (0 does nothing)
 * @ops_uptr: struct coll_op[@nops], each of @op_size bytes, each with its
 *            @size equal to @op_size, its @comm equal to @comm and its
 *            @flags 0 (a group is blocking as a whole), checked as
 *            COLL_SUBMIT checks one
 * @op_size: sizeof(struct coll_op) as the caller knows it
 * @__reserved: must be 0
 *
 * Runs the ops as one unit and returns when all of them are complete on
 * this rank, with 0 or the first error among them.  Every rank passes the
 * same ops in the same order (the same fields as for COLL_SUBMIT, buffers
 * aside) and the same @flags; if any op of the group differs between ranks,
 * every collective of the group fails with EPROTO on every rank and no
 * buffer is written.  The order in which the ops run within the group is
 * not defined (NCCL's rule): no op may read what another op of the group
 * writes.
 *
 * Unless %COLL_GROUP_F_NOFUSE, the AllReduces of at most
 * %COLL_GROUP_FUSE_BYTES (count > 0) with the same dtype, redop and algo
 * are fused, up to %COLL_GROUP_BUCKET_BYTES per rank at a time, each such
 * bucket reduced by one collective.  In a communicator of one host that
 * collective runs on their own pages: their buffers are pinned as
 * COLL_SUBMIT pins them (through the registration cache, charged to
 * RLIMIT_MEMLOCK; a loop that reuses them pins nothing after its first
 * call), nothing is copied.  Otherwise (across hosts; an op's buffer
 * overlapping another op's receive buffer; more buffers than the
 * registration cache keeps; a pin that fails) they are copied at the call
 * into a kernel buffer per rank, reduced there, and copied to their
 * receive buffers once it is done: not pinned, their receive buffers
 * faulted in for writing at the call (EFAULT then, with nothing done).
 * The other ops are pinned and run one collective each, as by
 * COLL_SUBMIT.  The fusion rule is part of the ABI, so that every host of
 * a communicator makes the same collectives of a group.
 *
 * Errors: those of COLL_SUBMIT, for the group as a whole: an op that does
 * not validate fails the call with nothing done (EINVAL also for an op
 * with @flags, another @comm or a @size other than @op_size; EINVAL for
 * @nops above %COLL_GROUP_MAX_OPS).  In a communicator that spans hosts,
 * ENOSPC also when the group would put more than %COLL_XHOST_AHEAD
 * collectives in flight on this host (after fusion), which it never can if
 * it alone makes more.  Once every collective was accepted, a failure of
 * one (a peer died) leaves the ops that completed before it written; a
 * fused receive buffer of the kernel's buffer unmapped meanwhile gives
 * EFAULT with the others written.
 */
struct coll_group {
	__u32 size;
	__u32 flags;
	__u32 comm;
	__u32 nops;
	__aligned_u64 ops_uptr;
	__u32 op_size;
	__u32 __reserved;
};

#define COLL_GROUP _IO(COLL_TYPE, COLL_CMD_GROUP)

/**
 * DOC: Mapped slots
 *
 * A communicator of one host joined with %COLL_COMM_F_MAP gets, at its
 * first COLL_COMM_MAP, a region of kernel pages that each member maps into
 * its own address space: the communicator's mapped slots.  Its small
 * blocking collectives then run in user space, without a system call:
 * each rank copies its input into a slot and publishes a sequence number,
 * reads what it needs of the others' inputs and publishes that it is done.
 * The kernel provides the memory (zeroed, charged to the first mapper's
 * memory cgroup, freed when the communicator and every mapping of it are
 * gone), admits only the communicator's members, marks the region dead
 * (%COLL_MAP_DEAD, with the errno) the moment the communicator dies, and
 * puts waiters to sleep and wakes them (COLL_MAP_WAIT, COLL_MAP_WAKE):
 * futex-like, so a rank that waits long sleeps.  libcollective runs this
 * protocol for its blocking calls; the layout is ABI:
 *
 * - the header, struct coll_map_hdr, at offset 0 (the kernel writes it);
 * - @out_ctl_offset: a struct coll_map_ctl per rank, %COLL_MAP_LINE bytes
 *   apart, written only by that rank: @arrived is the sequence number of
 *   the last collective whose input it published, @left of the last one
 *   it has finished reading (numbers start at 1, one per collective);
 * - @out_desc_offset: for slot i and rank r, a struct coll_map_desc at
 *   (i * nranks + r) * sizeof(struct coll_map_desc): what rank r called,
 *   written before its @arrived, so that ranks that disagree fail with
 *   EPROTO as on the eager path;
 * - @out_data_offset: @out_nslots slots of @out_slot_bytes each.  The
 *   collective of sequence number s uses slot s % @out_nslots, which may
 *   be written only once every rank's @left is at least s - @out_nslots.
 *   A rank's input lies at rank * the input's size (Broadcast and Scatter:
 *   the root's alone, at 0).
 *
 * A blocking COLL_SUBMIT with %COLL_ALGO_AUTO whose inputs (every rank's:
 * count * element size * nranks for AllReduce, Reduce, AllGather, Gather
 * and Scatter, that times nranks for ReduceScatter and AlltoAll, count *
 * element size for Broadcast, 0 for Barrier) fit in @out_slot_bytes goes
 * through the slots and nowhere else: on such a communicator the ioctl
 * refuses it with EXDEV (its ranks would meet nobody in the kernel).
 * Everything else (larger, non-blocking, groups, io_uring, forced
 * algorithms) goes through the kernel as on any communicator, and matches
 * only the same; libcollective first has each blocking one agree through
 * the slots (a struct coll_map_desc with %COLL_MAP_DESC_F_KERNEL), so that
 * ranks that disagree about which way a collective goes fail with EPROTO.
 */
#define COLL_MAP_MAGIC		0x436f6c4dU	/* "ColM" */
#define COLL_MAP_VERSION	1
#define COLL_MAP_LINE		64
#define COLL_MAP_ALL		0xffffffffU	/* every rank (COLL_MAP_WAIT) */

/* struct coll_map_hdr state */
#define COLL_MAP_LIVE		0
#define COLL_MAP_DEAD		1

/**
 * struct coll_map_hdr - the header of the mapped slots (the kernel's)
 * @magic: %COLL_MAP_MAGIC
 * @version: %COLL_MAP_VERSION
 * @nranks: the communicator's ranks
 * @nslots: slots
 * @slot_bytes: bytes of one slot
 * @spin_ns: module parameter spin_ns when the slots were made: how long a
 *           waiter should poll (yielding its CPU) before it sleeps
 * @__reserved: 0
 * @state: %COLL_MAP_LIVE, or %COLL_MAP_DEAD once the communicator died
 * @error: with %COLL_MAP_DEAD, the positive errno its collectives get
 *         (ECONNRESET)
 * @__pad: 0
 * @sleepers: threads asleep in COLL_MAP_WAIT; whoever publishes a
 *            sequence number and then reads it non-zero calls
 *            COLL_MAP_WAKE
 */
struct coll_map_hdr {
	__u32 magic;
	__u32 version;
	__u32 nranks;
	__u32 nslots;
	__u32 slot_bytes;
	__u32 spin_ns;
	__u32 __reserved[10];
	__u32 state;
	__u32 error;
	__u32 __pad[14];
	__u32 sleepers;
};

/**
 * struct coll_map_ctl - one rank's line of the mapped slots
 * @arrived: sequence number of its last collective with its input in
 * @left: sequence number of its last collective it is done with
 * @t_wait: CLOCK_MONOTONIC ns when it began a wait that outlasted a short
 *          spin, 0 once that wait ended (what netlink's op-get says of
 *          a collective's age)
 * @sleep_seq: while it sleeps in COLL_MAP_WAIT, the number it waits for
 *             (written, with @sleep_what and @sleep_rank, before the call;
 *             0 after), so that a publisher calls COLL_MAP_WAKE only when
 *             its number may be the one a sleeper waits for
 * @sleep_what: that wait's enum coll_map_what
 * @sleep_rank: that wait's rank, or %COLL_MAP_ALL
 * @__pad: to %COLL_MAP_LINE bytes
 */
struct coll_map_ctl {
	__aligned_u64 arrived;
	__aligned_u64 left;
	__aligned_u64 t_wait;
	__aligned_u64 sleep_seq;
	__u32 sleep_what;
	__u32 sleep_rank;
	__aligned_u64 __pad[3];
};

/*
 * struct coll_map_desc flags.  A group (COLL_MAP_DESC_F_GROUP) says its
 * number of ops in @count and a digest of them in @redop and @root.
 */
#define COLL_MAP_DESC_F_INPLACE	_BITUL(0)	/* an in-place AlltoAll */
#define COLL_MAP_DESC_F_KERNEL	_BITUL(1)	/* it goes through the kernel */
#define COLL_MAP_DESC_F_GROUP	_BITUL(2)	/* a group */

/**
 * struct coll_map_desc - what a rank called, in a slot
 * @prim: enum coll_prim
 * @dtype: enum coll_dtype
 * @redop: enum coll_redop
 * @root: the root rank
 * @algo: enum coll_algo
 * @flags: %COLL_MAP_DESC_F_*
 * @count: as in struct coll_op
 */
struct coll_map_desc {
	__u32 prim;
	__u32 dtype;
	__u32 redop;
	__u32 root;
	__u32 algo;
	__u32 flags;
	__aligned_u64 count;
};

/**
 * struct coll_comm_map - COLL_COMM_MAP: the layout of the mapped slots
 * @size: sizeof(struct coll_comm_map)
 * @flags: must be 0
 * @comm: handle of a communicator joined with %COLL_COMM_F_MAP
 * @out_nslots: slots
 * @out_slot_bytes: bytes of a slot (module parameter map_bytes when the
 *                  first rank joined, in whole 64-byte lines, plus a page
 *                  and a line so that slots do not share cache sets)
 * @out_ctl_offset: where the ranks' struct coll_map_ctl lines begin
 * @out_desc_offset: where the struct coll_map_desc begin
 * @out_data_offset: where the slots begin
 * @out_offset: the offset to pass to mmap() on this descriptor
 * @out_bytes: the length to map (MAP_SHARED, readable and writable)
 *
 * Makes the communicator's slots at its first call (any member's), then
 * tells their layout; mmap(NULL, @out_bytes, PROT_READ | PROT_WRITE,
 * MAP_SHARED, fd, @out_offset) maps them.  mmap fails with EINVAL for
 * another offset or length, MAP_PRIVATE or PROT_EXEC, and with ENOENT once
 * the descriptor no longer holds the membership.  The pages stay valid as
 * long as they are mapped, the communicator's death included; a mapping
 * holds the descriptor open, so its memberships end at close() only once
 * it is unmapped too (or the process exits).
 *
 * Errors: ENOENT unknown handle; EOPNOTSUPP a communicator without mapped
 * slots (joined without %COLL_COMM_F_MAP, or map_bytes was 0);
 * ECONNRESET it died; ENOMEM.
 */
struct coll_comm_map {
	__u32 size;
	__u32 flags;
	__u32 comm;
	__u32 out_nslots;
	__u32 out_slot_bytes;
	__u32 out_ctl_offset;
	__u32 out_desc_offset;
	__u32 out_data_offset;
	__aligned_u64 out_offset;
	__aligned_u64 out_bytes;
};

#define COLL_COMM_MAP _IO(COLL_TYPE, COLL_CMD_COMM_MAP)

/* struct coll_map_wait what */
enum coll_map_what {
	COLL_MAP_ARRIVED = 0,	/* the ranks' @arrived reached @seq */
	COLL_MAP_LEFT,		/* the ranks' @left reached @seq */
	COLL_MAP_WHAT_MAX,
};

/**
 * struct coll_map_wait - COLL_MAP_WAIT: sleep until ranks reach a number
 * @size: sizeof(struct coll_map_wait)
 * @flags: must be 0
 * @comm: communicator handle (one with mapped slots)
 * @what: enum coll_map_what
 * @rank: the rank whose line to watch, or %COLL_MAP_ALL for every rank
 * @timeout_ms: 0 waits forever, else ETIMEDOUT after that long
 * @seq: the sequence number waited for
 *
 * Returns 0 once the watched field of the watched rank (every rank's, for
 * %COLL_MAP_ALL) is at least @seq, at once if it is already.  Counts
 * itself in the header's @sleepers while it sleeps.
 *
 * Errors: ENOENT, EOPNOTSUPP (no slots made yet), EINVAL (@what, @rank),
 * ECONNRESET (the communicator died), ETIMEDOUT, EINTR (a fatal signal:
 * the communicator dies for every member, as in a collective).
 */
struct coll_map_wait {
	__u32 size;
	__u32 flags;
	__u32 comm;
	__u32 what;
	__u32 rank;
	__u32 timeout_ms;
	__aligned_u64 seq;
};

#define COLL_MAP_WAIT _IO(COLL_TYPE, COLL_CMD_MAP_WAIT)

/**
 * struct coll_map_wake - COLL_MAP_WAKE: wake the communicator's sleepers
 * @size: sizeof(struct coll_map_wake)
 * @flags: must be 0
 * @comm: communicator handle (one with mapped slots)
 * @__reserved: must be 0
 *
 * Every thread in COLL_MAP_WAIT on the communicator checks again.
 * Errors: ENOENT, EOPNOTSUPP (no slots made yet).
 */
struct coll_map_wake {
	__u32 size;
	__u32 flags;
	__u32 comm;
	__u32 __reserved;
};

#define COLL_MAP_WAKE _IO(COLL_TYPE, COLL_CMD_MAP_WAKE)

#endif /* _UAPI_LINUX_COLLECTIVE_H */
