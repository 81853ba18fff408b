// SPDX-License-Identifier: GPL-2.0
/*
 * coll_group: COLL_GROUP with raw ioctls (coll_correct's "group" tests check
 * every primitive, data type and op of groups through the library).
 *
 *  - abi: every field of struct coll_group and of its ops validated, each
 *    with its documented errno, and every failed call leaves every receive
 *    buffer of the group as it was and the communicator usable (one rank);
 *  - fused_pins: a group of fused AllReduces on one host runs on its own
 *    pages, pinned once through the registration cache: the first call
 *    pins each op's two buffers (one in place), the next finds them all
 *    pinned and pins nothing (COLL_INFO); a group whose op reads another's
 *    receive buffer goes through the kernel's bucket instead, nothing
 *    pinned, every input read before any result is written;
 *  - fused / unfused (2 and 3 ranks, forked): 100 int32 SUM AllReduces of
 *    1..1100 elements (4 KiB and odd sizes) in one group, and the same
 *    with COLL_GROUP_F_NOFUSE, each element checked against the sum
 *    computed here, the bytes around every receive buffer untouched;
 *  - disagree: one rank's group differs in one op's count: every rank
 *    gets EPROTO, no receive buffer is written, and the next group works;
 *  - meets_eager: one rank's group meets the others' small blocking call
 *    (its eager slot): EPROTO for all, nothing written, the next call
 *    right;
 *  - killed: a rank is SIGKILLed while the other is in a long group: the
 *    survivor's call fails with ECONNRESET within 10 s and nothing stays
 *    pinned once it closes.
 *
 * COLL_INFO counters are module-wide: nothing else may run at the same time.
 */
#include <signal.h>
#include <sys/mman.h>

#include "coll_selftest.h"
#include "kselftest_harness.h"

#define JOIN_MS		10000
#define RANKS_MS	120000
#define NOPS		100
#define MAXN		1100		/* elements of the largest op */
#define GUARD		64		/* int32 checked on each side */
#define SLOT		(MAXN + 2 * GUARD)
#define POISON		((int32_t)0xa5a5a5a5)
#define KILL_MB		64		/* killed: MiB per op */
#define KILL_OPS	32

/* Inputs change with each round of a rank, so that no round sees the last's. */
static int gen;

static int32_t val(int rank, int op, size_t i)
{
	return (int32_t)((rank + 1) * 1000003 + op * 7919 + (int)(i % 1009) +
			 gen * 104729);
}

/* Op @k's element count: 1024 (4 KiB) for most, odd sizes between. */
static size_t op_count(int k)
{
	return k % 4 ? 1024 : (size_t)(1 + (k * 37) % MAXN);
}

struct gbufs {
	int32_t *send;		/* NOPS slots of SLOT */
	int32_t *recv;
};

static int gbufs_alloc(struct gbufs *b)
{
	b->send = st_map(NOPS * SLOT * sizeof(int32_t));
	b->recv = st_map(NOPS * SLOT * sizeof(int32_t));
	return b->send && b->recv ? 0 : -1;
}

static void gbufs_free(struct gbufs *b)
{
	if (b->send)
		munmap(b->send, NOPS * SLOT * sizeof(int32_t));
	if (b->recv)
		munmap(b->recv, NOPS * SLOT * sizeof(int32_t));
}

static int32_t *sendp(struct gbufs *b, int k)
{
	return b->send + (size_t)k * SLOT + GUARD;
}

static int32_t *recvp(struct gbufs *b, int k)
{
	return b->recv + (size_t)k * SLOT + GUARD;
}

/* Inputs of @rank, receive buffers (and guards) poisoned, ops built. */
static void group_fill(struct gbufs *b, struct coll_op *ops, int nops,
		       uint32_t comm, int rank)
{
	int k;
	size_t i;

	for (k = 0; k < NOPS * SLOT; k++)
		b->recv[k] = POISON;
	for (k = 0; k < nops; k++) {
		for (i = 0; i < op_count(k); i++)
			sendp(b, k)[i] = val(rank, k, i);
		ops[k] = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0,
			       sendp(b, k), recvp(b, k), op_count(k));
	}
}

