// SPDX-License-Identifier: GPL-2.0
/*
 * Plans for the collective primitives: see coll_sched.h for the model.
 *
 * Notation: S_r and R_r are rank r's SEND and RECV buffers, n the number of
 * ranks, B the count, "block j" the elements [j*B, (j+1)*B) of a buffer that
 * holds n blocks.  Rank arithmetic is modulo n.  Each generator below
 * describes its families in those terms; pat() builds a place pattern.
 *
 * The builder runs a generator three times: once to size the plan, once to
 * count the families of every round and once to fill them in, placing each
 * in its round (a counting sort), so families come out grouped by round
 * whatever order the generator emits them in.
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
	COLL_GEN_SIZE = 0,	/* count families and rounds */
	COLL_GEN_COUNT,		/* count the families of every round */
	COLL_GEN_FILL,		/* write them */
};

struct coll_gen {
	struct coll_sched *s;
	int pass;
	u32 n;
	u64 nsteps;
	u32 nrounds;
};

static struct coll_coord coord(u32 c0, u32 ca, u32 cb, u32 cj)
{
	struct coll_coord c = {
		.c0 = (u16)c0, .ca = (u16)ca, .cb = (u16)cb, .cj = (u16)cj,
	};

	return c;
}

/* A pattern on buffer @buf whose rank is r0 + a*ra + b*rb + j*rj. */
static struct coll_pat pat(u32 buf, u32 r0, u32 ra, u32 rb, u32 rj)
{
	struct coll_pat p = {
		.buf = (u16)buf,
		.rank = coord(r0, ra, rb, rj),
	};

	return p;
}

/*
 * ... whose rank is two-level: @grp * (host h0 + a*ha + b*hb + j*hj) plus
 * the rank's own coordinate taken modulo @grp.
 */
static struct coll_pat pat_grp(struct coll_pat p, u32 grp, u32 h0, u32 ha,
			       u32 hb, u32 hj)
{
	p.rank.grp = (u16)grp;
	p.rank.h0 = (u16)h0;
	p.rank.ha = (u16)ha;
	p.rank.hb = (u16)hb;
	p.rank.hj = (u16)hj;
	return p;
}

/* ... at element offset @off plus block (k0 + a*ka + b*kb + j*kj) of @blk. */
static struct coll_pat pat_at(struct coll_pat p, u64 off, u64 blk,
			      u32 k0, u32 ka, u32 kb, u32 kj)
{
	p.off = off;
	p.blk = blk;
	p.block = coord(k0, ka, kb, kj);
	return p;
}

static struct coll_pat pat_off(struct coll_pat p, u64 off)
{
	p.off = off;
	return p;
}

static void gen_add(struct coll_gen *g, const struct coll_step *st)
{
	switch (g->pass) {
	case COLL_GEN_SIZE:
		g->nsteps++;
		if (st->round >= g->nrounds)
			g->nrounds = st->round + 1;
		return;
	case COLL_GEN_COUNT:
		g->s->round_first[st->round]++;
		return;
	}
	g->s->steps[g->s->round_first[st->round]++] = *st;
}

/* A family of one kind: fills the common fields. */
static void gen_fam(struct coll_gen *g, u8 kind, u8 flags, u32 round,
		    u32 na, u32 nb, u32 nsrc, u64 count, struct coll_pat dst,
		    struct coll_pat src0, struct coll_pat srcj)
{
	struct coll_step st = {
		.kind = kind,
		.flags = flags,
		.round = round,
		.na = na,
		.nb = nb,
		.nsrc = nsrc,
		.count = count,
		.dst = dst,
		.src0 = src0,
		.srcj = srcj,
	};

	if (na && nb && count)
		gen_add(g, &st);
}

static void gen_copy(struct coll_gen *g, u8 flags, u32 round, u32 na, u32 nb,
		     u64 count, struct coll_pat dst, struct coll_pat src)
{
	gen_fam(g, COLL_STEP_COPY, flags, round, na, nb, 1, count, dst, src,
		src);
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
	gen_copy(g, 0, 0, 1, 1, count, pat(COLL_SBUF_RECV, 0, 0, 0, 0),
		 pat(COLL_SBUF_SEND, 0, 0, 0, 0));
}

/*
 * AllReduce, DIRECT.  Round 0: rank a reduces part a of every S into R_a,
 * own input first (S_a, S_{a+1}, ...).  Round 1: R_{a+b+1} copies part a
 * from R_a, b < n-1.
 */
