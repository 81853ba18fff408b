// SPDX-License-Identifier: GPL-2.0
/*
 * Integer reduction kernels and the type table.  Floating-point kernels live
 * in coll_reduce_fp.c, the only file built with the FPU enabled.
 *
 * Integer arithmetic wraps in the element type (computed unsigned, so that
 * signed overflow is defined); AVG is the wrapped sum divided by nranks,
 * truncated toward zero.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/slab.h>
#include <linux/types.h>
#include <asm/cpufeature.h>
#include <asm/fpu/api.h>
#include <asm/fpu/types.h>

#include "coll_loc.h"

/* One set of kernels per integer type, from a template. */
#define COLL_FN(op) coll_##op##_s8
#define coll_div_t s64
#define coll_elem_t s8
#define coll_wrap_t u8
#include "coll_reduce_int.h"

#define COLL_FN(op) coll_##op##_u8
#define coll_div_t u64
#define coll_elem_t u8
#define coll_wrap_t u8
#include "coll_reduce_int.h"

#define COLL_FN(op) coll_##op##_s32
#define coll_div_t s64
#define coll_elem_t s32
#define coll_wrap_t u32
#include "coll_reduce_int.h"

#define COLL_FN(op) coll_##op##_u32
#define coll_div_t u64
#define coll_elem_t u32
#define coll_wrap_t u32
#include "coll_reduce_int.h"

#define COLL_FN(op) coll_##op##_s64
#define coll_div_t s64
#define coll_elem_t s64
#define coll_wrap_t u64
#include "coll_reduce_int.h"

#define COLL_FN(op) coll_##op##_u64
#define coll_div_t u64
#define coll_elem_t u64
#define coll_wrap_t u64
#include "coll_reduce_int.h"

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

/* MXCSR's sticky status flag "precision" (inexact result). */
#define COLL_MXCSR_PE 0x0020

/**
 * coll_fpu_begin() - kernel_fpu_begin() for the floating-point kernels
 *
 * kernel_fpu_begin() loads MXCSR_DEFAULT: every exception masked, rounding
 * to nearest even, no status flag set.  This also sets the inexact flag, a
 * sticky status bit: on hardware it changes nothing (exceptions stay masked,
 * results are the same to the bit).  An emulator may not agree: QEMU's TCG
 * hands a float operation to the host's FPU only once the guest's inexact
 * flag is set, and computes it in software until then, about twice as slow
 * (RIG-NOTES, "Floating point under TCG").  A user-space reduction runs with
 * the flag its process set long ago; a kernel section starts clean, and a
 * sum that is exact never sets it.  End with kernel_fpu_end().
 */
void coll_fpu_begin(void)
{
	u32 mxcsr = MXCSR_DEFAULT | COLL_MXCSR_PE;

	kernel_fpu_begin();
	asm volatile("ldmxcsr %0" : : "m" (mxcsr));
}

/* Faster kernels found by coll_reduce_select(); written once at load. */
static coll_reduce_fn coll_reduce_fast[COLL_DTYPE_MAX][COLL_REDOP_MAX];

#define COLL_BENCH_ELEMS 1024
#define COLL_BENCH_REPS 64

/* Nanoseconds for COLL_BENCH_REPS passes of @fn over the buffers. */
static u64 coll_reduce_time(coll_reduce_fn fn, void *d, const void *a,
			    const void *b)
{
	u64 t0;
	int i;

	coll_fpu_begin();
	t0 = ktime_get_ns();
	for (i = 0; i < COLL_BENCH_REPS; i++)
		fn(d, a, b, COLL_BENCH_ELEMS);
	t0 = ktime_get_ns() - t0;
	kernel_fpu_end();
	return t0;
}

#define COLL_BENCH_TRIALS 5

/*
 * Whether to use the AVX2 kernel for (dtype, redop): the widest unit the
 * CPU has, unless it measured clearly slower (by more than a quarter) than
 * the scalar or SSE kernel.  Each side's best of COLL_BENCH_TRIALS
 * interleaved trials, so that noise (an interrupt, a busy sibling vCPU)
 * does not flip the choice from one load to the next.
 */
static bool coll_avx2_faster(void *buf, u32 dtype, u32 redop)
{
	void *a = buf + COLL_BENCH_ELEMS * 8, *b = buf + COLL_BENCH_ELEMS * 16;
	coll_reduce_fn base = coll_dtype_is_float(dtype) ?
			      coll_reduce_fp_get(dtype, redop) :
			      coll_int_fns[dtype][redop];
	coll_reduce_fn avx2 = coll_reduce_avx2_get(dtype, redop);
	u64 t_base = U64_MAX, t_avx2 = U64_MAX;
	int i;

	for (i = 0; i < COLL_BENCH_TRIALS; i++) {
		t_base = min(t_base, coll_reduce_time(base, buf, a, b));
		t_avx2 = min(t_avx2, coll_reduce_time(avx2, buf, a, b));
		cond_resched();
	}
	pr_debug("dtype %u redop %u: base %llu ns, avx2 %llu ns\n", dtype,
		 redop, t_base, t_avx2);
	return t_avx2 * 4 <= t_base * 5;
}

/**
 * coll_reduce_select() - pick the fastest kernels at load time
 *
 * As lib/raid6/algos.c does: where the CPU offers AVX2, time the fp32 and
 * the int32 sum both ways and use the AVX2 kernels of that family (floating
 * point, integers) unless they were clearly slower (coll_avx2_faster()).
 */
void coll_reduce_select(void)
{
	bool fp, ints;
	void *buf;
	u32 t, op;

	if (!boot_cpu_has(X86_FEATURE_AVX2) ||
	    !cpu_has_xfeatures(XFEATURE_MASK_SSE | XFEATURE_MASK_YMM, NULL))
		return;
	buf = kzalloc(3 * 8 * COLL_BENCH_ELEMS, GFP_KERNEL);
	if (!buf)
		return;
	fp = coll_avx2_faster(buf, COLL_FP32, COLL_SUM);
	ints = coll_avx2_faster(buf, COLL_INT32, COLL_SUM);
	kfree(buf);
	for (t = 0; t < COLL_DTYPE_MAX; t++) {
		if (coll_dtype_is_float(t) ? !fp : !ints)
			continue;
		for (op = 0; op < COLL_REDOP_MAX; op++)
			coll_reduce_fast[t][op] = coll_reduce_avx2_get(t, op);
	}
}

/**
 * coll_reduce_get() - the kernel for (dtype, redop)
 * @dtype: enum coll_dtype, validated by the caller
 * @redop: enum coll_redop, validated by the caller; AVG gives the sum
 * @fpu: set if the kernel uses FPU or vector registers, and so must run
 *       between coll_fpu_begin() and kernel_fpu_end()
 *
 * Return: the function.
 */
coll_reduce_fn coll_reduce_get(u32 dtype, u32 redop, bool *fpu)
{
	*fpu = true;
	if (coll_reduce_fast[dtype][redop])
		return coll_reduce_fast[dtype][redop];
	if (coll_dtype_is_float(dtype))
		return coll_reduce_fp_get(dtype, redop);
	*fpu = false;
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
