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
 * GB = 1e9 bytes, as algbw/busbw do in coll_perf.  Two copies are timed,
 * interleaved: libc's memcpy() and the module's copy_kernel 1 loop (64
 * bytes a turn in 8-byte words), and the faster is the yardstick (under
 * QEMU's TCG, libc's AVX2 memcpy() runs slower than the words).  Output:
 *
 *   # memcpy single-thread 64MiB: 9.87 GB/s (memcpy 9.87, words 7.50)
 *   memcpy_bw bytes=67108864 reps=11 median_GBps=9.870 best_GBps=10.123 worst_GBps=9.001 via=memcpy
 *
 * The second line is for scripts: `awk '/^memcpy_bw/ { split($4, a, "=");
 * print a[2] }'`.
 *
 *   memcpy_bw -d float|int32 [-r REPS] [BYTES]
 *
 * measures instead the single-thread speed of a reduction, d[i] = a[i] +
 * b[i] over BYTES of d (so 3 x BYTES of memory), the yardstick of a
 * reduction's bound: GB/s counts the bytes of d produced.  The loop, four
 * vectors a turn, is built for the baseline (SSE2) and for AVX2;
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

/*
 * d = a + b over n bytes (a multiple of 32): four vectors a turn while they
 * last, all loads before the stores, then one, the loop the module's
 * kernels run (kmod/coll_reduce_vec.h).  Built twice: on 16-byte vectors
 * for the baseline (SSE2 on x86-64) and on 32-byte ones for AVX2; both are
 * timed and the faster is the yardstick, as the module measures its own at
 * load time.
 */
typedef void (*sum_fn)(void *, const void *, const void *, size_t);

#define SUM_BODY(T, VB)							\
{									\
	typedef T vec __attribute__((vector_size(VB)));			\
	const char *x = a, *y = b;					\
	char *z = d;							\
	size_t i = 0;							\
									\
	for (; i + 4 * VB <= n; i += 4 * VB) {				\
		vec u0, u1, u2, u3, v0, v1, v2, v3;			\
									\
		memcpy(&u0, x + i, VB);					\
		memcpy(&u1, x + i + VB, VB);				\
		memcpy(&u2, x + i + 2 * VB, VB);			\
		memcpy(&u3, x + i + 3 * VB, VB);			\
		memcpy(&v0, y + i, VB);					\
		memcpy(&v1, y + i + VB, VB);				\
		memcpy(&v2, y + i + 2 * VB, VB);			\
		memcpy(&v3, y + i + 3 * VB, VB);			\
		u0 += v0;						\
		u1 += v1;						\
		u2 += v2;						\
		u3 += v3;						\
		memcpy(z + i, &u0, VB);					\
		memcpy(z + i + VB, &u1, VB);				\
		memcpy(z + i + 2 * VB, &u2, VB);			\
		memcpy(z + i + 3 * VB, &u3, VB);			\
	}								\
	for (; i < n; i += VB) {					\
		vec u, v;						\
									\
		memcpy(&u, x + i, VB);					\
		memcpy(&v, y + i, VB);					\
		u += v;							\
		memcpy(z + i, &u, VB);					\
	}								\
}

#define SUM_FNS(name, T)						\
static void name(void *d, const void *a, const void *b, size_t n)	\
SUM_BODY(T, 16)								\
__attribute__((target("avx2")))						\
static void name##_avx2(void *d, const void *a, const void *b, size_t n) \
SUM_BODY(T, 32)

SUM_FNS(sum_f32, float)
SUM_FNS(sum_i32, int32_t)

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

static void copy_libc(void *d, const void *s, size_t n)
{
	memcpy(d, s, n);
}

/*
 * The module's copy_kernel 1 (kmod/coll_copy.c): 64 bytes a turn through
 * eight 8-byte registers, kept so (no vectorising, no memcpy() call).
 */
__attribute__((optimize("no-tree-slp-vectorize", "no-tree-vectorize",
			"no-tree-loop-distribute-patterns")))
static void copy_words(void *dst, const void *src, size_t n)
{
	const unsigned char *s = src;
	unsigned char *d = dst;
	uint64_t w[8];

	for (; n >= 64; n -= 64, d += 64, s += 64) {
		memcpy(&w[0], s, 8);
		memcpy(&w[1], s + 8, 8);
		memcpy(&w[2], s + 16, 8);
		memcpy(&w[3], s + 24, 8);
		memcpy(&w[4], s + 32, 8);
		memcpy(&w[5], s + 40, 8);
		memcpy(&w[6], s + 48, 8);
		memcpy(&w[7], s + 56, 8);
		memcpy(d, &w[0], 8);
		memcpy(d + 8, &w[1], 8);
		memcpy(d + 16, &w[2], 8);
		memcpy(d + 24, &w[3], 8);
		memcpy(d + 32, &w[4], 8);
		memcpy(d + 40, &w[5], 8);
		memcpy(d + 48, &w[6], 8);
		memcpy(d + 56, &w[7], 8);
	}
	for (; n; n--)
		*d++ = *s++;
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

/*
 * Time libc's memcpy() and copy_words(), interleaved rep by rep so that
 * both see the same machine; report the faster median.
 */
static int copy_bw(unsigned char *dst, const unsigned char *src,
		   size_t bytes, int reps, double *t)
{
	static const char *const name[2] = { "memcpy", "words" };
	void (*fn[2])(void *, const void *, size_t) = { copy_libc, copy_words };
	double md[2], bst[2], wst[2], *tv[2] = { t, t + reps };
	char hb[32];
	int i, k, w;

	for (k = 0; k < 2; k++) {	/* warm-up, and the check */
		memset(dst, 0, bytes);
		fn[k](dst, src, bytes);
		if (memcmp(dst, src, bytes)) {
			fprintf(stderr, "memcpy_bw: %s: copy mismatch\n",
				name[k]);
			return 1;
		}
	}
	for (i = 0; i < reps; i++) {
		for (k = 0; k < 2; k++) {
			double t0 = now();

			fn[k](dst, src, bytes);
			tv[k][i] = now() - t0;
			/* Keep the copy observable. */
			__asm__ __volatile__("" : : "r"(dst) : "memory");
		}
	}
	for (k = 0; k < 2; k++) {
		md[k] = median(tv[k], reps);
		bst[k] = tv[k][0];
		wst[k] = tv[k][reps - 1];
	}
	w = md[1] < md[0];
	human(hb, sizeof(hb), bytes);
	printf("# memcpy single-thread %s: %.2f GB/s (memcpy %.2f, words %.2f)\n",
	       hb, bytes / md[w] / 1e9, bytes / md[0] / 1e9,
	       bytes / md[1] / 1e9);
	printf("memcpy_bw bytes=%zu reps=%d median_GBps=%.3f best_GBps=%.3f worst_GBps=%.3f via=%s\n",
	       bytes, reps, bytes / md[w] / 1e9, bytes / bst[w] / 1e9,
	       bytes / wst[w] / 1e9, name[w]);
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
	double *t;

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
	t = calloc(2 * (size_t)reps, sizeof(*t));	/* two kinds timed */
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
	if (copy_bw(dst, src, bytes, reps, t))
		return 1;
	free(src);
	free(dst);
	free(t);
	return 0;
}