static void gen_allreduce_direct(struct coll_gen *g, u32 n, u64 count)
{
	gen_fam(g, COLL_STEP_REDUCE, COLL_STEP_F_AVG | COLL_STEP_F_SPLIT, 0,
		n, 1, n, count, pat(COLL_SBUF_RECV, 0, 1, 0, 0),
		pat(COLL_SBUF_SEND, 0, 1, 0, 0),
		pat(COLL_SBUF_SEND, 0, 1, 0, 1));
	gen_copy(g, COLL_STEP_F_SPLIT, 1, n, n - 1, count,
		 pat(COLL_SBUF_RECV, 1, 1, 1, 0),
		 pat(COLL_SBUF_RECV, 0, 1, 0, 0));
}

/*
 * AllReduce, RING.  The buffer is cut into slabs and every slab into n
 * parts.  Part c accumulates in R_c: local round k in 0..n-2 adds
 * S_{c+k+1} (round 0 starts from S_c); then local rounds n-1+k, k in
 * 0..n-2, forward it along the ring: R_{c+k+1} = R_{c+k}.  Slab s runs
 * its local round t in round s + t.
 */
static void gen_allreduce_ring(struct coll_gen *g, u32 n, u64 count,
			       u64 slab, u64 nslabs)
{
	u64 s, soff, len;
	u32 k;

	for (s = 0; s < nslabs; s++) {
		soff = s * slab;
		len = coll_min(slab, count - soff);
		for (k = 0; k + 1 < n; k++)
			gen_fam(g, COLL_STEP_REDUCE,
				COLL_STEP_F_SPLIT |
				(k + 2 == n ? COLL_STEP_F_AVG : 0),
				(u32)s + k, n, 1, 2, len,
				pat_off(pat(COLL_SBUF_RECV, 0, 1, 0, 0), soff),
				pat_off(pat(k ? COLL_SBUF_RECV : COLL_SBUF_SEND,
					    0, 1, 0, 0), soff),
				pat_off(pat(COLL_SBUF_SEND, k, 1, 0, 1), soff));
		for (k = 0; k + 1 < n; k++)
			gen_copy(g, COLL_STEP_F_SPLIT, (u32)s + n - 1 + k, n, 1,
				 len,
				 pat_off(pat(COLL_SBUF_RECV, k + 1, 1, 0, 0),
					 soff),
				 pat_off(pat(COLL_SBUF_RECV, k, 1, 0, 0), soff));
	}
}

/* AllReduce, NAIVE.  Round 0: R_0 = S_0 op ... op S_{n-1}; round 1: copies. */
static void gen_allreduce_naive(struct coll_gen *g, u32 n, u64 count)
{
	gen_fam(g, COLL_STEP_REDUCE, COLL_STEP_F_AVG, 0, 1, 1, n, count,
		pat(COLL_SBUF_RECV, 0, 0, 0, 0), pat(COLL_SBUF_SEND, 0, 0, 0, 0),
		pat(COLL_SBUF_SEND, 0, 0, 0, 1));
	gen_copy(g, 0, 1, n - 1, 1, count, pat(COLL_SBUF_RECV, 1, 1, 0, 0),
		 pat(COLL_SBUF_RECV, 0, 0, 0, 0));
}

/*
 * Reduce, DIRECT.  Round 0: part a of R_root is reduced from all S, root
 * first (its dst may be S_root in place), then root+1, root+2, ...
 */
static void gen_reduce_direct(struct coll_gen *g, u32 n, u32 root, u64 count)
{
	gen_fam(g, COLL_STEP_REDUCE, COLL_STEP_F_AVG | COLL_STEP_F_SPLIT, 0,
		n, 1, n, count, pat(COLL_SBUF_RECV, root, 0, 0, 0),
		pat(COLL_SBUF_SEND, root, 0, 0, 0),
		pat(COLL_SBUF_SEND, root, 0, 0, 1));
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
		for (k = 0; k + 1 < n; k++)
			gen_fam(g, COLL_STEP_REDUCE,
				k + 2 == n ? COLL_STEP_F_AVG : 0, (u32)s + k,
				1, 1, 2, cnt,
				pat_off(pat(COLL_SBUF_RECV, root, 0, 0, 0), off),
				pat_off(pat(k ? COLL_SBUF_RECV : COLL_SBUF_SEND,
					    root, 0, 0, 0), off),
				pat_off(pat(COLL_SBUF_SEND, root + k, 0, 0, 1),
					off));
	}
}

