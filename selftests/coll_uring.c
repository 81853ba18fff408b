// SPDX-License-Identifier: GPL-2.0
/*
 * coll_uring: IORING_OP_URING_CMD on /dev/collective, with raw SQEs
 * (coll_correct's "uring" tests check every primitive, data type and op
 * through coll_uring_prep()).
 *
 *  - abi (one rank): a ring without SQE128, another cmd_op, every size
 *    and field of the struct coll_op in the command, each with its
 *    documented CQE res, the receive buffer untouched by every refusal;
 *    then both flag forms of a good command, whose results are checked,
 *    and its user_data is returned unchanged;
 *  - mixed (2 ranks): one rank posts 16 AllReduces through io_uring, the
 *    other the same through non-blocking ioctls: they match, each result
 *    checked element by element;
 *  - bound: with max_requests 4, the fifth command in flight completes at
 *    once with ENOSPC and the first four complete once the peer comes;
 *  - killed / exited: a rank with commands in flight is SIGKILLed, or
 *    exits without reaping them: the survivor's command and its blocking
 *    call fail with ECONNRESET within 10 s, and once it closes nothing
 *    stays pinned or in flight; the *_eager forms do it with small
 *    commands, parked in the eager slots rather than in tasks;
 *  - eager_mixed (2 ranks): small AllReduces, Broadcasts and Gathers
 *    through io_uring on one rank and blocking calls on the other meet in
 *    the eager slots, nothing pinned, every result checked;
 *  - ring_closed: a rank closes its ring with two commands in flight: the
 *    peer's calls complete them, with correct results in the closed ring's
 *    receive buffers, and the communicator goes on working.
 *
 * Calls of N elements (256 KiB and 4 bytes) exceed any slot_bytes: they
 * take the task path, where commands and non-blocking ioctls match; the
 * eager scenarios use NSMALL.
 *
 * COLL_INFO counters are module-wide: nothing else may run at the same time.
 */
#include <liburing.h>
#include <signal.h>
#include <sys/mman.h>

#include "coll_selftest.h"
#include "kselftest_harness.h"

#define JOIN_MS		10000
#define RANKS_MS	60000
#define DEAD_MS		10000	/* a dead peer is seen within this */
#define N		65537	/* int32 elements of most calls: beyond any slot */
#define NMIX		16
#define POISON		0xa5

static int32_t val(int rank, int k, size_t i)
{
	return (int32_t)((rank + 1) * 1000003 + k * 7919 + (int)(i % 1009));
}

/* A raw command: cmd_op COLL_SUBMIT, @op's bytes in the payload. */
static struct io_uring_sqe *prep(struct io_uring *ring, int fd,
				 const void *op, size_t len, uint64_t data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return NULL;
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = COLL_SUBMIT;
	memcpy(sqe->cmd, op, len);
	io_uring_sqe_set_data64(sqe, data);
	return sqe;
}

/* Wait for one CQE: its res in *@res, user_data in *@data; 0 or -errno. */
static int reap(struct io_uring *ring, int ms, int *res, uint64_t *data)
{
	struct __kernel_timespec ts = {
		.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000LL,
	};
	struct io_uring_cqe *cqe;
	int r = io_uring_wait_cqe_timeout(ring, &cqe, &ts);

	if (r)
		return r;
	*res = cqe->res;
	if (data)
		*data = io_uring_cqe_get_data64(cqe);
	io_uring_cqe_seen(ring, cqe);
	return 0;
}

/* Submit one command and reap its CQE: the CQE's res, or an error. */
static int one(struct io_uring *ring, int fd, const void *op, size_t len)
{
	int r, res;

	if (!prep(ring, fd, op, len, 7))
		return -ENOSPC;
	r = io_uring_submit(ring);
	if (r != 1)
		return r < 0 ? r : -EIO;
	r = reap(ring, DEAD_MS, &res, NULL);
	return r ? -1000 + r : res;
}

FIXTURE(uring) {
	int fd;
	uint32_t comm;
	struct io_uring ring;
	int32_t *send, *recv;
};

