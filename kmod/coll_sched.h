/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Schedules: pure code that turns (primitive, algorithm, ranks, count) into
 * rounds of copy and reduce steps.  No kernel dependency: the same file is
 * compiled into the module and into the native unit tests (selftests/unit).
 *
 * Model.  Every rank r owns two buffers, SEND and RECV, addressed in
 * elements.  A schedule is a list of rounds; the steps of one round may run
 * in any order and in parallel (the executor cuts them into chunks), and a
 * round starts only when the previous one is complete on all ranks.
 *
 * Step kinds:
 *   COPY:   dst[i] = src[0][i]
 *   REDUCE: dst[i] = src[0][i] op src[1][i] op ... op src[nsrc-1][i],
 *           evaluated left to right; then divided by nranks if the step
 *           has COLL_STEP_F_AVG.  nsrc >= 2.
 *   SWAP:   exchange dst[i] and src[0][i] (in-place AlltoAll).
 *
 * In-place layouts (see uapi) make one rank's SEND and RECV the same memory
 * at an offset.  A schedule must be correct whether each rank is in place or
 * not, independently per rank: so within one round no step may read memory
 * another step of that round writes, a REDUCE's dst may coincide only with
 * its src[0] (exactly, same range), and a COPY whose dst and src coincide
 * exactly is skipped by the executor.
 */
#ifndef COLL_SCHED_H
#define COLL_SCHED_H

/* Natively, selftests/unit/coll_native.h provides the kernel's types. */
#ifdef __KERNEL__
#include <linux/types.h>
#endif

enum coll_sbuf {
	COLL_SBUF_SEND = 0,
	COLL_SBUF_RECV = 1,
};

enum coll_step_kind {
	COLL_STEP_COPY = 0,
	COLL_STEP_REDUCE,
	COLL_STEP_SWAP,
};

#define COLL_STEP_F_AVG 0x1

/* A place: rank, which buffer, element offset in it. */
struct coll_bref {
	u32 rank;
	u32 buf;	/* enum coll_sbuf */
	u64 off;
};

struct coll_step {
	u8 kind;	/* enum coll_step_kind */
	u8 flags;	/* COLL_STEP_F_* */
	u16 __pad;
	u32 nsrc;
	u32 src_first;	/* index into coll_sched.srcs */
	u32 round;
	u64 count;	/* elements, > 0 */
	struct coll_bref dst;
};

struct coll_sched_args {
	u32 prim;	/* enum coll_prim (uapi) */
	u32 algo;	/* enum coll_algo, never AUTO here */
	u32 nranks;
	u32 root;
	u64 count;	/* as struct coll_op.count */
	u64 chunk;	/* ring pipelining: elements per ring chunk, >= 1 */
	u32 flags;	/* COLL_SCHED_F_* */
	u32 __pad;
};

/*
 * Every rank is in place (AlltoAll only: there in-place needs SWAP steps and
 * the executor insists that all ranks agree).  Other primitives ignore it.
 */
#define COLL_SCHED_F_INPLACE 0x1

struct coll_sched {
	u32 nrounds;
	u32 nsteps;
	u32 nsrcs;
	struct coll_step *steps;	/* sorted by round */
	struct coll_bref *srcs;
	u32 *round_first;		/* nrounds + 1 entries: step index */
};

/* Allocation hooks: kvcalloc/kvfree in the kernel, calloc/free natively. */
void *coll_sched_zalloc(size_t n, size_t size);
void coll_sched_free_mem(void *p);

/*
 * Build a schedule.  Returns 0, -EINVAL for arguments out of range,
 * -EOVERFLOW if sizes do not fit (count * nranks in 64 bits, or more than
 * U32_MAX steps or sources: a ring chunk too small for the count), -ENOMEM.
 * count == 0 or BARRIER gives a schedule with no rounds.  On error *s is
 * left empty.
 */
int coll_sched_build(const struct coll_sched_args *a, struct coll_sched *s);
void coll_sched_destroy(struct coll_sched *s);

/* Elements of each buffer a rank uses (0 if it does not use it). */
u64 coll_sched_buf_elems(u32 prim, u32 nranks, u32 root, u32 rank,
			 u32 buf, u64 count);

/*
 * The in-place layout of a rank, if the primitive has one for that rank:
 * buffer *inner lies inside buffer *outer starting at element *off.
 * Returns 1 if it has one, 0 if not (the rank is never in place).
 */
int coll_sched_inplace_layout(u32 prim, u32 nranks, u32 root, u32 rank,
			      u64 count, u32 *outer, u32 *inner, u64 *off);

#endif /* COLL_SCHED_H */