/* Reduce, NAIVE: one step over the whole buffer, root first. */
static void gen_reduce_naive(struct coll_gen *g, u32 n, u32 root, u64 count)
{
	gen_fam(g, COLL_STEP_REDUCE, COLL_STEP_F_AVG, 0, 1, 1, n, count,
		pat(COLL_SBUF_RECV, root, 0, 0, 0),
		pat(COLL_SBUF_SEND, root, 0, 0, 0),
		pat(COLL_SBUF_SEND, root, 0, 0, 1));
}

/*
 * ReduceScatter, DIRECT (and NAIVE, which has no better baseline without a
 * scratch buffer).  Round 0: R_a = block a of S_a, S_{a+1}, ... (own
 * first: in place R_a is exactly block a of S_a).
 */
static void gen_reducescatter_direct(struct coll_gen *g, u32 n, u64 count)
{
	gen_fam(g, COLL_STEP_REDUCE, COLL_STEP_F_AVG, 0, n, 1, n, count,
		pat(COLL_SBUF_RECV, 0, 1, 0, 0),
		pat_at(pat(COLL_SBUF_SEND, 0, 1, 0, 0), 0, count, 0, 1, 0, 0),
		pat_at(pat(COLL_SBUF_SEND, 0, 1, 0, 1), 0, count, 0, 1, 0, 0));
}

/*
 * ReduceScatter, RING.  Block c accumulates in R_c in slabs of chunk
 * elements: local round 0 is S_c op S_{c+1}, local round k adds S_{c+k+1};
 * slab s runs local round k in round s + k.
 */
static void gen_reducescatter_ring(struct coll_gen *g, u32 n, u64 count,
				   u64 chunk, u64 nslabs)
{
	u64 s, off, cnt;
	u32 k;

	for (s = 0; s < nslabs; s++) {
		off = s * chunk;
		cnt = coll_min(chunk, count - off);
		for (k = 0; k + 1 < n; k++)
			gen_fam(g, COLL_STEP_REDUCE,
				k + 2 == n ? COLL_STEP_F_AVG : 0, (u32)s + k,
				n, 1, 2, cnt,
				pat_off(pat(COLL_SBUF_RECV, 0, 1, 0, 0), off),
				k ? pat_off(pat(COLL_SBUF_RECV, 0, 1, 0, 0), off) :
				pat_at(pat(COLL_SBUF_SEND, 0, 1, 0, 0), off,
				       count, 0, 1, 0, 0),
				pat_at(pat(COLL_SBUF_SEND, k, 1, 0, 1), off,
				       count, 0, 1, 0, 0));
	}
}

/* AllGather, DIRECT.  Round 0: block b of every R_a = S_b. */
static void gen_allgather_direct(struct coll_gen *g, u32 n, u64 count)
{
	gen_copy(g, 0, 0, n, n, count,
		 pat_at(pat(COLL_SBUF_RECV, 0, 1, 0, 0), 0, count, 0, 0, 1, 0),
		 pat(COLL_SBUF_SEND, 0, 0, 1, 0));
}

/*
 * AllGather, RING.  Block a travels in slabs of chunk elements: local
 * round 0 copies S_a into R_a and R_{a+1}, local round k in 1..n-2 copies
 * R_{a+k} into R_{a+k+1}; slab s runs local round k in round s + k.
 */
static void gen_allgather_ring(struct coll_gen *g, u32 n, u64 count,
			       u64 chunk, u64 nslabs)
{
	u64 s, off, cnt;
	u32 k;

	for (s = 0; s < nslabs; s++) {
		off = s * chunk;
		cnt = coll_min(chunk, count - off);
		gen_copy(g, 0, (u32)s, n, 1, cnt,
			 pat_at(pat(COLL_SBUF_RECV, 0, 1, 0, 0), off, count,
				0, 1, 0, 0),
			 pat_off(pat(COLL_SBUF_SEND, 0, 1, 0, 0), off));
		gen_copy(g, 0, (u32)s, n, 1, cnt,
			 pat_at(pat(COLL_SBUF_RECV, 1, 1, 0, 0), off, count,
				0, 1, 0, 0),
			 pat_off(pat(COLL_SBUF_SEND, 0, 1, 0, 0), off));
		for (k = 1; k + 1 < n; k++)
			gen_copy(g, 0, (u32)s + k, n, 1, cnt,
				 pat_at(pat(COLL_SBUF_RECV, k + 1, 1, 0, 0), off,
					count, 0, 1, 0, 0),
				 pat_at(pat(COLL_SBUF_RECV, k, 1, 0, 0), off,
					count, 0, 1, 0, 0));
	}
}

/*
 * AllGather, NAIVE.  Round 0: block a of R_0 = S_a; round 1: every other
 * R_r = R_0 (all n blocks).
 */
