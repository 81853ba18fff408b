// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit test of kmod/coll_sched.c: builds schedules and runs them on
 * symbolic values.
 *
 * Every element of rank r's SEND starts as { idx = i, mask = id(r), cnt =
 * 1 }, id(r) = 1 << r up to 64 ranks and a random 64-bit value beyond.  A
 * REDUCE requires equal idx on its inputs, adds the masks and the counts,
 * and up to 64 ranks requires disjoint masks (so a contribution counted
 * twice is caught at once; beyond, the final sum and count catch it); a
 * COPY copies,
 * a SWAP swaps.  Each rank is in place or not (per the layout the schedule
 * code reports), resolved by mapping the inner buffer into the outer one.
 * The steps of a round run in random order, after a hazard check: no
 * element written by one step of a round may be read or written by another
 * step of that round, a REDUCE's dst may coincide only with its src[0]
 * (exactly), a COPY whose dst and src coincide exactly is skipped.
 * Division for AVG is tracked: a step with COLL_STEP_F_AVG must produce a
 * complete value from undivided inputs, and every reduced output must have
 * been divided exactly once.
 *
 * The hierarchical plans run for every H hosts x L ranks per host up to
 * 64 x 8, and for them the elements each host reads from each other host
 * in each round are counted and must match what the plan promises
 * exactly: no traffic between hosts in the rounds within hosts, and each
 * part across once per host pair.
 *
 * Usage: sched_test [-f] [-b budget] [-s seed] [-p K/M]
 *   -f: no size budget (the full set: every case of every group)
 *   -b: work budget per case (default 30000)
 *   -p K/M: run only the groups i with i % M == K (and the API, error and
 *           plan size tests only for K == 0), to spread the full set over
 *           several processes
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/collective.h>
#include "coll_sched.h"

#define MAXN		64	/* the groups of every algorithm: 1..MAXN ranks */
#define MAXH		64	/* the hierarchical groups: hosts ... */
#define MAXL		8	/* ... times ranks per host */
#define MAXR		(MAXH * MAXL)
#define POISON_IDX	0xffffffffu
#define BIG_CHUNK	(~0ULL)

void *coll_sched_zalloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size ? size : 1);
}

void coll_sched_free_mem(void *p)
{
	free(p);
}

struct val {
	u64 mask;
	u32 idx;
	u16 avg;
	u16 cnt;
};

static struct val *mem;
static u32 *wepoch, *wstep;
static size_t memcap;
static u32 epoch;
static u64 rng = 0x9e3779b97f4a7c15ULL;
static bool full;
static u64 budget = 30000;
static u32 *perm;
static size_t permcap;

static u64 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct rk {
	u64 elems[2];
	bool inplace;
	u32 outer, inner;
	u64 loff;
	size_t base;
};

struct run {
	struct coll_sched_args a;
	struct rk rk[MAXR];
	u64 id[MAXR];		/* each rank's contribution */
	u64 full;		/* their sum */
	u64 *traffic;		/* [round][src host][dst host], or NULL */
	u32 nhosts;		/* for traffic: rank r on host r / local */
	struct coll_sched s;
	char err[512];
	bool failed;
};

static void fail(struct run *t, const char *fmt, ...)
{
	va_list ap;

	if (t->failed)
		return;
	t->failed = true;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
}

static const char * const prim_name[] = {
	"allreduce", "reduce", "reducescatter", "allgather", "broadcast",
	"scatter", "gather", "alltoall", "barrier",
};

static const char * const algo_name[] = {
	"auto", "ring", "direct", "naive", "tree", "hier",
};

static bool rooted(u32 prim)
{
	return prim == COLL_REDUCE || prim == COLL_BROADCAST ||
	       prim == COLL_SCATTER || prim == COLL_GATHER;
}

static void grow(size_t need)
{
	size_t old = memcap;

	if (need <= memcap)
		return;
	memcap = need + need / 2;
	mem = realloc(mem, memcap * sizeof(*mem));
	wepoch = realloc(wepoch, memcap * sizeof(*wepoch));
	wstep = realloc(wstep, memcap * sizeof(*wstep));
	if (!mem || !wepoch || !wstep) {
		perror("realloc");
		exit(2);
	}
	memset(wepoch + old, 0, (memcap - old) * sizeof(*wepoch));
}

/* Resolve a range to an index into mem[], checking bounds. */
static bool resolve(struct run *t, const struct coll_place *b, u64 cnt,
		    size_t *at)
{
	struct rk *k;

	if (b->rank >= t->a.nranks || b->buf > COLL_SBUF_RECV) {
		fail(t, "bad place rank %u buf %u", b->rank, b->buf);
		return false;
	}
	k = &t->rk[b->rank];
	if (b->off > k->elems[b->buf] || cnt > k->elems[b->buf] - b->off) {
		fail(t, "out of bounds: rank %u buf %u off %llu count %llu "
		     "(buffer %llu)", b->rank, b->buf,
		     (unsigned long long)b->off, (unsigned long long)cnt,
		     (unsigned long long)k->elems[b->buf]);
		return false;
	}
	if (!k->inplace)
		*at = k->base + b->off +
		      (b->buf == COLL_SBUF_RECV ? k->elems[COLL_SBUF_SEND] : 0);
	else
		*at = k->base + b->off + (b->buf == k->inner ? k->loff : 0);
	return true;
}

static bool overlap(size_t a, size_t b, u64 cnt)
{
	return a < b + cnt && b < a + cnt;
}

/* Slabs of a pipelined plan, as coll_ring_slabs() in coll_sched.c bounds them. */
static u64 expected_slabs(u64 count, u64 per, u64 fams)
{
	u64 max = COLL_SCHED_MAX_STEPS / fams, ns;

	if (max > COLL_SCHED_MAX_SLABS)
		max = COLL_SCHED_MAX_SLABS;
	if (!max)
		max = 1;
	ns = (count + per - 1) / per;
	if (per > count)
		ns = 1;
	if (ns > max) {
		per = (count + max - 1) / max;
		ns = (count + per - 1) / per;
	}
	return ns;
}

static u32 log2_up(u32 n)
{
	u32 k = 0;

	while ((1U << k) < n)
		k++;
	return k;
}

