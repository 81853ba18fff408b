// SPDX-License-Identifier: MIT
/*
 * Reductions of the mapped path, with the module's semantics (see
 * <linux/collective.h>, enum coll_redop), so that a collective gives the
 * same bits whichever way it runs: integers wrap (computed unsigned), AVG
 * is the wrapped sum divided by nranks in 64 bits, truncated toward zero;
 * floating-point types combine pairwise in the order given; fp16 and bf16
 * widen to float, combine and round back to nearest even at every step.
 * MIN and MAX keep the first operand unless the second is smaller (larger),
 * as the module does, NaNs included.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libcollective_int.h"

static inline float f32_from_bits(uint32_t b)
{
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

static inline uint32_t f32_bits(float f)
{
	uint32_t b;

	memcpy(&b, &f, sizeof(b));
	return b;
}

static inline float bf16_load(uint16_t h)
{
	return f32_from_bits((uint32_t)h << 16);
}

static inline uint16_t bf16_store(float f)
{
	uint32_t b = f32_bits(f);

	if ((b & 0x7fffffff) > 0x7f800000)	/* NaN: quiet, sign kept */
		return (uint16_t)((b >> 16) | 0x40);
	b += 0x7fff + ((b >> 16) & 1);
	return (uint16_t)(b >> 16);
}

static inline float fp16_load(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;

	if (exp == 0x1f)
		return f32_from_bits(sign | 0x7f800000 | (mant << 13));
	if (exp)
		return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
	/* zero and subnormals: mant * 2^-24, exact */
	return (sign ? -1.0f : 1.0f) * (float)mant * (1.0f / 16777216.0f);
}