FIXTURE_SETUP(uring)
{
	uint8_t id[COLL_ID_BYTES];

	self->fd = st_dev_open();
	ASSERT_GE(self->fd, 0);
	st_random_id(id);
	ASSERT_EQ(0, st_comm_init(self->fd, 1, 0, id, JOIN_MS, &self->comm));
	ASSERT_EQ(0, io_uring_queue_init(8, &self->ring, IORING_SETUP_SQE128));
	self->send = st_map(N * sizeof(int32_t));
	self->recv = st_map(N * sizeof(int32_t));
	ASSERT_NE(NULL, self->send);
	ASSERT_NE(NULL, self->recv);
}

FIXTURE_TEARDOWN(uring)
{
	io_uring_queue_exit(&self->ring);
	close(self->fd);
}

TEST_F(uring, abi)
{
	struct coll_op op = st_op(self->comm, COLL_ALLREDUCE, COLL_INT32,
				  COLL_SUM, 0, self->send, self->recv, N);
	uint8_t big[80];
	struct coll_op bad;
	struct io_uring plain;
	struct io_uring_sqe *sqe;
	struct coll_info want = { 0 }, got;
	void *hole;
	uint64_t data = 0;
	size_t i;
	int res;

	for (i = 0; i < N; i++)
		self->send[i] = val(0, 0, i);
	memset(self->recv, POISON, N * sizeof(int32_t));

	/* A ring of 64-byte SQEs has 16 bytes of payload: EINVAL. */
	ASSERT_EQ(0, io_uring_queue_init(4, &plain, 0));
	sqe = io_uring_get_sqe(&plain);
	ASSERT_NE(NULL, sqe);
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = self->fd;
	sqe->cmd_op = COLL_SUBMIT;
	ASSERT_EQ(1, io_uring_submit(&plain));
	ASSERT_EQ(0, reap(&plain, DEAD_MS, &res, NULL));
	EXPECT_EQ(-EINVAL, res);
	io_uring_queue_exit(&plain);

	/* Another cmd_op: ENOTTY; beside it a good command completes. */
	ASSERT_NE(NULL, prep(&self->ring, self->fd, &op, sizeof(op), 1));
	sqe = prep(&self->ring, self->fd, &op, sizeof(op), 2);
	ASSERT_NE(NULL, sqe);
	sqe->cmd_op = COLL_WAIT;
	ASSERT_EQ(2, io_uring_submit(&self->ring));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, reap(&self->ring, DEAD_MS, &res, &data));
		EXPECT_EQ(data == 2 ? -ENOTTY : 0, res);
	}
	for (i = 0; i < N; i++)
		ASSERT_EQ(val(0, 0, i), self->recv[i]);

	memset(self->recv, POISON, N * sizeof(int32_t));
	bad = op;
	bad.size = sizeof(op) - 1;
	EXPECT_EQ(-EINVAL, one(&self->ring, self->fd, &bad, sizeof(bad)));
	bad.size = 0;
	EXPECT_EQ(-EINVAL, one(&self->ring, self->fd, &bad, sizeof(bad)));
	bad.size = 81;
	EXPECT_EQ(-EINVAL, one(&self->ring, self->fd, &bad, sizeof(bad)));
	memset(big, 0, sizeof(big));
	memcpy(big, &op, sizeof(op));
	((struct coll_op *)big)->size = sizeof(big);
	big[79] = 1;
	EXPECT_EQ(-E2BIG, one(&self->ring, self->fd, big, sizeof(big)));
	bad = op;
	bad.flags = 1u << 7;
	EXPECT_EQ(-EOPNOTSUPP, one(&self->ring, self->fd, &bad, sizeof(bad)));
	bad = op;
	bad.__reserved = 1;
	EXPECT_EQ(-EINVAL, one(&self->ring, self->fd, &bad, sizeof(bad)));
	bad = op;
	bad.comm = self->comm + 1000;
	EXPECT_EQ(-ENOENT, one(&self->ring, self->fd, &bad, sizeof(bad)));
	bad = op;
	bad.prim = COLL_PRIM_MAX;
	EXPECT_EQ(-EOPNOTSUPP, one(&self->ring, self->fd, &bad, sizeof(bad)));
	bad = op;
	bad.count = (uint64_t)COLL_MAX_BYTES + 1;
	EXPECT_EQ(-EOVERFLOW, one(&self->ring, self->fd, &bad, sizeof(bad)));
	bad = st_op(self->comm, COLL_BROADCAST, COLL_INT32, 0, 1,
		    self->send, self->recv, N);
	EXPECT_EQ(-EINVAL, one(&self->ring, self->fd, &bad, sizeof(bad)));
	hole = mmap(NULL, N * sizeof(int32_t), PROT_READ,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	bad = op;
	bad.recvbuf = (uintptr_t)hole;
	EXPECT_EQ(-EFAULT, one(&self->ring, self->fd, &bad, sizeof(bad)));
	munmap(hole, N * sizeof(int32_t));
	EXPECT_EQ(N * sizeof(int32_t),
		  st_find_not(self->recv, POISON, N * sizeof(int32_t)));

	/* A larger struct with a zero tail, the NONBLOCK flag given or not. */
	big[79] = 0;
	EXPECT_EQ(0, one(&self->ring, self->fd, big, sizeof(big)));
	for (i = 0; i < N; i++)
		ASSERT_EQ(val(0, 0, i), self->recv[i]);
	memset(self->recv, POISON, N * sizeof(int32_t));
	op.flags = COLL_OP_F_NONBLOCK;
	op.out_req = 12345;		/* an output of the ioctl: ignored */
	EXPECT_EQ(0, one(&self->ring, self->fd, &op, sizeof(op)));
	for (i = 0; i < N; i++)
		ASSERT_EQ(val(0, 0, i), self->recv[i]);

	/* No handle was taken; nothing stays in flight. */
	ASSERT_EQ(0, st_info(self->fd, &got));
	EXPECT_EQ(0, got.out_reqs);
	want.out_comms = got.out_comms;
	want.out_pinned_pages = got.out_pinned_pages;
	EXPECT_EQ(0, st_info_settle(&want, &got, 5000));
}

