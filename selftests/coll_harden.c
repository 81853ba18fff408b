// SPDX-License-Identifier: GPL-2.0
/*
 * coll_harden: resource bounds and the ABI's promises, with raw ioctls.
 *
 * One test (or a few) per defect that an outside review found before the
 * module was opened to other hosts:
 *  - sizes at and beyond COLL_MAX_BYTES at unmapped addresses fail fast,
 *    with nothing allocated in proportion and no kernel warning;
 *  - uncollected requests are capped per descriptor (ENOSPC) and cost a
 *    small, counted amount of kernel memory, charged to the memory cgroup;
 *    communicators are capped per process (EMFILE);
 *  - every ioctl with an argument that cannot be written back either works
 *    (it has no output) or fails with EFAULT having changed nothing;
 *  - request handles are not reused soon, and concurrent waits on one
 *    handle have exactly one collector;
 *  - a rank killed through a descriptor shared by fork kills the
 *    communicator for every holder and every peer;
 *  - two threads of one process in two communicators;
 *  - pinning does not hold the descriptor's lock;
 *  - communicators are scoped to a network namespace.
 *
 * Tests that change module parameters restore them.  Everything runs as
 * root in a guest (fault injection and cgroups need it).
 */
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "coll_selftest.h"
#include "kselftest_harness.h"

#define JOIN_MS		10000
#define OP_MS		20000
#define NELEM		1024
#define POISON		0xa5

#define ASSERT_OK(call) do {						\
	int __r = (call);						\
									\
	ASSERT_EQ(0, __r) TH_LOG("%s: %s", #call, st_errname(__r));	\
} while (0)

#define ASSERT_ERR(err, call) do {					\
	int __r = (call);						\
									\
	ASSERT_EQ(-(err), __r) TH_LOG("%s: got %s, want %s", #call,	\
				      st_errname(__r), st_errname(err)); \
} while (0)

/*
 * Every test is TEST_F_TIMEOUT of an empty fixture: the 6.1 harness has no
 * TEST_TIMEOUT, and plain TEST()s get 30 s, short under TCG.
 */
FIXTURE(h) {
	int unused;
};

FIXTURE_SETUP(h)
{
}

FIXTURE_TEARDOWN(h)
{
}

#define HTEST(name, secs) TEST_F_TIMEOUT(h, name, secs)

/* Skip when the device is missing (module not loaded). */
#define NEED_DEVICE() do {						\
	int __fd = st_dev_open();					\
									\
	if (__fd < 0)							\
		SKIP(return, "%s: %s (module not loaded?)",		\
		     st_dev_path(), strerror(-__fd));			\
	close(__fd);							\
} while (0)

/* ---- helpers -------------------------------------------------------------- */

/* A copy of @len bytes of @src in a page of its own, made read-only. */
static void *ro_dup(const void *src, size_t len)
{
	void *p = st_map(4096);

	if (!p)
		return NULL;
	memcpy(p, src, len);
	if (mprotect(p, 4096, PROT_READ)) {
		munmap(p, 4096);
		return NULL;
	}
	return p;
}

static long meminfo_kb(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	FILE *f = fopen("/proc/meminfo", "r");
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtol(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static int one_rank(int fd, uint32_t *comm)
{
	uint8_t id[COLL_ID_BYTES];

	st_random_id(id);
	return st_comm_init(fd, 1, 0, id, JOIN_MS, comm);
}

static void fill(int32_t *p, size_t n, int32_t mul)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = mul * (int32_t)(i + 1);
}

static bool all_eq(const int32_t *p, size_t n, int32_t mul)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != mul * (int32_t)(i + 1))
			return false;
	return true;
}

static bool info_same(const struct coll_info *a, const struct coll_info *b)
{
	return a->out_pinned_pages == b->out_pinned_pages &&
	       a->out_comms == b->out_comms && a->out_ops == b->out_ops &&
	       a->out_reqs == b->out_reqs &&
	       a->out_kernel_bytes == b->out_kernel_bytes;
}

/* Counters back to @want (they may settle asynchronously), or -1. */
static int info_settle_all(const struct coll_info *want, struct coll_info *got,
			   int timeout_ms)
{
	int64_t end = st_now_ns() + (int64_t)timeout_ms * 1000000LL;

	for (;;) {
		if (st_info_fresh(got))
			return -1;
		if (info_same(want, got))
			return 0;
		if (st_now_ns() > end)
			return -1;
		st_sleep_ms(10);
	}
}

#define ASSERT_INFO_SETTLES(before) do {				\
	struct coll_info __a;						\
									\
	ASSERT_EQ(0, info_settle_all(before, &__a, 5000))		\
		TH_LOG("counters changed: pinned %llu->%llu comms %llu->%llu ops %llu->%llu reqs %llu->%llu kbytes %llu->%llu", \
		       (unsigned long long)(before)->out_pinned_pages,	\
		       (unsigned long long)__a.out_pinned_pages,	\
		       (unsigned long long)(before)->out_comms,		\
		       (unsigned long long)__a.out_comms,		\
		       (unsigned long long)(before)->out_ops,		\
		       (unsigned long long)__a.out_ops,			\
		       (unsigned long long)(before)->out_reqs,		\
		       (unsigned long long)__a.out_reqs,		\
		       (unsigned long long)(before)->out_kernel_bytes,	\
		       (unsigned long long)__a.out_kernel_bytes);	\
} while (0)

/* ---- sizes at the limits ---------------------------------------------------- */

/* Far from anything mapped: 16 TiB and 48 TiB, below the 128 TiB of x86-64. */
#define FAR_SEND	((void *)(1ULL << 44))
#define FAR_RECV	((void *)(3ULL << 44))

static int far_allreduce(int fd, uint32_t comm, uint32_t dtype, uint64_t count,
			 uint32_t flags, double *secs)
{
	struct coll_op op = st_op(comm, COLL_ALLREDUCE, dtype, COLL_SUM, 0,
				  FAR_SEND, FAR_RECV, count);
	int64_t t0 = st_now_ns();
	int r;

	op.flags = flags;
	r = st_submit(fd, &op);
	*secs = (st_now_ns() - t0) / 1e9;
	return r;
}

/*
 * The largest sizes allowed, at unmapped addresses: EFAULT at the first
 * page, fast (the old code vmalloc'ed a page array sized by the request
 * first: a kernel WARN at 2^40 bytes, seconds at 2^39), nothing left
 * behind.  One element more is EOVERFLOW.  The guest's dmesg check
 * catches a WARN.
 */