static inline uint16_t fp16_store(float f)
{
	uint32_t b = f32_bits(f), abs = b & 0x7fffffff;
	uint16_t sign = (uint16_t)((b >> 16) & 0x8000);
	uint32_t exp, mant, shift, half, rest;

	if (abs > 0x7f800000)
		return sign | 0x7e00;
	if (abs >= 0x477ff000)			/* rounds to infinity */
		return sign | 0x7c00;
	if (abs >= 0x38800000) {		/* a normal half */
		exp = (abs >> 23) - 112;
		mant = abs & 0x7fffff;
		half = (exp << 10) | (mant >> 13);
		rest = mant & 0x1fff;
		if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	if (abs < 0x33000000)			/* below half the least */
		return sign;
	exp = abs >> 23;			/* a subnormal half */
	mant = (abs & 0x7fffff) | 0x800000;
	shift = 126 - exp;
	half = mant >> shift;
	rest = mant & ((1u << shift) - 1);
	if (rest > (1u << (shift - 1)) ||
	    (rest == (1u << (shift - 1)) && (half & 1)))
		half++;
	return (uint16_t)(sign | half);
}

#define ID(v) (v)
#define ADD(u, v) ((u) + (v))
#define MUL(u, v) ((u) * (v))
#define MIN(u, v) ((v) < (u) ? (v) : (u))
#define MAX(u, v) ((v) > (u) ? (v) : (u))

/*
 * d[i] = OP(a[i], b[i]) for one element type.  The buffers may be
 * unaligned (a caller's receive buffer): elements are moved with memcpy(),
 * which the compiler turns into plain, unaligned loads and stores; @dst may
 * be @a.
 */
#define RED_FN(name, T, C, LD, ST, OP)					\
static void name(void *dst, const void *a, const void *b, size_t n)	\
{									\
	unsigned char *d = dst;						\
	const unsigned char *x = a, *y = b;				\
	size_t i;							\
									\
	for (i = 0; i < n; i++) {					\
		T xe, ye, de;						\
		C u, v;							\
									\
		memcpy(&xe, x + i * sizeof(T), sizeof(T));		\
		memcpy(&ye, y + i * sizeof(T), sizeof(T));		\
		u = LD(xe);						\
		v = LD(ye);						\
		de = ST(OP(u, v));					\
		memcpy(d + i * sizeof(T), &de, sizeof(T));		\
	}								\
}

/*
 * The same for a type whose values combine as they are stored (sums and
 * products of integers, computed unsigned, of fp32 and fp64; MIN and MAX
 * of integers, by the mask a lane-wise compare gives): on GCC vectors V,
 * four a turn with every load before the stores (@dst may be @a,
 * exactly, so the compiler could not hoist one vector's loads above the
 * previous one's store itself), then one a turn, then one element at a
 * time; lane by lane the same arithmetic as one at a time.  Built twice:
 * name_base for the baseline (SSE2 on x86-64) and name_avx2 for AVX2,
 * chosen at the first use (red_select()).
 */
#define RED_VBODY(T, V, OP, SOP)						\
{									\
	const size_t lanes = sizeof(V) / sizeof(T);			\
	unsigned char *d = dst;						\
	const unsigned char *x = a, *y = b;				\
	size_t i = 0;							\
									\
	for (; i + 4 * lanes <= n; i += 4 * lanes) {			\
		const unsigned char *p = x + i * sizeof(T);		\
		const unsigned char *q = y + i * sizeof(T);		\
		unsigned char *r = d + i * sizeof(T);			\
		V u0, u1, u2, u3, v0, v1, v2, v3;			\
									\
		memcpy(&u0, p, sizeof(V));				\
		memcpy(&u1, p + sizeof(V), sizeof(V));			\
		memcpy(&u2, p + 2 * sizeof(V), sizeof(V));		\
		memcpy(&u3, p + 3 * sizeof(V), sizeof(V));		\
		memcpy(&v0, q, sizeof(V));				\
		memcpy(&v1, q + sizeof(V), sizeof(V));			\
		memcpy(&v2, q + 2 * sizeof(V), sizeof(V));		\
		memcpy(&v3, q + 3 * sizeof(V), sizeof(V));		\
		u0 = OP(u0, v0);					\
		u1 = OP(u1, v1);					\
		u2 = OP(u2, v2);					\
		u3 = OP(u3, v3);					\
		memcpy(r, &u0, sizeof(V));				\
		memcpy(r + sizeof(V), &u1, sizeof(V));			\
		memcpy(r + 2 * sizeof(V), &u2, sizeof(V));		\
		memcpy(r + 3 * sizeof(V), &u3, sizeof(V));		\
	}								\
	for (; i + lanes <= n; i += lanes) {				\
		V u, v;							\
									\
		memcpy(&u, x + i * sizeof(T), sizeof(V));		\
		memcpy(&v, y + i * sizeof(T), sizeof(V));		\
		u = OP(u, v);						\
		memcpy(d + i * sizeof(T), &u, sizeof(V));		\
	}								\
	for (; i < n; i++) {						\
		T u, v;							\
									\
		memcpy(&u, x + i * sizeof(T), sizeof(T));		\
		memcpy(&v, y + i * sizeof(T), sizeof(T));		\
		u = SOP(u, v);						\
		memcpy(d + i * sizeof(T), &u, sizeof(T));		\
	}								\
}

#define VEC(T, bytes) T __attribute__((vector_size(bytes)))

/* The baseline's vectors are of 16 bytes (SSE2's), AVX2's of 32. */
#define RED_VFN(name, T, OP, SOP)					\
static void name##_base(void *dst, const void *a, const void *b,	\
			size_t n)					\
RED_VBODY(T, VEC(T, 16), OP, SOP)					\
__attribute__((target("avx2")))						\
static void name##_avx2(void *dst, const void *a, const void *b,	\
			size_t n)					\
RED_VBODY(T, VEC(T, 32), OP, SOP)

/*
 * MIN and MAX of integer vectors: a lane-wise compare gives all ones where
 * u is to be kept (u < v for MIN; where they are equal either is the same
 * value); the scalar tail uses MIN and MAX.
 */
#define SEL(u, v, m) (((u) & (m)) | ((v) & ~(m)))
#define VMIN(u, v) SEL(u, v, (__typeof__(u))((u) < (v)))
#define VMAX(u, v) SEL(u, v, (__typeof__(u))((u) > (v)))