/* Every receive buffer is the sum over @n ranks, or (@n 0) untouched. */
static int group_check(struct gbufs *b, int nops, int n, int rank,
		       const char *what)
{
	int k, q;
	size_t i;

	for (k = 0; k < NOPS * SLOT; k++) {
		size_t slot = k / SLOT, at = k % SLOT;
		int32_t want = POISON;

		if (n && (int)slot < nops && at >= GUARD &&
		    at - GUARD < op_count(slot)) {
			i = at - GUARD;
			want = 0;
			for (q = 0; q < n; q++)
				want = (int32_t)((uint32_t)want +
						 (uint32_t)val(q, slot, i));
		}
		if (b->recv[k] != want) {
			st_log("rank %d %s: op %zu element %ld is %d, want %d",
			       rank, what, slot, (long)at - GUARD, b->recv[k],
			       want);
			return -1;
		}
	}
	return 0;
}

static int group_call(int fd, uint32_t comm, struct coll_op *ops,
		      uint32_t nops, uint32_t flags)
{
	struct coll_group g = {
		.size = sizeof(g),
		.flags = flags,
		.comm = comm,
		.nops = nops,
		.ops_uptr = (uintptr_t)ops,
		.op_size = sizeof(*ops),
	};

	return st_ioctl(fd, COLL_GROUP, &g);
}

/* ---- one rank: the ABI ------------------------------------------------ */

FIXTURE(one) {
	int fd;
	uint32_t comm;
	struct gbufs b;
	struct coll_op ops[NOPS];
};

FIXTURE_SETUP(one)
{
	uint8_t id[COLL_ID_BYTES];

	self->fd = st_dev_open();
	if (self->fd < 0)
		SKIP(return, "cannot open %s: %s", st_dev_path(),
		     strerror(errno));
	st_random_id(id);
	ASSERT_EQ(0, st_comm_init(self->fd, 1, 0, id, JOIN_MS, &self->comm));
	ASSERT_EQ(0, gbufs_alloc(&self->b));
	group_fill(&self->b, self->ops, NOPS, self->comm, 0);
}

FIXTURE_TEARDOWN(one)
{
	gbufs_free(&self->b);
	if (self->fd >= 0)
		close(self->fd);
}

