/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Schedules ("plans"): pure code that turns (primitive, algorithm, ranks,
 * count) into rounds of copy and reduce steps.  No kernel dependency: the
 * same file is compiled into the module and into the native unit tests
 * (selftests/unit), which simulate every plan step by step.
 *
 * Model.  Every rank r owns two buffers, SEND and RECV, addressed in
 * elements.  A plan is a list of rounds; the steps of one round may run in
 * any order and in parallel (the executor cuts them into chunks), and a
 * round starts only when the previous one is complete on all ranks.
 *
 * Step kinds, per instance:
 *   COPY:   dst[i] = src[0][i]
 *   REDUCE: dst[i] = src[0][i] op src[1][i] op ... op src[nsrc-1][i],
 *           evaluated left to right; then divided by nranks if the step
 *           has COLL_STEP_F_AVG.  nsrc >= 2.
 *   SWAP:   exchange dst[i] and src[0][i] (in-place AlltoAll).
 *
 * Families.  A struct coll_step is not one step but a family of na * nb
 * similar ones ("instances"), numbered (a, b); the places an instance
 * touches follow a pattern (struct coll_pat) that is affine in a, b and the
 * source number j, modulo the number of ranks.  So a plan's size is linear
 * in the number of ranks even where the work is quadratic (AlltoAll moves
 * n * n blocks with one family), and nothing is allocated per source.
 *
 * In-place layouts (see uapi) make one rank's SEND and RECV the same memory
 * at an offset.  A plan must be correct whether each rank is in place or
 * not, independently per rank: so within one round no instance may read
 * memory another instance of that round writes, a REDUCE's dst may coincide
 * only with its src[0] (exactly, same range), and a COPY whose dst and src
 * coincide exactly is skipped by the executor.
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

#define COLL_STEP_F_AVG		0x1	/* REDUCE: divide by nranks at the end */
#define COLL_STEP_F_SPLIT	0x2	/* see struct coll_step.count */

/*
 * A coordinate of instance (a, b) and source j (0 for a destination): a
 * rank, or a block number.  With one level (grp == 0):
 *   (c0 + a * ca + b * cb + j * cj) mod nranks
 * With two levels (grp == G, G divides nranks; nranks / G groups of G
 * consecutive ranks, e.g. the ranks of one host):
 *   G * ((h0 + a * ha + b * hb + j * hj) mod (nranks / G))
 *     + ((c0 + a * ca + b * cb + j * cj) mod G)
 */
struct coll_coord {
	u16 grp;
	u16 c0, ca, cb, cj;
	u16 h0, ha, hb, hj;
};

/*
 * A place pattern.  For instance (a, b) and source j:
 *   rank  = the rank coordinate
 *   elem  = off + (the block coordinate) * blk
 *           (+ the split offset of part a, F_SPLIT)
 */
struct coll_pat {
	u16 buf;	/* enum coll_sbuf */
	u16 __pad;
	struct coll_coord rank;
	struct coll_coord block;
	u64 off;
	u64 blk;
};

struct coll_step {
	u8 kind;	/* enum coll_step_kind */
	u8 flags;	/* COLL_STEP_F_* */
	u16 __pad;
	u32 round;
	u32 na, nb;	/* instances (a, b), a < na, b < nb */
	u32 nsrc;	/* sources of each instance: 1, or >= 2 for REDUCE */
	u32 cpi;	/* chunks per instance (set by the builder) */
	/*
	 * Elements of each instance; with COLL_STEP_F_SPLIT, a length cut into
	 * nranks near-equal contiguous parts, instance a taking part a (its
	 * count and an offset added to every place).  Instances may be empty.
	 */
	u64 count;
	struct coll_pat dst;
	struct coll_pat src0;	/* source 0 */
	struct coll_pat srcj;	/* sources 1 .. nsrc-1 */
};

struct coll_sched_args {
	u32 prim;	/* enum coll_prim (uapi) */
	u32 algo;	/* enum coll_algo, never AUTO here */
	u32 nranks;
	u32 root;
	u64 count;	/* as struct coll_op.count */
	u64 chunk;	/* ring pipelining: elements per ring chunk, >= 1 */
	u64 exec_chunk;	/* elements the executor claims at a time, >= 1 */
	u32 flags;	/* COLL_SCHED_F_* */
	/*
	 * Ranks per host, if every host has as many and rank r is on host
	 * r / local (TREE and HIER use it); 0 or nranks: one host, or no such
	 * layout.  Other values must divide nranks.
	 */
	u32 local;
};

/*
 * Every rank is in place (AlltoAll only: there in-place needs SWAP steps and
 * the executor insists that all ranks agree).  Other primitives ignore it.
 */
#define COLL_SCHED_F_INPLACE 0x1

/*
 * Bounds on one plan, whatever the caller asks: at most this many step
 * families (a ring's pipelining chunk is raised to stay within it), and at
 * most COLL_SCHED_MAX_CHUNKS claimable chunks in all.
 */
#define COLL_SCHED_MAX_STEPS	4096
#define COLL_SCHED_MAX_SLABS	64
#define COLL_SCHED_MAX_CHUNKS	0x7fffffffU

struct coll_sched {
	u32 nranks;
	u32 nrounds;
	u32 nsteps;
	u32 __pad;
	u64 exec_chunk;			/* elements per chunk */
	struct coll_step *steps;	/* sorted by round */
	u32 *round_first;		/* nrounds + 1 entries: step index */
	u32 *chunk_first;		/* nsteps + 1: first chunk of each step */
};

/* A place: rank, which buffer, element offset in it. */
struct coll_place {
	u32 rank;
	u32 buf;	/* enum coll_sbuf */
	u64 off;
};

/* One claimable piece of work: elements [elem, elem + n) of an instance. */
struct coll_chunk {
	const struct coll_step *step;
	u32 a, b;
	u64 elem;	/* first element, relative to the instance */
	u64 n;		/* 0: nothing to do (an empty or short instance) */
};

/* Allocation hooks: kvcalloc/kvfree in the kernel (coll_plan.c), calloc/free natively. */
void *coll_sched_zalloc(size_t n, size_t size);
void coll_sched_free_mem(void *p);

/*
 * Build a plan.  Returns 0, -EINVAL for arguments out of range,
 * -EOVERFLOW if sizes do not fit (count * nranks in 64 bits, or more than
 * COLL_SCHED_MAX_CHUNKS chunks), -ENOMEM.  count == 0 or BARRIER gives a
 * plan with no rounds.  On error *s is left empty.
 */
int coll_sched_build(const struct coll_sched_args *a, struct coll_sched *s);
void coll_sched_destroy(struct coll_sched *s);
/* Bytes a built plan holds (for accounting). */
size_t coll_sched_bytes(const struct coll_sched *s);

/* Elements of instance (a, b) (0: nothing to do) and its destination. */
u64 coll_step_inst(const struct coll_sched *s, const struct coll_step *st,
		   u32 a, u32 b, struct coll_place *dst);
/* Source j of instance (a, b). */
void coll_step_src(const struct coll_sched *s, const struct coll_step *st,
		   u32 a, u32 b, u32 j, struct coll_place *src);
/* Chunks of round r are [chunk_first[round_first[r]], that of r + 1). */
static inline u32 coll_sched_round_end(const struct coll_sched *s, u32 r)
{
	return s->chunk_first[s->round_first[r + 1]];
}

/* Chunk c (a global chunk number inside round r): what it covers. */
void coll_sched_chunk(const struct coll_sched *s, u32 r, u32 c,
		      struct coll_chunk *out);

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
