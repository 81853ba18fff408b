// SPDX-License-Identifier: GPL-2.0
/*
 * Integer kernels, and fp32 and fp64 sums and products, on 256-bit AVX2
 * vectors.  Built with AVX2
 * enabled (kmod/Kbuild) and used only when the CPU has it and it measured
 * faster at load time (coll_reduce_select()); call inside kernel_fpu_*.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/types.h>

#include "coll_loc.h"

#define COLL_TMPL_SUM_PROD_ONLY

#define COLL_FN(op) coll_avx2_f32_##op
#define coll_elem_t float
#define coll_calc_t float
#define COLL_LD(v) (v)
#define COLL_ST(v) (v)
#define coll_vec_t float __attribute__((vector_size(32)))
#define COLL_VEC_LANES 8
#include "coll_reduce_fpt.h"

#define COLL_FN(op) coll_avx2_f64_##op
#define coll_elem_t double
#define coll_calc_t double
#define COLL_LD(v) (v)
#define COLL_ST(v) (v)
#define coll_vec_t double __attribute__((vector_size(32)))
#define COLL_VEC_LANES 4
#include "coll_reduce_fpt.h"

#define COLL_FN(op) coll_avx2_s8_##op
#define coll_elem_t s8
#define coll_wrap_t u8
#define coll_svec_t s8 __attribute__((vector_size(32)))
#define coll_uvec_t u8 __attribute__((vector_size(32)))
#define COLL_VEC_LANES 32
#include "coll_reduce_intv.h"

#define COLL_FN(op) coll_avx2_u8_##op
#define coll_elem_t u8
#define coll_wrap_t u8
#define coll_svec_t u8 __attribute__((vector_size(32)))
#define coll_uvec_t u8 __attribute__((vector_size(32)))
#define COLL_VEC_LANES 32
#include "coll_reduce_intv.h"

#define COLL_FN(op) coll_avx2_s32_##op
#define coll_elem_t s32
#define coll_wrap_t u32
#define coll_svec_t s32 __attribute__((vector_size(32)))
#define coll_uvec_t u32 __attribute__((vector_size(32)))
#define COLL_VEC_LANES 8
#include "coll_reduce_intv.h"

#define COLL_FN(op) coll_avx2_u32_##op
#define coll_elem_t u32
#define coll_wrap_t u32
#define coll_svec_t u32 __attribute__((vector_size(32)))
#define coll_uvec_t u32 __attribute__((vector_size(32)))
#define COLL_VEC_LANES 8
#include "coll_reduce_intv.h"

#define COLL_FN(op) coll_avx2_s64_##op
#define coll_elem_t s64
#define coll_wrap_t u64
#define coll_svec_t s64 __attribute__((vector_size(32)))
#define coll_uvec_t u64 __attribute__((vector_size(32)))
#define COLL_VEC_LANES 4
#include "coll_reduce_intv.h"

#define COLL_FN(op) coll_avx2_u64_##op
#define coll_elem_t u64
#define coll_wrap_t u64
#define coll_svec_t u64 __attribute__((vector_size(32)))
#define coll_uvec_t u64 __attribute__((vector_size(32)))
#define COLL_VEC_LANES 4
#include "coll_reduce_intv.h"

#define COLL_INT_ROW(name)						\
	{ coll_avx2_##name##_sum, coll_avx2_##name##_prod,		\
	  coll_avx2_##name##_min, coll_avx2_##name##_max,		\
	  coll_avx2_##name##_sum }

static const coll_reduce_fn coll_avx2_fns[COLL_DTYPE_MAX][COLL_REDOP_MAX] = {
	[COLL_INT8] = COLL_INT_ROW(s8),
	[COLL_UINT8] = COLL_INT_ROW(u8),
	[COLL_INT32] = COLL_INT_ROW(s32),
	[COLL_UINT32] = COLL_INT_ROW(u32),
	[COLL_INT64] = COLL_INT_ROW(s64),
	[COLL_UINT64] = COLL_INT_ROW(u64),
	[COLL_FP32] = { [COLL_SUM] = coll_avx2_f32_sum,
			[COLL_PROD] = coll_avx2_f32_prod,
			[COLL_AVG] = coll_avx2_f32_sum },
	[COLL_FP64] = { [COLL_SUM] = coll_avx2_f64_sum,
			[COLL_PROD] = coll_avx2_f64_prod,
			[COLL_AVG] = coll_avx2_f64_sum },
};

/* The AVX2 kernel for (dtype, redop), or NULL where it has none. */
coll_reduce_fn coll_reduce_avx2_get(u32 dtype, u32 redop)
{
	return coll_avx2_fns[dtype][redop];
}
