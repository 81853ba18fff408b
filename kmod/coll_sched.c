// SPDX-License-Identifier: GPL-2.0
/*
 * Schedules for the collective primitives: see coll_sched.h for the model.
 *
 * Notation: S_r and R_r are rank r's SEND and RECV buffers, n the number of
 * ranks, B the count, "block j" the elements [j*B, (j+1)*B) of a buffer that
 * holds n blocks.  Rank arithmetic is modulo n.
 *
 * The builder runs the generator of the schedule three times: once to size
 * it, once to count the steps of every round and once to fill the arrays,
 * placing every step in its round (a counting sort), so the steps come out
 * grouped by round whatever order the generator emits them in.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/math64.h>
#include <linux/overflow.h>
#endif
#include <linux/collective.h>
#include "coll_sched.h"

#define COLL_SCHED_U32_MAX	0xffffffffU

enum {
	COLL_GEN_SIZE = 0,	/* count steps, sources and rounds */
	COLL_GEN_COUNT,		/* count the steps of every round */
	COLL_GEN_FILL,		/* write the steps */
};

struct coll_gen {
	struct coll_sched *s;
	int pass;
	u64 nsteps;
	u64 nsrcs;
	u32 nrounds;
	struct coll_step *cur;	/* COLL_GEN_FILL: step being written */
	u32 nsrc_left;		/* sources it still expects */
};

static void gen_step(struct coll_gen *g, u8 kind, u8 flags, u32 round,
		     u64 count, u32 rank, u32 buf, u64 off, u32 nsrc)
{
	struct coll_step *st;

	switch (g->pass) {
	case COLL_GEN_SIZE:
		g->nsteps++;
		g->nsrcs += nsrc;
		if (round >= g->nrounds)
			g->nrounds = round + 1;
		return;
	case COLL_GEN_COUNT:
		g->s->round_first[round]++;
		return;
	}
	st = &g->s->steps[g->s->round_first[round]++];
	st->kind = kind;
	st->flags = flags;
	st->nsrc = nsrc;
	st->src_first = g->s->nsrcs;
	st->round = round;
	st->count = count;
	st->dst.rank = rank;
	st->dst.buf = buf;
	st->dst.off = off;
	g->cur = st;
	g->nsrc_left = nsrc;
}

static void gen_src(struct coll_gen *g, u32 rank, u32 buf, u64 off)
{
	struct coll_bref *src;

	if (g->pass != COLL_GEN_FILL || !g->nsrc_left)
		return;
	src = &g->s->srcs[g->s->nsrcs++];
	src->rank = rank;
	src->buf = buf;
	src->off = off;
	g->nsrc_left--;
}

static void gen_copy(struct coll_gen *g, u32 round, u64 count,
		     u32 drank, u32 dbuf, u64 doff,
		     u32 srank, u32 sbuf, u64 soff)
{
	gen_step(g, COLL_STEP_COPY, 0, round, count, drank, dbuf, doff, 1);
	gen_src(g, srank, sbuf, soff);
}

/* Part i of n near-equal contiguous parts of len elements. */
static void coll_split(u64 len, u32 n, u32 i, u64 *off, u64 *cnt)
{
	u64 base = div64_u64(len, n);
	u64 rem = len - base * n;

	*off = base * i + (i < rem ? i : rem);
	*cnt = base + (i < rem ? 1 : 0);
}

static u64 coll_min(u64 a, u64 b)
{
	return a < b ? a : b;
}

/* Number of slabs of @per elements (the last one smaller) in @count. */
static u64 coll_nslabs(u64 count, u64 per)
{
	u64 q = div64_u64(count, per);

	return q + (q * per < count ? 1 : 0);
}

/* One rank: its only result is a copy of its own input. */
static void gen_single(struct coll_gen *g, u64 count)
{
	gen_copy(g, 0, count, 0, COLL_SBUF_RECV, 0, 0, COLL_SBUF_SEND, 0);
}

/*
 * AllReduce, DIRECT.  Round 0: rank r reduces slice r of every S into R_r,
 * own input first.  Round 1: every other rank copies slice r from R_r.
 */