/* The call failed with @err, and nothing was written. */
#define EXPECT_GROUP_FAILS(err, call)					\
	do {								\
		EXPECT_EQ(-(err), (call));				\
		EXPECT_EQ(0, group_check(&self->b, NOPS, 0, 0, #call));	\
	} while (0)

/* Op NOPS / 2 changed by @change (from its valid self): the call fails. */
#define MID_FAILS(err, flags, change...)				\
	do {								\
		*mid = keep;						\
		change;							\
		EXPECT_GROUP_FAILS(err, group_call(self->fd, self->comm, \
						   self->ops, NOPS,	\
						   flags));		\
	} while (0)

TEST_F(one, abi)
{
	struct {
		struct coll_group g;
		uint32_t tail[2];
	} big = { 0 };
	struct coll_group g = {
		.size = sizeof(g),
		.comm = self->comm,
		.nops = NOPS,
		.ops_uptr = (uintptr_t)self->ops,
		.op_size = sizeof(struct coll_op),
	};
	struct coll_group bad;
	struct coll_op *mid = &self->ops[NOPS / 2], keep = *mid;
	int32_t *ro;

	bad = g, bad.flags = 1U << 7;
	EXPECT_GROUP_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_GROUP, &bad));
	bad = g, bad.__reserved = 1;
	EXPECT_GROUP_FAILS(EINVAL, st_ioctl(self->fd, COLL_GROUP, &bad));
	bad = g, bad.nops = COLL_GROUP_MAX_OPS + 1;
	EXPECT_GROUP_FAILS(EINVAL, st_ioctl(self->fd, COLL_GROUP, &bad));
	bad = g, bad.op_size = offsetof(struct coll_op, __reserved);
	EXPECT_GROUP_FAILS(EINVAL, st_ioctl(self->fd, COLL_GROUP, &bad));
	bad = g, bad.comm = self->comm + 1000;
	EXPECT_GROUP_FAILS(ENOENT, st_ioctl(self->fd, COLL_GROUP, &bad));
	bad = g, bad.ops_uptr = 8;
	EXPECT_GROUP_FAILS(EFAULT, st_ioctl(self->fd, COLL_GROUP, &bad));
	bad = g, bad.size = offsetof(struct coll_group, op_size);
	EXPECT_GROUP_FAILS(EINVAL, st_ioctl(self->fd, COLL_GROUP, &bad));
	big.g = g;
	big.g.size = sizeof(big);
	big.tail[1] = 1;
	EXPECT_GROUP_FAILS(E2BIG, st_ioctl(self->fd, COLL_GROUP, &big));
	/* an empty group does nothing */
	bad = g, bad.nops = 0;
	EXPECT_GROUP_FAILS(0, st_ioctl(self->fd, COLL_GROUP, &bad));

	/* one op in the middle of the group that does not validate */
	MID_FAILS(EOPNOTSUPP, 0, mid->prim = COLL_PRIM_MAX);
	MID_FAILS(EINVAL, 0, mid->__reserved = 1);
	MID_FAILS(EINVAL, 0, mid->flags = COLL_OP_F_NONBLOCK);
	MID_FAILS(EINVAL, 0, mid->comm = self->comm + 1);
	MID_FAILS(EINVAL, 0, mid->size = sizeof(*mid) - 8);
	MID_FAILS(EINVAL, 0, mid->prim = COLL_BROADCAST, mid->redop = COLL_MAX);
	MID_FAILS(EINVAL, 0, mid->prim = COLL_BROADCAST, mid->root = 1);
	MID_FAILS(EOVERFLOW, 0, mid->count = COLL_MAX_BYTES + 1);
	/* buffers that overlap other than in place: fused, then pinned */
	MID_FAILS(EINVAL, 0, mid->recvbuf = mid->sendbuf + 4);
	MID_FAILS(EINVAL, COLL_GROUP_F_NOFUSE, mid->recvbuf = mid->sendbuf + 4);
	/* a receive buffer that cannot be written, fused or not */
	ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	MID_FAILS(EFAULT, 0, mid->recvbuf = (uintptr_t)ro);
	MID_FAILS(EFAULT, COLL_GROUP_F_NOFUSE, mid->recvbuf = (uintptr_t)ro);
	/* a range that wraps */
	MID_FAILS(EOVERFLOW, 0, mid->sendbuf = ~0ULL - 15);
	MID_FAILS(EOVERFLOW, COLL_GROUP_F_NOFUSE, mid->sendbuf = ~0ULL - 15);
	/* a send buffer that cannot be read */
	MID_FAILS(EFAULT, 0, mid->sendbuf = 4096);
	MID_FAILS(EFAULT, COLL_GROUP_F_NOFUSE, mid->sendbuf = 4096);
	munmap(ro, 8192);

	/* and after all that, the group works, with a longer op_size too */
	*mid = keep;
	big.g = g;
	big.g.size = sizeof(big);
	big.tail[1] = 0;
	EXPECT_EQ(0, st_ioctl(self->fd, COLL_GROUP, &big));
	EXPECT_EQ(0, group_check(&self->b, NOPS, 1, 0, "after the errors"));
}

TEST_F(one, larger_op_size)
{
	struct opx {
		struct coll_op op;
		uint64_t tail;
	} *x = calloc(NOPS, sizeof(*x));
	struct coll_group g = {
		.size = sizeof(g),
		.comm = self->comm,
		.nops = NOPS,
		.op_size = sizeof(*x),
	};
	int k;

	ASSERT_NE(NULL, x);
	g.ops_uptr = (uintptr_t)x;
	for (k = 0; k < NOPS; k++) {
		x[k].op = self->ops[k];
		x[k].op.size = sizeof(*x);
	}
	x[3].tail = 1;
	EXPECT_GROUP_FAILS(E2BIG, st_ioctl(self->fd, COLL_GROUP, &g));
	x[3].tail = 0;
	EXPECT_EQ(0, st_ioctl(self->fd, COLL_GROUP, &g));
	EXPECT_EQ(0, group_check(&self->b, NOPS, 1, 0, "op_size + 8"));
	free(x);
}

