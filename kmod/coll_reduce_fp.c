// SPDX-License-Identifier: GPL-2.0
/*
 * Floating-point reduction kernels.  This file alone is built with SSE
 * enabled (see kmod/Kbuild); every function here must be called between
 * kernel_fpu_begin() and kernel_fpu_end().
 *
 * fp16 and bf16 are widened to float, combined and rounded back to nearest
 * even after every pairwise step, as a GPU library does.
 */
#include <linux/kernel.h>
#include <linux/types.h>

#include "coll_loc.h"

static inline float coll_f32_from_bits(u32 b)
{
	union { u32 u; float f; } v = { .u = b };

	return v.f;
}

static inline u32 coll_f32_bits(float f)
{
	union { u32 u; float f; } v = { .f = f };

	return v.u;
}

static inline float coll_bf16_to_f32(u16 h)
{
	return coll_f32_from_bits((u32)h << 16);
}

static inline u16 coll_f32_to_bf16(float f)
{
	u32 b = coll_f32_bits(f);

	if ((b & 0x7fffffff) > 0x7f800000)	/* NaN: keep it quiet */
		return (b >> 16) | 0x40;
	b += 0x7fff + ((b >> 16) & 1);
	return b >> 16;
}

static inline float coll_fp16_to_f32(u16 h)
{
	u32 sign = (u32)(h & 0x8000) << 16;
	u32 exp = (h >> 10) & 0x1f;
	u32 mant = h & 0x3ff;

	if (exp == 0x1f)				/* inf, NaN */
		return coll_f32_from_bits(sign | 0x7f800000 | (mant << 13));
	if (exp)					/* normal */
		return coll_f32_from_bits(sign | ((exp + 112) << 23) |
					  (mant << 13));
	/* zero and subnormal: mant * 2^-24, exact in float */
	return (sign ? -1.0f : 1.0f) * (float)mant * (1.0f / 16777216.0f);
}

static inline u16 coll_f32_to_fp16(float f)
{
	u32 b = coll_f32_bits(f);
	u16 sign = (b >> 16) & 0x8000;
	u32 abs = b & 0x7fffffff;
	u32 exp, mant, shift, half, rest;

	if (abs > 0x7f800000)				/* NaN */
		return sign | 0x7e00;
	if (abs >= 0x477ff000)				/* rounds to inf */
		return sign | 0x7c00;
	if (abs >= 0x38800000) {			/* normal half */
		exp = (abs >> 23) - 112;
		mant = abs & 0x7fffff;
		half = (exp << 10) | (mant >> 13);
		rest = mant & 0x1fff;
		if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
			half++;
		return sign | half;
	}
	if (abs < 0x33000000)				/* below half a subnormal */
		return sign;
	/* subnormal half: value = mant24 * 2^(exp - 150) */
	exp = abs >> 23;
	mant = (abs & 0x7fffff) | 0x800000;
	shift = 126 - exp;				/* 14..24 */
	half = mant >> shift;
	rest = mant & ((1u << shift) - 1);
	if (rest > (1u << (shift - 1)) ||
	    (rest == (1u << (shift - 1)) && (half & 1)))
		half++;
	return sign | half;
}

#define COLL_FSUM(a, b)		((a) + (b))
#define COLL_FPROD(a, b)	((a) * (b))
#define COLL_FMIN(a, b)		((b) < (a) ? (b) : (a))
#define COLL_FMAX(a, b)		((b) > (a) ? (b) : (a))

/* Native float and double */
#define COLL_FP_KERNEL(name, T, OP)					\
static void coll_##name(void *dst, const void *a, const void *b,	\
			size_t n)					\
{									\
	T *d = dst;							\
	const T *x = a, *y = b;						\
	size_t i;							\
									\
	for (i = 0; i < n; i++)						\
		d[i] = OP(x[i], y[i]);					\
}

/* Half types through float */
#define COLL_HALF_KERNEL(name, TO, FROM, OP)				\
static void coll_##name(void *dst, const void *a, const void *b,	\
			size_t n)					\
{									\
	u16 *d = dst;							\
	const u16 *x = a, *y = b;					\
	size_t i;							\
									\
	for (i = 0; i < n; i++)						\
		d[i] = FROM(OP(TO(x[i]), TO(y[i])));			\
}

#define COLL_FP_ROW(pfx, T)						\
	COLL_FP_KERNEL(pfx##_sum, T, COLL_FSUM)				\
	COLL_FP_KERNEL(pfx##_prod, T, COLL_FPROD)			\
	COLL_FP_KERNEL(pfx##_min, T, COLL_FMIN)				\
	COLL_FP_KERNEL(pfx##_max, T, COLL_FMAX)

#define COLL_HALF_ROW(pfx, TO, FROM)					\
	COLL_HALF_KERNEL(pfx##_sum, TO, FROM, COLL_FSUM)		\
	COLL_HALF_KERNEL(pfx##_prod, TO, FROM, COLL_FPROD)		\
	COLL_HALF_KERNEL(pfx##_min, TO, FROM, COLL_FMIN)		\
	COLL_HALF_KERNEL(pfx##_max, TO, FROM, COLL_FMAX)

COLL_FP_ROW(f32, float)
COLL_FP_ROW(f64, double)
COLL_HALF_ROW(f16, coll_fp16_to_f32, coll_f32_to_fp16)
COLL_HALF_ROW(bf16, coll_bf16_to_f32, coll_f32_to_bf16)

#define COLL_FN_ROW(pfx)						\
	{ coll_##pfx##_sum, coll_##pfx##_prod, coll_##pfx##_min,	\
	  coll_##pfx##_max, coll_##pfx##_sum }

static const coll_reduce_fn coll_fp_fns[COLL_DTYPE_MAX][COLL_REDOP_MAX] = {
	[COLL_FP16] = COLL_FN_ROW(f16),
	[COLL_BF16] = COLL_FN_ROW(bf16),
	[COLL_FP32] = COLL_FN_ROW(f32),
	[COLL_FP64] = COLL_FN_ROW(f64),
};

coll_reduce_fn coll_reduce_fp_get(u32 dtype, u32 redop)
{
	return coll_fp_fns[dtype][redop];
}

void coll_reduce_fp_div(u32 dtype, void *dst, size_t n, u32 div)
{
	size_t i;

	switch (dtype) {
	case COLL_FP16: {
		u16 *d = dst;

		for (i = 0; i < n; i++)
			d[i] = coll_f32_to_fp16(coll_fp16_to_f32(d[i]) /
						(float)div);
		break;
	}
	case COLL_BF16: {
		u16 *d = dst;

		for (i = 0; i < n; i++)
			d[i] = coll_f32_to_bf16(coll_bf16_to_f32(d[i]) /
						(float)div);
		break;
	}
	case COLL_FP32: {
		float *d = dst;

		for (i = 0; i < n; i++)
			d[i] /= (float)div;
		break;
	}
	case COLL_FP64: {
		double *d = dst;

		for (i = 0; i < n; i++)
			d[i] /= (double)div;
		break;
	}
	}
}
