// SPDX-License-Identifier: GPL-2.0
/*
 * coll_hosts: collectives whose ranks span hosts (qemu guests), through
 * libcollective's rendezvous and the module's transports.
 *
 *   coll_hosts --nnodes H --node I --local L --root ADDR:PORT
 *              [--transport auto|tcp|rdma] [--expect-transport tcp|rdma]
 *              [--sizes LIST] [--seed HEX] [--algos LIST]
 *
 * Run on every host with the same arguments but --node; COLL_ID (the same
 * everywhere) comes from the environment.  The L local ranks are processes
 * forked here, global ranks I*L .. I*L+L-1 of H*L.  For every case (a
 * primitive, a type and op, a size, an algorithm) each rank checks its own
 * results element by element against a reference computed here from the
 * inputs every rank derives from (seed, case, rank, block, index), and
 * this host prints one TAP line per case: ok only if every local rank was
 * right.  The run's verdict is every host's lines agreeing (hosts.sh).
 *
 * Values keep every result exact: integers wrap (full range for SUM, MIN,
 * MAX; {-3..3} \ {0} for PROD); floats take small integers (SUM, AVG: -8..8;
 * MIN, MAX: -100..100) or {-2, -1, -1/2, 1/2, 1, 2} (PROD), exact in every
 * float type including fp16 and bf16 for the rank counts used; AVG of a
 * float is compared within one rounding.
 */
#include <getopt.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "coll_selftest.h"
#include <libcollective.h>

#define MAX_LOCAL	8
#define MAX_CASES	4096
#define GUARD		64

struct opts {
	int nnodes, node, local;
	const char *root;
	unsigned int flags;
	uint64_t seed;
	uint64_t sizes[8];
	int nsizes;
	int algos[8];
	int nalgos;
	unsigned int timeout_ms;
	int expect;		/* enum coll_transport to the other hosts, or -1 */
	int expect_qps;		/* RDMA queue pairs to every peer host, or 0 */
};

struct result {
	int err;		/* 0, or 1 + errno of the call, or 1000 + wrong */
	int64_t usec;
	char what[96];
};

struct shm {
	int ncases;
	struct result res[MAX_CASES][MAX_LOCAL];
	char names[MAX_CASES][96];
	char topo[MAX_LOCAL][256];
	char topo_bad[MAX_LOCAL][96];	/* what COLL_COMM_QUERY got wrong */
	char pool[MAX_LOCAL][128];	/* the MR pool case: "" if it passed */
	char pool_seen[128];		/* what local rank 0 counted */
	char qps_bad[MAX_LOCAL][128];	/* the queue pairs case: "" if passed */
	char group[MAX_LOCAL][128];	/* the group case: "" if it passed */
};

#define POOL_WARM	6
#define POOL_CALLS	12
#define POOL_COUNT	(1 << 18)	/* int32: 1 MiB, read zero-copy */


static const int dtypes[] = {
	COLL_INT32, COLL_FP32, COLL_INT8, COLL_UINT8, COLL_UINT32,
	COLL_INT64, COLL_UINT64, COLL_FP16, COLL_BF16, COLL_FP64,
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* ---- element encodings -------------------------------------------------- */

static uint16_t f32_to_f16_exact(float f)
{
	uint32_t u;
	int e;
	uint32_t m;

	memcpy(&u, &f, 4);
	if (!(u & 0x7fffffff))
		return (uint16_t)(u >> 16);
	e = (int)((u >> 23) & 0xff) - 127 + 15;
	m = (u >> 13) & 0x3ff;
	return (uint16_t)(((u >> 16) & 0x8000) | ((uint32_t)e << 10) | m);
}

static float f16_to_f32(uint16_t h)
{
	uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f,
		 m = h & 0x3ff, u;
	float f;

	if (!e && !m) {
		u = s;
	} else if (!e) {
		f = ldexpf((float)m, -24);
		return s ? -f : f;
	} else {
		u = s | ((e - 15 + 127) << 23) | (m << 13);
	}
	memcpy(&f, &u, 4);
	return f;
}

static float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static uint16_t f32_to_bf16_exact(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);
}

static bool is_float(int t)
{
	return t == COLL_FP16 || t == COLL_BF16 || t == COLL_FP32 ||
	       t == COLL_FP64;
}

/* The value of input element (rank, block, i) of case @k, as a double. */
static double in_value(uint64_t seed, int k, int dtype, int op, int rank,
		       int block, uint64_t i)
{
	static const double fprod[] = { -2, -1, -0.5, 0.5, 1, 2 };
	static const int iprod[] = { -3, -2, -1, 1, 2, 3 };
	uint64_t h = mix(seed ^ mix(((uint64_t)k << 40) ^ ((uint64_t)rank << 28) ^
				    ((uint64_t)block << 20) ^ i));

	if (op == COLL_PROD)
		return is_float(dtype) ? fprod[h % 6] : iprod[h % 6];
	if (is_float(dtype)) {
		if (op == COLL_MIN || op == COLL_MAX)
			return (double)(int)(h % 201) - 100;
		return (double)(int)(h % 17) - 8;
	}
	return (double)(int64_t)h;	/* raw bits, truncated by encode() */
}

