// SPDX-License-Identifier: GPL-2.0
/*
 * coll_map: the mapped slots (COLL_COMM_F_MAP, COLL_COMM_MAP, mmap,
 * COLL_MAP_WAIT, COLL_MAP_WAKE) and the library's mapped path.
 *
 * Raw ioctls, one rank: every field of COLL_COMM_MAP, COLL_MAP_WAIT and
 * COLL_MAP_WAKE refused with its errno, the layout and the header as the
 * uapi header says, every mmap() that must fail failing, a small blocking
 * COLL_SUBMIT refused with EXDEV with nothing written while what the slots
 * do not take still runs, the memory counted in COLL_INFO and given back.
 * Raw ioctls, two ranks: the join flags must agree (EPROTO); a sleeper in
 * COLL_MAP_WAIT is counted in the header and woken by COLL_MAP_WAKE (not
 * by its periodic look); a rank killed, or leaving, wakes a sleeper with
 * ECONNRESET within 1 s and marks the header dead, whose pages stay
 * readable while mapped.  Through the library: ranks that disagree (a
 * count, a forced algorithm, a group against a call) fail with EPROTO on
 * every rank and write nothing, and the next call is right; a rank killed
 * while the others loop on small AllReduces fails them with ECONNRESET
 * within 1 s, and the next call too.  Results element by element are
 * coll_correct's (which runs the mapped path by default).
 */
#include <sys/mman.h>

#include "coll_selftest.h"
#include "kselftest_harness.h"
#include "libcollective.h"

#define JOIN_MS		30000
#define STEP_MS		30000
#define BOUND_NS	1000000000LL

/* @call (0 or -errno) must fail with @err. */
#define ASSERT_FAILS(err, call) do {					\
	int __r = (call);						\
									\
	ASSERT_EQ(-(err), __r)						\
		TH_LOG("%s: got %s, want %s", #call, st_errname(__r),	\
		       st_errname(err));				\
} while (0)

static int comm_join(int fd, uint32_t n, uint32_t rank,
		     const uint8_t id[COLL_ID_BYTES], uint32_t flags,
		     uint32_t timeout_ms, uint32_t *comm)
{
	struct coll_comm_init ci = {
		.size = sizeof(ci),
		.flags = flags,
		.nranks = n,
		.rank = rank,
		.timeout_ms = timeout_ms,
	};
	int ret;

	memcpy(ci.id, id, COLL_ID_BYTES);
	ret = st_ioctl(fd, COLL_COMM_INIT, &ci);
	if (!ret)
		*comm = ci.out_comm;
	return ret;
}

static int comm_map(int fd, uint32_t comm, struct coll_comm_map *cm)
{
	memset(cm, 0, sizeof(*cm));
	cm->size = sizeof(*cm);
	cm->comm = comm;
	return st_ioctl(fd, COLL_COMM_MAP, cm);
}

/* mmap() of the slots: the address, or MAP_FAILED with -errno in *err. */
static void *map_slots(int fd, const struct coll_comm_map *cm, size_t len,
		       int prot, int flags, uint64_t off, int *err)
{
	void *p = mmap(NULL, len, prot, flags, fd, (off_t)off);

	*err = p == MAP_FAILED ? -errno : 0;
	return p;
}

/*
 * The slots a communicator of @nlocal ranks of this host gets when module
 * parameter map_slots is @param: clamped to 2..256; 0 chooses 64 when the
 * ranks outnumber the online CPUs, else 16.
 */
static long slots_for(long param, long nlocal)
{
	if (!param)
		return nlocal > sysconf(_SC_NPROCESSORS_ONLN) ? 64 : 16;
	return param < 2 ? 2 : param > 256 ? 256 : param;
}

static int map_wait(int fd, uint32_t comm, uint32_t what, uint32_t rank,
		    uint64_t seq, uint32_t timeout_ms)
{
	struct coll_map_wait w = {
		.size = sizeof(w), .comm = comm, .what = what, .rank = rank,
		.timeout_ms = timeout_ms, .seq = seq,
	};

	return st_ioctl(fd, COLL_MAP_WAIT, &w);
}

static int map_wake(int fd, uint32_t comm)
{
	struct coll_map_wake w = { .size = sizeof(w), .comm = comm };

	return st_ioctl(fd, COLL_MAP_WAKE, &w);
}

static struct coll_map_ctl *line(void *base, const struct coll_comm_map *cm,
				 uint32_t r)
{
	return (struct coll_map_ctl *)((char *)base + cm->out_ctl_offset +
				       r * COLL_MAP_LINE);
}

/* ---- one rank, raw ioctls ------------------------------------------- */

FIXTURE(one) {
	int fd;
	uint32_t comm;
	uint8_t id[COLL_ID_BYTES];
};

FIXTURE_SETUP(one)
{
	int r;

	self->fd = st_dev_open();
	if (self->fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-self->fd));
	if (st_param_get("map_bytes") <= 0)
		SKIP(return, "module parameter map_bytes is 0");
	st_random_id(self->id);
	r = comm_join(self->fd, 1, 0, self->id, COLL_COMM_F_MAP, JOIN_MS,
			    &self->comm);
	ASSERT_EQ(0, r) TH_LOG("COLL_COMM_INIT with COLL_COMM_F_MAP: %s",
			       st_errname(r));
}

