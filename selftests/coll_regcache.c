// SPDX-License-Identifier: GPL-2.0
/*
 * coll_regcache: the registration cache (module parameter reg_cache), with
 * raw ioctls.  Two ranks, forked, each with its own descriptor, run int32
 * SUM AllReduces whose every element is checked against the sum computed
 * here; the inputs change at every call, so pages served stale from the
 * cache would show as wrong elements (or as a receive buffer left
 * poisoned).
 *
 *  - reuse: the same buffers 20 times: hits after the first call;
 *  - order: 24 pairs of buffers met forwards, backwards, in a scattered
 *    order, then again at half their length (other entries at the same
 *    addresses), backwards: every pass after a first one hits, whatever
 *    the order;
 *  - munmap then mmap at the same address (MAP_FIXED), new contents;
 *  - MADV_DONTNEED on both buffers, new contents;
 *  - mremap away (a fresh mapping put at the old address, the moved pages
 *    given other contents), used at both addresses, then moved back;
 *  - fork with copy-on-write: a child writes its copies while the parent
 *    runs;
 *  - RLIMIT_MEMLOCK without CAP_IPC_LOCK, cycling through more buffers
 *    than fit: every call works because unused entries are evicted, and
 *    after close nothing is pinned (COLL_INFO, VmPin);
 *  - reg_cache=0: no hits, no misses.
 *
 * The counters are module-wide: nothing else may run at the same time.
 */
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "coll_selftest.h"
#include "kselftest_harness.h"

#define JOIN_MS		10000
#define RANKS_MS	120000
#define NELEM		(16 << 10)		/* int32: 64 KiB, 16 pages */
#define BUF_BYTES	(NELEM * sizeof(int32_t))
#define POISON		0xa5
#define MEMLOCK_BYTES	(256 << 10)		/* two pairs of buffers fit */
#define MEMLOCK_PAIRS	12
#define ORDER_PAIRS	24

enum scenario {
	S_REUSE,
	S_REMAP,
	S_DONTNEED,
	S_MREMAP,
	S_FORK,
	S_MEMLOCK,
	S_ORDER,
};

struct rc_shared {
	struct st_oob oob;
	uint8_t id[COLL_ID_BYTES];
	int scenario;
	int iters;
	long vmpin_open[2];	/* kB, before close */
	long vmpin_closed[2];	/* kB, after close */
	int calls[2];		/* checked calls that passed */
};

static int32_t val(int rank, int iter, size_t i)
{
	return (int32_t)((rank + 1) * 100000 + iter * 1000 + (int)(i % 997));
}

static void fill(int32_t *b, int rank, int iter)
{
	size_t i;

	for (i = 0; i < NELEM; i++)
		b[i] = val(rank, iter, i);
}

/* The decoy contents moved pages get, never a sum of two ranks' inputs. */
static void fill_decoy(int32_t *b)
{
	size_t i;

	for (i = 0; i < NELEM; i++)
		b[i] = -7 - (int32_t)i;
}

/*
 * One AllReduce of the first @n elements of @send into @recv, checked (and
 * the rest of @recv untouched); 0 or a rank exit code.
 */
static int allreduce_check_n(int fd, uint32_t comm, int rank, int iter,
			     int32_t *send, int32_t *recv, size_t n,
			     const char *what)
{
	struct coll_op op;
	size_t i;
	int r;

	fill(send, rank, iter);
	memset(recv, POISON, BUF_BYTES);
	op = st_op(comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0, send, recv,
		   n);
	r = st_submit(fd, &op);
	if (r) {
		st_log("rank %d %s call %d: %s", rank, what, iter,
		       st_errname(r));
		return 30;
	}
	for (i = 0; i < NELEM; i++) {
		int32_t want = val(0, iter, i) + val(1, iter, i);
		int32_t poison;

		memset(&poison, POISON, sizeof(poison));
		if (i >= n)
			want = poison;
		if (recv[i] != want) {
			st_log("rank %d %s call %d: element %zu of %zu is %d, want %d",
			       rank, what, iter, i, n, recv[i], want);
			return 31;
		}
	}
	return 0;
}