HTEST(huge_unmapped_at_limits, 120)
{
	struct coll_info before;
	uint32_t comm;
	double secs;
	int fd;

	NEED_DEVICE();
	fd = st_dev_open();
	ASSERT_OK(one_rank(fd, &comm));
	ASSERT_OK(st_info_fresh(&before));

	ASSERT_ERR(EFAULT, far_allreduce(fd, comm, COLL_INT8, COLL_MAX_BYTES,
					 0, &secs));
	TH_LOG("int8 x 2^40 at unmapped addresses: EFAULT in %.3f s", secs);
	EXPECT_LT(secs, 5.0);
	ASSERT_ERR(EFAULT, far_allreduce(fd, comm, COLL_INT8,
					 COLL_MAX_BYTES / 2, 0, &secs));
	EXPECT_LT(secs, 5.0);
	ASSERT_ERR(EFAULT, far_allreduce(fd, comm, COLL_FP32,
					 COLL_MAX_BYTES / 4,
					 COLL_OP_F_NONBLOCK, &secs));
	EXPECT_LT(secs, 5.0);
	ASSERT_ERR(EOVERFLOW, far_allreduce(fd, comm, COLL_INT8,
					    COLL_MAX_BYTES + 1, 0, &secs));
	ASSERT_ERR(EOVERFLOW, far_allreduce(fd, comm, COLL_FP32,
					    COLL_MAX_BYTES / 4 + 1, 0, &secs));
	ASSERT_ERR(EOVERFLOW, far_allreduce(fd, comm, COLL_FP64, ~0ULL / 8,
					    0, &secs));
	ASSERT_INFO_SETTLES(&before);
	close(fd);
}

static int memlock_huge_child(int unused, void *arg)
{
	struct rlimit rl = { 64 << 10, 64 << 10 };
	struct coll_info before, after;
	uint32_t comm;
	double secs;
	int fd, r;

	(void)unused;
	(void)arg;
	if (st_drop_ipc_lock() || setrlimit(RLIMIT_MEMLOCK, &rl))
		return 10;
	fd = st_dev_open();
	if (fd < 0 || one_rank(fd, &comm))
		return 11;
	if (st_info_fresh(&before))
		return 12;
	r = far_allreduce(fd, comm, COLL_INT8, COLL_MAX_BYTES, 0, &secs);
	if (r != -ENOMEM) {
		st_log("2^40 bytes over a 64 KiB memlock limit: %s",
		       st_errname(r));
		return 13;
	}
	if (secs > 2.0) {
		st_log("ENOMEM took %.3f s: the charge is not first", secs);
		return 14;
	}
	if (info_settle_all(&before, &after, 5000))
		return 15;
	close(fd);
	return 0;
}

/* Without CAP_IPC_LOCK the memlock charge comes before anything else. */
HTEST(huge_over_memlock_fails_first, 120)
{
	struct st_ranks rk;
	char st[64];

	NEED_DEVICE();
	ASSERT_OK(st_ranks_spawn(&rk, 1, memlock_huge_child, NULL));
	EXPECT_EQ(0, st_ranks_wait(&rk, 30000, 0))
		TH_LOG("child: %s", st_status_str(&rk, 0, st, sizeof(st)));
}

/* ---- COLL_INFO's first version ------------------------------------------------ */

HTEST(info_first_version_size, 120)
{
	struct {
		struct coll_info info;
		uint8_t guard[8];
	} u;
	size_t v1 = offsetofend(struct coll_info, out_bytes_total);
	int fd;

	NEED_DEVICE();
	fd = st_dev_open();
	memset(&u, 0x5a, sizeof(u));
	u.info.size = v1;
	u.info.flags = 0;
	ASSERT_OK(st_ioctl(fd, COLL_INFO, &u.info));
	EXPECT_EQ(COLL_ABI_VERSION, u.info.out_abi_version);
	/* Nothing past the caller's struct is written. */
	EXPECT_EQ(sizeof(u) - v1, st_find_not((uint8_t *)&u + v1, 0x5a,
					      sizeof(u) - v1));
	close(fd);
}

/* ---- requests: the per-descriptor limit and their cost ------------------------ */

/*
 * A 1-rank communicator: non-blocking barriers until ENOSPC.  Each
 * uncollected request costs a small, counted amount of kernel memory; the
 * limit is exactly max_requests; ENOSPC changes nothing; collecting every
 * request gives the memory back exactly.
 */
HTEST(requests_capped_per_descriptor, 120)
{
	struct coll_info before, held, after;
	uint32_t comm, max, i, *reqs;
	long slab0, slab1;
	int fd, r;

	NEED_DEVICE();
	fd = st_dev_open();
	ASSERT_OK(one_rank(fd, &comm));
	{
		/*
		 * The eager slots (a blocking Barrier) and the Barrier's plan
		 * (a non-blocking one), kept from now on.
		 */
		struct coll_op op = st_op(comm, COLL_BARRIER, 0, 0, 0, NULL,
					  NULL, 0);

		ASSERT_OK(st_submit(fd, &op));
		op.flags = COLL_OP_F_NONBLOCK;
		ASSERT_OK(st_submit(fd, &op));
		ASSERT_OK(st_wait(fd, op.out_req, OP_MS));
	}
	ASSERT_OK(st_info_fresh(&before));
	max = before.out_max_requests;
	ASSERT_GT(max, 0);
	ASSERT_LE(max, 1u << 20);
	reqs = calloc(max, sizeof(*reqs));
	ASSERT_NE(NULL, reqs);
	slab0 = meminfo_kb("Slab");

	for (i = 0; i < max; i++) {
		struct coll_op op = st_op(comm, COLL_BARRIER, 0, 0, 0, NULL,
					  NULL, 0);

		op.flags = COLL_OP_F_NONBLOCK;
		r = st_submit(fd, &op);
		ASSERT_EQ(0, r) TH_LOG("request %u of %u: %s", i, max,
				       st_errname(r));
		reqs[i] = op.out_req;
	}
	ASSERT_OK(st_info_fresh(&held));
	{
		struct coll_op op = st_op(comm, COLL_BARRIER, 0, 0, 0, NULL,
					  NULL, 0);

		op.flags = COLL_OP_F_NONBLOCK;
		ASSERT_ERR(ENOSPC, st_submit(fd, &op));
		/* a blocking call is not a request: still fine */
		op.flags = 0;
		ASSERT_OK(st_submit(fd, &op));
	}
	ASSERT_INFO_SETTLES(&held);
	slab1 = meminfo_kb("Slab");
	TH_LOG("%u uncollected requests: out_reqs %llu, kernel bytes +%lld (%.0f per request), Slab +%ld kB, ops in flight %llu",
	       max, (unsigned long long)held.out_reqs,
	       (long long)(held.out_kernel_bytes - before.out_kernel_bytes),
	       (double)(held.out_kernel_bytes - before.out_kernel_bytes) / max,
	       slab1 - slab0, (unsigned long long)held.out_ops);
	EXPECT_EQ(before.out_reqs + max, held.out_reqs);
	EXPECT_EQ(before.out_ops, held.out_ops);
	EXPECT_LE(held.out_kernel_bytes - before.out_kernel_bytes,
		  (uint64_t)max * 256);
	if (slab0 >= 0 && slab1 >= 0)
		EXPECT_LE(slab1 - slab0, (long)max * 512 / 1024 + 2048);
	ASSERT_EQ(1, st_poll_in(fd, 0));

	for (i = 0; i < max; i++)
		ASSERT_OK(st_wait(fd, reqs[i], OP_MS));
	ASSERT_EQ(0, st_poll_in(fd, 0));
	ASSERT_OK(st_info_fresh(&after));
	EXPECT_EQ(before.out_reqs, after.out_reqs);
	EXPECT_EQ(before.out_kernel_bytes, after.out_kernel_bytes);
	free(reqs);
	close(fd);
}

