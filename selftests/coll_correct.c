// SPDX-License-Identifier: GPL-2.0
/*
 * coll_correct: results of every primitive, through libcollective.
 *
 * Each test forks nranks rank processes (FIXTURE_VARIANT: 1, 2, 3, 4, 8).
 * Every rank joins a communicator with an id drawn by the test process and
 * runs a sweep: every data type x every reduction op (reducing primitives)
 * x sizes {0, 1, 1001, 4099 (buffers at odd byte offsets from a page, so
 * elements straddle pages), big}, where "big" is the smallest count whose
 * largest buffer on a rank is >= 1 MiB, plus 3 (for AllReduce that is
 * 1 MiB / esize + 3; for the primitives whose buffers hold count * nranks
 * elements it is 1 MiB / esize / nranks + 3).  AllReduce adds 64 MiB of
 * fp32 and int32 SUM with every algorithm for nranks 2 and 4.  The
 * algorithm, in-place layout, root and whether an unused buffer is passed
 * as NULL rotate with the call number, so every (primitive, dtype, op,
 * size) runs once and the other parameters are spread over them.
 *
 * Inputs.  Element j of chunk c of rank q's send buffer (chunks are the
 * count-sized pieces of a count * nranks buffer) is a function of (seed,
 * call, q, c, j % PERIOD).  Reducing the inputs of all ranks costs nranks
 * element generations per element, which would dominate the run time in a
 * TCG guest, so inputs repeat with a prime period of PERIOD elements: the
 * reference is computed for one period and the output compared period by
 * period (an element moved by a multiple of PERIOD would go unnoticed;
 * sizes up to 4099 do not repeat at all).
 *
 * Values are chosen so that results are exact:
 *  - integers: SUM, MIN, MAX, AVG take the full range of the type (sums
 *    wrap in the element type, which is the defined behaviour; AVG is that
 *    wrapped sum divided by nranks, truncated toward zero); PROD takes
 *    {-3,-2,-1,1,2,3} (products wrap too).
 *  - floating point: SUM and AVG take integers in [-8, 8], PROD takes
 *    {-2,-1,-0.5,0.5,1,2}, MIN and MAX integers in [-100, 100]: every
 *    partial result is exact even in bf16 (8 significant bits), so SUM,
 *    PROD, MIN and MAX are compared exactly.  AVG is compared with
 *    |got - ref| <= tol * max(1, |ref|), tol per type: fp64 1e-12,
 *    fp32 1e-6, fp16 2e-3, bf16 1e-2 (one rounding of sum / nranks).
 *  - data movement (no op): every bit pattern, NaNs included, compared
 *    bit for bit.
 *
 * Each rank checks its own receive buffer against the reference, that the
 * 256 bytes before and after every buffer it passed are untouched, that
 * its send buffer is unchanged (out of place; in place where the send data
 * is not overwritten: Reduce at a non-root, Scatter at the root), and that
 * a buffer it does not use (Reduce/Gather recvbuf at a non-root,
 * Broadcast/Scatter sendbuf at a non-root) is untouched.  In-place
 * ReduceScatter: only the rank's own chunk of the send buffer is checked
 * (NCCL leaves the rest unspecified).
 *
 * The matrix tests (nranks 3 and 4) do not rotate: for one primitive they
 * run every algorithm (ring, direct, naive, auto) x in place and out of
 * place x every root (rooted primitives) x {fp32 sum, int32 max}
 * (reducing primitives; fp32 for the others) x sizes {1, 1001, 4099},
 * with the offsets of the sweep for those sizes.  Only whether an unused
 * buffer is passed as NULL still rotates.
 *
 * COLL_SEED=<hex> repeats a run; COLL_CORRECT_BIG=0 skips the 64 MiB part.
 * COLL_CORRECT_MAXBYTES=<n> (for slow debug kernels) makes "big" n bytes
 * instead of 1 MiB, and skips the 64 MiB part when n < 64 MiB; the fixed
 * sizes 0, 1, 1001 and 4099 are kept.
 */
#include <math.h>

#include "coll_selftest.h"
#include <libcollective.h>
#include "kselftest_harness.h"

#define PERIOD		16381		/* prime */
#define GUARD		256		/* bytes checked on each side */
#define PAGE		4096UL
#define POISON_RECV	0xa5
#define POISON_UNUSED	0x3c
#define MAX_REPORT	4		/* wrong elements printed per buffer */
#define BIG_BYTES	(1UL << 20)
#define HUGE_BYTES	(64UL << 20)
#define JOIN_TIMEOUT_MS	60000
#define OOB_TIMEOUT_MS	120000
#define RANKS_TIMEOUT_MS 280000		/* below the harness timeout */
#define TEST_TIMEOUT_S	300
#define NB_ROUNDS	4
#define NBARRIERS	64

static const char *const prim_names[COLL_PRIM_MAX] = {
	"allreduce", "reduce", "reducescatter", "allgather", "broadcast",
	"scatter", "gather", "alltoall", "barrier",
};
static const char *const op_names[COLL_REDOP_MAX] = {
	"sum", "prod", "min", "max", "avg",
};
static const char *const algo_names[COLL_ALGO_MAX] = {
	"auto", "ring", "direct", "naive",
};

struct dtinfo {
	const char *name;
	unsigned int es;
	bool fp;
	bool sgn;
	double avg_tol;		/* relative bound for AVG, floats */
};

static const struct dtinfo dts[COLL_DTYPE_MAX] = {
	[COLL_INT8]   = { "int8",   1, false, true,  0 },
	[COLL_UINT8]  = { "uint8",  1, false, false, 0 },
	[COLL_INT32]  = { "int32",  4, false, true,  0 },
	[COLL_UINT32] = { "uint32", 4, false, false, 0 },
	[COLL_INT64]  = { "int64",  8, false, true,  0 },
	[COLL_UINT64] = { "uint64", 8, false, false, 0 },
	[COLL_FP16]   = { "fp16",   2, true,  true,  2e-3 },
	[COLL_BF16]   = { "bf16",   2, true,  true,  1e-2 },
	[COLL_FP32]   = { "fp32",   4, true,  true,  1e-6 },
	[COLL_FP64]   = { "fp64",   8, true,  true,  1e-12 },
};

static bool prim_reduces(int prim)
{
	return prim == COLL_ALLREDUCE || prim == COLL_REDUCE ||
	       prim == COLL_REDUCESCATTER;
}

static bool prim_rooted(int prim)
{
	return prim == COLL_REDUCE || prim == COLL_BROADCAST ||
	       prim == COLL_SCATTER || prim == COLL_GATHER;
}

/* Primitives whose largest buffer holds count * nranks elements. */
static bool prim_multiplies(int prim)
{
	return prim == COLL_REDUCESCATTER || prim == COLL_ALLGATHER ||
	       prim == COLL_SCATTER || prim == COLL_GATHER ||
	       prim == COLL_ALLTOALL;
}

/* ---- half and bfloat16 ------------------------------------------------ */

static uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static float bits_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* Round to nearest even, like the hardware conversions. */
static uint16_t f32_to_f16(float f)
{
	uint32_t x = f32_bits(f);
	uint32_t sign = (x >> 16) & 0x8000;
	uint32_t exp = (x >> 23) & 0xff;
	uint32_t mant = x & 0x7fffff;
	int e;

	if (exp == 0xff)			/* inf, nan (keep it a nan) */
		return sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0);
	e = (int)exp - 127 + 15;
	if (e >= 0x1f)
		return sign | 0x7c00;
	if (e <= 0) {				/* subnormal half or zero */
		uint32_t shift, h, rem, halfway;

		if (e < -10)
			return sign;
		mant |= 0x800000;
		shift = 14 - e;
		h = mant >> shift;
		rem = mant & ((1u << shift) - 1);
		halfway = 1u << (shift - 1);
		if (rem > halfway || (rem == halfway && (h & 1)))
			h++;
		return sign | h;
	} else {
		uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13);
		uint32_t rem = mant & 0x1fff;

		if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
			h++;			/* may carry into the exponent */
		return h;
	}
}

