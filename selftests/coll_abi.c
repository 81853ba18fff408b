// SPDX-License-Identifier: GPL-2.0
/*
 * coll_abi: the ioctl ABI of /dev/collective, with raw ioctls (no library),
 * in the style of tools/testing/selftests/iommu: for every ioctl a short
 * size gives EINVAL, a longer one with a non-zero tail E2BIG and with a
 * zero tail works as normal; then one error path per subtest.  After every
 * failing call COLL_INFO must show the same pinned pages, communicators
 * and operations in flight as before it (a failed ioctl changes nothing),
 * and the buffers it was given must be untouched.
 *
 * Fixture "abi": one descriptor and a 1-rank communicator.
 * Fixture "pair": a 2-rank communicator whose rank 1 is a forked peer that
 * runs the collectives the test sends it through a pipe; each pair test
 * ends with a correct AllReduce through both ranks, to show that the
 * failures before it left the communicator usable.
 */
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "coll_selftest.h"
#include "kselftest_harness.h"

#define JOIN_MS		10000
#define PEER_MS		15000
#define NELEM		1024
#define POISON		0xa5

/* The 6.1 harness runs the test body even when the setup SKIPped. */
#define ABI_TEST(fixture, name)						\
	static void fixture##_body_##name(				\
		struct __test_metadata *_metadata,			\
		FIXTURE_DATA(fixture) *self);				\
	TEST_F(fixture, name)						\
	{								\
		if (_metadata->skip)					\
			return;						\
		fixture##_body_##name(_metadata, self);			\
	}								\
	static void fixture##_body_##name(				\
		struct __test_metadata *_metadata,			\
		FIXTURE_DATA(fixture) *self)

/*
 * @call (an expression giving 0 or -errno) must fail with @err, and the
 * module's counters must come back to what they were before it.
 */
#define ASSERT_FAILS(err, call) do {					\
	struct coll_info __b, __a;					\
	int __r;							\
									\
	ASSERT_EQ(0, st_info_fresh(&__b));				\
	__r = (call);							\
	ASSERT_EQ(-(err), __r)						\
		TH_LOG("%s: got %s, want %s", #call, st_errname(__r),	\
		       st_errname(err));				\
	ASSERT_EQ(0, st_info_settle(&__b, &__a, 1000))			\
		TH_LOG("%s changed the counters: pinned %llu->%llu comms %llu->%llu ops %llu->%llu", \
		       #call,						\
		       (unsigned long long)__b.out_pinned_pages,	\
		       (unsigned long long)__a.out_pinned_pages,	\
		       (unsigned long long)__b.out_comms,		\
		       (unsigned long long)__a.out_comms,		\
		       (unsigned long long)__b.out_ops,			\
		       (unsigned long long)__a.out_ops);		\
} while (0)

#define ASSERT_OK(call) do {						\
	int __r = (call);						\
									\
	ASSERT_EQ(0, __r) TH_LOG("%s: %s", #call, st_errname(__r));	\
} while (0)

/* A nonzero tail after the struct the kernel knows. */
#define BIG(type) struct { type s; __u64 tail[2]; }

/* ---- buffers ------------------------------------------------------------ */

struct bufs {
	int32_t *send;
	int32_t *recv;
	size_t n;
};

static int bufs_init(struct bufs *b, size_t n)
{
	size_t i;

	b->n = n;
	b->send = st_map(n * 4 + 4096);
	b->recv = st_map(n * 4 + 4096);
	if (!b->send || !b->recv)
		return -1;
	for (i = 0; i < n; i++)
		b->send[i] = i + 1;
	memset(b->recv, POISON, n * 4);
	return 0;
}

static void bufs_free(struct bufs *b)
{
	if (b->send)
		munmap(b->send, b->n * 4 + 4096);
	if (b->recv)
		munmap(b->recv, b->n * 4 + 4096);
	memset(b, 0, sizeof(*b));
}

static bool untouched(const void *p, size_t bytes)
{
	return st_find_not(p, POISON, bytes) == bytes;
}

/* A mapping with nothing behind it any more. */
static void *unmapped_address(void)
{
	void *p = st_map(4 * 4096);

	if (!p)
		return NULL;
	munmap(p, 4 * 4096);
	return p;
}

/* ---- fixture: one descriptor, a 1-rank communicator ------------------- */

FIXTURE(abi) {
	int fd;
	uint32_t comm;
	uint8_t id[COLL_ID_BYTES];
	struct bufs b;
};

FIXTURE_SETUP(abi)
{
	int fd = st_dev_open();

	if (fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-fd));
	self->fd = fd;
	st_random_id(self->id);
	ASSERT_OK(st_comm_init(fd, 1, 0, self->id, JOIN_MS, &self->comm));
	ASSERT_EQ(0, bufs_init(&self->b, NELEM));
}

FIXTURE_TEARDOWN(abi)
{
	if (self->fd <= 0)
		return;
	bufs_free(&self->b);
	st_comm_destroy(self->fd, self->comm);
	close(self->fd);
}

static struct coll_op ar_op(FIXTURE_DATA(abi) *self)
{
	return st_op(self->comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0,
		     self->b.send, self->b.recv, self->b.n);
}

/* recv of a 1-rank int32 SUM AllReduce must equal send. */
static bool ar_result_ok(const struct bufs *b)
{
	return !memcmp(b->send, b->recv, b->n * 4);
}

/* ---- COLL_INFO ----------------------------------------------------------- */

ABI_TEST(abi, info_basic)
{
	struct coll_info info;

	ASSERT_OK(st_info(self->fd, &info));
	EXPECT_EQ(COLL_ABI_VERSION, info.out_abi_version);
	EXPECT_EQ(COLL_MAX_RANKS, info.out_max_ranks);
	EXPECT_LE(1, info.out_comms);
	EXPECT_EQ(sizeof(info), info.size);
	EXPECT_EQ(0, info.flags);
}

ABI_TEST(abi, info_size_short)
{
	struct coll_info info = {
		.size = offsetofend(struct coll_info, out_bytes_total) - 1,
	};

	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_INFO, &info));
	info.size = offsetof(struct coll_info, out_bytes_total);
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_INFO, &info));
	info.size = 0;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_INFO, &info));
}

ABI_TEST(abi, info_size_tail_nonzero)
{
	BIG(struct coll_info) big = { .s.size = sizeof(big), .tail = { 0, 1 } };

	ASSERT_FAILS(E2BIG, st_ioctl(self->fd, COLL_INFO, &big));
}

ABI_TEST(abi, info_size_tail_zero)
{
	BIG(struct coll_info) big = { .s.size = sizeof(big) };

	ASSERT_OK(st_ioctl(self->fd, COLL_INFO, &big));
	EXPECT_EQ(COLL_ABI_VERSION, big.s.out_abi_version);
	EXPECT_EQ(COLL_MAX_RANKS, big.s.out_max_ranks);
	EXPECT_EQ(0, big.tail[0]);
	EXPECT_EQ(0, big.tail[1]);
}

ABI_TEST(abi, info_flags)
{
	struct coll_info info = { .size = sizeof(info), .flags = 1 };

	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_INFO, &info));
	info.flags = 1U << 31;
	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_INFO, &info));
}

ABI_TEST(abi, ioctl_bad_arg_pointer)
{
	static const unsigned long cmds[] = {
		COLL_INFO, COLL_COMM_INIT, COLL_COMM_DESTROY, COLL_SUBMIT,
		COLL_WAIT, COLL_TEST,
	};
	void *gone = unmapped_address();
	unsigned int i;

	ASSERT_NE(NULL, gone);
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		ASSERT_FAILS(EFAULT, st_ioctl(self->fd, cmds[i], NULL));
		ASSERT_FAILS(EFAULT, st_ioctl(self->fd, cmds[i], gone));
	}
}

ABI_TEST(abi, ioctl_unknown)
{
	unsigned char junk[256] = { 0 };

	*(__u32 *)junk = sizeof(junk);
	ASSERT_FAILS(ENOTTY, st_ioctl(self->fd, _IO(COLL_TYPE, COLL_CMD_MAP_WAKE + 1), junk));
	ASSERT_FAILS(ENOTTY, st_ioctl(self->fd, _IO(COLL_TYPE, 0x80), junk));
	ASSERT_FAILS(ENOTTY, st_ioctl(self->fd, _IO(COLL_TYPE, 0xff), junk));
	ASSERT_FAILS(ENOTTY, st_ioctl(self->fd, _IO(COLL_TYPE + 1, COLL_CMD_INFO), junk));
	ASSERT_FAILS(ENOTTY, st_ioctl(self->fd, _IO(';', COLL_CMD_INFO), junk));
	/* iommufd's IOMMU_DESTROY, which COLL_INFO used to be */
	ASSERT_FAILS(ENOTTY, st_ioctl(self->fd, _IO(';', 0x80), junk));
}

/* Commands are _IO() numbers: the same number with a size/direction is not one. */
ABI_TEST(abi, ioctl_wrong_encoding)
{
	struct coll_info info = { .size = sizeof(info) };

	ASSERT_FAILS(ENOTTY, st_ioctl(self->fd, _IOWR(COLL_TYPE, COLL_CMD_INFO,
						     struct coll_info), &info));
	ASSERT_FAILS(ENOTTY, st_ioctl(self->fd, _IOR(COLL_TYPE, COLL_CMD_INFO,
						    struct coll_info), &info));
}

/* ---- COLL_COMM_INIT ---------------------------------------------------- */

static struct coll_comm_init ci_one(void)
{
	struct coll_comm_init ci = {
		.size = sizeof(ci), .nranks = 1, .rank = 0, .timeout_ms = JOIN_MS,
	};

	st_random_id(ci.id);
	return ci;
}