static u32 expected_rounds(const struct coll_sched_args *a)
{
	u32 n = a->nranks, L = a->local ? a->local : n;
	u64 c = a->count, per = a->chunk, ns;
	bool hier = a->algo == COLL_ALGO_HIER && L > 1 && L < n;
	bool tree = a->algo == COLL_ALGO_TREE;

	if (a->prim == COLL_BARRIER || !c)
		return 0;
	if (n == 1)
		return a->prim == COLL_ALLTOALL &&
		       (a->flags & COLL_SCHED_F_INPLACE) ? 0 : 1;
	if (a->algo == COLL_ALGO_RING && a->prim == COLL_ALLREDUCE &&
	    __builtin_mul_overflow(per, (u64)n, &per))
		per = c;
	ns = expected_slabs(c, per, a->prim == COLL_ALLREDUCE ? 2 * (u64)n : n);
	switch (a->prim) {
	case COLL_ALLREDUCE:
		if (hier)
			return 4;
		if (tree)
			return 2 * log2_up(n);
		return a->algo == COLL_ALGO_RING ? 2 * (n - 1) + ns - 1 : 2;
	case COLL_BROADCAST:
		if (hier)
			return 2;
		if (tree)
			return log2_up(n);
		return a->algo == COLL_ALGO_RING ? n - 1 + ns - 1 : 1;
	case COLL_REDUCE:
	case COLL_REDUCESCATTER:
		return a->algo == COLL_ALGO_RING ? n - 1 + ns - 1 : 1;
	case COLL_ALLGATHER:
		if (hier)
			return 2;
		if (a->algo == COLL_ALGO_RING)
			return n - 1 + ns - 1;
		return a->algo == COLL_ALGO_NAIVE ? 2 : 1;
	default:
		return 1;
	}
}

static bool check_structure(struct run *t)
{
	struct coll_sched *s = &t->s;
	u32 r, i, exp = expected_rounds(&t->a);

	if (s->nrounds != exp) {
		fail(t, "nrounds %u, expected %u", s->nrounds, exp);
		return false;
	}
	if (!s->nrounds) {
		if (s->nsteps || s->steps || s->round_first || s->chunk_first) {
			fail(t, "steps without rounds");
			return false;
		}
		return true;
	}
	if (s->nranks != t->a.nranks || s->exec_chunk != t->a.exec_chunk ||
	    s->nsteps > COLL_SCHED_MAX_STEPS) {
		fail(t, "plan header: nranks %u exec_chunk %llu nsteps %u",
		     s->nranks, (unsigned long long)s->exec_chunk, s->nsteps);
		return false;
	}
	if (s->round_first[0] || s->round_first[s->nrounds] != s->nsteps ||
	    s->chunk_first[0]) {
		fail(t, "round_first/chunk_first bounds");
		return false;
	}
	for (r = 0; r < s->nrounds; r++) {
		if (s->round_first[r + 1] <= s->round_first[r]) {
			fail(t, "round %u empty or unsorted", r);
			return false;
		}
		for (i = s->round_first[r]; i < s->round_first[r + 1]; i++) {
			struct coll_step *st = &s->steps[i];
			u64 maxc = st->count, cpi;

			if (st->round != r) {
				fail(t, "family %u has round %u in round %u",
				     i, st->round, r);
				return false;
			}
			if (!st->count || !st->na || !st->nb ||
			    st->kind > COLL_STEP_SWAP ||
			    (st->flags & ~(COLL_STEP_F_AVG | COLL_STEP_F_SPLIT)) ||
			    ((st->flags & COLL_STEP_F_AVG) &&
			     st->kind != COLL_STEP_REDUCE) ||
			    ((st->flags & COLL_STEP_F_SPLIT) &&
			     st->na > s->nranks) ||
			    (st->kind == COLL_STEP_REDUCE ? st->nsrc < 2 :
			     st->nsrc != 1)) {
				fail(t, "bad family %u: kind %u flags %x na %u "
				     "nb %u nsrc %u count %llu", i, st->kind,
				     st->flags, st->na, st->nb, st->nsrc,
				     (unsigned long long)st->count);
				return false;
			}
			if (st->flags & COLL_STEP_F_SPLIT)
				maxc = (st->count + s->nranks - 1) / s->nranks;
			cpi = maxc / s->exec_chunk +
			      (maxc % s->exec_chunk ? 1 : 0);
			if (st->cpi != cpi ||
			    s->chunk_first[i + 1] - s->chunk_first[i] !=
			    (u64)st->na * st->nb * cpi) {
				fail(t, "family %u: cpi %u (want %llu), chunks "
				     "%u..%u", i, st->cpi,
				     (unsigned long long)cpi,
				     s->chunk_first[i], s->chunk_first[i + 1]);
				return false;
			}
			if (st->kind == COLL_STEP_SWAP &&
			    !(t->a.flags & COLL_SCHED_F_INPLACE)) {
				fail(t, "SWAP without F_INPLACE");
				return false;
			}
		}
	}
	return true;
}

/* Mark the writes of one instance; false on a conflict. */
static bool mark_write(struct run *t, u32 round, u32 id, size_t at, u64 cnt)
{
	u64 i;

	for (i = 0; i < cnt; i++) {
		if (wepoch[at + i] == epoch && wstep[at + i] != id) {
			fail(t, "round %u: instances %u and %u write the same "
			     "element", round, wstep[at + i], id);
			return false;
		}
		wepoch[at + i] = epoch;
		wstep[at + i] = id;
	}
	return true;
}

static bool check_read(struct run *t, u32 round, u32 id, size_t at, u64 cnt,
		       bool own)
{
	u64 i;

	for (i = 0; i < cnt; i++) {
		if (wepoch[at + i] != epoch)
			continue;
		if (wstep[at + i] == id && own)
			continue;
		fail(t, "round %u: instance %u reads an element written by "
		     "instance %u", round, id, wstep[at + i]);
		return false;
	}
	return true;
}

static bool combine(struct run *t, struct val *acc, const struct val *v)
{
	if (acc->idx != v->idx || v->avg || !v->cnt ||
	    (t->a.nranks <= 64 && (acc->mask & v->mask)) ||
	    acc->cnt + v->cnt > t->a.nranks) {
		fail(t, "bad reduce input: idx %u/%u mask %llx/%llx cnt %u/%u "
		     "avg %u", acc->idx, v->idx,
		     (unsigned long long)acc->mask,
		     (unsigned long long)v->mask, acc->cnt, v->cnt, v->avg);
		return false;
	}
	acc->mask += v->mask;
	acc->cnt += v->cnt;
	return true;
}

/* One instance of a round, resolved to positions in mem[]. */
struct inst {
	const struct coll_step *st;
	u64 count;
	size_t dst;
	size_t src0;	/* index into srcat[] of its first source */
	u64 done;	/* elements executed, through chunks */
	bool skip;
};

static struct inst *insts;
static size_t instcap;
static size_t *srcat;
static size_t srccap;
static size_t *fambase;
static size_t fambasecap;

static void *grow_array(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return p;
	*cap = need * 2;
	p = realloc(p, *cap * size);
	if (!p) {
		perror("realloc");
		exit(2);
	}
	return p;
}

