// SPDX-License-Identifier: MIT
/*
 * memcpy_bw: single-thread memcpy bandwidth, the yardstick for busbw.
 *
 *   memcpy_bw [-r REPS] [BYTES]        (BYTES default 64M; K/M/G suffixes)
 *
 * Source and destination are page-aligned and pre-faulted (written once,
 * then one untimed copy), so page faults are not timed.  Each of REPS
 * (default 11) copies of BYTES is timed with CLOCK_MONOTONIC; the result is
 * the median.  Bandwidth counts the bytes copied once (not read + write),
 * GB = 1e9 bytes, as algbw/busbw do in coll_perf.  Output:
 *
 *   # memcpy single-thread 64MiB: 9.87 GB/s
 *   memcpy_bw bytes=67108864 reps=11 median_GBps=9.870 best_GBps=10.123 worst_GBps=9.001
 *
 * The second line is for scripts: `awk '/^memcpy_bw/ { split($4, a, "=");
 * print a[2] }'`.
 *
 *   memcpy_bw -d float|int32 [-r REPS] [BYTES]
 *
 * measures instead the single-thread speed of a reduction, d[i] = a[i] +
 * b[i] over BYTES of d (so 3 x BYTES of memory), the yardstick of a
 * reduction's bound: GB/s counts the bytes of d produced.  The loop, four
 * 32-byte vectors a turn, is built for the baseline (SSE2) and for AVX2;
 * where the CPU has AVX2 both are timed, interleaved, and the faster is
 * reported (an emulator may run AVX2 slower than SSE2, as the module's
 * load-time choice finds too).  The inexact flag of MXCSR is set first, as it
 * is in any program that has done inexact arithmetic (an emulator may
 * compute float operations in software until it is; RIG-NOTES).
 *
 *   # reduce float sum single-thread 64MiB: 0.52 GB/s (default 0.52, avx2 0.23)
 *   reduce_bw dtype=float bytes=67108864 reps=11 median_GBps=0.520 ... vec=default
 *
 * Exit 0, or 2 on bad usage / 1 on allocation failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int parse_size(const char *s, size_t *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	default: break;
	}
	if (mul > 1 && (*end == 'i' || *end == 'I'))
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || !v || v > (~0ULL) / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

static void human(char *buf, size_t len, size_t bytes)
{
	if (bytes >= (1u << 30) && bytes % (1u << 30) == 0)
		snprintf(buf, len, "%zuGiB", bytes >> 30);
	else if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
		snprintf(buf, len, "%zuMiB", bytes >> 20);
	else if (bytes >= (1u << 10) && bytes % (1u << 10) == 0)
		snprintf(buf, len, "%zuKiB", bytes >> 10);
	else
		snprintf(buf, len, "%zuB", bytes);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: memcpy_bw [-d float|int32] [-r REPS] [BYTES]   (default 11 reps of 64M; K/M/G suffixes)\n");
}

typedef float vf32 __attribute__((vector_size(32)));
typedef int32_t vi32 __attribute__((vector_size(32)));

/*
 * d = a + b over n bytes (a multiple of 32): 128 bytes a turn while they
 * last, all loads before the stores, then 32 at a time, the loop the
 * module's kernels run (kmod/coll_reduce_vec.h).  Built twice: for the
 * baseline (SSE2 on x86-64) and for AVX2; both are timed and the faster is
 * the yardstick, as the module measures its own at load time.
 */
typedef void (*sum_fn)(void *, const void *, const void *, size_t);

#define SUM_BODY(vec)							\
{									\
	const char *x = a, *y = b;					\
	char *z = d;							\
	size_t i = 0;							\
									\
	for (; i + 128 <= n; i += 128) {				\
		vec u[4], v[4];						\
									\
		memcpy(u, x + i, 128);					\
		memcpy(v, y + i, 128);					\
		u[0] += v[0]; u[1] += v[1]; u[2] += v[2]; u[3] += v[3];	\
		memcpy(z + i, u, 128);					\
	}								\
	for (; i < n; i += 32) {					\
		vec u, v;						\
									\
		memcpy(&u, x + i, 32);					\
		memcpy(&v, y + i, 32);					\
		u += v;							\
		memcpy(z + i, &u, 32);					\
	}								\
}

