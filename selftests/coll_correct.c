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
 * call, q, c, j) that never repeats within a buffer:
 *  - data movement (no op) of 32- and 64-bit types: the element's bits
 *    are a bijection, keyed by the call, of its position
 *    (q * nranks + c) * count + j, so every element of a call is distinct
 *    and names its rank, chunk and index (a wrong element is reported
 *    with the input it is, if any).  32-bit types take positions modulo
 *    2^32: unique while nranks^2 * count < 2^32, as everywhere here.
 *  - everything else (8- and 16-bit movement, reductions): a counter-based
 *    stream keyed by (seed, call, q, c) (wyrand: one 64x64->128-bit
 *    multiply per 64 bits, period 2^64), whose bytes are the elements, or
 *    whose 16-bit picks choose each element from its value class below.
 * Results are compared element by element with a reference computed over
 * the whole buffer, a block at a time, generating each rank's stream in
 * turn; float classes are reduced as integers (class indexes), so the
 * reference needs no float arithmetic, which TCG may emulate in software.
 * AllReduce and Reduce of >= SHARE_MIN elements share the work: each rank
 * computes 1/nranks of the reference into memory shared by the ranks,
 * and after an out-of-band barrier every rank with a result compares it
 * with all of the reference.
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
 * The paths tests (nranks 2 and 4) run the sweep, without the 64 MiB part,
 * with each executor path forced through the module's parameters: solo,
 * cooperative, and ring with 4 KiB chunks (see FIXTURE(paths)).
 *
 * The group tests run the sweep's kinds of calls in groups (group_test()).
 *
 * COLL_SEED=<hex> repeats a run; COLL_CORRECT_BIG=0 skips the 64 MiB part;
 * COLL_CORRECT_ONLY=<test> runs only the correct.* tests of that name.
 * COLL_CORRECT_MAXBYTES=<n> (for slow debug kernels) makes "big" n bytes
 * instead of 1 MiB, and skips the 64 MiB part when n < 64 MiB; the fixed
 * sizes 0, 1, 1001 and 4099 are kept.
 */
#include <math.h>

#include <liburing.h>

#include "coll_selftest.h"
#include <libcollective.h>
#include "kselftest_harness.h"

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
	"auto", "ring", "direct", "naive", "tree", "hier",
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

static inline uint32_t fmix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bU;
	h ^= h >> 13;
	h *= 0xc2b2ae35U;
	return h ^ (h >> 16);
}

/* The inverses, to say where an unexpected element came from. */
static uint64_t inv_mul64(uint64_t a)	/* a odd: a * x == 1 mod 2^64 */
{
	uint64_t x = a;			/* right in the low 3 bits */
	int i;

	for (i = 0; i < 5; i++)
		x *= 2 - a * x;
	return x;
}

static uint64_t unxorshift64(uint64_t y, unsigned int s)
{
	uint64_t x = y;
	unsigned int i;

	for (i = s; i < 64; i += s)
		x = y ^ (x >> s);
	return x;
}

static uint32_t unxorshift32(uint32_t y, unsigned int s)
{
	uint32_t x = y;
	unsigned int i;

	for (i = s; i < 32; i += s)
		x = y ^ (x >> s);
	return x;
}

static uint64_t unmix64(uint64_t z)
{
	z = unxorshift64(z, 31) * inv_mul64(0x94d049bb133111ebULL);
	z = unxorshift64(z, 27) * inv_mul64(0xbf58476d1ce4e5b9ULL);
	return unxorshift64(z, 30);
}

static uint32_t unfmix32(uint32_t h)
{
	h = unxorshift32(h, 16) * (uint32_t)inv_mul64(0xc2b2ae35U);
	h = unxorshift32(h, 13) * (uint32_t)inv_mul64(0x85ebca6bU);
	return unxorshift32(h, 16);
}

/* Key of chunk @chunk of rank @rank's input in the call seeded @cseed. */
static uint64_t chunk_key(uint64_t cseed, int rank, int chunk)
{
	return mix64(cseed ^ mix64(((uint64_t)(rank + 1) << 32) |
				   (uint32_t)(chunk + 1)));
}

/*
 * Output @o of the stream keyed @key (wyrand: a counter through a 64x64 ->
 * 128-bit multiply).  Counter-based, so any stretch of a stream can be
 * generated on its own, and its period is 2^64 outputs.
 */
#define STREAM_GAMMA	0xa0761d6478bd642fULL
#define STREAM_XOR	0xe7037ed1a0b428dbULL

static inline uint64_t stream_next(uint64_t *s)
{
	unsigned __int128 m;

	*s += STREAM_GAMMA;
	m = (unsigned __int128)*s * (*s ^ STREAM_XOR);
	return (uint64_t)(m >> 64) ^ (uint64_t)m;
}

/* The stream's state just before output @o. */
static inline uint64_t stream_seek(uint64_t key, uint64_t o)
{
	return key + o * STREAM_GAMMA;
}

static inline uint8_t pick16(uint64_t h, unsigned int m)
{
	return (uint8_t)(((h & 0xffff) * m) >> 16);
}

/*
 * FOR_PICKS runs @body for @j (the caller's size_t) = 0 .. @L - 1 with p
 * the class index (< @m) of element @j0 + j of the stream keyed @key:
 * output o gives the picks of elements 4o .. 4o+3, 16 bits each, from its
 * low bits up.  FOR_RAW does the same with v the element of type @T:
 * output o gives elements po .. po+p-1, p = 8 / sizeof(T), from its low
 * bits up.  Generation and use in one loop: under TCG every memory access
 * costs far more than arithmetic.
 */
#define FOR_PICKS(j, key, j0, L, m, body)				\
do {									\
	uint64_t s_ = stream_seek((key), (j0) / 4), h_;			\
	unsigned int k_ = (j0) % 4, m_ = (m), p;			\
									\
	j = 0;								\
	while (j < (L)) {						\
		h_ = stream_next(&s_);					\
		if (k_ == 0 && j + 4 <= (L)) {				\
			p = pick16(h_, m_); body; j++;			\
			p = pick16(h_ >> 16, m_); body; j++;		\
			p = pick16(h_ >> 32, m_); body; j++;		\
			p = pick16(h_ >> 48, m_); body; j++;		\
			continue;					\
		}							\
		for (h_ >>= 16 * k_; k_ < 4 && j < (L);			\
		     k_++, j++, h_ >>= 16) {				\
			p = pick16(h_, m_);				\
			body;						\
		}							\
		k_ = 0;							\
	}								\
} while (0)

#define FOR_RAW(j, T, key, j0, L, body)					\
do {									\
	const unsigned int per_ = 8 / sizeof(T);			\
	uint64_t s_ = stream_seek((key), (j0) / per_), h_;		\
	unsigned int k_ = (j0) % per_;					\
	T v;								\
									\
	j = 0;								\
	while (j < (L)) {						\
		h_ = stream_next(&s_);					\
		if (k_ == 0 && j + per_ <= (L)) {			\
			for (k_ = 0; k_ < per_; k_++, j++) {		\
				v = (T)h_;				\
				h_ >>= 8 * sizeof(T) % 64;		\
				body;					\
			}						\
		} else {						\
			for (h_ >>= 8 * sizeof(T) * k_ % 64;		\
			     k_ < per_ && j < (L); k_++, j++) {		\
				v = (T)h_;				\
				h_ >>= 8 * sizeof(T) % 64;		\
				body;					\
			}						\
		}							\
		k_ = 0;							\
	}								\
} while (0)

