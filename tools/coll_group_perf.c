// SPDX-License-Identifier: MIT
/*
 * coll_group_perf: many small AllReduces, as separate calls against the
 * other ways of submitting a batch of them: one group (coll_group_start/
 * end, COLL_GROUP), fused and not, non-blocking calls then waits, and
 * io_uring (coll_uring_prep(): one io_uring_enter submits the batch and
 * waits for all of its completions).  One process per rank, started by
 * collrun:
 *
 *   collrun -n 2 coll_group_perf -k 100 -c 4096 -d int32 -i 20 -r 5
 *
 *   -k OPS     AllReduces per batch (default 100, at most 1024)
 *   -c BYTES   bytes per AllReduce (default 4096)
 *   -d DTYPE   int32 or float (default int32)
 *   -i ITERS   batches per timed round (default 20)
 *   -r ROUNDS  rounds of the forms, interleaved (default 5); the median
 *              round is printed
 *   -F FORMS   comma-separated, first the baseline of the ratios: calls,
 *              nonblocking, uring, nofuse, fused (default
 *              calls,nofuse,fused)
 *   -q DEPTH   io_uring: at most DEPTH commands in flight (default 0: the
 *              whole batch at once)
 *   -R         every other batch submits its ops in reverse order (the
 *              same buffers, met out of the order of the last batch: what
 *              a registration cache's lookup must not depend on)
 *   -s SPIN    io_uring: 0 waits for completions in io_uring_enter
 *              (default), 1 polls the completion queue, 2 polls it
 *              yielding the CPU between looks (more ranks than CPUs)
 *
 * Each op has its own buffers (as a framework's gradient buckets do); the
 * inputs are small integers, so every result is exact, and each form's
 * last batch is checked element by element against the sum computed here.
 * Rank 0 prints one line per form, in µs per batch and per op, and the
 * ratio of each form to the first.  Exit status: 0, 1 on a failed
 * call or a wrong element, 2 on bad usage.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "libcollective.h"

enum { F_CALLS, F_NB, F_URING, F_NOFUSE, F_FUSED, F_NUM };
static const char *const form_key[F_NUM] = {
	"calls", "nonblocking", "uring", "nofuse", "fused",
};
static const char *const form_name[F_NUM] = {
	"separate calls", "non-blocking calls", "io_uring", "group, not fused",
	"group, fused",
};

static coll_comm_t *comm;
static int rank, nranks;
static struct io_uring ring;
static coll_req_t *reqs;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "coll_group_perf: rank %d: %s: %s\n", rank, what,
		coll_strerror(err));
	coll_comm_destroy(comm);
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * One batch through io_uring.  Depth 0: one system call submits the whole
 * batch and waits for all of it.  Depth D: at most D commands in flight;
 * each system call submits what fits and waits for one completion, and
 * every completion there is reaped at once.
 */
static int depth, spin;

static int reverse, nbatch;

/* The @j-th op of the batch under way: every other one backwards (-R). */
static int op_index(int k, int j)
{
	return reverse && (nbatch & 1) ? k - 1 - j : j;
}

static void batch_uring(int k, size_t count, int dtype, char **send,
			char **recv)
{
	int want = depth ? depth : k, posted = 0, done = 0, inflight, i, r;
	struct io_uring_cqe *cqe;
	unsigned int head, n;

	while (done < k) {
		inflight = posted - done;
		while (posted < k && inflight < want) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

			if (!sqe)
				die("io_uring_get_sqe", -ENOSPC);
			i = op_index(k, posted);
			r = coll_uring_prep(comm, sqe, COLL_ALLREDUCE,
					    send[i], recv[i], count, dtype,
					    COLL_SUM, 0);
			if (r)
				die("coll_uring_prep", r);
			posted++;
			inflight++;
		}
		if (spin) {
			/* submit, then poll the CQ: no sleep, no wake-up */
			r = io_uring_submit(&ring);
			if (r < 0)
				die("io_uring_submit", r);
			while (!io_uring_cq_ready(&ring))
				if (spin > 1)
					sched_yield();
		} else {
			r = io_uring_submit_and_wait(&ring, depth ? 1 : k);
			if (r < 0)
				die("io_uring_submit_and_wait", r);
		}
		n = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			if (cqe->res)
				die("io_uring completion", cqe->res);
			n++;
		}
		io_uring_cq_advance(&ring, n);
		done += n;
	}
}

