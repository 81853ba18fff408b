// SPDX-License-Identifier: GPL-2.0
/*
 * coll_kill: a rank that leaves in the middle of a collective.
 *
 * Four ranks (raw ioctls, no library).  One rank leaves, by SIGKILL, by
 * COLL_COMM_DESTROY or by closing its descriptor (FIXTURE_VARIANT), while
 *  - waiting:     the other three are blocked in an AllReduce the leaver
 *                 never submitted;
 *  - running:     all four are in a 64 MiB in-place AllReduce loop, so the
 *                 leaver goes in the middle of one that is moving data
 *                 (4 x 64 MiB of guest memory; the time to notice a leave
 *                 must not grow with the size of a round);
 *  - nonblocking: the other three have a non-blocking AllReduce pending
 *                 and sleep in poll() on the descriptor;
 *  - eager:       as waiting, with a small AllReduce, which goes through
 *                 the communicator's eager slots (no task);
 *  - eager_running: all four loop on small blocking AllReduces (eager),
 *                 so the leaver goes while in one or between two;
 *  - eager_lead:  the other three loop on small Broadcasts from rank 0
 *                 that the leaver never submits: each completes exactly 8
 *                 (a blocking rank leads by at most 8 collectives), then
 *                 waits for a slot to be released, which the leave must
 *                 end.
 * Every other rank's collective must fail with ECONNRESET within 1 s of
 * the leave (CLOCK_MONOTONIC, shared by all processes), its next
 * collective must fail the same way, nothing may hang (every wait is
 * bounded), and once every rank has exited COLL_INFO must show no pinned
 * pages, no communicators and no operations (polled for up to 2 s).
 */
#include "coll_selftest.h"
#include "kselftest_harness.h"

#define NR		4
#define JOIN_MS		30000
#define STEP_MS		30000	/* bound on any one wait in a rank */
#define LEAVE_BOUND_NS	1000000000LL
#define WAIT_COUNT	(256 * 1024)		/* 1 MiB of fp32 */
#define RUN_COUNT	(16 * 1024 * 1024)	/* 64 MiB of fp32 */
#define RUN_MAX_ITERS	1000
#define EAGER_COUNT	16			/* 64 bytes: the eager path */
#define EAGER_MAX_ITERS	100000000
#define EAGER_LEAD	8	/* collectives a blocking rank may lead by */

enum how { HOW_KILL, HOW_DESTROY, HOW_CLOSE };
enum scenario { SC_WAITING, SC_RUNNING, SC_NONBLOCKING, SC_EAGER,
		SC_EAGER_RUNNING, SC_EAGER_LEAD };

static const char *const how_names[] = { "SIGKILL", "COMM_DESTROY", "close" };

struct kshm {
	struct st_oob oob;
	int joined;
	int entered[NR];	/* about to enter the collective */
	int leave;		/* parent -> leaver: go now */
	int finished;		/* survivors that recorded their results */
	int64_t t_leave;	/* when the leaver left */
	int64_t t_ret[NR];	/* when the failing call returned */
	int err[NR];		/* its errno (positive) */
	int err2[NR];		/* errno of the next collective */
	int iters[NR];		/* collectives completed before */
	int leaver_err;		/* destroy: the leaver's own pending request */
	int leaver_step;	/* how far the leaver got (for messages) */
};

struct kargs {
	enum how how;
	enum scenario sc;
	int leaver;
	uint8_t id[COLL_ID_BYTES];
	struct kshm *sh;
};

static float *map_floats(size_t n)
{
	float *p = st_map(n * sizeof(float));
	size_t i;

	if (p)
		for (i = 0; i < n; i += 1024)
			p[i] = 1.0f;		/* fault the pages in */
	return p;
}

/* Block until the parent says go (or give up). */
static int wait_leave(struct kshm *sh)
{
	return st_wait_ge(&sh->leave, 1, STEP_MS);
}

/* Leave by destroy or close; records the time just before. */
static int do_leave(const struct kargs *a, int fd, uint32_t comm)
{
	int64_t t = st_now_ns();
	int r = 0;

	__atomic_store_n(&a->sh->t_leave, t, __ATOMIC_RELEASE);
	if (a->how == HOW_DESTROY)
		r = st_comm_destroy(fd, comm);
	else
		close(fd);
	if (r)
		st_log("leaver: COMM_DESTROY: %s", st_errname(r));
	return r;
}