static float f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff;

	if (exp == 0) {
		int e = -14;

		if (!mant)
			return bits_f32(sign);
		while (!(mant & 0x400)) {
			mant <<= 1;
			e--;
		}
		mant &= 0x3ff;
		return bits_f32(sign | ((uint32_t)(e + 127) << 23) | (mant << 13));
	}
	if (exp == 0x1f)
		return bits_f32(sign | 0x7f800000 | (mant << 13));
	return bits_f32(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t x = f32_bits(f);

	if ((x & 0x7fffffff) > 0x7f800000)
		return (x >> 16) | 0x40;	/* quiet nan */
	return (x + 0x7fff + ((x >> 16) & 1)) >> 16;
}

static float bf16_to_f32(uint16_t h)
{
	return bits_f32((uint32_t)h << 16);
}

static uint64_t encode_fp(int dtype, double v)
{
	uint64_t u;

	switch (dtype) {
	case COLL_FP16:
		return f32_to_f16((float)v);
	case COLL_BF16:
		return f32_to_bf16((float)v);
	case COLL_FP32:
		return f32_bits((float)v);
	default:
		memcpy(&u, &v, 8);
		return u;
	}
}

static double decode_fp(int dtype, uint64_t bits)
{
	double d;

	switch (dtype) {
	case COLL_FP16:
		return f16_to_f32((uint16_t)bits);
	case COLL_BF16:
		return bf16_to_f32((uint16_t)bits);
	case COLL_FP32:
		return bits_f32((uint32_t)bits);
	default:
		memcpy(&d, &bits, 8);
		return d;
	}
}

/* ---- elements ---------------------------------------------------------- */

static inline uint64_t load_elem(const uint8_t *p, unsigned int es)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (es) {
	case 1: memcpy(&u8, p, 1); return u8;
	case 2: memcpy(&u16, p, 2); return u16;
	case 4: memcpy(&u32, p, 4); return u32;
	default: memcpy(&u64, p, 8); return u64;
	}
}

static inline void store_elem(uint8_t *p, unsigned int es, uint64_t v)
{
	uint8_t u8 = v;
	uint16_t u16 = v;
	uint32_t u32 = v;

	switch (es) {
	case 1: memcpy(p, &u8, 1); break;
	case 2: memcpy(p, &u16, 2); break;
	case 4: memcpy(p, &u32, 4); break;
	default: memcpy(p, &v, 8); break;
	}
}

/* Truncate to the element width, then sign- or zero-extend. */
static inline uint64_t canon(uint64_t v, unsigned int es, bool sgn)
{
	unsigned int sh = 64 - 8 * es;

	if (es == 8)
		return v;
	return sgn ? (uint64_t)((int64_t)(v << sh) >> sh) : (v << sh) >> sh;
}

static void fmt_elem(char *buf, size_t len, int dtype, uint64_t bits)
{
	const struct dtinfo *d = &dts[dtype];
	uint64_t v = canon(bits, d->es, d->sgn);

	if (d->fp)
		snprintf(buf, len, "%.9g (0x%llx)", decode_fp(dtype, bits),
			 (unsigned long long)v);
	else if (d->sgn)
		snprintf(buf, len, "%lld (0x%llx)", (long long)v,
			 (unsigned long long)canon(bits, d->es, false));
	else
		snprintf(buf, len, "%llu (0x%llx)", (unsigned long long)v,
			 (unsigned long long)v);
}

/* ---- deterministic inputs --------------------------------------------- */

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t elem_hash(uint64_t key, size_t j)
{
	return mix64(key + (j + 1) * 0x9e3779b97f4a7c15ULL);
}

static inline unsigned int pick(uint64_t h, unsigned int m)
{
	return (unsigned int)(((h >> 32) * m) >> 32);
}

/* Key of chunk @chunk of rank @rank's input in the call seeded @cseed. */
static uint64_t chunk_key(uint64_t cseed, int rank, int chunk)
{
	return mix64(cseed ^ mix64(((uint64_t)(rank + 1) << 32) |
				   (uint32_t)(chunk + 1)));
}

#define GEN_MAXVALS 201

struct gen {
	int dtype;
	int op;			/* enum coll_redop, or -1: no reduction */
	unsigned int es;
	bool raw;		/* element = low bits of the hash */
	unsigned int m;		/* values in the class */
	uint64_t bits[GEN_MAXVALS];	/* their encodings */
	double dv[GEN_MAXVALS];		/* their values */
};

static void gen_init(struct gen *g, int dtype, int op)
{
	static const int iprod[] = { -3, -2, -1, 1, 2, 3 };
	static const double fprod[] = { -2, -1, -0.5, 0.5, 1, 2 };
	const struct dtinfo *d = &dts[dtype];
	unsigned int i;

	memset(g, 0, sizeof(*g));
	g->dtype = dtype;
	g->op = op;
	g->es = d->es;
	if (op < 0 || (!d->fp && op != COLL_PROD)) {
		g->raw = true;
		return;
	}
	if (!d->fp) {
		g->m = ARRAY_SIZE(iprod);
		for (i = 0; i < g->m; i++) {
			g->dv[i] = iprod[i];
			g->bits[i] = (uint64_t)(int64_t)iprod[i];
		}
		return;
	}
	switch (op) {
	case COLL_SUM:
	case COLL_AVG:
		g->m = 17;
		for (i = 0; i < g->m; i++)
			g->dv[i] = (double)i - 8;
		break;
	case COLL_PROD:
		g->m = ARRAY_SIZE(fprod);
		for (i = 0; i < g->m; i++)
			g->dv[i] = fprod[i];
		break;
	default:			/* MIN, MAX */
		g->m = 201;
		for (i = 0; i < g->m; i++)
			g->dv[i] = (double)i - 100;
		break;
	}
	for (i = 0; i < g->m; i++)
		g->bits[i] = encode_fp(dtype, g->dv[i]);
}

static inline uint64_t gen_bits(const struct gen *g, uint64_t key, size_t j)
{
	uint64_t h = elem_hash(key, j);

	return g->raw ? h : g->bits[pick(h, g->m)];
}

static inline double gen_d(const struct gen *g, uint64_t key, size_t j)
{
	return g->dv[pick(elem_hash(key, j), g->m)];
}

static void gen_table(const struct gen *g, uint64_t key, void *out, size_t L)
{
	size_t j;

	switch (g->es) {
	case 1: {
		uint8_t *o = out;

		for (j = 0; j < L; j++)
			o[j] = gen_bits(g, key, j);
		break;
	}
	case 2: {
		uint16_t *o = out;

		for (j = 0; j < L; j++)
			o[j] = gen_bits(g, key, j);
		break;
	}
	case 4: {
		uint32_t *o = out;

		for (j = 0; j < L; j++)
			o[j] = gen_bits(g, key, j);
		break;
	}
	default: {
		uint64_t *o = out;

		for (j = 0; j < L; j++)
			o[j] = gen_bits(g, key, j);
		break;
	}
	}
}

/*
 * Reference of one period: element j of op over ranks 0..n-1 of the chunk
 * keyed keys[r].  Floats: exact in double (see the top of the file), AVG
 * left in @outd as double.  Integers: in the element type, wrapping.
 */