/* ---- several ranks -------------------------------------------------------- */

enum scen { MIXED, BOUND, KILLED, EXITED, RING_CLOSED, KILLED_EAGER,
	    EXITED_EAGER, BOUND_EAGER, EAGER_MIXED };

#define NSMALL		13	/* int32 elements of the eager scenarios */

static bool small(enum scen scen)
{
	return scen >= KILLED_EAGER;
}

struct shared {
	uint8_t id[COLL_ID_BYTES];
	enum scen scen;
	int posted;		/* rank 1's commands are in flight */
	int go;			/* rank 0 may go on */
	struct st_oob oob;
};

static size_t cnt = N;	/* elements per call (each call's slot holds N) */

static int fail(int code, const char *what, int r)
{
	st_log("%s: %s", what, st_errname(r));
	return code;
}

/* Buffers of @k calls of N elements, inputs of @rank, outputs poisoned. */
static int bufs(int rank, int k, int32_t **send, int32_t **recv)
{
	size_t bytes = (size_t)k * N * sizeof(int32_t), i;

	*send = st_map(bytes);
	*recv = st_map(bytes);
	if (!*send || !*recv)
		return -1;
	for (i = 0; i < (size_t)k * N; i++)
		(*send)[i] = val(rank, i / N, i % N);
	memset(*recv, POISON, bytes);
	return 0;
}

/*
 * Every output is the sum of the two ranks' inputs (or, for the odd calls
 * of @bcast, the input of rank @k % 2), the rest of each slot untouched.
 */
static int check_as(const int32_t *recv, int k, bool bcast)
{
	size_t i, j;
	int32_t want;

	for (i = 0; i < (size_t)k; i++) {
		for (j = 0; j < N; j++) {
			if (j >= cnt)
				memset(&want, POISON, sizeof(want));
			else if (bcast && i % 2)
				want = val((i / 2) % 2, i, j);
			else
				want = (int32_t)((uint32_t)val(0, i, j) +
						 (uint32_t)val(1, i, j));
			if (recv[i * N + j] != want) {
				st_log("call %zu element %zu: %d, not %d", i,
				       j, recv[i * N + j], want);
				return -1;
			}
		}
	}
	return 0;
}

static int check(const int32_t *recv, int k)
{
	return check_as(recv, k, false);
}