FIXTURE_TEARDOWN(one)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* The layout and the header. */
TEST_F(one, layout)
{
	long map_bytes = st_param_get("map_bytes");
	long nslots = slots_for(st_param_get("map_slots"), 1);
	struct coll_comm_map cm;
	struct coll_map_hdr *h;
	long page = sysconf(_SC_PAGESIZE);
	void *p;
	int err;

	ASSERT_EQ(0, comm_map(self->fd, self->comm, &cm));
	EXPECT_EQ(nslots, cm.out_nslots);
	/* map_bytes in lines, and a page and a line between slots' starts */
	EXPECT_EQ(map_bytes / COLL_MAP_LINE * COLL_MAP_LINE + page +
		  COLL_MAP_LINE, cm.out_slot_bytes);
	EXPECT_EQ(page, cm.out_ctl_offset);
	EXPECT_LE(cm.out_ctl_offset + COLL_MAP_LINE, cm.out_desc_offset);
	EXPECT_LE(cm.out_desc_offset + nslots * sizeof(struct coll_map_desc),
		  cm.out_data_offset);
	EXPECT_EQ(0, cm.out_desc_offset % page);
	EXPECT_EQ(0, cm.out_data_offset % page);
	EXPECT_LE(cm.out_data_offset + nslots * cm.out_slot_bytes,
		  cm.out_bytes);
	EXPECT_GT(cm.out_data_offset + nslots * cm.out_slot_bytes + page,
		  cm.out_bytes);
	EXPECT_NE(0, cm.out_offset);
	EXPECT_EQ(0, cm.out_offset % page);

	/* a second call says the same */
	{
		struct coll_comm_map again;

		ASSERT_EQ(0, comm_map(self->fd, self->comm, &again));
		EXPECT_EQ(0, memcmp(&cm, &again, sizeof(cm)));
	}

	p = map_slots(self->fd, &cm, cm.out_bytes, PROT_READ | PROT_WRITE,
		      MAP_SHARED, cm.out_offset, &err);
	ASSERT_EQ(0, err) TH_LOG("mmap: %s", st_errname(err));
	h = p;
	EXPECT_EQ(COLL_MAP_MAGIC, h->magic);
	EXPECT_EQ(COLL_MAP_VERSION, h->version);
	EXPECT_EQ(1, h->nranks);
	EXPECT_EQ(nslots, h->nslots);
	EXPECT_EQ(cm.out_slot_bytes, h->slot_bytes);
	EXPECT_EQ(st_param_get("spin_ns"), h->spin_ns);
	EXPECT_EQ(COLL_MAP_LIVE, h->state);
	EXPECT_EQ(0, h->sleepers);
	/* zeroed: no line has a number, no slot has data */
	EXPECT_EQ(0, line(p, &cm, 0)->arrived);
	EXPECT_EQ(cm.out_bytes - cm.out_ctl_offset,
		  st_find_not((char *)p + cm.out_ctl_offset, 0,
			      cm.out_bytes - cm.out_ctl_offset));
	/* it does not grow */
	EXPECT_EQ(MAP_FAILED, mremap(p, cm.out_bytes, cm.out_bytes + page, 0));
	/* destroyed: the header says so, the pages stay readable */
	ASSERT_EQ(0, st_comm_destroy(self->fd, self->comm));
	EXPECT_EQ(COLL_MAP_DEAD, h->state);
	EXPECT_EQ(ECONNRESET, h->error);
	EXPECT_EQ(0, munmap(p, cm.out_bytes));
}

/*
 * Module parameter map_slots: read when a communicator's first rank joins
 * (a communicator keeps its count), clamped to 2..256, 0 the automatic
 * choice (16 for one rank).
 */
TEST(slot_count)
{
	static const long ask[] = { 5, 1, 0, 100000, 256 };
	long old = st_param_get("map_slots");
	struct coll_comm_map cm;
	uint8_t id[COLL_ID_BYTES];
	uint32_t comm, first = 0;
	unsigned int i;
	int fd, r;

	fd = st_dev_open();
	if (fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-fd));
	if (st_param_get("map_bytes") <= 0 || old < 0)
		SKIP(return, "module parameter map_bytes is 0 or map_slots unreadable");
	for (i = 0; i < ARRAY_SIZE(ask); i++) {
		ASSERT_EQ(0, st_param_set("map_slots", ask[i]));
		st_random_id(id);
		r = comm_join(fd, 1, 0, id, COLL_COMM_F_MAP, JOIN_MS, &comm);
		ASSERT_EQ(0, r) TH_LOG("join: %s", st_errname(r));
		if (!i)
			first = comm;
		ASSERT_EQ(0, comm_map(fd, comm, &cm));
		EXPECT_EQ(slots_for(ask[i], 1), cm.out_nslots);
		EXPECT_LE(cm.out_data_offset +
			  (uint64_t)cm.out_nslots * cm.out_slot_bytes,
			  cm.out_bytes);
		if (i)
			EXPECT_EQ(0, st_comm_destroy(fd, comm));
	}
	/* the first communicator kept its count */
	ASSERT_EQ(0, comm_map(fd, first, &cm));
	EXPECT_EQ(5, cm.out_nslots);
	EXPECT_EQ(0, st_comm_destroy(fd, first));
	EXPECT_EQ(0, st_param_set("map_slots", old));
	close(fd);
}

