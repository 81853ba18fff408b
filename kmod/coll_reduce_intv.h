/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Template of the vector integer kernels, included by coll_reduce_avx2.c
 * once per type with COLL_FN(op) naming the functions, coll_elem_t the
 * element type, coll_wrap_t the unsigned type of the same width (sums and
 * products wrap), coll_svec_t and coll_uvec_t vectors of COLL_VEC_LANES of
 * each.  Whole vectors go four a turn (COLL_VEC_LOOP4(), coll_reduce_vec.h),
 * the rest one element at a time.  min and max select through the mask a
 * lane-wise compare gives (all ones where it holds).
 */
#include "coll_reduce_vec.h"

#define COLL_IADD(u, v)	((u) + (v))
#define COLL_IMUL(u, v)	((u) * (v))
#define COLL_ISEL(u, v, cmp)						\
({									\
	coll_svec_t __a = (u), __b = (v);				\
	coll_svec_t __m = (coll_svec_t)(__a cmp __b);			\
									\
	(__a & __m) | (__b & ~__m);					\
})
#define COLL_IMIN(u, v)	COLL_ISEL(u, v, <)
#define COLL_IMAX(u, v)	COLL_ISEL(u, v, >)

static void COLL_FN(sum)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i = 0;

#define coll_vt coll_uvec_t
#define COLL_VOP COLL_IADD
	COLL_VEC_LOOP4();
#undef COLL_VOP
#undef coll_vt
	for (; i < n; i++)
		d[i] = (coll_wrap_t)x[i] + (coll_wrap_t)y[i];
}

static void COLL_FN(prod)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i = 0;

#define coll_vt coll_uvec_t
#define COLL_VOP COLL_IMUL
	COLL_VEC_LOOP4();
#undef COLL_VOP
#undef coll_vt
	for (; i < n; i++)
		d[i] = (coll_wrap_t)x[i] * (coll_wrap_t)y[i];
}

static void COLL_FN(min)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i = 0;

#define coll_vt coll_svec_t
#define COLL_VOP COLL_IMIN
	COLL_VEC_LOOP4();
#undef COLL_VOP
#undef coll_vt
	for (; i < n; i++)
		d[i] = min(x[i], y[i]);
}

static void COLL_FN(max)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i = 0;

#define coll_vt coll_svec_t
#define COLL_VOP COLL_IMAX
	COLL_VEC_LOOP4();
#undef COLL_VOP
#undef coll_vt
	for (; i < n; i++)
		d[i] = max(x[i], y[i]);
}

#undef COLL_IADD
#undef COLL_IMUL
#undef COLL_ISEL
#undef COLL_IMIN
#undef COLL_IMAX

/* The parameters are the includer's, for this instance only. */
#undef COLL_FN
#undef coll_elem_t
#undef coll_wrap_t
#undef coll_svec_t
#undef coll_uvec_t
#undef COLL_VEC_LANES