/* The same, over the whole buffers. */
static int allreduce_check(int fd, uint32_t comm, int rank, int iter,
			   int32_t *send, int32_t *recv, const char *what)
{
	return allreduce_check_n(fd, comm, rank, iter, send, recv, NELEM,
				 what);
}

static void *map_at(void *addr, size_t len, int prot)
{
	void *p = mmap(addr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS |
		       (addr ? MAP_FIXED : 0), -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* VmPin of this process in kB, or -1. */
static long vmpin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* munmap then mmap again at the same address: new, zeroed pages. */
static int remap_same(void *p)
{
	if (munmap(p, BUF_BYTES))
		return -1;
	return map_at(p, BUF_BYTES, PROT_READ | PROT_WRITE) == p ? 0 : -1;
}

/*
 * Move @a's pages to @alt (a reservation), give them decoy contents, and
 * put a fresh mapping at @a.
 */
static int move_away(void *a, void *alt)
{
	if (mremap(a, BUF_BYTES, BUF_BYTES, MREMAP_MAYMOVE | MREMAP_FIXED,
		   alt) != alt)
		return -1;
	fill_decoy(alt);
	return map_at(a, BUF_BYTES, PROT_READ | PROT_WRITE) == a ? 0 : -1;
}

/* Put the pages at @alt back at @a, and reserve @alt again. */
static int move_back(void *a, void *alt)
{
	if (munmap(a, BUF_BYTES))
		return -1;
	if (mremap(alt, BUF_BYTES, BUF_BYTES, MREMAP_MAYMOVE | MREMAP_FIXED,
		   a) != a)
		return -1;
	return map_at(alt, BUF_BYTES, PROT_NONE) == alt ? 0 : -1;
}

/* A child that writes its copies of the buffers and waits to be told. */
static pid_t fork_writer(int32_t *send, int32_t *recv, int *go)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(p[0]);
		memset(send, 0x5a, BUF_BYTES);
		memset(recv, 0x3c, BUF_BYTES);
		c = 1;
		if (write(p[1], &c, 1) != 1)
			_exit(2);
		while (!__atomic_load_n(go, __ATOMIC_ACQUIRE))
			st_sleep_ms(1);
		/* its copies are its own: still what it wrote */
		_exit(((uint8_t *)send)[BUF_BYTES - 1] == 0x5a &&
		      ((uint8_t *)recv)[0] == 0x3c ? 0 : 3);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		pid = -pid;
	close(p[0]);
	return pid;
}

static int run_memlock(int fd, uint32_t comm, int rank, int iters)
{
	int32_t *bufs[2 * MEMLOCK_PAIRS];
	int i, r;

	for (i = 0; i < 2 * MEMLOCK_PAIRS; i++) {
		bufs[i] = st_map(BUF_BYTES);
		if (!bufs[i])
			return 40;
	}
	for (i = 0; i < iters; i++) {
		int k = i % MEMLOCK_PAIRS;

		r = allreduce_check(fd, comm, rank, i, bufs[2 * k],
				    bufs[2 * k + 1], "memlock");
		if (r)
			return r;
	}
	return 0;
}

/*
 * ORDER_PAIRS pairs of buffers, in five passes: forwards, backwards,
 * scattered (7 is prime to 24), at half length forwards (new entries at
 * the same addresses), at half length backwards.
 */
static int run_order(int fd, uint32_t comm, int rank)
{
	int32_t *bufs[2 * ORDER_PAIRS];
	int pass, i, k, r;

	for (i = 0; i < 2 * ORDER_PAIRS; i++) {
		bufs[i] = st_map(BUF_BYTES);
		if (!bufs[i])
			return 50;
	}
	for (pass = 0; pass < 5; pass++) {
		for (i = 0; i < ORDER_PAIRS; i++) {
			if (pass == 1 || pass == 4)
				k = ORDER_PAIRS - 1 - i;
			else if (pass == 2)
				k = i * 7 % ORDER_PAIRS;
			else
				k = i;
			r = allreduce_check_n(fd, comm, rank,
					      pass * ORDER_PAIRS + i,
					      bufs[2 * k], bufs[2 * k + 1],
					      pass >= 3 ? NELEM / 2 : NELEM,
					      "order");
			if (r)
				return r;
		}
	}
	return 0;
}

static int rank_main(int rank, void *arg)
{
	struct rc_shared *sh = arg;
	int32_t *send, *recv, *alt[2] = { NULL, NULL };
	uint32_t comm;
	int fd, i, r = 0;

	if (sh->scenario == S_MEMLOCK) {
		struct rlimit rl = { MEMLOCK_BYTES, MEMLOCK_BYTES };

		if (st_drop_ipc_lock() || setrlimit(RLIMIT_MEMLOCK, &rl)) {
			st_log("rank %d: cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK: %s",
			       rank, strerror(errno));
			return 10;
		}
	}
	send = st_map(BUF_BYTES);
	recv = st_map(BUF_BYTES);
	if (!send || !recv)
		return 11;
	if (sh->scenario == S_MREMAP) {
		alt[0] = map_at(NULL, BUF_BYTES, PROT_NONE);
		alt[1] = map_at(NULL, BUF_BYTES, PROT_NONE);
		if (!alt[0] || !alt[1])
			return 12;
	}
	fd = st_dev_open();
	if (fd < 0)
		return 13;
	r = st_comm_init(fd, 2, rank, sh->id, JOIN_MS, &comm);
	if (r) {
		st_log("rank %d: comm_init: %s", rank, st_errname(r));
		return 14;
	}

	if (sh->scenario == S_MEMLOCK) {
		r = run_memlock(fd, comm, rank, sh->iters);
		goto out;
	}
	if (sh->scenario == S_ORDER) {
		r = run_order(fd, comm, rank);
		goto out;
	}
	for (i = 0; i < sh->iters && !r; i++) {
		int *go = NULL;
		pid_t child = 0;

		if (i && sh->scenario == S_REMAP &&
		    (remap_same(send) || remap_same(recv))) {
			st_log("rank %d: munmap/mmap: %s", rank,
			       strerror(errno));
			r = 20;
			break;
		}
		if (i && sh->scenario == S_DONTNEED &&
		    (madvise(send, BUF_BYTES, MADV_DONTNEED) ||
		     madvise(recv, BUF_BYTES, MADV_DONTNEED))) {
			st_log("rank %d: madvise: %s", rank, strerror(errno));
			r = 21;
			break;
		}
		if (sh->scenario == S_MREMAP && (i & 1)) {
			if (move_away(send, alt[0]) ||
			    move_away(recv, alt[1])) {
				st_log("rank %d: mremap away: %s", rank,
				       strerror(errno));
				r = 22;
				break;
			}
		}
		if (sh->scenario == S_FORK && i) {
			go = st_shared(sizeof(*go));
			if (!go) {
				r = 23;
				break;
			}
			child = fork_writer(send, recv, go);
			if (child <= 0) {
				r = 24;
				break;
			}
		}

		r = allreduce_check(fd, comm, rank, i, send, recv, "main");

		if (!r && sh->scenario == S_MREMAP && (i & 1)) {
			/* the moved pages, at their new address */
			r = allreduce_check(fd, comm, rank, 1000 + i, alt[0],
					    alt[1], "moved");
			if (!r && (move_back(send, alt[0]) ||
				   move_back(recv, alt[1]))) {
				st_log("rank %d: mremap back: %s", rank,
				       strerror(errno));
				r = 25;
			}
			/* and used again where they came from */
			if (!r)
				r = allreduce_check(fd, comm, rank, 2000 + i,
						    send, recv, "back");
		}
		if (child > 0) {
			int st;

			__atomic_store_n(go, 1, __ATOMIC_RELEASE);
			if (waitpid(child, &st, 0) != child ||
			    !WIFEXITED(st) || WEXITSTATUS(st)) {
				st_log("rank %d: the forked writer failed (0x%x)",
				       rank, st);
				if (!r)
					r = 26;
			}
			munmap(go, sizeof(*go));
		}
		if (!r)
			sh->calls[rank]++;
	}
out:
	if (r)
		__atomic_store_n(&sh->oob.failed, 1, __ATOMIC_RELAXED);
	else if (st_oob_barrier(&sh->oob, 2, JOIN_MS))
		r = 15;
	sh->vmpin_open[rank] = vmpin_kb();
	close(fd);
	sh->vmpin_closed[rank] = vmpin_kb();
	return r;
}

FIXTURE(rc) {
	struct rc_shared *sh;
	struct coll_info before, after;
};

FIXTURE_SETUP(rc)
{
	int fd = st_dev_open();

	if (fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-fd));
	close(fd);
	self->sh = st_shared(sizeof(*self->sh));
	ASSERT_NE(NULL, self->sh);
	memset(self->sh, 0, sizeof(*self->sh));
	st_random_id(self->sh->id);
}