static void encode(int dtype, double v, uint64_t raw, void *p)
{
	switch (dtype) {
	case COLL_INT8: case COLL_UINT8:
		*(uint8_t *)p = (uint8_t)raw;
		break;
	case COLL_INT32: case COLL_UINT32:
		*(uint32_t *)p = (uint32_t)raw;
		break;
	case COLL_INT64: case COLL_UINT64:
		*(uint64_t *)p = raw;
		break;
	case COLL_FP16:
		*(uint16_t *)p = f32_to_f16_exact((float)v);
		break;
	case COLL_BF16:
		*(uint16_t *)p = f32_to_bf16_exact((float)v);
		break;
	case COLL_FP32:
		*(float *)p = (float)v;
		break;
	case COLL_FP64:
		*(double *)p = v;
		break;
	}
}

/* Input element as its bits (for integers) and value. */
static void input(uint64_t seed, int k, int dtype, int op, int rank,
		  int block, uint64_t i, uint64_t *raw, double *v)
{
	*v = in_value(seed, k, dtype, op, rank, block, i);
	if (!is_float(dtype) && op != COLL_PROD)
		*raw = mix(seed ^ mix(((uint64_t)k << 40) ^
				      ((uint64_t)rank << 28) ^
				      ((uint64_t)block << 20) ^ i));
	else
		*raw = (uint64_t)(int64_t)*v;
}

static uint64_t bits_of(int dtype, const void *p)
{
	switch (coll_dtype_size(dtype)) {
	case 1: return *(const uint8_t *)p;
	case 2: return *(const uint16_t *)p;
	case 4: return *(const uint32_t *)p;
	default: return *(const uint64_t *)p;
	}
}

static double float_of(int dtype, const void *p)
{
	switch (dtype) {
	case COLL_FP16: return f16_to_f32(*(const uint16_t *)p);
	case COLL_BF16: return bf16_to_f32(*(const uint16_t *)p);
	case COLL_FP32: return *(const float *)p;
	default: return *(const double *)p;
	}
}

/* Integer reduction in the element type (wrapping; signed where signed). */
static uint64_t ireduce(int dtype, int op, uint64_t a, uint64_t b)
{
	int bits = 8 * (int)coll_dtype_size(dtype);
	uint64_t mask = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
	bool sgn = dtype == COLL_INT8 || dtype == COLL_INT32 ||
		   dtype == COLL_INT64;
	int64_t sa, sb;

	a &= mask;
	b &= mask;
	sa = sgn && bits < 64 && (a >> (bits - 1)) ? (int64_t)(a | ~mask) : (int64_t)a;
	sb = sgn && bits < 64 && (b >> (bits - 1)) ? (int64_t)(b | ~mask) : (int64_t)b;
	switch (op) {
	case COLL_SUM: case COLL_AVG: return (a + b) & mask;
	case COLL_PROD: return (a * b) & mask;
	case COLL_MIN: return (sgn ? (sa < sb) : (a < b)) ? a : b;
	default: return (sgn ? (sa > sb) : (a > b)) ? a : b;
	}
}

static uint64_t idiv(int dtype, uint64_t v, int n)
{
	int bits = 8 * (int)coll_dtype_size(dtype);
	uint64_t mask = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
	bool sgn = dtype == COLL_INT8 || dtype == COLL_INT32 ||
		   dtype == COLL_INT64;

	v &= mask;
	if (sgn) {
		int64_t s = bits < 64 && (v >> (bits - 1)) ? (int64_t)(v | ~mask) :
			    (int64_t)v;

		return (uint64_t)(s / n) & mask;
	}
	return (v / (uint64_t)n) & mask;
}

/* ---- one case on one rank ---------------------------------------------------- */

struct ctx {
	const struct opts *o;
	coll_comm_t *comm;
	int rank, n;
};

static bool prim_reduces(int p)
{
	return p == COLL_ALLREDUCE || p == COLL_REDUCE ||
	       p == COLL_REDUCESCATTER;
}

static bool prim_rooted(int p)
{
	return p == COLL_REDUCE || p == COLL_BROADCAST || p == COLL_SCATTER ||
	       p == COLL_GATHER;
}