/* The leaver stays alive (unless killed) until the survivors are done. */
static int leaver_linger(struct kshm *sh)
{
	if (st_wait_ge(&sh->finished, NR - 1, STEP_MS))
		st_log("leaver: survivors never finished");
	return 0;
}

/* Small blocking AllReduces with the others until killed or told to go. */
static int leaver_eager(const struct kargs *a, int fd, uint32_t comm)
{
	struct kshm *sh = a->sh;
	float *buf = map_floats(EAGER_COUNT);
	struct coll_op op;
	int r, i;

	if (!buf)
		return 21;
	op = st_op(comm, COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, buf, buf,
		   EAGER_COUNT);
	__atomic_store_n(&sh->entered[a->leaver], 1, __ATOMIC_RELEASE);
	for (i = 0; i < EAGER_MAX_ITERS; i++) {
		if (a->how != HOW_KILL &&
		    __atomic_load_n(&sh->leave, __ATOMIC_ACQUIRE)) {
			sh->leaver_step = 2;
			if (do_leave(a, fd, comm))
				return 22;
			return leaver_linger(sh);
		}
		r = st_submit(fd, &op);
		if (r) {
			st_log("leaver: AllReduce before leaving: %s",
			       st_errname(r));
			return 23;
		}
	}
	return 24;
}

static int leaver_main(const struct kargs *a, int fd, uint32_t comm)
{
	struct kshm *sh = a->sh;
	struct coll_op op;
	float *buf;
	int r, i;

	sh->leaver_step = 1;
	if (a->sc == SC_EAGER_RUNNING)
		return leaver_eager(a, fd, comm);
	if (a->sc != SC_RUNNING) {
		/* Never submits. */
		__atomic_store_n(&sh->entered[a->leaver], 1, __ATOMIC_RELEASE);
		if (a->how == HOW_KILL) {
			for (;;)
				pause();
		}
		if (wait_leave(sh))
			return 10;
		if (do_leave(a, fd, comm))
			return 11;
		return leaver_linger(sh);
	}

	buf = map_floats(RUN_COUNT);
	if (!buf)
		return 12;
	op = st_op(comm, COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, buf, buf,
		   RUN_COUNT);
	if (a->how == HOW_KILL) {
		/* In a blocking AllReduce when the SIGKILL comes. */
		__atomic_store_n(&sh->entered[a->leaver], 1, __ATOMIC_RELEASE);
		for (i = 0; i < RUN_MAX_ITERS; i++) {
			r = st_submit(fd, &op);
			if (r) {
				st_log("leaver: AllReduce before the kill: %s",
				       st_errname(r));
				return 13;
			}
		}
		st_log("leaver: %d AllReduces and no SIGKILL", RUN_MAX_ITERS);
		return 14;
	}

	/* Non-blocking AllReduces until told to go, then leave with one pending. */
	op.flags = COLL_OP_F_NONBLOCK;
	__atomic_store_n(&sh->entered[a->leaver], 1, __ATOMIC_RELEASE);
	for (i = 0; i < RUN_MAX_ITERS; i++) {
		r = st_submit(fd, &op);
		if (r) {
			st_log("leaver: submit: %s", st_errname(r));
			return 15;
		}
		for (;;) {
			if (__atomic_load_n(&sh->leave, __ATOMIC_ACQUIRE)) {
				sh->leaver_step = 2;
				if (do_leave(a, fd, comm))
					return 16;
				if (a->how == HOW_DESTROY) {
					/* Pending -> ECONNRESET; done just before -> 0. */
					r = st_wait(fd, op.out_req, STEP_MS);
					sh->leaver_err = -r;
					if (r && r != -ECONNRESET) {
						st_log("leaver: own request after COMM_DESTROY: %s, want ECONNRESET (or 0)",
						       st_errname(r));
						return 17;
					}
					r = st_wait(fd, op.out_req, 0);
					if (r != -ENOENT) {
						st_log("leaver: request handle after it was collected: %s, want ENOENT",
						       st_errname(r));
						return 18;
					}
				}
				return leaver_linger(sh);
			}
			r = st_wait(fd, op.out_req, 5);
			if (r == -ETIMEDOUT)
				continue;
			if (r) {
				st_log("leaver: AllReduce before leaving: %s",
				       st_errname(r));
				return 19;
			}
			break;
		}
	}
	return 20;
}