ABI_TEST(abi, comm_init_one_rank)
{
	struct coll_comm_init ci = ci_one();
	struct coll_info before, after;
	int64_t t0;

	ASSERT_OK(st_info(self->fd, &before));
	ci.timeout_ms = 0;			/* the module's default */
	t0 = st_now_ns();
	ASSERT_OK(st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	EXPECT_GT(500000000LL, st_now_ns() - t0);
	EXPECT_NE(self->comm, ci.out_comm);
	ASSERT_OK(st_info(self->fd, &after));
	EXPECT_EQ(before.out_comms + 1, after.out_comms);
	ASSERT_OK(st_comm_destroy(self->fd, ci.out_comm));
	ASSERT_EQ(0, st_info_settle(&before, &after, 1000));
}

ABI_TEST(abi, comm_init_size_short)
{
	struct coll_comm_init ci = ci_one();

	ci.size = offsetofend(struct coll_comm_init, __reserved) - 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	ci.size = offsetof(struct coll_comm_init, __reserved);
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	ci.size = 0;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
}

ABI_TEST(abi, comm_init_size_tail_nonzero)
{
	BIG(struct coll_comm_init) big = { .s = ci_one(), .tail = { 1, 0 } };

	big.s.size = sizeof(big);
	ASSERT_FAILS(E2BIG, st_ioctl(self->fd, COLL_COMM_INIT, &big));
}

ABI_TEST(abi, comm_init_size_tail_zero)
{
	BIG(struct coll_comm_init) big = { .s = ci_one() };

	big.s.size = sizeof(big);
	ASSERT_OK(st_ioctl(self->fd, COLL_COMM_INIT, &big));
	EXPECT_EQ(0, big.tail[0]);
	EXPECT_EQ(0, big.tail[1]);
	ASSERT_OK(st_comm_destroy(self->fd, big.s.out_comm));
}

ABI_TEST(abi, comm_init_flags)
{
	struct coll_comm_init ci = ci_one();

	ci.flags = (COLL_COMM_F_ALL | COLL_COMM_F_MAP) + 1;	/* unknown */
	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	ci.flags = COLL_COMM_F_TCP;		/* only with hosts */
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
}

ABI_TEST(abi, comm_init_reserved)
{
	struct coll_comm_init ci = ci_one();

	ci.__reserved = 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
}

ABI_TEST(abi, comm_init_nranks_zero)
{
	struct coll_comm_init ci = ci_one();

	ci.nranks = 0;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
}

ABI_TEST(abi, comm_init_nranks_too_big)
{
	struct coll_comm_init ci = ci_one();

	ci.nranks = COLL_MAX_RANKS + 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	ci.nranks = 0xffffffff;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
}

/* COLL_MAX_RANKS itself is accepted: the join waits, then times out. */
ABI_TEST(abi, comm_init_nranks_max)
{
	struct coll_comm_init ci = ci_one();

	ci.nranks = COLL_MAX_RANKS;
	ci.rank = COLL_MAX_RANKS - 1;
	ci.timeout_ms = 200;
	ASSERT_FAILS(ETIMEDOUT, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
}

ABI_TEST(abi, comm_init_rank_out_of_range)
{
	struct coll_comm_init ci = ci_one();

	ci.nranks = 2;
	ci.rank = 2;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	ci.rank = 0xffffffff;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
}

/* Hosts without their tables, or tables without hosts. */
ABI_TEST(abi, comm_init_nhosts)
{
	struct coll_comm_init ci = ci_one();

	ci.nhosts = 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	ci.nhosts = COLL_MAX_HOSTS + 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
}

ABI_TEST(abi, comm_init_hosts_uptr)
{
	struct coll_comm_init ci = ci_one();

	ci.hosts_uptr = (uintptr_t)&ci;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	ci.hosts_uptr = 0;
	ci.rank_hosts_uptr = (uintptr_t)&ci;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
}

/*
 * Host tables that do not hold together: an unreadable table, a rank on a
 * host that does not exist, a host without ranks, two hosts at one
 * address, reserved bytes, a zero port: EINVAL or EFAULT, nothing joined.
 */
ABI_TEST(abi, comm_init_host_tables)
{
	struct coll_host hosts[2] = {
		{ .addr = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 }, .port = 1 },
		{ .addr = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 }, .port = 1 },
	};
	uint32_t rank_hosts[2] = { 0, 1 };
	struct coll_comm_init ci = ci_one();

	ci.nranks = 2;
	ci.nhosts = 2;
	ci.hosts_uptr = (uintptr_t)hosts;
	ci.rank_hosts_uptr = (uintptr_t)unmapped_address();
	ASSERT_FAILS(EFAULT, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	ci.rank_hosts_uptr = (uintptr_t)rank_hosts;
	rank_hosts[1] = 2;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	rank_hosts[1] = 0;			/* host 1 has no rank */
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	rank_hosts[1] = 1;
	hosts[1].addr[15] = 1;			/* host 1 is host 0 */
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	hosts[1].addr[15] = 2;
	hosts[1].__reserved = 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	hosts[1].__reserved = 0;
	hosts[1].port = 0;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	hosts[1].port = 1;
	ci.flags = COLL_COMM_F_TCP | COLL_COMM_F_REQUIRE_RDMA;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	ci.nhosts = 3;				/* more hosts than ranks */
	ci.flags = 0;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
}

/* The fixture's 1-rank communicator is full. */
ABI_TEST(abi, comm_init_rank_taken_full)
{
	uint32_t c;
	int fd2 = st_dev_open();

	ASSERT_LE(0, fd2);
	ASSERT_FAILS(EBUSY, st_comm_init(self->fd, 1, 0, self->id, JOIN_MS, &c));
	ASSERT_FAILS(EBUSY, st_comm_init(fd2, 1, 0, self->id, JOIN_MS, &c));
	close(fd2);
}

/* A process that joins a communicator in a child, for the join tests. */
struct joiner {
	uint8_t id[COLL_ID_BYTES];
	uint32_t nranks, rank, timeout_ms;
	int close_fd;
	unsigned int hold_ms;	/* stay a member this long after joining */
};

/* Exit status: the errno of the join (0: joined). */
static int joiner_main(int unused, void *arg)
{
	const struct joiner *j = arg;
	uint32_t comm;
	int fd, r;

	(void)unused;
	if (j->close_fd > 0)
		close(j->close_fd);
	fd = st_dev_open();
	if (fd < 0)
		return 100;
	r = st_comm_init(fd, j->nranks, j->rank, j->id, j->timeout_ms, &comm);
	if (!r && j->hold_ms)
		st_sleep_ms(j->hold_ms);
	return -r;
}

/* Wait until COLL_INFO shows more than @base communicators. */
static int wait_comms_above(uint64_t base, int timeout_ms)
{
	int64_t end = st_now_ns() + (int64_t)timeout_ms * 1000000LL;
	struct coll_info info;

	while (!st_info_fresh(&info) && info.out_comms <= base) {
		if (st_now_ns() > end)
			return -1;
		st_sleep_ms(5);
	}
	return 0;
}

static int joiner_status(struct st_ranks *rk)
{
	if (st_ranks_wait(rk, 20000, 20000) && rk->killed[0])
		return -1;
	if (!WIFEXITED(rk->status[0]))
		return -2;
	return WEXITSTATUS(rk->status[0]);
}

/* Rank 0 of a 2-rank communicator is joining: another rank 0 is EBUSY. */
ABI_TEST(abi, comm_init_rank_taken_joining)
{
	struct joiner j = { .nranks = 2, .rank = 0, .timeout_ms = JOIN_MS,
			    .close_fd = self->fd };
	struct coll_info base;
	struct st_ranks rk;
	uint32_t c;

	st_random_id(j.id);
	ASSERT_OK(st_info(self->fd, &base));
	ASSERT_OK(st_ranks_spawn(&rk, 1, joiner_main, &j));
	ASSERT_EQ(0, wait_comms_above(base.out_comms, 5000))
		TH_LOG("the child's join never showed in out_comms");
	ASSERT_FAILS(EBUSY, st_comm_init(self->fd, 2, 0, j.id, JOIN_MS, &c));
	/* ...and the failed attempt did not spoil the communicator. */
	ASSERT_OK(st_comm_init(self->fd, 2, 1, j.id, JOIN_MS, &c));
	ASSERT_EQ(0, joiner_status(&rk));
	ASSERT_OK(st_comm_destroy(self->fd, c));
}

/* The same id with a different nranks: EPROTO, and the first one stays. */
ABI_TEST(abi, comm_init_nranks_mismatch)
{
	struct joiner j = { .nranks = 2, .rank = 0, .timeout_ms = JOIN_MS,
			    .close_fd = self->fd };
	struct coll_info base;
	struct st_ranks rk;
	uint32_t c;

	st_random_id(j.id);
	ASSERT_OK(st_info(self->fd, &base));
	ASSERT_OK(st_ranks_spawn(&rk, 1, joiner_main, &j));
	ASSERT_EQ(0, wait_comms_above(base.out_comms, 5000))
		TH_LOG("the child's join never showed in out_comms");
	ASSERT_FAILS(EPROTO, st_comm_init(self->fd, 3, 1, j.id, JOIN_MS, &c));
	ASSERT_FAILS(EPROTO, st_comm_init(self->fd, 1, 0, j.id, JOIN_MS, &c));
	ASSERT_OK(st_comm_init(self->fd, 2, 1, j.id, JOIN_MS, &c));
	ASSERT_EQ(0, joiner_status(&rk));
	ASSERT_OK(st_comm_destroy(self->fd, c));
}

/* Two ranks with different ids never meet: both time out, nothing stays. */
ABI_TEST(abi, comm_init_wrong_id)
{
	struct joiner j = { .nranks = 2, .rank = 0, .timeout_ms = 300,
			    .close_fd = self->fd };
	uint8_t other[COLL_ID_BYTES];
	struct coll_info base, now;
	struct st_ranks rk;
	int64_t t0, dt;
	uint32_t c;

	st_random_id(j.id);
	st_random_id(other);
	ASSERT_OK(st_info(self->fd, &base));
	ASSERT_OK(st_ranks_spawn(&rk, 1, joiner_main, &j));
	t0 = st_now_ns();
	ASSERT_EQ(-ETIMEDOUT, st_comm_init(self->fd, 2, 1, other, 300, &c));
	dt = st_now_ns() - t0;
	EXPECT_LE(250000000LL, dt);
	EXPECT_GT(3000000000LL, dt);
	ASSERT_EQ(ETIMEDOUT, joiner_status(&rk));
	ASSERT_EQ(0, st_info_settle(&base, &now, 1000))
		TH_LOG("comms %llu -> %llu", (unsigned long long)base.out_comms,
		       (unsigned long long)now.out_comms);
}

ABI_TEST(abi, comm_init_timeout)
{
	struct coll_comm_init ci = ci_one();
	int64_t t0, dt;

	ci.nranks = 2;
	ci.timeout_ms = 300;
	t0 = st_now_ns();
	ASSERT_FAILS(ETIMEDOUT, st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	dt = st_now_ns() - t0;
	EXPECT_LE(250000000LL, dt);
	EXPECT_GT(3000000000LL, dt);
}

/* After a timed-out join the rank is free again. */
ABI_TEST(abi, comm_init_after_timeout)
{
	struct joiner j = { .nranks = 2, .rank = 1, .timeout_ms = JOIN_MS,
			    .close_fd = self->fd };
	struct st_ranks rk;
	uint32_t c;

	st_random_id(j.id);
	ASSERT_FAILS(ETIMEDOUT, st_comm_init(self->fd, 2, 0, j.id, 200, &c));
	ASSERT_OK(st_ranks_spawn(&rk, 1, joiner_main, &j));
	ASSERT_OK(st_comm_init(self->fd, 2, 0, j.id, JOIN_MS, &c));
	ASSERT_EQ(0, joiner_status(&rk));
	ASSERT_OK(st_comm_destroy(self->fd, c));
}

/* One descriptor may be a member of several communicators. */
ABI_TEST(abi, comm_init_several_on_one_fd)
{
	struct coll_comm_init a = ci_one(), b = ci_one();
	struct coll_op op;

	ASSERT_OK(st_ioctl(self->fd, COLL_COMM_INIT, &a));
	ASSERT_OK(st_ioctl(self->fd, COLL_COMM_INIT, &b));
	EXPECT_NE(a.out_comm, b.out_comm);
	EXPECT_NE(self->comm, a.out_comm);
	EXPECT_NE(self->comm, b.out_comm);
	op = ar_op(self);
	op.comm = a.out_comm;
	ASSERT_OK(st_submit(self->fd, &op));
	EXPECT_TRUE(ar_result_ok(&self->b));
	memset(self->b.recv, POISON, NELEM * 4);
	op.comm = b.out_comm;
	ASSERT_OK(st_submit(self->fd, &op));
	EXPECT_TRUE(ar_result_ok(&self->b));
	ASSERT_OK(st_comm_destroy(self->fd, a.out_comm));
	ASSERT_OK(st_comm_destroy(self->fd, b.out_comm));
}

/* Once every member left, the id can make a new communicator. */
ABI_TEST(abi, comm_init_id_reuse)
{
	struct coll_comm_init ci = ci_one();
	struct coll_comm_init again;

	again = ci;
	ASSERT_OK(st_ioctl(self->fd, COLL_COMM_INIT, &ci));
	ASSERT_OK(st_comm_destroy(self->fd, ci.out_comm));
	ASSERT_OK(st_ioctl(self->fd, COLL_COMM_INIT, &again));
	ASSERT_OK(st_comm_destroy(self->fd, again.out_comm));
}

/* ---- COLL_COMM_DESTROY --------------------------------------------------- */

ABI_TEST(abi, comm_destroy_size_short)
{
	struct coll_comm_destroy cd = { .size = sizeof(cd) - 1,
					.comm = self->comm };

	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_DESTROY, &cd));
	cd.size = offsetof(struct coll_comm_destroy, __reserved);
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_DESTROY, &cd));
	cd.size = 0;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_DESTROY, &cd));
	/* still there */
	ASSERT_OK(st_comm_destroy(self->fd, self->comm));
}

