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
#include <linux/string.h>
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

/* One set of kernels per type, from a template. */
#define COLL_FN(op) coll_f32_##op
#define coll_elem_t float
#define coll_calc_t float
#define coll_vec_t float __attribute__((vector_size(16)))
#define COLL_VEC_LANES 4
#define COLL_LD(v) (v)
#define COLL_ST(v) (v)
#include "coll_reduce_fpt.h"

#define COLL_FN(op) coll_f64_##op
#define coll_elem_t double
#define coll_calc_t double
#define coll_vec_t double __attribute__((vector_size(16)))
#define COLL_VEC_LANES 2
#define COLL_LD(v) (v)
#define COLL_ST(v) (v)
#include "coll_reduce_fpt.h"

#define COLL_FN(op) coll_f16_##op
#define coll_elem_t u16
#define coll_calc_t float
#define COLL_LD(v) coll_fp16_to_f32(v)
#define COLL_ST(v) coll_f32_to_fp16(v)
#include "coll_reduce_fpt.h"

#define COLL_FN(op) coll_bf16_##op
#define coll_elem_t u16
#define coll_calc_t float
#define COLL_LD(v) coll_bf16_to_f32(v)
#define COLL_ST(v) coll_f32_to_bf16(v)
#include "coll_reduce_fpt.h"

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

static void (*const coll_fp_div[COLL_DTYPE_MAX])(void *, size_t, u32) = {
	[COLL_FP16] = coll_f16_div,
	[COLL_BF16] = coll_bf16_div,
	[COLL_FP32] = coll_f32_div,
	[COLL_FP64] = coll_f64_div,
};

void coll_reduce_fp_div(u32 dtype, void *dst, size_t n, u32 div)
{
	coll_fp_div[dtype](dst, n, div);
}
