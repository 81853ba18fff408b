// SPDX-License-Identifier: GPL-2.0
/*
 * coll_fail_nth: every allocation of every ioctl made to fail, one at a time,
 * in the style of tools/testing/selftests/iommu/iommufd_fail_nth.c.
 *
 * For each scenario (an ioctl after some set-up) and n = 1, 2, ...: write
 * n to /proc/thread-self/fail-nth, so that the n-th fault-injection point
 * the thread passes (a slab or page allocation) fails, run the ioctl, and
 * check that it either succeeded with a right result or failed with a
 * documented errno having changed nothing: after the scenario's own
 * clean-up, COLL_INFO's counters (pinned pages, communicators, collectives
 * and requests in flight, kernel bytes) are back where they were, and the
 * same call without injection works.  The walk ends at the first n that
 * the ioctl does not reach (fail-nth reads back non-zero).  kmemleak and
 * the kernel log are checked by guest-run.sh afterwards.
 *
 * Needs CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB and
 * CONFIG_FAIL_PAGE_ALLOC with debugfs (the rig's debug kernel); skips
 * elsewhere.
 */
#include <sys/syscall.h>

#include "coll_selftest.h"
#include "kselftest_harness.h"

#define JOIN_MS		5000
#define MAX_NTH		5000
#define NELEM		1024

static const char *const fi_dirs[] = {
	"/sys/kernel/debug/failslab",
	"/sys/kernel/debug/fail_page_alloc",
};

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -errno ?: -EIO;
	close(fd);
	return ret;
}

/* Count GFP_KERNEL allocations too, quietly (no stack in the log). */
static int fi_setup(void)
{
	char path[128];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(fi_dirs); i++) {
		snprintf(path, sizeof(path), "%s/ignore-gfp-wait", fi_dirs[i]);
		if (write_file(path, "N"))
			return -1;
		snprintf(path, sizeof(path), "%s/verbose", fi_dirs[i]);
		if (write_file(path, "0"))
			return -1;
	}
	snprintf(path, sizeof(path), "%s/ignore-gfp-highmem", fi_dirs[1]);
	write_file(path, "N");
	return 0;
}

static int nth_fd = -1;

static int nth_open(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%ld/fail-nth",
		 (long)syscall(SYS_gettid));
	nth_fd = open(path, O_RDWR | O_CLOEXEC);
	return nth_fd < 0 ? -errno : 0;
}

static void nth_set(unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	if (pwrite(nth_fd, buf, len, 0) != len)
		abort();
}

/* 0 if the fault was injected, else how many points were left. */
static unsigned int nth_left(void)
{
	char buf[16] = { 0 };

	if (pread(nth_fd, buf, sizeof(buf) - 1, 0) <= 0)
		abort();
	return strtoul(buf, NULL, 10);
}

/* ---- scenarios ---------------------------------------------------------- */

struct ctx {
	int fd;
	uint32_t comm;
	uint8_t id[COLL_ID_BYTES];
	int32_t *send, *recv;
	size_t n;		/* elements */
	uint32_t req;
};

struct scenario {
	const char *name;
	int (*setup)(struct ctx *c);
	int (*call)(struct ctx *c);	/* the ioctl under injection */
	int (*check)(struct ctx *c);	/* after a successful call */
	void (*teardown)(struct ctx *c);
	int errs[3];			/* accepted errors */
	bool order0;			/* single pages fail too (min-order 0) */
};

static int su_fd(struct ctx *c)
{
	c->fd = st_dev_open();
	return c->fd < 0 ? c->fd : 0;
}

static int su_comm(struct ctx *c)
{
	int r = su_fd(c);

	if (r)
		return r;
	st_random_id(c->id);
	return st_comm_init(c->fd, 1, 0, c->id, JOIN_MS, &c->comm);
}

static int su_bufs(struct ctx *c, size_t n)
{
	size_t i;

	c->n = n;
	c->send = st_map(n * 4);
	c->recv = st_map(n * 4);
	if (!c->send || !c->recv)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		c->send[i] = (int32_t)(i * 7 + 1);
	memset(c->recv, 0xa5, n * 4);
	return 0;
}

