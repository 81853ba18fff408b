// SPDX-License-Identifier: MIT
/*
 * reduce_test: the mapped path's reductions (reduce.c, built in here) bit
 * for bit against a reference written the plain way, the baseline's and
 * (where the CPU has it) AVX2's kernels both, and the choice between them
 * that coll_red_get() makes: every type, every op
 * and the AVG division, lengths around the vectors' width, buffers at
 * every misalignment from 0 to 7 bytes, the destination apart and equal
 * to the first source; fp16 conversions against the compiler's _Float16
 * for every half and the floats between them.  TAP output.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcollective_int.h"

static int ntest, nfail;

static void report(int ok, const char *what)
{
	ntest++;
	printf("%sok %d - %s\n", ok ? "" : "not ", ntest, what);
	if (!ok)
		nfail++;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static float bf16_ref_load(uint16_t h)
{
	uint32_t b = (uint32_t)h << 16;
	float f;

	memcpy(&f, &b, 4);
	return f;
}

/* Round to nearest even, NaN quiet: what the module does. */
static uint16_t bf16_ref_store(float f)
{
	uint32_t b;

	memcpy(&b, &f, 4);
	if ((b & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((b >> 16) | 0x40);
	return (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

static float f16_ref_load(uint16_t h)
{
	_Float16 x;

	memcpy(&x, &h, 2);
	return (float)x;
}

static uint16_t f16_ref_store(float f)
{
	_Float16 x = (_Float16)f;
	uint16_t h;

	if (isnan(f))	/* the module's quiet NaN, sign kept */
		return (uint16_t)(signbit(f) ? 0xfe00 : 0x7e00);
	memcpy(&h, &x, 2);
	return h;
}

/* One element of the reference: a op b, in the type's own way. */
static void ref_op(int dt, int op, void *d, const void *a, const void *b)
{
	uint64_t x = 0, y = 0, r = 0;
	size_t es = coll_dtype_size(dt);
	int64_t sx, sy;
	double u, v, w;

	if (dt == COLL_FP16 || dt == COLL_BF16 || dt == COLL_FP32 ||
	    dt == COLL_FP64) {
		uint16_t h;
		float f;

		switch (dt) {
		case COLL_FP16:
		case COLL_BF16:
			memcpy(&h, a, 2);
			u = dt == COLL_FP16 ? f16_ref_load(h) : bf16_ref_load(h);
			memcpy(&h, b, 2);
			v = dt == COLL_FP16 ? f16_ref_load(h) : bf16_ref_load(h);
			break;
		case COLL_FP32:
			memcpy(&f, a, 4);
			u = f;
			memcpy(&f, b, 4);
			v = f;
			break;
		default:
			memcpy(&u, a, 8);
			memcpy(&v, b, 8);
		}
		if (op == COLL_SUM || op == COLL_AVG)
			w = dt == COLL_FP64 ? u + v : (double)((float)u + (float)v);
		else if (op == COLL_PROD)
			w = dt == COLL_FP64 ? u * v : (double)((float)u * (float)v);
		else if (op == COLL_MIN)
			w = v < u ? v : u;
		else
			w = v > u ? v : u;
		if (dt == COLL_FP64) {
			memcpy(d, &w, 8);
		} else if (dt == COLL_FP32) {
			f = (float)w;
			memcpy(d, &f, 4);
		} else {
			h = dt == COLL_FP16 ? f16_ref_store((float)w) :
					      bf16_ref_store((float)w);
			memcpy(d, &h, 2);
		}
		return;
	}
	memcpy(&x, a, es);
	memcpy(&y, b, es);
	sx = (int64_t)(x << (64 - 8 * es)) >> (64 - 8 * es);
	sy = (int64_t)(y << (64 - 8 * es)) >> (64 - 8 * es);
	switch (op) {
	case COLL_SUM:
	case COLL_AVG:
		r = x + y;
		break;
	case COLL_PROD:
		r = x * y;
		break;
	case COLL_MIN:
	case COLL_MAX: {
		int sign = dt == COLL_INT8 || dt == COLL_INT32 ||
			   dt == COLL_INT64;
		int less = sign ? sy < sx : y < x;

		r = (op == COLL_MIN) == less ? y : x;
		break;
	}
	}
	memcpy(d, &r, es);
}

static void ref_div(int dt, void *d, uint32_t q)
{
	size_t es = coll_dtype_size(dt);
	uint64_t x = 0;
	int64_t s;

	if (dt == COLL_FP32) {
		float f;

		memcpy(&f, d, 4);
		f /= (float)q;
		memcpy(d, &f, 4);
	} else if (dt == COLL_FP64) {
		double f;

		memcpy(&f, d, 8);
		f /= (double)q;
		memcpy(d, &f, 8);
	} else if (dt == COLL_FP16 || dt == COLL_BF16) {
		uint16_t h;
		float f;

		memcpy(&h, d, 2);
		f = (dt == COLL_FP16 ? f16_ref_load(h) : bf16_ref_load(h)) /
		    (float)q;
		h = dt == COLL_FP16 ? f16_ref_store(f) : bf16_ref_store(f);
		memcpy(d, &h, 2);
	} else if (dt == COLL_INT8 || dt == COLL_INT32 || dt == COLL_INT64) {
		memcpy(&x, d, es);
		s = (int64_t)(x << (64 - 8 * es)) >> (64 - 8 * es);
		s /= (int64_t)q;
		memcpy(d, &s, es);
	} else {
		memcpy(&x, d, es);
		x /= q;
		memcpy(d, &x, es);
	}
}

/* Random elements: floats of moderate range (and a few specials). */
static void fill(int dt, unsigned char *p, size_t n)
{
	size_t es = coll_dtype_size(dt), i;

	for (i = 0; i < n; i++) {
		uint64_t r = next();

		if (dt == COLL_FP32) {
			float f = (float)((int64_t)(r % 20001) - 10000) / 64.0f;

			if (r % 97 == 0)
				f = r % 2 ? INFINITY : -0.0f;
			memcpy(p + i * es, &f, es);
		} else if (dt == COLL_FP64) {
			double f = (double)((int64_t)(r % 2000001) - 1000000) /
				   1024.0;

			memcpy(p + i * es, &f, es);
		} else if (dt == COLL_FP16 || dt == COLL_BF16) {
			uint16_t h = (uint16_t)r;

			if ((h & 0x7c00) == 0x7c00 && dt == COLL_FP16)
				h &= 0xbfff;	/* no inf/NaN: NaN payloads vary */
			if ((h & 0x7f80) == 0x7f80 && dt == COLL_BF16)
				h &= 0xbfff;
			memcpy(p + i * es, &h, 2);
		} else {
			memcpy(p + i * es, &r, es);
		}
	}
}

static void test_reductions(int vec)
{
	static const size_t lens[] = { 0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 32,
				       33, 63, 65, 127, 128, 129, 255, 257,
				       1001 };
	unsigned char *a = malloc(8 * 1024 + 16), *b = malloc(8 * 1024 + 16);
	unsigned char *d = malloc(8 * 1024 + 16), *e = malloc(8 * 1024 + 16);
	char what[128];
	int dt, op, bad;
	size_t li, i, off;

	for (dt = 0; dt < COLL_DTYPE_MAX; dt++) {
		size_t es = coll_dtype_size(dt);

		for (op = 0; op < COLL_REDOP_MAX; op++) {
			coll_red_fn fn = coll_red_get_vec(dt, op, vec);

			bad = 0;
			for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
				for (off = 0; off < 8; off++) {
					size_t n = lens[li];
					unsigned char *x = a + off,
						      *y = b + (7 - off);
					int alias = off & 1;

					fill(dt, x, n);
					fill(dt, y, n);
					for (i = 0; i < n; i++)
						ref_op(dt, op, e + i * es,
						       x + i * es, y + i * es);
					if (op == COLL_AVG)
						for (i = 0; i < n; i++)
							ref_div(dt, e + i * es,
								3);
					if (alias) {
						fn(x, x, y, n);
						if (op == COLL_AVG)
							coll_red_div(dt, x, n,
								     3);
						bad += !!memcmp(x, e, n * es);
					} else {
						fn(d + off, x, y, n);
						if (op == COLL_AVG)
							coll_red_div(dt,
								     d + off,
								     n, 3);
						bad += !!memcmp(d + off, e,
								n * es);
					}
				}
			}
			snprintf(what, sizeof(what),
				 "%s %s %s: bit for bit, every length and alignment",
				 coll_dtype_name(dt), coll_redop_name(op),
				 vec ? "avx2" : "base");
			report(!bad, what);
		}
	}
	free(a);
	free(b);
	free(d);
	free(e);
}

/*
 * What coll_red_get() hands out: the kernels of the choice made at first
 * use, and COLL_REDUCE_VEC=base|avx2 forcing it (in a child each, as the
 * choice is made once a process).
 */
static int child_choice(const char *env)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		setenv("COLL_REDUCE_VEC", env, 1);
		_exit(coll_red_uses_avx2(COLL_FP32) * 2 +
		      coll_red_uses_avx2(COLL_INT32));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void test_choice(void)
{
	int dt, ok = 1, avx2 = coll_red_have_avx2();
	int forced_base = child_choice("base"), forced_avx2 = child_choice("avx2");

	/* The children first: a fork inherits a choice already made. */
	for (dt = 0; dt < COLL_DTYPE_MAX; dt++)
		ok &= coll_red_get(dt, COLL_SUM) ==
		      coll_red_get_vec(dt, COLL_SUM, coll_red_uses_avx2(dt));
	printf("# chosen here: %s for floating point, %s for integers\n",
	       coll_red_uses_avx2(COLL_FP32) ? "avx2" : "base",
	       coll_red_uses_avx2(COLL_INT32) ? "avx2" : "base");
	report(ok, "coll_red_get() gives the kernels of the choice made");
	report(forced_base == 0,
	       "COLL_REDUCE_VEC=base: the baseline's kernels");
	report(forced_avx2 == (avx2 ? 3 : 0),
	       "COLL_REDUCE_VEC=avx2: AVX2's kernels where the CPU has it");
}

int main(void)
{
	test_reductions(0);
	if (coll_red_have_avx2())
		test_reductions(1);
	else
		printf("# no AVX2 here: only the baseline's kernels tested\n");
	test_choice();
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}