ABI_TEST(abi, comm_destroy_size_tail_nonzero)
{
	BIG(struct coll_comm_destroy) big = {
		.s = { .size = sizeof(big), .comm = self->comm },
		.tail = { 0, 1 },
	};

	ASSERT_FAILS(E2BIG, st_ioctl(self->fd, COLL_COMM_DESTROY, &big));
	ASSERT_OK(st_comm_destroy(self->fd, self->comm));
}

ABI_TEST(abi, comm_destroy_size_tail_zero)
{
	BIG(struct coll_comm_destroy) big = {
		.s = { .size = sizeof(big), .comm = self->comm },
	};
	struct coll_info before, after;

	ASSERT_OK(st_info(self->fd, &before));
	ASSERT_OK(st_ioctl(self->fd, COLL_COMM_DESTROY, &big));
	before.out_comms--;
	ASSERT_EQ(0, st_info_settle(&before, &after, 1000));
	ASSERT_FAILS(ENOENT, st_comm_destroy(self->fd, self->comm));
}

ABI_TEST(abi, comm_destroy_flags)
{
	struct coll_comm_destroy cd = { .size = sizeof(cd), .flags = 1,
					.comm = self->comm };

	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_COMM_DESTROY, &cd));
	ASSERT_OK(st_comm_destroy(self->fd, self->comm));
}

ABI_TEST(abi, comm_destroy_reserved)
{
	struct coll_comm_destroy cd = { .size = sizeof(cd), .comm = self->comm,
					.__reserved = 1 };

	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_DESTROY, &cd));
	ASSERT_OK(st_comm_destroy(self->fd, self->comm));
}

ABI_TEST(abi, comm_destroy_unknown)
{
	ASSERT_FAILS(ENOENT, st_comm_destroy(self->fd, self->comm + 1000));
	ASSERT_FAILS(ENOENT, st_comm_destroy(self->fd, 0xffffffff));
}

ABI_TEST(abi, comm_destroy_twice)
{
	ASSERT_OK(st_comm_destroy(self->fd, self->comm));
	ASSERT_FAILS(ENOENT, st_comm_destroy(self->fd, self->comm));
}