/* Elements [e, e + cnt) of instance @in. */
static bool exec_piece(struct run *t, struct inst *in, u64 e, u64 cnt,
		       u64 full_mask)
{
	const struct coll_step *st = in->st;
	const size_t *src = &srcat[in->src0];
	size_t dst = in->dst + e;
	struct val acc, tmp;
	u64 i;
	u32 k;

	in->done += cnt;
	if (in->skip)
		return true;
	switch (st->kind) {
	case COLL_STEP_COPY:
		memcpy(&mem[dst], &mem[src[0] + e], cnt * sizeof(*mem));
		return true;
	case COLL_STEP_SWAP:
		for (i = 0; i < cnt; i++) {
			tmp = mem[dst + i];
			mem[dst + i] = mem[src[0] + e + i];
			mem[src[0] + e + i] = tmp;
		}
		return true;
	}
	for (i = 0; i < cnt; i++) {
		acc = mem[src[0] + e + i];
		if (acc.avg) {
			fail(t, "reduce reads a divided value");
			return false;
		}
		for (k = 1; k < st->nsrc; k++)
			if (!combine(t, &acc, &mem[src[k] + e + i]))
				return false;
		if (st->flags & COLL_STEP_F_AVG) {
			if (acc.mask != full_mask ||
			    acc.cnt != t->a.nranks) {
				fail(t, "F_AVG on a partial value (mask %llx, "
				     "%u of %u)", (unsigned long long)acc.mask,
				     acc.cnt, t->a.nranks);
				return false;
			}
			acc.avg = 1;
		}
		mem[dst + i] = acc;
	}
	return true;
}

/* Elements read by an instance of round @r on host ... from host ... */
static void count_traffic(struct run *t, u32 r, u32 src, u32 dst, u64 cnt)
{
	u32 H = t->nhosts, L;

	if (!t->traffic)
		return;
	L = t->a.nranks / H;
	t->traffic[((size_t)r * H + src / L) * H + dst / L] += cnt;
}

/*
 * Round r: expand every family into its instances, check the hazards
 * between them, then run the round's chunks (coll_sched_chunk()) in a
 * random order and check that they covered every instance exactly.
 */
static bool run_round(struct run *t, u32 r, u64 full_mask)
{
	struct coll_sched *s = &t->s;
	u32 f, first = s->round_first[r], last = s->round_first[r + 1];
	u32 c0 = s->chunk_first[first], c1 = s->chunk_first[last];
	size_t ninst = 0, nsrcat = 0, i, id;
	u32 a, b, k, j, dst_rank;

	for (f = first; f < last; f++) {
		const struct coll_step *st = &s->steps[f];

		insts = grow_array(insts, &instcap,
				   ninst + (size_t)st->na * st->nb,
				   sizeof(*insts));
		srcat = grow_array(srcat, &srccap,
				   nsrcat + (size_t)st->na * st->nb * st->nsrc,
				   sizeof(*srcat));
		for (a = 0; a < st->na; a++) {
			for (b = 0; b < st->nb; b++) {
				struct inst *in = &insts[ninst++];
				struct coll_place p;

				in->st = st;
				in->done = 0;
				in->skip = false;
				in->src0 = nsrcat;
				in->count = coll_step_inst(s, st, a, b, &p);
				if (!in->count) {
					in->skip = true;
					nsrcat += st->nsrc;
					continue;
				}
				if (!resolve(t, &p, in->count, &in->dst))
					return false;
				dst_rank = p.rank;
				for (k = 0; k < st->nsrc; k++) {
					coll_step_src(s, st, a, b, k, &p);
					if (!resolve(t, &p, in->count,
						     &srcat[nsrcat + k]))
						return false;
					count_traffic(t, r, p.rank, dst_rank,
						      in->count);
				}
				nsrcat += st->nsrc;
			}
		}
	}

	epoch++;
	/* Mark writes, with the shape checks of each instance. */
	for (id = 0; id < ninst; id++) {
		struct inst *in = &insts[id];
		const struct coll_step *st = in->st;
		size_t *sa = &srcat[in->src0];

		if (in->skip)
			continue;
		in->skip = st->kind == COLL_STEP_COPY && sa[0] == in->dst;
		if (in->skip)
			continue;
		if (st->kind == COLL_STEP_COPY &&
		    overlap(sa[0], in->dst, in->count)) {
			fail(t, "COPY with partially overlapping src and dst");
			return false;
		}
		if (st->kind == COLL_STEP_SWAP &&
		    overlap(sa[0], in->dst, in->count)) {
			fail(t, "SWAP of overlapping ranges");
			return false;
		}
		if (st->kind == COLL_STEP_REDUCE) {
			if (overlap(sa[0], in->dst, in->count) &&
			    sa[0] != in->dst) {
				fail(t, "REDUCE dst partially overlaps src[0]");
				return false;
			}
			for (k = 1; k < st->nsrc; k++)
				if (overlap(sa[k], in->dst, in->count)) {
					fail(t, "REDUCE dst overlaps src[%u]",
					     k);
					return false;
				}
		}
		if (!mark_write(t, r, id, in->dst, in->count))
			return false;
		if (st->kind == COLL_STEP_SWAP &&
		    !mark_write(t, r, id, sa[0], in->count))
			return false;
	}
	/* Check reads: only an instance's own dst (REDUCE src[0], SWAP). */
	for (id = 0; id < ninst; id++) {
		struct inst *in = &insts[id];
		const struct coll_step *st = in->st;

		if (in->skip)
			continue;
		for (k = 0; k < st->nsrc; k++) {
			bool own = st->kind == COLL_STEP_SWAP ||
				   (st->kind == COLL_STEP_REDUCE && !k);

			if (!check_read(t, r, id, srcat[in->src0 + k],
					in->count, own))
				return false;
		}
	}

	/* The chunks, in a random order, as cooperating threads claim them. */
	if (c1 - c0 > permcap) {
		permcap = (c1 - c0) * 2;
		perm = realloc(perm, permcap * sizeof(*perm));
		if (!perm)
			exit(2);
	}
	for (i = 0; i < c1 - c0; i++)
		perm[i] = c0 + i;
	for (i = c1 - c0; i > 1; i--) {
		j = rnd() % i;
		k = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = k;
	}
	fambase = grow_array(fambase, &fambasecap, last - first + 1,
			     sizeof(*fambase));
	fambase[0] = 0;
	for (f = first; f < last; f++)
		fambase[f - first + 1] = fambase[f - first] +
			(size_t)s->steps[f].na * s->steps[f].nb;
	for (i = 0; i < c1 - c0; i++) {
		struct coll_chunk ch;
		size_t base;

		coll_sched_chunk(s, r, perm[i], &ch);
		f = (u32)(ch.step - s->steps);
		if (f < first || f >= last) {
			fail(t, "chunk %u maps outside its round", perm[i]);
			return false;
		}
		base = fambase[f - first];
		if (ch.a >= ch.step->na || ch.b >= ch.step->nb) {
			fail(t, "chunk %u: instance (%u, %u) out of range",
			     perm[i], ch.a, ch.b);
			return false;
		}
		id = base + (size_t)ch.a * ch.step->nb + ch.b;
		if (!ch.n)
			continue;
		if (ch.elem + ch.n > insts[id].count ||
		    ch.n > s->exec_chunk) {
			fail(t, "chunk %u: elements %llu+%llu of an instance "
			     "of %llu", perm[i], (unsigned long long)ch.elem,
			     (unsigned long long)ch.n,
			     (unsigned long long)insts[id].count);
			return false;
		}
		if (!exec_piece(t, &insts[id], ch.elem, ch.n, full_mask))
			return false;
	}
	for (id = 0; id < ninst; id++)
		if (insts[id].done != insts[id].count) {
			fail(t, "round %u: instance %zu covered %llu of %llu "
			     "elements", r, id,
			     (unsigned long long)insts[id].done,
			     (unsigned long long)insts[id].count);
			return false;
		}
	return true;
}