static int su_comm_bufs(struct ctx *c)
{
	return su_comm(c) ?: su_bufs(c, NELEM);
}

/* 3 MiB: several leaves of page pointers, and their table. */
static int su_comm_big(struct ctx *c)
{
	return su_comm(c) ?: su_bufs(c, 3 << 18);
}

static void td(struct ctx *c)
{
	if (c->send)
		munmap(c->send, c->n * 4);
	if (c->recv)
		munmap(c->recv, c->n * 4);
	if (c->fd > 0)
		close(c->fd);
	memset(c, 0, sizeof(*c));
}

static int call_info(struct ctx *c)
{
	struct coll_info info;

	return st_info(c->fd, &info);
}

static int call_join(struct ctx *c)
{
	st_random_id(c->id);
	return st_comm_init(c->fd, 1, 0, c->id, JOIN_MS, &c->comm);
}

static int check_join(struct ctx *c)
{
	struct coll_op op = st_op(c->comm, COLL_BARRIER, 0, 0, 0, NULL, NULL,
				  0);

	return st_submit(c->fd, &op);
}

static int call_destroy(struct ctx *c)
{
	return st_comm_destroy(c->fd, c->comm);
}

static int call_allreduce(struct ctx *c)
{
	struct coll_op op = st_op(c->comm, COLL_ALLREDUCE, COLL_INT32,
				  COLL_SUM, 0, c->send, c->recv, c->n);

	return st_submit(c->fd, &op);
}

static int check_allreduce(struct ctx *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->recv[i] != (int32_t)(i * 7 + 1))
			return -EBADMSG;
	return 0;
}

static int call_alltoall_inplace(struct ctx *c)
{
	struct coll_op op = st_op(c->comm, COLL_ALLTOALL, COLL_INT32, 0, 0,
				  c->recv, c->recv, c->n);

	return st_submit(c->fd, &op);
}

static int call_submit_nb(struct ctx *c)
{
	struct coll_op op = st_op(c->comm, COLL_ALLREDUCE, COLL_INT32,
				  COLL_SUM, 0, c->send, c->recv, c->n);
	int r;

	op.flags = COLL_OP_F_NONBLOCK;
	r = st_submit(c->fd, &op);
	if (!r)
		c->req = op.out_req;
	return r;
}

static int check_submit_nb(struct ctx *c)
{
	return st_wait(c->fd, c->req, 10000) ?: check_allreduce(c);
}

static int su_nb_pending(struct ctx *c)
{
	return su_comm_bufs(c) ?: call_submit_nb(c);
}

static int call_wait(struct ctx *c)
{
	return st_wait(c->fd, c->req, 10000);
}

static int call_test(struct ctx *c)
{
	return st_poll_in(c->fd, 10000) == 1 ? st_test(c->fd, c->req) :
	       -ETIMEDOUT;
}

/* Two AllReduces of half the buffers each, as one group. */
static int group_halves(struct ctx *c, uint32_t flags)
{
	size_t h = c->n / 2;
	struct coll_op ops[2] = {
		st_op(c->comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0,
		      c->send, c->recv, h),
		st_op(c->comm, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 0,
		      c->send + h, c->recv + h, c->n - h),
	};
	struct coll_group g = {
		.size = sizeof(g),
		.flags = flags,
		.comm = c->comm,
		.nops = 2,
		.ops_uptr = (uintptr_t)ops,
		.op_size = sizeof(ops[0]),
	};

	return st_ioctl(c->fd, COLL_GROUP, &g);
}

static int call_group(struct ctx *c)
{
	return group_halves(c, 0);
}

static int call_group_nofuse(struct ctx *c)
{
	return group_halves(c, COLL_GROUP_F_NOFUSE);
}

static int call_open(struct ctx *c)
{
	return su_fd(c);
}

/* A communicator joined with COLL_COMM_F_MAP, its slots not made yet. */
static int su_comm_mapped(struct ctx *c)
{
	struct coll_comm_init ci = {
		.size = sizeof(ci), .flags = COLL_COMM_F_MAP, .nranks = 1,
		.timeout_ms = JOIN_MS,
	};
	int r = su_fd(c);

	if (r)
		return r;
	st_random_id(c->id);
	memcpy(ci.id, c->id, COLL_ID_BYTES);
	r = st_ioctl(c->fd, COLL_COMM_INIT, &ci);
	c->comm = ci.out_comm;
	return r;
}

