/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Template of the floating-point kernels, included by coll_reduce_fp.c once
 * per type with COLL_FN(op) naming the functions, coll_elem_t the stored
 * type, coll_calc_t the type computed in, COLL_LD() and COLL_ST() converting
 * between them (rounding to nearest even).  Where coll_vec_t is defined (a
 * GCC vector of COLL_VEC_LANES elements), sums and products run on whole
 * vectors, four a turn (COLL_VEC_LOOP4(), coll_reduce_vec.h).  With
 * COLL_TMPL_SUM_PROD_ONLY only those two are made.
 */

#include "coll_reduce_vec.h"

#define COLL_ADD(u, v) ((u) + (v))
#define COLL_MUL(u, v) ((u) * (v))

#ifdef coll_vec_t
#define coll_vt coll_vec_t
#define COLL_VEC_LOOP() COLL_VEC_LOOP4()
#else
#define COLL_VEC_LOOP()
#endif
static void COLL_FN(sum)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i = 0;

#define COLL_VOP COLL_ADD
	COLL_VEC_LOOP();
#undef COLL_VOP
	for (; i < n; i++)
		d[i] = COLL_ST(COLL_LD(x[i]) + COLL_LD(y[i]));
}

static void COLL_FN(prod)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i = 0;

#define COLL_VOP COLL_MUL
	COLL_VEC_LOOP();
#undef COLL_VOP
	for (; i < n; i++)
		d[i] = COLL_ST(COLL_LD(x[i]) * COLL_LD(y[i]));
}

#ifndef COLL_TMPL_SUM_PROD_ONLY
static void COLL_FN(min)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < n; i++) {
		coll_calc_t u = COLL_LD(x[i]), v = COLL_LD(y[i]);

		d[i] = COLL_ST(v < u ? v : u);
	}
}

static void COLL_FN(max)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < n; i++) {
		coll_calc_t u = COLL_LD(x[i]), v = COLL_LD(y[i]);

		d[i] = COLL_ST(v > u ? v : u);
	}
}

static void COLL_FN(div)(void *dst, size_t n, u32 div)
{
	coll_calc_t q = div;
	coll_elem_t *d = dst;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = COLL_ST(COLL_LD(d[i]) / q);
}
#endif /* COLL_TMPL_SUM_PROD_ONLY */

#undef COLL_VEC_LOOP
#undef coll_vt
#undef COLL_ADD
#undef COLL_MUL

/* The parameters are the includer's, for this instance only. */
#undef COLL_FN
#undef coll_elem_t
#undef coll_calc_t
#undef COLL_LD
#undef COLL_ST
#undef coll_vec_t
#undef COLL_VEC_LANES