static u64 full_of(const struct run *t)
{
	u64 sum = 0;
	u32 r;

	for (r = 0; r < t->a.nranks; r++)
		sum += t->id[r];
	return sum;
}

/* Elements off..off+cnt-1 must hold idx idx0.., mask, avg. */
static bool expect(struct run *t, u32 rank, u32 buf, u64 off, u64 cnt,
		   u64 idx0, u64 mask, u32 avg)
{
	struct coll_place b = { .rank = rank, .buf = buf, .off = off };
	struct val *v;
	size_t at;
	u64 i;

	if (!resolve(t, &b, cnt, &at))
		return false;
	for (i = 0, v = &mem[at]; i < cnt; i++, v++) {
		if (v->idx == idx0 + i && v->mask == mask && v->avg == avg &&
		    v->cnt == (mask == t->full ? t->a.nranks : 1))
			continue;
		fail(t, "rank %u buf %u elem %llu: got idx %d mask %llx avg %u,"
		     " want idx %llu mask %llx avg %u", rank, buf,
		     (unsigned long long)(off + i), (int)v->idx,
		     (unsigned long long)v->mask, v->avg,
		     (unsigned long long)(idx0 + i),
		     (unsigned long long)mask, avg);
		return false;
	}
	return true;
}

static bool check_results(struct run *t, u64 full_mask)
{
	u32 n = t->a.nranks, root = t->a.root, r, j;
	const u64 *id = t->id;
	u64 c = t->a.count;
	u32 ravg = n > 1 ? 1 : 0;
	const u32 R = COLL_SBUF_RECV;

	for (r = 0; r < n; r++) {
		/* Out-of-place inputs must be untouched. */
		if (!t->rk[r].inplace &&
		    !expect(t, r, COLL_SBUF_SEND, 0,
			    t->rk[r].elems[COLL_SBUF_SEND], 0, id[r], 0))
			return false;
		switch (t->a.prim) {
		case COLL_ALLREDUCE:
			if (!expect(t, r, R, 0, c, 0, full_mask, ravg))
				return false;
			break;
		case COLL_REDUCE:
			if (r == root &&
			    !expect(t, r, R, 0, c, 0, full_mask, ravg))
				return false;
			break;
		case COLL_REDUCESCATTER:
			if (!expect(t, r, R, 0, c, r * c, full_mask, ravg))
				return false;
			break;
		case COLL_ALLGATHER:
			for (j = 0; j < n; j++)
				if (!expect(t, r, R, j * c, c, 0, id[j], 0))
					return false;
			break;
		case COLL_BROADCAST:
			if (!expect(t, r, R, 0, c, 0, id[root], 0))
				return false;
			break;
		case COLL_SCATTER:
			if (!expect(t, r, R, 0, c, r * c, id[root], 0))
				return false;
			break;
		case COLL_GATHER:
			if (r != root)
				break;
			for (j = 0; j < n; j++)
				if (!expect(t, r, R, j * c, c, 0, id[j], 0))
					return false;
			break;
		case COLL_ALLTOALL:
			for (j = 0; j < n; j++)
				if (!expect(t, r, R, j * c, c, r * c,
					    id[j], 0))
					return false;
			break;
		}
	}
	return true;
}

/*
 * What a hierarchical plan reads across hosts, exactly: per round, from
 * host x into host y (x != y), with |P_q| the size of part q of n.
 *   AllReduce: round 1 sum of |P_q| over the q of host y; round 2 over
 *              the q of host x; rounds 0 and 3 nothing.
 *   AllGather: round 0 L * count; round 1 nothing.
 *   Broadcast: round 0 count from the root's host to every other, else
 *              nothing; round 1 nothing.
 */
static bool check_traffic(struct run *t)
{
	u32 n = t->a.nranks, H = t->nhosts, L = n / H, R = t->s.nrounds;
	u32 r, x, y, q;
	u64 c = t->a.count, base = c / n, rem = c % n, want, got;
	u64 part[MAXH] = { 0 };	/* the parts of each host's ranks */

	for (q = 0; q < n; q++)
		part[q / L] += base + (q < rem);
	for (r = 0; r < R; r++)
	for (x = 0; x < H; x++)
	for (y = 0; y < H; y++) {
		if (x == y)
			continue;
		want = 0;
		switch (t->a.prim) {
		case COLL_ALLREDUCE:
			want = r == 1 ? part[y] : r == 2 ? part[x] : 0;
			break;
		case COLL_ALLGATHER:
			want = r == 0 ? (u64)L * c : 0;
			break;
		case COLL_BROADCAST:
			want = r == 0 && x == t->a.root / L ? c : 0;
			break;
		}
		got = t->traffic[((size_t)r * H + x) * H + y];
		if (got != want) {
			fail(t, "round %u: host %u reads %llu elements from "
			     "host %u, the plan promises %llu", r, y,
			     (unsigned long long)got, x,
			     (unsigned long long)want);
			return false;
		}
	}
	return true;
}