/* Elements of rank r's send and receive buffers. */
static void buf_elems(int prim, int n, int root, int r, uint64_t c,
		      uint64_t *se, uint64_t *re)
{
	uint64_t all = c * (uint64_t)n;

	switch (prim) {
	case COLL_ALLREDUCE: *se = c; *re = c; break;
	case COLL_REDUCE: *se = c; *re = r == root ? c : 0; break;
	case COLL_REDUCESCATTER: *se = all; *re = c; break;
	case COLL_ALLGATHER: *se = c; *re = all; break;
	case COLL_BROADCAST: *se = r == root ? c : 0; *re = c; break;
	case COLL_SCATTER: *se = r == root ? all : 0; *re = c; break;
	case COLL_GATHER: *se = c; *re = r == root ? all : 0; break;
	case COLL_ALLTOALL: *se = all; *re = all; break;
	default: *se = *re = 0; break;
	}
}

/* Fill rank @r's send buffer: block b of a buffer of n blocks is block b. */
static void fill_send(const struct ctx *c, int k, int prim, int dtype, int op,
		      uint8_t *s, uint64_t se, uint64_t count)
{
	size_t es = coll_dtype_size(dtype);
	uint64_t i;

	for (i = 0; i < se; i++) {
		int b = count ? (int)(i / count) : 0;
		uint64_t raw;
		double v;

		input(c->o->seed, k, dtype, op, c->rank, b, count ? i % count : i,
		      &raw, &v);
		encode(dtype, v, raw, s + i * es);
	}
	(void)prim;
}

/*
 * What element @i of rank @r's receive buffer must be: the reduction of
 * (block, index) over every rank, or one rank's input element.
 */