static void gen_allgather_naive(struct coll_gen *g, u32 n, u64 count)
{
	gen_copy(g, 0, 0, n, 1, count,
		 pat_at(pat(COLL_SBUF_RECV, 0, 0, 0, 0), 0, count, 0, 1, 0, 0),
		 pat(COLL_SBUF_SEND, 0, 1, 0, 0));
	gen_copy(g, 0, 1, n - 1, 1, count * n,
		 pat(COLL_SBUF_RECV, 1, 1, 0, 0),
		 pat(COLL_SBUF_RECV, 0, 0, 0, 0));
}

/* Broadcast, DIRECT and NAIVE.  Round 0: every R_a = S_root. */
static void gen_broadcast_direct(struct coll_gen *g, u32 n, u32 root,
				 u64 count)
{
	gen_copy(g, 0, 0, n, 1, count, pat(COLL_SBUF_RECV, 0, 1, 0, 0),
		 pat(COLL_SBUF_SEND, root, 0, 0, 0));
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
		gen_copy(g, 0, (u32)s, 1, 1, cnt,
			 pat_off(pat(COLL_SBUF_RECV, root, 0, 0, 0), off),
			 pat_off(pat(COLL_SBUF_SEND, root, 0, 0, 0), off));
		gen_copy(g, 0, (u32)s, 1, 1, cnt,
			 pat_off(pat(COLL_SBUF_RECV, (root + 1) % n, 0, 0, 0),
				 off),
			 pat_off(pat(COLL_SBUF_SEND, root, 0, 0, 0), off));
		for (k = 1; k + 1 < n; k++)
			gen_copy(g, 0, (u32)s + k, 1, 1, cnt,
				 pat_off(pat(COLL_SBUF_RECV, (root + k + 1) % n,
					     0, 0, 0), off),
				 pat_off(pat(COLL_SBUF_RECV, (root + k) % n,
					     0, 0, 0), off));
	}
}

/* Scatter.  Round 0: R_a = block a of S_root. */
static void gen_scatter(struct coll_gen *g, u32 n, u32 root, u64 count)
{
	gen_copy(g, 0, 0, n, 1, count, pat(COLL_SBUF_RECV, 0, 1, 0, 0),
		 pat_at(pat(COLL_SBUF_SEND, root, 0, 0, 0), 0, count,
			0, 1, 0, 0));
}

/* Gather.  Round 0: block a of R_root = S_a. */
static void gen_gather(struct coll_gen *g, u32 n, u32 root, u64 count)
{
	gen_copy(g, 0, 0, n, 1, count,
		 pat_at(pat(COLL_SBUF_RECV, root, 0, 0, 0), 0, count,
			0, 1, 0, 0),
		 pat(COLL_SBUF_SEND, 0, 1, 0, 0));
}

/*
 * AlltoAll.  Round 0: block b of R_a = block a of S_b.  In place (S == R on
 * every rank): for every distance d in 1..n/2, swap block a+d of R_a with
 * block a of R_{a+d}; at d = n/2 (n even) only a < n/2, so each pair of
 * ranks swaps once.
 */
static void gen_alltoall(struct coll_gen *g, u32 n, u64 count, bool inplace)
{
	u32 d;

	if (!inplace) {
		gen_copy(g, 0, 0, n, n, count,
			 pat_at(pat(COLL_SBUF_RECV, 0, 1, 0, 0), 0, count,
				0, 0, 1, 0),
			 pat_at(pat(COLL_SBUF_SEND, 0, 0, 1, 0), 0, count,
				0, 1, 0, 0));
		return;
	}
	for (d = 1; 2 * d <= n; d++)
		gen_fam(g, COLL_STEP_SWAP, 0, 0, 2 * d == n ? n / 2 : n, 1, 1,
			count,
			pat_at(pat(COLL_SBUF_RECV, 0, 1, 0, 0), 0, count,
			       d, 1, 0, 0),
			pat_at(pat(COLL_SBUF_RECV, d, 1, 0, 0), 0, count,
			       0, 1, 0, 0),
			pat(COLL_SBUF_RECV, 0, 0, 0, 0));
}

/* ceil(log2(n)) */
static u32 coll_log2_up(u32 n)
{
	u32 k = 0;

	while ((1U << k) < n)
		k++;
	return k;
}

/* Pairs (v, v + d) of a binomial level: v = a * 2d, v + d < n. */
static u32 coll_tree_pairs(u32 n, u32 d)
{
	return n > d ? (n - d + 2 * d - 1) / (2 * d) : 0;
}