/* mode: 0 no rank in place, 1 every rank that can, 2 random mix. */
static bool run_one(struct run *t, int mode)
{
	struct coll_sched_args *a = &t->a;
	u32 n = a->nranks, r, b;
	u64 full_mask, i;
	size_t total = 0;
	bool ok = false;
	int ret;

	t->failed = false;
	t->err[0] = 0;
	for (r = 0; r < n; r++)
		t->id[r] = n <= 64 ? 1ULL << r : rnd() | 1;
	full_mask = full_of(t);
	t->full = full_mask;
	if (a->prim == COLL_ALLTOALL && mode == 1)
		a->flags |= COLL_SCHED_F_INPLACE;
	for (r = 0; r < n; r++) {
		struct rk *k = &t->rk[r];
		u64 outer_elems;

		memset(k, 0, sizeof(*k));
		for (b = 0; b < 2; b++)
			k->elems[b] = coll_sched_buf_elems(a->prim, n, a->root,
							   r, b, a->count);
		if (coll_sched_inplace_layout(a->prim, n, a->root, r,
					      a->count, &k->outer, &k->inner,
					      &k->loff)) {
			if (a->prim == COLL_ALLTOALL)
				k->inplace = mode == 1;
			else
				k->inplace = mode == 1 ||
					     (mode == 2 && (rnd() & 1));
		}
		k->base = total;
		if (k->inplace) {
			outer_elems = k->elems[k->outer];
			if (k->loff > outer_elems ||
			    k->elems[k->inner] > outer_elems - k->loff) {
				fail(t, "layout: inner does not fit");
				return false;
			}
			total += outer_elems;
		} else {
			total += k->elems[0] + k->elems[1];
		}
	}
	grow(total + 1);
	for (i = 0; i < total; i++)
		mem[i] = (struct val){ .idx = POISON_IDX };
	for (r = 0; r < n; r++) {
		struct coll_place bref = { .rank = r, .buf = COLL_SBUF_SEND };
		u64 e = t->rk[r].elems[COLL_SBUF_SEND];
		size_t at;

		if (!e)
			continue;
		if (!resolve(t, &bref, e, &at))
			return false;
		for (i = 0; i < e; i++)
			mem[at + i] = (struct val){ .idx = i,
						    .mask = t->id[r],
						    .cnt = 1 };
	}

	ret = coll_sched_build(a, &t->s);
	if (ret) {
		fail(t, "build returned %d", ret);
		return false;
	}
	if (!check_structure(t))
		goto out;
	if (t->nhosts) {
		t->traffic = calloc((size_t)t->s.nrounds * t->nhosts *
				    t->nhosts + 1, sizeof(*t->traffic));
		if (!t->traffic)
			exit(2);
	}
	for (r = 0; r < t->s.nrounds; r++)
		if (!run_round(t, r, full_mask))
			goto out;
	ok = check_results(t, full_mask) &&
	     (!t->traffic || check_traffic(t));
out:
	free(t->traffic);
	t->traffic = NULL;
	coll_sched_destroy(&t->s);
	return ok;
}

static int tap_n;
static int tap_failed;

static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d ", ok ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		tap_failed++;
}

static int add_unique(u64 *v, int nv, u64 x)
{
	int i;

	for (i = 0; i < nv; i++)
		if (v[i] == x)
			return nv;
	v[nv] = x;
	return nv + 1;
}

/* Primitives whose single schedule ignores the algorithm and the chunk. */
static bool chunkless(u32 prim, u32 algo)
{
	return algo != COLL_ALGO_RING || prim == COLL_SCATTER ||
	       prim == COLL_GATHER || prim == COLL_ALLTOALL;
}

/*
 * Keep the default run to a few seconds: skip the cases whose simulated
 * work (elements moved plus a per-step overhead) is large, except the
 * largest rank count with reasonably sized ring chunks.
 */
static bool too_big(u32 prim, u32 algo, u32 n, u64 count, u64 chunk,
		    u64 xchunk)
{
	u64 elems, steps, slabs, per = chunk;

	if (full)
		return false;
	if (algo == COLL_ALGO_RING && prim == COLL_ALLREDUCE &&
	    __builtin_mul_overflow(per, (u64)n, &per))
		per = count;
	slabs = per >= count ? 1 : (count + per - 1) / per;
	if (chunkless(prim, algo))
		slabs = 1;
	switch (prim) {
	case COLL_REDUCESCATTER:
	case COLL_ALLGATHER:
	case COLL_ALLTOALL:
		elems = (u64)n * n * count;
		steps = (u64)n * n * (algo == COLL_ALGO_RING ? slabs : 1);
		break;
	default:
		elems = (u64)n * count;
		steps = (u64)n * (algo == COLL_ALGO_RING ? slabs : 1);
		if (prim == COLL_ALLREDUCE)
			steps *= 2 * n;
		break;
	}
	if (xchunk < 8)
		elems *= 3;	/* a chunk per element or so */
	if (n == MAXN && (chunkless(prim, algo) || chunk >= 64) &&
	    xchunk == BIG_CHUNK)
		return false;
	return elems + 16 * steps > budget;
}

static void test_group(u32 prim, u32 algo)
{
	static const u64 chunks[] = { 1, 3, 64, BIG_CHUNK };
	static const u64 xchunks[] = { BIG_CHUNK, 1, 7 };
	struct run *t = calloc(1, sizeof(*t));
	u64 counts[16], roots[3];
	int ncounts, nroots, ci, ri, hi, xi, mode;
	long runs = 0, skipped = 0;
	bool ok = true;
	u32 n;

	if (!t)
		exit(2);
	for (n = 1; n <= MAXN && ok; n++) {
		ncounts = 0;
		ncounts = add_unique(counts, ncounts, 0);
		ncounts = add_unique(counts, ncounts, 1);
		ncounts = add_unique(counts, ncounts, 2);
		ncounts = add_unique(counts, ncounts, 3);
		ncounts = add_unique(counts, ncounts, 7);
		ncounts = add_unique(counts, ncounts, n - 1);
		ncounts = add_unique(counts, ncounts, n);
		ncounts = add_unique(counts, ncounts, n + 1);
		ncounts = add_unique(counts, ncounts, 1000);
		nroots = add_unique(roots, 0, 0);
		if (rooted(prim)) {
			nroots = add_unique(roots, nroots, n - 1);
			nroots = add_unique(roots, nroots, n / 2);
		}
		for (ci = 0; ci < ncounts && ok; ci++)
		for (ri = 0; ri < nroots && ok; ri++)
		for (hi = 0; hi < 4 && ok; hi++)
		for (xi = 0; xi < 3 && ok; xi++) {
			if (chunkless(prim, algo) && hi)
				break;
			if (too_big(prim, algo, n, counts[ci], chunks[hi],
				    xchunks[xi])) {
				skipped++;
				continue;
			}
			for (mode = 0; mode < 3 && ok; mode++) {
				if (prim == COLL_ALLTOALL && mode == 2)
					continue;
				memset(&t->a, 0, sizeof(t->a));
				t->a.prim = prim;
				t->a.algo = algo;
				t->a.nranks = n;
				t->a.root = (u32)roots[ri];
				t->a.count = counts[ci];
				t->a.chunk = chunks[hi];
				t->a.exec_chunk = xchunks[xi];
				runs++;
				if (run_one(t, mode))
					continue;
				ok = false;
				printf("# %s/%s n=%u count=%llu root=%u "
				       "chunk=%llu exec_chunk=%llu "
				       "inplace-mode=%d: %s\n",
				       prim_name[prim], algo_name[algo], n,
				       (unsigned long long)t->a.count,
				       t->a.root,
				       (unsigned long long)t->a.chunk,
				       (unsigned long long)t->a.exec_chunk,
				       mode, t->err);
			}
		}
	}
	tap(ok, "%s %s (%ld runs, %ld skipped by size budget)",
	    prim_name[prim], algo_name[algo], runs, skipped);
	free(t);
}