static bool check_elem(const struct ctx *c, int k, int prim, int dtype,
		       int op, int root, uint64_t count, uint64_t i,
		       const uint8_t *got, char *why, size_t wl)
{
	uint64_t raw, acc = 0;
	double v, fa = 0;
	int src = 0, blk = 0, j;
	uint64_t idx = i;

	switch (prim) {
	case COLL_ALLREDUCE: case COLL_REDUCE:
		blk = 0;
		break;
	case COLL_REDUCESCATTER:
		blk = c->rank;
		break;
	case COLL_ALLGATHER: case COLL_GATHER:
		src = (int)(i / count);
		idx = i % count;
		break;
	case COLL_BROADCAST:
		src = root;
		break;
	case COLL_SCATTER:
		src = root;
		blk = c->rank;
		break;
	case COLL_ALLTOALL:
		src = (int)(i / count);
		blk = c->rank;
		idx = i % count;
		break;
	}
	if (!prim_reduces(prim)) {
		uint8_t want[8] = { 0 };
		uint64_t g = bits_of(dtype, got), w;

		input(c->o->seed, k, dtype, op, src, blk, idx, &raw, &v);
		encode(dtype, v, raw, want);
		w = bits_of(dtype, want);
		if (g == w)
			return true;
		snprintf(why, wl, "[%llu] got %#llx want %#llx (rank %d block %d)",
			 (unsigned long long)i, (unsigned long long)g,
			 (unsigned long long)w, src, blk);
		return false;
	}
	for (j = 0; j < c->n; j++) {
		input(c->o->seed, k, dtype, op, j, blk, idx, &raw, &v);
		if (is_float(dtype)) {
			if (!j)
				fa = v;
			else if (op == COLL_SUM || op == COLL_AVG)
				fa += v;
			else if (op == COLL_PROD)
				fa *= v;
			else if (op == COLL_MIN)
				fa = v < fa ? v : fa;
			else
				fa = v > fa ? v : fa;
		} else {
			acc = j ? ireduce(dtype, op, acc, raw) : raw;
		}
	}
	if (is_float(dtype)) {
		double g = float_of(dtype, got), tol = 0;

		if (op == COLL_AVG) {
			fa /= c->n;
			tol = dtype == COLL_FP64 ? 1e-12 : dtype == COLL_FP32 ?
			      1e-6 : dtype == COLL_FP16 ? 2e-3 : 1e-2;
		}
		if (fabs(g - fa) <= tol * (fabs(fa) > 1 ? fabs(fa) : 1))
			return true;
		snprintf(why, wl, "[%llu] got %g want %g", (unsigned long long)i,
			 g, fa);
		return false;
	}
	if (op == COLL_AVG)
		acc = idiv(dtype, acc, c->n);
	{
		int bits = 8 * (int)coll_dtype_size(dtype);
		uint64_t mask = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
		uint64_t g = bits_of(dtype, got);

		if (g == (acc & mask))
			return true;
		snprintf(why, wl, "[%llu] got %#llx want %#llx",
			 (unsigned long long)i, (unsigned long long)g,
			 (unsigned long long)(acc & mask));
	}
	return false;
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* A case's buffers on one rank: send filled, receive poisoned. */
struct cbufs {
	uint8_t *s, *r;
	uint64_t se, re;
	size_t es;
};

static int case_bufs(const struct ctx *c, int k, int prim, int dtype, int op,
		     int root, uint64_t count, struct cbufs *b)
{
	b->es = coll_dtype_size(dtype);
	buf_elems(prim, c->n, root, c->rank, count, &b->se, &b->re);
	b->s = map(b->se * b->es + 2 * GUARD);
	b->r = map(b->re * b->es + 2 * GUARD);
	if (!b->s || !b->r)
		return -ENOMEM;
	memset(b->r, 0xa5, b->re * b->es + 2 * GUARD);
	fill_send(c, k, prim, dtype, op, b->s + GUARD, b->se, count);
	return 0;
}

static void case_unmap(struct cbufs *b)
{
	if (b->s)
		munmap(b->s, b->se * b->es + 2 * GUARD);
	if (b->r)
		munmap(b->r, b->re * b->es + 2 * GUARD);
}

static int case_submit(const struct ctx *c, int prim, int dtype, int op,
		       int root, int algo, uint64_t count,
		       const struct cbufs *b)
{
	coll_comm_set_algo(c->comm, algo);
	return coll_submit(c->comm, prim, b->se ? b->s + GUARD : NULL,
			   b->re ? b->r + GUARD : NULL, count,
			   prim == COLL_BARRIER ? 0 : dtype,
			   prim_reduces(prim) ? op : 0,
			   prim_rooted(prim) ? root : 0, 0, NULL);
}

/* Every received element and the guards; 0 or res->err. */
static int case_check(const struct ctx *c, int k, int prim, int dtype, int op,
		      int root, uint64_t count, const struct cbufs *b,
		      struct result *res)
{
	uint64_t i;

	for (i = 0; i < b->re; i++) {
		if (!check_elem(c, k, prim, dtype, op, root, count, i,
				b->r + GUARD + i * b->es, res->what,
				sizeof(res->what)))
			return res->err = 1000;
	}
	if (st_find_not(b->r, 0xa5, GUARD) != GUARD ||
	    st_find_not(b->r + GUARD + b->re * b->es, 0xa5, GUARD) != GUARD) {
		snprintf(res->what, sizeof(res->what), "guard bytes written");
		return res->err = 1001;
	}
	return 0;
}

static int run_case(const struct ctx *c, int k, int prim, int dtype, int op,
		    int root, int algo, uint64_t count, struct result *res)
{
	struct cbufs b = { 0 };
	int64_t t0;
	int r;

	if (case_bufs(c, k, prim, dtype, op, root, count, &b)) {
		case_unmap(&b);
		return -ENOMEM;
	}
	t0 = st_now_ns();
	r = case_submit(c, prim, dtype, op, root, algo, count, &b);
	res->usec = (st_now_ns() - t0) / 1000;
	if (r) {
		res->err = 1 - r;
		snprintf(res->what, sizeof(res->what), "%s", coll_strerror(r));
	} else {
		case_check(c, k, prim, dtype, op, root, count, &b, res);
	}
	case_unmap(&b);
	return 0;
}

/* The list of cases, the same on every host and every rank. */
struct casedef {
	int prim, dtype, op, root, algo;
	uint64_t count;
};

static int make_cases(const struct opts *o, int n, struct casedef *cs)
{
	int nc = 0, p, si, ai, rot = 0;

	for (p = 0; p < COLL_PRIM_MAX; p++) {
		for (si = 0; si < o->nsizes; si++) {
			for (ai = 0; ai < o->nalgos; ai++) {
				struct casedef *d = &cs[nc];
				int dt = dtypes[rot % 10];
				uint64_t cnt = o->sizes[si];

				if (nc == MAX_CASES)
					return nc;
				/* elsewhere TREE and HIER are DIRECT */
				if ((o->algos[ai] == COLL_ALGO_TREE &&
				     p != COLL_ALLREDUCE && p != COLL_BROADCAST) ||
				    (o->algos[ai] == COLL_ALGO_HIER &&
				     p != COLL_ALLREDUCE && p != COLL_BROADCAST &&
				     p != COLL_ALLGATHER))
					continue;
				d->prim = p;
				d->algo = o->algos[ai];
				d->dtype = p == COLL_BARRIER ? COLL_INT8 : dt;
				d->op = prim_reduces(p) ? (rot / 3) % COLL_REDOP_MAX : 0;
				d->root = prim_rooted(p) ? (rot * 7 + 1) % n : 0;
				/* ~the byte size asked for, whatever the type */
				d->count = p == COLL_BARRIER ? 0 :
					   cnt > 1 ? cnt * 4 / coll_dtype_size(dt) + 1 :
					   cnt;
				if (p == COLL_REDUCESCATTER || p == COLL_ALLGATHER ||
				    p == COLL_SCATTER || p == COLL_GATHER ||
				    p == COLL_ALLTOALL)
					d->count = d->count > 1 ?
						   d->count / n + 1 : d->count;
				rot++;
				nc++;
				if (p == COLL_BARRIER)
					break;
			}
			if (p == COLL_BARRIER)
				break;
		}
	}
	return nc;
}

static void case_name(const struct casedef *d, int n, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s %s count=%llu root=%d algo=%s ranks=%d",
		 coll_prim_name(d->prim), coll_dtype_name(d->dtype),
		 prim_reduces(d->prim) ? coll_redop_name(d->op) : "-",
		 (unsigned long long)d->count, d->root, coll_algo_name(d->algo),
		 n);
}