struct count_args {
	uint8_t id[COLL_ID_BYTES];
	uint32_t n;
	int *mapped;	/* shared: ranks that have their answer */
};

/* A rank of slot_count_shared: exits with its communicator's slot count. */
static int count_main(int rank, void *arg)
{
	const struct count_args *a = arg;
	struct coll_comm_map cm;
	uint32_t comm;
	int fd, r;

	fd = st_dev_open();
	if (fd < 0)
		return 1;
	r = comm_join(fd, a->n, (uint32_t)rank, a->id, COLL_COMM_F_MAP,
		      JOIN_MS, &comm);
	if (r || comm_map(fd, comm, &cm))
		return 1;
	/* stay until all have asked: a rank that leaves kills the comm */
	__atomic_add_fetch(a->mapped, 1, __ATOMIC_SEQ_CST);
	if (st_wait_ge(a->mapped, (int)a->n, JOIN_MS))
		return 1;
	return cm.out_nslots > 2 && cm.out_nslots < 256 ?
	       (int)cm.out_nslots : 1;
}

/* map_slots 0: 64 slots for more ranks than online CPUs (each sees it). */
TEST(slot_count_shared)
{
	long old = st_param_get("map_slots");
	struct count_args a;
	struct st_ranks rk;
	int i;

	if (st_param_get("map_bytes") <= 0 || old < 0)
		SKIP(return, "module parameter map_bytes is 0 or map_slots unreadable");
	a.n = (uint32_t)sysconf(_SC_NPROCESSORS_ONLN) + 1;
	if (a.n > COLL_ST_MAX_RANKS)
		SKIP(return, "%u ranks: more than this harness spawns", a.n);
	a.mapped = st_shared(sizeof(*a.mapped));
	ASSERT_NE(NULL, a.mapped);
	ASSERT_EQ(0, st_param_set("map_slots", 0));
	st_random_id(a.id);
	ASSERT_EQ(0, st_ranks_spawn(&rk, (int)a.n, count_main, &a));
	st_ranks_wait(&rk, 20000, 1000);
	EXPECT_EQ(0, st_param_set("map_slots", old));
	for (i = 0; i < rk.n; i++) {
		ASSERT_TRUE(rk.done[i] && WIFEXITED(rk.status[i]));
		EXPECT_EQ(64, WEXITSTATUS(rk.status[i])) TH_LOG("rank %d", i);
	}
	munmap(a.mapped, sizeof(*a.mapped));
}

/* COLL_COMM_MAP refuses what it must. */
TEST_F(one, map_ioctl)
{
	struct coll_comm_map cm = { .size = sizeof(cm), .comm = self->comm };
	unsigned char big[sizeof(cm) + 8] = { 0 };

	cm.size = offsetofend(struct coll_comm_map, out_bytes) - 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_COMM_MAP, &cm));
	cm.size = sizeof(cm);
	cm.flags = 1;
	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_COMM_MAP, &cm));
	cm.flags = 0;
	cm.comm = self->comm + 1;
	ASSERT_FAILS(ENOENT, st_ioctl(self->fd, COLL_COMM_MAP, &cm));
	cm.comm = self->comm;
	memcpy(big, &cm, sizeof(cm));
	((struct coll_comm_map *)big)->size = sizeof(big);
	big[sizeof(big) - 1] = 1;
	ASSERT_FAILS(E2BIG, st_ioctl(self->fd, COLL_COMM_MAP, big));
	big[sizeof(big) - 1] = 0;
	ASSERT_EQ(0, st_ioctl(self->fd, COLL_COMM_MAP, big));
	ASSERT_FAILS(EFAULT, st_ioctl(self->fd, COLL_COMM_MAP,
				      (void *)(uintptr_t)16));
}

/* Every mmap() but the one COLL_COMM_MAP names fails. */
TEST_F(one, mmap_refused)
{
	long page = sysconf(_SC_PAGESIZE);
	struct coll_comm_map cm;
	void *p;
	int err;

	/* nothing to map before COLL_COMM_MAP made the slots */
	p = map_slots(self->fd, &cm, page, PROT_READ, MAP_SHARED,
		      ((uint64_t)self->comm + 1) << 31, &err);
	EXPECT_EQ(-EINVAL, err);
	ASSERT_EQ(0, comm_map(self->fd, self->comm, &cm));
	p = map_slots(self->fd, &cm, cm.out_bytes, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE, cm.out_offset, &err);
	EXPECT_EQ(-EINVAL, err);
	p = map_slots(self->fd, &cm, cm.out_bytes,
		      PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED,
		      cm.out_offset, &err);
	EXPECT_EQ(-EINVAL, err);
	p = map_slots(self->fd, &cm, cm.out_bytes - page, PROT_READ,
		      MAP_SHARED, cm.out_offset, &err);
	EXPECT_EQ(-EINVAL, err);
	p = map_slots(self->fd, &cm, cm.out_bytes + page, PROT_READ,
		      MAP_SHARED, cm.out_offset, &err);
	EXPECT_EQ(-EINVAL, err);
	p = map_slots(self->fd, &cm, cm.out_bytes, PROT_READ, MAP_SHARED,
		      cm.out_offset + page, &err);
	EXPECT_EQ(-EINVAL, err);
	p = map_slots(self->fd, &cm, cm.out_bytes, PROT_READ, MAP_SHARED, 0,
		      &err);
	EXPECT_EQ(-EINVAL, err);
	/* another handle: not this descriptor's */
	p = map_slots(self->fd, &cm, cm.out_bytes, PROT_READ, MAP_SHARED,
		      cm.out_offset + (1ull << 31), &err);
	EXPECT_EQ(-ENOENT, err);
	/* read-only is allowed, and so is the whole */
	p = map_slots(self->fd, &cm, cm.out_bytes, PROT_READ, MAP_SHARED,
		      cm.out_offset, &err);
	ASSERT_EQ(0, err);
	EXPECT_EQ(COLL_MAP_MAGIC, ((struct coll_map_hdr *)p)->magic);
	/* and it cannot be made executable later */
	EXPECT_EQ(-1, mprotect(p, page, PROT_READ | PROT_EXEC));
	munmap(p, cm.out_bytes);
	/* another descriptor holds no membership */
	{
		int fd2 = st_dev_open();

		ASSERT_LE(0, fd2);
		p = map_slots(fd2, &cm, cm.out_bytes, PROT_READ, MAP_SHARED,
			      cm.out_offset, &err);
		EXPECT_EQ(-ENOENT, err);
		close(fd2);
	}
}