/* Records the failing call; 0 if it was ECONNRESET. */
static int survivor_record(struct kshm *sh, int rank, int r)
{
	sh->t_ret[rank] = st_now_ns();
	sh->err[rank] = -r;
	return r == -ECONNRESET ? 0 : 1;
}

static int survivor_main(const struct kargs *a, int rank, int fd,
			 uint32_t comm)
{
	struct kshm *sh = a->sh;
	size_t count = a->sc == SC_RUNNING ? RUN_COUNT :
		       a->sc >= SC_EAGER ? EAGER_COUNT : WAIT_COUNT;
	float *send = map_floats(count), *recv;
	struct coll_op op;
	int r, i, ret = 0;

	if (!send)
		return 30;
	/* Running: in place, to keep four ranks within a small guest. */
	recv = a->sc == SC_RUNNING || a->sc == SC_EAGER_RUNNING ? send :
	       map_floats(count);
	if (!recv)
		return 31;
	/* eager_lead: Broadcasts from rank 0, which the leaver never makes */
	op = st_op(comm, a->sc == SC_EAGER_LEAD ? COLL_BROADCAST :
		   COLL_ALLREDUCE, COLL_FP32, COLL_SUM, 0, send, recv, count);

	switch (a->sc) {
	case SC_WAITING:
	case SC_EAGER:
		__atomic_store_n(&sh->entered[rank], 1, __ATOMIC_RELEASE);
		r = st_submit(fd, &op);
		ret = survivor_record(sh, rank, r);
		break;
	case SC_RUNNING:
	case SC_EAGER_RUNNING:
	case SC_EAGER_LEAD:
		__atomic_store_n(&sh->entered[rank], 1, __ATOMIC_RELEASE);
		for (i = 0; i < (a->sc == SC_RUNNING ? RUN_MAX_ITERS :
						     EAGER_MAX_ITERS); i++) {
			r = st_submit(fd, &op);
			if (r)
				break;
			sh->iters[rank]++;
		}
		ret = survivor_record(sh, rank, r);
		break;
	case SC_NONBLOCKING:
		op.flags = COLL_OP_F_NONBLOCK;
		r = st_submit(fd, &op);
		if (r) {
			st_log("rank %d: non-blocking submit: %s", rank,
			       st_errname(r));
			ret = 32;
			break;
		}
		__atomic_store_n(&sh->entered[rank], 1, __ATOMIC_RELEASE);
		r = st_poll_in(fd, STEP_MS);
		sh->t_ret[rank] = st_now_ns();
		if (r != 1) {
			st_log("rank %d: no POLLIN within %d ms after the leave (%d)",
			       rank, STEP_MS, r);
			sh->err[rank] = ETIME;
			ret = 33;
			break;
		}
		r = st_wait(fd, op.out_req, STEP_MS);
		sh->err[rank] = -r;
		ret = r == -ECONNRESET ? 0 : 34;
		break;
	}

	/* Every later collective fails the same way, at once. */
	op.flags = 0;
	op.count = 1;
	r = st_submit(fd, &op);
	sh->err2[rank] = -r;
	if (r != -ECONNRESET)
		ret = ret ? ret : 35;
	__atomic_add_fetch(&sh->finished, 1, __ATOMIC_ACQ_REL);
	return ret;
}

static int rank_main(int rank, void *arg)
{
	const struct kargs *a = arg;
	struct kshm *sh = a->sh;
	uint32_t comm;
	int fd, r;

	fd = st_dev_open();
	if (fd < 0) {
		st_log("rank %d: open: %s", rank, st_errname(fd));
		return 2;
	}
	r = st_comm_init(fd, NR, rank, a->id, JOIN_MS, &comm);
	if (r) {
		st_log("rank %d: COMM_INIT: %s", rank, st_errname(r));
		return 3;
	}
	__atomic_add_fetch(&sh->joined, 1, __ATOMIC_ACQ_REL);
	if (rank == a->leaver)
		return leaver_main(a, fd, comm);
	return survivor_main(a, rank, fd, comm);
}

FIXTURE(kill) {
	struct kshm *sh;
};

FIXTURE_VARIANT(kill) {
	enum how how;
};

FIXTURE_VARIANT_ADD(kill, sigkill) { .how = HOW_KILL };
FIXTURE_VARIANT_ADD(kill, destroy) { .how = HOW_DESTROY };
FIXTURE_VARIANT_ADD(kill, close) { .how = HOW_CLOSE };

