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

#define COLL_SUM(a, b)	((a) + (b))
#define COLL_PROD(a, b)	((a) * (b))

/* T: element type, U: unsigned type of the same width for wrapping ops */
#define COLL_INT_KERNELS(name, T, U)					\
static void coll_sum_##name(void *dst, const void *a, const void *b,	\
			    size_t n)					\
{									\
	T *d = dst;							\
	const T *x = a, *y = b;						\
	size_t i;							\
									\
	for (i = 0; i < n; i++)						\
		d[i] = (T)COLL_SUM((U)x[i], (U)y[i]);			\
}									\
static void coll_prod_##name(void *dst, const void *a, const void *b,	\
			     size_t n)					\
{									\
	T *d = dst;							\
	const T *x = a, *y = b;						\
	size_t i;							\
									\
	for (i = 0; i < n; i++)						\
		d[i] = (T)COLL_PROD((U)x[i], (U)y[i]);			\
}									\
static void coll_min_##name(void *dst, const void *a, const void *b,	\
			    size_t n)					\
{									\
	T *d = dst;							\
	const T *x = a, *y = b;						\
	size_t i;							\
									\
	for (i = 0; i < n; i++)						\
		d[i] = min(x[i], y[i]);					\
}									\
static void coll_max_##name(void *dst, const void *a, const void *b,	\
			    size_t n)					\
{									\
	T *d = dst;							\
	const T *x = a, *y = b;						\
	size_t i;							\
									\
	for (i = 0; i < n; i++)						\
		d[i] = max(x[i], y[i]);					\
}									\
static void coll_div_##name(void *dst, size_t n, u32 div)		\
{									\
	T *d = dst;							\
	size_t i;							\
									\
	for (i = 0; i < n; i++)						\
		d[i] = d[i] / (T)div;					\
}

COLL_INT_KERNELS(s8, s8, u8)
COLL_INT_KERNELS(u8, u8, u8)
COLL_INT_KERNELS(s32, s32, u32)
COLL_INT_KERNELS(u32, u32, u32)
COLL_INT_KERNELS(s64, s64, u64)
COLL_INT_KERNELS(u64, u64, u64)

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
