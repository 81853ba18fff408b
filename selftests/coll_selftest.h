/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the collective selftests: raw ioctl wrappers (no
 * library), clocks, rank processes with bounded waits, and out-of-band
 * synchronisation through shared memory.
 *
 * Nothing here uses the harness macros, so it is safe to call from the rank
 * processes a test forks (those must never ASSERT: an ASSERT in a forked
 * child would longjmp into the harness's copy of the test and run the
 * fixture teardown there).
 */
#ifndef COLL_SELFTEST_H
#define COLL_SELFTEST_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <linux/capability.h>
#include <linux/collective.h>

#define COLL_ST_MAX_RANKS 64

#ifndef offsetofend
#define offsetofend(TYPE, MEMBER) \
	(offsetof(TYPE, MEMBER) + sizeof(((TYPE *)0)->MEMBER))
#endif

/* ---- errno names ------------------------------------------------------ */

static inline const char *st_errname(int err)
{
	const char *s;

	if (err < 0)
		err = -err;
	if (!err)
		return "0";
	s = strerrorname_np(err);
	return s ? s : "E?";
}

/* ---- clocks ----------------------------------------------------------- */

static inline int64_t st_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void st_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline void st_sleep_us(unsigned int us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- the device ------------------------------------------------------- */

static inline const char *st_dev_path(void)
{
	const char *p = getenv("COLL_DEVICE");

	return p && *p ? p : "/dev/" COLL_DEVICE_NAME;
}

/* A new descriptor on the device, or -errno. */
static inline int st_dev_open(void)
{
	int fd = open(st_dev_path(), O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* 0 or -errno, never leaves errno as the only record. */
static inline int st_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static inline int st_info(int fd, struct coll_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return st_ioctl(fd, COLL_INFO, info);
}

/* COLL_INFO through a descriptor of its own. */
static inline int st_info_fresh(struct coll_info *info)
{
	int fd = st_dev_open(), ret;

	if (fd < 0)
		return fd;
	ret = st_info(fd, info);
	close(fd);
	return ret;
}

static inline void st_random_id(uint8_t id[COLL_ID_BYTES])
{
	size_t got = 0;

	while (got < COLL_ID_BYTES) {
		ssize_t r = getrandom(id + got, COLL_ID_BYTES - got, 0);

		if (r > 0)
			got += r;
	}
}

static inline int st_comm_init(int fd, uint32_t nranks, uint32_t rank,
			       const uint8_t id[COLL_ID_BYTES],
			       uint32_t timeout_ms, uint32_t *comm)
{
	struct coll_comm_init ci = {
		.size = sizeof(ci),
		.nranks = nranks,
		.rank = rank,
		.timeout_ms = timeout_ms,
	};
	int ret;

	memcpy(ci.id, id, COLL_ID_BYTES);
	ret = st_ioctl(fd, COLL_COMM_INIT, &ci);
	if (!ret && comm)
		*comm = ci.out_comm;
	return ret;
}

static inline int st_comm_destroy(int fd, uint32_t comm)
{
	struct coll_comm_destroy cd = { .size = sizeof(cd), .comm = comm };

	return st_ioctl(fd, COLL_COMM_DESTROY, &cd);
}

static inline struct coll_op st_op(uint32_t comm, uint32_t prim,
				   uint32_t dtype, uint32_t redop,
				   uint32_t root, const void *send, void *recv,
				   uint64_t count)
{
	struct coll_op op = {
		.size = sizeof(op),
		.comm = comm,
		.prim = prim,
		.dtype = dtype,
		.redop = redop,
		.root = root,
		.sendbuf = (uintptr_t)send,
		.recvbuf = (uintptr_t)recv,
		.count = count,
	};

	return op;
}

static inline int st_submit(int fd, struct coll_op *op)
{
	return st_ioctl(fd, COLL_SUBMIT, op);
}

static inline int st_wait(int fd, uint32_t req, uint32_t timeout_ms)
{
	struct coll_wait w = { .size = sizeof(w), .req = req,
			       .timeout_ms = timeout_ms };

	return st_ioctl(fd, COLL_WAIT, &w);
}

static inline int st_test(int fd, uint32_t req)
{
	struct coll_wait w = { .size = sizeof(w), .req = req };

	return st_ioctl(fd, COLL_TEST, &w);
}

/* poll() for POLLIN: 1 if readable, 0 on timeout, -errno on error. */
static inline int st_poll_in(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;

	do {
		r = poll(&p, 1, timeout_ms);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r > 0 && (p.revents & POLLIN) ? 1 : 0;
}

/*
 * Wait until the module-wide counters match @want in pinned pages, comms
 * and ops, for up to @timeout_ms (the kernel may release asynchronously).
 * Returns 0, or -1 with the last reading in @got.
 */
static inline int st_info_settle(const struct coll_info *want,
				 struct coll_info *got, int timeout_ms)
{
	int64_t end = st_now_ns() + (int64_t)timeout_ms * 1000000LL;

	for (;;) {
		if (st_info_fresh(got))
			return -1;
		if (got->out_pinned_pages == want->out_pinned_pages &&
		    got->out_comms == want->out_comms &&
		    got->out_ops == want->out_ops)
			return 0;
		if (st_now_ns() > end)
			return -1;
		st_sleep_ms(10);
	}
}

/* ---- buffers ---------------------------------------------------------- */

/* A module parameter's value (/sys/module/collective/parameters/), or -1. */
static inline long st_param_get(const char *name)
{
	char path[128], val[64];
	FILE *f;
	long v = -1;

	snprintf(path, sizeof(path), "/sys/module/collective/parameters/%s",
		 name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(val, sizeof(val), f))
		v = strtol(val, NULL, 0);
	fclose(f);
	return v;
}

/* Set a module parameter (those of mode 0644).  Return: 0 or -errno. */
static inline int st_param_set(const char *name, long v)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/sys/module/collective/parameters/%s",
		 name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ret = fprintf(f, "%ld\n", v) > 0 ? 0 : -EIO;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/* Give up CAP_IPC_LOCK, so that RLIMIT_MEMLOCK binds.  Return: 0 or -errno. */
static inline int st_drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];
	int i = CAP_TO_INDEX(CAP_IPC_LOCK);
	unsigned int mask = CAP_TO_MASK(CAP_IPC_LOCK);

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[i].effective &= ~mask;
	d[i].permitted &= ~mask;
	d[i].inheritable &= ~mask;
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

static inline void *st_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Shared between the test process and the ranks it forks. */
static inline void *st_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Index of the first byte != @c, or @len. */
static inline size_t st_find_not(const void *buf, int c, size_t len)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)c)
			return i;
	return len;
}