/* Handles belong to the descriptor that made them. */
ABI_TEST(abi, comm_handle_other_fd)
{
	struct coll_op op = ar_op(self);
	int fd2 = st_dev_open();

	ASSERT_LE(0, fd2);
	ASSERT_FAILS(ENOENT, st_submit(fd2, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
	ASSERT_FAILS(ENOENT, st_comm_destroy(fd2, self->comm));
	close(fd2);
	ASSERT_OK(st_submit(self->fd, &op));
	EXPECT_TRUE(ar_result_ok(&self->b));
}

/* ---- COLL_SUBMIT ----------------------------------------------------------- */

/*
 * On the task path (an algorithm asked for), the call's two buffers (a
 * page each) stay pinned in the descriptor's registration cache, unless
 * reg_cache is 0; a second call finds them there and pins nothing more.
 */
ABI_TEST(abi, submit_allreduce)
{
	struct coll_op op = ar_op(self);
	struct coll_info before, after, want;
	long cache = st_param_get("reg_cache");

	op.algo = COLL_ALGO_DIRECT;
	ASSERT_LE(0, cache);
	ASSERT_OK(st_info(self->fd, &before));
	ASSERT_OK(st_submit(self->fd, &op));
	EXPECT_TRUE(ar_result_ok(&self->b));
	ASSERT_OK(st_info(self->fd, &after));
	EXPECT_EQ(before.out_ops_total + 1, after.out_ops_total);
	EXPECT_LE(before.out_bytes_total + NELEM * 4, after.out_bytes_total);
	want = before;
	want.out_pinned_pages += cache ? 2 : 0;
	EXPECT_EQ(0, st_info_settle(&want, &after, 1000));
	memset(self->b.recv, POISON, NELEM * 4);
	ASSERT_OK(st_submit(self->fd, &op));
	EXPECT_TRUE(ar_result_ok(&self->b));
	EXPECT_EQ(0, st_info_settle(&want, &after, 1000));
	EXPECT_EQ(before.out_reg_hits + (cache ? 2 : 0), after.out_reg_hits);
}

/*
 * A small blocking call with COLL_ALGO_AUTO goes through the eager slots
 * (module parameter slot_bytes): it counts as a collective, and pins
 * nothing, neither at the first call nor later.
 */
ABI_TEST(abi, submit_allreduce_eager)
{
	struct coll_op op = ar_op(self);
	struct coll_info before, after;
	long slot = st_param_get("slot_bytes");
	int i;

	ASSERT_LE(0, slot);
	if ((size_t)slot < 2 * NELEM * 4)
		SKIP(return, "slot_bytes %ld: 8 KiB calls take the task path",
		     slot);
	ASSERT_OK(st_info(self->fd, &before));
	for (i = 0; i < 3; i++) {
		memset(self->b.recv, POISON, NELEM * 4);
		ASSERT_OK(st_submit(self->fd, &op));
		EXPECT_TRUE(ar_result_ok(&self->b));
	}
	ASSERT_OK(st_info(self->fd, &after));
	EXPECT_EQ(before.out_ops_total + 3, after.out_ops_total);
	EXPECT_EQ(before.out_ops, after.out_ops);
	EXPECT_EQ(before.out_pinned_pages, after.out_pinned_pages);
	EXPECT_EQ(before.out_reg_hits, after.out_reg_hits);
	EXPECT_EQ(before.out_reg_misses, after.out_reg_misses);
}

/* slot_bytes 0 turns the eager path off at once: small calls make plans. */
ABI_TEST(abi, submit_slot_bytes_zero)
{
	struct coll_op op = ar_op(self), bar = st_op(self->comm, COLL_BARRIER,
						    0, 0, 0, NULL, NULL, 0);
	struct coll_info before, after;
	long slot = st_param_get("slot_bytes");

	ASSERT_LE(0, slot);
	ASSERT_EQ(0, st_param_set("slot_bytes", 0));
	ASSERT_OK(st_info(self->fd, &before));
	EXPECT_EQ(0, st_submit(self->fd, &bar));
	EXPECT_EQ(0, st_submit(self->fd, &op));
	EXPECT_TRUE(ar_result_ok(&self->b));
	ASSERT_OK(st_info(self->fd, &after));
	ASSERT_EQ(0, st_param_set("slot_bytes", slot));
	/* a Barrier's plan and an AllReduce's: the task path ran both */
	EXPECT_EQ(before.out_plans + 2, after.out_plans);
	EXPECT_EQ(before.out_ops_total + 2, after.out_ops_total);
}

ABI_TEST(abi, submit_size_short)
{
	struct coll_op op = ar_op(self);

	op.size = sizeof(op) - 1;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	op.size = offsetof(struct coll_op, __reserved);
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	op.size = 0;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_size_tail_nonzero)
{
	BIG(struct coll_op) big = { .s = ar_op(self), .tail = { 1, 1 } };

	big.s.size = sizeof(big);
	ASSERT_FAILS(E2BIG, st_submit(self->fd, &big.s));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_size_tail_zero)
{
	BIG(struct coll_op) big = { .s = ar_op(self) };

	big.s.size = sizeof(big);
	ASSERT_OK(st_submit(self->fd, &big.s));
	EXPECT_TRUE(ar_result_ok(&self->b));
	EXPECT_EQ(0, big.tail[0]);
	EXPECT_EQ(0, big.tail[1]);
}

ABI_TEST(abi, submit_flags_unknown)
{
	struct coll_op op = ar_op(self);

	op.flags = COLL_OP_F_ALL + 1;		/* == (1 << 1) */
	ASSERT_FAILS(EOPNOTSUPP, st_submit(self->fd, &op));
	op.flags = 1U << 31 | COLL_OP_F_NONBLOCK;
	ASSERT_FAILS(EOPNOTSUPP, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_reserved)
{
	struct coll_op op = ar_op(self);

	op.__reserved = 1;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_unknown_comm)
{
	struct coll_op op = ar_op(self);

	op.comm = self->comm + 1000;
	ASSERT_FAILS(ENOENT, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_unknown_prim)
{
	struct coll_op op = ar_op(self);

	op.prim = COLL_PRIM_MAX;
	ASSERT_FAILS(EOPNOTSUPP, st_submit(self->fd, &op));
	op.prim = 0xffffffff;
	ASSERT_FAILS(EOPNOTSUPP, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_unknown_dtype)
{
	struct coll_op op = ar_op(self);

	op.dtype = COLL_DTYPE_MAX;
	ASSERT_FAILS(EOPNOTSUPP, st_submit(self->fd, &op));
	op.dtype = 0xffffffff;
	ASSERT_FAILS(EOPNOTSUPP, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_unknown_redop)
{
	struct coll_op op = ar_op(self);

	op.redop = COLL_REDOP_MAX;
	ASSERT_FAILS(EOPNOTSUPP, st_submit(self->fd, &op));
	op.redop = 0xffffffff;
	ASSERT_FAILS(EOPNOTSUPP, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_unknown_algo)
{
	struct coll_op op = ar_op(self);

	op.algo = COLL_ALGO_MAX;
	ASSERT_FAILS(EOPNOTSUPP, st_submit(self->fd, &op));
	op.algo = 0xffffffff;
	ASSERT_FAILS(EOPNOTSUPP, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

/* Every algorithm is accepted by every primitive (1 rank). */
ABI_TEST(abi, submit_every_algo)
{
	struct coll_op op = ar_op(self);
	int prim, algo, r;

	for (prim = 0; prim < COLL_PRIM_MAX; prim++) {
		for (algo = 0; algo < COLL_ALGO_MAX; algo++) {
			op = ar_op(self);
			op.prim = prim;
			op.algo = algo;
			if (prim != COLL_ALLREDUCE && prim != COLL_REDUCE &&
			    prim != COLL_REDUCESCATTER)
				op.redop = 0;
			if (prim == COLL_BARRIER) {
				op.sendbuf = op.recvbuf = op.count = 0;
				op.dtype = 0;
			}
			memset(self->b.recv, POISON, NELEM * 4);
			r = st_submit(self->fd, &op);
			ASSERT_EQ(0, r) TH_LOG("prim %d algo %d: %s", prim,
					       algo, st_errname(r));
			if (prim != COLL_BARRIER)
				EXPECT_TRUE(ar_result_ok(&self->b))
					TH_LOG("prim %d algo %d", prim, algo);
		}
	}
}

ABI_TEST(abi, submit_redop_nonreducing)
{
	struct coll_op op = ar_op(self);

	op.prim = COLL_ALLGATHER;
	op.redop = COLL_PROD;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	op.prim = COLL_BROADCAST;
	op.redop = COLL_MAX;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	op = st_op(self->comm, COLL_BARRIER, 0, COLL_AVG, 0, NULL, NULL, 0);
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_root_out_of_range)
{
	struct coll_op op = ar_op(self);

	op.prim = COLL_BROADCAST;
	op.root = 1;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	op.prim = COLL_REDUCE;
	op.root = 0xffffffff;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_barrier)
{
	struct coll_op op = st_op(self->comm, COLL_BARRIER, 0, 0, 0, NULL,
				  NULL, 0);

	ASSERT_OK(st_submit(self->fd, &op));
}

ABI_TEST(abi, submit_barrier_count)
{
	struct coll_op op = st_op(self->comm, COLL_BARRIER, 0, 0, 0, NULL,
				  NULL, 1);

	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
}

ABI_TEST(abi, submit_barrier_sendbuf)
{
	struct coll_op op = st_op(self->comm, COLL_BARRIER, 0, 0, 0,
				  self->b.send, NULL, 0);

	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
}

ABI_TEST(abi, submit_barrier_recvbuf)
{
	struct coll_op op = st_op(self->comm, COLL_BARRIER, 0, 0, 0, NULL,
				  self->b.recv, 0);

	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

/* count 0 moves nothing, and needs no buffers. */
ABI_TEST(abi, submit_count_zero)
{
	struct coll_op op = ar_op(self);

	op.count = 0;
	ASSERT_OK(st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
	op.sendbuf = op.recvbuf = 0;
	ASSERT_OK(st_submit(self->fd, &op));
}

ABI_TEST(abi, submit_efault_low_address)
{
	struct coll_op op = ar_op(self);

	op.sendbuf = 1;
	ASSERT_FAILS(EFAULT, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_efault_kernel_address)
{
	struct coll_op op = ar_op(self);

	op.sendbuf = 0xffff888000000000ULL;
	ASSERT_FAILS(EFAULT, st_submit(self->fd, &op));
	op = ar_op(self);
	op.recvbuf = 0xffffffff81000000ULL;
	ASSERT_FAILS(EFAULT, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_efault_unmapped_recv)
{
	struct coll_op op = ar_op(self);
	void *gone = unmapped_address();

	ASSERT_NE(NULL, gone);
	op.recvbuf = (uintptr_t)gone;
	ASSERT_FAILS(EFAULT, st_submit(self->fd, &op));
}

ABI_TEST(abi, submit_efault_readonly_recv)
{
	struct coll_op op = ar_op(self);
	void *ro = mmap(NULL, NELEM * 4, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);

	ASSERT_NE(MAP_FAILED, ro);
	op.recvbuf = (uintptr_t)ro;
	ASSERT_FAILS(EFAULT, st_submit(self->fd, &op));
	munmap(ro, NELEM * 4);
}

/* The first page of recv is fine, the second is not there: nothing written. */
ABI_TEST(abi, submit_efault_partial)
{
	struct coll_op op = ar_op(self);
	uint8_t *p = st_map(2 * 4096);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, munmap(p + 4096, 4096));
	memset(p, POISON, 4096);
	op.recvbuf = (uintptr_t)(p + 4096 - 64);
	ASSERT_FAILS(EFAULT, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(p, 4096));
	/* Same for a send buffer that runs off the end. */
	op = ar_op(self);
	op.sendbuf = (uintptr_t)(p + 4096 - 64);
	ASSERT_FAILS(EFAULT, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
	munmap(p, 4096);
}

/* A send buffer only needs to be readable. */
ABI_TEST(abi, submit_readonly_send)
{
	struct coll_op op = ar_op(self);
	int32_t *ro = st_map(NELEM * 4);

	ASSERT_NE(NULL, ro);
	memcpy(ro, self->b.send, NELEM * 4);
	ASSERT_EQ(0, mprotect(ro, NELEM * 4, PROT_READ));
	op.sendbuf = (uintptr_t)ro;
	ASSERT_OK(st_submit(self->fd, &op));
	EXPECT_TRUE(ar_result_ok(&self->b));
	munmap(ro, NELEM * 4);
}

ABI_TEST(abi, submit_overflow_count_esize)
{
	struct coll_op op = ar_op(self);

	op.dtype = COLL_FP64;
	op.count = 1ULL << 61;			/* * 8 == 2^64 */
	ASSERT_FAILS(EOVERFLOW, st_submit(self->fd, &op));
	op.count = ~0ULL;
	ASSERT_FAILS(EOVERFLOW, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_overflow_max_bytes)
{
	struct coll_op op = ar_op(self);

	op.dtype = COLL_INT8;
	op.count = COLL_MAX_BYTES + 1;
	ASSERT_FAILS(EOVERFLOW, st_submit(self->fd, &op));
	op.dtype = COLL_FP32;
	op.count = COLL_MAX_BYTES / 4 + 1;
	ASSERT_FAILS(EOVERFLOW, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_overflow_address)
{
	struct coll_op op = ar_op(self);

	op.sendbuf = ~0ULL - 64;		/* + 4 KiB wraps */
	ASSERT_FAILS(EOVERFLOW, st_submit(self->fd, &op));
	op = ar_op(self);
	op.recvbuf = ~0ULL - 4095;
	ASSERT_FAILS(EOVERFLOW, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_overlap_after)
{
	struct coll_op op = ar_op(self);

	op.recvbuf = op.sendbuf + 4;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	op.recvbuf = op.sendbuf + NELEM * 4 - 4;	/* last element */
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
}

ABI_TEST(abi, submit_overlap_before)
{
	struct coll_op op = ar_op(self);

	op.recvbuf = op.sendbuf - 4;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
}

ABI_TEST(abi, submit_overlap_allgather)
{
	struct coll_op op = ar_op(self);

	op.prim = COLL_ALLGATHER;
	op.redop = 0;
	op.sendbuf = op.recvbuf + 4;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(abi, submit_overlap_reducescatter)
{
	struct coll_op op = ar_op(self);

	op.prim = COLL_REDUCESCATTER;
	op.recvbuf = op.sendbuf + 4;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
}

ABI_TEST(abi, submit_overlap_alltoall)
{
	struct coll_op op = ar_op(self);

	op.prim = COLL_ALLTOALL;
	op.redop = 0;
	op.recvbuf = op.sendbuf + 4;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
}

/* The documented in-place layouts are accepted (1 rank: offset 0). */
ABI_TEST(abi, submit_inplace)
{
	static const int prims[] = {
		COLL_ALLREDUCE, COLL_REDUCE, COLL_REDUCESCATTER, COLL_ALLGATHER,
		COLL_BROADCAST, COLL_SCATTER, COLL_GATHER, COLL_ALLTOALL,
	};
	unsigned int i;
	int r;

	for (i = 0; i < ARRAY_SIZE(prims); i++) {
		struct coll_op op = ar_op(self);
		size_t k;

		for (k = 0; k < NELEM; k++)
			self->b.recv[k] = k + 1;
		op.prim = prims[i];
		if (prims[i] != COLL_ALLREDUCE && prims[i] != COLL_REDUCE &&
		    prims[i] != COLL_REDUCESCATTER)
			op.redop = 0;
		op.sendbuf = op.recvbuf;
		r = st_submit(self->fd, &op);
		ASSERT_EQ(0, r) TH_LOG("prim %d: %s", prims[i], st_errname(r));
		EXPECT_TRUE(ar_result_ok(&self->b)) TH_LOG("prim %d", prims[i]);
	}
}

ABI_TEST(abi, submit_nonblock_poll)
{
	struct coll_op op = ar_op(self);

	ASSERT_EQ(0, st_poll_in(self->fd, 0));
	op.flags = COLL_OP_F_NONBLOCK;
	ASSERT_OK(st_submit(self->fd, &op));
	ASSERT_EQ(1, st_poll_in(self->fd, 10000));
	ASSERT_EQ(1, st_poll_in(self->fd, 0));	/* until collected */
	ASSERT_OK(st_wait(self->fd, op.out_req, 10000));
	EXPECT_TRUE(ar_result_ok(&self->b));
	ASSERT_EQ(0, st_poll_in(self->fd, 0));
}

/* Several requests outstanding on one descriptor, collected out of order. */
ABI_TEST(abi, submit_nonblock_many)
{
	enum { NREQ = 8 };
	struct bufs b[NREQ] = { 0 };
	uint32_t req[NREQ];
	int i, j;

	for (i = 0; i < NREQ; i++) {
		struct coll_op op;

		ASSERT_EQ(0, bufs_init(&b[i], NELEM + i));
		op = st_op(self->comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0,
			   b[i].send, b[i].recv, b[i].n);
		op.flags = COLL_OP_F_NONBLOCK;
		ASSERT_OK(st_submit(self->fd, &op));
		for (j = 0; j < i; j++)
			EXPECT_NE(req[j], op.out_req);
		req[i] = op.out_req;
	}
	for (i = NREQ - 1; i >= 0; i--) {
		ASSERT_OK(st_wait(self->fd, req[i], 10000));
		EXPECT_TRUE(ar_result_ok(&b[i]));
		bufs_free(&b[i]);
	}
	ASSERT_EQ(0, st_poll_in(self->fd, 0));
}

/* ---- COLL_WAIT / COLL_TEST --------------------------------------------------- */

/*
 * A completed non-blocking 1-rank AllReduce; returns the handle.  Its
 * buffers may be unpinned a little after completion: wait for the
 * counters to settle, so that the tests that follow see only their own.
 */
static uint32_t nb_done(struct __test_metadata *_metadata,
			FIXTURE_DATA(abi) *self)
{
	struct coll_op op = ar_op(self);
	struct coll_info info;
	int i;

	op.flags = COLL_OP_F_NONBLOCK;
	ASSERT_OK(st_submit(self->fd, &op));
	ASSERT_EQ(1, st_poll_in(self->fd, 10000));
	for (i = 0; i < 500; i++) {
		ASSERT_EQ(0, st_info_fresh(&info));
		if (!info.out_pinned_pages && !info.out_ops)
			break;
		st_sleep_ms(10);
	}
	return op.out_req;
}

ABI_TEST(abi, wait_size_short)
{
	uint32_t req = nb_done(_metadata, self);
	struct coll_wait w = { .size = sizeof(w) - 1, .req = req };

	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_WAIT, &w));
	w.size = offsetof(struct coll_wait, timeout_ms);
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_WAIT, &w));
	w.size = 0;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_WAIT, &w));
	ASSERT_OK(st_wait(self->fd, req, 0));	/* still there */
}

ABI_TEST(abi, wait_size_tail_nonzero)
{
	uint32_t req = nb_done(_metadata, self);
	BIG(struct coll_wait) big = {
		.s = { .size = sizeof(big), .req = req }, .tail = { 1, 0 },
	};

	ASSERT_FAILS(E2BIG, st_ioctl(self->fd, COLL_WAIT, &big));
	ASSERT_OK(st_wait(self->fd, req, 0));
}

ABI_TEST(abi, wait_size_tail_zero)
{
	uint32_t req = nb_done(_metadata, self);
	BIG(struct coll_wait) big = { .s = { .size = sizeof(big), .req = req } };

	ASSERT_OK(st_ioctl(self->fd, COLL_WAIT, &big));
	EXPECT_TRUE(ar_result_ok(&self->b));
	ASSERT_FAILS(ENOENT, st_wait(self->fd, req, 0));
}

ABI_TEST(abi, wait_flags)
{
	uint32_t req = nb_done(_metadata, self);
	struct coll_wait w = { .size = sizeof(w), .flags = 1, .req = req };

	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_WAIT, &w));
	ASSERT_OK(st_wait(self->fd, req, 0));
}

ABI_TEST(abi, wait_unknown)
{
	ASSERT_FAILS(ENOENT, st_wait(self->fd, 0xdeadbeef, 0));
	ASSERT_FAILS(ENOENT, st_wait(self->fd, 0, 100));
}

/* A successful WAIT releases the handle. */
ABI_TEST(abi, wait_releases)
{
	uint32_t req = nb_done(_metadata, self);

	ASSERT_OK(st_wait(self->fd, req, 0));
	ASSERT_FAILS(ENOENT, st_wait(self->fd, req, 0));
	ASSERT_FAILS(ENOENT, st_test(self->fd, req));
}

ABI_TEST(abi, test_size_short)
{
	uint32_t req = nb_done(_metadata, self);
	struct coll_wait w = { .size = sizeof(w) - 1, .req = req };

	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_TEST, &w));
	w.size = offsetof(struct coll_wait, timeout_ms);
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_TEST, &w));
	w.size = 0;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_TEST, &w));
	ASSERT_OK(st_test(self->fd, req));
}

ABI_TEST(abi, test_size_tail_nonzero)
{
	uint32_t req = nb_done(_metadata, self);
	BIG(struct coll_wait) big = {
		.s = { .size = sizeof(big), .req = req }, .tail = { 0, 1 },
	};

	ASSERT_FAILS(E2BIG, st_ioctl(self->fd, COLL_TEST, &big));
	ASSERT_OK(st_test(self->fd, req));
}

ABI_TEST(abi, test_size_tail_zero)
{
	uint32_t req = nb_done(_metadata, self);
	BIG(struct coll_wait) big = { .s = { .size = sizeof(big), .req = req } };

	ASSERT_OK(st_ioctl(self->fd, COLL_TEST, &big));
	EXPECT_TRUE(ar_result_ok(&self->b));
}

ABI_TEST(abi, test_flags)
{
	uint32_t req = nb_done(_metadata, self);
	struct coll_wait w = { .size = sizeof(w), .flags = 1, .req = req };

	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_TEST, &w));
	ASSERT_OK(st_test(self->fd, req));
}

ABI_TEST(abi, test_timeout_nonzero)
{
	uint32_t req = nb_done(_metadata, self);
	struct coll_wait w = { .size = sizeof(w), .req = req, .timeout_ms = 1 };

	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_TEST, &w));
	ASSERT_OK(st_test(self->fd, req));
}