/*
 * The hierarchical plans (AllReduce, AllGather, Broadcast) for every H
 * hosts x L ranks per host up to MAXH x MAXL: simulated, and their
 * traffic between hosts checked (check_traffic()) where the plan is
 * hierarchical (H, L >= 2; otherwise it is DIRECT's).
 */
static void test_hier(u32 prim)
{
	static const u64 xchunks[] = { BIG_CHUNK, 7 };
	struct run *t = calloc(1, sizeof(*t));
	u64 counts[8], roots[3];
	int ncounts, nroots, ci, ri, xi, mode;
	long runs = 0, skipped = 0;
	u32 H, L, n;
	bool ok = true;

	if (!t)
		exit(2);
	for (H = 1; H <= MAXH && ok; H++)
	for (L = 1; L <= MAXL && ok; L++) {
		n = H * L;
		ncounts = add_unique(counts, 0, 1);
		ncounts = add_unique(counts, ncounts, 3);
		ncounts = add_unique(counts, ncounts, n + 1);
		ncounts = add_unique(counts, ncounts, 2 * n - 1);
		ncounts = add_unique(counts, ncounts, 1000);
		nroots = add_unique(roots, 0, 0);
		if (prim == COLL_BROADCAST) {
			nroots = add_unique(roots, nroots, n - 1);
			nroots = add_unique(roots, nroots, (n / 2 + 1) % n);
		}
		for (ci = 0; ci < ncounts && ok; ci++)
		for (ri = 0; ri < nroots && ok; ri++)
		for (xi = 0; xi < 2 && ok; xi++) {
			u64 work = (counts[ci] + 16) * n *
				   (prim == COLL_ALLGATHER ? n : 1) *
				   (xi ? 3 : 1);

			/*
			 * Counts 1 and n + 1 (one element for some parts,
			 * two for one; AllGather: 1 and 3) always; the
			 * rest within the budget, in the full set too (it
			 * is 512 shapes of up to 512 ranks).
			 */
			bool always = !xi && (ci == 0 ||
				ci == (prim == COLL_ALLGATHER ? 1 : 2));

			if (!always && work > budget) {
				skipped++;
				continue;
			}
			for (mode = 0; mode < 3 && ok; mode++) {
				/* beyond 64 ranks, a random in-place mix */
				if (n > 64 && mode != 2)
					continue;
				memset(&t->a, 0, sizeof(t->a));
				t->a.prim = prim;
				t->a.algo = COLL_ALGO_HIER;
				t->a.nranks = n;
				t->a.local = L;
				t->a.root = (u32)roots[ri];
				t->a.count = counts[ci];
				t->a.chunk = 1;
				t->a.exec_chunk = xchunks[xi];
				t->nhosts = H > 1 && L > 1 ? H : 0;
				runs++;
				if (run_one(t, mode))
					continue;
				ok = false;
				printf("# %s/hier %ux%u count=%llu root=%u "
				       "exec_chunk=%llu inplace-mode=%d: %s\n",
				       prim_name[prim], H, L,
				       (unsigned long long)t->a.count,
				       t->a.root,
				       (unsigned long long)t->a.exec_chunk,
				       mode, t->err);
			}
		}
	}
	t->nhosts = 0;
	tap(ok, "%s hier, hosts x ranks up to %ux%u, traffic between hosts "
	    "exact (%ld runs, %ld skipped by size budget)", prim_name[prim],
	    MAXH, MAXL, runs, skipped);
	free(t);
}

/* TREE and HIER run DIRECT's plan for these primitives. */
static bool same_as_direct(u32 prim, u32 algo)
{
	if (algo == COLL_ALGO_TREE)
		return prim != COLL_ALLREDUCE && prim != COLL_BROADCAST;
	if (algo == COLL_ALGO_HIER)
		return prim != COLL_ALLREDUCE && prim != COLL_BROADCAST &&
		       prim != COLL_ALLGATHER;
	return false;
}

/*
 * Where TREE and HIER are DIRECT (other primitives; HIER on one host, one
 * rank per host, or ranks not laid out host by host), their plans are
 * DIRECT's, family for family.
 */
static void test_fallbacks(void)
{
	static const u32 shapes[][2] = {	/* nranks, local */
		{ 8, 0 }, { 8, 1 }, { 8, 8 }, { 6, 2 }, { 12, 4 }, { 7, 0 },
	};
	u32 prim, algo, i;
	bool ok = true;

	for (prim = 0; prim < COLL_BARRIER; prim++)
	for (algo = COLL_ALGO_TREE; algo <= COLL_ALGO_HIER; algo++)
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		struct coll_sched_args a = {
			.prim = prim, .algo = COLL_ALGO_DIRECT,
			.nranks = shapes[i][0], .local = shapes[i][1],
			.root = 1, .count = 1001, .chunk = 64,
			.exec_chunk = 100,
		};
		struct coll_sched d, x;
		u32 L = a.local ? a.local : a.nranks;

		if (!same_as_direct(prim, algo) &&
		    (algo == COLL_ALGO_TREE || (L > 1 && L < a.nranks)))
			continue;
		if (coll_sched_build(&a, &d)) {
			ok = false;
			continue;
		}
		a.algo = algo;
		if (coll_sched_build(&a, &x) || x.nsteps != d.nsteps ||
		    x.nrounds != d.nrounds ||
		    memcmp(x.steps, d.steps, d.nsteps * sizeof(*d.steps))) {
			printf("# %s/%s n=%u local=%u: not DIRECT's plan\n",
			       prim_name[prim], algo_name[algo], a.nranks,
			       a.local);
			ok = false;
		}
		coll_sched_destroy(&x);
		coll_sched_destroy(&d);
	}
	tap(ok, "tree and hier fall back to direct's plan where they do not apply");
}

static int build_err(u32 prim, u32 algo, u32 n, u32 root, u64 count,
		     u64 chunk, u32 flags)
{
	struct coll_sched_args a = {
		.prim = prim, .algo = algo, .nranks = n, .root = root,
		.count = count, .chunk = chunk, .flags = flags,
		.exec_chunk = chunk,
	};
	struct coll_sched s;
	int ret;

	memset(&s, 0x5a, sizeof(s));
	ret = coll_sched_build(&a, &s);
	if (ret && (s.nrounds || s.nsteps || s.steps || s.round_first ||
		    s.chunk_first))
		return 1000;	/* not left empty */
	if (!ret)
		coll_sched_destroy(&s);
	return ret;
}