#define GEN_MAXVALS 201
/* float results: SUM of up to COLL_ST_MAX_RANKS values in [-8, 8] */
#define GEN_MAXRES (16 * COLL_ST_MAX_RANKS + 1)

enum gen_kind {
	GEN_UNIQ,		/* movement, 32/64-bit: a bijection of the position */
	GEN_RAW,		/* the stream's bytes */
	GEN_CLASS,		/* values of a class picked by the stream */
};

struct gen {
	int dtype;
	int op;			/* enum coll_redop, or -1: no reduction */
	unsigned int es;
	enum gen_kind kind;
	unsigned int m;		/* values in the class */
	uint64_t bits[GEN_MAXVALS];	/* their encodings */
	double dv[GEN_MAXVALS];		/* their values */
	/* the call (gen_bind) */
	uint64_t cseed;
	uint64_t ukey;		/* GEN_UNIQ */
	int n;
	size_t count;
	/* float reductions: every possible result (see res_index()) */
	unsigned int nres;
	uint64_t rbits[GEN_MAXRES];
	double rdv[GEN_MAXRES];
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
	if (op < 0) {
		g->kind = d->es >= 4 ? GEN_UNIQ : GEN_RAW;
		return;
	}
	if (!d->fp && op != COLL_PROD) {
		g->kind = GEN_RAW;
		return;
	}
	g->kind = GEN_CLASS;
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

/* The call the inputs are for: its seed, nranks and count. */
static void gen_bind(struct gen *g, uint64_t cseed, int n, size_t count)
{
	unsigned int r, span = 2 * n + 1;

	g->cseed = cseed;
	g->ukey = mix64(cseed ^ 0x756e697175650000ULL);
	g->n = n;
	g->count = count;
	g->nres = 0;
	if (g->kind != GEN_CLASS || !dts[g->dtype].fp)
		return;
	switch (g->op) {
	case COLL_SUM:
	case COLL_AVG:
		g->nres = 16 * n + 1;
		for (r = 0; r < g->nres; r++)
			g->rdv[r] = (double)r - 8 * n;
		break;
	case COLL_PROD:
		g->nres = 2 * span;
		for (r = 0; r < g->nres; r++)
			g->rdv[r] = (r < span ? 1 : -1) *
				    ldexp(1, (int)(r % span) - n);
		break;
	default:
		g->nres = 201;
		for (r = 0; r < g->nres; r++)
			g->rdv[r] = (double)r - 100;
		break;
	}
	for (r = 0; r < g->nres; r++)
		g->rbits[r] = encode_fp(g->dtype, g->rdv[r]);
}

/*
 * GEN_UNIQ: element j of chunk c of rank q is at position
 * (q * n + c) * count + j, which no other element of the call shares; its
 * bits are a bijection (keyed by the call) of that position.
 */
static inline uint64_t uniq_pos(const struct gen *g, int q, int chunk,
				size_t j)
{
	return ((uint64_t)q * g->n + chunk) * g->count + j;
}

static inline uint64_t uniq_bits(const struct gen *g, uint64_t t)
{
	if (g->es == 8)
		return mix64(t ^ g->ukey);
	return fmix32((uint32_t)t ^ (uint32_t)g->ukey) ^
	       (uint32_t)(g->ukey >> 32);
}

/* The position whose bits are @v (modulo 2^32 for 32-bit types). */
static uint64_t uniq_unbits(const struct gen *g, uint64_t v)
{
	if (g->es == 8)
		return unmix64(v) ^ g->ukey;
	return unfmix32((uint32_t)v ^ (uint32_t)(g->ukey >> 32)) ^
	       (uint32_t)g->ukey;
}

/*
 * Elements @j0 .. @j0 + @L - 1 of chunk @chunk of rank @q's input, as bits
 * at @out (L * es bytes).
 */
static void gen_input(const struct gen *g, int q, int chunk, size_t j0,
		      size_t L, uint8_t *out)
{
	unsigned int es = g->es;
	uint64_t t, key;
	size_t j;

	switch (g->kind) {
	case GEN_UNIQ:
		t = uniq_pos(g, q, chunk, j0);
		if (es == 8) {
			for (j = 0; j < L; j++) {
				uint64_t v = uniq_bits(g, t + j);

				memcpy(out + 8 * j, &v, 8);
			}
		} else {
			for (j = 0; j < L; j++) {
				uint32_t v = uniq_bits(g, t + j);

				memcpy(out + 4 * j, &v, 4);
			}
		}
		break;
	case GEN_RAW:
		key = chunk_key(g->cseed, q, chunk);
		switch (es) {
		case 1:
			FOR_RAW(j, uint8_t, key, j0, L, out[j] = v);
			break;
		case 2:
			FOR_RAW(j, uint16_t, key, j0, L,
				memcpy(out + 2 * j, &v, 2));
			break;
		case 4:
			FOR_RAW(j, uint32_t, key, j0, L,
				memcpy(out + 4 * j, &v, 4));
			break;
		default:
			FOR_RAW(j, uint64_t, key, j0, L,
				memcpy(out + 8 * j, &v, 8));
			break;
		}
		break;
	default:
		key = chunk_key(g->cseed, q, chunk);
		switch (es) {
		case 1:
			FOR_PICKS(j, key, j0, L, g->m, out[j] = g->bits[p]);
			break;
		case 2:
			FOR_PICKS(j, key, j0, L, g->m, {
				uint16_t v = g->bits[p];

				memcpy(out + 2 * j, &v, 2);
			});
			break;
		case 4:
			FOR_PICKS(j, key, j0, L, g->m, {
				uint32_t v = g->bits[p];

				memcpy(out + 4 * j, &v, 4);
			});
			break;
		default:
			FOR_PICKS(j, key, j0, L, g->m,
				  memcpy(out + 8 * j, &g->bits[p], 8));
			break;
		}
		break;
	}
}

/* Elements generated, reduced and compared at a time. */
#define BLK		4096

struct scratch {
	uint8_t *want;		/* BLK elements: expected bits */
	uint64_t *acc;		/* BLK integer partial results */
	uint32_t *acc32;	/* BLK float partial results (class indexes) */
	double *accd;		/* BLK: AVG's reference */
};

static int scratch_alloc(struct scratch *w)
{
	w->want = malloc(BLK * 8);
	w->acc = malloc(BLK * sizeof(*w->acc));
	w->acc32 = malloc(BLK * sizeof(*w->acc32));
	w->accd = malloc(BLK * sizeof(*w->accd));
	return w->want && w->acc && w->acc32 && w->accd ? 0 : -1;
}

static void scratch_free(struct scratch *w)
{
	free(w->want);
	free(w->acc);
	free(w->acc32);
	free(w->accd);
	memset(w, 0, sizeof(*w));
}

/*
 * Integers, one rank's elements @j0 .. @j0 + @L - 1 (of the stream keyed
 * @key) folded into @acc: in 64 bits with the element's sign extension;
 * sums and products wrap, and their low bits are those of the element
 * type's wrapping arithmetic.
 */
#define DEFINE_FOLD(name, T)						\
static void name(uint64_t *acc, uint64_t key, size_t j0, size_t L,	\
		 int op, bool first)					\
{									\
	size_t j;							\
									\
	if (first) {							\
		FOR_RAW(j, T, key, j0, L, acc[j] = (uint64_t)v);	\
		return;							\
	}								\
	switch (op) {							\
	case COLL_PROD:							\
		FOR_RAW(j, T, key, j0, L, acc[j] *= (uint64_t)v);	\
		break;							\
	case COLL_MIN:							\
		FOR_RAW(j, T, key, j0, L,				\
			if (v < (T)acc[j]) acc[j] = (uint64_t)v);	\
		break;							\
	case COLL_MAX:							\
		FOR_RAW(j, T, key, j0, L,				\
			if (v > (T)acc[j]) acc[j] = (uint64_t)v);	\
		break;							\
	default:							\
		FOR_RAW(j, T, key, j0, L, acc[j] += (uint64_t)v);	\
		break;							\
	}								\
}

DEFINE_FOLD(fold_i8, int8_t)
DEFINE_FOLD(fold_u8, uint8_t)
DEFINE_FOLD(fold_i32, int32_t)
DEFINE_FOLD(fold_u32, uint32_t)
DEFINE_FOLD(fold_i64, int64_t)
DEFINE_FOLD(fold_u64, uint64_t)

static void fold_int(int dtype, uint64_t *acc, uint64_t key, size_t j0,
		     size_t L, int op, bool first)
{
	switch (dtype) {
	case COLL_INT8: fold_i8(acc, key, j0, L, op, first); break;
	case COLL_UINT8: fold_u8(acc, key, j0, L, op, first); break;
	case COLL_INT32: fold_i32(acc, key, j0, L, op, first); break;
	case COLL_UINT32: fold_u32(acc, key, j0, L, op, first); break;
	case COLL_INT64: fold_i64(acc, key, j0, L, op, first); break;
	default: fold_u64(acc, key, j0, L, op, first); break;
	}
}

/*
 * Floats are reduced over their class indexes, in integers (no float
 * arithmetic, which TCG may emulate in software): SUM and AVG add the
 * indexes (value = index - 8), MIN and MAX take the least or greatest
 * index (value = index - 100), PROD tracks sign and power of two
 * (+-0.5, +-1, +-2) as (negative << 16) + 1024 + exponent.  res_index()
 * turns the result into an index of g->rdv[] and g->rbits[].
 */
static const int8_t fprod_exp[] = { 1, 0, -1, -1, 0, 1 };

static inline unsigned int res_index(const struct gen *g, uint32_t acc)
{
	if (g->op == COLL_PROD)
		return (acc >> 16) * (2 * g->n + 1) + (acc & 0xffff) - 1024 +
		       g->n;
	return acc;
}

/*
 * Reference for elements @j0 .. @j0 + @L - 1 of the reduction over all
 * g->n ranks of chunk @chunk, each rank's input generated in turn.
 * Floats: exact (see the top of the file), encoded into w->want, but AVG
 * left in w->accd as double.  Integers: in the element type, wrapping,
 * into w->want.
 */
static void ref_block(const struct gen *g, int chunk, size_t j0, size_t L,
		      struct scratch *w)
{
	const struct dtinfo *d = &dts[g->dtype];
	unsigned int es = g->es;
	int n = g->n, r;
	size_t j;