ABI_TEST(abi, test_unknown)
{
	ASSERT_FAILS(ENOENT, st_test(self->fd, 0xdeadbeef));
}

ABI_TEST(abi, test_releases)
{
	uint32_t req = nb_done(_metadata, self);

	ASSERT_OK(st_test(self->fd, req));
	EXPECT_TRUE(ar_result_ok(&self->b));
	ASSERT_FAILS(ENOENT, st_test(self->fd, req));
	ASSERT_FAILS(ENOENT, st_wait(self->fd, req, 0));
}

ABI_TEST(abi, req_other_fd)
{
	uint32_t req = nb_done(_metadata, self);
	int fd2 = st_dev_open();

	ASSERT_LE(0, fd2);
	ASSERT_FAILS(ENOENT, st_wait(fd2, req, 0));
	ASSERT_FAILS(ENOENT, st_test(fd2, req));
	EXPECT_EQ(0, st_poll_in(fd2, 0));
	close(fd2);
	ASSERT_OK(st_wait(self->fd, req, 0));
}

/* ---- COLL_COMM_QUERY ---------------------------------------------------------- */

static struct coll_comm_query q_one(FIXTURE_DATA(abi) *self,
				    struct coll_peer_info *pi, uint32_t n)
{
	struct coll_comm_query q = {
		.size = sizeof(q),
		.comm = self->comm,
		.npeers = n,
		.peers_uptr = (uintptr_t)pi,
		.peer_size = sizeof(*pi),
	};