/*
 * AllReduce, TREE.  A binomial tree folds every S into R_0, another copies
 * R_0 to every R; K = ceil(log2 n) rounds each.  Round k < K (d = 2^k):
 * R_v = (k ? R_v : S_v) op P_{v+d} for v = a*2d, v + d < n, where P_w is
 * R_w if w has folded anything before (k > 0 and w + 1 < n) and S_w if not
 * (of the partners of round k > 0, only w = n-1 can be that); the fold
 * into R_0 divides for AVG.  Round K + i (d = 2^(K-1-i)): R_{v+d} = R_v.
 */
static void gen_allreduce_tree(struct coll_gen *g, u32 n, u64 count)
{
	u32 K = coll_log2_up(n), k, d, na, last, i;
	u8 avg;

	for (k = 0; k < K; k++) {
		d = 1U << k;
		na = coll_tree_pairs(n, d);
		avg = k + 1 == K ? COLL_STEP_F_AVG : 0;
		last = k && (n - 1 - d) % (2 * d) == 0 ? 1 : 0;
		gen_fam(g, COLL_STEP_REDUCE, avg, k, na - last, 1, 2, count,
			pat(COLL_SBUF_RECV, 0, 2 * d, 0, 0),
			pat(k ? COLL_SBUF_RECV : COLL_SBUF_SEND, 0, 2 * d, 0, 0),
			pat(k ? COLL_SBUF_RECV : COLL_SBUF_SEND, 0, 2 * d, 0,
			    d));
		if (last)
			gen_fam(g, COLL_STEP_REDUCE, avg, k, 1, 1, 2, count,
				pat(COLL_SBUF_RECV, n - 1 - d, 0, 0, 0),
				pat(COLL_SBUF_RECV, n - 1 - d, 0, 0, 0),
				pat(COLL_SBUF_SEND, n - 1 - d, 0, 0, d));
	}
	for (i = 0; i < K; i++) {
		d = 1U << (K - 1 - i);
		gen_copy(g, 0, K + i, coll_tree_pairs(n, d), 1, count,
			 pat(COLL_SBUF_RECV, d, 2 * d, 0, 0),
			 pat(COLL_SBUF_RECV, 0, 2 * d, 0, 0));
	}
}

/*
 * Broadcast, TREE.  Ranks relative to the root (v = rank - root): round i
 * (d = 2^(K-1-i)) copies into R_{v+d} from R_v, v = a*2d, v + d < n, and
 * from S_root for v = 0; round 0 also copies S_root into R_root.
 */
static void gen_broadcast_tree(struct coll_gen *g, u32 n, u32 root,
			       u64 count)
{
	u32 K = coll_log2_up(n), i, d;

	gen_copy(g, 0, 0, 1, 1, count, pat(COLL_SBUF_RECV, root, 0, 0, 0),
		 pat(COLL_SBUF_SEND, root, 0, 0, 0));
	for (i = 0; i < K; i++) {
		d = 1U << (K - 1 - i);
		gen_copy(g, 0, i, 1, 1, count,
			 pat(COLL_SBUF_RECV, root + d, 0, 0, 0),
			 pat(COLL_SBUF_SEND, root, 0, 0, 0));
		gen_copy(g, 0, i, coll_tree_pairs(n, d) - 1, 1, count,
			 pat(COLL_SBUF_RECV, root + 3 * d, 2 * d, 0, 0),
			 pat(COLL_SBUF_RECV, root + 2 * d, 2 * d, 0, 0));
	}
}

/*
 * The hierarchical plans.  H hosts of L ranks, rank h*L + l on host h
 * (L >= 2, H >= 2); "rank l of host h" is the two-level pattern
 * pat_grp(L, host h) with l taken modulo L.  The count is cut into n
 * parts (F_SPLIT); part q belongs to local index q mod L, so every host
 * moves each part across hosts once, and the L ranks of a host carry
 * their own parts in parallel.
 */

/*
 * AllReduce, HIER.  Round 0 (within hosts): part q of R_{hL + q mod L} =
 * part q of the host's L inputs, own first.  Round 1 (across): part q of
 * R_q = part q of R_{q + jL}, j < H (R_q's own first; divides for AVG).
 * Round 2 (across): R_{q + (b+1)L} takes part q from R_q, b < H-1.  Round
 * 3 (within): R_{hL + (q+e) mod L} takes part q from R_{hL + q mod L},
 * 0 < e < L.
 */