/* ---- out-of-band synchronisation -------------------------------------- */

/*
 * A barrier between rank processes that does not go through the module:
 * needed before leaving a communicator, because a rank whose last
 * collective has completed may not leave while a peer is still finishing
 * its part of that collective (the peer would get ECONNRESET).
 */
struct st_oob {
	unsigned int count;
	unsigned int gen;
	int failed;		/* set by a rank that gave up */
	int pad;
};

/* 0, or -1 on timeout or when another rank set ->failed. */
static inline int st_oob_barrier(struct st_oob *b, int n, int timeout_ms)
{
	unsigned int gen = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);
	int64_t end = st_now_ns() + (int64_t)timeout_ms * 1000000LL;
	unsigned int spins = 0;

	if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == (unsigned)n) {
		__atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&b->gen, 1, __ATOMIC_RELEASE);
		return 0;
	}
	while (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == gen) {
		if (__atomic_load_n(&b->failed, __ATOMIC_RELAXED))
			return -1;
		if (++spins > 64) {
			if (st_now_ns() > end)
				return -1;
			st_sleep_us(200);
		} else {
			sched_yield();
		}
	}
	return 0;
}

/*
 * Wait until *@p >= @v; 0, or -1 on timeout or as soon as *@abort (if
 * given) is non-zero.
 */
static inline int st_wait_ge_or(const int *p, int v, const int *abort,
				int timeout_ms)
{
	int64_t end = st_now_ns() + (int64_t)timeout_ms * 1000000LL;

	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < v) {
		if (st_now_ns() > end)
			return -1;
		if (abort && __atomic_load_n(abort, __ATOMIC_RELAXED))
			return -1;
		st_sleep_us(500);
	}
	return 0;
}

static inline int st_wait_ge(const int *p, int v, int timeout_ms)
{
	return st_wait_ge_or(p, v, NULL, timeout_ms);
}

/* ---- rank processes --------------------------------------------------- */