/* Call @i of the eager mix: AllReduce, or (odd) Broadcast from rank i/2%2. */
static struct coll_op mix_op(uint32_t comm, int i, int32_t *send,
			     int32_t *recv)
{
	if (i % 2)
		return st_op(comm, COLL_BROADCAST, COLL_INT32, 0, (i / 2) % 2,
			     send + (size_t)i * N, recv + (size_t)i * N, cnt);
	return st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0,
		     send + (size_t)i * N, recv + (size_t)i * N, cnt);
}

/* Post @k AllReduces (user_data = index) from @send/@recv. */
static int post(struct io_uring *ring, int fd, uint32_t comm, int k,
		int32_t *send, int32_t *recv)
{
	int i;

	for (i = 0; i < k; i++) {
		struct coll_op op = st_op(comm, COLL_ALLREDUCE, COLL_INT32,
					  COLL_SUM, 0, send + (size_t)i * N,
					  recv + (size_t)i * N, cnt);

		if (!prep(ring, fd, &op, sizeof(op), i))
			return -ENOSPC;
	}
	return io_uring_submit(ring) == k ? 0 : -EIO;
}

/* The same through non-blocking ioctls, waited for in order. */
static int ioctl_calls(int fd, uint32_t comm, int k, int32_t *send,
		       int32_t *recv)
{
	uint32_t req[NMIX];
	int i, r;

	for (i = 0; i < k; i++) {
		struct coll_op op = st_op(comm, COLL_ALLREDUCE, COLL_INT32,
					  COLL_SUM, 0, send + (size_t)i * N,
					  recv + (size_t)i * N, cnt);

		op.flags = COLL_OP_F_NONBLOCK;
		r = st_submit(fd, &op);
		if (r)
			return r;
		req[i] = op.out_req;
	}
	for (i = 0; i < k; i++) {
		r = st_wait(fd, req[i], RANKS_MS);
		if (r)
			return r;
	}
	return 0;
}

/* The same as blocking calls. */
static int blocking_calls(int fd, uint32_t comm, int k, int32_t *send,
			  int32_t *recv)
{
	int i, r;

	for (i = 0; i < k; i++) {
		struct coll_op op = st_op(comm, COLL_ALLREDUCE, COLL_INT32,
					  COLL_SUM, 0, send + (size_t)i * N,
					  recv + (size_t)i * N, cnt);

		r = st_submit(fd, &op);
		if (r)
			return r;
	}
	return 0;
}

/* Reap @k CQEs; each res must be @want. */
static int reap_all(struct io_uring *ring, int k, int want, int ms)
{
	uint64_t seen = 0, data;
	int i, r, res;

	for (i = 0; i < k; i++) {
		r = reap(ring, ms, &res, &data);
		if (r)
			return fail(-1, "waiting for a CQE", r);
		if (data >= 64 || (seen & (1ull << data))) {
			st_log("user_data %llu", (unsigned long long)data);
			return -1;
		}
		seen |= 1ull << data;
		if (res != want) {
			st_log("CQE %llu: %s, not %s", (unsigned long long)data,
			       st_errname(res), st_errname(want));
			return -1;
		}
	}
	return 0;
}