/* COLL_MAP_WAIT and COLL_MAP_WAKE refuse what they must. */
TEST_F(one, wait_ioctls)
{
	struct coll_map_wait w = { .size = sizeof(w), .comm = self->comm };
	struct coll_map_wake k = { .size = sizeof(k), .comm = self->comm };
	struct coll_comm_map cm;
	struct coll_map_hdr *h;
	int64_t t0;
	void *p;
	int err;

	/* no slots yet */
	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_MAP_WAIT, &w));
	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_MAP_WAKE, &k));
	ASSERT_EQ(0, comm_map(self->fd, self->comm, &cm));
	p = map_slots(self->fd, &cm, cm.out_bytes, PROT_READ | PROT_WRITE,
		      MAP_SHARED, cm.out_offset, &err);
	ASSERT_EQ(0, err);
	h = p;

	w.size = offsetofend(struct coll_map_wait, seq) - 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_MAP_WAIT, &w));
	w.size = sizeof(w);
	w.flags = 1;
	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_MAP_WAIT, &w));
	w.flags = 0;
	w.what = COLL_MAP_WHAT_MAX;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_MAP_WAIT, &w));
	w.what = COLL_MAP_ARRIVED;
	w.rank = 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_MAP_WAIT, &w));
	w.rank = COLL_MAP_ALL;
	w.comm = self->comm + 1;
	ASSERT_FAILS(ENOENT, st_ioctl(self->fd, COLL_MAP_WAIT, &w));
	w.comm = self->comm;
	/* reached already: at once */
	w.seq = 0;
	ASSERT_EQ(0, st_ioctl(self->fd, COLL_MAP_WAIT, &w));
	line(p, &cm, 0)->arrived = 5;
	w.seq = 5;
	ASSERT_EQ(0, st_ioctl(self->fd, COLL_MAP_WAIT, &w));
	w.rank = 0;
	ASSERT_EQ(0, st_ioctl(self->fd, COLL_MAP_WAIT, &w));
	/* not reached: the timeout, counted as a sleeper meanwhile only */
	w.seq = 6;
	w.timeout_ms = 50;
	t0 = st_now_ns();
	ASSERT_FAILS(ETIMEDOUT, st_ioctl(self->fd, COLL_MAP_WAIT, &w));
	EXPECT_LE(40000000LL, st_now_ns() - t0);
	EXPECT_EQ(0, h->sleepers);
	w.what = COLL_MAP_LEFT;
	w.seq = 1;
	ASSERT_FAILS(ETIMEDOUT, st_ioctl(self->fd, COLL_MAP_WAIT, &w));

	k.flags = 1;
	ASSERT_FAILS(EOPNOTSUPP, st_ioctl(self->fd, COLL_MAP_WAKE, &k));
	k.flags = 0;
	k.__reserved = 1;
	ASSERT_FAILS(EINVAL, st_ioctl(self->fd, COLL_MAP_WAKE, &k));
	k.__reserved = 0;
	k.comm = self->comm + 1;
	ASSERT_FAILS(ENOENT, st_ioctl(self->fd, COLL_MAP_WAKE, &k));
	k.comm = self->comm;
	ASSERT_EQ(0, st_ioctl(self->fd, COLL_MAP_WAKE, &k));
	/* a dead communicator: ECONNRESET, however far from the number */
	ASSERT_EQ(0, st_comm_destroy(self->fd, self->comm));
	munmap(p, cm.out_bytes);
}

/*
 * On a mapped communicator the ioctl refuses what the slots take (EXDEV,
 * nothing written) and runs the rest.
 */