/* ---- many ranks, many uncollected AllReduces ------------------------------------ */

/*
 * COLL_HARDEN_QUICK=1 (the debug kernel, ~50x slower) scales the two big
 * cases down: 16 ranks x 50 requests, 64 MiB pinned.
 */
static bool quick(void)
{
	const char *e = getenv("COLL_HARDEN_QUICK");

	return e && *e == '1';
}

#define MANY_MAX_RANKS	64
#define MANY_RANKS	(quick() ? 16 : MANY_MAX_RANKS)
#define MANY_MAX_OPS	200
#define MANY_OPS	(quick() ? 50 : MANY_MAX_OPS)
#define MANY_ELEMS	256		/* 1 KiB of int32 */

struct many_shm {
	struct st_oob oob;
	uint8_t id[COLL_ID_BYTES];
	struct coll_info before, held, after;
	long slab0, slab1;
	int bad;
};

static int many_rank(int rank, void *arg)
{
	struct many_shm *sh = arg;
	int32_t *send, *recv;
	uint32_t comm, reqs[MANY_MAX_OPS];
	int fd, i, r, ret = 0;

	send = st_map(MANY_ELEMS * 4);
	recv = st_map((size_t)MANY_MAX_OPS * MANY_ELEMS * 4);
	fd = st_dev_open();
	if (!send || !recv || fd < 0)
		return 2;
	fill(send, MANY_ELEMS, rank + 1);
	r = st_comm_init(fd, MANY_RANKS, rank, sh->id, 60000, &comm);
	if (r) {
		st_log("rank %d: join: %s", rank, st_errname(r));
		return 3;
	}
	if (st_oob_barrier(&sh->oob, MANY_RANKS, 120000))
		return 4;
	for (i = 0; i < MANY_OPS; i++) {
		struct coll_op op = st_op(comm, COLL_ALLREDUCE, COLL_INT32,
					  COLL_SUM, 0, send,
					  recv + (size_t)i * MANY_ELEMS,
					  MANY_ELEMS);

		op.flags = COLL_OP_F_NONBLOCK;
		r = st_submit(fd, &op);
		if (r) {
			st_log("rank %d: submit %d: %s", rank, i,
			       st_errname(r));
			return 5;
		}
		reqs[i] = op.out_req;
	}
	if (st_oob_barrier(&sh->oob, MANY_RANKS, 300000))
		return 6;
	/* Rank 0 measures once every collective has completed. */
	if (!rank) {
		int64_t end = st_now_ns() + 300 * 1000000000LL;

		do {
			st_sleep_ms(50);
			if (st_info_fresh(&sh->held))
				return 7;
		} while (sh->held.out_ops && st_now_ns() < end);
		sh->slab1 = meminfo_kb("Slab");
	}
	if (st_oob_barrier(&sh->oob, MANY_RANKS, 400000))
		return 8;
	for (i = 0; i < MANY_OPS; i++) {
		r = st_wait(fd, reqs[i], OP_MS);
		if (r) {
			st_log("rank %d: wait %d: %s", rank, i, st_errname(r));
			ret = 9;
		} else if (!all_eq(recv + (size_t)i * MANY_ELEMS, MANY_ELEMS,
				   MANY_RANKS * (MANY_RANKS + 1) / 2)) {
			st_log("rank %d: AllReduce %d: wrong result", rank, i);
			ret = 10;
		}
	}
	if (st_oob_barrier(&sh->oob, MANY_RANKS, 120000))
		return 11;
	st_comm_destroy(fd, comm);
	close(fd);
	return ret;
}

/*
 * 64 ranks x 200 completed but uncollected 1 KiB AllReduces (the review's
 * case: slab grew from 17 to 105 MB and COLL_INFO showed nothing).  Now
 * the collectives are gone once complete; what is held is counted and
 * small; the results were all delivered.
 */
HTEST(uncollected_allreduces_64_ranks, 600)
{
	struct many_shm *sh = st_shared(sizeof(*sh));
	struct st_ranks rk;
	long long kb;
	int bad, i;

	NEED_DEVICE();
	ASSERT_NE(NULL, sh);
	st_random_id(sh->id);
	ASSERT_OK(st_info_fresh(&sh->before));
	sh->slab0 = meminfo_kb("Slab");
	ASSERT_OK(st_ranks_spawn(&rk, MANY_RANKS, many_rank, sh));
	bad = st_ranks_wait(&rk, 580000, 20000);
	for (i = 0; i < rk.n && bad; i++) {
		char st[64];

		TH_LOG("rank %d: %s", i, st_status_str(&rk, i, st, sizeof(st)));
	}
	ASSERT_EQ(0, bad);
	kb = sh->held.out_kernel_bytes - sh->before.out_kernel_bytes;
	TH_LOG("%d ranks x %d uncollected: out_reqs %llu, ops in flight %llu, kernel bytes +%lld (%.0f per request), Slab +%ld kB",
	       MANY_RANKS, MANY_OPS, (unsigned long long)sh->held.out_reqs,
	       (unsigned long long)sh->held.out_ops, kb,
	       (double)kb / (MANY_RANKS * MANY_OPS), sh->slab1 - sh->slab0);
	EXPECT_EQ(0, sh->held.out_ops);
	EXPECT_EQ(sh->before.out_reqs + MANY_RANKS * MANY_OPS,
		  sh->held.out_reqs);
	/*
	 * requests, 64 descriptors and memberships, one communicator, plans,
	 * and the registration caches' entries (up to reg_cache buffers per
	 * descriptor stay pinned: 65 here, about 250 bytes each; +1.16 MB
	 * in all measured)
	 */
	EXPECT_LE(kb, (long long)MANY_RANKS * MANY_OPS * 256 +
		      MANY_RANKS * 4096 + (1 << 20));
	if (sh->slab0 >= 0 && sh->slab1 >= 0)
		EXPECT_LE(sh->slab1 - sh->slab0, 16 * 1024);
	ASSERT_EQ(0, info_settle_all(&sh->before, &sh->after, 10000));
	munmap(sh, sizeof(*sh));
}