static int build_err_local(u32 n, u32 local)
{
	struct coll_sched_args a = {
		.prim = COLL_ALLREDUCE, .algo = COLL_ALGO_HIER, .nranks = n,
		.count = 10, .chunk = 1, .exec_chunk = 1, .local = local,
	};
	struct coll_sched s;
	int ret = coll_sched_build(&a, &s);

	if (!ret)
		coll_sched_destroy(&s);
	return ret;
}

static void test_errors(void)
{
	const u32 D = COLL_ALGO_DIRECT, R = COLL_ALGO_RING;
	bool ok = true;

#define EXPECT(e, call) do {						\
		int __r = (call);					\
		if (__r != (e)) {					\
			printf("# %s: got %d want %d\n", #call, __r, (e)); \
			ok = false;					\
		}							\
	} while (0)
	EXPECT(-EINVAL, build_err(COLL_ALLREDUCE, D, 0, 0, 10, 1, 0));
	EXPECT(-EINVAL, build_err(COLL_ALLREDUCE, D, COLL_MAX_RANKS + 1, 0,
				  10, 1, 0));
	EXPECT(-EINVAL, build_err(COLL_REDUCE, D, 4, 4, 10, 1, 0));
	EXPECT(-EINVAL, build_err(COLL_BROADCAST, R, 4, 100, 10, 1, 0));
	EXPECT(-EINVAL, build_err(COLL_PRIM_MAX, D, 4, 0, 10, 1, 0));
	EXPECT(-EINVAL, build_err(1000, D, 4, 0, 10, 1, 0));
	EXPECT(-EINVAL, build_err(COLL_ALLREDUCE, COLL_ALGO_AUTO, 4, 0, 10, 1,
				  0));
	EXPECT(-EINVAL, build_err(COLL_ALLREDUCE, COLL_ALGO_MAX, 4, 0, 10, 1,
				  0));
	EXPECT(-EINVAL, build_err(COLL_ALLREDUCE, R, 4, 0, 10, 0, 0));
	EXPECT(-EINVAL, build_err(COLL_ALLREDUCE, D, 4, 0, 10, 1, 0x2));
	EXPECT(-EINVAL, build_err_local(6, 4));	/* does not divide */
	EXPECT(-EINVAL, build_err_local(6, 12));	/* more than the ranks */
	EXPECT(0, build_err_local(6, 3));
	EXPECT(-EOVERFLOW, build_err(COLL_ALLGATHER, D, 8, 0, 1ULL << 62, 1,
				     0));
	EXPECT(-EOVERFLOW, build_err(COLL_ALLTOALL, D, 3, 0, ~0ULL / 2, 1,
				     COLL_SCHED_F_INPLACE));
	EXPECT(-EOVERFLOW, build_err(COLL_ALLREDUCE, D, 2, 0, ~0ULL, 1, 0));
	/* More chunks than a claim counter holds. */
	EXPECT(-EOVERFLOW, build_err(COLL_ALLREDUCE, R, 64, 0, 1ULL << 40, 1,
				     0));
	EXPECT(-EOVERFLOW, build_err(COLL_BROADCAST, R, 2, 0, 1ULL << 40, 1,
				     0));
	/* Valid edge cases: the ring's slabs are bounded, not refused. */
	EXPECT(0, build_err(COLL_BARRIER, COLL_ALGO_NAIVE, 1024, 1023, 0, 1,
			    0));
	EXPECT(0, build_err(COLL_ALLREDUCE, R, 256, 0, 1ULL << 40, 1ULL << 30,
			    0));
	EXPECT(0, build_err(COLL_ALLREDUCE, R, 1024, 0, 1ULL << 30,
			    1ULL << 10, 0));
	EXPECT(0, build_err(COLL_ALLTOALL, D, 1024, 0, 1ULL << 20, 1ULL << 20,
			    COLL_SCHED_F_INPLACE));
#undef EXPECT
	tap(ok, "invalid arguments and overflow");
}

/*
 * Plans stay linear in the number of ranks: at 1024 ranks, for every
 * primitive and algorithm (both AlltoAll forms), the plan's bytes are
 * at most COLL_PLAN_BYTES_PER_RANK per rank plus a constant, whatever
 * the count; printed for the record.
 */
#define COLL_PLAN_BYTES_PER_RANK	512
#define COLL_PLAN_BYTES_CONST		(4096 * 200)

static void test_plan_size(void)
{
	static const u64 counts[] = { 1, 256, 1ULL << 20 };
	u32 prim, algo, ci, inpl, n = COLL_MAX_RANKS;
	size_t worst = 0;
	bool ok = true;

	for (prim = 0; prim < COLL_BARRIER; prim++)
	for (algo = COLL_ALGO_RING; algo < COLL_ALGO_MAX; algo++)
	for (ci = 0; ci < 3; ci++)
	for (inpl = 0; inpl < (prim == COLL_ALLTOALL ? 2u : 1u); inpl++) {
		struct coll_sched_args a = {
			.prim = prim, .algo = algo, .nranks = n,
			.root = n / 3, .count = counts[ci], .chunk = 1,
			.exec_chunk = 16384,
			.flags = inpl ? COLL_SCHED_F_INPLACE : 0,
		};
		struct coll_sched s;
		size_t bytes;
		int ret = coll_sched_build(&a, &s);

		if (ret) {
			printf("# %s/%s n=%u count=%llu: build %d\n",
			       prim_name[prim], algo_name[algo], n,
			       (unsigned long long)a.count, ret);
			ok = false;
			continue;
		}
		bytes = coll_sched_bytes(&s);
		if (bytes > worst)
			worst = bytes;
		if (ci == 2)
			printf("# plan %s/%s%s n=%u count=%llu: %u families, "
			       "%u rounds, %zu bytes\n", prim_name[prim],
			       algo_name[algo], inpl ? " in place" : "", n,
			       (unsigned long long)a.count, s.nsteps,
			       s.nrounds, bytes);
		if (bytes > (size_t)COLL_PLAN_BYTES_PER_RANK * n +
			    COLL_PLAN_BYTES_CONST) {
			printf("# %s/%s n=%u count=%llu: %zu bytes\n",
			       prim_name[prim], algo_name[algo], n,
			       (unsigned long long)a.count, bytes);
			ok = false;
		}
		coll_sched_destroy(&s);
	}
	tap(ok, "plan size at %u ranks is linear (largest %zu bytes)", n,
	    worst);
}