/* Integers: sums and products in the unsigned type of the width. */
#define INT_FNS(sfx, T, U, DIV)						\
RED_VFN(sum_##sfx, U, ADD, ADD)						\
RED_VFN(prod_##sfx, U, MUL, MUL)					\
RED_VFN(min_##sfx, T, VMIN, MIN)					\
RED_VFN(max_##sfx, T, VMAX, MAX)					\
static void div_##sfx(void *dst, size_t n, uint32_t q)			\
{									\
	unsigned char *d = dst;						\
	size_t i;							\
	T e;								\
									\
	for (i = 0; i < n; i++) {					\
		memcpy(&e, d + i * sizeof(T), sizeof(T));		\
		e = (T)((DIV)e / (DIV)q);				\
		memcpy(d + i * sizeof(T), &e, sizeof(T));		\
	}								\
}

#define FP_FNS(sfx, T, C, LD, ST)					\
RED_FN(sum_##sfx, T, C, LD, ST, ADD)					\
RED_FN(prod_##sfx, T, C, LD, ST, MUL)					\
RED_FN(min_##sfx, T, C, LD, ST, MIN)					\
RED_FN(max_##sfx, T, C, LD, ST, MAX)					\
static void div_##sfx(void *dst, size_t n, uint32_t q)			\
{									\
	unsigned char *d = dst;						\
	C k = (C)q;							\
	size_t i;							\
	T e;								\
									\
	for (i = 0; i < n; i++) {					\
		memcpy(&e, d + i * sizeof(T), sizeof(T));		\
		e = ST(LD(e) / k);					\
		memcpy(d + i * sizeof(T), &e, sizeof(T));		\
	}								\
}

INT_FNS(s8, int8_t, uint8_t, int64_t)
INT_FNS(u8, uint8_t, uint8_t, uint64_t)
INT_FNS(s32, int32_t, uint32_t, int64_t)
INT_FNS(u32, uint32_t, uint32_t, uint64_t)
INT_FNS(s64, int64_t, uint64_t, int64_t)
INT_FNS(u64, uint64_t, uint64_t, uint64_t)
FP_FNS(f16, uint16_t, float, fp16_load, fp16_store)
FP_FNS(bf16, uint16_t, float, bf16_load, bf16_store)
/* fp32 and fp64: sums and products on vectors */
#define FPV_FNS(sfx, T)							\
RED_VFN(sum_##sfx, T, ADD, ADD)						\
RED_VFN(prod_##sfx, T, MUL, MUL)					\
RED_FN(min_##sfx, T, T, ID, ID, MIN)					\
RED_FN(max_##sfx, T, T, ID, ID, MAX)					\
static void div_##sfx(void *dst, size_t n, uint32_t q)			\
{									\
	unsigned char *d = dst;						\
	T k = (T)q, e;							\
	size_t i;							\
									\
	for (i = 0; i < n; i++) {					\
		memcpy(&e, d + i * sizeof(T), sizeof(T));		\
		e = e / k;						\
		memcpy(d + i * sizeof(T), &e, sizeof(T));		\
	}								\
}

FPV_FNS(f32, float)
FPV_FNS(f64, double)

/* Each type's kernels: [0] the baseline's, [1] AVX2's where it has them. */
#define IROW(s)								\
	{ { { sum_##s##_base, prod_##s##_base, min_##s##_base,		\
	      max_##s##_base, sum_##s##_base },				\
	    { sum_##s##_avx2, prod_##s##_avx2, min_##s##_avx2,		\
	      max_##s##_avx2, sum_##s##_avx2 } }, div_##s }
#define FVROW(s)							\
	{ { { sum_##s##_base, prod_##s##_base, min_##s, max_##s,	\
	      sum_##s##_base },						\
	    { sum_##s##_avx2, prod_##s##_avx2, min_##s, max_##s,		\
	      sum_##s##_avx2 } }, div_##s }
#define FROW(s)								\
	{ { { sum_##s, prod_##s, min_##s, max_##s, sum_##s },		\
	    { sum_##s, prod_##s, min_##s, max_##s, sum_##s } }, div_##s }

static const struct {
	coll_red_fn fn[2][COLL_REDOP_MAX];
	void (*div)(void *dst, size_t n, uint32_t q);
} red_tab[COLL_DTYPE_MAX] = {
	[COLL_INT8] = IROW(s8),
	[COLL_UINT8] = IROW(u8),
	[COLL_INT32] = IROW(s32),
	[COLL_UINT32] = IROW(u32),
	[COLL_INT64] = IROW(s64),
	[COLL_UINT64] = IROW(u64),
	[COLL_FP16] = FROW(f16),
	[COLL_BF16] = FROW(bf16),
	[COLL_FP32] = FVROW(f32),
	[COLL_FP64] = FVROW(f64),
};

static int red_is_float(int dtype)
{
	return dtype == COLL_FP16 || dtype == COLL_BF16 ||
	       dtype == COLL_FP32 || dtype == COLL_FP64;
}

int coll_red_have_avx2(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	return !!__builtin_cpu_supports("avx2");
#else
	return 0;
#endif
}

coll_red_fn coll_red_get_vec(int dtype, int redop, int avx2)
{
	return red_tab[dtype].fn[avx2 && coll_red_have_avx2()][redop];
}

/* Use AVX2 for [0] floating point, [1] integers: set once by red_select(). */
static int red_avx2[2];
static pthread_once_t red_once = PTHREAD_ONCE_INIT;

#define RED_BENCH_ELEMS 1024
#define RED_BENCH_REPS 16
#define RED_BENCH_TRIALS 5

static uint64_t red_time(coll_red_fn fn, void *d, const void *a,
			 const void *b)
{
	struct timespec t0, t1;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < RED_BENCH_REPS; i++) {
		fn(d, a, b, RED_BENCH_ELEMS);
		__asm__ __volatile__("" : : "r"(d) : "memory");
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
	       (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
}

/*
 * As the module does at load (coll_reduce_select()): AVX2 for a family
 * unless its fp32 (int32) sum measured more than a quarter slower than the
 * baseline's, each side's best of RED_BENCH_TRIALS interleaved trials, so
 * that noise does not flip the choice from one run to the next.  An
 * emulator may run 256-bit float arithmetic at half the speed of 128-bit
 * (QEMU's TCG does); real CPUs with AVX2 keep it.
 */
static int red_avx2_faster(int dtype)
{
	static double buf[3][RED_BENCH_ELEMS];	/* 8 bytes an element at most */
	coll_red_fn base = red_tab[dtype].fn[0][COLL_SUM];
	coll_red_fn avx2 = red_tab[dtype].fn[1][COLL_SUM];
	uint64_t tb = UINT64_MAX, tv = UINT64_MAX, t;
	int i;

	for (i = 0; i < RED_BENCH_TRIALS; i++) {
		t = red_time(base, buf[0], buf[1], buf[2]);
		tb = t < tb ? t : tb;
		t = red_time(avx2, buf[0], buf[1], buf[2]);
		tv = t < tv ? t : tv;
	}
	return tv * 4 <= tb * 5;
}

/*
 * Measured with MXCSR's sticky inexact flag set, as it is in a process
 * that has done any inexact arithmetic (an emulator may compute float
 * operations in software until it is: RIG-NOTES), and put back after.
 */
static void red_select(void)
{
	const char *env = getenv("COLL_REDUCE_VEC");

	if (!coll_red_have_avx2())
		return;
	if (env && !strcmp(env, "avx2")) {
		red_avx2[0] = red_avx2[1] = 1;
	} else if (!env || strcmp(env, "base")) {
#if defined(__x86_64__) || defined(__i386__)
		unsigned int mxcsr, pe;

		__asm__ __volatile__("stmxcsr %0" : "=m"(mxcsr));
		pe = mxcsr | 0x20;
		__asm__ __volatile__("ldmxcsr %0" : : "m"(pe));
#endif
		red_avx2[0] = red_avx2_faster(COLL_FP32);
		red_avx2[1] = red_avx2_faster(COLL_INT32);
#if defined(__x86_64__) || defined(__i386__)
		__asm__ __volatile__("ldmxcsr %0" : : "m"(mxcsr));
#endif
	}
}

/* The kernels chosen (red_select()), for diagnostics and the tests. */
int coll_red_uses_avx2(int dtype)
{
	pthread_once(&red_once, red_select);
	return red_avx2[!red_is_float(dtype)];
}

coll_red_fn coll_red_get(int dtype, int redop)
{
	return red_tab[dtype].fn[coll_red_uses_avx2(dtype)][redop];
}

void coll_red_div(int dtype, void *dst, size_t n, uint32_t q)
{
	red_tab[dtype].div(dst, n, q);
}