TEST_F(one, exdev)
{
	float in[4] = { 1, 2, 3, 4 }, out[4] = { 0 };
	struct coll_comm_map cm;
	float *bin, *bout;
	struct coll_op op;
	size_t i, big;

	ASSERT_EQ(0, comm_map(self->fd, self->comm, &cm));
	big = cm.out_slot_bytes / sizeof(float) + 1;
	bin = calloc(big, sizeof(float));
	bout = calloc(big, sizeof(float));
	ASSERT_NE(NULL, bin);
	ASSERT_NE(NULL, bout);
	/* what fills a slot exactly is the slots' */
	op = st_op(self->comm, COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, bin,
		   bout, big - 1);
	ASSERT_FAILS(EXDEV, st_submit(self->fd, &op));
	op = st_op(self->comm, COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, in,
		   out, 4);
	ASSERT_FAILS(EXDEV, st_submit(self->fd, &op));
	EXPECT_EQ(16, st_find_not(out, 0, sizeof(out)));
	op = st_op(self->comm, COLL_BARRIER, 0, 0, 0, NULL, NULL, 0);
	ASSERT_FAILS(EXDEV, st_submit(self->fd, &op));
	/* a bad layout says so first */
	op = st_op(self->comm, COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, in,
		   in + 1, 2);
	ASSERT_FAILS(EINVAL, st_submit(self->fd, &op));
	/* a forced algorithm goes through the kernel */
	op = st_op(self->comm, COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, in,
		   out, 4);
	op.algo = COLL_ALGO_RING;
	ASSERT_EQ(0, st_submit(self->fd, &op));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(in[i], out[i]);
	/* so does a non-blocking one */
	memset(out, 0, sizeof(out));
	op = st_op(self->comm, COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, in,
		   out, 4);
	op.flags = COLL_OP_F_NONBLOCK;
	ASSERT_EQ(0, st_submit(self->fd, &op));
	ASSERT_EQ(0, st_wait(self->fd, op.out_req, STEP_MS));
	EXPECT_EQ(4, out[3]);
	/* and one beyond a slot */
	for (i = 0; i < big; i++)
		bin[i] = (float)(i % 1000);
	op = st_op(self->comm, COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, bin,
		   bout, big);
	ASSERT_EQ(0, st_submit(self->fd, &op));
	for (i = 0; i < big; i++)
		ASSERT_EQ(bin[i], bout[i]);
	free(bin);
	free(bout);
}

/* Kernel memory: counted while the slots exist, given back after. */
TEST_F(one, accounting)
{
	struct coll_info before, during, after;
	struct coll_comm_map cm;
	void *p;
	int err;

	ASSERT_EQ(0, st_info(self->fd, &before));
	ASSERT_EQ(0, comm_map(self->fd, self->comm, &cm));
	ASSERT_EQ(0, st_info(self->fd, &during));
	EXPECT_LE(before.out_kernel_bytes + cm.out_bytes,
		  during.out_kernel_bytes);
	p = map_slots(self->fd, &cm, cm.out_bytes, PROT_READ | PROT_WRITE,
		      MAP_SHARED, cm.out_offset, &err);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, st_comm_destroy(self->fd, self->comm));
	ASSERT_EQ(0, munmap(p, cm.out_bytes));
	ASSERT_EQ(0, st_info(self->fd, &after));
	EXPECT_GT(before.out_kernel_bytes + cm.out_bytes,
		  after.out_kernel_bytes);
	EXPECT_EQ(before.out_comms - 1, after.out_comms);
}

/* The flag's rules at the join, and map_bytes 0. */
TEST(join_flags)
{
	uint8_t id[COLL_ID_BYTES];
	struct coll_comm_init ci = { .size = sizeof(ci), .nranks = 1,
				     .timeout_ms = JOIN_MS };
	struct coll_comm_map cm;
	float in = 1, out = 0;
	struct coll_op op;
	long old = st_param_get("map_bytes");
	uint32_t comm;
	int fd = st_dev_open();

	if (fd < 0)
		SKIP(return, "no device");
	st_random_id(ci.id);
	ci.flags = COLL_COMM_F_MAP;
	ci.nhosts = 1;		/* across hosts: never */
	ASSERT_FAILS(EINVAL, st_ioctl(fd, COLL_COMM_INIT, &ci));
	/* without the flag: no slots, the eager path as ever */
	st_random_id(id);
	ASSERT_EQ(0, comm_join(fd, 1, 0, id, 0, JOIN_MS, &comm));
	ASSERT_FAILS(EOPNOTSUPP, comm_map(fd, comm, &cm));
	op = st_op(comm, COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, &in, &out, 1);
	ASSERT_EQ(0, st_submit(fd, &op));
	EXPECT_EQ(1, out);
	/* map_bytes 0 when the first rank joins: no slots either */
	if (old > 0 && !st_param_set("map_bytes", 0)) {
		st_random_id(id);
		ASSERT_EQ(0, comm_join(fd, 1, 0, id, COLL_COMM_F_MAP, JOIN_MS,
					     &comm));
		ASSERT_EQ(0, st_param_set("map_bytes", old));
		ASSERT_FAILS(EOPNOTSUPP, comm_map(fd, comm, &cm));
		out = 0;
		op = st_op(comm, COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, &in,
			   &out, 1);
		ASSERT_EQ(0, st_submit(fd, &op));
		EXPECT_EQ(1, out);
	}
	close(fd);
}

/* ---- two ranks, raw ioctls -------------------------------------------- */

enum raw_sc { RAW_AGREE, RAW_WAKE, RAW_KILL, RAW_DESTROY, RAW_KILL_WAITER };

struct rshm {
	struct st_oob oob;
	int step;		/* rank 0 -> 1: how far it is */
	int sleepers_seen;	/* rank 1: the header's count before waking */
	int64_t t_event;	/* the wake, the kill or the destroy */
	int64_t t_ret;		/* the sleeper's wait returned */
	int returned;		/* set after t_ret */
	int ret;		/* its result (-errno) */
	int state, error;	/* the header after */
};