	return q;
}

ABI_TEST(abi, query_one_host)
{
	struct coll_peer_info pi[2];
	struct coll_comm_query q = q_one(self, pi, 2);

	memset(pi, 0x5a, sizeof(pi));
	ASSERT_OK(st_ioctl(self->fd, COLL_COMM_QUERY, &q));
	EXPECT_EQ(1, q.out_nranks);
	EXPECT_EQ(0, q.out_rank);
	EXPECT_EQ(1, q.out_nhosts);
	EXPECT_EQ(0, q.out_host);
	EXPECT_EQ(1, q.out_local_ranks);
	EXPECT_NE(0, q.out_serial);
	EXPECT_EQ(COLL_TRANSPORT_SELF, pi[0].transport);
	EXPECT_EQ(1, pi[0].nranks);
	/* only out_nhosts entries are written */
	EXPECT_EQ(sizeof(pi[1]), st_find_not(&pi[1], 0x5a, sizeof(pi[1])));
	q = q_one(self, NULL, 0);
	ASSERT_OK(st_ioctl(self->fd, COLL_COMM_QUERY, &q));
	EXPECT_EQ(1, q.out_nhosts);
}

ABI_TEST(abi, query_errors)
{
	struct coll_peer_info pi;
	struct coll_comm_query q = q_one(self, &pi, 1), *ro;
	BIG(struct coll_comm_query) big = { .s = q_one(self, &pi, 1),
					    .tail = { 0, 1 } };

	q.size = offsetofend(struct coll_comm_query, __reserved) - 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_QUERY, &q));
	big.s.size = sizeof(big);
	ASSERT_FAILS(E2BIG, st_ioctl(self->fd, COLL_COMM_QUERY, &big));
	q = q_one(self, &pi, 1);
	q.flags = 1;
	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_COMM_QUERY, &q));
	q = q_one(self, &pi, 1);
	q.__reserved = 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_QUERY, &q));
	q = q_one(self, &pi, 1);
	q.comm = self->comm + 1000;
	ASSERT_FAILS(ENOENT, st_ioctl(self->fd, COLL_COMM_QUERY, &q));
	q = q_one(self, NULL, 1);
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_QUERY, &q));
	q = q_one(self, &pi, 1);
	q.peer_size = 8;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_QUERY, &q));
	q = q_one(self, unmapped_address(), 1);
	ASSERT_FAILS(EFAULT, st_ioctl(self->fd, COLL_COMM_QUERY, &q));
	/* an argument that cannot be written back */
	q = q_one(self, &pi, 1);
	ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	*ro = q;
	ASSERT_EQ(0, mprotect(ro, 4096, PROT_READ));
	ASSERT_FAILS(EFAULT, st_ioctl(self->fd, COLL_COMM_QUERY, ro));
	munmap(ro, 4096);
}

/* ---- lifetimes -------------------------------------------------------------- */

/* Closing a descriptor with a communicator and an uncollected request. */
ABI_TEST(abi, close_releases)
{
	struct coll_info before, after;
	uint8_t id[COLL_ID_BYTES];
	struct coll_op op;
	struct bufs b;
	uint32_t comm;
	int fd2;

	ASSERT_EQ(0, bufs_init(&b, 256 * 1024));
	ASSERT_OK(st_info_fresh(&before));
	fd2 = st_dev_open();
	ASSERT_LE(0, fd2);
	st_random_id(id);
	ASSERT_OK(st_comm_init(fd2, 1, 0, id, JOIN_MS, &comm));
	op = st_op(comm, COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, b.send,
		   b.recv, b.n);
	op.flags = COLL_OP_F_NONBLOCK;
	ASSERT_OK(st_submit(fd2, &op));
	close(fd2);
	ASSERT_EQ(0, st_info_settle(&before, &after, 2000))
		TH_LOG("after close: pinned %llu comms %llu ops %llu (before %llu %llu %llu)",
		       (unsigned long long)after.out_pinned_pages,
		       (unsigned long long)after.out_comms,
		       (unsigned long long)after.out_ops,
		       (unsigned long long)before.out_pinned_pages,
		       (unsigned long long)before.out_comms,
		       (unsigned long long)before.out_ops);
	bufs_free(&b);
}

/*
 * Without CAP_IPC_LOCK, pinning counts against RLIMIT_MEMLOCK: 1 MiB
 * AllReduce under a 64 KiB limit is ENOMEM, 4 KiB works.  In a child, so
 * that the capability and the limit stay there.
 */
static int memlock_child(int unused, void *arg)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];
	struct rlimit rl = { 64 << 10, 64 << 10 };
	struct coll_info before, after;
	uint8_t id[COLL_ID_BYTES];
	struct coll_op op;
	struct bufs b;
	uint32_t comm;
	int fd, r;

	(void)unused;
	close(*(int *)arg);
	if (syscall(SYS_capget, &h, d))
		return 10;
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].permitted &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].inheritable &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	if (syscall(SYS_capset, &h, d)) {
		st_log("capset: %s", strerror(errno));
		return 11;
	}
	if (setrlimit(RLIMIT_MEMLOCK, &rl)) {
		st_log("setrlimit: %s", strerror(errno));
		return 12;
	}
	if (bufs_init(&b, 256 * 1024))		/* 1 MiB each */
		return 13;
	fd = st_dev_open();
	if (fd < 0)
		return 14;
	st_random_id(id);
	r = st_comm_init(fd, 1, 0, id, JOIN_MS, &comm);
	if (r) {
		st_log("comm_init: %s", st_errname(r));
		return 15;
	}
	if (st_info(fd, &before))
		return 16;
	op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0, b.send,
		   b.recv, b.n);
	r = st_submit(fd, &op);
	if (r != -ENOMEM) {
		st_log("1 MiB AllReduce under a 64 KiB RLIMIT_MEMLOCK: %s, want ENOMEM",
		       st_errname(r));
		return 17;
	}
	if (st_info_settle(&before, &after, 1000)) {
		st_log("ENOMEM left pinned pages %llu -> %llu",
		       (unsigned long long)before.out_pinned_pages,
		       (unsigned long long)after.out_pinned_pages);
		return 18;
	}
	if (!untouched(b.recv, b.n * 4)) {
		st_log("ENOMEM wrote the receive buffer");
		return 19;
	}
	op.count = 1024;			/* 4 KiB */
	r = st_submit(fd, &op);
	if (r) {
		st_log("4 KiB AllReduce under a 64 KiB RLIMIT_MEMLOCK: %s",
		       st_errname(r));
		return 20;
	}
	if (memcmp(b.send, b.recv, 4096))
		return 21;
	return 0;
}

ABI_TEST(abi, memlock)
{
	struct st_ranks rk;
	char st[64];

	ASSERT_OK(st_ranks_spawn(&rk, 1, memlock_child, &self->fd));
	EXPECT_EQ(0, st_ranks_wait(&rk, 20000, 0))
		TH_LOG("child: %s", st_status_str(&rk, 0, st, sizeof(st)));
}

/* ---- fixture: a 2-rank communicator with a peer process ------------------- */

enum { PEER_OP = 1, PEER_EXIT };

struct peer_msg {
	int cmd;
	int pad;
	struct coll_op op;	/* comm and buffers are the peer's own */
};

struct peer_res {
	int err;		/* errno of the peer's COLL_SUBMIT */
	int untouched;		/* its receive buffer still poisoned */
	int verified;		/* int32 SUM AllReduce gave 3 * (i + 1) */
};

#define PEER_BUF	(64 << 10)

struct peer_args {
	uint8_t id[COLL_ID_BYTES];
	int close_fds[3];
	int rfd, wfd;
};

static int peer_main(int unused, void *arg)
{
	struct peer_args *pa = arg;
	struct peer_res res = { 0 };
	struct peer_msg m;
	int32_t *send, *recv;
	uint32_t comm = 0;
	int fd, r, i;

	(void)unused;
	for (i = 0; i < 3; i++)
		close(pa->close_fds[i]);
	send = st_map(PEER_BUF);
	recv = st_map(PEER_BUF);
	if (!send || !recv)
		return 3;
	fd = st_dev_open();
	res.err = fd < 0 ? -fd : -st_comm_init(fd, 2, 1, pa->id, JOIN_MS, &comm);
	if (write(pa->wfd, &res, sizeof(res)) != sizeof(res) || res.err)
		return 1;
	while (read(pa->rfd, &m, sizeof(m)) == sizeof(m)) {
		if (m.cmd != PEER_OP)
			break;
		for (i = 0; i < PEER_BUF / 4; i++)
			send[i] = 2 * (i + 1);
		memset(recv, POISON, PEER_BUF);
		m.op.comm = comm;
		m.op.flags &= ~COLL_OP_F_NONBLOCK;	/* the peer blocks */
		if (m.op.prim == COLL_BARRIER) {
			m.op.sendbuf = m.op.recvbuf = 0;
		} else {
			m.op.sendbuf = (uintptr_t)send;
			m.op.recvbuf = (uintptr_t)recv;
		}
		r = st_submit(fd, &m.op);
		res.err = -r;
		res.untouched = untouched(recv, PEER_BUF);
		res.verified = 0;
		if (!r && m.op.prim == COLL_ALLREDUCE &&
		    m.op.dtype == COLL_INT32 && m.op.redop == COLL_SUM) {
			res.verified = 1;
			for (i = 0; i < (int)m.op.count; i++)
				if (recv[i] != 3 * (i + 1))
					res.verified = 0;
		}
		/* rank 0 sends i + 1: a Broadcast from it, a Gather to us */
		if (!r && m.op.dtype == COLL_INT32 &&
		    ((m.op.prim == COLL_BROADCAST && m.op.root == 0) ||
		     (m.op.prim == COLL_GATHER && m.op.root == 1))) {
			res.verified = 1;
			for (i = 0; i < (int)m.op.count; i++)
				if (recv[i] != i + 1 ||
				    (m.op.prim == COLL_GATHER &&
				     recv[m.op.count + i] != 2 * (i + 1)))
					res.verified = 0;
		}
		if (write(pa->wfd, &res, sizeof(res)) != sizeof(res))
			return 2;
	}
	return 0;
}