/* ---- communicators per process -------------------------------------------------- */

static int max_comms_child(int unused, void *arg)
{
	uint32_t c[3];
	int fd = st_dev_open(), i, r;

	(void)unused;
	(void)arg;
	if (fd < 0)
		return 2;
	/* Its own count: the parent's memberships do not count here. */
	for (i = 0; i < 3; i++)
		if (one_rank(fd, &c[i]))
			return 3 + i;
	r = one_rank(fd, &c[0]);
	if (r != -EMFILE) {
		st_log("child: 4th communicator: %s", st_errname(r));
		return 6;
	}
	close(fd);
	return 0;
}

HTEST(comms_capped_per_process, 120)
{
	struct coll_info before;
	long old = st_param_get("max_comms");
	struct st_ranks rk;
	uint32_t c[4];
	char st[64];
	int fd, i;

	NEED_DEVICE();
	if (old < 0 || st_param_set("max_comms", 3))
		SKIP(return, "cannot set max_comms");
	fd = st_dev_open();
	for (i = 0; i < 3; i++)
		ASSERT_OK(one_rank(fd, &c[i]));
	ASSERT_OK(st_info_fresh(&before));
	EXPECT_EQ(3, before.out_max_comms);
	ASSERT_ERR(EMFILE, one_rank(fd, &c[3]));
	ASSERT_INFO_SETTLES(&before);
	/* Another descriptor of the same process counts too. */
	{
		int fd2 = st_dev_open();

		ASSERT_ERR(EMFILE, one_rank(fd2, &c[3]));
		close(fd2);
	}
	ASSERT_OK(st_ranks_spawn(&rk, 1, max_comms_child, NULL));
	EXPECT_EQ(0, st_ranks_wait(&rk, 20000, 0))
		TH_LOG("child: %s", st_status_str(&rk, 0, st, sizeof(st)));
	ASSERT_OK(st_comm_destroy(fd, c[1]));
	ASSERT_OK(one_rank(fd, &c[3]));
	close(fd);
	st_param_set("max_comms", old);
}

/*
 * copy_kernel (the local transport's copy, chosen at load) takes 0 or 1:
 * anything else is refused with EINVAL and changes nothing.
 */
HTEST(copy_kernel_param_checked, 30)
{
	long old = st_param_get("copy_kernel");

	NEED_DEVICE();
	ASSERT_TRUE(old == 0 || old == 1) TH_LOG("copy_kernel %ld", old);
	EXPECT_EQ(-EINVAL, st_param_set("copy_kernel", 2));
	EXPECT_EQ(-EINVAL, st_param_set("copy_kernel", -1));
	EXPECT_EQ(old, st_param_get("copy_kernel"));
	EXPECT_EQ(0, st_param_set("copy_kernel", !old));
	EXPECT_EQ(!old, st_param_get("copy_kernel"));
	ASSERT_EQ(0, st_param_set("copy_kernel", old));
	EXPECT_EQ(old, st_param_get("copy_kernel"));
}

/* ---- arguments that cannot be written back ----------------------------------------- */

HTEST(unwritable_info, 120)
{
	struct coll_info info = { .size = sizeof(info) }, *ro;
	int fd;

	NEED_DEVICE();
	fd = st_dev_open();
	ro = ro_dup(&info, sizeof(info));
	ASSERT_NE(NULL, ro);
	ASSERT_ERR(EFAULT, st_ioctl(fd, COLL_INFO, ro));
	close(fd);
}

/* A 1-rank join with a read-only argument: EFAULT, and no trace of it. */
HTEST(unwritable_comm_init_one_rank, 120)
{
	struct coll_comm_init ci = { .size = sizeof(ci), .nranks = 1,
				     .timeout_ms = JOIN_MS }, *ro;
	struct coll_info before;
	uint32_t comm;
	int fd;

	NEED_DEVICE();
	fd = st_dev_open();
	st_random_id(ci.id);
	ro = ro_dup(&ci, sizeof(ci));
	ASSERT_NE(NULL, ro);
	ASSERT_OK(st_info_fresh(&before));
	ASSERT_ERR(EFAULT, st_ioctl(fd, COLL_COMM_INIT, ro));
	ASSERT_INFO_SETTLES(&before);
	/* Not registered: the same id with another size is not EPROTO. */
	ASSERT_ERR(ETIMEDOUT, st_comm_init(fd, 2, 0, ci.id, 300, &comm));
	ASSERT_OK(st_comm_init(fd, 1, 0, ci.id, JOIN_MS, &comm));
	close(fd);
}

struct pair_shm {
	uint8_t id[COLL_ID_BYTES];
	int joined;		/* the peer's join returned (1 + errno) */
	int go;			/* the parent asks the peer to submit */
	int done;		/* the peer's collective returned (1 + errno) */
	int ok;			/* its result was right */
	int count;
};

/*
 * Rank 1: joins, then runs a blocking AllReduce of 2 each time told to (as
 * rank 0 does: blocking and non-blocking calls do not match).
 */
static int pair_peer(int unused, void *arg)
{
	struct pair_shm *sh = arg;
	int32_t *send = st_map(NELEM * 4), *recv = st_map(NELEM * 4);
	uint32_t comm;
	int fd = st_dev_open(), r, k;

	(void)unused;
	if (fd < 0 || !send || !recv)
		return 2;
	r = st_comm_init(fd, 2, 1, sh->id, JOIN_MS, &comm);
	__atomic_store_n(&sh->joined, 1 - r, __ATOMIC_RELEASE);
	if (r)
		return 3;
	fill(send, NELEM, 2);
	for (k = 1; k <= sh->count; k++) {
		struct coll_op op;

		if (st_wait_ge(&sh->go, k, OP_MS))
			return 4;
		memset(recv, POISON, NELEM * 4);
		op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0,
			   send, recv, NELEM);
		r = st_submit(fd, &op);
		__atomic_store_n(&sh->ok, r == 0 && all_eq(recv, NELEM, 3),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&sh->done, k * 100 + (r ? -r : 0),
				 __ATOMIC_RELEASE);
	}
	close(fd);
	return 0;
}

static struct pair_shm *pair_start(struct st_ranks *rk, int count)
{
	struct pair_shm *sh = st_shared(sizeof(*sh));

	if (!sh)
		return NULL;
	st_random_id(sh->id);
	sh->count = count;
	if (st_ranks_spawn(rk, 1, pair_peer, sh)) {
		munmap(sh, sizeof(*sh));
		return NULL;
	}
	return sh;
}