static void gen_allreduce_direct(struct coll_gen *g, u32 n, u64 count)
{
	u64 off, cnt;
	u32 r, k;

	for (r = 0; r < n; r++) {
		coll_split(count, n, r, &off, &cnt);
		if (!cnt)
			continue;
		gen_step(g, COLL_STEP_REDUCE, COLL_STEP_F_AVG, 0, cnt,
			 r, COLL_SBUF_RECV, off, n);
		for (k = 0; k < n; k++)
			gen_src(g, (r + k) % n, COLL_SBUF_SEND, off);
		for (k = 1; k < n; k++)
			gen_copy(g, 1, cnt, (r + k) % n, COLL_SBUF_RECV, off,
				 r, COLL_SBUF_RECV, off);
	}
}

/*
 * AllReduce, RING.  The buffer is cut into slabs of n * chunk elements and
 * every slab into n chunks.  Chunk c accumulates in R_c: local round k in
 * 0..n-2 adds S_{c+k+1} (round 0 starts from S_c); then local rounds
 * n-1+k, k in 0..n-2, forward it along the ring: R_{c+k+1} = R_{c+k}.
 * Slab s runs its local round t in round s + t.
 */
static void gen_allreduce_ring(struct coll_gen *g, u32 n, u64 count,
			       u64 slab, u64 nslabs)
{
	u64 s, soff, len, coff, cnt, off;
	u32 c, k, round;

	for (s = 0; s < nslabs; s++) {
		soff = s * slab;
		len = coll_min(slab, count - soff);
		for (c = 0; c < n; c++) {
			coll_split(len, n, c, &coff, &cnt);
			if (!cnt)
				continue;
			off = soff + coff;
			for (k = 0; k + 1 < n; k++) {
				round = (u32)s + k;
				gen_step(g, COLL_STEP_REDUCE,
					 k + 2 == n ? COLL_STEP_F_AVG : 0,
					 round, cnt, c, COLL_SBUF_RECV, off, 2);
				gen_src(g, c, k ? COLL_SBUF_RECV : COLL_SBUF_SEND,
					off);
				gen_src(g, (c + k + 1) % n, COLL_SBUF_SEND, off);
			}
			for (k = 0; k + 1 < n; k++) {
				round = (u32)s + n - 1 + k;
				gen_copy(g, round, cnt,
					 (c + k + 1) % n, COLL_SBUF_RECV, off,
					 (c + k) % n, COLL_SBUF_RECV, off);
			}
		}
	}
}

/* AllReduce, NAIVE.  Round 0: R_0 = S_0 op ... op S_{n-1}; round 1: copies. */
static void gen_allreduce_naive(struct coll_gen *g, u32 n, u64 count)
{
	u32 j;

	gen_step(g, COLL_STEP_REDUCE, COLL_STEP_F_AVG, 0, count,
		 0, COLL_SBUF_RECV, 0, n);
	for (j = 0; j < n; j++)
		gen_src(g, j, COLL_SBUF_SEND, 0);
	for (j = 1; j < n; j++)
		gen_copy(g, 1, count, j, COLL_SBUF_RECV, 0,
			 0, COLL_SBUF_RECV, 0);
}

/*
 * Reduce, DIRECT.  Round 0: slice i of R_root is reduced from all S, root
 * first (its dst may be S_root in place), the others in an order rotated by
 * i so that the slices do not all read the same rank at the same time.
 */
static void gen_reduce_direct(struct coll_gen *g, u32 n, u32 root, u64 count)
{
	u64 off, cnt;
	u32 i, k;

	for (i = 0; i < n; i++) {
		coll_split(count, n, i, &off, &cnt);
		if (!cnt)
			continue;
		gen_step(g, COLL_STEP_REDUCE, COLL_STEP_F_AVG, 0, cnt,
			 root, COLL_SBUF_RECV, off, n);
		gen_src(g, root, COLL_SBUF_SEND, off);
		for (k = 0; k + 1 < n; k++)
			gen_src(g, (root + 1 + (i + k) % (n - 1)) % n,
				COLL_SBUF_SEND, off);
	}
}

/*
 * Reduce, RING.  Slabs of chunk elements accumulate in R_root: local round
 * 0 is S_root op S_{root+1}, local round k adds S_{root+k+1}.  Slab s runs
 * local round k in round s + k, so every round reads several ranks.
 */