static void ref_reduce(const struct gen *g, const uint64_t *keys, int n,
		       size_t L, uint8_t *out, double *outd)
{
	const struct dtinfo *d = &dts[g->dtype];
	unsigned int es = g->es;
	size_t j;
	int r;

	for (j = 0; j < L; j++) {
		if (d->fp) {
			double acc = gen_d(g, keys[0], j);

			for (r = 1; r < n; r++) {
				double x = gen_d(g, keys[r], j);

				switch (g->op) {
				case COLL_PROD: acc *= x; break;
				case COLL_MIN: acc = x < acc ? x : acc; break;
				case COLL_MAX: acc = x > acc ? x : acc; break;
				default: acc += x; break;
				}
			}
			if (g->op == COLL_AVG)
				outd[j] = acc / n;
			else
				store_elem(out + j * es, es,
					   encode_fp(g->dtype, acc));
		} else {
			uint64_t acc = canon(gen_bits(g, keys[0], j), es, d->sgn);

			for (r = 1; r < n; r++) {
				uint64_t x = canon(gen_bits(g, keys[r], j),
						   es, d->sgn);
				bool lt = d->sgn ? (int64_t)x < (int64_t)acc :
						   x < acc;
				bool gt = d->sgn ? (int64_t)x > (int64_t)acc :
						   x > acc;

				switch (g->op) {
				case COLL_PROD: acc *= x; break;
				case COLL_MIN: acc = lt ? x : acc; break;
				case COLL_MAX: acc = gt ? x : acc; break;
				default: acc += x; break;
				}
			}
			if (g->op == COLL_AVG) {
				acc = canon(acc, es, d->sgn);
				if (d->sgn)
					acc = (uint64_t)((int64_t)acc / n);
				else
					acc = acc / (uint64_t)n;
			}
			store_elem(out + j * es, es, acc);
		}
	}
}

/* ---- per-rank state ----------------------------------------------------- */

struct shm {
	struct st_oob oob;
	int go;
	int arrive[NBARRIERS];
};

struct callp {
	int prim, dtype, op, algo, root;
	bool inplace;		/* the call uses the in-place layouts */
	bool null_unused;	/* pass NULL for a buffer this rank ignores */
	size_t count;
	size_t soff, roff;	/* byte offsets from a page boundary */
	uint64_t cseed;
	unsigned long k;	/* call number */
};

struct arena {
	uint8_t *base;
	size_t len;
};

enum { AR_SEND, AR_RECV, AR_UNUSED, AR_NUM };

struct slot {
	struct callp p;
	struct gen g;
	struct arena ar[AR_NUM];
	uint8_t *buf[AR_NUM];	/* allocated buffers (guarded), or NULL */
	size_t bytes[AR_NUM];
	uint8_t poison[AR_NUM];
	const uint8_t *send;	/* as passed to the library */
	uint8_t *recv;
	size_t sendn, recvn;	/* elements this rank uses (0: ignored) */
	bool ip;		/* this rank is in place */
	coll_req_t req;
	bool pending;
};

struct rarg {
	int n;
	int test;		/* a primitive, or TEST_NONBLOCKING */
	bool matrix;		/* the matrix of @test instead of the sweep */
	unsigned int variant_off;
	uint64_t seed;
	coll_id_t id;
	struct shm *shm;
};

#define TEST_NONBLOCKING COLL_PRIM_MAX

struct rctx {
	const struct rarg *a;
	coll_comm_t *comm;
	int n, rank;
	uint8_t *tab;		/* PERIOD elements */
	uint8_t *ref;
	double *refd;
	uint64_t *keys;
	unsigned long ncalls;
	unsigned long k;
	struct slot *slots;	/* COLL_PRIM_MAX */
};

static void arena_free(struct arena *a)
{
	if (a->base)
		munmap(a->base, a->len);
	a->base = NULL;
	a->len = 0;
}

/*
 * A buffer of @bytes at byte offset @off from a page boundary, with at
 * least GUARD bytes of the same mapping on either side.  Reuses the
 * arena's mapping when it is large enough.
 */
static uint8_t *arena_get(struct arena *a, size_t bytes, size_t off)
{
	size_t need = PAGE + ((off + bytes + GUARD + PAGE - 1) & ~(PAGE - 1));

	if (a->len < need) {
		arena_free(a);
		need = (need + 0xffff) & ~0xffffUL;
		a->base = st_map(need);
		if (!a->base)
			return NULL;
		a->len = need;
	}
	return a->base + PAGE + off;
}

static inline uint8_t guard_byte(size_t i)
{
	return (uint8_t)(0x5a ^ (i * 37));
}

static void guard_set(uint8_t *p, size_t bytes)
{
	size_t i;

	for (i = 0; i < GUARD; i++) {
		p[(ssize_t)i - GUARD] = guard_byte(i);
		p[bytes + i] = guard_byte(i + GUARD);
	}
}

/* -1 if fine, else the offset (relative to p) of the first changed byte. */
static ssize_t guard_check(const uint8_t *p, size_t bytes)
{
	size_t i;

	for (i = 0; i < GUARD; i++)
		if (p[(ssize_t)i - GUARD] != guard_byte(i))
			return (ssize_t)i - GUARD;
	for (i = 0; i < GUARD; i++)
		if (p[bytes + i] != guard_byte(i + GUARD))
			return bytes + i;
	return -1;
}

static void fill_periodic(uint8_t *dst, size_t count, const uint8_t *tab,
			  size_t L, unsigned int es)
{
	size_t i = 0;

	while (i < count) {
		size_t k = count - i < L ? count - i : L;

		memcpy(dst + i * es, tab, k * es);
		i += k;
	}
}

/* ---- reporting ---------------------------------------------------------- */

static void call_desc(const struct rctx *c, const struct callp *p,
		      char *buf, size_t len)
{
	snprintf(buf, len,
		 "%s n=%d rank=%d: dtype=%s op=%s count=%zu algo=%s inplace=%d root=%d null_unused=%d soff=%zu roff=%zu [call %lu]",
		 prim_names[p->prim], c->n, c->rank, dts[p->dtype].name,
		 p->op >= 0 ? op_names[p->op] : "-", p->count,
		 algo_names[p->algo], p->inplace, p->root, p->null_unused,
		 p->soff, p->roff, p->k);
}

static void report_elem(const struct rctx *c, const struct callp *p,
			const char *what, size_t idx, uint64_t got,
			const char *want)
{
	char desc[384], g[64];

	call_desc(c, p, desc, sizeof(desc));
	fmt_elem(g, sizeof(g), p->dtype, got);
	st_log("FAIL %s: %s[%zu] got %s want %s", desc, what, idx, g, want);
}