FIXTURE(pair) {
	int fd;
	uint32_t comm;
	struct peer_args pa;
	struct st_ranks rk;
	int to_peer, from_peer;
	bool broken;		/* the test took the communicator down */
	struct bufs b;
};

FIXTURE_SETUP(pair)
{
	int fd = st_dev_open(), to[2], from[2];
	struct peer_res res;

	if (fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-fd));
	self->fd = fd;
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, bufs_init(&self->b, NELEM));
	ASSERT_EQ(0, pipe2(to, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(from, O_CLOEXEC));
	st_random_id(self->pa.id);
	self->pa.rfd = to[0];
	self->pa.wfd = from[1];
	self->pa.close_fds[0] = fd;
	self->pa.close_fds[1] = to[1];
	self->pa.close_fds[2] = from[0];
	ASSERT_OK(st_ranks_spawn(&self->rk, 1, peer_main, &self->pa));
	close(to[0]);
	close(from[1]);
	self->to_peer = to[1];
	self->from_peer = from[0];
	ASSERT_OK(st_comm_init(fd, 2, 0, self->pa.id, JOIN_MS, &self->comm));
	ASSERT_EQ(1, st_poll_in(self->from_peer, PEER_MS));
	ASSERT_EQ(sizeof(res), read(self->from_peer, &res, sizeof(res)));
	ASSERT_EQ(0, res.err) TH_LOG("peer join: %s", st_errname(res.err));
}

static int peer_send(FIXTURE_DATA(pair) *self, const struct coll_op *op)
{
	struct peer_msg m = { .cmd = PEER_OP, .op = *op };

	return write(self->to_peer, &m, sizeof(m)) == sizeof(m) ? 0 : -1;
}

static int peer_result(FIXTURE_DATA(pair) *self, struct peer_res *res)
{
	if (st_poll_in(self->from_peer, PEER_MS) != 1)
		return -1;
	return read(self->from_peer, res, sizeof(*res)) == sizeof(*res) ? 0 : -1;
}

static struct coll_op pair_ar(FIXTURE_DATA(pair) *self)
{
	return st_op(self->comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0,
		     self->b.send, self->b.recv, self->b.n);
}

/* A correct AllReduce through both ranks. */
static void pair_good_allreduce(struct __test_metadata *_metadata,
			   FIXTURE_DATA(pair) *self)
{
	struct coll_op op = pair_ar(self);
	struct peer_res res;
	size_t i;

	memset(self->b.recv, POISON, NELEM * 4);
	ASSERT_EQ(0, peer_send(self, &op));
	ASSERT_OK(st_submit(self->fd, &op));
	ASSERT_EQ(0, peer_result(self, &res));
	ASSERT_EQ(0, res.err) TH_LOG("peer: %s", st_errname(res.err));
	EXPECT_TRUE(res.verified);
	for (i = 0; i < NELEM; i++)
		ASSERT_EQ(3 * (int)(i + 1), self->b.recv[i]) TH_LOG("element %zu", i);
}

FIXTURE_TEARDOWN(pair)
{
	struct peer_msg m = { .cmd = PEER_EXIT };
	char st[64];

	if (self->fd <= 0)
		return;
	if (!self->broken && _metadata->passed && self->rk.n)
		pair_good_allreduce(_metadata, self);
	if (self->to_peer > 0) {
		if (write(self->to_peer, &m, sizeof(m)) != sizeof(m))
			TH_LOG("peer gone before the end");
		close(self->to_peer);
	}
	if (self->rk.n) {
		EXPECT_EQ(0, st_ranks_wait(&self->rk, PEER_MS, 0))
			TH_LOG("peer: %s", st_status_str(&self->rk, 0, st, sizeof(st)));
	}
	if (self->from_peer > 0)
		close(self->from_peer);
	if (!self->broken)
		st_comm_destroy(self->fd, self->comm);
	bufs_free(&self->b);
	close(self->fd);
}

ABI_TEST(pair, allreduce)
{
	pair_good_allreduce(_metadata, self);
}

ABI_TEST(pair, root_on_rootless_prim)
{
	struct coll_op op = pair_ar(self);

	op.root = 1;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	op.prim = COLL_ALLGATHER;
	op.redop = 0;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	op = st_op(self->comm, COLL_BARRIER, 0, 0, 1, NULL, NULL, 0);
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(pair, root_out_of_range)
{
	struct coll_op op = pair_ar(self);

	op.prim = COLL_BROADCAST;
	op.redop = 0;
	op.root = 2;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	op.prim = COLL_GATHER;
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

ABI_TEST(pair, rank_taken)
{
	int fd2 = st_dev_open();
	uint32_t c;

	ASSERT_LE(0, fd2);
	ASSERT_FAILS(EBUSY, st_comm_init(fd2, 2, 0, self->pa.id, JOIN_MS, &c));
	ASSERT_FAILS(EBUSY, st_comm_init(fd2, 2, 1, self->pa.id, JOIN_MS, &c));
	ASSERT_FAILS(EPROTO, st_comm_init(fd2, 3, 2, self->pa.id, JOIN_MS, &c));
	close(fd2);
}

/* Rank 0's AllGather send buffer in rank 1's slot is not the in-place layout. */
ABI_TEST(pair, overlap_allgather_wrong_slot)
{
	struct coll_op op = pair_ar(self);
	int32_t *big = st_map(2 * NELEM * 4);

	ASSERT_NE(NULL, big);
	memset(big, POISON, 2 * NELEM * 4);
	op.prim = COLL_ALLGATHER;
	op.redop = 0;
	op.recvbuf = (uintptr_t)big;
	op.sendbuf = (uintptr_t)(big + NELEM);
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	op.sendbuf = (uintptr_t)(big + 1);
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(big, 2 * NELEM * 4));
	munmap(big, 2 * NELEM * 4);
}

ABI_TEST(pair, overlap_reducescatter_wrong_slot)
{
	struct coll_op op = pair_ar(self);
	int32_t *big = st_map(2 * NELEM * 4);

	ASSERT_NE(NULL, big);
	memset(big, POISON, 2 * NELEM * 4);
	op.prim = COLL_REDUCESCATTER;
	op.sendbuf = (uintptr_t)big;
	op.recvbuf = (uintptr_t)(big + NELEM);
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(big, 2 * NELEM * 4));
	munmap(big, 2 * NELEM * 4);
}

/* count * esize fits, count * esize * nranks does not. */
ABI_TEST(pair, overflow_nranks)
{
	struct coll_op op = pair_ar(self);

	op.prim = COLL_ALLGATHER;
	op.redop = 0;
	op.dtype = COLL_INT8;
	op.count = 1ULL << 63;
	ASSERT_FAILS(EOVERFLOW, st_submit(self->fd, &op));
	op.prim = COLL_ALLTOALL;
	ASSERT_FAILS(EOVERFLOW, st_submit(self->fd, &op));
	op.count = COLL_MAX_BYTES / 2 + 1;	/* * 2 ranks > COLL_MAX_BYTES */
	ASSERT_FAILS(EOVERFLOW, st_submit(self->fd, &op));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
}

/*
 * Rank 0 submits @mine, the peer @theirs: both get EPROTO, with their
 * receive buffers untouched and the counters as before.
 */
static void mismatch(struct __test_metadata *_metadata,
		     FIXTURE_DATA(pair) *self, struct coll_op mine,
		     struct coll_op theirs)
{
	struct coll_info before, after;
	struct peer_res res;
	int32_t *recv = st_map(PEER_BUF);
	int r;

	ASSERT_NE(NULL, recv);
	memset(recv, POISON, PEER_BUF);
	mine.comm = self->comm;
	mine.sendbuf = (uintptr_t)self->b.send;
	mine.recvbuf = (uintptr_t)recv;
	ASSERT_OK(st_info_fresh(&before));
	ASSERT_EQ(0, peer_send(self, &theirs));
	r = st_submit(self->fd, &mine);
	ASSERT_EQ(0, peer_result(self, &res));
	EXPECT_EQ(-EPROTO, r) TH_LOG("rank 0: %s", st_errname(r));
	EXPECT_EQ(EPROTO, res.err) TH_LOG("rank 1: %s", st_errname(res.err));
	EXPECT_TRUE(untouched(recv, PEER_BUF));
	EXPECT_TRUE(res.untouched);
	EXPECT_EQ(0, st_info_settle(&before, &after, 1000))
		TH_LOG("pinned %llu->%llu ops %llu->%llu",
		       (unsigned long long)before.out_pinned_pages,
		       (unsigned long long)after.out_pinned_pages,
		       (unsigned long long)before.out_ops,
		       (unsigned long long)after.out_ops);
	munmap(recv, PEER_BUF);
	/* The teardown runs a correct AllReduce on the same communicator. */
}

static struct coll_op base_op(void)
{
	struct coll_op op = st_op(0, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0,
				  NULL, NULL, NELEM);

	op.algo = COLL_ALGO_RING;
	return op;
}

ABI_TEST(pair, mismatch_count)
{
	struct coll_op a = base_op(), b = base_op();

	b.count = NELEM + 1;
	mismatch(_metadata, self, a, b);
}

ABI_TEST(pair, mismatch_dtype)
{
	struct coll_op a = base_op(), b = base_op();

	b.dtype = COLL_FP32;			/* same size */
	mismatch(_metadata, self, a, b);
}

ABI_TEST(pair, mismatch_redop)
{
	struct coll_op a = base_op(), b = base_op();

	b.redop = COLL_MAX;
	mismatch(_metadata, self, a, b);
}

ABI_TEST(pair, mismatch_root)
{
	struct coll_op a = base_op(), b = base_op();

	a.prim = b.prim = COLL_BROADCAST;
	a.redop = b.redop = 0;
	b.root = 1;
	mismatch(_metadata, self, a, b);
}

