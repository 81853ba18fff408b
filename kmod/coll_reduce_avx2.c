// SPDX-License-Identifier: GPL-2.0
/*
 * fp32 and fp64 sums and products on 256-bit AVX vectors.  Built with AVX2
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
#undef COLL_FN
#undef coll_elem_t
#undef coll_calc_t
#undef COLL_LD
#undef COLL_ST
#undef coll_vec_t
#undef COLL_VEC_LANES

#define COLL_FN(op) coll_avx2_f64_##op
#define coll_elem_t double
#define coll_calc_t double
#define COLL_LD(v) (v)
#define COLL_ST(v) (v)
#define coll_vec_t double __attribute__((vector_size(32)))
#define COLL_VEC_LANES 4
#include "coll_reduce_fpt.h"
#undef COLL_FN
#undef coll_elem_t
#undef coll_calc_t
#undef COLL_LD
#undef COLL_ST
#undef coll_vec_t
#undef COLL_VEC_LANES

/* The AVX2 kernel for (dtype, redop), or NULL where it has none. */
coll_reduce_fn coll_reduce_avx2_get(u32 dtype, u32 redop)
{
	static const coll_reduce_fn f32[COLL_REDOP_MAX] = {
		[COLL_SUM] = coll_avx2_f32_sum,
		[COLL_PROD] = coll_avx2_f32_prod,
		[COLL_AVG] = coll_avx2_f32_sum,
	};
	static const coll_reduce_fn f64[COLL_REDOP_MAX] = {
		[COLL_SUM] = coll_avx2_f64_sum,
		[COLL_PROD] = coll_avx2_f64_prod,
		[COLL_AVG] = coll_avx2_f64_sum,
	};

	if (dtype == COLL_FP32)
		return f32[redop];
	if (dtype == COLL_FP64)
		return f64[redop];
	return NULL;
}