static int call_comm_map(struct ctx *c)
{
	struct coll_comm_map cm = { .size = sizeof(cm), .comm = c->comm };

	return st_ioctl(c->fd, COLL_COMM_MAP, &cm);
}

/* The slots are there, mappable, and say what they are. */
static int check_comm_map(struct ctx *c)
{
	struct coll_comm_map cm = { .size = sizeof(cm), .comm = c->comm };
	struct coll_map_hdr *h;
	int r;

	r = st_ioctl(c->fd, COLL_COMM_MAP, &cm);
	if (r)
		return r;
	h = mmap(NULL, cm.out_bytes, PROT_READ, MAP_SHARED, c->fd,
		 (off_t)cm.out_offset);
	if (h == MAP_FAILED)
		return -errno;
	r = h->magic == COLL_MAP_MAGIC && h->nslots == cm.out_nslots ? 0 :
	    -EPROTO;
	munmap(h, cm.out_bytes);
	return r;
}

static const struct scenario scenarios[] = {
	{ "open", NULL, call_open, NULL, td, { ENOMEM } },
	{ "info", su_fd, call_info, NULL, td, { ENOMEM } },
	{ "comm_init", su_fd, call_join, check_join, td, { ENOMEM } },
	{ "comm_destroy", su_comm, call_destroy, NULL, td, { ENOMEM } },
	{ "submit_blocking", su_comm_bufs, call_allreduce, check_allreduce,
	  td, { ENOMEM, EFAULT } },
	{ "submit_big", su_comm_big, call_allreduce, check_allreduce, td,
	  { ENOMEM, EFAULT } },
	{ "submit_alltoall_inplace", su_comm_bufs, call_alltoall_inplace,
	  NULL, td, { ENOMEM, EFAULT } },
	{ "submit_nonblocking", su_comm_bufs, call_submit_nb, check_submit_nb,
	  td, { ENOMEM, EFAULT } },
	{ "wait", su_nb_pending, call_wait, check_allreduce, td, { ENOMEM } },
	{ "test", su_nb_pending, call_test, check_allreduce, td, { ENOMEM } },
	{ "group", su_comm_bufs, call_group, check_allreduce, td,
	  { ENOMEM, EFAULT } },
	{ "group_nofuse", su_comm_bufs, call_group_nofuse, check_allreduce,
	  td, { ENOMEM, EFAULT } },
	{ "comm_map", su_comm_mapped, call_comm_map, check_comm_map, td,
	  { ENOMEM }, true },
};

static bool accepted(const struct scenario *s, int r)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(s->errs); i++)
		if (s->errs[i] && r == -s->errs[i])
			return true;
	return false;
}

static bool same(const struct coll_info *a, const struct coll_info *b)
{
	return a->out_pinned_pages == b->out_pinned_pages &&
	       a->out_comms == b->out_comms && a->out_ops == b->out_ops &&
	       a->out_reqs == b->out_reqs &&
	       a->out_kernel_bytes == b->out_kernel_bytes;
}

static int settle(const struct coll_info *want, struct coll_info *got)
{
	int i;

	for (i = 0; i < 500; i++) {
		if (st_info_fresh(got))
			return -1;
		if (same(want, got))
			return 0;
		st_sleep_ms(10);
	}
	return -1;
}

/* fail_page_alloc's min-order: 1 by default, 0 for single pages. */
static void fi_min_order(const char *v)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/min-order", fi_dirs[1]);
	write_file(path, v);
}

FIXTURE(walk) {
	int unused;
};

FIXTURE_VARIANT(walk) {
	int which;
};