ABI_TEST(pair, mismatch_prim)
{
	struct coll_op a = base_op(), b = base_op();

	b.prim = COLL_ALLGATHER;		/* redop SUM == 0 */
	mismatch(_metadata, self, a, b);
}

ABI_TEST(pair, mismatch_algo)
{
	struct coll_op a = base_op(), b = base_op();

	b.algo = COLL_ALGO_DIRECT;
	mismatch(_metadata, self, a, b);
}

/* The barrier against an AllReduce: a different primitive too. */
ABI_TEST(pair, mismatch_barrier)
{
	struct coll_op a = base_op(), b = base_op();

	b.prim = COLL_BARRIER;
	b.dtype = 0;
	b.count = 0;
	mismatch(_metadata, self, a, b);
}

/*
 * Small calls with COLL_ALGO_AUTO go through the eager slots: ranks that
 * disagree there fail with EPROTO alike, whichever arrives first.
 */
static struct coll_op eager_op(void)
{
	return st_op(0, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0, NULL, NULL,
		     16);
}

ABI_TEST(pair, eager_mismatch_count)
{
	struct coll_op a = eager_op(), b = eager_op();

	b.count = 17;
	mismatch(_metadata, self, a, b);
}

ABI_TEST(pair, eager_mismatch_prim)
{
	struct coll_op a = eager_op(), b = eager_op();

	b.prim = COLL_ALLGATHER;
	mismatch(_metadata, self, a, b);
}

/* One rank eager, the other on the task path (an algorithm forced). */
ABI_TEST(pair, eager_mismatch_algo)
{
	struct coll_op a = eager_op(), b = eager_op();

	b.algo = COLL_ALGO_DIRECT;
	mismatch(_metadata, self, a, b);
	a.algo = COLL_ALGO_RING;
	b.algo = COLL_ALGO_AUTO;
	mismatch(_metadata, self, a, b);
}

/* One rank small enough for the slots, the other too large for them. */
ABI_TEST(pair, eager_mismatch_size)
{
	struct coll_op a = eager_op(), b = eager_op();
	long slot = st_param_get("slot_bytes");

	ASSERT_GT(slot, 0);
	ASSERT_EQ(0, st_param_set("slot_bytes", 16384));
	b.count = NELEM + NELEM / 2;	/* 2 ranks: 18 KiB > 16 KiB */
	mismatch(_metadata, self, a, b);
	mismatch(_metadata, self, b, a);
	EXPECT_EQ(0, st_param_set("slot_bytes", slot));
}

ABI_TEST(pair, eager_mismatch_barrier)
{
	struct coll_op a = eager_op(), b = eager_op();

	b.prim = COLL_BARRIER;
	b.dtype = 0;
	b.count = 0;
	mismatch(_metadata, self, a, b);
}

/*
 * Blocking and non-blocking calls of one collective do not match (as in
 * MPI): they fail with EPROTO on both ranks, nothing written, or (if the
 * non-blocking one came first and made a task) they run, correctly.
 */
ABI_TEST(pair, eager_blocking_vs_nonblocking)
{
	struct coll_op op = pair_ar(self);
	struct peer_res res;
	size_t i;
	int r, k;

	op.count = 16;
	for (k = 0; k < 5; k++) {
		memset(self->b.recv, POISON, NELEM * 4);
		op.flags = COLL_OP_F_NONBLOCK;
		ASSERT_EQ(0, peer_send(self, &op));	/* the peer blocks */
		r = st_submit(self->fd, &op);
		if (!r)
			r = st_wait(self->fd, op.out_req, PEER_MS);
		ASSERT_EQ(0, peer_result(self, &res));
		if (r) {
			EXPECT_EQ(-EPROTO, r) TH_LOG("%s", st_errname(r));
			EXPECT_EQ(EPROTO, res.err);
			EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
			EXPECT_TRUE(res.untouched);
			continue;
		}
		EXPECT_EQ(0, res.err) TH_LOG("peer: %s", st_errname(res.err));
		EXPECT_TRUE(res.verified);
		for (i = 0; i < op.count; i++)
			ASSERT_EQ(3 * (int)(i + 1), self->b.recv[i]);
	}
}

/*
 * The root of a small Broadcast returns before the other rank has even
 * submitted: its data waits in the slots, copied, so the root may write
 * over its buffer at once.  Three in a row, then the peer takes them.
 */
ABI_TEST(pair, eager_broadcast_root_returns)
{
	struct coll_op op = st_op(self->comm, COLL_BROADCAST, COLL_INT32, 0, 0,
				  self->b.send, self->b.recv, 16);
	struct peer_res res;
	size_t i;
	int k;

	for (k = 0; k < 3; k++) {
		for (i = 0; i < NELEM; i++)
			self->b.send[i] = i + 1;
		ASSERT_OK(st_submit(self->fd, &op));
		for (i = 0; i < op.count; i++)
			ASSERT_EQ((int)i + 1, self->b.recv[i]);
		memset(self->b.send, POISON, NELEM * 4);
	}
	for (k = 0; k < 3; k++) {
		ASSERT_EQ(0, peer_send(self, &op));
		ASSERT_EQ(0, peer_result(self, &res));
		EXPECT_EQ(0, res.err) TH_LOG("peer: %s", st_errname(res.err));
		EXPECT_TRUE(res.verified) TH_LOG("broadcast %d", k);
	}
	for (i = 0; i < NELEM; i++)
		self->b.send[i] = i + 1;
}

/*
 * A root 20 small Broadcasts ahead of its peer's calls: it runs ahead as
 * far as the communicator's slots go, then waits for the peer to take the
 * oldest; every Broadcast arrives intact.
 */
ABI_TEST(pair, eager_broadcast_root_far_ahead)
{
	struct coll_op op = st_op(self->comm, COLL_BROADCAST, COLL_INT32, 0, 0,
				  self->b.send, self->b.recv, 16);
	struct peer_res res;
	size_t i;
	int k;

	for (k = 0; k < 20; k++)
		ASSERT_EQ(0, peer_send(self, &op));
	for (k = 0; k < 20; k++) {
		for (i = 0; i < NELEM; i++)
			self->b.send[i] = i + 1;
		ASSERT_OK(st_submit(self->fd, &op));
		memset(self->b.send, POISON, NELEM * 4);
	}
	for (k = 0; k < 20; k++) {
		ASSERT_EQ(0, peer_result(self, &res));
		EXPECT_EQ(0, res.err) TH_LOG("peer: %s", st_errname(res.err));
		EXPECT_TRUE(res.verified) TH_LOG("broadcast %d", k);
	}
	for (i = 0; i < NELEM; i++)
		self->b.send[i] = i + 1;
}

/* A sender of a small Gather returns at once too; the root gets it all. */
ABI_TEST(pair, eager_gather_sender_returns)
{
	struct coll_op op = st_op(self->comm, COLL_GATHER, COLL_INT32, 0, 1,
				  self->b.send, NULL, 16);
	struct peer_res res;

	ASSERT_OK(st_submit(self->fd, &op));
	ASSERT_EQ(0, peer_send(self, &op));
	ASSERT_EQ(0, peer_result(self, &res));
	EXPECT_EQ(0, res.err) TH_LOG("peer: %s", st_errname(res.err));
	EXPECT_TRUE(res.verified);
}

/*
 * The peer has not submitted: TEST says EAGAIN, WAIT with a timeout says
 * ETIMEDOUT and leaves the request pending; it completes once the peer
 * submits.
 */
ABI_TEST(pair, test_pending)
{
	struct coll_op op = pair_ar(self);
	struct coll_info info;
	struct peer_res res;
	int64_t t0, dt;
	size_t i;

	op.flags = COLL_OP_F_NONBLOCK;
	ASSERT_OK(st_submit(self->fd, &op));
	ASSERT_FAILS(EAGAIN, st_test(self->fd, op.out_req));
	EXPECT_EQ(0, st_poll_in(self->fd, 100));
	t0 = st_now_ns();
	ASSERT_FAILS(ETIMEDOUT, st_wait(self->fd, op.out_req, 200));
	dt = st_now_ns() - t0;
	EXPECT_LE(150000000LL, dt);
	EXPECT_GT(2000000000LL, dt);
	ASSERT_FAILS(EAGAIN, st_test(self->fd, op.out_req));
	ASSERT_OK(st_info(self->fd, &info));
	EXPECT_LE(1, info.out_ops);
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));

	ASSERT_EQ(0, peer_send(self, &op));
	ASSERT_OK(st_wait(self->fd, op.out_req, PEER_MS));
	ASSERT_EQ(0, peer_result(self, &res));
	ASSERT_EQ(0, res.err);
	EXPECT_TRUE(res.verified);
	for (i = 0; i < NELEM; i++)
		ASSERT_EQ(3 * (int)(i + 1), self->b.recv[i]);
	ASSERT_FAILS(ENOENT, st_wait(self->fd, op.out_req, 0));
}

/* Leaving with a request pending: it fails, its handle stays until waited. */
ABI_TEST(pair, destroy_pending)
{
	struct coll_op op = pair_ar(self);
	struct peer_res res;

	op.flags = COLL_OP_F_NONBLOCK;
	ASSERT_OK(st_submit(self->fd, &op));
	ASSERT_OK(st_comm_destroy(self->fd, self->comm));
	self->broken = true;
	ASSERT_EQ(-ECONNRESET, st_wait(self->fd, op.out_req, PEER_MS));
	ASSERT_EQ(-ENOENT, st_wait(self->fd, op.out_req, 0));
	EXPECT_TRUE(untouched(self->b.recv, NELEM * 4));
	/* The peer's next collective fails too. */
	ASSERT_EQ(0, peer_send(self, &op));
	ASSERT_EQ(0, peer_result(self, &res));
	EXPECT_EQ(ECONNRESET, res.err) TH_LOG("peer: %s", st_errname(res.err));
	EXPECT_TRUE(res.untouched);
}

TEST_HARNESS_MAIN