#define SUM_FNS(name, vec)						\
static void name(void *d, const void *a, const void *b, size_t n)	\
SUM_BODY(vec)								\
__attribute__((target("avx2")))						\
static void name##_avx2(void *d, const void *a, const void *b, size_t n) \
SUM_BODY(vec)

SUM_FNS(sum_f32, vf32)
SUM_FNS(sum_i32, vi32)

static void set_inexact(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned int mxcsr;

	__asm__ __volatile__("stmxcsr %0" : "=m"(mxcsr));
	mxcsr |= 0x20;		/* PE, the sticky inexact flag */
	__asm__ __volatile__("ldmxcsr %0" : : "m"(mxcsr));
#endif
}

/* Small integers, exact in float: a sum of two is exact too. */
static void fill_ints(unsigned char *p, size_t bytes, int is_float, int seed)
{
	for (size_t i = 0; i < bytes / 4; i++) {
		int32_t v = (int32_t)((i * 7 + seed) % 1000);
		float f = (float)v;

		if (is_float)
			memcpy(p + i * 4, &f, 4);
		else
			memcpy(p + i * 4, &v, 4);
	}
}

static int sum_checked(const unsigned char *d, size_t bytes, int is_float)
{
	for (size_t k = 0; k < bytes / 4; k++) {
		int32_t x = (int32_t)((k * 7 + 1) % 1000);
		int32_t y = (int32_t)((k * 7 + 2) % 1000), got;
		float f;

		if (is_float) {
			memcpy(&f, d + k * 4, 4);
			got = (int32_t)f;
		} else {
			memcpy(&got, d + k * 4, 4);
		}
		if (got != x + y) {
			fprintf(stderr, "memcpy_bw: sum mismatch at %zu\n", k);
			return 0;
		}
	}
	return 1;
}

static double median(double *t, int reps)
{
	qsort(t, reps, sizeof(*t), cmpd);
	return reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
}

/*
 * Time fn[0] (baseline) and, where the CPU has AVX2, fn[1], interleaved
 * rep by rep so that both see the same machine; report the faster median.
 */
static int reduce_bw(const sum_fn fn[2], const char *dtype, unsigned char *d,
		     const unsigned char *a, const unsigned char *b,
		     size_t bytes, int reps, double *t)
{
	int is_float = !strcmp(dtype, "float");
	int nfn = __builtin_cpu_supports("avx2") ? 2 : 1;
	double med[2] = { 0, 0 }, best[2], worst[2], *tv[2] = { t, t + reps };
	int i, k, w;
	char hb[32];

	fill_ints((unsigned char *)a, bytes, is_float, 1);
	fill_ints((unsigned char *)b, bytes, is_float, 2);
	set_inexact();
	for (k = 0; k < nfn; k++) {
		memset(d, 0, bytes);
		fn[k](d, a, b, bytes);	/* warm-up, and the check */
		if (!sum_checked(d, bytes, is_float))
			return 1;
	}
	for (i = 0; i < reps; i++) {
		for (k = 0; k < nfn; k++) {
			double t0 = now();

			fn[k](d, a, b, bytes);
			tv[k][i] = now() - t0;
			__asm__ __volatile__("" : : "r"(d) : "memory");
		}
	}
	if (!sum_checked(d, bytes, is_float))
		return 1;
	for (k = 0; k < nfn; k++) {
		med[k] = median(tv[k], reps);
		best[k] = tv[k][0];
		worst[k] = tv[k][reps - 1];
	}
	w = nfn == 2 && med[1] < med[0];
	human(hb, sizeof(hb), bytes);
	printf("# reduce %s sum single-thread %s: %.2f GB/s", dtype, hb,
	       bytes / med[w] / 1e9);
	if (nfn == 2)
		printf(" (default %.2f, avx2 %.2f)", bytes / med[0] / 1e9,
		       bytes / med[1] / 1e9);
	printf("\n");
	printf("reduce_bw dtype=%s bytes=%zu reps=%d median_GBps=%.3f best_GBps=%.3f worst_GBps=%.3f vec=%s\n",
	       dtype, bytes, reps, bytes / med[w] / 1e9, bytes / best[w] / 1e9,
	       bytes / worst[w] / 1e9, w ? "avx2" : "default");
	return 0;
}