struct rargs {
	enum raw_sc sc;
	uint8_t id[COLL_ID_BYTES];
	struct rshm *sh;
};

static int raw_main(int rank, void *arg)
{
	struct rargs *a = arg;
	struct rshm *sh = a->sh;
	struct coll_comm_map cm;
	struct coll_map_hdr *h;
	int fd = st_dev_open(), r, err;
	uint32_t comm, flags = COLL_COMM_F_MAP;
	int64_t t;
	void *p;

	if (fd < 0)
		return 2;
	if (a->sc == RAW_AGREE) {
		if (rank == 1) {
			st_sleep_ms(100);	/* rank 0 makes it */
			flags = 0;
		}
		r = comm_join(fd, 2, rank, a->id, flags, 2000, &comm);
		if (rank == 1 && r != -EPROTO) {
			st_log("join without the flag: %s, want EPROTO",
			       st_errname(r));
			return 3;
		}
		if (rank == 0 && r != -ETIMEDOUT) {
			st_log("rank 0 join: %s", st_errname(r));
			return 4;
		}
		return 0;
	}
	r = comm_join(fd, 2, rank, a->id, flags, JOIN_MS, &comm);
	if (r) {
		st_log("rank %d join: %s", rank, st_errname(r));
		return 5;
	}
	r = comm_map(fd, comm, &cm);
	if (!r) {
		p = map_slots(fd, &cm, cm.out_bytes, PROT_READ | PROT_WRITE,
			      MAP_SHARED, cm.out_offset, &err);
		r = err;
	}
	if (r) {
		st_log("rank %d map: %s", rank, st_errname(r));
		return 6;
	}
	h = p;
	if (st_oob_barrier(&sh->oob, 2, STEP_MS))
		return 7;

	if (rank == 0) {
		if (a->sc == RAW_KILL_WAITER) {
			/* sleeps until killed; the peer must notice */
			__atomic_store_n(&sh->step, 1, __ATOMIC_RELEASE);
			r = map_wait(fd, comm, COLL_MAP_ARRIVED, 1, 1, STEP_MS);
			st_log("rank 0 was not killed: %s", st_errname(r));
			return 8;
		}
		__atomic_store_n(&sh->step, 1, __ATOMIC_RELEASE);
		r = map_wait(fd, comm, COLL_MAP_ARRIVED, 1, 1, STEP_MS);
		t = st_now_ns();
		sh->ret = r;
		sh->t_ret = t;
		__atomic_store_n(&sh->returned, 1, __ATOMIC_RELEASE);
		sh->state = (int)h->state;
		sh->error = (int)h->error;
		/* a dead communicator's pages stay readable */
		if (h->magic != COLL_MAP_MAGIC)
			return 9;
		munmap(p, cm.out_bytes);
		close(fd);
		return 0;
	}

	/* rank 1 */
	if (st_wait_ge(&sh->step, 1, STEP_MS))
		return 10;
	/* let rank 0 fall asleep */
	t = st_now_ns() + 2000000000LL;
	while (!__atomic_load_n(&h->sleepers, __ATOMIC_SEQ_CST) &&
	       st_now_ns() < t)
		st_sleep_ms(5);
	sh->sleepers_seen = (int)h->sleepers;
	if (a->sc == RAW_KILL_WAITER) {
		/* rank 1 waits too; the parent kills rank 0 */
		__atomic_store_n(&sh->step, 2, __ATOMIC_RELEASE);
		r = map_wait(fd, comm, COLL_MAP_ARRIVED, 0, 1, STEP_MS);
		t = st_now_ns();
		sh->ret = r;
		sh->t_ret = t;
		__atomic_store_n(&sh->returned, 1, __ATOMIC_RELEASE);
		sh->state = (int)h->state;
		sh->error = (int)h->error;
		return 0;
	}
	st_sleep_ms(100);	/* well asleep, well short of its recheck */
	__atomic_store_n(&sh->t_event, st_now_ns(), __ATOMIC_RELEASE);
	switch (a->sc) {
	case RAW_WAKE:
		__atomic_store_n(&line(p, &cm, 1)->arrived, 1,
				 __ATOMIC_SEQ_CST);
		r = map_wake(fd, comm);
		if (r)
			return 11;
		break;
	case RAW_DESTROY:
		r = st_comm_destroy(fd, comm);
		if (r)
			return 12;
		break;
	default:	/* RAW_KILL: the parent kills this rank */
		__atomic_store_n(&sh->step, 2, __ATOMIC_RELEASE);
		for (;;)
			pause();
	}
	if (st_wait_ge_or(&sh->step, 3, NULL, STEP_MS))
		return 13;
	munmap(p, cm.out_bytes);
	close(fd);
	return 0;
}

FIXTURE(raw) {
	int unused;
};

FIXTURE_VARIANT(raw) {
	enum raw_sc sc;
};

FIXTURE_VARIANT_ADD(raw, agree) { .sc = RAW_AGREE };
FIXTURE_VARIANT_ADD(raw, wake) { .sc = RAW_WAKE };
FIXTURE_VARIANT_ADD(raw, peer_killed) { .sc = RAW_KILL };
FIXTURE_VARIANT_ADD(raw, peer_destroys) { .sc = RAW_DESTROY };
FIXTURE_VARIANT_ADD(raw, sleeper_killed) { .sc = RAW_KILL_WAITER };