struct st_ranks {
	int n;
	pid_t pid[COLL_ST_MAX_RANKS];
	int status[COLL_ST_MAX_RANKS];	/* waitpid status */
	bool done[COLL_ST_MAX_RANKS];
	bool killed[COLL_ST_MAX_RANKS];	/* by st_ranks_wait on timeout */
};

typedef int (*st_rank_fn)(int rank, void *arg);

/*
 * Fork @n processes running @fn(rank, arg); each exits with fn's return
 * value (0 = pass).  They die with the test process (PR_SET_PDEATHSIG) and
 * share its process group, which the harness kills on its own timeout.
 * Returns 0 or -errno (already forked children are killed).
 */
static inline int st_ranks_spawn(struct st_ranks *rk, int n, st_rank_fn fn,
				 void *arg)
{
	pid_t parent = getpid();
	int i;

	memset(rk, 0, sizeof(*rk));
	if (n < 1 || n > COLL_ST_MAX_RANKS)
		return -EINVAL;
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			int err = -errno;

			while (i--) {
				kill(rk->pid[i], SIGKILL);
				waitpid(rk->pid[i], NULL, 0);
			}
			return err;
		}
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(120);
			_exit(fn(i, arg));
		}
		rk->pid[i] = pid;
	}
	rk->n = n;
	return 0;
}

static inline void st_ranks_kill(struct st_ranks *rk)
{
	int i;

	for (i = 0; i < rk->n; i++) {
		if (rk->done[i])
			continue;
		kill(rk->pid[i], SIGKILL);
		if (waitpid(rk->pid[i], &rk->status[i], 0) == rk->pid[i]) {
			rk->done[i] = true;
			rk->killed[i] = true;
		}
	}
}

/*
 * Reap all ranks.  Gives up after @timeout_ms (kills the rest), and once a
 * rank has failed gives the others @grace_ms to notice before killing them.
 * Returns the number of ranks that did not exit with status 0.
 */
static inline int st_ranks_wait(struct st_ranks *rk, int timeout_ms,
				int grace_ms)
{
	int64_t end = st_now_ns() + (int64_t)timeout_ms * 1000000LL;
	int left = rk->n, bad = 0, i;

	while (left) {
		bool progress = false;

		for (i = 0; i < rk->n; i++) {
			pid_t r;

			if (rk->done[i])
				continue;
			r = waitpid(rk->pid[i], &rk->status[i], WNOHANG);
			if (r == rk->pid[i] || (r < 0 && errno == ECHILD)) {
				rk->done[i] = true;
				left--;
				progress = true;
				if (r < 0 || !WIFEXITED(rk->status[i]) ||
				    WEXITSTATUS(rk->status[i])) {
					int64_t g = st_now_ns() +
						(int64_t)grace_ms * 1000000LL;
					if (!bad++ && g < end)
						end = g;
				}
			}
		}
		if (!left)
			break;
		if (st_now_ns() > end) {
			st_ranks_kill(rk);
			break;
		}
		if (!progress)
			st_sleep_ms(5);
	}
	bad = 0;
	for (i = 0; i < rk->n; i++)
		if (!rk->done[i] || rk->killed[i] ||
		    !WIFEXITED(rk->status[i]) || WEXITSTATUS(rk->status[i]))
			bad++;
	return bad;
}

static inline const char *st_status_str(const struct st_ranks *rk, int i,
					char *buf, size_t len)
{
	int st = rk->status[i];

	if (!rk->done[i])
		snprintf(buf, len, "not reaped");
	else if (rk->killed[i])
		snprintf(buf, len, "killed after timeout");
	else if (WIFEXITED(st))
		snprintf(buf, len, "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, len, "status 0x%x", st);
	return buf;
}

/* Messages from rank processes: TAP diagnostics on stderr. */
static inline void __attribute__((format(printf, 1, 2)))
st_log(const char *fmt, ...)
{
	char buf[1024] = "# ";
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(buf + 2, sizeof(buf) - 3, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	len += 2;
	if (len > (int)sizeof(buf) - 2)
		len = sizeof(buf) - 2;
	if (buf[len - 1] != '\n')
		buf[len++] = '\n';
	/* One write per line so that lines of different ranks do not mix. */
	fflush(stderr);
	if (write(STDERR_FILENO, buf, len) < 0)
		return;
}

#endif /* COLL_SELFTEST_H */