/* One batch of @k AllReduces in form @f. */
static void batch(int f, int k, size_t count, int dtype, char **send,
		  char **recv)
{
	int i, j, r;

	nbatch++;

	if (f == F_URING)
		return batch_uring(k, count, dtype, send, recv);
	if (f == F_NOFUSE || f == F_FUSED) {
		r = coll_group_start(comm);
		if (r)
			die("coll_group_start", r);
	}
	for (j = 0; j < k; j++) {
		i = op_index(k, j);
		r = f == F_NB ? coll_iallreduce(comm, send[i], recv[i], count,
						dtype, COLL_SUM, &reqs[j]) :
				coll_allreduce(comm, send[i], recv[i], count,
					       dtype, COLL_SUM);
		if (r)
			die("coll_allreduce", r);
	}
	if (f == F_NB) {
		for (j = 0; j < k; j++) {
			r = coll_wait(&reqs[j], 0);
			if (r)
				die("coll_wait", r);
		}
	}
	if (f == F_NOFUSE || f == F_FUSED) {
		r = coll_group_end(comm, f == F_NOFUSE ? COLL_GROUP_F_NOFUSE :
				   0);
		if (r)
			die("coll_group_end", r);
	}
}

static double input(int q, int op, size_t j)
{
	return (double)((q + 1) * 3 + op % 7 + (int)(j % 11)) - 8;
}

static void fill(int k, size_t count, int dtype, char **send, char **recv,
		 size_t bytes)
{
	size_t j;
	int i;

	for (i = 0; i < k; i++) {
		for (j = 0; j < count; j++) {
			if (dtype == COLL_INT32)
				((int32_t *)send[i])[j] = (int32_t)input(rank, i, j);
			else
				((float *)send[i])[j] = (float)input(rank, i, j);
		}
		memset(recv[i], 0xa5, bytes);
	}
}

/* Every element of the last batch; returns the number wrong. */
static long check(int k, size_t count, int dtype, char **recv)
{
	long bad = 0;
	size_t j;
	int i, q;

	for (i = 0; i < k; i++) {
		for (j = 0; j < count; j++) {
			double want = 0, got;

			for (q = 0; q < nranks; q++)
				want += input(q, i, j);
			got = dtype == COLL_INT32 ? ((int32_t *)recv[i])[j] :
						    ((float *)recv[i])[j];
			if (got != want && bad++ < 4)
				fprintf(stderr, "coll_group_perf: rank %d op %d element %zu: %g, want %g\n",
					rank, i, j, got, want);
		}
	}
	return bad;
}

/* "calls,uring" -> forms[] in order; the number, or -1. */
static int parse_forms(char *arg, int *forms)
{
	char *tok, *save = NULL;
	int n = 0, f;

	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (f = 0; f < F_NUM && strcmp(tok, form_key[f]); f++)
			;
		if (f == F_NUM || n == F_NUM)
			return -1;
		forms[n++] = f;
	}
	return n ? n : -1;
}