FIXTURE_SETUP(raw)
{
	int fd = st_dev_open();

	if (fd < 0)
		SKIP(return, "no device");
	close(fd);
	if (st_param_get("map_bytes") <= 0)
		SKIP(return, "module parameter map_bytes is 0");
}

FIXTURE_TEARDOWN(raw)
{
}

TEST_F_TIMEOUT(raw, run, 120)
{
	struct rargs a = { .sc = variant->sc };
	struct st_ranks rk;
	struct coll_info info;
	int victim = variant->sc == RAW_KILL ? 1 : 0, bad;

	a.sh = st_shared(sizeof(*a.sh));
	ASSERT_NE(NULL, a.sh);
	st_random_id(a.id);
	ASSERT_EQ(0, st_ranks_spawn(&rk, 2, raw_main, &a));
	if (variant->sc == RAW_KILL || variant->sc == RAW_KILL_WAITER) {
		ASSERT_EQ(0, st_wait_ge(&a.sh->step, 2, STEP_MS));
		if (variant->sc == RAW_KILL_WAITER)
			st_sleep_ms(200);	/* rank 1 asleep too */
		a.sh->t_event = st_now_ns();
		kill(rk.pid[victim], SIGKILL);
	}
	if (variant->sc != RAW_AGREE && variant->sc != RAW_KILL_WAITER) {
		EXPECT_EQ(0, st_wait_ge(&a.sh->returned, 1, STEP_MS));
	}
	__atomic_store_n(&a.sh->step, 3, __ATOMIC_RELEASE);
	bad = st_ranks_wait(&rk, STEP_MS + 10000, 10000);
	if (variant->sc == RAW_KILL || variant->sc == RAW_KILL_WAITER) {
		EXPECT_EQ(1, bad);	/* the one killed */
	} else {
		EXPECT_EQ(0, bad);
	}
	if (variant->sc == RAW_AGREE)
		goto out;
	EXPECT_EQ(1, a.sh->sleepers_seen);
	EXPECT_GT(BOUND_NS, a.sh->t_ret - a.sh->t_event)
		TH_LOG("the sleeper returned %lld ns after the event",
		       (long long)(a.sh->t_ret - a.sh->t_event));
	if (variant->sc == RAW_WAKE) {
		EXPECT_EQ(0, a.sh->ret);
		EXPECT_EQ(COLL_MAP_LIVE, a.sh->state);
		/* woken, not found by its look every second */
		EXPECT_GT(500000000LL, a.sh->t_ret - a.sh->t_event);
	} else {
		EXPECT_EQ(-ECONNRESET, a.sh->ret);
		EXPECT_EQ(COLL_MAP_DEAD, a.sh->state);
		EXPECT_EQ(ECONNRESET, a.sh->error);
	}
out:
	{
		struct coll_info want = { 0 };

		EXPECT_EQ(0, st_info_settle(&want, &info, 2000));
	}
	munmap(a.sh, sizeof(*a.sh));
}

/* ---- through the library -------------------------------------------- */

enum lib_sc { LIB_DISAGREE, LIB_KILLED };

#define LIB_NR		3
#define LIB_ITERS	100000000

struct lshm {
	struct st_oob oob;
	int running[LIB_NR];
	int64_t t_kill;
	int64_t t_ret[LIB_NR];
	int err[LIB_NR], err2[LIB_NR];
	int done;
};

struct largs {
	enum lib_sc sc;
	coll_id_t id;
	struct lshm *sh;
};

static int expect_eproto(int rank, const char *what, int r, const void *out,
			 size_t len)
{
	if (r != -EPROTO) {
		st_log("rank %d, %s: %s, want EPROTO", rank, what,
		       st_errname(r));
		return 1;
	}
	if (st_find_not(out, 0x5a, len) != len) {
		st_log("rank %d, %s: the receive buffer was written", rank,
		       what);
		return 1;
	}
	return 0;
}

static int lib_disagree(int rank, coll_comm_t *c)
{
	float in[8], out[8];
	int i, r, bad = 0;

	for (i = 0; i < 8; i++)
		in[i] = (float)(rank + i);
	/* a count */
	memset(out, 0x5a, sizeof(out));
	r = coll_allreduce(c, in, out, rank ? 5 : 4, COLL_FP32, COLL_SUM);
	bad += expect_eproto(rank, "counts 4/5", r, out, sizeof(out));
	/* a primitive */
	memset(out, 0x5a, sizeof(out));
	if (rank)
		r = coll_broadcast(c, in, out, 4, COLL_FP32, 0);
	else
		r = coll_allreduce(c, in, out, 4, COLL_FP32, COLL_SUM);
	if (rank)	/* the root of... nobody: rank 0 called no Broadcast */
		bad += expect_eproto(rank, "Broadcast/AllReduce", r, out,
				     sizeof(out));
	else
		bad += expect_eproto(rank, "AllReduce/Broadcast", r, out,
				     sizeof(out));
	/* the way it goes: a forced algorithm on one rank */
	memset(out, 0x5a, sizeof(out));
	coll_comm_set_algo(c, rank ? COLL_ALGO_RING : COLL_ALGO_AUTO);
	r = coll_allreduce(c, in, out, 4, COLL_FP32, COLL_SUM);
	bad += expect_eproto(rank, "algorithm auto/ring", r, out, sizeof(out));
	coll_comm_set_algo(c, COLL_ALGO_AUTO);
	/* a group against a call */
	memset(out, 0x5a, sizeof(out));
	if (rank) {
		coll_group_start(c);
		coll_allreduce(c, in, out, 4, COLL_FP32, COLL_SUM);
		r = coll_group_end(c, 0);
	} else {
		r = coll_allreduce(c, in, out, 4, COLL_FP32, COLL_SUM);
	}
	bad += expect_eproto(rank, "group/call", r, out, sizeof(out));
	/* and then it agrees again: the sum of rank + i over 2 ranks */
	memset(out, 0x5a, sizeof(out));
	r = coll_allreduce(c, in, out, 8, COLL_FP32, COLL_SUM);
	if (r) {
		st_log("rank %d: the call after: %s", rank, st_errname(r));
		return 1;
	}
	for (i = 0; i < 8; i++)
		if (out[i] != (float)(1 + 2 * i)) {
			st_log("rank %d: element %d is %g", rank, i, out[i]);
			return 1;
		}
	return bad;
}