static void gen_reduce_ring(struct coll_gen *g, u32 n, u32 root, u64 count,
			    u64 chunk, u64 nslabs)
{
	u64 s, off, cnt;
	u32 k;

	for (s = 0; s < nslabs; s++) {
		off = s * chunk;
		cnt = coll_min(chunk, count - off);
		for (k = 0; k + 1 < n; k++) {
			gen_step(g, COLL_STEP_REDUCE,
				 k + 2 == n ? COLL_STEP_F_AVG : 0,
				 (u32)s + k, cnt, root, COLL_SBUF_RECV, off, 2);
			gen_src(g, root, k ? COLL_SBUF_RECV : COLL_SBUF_SEND,
				off);
			gen_src(g, (root + k + 1) % n, COLL_SBUF_SEND, off);
		}
	}
}

/* Reduce, NAIVE: one step over the whole buffer, root first. */
static void gen_reduce_naive(struct coll_gen *g, u32 n, u32 root, u64 count)
{
	u32 k;

	gen_step(g, COLL_STEP_REDUCE, COLL_STEP_F_AVG, 0, count,
		 root, COLL_SBUF_RECV, 0, n);
	for (k = 0; k < n; k++)
		gen_src(g, (root + k) % n, COLL_SBUF_SEND, 0);
}

/*
 * ReduceScatter, DIRECT and NAIVE.  Round 0: R_r = block r of every S, own
 * first (in place R_r is exactly block r of S_r).  DIRECT takes the others
 * in ring order from r + 1, NAIVE in rank order.
 */
static void gen_reducescatter_direct(struct coll_gen *g, u32 n, u64 count,
				     bool naive)
{
	u32 r, k, j;

	for (r = 0; r < n; r++) {
		gen_step(g, COLL_STEP_REDUCE, COLL_STEP_F_AVG, 0, count,
			 r, COLL_SBUF_RECV, 0, n);
		gen_src(g, r, COLL_SBUF_SEND, (u64)r * count);
		for (k = 1; k < n; k++) {
			j = naive ? k - 1 + (k - 1 >= r ? 1 : 0) : (r + k) % n;
			gen_src(g, j, COLL_SBUF_SEND, (u64)r * count);
		}
	}
}

/*
 * ReduceScatter, RING.  Block c accumulates in R_c in slabs of chunk
 * elements: local round 0 is S_c op S_{c+1}, local round k adds S_{c+k+1};
 * slab s runs local round k in round s + k.
 */
static void gen_reducescatter_ring(struct coll_gen *g, u32 n, u64 count,
				   u64 chunk, u64 nslabs)
{
	u64 s, off, cnt, boff;
	u32 c, k;

	for (c = 0; c < n; c++) {
		boff = (u64)c * count;
		for (s = 0; s < nslabs; s++) {
			off = s * chunk;
			cnt = coll_min(chunk, count - off);
			for (k = 0; k + 1 < n; k++) {
				gen_step(g, COLL_STEP_REDUCE,
					 k + 2 == n ? COLL_STEP_F_AVG : 0,
					 (u32)s + k, cnt,
					 c, COLL_SBUF_RECV, off, 2);
				if (k)
					gen_src(g, c, COLL_SBUF_RECV, off);
				else
					gen_src(g, c, COLL_SBUF_SEND,
						boff + off);
				gen_src(g, (c + k + 1) % n, COLL_SBUF_SEND,
					boff + off);
			}
		}
	}
}

/* AllGather, DIRECT.  Round 0: block j of every R_r = S_j. */
static void gen_allgather_direct(struct coll_gen *g, u32 n, u64 count)
{
	u32 r, j;

	for (r = 0; r < n; r++)
		for (j = 0; j < n; j++)
			gen_copy(g, 0, count, r, COLL_SBUF_RECV, (u64)j * count,
				 j, COLL_SBUF_SEND, 0);
}

/*
 * AllGather, RING.  Block j travels in slabs of chunk elements: local
 * round 0 copies S_j into R_j and R_{j+1}, local round k in 1..n-2 copies
 * R_{j+k} into R_{j+k+1}; slab s runs local round k in round s + k.
 */