FIXTURE_VARIANT_ADD(walk, open) { .which = 0 };
FIXTURE_VARIANT_ADD(walk, info) { .which = 1 };
FIXTURE_VARIANT_ADD(walk, comm_init) { .which = 2 };
FIXTURE_VARIANT_ADD(walk, comm_destroy) { .which = 3 };
FIXTURE_VARIANT_ADD(walk, submit_blocking) { .which = 4 };
FIXTURE_VARIANT_ADD(walk, submit_big) { .which = 5 };
FIXTURE_VARIANT_ADD(walk, submit_alltoall_inplace) { .which = 6 };
FIXTURE_VARIANT_ADD(walk, submit_nonblocking) { .which = 7 };
FIXTURE_VARIANT_ADD(walk, wait) { .which = 8 };
FIXTURE_VARIANT_ADD(walk, test) { .which = 9 };
FIXTURE_VARIANT_ADD(walk, group) { .which = 10 };
FIXTURE_VARIANT_ADD(walk, group_nofuse) { .which = 11 };
FIXTURE_VARIANT_ADD(walk, comm_map) { .which = 12 };

FIXTURE_SETUP(walk)
{
	int fd = st_dev_open();

	if (fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-fd));
	close(fd);
	if (access(fi_dirs[0], F_OK) || access(fi_dirs[1], F_OK))
		SKIP(return, "no failslab/fail_page_alloc in debugfs (not a fault-injection kernel)");
	if (nth_open())
		SKIP(return, "no /proc/self/task/TID/fail-nth");
	ASSERT_EQ(0, fi_setup());
	if (scenarios[variant->which].order0)
		fi_min_order("0");
}

FIXTURE_TEARDOWN(walk)
{
	if (scenarios[variant->which].order0)
		fi_min_order("1");
	if (nth_fd >= 0)
		close(nth_fd);
	nth_fd = -1;
}

TEST_F_TIMEOUT(walk, all, 1800)
{
	const struct scenario *s;
	struct coll_info base, after;
	unsigned int nth, left, failed = 0, succeeded = 0;
	struct ctx c = { 0 };
	int r;

	if (_metadata->skip)
		return;
	s = &scenarios[variant->which];
	ASSERT_EQ(0, st_info_fresh(&base));
	for (nth = 1; nth <= MAX_NTH; nth++) {
		memset(&c, 0, sizeof(c));
		if (s->setup) {
			r = s->setup(&c);
			ASSERT_EQ(0, r) TH_LOG("%s: set-up: %s", s->name,
					       st_errname(r));
		}
		nth_set(nth);
		r = s->call(&c);
		left = nth_left();
		nth_set(0);
		if (r) {
			ASSERT_TRUE(accepted(s, r))
				TH_LOG("%s, allocation %u failed: %s", s->name,
				       nth, st_errname(r));
			failed++;
			/* The same call, without injection, works. */
			if (s->call != call_open && s->call != call_wait &&
			    s->call != call_test) {
				r = s->call(&c);
				ASSERT_EQ(0, r)
					TH_LOG("%s after failure %u: %s",
					       s->name, nth, st_errname(r));
			}
		} else {
			succeeded++;
		}
		if (!r && s->check) {
			r = s->check(&c);
			ASSERT_EQ(0, r) TH_LOG("%s, allocation %u: check: %s",
					       s->name, nth, st_errname(r));
		}
		if (s->teardown)
			s->teardown(&c);
		ASSERT_EQ(0, settle(&base, &after))
			TH_LOG("%s, allocation %u (%s): counters: pinned %llu->%llu comms %llu->%llu ops %llu->%llu reqs %llu->%llu kbytes %llu->%llu",
			       s->name, nth, left ? "not reached" : "failed",
			       (unsigned long long)base.out_pinned_pages,
			       (unsigned long long)after.out_pinned_pages,
			       (unsigned long long)base.out_comms,
			       (unsigned long long)after.out_comms,
			       (unsigned long long)base.out_ops,
			       (unsigned long long)after.out_ops,
			       (unsigned long long)base.out_reqs,
			       (unsigned long long)after.out_reqs,
			       (unsigned long long)base.out_kernel_bytes,
			       (unsigned long long)after.out_kernel_bytes);
		if (left)
			break;		/* the call passed every point */
	}
	TH_LOG("%s: %u injection points, %u failed the call, %u were absorbed",
	       s->name, nth - 1, failed, succeeded > 0 ? succeeded - 1 : 0);
	ASSERT_LE(nth, MAX_NTH);
}

TEST_HARNESS_MAIN