static int rank_fn(int rank, void *arg)
{
	struct shared *sh = arg;
	struct io_uring ring;
	int32_t *send, *recv;
	uint32_t comm;
	int fd, r, res = 0, i, k = sh->scen == MIXED ? NMIX : 8;

	fd = st_dev_open();
	if (fd < 0)
		return 10;
	r = st_comm_init(fd, 2, rank, sh->id, JOIN_MS, &comm);
	if (r)
		return fail(11, "join", r);
	if (io_uring_queue_init(NMIX, &ring, IORING_SETUP_SQE128))
		return 12;
	if (bufs(rank, k, &send, &recv))
		return 13;
	if (small(sh->scen))
		cnt = NSMALL;

	switch (sh->scen) {
	case EAGER_MIXED:
		for (i = 0; i < k; i++) {
			struct coll_op op = mix_op(comm, i, send, recv);

			if (rank == 1)
				r = st_submit(fd, &op);
			else
				r = prep(&ring, fd, &op, sizeof(op), i) ?
				    0 : -ENOSPC;
			if (r)
				return fail(60, "call", r);
		}
		if (rank == 0) {
			struct coll_info info;

			r = io_uring_submit(&ring) == k ? 0 : -EIO;
			if (r || reap_all(&ring, k, 0, RANKS_MS))
				return 61;
			if (st_info(fd, &info) || info.out_pinned_pages) {
				st_log("pinned pages after eager commands: %llu",
				       (unsigned long long)info.out_pinned_pages);
				return 62;
			}
		}
		return check_as(recv, k, true) ? 63 : 0;
	case MIXED:
		r = rank ? ioctl_calls(fd, comm, k, send, recv) :
			   post(&ring, fd, comm, k, send, recv) ?:
			   reap_all(&ring, k, 0, RANKS_MS);
		if (r)
			return fail(20, "calls", r);
		return check(recv, k) ? 21 : 0;
	case BOUND:
	case BOUND_EAGER:
		if (rank == 1) {
			if (st_wait_ge(&sh->go, 1, RANKS_MS))
				return 30;
			/* small: blocking, as the eager slots match */
			r = sh->scen == BOUND ?
			    ioctl_calls(fd, comm, 4, send, recv) :
			    blocking_calls(fd, comm, 4, send, recv);
			return r ? fail(31, "calls", r) : check(recv, 4) ? 32 : 0;
		}
		/* four in flight (the peer has not called), then one more */
		if (post(&ring, fd, comm, 4, send, recv))
			return 33;
		st_sleep_ms(200);
		if (io_uring_cq_ready(&ring)) {
			st_log("a command completed before the peer called");
			return 34;
		}
		if (post(&ring, fd, comm, 1, send + 4 * N, recv + 4 * N))
			return 35;
		r = reap(&ring, DEAD_MS, &res, NULL);
		if (r || res != -ENOSPC) {
			st_log("fifth command: %s (CQE %s)", st_errname(r),
			       st_errname(res));
			return 36;
		}
		__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
		if (reap_all(&ring, 4, 0, RANKS_MS))
			return 37;
		return check(recv, 4) ? 38 : 0;
	case KILLED:
	case EXITED:
	case KILLED_EAGER:
	case EXITED_EAGER:
		if (rank == 1) {
			if (post(&ring, fd, comm, 4, send, recv))
				return 40;
			__atomic_store_n(&sh->posted, 1, __ATOMIC_RELEASE);
			if (sh->scen == EXITED || sh->scen == EXITED_EAGER)
				_exit(0);	/* nothing reaped, nothing closed */
			pause();		/* SIGKILLed by the test */
			return 41;
		}
		if (st_wait_ge(&sh->go, 1, RANKS_MS))
			return 42;
		/* rank 1 is dead: a command and a blocking call both fail */
		{
			int64_t t0 = st_now_ns();
			struct coll_op op = st_op(comm, COLL_ALLREDUCE,
						  COLL_INT32, COLL_SUM, 0,
						  send, recv, N);

			r = post(&ring, fd, comm, 1, send, recv) ?:
			    reap_all(&ring, 1, -ECONNRESET, DEAD_MS);
			if (r)
				return 43;
			r = st_submit(fd, &op);
			if (r != -ECONNRESET)
				return fail(44, "blocking call", r);
			if (st_now_ns() - t0 > DEAD_MS * 1000000LL) {
				st_log("the death was seen after %.1f s",
				       (st_now_ns() - t0) / 1e9);
				return 46;
			}
		}
		if (st_find_not(recv, POISON, (size_t)k * N * 4) !=
		    (size_t)k * N * 4)
			return 45;
		break;
	case RING_CLOSED:
		if (rank == 1) {
			if (post(&ring, fd, comm, 2, send, recv))
				return 50;
			io_uring_queue_exit(&ring);
			__atomic_store_n(&sh->posted, 1, __ATOMIC_RELEASE);
		} else {
			if (st_wait_ge(&sh->posted, 1, RANKS_MS))
				return 51;
			st_sleep_ms(100);
		}
		if (rank == 0) {
			r = ioctl_calls(fd, comm, 2, send, recv);
			if (r)
				return fail(52, "calls", r);
		}
		/* both see the two results, then call once more */
		if (st_oob_barrier(&sh->oob, 2, RANKS_MS))
			return 53;
		if (check(recv, 2))
			return 54;
		memset(recv, POISON, (size_t)2 * N * 4);
		{
			struct coll_op op = st_op(comm, COLL_ALLREDUCE,
						  COLL_INT32, COLL_SUM, 0,
						  send, recv, N);

			r = st_submit(fd, &op);
			if (r)
				return fail(55, "blocking call after", r);
		}
		return check(recv, 1) ? 56 : 0;
	}
	return 0;
}