int main(int argc, char **argv)
{
	size_t bytes = 64u << 20;
	static const sum_fn f32[2] = { sum_f32, sum_f32_avx2 };
	static const sum_fn i32[2] = { sum_i32, sum_i32_avx2 };
	const sum_fn *sum = NULL;
	const char *dtype = NULL;
	int reps = 11, opt, i;
	unsigned char *src, *dst, *src2 = NULL;
	double *t, med;
	char hb[32];

	while ((opt = getopt(argc, argv, "d:r:h")) != -1) {
		switch (opt) {
		case 'd':
			dtype = optarg;
			if (!strcmp(dtype, "float")) {
				sum = f32;
			} else if (!strcmp(dtype, "int32")) {
				sum = i32;
			} else {
				fprintf(stderr, "memcpy_bw: -d: float or int32\n");
				return 2;
			}
			break;
		case 'r':
			reps = atoi(optarg);
			if (reps < 1 || reps > 100000) {
				fprintf(stderr, "memcpy_bw: -r: need 1..100000\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc && parse_size(argv[optind++], &bytes)) {
		fprintf(stderr, "memcpy_bw: bad size '%s'\n", argv[optind - 1]);
		return 2;
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}

	if (sum && bytes % 32) {
		fprintf(stderr, "memcpy_bw: -d: BYTES must be a multiple of 32\n");
		return 2;
	}
	src = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	dst = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	if (sum)
		src2 = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	t = calloc(2 * (size_t)reps, sizeof(*t));
	if (!src || !dst || !t || (sum && !src2)) {
		fprintf(stderr, "memcpy_bw: cannot allocate %d x %zu bytes\n",
			sum ? 3 : 2, bytes);
		return 1;
	}
	if (sum)
		return reduce_bw(sum, dtype, dst, src, src2, bytes, reps, t);
	for (i = 0; i < (int)(bytes < 4096 ? bytes : 4096); i++)
		src[i] = (unsigned char)(i * 7 + 1);
	for (size_t off = 4096; off < bytes; off += 4096)
		memcpy(src + off, src, bytes - off < 4096 ? bytes - off : 4096);
	memset(dst, 0, bytes);
	memcpy(dst, src, bytes);	/* warm-up */

	for (i = 0; i < reps; i++) {
		double t0 = now();

		memcpy(dst, src, bytes);
		t[i] = now() - t0;
		/* Keep the copy observable so it is not optimised away. */
		__asm__ __volatile__("" : : "r"(dst) : "memory");
	}
	if (memcmp(dst, src, bytes)) {
		fprintf(stderr, "memcpy_bw: copy mismatch\n");
		return 1;
	}
	qsort(t, reps, sizeof(*t), cmpd);
	med = reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
	human(hb, sizeof(hb), bytes);
	printf("# memcpy single-thread %s: %.2f GB/s\n", hb, bytes / med / 1e9);
	printf("memcpy_bw bytes=%zu reps=%d median_GBps=%.3f best_GBps=%.3f worst_GBps=%.3f\n",
	       bytes, reps, bytes / med / 1e9, bytes / t[0] / 1e9,
	       bytes / t[reps - 1] / 1e9);
	free(src);
	free(dst);
	free(t);
	return 0;
}