#define GROUP_SMALL	40	/* AllReduces of 1024 int32 added: fused */
#define GROUP_MAX	(GROUP_SMALL + 40)

/*
 * Groups across hosts (COLL_GROUP): the cases of at most 1100 elements (40
 * at most, every primitive) and GROUP_SMALL AllReduces of 1024 int32 (fused
 * into one collective) in one group, each checked as a case is; then the
 * same group with the last rank's first fused AllReduce one element
 * shorter: EPROTO on every rank and nothing written; then the first group
 * again.  Writes the first failure to @bad (empty if none).
 */
static void group_case(const struct ctx *c, const struct casedef *cs, int nc,
		       char *bad, size_t bl)
{
	struct casedef g[GROUP_MAX];
	struct cbufs b[GROUP_MAX];
	int kk[GROUP_MAX], n = 0, i, round, r;
	struct result res;

	for (i = 0; i < nc && n < GROUP_MAX - GROUP_SMALL; i++) {
		if (cs[i].count > 1100)
			continue;
		g[n] = cs[i];
		kk[n++] = i;
	}
	for (i = 0; i < GROUP_SMALL; i++, n++) {
		g[n] = (struct casedef){ .prim = COLL_ALLREDUCE,
					 .dtype = COLL_INT32, .op = COLL_SUM,
					 .algo = COLL_ALGO_AUTO, .count = 1024 };
		kk[n] = MAX_CASES + i;
	}
	bad[0] = 0;
	for (round = 0; round < 3 && !bad[0]; round++) {
		bool differ = round == 1;

		memset(b, 0, sizeof(b));
		for (i = 0; i < n; i++) {
			if (case_bufs(c, kk[i], g[i].prim, g[i].dtype, g[i].op,
				      g[i].root, g[i].count, &b[i])) {
				snprintf(bad, bl, "out of memory");
				goto out_unmap;
			}
		}
		r = coll_group_start(c->comm);
		for (i = 0; i < n && !r; i++)
			r = case_submit(c, g[i].prim, g[i].dtype, g[i].op,
					g[i].root, g[i].algo, g[i].count -
					(differ && c->rank == c->n - 1 &&
					 i == n - GROUP_SMALL), &b[i]);
		if (!r)
			r = coll_group_end(c->comm, 0);
		if (r != (differ ? -EPROTO : 0)) {
			snprintf(bad, bl, "round %d: %s", round,
				 coll_strerror(r));
			goto out_unmap;
		}
		for (i = 0; i < n && !bad[0]; i++) {
			size_t len = b[i].re * b[i].es + 2 * GUARD;

			memset(&res, 0, sizeof(res));
			if (differ && st_find_not(b[i].r, 0xa5, len) != len)
				snprintf(bad, bl, "op %d written after EPROTO",
					 i);
			else if (!differ &&
				 case_check(c, kk[i], g[i].prim, g[i].dtype,
					    g[i].op, g[i].root, g[i].count,
					    &b[i], &res))
				snprintf(bad, bl, "round %d op %d: %s", round,
					 i, res.what);
		}
out_unmap:
		for (i = 0; i < n; i++)
			case_unmap(&b[i]);
	}
}

static const char *transport_name(unsigned int t)
{
	switch (t) {
	case COLL_TRANSPORT_SELF: return "self";
	case COLL_TRANSPORT_RDMA: return "rdma";
	case COLL_TRANSPORT_TCP: return "tcp";
	default: return "none";
	}
}

/*
 * What COLL_COMM_QUERY must say here: this rank and host, every host with
 * @o->local ranks, itself by "self" and the others by the transport
 * expected.  Writes the first disagreement to @bad (empty if none).
 */