static void gen_allreduce_hier(struct coll_gen *g, u32 n, u32 L, u64 count)
{
	u32 H = n / L, e;

	gen_fam(g, COLL_STEP_REDUCE, COLL_STEP_F_SPLIT, 0, n, H, L, count,
		pat_grp(pat(COLL_SBUF_RECV, 0, 1, 0, 0), L, 0, 0, 1, 0),
		pat_grp(pat(COLL_SBUF_SEND, 0, 1, 0, 0), L, 0, 0, 1, 0),
		pat_grp(pat(COLL_SBUF_SEND, 0, 1, 0, 1), L, 0, 0, 1, 0));
	gen_fam(g, COLL_STEP_REDUCE, COLL_STEP_F_SPLIT | COLL_STEP_F_AVG, 1,
		n, 1, H, count, pat(COLL_SBUF_RECV, 0, 1, 0, 0),
		pat(COLL_SBUF_RECV, 0, 1, 0, 0),
		pat(COLL_SBUF_RECV, 0, 1, 0, L));
	gen_copy(g, COLL_STEP_F_SPLIT, 2, n, H - 1, count,
		 pat(COLL_SBUF_RECV, L, 1, L, 0),
		 pat(COLL_SBUF_RECV, 0, 1, 0, 0));
	for (e = 1; e < L; e++)
		gen_copy(g, COLL_STEP_F_SPLIT, 3, n, H, count,
			 pat_grp(pat(COLL_SBUF_RECV, e, 1, 0, 0), L, 0, 0, 1,
				 0),
			 pat_grp(pat(COLL_SBUF_RECV, 0, 1, 0, 0), L, 0, 0, 1,
				 0));
}

/*
 * AllGather, HIER.  Round 0 (across): block a + bL of R_a = S_{a + bL},
 * b < H (b = 0: its own).  Round 1 (within): R_{hL + (B+e) mod L} takes
 * block B from R_{hL + B mod L}, 0 < e < L.
 */
static void gen_allgather_hier(struct coll_gen *g, u32 n, u32 L, u64 count)
{
	u32 H = n / L, e;

	gen_copy(g, 0, 0, n, H, count,
		 pat_at(pat(COLL_SBUF_RECV, 0, 1, 0, 0), 0, count, 0, 1, L, 0),
		 pat(COLL_SBUF_SEND, 0, 1, L, 0));
	for (e = 1; e < L; e++)
		gen_copy(g, 0, 1, n, H, count,
			 pat_at(pat_grp(pat(COLL_SBUF_RECV, e, 1, 0, 0), L,
					0, 0, 1, 0), 0, count, 0, 1, 0, 0),
			 pat_at(pat_grp(pat(COLL_SBUF_RECV, 0, 1, 0, 0), L,
					0, 0, 1, 0), 0, count, 0, 1, 0, 0));
}

/*
 * Broadcast, HIER.  Round 0 (across): part q of R_{hL + q mod L} = part q
 * of S_root.  Round 1 (within): as AllReduce's round 3.
 */
static void gen_broadcast_hier(struct coll_gen *g, u32 n, u32 L, u32 root,
			       u64 count)
{
	u32 H = n / L, e;

	gen_copy(g, COLL_STEP_F_SPLIT, 0, n, H, count,
		 pat_grp(pat(COLL_SBUF_RECV, 0, 1, 0, 0), L, 0, 0, 1, 0),
		 pat(COLL_SBUF_SEND, root, 0, 0, 0));
	for (e = 1; e < L; e++)
		gen_copy(g, COLL_STEP_F_SPLIT, 1, n, H, count,
			 pat_grp(pat(COLL_SBUF_RECV, e, 1, 0, 0), L, 0, 0, 1,
				 0),
			 pat_grp(pat(COLL_SBUF_RECV, 0, 1, 0, 0), L, 0, 0, 1,
				 0));
}

/*
 * Slabs of a pipelined plan: @per elements each, but never so many that
 * the plan would hold more than COLL_SCHED_MAX_STEPS families
 * (@fams_per_slab each) or COLL_SCHED_MAX_SLABS slabs.
 */
static u64 coll_ring_slabs(u64 count, u64 *per, u64 fams_per_slab)
{
	u64 max = COLL_SCHED_MAX_STEPS / fams_per_slab, nslabs;

	if (max > COLL_SCHED_MAX_SLABS)
		max = COLL_SCHED_MAX_SLABS;
	if (!max)
		max = 1;
	nslabs = coll_nslabs(count, *per);
	if (nslabs > max) {
		*per = coll_nslabs(count, max);
		nslabs = coll_nslabs(count, *per);
	}
	return nslabs;
}