static void report_call(const struct rctx *c, const struct callp *p,
			const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report_call(const struct rctx *c, const struct callp *p,
			const char *fmt, ...)
{
	char desc[384], msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	call_desc(c, p, desc, sizeof(desc));
	st_log("FAIL %s: %s%s", desc, msg,
	       __atomic_load_n(&c->a->shm->oob.failed, __ATOMIC_RELAXED) ?
	       " (after another rank failed)" : "");
}

/* ---- checks -------------------------------------------------------------- */

/*
 * @count elements at @buf against the period @want of length @L, exactly
 * (floats of a reducing op compare as numbers, so -0 == +0).  Element
 * indexes are reported from @base.  Returns the number of wrong elements.
 */
static long cmp_periodic(const struct rctx *c, const struct slot *s,
			 const char *what, size_t base, const uint8_t *buf,
			 size_t count, const uint8_t *want, size_t L)
{
	const struct gen *g = &s->g;
	unsigned int es = g->es;
	bool numeric = !g->raw && dts[g->dtype].fp;
	size_t i = 0, j;
	long bad = 0;

	while (i < count) {
		size_t k = count - i < L ? count - i : L;

		if (memcmp(buf + i * es, want, k * es)) {
			for (j = 0; j < k; j++) {
				uint64_t a = load_elem(buf + (i + j) * es, es);
				uint64_t b = load_elem(want + j * es, es);
				char w[64];

				if (a == b)
					continue;
				if (numeric && decode_fp(g->dtype, a) ==
					       decode_fp(g->dtype, b))
					continue;
				if (bad++ < MAX_REPORT) {
					fmt_elem(w, sizeof(w), g->dtype, b);
					report_elem(c, &s->p, what, base + i + j,
						    a, w);
				}
			}
		}
		i += k;
	}
	if (bad > MAX_REPORT)
		report_call(c, &s->p, "%s: %ld wrong elements in all", what, bad);
	return bad;
}

static long cmp_avg(const struct rctx *c, const struct slot *s,
		    const char *what, const uint8_t *buf, size_t count,
		    const double *want, size_t L)
{
	const struct gen *g = &s->g;
	double tol = dts[g->dtype].avg_tol;
	unsigned int es = g->es;
	size_t i, j = 0;
	long bad = 0;

	for (i = 0; i < count; i++) {
		double got = decode_fp(g->dtype, load_elem(buf + i * es, es));
		double ref = want[j];
		double lim = tol * (fabs(ref) > 1 ? fabs(ref) : 1);

		if (!(fabs(got - ref) <= lim) && bad++ < MAX_REPORT) {
			char w[80];

			snprintf(w, sizeof(w), "%.12g (+-%.3g)", ref, lim);
			report_elem(c, &s->p, what, i,
				    load_elem(buf + i * es, es), w);
		}
		if (++j == L)
			j = 0;
	}
	if (bad > MAX_REPORT)
		report_call(c, &s->p, "%s: %ld wrong elements in all", what, bad);
	return bad;
}

static long cmp_poison(const struct rctx *c, const struct slot *s,
		       const char *what, const uint8_t *buf, size_t bytes,
		       int poison)
{
	size_t i = st_find_not(buf, poison, bytes);

	if (i == bytes)
		return 0;
	report_call(c, &s->p, "%s: byte %zu changed to 0x%02x (buffer must be left alone)",
		    what, i, buf[i]);
	return 1;
}

/* Chunk @chunk of rank @q's input, expected at @buf (element @base on). */
static long expect_input(struct rctx *c, const struct slot *s,
			 const char *what, size_t base, const uint8_t *buf,
			 int q, int chunk)
{
	size_t L = s->p.count < PERIOD ? s->p.count : PERIOD;

	gen_table(&s->g, chunk_key(s->p.cseed, q, chunk), c->tab, L);
	return cmp_periodic(c, s, what, base, buf, s->p.count, c->tab, L);
}

/* The reduction over all ranks of chunk @chunk, expected at @buf. */
static long expect_reduced(struct rctx *c, const struct slot *s,
			   const char *what, const uint8_t *buf, int chunk)
{
	size_t L = s->p.count < PERIOD ? s->p.count : PERIOD;
	int r;

	for (r = 0; r < c->n; r++)
		c->keys[r] = chunk_key(s->p.cseed, r, chunk);
	ref_reduce(&s->g, c->keys, c->n, L, c->ref, c->refd);
	if (dts[s->p.dtype].fp && s->p.op == COLL_AVG)
		return cmp_avg(c, s, what, buf, s->p.count, c->refd, L);
	return cmp_periodic(c, s, what, 0, buf, s->p.count, c->ref, L);
}

/* ---- one call ------------------------------------------------------------- */

/* Elements of each buffer this rank uses, per struct coll_op. */
static void buf_elems(const struct callp *p, int n, int rank,
		      size_t *sn, size_t *rn)
{
	size_t cnt = p->count, all = p->count * n;
	bool root = rank == p->root;

	switch (p->prim) {
	case COLL_ALLREDUCE:	*sn = cnt; *rn = cnt; break;
	case COLL_REDUCE:	*sn = cnt; *rn = root ? cnt : 0; break;
	case COLL_REDUCESCATTER: *sn = all; *rn = cnt; break;
	case COLL_ALLGATHER:	*sn = cnt; *rn = all; break;
	case COLL_BROADCAST:	*sn = root ? cnt : 0; *rn = cnt; break;
	case COLL_SCATTER:	*sn = root ? all : 0; *rn = cnt; break;
	case COLL_GATHER:	*sn = cnt; *rn = root ? all : 0; break;
	case COLL_ALLTOALL:	*sn = all; *rn = all; break;
	default:		*sn = 0; *rn = 0; break;
	}
}

/* Whether this rank has an in-place layout for the primitive. */
static bool has_inplace(int prim, int rank, int root)
{
	switch (prim) {
	case COLL_GATHER:
	case COLL_SCATTER:
		return rank == root;
	case COLL_BARRIER:
		return false;
	default:
		return true;
	}
}

static uint8_t *slot_alloc(struct slot *s, int which, size_t bytes,
			   size_t off, int poison)
{
	uint8_t *p = arena_get(&s->ar[which], bytes, off);

	if (!p)
		return NULL;
	s->buf[which] = p;
	s->bytes[which] = bytes;
	s->poison[which] = poison;
	if (poison)		/* send buffers are filled with input anyway */
		memset(p, poison, bytes);
	guard_set(p, bytes);
	return p;
}

static void fill_input(struct rctx *c, struct slot *s, uint8_t *dst,
		       int nchunks)
{
	size_t L = s->p.count < PERIOD ? s->p.count : PERIOD;
	unsigned int es = s->g.es;
	int ch;

	for (ch = 0; ch < nchunks; ch++) {
		gen_table(&s->g, chunk_key(s->p.cseed, c->rank, ch), c->tab, L);
		fill_periodic(dst + ch * s->p.count * es, s->p.count, c->tab,
			      L, es);
	}
}

/* Buffers and inputs for the call in s->p.  0 or -1. */
static int prepare(struct rctx *c, struct slot *s)
{
	const struct callp *p = &s->p;
	int n = c->n, rank = c->rank;
	unsigned int es;
	uint8_t *outer;
	size_t cnt = p->count;

	gen_init(&s->g, p->dtype, prim_reduces(p->prim) ? p->op : -1);
	es = s->g.es;
	memset(s->buf, 0, sizeof(s->buf));
	s->send = NULL;
	s->recv = NULL;
	s->pending = false;
	buf_elems(p, n, rank, &s->sendn, &s->recvn);
	s->ip = p->inplace && has_inplace(p->prim, rank, p->root);
	if (p->prim == COLL_BARRIER)
		return 0;

	if (s->ip) {
		size_t outn = s->sendn > s->recvn ? s->sendn : s->recvn;

		outer = slot_alloc(s, AR_SEND, outn * es, p->soff, POISON_RECV);
		if (!outer)
			goto nomem;
		switch (p->prim) {
		case COLL_ALLGATHER:
		case COLL_GATHER:	/* at the root */
			s->recv = outer;
			s->send = outer + (size_t)rank * cnt * es;
			fill_input(c, s, (uint8_t *)s->send, 1);
			break;
		case COLL_REDUCESCATTER:
		case COLL_SCATTER:	/* at the root */
			s->send = outer;
			s->recv = outer + (size_t)rank * cnt * es;
			fill_input(c, s, outer, n);
			break;
		default:		/* same buffer */
			s->send = outer;
			s->recv = outer;
			if (s->sendn)
				fill_input(c, s, outer, s->sendn / (cnt ? cnt : 1));
			break;
		}
		return 0;
	}

	if (s->sendn) {
		uint8_t *b = slot_alloc(s, AR_SEND, s->sendn * es, p->soff, 0);

		if (!b)
			goto nomem;
		fill_input(c, s, b, cnt ? s->sendn / cnt : 0);
		s->send = b;
	}
	if (s->recvn) {
		s->recv = slot_alloc(s, AR_RECV, s->recvn * es, p->roff,
				     POISON_RECV);
		if (!s->recv)
			goto nomem;
	}
	if ((!s->sendn || !s->recvn) && !p->null_unused) {
		uint8_t *u = slot_alloc(s, AR_UNUSED, cnt * es,
					s->sendn ? p->roff : p->soff,
					POISON_UNUSED);

		if (!u)
			goto nomem;
		if (!s->sendn)
			s->send = u;
		else
			s->recv = u;
	}
	return 0;
nomem:
	report_call(c, p, "cannot map buffers: %s", strerror(errno));
	return -1;
}

static int submit(struct rctx *c, struct slot *s, bool nb)
{
	const struct callp *p = &s->p;
	coll_comm_t *cm = c->comm;
	coll_req_t *rq = &s->req;
	const void *sb = s->send;
	void *rb = s->recv;
	size_t cnt = p->count;
	int r;

	r = coll_comm_set_algo(cm, p->algo);
	if (r) {
		report_call(c, p, "coll_comm_set_algo: %s", st_errname(r));
		return r;
	}
	switch (p->prim) {
	case COLL_ALLREDUCE:
		r = nb ? coll_iallreduce(cm, sb, rb, cnt, p->dtype, p->op, rq) :
			 coll_allreduce(cm, sb, rb, cnt, p->dtype, p->op);
		break;
	case COLL_REDUCE:
		r = nb ? coll_ireduce(cm, sb, rb, cnt, p->dtype, p->op, p->root, rq) :
			 coll_reduce(cm, sb, rb, cnt, p->dtype, p->op, p->root);
		break;
	case COLL_REDUCESCATTER:
		r = nb ? coll_ireducescatter(cm, sb, rb, cnt, p->dtype, p->op, rq) :
			 coll_reducescatter(cm, sb, rb, cnt, p->dtype, p->op);
		break;
	case COLL_ALLGATHER:
		r = nb ? coll_iallgather(cm, sb, rb, cnt, p->dtype, rq) :
			 coll_allgather(cm, sb, rb, cnt, p->dtype);
		break;
	case COLL_BROADCAST:
		r = nb ? coll_ibroadcast(cm, sb, rb, cnt, p->dtype, p->root, rq) :
			 coll_broadcast(cm, sb, rb, cnt, p->dtype, p->root);
		break;
	case COLL_SCATTER:
		r = nb ? coll_iscatter(cm, sb, rb, cnt, p->dtype, p->root, rq) :
			 coll_scatter(cm, sb, rb, cnt, p->dtype, p->root);
		break;
	case COLL_GATHER:
		r = nb ? coll_igather(cm, sb, rb, cnt, p->dtype, p->root, rq) :
			 coll_gather(cm, sb, rb, cnt, p->dtype, p->root);
		break;
	case COLL_ALLTOALL:
		r = nb ? coll_ialltoall(cm, sb, rb, cnt, p->dtype, rq) :
			 coll_alltoall(cm, sb, rb, cnt, p->dtype);
		break;
	default:
		r = nb ? coll_ibarrier(cm, rq) : coll_barrier(cm);
		break;
	}
	if (r)
		report_call(c, p, "%s returned %s", nb ? "submit" : "call",
			    st_errname(r));
	else if (nb)
		s->pending = true;
	c->ncalls++;
	return r;
}

/* Everything this rank can see after a successful call.  0 or -1. */
static int verify(struct rctx *c, struct slot *s)
{
	const struct callp *p = &s->p;
	int n = c->n, rank = c->rank, q, w;
	unsigned int es = s->g.es;
	size_t cnt = p->count;
	long bad = 0;
	bool send_ro;

	if (p->prim == COLL_BARRIER)
		return 0;

	if (s->recvn && cnt) {
		switch (p->prim) {
		case COLL_ALLREDUCE:
		case COLL_REDUCE:
			bad += expect_reduced(c, s, "recv", s->recv, 0);
			break;
		case COLL_REDUCESCATTER:
			bad += expect_reduced(c, s, "recv", s->recv, rank);
			break;
		case COLL_ALLGATHER:
		case COLL_GATHER:
			for (q = 0; q < n && !bad; q++)
				bad += expect_input(c, s, "recv", q * cnt,
						    s->recv + q * cnt * es, q, 0);
			break;
		case COLL_BROADCAST:
			bad += expect_input(c, s, "recv", 0, s->recv, p->root, 0);
			break;
		case COLL_SCATTER:
			bad += expect_input(c, s, "recv", 0, s->recv, p->root,
					    rank);
			break;
		case COLL_ALLTOALL:
			for (q = 0; q < n && !bad; q++)
				bad += expect_input(c, s, "recv", q * cnt,
						    s->recv + q * cnt * es, q,
						    rank);
			break;
		}
	}

	/* Send data that must still be there. */
	send_ro = !s->ip ||
		  (p->prim == COLL_SCATTER && rank == p->root) ||
		  (p->prim == COLL_REDUCE && rank != p->root);
	if (s->sendn && cnt && send_ro && !bad) {
		int nch = s->sendn / cnt;

		for (q = 0; q < nch && !bad; q++)
			bad += expect_input(c, s, "send", q * cnt,
					    s->send + q * cnt * es, rank, q);
	}

	if (s->buf[AR_UNUSED])
		bad += cmp_poison(c, s, "unused buffer", s->buf[AR_UNUSED],
				  s->bytes[AR_UNUSED], POISON_UNUSED);

	for (w = 0; w < AR_NUM; w++) {
		static const char *const names[AR_NUM] = {
			"send/in-place buffer", "recv buffer", "unused buffer",
		};
		ssize_t at;

		if (!s->buf[w])
			continue;
		at = guard_check(s->buf[w], s->bytes[w]);
		if (at != -1) {
			report_call(c, p, "guard byte at %zd from the %s (%zu bytes) changed",
				    at, names[w], s->bytes[w]);
			bad++;
		}
	}
	return bad ? -1 : 0;
}

static int run_one(struct rctx *c, struct slot *s)
{
	if (prepare(c, s))
		return -1;
	if (submit(c, s, false))
		return -1;
	return verify(c, s);
}

/* ---- sweeps ---------------------------------------------------------------- */

/* BIG_BYTES, or COLL_CORRECT_MAXBYTES when set to a positive number. */
static size_t big_bytes(void)
{
	const char *e = getenv("COLL_CORRECT_MAXBYTES");
	unsigned long long v;
	char *end;

	if (!e || !*e)
		return BIG_BYTES;
	v = strtoull(e, &end, 0);
	if (*end || !v)
		return BIG_BYTES;
	return v;
}

static size_t sweep_count(int si, int prim, int dtype, int n)
{
	size_t es = dts[dtype].es;
	size_t mult = prim_multiplies(prim) ? n : 1;

	switch (si) {
	case 0: return 0;
	case 1: return 1;
	case 2: return 1001;
	case 3: return 4099;
	default: return big_bytes() / es / mult + 3;
	}
}

/* Fill s->p from the rotation; k is the call number. */
static void rotate(struct rctx *c, struct callp *p, int prim, int dtype,
		   int op, size_t count, int si)
{
	unsigned long x = c->k + c->a->variant_off;
	int roots[3] = { 0, c->n - 1, c->n / 2 };
	unsigned int es = dts[dtype].es;

	memset(p, 0, sizeof(*p));
	p->prim = prim;
	p->dtype = dtype;
	p->op = prim_reduces(prim) ? op : -1;
	p->count = count;
	p->algo = x % COLL_ALGO_MAX;
	p->inplace = (x / 4) % 2;
	p->root = prim_rooted(prim) ? roots[(x / 8) % 3] : 0;
	p->null_unused = (x / 24) % 2;
	switch (si) {
	case 2:				/* cache-line, not page aligned */
		p->soff = 64;
		p->roff = 128;
		break;
	case 3:				/* not even element aligned */
		p->soff = 3;
		p->roff = 7;
		break;
	case 4:				/* page aligned */
		break;
	default:
		p->soff = 5 * es;
		p->roff = 3 * es;
		break;
	}
	p->k = c->k;
	p->cseed = mix64(c->a->seed ^ mix64(((uint64_t)prim << 56) ^ c->k));
	c->k++;
}

static bool huge_enabled(void)
{
	const char *e = getenv("COLL_CORRECT_BIG");

	if (big_bytes() != BIG_BYTES && big_bytes() < HUGE_BYTES)
		return false;
	return !e || strcmp(e, "0");
}

static int sweep(struct rctx *c, int prim)
{
	struct slot *s = &c->slots[0];
	int nops = prim_reduces(prim) ? COLL_REDOP_MAX : 1;
	int dt, op, si;
	int64_t t0 = st_now_ns(), t1;

	for (dt = 0; dt < COLL_DTYPE_MAX; dt++)
		for (op = 0; op < nops; op++)
			for (si = 0; si < 5; si++) {
				rotate(c, &s->p, prim, dt, op,
				       sweep_count(si, prim, dt, c->n), si);
				if (run_one(c, s))
					return -1;
			}
	t1 = st_now_ns();

	if (prim == COLL_ALLREDUCE && (c->n == 2 || c->n == 4) &&
	    huge_enabled()) {
		static const int hdt[] = { COLL_FP32, COLL_INT32 };
		unsigned int i, algo;

		for (i = 0; i < ARRAY_SIZE(hdt); i++) {
			for (algo = 0; algo < COLL_ALGO_MAX; algo++) {
				rotate(c, &s->p, prim, hdt[i], COLL_SUM,
				       HUGE_BYTES / dts[hdt[i]].es, 4);
				s->p.algo = algo;
				/* 4 ranks x 128 MiB would not fit a 1 GB guest */
				s->p.inplace = c->n == 4 || (algo + i) % 2;
				if (run_one(c, s))
					return -1;
			}
		}
		for (i = 0; i < AR_NUM; i++)
			arena_free(&s->ar[i]);
	}
	if (c->rank == 0)
		st_log("%s n=%d: %lu calls in %.1f s (64 MiB part %.1f s)",
		       prim_names[prim], c->n, c->ncalls,
		       (st_now_ns() - t0) / 1e9, (st_now_ns() - t1) / 1e9);
	return 0;
}

/*
 * Every (dtype/op, algorithm, in place, root, size) for @prim, nothing
 * rotated but null_unused.
 */
static int matrix(struct rctx *c, int prim)
{
	static const struct { int dtype, op; } dops[] = {
		{ COLL_FP32, COLL_SUM }, { COLL_INT32, COLL_MAX },
	};
	static const int algos[] = {
		COLL_ALGO_RING, COLL_ALGO_DIRECT, COLL_ALGO_NAIVE, COLL_ALGO_AUTO,
	};
	static const int sis[] = { 1, 2, 3 };	/* 1, 1001, 4099 (misaligned) */
	struct slot *s = &c->slots[0];
	unsigned int ndops = prim_reduces(prim) ? ARRAY_SIZE(dops) : 1;
	int nroots = prim_rooted(prim) ? c->n : 1;
	int64_t t0 = st_now_ns();
	unsigned int d, a, si;
	int ip, root;

	for (d = 0; d < ndops; d++)
		for (a = 0; a < ARRAY_SIZE(algos); a++)
			for (ip = 0; ip < 2; ip++)
				for (root = 0; root < nroots; root++)
					for (si = 0; si < ARRAY_SIZE(sis); si++) {
						int dt = dops[d].dtype;

						rotate(c, &s->p, prim, dt, dops[d].op,
						       sweep_count(sis[si], prim, dt, c->n),
						       sis[si]);
						s->p.algo = algos[a];
						s->p.inplace = ip;
						s->p.root = root;
						if (run_one(c, s))
							return -1;
					}
	if (c->rank == 0)
		st_log("matrix %s n=%d: %lu calls in %.1f s", prim_names[prim],
		       c->n, c->ncalls, (st_now_ns() - t0) / 1e9);
	return 0;
}

static int barrier_test(struct rctx *c)
{
	struct shm *sh = c->a->shm;
	struct callp p = { .prim = COLL_BARRIER, .op = -1 };
	int64_t t0 = st_now_ns();
	int i, r;

	for (i = 0; i < NBARRIERS; i++) {
		uint64_t h = mix64(c->a->seed ^ ((uint64_t)i << 8) ^ c->rank);

		p.algo = (i + c->a->variant_off) % COLL_ALGO_MAX;
		p.k = i;
		r = coll_comm_set_algo(c->comm, p.algo);
		if (r) {
			report_call(c, &p, "coll_comm_set_algo: %s", st_errname(r));
			return -1;
		}
		/* Stagger arrivals so that a barrier that does not wait shows. */
		if (h % 3 == 0)
			st_sleep_us(h % 2000);
		__atomic_add_fetch(&sh->arrive[i], 1, __ATOMIC_ACQ_REL);
		r = coll_barrier(c->comm);
		c->ncalls++;
		if (r) {
			report_call(c, &p, "coll_barrier: %s", st_errname(r));
			return -1;
		}
		r = __atomic_load_n(&sh->arrive[i], __ATOMIC_ACQUIRE);
		if (r != c->n) {
			report_call(c, &p, "left barrier %d when only %d of %d ranks had arrived",
				    i, r, c->n);
			return -1;
		}
	}
	if (c->rank == 0)
		st_log("barrier n=%d: %d barriers in %.1f s", c->n, NBARRIERS,
		       (st_now_ns() - t0) / 1e9);
	return 0;
}

/* ---- non-blocking ------------------------------------------------------------ */

static int nb_collect(struct rctx *c, struct slot *s, int r)
{
	s->pending = false;
	if (r) {
		report_call(c, &s->p, "request completed with %s", st_errname(r));
		return -1;
	}
	return verify(c, s);
}

/*
 * Rank 0 submits an AllReduce the others have not submitted yet: the
 * request must stay pending (coll_test -EAGAIN, no POLLIN) until they do.
 */
static int nb_pending(struct rctx *c, int fd)
{
	struct slot *s = &c->slots[0];
	struct shm *sh = c->a->shm;
	int r;

	rotate(c, &s->p, COLL_ALLREDUCE, COLL_INT32, COLL_SUM, 1001, 2);
	s->p.inplace = false;
	if (prepare(c, s))
		return -1;
	if (c->rank != 0) {
		if (st_wait_ge_or(&sh->go, 1, &sh->oob.failed, OOB_TIMEOUT_MS)) {
			report_call(c, &s->p, "rank 0 never gave the go");
			return -1;
		}
		if (submit(c, s, true))
			return -1;
		return nb_collect(c, s, coll_wait(&s->req, 0));
	}
	if (submit(c, s, true))
		return -1;
	r = coll_test(&s->req);
	if (r != -EAGAIN) {
		report_call(c, &s->p, "coll_test with the peers not submitted: %s, want EAGAIN",
			    st_errname(r));
		return -1;
	}
	r = st_poll_in(fd, 200);
	if (r != 0) {
		report_call(c, &s->p, "poll with the peers not submitted: %d, want 0 (no POLLIN)",
			    r);
		return -1;
	}
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	r = st_poll_in(fd, OOB_TIMEOUT_MS);
	if (r != 1) {
		report_call(c, &s->p, "poll after the peers submitted: %d, want POLLIN", r);
		return -1;
	}
	r = coll_test(&s->req);
	if (r == -EAGAIN) {
		report_call(c, &s->p, "POLLIN but coll_test says EAGAIN");
		return -1;
	}
	if (nb_collect(c, s, r))
		return -1;
	r = st_poll_in(fd, 0);
	if (r != 0) {
		report_call(c, &s->p, "POLLIN with nothing left to collect (%d)", r);
		return -1;
	}
	return 0;
}

/* Collect by coll_test polling, sleeping in poll() when nothing is done. */
static int nb_collect_polling(struct rctx *c, int fd)
{
	int left = 0, i, r;
	bool must = false;

	for (i = 0; i < COLL_PRIM_MAX; i++)
		left += c->slots[i].pending;
	while (left) {
		int got = 0;

		for (i = 0; i < COLL_PRIM_MAX; i++) {
			struct slot *s = &c->slots[i];

			if (!s->pending)
				continue;
			r = coll_test(&s->req);
			if (r == -EAGAIN)
				continue;
			got++;
			left--;
			if (nb_collect(c, s, r))
				return -1;
		}
		if (!left)
			break;
		if (!got && must) {
			st_log("FAIL nonblocking n=%d rank=%d: POLLIN reported but coll_test finds no complete request (%d pending)",
			       c->n, c->rank, left);
			return -1;
		}
		must = false;
		if (!got) {
			r = st_poll_in(fd, OOB_TIMEOUT_MS);
			if (r != 1) {
				st_log("FAIL nonblocking n=%d rank=%d: poll returned %d with %d requests pending",
				       c->n, c->rank, r, left);
				return -1;
			}
			must = true;
		}
	}
	return 0;
}

static int nonblocking_test(struct rctx *c)
{
	static const size_t counts[] = { 1, 1001, 4099, 16411 };
	int fd = coll_comm_fd(c->comm), round, i, r;
	int64_t t0 = st_now_ns();

	if (fd < 0) {
		st_log("FAIL nonblocking n=%d rank=%d: coll_comm_fd: %s", c->n,
		       c->rank, st_errname(fd));
		return -1;
	}
	r = st_poll_in(fd, 0);
	if (r != 0) {
		st_log("FAIL nonblocking n=%d rank=%d: POLLIN before any request (%d)",
		       c->n, c->rank, r);
		return -1;
	}
	if (c->n > 1 && nb_pending(c, fd))
		return -1;

	for (round = 0; round < NB_ROUNDS; round++) {
		/* Every primitive outstanding at once, one request each. */
		for (i = 0; i < COLL_PRIM_MAX; i++) {
			struct slot *s = &c->slots[i];
			int dt = (round * 3 + i) % COLL_DTYPE_MAX;
			size_t cnt = counts[(round + i) % ARRAY_SIZE(counts)];
			int si = 2;

			if (i == COLL_ALLREDUCE && round % 2 == 0) {
				cnt = sweep_count(4, i, dt, c->n);
				si = 4;
			}
			if (i == COLL_BARRIER)
				cnt = 0;
			rotate(c, &s->p, i, dt, (round + i) % COLL_REDOP_MAX,
			       cnt, si);
			s->p.soff = 8 * ((round + i) % 5) * (si != 4);
			s->p.roff = 24 * ((round + 2 * i) % 7) * (si != 4);
			if (prepare(c, s) || submit(c, s, true))
				return -1;
		}
		switch (round % 3) {
		case 0:			/* wait, last submitted first */
			for (i = COLL_PRIM_MAX - 1; i >= 0; i--)
				if (nb_collect(c, &c->slots[i],
					       coll_wait(&c->slots[i].req, 0)))
					return -1;
			break;
		case 1:
			if (nb_collect_polling(c, fd))
				return -1;
			break;
		default:		/* wait with a timeout, in order */
			for (i = 0; i < COLL_PRIM_MAX; i++) {
				struct slot *s = &c->slots[i];

				r = coll_wait(&s->req, OOB_TIMEOUT_MS);
				if (r == -ETIMEDOUT) {
					report_call(c, &s->p, "not complete after %d ms",
						    OOB_TIMEOUT_MS);
					return -1;
				}
				if (nb_collect(c, s, r))
					return -1;
			}
			break;
		}
		r = st_poll_in(fd, 0);
		if (r != 0) {
			st_log("FAIL nonblocking n=%d rank=%d: POLLIN after collecting everything (round %d)",
			       c->n, c->rank, round);
			return -1;
		}
	}
	if (c->rank == 0)
		st_log("nonblocking n=%d: %lu requests in %.1f s", c->n,
		       c->ncalls, (st_now_ns() - t0) / 1e9);
	return 0;
}

/* ---- rank processes ------------------------------------------------------ */

static int rank_main(int rank, void *arg)
{
	const struct rarg *a = arg;
	struct rctx c = { .a = a, .n = a->n, .rank = rank };
	const char *name = a->test == TEST_NONBLOCKING ? "nonblocking" :
			   prim_names[a->test];
	int r, ret = 1, i;

	c.tab = malloc(PERIOD * 8);
	c.ref = malloc(PERIOD * 8);
	c.refd = malloc(PERIOD * sizeof(double));
	c.keys = calloc(a->n, sizeof(*c.keys));
	c.slots = calloc(COLL_PRIM_MAX, sizeof(*c.slots));
	if (!c.tab || !c.ref || !c.refd || !c.keys || !c.slots) {
		st_log("FAIL %s n=%d rank=%d: out of memory", name, a->n, rank);
		goto out_fail;
	}

	r = coll_comm_init(&c.comm, a->n, rank, &a->id, JOIN_TIMEOUT_MS);
	if (r) {
		st_log("FAIL %s n=%d rank=%d: coll_comm_init: %s", name, a->n,
		       rank, st_errname(r));
		goto out_fail;
	}
	if (coll_comm_rank(c.comm) != rank || coll_comm_size(c.comm) != a->n) {
		st_log("FAIL %s n=%d rank=%d: coll_comm_rank/size say %d/%d",
		       name, a->n, rank, coll_comm_rank(c.comm),
		       coll_comm_size(c.comm));
		goto out_destroy;
	}

	if (a->matrix)
		r = matrix(&c, a->test);
	else if (a->test == TEST_NONBLOCKING)
		r = nonblocking_test(&c);
	else if (a->test == COLL_BARRIER)
		r = barrier_test(&c);
	else
		r = sweep(&c, a->test);
	if (r)
		goto out_destroy;

	/* Nobody leaves before every rank is done with the last call. */
	if (st_oob_barrier(&a->shm->oob, a->n, OOB_TIMEOUT_MS)) {
		st_log("FAIL %s n=%d rank=%d: final out-of-band barrier: %s",
		       name, a->n, rank, a->shm->oob.failed ?
		       "another rank failed" : "timed out");
		goto out_destroy;
	}
	ret = 0;
out_destroy:
	if (ret)
		__atomic_store_n(&a->shm->oob.failed, 1, __ATOMIC_RELEASE);
	r = coll_comm_destroy(c.comm);
	if (r) {
		st_log("FAIL %s n=%d rank=%d: coll_comm_destroy: %s", name,
		       a->n, rank, st_errname(r));
		ret = 1;
	}
	for (i = 0; i < COLL_PRIM_MAX; i++) {
		int w;

		for (w = 0; w < AR_NUM; w++)
			arena_free(&c.slots[i].ar[w]);
	}
	return ret;
out_fail:
	__atomic_store_n(&a->shm->oob.failed, 1, __ATOMIC_RELEASE);
	return 1;
}

static uint64_t test_seed(void)
{
	static uint64_t seed;
	const char *e;

	if (seed)
		return seed;
	e = getenv("COLL_SEED");
	if (e && *e)
		seed = strtoull(e, NULL, 16);
	if (!seed)
		seed = mix64(st_now_ns() ^ ((uint64_t)getpid() << 32));
	return seed;
}

/* Seed picked once, before the harness forks the tests. */
static void __attribute__((constructor)) seed_init(void)
{
	test_seed();
}

/* ---- the tests --------------------------------------------------------------- */

FIXTURE(correct) {
	int unused;
};

FIXTURE_VARIANT(correct) {
	int nranks;
};

FIXTURE_VARIANT_ADD(correct, ranks1) { .nranks = 1 };
FIXTURE_VARIANT_ADD(correct, ranks2) { .nranks = 2 };
FIXTURE_VARIANT_ADD(correct, ranks3) { .nranks = 3 };
FIXTURE_VARIANT_ADD(correct, ranks4) { .nranks = 4 };
FIXTURE_VARIANT_ADD(correct, ranks8) { .nranks = 8 };

FIXTURE_SETUP(correct)
{
	int fd = st_dev_open();

	if (fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-fd));
	close(fd);
}