TEST_F(one, fused_pins)
{
	struct coll_info a, b, c;
	int k;

	ASSERT_EQ(0, st_info(self->fd, &a));
	ASSERT_EQ(0, group_call(self->fd, self->comm, self->ops, NOPS, 0));
	ASSERT_EQ(0, st_info(self->fd, &b));
	EXPECT_EQ(0, group_check(&self->b, NOPS, 1, 0, "fused"));
	/* 100 AllReduces of at most 4400 bytes: one collective, 200 pins */
	EXPECT_EQ(a.out_reg_misses + 2 * NOPS, b.out_reg_misses);
	EXPECT_EQ(a.out_ops_total + 1, b.out_ops_total);
	/* new inputs, the same buffers: all found pinned, nothing pinned */
	gen++;
	group_fill(&self->b, self->ops, NOPS, self->comm, 0);
	ASSERT_EQ(0, group_call(self->fd, self->comm, self->ops, NOPS, 0));
	ASSERT_EQ(0, st_info(self->fd, &c));
	EXPECT_EQ(0, group_check(&self->b, NOPS, 1, 0, "fused again"));
	EXPECT_EQ(b.out_reg_misses, c.out_reg_misses);
	EXPECT_EQ(b.out_reg_hits + 2 * NOPS, c.out_reg_hits);
	EXPECT_EQ(b.out_pinned_pages, c.out_pinned_pages);
	EXPECT_EQ(b.out_ops_total + 1, c.out_ops_total);

	/* in place, each op on its receive buffer: pinned already (writable) */
	gen++;
	group_fill(&self->b, self->ops, NOPS, self->comm, 0);
	for (k = 0; k < NOPS; k++) {
		memcpy(recvp(&self->b, k), sendp(&self->b, k),
		       op_count(k) * sizeof(int32_t));
		self->ops[k].sendbuf = self->ops[k].recvbuf;
	}
	ASSERT_EQ(0, group_call(self->fd, self->comm, self->ops, NOPS, 0));
	ASSERT_EQ(0, st_info(self->fd, &a));
	EXPECT_EQ(0, group_check(&self->b, NOPS, 1, 0, "fused in place"));
	EXPECT_EQ(c.out_reg_misses, a.out_reg_misses);
	EXPECT_EQ(c.out_reg_hits + NOPS, a.out_reg_hits);

	/*
	 * Op 2 reads op 1's receive buffer: the bucket, which reads every
	 * input before it writes; nothing pinned or found pinned.
	 */
	gen++;
	group_fill(&self->b, self->ops, NOPS, self->comm, 0);
	self->ops[2].sendbuf = (uintptr_t)recvp(&self->b, 1);
	ASSERT_EQ(1024, op_count(1));
	ASSERT_EQ(1024, op_count(2));
	ASSERT_EQ(0, group_call(self->fd, self->comm, self->ops, NOPS, 0));
	ASSERT_EQ(0, st_info(self->fd, &b));
	EXPECT_EQ(a.out_reg_misses, b.out_reg_misses);
	EXPECT_EQ(a.out_reg_hits, b.out_reg_hits);
	EXPECT_EQ(val(0, 1, 0), recvp(&self->b, 1)[0]);
	EXPECT_EQ(val(0, 1, 1023), recvp(&self->b, 1)[1023]);
	EXPECT_EQ(POISON, recvp(&self->b, 2)[0]);
	EXPECT_EQ(POISON, recvp(&self->b, 2)[1023]);
	EXPECT_EQ(val(0, 3, 5), recvp(&self->b, 3)[5]);

	/* unfused: one collective per op, their buffers pinned (cached) */
	ASSERT_EQ(0, group_call(self->fd, self->comm, self->ops, NOPS,
				COLL_GROUP_F_NOFUSE));
	ASSERT_EQ(0, st_info(self->fd, &a));
	EXPECT_EQ(b.out_ops_total + NOPS, a.out_ops_total);
	EXPECT_LT(b.out_reg_misses + b.out_reg_hits,
		  a.out_reg_misses + a.out_reg_hits);
}

/* ---- several ranks ---------------------------------------------------- */

enum { S_FUSED, S_UNFUSED, S_DISAGREE, S_KILLED, S_MEETS_EAGER };

struct gshared {
	struct st_oob oob;
	uint8_t id[COLL_ID_BYTES];
	int scenario;
	int n;
	int in_group;		/* ranks about to call the long group */
	int result[COLL_ST_MAX_RANKS];
	int64_t t_end[COLL_ST_MAX_RANKS];	/* ns, when the call returned */
};