static void check_topology(const struct opts *o, int rank, int r,
			   const struct coll_comm_query *q,
			   const struct coll_peer_info *pi, char *bad,
			   size_t len)
{
	int h;

	bad[0] = 0;
	if (r) {
		snprintf(bad, len, "COLL_COMM_QUERY: %s", coll_strerror(r));
		return;
	}
	if (q->out_rank != (unsigned int)rank ||
	    q->out_nranks != (unsigned int)(o->nnodes * o->local) ||
	    q->out_host != (unsigned int)o->node ||
	    q->out_nhosts != (unsigned int)o->nnodes) {
		snprintf(bad, len, "rank %u/%u host %u/%u, not %d/%d %d/%d",
			 q->out_rank, q->out_nranks, q->out_host,
			 q->out_nhosts, rank, o->nnodes * o->local, o->node,
			 o->nnodes);
		return;
	}
	for (h = 0; h < o->nnodes && h < 16; h++) {
		unsigned int want = h == o->node ? COLL_TRANSPORT_SELF :
				    (unsigned int)o->expect;

		if (pi[h].nranks != (unsigned int)o->local ||
		    (o->expect >= 0 && pi[h].transport != want)) {
			snprintf(bad, len, "host %d: %s with %u ranks, not %s with %d",
				 h, transport_name(pi[h].transport),
				 pi[h].nranks, transport_name(want), o->local);
			return;
		}
	}
}

/*
 * Over RDMA, grants for zero-copy reads take their memory regions from the
 * device's pool: after a warm-up, a loop of large AllReduces that reuses
 * its buffers allocates (almost) no region and reuses many (COLL_INFO,
 * module-wide: the other local ranks' grants count too, all in the same
 * steady state).  Each call's result is checked.
 */
static void pool_case(const struct ctx *c, char *why, size_t wl,
		      char *seen, size_t sl)
{
	int32_t *s = map(POOL_COUNT * 4), *d = map(POOL_COUNT * 4);
	struct coll_info a = { .size = sizeof(a) }, b = { .size = sizeof(b) };
	int32_t want = c->n * (c->n + 1) / 2;
	uint64_t allocs, reuses;
	int i, j, r = 0;

	snprintf(why, wl, "no memory");
	if (!s || !d)
		goto out;
	for (j = 0; j < POOL_COUNT; j++)
		s[j] = c->rank + 1;
	coll_comm_set_algo(c->comm, COLL_ALGO_AUTO);
	for (i = 0; i < POOL_WARM + POOL_CALLS && !r; i++) {
		if (i == POOL_WARM && coll_get_info(&a))
			break;
		memset(d, 0, POOL_COUNT * 4);
		r = coll_allreduce(c->comm, s, d, POOL_COUNT, COLL_INT32,
				   COLL_SUM);
		for (j = 0; !r && j < POOL_COUNT; j++)
			if (d[j] != want) {
				snprintf(why, wl, "call %d: [%d] got %d want %d",
					 i, j, d[j], want);
				goto out;
			}
	}
	if (r) {
		snprintf(why, wl, "call %d: %s", i, coll_strerror(r));
		goto out;
	}
	if (i < POOL_WARM + POOL_CALLS || coll_get_info(&b)) {
		snprintf(why, wl, "COLL_INFO failed");
		goto out;
	}
	allocs = b.out_mr_allocs - a.out_mr_allocs;
	reuses = b.out_mr_reuses - a.out_mr_reuses;
	if (seen)
		snprintf(seen, sl, "%llu regions allocated, %llu reused in %d calls (%llu allocated since load)",
			 (unsigned long long)allocs,
			 (unsigned long long)reuses, POOL_CALLS,
			 (unsigned long long)b.out_mr_allocs);
	if (reuses < POOL_CALLS || allocs * 4 > reuses)
		snprintf(why, wl, "%llu regions allocated, %llu reused in %d calls",
			 (unsigned long long)allocs,
			 (unsigned long long)reuses, POOL_CALLS);
	else
		why[0] = 0;
out:
	if (s)
		munmap(s, POOL_COUNT * 4);
	if (d)
		munmap(d, POOL_COUNT * 4);
}

/* COLL_COMM_QUERY: --expect-qps queue pairs to every other host. */
static void check_qps(const struct opts *o, const struct ctx *c, char *bad,
		      size_t len)
{
	struct coll_peer_info pi[16];
	struct coll_comm_query q;
	int h, r;

	r = coll_comm_query(c->comm, &q, pi, 16);
	if (r) {
		snprintf(bad, len, "COLL_COMM_QUERY: %s", coll_strerror(r));
		return;
	}
	for (h = 0; h < o->nnodes && h < 16; h++) {
		if (h != o->node && pi[h].qps != (unsigned int)o->expect_qps) {
			snprintf(bad, len, "host %d: %u queue pairs", h,
				 pi[h].qps);
			return;
		}
	}
	bad[0] = 0;
}