FIXTURE_TEARDOWN(correct)
{
}

/* The 6.1 harness runs the test body even when the setup SKIPped. */
#define SKIP_IF_SETUP_SKIPPED() do { if (_metadata->skip) return; } while (0)

static void run_ranks(struct __test_metadata *_metadata, int nranks, int test,
		      bool matrix)
{
	struct rarg a = {
		.n = nranks,
		.test = test,
		.matrix = matrix,
		.variant_off = nranks * 7,
		.seed = test_seed(),
	};
	struct st_ranks rk;
	int64_t t0 = st_now_ns();
	int bad, i, r;

	a.shm = st_shared(sizeof(*a.shm));
	ASSERT_NE(NULL, a.shm);
	r = coll_get_unique_id(&a.id);
	ASSERT_EQ(0, r) TH_LOG("coll_get_unique_id: %s", st_errname(r));

	ASSERT_EQ(0, st_ranks_spawn(&rk, nranks, rank_main, &a));
	bad = st_ranks_wait(&rk, RANKS_TIMEOUT_MS, 10000);
	for (i = 0; i < rk.n; i++) {
		char st[64];

		if (rk.done[i] && !rk.killed[i] && WIFEXITED(rk.status[i]) &&
		    !WEXITSTATUS(rk.status[i]))
			continue;
		TH_LOG("rank %d of %d: %s", i, nranks,
		       st_status_str(&rk, i, st, sizeof(st)));
	}
	if (bad)
		TH_LOG("seed %016llx (COLL_SEED=%016llx repeats the inputs), %.1f s",
		       (unsigned long long)a.seed, (unsigned long long)a.seed,
		       (st_now_ns() - t0) / 1e9);
	munmap(a.shm, sizeof(*a.shm));
	ASSERT_EQ(0, bad);
}