static int coll_gen_run(const struct coll_sched_args *a, struct coll_gen *g)
{
	u32 n = a->nranks, root = a->root, L = a->local ? a->local : n;
	u64 count = a->count, chunk = a->chunk, slab, nslabs;
	bool ring = a->algo == COLL_ALGO_RING;
	bool tree = a->algo == COLL_ALGO_TREE;
	bool naive = a->algo == COLL_ALGO_NAIVE;
	bool hier = a->algo == COLL_ALGO_HIER && L > 1 && L < n;

	if (a->prim == COLL_BARRIER || !count)
		return 0;
	if (n == 1 && a->prim != COLL_ALLTOALL && a->prim != COLL_SCATTER &&
	    a->prim != COLL_GATHER) {
		gen_single(g, count);
		return 0;
	}

	switch (a->prim) {
	case COLL_ALLREDUCE:
		if (hier) {
			gen_allreduce_hier(g, n, L, count);
		} else if (tree) {
			gen_allreduce_tree(g, n, count);
		} else if (ring) {
			/* A slab holds n ring chunks, one per part. */
			if (check_mul_overflow(chunk, (u64)n, &slab))
				slab = count;
			nslabs = coll_ring_slabs(count, &slab, 2 * (u64)n);
			gen_allreduce_ring(g, n, count, slab, nslabs);
		} else if (!naive) {
			gen_allreduce_direct(g, n, count);
		} else {
			gen_allreduce_naive(g, n, count);
		}
		return 0;
	case COLL_REDUCE:
		if (ring) {
			nslabs = coll_ring_slabs(count, &chunk, n);
			gen_reduce_ring(g, n, root, count, chunk, nslabs);
		} else if (!naive) {
			gen_reduce_direct(g, n, root, count);
		} else {
			gen_reduce_naive(g, n, root, count);
		}
		return 0;
	case COLL_REDUCESCATTER:
		if (ring) {
			nslabs = coll_ring_slabs(count, &chunk, n);
			gen_reducescatter_ring(g, n, count, chunk, nslabs);
		} else {
			gen_reducescatter_direct(g, n, count);
		}
		return 0;
	case COLL_ALLGATHER:
		if (hier) {
			gen_allgather_hier(g, n, L, count);
		} else if (ring) {
			nslabs = coll_ring_slabs(count, &chunk, n);
			gen_allgather_ring(g, n, count, chunk, nslabs);
		} else if (!naive) {
			gen_allgather_direct(g, n, count);
		} else {
			gen_allgather_naive(g, n, count);
		}
		return 0;
	case COLL_BROADCAST:
		if (hier) {
			gen_broadcast_hier(g, n, L, root, count);
		} else if (tree) {
			gen_broadcast_tree(g, n, root, count);
		} else if (ring) {
			nslabs = coll_ring_slabs(count, &chunk, n);
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
	    !a->chunk || !a->exec_chunk ||
	    (a->flags & ~COLL_SCHED_F_INPLACE) || a->local > a->nranks ||
	    (a->local && a->nranks % a->local))
		return -EINVAL;
	/* Offsets reach count * nranks in the buffers holding n blocks. */
	if (check_mul_overflow(a->count, (u64)a->nranks, &total))
		return -EOVERFLOW;
	return 0;
}

/* Largest instance of a family. */
static u64 coll_step_max_count(const struct coll_step *st, u32 n)
{
	if (!(st->flags & COLL_STEP_F_SPLIT))
		return st->count;
	return coll_nslabs(st->count, n);
}

/* Number the chunks: chunk_first[i] is the first chunk of family i. */
static int coll_sched_chunks(struct coll_sched *s)
{
	u64 total = 0, cpi, per;
	u32 i;

	for (i = 0; i < s->nsteps; i++) {
		struct coll_step *st = &s->steps[i];

		cpi = coll_nslabs(coll_step_max_count(st, s->nranks),
				  s->exec_chunk);
		if (cpi > COLL_SCHED_MAX_CHUNKS ||
		    check_mul_overflow((u64)st->na * st->nb, cpi, &per))
			return -EOVERFLOW;
		st->cpi = (u32)cpi;
		s->chunk_first[i] = (u32)total;
		total += per;
		if (total > COLL_SCHED_MAX_CHUNKS)
			return -EOVERFLOW;
	}
	s->chunk_first[s->nsteps] = (u32)total;
	return 0;
}

int coll_sched_build(const struct coll_sched_args *a, struct coll_sched *s)
{
	struct coll_gen g = { .s = s, .pass = COLL_GEN_SIZE, .n = a->nranks };
	u32 r, next, prev;
	int ret;

	*s = (struct coll_sched){ 0 };
	ret = coll_sched_check(a);
	if (ret)
		return ret;
	s->nranks = a->nranks;
	s->exec_chunk = a->exec_chunk;
	ret = coll_gen_run(a, &g);
	if (ret)
		return ret;
	if (g.nsteps > COLL_SCHED_MAX_STEPS)
		return -EOVERFLOW;
	if (!g.nsteps)
		return 0;

	s->round_first = coll_sched_zalloc((size_t)g.nrounds + 1,
					   sizeof(*s->round_first));
	s->steps = coll_sched_zalloc(g.nsteps, sizeof(*s->steps));
	s->chunk_first = coll_sched_zalloc(g.nsteps + 1,
					   sizeof(*s->chunk_first));
	if (!s->round_first || !s->steps || !s->chunk_first) {
		ret = -ENOMEM;
		goto err_destroy;
	}

	g.pass = COLL_GEN_COUNT;
	coll_gen_run(a, &g);
	/* round_first[r] = first family of round r: the fill cursor. */
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
	ret = coll_sched_chunks(s);
	if (ret)
		goto err_destroy;
	return 0;

err_destroy:
	coll_sched_destroy(s);
	return ret;
}

void coll_sched_destroy(struct coll_sched *s)
{
	coll_sched_free_mem(s->steps);
	coll_sched_free_mem(s->round_first);
	coll_sched_free_mem(s->chunk_first);
	*s = (struct coll_sched){ 0 };
}

size_t coll_sched_bytes(const struct coll_sched *s)
{
	if (!s->nsteps)
		return 0;
	return (size_t)s->nsteps * sizeof(*s->steps) +
	       ((size_t)s->nrounds + 1) * sizeof(*s->round_first) +
	       ((size_t)s->nsteps + 1) * sizeof(*s->chunk_first);
}

static u32 coll_coord_eval(const struct coll_coord *c, u32 n, u32 a, u32 b,
			   u32 j)
{
	u64 v = (u64)c->c0 + (u64)a * c->ca + (u64)b * c->cb + (u64)j * c->cj;
	u64 h;

	if (!c->grp)
		return (u32)(v % n);
	h = (u64)c->h0 + (u64)a * c->ha + (u64)b * c->hb + (u64)j * c->hj;
	return (u32)((h % (n / c->grp)) * c->grp + v % c->grp);
}

static void coll_pat_place(const struct coll_sched *s,
			   const struct coll_pat *p, u32 a, u32 b, u32 j,
			   u64 split_off, struct coll_place *out)
{
	u32 n = s->nranks;

	out->rank = coll_coord_eval(&p->rank, n, a, b, j);
	out->buf = p->buf;
	out->off = p->off + coll_coord_eval(&p->block, n, a, b, j) * p->blk +
		   split_off;
}

static u64 coll_step_part(const struct coll_sched *s,
			  const struct coll_step *st, u32 a, u64 *off)
{
	u64 cnt;

	if (!(st->flags & COLL_STEP_F_SPLIT)) {
		*off = 0;
		return st->count;
	}
	coll_split(st->count, s->nranks, a, off, &cnt);
	return cnt;
}

u64 coll_step_inst(const struct coll_sched *s, const struct coll_step *st,
		   u32 a, u32 b, struct coll_place *dst)
{
	u64 off, cnt = coll_step_part(s, st, a, &off);

	coll_pat_place(s, &st->dst, a, b, 0, off, dst);
	return cnt;
}

void coll_step_src(const struct coll_sched *s, const struct coll_step *st,
		   u32 a, u32 b, u32 j, struct coll_place *src)
{
	u64 off;

	coll_step_part(s, st, a, &off);
	coll_pat_place(s, j ? &st->srcj : &st->src0, a, b, j, off, src);
}

void coll_sched_chunk(const struct coll_sched *s, u32 r, u32 c,
		      struct coll_chunk *out)
{
	u32 lo = s->round_first[r], hi = s->round_first[r + 1] - 1;
	const struct coll_step *st;
	u64 local, inst, cnt, off;

	while (lo < hi) {	/* last family whose first chunk is <= c */
		u32 mid = lo + (hi - lo + 1) / 2;

		if (s->chunk_first[mid] <= c)
			lo = mid;
		else
			hi = mid - 1;
	}
	st = &s->steps[lo];
	local = c - s->chunk_first[lo];
	inst = local / st->cpi;
	out->step = st;
	out->a = (u32)(inst / st->nb);
	out->b = (u32)(inst % st->nb);
	out->elem = (local % st->cpi) * s->exec_chunk;
	cnt = coll_step_part(s, st, out->a, &off);
	out->n = out->elem < cnt ? coll_min(s->exec_chunk, cnt - out->elem) : 0;
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
