/* SPDX-License-Identifier: MIT */
/*
 * perf_common: the benchmark driver shared by coll_perf (libcollective) and
 * mpi_perf (MPI), so that both print the same rows for the same options:
 * option parsing, size and count conventions, data patterns, the reference
 * results #wrong is counted against, and the nccl-tests output format.  A
 * backend supplies the ranks, the operations and their buffer layouts.
 *
 * Types, ops and primitives are the enum values of <linux/collective.h>.
 */
#ifndef PERF_COMMON_H
#define PERF_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <linux/collective.h>

#define PERF_PRIM_ALL	(-1)

struct perf_opts {
	int prim;		/* enum coll_prim, or PERF_PRIM_ALL */
	unsigned int prims;	/* with PERF_PRIM_ALL: the bit of each primitive run */
	size_t minbytes, maxbytes;
	unsigned long factor;
	int iters, warmup, check;
	int min_ms;		/* -T: time each size for at least this long */
	int dtype, redop, root, algo;
	int inplace;
	int nonblock, window;	/* -N, -W (coll_perf only) */
};

/* One operation as the backend must run it. */
struct perf_op {
	int prim, dtype, redop, root;
	size_t count;		/* the primitive's count (struct coll_op) */
	void *sendptr;		/* where this rank's input is */
	void *recvptr;		/* the receive argument */
	void *resultptr;	/* where the result lands (check reads it) */
};

/* Backend features, for option parsing and the header. */
#define PERF_F_ALGO	(1U << 0)	/* -a */
#define PERF_F_NONBLOCK	(1U << 1)	/* -N, -W */

struct perf_backend {
	const char *name;
	unsigned int features;
	int rank, nranks;
	/*
	 * 0 if the backend can run prim with o's type and op; otherwise a
	 * reason (for a "# skipping" comment).  May rewrite op->redop (MPI
	 * has no avg).
	 */
	const char *(*unsupported)(const struct perf_opts *o, struct perf_op *op);
	/*
	 * Set sendptr, recvptr and resultptr for op from two buffers of
	 * bufbytes each; NULL means the NCCL layouts (perf_layout_nccl()).
	 */
	void (*layout)(const struct perf_opts *o, struct perf_op *op,
		       void *sbuf, void *rbuf);
	/* Run op n times back to back; 0 or an error for strerror. */
	int (*run)(const struct perf_opts *o, const struct perf_op *op, int n);
	int (*barrier)(void);
	int (*max_double)(double *v);	/* in place, over all ranks */
	int (*sum_u64)(uint64_t *v);	/* in place, over all ranks */
	const char *(*strerror)(int err);
	void (*abort)(int code);	/* never returns */
};

/* Parse argv into o (defaults first); exits on error or -h. */
void perf_parse(int argc, char **argv, const struct perf_backend *be,
		struct perf_opts *o);
/* Run every size of o.prim (or of every primitive); returns exit status. */
int perf_main(const struct perf_backend *be, const struct perf_opts *o);

/* Exposed for the tests and for backends. */
int perf_parse_size(const char *s, size_t *out);
void perf_layout_nccl(const struct perf_opts *o, struct perf_op *op,
		      void *sbuf, void *rbuf, int rank);
double perf_bus_factor(int prim, int nranks);
/* Counts for a size (bytes of count as nccl-tests): returns paramcount. */
size_t perf_counts(int prim, size_t bytes, size_t esize, int nranks,
		   size_t *sendcount, size_t *recvcount);
void perf_fill(const struct perf_op *op, int nranks, int rank);
uint64_t perf_check(const struct perf_op *op, int nranks, int rank);
void perf_poison(void *p, size_t bytes);

/* Half and bfloat16 conversions (round to nearest even). */
uint16_t perf_f32_to_f16(float f);
float perf_f16_to_f32(uint16_t h);
uint16_t perf_f32_to_bf16(float f);
float perf_bf16_to_f32(uint16_t h);

#endif /* PERF_COMMON_H */
