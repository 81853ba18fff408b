// SPDX-License-Identifier: MIT
/*
 * coll_perf: nccl-tests style benchmark of /dev/collective, one process per
 * rank, started by collrun:
 *
 *   collrun -n 4 coll_perf -p allreduce -b 8 -e 64M -f 2 -d float -o sum
 *
 * Options, size conventions, timing and checking: perf_common.c (and -h).
 * coll_perf adds -a ALGO (coll_comm_set_algo) and -N (non-blocking: the
 * i-calls, then coll_wait(), keeping up to -W DEPTH requests in flight; with
 * the default depth 1 every request is waited for before the next).
 * The maximum of the times and the sum of #wrong over ranks are themselves
 * collectives on the same communicator (double max, uint64 sum).
 *
 * Exit status: 0; 1 if an operation failed (on the failing rank) or, on rank
 * 0, if any element was wrong; 2 on bad usage.  Rank 0 prints; other ranks
 * print only errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "libcollective.h"
#include "perf_common.h"

static coll_comm_t *comm;

static void do_exit(int code)
{
	fflush(stdout);
	/* Destroying the communicator tells the other ranks at once. */
	coll_comm_destroy(comm);
	exit(code);
}

static int submit(const struct perf_opts *o, const struct perf_op *op,
		  unsigned int flags, coll_req_t *req)
{
	if (op->prim == COLL_BARRIER)
		return coll_submit(comm, COLL_BARRIER, NULL, NULL, 0, 0, 0, 0,
				   flags, req);
	(void)o;
	return coll_submit(comm, op->prim, op->sendptr, op->recvptr, op->count,
			   op->dtype, op->redop, op->root, flags, req);
}

static int run(const struct perf_opts *o, const struct perf_op *op, int n)
{
	coll_req_t reqs[1024];
	int i, head = 0, inflight = 0, ret = 0, ret2;

	if (!o->nonblock) {
		for (i = 0; i < n; i++) {
			ret = submit(o, op, 0, NULL);
			if (ret)
				return ret;
		}
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (inflight == o->window) {
			ret = coll_wait(&reqs[head], 0);
			head = (head + 1) % o->window;
			inflight--;
			if (ret)
				break;
		}
		ret = submit(o, op, COLL_OP_F_NONBLOCK,
			     &reqs[(head + inflight) % o->window]);
		if (ret)
			break;
		inflight++;
	}
	/* Collect what is in flight even after an error. */
	while (inflight) {
		ret2 = coll_wait(&reqs[head], 0);
		if (!ret)
			ret = ret2;
		head = (head + 1) % o->window;
		inflight--;
	}
	return ret;
}

static int barrier(void)
{
	return coll_barrier(comm);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/*
 * The floor the small-message targets are set against: a null
 * ioctl on the communicator's descriptor (COLL_INFO, which only copies its
 * counters out) and a null system call, best of 5 batches of 10000.
 */
static void print_floor(void)
{
	double t, best_io = 1e30, best_sc = 1e30;
	struct coll_info info;
	int b, i, fd = coll_comm_fd(comm);

	for (b = 0; b < 5; b++) {
		t = now_us();
		for (i = 0; i < 10000; i++) {
			memset(&info, 0, sizeof(info));
			info.size = sizeof(info);
			if (ioctl(fd, COLL_INFO, &info))
				return;
		}
		t = (now_us() - t) / 10000;
		best_io = t < best_io ? t : best_io;
		t = now_us();
		for (i = 0; i < 10000; i++)
			syscall(SYS_getppid);
		t = (now_us() - t) / 10000;
		best_sc = t < best_sc ? t : best_sc;
	}
	printf("# floor: null ioctl %.2f us (2.5x: %.2f us), null syscall %.2f us\n",
	       best_io, 2.5 * best_io, best_sc);
}

static int max_double(double *v)
{
	return coll_allreduce(comm, v, v, 1, COLL_FP64, COLL_MAX);
}

static int sum_u64(uint64_t *v)
{
	return coll_allreduce(comm, v, v, 1, COLL_UINT64, COLL_SUM);
}

static int env_int(const char *name, int dflt)
{
	const char *s = getenv(name);

	return s && *s ? atoi(s) : dflt;
}

int main(int argc, char **argv)
{
	struct perf_backend be = {
		.name = "coll_perf",
		.features = PERF_F_ALGO | PERF_F_NONBLOCK,
		.run = run,
		.barrier = barrier,
		.max_double = max_double,
		.sum_u64 = sum_u64,
		.strerror = coll_strerror,
		.abort = do_exit,
	};
	struct perf_opts o;
	const char *dev;
	int ret;

	/* From the environment first, so that -h and -r work before joining. */
	be.rank = env_int("RANK", 0);
	be.nranks = env_int("WORLD_SIZE", 1);
	if (be.nranks < 1)
		be.nranks = 1;
	perf_parse(argc, argv, &be, &o);

	if (!getenv("RANK") || !getenv("WORLD_SIZE") || !getenv("COLL_ID")) {
		fprintf(stderr, "coll_perf: RANK, WORLD_SIZE and COLL_ID must be set: run it under collrun, e.g.\n"
			"  collrun -n 4 %s -p allreduce\n", argv[0]);
		return 2;
	}
	dev = getenv("COLL_DEVICE");
	if (!dev || !*dev)
		dev = "/dev/" COLL_DEVICE_NAME;
	ret = coll_comm_init_env(&comm);
	if (ret == -ENOENT && access(dev, F_OK) != 0) {
		fprintf(stderr, "coll_perf: rank %d: cannot open %s: %s (is collective.ko loaded?)\n",
			be.rank, dev, strerror(ENOENT));
		return 1;
	}
	if (ret) {
		fprintf(stderr, "coll_perf: rank %d: cannot join the communicator on %s: %s (%d)\n",
			be.rank, dev, coll_strerror(ret), ret);
		return 1;
	}
	if (coll_comm_rank(comm) != be.rank || coll_comm_size(comm) != be.nranks) {
		fprintf(stderr, "coll_perf: rank/size mismatch\n");
		do_exit(1);
	}
	ret = coll_comm_set_algo(comm, o.algo);
	if (ret) {
		fprintf(stderr, "coll_perf: set algo: %s\n", coll_strerror(ret));
		do_exit(1);
	}
	/* The others wait in the barrier, asleep, while rank 0 measures. */
	if (be.rank == 0)
		print_floor();
	ret = coll_barrier(comm);
	if (ret) {
		fprintf(stderr, "coll_perf: barrier: %s\n", coll_strerror(ret));
		do_exit(1);
	}
	ret = perf_main(&be, &o);
	do_exit(ret);
	return ret;
}