#define PRIM_TEST(name, prim)						\
	TEST_F_TIMEOUT(correct, name, TEST_TIMEOUT_S)			\
	{								\
		SKIP_IF_SETUP_SKIPPED();				\
		run_ranks(_metadata, variant->nranks, prim, false);	\
	}

PRIM_TEST(allreduce, COLL_ALLREDUCE)
PRIM_TEST(reduce, COLL_REDUCE)
PRIM_TEST(reducescatter, COLL_REDUCESCATTER)
PRIM_TEST(allgather, COLL_ALLGATHER)
PRIM_TEST(broadcast, COLL_BROADCAST)
PRIM_TEST(scatter, COLL_SCATTER)
PRIM_TEST(gather, COLL_GATHER)
PRIM_TEST(alltoall, COLL_ALLTOALL)
PRIM_TEST(barrier, COLL_BARRIER)
PRIM_TEST(nonblocking, TEST_NONBLOCKING)

/* The exhaustive matrix (see the top of the file), for 3 and 4 ranks. */
FIXTURE(matrix) {
	int unused;
};

FIXTURE_VARIANT(matrix) {
	int nranks;
};

FIXTURE_VARIANT_ADD(matrix, ranks3) { .nranks = 3 };
FIXTURE_VARIANT_ADD(matrix, ranks4) { .nranks = 4 };