static void gen_allgather_ring(struct coll_gen *g, u32 n, u64 count,
			       u64 chunk, u64 nslabs)
{
	u64 s, off, cnt, boff;
	u32 j, k;

	for (j = 0; j < n; j++) {
		boff = (u64)j * count;
		for (s = 0; s < nslabs; s++) {
			off = s * chunk;
			cnt = coll_min(chunk, count - off);
			gen_copy(g, (u32)s, cnt, j, COLL_SBUF_RECV, boff + off,
				 j, COLL_SBUF_SEND, off);
			gen_copy(g, (u32)s, cnt,
				 (j + 1) % n, COLL_SBUF_RECV, boff + off,
				 j, COLL_SBUF_SEND, off);
			for (k = 1; k + 1 < n; k++)
				gen_copy(g, (u32)s + k, cnt,
					 (j + k + 1) % n, COLL_SBUF_RECV,
					 boff + off,
					 (j + k) % n, COLL_SBUF_RECV,
					 boff + off);
		}
	}
}

/*
 * AllGather, NAIVE.  Round 0: block j of R_0 = S_j; round 1: every other
 * R_r = R_0 (all n blocks).
 */
static void gen_allgather_naive(struct coll_gen *g, u32 n, u64 count)
{
	u32 j;

	for (j = 0; j < n; j++)
		gen_copy(g, 0, count, 0, COLL_SBUF_RECV, (u64)j * count,
			 j, COLL_SBUF_SEND, 0);
	for (j = 1; j < n; j++)
		gen_copy(g, 1, count * n, j, COLL_SBUF_RECV, 0,
			 0, COLL_SBUF_RECV, 0);
}

/* Broadcast, DIRECT and NAIVE.  Round 0: every R_j = S_root. */
static void gen_broadcast_direct(struct coll_gen *g, u32 n, u32 root,
				 u64 count)
{
	u32 j;

	for (j = 0; j < n; j++)
		gen_copy(g, 0, count, j, COLL_SBUF_RECV, 0,
			 root, COLL_SBUF_SEND, 0);
}

/*
 * Broadcast, RING.  Slabs of chunk elements: local round 0 copies S_root
 * into R_root and R_{root+1}, local round k in 1..n-2 copies R_{root+k}
 * into R_{root+k+1}; slab s runs local round k in round s + k.
 */
static void gen_broadcast_ring(struct coll_gen *g, u32 n, u32 root,
			       u64 count, u64 chunk, u64 nslabs)
{
	u64 s, off, cnt;
	u32 k;

	for (s = 0; s < nslabs; s++) {
		off = s * chunk;
		cnt = coll_min(chunk, count - off);
		gen_copy(g, (u32)s, cnt, root, COLL_SBUF_RECV, off,
			 root, COLL_SBUF_SEND, off);
		gen_copy(g, (u32)s, cnt, (root + 1) % n, COLL_SBUF_RECV, off,
			 root, COLL_SBUF_SEND, off);
		for (k = 1; k + 1 < n; k++)
			gen_copy(g, (u32)s + k, cnt,
				 (root + k + 1) % n, COLL_SBUF_RECV, off,
				 (root + k) % n, COLL_SBUF_RECV, off);
	}
}

/* Scatter.  Round 0: R_j = block j of S_root. */
static void gen_scatter(struct coll_gen *g, u32 n, u32 root, u64 count)
{
	u32 j;

	for (j = 0; j < n; j++)
		gen_copy(g, 0, count, j, COLL_SBUF_RECV, 0,
			 root, COLL_SBUF_SEND, (u64)j * count);
}

/* Gather.  Round 0: block j of R_root = S_j. */
static void gen_gather(struct coll_gen *g, u32 n, u32 root, u64 count)
{
	u32 j;

	for (j = 0; j < n; j++)
		gen_copy(g, 0, count, root, COLL_SBUF_RECV, (u64)j * count,
			 j, COLL_SBUF_SEND, 0);
}

/*
 * AlltoAll.  Round 0: block j of R_r = block r of S_j.  In place (S == R on
 * every rank): swap block j of R_r with block r of R_j for r < j.
 */
static void gen_alltoall(struct coll_gen *g, u32 n, u64 count, bool inplace)
{
	u32 r, j;

	for (r = 0; r < n; r++) {
		for (j = inplace ? r + 1 : 0; j < n; j++) {
			gen_step(g, inplace ? COLL_STEP_SWAP : COLL_STEP_COPY,
				 0, 0, count, r, COLL_SBUF_RECV,
				 (u64)j * count, 1);
			gen_src(g, j, inplace ? COLL_SBUF_RECV : COLL_SBUF_SEND,
				(u64)r * count);
		}
	}
}