/*
 * Two ranks: rank 0's join with a read-only argument fails with EFAULT
 * before it enters the communicator, so rank 1's join does not complete;
 * rank 0's next (good) join completes both, and the communicator works.
 */
HTEST(unwritable_comm_init_two_ranks, 120)
{
	struct coll_comm_init ci = { .size = sizeof(ci), .nranks = 2,
				     .timeout_ms = JOIN_MS }, *ro;
	int32_t send[NELEM], recv[NELEM];
	struct pair_shm *sh;
	struct st_ranks rk;
	struct coll_op op;
	uint32_t comm;
	int fd;

	NEED_DEVICE();
	sh = pair_start(&rk, 1);
	ASSERT_NE(NULL, sh);
	fd = st_dev_open();
	memcpy(ci.id, sh->id, COLL_ID_BYTES);
	ro = ro_dup(&ci, sizeof(ci));
	ASSERT_NE(NULL, ro);
	ASSERT_ERR(EFAULT, st_ioctl(fd, COLL_COMM_INIT, ro));
	st_sleep_ms(300);
	ASSERT_EQ(0, __atomic_load_n(&sh->joined, __ATOMIC_ACQUIRE))
		TH_LOG("the peer's join completed with a failed rank 0");
	ASSERT_OK(st_comm_init(fd, 2, 0, sh->id, JOIN_MS, &comm));
	ASSERT_EQ(0, st_wait_ge(&sh->joined, 1, JOIN_MS));
	ASSERT_EQ(1, sh->joined);
	fill(send, NELEM, 1);
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0, send, recv,
		   NELEM);
	ASSERT_OK(st_submit(fd, &op));
	EXPECT_TRUE(all_eq(recv, NELEM, 3));
	ASSERT_EQ(0, st_wait_ge(&sh->done, 100, OP_MS));
	EXPECT_EQ(100, sh->done);
	EXPECT_TRUE(sh->ok);
	EXPECT_EQ(0, st_ranks_wait(&rk, OP_MS, 0));
	close(fd);
}

/* COMM_DESTROY has no output: a read-only argument works. */
HTEST(unwritable_comm_destroy, 120)
{
	struct coll_comm_destroy cd = { .size = sizeof(cd) }, *ro;
	struct coll_op op;
	int fd;

	NEED_DEVICE();
	fd = st_dev_open();
	ASSERT_OK(one_rank(fd, &cd.comm));
	ro = ro_dup(&cd, sizeof(cd));
	ASSERT_NE(NULL, ro);
	ASSERT_OK(st_ioctl(fd, COLL_COMM_DESTROY, ro));
	op = st_op(cd.comm, COLL_BARRIER, 0, 0, 0, NULL, NULL, 0);
	ASSERT_ERR(ENOENT, st_submit(fd, &op));
	close(fd);
}

/*
 * A non-blocking submission whose out_req cannot be written: EFAULT with
 * nothing pinned, nothing run, no request, nothing for poll(); a blocking
 * one (no output) works.
 */
HTEST(unwritable_submit_one_rank, 120)
{
	int32_t *send = st_map(NELEM * 4), *recv = st_map(NELEM * 4);
	struct coll_info before, now;
	struct coll_op op, *ro;
	uint32_t comm;
	int fd;

	NEED_DEVICE();
	ASSERT_NE(NULL, send);
	ASSERT_NE(NULL, recv);
	fd = st_dev_open();
	ASSERT_OK(one_rank(fd, &comm));
	fill(send, NELEM, 7);
	memset(recv, POISON, NELEM * 4);
	op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0, send, recv,
		   NELEM);
	op.flags = COLL_OP_F_NONBLOCK;
	ro = ro_dup(&op, sizeof(op));
	ASSERT_NE(NULL, ro);
	ASSERT_OK(st_info_fresh(&before));
	ASSERT_ERR(EFAULT, st_submit(fd, ro));
	ASSERT_INFO_SETTLES(&before);
	EXPECT_EQ(0, st_poll_in(fd, 200));
	EXPECT_EQ(NELEM * 4, st_find_not(recv, POISON, NELEM * 4));
	ASSERT_OK(st_info_fresh(&now));
	EXPECT_EQ(before.out_ops_total, now.out_ops_total);

	op.flags = 0;
	ro = ro_dup(&op, sizeof(op));
	ASSERT_NE(NULL, ro);
	ASSERT_OK(st_submit(fd, ro));
	EXPECT_TRUE(all_eq(recv, NELEM, 7));
	close(fd);
}

/*
 * Two ranks: rank 0's failed (EFAULT) non-blocking submission takes no
 * sequence number, so the next AllReduce of both ranks pairs correctly.
 */
HTEST(unwritable_submit_two_ranks, 120)
{
	int32_t send[NELEM], recv[NELEM];
	struct pair_shm *sh;
	struct st_ranks rk;
	struct coll_op op, *ro;
	uint32_t comm;
	int fd;

	NEED_DEVICE();
	sh = pair_start(&rk, 1);
	ASSERT_NE(NULL, sh);
	fd = st_dev_open();
	ASSERT_OK(st_comm_init(fd, 2, 0, sh->id, JOIN_MS, &comm));
	fill(send, NELEM, 1);
	op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0, send, recv,
		   NELEM);
	op.flags = COLL_OP_F_NONBLOCK;
	ro = ro_dup(&op, sizeof(op));
	ASSERT_NE(NULL, ro);
	ASSERT_ERR(EFAULT, st_submit(fd, ro));

	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	memset(recv, POISON, sizeof(recv));
	op.flags = 0;
	ASSERT_OK(st_submit(fd, &op));
	EXPECT_TRUE(all_eq(recv, NELEM, 3));
	ASSERT_EQ(0, st_wait_ge(&sh->done, 100, OP_MS));
	EXPECT_EQ(100, sh->done) TH_LOG("peer: %s",
				       st_errname(sh->done - 100));
	EXPECT_TRUE(sh->ok);
	EXPECT_EQ(0, st_ranks_wait(&rk, OP_MS, 0));
	close(fd);
}

/* WAIT and TEST have no output: read-only arguments work. */
HTEST(unwritable_wait_and_test, 120)
{
	struct coll_wait w = { .size = sizeof(w) }, *ro;
	struct coll_op op;
	uint32_t comm;
	int fd;

	NEED_DEVICE();
	fd = st_dev_open();
	ASSERT_OK(one_rank(fd, &comm));
	op = st_op(comm, COLL_BARRIER, 0, 0, 0, NULL, NULL, 0);
	op.flags = COLL_OP_F_NONBLOCK;
	ASSERT_OK(st_submit(fd, &op));
	w.req = op.out_req;
	ro = ro_dup(&w, sizeof(w));
	ASSERT_NE(NULL, ro);
	ASSERT_OK(st_ioctl(fd, COLL_WAIT, ro));
	ASSERT_OK(st_submit(fd, &op));
	w.req = op.out_req;
	ro = ro_dup(&w, sizeof(w));
	ASSERT_NE(NULL, ro);
	ASSERT_EQ(1, st_poll_in(fd, OP_MS));
	ASSERT_OK(st_ioctl(fd, COLL_TEST, ro));
	close(fd);
}

