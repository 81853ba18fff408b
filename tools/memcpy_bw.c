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
 * print a[2] }'`.  Exit 0, or 2 on bad usage / 1 on allocation failure.
 */
#define _GNU_SOURCE
#include <errno.h>
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
	fprintf(f, "usage: memcpy_bw [-r REPS] [BYTES]   (default 11 reps of 64M; K/M/G suffixes)\n");
}

int main(int argc, char **argv)
{
	size_t bytes = 64u << 20;
	int reps = 11, opt, i;
	unsigned char *src, *dst;
	double *t, med;
	char hb[32];

	while ((opt = getopt(argc, argv, "r:h")) != -1) {
		switch (opt) {
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

	src = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	dst = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	t = calloc(reps, sizeof(*t));
	if (!src || !dst || !t) {
		fprintf(stderr, "memcpy_bw: cannot allocate 2 x %zu bytes\n", bytes);
		return 1;
	}
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
