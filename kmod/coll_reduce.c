// SPDX-License-Identifier: GPL-2.0
/*
 * Integer reduction kernels and the type table.  Floating-point kernels live
 * in coll_reduce_fp.c, the only file built with the FPU enabled.
 *
 * Integer arithmetic wraps in the element type (computed unsigned, so that
 * signed overflow is defined); AVG is the wrapped sum divided by nranks,
 * truncated toward zero.
 */
#include <linux/kernel.h>
#include <linux/types.h>

#include "coll_loc.h"

static const u8 coll_dtype_sizes[COLL_DTYPE_MAX] = {
	[COLL_INT8] = 1,  [COLL_UINT8] = 1,
	[COLL_INT32] = 4, [COLL_UINT32] = 4,
	[COLL_INT64] = 8, [COLL_UINT64] = 8,
	[COLL_FP16] = 2,  [COLL_BF16] = 2,
	[COLL_FP32] = 4,  [COLL_FP64] = 8,
};

u32 coll_dtype_size(u32 dtype)
{
	return dtype < COLL_DTYPE_MAX ? coll_dtype_sizes[dtype] : 0;
}

bool coll_dtype_is_float(u32 dtype)
{
	return dtype >= COLL_FP16 && dtype <= COLL_FP64;
}

/* One set of kernels per integer type, from a template. */
#define COLL_FN(op) coll_##op##_s8
#define coll_div_t s64
#define coll_elem_t s8
#define coll_wrap_t u8
#include "coll_reduce_int.h"
#undef COLL_FN
#undef coll_elem_t
#undef coll_wrap_t
#undef coll_div_t

#define COLL_FN(op) coll_##op##_u8
#define coll_div_t u64
#define coll_elem_t u8
#define coll_wrap_t u8
#include "coll_reduce_int.h"
#undef COLL_FN
#undef coll_elem_t
#undef coll_wrap_t
#undef coll_div_t

#define COLL_FN(op) coll_##op##_s32
#define coll_div_t s64
#define coll_elem_t s32
#define coll_wrap_t u32
#include "coll_reduce_int.h"
#undef COLL_FN
#undef coll_elem_t
#undef coll_wrap_t
#undef coll_div_t

#define COLL_FN(op) coll_##op##_u32
#define coll_div_t u64
#define coll_elem_t u32
#define coll_wrap_t u32
#include "coll_reduce_int.h"
#undef COLL_FN
#undef coll_elem_t
#undef coll_wrap_t
#undef coll_div_t

#define COLL_FN(op) coll_##op##_s64
#define coll_div_t s64
#define coll_elem_t s64
#define coll_wrap_t u64
#include "coll_reduce_int.h"
#undef COLL_FN
#undef coll_elem_t
#undef coll_wrap_t
#undef coll_div_t

#define COLL_FN(op) coll_##op##_u64
#define coll_div_t u64
#define coll_elem_t u64
#define coll_wrap_t u64
#include "coll_reduce_int.h"
#undef COLL_FN
#undef coll_elem_t
#undef coll_wrap_t
#undef coll_div_t

#define COLL_INT_ROW(name)						\
	{ coll_sum_##name, coll_prod_##name, coll_min_##name,		\
	  coll_max_##name, coll_sum_##name }

static const coll_reduce_fn coll_int_fns[COLL_FP16][COLL_REDOP_MAX] = {
	[COLL_INT8] = COLL_INT_ROW(s8),
	[COLL_UINT8] = COLL_INT_ROW(u8),
	[COLL_INT32] = COLL_INT_ROW(s32),
	[COLL_UINT32] = COLL_INT_ROW(u32),
	[COLL_INT64] = COLL_INT_ROW(s64),
	[COLL_UINT64] = COLL_INT_ROW(u64),
};

static void (*const coll_int_div[COLL_FP16])(void *, size_t, u32) = {
	[COLL_INT8] = coll_div_s8,
	[COLL_UINT8] = coll_div_u8,
	[COLL_INT32] = coll_div_s32,
	[COLL_UINT32] = coll_div_u32,
	[COLL_INT64] = coll_div_s64,
	[COLL_UINT64] = coll_div_u64,
};

/**
 * coll_reduce_get() - the kernel for (dtype, redop)
 * @dtype: enum coll_dtype, validated by the caller
 * @redop: enum coll_redop, validated by the caller; AVG gives the sum
 *
 * Return: the function; floating-point ones must run between
 * kernel_fpu_begin() and kernel_fpu_end().
 */
coll_reduce_fn coll_reduce_get(u32 dtype, u32 redop)
{
	if (coll_dtype_is_float(dtype))
		return coll_reduce_fp_get(dtype, redop);
	return coll_int_fns[dtype][redop];
}

/* The AVG division; floating-point types need the FPU as above. */
void coll_reduce_div(u32 dtype, void *dst, size_t n, u32 div)
{
	if (coll_dtype_is_float(dtype))
		coll_reduce_fp_div(dtype, dst, n, div);
	else
		coll_int_div[dtype](dst, n, div);
}