/* ---- handles and waits ---------------------------------------------------------------- */

/* A released handle is not handed out again soon (requests and members). */
HTEST(handles_not_reused, 120)
{
	enum { N = 1000 };
	uint32_t comm, h, m0, m1;
	volatile uint32_t first = 0;
	int fd, i;

	NEED_DEVICE();
	fd = st_dev_open();
	ASSERT_OK(one_rank(fd, &comm));
	for (i = 0; i < N; i++) {
		struct coll_op op = st_op(comm, COLL_BARRIER, 0, 0, 0, NULL,
					  NULL, 0);

		op.flags = COLL_OP_F_NONBLOCK;
		ASSERT_OK(st_submit(fd, &op));
		h = op.out_req;
		if (!i)
			first = h;
		else
			ASSERT_NE(first, h) TH_LOG("handle reused after %d", i);
		ASSERT_OK(st_wait(fd, h, OP_MS));
	}
	ASSERT_OK(one_rank(fd, &m0));
	ASSERT_OK(st_comm_destroy(fd, m0));
	ASSERT_OK(one_rank(fd, &m1));
	EXPECT_NE(m0, m1);
	close(fd);
}

struct waiter {
	int fd;
	uint32_t req;
	int ret;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = st_wait(w->fd, w->req, OP_MS);
	return NULL;
}

/*
 * Four threads wait on one pending handle: all return once it completes,
 * exactly one with the result, the others with ENOENT.
 */
HTEST(concurrent_waits_one_handle, 120)
{
	enum { NW = 4 };
	int32_t send[NELEM], recv[NELEM];
	struct waiter w[NW];
	pthread_t th[NW];
	struct pair_shm *sh;
	struct st_ranks rk;
	struct coll_op op;
	uint32_t comm;
	int fd, i, ok = 0, enoent = 0;

	NEED_DEVICE();
	sh = pair_start(&rk, 1);
	ASSERT_NE(NULL, sh);
	fd = st_dev_open();
	ASSERT_OK(st_comm_init(fd, 2, 0, sh->id, JOIN_MS, &comm));
	fill(send, NELEM, 1);
	op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0, send, recv,
		   NELEM);
	op.flags = COLL_OP_F_NONBLOCK;
	ASSERT_OK(st_submit(fd, &op));
	for (i = 0; i < NW; i++) {
		w[i] = (struct waiter){ .fd = fd, .req = op.out_req };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, waiter_main, &w[i]));
	}
	st_sleep_ms(200);	/* they are all waiting: the peer has not come */
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NW; i++) {
		pthread_join(th[i], NULL);
		if (!w[i].ret)
			ok++;
		else if (w[i].ret == -ENOENT)
			enoent++;
		else
			TH_LOG("waiter %d: %s", i, st_errname(w[i].ret));
	}
	EXPECT_EQ(1, ok);
	EXPECT_EQ(NW - 1, enoent);
	EXPECT_TRUE(all_eq(recv, NELEM, 3));
	ASSERT_ERR(ENOENT, st_test(fd, op.out_req));
	EXPECT_EQ(0, st_ranks_wait(&rk, OP_MS, 0));
	close(fd);
}

/* ---- a descriptor shared by fork, one holder killed ------------------------------------- */

struct fork_shm {
	uint8_t id[COLL_ID_BYTES];
	int joined;
	int killed;
	int peer_ret;		/* 1 + errno of the peer's next collective */
	int64_t peer_ns;	/* how long it took */
};

static int fork_peer(int unused, void *arg)
{
	struct fork_shm *sh = arg;
	int32_t send[NELEM], recv[NELEM];
	struct coll_op op;
	uint32_t comm;
	int64_t t0;
	int fd = st_dev_open(), r;

	(void)unused;
	if (fd < 0 || st_comm_init(fd, 2, 1, sh->id, JOIN_MS, &comm))
		return 2;
	__atomic_store_n(&sh->joined, 1, __ATOMIC_RELEASE);
	if (st_wait_ge(&sh->killed, 1, OP_MS))
		return 3;
	fill(send, NELEM, 2);
	op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0, send, recv,
		   NELEM);
	op.flags = COLL_OP_F_NONBLOCK;
	t0 = st_now_ns();
	r = st_submit(fd, &op);
	if (!r)
		r = st_wait(fd, op.out_req, 10000);
	sh->peer_ns = st_now_ns() - t0;
	__atomic_store_n(&sh->peer_ret, 1 - r, __ATOMIC_RELEASE);
	close(fd);
	return 0;
}

/*
 * Rank 0's descriptor is shared with a forked child; the child is
 * SIGKILLed in the middle of a collective.  The membership is then dead
 * for every holder: the parent's next collective and the peer's fail
 * with ECONNRESET at once, nobody hangs, nothing stays pinned.
 */
HTEST(shared_descriptor_holder_killed, 120)
{
	int32_t send[NELEM], recv[NELEM];
	struct coll_info before, after;
	struct fork_shm *sh = st_shared(sizeof(*sh));
	struct st_ranks rk;
	struct coll_op op;
	uint32_t comm;
	pid_t child;
	int fd, st;

	NEED_DEVICE();
	ASSERT_NE(NULL, sh);
	ASSERT_OK(st_info_fresh(&before));
	st_random_id(sh->id);
	ASSERT_OK(st_ranks_spawn(&rk, 1, fork_peer, sh));
	fd = st_dev_open();
	ASSERT_OK(st_comm_init(fd, 2, 0, sh->id, JOIN_MS, &comm));
	ASSERT_EQ(0, st_wait_ge(&sh->joined, 1, JOIN_MS));
	fill(send, NELEM, 1);

	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		/* Blocks: the peer does not come until this one is dead. */
		op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0,
			   send, recv, NELEM);
		st_submit(fd, &op);
		_exit(0);
	}
	st_sleep_ms(300);
	kill(child, SIGKILL);
	ASSERT_EQ(child, waitpid(child, &st, 0));
	ASSERT_TRUE(WIFSIGNALED(st));
	__atomic_store_n(&sh->killed, 1, __ATOMIC_RELEASE);

	op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0, send, recv,
		   NELEM);
	op.flags = COLL_OP_F_NONBLOCK;
	ASSERT_ERR(ECONNRESET, st_submit(fd, &op));
	ASSERT_EQ(0, st_wait_ge(&sh->peer_ret, 1, OP_MS));
	EXPECT_EQ(1 + ECONNRESET, sh->peer_ret)
		TH_LOG("peer: %s", st_errname(1 - sh->peer_ret));
	TH_LOG("peer's ECONNRESET after %.3f s", sh->peer_ns / 1e9);
	EXPECT_LT(sh->peer_ns, 5000000000LL);
	EXPECT_EQ(0, st_ranks_wait(&rk, OP_MS, 0));
	close(fd);
	ASSERT_EQ(0, st_info_settle(&before, &after, 5000));
}