static int rank_main(int local, void *arg)
{
	struct shm *sh = arg;
	const struct opts *o = (const struct opts *)(sh + 1);
	struct casedef *cs = calloc(MAX_CASES, sizeof(*cs));
	struct ctx c = { .o = o };
	struct coll_comm_query q;
	struct coll_peer_info pi[16];
	coll_id_t id;
	int nc, k, r;
	size_t off = 0;
	unsigned int h;

	if (!cs)
		return 2;
	nc = make_cases(o, o->nnodes * o->local, cs);
	for (k = 0; k < nc; k++)
		sh->res[k][local].err = -1;	/* not run */
	snprintf(sh->topo_bad[local], sizeof(sh->topo_bad[local]),
		 "did not join");
	c.n = o->nnodes * o->local;
	c.rank = o->node * o->local + local;
	r = coll_id_from_str(&id, getenv("COLL_ID"));
	if (r)
		return 3;
	r = coll_comm_init_root(&c.comm, c.n, c.rank, &id, o->root,
				o->timeout_ms, o->flags);
	if (r) {
		snprintf(sh->topo[local], sizeof(sh->topo[local]),
			 "join: %s", coll_strerror(r));
		return 4;
	}
	r = coll_comm_query(c.comm, &q, pi, 16);
	check_topology(o, c.rank, r, &q, pi, sh->topo_bad[local],
		       sizeof(sh->topo_bad[local]));
	if (!r) {
		off += snprintf(sh->topo[local] + off, sizeof(sh->topo[0]) - off,
				"rank %d/%u host %u/%u:", q.out_rank,
				q.out_nranks, q.out_host, q.out_nhosts);
		for (h = 0; h < q.out_nhosts && h < 16; h++)
			off += snprintf(sh->topo[local] + off,
					off < sizeof(sh->topo[0]) ?
					sizeof(sh->topo[0]) - off : 0,
					" host%u=%s(%u ranks)", h,
					transport_name(pi[h].transport),
					pi[h].nranks);
	}
	nc = make_cases(o, c.n, cs);
	for (k = 0; k < nc; k++)
		sh->res[k][local].err = -1;	/* not run */
	for (k = 0; k < nc; k++) {
		sh->res[k][local].err = 0;
		r = run_case(&c, k, cs[k].prim, cs[k].dtype, cs[k].op,
			     cs[k].root, cs[k].algo, cs[k].count,
			     &sh->res[k][local]);
		if (r)
			sh->res[k][local].err = 2000;
		/* a failed call kills the communicator only if it says so */
		if (sh->res[k][local].err == 1 + ECONNRESET)
			break;
	}
	snprintf(sh->group[local], sizeof(sh->group[local]), "not run");
	if (k == nc)
		group_case(&c, cs, nc, sh->group[local],
			   sizeof(sh->group[local]));
	/* after the cases: every data channel had time to come up */
	snprintf(sh->qps_bad[local], sizeof(sh->qps_bad[local]), "not run");
	if (o->expect_qps && k == nc)
		check_qps(o, &c, sh->qps_bad[local], sizeof(sh->qps_bad[local]));
	snprintf(sh->pool[local], sizeof(sh->pool[local]), "not run");
	if (o->expect == COLL_TRANSPORT_RDMA && k == nc)
		pool_case(&c, sh->pool[local], sizeof(sh->pool[local]),
			  local ? NULL : sh->pool_seen, sizeof(sh->pool_seen));
	coll_comm_destroy(c.comm);
	free(cs);
	return 0;
}