FIXTURE_TEARDOWN(rc)
{
	if (self->sh)
		munmap(self->sh, sizeof(*self->sh));
}

/* Run both ranks through @scenario; the counters' deltas in before/after. */
static int run_ranks(struct __test_metadata *_metadata,
		     FIXTURE_DATA(rc) *self, int scenario, int iters)
{
	struct st_ranks rk;
	char st[64];
	int bad, i;

	self->sh->scenario = scenario;
	self->sh->iters = iters;
	if (st_info_fresh(&self->before))
		return -1;
	if (st_ranks_spawn(&rk, 2, rank_main, self->sh))
		return -1;
	bad = st_ranks_wait(&rk, RANKS_MS, 5000);
	for (i = 0; i < 2; i++)
		if (!rk.done[i] || rk.killed[i] || !WIFEXITED(rk.status[i]) ||
		    WEXITSTATUS(rk.status[i]))
			TH_LOG("rank %d: %s", i,
			       st_status_str(&rk, i, st, sizeof(st)));
	/* everything unpinned once both descriptors are closed */
	if (st_info_settle(&self->before, &self->after, 3000)) {
		TH_LOG("after close: pinned %llu comms %llu ops %llu, before %llu %llu %llu",
		       (unsigned long long)self->after.out_pinned_pages,
		       (unsigned long long)self->after.out_comms,
		       (unsigned long long)self->after.out_ops,
		       (unsigned long long)self->before.out_pinned_pages,
		       (unsigned long long)self->before.out_comms,
		       (unsigned long long)self->before.out_ops);
		bad++;
	}
	TH_LOG("hits %llu misses %llu evictions %llu; VmPin kB open %ld/%ld closed %ld/%ld",
	       (unsigned long long)(self->after.out_reg_hits -
				    self->before.out_reg_hits),
	       (unsigned long long)(self->after.out_reg_misses -
				    self->before.out_reg_misses),
	       (unsigned long long)(self->after.out_reg_evictions -
				    self->before.out_reg_evictions),
	       self->sh->vmpin_open[0], self->sh->vmpin_open[1],
	       self->sh->vmpin_closed[0], self->sh->vmpin_closed[1]);
	return bad;
}