/*
 * Slabs of a pipelined schedule, and a bound on its sources (which bounds
 * its steps too) so that hopeless sizes fail before anything is generated.
 */
static int coll_ring_slabs(u64 count, u64 per, u64 srcs_per_slab,
			   u64 *nslabs)
{
	u64 total;

	*nslabs = coll_nslabs(count, per);
	if (check_mul_overflow(*nslabs, srcs_per_slab, &total) ||
	    total > COLL_SCHED_U32_MAX)
		return -EOVERFLOW;
	return 0;
}

static int coll_gen_run(const struct coll_sched_args *a, struct coll_gen *g)
{
	u32 n = a->nranks, root = a->root;
	u64 count = a->count, chunk = a->chunk, slab, nslabs;
	bool ring = a->algo == COLL_ALGO_RING;
	u64 nn = (u64)n * n;
	int ret;

	if (a->prim == COLL_BARRIER || !count)
		return 0;

	switch (a->prim) {
	case COLL_ALLREDUCE:
		if (n == 1) {
			gen_single(g, count);
		} else if (ring) {
			if (check_mul_overflow(chunk, (u64)n, &slab))
				slab = count;
			ret = coll_ring_slabs(count, slab, 3 * nn, &nslabs);
			if (ret)
				return ret;
			gen_allreduce_ring(g, n, count, slab, nslabs);
		} else if (a->algo == COLL_ALGO_DIRECT) {
			gen_allreduce_direct(g, n, count);
		} else {
			gen_allreduce_naive(g, n, count);
		}
		return 0;
	case COLL_REDUCE:
		if (n == 1) {
			gen_single(g, count);
		} else if (ring) {
			ret = coll_ring_slabs(count, chunk, 2 * n, &nslabs);
			if (ret)
				return ret;
			gen_reduce_ring(g, n, root, count, chunk, nslabs);
		} else if (a->algo == COLL_ALGO_DIRECT) {
			gen_reduce_direct(g, n, root, count);
		} else {
			gen_reduce_naive(g, n, root, count);
		}
		return 0;
	case COLL_REDUCESCATTER:
		if (n == 1) {
			gen_single(g, count);
		} else if (ring) {
			ret = coll_ring_slabs(count, chunk, 2 * nn, &nslabs);
			if (ret)
				return ret;
			gen_reducescatter_ring(g, n, count, chunk, nslabs);
		} else {
			gen_reducescatter_direct(g, n, count,
						 a->algo == COLL_ALGO_NAIVE);
		}
		return 0;
	case COLL_ALLGATHER:
		if (n == 1) {
			gen_single(g, count);
		} else if (ring) {
			ret = coll_ring_slabs(count, chunk, nn + n, &nslabs);
			if (ret)
				return ret;
			gen_allgather_ring(g, n, count, chunk, nslabs);
		} else if (a->algo == COLL_ALGO_DIRECT) {
			gen_allgather_direct(g, n, count);
		} else {
			gen_allgather_naive(g, n, count);
		}
		return 0;
	case COLL_BROADCAST:
		if (n == 1) {
			gen_single(g, count);
		} else if (ring) {
			ret = coll_ring_slabs(count, chunk, n + 1, &nslabs);
			if (ret)
				return ret;
			gen_broadcast_ring(g, n, root, count, chunk, nslabs);
		} else {
			gen_broadcast_direct(g, n, root, count);
		}
		return 0;
	case COLL_SCATTER:
		gen_scatter(g, n, root, count);
		return 0;
	case COLL_GATHER:
		gen_gather(g, n, root, count);
		return 0;
	case COLL_ALLTOALL:
		gen_alltoall(g, n, count, a->flags & COLL_SCHED_F_INPLACE);
		return 0;
	}
	return -EINVAL;
}

static int coll_sched_check(const struct coll_sched_args *a)
{
	u64 total;

	if (a->prim >= COLL_PRIM_MAX || a->algo == COLL_ALGO_AUTO ||
	    a->algo >= COLL_ALGO_MAX || !a->nranks ||
	    a->nranks > COLL_MAX_RANKS || a->root >= a->nranks ||
	    !a->chunk || (a->flags & ~COLL_SCHED_F_INPLACE))
		return -EINVAL;
	/* Offsets reach count * nranks in the buffers holding n blocks. */
	if (check_mul_overflow(a->count, (u64)a->nranks, &total))
		return -EOVERFLOW;
	return 0;
}