FIXTURE_SETUP(kill)
{
	int fd = st_dev_open();

	if (fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-fd));
	close(fd);
	self->sh = st_shared(sizeof(*self->sh));
	ASSERT_NE(NULL, self->sh);
}

FIXTURE_TEARDOWN(kill)
{
	if (self->sh)
		munmap(self->sh, sizeof(*self->sh));
}

/* Counters back to zero once everything is gone (async release: 2 s). */
static void assert_all_released(struct __test_metadata *_metadata)
{
	struct coll_info zero = { 0 }, now;

	ASSERT_EQ(0, st_info_settle(&zero, &now, 2000))
		TH_LOG("2 s after the last rank exited: pinned pages %llu, comms %llu, ops %llu",
		       (unsigned long long)now.out_pinned_pages,
		       (unsigned long long)now.out_comms,
		       (unsigned long long)now.out_ops);
}

static void run(struct __test_metadata *_metadata, FIXTURE_DATA(kill) *self,
		enum how how, enum scenario sc)
{
	struct kargs a = {
		.how = how,
		.sc = sc,
		.leaver = sc == SC_RUNNING || sc == SC_EAGER_RUNNING ? 2 :
			  sc == SC_EAGER_LEAD ? 3 : 0,
		.sh = self->sh,
	};
	struct kshm *sh = self->sh;
	struct coll_info start, info;
	struct st_ranks rk;
	int i, bad;

	ASSERT_EQ(0, st_info_fresh(&start));
	if (start.out_pinned_pages || start.out_comms || start.out_ops)
		TH_LOG("module not idle at the start: pinned %llu comms %llu ops %llu",
		       (unsigned long long)start.out_pinned_pages,
		       (unsigned long long)start.out_comms,
		       (unsigned long long)start.out_ops);
	st_random_id(a.id);
	ASSERT_EQ(0, st_ranks_spawn(&rk, NR, rank_main, &a));

	/* Everyone joined and about to enter (or in) the collective. */
	if (st_wait_ge(&sh->joined, NR, JOIN_MS))
		TH_LOG("only %d of %d ranks joined", sh->joined, NR);
	for (i = 0; i < NR; i++)
		if (st_wait_ge(&sh->entered[i], 1, STEP_MS))
			TH_LOG("rank %d never got to its collective", i);
	/* Let them get into the kernel and, when running, move some data. */
	st_sleep_ms(sc == SC_RUNNING ? 200 : 300);
	if (!st_info_fresh(&info))
		TH_LOG("before the leave: %llu ops in flight, %llu pages pinned",
		       (unsigned long long)info.out_ops,
		       (unsigned long long)info.out_pinned_pages);

	if (how == HOW_KILL) {
		__atomic_store_n(&sh->t_leave, st_now_ns(), __ATOMIC_RELEASE);
		kill(rk.pid[a.leaver], SIGKILL);
	} else {
		__atomic_store_n(&sh->leave, 1, __ATOMIC_RELEASE);
	}

	bad = st_ranks_wait(&rk, 2 * STEP_MS, STEP_MS);
	for (i = 0; i < NR; i++) {
		char st[64];
		int64_t dt = sh->t_ret[i] - sh->t_leave;

		if (i == a.leaver) {
			if (how == HOW_KILL) {
				EXPECT_TRUE(WIFSIGNALED(rk.status[i]) &&
					    WTERMSIG(rk.status[i]) == SIGKILL)
					TH_LOG("leaver: %s", st_status_str(&rk, i, st, sizeof(st)));
				bad -= !rk.killed[i];	/* killed by us, not by the timeout */
			} else {
				EXPECT_TRUE(WIFEXITED(rk.status[i]) &&
					    !WEXITSTATUS(rk.status[i]))
					TH_LOG("leaver: %s (step %d)",
					       st_status_str(&rk, i, st, sizeof(st)),
					       sh->leaver_step);
			}
			continue;
		}
		TH_LOG("rank %d: %s after %.3f s (%d collectives before), next call %s",
		       i, st_errname(sh->err[i]), dt / 1e9, sh->iters[i],
		       st_errname(sh->err2[i]));
		EXPECT_EQ(ECONNRESET, sh->err[i])
			TH_LOG("rank %d: %s, want ECONNRESET", i, st_errname(sh->err[i]));
		EXPECT_EQ(ECONNRESET, sh->err2[i])
			TH_LOG("rank %d: next collective %s, want ECONNRESET", i,
			       st_errname(sh->err2[i]));
		EXPECT_LE(0, dt)
			TH_LOG("rank %d: its collective ended %.3f s before the leave",
			       i, -dt / 1e9);
		EXPECT_GT(LEAVE_BOUND_NS, dt)
			TH_LOG("rank %d: ECONNRESET %.3f s after the leave, bound 1 s",
			       i, dt / 1e9);
		if (sc == SC_EAGER_LEAD)
			EXPECT_EQ(EAGER_LEAD, sh->iters[i])
				TH_LOG("rank %d: %d Broadcasts without the leaver, want %d",
				       i, sh->iters[i], EAGER_LEAD);
		EXPECT_TRUE(rk.done[i] && !rk.killed[i] && WIFEXITED(rk.status[i]) &&
			    !WEXITSTATUS(rk.status[i]))
			TH_LOG("rank %d: %s", i, st_status_str(&rk, i, st, sizeof(st)));
	}
	if (how == HOW_DESTROY && sc == SC_RUNNING)
		TH_LOG("leaver's own pending request: %s", st_errname(sh->leaver_err));
	assert_all_released(_metadata);
	ASSERT_EQ(0, bad < 0 ? 0 : bad) TH_LOG("%s: %d ranks failed", how_names[how], bad);
}