static int rank_killed(int fd, uint32_t comm, int rank, struct gshared *sh)
{
	size_t bytes = (size_t)KILL_MB << 20;
	struct coll_op ops[KILL_OPS];
	int32_t *buf = st_map(bytes);
	int k;

	if (!buf)
		return 40;
	memset(buf, 1, bytes);
	for (k = 0; k < KILL_OPS; k++)
		ops[k] = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0,
			       buf, buf, bytes / sizeof(int32_t));
	__atomic_add_fetch(&sh->in_group, 1, __ATOMIC_ACQ_REL);
	sh->result[rank] = group_call(fd, comm, ops, KILL_OPS, 0);
	sh->t_end[rank] = st_now_ns();
	if (rank == 1)
		return 41;	/* it should have been killed */
	return sh->result[rank] == -ECONNRESET ? 0 : 42;
}

/*
 * The other ranks call a small blocking AllReduce (the eager path) while
 * the last rank, 200 ms later, puts the same AllReduce in a group: a group
 * never matches a slot (nor a slot's caller the group's task, had the
 * group come first), so every rank gets EPROTO with nothing written, and
 * the next collective, the same for all, is right.
 */
static int rank_meets_eager(int fd, uint32_t comm, int rank,
			    struct gshared *sh)
{
	int32_t send[2] = { rank + 1, 10 * (rank + 1) }, recv[2], want[2];
	struct coll_op op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM,
				  0, send, recv, 2);
	int r, round;

	want[0] = sh->n * (sh->n + 1) / 2;
	want[1] = 10 * want[0];
	for (round = 0; round < 2; round++) {
		recv[0] = recv[1] = POISON;
		if (st_oob_barrier(&sh->oob, sh->n, RANKS_MS))
			return 50;
		if (round == 0 && rank == sh->n - 1) {
			st_sleep_ms(200);	/* the others are in the slot */
			r = group_call(fd, comm, &op, 1, 0);
		} else {
			r = st_submit(fd, &op);
		}
		if (r != (round ? 0 : -EPROTO)) {
			st_log("rank %d round %d: %s", rank, round,
			       st_errname(r));
			return 51;
		}
		if (round ? recv[0] != want[0] || recv[1] != want[1] :
			    recv[0] != POISON || recv[1] != POISON) {
			st_log("rank %d round %d: %d %d", rank, round,
			       recv[0], recv[1]);
			return 52;
		}
	}
	close(fd);
	return 0;
}

static int rank_main(int rank, void *arg)
{
	struct gshared *sh = arg;
	struct coll_op ops[NOPS];
	struct gbufs b = { 0 };
	uint32_t comm, flags = sh->scenario == S_UNFUSED ?
			       COLL_GROUP_F_NOFUSE : 0;
	int fd = st_dev_open(), r, round, ret = 0;

	if (fd < 0)
		return 10;
	r = st_comm_init(fd, sh->n, rank, sh->id, JOIN_MS, &comm);
	if (r) {
		st_log("rank %d: COLL_COMM_INIT: %s", rank, st_errname(r));
		return 11;
	}
	if (sh->scenario == S_KILLED)
		return rank_killed(fd, comm, rank, sh);
	if (sh->scenario == S_MEETS_EAGER)
		return rank_meets_eager(fd, comm, rank, sh);
	if (gbufs_alloc(&b))
		return 12;
	/*
	 * Rounds 0 and 1 the same group, 2 and 3 one of half its ops: a fused
	 * bucket's kernel buffer is kept by the descriptor for the next group
	 * of the same size (round 1, 3) and replaced for another (round 2).
	 */
	for (round = 0; round < 4 && !ret; round++) {
		bool differ = sh->scenario == S_DISAGREE && round == 1;
		int nops = round < 2 ? NOPS : NOPS / 2;

		gen = round;
		group_fill(&b, ops, nops, comm, rank);
		if (differ && rank == sh->n - 1)
			ops[nops - 3].count--;
		r = group_call(fd, comm, ops, nops, flags);
		sh->result[rank] = r;
		if (r != (differ ? -EPROTO : 0)) {
			st_log("rank %d round %d: COLL_GROUP: %s", rank, round,
			       st_errname(r));
			ret = 20;
		} else if (group_check(&b, nops, differ ? 0 : sh->n, rank,
				       differ ? "after EPROTO" : "group")) {
			ret = 21;
		}
		if (st_oob_barrier(&sh->oob, sh->n, RANKS_MS))
			ret = ret ? ret : 22;
	}
	gbufs_free(&b);
	close(fd);
	return ret;
}