#define HITS(s)		((s)->after.out_reg_hits - (s)->before.out_reg_hits)
#define MISSES(s)	((s)->after.out_reg_misses - (s)->before.out_reg_misses)
#define EVICTIONS(s)	((s)->after.out_reg_evictions -		\
			 (s)->before.out_reg_evictions)

/* Skip unless the cache is on (the default, 256). */
#define NEED_CACHE() do {						\
	if (st_param_get("reg_cache") <= 0)					\
		SKIP(return, "reg_cache is %ld", st_param_get("reg_cache"));	\
} while (0)

TEST_F_TIMEOUT(rc, reuse, 180)
{
	const int n = 20;

	if (_metadata->skip)
		return;
	NEED_CACHE();
	ASSERT_EQ(0, run_ranks(_metadata, self, S_REUSE, n));
	EXPECT_EQ(COLL_ABI_VERSION, self->after.out_abi_version);
	/* 2 ranks x 2 buffers: the first call misses, the others hit */
	EXPECT_LE(2 * 2 * (n - 1) - 4, HITS(self));
	EXPECT_GE(2 * 2 + 4, MISSES(self));
	EXPECT_EQ(0, self->sh->vmpin_closed[0]);
	EXPECT_EQ(0, self->sh->vmpin_closed[1]);
}

