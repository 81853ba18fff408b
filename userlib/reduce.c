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
#include <stdint.h>
#include <string.h>

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
 * products of integers, computed unsigned, of fp32 and fp64): 32 bytes at
 * a time as a GCC vector of the storage type V, each read before it is
 * written, built for AVX2 and for the baseline and picked at load
 * (target_clones); lane by lane the same arithmetic as one at a time.
 */
#define RED_VFN(name, T, V, OP)						\
__attribute__((target_clones("avx2", "default")))			\
static void name(void *dst, const void *a, const void *b, size_t n)	\
{									\
	const size_t lanes = sizeof(V) / sizeof(T);			\
	unsigned char *d = dst;						\
	const unsigned char *x = a, *y = b;				\
	size_t i = 0;							\
									\
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
		u = OP(u, v);						\
		memcpy(d + i * sizeof(T), &u, sizeof(T));		\
	}								\
}

#define VEC(T) T __attribute__((vector_size(32)))

/* Integers: sums and products in the unsigned type of the width. */
#define INT_FNS(sfx, T, U, DIV)						\
RED_VFN(sum_##sfx, U, VEC(U), ADD)					\
RED_VFN(prod_##sfx, U, VEC(U), MUL)					\
RED_FN(min_##sfx, T, T, ID, ID, MIN)					\
RED_FN(max_##sfx, T, T, ID, ID, MAX)					\
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
RED_VFN(sum_##sfx, T, VEC(T), ADD)					\
RED_VFN(prod_##sfx, T, VEC(T), MUL)					\
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

#define ROW(sfx)							\
	{ { sum_##sfx, prod_##sfx, min_##sfx, max_##sfx, sum_##sfx }, div_##sfx }

static const struct {
	coll_red_fn fn[COLL_REDOP_MAX];
	void (*div)(void *dst, size_t n, uint32_t q);
} red_tab[COLL_DTYPE_MAX] = {
	[COLL_INT8] = ROW(s8),
	[COLL_UINT8] = ROW(u8),
	[COLL_INT32] = ROW(s32),
	[COLL_UINT32] = ROW(u32),
	[COLL_INT64] = ROW(s64),
	[COLL_UINT64] = ROW(u64),
	[COLL_FP16] = ROW(f16),
	[COLL_BF16] = ROW(bf16),
	[COLL_FP32] = ROW(f32),
	[COLL_FP64] = ROW(f64),
};

coll_red_fn coll_red_get(int dtype, int redop)
{
	return red_tab[dtype].fn[redop];
}

void coll_red_div(int dtype, void *dst, size_t n, uint32_t q)
{
	red_tab[dtype].div(dst, n, q);
}