static int lib_main(int rank, void *arg)
{
	struct largs *a = arg;
	struct lshm *sh = a->sh;
	int n = a->sc == LIB_DISAGREE ? 2 : LIB_NR, r, i;
	float v[4] = { 1, 1, 1, 1 };
	coll_comm_t *c;

	r = coll_comm_init(&c, n, rank, &a->id, JOIN_MS);
	if (r) {
		st_log("rank %d: coll_comm_init: %s", rank, st_errname(r));
		return 2;
	}
	if (a->sc == LIB_DISAGREE) {
		r = lib_disagree(rank, c);
		if (!r && st_oob_barrier(&sh->oob, n, STEP_MS))
			r = 1;
		coll_comm_destroy(c);
		return r;
	}
	/* LIB_KILLED: rank 2 is killed while all loop */
	__atomic_store_n(&sh->running[rank], 1, __ATOMIC_RELEASE);
	for (i = 0; i < LIB_ITERS; i++) {
		r = coll_allreduce(c, v, v, 4, COLL_FP32, COLL_MAX);
		if (r)
			break;
	}
	sh->t_ret[rank] = st_now_ns();
	sh->err[rank] = -r;
	sh->err2[rank] = -coll_allreduce(c, v, v, 4, COLL_FP32, COLL_MAX);
	__atomic_add_fetch(&sh->done, 1, __ATOMIC_ACQ_REL);
	coll_comm_destroy(c);
	return 0;
}

static bool lib_skip(void)
{
	int fd = st_dev_open();

	if (fd < 0)
		return true;
	close(fd);
	return st_param_get("map_bytes") <= 0;
}

TEST(lib_disagreeing_ranks)
{
	struct largs a = { .sc = LIB_DISAGREE };
	struct st_ranks rk;

	if (lib_skip())
		SKIP(return, "no device, or map_bytes 0");
	a.sh = st_shared(sizeof(*a.sh));
	ASSERT_NE(NULL, a.sh);
	ASSERT_EQ(0, coll_get_unique_id(&a.id));
	ASSERT_EQ(0, st_ranks_spawn(&rk, 2, lib_main, &a));
	EXPECT_EQ(0, st_ranks_wait(&rk, STEP_MS, 5000));
	munmap(a.sh, sizeof(*a.sh));
}

TEST(lib_rank_killed)
{
	struct largs a = { .sc = LIB_KILLED };
	struct st_ranks rk;
	struct coll_info info;
	int i;

	if (lib_skip())
		SKIP(return, "no device, or map_bytes 0");
	a.sh = st_shared(sizeof(*a.sh));
	ASSERT_NE(NULL, a.sh);
	ASSERT_EQ(0, coll_get_unique_id(&a.id));
	ASSERT_EQ(0, st_ranks_spawn(&rk, LIB_NR, lib_main, &a));
	for (i = 0; i < LIB_NR; i++)
		ASSERT_EQ(0, st_wait_ge(&a.sh->running[i], 1, STEP_MS));
	st_sleep_ms(200);		/* in the loop */
	a.sh->t_kill = st_now_ns();
	kill(rk.pid[LIB_NR - 1], SIGKILL);
	EXPECT_EQ(0, st_wait_ge(&a.sh->done, LIB_NR - 1, STEP_MS));
	EXPECT_EQ(1, st_ranks_wait(&rk, STEP_MS, 10000));
	for (i = 0; i < LIB_NR - 1; i++) {
		EXPECT_EQ(ECONNRESET, a.sh->err[i]) TH_LOG("rank %d", i);
		EXPECT_EQ(ECONNRESET, a.sh->err2[i]) TH_LOG("rank %d", i);
		EXPECT_GT(BOUND_NS, a.sh->t_ret[i] - a.sh->t_kill)
			TH_LOG("rank %d returned %lld ns after the kill", i,
			       (long long)(a.sh->t_ret[i] - a.sh->t_kill));
	}
	/* nothing left: no communicator, nothing in flight or pinned */
	{
		struct coll_info want = { 0 };

		EXPECT_EQ(0, st_info_settle(&want, &info, 2000));
	}
	munmap(a.sh, sizeof(*a.sh));
}

TEST_HARNESS_MAIN