/* ---- two threads of one process, two communicators ---------------------------------------- */

#define TT_ITERS 100

struct tt_shm {
	uint8_t id[2][COLL_ID_BYTES];
	int bad[2];
};

struct tt_thread {
	int fd;
	int which;
	struct tt_shm *sh;
	int ret;
};

/* Rank @rank of communicator @which: TT_ITERS AllReduces of known values. */
static int tt_loop(int fd, int which, int rank, struct tt_shm *sh)
{
	int32_t send[NELEM], recv[NELEM];
	uint32_t comm;
	int it, r, i;

	r = st_comm_init(fd, 2, rank, sh->id[which], JOIN_MS, &comm);
	if (r)
		return 10 + -r;
	for (it = 0; it < TT_ITERS; it++) {
		struct coll_op op;

		for (i = 0; i < NELEM; i++)
			send[i] = (which + 1) * 1000000 + it * 1000 + rank + i;
		op = st_op(comm, it % 3 ? COLL_ALLREDUCE : COLL_ALLGATHER,
			   COLL_INT32, it % 3 ? COLL_SUM : 0, 0, send, recv,
			   it % 3 ? NELEM : NELEM / 2);
		r = st_submit(fd, &op);
		if (r)
			return 100 + -r;
		for (i = 0; i < (it % 3 ? NELEM : NELEM / 2); i++) {
			int32_t base = (which + 1) * 1000000 + it * 1000;
			int32_t want = it % 3 ? 2 * base + 1 + 2 * i :
					base + i;
			int32_t want1 = base + 1 + i;

			if (recv[i] != want ||
			    (!(it % 3) && recv[NELEM / 2 + i] != want1)) {
				__atomic_store_n(&sh->bad[which], 1,
						 __ATOMIC_RELAXED);
				return 7;
			}
		}
	}
	return 0;
}

static int tt_peer(int rank, void *arg)
{
	int fd = st_dev_open();

	if (fd < 0)
		return 2;
	return tt_loop(fd, rank, 1, arg);
}

static void *tt_thread_main(void *arg)
{
	struct tt_thread *t = arg;

	t->ret = tt_loop(t->fd, t->which, 0, t->sh);
	return NULL;
}

/* Two threads on one descriptor, each rank 0 of its own communicator. */
HTEST(two_threads_two_communicators, 120)
{
	struct tt_shm *sh = st_shared(sizeof(*sh));
	struct tt_thread t[2];
	pthread_t th[2];
	struct st_ranks rk;
	int fd, i;

	NEED_DEVICE();
	ASSERT_NE(NULL, sh);
	st_random_id(sh->id[0]);
	st_random_id(sh->id[1]);
	ASSERT_OK(st_ranks_spawn(&rk, 2, tt_peer, sh));
	fd = st_dev_open();
	for (i = 0; i < 2; i++) {
		t[i] = (struct tt_thread){ .fd = fd, .which = i, .sh = sh };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, tt_thread_main,
					    &t[i]));
	}
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, t[i].ret) TH_LOG("thread %d", i);
	}
	EXPECT_EQ(0, st_ranks_wait(&rk, 60000, 5000));
	EXPECT_EQ(0, sh->bad[0]);
	EXPECT_EQ(0, sh->bad[1]);
	close(fd);
}

/* ---- pinning does not hold the descriptor's lock ------------------------------------------- */

#define PIN_BYTES	(quick() ? 64UL << 20 : 512UL << 20)

struct pin_state {
	int fd;
	uint32_t comm;
	void *buf;
	int started;
	int finished;
	int ret;
};