	if (d->fp) {
		uint32_t *acc = w->acc32;
		uint32_t pxor[ARRAY_SIZE(fprod_exp)];
		uint32_t padd[ARRAY_SIZE(fprod_exp)];

		for (j = 0; j < ARRAY_SIZE(fprod_exp); j++) {
			pxor[j] = j < 3 ? 1u << 16 : 0;	/* fprod[] < 0 */
			padd[j] = (uint32_t)(int32_t)fprod_exp[j];
		}
		for (r = 0; r < n; r++) {
			uint64_t key = chunk_key(g->cseed, r, chunk);

			if (r == 0 && g->op != COLL_PROD) {
				FOR_PICKS(j, key, j0, L, g->m, acc[j] = p);
				continue;
			}
			switch (g->op) {
			case COLL_PROD:
				if (r == 0)
					for (j = 0; j < L; j++)
						acc[j] = 1024;
				FOR_PICKS(j, key, j0, L, g->m,
					  acc[j] = (acc[j] ^ pxor[p]) + padd[p]);
				break;
			case COLL_MIN:
				FOR_PICKS(j, key, j0, L, g->m,
					  if (p < acc[j]) acc[j] = p);
				break;
			case COLL_MAX:
				FOR_PICKS(j, key, j0, L, g->m,
					  if (p > acc[j]) acc[j] = p);
				break;
			default:
				FOR_PICKS(j, key, j0, L, g->m, acc[j] += p);
				break;
			}
		}
		for (j = 0; j < L; j++)
			acc[j] = res_index(g, acc[j]);
		if (g->op == COLL_AVG) {
			for (j = 0; j < L; j++)
				w->accd[j] = g->rdv[acc[j]] / n;
			return;
		}
		switch (es) {
		case 2:
			for (j = 0; j < L; j++) {
				uint16_t b = g->rbits[acc[j]];

				memcpy(w->want + 2 * j, &b, 2);
			}
			break;
		case 4:
			for (j = 0; j < L; j++) {
				uint32_t b = g->rbits[acc[j]];

				memcpy(w->want + 4 * j, &b, 4);
			}
			break;
		default:
			for (j = 0; j < L; j++)
				memcpy(w->want + 8 * j, &g->rbits[acc[j]], 8);
			break;
		}
		return;
	}