#define KILL_TEST(name, sc)						\
	TEST_F_TIMEOUT(kill, name, 150)					\
	{								\
		if (_metadata->skip)					\
			return;						\
		run(_metadata, self, variant->how, sc);			\
	}

KILL_TEST(waiting, SC_WAITING)
KILL_TEST(running, SC_RUNNING)
KILL_TEST(nonblocking, SC_NONBLOCKING)
KILL_TEST(eager, SC_EAGER)
KILL_TEST(eager_running, SC_EAGER_RUNNING)
KILL_TEST(eager_lead, SC_EAGER_LEAD)

/*
 * A rank killed while the others are still joining: they end with
 * ETIMEDOUT (or ECONNRESET) no later than their join timeout, and nothing
 * is left behind.
 */
struct join_args {
	uint8_t id[COLL_ID_BYTES];
	struct kshm *sh;
};

static int join_main(int rank, void *arg)
{
	struct join_args *a = arg;
	uint32_t comm;
	int fd = st_dev_open(), r;

	if (fd < 0)
		return 2;
	__atomic_store_n(&a->sh->entered[rank], 1, __ATOMIC_RELEASE);
	r = st_comm_init(fd, 3, rank, a->id, 2000, &comm);
	a->sh->t_ret[rank] = st_now_ns();
	a->sh->err[rank] = -r;
	return r == -ETIMEDOUT || r == -ECONNRESET ? 0 : 1;
}

TEST(kill_during_join)
{
	struct join_args a;
	struct st_ranks rk;
	int fd = st_dev_open(), bad;
	int64_t dt;
	char st[64];

	if (fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-fd));
	close(fd);
	a.sh = st_shared(sizeof(*a.sh));
	ASSERT_NE(NULL, a.sh);
	st_random_id(a.id);
	ASSERT_EQ(0, st_ranks_spawn(&rk, 2, join_main, &a));	/* of 3 */
	ASSERT_EQ(0, st_wait_ge(&a.sh->entered[0], 1, STEP_MS));
	ASSERT_EQ(0, st_wait_ge(&a.sh->entered[1], 1, STEP_MS));
	st_sleep_ms(300);
	a.sh->t_leave = st_now_ns();
	kill(rk.pid[0], SIGKILL);
	bad = st_ranks_wait(&rk, 10000, 10000);
	dt = a.sh->t_ret[1] - a.sh->t_leave;
	TH_LOG("rank 1: %s %.3f s after the kill", st_errname(a.sh->err[1]),
	       dt / 1e9);
	EXPECT_TRUE(WIFSIGNALED(rk.status[0]));
	EXPECT_TRUE(rk.done[1] && !rk.killed[1] && WIFEXITED(rk.status[1]) &&
		    !WEXITSTATUS(rk.status[1]))
		TH_LOG("rank 1: %s, %s", st_status_str(&rk, 1, st, sizeof(st)),
		       st_errname(a.sh->err[1]));
	EXPECT_GT(3000000000LL, dt);
	(void)bad;
	assert_all_released(_metadata);
	munmap(a.sh, sizeof(*a.sh));
}

TEST_HARNESS_MAIN