static void test_api(void)
{
	struct coll_sched_args a = {
		.prim = COLL_BARRIER, .nranks = 8, .count = 0, .chunk = 1,
		.exec_chunk = 1,
	};
	struct coll_sched s;
	u32 algo, o, in;
	u64 off;
	bool ok = true;

	/* Barrier: no rounds, for every algorithm. */
	for (algo = COLL_ALGO_RING; algo < COLL_ALGO_MAX; algo++) {
		a.algo = algo;
		if (coll_sched_build(&a, &s) || s.nrounds || s.nsteps) {
			printf("# barrier %s not empty\n", algo_name[algo]);
			ok = false;
		}
		coll_sched_destroy(&s);
	}
#define BE(prim, root, rank, buf, want) do {				\
		u64 __e = coll_sched_buf_elems(prim, 4, root, rank, buf, 5); \
		if (__e != (want)) {					\
			printf("# buf_elems(%s, root %u, rank %u, buf %u) = " \
			       "%llu, want %u\n", prim_name[prim], root,	\
			       rank, buf, (unsigned long long)__e, want); \
			ok = false;					\
		}							\
	} while (0)
	BE(COLL_ALLREDUCE, 0, 1, COLL_SBUF_SEND, 5);
	BE(COLL_ALLREDUCE, 0, 1, COLL_SBUF_RECV, 5);
	BE(COLL_REDUCE, 2, 1, COLL_SBUF_SEND, 5);
	BE(COLL_REDUCE, 2, 1, COLL_SBUF_RECV, 0);
	BE(COLL_REDUCE, 2, 2, COLL_SBUF_RECV, 5);
	BE(COLL_REDUCESCATTER, 0, 1, COLL_SBUF_SEND, 20);
	BE(COLL_REDUCESCATTER, 0, 1, COLL_SBUF_RECV, 5);
	BE(COLL_ALLGATHER, 0, 1, COLL_SBUF_SEND, 5);
	BE(COLL_ALLGATHER, 0, 1, COLL_SBUF_RECV, 20);
	BE(COLL_BROADCAST, 3, 1, COLL_SBUF_SEND, 0);
	BE(COLL_BROADCAST, 3, 3, COLL_SBUF_SEND, 5);
	BE(COLL_BROADCAST, 3, 1, COLL_SBUF_RECV, 5);
	BE(COLL_SCATTER, 3, 1, COLL_SBUF_SEND, 0);
	BE(COLL_SCATTER, 3, 3, COLL_SBUF_SEND, 20);
	BE(COLL_SCATTER, 3, 1, COLL_SBUF_RECV, 5);
	BE(COLL_GATHER, 3, 1, COLL_SBUF_SEND, 5);
	BE(COLL_GATHER, 3, 1, COLL_SBUF_RECV, 0);
	BE(COLL_GATHER, 3, 3, COLL_SBUF_RECV, 20);
	BE(COLL_ALLTOALL, 0, 1, COLL_SBUF_SEND, 20);
	BE(COLL_ALLTOALL, 0, 1, COLL_SBUF_RECV, 20);
	BE(COLL_BARRIER, 0, 1, COLL_SBUF_SEND, 0);
	BE(COLL_BARRIER, 0, 1, COLL_SBUF_RECV, 0);
#undef BE
#define LAY(prim, root, rank, want, wo, wi, woff) do {			\
		int __l = coll_sched_inplace_layout(prim, 4, root, rank, 5, \
						    &o, &in, &off);	\
		if (__l != (want) || (__l && (o != (wo) || in != (wi) ||	\
					     off != (woff)))) {		\
			printf("# layout(%s, root %u, rank %u) wrong\n",	\
			       prim_name[prim], root, rank);		\
			ok = false;					\
		}							\
	} while (0)
	LAY(COLL_ALLREDUCE, 0, 2, 1, COLL_SBUF_RECV, COLL_SBUF_SEND, 0);
	LAY(COLL_REDUCE, 1, 1, 1, COLL_SBUF_RECV, COLL_SBUF_SEND, 0);
	LAY(COLL_REDUCE, 1, 2, 0, 0, 0, 0);
	LAY(COLL_BROADCAST, 1, 1, 1, COLL_SBUF_RECV, COLL_SBUF_SEND, 0);
	LAY(COLL_BROADCAST, 1, 0, 0, 0, 0, 0);
	LAY(COLL_ALLTOALL, 0, 3, 1, COLL_SBUF_RECV, COLL_SBUF_SEND, 0);
	LAY(COLL_ALLGATHER, 0, 3, 1, COLL_SBUF_RECV, COLL_SBUF_SEND, 15);
	LAY(COLL_GATHER, 2, 2, 1, COLL_SBUF_RECV, COLL_SBUF_SEND, 10);
	LAY(COLL_GATHER, 2, 1, 0, 0, 0, 0);
	LAY(COLL_REDUCESCATTER, 0, 3, 1, COLL_SBUF_SEND, COLL_SBUF_RECV, 15);
	LAY(COLL_SCATTER, 2, 2, 1, COLL_SBUF_SEND, COLL_SBUF_RECV, 10);
	LAY(COLL_SCATTER, 2, 3, 0, 0, 0, 0);
	LAY(COLL_BARRIER, 0, 0, 0, 0, 0, 0);
#undef LAY
	tap(ok, "barrier, buf_elems and inplace_layout");
}

int main(int argc, char **argv)
{
	u32 prim, algo, part = 0, nparts = 1, g = 0;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-f")) {
			full = true;
		} else if (!strcmp(argv[i], "-b") && i + 1 < argc) {
			budget = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
			rng = strtoull(argv[++i], NULL, 0) | 1;
		} else if (!strcmp(argv[i], "-p") && i + 1 < argc &&
			   sscanf(argv[i + 1], "%u/%u", &part, &nparts) == 2 &&
			   nparts && part < nparts) {
			i++;
		} else {
			fprintf(stderr, "usage: %s [-f] [-b budget] [-s seed] [-p K/M]\n",
				argv[0]);
			return 2;
		}
	}
	printf("TAP version 13\n");
	printf("# seed %#llx%s, part %u/%u\n", (unsigned long long)rng,
	       full ? ", full size" : "", part, nparts);
	if (!part) {
		test_api();
		test_errors();
		test_plan_size();
		test_fallbacks();
	}
	for (prim = 0; prim < COLL_BARRIER; prim++)
		for (algo = COLL_ALGO_RING; algo < COLL_ALGO_MAX; algo++)
			if (!same_as_direct(prim, algo) &&
			    algo != COLL_ALGO_HIER && g++ % nparts == part)
				test_group(prim, algo);
	if (g++ % nparts == part)
		test_hier(COLL_ALLREDUCE);
	if (g++ % nparts == part)
		test_hier(COLL_ALLGATHER);
	if (g++ % nparts == part)
		test_hier(COLL_BROADCAST);
	printf("1..%d\n", tap_n);
	printf("# %d failed\n", tap_failed);
	return tap_failed ? 1 : 0;
}