	for (r = 0; r < n; r++) {
		uint64_t key = chunk_key(g->cseed, r, chunk);
		uint64_t *acc = w->acc;

		if (g->kind != GEN_CLASS)
			fold_int(g->dtype, acc, key, j0, L, g->op, r == 0);
		else if (r == 0)	/* PROD of small integers */
			FOR_PICKS(j, key, j0, L, g->m, acc[j] = g->bits[p]);
		else
			FOR_PICKS(j, key, j0, L, g->m, acc[j] *= g->bits[p]);
	}
	if (g->op == COLL_AVG) {
		for (j = 0; j < L; j++) {
			uint64_t acc = canon(w->acc[j], es, d->sgn);

			if (d->sgn)
				acc = (uint64_t)((int64_t)acc / n);
			else
				acc = acc / (uint64_t)n;
			w->acc[j] = acc;
		}
	}
	switch (es) {
	case 1:
		for (j = 0; j < L; j++)
			w->want[j] = (uint8_t)w->acc[j];
		break;
	case 4:
		for (j = 0; j < L; j++) {
			uint32_t v = (uint32_t)w->acc[j];

			memcpy(w->want + 4 * j, &v, 4);
		}
		break;
	case 8:
		memcpy(w->want, w->acc, L * 8);
		break;
	default:
		for (j = 0; j < L; j++)
			store_elem(w->want + j * es, es, w->acc[j]);
		break;
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
	int algo;		/* every call's algorithm, or -1: rotate */
	bool no_huge;		/* no 64 MiB AllReduce part */
	uint64_t seed;
	coll_id_t id;
	struct shm *shm;
	uint8_t *share;		/* 2 x share_bytes, shared (see share_ref()) */
	size_t share_bytes;
};

#define TEST_NONBLOCKING COLL_PRIM_MAX
#define TEST_GROUP	(COLL_PRIM_MAX + 1)
#define TEST_URING	(COLL_PRIM_MAX + 2)
#define NSLOTS		32	/* TEST_GROUP's ops per group, at most */

struct rctx {
	const struct rarg *a;
	coll_comm_t *comm;
	int n, rank;
	struct scratch w;	/* expected values, a block at a time */
	unsigned long ncalls;
	unsigned long k;
	struct slot *slots;	/* NSLOTS */
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
 * For a data-movement element of 32 or 64 bits that is not what was
 * expected: whose input it is, if any.
 */
static void whence(const struct gen *g, uint64_t got, char *buf, size_t len)
{
	uint64_t t, per = (uint64_t)g->n * g->count;

	*buf = 0;
	if (g->kind != GEN_UNIQ || !g->count)
		return;
	t = uniq_unbits(g, got);
	if (t < (uint64_t)g->n * per)
		snprintf(buf, len, " (got element %llu of chunk %d of rank %d's input)",
			 (unsigned long long)(t % g->count),
			 (int)(t % per / g->count), (int)(t / per));
	else
		snprintf(buf, len, " (got no input of this call)");
}

/*
 * @L elements at @buf against the expected bits at @want, exactly (floats
 * of a reducing op compare as numbers, so -0 == +0).  Element indexes are
 * reported from @base.  Adds the wrong elements to *@bad.
 */
static void cmp_block(const struct rctx *c, const struct slot *s,
		      const char *what, size_t base, const uint8_t *buf,
		      const uint8_t *want, size_t L, long *bad)
{
	const struct gen *g = &s->g;
	unsigned int es = g->es;
	bool numeric = g->op >= 0 && dts[g->dtype].fp;
	size_t j;

	if (!memcmp(buf, want, L * es))
		return;
	for (j = 0; j < L; j++) {
		uint64_t a = load_elem(buf + j * es, es);
		uint64_t b = load_elem(want + j * es, es);
		char w[192], from[128];

		if (a == b)
			continue;
		if (numeric && decode_fp(g->dtype, a) == decode_fp(g->dtype, b))
			continue;
		if ((*bad)++ < MAX_REPORT) {
			fmt_elem(w, sizeof(w) - sizeof(from), g->dtype, b);
			whence(g, a, from, sizeof(from));
			strcat(w, from);
			report_elem(c, &s->p, what, base + j, a, w);
		}
	}
}

/* AVG of floats: within the type's tolerance of @want (doubles). */
static void cmp_avg_block(const struct rctx *c, const struct slot *s,
			  const char *what, size_t base, const uint8_t *buf,
			  const double *want, size_t L, long *bad)
{
	const struct gen *g = &s->g;
	double tol = dts[g->dtype].avg_tol;
	unsigned int es = g->es;
	size_t j;

	for (j = 0; j < L; j++) {
		double got = decode_fp(g->dtype, load_elem(buf + j * es, es));
		double ref = want[j];
		double lim = tol * (fabs(ref) > 1 ? fabs(ref) : 1);

		if (!(fabs(got - ref) <= lim) && (*bad)++ < MAX_REPORT) {
			char w[80];

			snprintf(w, sizeof(w), "%.12g (+-%.3g)", ref, lim);
			report_elem(c, &s->p, what, base + j,
				    load_elem(buf + j * es, es), w);
		}
	}
}

static long cmp_total(const struct rctx *c, const struct slot *s,
		      const char *what, long bad)
{
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

/*
 * Chunk @chunk of rank @q's input, expected at @buf (element @base on).
 * Returns the number of wrong elements.
 */
static long expect_input(struct rctx *c, const struct slot *s,
			 const char *what, size_t base, const uint8_t *buf,
			 int q, int chunk)
{
	unsigned int es = s->g.es;
	size_t cnt = s->p.count, j0, L;
	long bad = 0;

	for (j0 = 0; j0 < cnt; j0 += L) {
		L = cnt - j0 < BLK ? cnt - j0 : BLK;
		gen_input(&s->g, q, chunk, j0, L, c->w.want);
		cmp_block(c, s, what, base + j0, buf + j0 * es, c->w.want, L,
			  &bad);
	}
	return cmp_total(c, s, what, bad);
}

/*
 * AllReduce and Reduce in the sweep: every rank (the root) expects the
 * same result, so rather than each computing all of it (nranks inputs
 * generated per element), every rank computes 1/nranks of the blocks
 * into a buffer shared by the ranks (one of two, by call number: a rank
 * may write the next call's while another still compares this one) and,
 * after an out-of-band barrier, those with a result compare it with all
 * of the reference.  Every rank of the call must come here.  Returns the
 * shared reference, or NULL to compute it alone (below SHARE_MIN
 * elements the barrier costs more than it saves).
 */
#define SHARE_MIN	65536

static const uint8_t *share_ref(struct rctx *c, const struct slot *s,
				bool *failed)
{
	const struct rarg *a = c->a;
	bool avg = dts[s->p.dtype].fp && s->p.op == COLL_AVG;
	size_t cnt = s->p.count, nblk = (cnt + BLK - 1) / BLK, b;
	size_t esz = avg ? sizeof(double) : s->g.es;
	uint8_t *ref;

	*failed = false;
	if (!a->share || c->n < 2 || cnt < SHARE_MIN ||
	    cnt * esz > a->share_bytes ||
	    (s->p.prim != COLL_ALLREDUCE && s->p.prim != COLL_REDUCE))
		return NULL;
	ref = a->share + (s->p.k % 2) * a->share_bytes;
	for (b = nblk * c->rank / c->n; b < nblk * (c->rank + 1) / c->n; b++) {
		size_t j0 = b * BLK, L = cnt - j0 < BLK ? cnt - j0 : BLK;

		ref_block(&s->g, 0, j0, L, &c->w);
		memcpy(ref + j0 * esz, avg ? (void *)c->w.accd : c->w.want,
		       L * esz);
	}
	if (st_oob_barrier(&a->shm->oob, c->n, OOB_TIMEOUT_MS)) {
		report_call(c, &s->p, "out-of-band barrier before comparing with the shared reference: %s",
			    a->shm->oob.failed ? "another rank failed" :
			    "timed out");
		*failed = true;
	}
	return ref;
}

/* The reduction over all ranks of chunk @chunk, expected at @buf. */
static long expect_reduced(struct rctx *c, const struct slot *s,
			   const char *what, const uint8_t *buf, int chunk)
{
	bool avg = dts[s->p.dtype].fp && s->p.op == COLL_AVG, failed = false;
	unsigned int es = s->g.es;
	size_t cnt = s->p.count, j0, L;
	const uint8_t *ref = chunk ? NULL : share_ref(c, s, &failed);
	long bad = 0;

	if (failed)
		return 1;
	for (j0 = 0; j0 < cnt; j0 += L) {
		const uint8_t *want = c->w.want;
		const double *wantd = c->w.accd;

		L = cnt - j0 < BLK ? cnt - j0 : BLK;
		if (ref) {
			want = ref + j0 * es;
			wantd = (const double *)ref + j0;
		} else {
			ref_block(&s->g, chunk, j0, L, &c->w);
		}
		if (avg)
			cmp_avg_block(c, s, what, j0, buf + j0 * es, wantd, L,
				      &bad);
		else
			cmp_block(c, s, what, j0, buf + j0 * es, want, L, &bad);
	}
	return cmp_total(c, s, what, bad);
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
	unsigned int es = s->g.es;
	size_t cnt = s->p.count, j0, L;
	int ch;

	for (ch = 0; ch < nchunks; ch++) {
		for (j0 = 0; j0 < cnt; j0 += L) {
			L = cnt - j0 < BLK ? cnt - j0 : BLK;
			gen_input(&s->g, c->rank, ch, j0, L, c->w.want);
			memcpy(dst + (ch * cnt + j0) * es, c->w.want, L * es);
		}
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
	gen_bind(&s->g, p->cseed, c->n, p->count);
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

	/* Reduce: the ranks other than the root help with its reference. */
	if (p->prim == COLL_REDUCE && !s->recvn && cnt) {
		bool failed;

		share_ref(c, s, &failed);
		bad += failed;
	}
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
	p->algo = c->a->algo >= 0 ? c->a->algo : (int)(x % COLL_ALGO_MAX);
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
	    !c->a->no_huge && huge_enabled()) {
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

		p.algo = c->a->algo >= 0 ? c->a->algo :
			 (int)((i + c->a->variant_off) % COLL_ALGO_MAX);
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

/*
 * Groups (coll_group_start/end, COLL_GROUP): one group per data type, of
 * 25 collectives: AllReduces of 1, 1001 and 4099 elements with every op
 * (which the module fuses where they hold at most COLL_GROUP_FUSE_BYTES),
 * one of 0 elements, one of
 * the sweep's big size (not fused), every other primitive with 1001 or
 * 4099 elements, and a Barrier; each checked as the sweep checks a call
 * once the group has returned.  Odd data types run with
 * COLL_GROUP_F_NOFUSE: one collective per op.
 */
/* group_test()'s collectives of data type @dt into c->slots: their number. */
static int group_slots(struct rctx *c, int dt)
{
	int op, si, prim, n = 0;

	for (op = 0; op < COLL_REDOP_MAX; op++) {
		for (si = 1; si <= 3; si++) {
			struct slot *s = &c->slots[n++];

			rotate(c, &s->p, COLL_ALLREDUCE, dt, op,
			       sweep_count(si, COLL_ALLREDUCE, dt, c->n), si);
			s->p.algo = COLL_ALGO_AUTO;	/* one bucket */
		}
	}
	rotate(c, &c->slots[n++].p, COLL_ALLREDUCE, dt, dt % 5, 0, 0);
	rotate(c, &c->slots[n++].p, COLL_ALLREDUCE, dt, (dt + 1) % 5,
	       sweep_count(4, COLL_ALLREDUCE, dt, c->n), 4);
	for (prim = COLL_REDUCE; prim <= COLL_BARRIER; prim++) {
		si = prim == COLL_BARRIER ? 0 : 2 + (prim + dt) % 2;
		rotate(c, &c->slots[n++].p, prim, dt, (prim + dt) % 5,
		       sweep_count(si, prim, dt, c->n), si);
	}
	return n;
}

static int group_test(struct rctx *c)
{
	int dt, n, i, r;
	int64_t t0 = st_now_ns();

	for (dt = 0; dt < COLL_DTYPE_MAX; dt++) {
		n = group_slots(c, dt);
		for (i = 0; i < n; i++)
			if (prepare(c, &c->slots[i]))
				return -1;
		r = coll_group_start(c->comm);
		for (i = 0; i < n && !r; i++)
			r = submit(c, &c->slots[i], false);
		if (r)
			return -1;
		r = coll_group_end(c->comm, dt % 2 ? COLL_GROUP_F_NOFUSE : 0);
		if (r) {
			st_log("FAIL group n=%d rank=%d dtype %s: coll_group_end: %s",
			       c->n, c->rank, dts[dt].name, st_errname(r));
			return -1;
		}
		for (i = 0; i < n; i++)
			if (verify(c, &c->slots[i]))
				return -1;
	}
	if (c->rank == 0)
		st_log("group n=%d: %lu ops in %d groups in %.1f s", c->n,
		       c->ncalls, COLL_DTYPE_MAX, (st_now_ns() - t0) / 1e9);
	return 0;
}

/*
 * io_uring (coll_uring_prep(), IORING_OP_URING_CMD): group_test()'s
 * collectives of each data type posted as SQEs of one ring and submitted
 * with one io_uring_enter, then reaped in whatever order they complete
 * (each CQE's user_data names its slot, each must come with res 0), then
 * each checked as the sweep checks a call.
 */
static int uring_test(struct rctx *c)
{
	struct io_uring ring;
	int dt, n, i, r, got;
	int64_t t0 = st_now_ns();
	unsigned long nops = 0;

	r = io_uring_queue_init(NSLOTS, &ring, IORING_SETUP_SQE128);
	if (r) {
		st_log("FAIL uring n=%d rank=%d: io_uring_queue_init: %s",
		       c->n, c->rank, st_errname(r));
		return -1;
	}
	for (dt = 0; dt < COLL_DTYPE_MAX; dt++) {
		n = group_slots(c, dt);
		for (i = 0; i < n; i++) {
			struct slot *s = &c->slots[i];
			const struct callp *p = &s->p;
			struct io_uring_sqe *sqe;

			if (prepare(c, s))
				goto fail;
			r = coll_comm_set_algo(c->comm, p->algo);
			sqe = io_uring_get_sqe(&ring);
			if (!r && !sqe)
				r = -ENOSPC;
			if (!r && p->prim == COLL_BARRIER)	/* as coll_barrier() */
				r = coll_uring_prep(c->comm, sqe, p->prim, NULL,
						    NULL, 0, 0, 0, 0);
			else if (!r)
				r = coll_uring_prep(c->comm, sqe, p->prim,
						    s->send, s->recv, p->count,
						    p->dtype, p->op < 0 ? 0 : p->op,
						    p->root);
			if (r) {
				report_call(c, p, "coll_uring_prep: %s",
					    st_errname(r));
				goto fail;
			}
			io_uring_sqe_set_data64(sqe, i);
			c->ncalls++;
		}
		r = io_uring_submit(&ring);
		if (r != n) {
			st_log("FAIL uring n=%d rank=%d dtype %s: io_uring_submit: %d of %d",
			       c->n, c->rank, dts[dt].name, r, n);
			goto fail;
		}
		for (got = 0; got < n; got++) {
			struct io_uring_cqe *cqe;
			struct __kernel_timespec ts = { .tv_sec = 60 };
			uint64_t k;

			r = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
			if (r) {
				st_log("FAIL uring n=%d rank=%d dtype %s: %d of %d completions, then %s",
				       c->n, c->rank, dts[dt].name, got, n,
				       st_errname(r));
				goto fail;
			}
			k = io_uring_cqe_get_data64(cqe);
			r = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
			if (k >= (uint64_t)n) {
				st_log("FAIL uring n=%d rank=%d: user_data %llu",
				       c->n, c->rank, (unsigned long long)k);
				goto fail;
			}
			if (r) {
				report_call(c, &c->slots[k].p, "CQE res %s",
					    st_errname(r));
				goto fail;
			}
			nops++;
		}
		/* In slot order: verify() may meet the other ranks. */
		for (i = 0; i < n; i++)
			if (verify(c, &c->slots[i]))
				goto fail;
	}
	io_uring_queue_exit(&ring);
	if (c->rank == 0)
		st_log("uring n=%d: %lu ops in %d batches in %.1f s", c->n,
		       nops, COLL_DTYPE_MAX, (st_now_ns() - t0) / 1e9);
	return 0;
fail:
	io_uring_queue_exit(&ring);
	return -1;
}

/* ---- rank processes ------------------------------------------------------ */

static int rank_main(int rank, void *arg)
{
	const struct rarg *a = arg;
	struct rctx c = { .a = a, .n = a->n, .rank = rank };
	const char *name = a->test == TEST_NONBLOCKING ? "nonblocking" :
			   a->test == TEST_GROUP ? "group" :
			   a->test == TEST_URING ? "uring" :
			   prim_names[a->test];
	int r, ret = 1, i;

	c.slots = calloc(NSLOTS, sizeof(*c.slots));
	if (scratch_alloc(&c.w) || !c.slots) {
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
	else if (a->test == TEST_GROUP)
		r = group_test(&c);
	else if (a->test == TEST_URING)
		r = uring_test(&c);
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
	for (i = 0; i < NSLOTS; i++) {
		int w;

		for (w = 0; w < AR_NUM; w++)
			arena_free(&c.slots[i].ar[w]);
	}
	scratch_free(&c.w);
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
	bool nomap;	/* COLL_MAP=0: small calls through the module */
};

FIXTURE_VARIANT_ADD(correct, ranks1) { .nranks = 1 };
FIXTURE_VARIANT_ADD(correct, ranks2) { .nranks = 2 };
FIXTURE_VARIANT_ADD(correct, ranks3) { .nranks = 3 };
FIXTURE_VARIANT_ADD(correct, ranks4) { .nranks = 4 };
FIXTURE_VARIANT_ADD(correct, ranks8) { .nranks = 8 };
/* The same without mapped slots: the eager path, in the kernel. */
FIXTURE_VARIANT_ADD(correct, kernel2) { .nranks = 2, .nomap = true };
FIXTURE_VARIANT_ADD(correct, kernel4) { .nranks = 4, .nomap = true };

FIXTURE_SETUP(correct)
{
	const char *only = getenv("COLL_CORRECT_ONLY");
	int fd;

	/* the 6.1 harness has no filter of its own */
	if (only && *only && strcmp(only, _metadata->name))
		SKIP(return, "COLL_CORRECT_ONLY=%s", only);
	fd = st_dev_open();
	if (fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-fd));
	close(fd);
	/* each test is a process of its own: the ranks inherit this */
	if (variant->nomap)
		setenv("COLL_MAP", "0", 1);
}

FIXTURE_TEARDOWN(correct)
{
}

/*
 * Bytes of the largest reference of an AllReduce or Reduce sweep: the
 * result of the largest count, or for float AVG one double per element.
 */
static size_t share_bytes(int prim, int n, bool no_huge)
{
	size_t max = 0, b;
	int dt;

	for (dt = 0; dt < COLL_DTYPE_MAX; dt++) {
		b = sweep_count(4, prim, dt, n) *
		    (dts[dt].fp ? sizeof(double) : dts[dt].es);
		max = b > max ? b : max;
	}
	if (prim == COLL_ALLREDUCE && !no_huge && huge_enabled() &&
	    (n == 2 || n == 4) && HUGE_BYTES > max)
		max = HUGE_BYTES;
	return max;
}

/* The 6.1 harness runs the test body even when the setup SKIPped. */
#define SKIP_IF_SETUP_SKIPPED() do { if (_metadata->skip) return; } while (0)

/*
 * Forks @nranks ranks running @test (the matrix of it if @matrix) with
 * every call's algorithm @algo (-1: rotate), the rotation started at
 * @off, the 64 MiB AllReduce part left out if @no_huge.
 */
static void run_ranks_opt(struct __test_metadata *_metadata, int nranks,
			  int test, bool matrix, int algo, unsigned int off,
			  bool no_huge)
{
	struct rarg a = {
		.n = nranks,
		.test = test,
		.matrix = matrix,
		.variant_off = off,
		.algo = algo,
		.no_huge = no_huge,
		.seed = test_seed(),
	};
	struct st_ranks rk;
	int64_t t0 = st_now_ns();
	int bad, i, r;

	a.shm = st_shared(sizeof(*a.shm));
	ASSERT_NE(NULL, a.shm);
	if ((test == COLL_ALLREDUCE || test == COLL_REDUCE) && !matrix &&
	    nranks > 1) {
		a.share_bytes = share_bytes(test, nranks, no_huge);
		a.share = st_shared(2 * a.share_bytes);
		if (!a.share)	/* then every rank computes it all */
			a.share_bytes = 0;
	}
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
	if (a.share)
		munmap(a.share, 2 * a.share_bytes);
	ASSERT_EQ(0, bad);
}

static void run_ranks(struct __test_metadata *_metadata, int nranks, int test,
		      bool matrix)
{
	run_ranks_opt(_metadata, nranks, test, matrix, -1, nranks * 7, false);
}

#define PRIM_TEST(name, prim)						\
	TEST_F_TIMEOUT(correct, name, TEST_TIMEOUT_S)			\
	{								\
		SKIP_IF_SETUP_SKIPPED();				\
		/* without slots, no 64 MiB part: it runs with them */	\
		run_ranks_opt(_metadata, variant->nranks, prim, false,	\
			      -1, variant->nranks * 7, variant->nomap);	\
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
PRIM_TEST(group, TEST_GROUP)
PRIM_TEST(uring, TEST_URING)

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
 * The executor paths, forced through the module's parameters for the
 * sweep of every primitive (without the 64 MiB part), 2 and 4 ranks:
 *  - solo: solo_bytes = 0xffffffff, every collective is run by the last
 *    rank to arrive, alone;
 *  - coop: solo_bytes = 0, every collective with work is run
 *    cooperatively by all the ranks' threads;
 *  - ring: ring_chunk_bytes = exec_chunk_bytes = 4096, solo_bytes = 0,
 *    every call's algorithm ring: many slabs (up to the module's cap)
 *    and many small units of work claimed by the threads;
 *  - memcpy, words: copy_kernel = 0 or 1, the local transport's copies
 *    through the kernel's memcpy() or its unrolled loop of 8-byte words,
 *    whatever the module chose at load (solo_bytes = 0, so that every
 *    rank's thread copies);
 *  - pages: obuf_vmap = 0, pinned buffers walked page by page (not
 *    vmapped), elements that straddle a page going through the stack.
 * The setup writes the parameters (after reading the values they had)
 * before any rank is spawned and the teardown puts the old values back,
 * also when the test failed; a parameter that cannot be written SKIPs.
 * If the program is killed before a teardown could run, its exit puts
 * back the values it found at start (params_restore_at_exit).
 */
#define PARAM_DIR	"/sys/module/collective/parameters"

enum { PRM_SOLO, PRM_EXEC_CHUNK, PRM_RING_CHUNK, PRM_COPY, PRM_VMAP,
       PRM_NUM };

static const char *const param_names[PRM_NUM] = {
	"solo_bytes", "exec_chunk_bytes", "ring_chunk_bytes", "copy_kernel",
	"obuf_vmap",
};

/* 0 or -errno; the value without its newline. */
static int param_read(const char *name, char *buf, size_t len)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PARAM_DIR "/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return n;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int param_write(const char *name, const char *val)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PARAM_DIR "/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		n = -errno;
	else if ((size_t)n != strlen(val))
		n = -EIO;
	close(fd);
	return n < 0 ? n : 0;
}

/* What the parameters were when the program started, for its exit. */
static struct {
	pid_t pid;
	bool have[PRM_NUM];
	char val[PRM_NUM][32];
} params_at_start;

static void __attribute__((constructor)) params_record(void)
{
	int i;

	params_at_start.pid = getpid();
	for (i = 0; i < PRM_NUM; i++)
		params_at_start.have[i] =
			!param_read(param_names[i], params_at_start.val[i],
				    sizeof(params_at_start.val[i]));
}

static void __attribute__((destructor)) params_restore_at_exit(void)
{
	char cur[32];
	int i;

	if (getpid() != params_at_start.pid)
		return;
	for (i = 0; i < PRM_NUM; i++) {
		if (!params_at_start.have[i] ||
		    param_read(param_names[i], cur, sizeof(cur)) ||
		    !strcmp(cur, params_at_start.val[i]))
			continue;
		fprintf(stderr, "# %s was left at %s: restoring %s\n",
			param_names[i], cur, params_at_start.val[i]);
		param_write(param_names[i], params_at_start.val[i]);
	}
}

FIXTURE(paths) {
	unsigned int set;		/* parameters written (bits) */
	char old[PRM_NUM][32];		/* their values before */
};

FIXTURE_VARIANT(paths) {
	int nranks;
	long long val[PRM_NUM];		/* -1: leave alone */
	int algo;			/* every call's, or -1: rotate */
	unsigned int off;		/* rotation start */
};

#define SOLO_ALL	0xffffffffLL

FIXTURE_VARIANT_ADD(paths, solo_ranks2) {
	.nranks = 2, .val = { SOLO_ALL, -1, -1, -1, -1 }, .algo = -1,
	.off = 1,
};
FIXTURE_VARIANT_ADD(paths, solo_ranks4) {
	.nranks = 4, .val = { SOLO_ALL, -1, -1, -1, -1 }, .algo = -1,
	.off = 5,
};
FIXTURE_VARIANT_ADD(paths, coop_ranks2) {
	.nranks = 2, .val = { 0, -1, -1, -1, -1 }, .algo = -1, .off = 2,
};
FIXTURE_VARIANT_ADD(paths, coop_ranks4) {
	.nranks = 4, .val = { 0, -1, -1, -1, -1 }, .algo = -1, .off = 6,
};
FIXTURE_VARIANT_ADD(paths, ring_ranks2) {
	.nranks = 2, .val = { 0, 4096, 4096, -1, -1 }, .algo = COLL_ALGO_RING,
	.off = 3,
};
FIXTURE_VARIANT_ADD(paths, ring_ranks4) {
	.nranks = 4, .val = { 0, 4096, 4096, -1, -1 }, .algo = COLL_ALGO_RING,
	.off = 7,
};

FIXTURE_VARIANT_ADD(paths, memcpy_ranks2) {
	.nranks = 2, .val = { 0, -1, -1, 0, -1 }, .algo = -1, .off = 4,
};
FIXTURE_VARIANT_ADD(paths, words_ranks4) {
	.nranks = 4, .val = { 0, -1, -1, 1, -1 }, .algo = -1, .off = 8,
};

FIXTURE_VARIANT_ADD(paths, pages_ranks2) {
	.nranks = 2, .val = { 0, -1, -1, -1, 0 }, .algo = -1, .off = 5,
};

static void paths_restore(struct __test_metadata *_metadata,
			  FIXTURE_DATA(paths) *self)
{
	int i, r;

	for (i = 0; i < PRM_NUM; i++) {
		if (!(self->set & (1u << i)))
			continue;
		r = param_write(param_names[i], self->old[i]);
		/* not EXPECT: after a failed ASSERT its TH_LOG always prints */
		if (r) {
			TH_LOG("restoring %s/%s to %s: %s", PARAM_DIR,
			       param_names[i], self->old[i], strerror(-r));
			_metadata->passed = 0;
		}
		self->set &= ~(1u << i);
	}
}

FIXTURE_SETUP(paths)
{
	int fd = st_dev_open(), i, r;
	char val[32];

	if (fd < 0)
		SKIP(return, "%s: %s (module not loaded?)", st_dev_path(),
		     strerror(-fd));
	close(fd);
	/* Read each old value and write it back: is it writable at all? */
	for (i = 0; i < PRM_NUM; i++) {
		if (variant->val[i] < 0)
			continue;
		r = param_read(param_names[i], self->old[i],
			       sizeof(self->old[i]));
		if (!r)
			r = param_write(param_names[i], self->old[i]);
		if (r)
			SKIP(return, "%s/%s not writable: %s", PARAM_DIR,
			     param_names[i], strerror(-r));
	}
	for (i = 0; i < PRM_NUM; i++) {
		char back[32] = "";

		if (variant->val[i] < 0)
			continue;
		snprintf(val, sizeof(val), "%lld", variant->val[i]);
		r = param_write(param_names[i], val);
		if (!r) {
			self->set |= 1u << i;
			r = param_read(param_names[i], back, sizeof(back));
			if (!r && strcmp(back, val))
				r = -EINVAL;	/* did not take */
		}
		if (r) {
			/* no teardown after a failed setup: undo here */
			paths_restore(_metadata, self);
			ASSERT_EQ(0, r) TH_LOG("%s/%s = %s (reads back \"%s\"): %s",
					       PARAM_DIR, param_names[i], val,
					       back, strerror(-r));
		}
	}
}

FIXTURE_TEARDOWN(paths)
{
	paths_restore(_metadata, self);
}

#define PATHS_TEST(name, prim)						\
	TEST_F_TIMEOUT(paths, name, TEST_TIMEOUT_S)			\
	{								\
		SKIP_IF_SETUP_SKIPPED();				\
		run_ranks_opt(_metadata, variant->nranks, prim, false,	\
			      variant->algo, variant->off, true);	\
	}

PATHS_TEST(allreduce, COLL_ALLREDUCE)
PATHS_TEST(reduce, COLL_REDUCE)
PATHS_TEST(reducescatter, COLL_REDUCESCATTER)
PATHS_TEST(allgather, COLL_ALLGATHER)
PATHS_TEST(broadcast, COLL_BROADCAST)
PATHS_TEST(scatter, COLL_SCATTER)
PATHS_TEST(gather, COLL_GATHER)
PATHS_TEST(alltoall, COLL_ALLTOALL)
PATHS_TEST(barrier, COLL_BARRIER)
PATHS_TEST(nonblocking, TEST_NONBLOCKING)

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
			/*
			 * and so is every result, for as many ranks as the
			 * tests use (fp16 PROD overflows from 16 ranks on)
			 */
			for (u = 1; u <= 8; u++) {
				gen_bind(&g, 1, u, 1);
				ASSERT_LE(g.nres, GEN_MAXRES);
				for (v = 0; v < g.nres; v++)
					ASSERT_EQ(g.rdv[v],
						  decode_fp(dtypes[t], g.rbits[v]));
			}
		}
	}

	/* The inverses behind "got element j of chunk c of rank q's input". */
	for (u = 0; u < (1u << 16); u++) {
		uint64_t x = mix64(u ^ 0xabcdef);

		ASSERT_EQ(x, unmix64(mix64(x)));
		ASSERT_EQ((uint32_t)x, unfmix32(fmix32((uint32_t)x)));
	}

	/* Any stretch of an input is the same as when generated whole. */
	{
		static const struct { int dtype, op; } cases[] = {
			{ COLL_UINT8, -1 }, { COLL_BF16, -1 },
			{ COLL_INT32, COLL_SUM }, { COLL_UINT64, COLL_MAX },
			{ COLL_FP32, COLL_MAX }, { COLL_INT8, COLL_PROD },
			{ COLL_FP32, -1 }, { COLL_FP64, -1 },
		};
		static const size_t offs[] = { 0, 1, 3, 4, 7, 8, 13, 64 };
		static uint8_t whole[512 * 8], part[64 * 8];
		unsigned int k;

		for (k = 0; k < ARRAY_SIZE(cases); k++) {
			struct gen g;
			unsigned int es;

			gen_init(&g, cases[k].dtype, cases[k].op);
			gen_bind(&g, mix64(k), 2, 512);
			es = g.es;
			gen_input(&g, 1, 1, 0, 512, whole);
			for (i = 0; i < ARRAY_SIZE(offs); i++) {
				for (t = 0; t < 10; t++) {
					size_t j0 = offs[i], L = t * 7 + (t & 1);

					gen_input(&g, 1, 1, j0, L, part);
					ASSERT_EQ(0, memcmp(whole + j0 * es, part,
							    L * es))
						TH_LOG("%s: %zu+%zu",
						       dts[g.dtype].name, j0, L);
				}
			}
			/* class members only */
			for (i = 0; i < 512 && g.kind == GEN_CLASS; i++) {
				uint64_t e = load_elem(whole + i * es, es);
				unsigned int v = 0;

				while (v < g.m && canon(g.bits[v], es, false) != e)
					v++;
				ASSERT_LT(v, g.m);
			}
		}
	}

	/*
	 * Inputs do not repeat: element j and j + 16381 (the old period)
	 * or j + BLK of one chunk, and element j of two ranks' chunks, agree
	 * no more often than chance allows.  Data movement of 32 and 64 bits:
	 * every element of a call is distinct and names its rank, chunk and
	 * index.
	 */
	{
		static const struct { int dtype, op; } cases[] = {
			{ COLL_UINT8, -1 }, { COLL_BF16, -1 },
			{ COLL_INT8, COLL_SUM }, { COLL_FP16, COLL_SUM },
			{ COLL_FP32, COLL_MAX }, { COLL_INT32, COLL_PROD },
			{ COLL_FP32, -1 }, { COLL_UINT64, -1 },
		};
		const size_t cnt = 3 * 16381 + 5, L = 4096;
		uint8_t *buf = malloc(cnt * 8), *other = malloc(cnt * 8);
		size_t j, same, same2, same3;

		ASSERT_NE(NULL, buf);
		ASSERT_NE(NULL, other);
		for (i = 0; i < ARRAY_SIZE(cases); i++) {
			struct gen g;
			unsigned int es;
			double chance;

			gen_init(&g, cases[i].dtype, cases[i].op);
			gen_bind(&g, mix64(i + 7), 3, cnt);
			es = g.es;
			gen_input(&g, 1, 2, 0, cnt, buf);
			gen_input(&g, 2, 2, 0, cnt, other);
			same = same2 = same3 = 0;
			for (j = 0; j < L; j++) {
				same += !memcmp(buf + j * es,
						buf + (j + 16381) * es, es);
				same2 += !memcmp(buf + j * es,
						 buf + (j + BLK) * es, es);
				same3 += !memcmp(buf + j * es, other + j * es,
						 es);
			}
			/* 1/17 for fp SUM's class, 1/256 for bytes */
			chance = g.kind == GEN_CLASS ? 1.0 / g.m :
				 1.0 / (1u << (es < 4 ? 8 * es : 16));
			ASSERT_LE(same, 2 * chance * L + 8)
				TH_LOG("%s op %d: %zu of %zu repeat at 16381",
				       dts[g.dtype].name, g.op, same, L);
			ASSERT_LE(same2, 2 * chance * L + 8);
			ASSERT_LE(same3, 2 * chance * L + 8);
			if (g.kind != GEN_UNIQ)
				continue;
			for (j = 0; j < cnt; j++) {
				uint64_t v = load_elem(buf + j * es, es);
				char from[128], want[128];

				ASSERT_EQ(uniq_pos(&g, 1, 2, j),
					  uniq_unbits(&g, v));
				whence(&g, v, from, sizeof(from));
				snprintf(want, sizeof(want),
					 " (got element %zu of chunk 2 of rank 1's input)",
					 j);
				if (j % 1000 == 0)
					ASSERT_STREQ(want, from);
			}
		}
		free(buf);
		free(other);
	}

	/*
	 * Reductions: ref_block against the inputs generated one element at
	 * a time, at a block's offset and at one that is not even a whole
	 * stream output's: wrapping integer sums and products, AVG
	 * truncating toward zero, MIN and MAX signed and unsigned, floats
	 * exact.
	 */
	{
		static const struct { int dtype, op; } cases[] = {
			{ COLL_INT8, COLL_AVG }, { COLL_UINT8, COLL_SUM },
			{ COLL_INT32, COLL_MAX }, { COLL_UINT32, COLL_MIN },
			{ COLL_INT64, COLL_PROD }, { COLL_UINT64, COLL_AVG },
			{ COLL_INT32, COLL_MIN }, { COLL_FP16, COLL_SUM },
			{ COLL_BF16, COLL_PROD }, { COLL_FP32, COLL_MIN },
			{ COLL_FP64, COLL_AVG }, { COLL_INT8, COLL_PROD },
			{ COLL_FP32, COLL_MAX }, { COLL_FP16, COLL_AVG },
		};
		const size_t j0s[] = { 3 * BLK, 5 * 16381 + 3 }, L = 64 + 7;
		struct scratch w;
		int n = 3, r;
		size_t j, j0;

		ASSERT_EQ(0, scratch_alloc(&w));
		for (i = 0; i < 2 * ARRAY_SIZE(cases); i++) {
			struct gen g;
			const struct dtinfo *d = &dts[cases[i / 2].dtype];
			unsigned int es = d->es;
			int op = cases[i / 2].op;

			j0 = j0s[i % 2];
			gen_init(&g, cases[i / 2].dtype, op);
			gen_bind(&g, mix64(i + 99), n, j0 + L);
			ref_block(&g, 1, j0, L, &w);
			for (j = 0; j < L; j++) {
				uint64_t ia = 0, e;
				double fa = 0;
				uint8_t x[8];

				for (r = 0; r < n; r++) {
					gen_input(&g, r, 1, j0 + j, 1, x);
					e = canon(load_elem(x, es), es, d->sgn);
					if (d->fp) {
						double v = decode_fp(g.dtype, e);

						if (r == 0)
							fa = v;
						else if (op == COLL_PROD)
							fa *= v;
						else if (op == COLL_MIN)
							fa = v < fa ? v : fa;
						else if (op == COLL_MAX)
							fa = v > fa ? v : fa;
						else
							fa += v;
						continue;
					}
					if (r == 0)
						ia = e;
					else if (op == COLL_PROD)
						ia *= e;
					else if (op == COLL_MIN)
						ia = (d->sgn ? (int64_t)e < (int64_t)ia :
							       e < ia) ? e : ia;
					else if (op == COLL_MAX)
						ia = (d->sgn ? (int64_t)e > (int64_t)ia :
							       e > ia) ? e : ia;
					else
						ia += e;
				}
				if (d->fp && op == COLL_AVG) {
					ASSERT_EQ(fa / n, w.accd[j]);
					continue;
				}
				if (d->fp) {
					ASSERT_EQ(encode_fp(g.dtype, fa),
						  load_elem(w.want + j * es, es));
					continue;
				}
				ia = canon(ia, es, d->sgn);
				if (op == COLL_AVG)
					ia = d->sgn ? (uint64_t)((int64_t)ia / n) :
						      ia / n;
				ASSERT_EQ(canon(ia, es, false),
					  load_elem(w.want + j * es, es))
					TH_LOG("%s %s element %zu", d->name,
					       op_names[op], j);
			}
		}
		/* int8 AVG: the truncated quotient of the wrapped sum, by hand */
		{
			struct gen g;
			int8_t a[3];

			gen_init(&g, COLL_INT8, COLL_AVG);
			gen_bind(&g, 5, n, 64);
			ref_block(&g, 0, 0, 64, &w);
			for (j = 0; j < 64; j++) {
				for (r = 0; r < n; r++)
					gen_input(&g, r, 0, j, 1,
						  (uint8_t *)&a[r]);
				ASSERT_EQ((int8_t)(uint8_t)((uint8_t)a[0] +
						(uint8_t)a[1] + (uint8_t)a[2]) / 3,
					  (int8_t)w.want[j]);
			}
		}
		scratch_free(&w);
	}
}

TEST_HARNESS_MAIN