static int parse_sizes(struct opts *o, const char *s)
{
	char *dup = strdup(s), *tok, *save = NULL;

	o->nsizes = 0;
	for (tok = strtok_r(dup, ",", &save); tok && o->nsizes < 8;
	     tok = strtok_r(NULL, ",", &save))
		o->sizes[o->nsizes++] = strtoull(tok, NULL, 0);
	free(dup);
	return o->nsizes ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "nnodes", required_argument, NULL, 'H' },
		{ "node", required_argument, NULL, 'I' },
		{ "local", required_argument, NULL, 'L' },
		{ "root", required_argument, NULL, 'R' },
		{ "transport", required_argument, NULL, 'T' },
		{ "sizes", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 's' },
		{ "algos", required_argument, NULL, 'A' },
		{ "expect-transport", required_argument, NULL, 'E' },
		{ "expect-qps", required_argument, NULL, 'Q' },
		{ 0 }
	};
	struct shm *sh;
	struct opts *o;
	struct casedef *cs;
	struct st_ranks rk;
	int opt, nc, k, l, bad, failed = 0;

	sh = mmap(NULL, sizeof(*sh) + sizeof(*o), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 2;
	o = (struct opts *)(sh + 1);
	o->nnodes = 1;
	o->local = 1;
	o->seed = 0x5eed;
	o->timeout_ms = 60000;
	o->expect = -1;
	parse_sizes(o, "0,1,1001,262147");
	o->nalgos = 0;
	for (k = 0; k < COLL_ALGO_MAX && k < 8; k++)
		o->algos[o->nalgos++] = k;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'H': o->nnodes = atoi(optarg); break;
		case 'I': o->node = atoi(optarg); break;
		case 'L': o->local = atoi(optarg); break;
		case 'R': o->root = optarg; break;
		case 'T':
			o->flags = !strcmp(optarg, "tcp") ? COLL_COMM_F_TCP :
				   !strcmp(optarg, "rdma") ?
				   COLL_COMM_F_REQUIRE_RDMA : 0;
			break;
		case 'S':
			if (parse_sizes(o, optarg))
				return 2;
			break;
		case 's': o->seed = strtoull(optarg, NULL, 16); break;
		case 'Q': o->expect_qps = atoi(optarg); break;
		case 'E':
			o->expect = !strcmp(optarg, "tcp") ? COLL_TRANSPORT_TCP :
				    !strcmp(optarg, "rdma") ?
				    COLL_TRANSPORT_RDMA : -1;
			break;
		case 'A': {
			char *dup = strdup(optarg), *tok, *save = NULL;

			o->nalgos = 0;
			for (tok = strtok_r(dup, ",", &save); tok && o->nalgos < 8;
			     tok = strtok_r(NULL, ",", &save))
				o->algos[o->nalgos++] = coll_algo_from_name(tok);
			free(dup);
			break;
		}
		default:
			return 2;
		}
	}
	if (!o->root || o->local < 1 || o->local > MAX_LOCAL ||
	    o->node >= o->nnodes) {
		fprintf(stderr, "usage: coll_hosts --nnodes H --node I --local L --root ADDR:PORT\n");
		return 2;
	}
	cs = calloc(MAX_CASES, sizeof(*cs));
	nc = make_cases(o, o->nnodes * o->local, cs);
	printf("TAP version 13\n1..%d\n",
	       nc + 2 + (o->expect == COLL_TRANSPORT_RDMA) + !!o->expect_qps);
	fflush(stdout);
	if (st_ranks_spawn(&rk, o->local, rank_main, sh))
		return 2;
	bad = st_ranks_wait(&rk, 1500000, 60000);
	for (l = 0; l < o->local; l++)
		printf("# node %d local %d: %s\n", o->node, l, sh->topo[l]);
	for (k = 0; k < nc; k++) {
		char name[128];
		int64_t us = 0;
		const struct result *first = NULL;

		case_name(&cs[k], o->nnodes * o->local, name, sizeof(name));
		for (l = 0; l < o->local; l++) {
			if (sh->res[k][l].err && !first)
				first = &sh->res[k][l];
			if (sh->res[k][l].usec > us)
				us = sh->res[k][l].usec;
		}
		if (first && first->err == -1) {
			printf("not ok %d %s # not run\n", k + 1, name);
			failed++;
		} else if (first) {
			printf("not ok %d %s # %s\n", k + 1, name, first->what);
			failed++;
		} else {
			printf("ok %d %s # %lld us\n", k + 1, name, (long long)us);
		}
	}
	for (l = 0; l < o->local && !sh->topo_bad[l][0]; l++)
		;
	if (l < o->local)
		failed++;
	printf("%s %d topology: COLL_COMM_QUERY on every rank%s%s",
	       l < o->local ? "not ok" : "ok", nc + 1,
	       o->expect >= 0 ? ", transport " : "",
	       o->expect >= 0 ? transport_name(o->expect) : "");
	if (l < o->local)
		printf(" # local %d: %s", l, sh->topo_bad[l]);
	printf("\n");
	for (l = 0; l < o->local && !sh->group[l][0]; l++)
		;
	if (l < o->local)
		failed++;
	printf("%s %d group: %d small AllReduces fused, the small cases, a group that disagrees%s%s\n",
	       l < o->local ? "not ok" : "ok", nc + 2, GROUP_SMALL,
	       l < o->local ? " # " : "", l < o->local ? sh->group[l] : "");
	if (o->expect == COLL_TRANSPORT_RDMA) {
		for (l = 0; l < o->local && !sh->pool[l][0]; l++)
			;
		if (l < o->local)
			failed++;
		printf("%s %d mr pool: steady state allocates no region # %s\n",
		       l < o->local ? "not ok" : "ok", nc + 3,
		       l < o->local ? sh->pool[l] : sh->pool_seen);
	}
	if (o->expect_qps) {
		for (l = 0; l < o->local && !sh->qps_bad[l][0]; l++)
			;
		if (l < o->local)
			failed++;
		printf("%s %d queue pairs: %d to every peer host%s%s\n",
		       l < o->local ? "not ok" : "ok",
		       nc + 3 + (o->expect == COLL_TRANSPORT_RDMA),
		       o->expect_qps, l < o->local ? " # " : "",
		       l < o->local ? sh->qps_bad[l] : "");
	}
	if (bad)
		printf("# %d local rank(s) did not exit cleanly\n", bad);
	free(cs);
	return failed || bad ? 1 : 0;
}