int coll_sched_build(const struct coll_sched_args *a, struct coll_sched *s)
{
	struct coll_gen g = { .s = s, .pass = COLL_GEN_SIZE };
	u32 r, next, prev;
	int ret;

	*s = (struct coll_sched){ 0 };
	ret = coll_sched_check(a);
	if (ret)
		return ret;
	ret = coll_gen_run(a, &g);
	if (ret)
		return ret;
	if (g.nsteps > COLL_SCHED_U32_MAX || g.nsrcs > COLL_SCHED_U32_MAX)
		return -EOVERFLOW;
	if (!g.nsteps)
		return 0;

	s->round_first = coll_sched_zalloc((size_t)g.nrounds + 1,
					   sizeof(*s->round_first));
	s->steps = coll_sched_zalloc(g.nsteps, sizeof(*s->steps));
	s->srcs = coll_sched_zalloc(g.nsrcs, sizeof(*s->srcs));
	if (!s->round_first || !s->steps || !s->srcs) {
		coll_sched_destroy(s);
		return -ENOMEM;
	}

	g.pass = COLL_GEN_COUNT;
	coll_gen_run(a, &g);
	/* round_first[r] = first step of round r: the fill cursor. */
	for (r = 0, prev = 0; r < g.nrounds; r++) {
		next = prev + s->round_first[r];
		s->round_first[r] = prev;
		prev = next;
	}
	g.pass = COLL_GEN_FILL;
	coll_gen_run(a, &g);
	/* Each cursor now points past its round: shift back by one. */
	for (r = g.nrounds; r > 0; r--)
		s->round_first[r] = s->round_first[r - 1];
	s->round_first[0] = 0;

	s->nrounds = g.nrounds;
	s->nsteps = (u32)g.nsteps;
	return 0;
}

void coll_sched_destroy(struct coll_sched *s)
{
	coll_sched_free_mem(s->steps);
	coll_sched_free_mem(s->srcs);
	coll_sched_free_mem(s->round_first);
	*s = (struct coll_sched){ 0 };
}

u64 coll_sched_buf_elems(u32 prim, u32 nranks, u32 root, u32 rank,
			 u32 buf, u64 count)
{
	bool send = buf == COLL_SBUF_SEND;
	u64 all = count * nranks;

	if (buf != COLL_SBUF_SEND && buf != COLL_SBUF_RECV)
		return 0;
	switch (prim) {
	case COLL_ALLREDUCE:
		return count;
	case COLL_REDUCE:
		return send || rank == root ? count : 0;
	case COLL_REDUCESCATTER:
		return send ? all : count;
	case COLL_ALLGATHER:
		return send ? count : all;
	case COLL_BROADCAST:
		return !send || rank == root ? count : 0;
	case COLL_SCATTER:
		return !send ? count : rank == root ? all : 0;
	case COLL_GATHER:
		return send ? count : rank == root ? all : 0;
	case COLL_ALLTOALL:
		return all;
	}
	return 0;
}

int coll_sched_inplace_layout(u32 prim, u32 nranks, u32 root, u32 rank,
			      u64 count, u32 *outer, u32 *inner, u64 *off)
{
	bool recv_outer = true;
	u64 at = 0;

	if (rank >= nranks)
		return 0;
	switch (prim) {
	case COLL_ALLREDUCE:
	case COLL_ALLTOALL:
		break;
	case COLL_REDUCE:
	case COLL_BROADCAST:
		if (rank != root)
			return 0;
		break;
	case COLL_ALLGATHER:
		at = (u64)rank * count;
		break;
	case COLL_GATHER:
		if (rank != root)
			return 0;
		at = (u64)rank * count;
		break;
	case COLL_REDUCESCATTER:
		recv_outer = false;
		at = (u64)rank * count;
		break;
	case COLL_SCATTER:
		if (rank != root)
			return 0;
		recv_outer = false;
		at = (u64)rank * count;
		break;
	default:
		return 0;
	}
	*outer = recv_outer ? COLL_SBUF_RECV : COLL_SBUF_SEND;
	*inner = recv_outer ? COLL_SBUF_SEND : COLL_SBUF_RECV;
	*off = at;
	return 1;
}