static void run(struct __test_metadata *_metadata, enum scen scen)
{
	struct shared *sh = st_shared(sizeof(*sh));
	struct coll_info base, want = { 0 }, got;
	struct st_ranks rk;
	char buf[64];
	int i, bad;

	ASSERT_NE(NULL, sh);
	ASSERT_EQ(0, st_info_fresh(&base));
	st_random_id(sh->id);
	sh->scen = scen;
	ASSERT_EQ(0, st_ranks_spawn(&rk, 2, rank_fn, sh));
	bool dies = scen == KILLED || scen == EXITED ||
		    scen == KILLED_EAGER || scen == EXITED_EAGER;

	if (dies) {
		if (st_wait_ge(&sh->posted, 1, DEAD_MS)) {
			st_ranks_wait(&rk, 1000, 0);
			for (i = 0; i < 2; i++)
				TH_LOG("rank %d: %s", i, st_status_str(&rk, i,
					buf, sizeof(buf)));
			ASSERT_TRUE(0);
		}
		st_sleep_ms(100);	/* the commands are issued */
		if (scen == KILLED || scen == KILLED_EAGER)
			kill(rk.pid[1], SIGKILL);
		/*
		 * The death is over once its zombie is reaped (here:
		 * st_ranks_wait() then finds it gone, ECHILD).
		 */
		ASSERT_EQ(rk.pid[1], waitpid(rk.pid[1], &rk.status[1], 0));
		__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	}
	st_ranks_wait(&rk, RANKS_MS, 10000);
	bad = 0;
	for (i = 0; i < 2; i++) {
		int st = rk.status[i];

		if (i == 1 && (scen == KILLED || scen == KILLED_EAGER) &&
		    rk.done[i] && !rk.killed[i] &&
		    WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			continue;		/* killed, as meant */
		if (rk.done[i] && !rk.killed[i] && WIFEXITED(st) &&
		    !WEXITSTATUS(st))
			continue;
		TH_LOG("rank %d: %s", i, st_status_str(&rk, i, buf,
							 sizeof(buf)));
		bad++;
	}
	EXPECT_EQ(0, bad);
	/* Everything is given back once the ranks are gone. */
	want.out_comms = base.out_comms;
	want.out_pinned_pages = base.out_pinned_pages;
	want.out_ops = base.out_ops;
	EXPECT_EQ(0, st_info_settle(&want, &got, 10000)) {
		TH_LOG("comms %llu pinned %llu ops %llu",
		       (unsigned long long)got.out_comms,
		       (unsigned long long)got.out_pinned_pages,
		       (unsigned long long)got.out_ops);
	}
	munmap(sh, sizeof(*sh));
}

TEST(mixed) { run(_metadata, MIXED); }

/* @scen with max_requests at 4, restored after. */
static void run_bounded(struct __test_metadata *_metadata, enum scen scen)
{
	long old = st_param_get("max_requests");

	ASSERT_GT(old, 0);
	ASSERT_EQ(0, st_param_set("max_requests", 4));
	run(_metadata, scen);
	EXPECT_EQ(0, st_param_set("max_requests", old));
}

TEST(bound) { run_bounded(_metadata, BOUND); }
TEST(bound_eager) { run_bounded(_metadata, BOUND_EAGER); }

TEST(killed) { run(_metadata, KILLED); }
TEST(exited) { run(_metadata, EXITED); }
TEST(killed_eager) { run(_metadata, KILLED_EAGER); }
TEST(exited_eager) { run(_metadata, EXITED_EAGER); }
TEST(ring_closed) { run(_metadata, RING_CLOSED); }
TEST(eager_mixed) { run(_metadata, EAGER_MIXED); }

TEST_HARNESS_MAIN