FIXTURE_SETUP(matrix)
{
	int fd = st_dev_open();

	if (fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-fd));
	close(fd);
}

FIXTURE_TEARDOWN(matrix)
{
}

#define MATRIX_TEST(name, prim)						\
	TEST_F_TIMEOUT(matrix, name, TEST_TIMEOUT_S)			\
	{								\
		SKIP_IF_SETUP_SKIPPED();				\
		run_ranks(_metadata, variant->nranks, prim, true);	\
	}

MATRIX_TEST(allreduce, COLL_ALLREDUCE)
MATRIX_TEST(reduce, COLL_REDUCE)
MATRIX_TEST(reducescatter, COLL_REDUCESCATTER)
MATRIX_TEST(allgather, COLL_ALLGATHER)
MATRIX_TEST(broadcast, COLL_BROADCAST)
MATRIX_TEST(scatter, COLL_SCATTER)
MATRIX_TEST(gather, COLL_GATHER)
MATRIX_TEST(alltoall, COLL_ALLTOALL)

/*
 * The test's own arithmetic, no device needed: half/bfloat16 conversions
 * against the compiler's where it has them, and the exactness the sweep
 * relies on.
 */
TEST(reference_selfcheck)
{
	static const int dtypes[] = { COLL_FP16, COLL_BF16, COLL_FP32, COLL_FP64 };
	unsigned int i, t;
	uint32_t u;

	/* Every half and bfloat16 round-trips through float. */
	for (u = 0; u < 0x10000; u++) {
		float h = f16_to_f32(u), b = bf16_to_f32(u);

		if (h == h)
			ASSERT_EQ(u, f32_to_f16(h)) TH_LOG("fp16 0x%04x", u);
		if (b == b)
			ASSERT_EQ(u, f32_to_bf16(b)) TH_LOG("bf16 0x%04x", u);
	}
#ifdef __FLT16_MAX__
	/* Rounding of floats that are not halves, against the compiler. */
	for (u = 0; u < (1u << 18); u++) {
		uint32_t x = (uint32_t)mix64(u);
		float f = bits_f32(x);
		_Float16 h = (_Float16)f;
		uint16_t hb;

		if (f != f)
			continue;
		memcpy(&hb, &h, 2);
		ASSERT_EQ(hb, f32_to_f16(f)) TH_LOG("float 0x%08x", x);
		ASSERT_EQ(f32_bits((float)h), f32_bits(f16_to_f32(hb)));
	}
#endif
	/* bf16 rounds to nearest even. */
	ASSERT_EQ(0x3f80, f32_to_bf16(bits_f32(0x3f808000)));
	ASSERT_EQ(0x3f82, f32_to_bf16(bits_f32(0x3f818000)));
	ASSERT_EQ(0x3f81, f32_to_bf16(bits_f32(0x3f808001)));

	/* The value classes are exact in every float type. */
	for (t = 0; t < ARRAY_SIZE(dtypes); t++) {
		for (i = 0; i < COLL_REDOP_MAX; i++) {
			struct gen g;
			unsigned int v;

			gen_init(&g, dtypes[t], i);
			for (v = 0; v < g.m; v++)
				ASSERT_EQ(g.dv[v], decode_fp(dtypes[t], g.bits[v]));
		}
	}

	/* Integer reference: wrapping sum, AVG truncating toward zero. */
	{
		struct gen g;
		uint64_t keys[3] = { 1, 2, 3 };
		uint8_t out[64];
		double outd[64];
		int j;

		gen_init(&g, COLL_INT8, COLL_AVG);
		ref_reduce(&g, keys, 3, 64, out, outd);
		for (j = 0; j < 64; j++) {
			int8_t a = gen_bits(&g, 1, j), b = gen_bits(&g, 2, j),
			       c = gen_bits(&g, 3, j);
			int8_t sum = (int8_t)(uint8_t)((uint8_t)a + (uint8_t)b +
						       (uint8_t)c);

			ASSERT_EQ(sum / 3, (int8_t)out[j]);
		}
		gen_init(&g, COLL_UINT32, COLL_MIN);
		ref_reduce(&g, keys, 3, 64, out, outd);
		for (j = 0; j < 16; j++) {
			uint32_t a = gen_bits(&g, 1, j), b = gen_bits(&g, 2, j),
				 c = gen_bits(&g, 3, j), m, got;

			m = a < b ? a : b;
			m = m < c ? m : c;
			memcpy(&got, out + 4 * j, 4);
			ASSERT_EQ(m, got);
		}
		gen_init(&g, COLL_INT32, COLL_MAX);
		ref_reduce(&g, keys, 3, 16, out, outd);
		for (j = 0; j < 16; j++) {
			int32_t a = gen_bits(&g, 1, j), b = gen_bits(&g, 2, j),
				c = gen_bits(&g, 3, j), m, got;

			m = a > b ? a : b;
			m = m > c ? m : c;
			memcpy(&got, out + 4 * j, 4);
			ASSERT_EQ(m, got);
		}
	}
}

TEST_HARNESS_MAIN
