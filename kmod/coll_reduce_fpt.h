/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Template of the floating-point kernels, included by coll_reduce_fp.c once
 * per type with COLL_FN(op) naming the functions, coll_elem_t the stored
 * type, coll_calc_t the type computed in, COLL_LD() and COLL_ST() converting
 * between them (rounding to nearest even).
 */
static void COLL_FN(sum)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = COLL_ST(COLL_LD(x[i]) + COLL_LD(y[i]));
}

static void COLL_FN(prod)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = COLL_ST(COLL_LD(x[i]) * COLL_LD(y[i]));
}

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