int main(int argc, char **argv)
{
	int k = 100, iters = 20, rounds = 5, dtype = COLL_INT32, opt, f, i, r;
	int forms[F_NUM] = { F_CALLS, F_NOFUSE, F_FUSED }, nforms = 3, x;
	size_t bytes = 4096, count;
	double *t[F_NUM], med[F_NUM];
	char **send, **recv;
	long bad = 0;

	while ((opt = getopt(argc, argv, "k:c:d:i:r:F:q:s:Rh")) != -1) {
		switch (opt) {
		case 'k': k = atoi(optarg); break;
		case 'c': bytes = strtoull(optarg, NULL, 0); break;
		case 'd': dtype = coll_dtype_from_name(optarg); break;
		case 'i': iters = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'F': nforms = parse_forms(optarg, forms); break;
		case 'q': depth = atoi(optarg); break;
		case 's': spin = atoi(optarg); break;
		case 'R': reverse = 1; break;
		default:
			fprintf(stderr, "usage: coll_group_perf [-k ops] [-c bytes] [-d int32|float] [-i iters] [-r rounds] [-F calls,nonblocking,uring,nofuse,fused] [-q depth] [-s 0|1|2] [-R]\n");
			return 2;
		}
	}
	if (k < 1 || k > COLL_GROUP_MAX_OPS || iters < 1 || rounds < 1 ||
	    (dtype != COLL_INT32 && dtype != COLL_FP32) || bytes < 4 ||
	    nforms < 1 || depth < 0) {
		fprintf(stderr, "coll_group_perf: bad arguments\n");
		return 2;
	}
	count = bytes / 4;
	bytes = count * 4;

	r = coll_comm_init_env(&comm);
	if (r) {
		fprintf(stderr, "coll_group_perf: coll_comm_init_env: %s\n",
			coll_strerror(r));
		return 1;
	}
	rank = coll_comm_rank(comm);
	nranks = coll_comm_size(comm);
	/* the whole batch in the ring, its completions in the CQ */
	r = io_uring_queue_init(k, &ring, IORING_SETUP_SQE128);
	if (r)
		die("io_uring_queue_init", r);
	send = calloc(k, sizeof(*send));
	recv = calloc(k, sizeof(*recv));
	reqs = calloc(k, sizeof(*reqs));
	if (!send || !recv || !reqs)
		die("calloc", -ENOMEM);
	for (f = 0; f < F_NUM; f++) {
		t[f] = calloc(rounds, sizeof(double));
		if (!t[f])
			die("calloc", -ENOMEM);
	}
	for (i = 0; i < k; i++) {
		send[i] = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
		recv[i] = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
		if (!send[i] || !recv[i])
			die("aligned_alloc", -ENOMEM);
	}
	fill(k, count, dtype, send, recv, bytes);

	/* warm-up: every form once (registration cache, plans) */
	for (x = 0; x < nforms; x++)
		batch(forms[x], k, count, dtype, send, recv);
	for (r = 0; r < rounds; r++) {
		for (x = 0; x < nforms; x++) {
			double t0;

			f = forms[x];
			if (r == rounds - 1)	/* poisoned, then checked */
				fill(k, count, dtype, send, recv, bytes);
			coll_barrier(comm);
			t0 = now_us();
			for (i = 0; i < iters; i++)
				batch(f, k, count, dtype, send, recv);
			t[f][r] = (now_us() - t0) / iters;
			if (r == rounds - 1)
				bad += check(k, count, dtype, recv);
		}
	}
	for (x = 0; x < nforms; x++) {
		f = forms[x];
		qsort(t[f], rounds, sizeof(double), cmp_double);
		med[f] = t[f][rounds / 2];
	}
	if (rank == 0) {
		printf("# coll_group_perf: %d ranks, %d AllReduces of %zu B (%s) per batch%s, %d batches per round, median of %d rounds, io_uring depth %d\n",
		       nranks, k, bytes, coll_dtype_name(dtype),
		       reverse ? " (every other one in reverse order)" : "",
		       iters, rounds, depth ? depth : k);
		printf("# %-18s %12s %10s %8s\n", "form", "us/batch",
		       "us/op", "speedup");
		for (x = 0; x < nforms; x++) {
			f = forms[x];
			char name[32];

			if (f == F_URING && depth)
				snprintf(name, sizeof(name), "io_uring, depth %d",
					 depth);
			else
				snprintf(name, sizeof(name), "%s", form_name[f]);
			printf("  %-18s %12.1f %10.2f %7.2fx\n", name,
			       med[f], med[f] / k, med[forms[0]] / med[f]);
		}
	}
	io_uring_queue_exit(&ring);
	coll_comm_destroy(comm);
	if (bad)
		fprintf(stderr, "coll_group_perf: rank %d: %ld wrong elements\n",
			rank, bad);
	return bad ? 1 : 0;
}