static void run_ranks(struct __test_metadata *_metadata, int n, int scenario)
{
	struct gshared *sh = st_shared(sizeof(*sh));
	struct st_ranks rk;
	int i;

	ASSERT_NE(NULL, sh);
	sh->n = n;
	sh->scenario = scenario;
	st_random_id(sh->id);
	ASSERT_EQ(0, st_ranks_spawn(&rk, n, rank_main, sh));
	EXPECT_EQ(0, st_ranks_wait(&rk, RANKS_MS, 10000));
	for (i = 0; i < n; i++)
		EXPECT_TRUE(rk.done[i] && WIFEXITED(rk.status[i]) &&
			    !WEXITSTATUS(rk.status[i]))
			TH_LOG("rank %d: status %#x", i, rk.status[i]);
	munmap(sh, sizeof(*sh));
}

FIXTURE(ranks) {
	int unused;
};

FIXTURE_VARIANT(ranks) {
	int n;
};

FIXTURE_VARIANT_ADD(ranks, two) { .n = 2 };
FIXTURE_VARIANT_ADD(ranks, three) { .n = 3 };

FIXTURE_SETUP(ranks)
{
	int fd = st_dev_open();

	if (fd < 0)
		SKIP(return, "cannot open %s: %s", st_dev_path(),
		     strerror(errno));
	close(fd);
}

FIXTURE_TEARDOWN(ranks)
{
}

TEST_F_TIMEOUT(ranks, fused, 180)
{
	run_ranks(_metadata, variant->n, S_FUSED);
}

TEST_F_TIMEOUT(ranks, unfused, 180)
{
	run_ranks(_metadata, variant->n, S_UNFUSED);
}

TEST_F_TIMEOUT(ranks, disagree, 180)
{
	run_ranks(_metadata, variant->n, S_DISAGREE);
}

TEST_F_TIMEOUT(ranks, meets_eager, 60)
{
	run_ranks(_metadata, variant->n, S_MEETS_EAGER);
}

/* Rank 1 of 2 killed in the middle of a long group. */
FIXTURE(kill) {
	int unused;
};

FIXTURE_SETUP(kill)
{
	int fd = st_dev_open();

	if (fd < 0)
		SKIP(return, "cannot open %s: %s", st_dev_path(),
		     strerror(errno));
	close(fd);
}

FIXTURE_TEARDOWN(kill)
{
}

TEST_F_TIMEOUT(kill, rank_in_group, 180)
{
	struct gshared *sh = st_shared(sizeof(*sh));
	struct coll_info info, want;
	struct st_ranks rk;
	int64_t t_kill;

	if (_metadata->skip)
		return;
	ASSERT_NE(NULL, sh);
	sh->n = 2;
	sh->scenario = S_KILLED;
	st_random_id(sh->id);
	ASSERT_EQ(0, st_ranks_spawn(&rk, 2, rank_main, sh));
	ASSERT_EQ(0, st_wait_ge(&sh->in_group, 2, RANKS_MS));
	st_sleep_ms(300);
	t_kill = st_now_ns();
	kill(rk.pid[1], SIGKILL);
	st_ranks_wait(&rk, RANKS_MS, 10000);
	EXPECT_TRUE(WIFSIGNALED(rk.status[1]));
	EXPECT_TRUE(WIFEXITED(rk.status[0]) && !WEXITSTATUS(rk.status[0]))
		TH_LOG("rank 0: %s", st_errname(sh->result[0]));
	EXPECT_EQ(-ECONNRESET, sh->result[0]);
	EXPECT_LT(sh->t_end[0] - t_kill, 10000000000LL);
	TH_LOG("rank 0 failed %.0f ms after the kill",
	       (sh->t_end[0] - t_kill) / 1e6);
	/* both descriptors closed: nothing of theirs pinned */
	memset(&want, 0, sizeof(want));
	EXPECT_EQ(0, st_info_settle(&want, &info, 5000))
		TH_LOG("pinned pages %llu, comms %llu, ops %llu",
		       (unsigned long long)info.out_pinned_pages,
		       (unsigned long long)info.out_comms,
		       (unsigned long long)info.out_ops);
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
