/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Template of the vector integer kernels, included by coll_reduce_avx2.c
 * once per type with COLL_FN(op) naming the functions, coll_elem_t the
 * element type, coll_wrap_t the unsigned type of the same width (sums and
 * products wrap), coll_svec_t and coll_uvec_t vectors of COLL_VEC_LANES of
 * each.  Vectors are loaded and stored unaligned; the destination coincides
 * at most exactly with the first source, so each is read before written.
 */
static void COLL_FN(sum)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i = 0;

	for (; i + COLL_VEC_LANES <= n; i += COLL_VEC_LANES) {
		coll_uvec_t u, v;

		memcpy(&u, x + i, sizeof(u));
		memcpy(&v, y + i, sizeof(v));
		u += v;
		memcpy(d + i, &u, sizeof(u));
	}
	for (; i < n; i++)
		d[i] = (coll_wrap_t)x[i] + (coll_wrap_t)y[i];
}

static void COLL_FN(prod)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i = 0;

	for (; i + COLL_VEC_LANES <= n; i += COLL_VEC_LANES) {
		coll_uvec_t u, v;

		memcpy(&u, x + i, sizeof(u));
		memcpy(&v, y + i, sizeof(v));
		u *= v;
		memcpy(d + i, &u, sizeof(u));
	}
	for (; i < n; i++)
		d[i] = (coll_wrap_t)x[i] * (coll_wrap_t)y[i];
}

static void COLL_FN(min)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i = 0;

	for (; i + COLL_VEC_LANES <= n; i += COLL_VEC_LANES) {
		coll_svec_t u, v, m;

		memcpy(&u, x + i, sizeof(u));
		memcpy(&v, y + i, sizeof(v));
		m = (coll_svec_t)(u < v);
		u = (u & m) | (v & ~m);
		memcpy(d + i, &u, sizeof(u));
	}
	for (; i < n; i++)
		d[i] = min(x[i], y[i]);
}

static void COLL_FN(max)(void *dst, const void *a, const void *b, size_t n)
{
	coll_elem_t *d = dst;
	const coll_elem_t *x = a, *y = b;
	size_t i = 0;

	for (; i + COLL_VEC_LANES <= n; i += COLL_VEC_LANES) {
		coll_svec_t u, v, m;

		memcpy(&u, x + i, sizeof(u));
		memcpy(&v, y + i, sizeof(v));
		m = (coll_svec_t)(u > v);
		u = (u & m) | (v & ~m);
		memcpy(d + i, &u, sizeof(u));
	}
	for (; i < n; i++)
		d[i] = max(x[i], y[i]);
}

/* The parameters are the includer's, for this instance only. */
#undef COLL_FN
#undef coll_elem_t
#undef coll_wrap_t
#undef coll_svec_t
#undef coll_uvec_t
#undef COLL_VEC_LANES