static void *pin_thread(void *arg)
{
	struct pin_state *ps = arg;
	/* One page more than is mapped: the pin runs to the end, then fails. */
	struct coll_op op = st_op(ps->comm, COLL_BROADCAST, COLL_UINT8, 0, 0,
				  ps->buf, ps->buf, PIN_BYTES + 4096);

	__atomic_store_n(&ps->started, 1, __ATOMIC_RELEASE);
	ps->ret = st_submit(ps->fd, &op);
	__atomic_store_n(&ps->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * While one thread pins half a gigabyte, another thread's COLL_TEST and
 * poll() on the same descriptor complete: pinning holds no lock they need.
 */
HTEST(pin_does_not_stall_descriptor, 300)
{
	struct pin_state ps = { 0 };
	pthread_t th;
	int64_t t0;
	long during = 0;
	uint8_t *guard;

	NEED_DEVICE();
	ps.fd = st_dev_open();
	ASSERT_OK(one_rank(ps.fd, &ps.comm));
	/* Not populated: the pin faults every page in, which takes a while. */
	ps.buf = mmap(NULL, PIN_BYTES + 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ps.buf);
	guard = (uint8_t *)ps.buf + PIN_BYTES;
	ASSERT_EQ(0, munmap(guard, 4096));
	ASSERT_EQ(0, pthread_create(&th, NULL, pin_thread, &ps));
	ASSERT_EQ(0, st_wait_ge(&ps.started, 1, 10000));
	t0 = st_now_ns();
	while (!__atomic_load_n(&ps.finished, __ATOMIC_ACQUIRE)) {
		int r = st_test(ps.fd, 12345);

		st_poll_in(ps.fd, 0);
		if (!__atomic_load_n(&ps.finished, __ATOMIC_ACQUIRE)) {
			if (r != -ENOENT)
				TH_LOG("COLL_TEST: %s", st_errname(r));
			during++;
		}
	}
	pthread_join(th, NULL);
	ASSERT_EQ(-EFAULT, ps.ret);
	TH_LOG("pinning %lu MiB took %.3f s; %ld COLL_TEST+poll calls completed meanwhile",
	       PIN_BYTES >> 20, (st_now_ns() - t0) / 1e9, during);
	if ((st_now_ns() - t0) < 100000000LL && !during)
		SKIP(return, "pinning was too fast to tell");
	EXPECT_GT(during, 0);
	munmap(ps.buf, PIN_BYTES);
	close(ps.fd);
}

/* ---- network namespaces ----------------------------------------------------------------------- */

struct ns_shm {
	uint8_t id[COLL_ID_BYTES];
	int ret[5];
};

/* Join rank @rank of 2 and AllReduce @val; 0 or an error code. */
static int ns_member(struct ns_shm *sh, int rank, int32_t val, int32_t want,
		     uint32_t timeout_ms)
{
	int32_t send[64], recv[64];
	struct coll_op op;
	uint32_t comm;
	int fd = st_dev_open(), r, i;

	if (fd < 0)
		return 100;
	r = st_comm_init(fd, 2, rank, sh->id, timeout_ms, &comm);
	if (r)
		return -r;
	for (i = 0; i < 64; i++)
		send[i] = val;
	op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0, send, recv,
		   64);
	r = st_submit(fd, &op);
	if (r)
		return 200 + -r;
	for (i = 0; i < 64; i++)
		if (recv[i] != want)
			return 300;
	close(fd);
	return 0;
}

static int ns_proc(int which, void *arg)
{
	struct ns_shm *sh = arg;
	pid_t pid;
	int st;

	switch (which) {
	case 0:		/* both ranks of the id in a new namespace */
		if (unshare(CLONE_NEWNET))
			return 101;
		pid = fork();
		if (pid < 0)
			return 102;
		if (!pid)
			_exit(ns_member(sh, 1, 2, 3, JOIN_MS));
		sh->ret[0] = ns_member(sh, 0, 1, 3, JOIN_MS);
		waitpid(pid, &st, 0);
		sh->ret[1] = WIFEXITED(st) ? WEXITSTATUS(st) : 103;
		return 0;
	case 1:		/* both ranks of the same id in this namespace */
	case 2:
		sh->ret[which + 1] = ns_member(sh, which - 1, 10 * which, 30,
					       JOIN_MS);
		return 0;
	case 3:		/* alone in a third namespace: nobody to meet */
		if (unshare(CLONE_NEWNET))
			return 101;
		sh->ret[4] = ns_member(sh, 0, 1, 1, 1000);
		return 0;
	}
	return 1;
}

/*
 * The same id in two network namespaces names two communicators, each
 * complete and correct; a third namespace's rank finds no one (it would
 * get EBUSY, the rank being taken, if the registry were global).
 */
HTEST(communicators_scoped_to_netns, 120)
{
	struct ns_shm *sh = st_shared(sizeof(*sh));
	struct st_ranks rk;
	int i;

	NEED_DEVICE();
	ASSERT_NE(NULL, sh);
	st_random_id(sh->id);
	memset(sh->ret, 0x7f, sizeof(sh->ret));
	ASSERT_OK(st_ranks_spawn(&rk, 4, ns_proc, sh));
	ASSERT_EQ(0, st_ranks_wait(&rk, 60000, 10000));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, sh->ret[i]) TH_LOG("member %d: %d", i, sh->ret[i]);
	EXPECT_EQ(ETIMEDOUT, sh->ret[4]);
}

/* ---- memory cgroup charging ------------------------------------------------------------------------ */

struct cg_shm {
	long long kbytes;	/* COLL_INFO's kernel bytes, held */
	long long charged;	/* the cgroup's memory.current, held */
	int ret;
};

static long long cg_read(const char *dir, const char *file)
{
	char path[256], buf[64];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 10);
	fclose(f);
	return v;
}

static int cg_write(const char *dir, const char *file, const char *val)
{
	char path[256];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ret = fputs(val, f) >= 0 ? 0 : -EIO;
	if (fclose(f))
		ret = -errno;
	return ret;
}

static char cg_dir[128];

#define CG_FDS 16

static int cg_child(int unused, void *arg)
{
	struct cg_shm *sh = arg;
	struct coll_info before, held;
	long long c0, c1;
	char pid[32];
	uint32_t comm, i, n;
	int fd[CG_FDS], k;

	(void)unused;
	snprintf(pid, sizeof(pid), "%d\n", getpid());
	if (cg_write(cg_dir, "cgroup.procs", pid))
		return 2;
	if (st_info_fresh(&before))
		return 3;
	c0 = cg_read(cg_dir, "memory.current");
	n = before.out_max_requests;
	/*
	 * Enough that the charges exceed the per-cpu batch that memcg
	 * charges ahead (64 pages): every descriptor full of requests.
	 */
	for (k = 0; k < CG_FDS; k++) {
		fd[k] = st_dev_open();
		if (fd[k] < 0 || one_rank(fd[k], &comm))
			return 4;
		for (i = 0; i < n; i++) {
			struct coll_op op = st_op(comm, COLL_BARRIER, 0, 0, 0,
						  NULL, NULL, 0);

			op.flags = COLL_OP_F_NONBLOCK;
			if (st_submit(fd[k], &op))
				return 5;
		}
	}
	c1 = cg_read(cg_dir, "memory.current");
	if (st_info_fresh(&held))
		return 6;
	sh->kbytes = held.out_kernel_bytes - before.out_kernel_bytes;
	sh->charged = c1 - c0;
	for (k = 0; k < CG_FDS; k++)
		close(fd[k]);
	return 0;
}

/*
 * What a user makes the module allocate is charged to its memory cgroup.
 * 65536 submissions and 16 closes take seconds here, minutes under the
 * debug kernel on a busy host: the child has 240 s.
 */
HTEST(kernel_memory_charged_to_memcg, 300)
{
	struct cg_shm *sh = st_shared(sizeof(*sh));
	struct st_ranks rk;
	char st[64];

	NEED_DEVICE();
	ASSERT_NE(NULL, sh);
	if (access("/sys/fs/cgroup/cgroup.controllers", R_OK))
		SKIP(return, "no cgroup2 at /sys/fs/cgroup");
	cg_write("/sys/fs/cgroup", "cgroup.subtree_control", "+memory");
	snprintf(cg_dir, sizeof(cg_dir), "/sys/fs/cgroup/coll-harden-%d",
		 getpid());
	if (mkdir(cg_dir, 0755) && errno != EEXIST)
		SKIP(return, "mkdir %s: %s", cg_dir, strerror(errno));
	if (cg_read(cg_dir, "memory.current") < 0) {
		rmdir(cg_dir);
		SKIP(return, "no memory controller");
	}
	ASSERT_OK(st_ranks_spawn(&rk, 1, cg_child, sh));
	EXPECT_EQ(0, st_ranks_wait(&rk, 240000, 0))
		TH_LOG("child: %s", st_status_str(&rk, 0, st, sizeof(st)));
	rmdir(cg_dir);
	TH_LOG("kernel bytes +%lld, the cgroup's memory.current +%lld",
	       sh->kbytes, sh->charged);
	EXPECT_GT(sh->kbytes, 0);
	EXPECT_GE(sh->charged, sh->kbytes / 2);
}

TEST_HARNESS_MAIN