TEST_F_TIMEOUT(rc, order, 180)
{
	const long k = 2 * 2 * ORDER_PAIRS;	/* buffers of both ranks */

	if (_metadata->skip)
		return;
	NEED_CACHE();
	/* each descriptor keeps 2 buffers x 2 lengths a pair */
	if (st_param_get("reg_cache") < 4 * ORDER_PAIRS)
		SKIP(return, "reg_cache is %ld", st_param_get("reg_cache"));
	ASSERT_EQ(0, run_ranks(_metadata, self, S_ORDER, 0));
	/* a first use at each length misses; the three other passes hit */
	EXPECT_LE(3 * k - 4, HITS(self));
	EXPECT_LE(2 * k, MISSES(self));
	EXPECT_GE(2 * k + 4, MISSES(self));
	EXPECT_EQ(0, EVICTIONS(self));
	EXPECT_EQ(0, self->sh->vmpin_closed[0]);
	EXPECT_EQ(0, self->sh->vmpin_closed[1]);
}

TEST_F_TIMEOUT(rc, munmap_mmap_same_address, 180)
{
	if (_metadata->skip)
		return;
	NEED_CACHE();
	ASSERT_EQ(0, run_ranks(_metadata, self, S_REMAP, 8));
	/* every call after the first finds its entries invalidated */
	EXPECT_LE(2 * 2 * 8, MISSES(self));
}

TEST_F_TIMEOUT(rc, madv_dontneed, 180)
{
	void *p;
	int r;

	if (_metadata->skip)
		return;
	NEED_CACHE();
	/* tinyconfig kernels (the debug rig's) have no madvise() */
	p = st_map(4096);
	ASSERT_NE(NULL, p);
	r = madvise(p, 4096, MADV_DONTNEED) ? errno : 0;
	munmap(p, 4096);
	if (r == ENOSYS)
		SKIP(return, "no madvise() in this kernel");
	ASSERT_EQ(0, run_ranks(_metadata, self, S_DONTNEED, 8));
	EXPECT_LE(2 * 2 * 8, MISSES(self));
}

TEST_F_TIMEOUT(rc, mremap_away_and_back, 180)
{
	if (_metadata->skip)
		return;
	NEED_CACHE();
	ASSERT_EQ(0, run_ranks(_metadata, self, S_MREMAP, 8));
	EXPECT_EQ(8, self->sh->calls[0]);
	EXPECT_EQ(8, self->sh->calls[1]);
}

TEST_F_TIMEOUT(rc, fork_cow, 180)
{
	if (_metadata->skip)
		return;
	NEED_CACHE();
	ASSERT_EQ(0, run_ranks(_metadata, self, S_FORK, 8));
	EXPECT_EQ(8, self->sh->calls[0]);
	EXPECT_EQ(8, self->sh->calls[1]);
}

TEST_F_TIMEOUT(rc, memlock_evicts, 240)
{
	const int n = 3 * MEMLOCK_PAIRS;

	if (_metadata->skip)
		return;
	NEED_CACHE();
	ASSERT_EQ(0, run_ranks(_metadata, self, S_MEMLOCK, n));
	/* more pairs than fit under the limit: unused entries made room */
	EXPECT_LT(0, EVICTIONS(self));
	EXPECT_LT(0, self->sh->vmpin_open[0]);
	EXPECT_GE(MEMLOCK_BYTES >> 10, self->sh->vmpin_open[0]);
	EXPECT_EQ(0, self->sh->vmpin_closed[0]);
	EXPECT_EQ(0, self->sh->vmpin_closed[1]);
	EXPECT_EQ(self->before.out_pinned_pages,
		  self->after.out_pinned_pages);
}

TEST_F_TIMEOUT(rc, disabled, 180)
{
	long old = st_param_get("reg_cache");
	int bad;

	if (_metadata->skip)
		return;
	ASSERT_LE(0, old) TH_LOG("reg_cache unreadable");
	ASSERT_EQ(0, st_param_set("reg_cache", 0));
	bad = run_ranks(_metadata, self, S_REUSE, 5);
	ASSERT_EQ(0, st_param_set("reg_cache", old));
	ASSERT_EQ(0, bad);
	EXPECT_EQ(0, HITS(self));
	EXPECT_EQ(0, MISSES(self));
	EXPECT_EQ(0, self->sh->vmpin_open[0]);
}

TEST_HARNESS_MAIN
