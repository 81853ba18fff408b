/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Template of the integer kernels, included by coll_reduce.c once per type
 * with COLL_FN(op) naming the functions, coll_elem_t the element type and
 * coll_wrap_t the unsigned type of the same width (sums and products wrap)
 * and coll_div_t the 64-bit type the AVG division is done in.
 */
static void COLL_FN(sum)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = (coll_wrap_t)x[i] + (coll_wrap_t)y[i];
}

static void COLL_FN(prod)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = (coll_wrap_t)x[i] * (coll_wrap_t)y[i];
}

static void COLL_FN(min)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = min(x[i], y[i]);
}

static void COLL_FN(max)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = max(x[i], y[i]);
}

static void COLL_FN(div)(void *dst, size_t n, u32 div)
{
	coll_elem_t *d = dst;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = (coll_div_t)d[i] / (coll_div_t)div;
}

/* The parameters are the includer's, for this instance only. */
#undef COLL_FN
#undef coll_elem_t
#undef coll_wrap_t
#undef coll_div_t
