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
 *   memcpy_bw bytes=67108864 reps=11 median_GBps=9.870 best_GBps=10.123 worst_GBps=9.001 threads=1 via=memcpy
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
 *   memcpy_bw -t THREADS [-d float|int32] [-r REPS] [BYTES]
 *
 * runs either on THREADS threads at once (at most one per CPU the process
 * may use, thread i bound to the i-th of them), each with its own buffers
 * of BYTES, started together (the others spin, so no wake-up is timed);
 * a run lasts until the last thread is done and the figure counts the
 * bytes of all threads: what the machine's CPUs copy or reduce together,
 * which an emulator or a shared memory bus may keep well below THREADS
 * times the single-thread figure.  The lines say "N threads at once"
 * instead of "single-thread"; the machine lines carry threads=N.
 *
 * Exit 0, or 2 on bad usage / 1 on allocation failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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
	fprintf(f, "usage: memcpy_bw [-d float|int32] [-r REPS] [-t THREADS] [BYTES]\n"
		"       (default 11 reps of 64M on 1 thread; K/M/G suffixes)\n");
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

#define MAX_THREADS 64

/* One thread's own buffers: d = a (a copy) or d = a + b (a sum). */
struct lane {
	unsigned char *d, *a, *b;
};

/*
 * What the threads run together: candidate k (0 or 1) of a copy or of a
 * sum, each thread on its own lane.  The other threads spin on go (one per
 * CPU, so spinning delays nobody) rather than sleep, so that a run starts
 * without the wake-ups an emulator takes long to deliver.
 */
struct work {
	int nthr;
	size_t bytes;
	const sum_fn *sum;		/* NULL: a copy */
	struct lane lane[MAX_THREADS];
	atomic_uint go;			/* bumped to start a run */
	atomic_int done;		/* threads other than the first done */
	int k;				/* the candidate, written before go */
	int stop;			/* likewise */
};

static void (*const copy_fn[2])(void *, const void *, size_t) = {
	copy_libc, copy_words
};

static void run_lane(const struct work *w, int i, int k)
{
	const struct lane *l = &w->lane[i];

	if (w->sum)
		w->sum[k](l->d, l->a, l->b, w->bytes);
	else
		copy_fn[k](l->d, l->a, w->bytes);
	/* Keep the result observable. */
	__asm__ __volatile__("" : : "r"(l->d) : "memory");
}

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

struct worker_arg {
	struct work *w;
	int i;
};

static void *worker(void *p)
{
	const struct worker_arg *wa = p;
	struct work *w = wa->w;
	unsigned int seen = 0, g;

	if (w->sum)
		set_inexact();
	for (;;) {
		while ((g = atomic_load_explicit(&w->go,
						 memory_order_acquire)) == seen)
			relax();
		seen = g;
		if (w->stop)
			return NULL;
		run_lane(w, wa->i, w->k);
		atomic_fetch_add_explicit(&w->done, 1, memory_order_release);
	}
}

/* Seconds for one run of candidate @k on every lane at once. */
static double timed(struct work *w, int k)
{
	double t0;

	if (w->nthr == 1) {
		t0 = now();
		run_lane(w, 0, k);
		return now() - t0;
	}
	atomic_store_explicit(&w->done, 0, memory_order_relaxed);
	w->k = k;
	t0 = now();
	atomic_fetch_add_explicit(&w->go, 1, memory_order_release);
	run_lane(w, 0, k);
	while (atomic_load_explicit(&w->done, memory_order_acquire) <
	       w->nthr - 1)
		relax();
	return now() - t0;
}

/*
 * Time the candidates (nfn of them) interleaved run by run, so that all see
 * the same machine; med/best/worst get each one's median, fastest and
 * slowest run in seconds.
 */
static void time_runs(struct work *w, int nfn, int reps, double *t,
		      double *med, double *best, double *worst)
{
	double *tv[2] = { t, t + reps };
	int i, k;

	for (i = 0; i < reps; i++)
		for (k = 0; k < nfn; k++)
			tv[k][i] = timed(w, k);
	for (k = 0; k < nfn; k++) {
		med[k] = median(tv[k], reps);
		best[k] = tv[k][0];
		worst[k] = tv[k][reps - 1];
	}
}

/* "single-thread" or "N threads at once": what a figure counts. */
static const char *who(const struct work *w, char *buf, size_t len)
{
	if (w->nthr == 1)
		return "single-thread";
	snprintf(buf, len, "%d threads at once", w->nthr);
	return buf;
}

/*
 * The sum's candidates: the baseline build and, where the CPU has AVX2,
 * the AVX2 one; report the faster median, in bytes of d produced by all
 * threads together.
 */
static int reduce_bw(struct work *w, const char *dtype, int reps, double *t)
{
	int is_float = !strcmp(dtype, "float");
	int nfn = __builtin_cpu_supports("avx2") ? 2 : 1;
	double med[2] = { 0, 0 }, best[2], worst[2], all;
	char hb[32], hw[32];
	int i, k, m;

	for (i = 0; i < w->nthr; i++) {
		fill_ints(w->lane[i].a, w->bytes, is_float, 1);
		fill_ints(w->lane[i].b, w->bytes, is_float, 2);
	}
	set_inexact();
	for (k = 0; k < nfn; k++) {	/* warm-up, and the check */
		for (i = 0; i < w->nthr; i++)
			memset(w->lane[i].d, 0, w->bytes);
		timed(w, k);
		for (i = 0; i < w->nthr; i++)
			if (!sum_checked(w->lane[i].d, w->bytes, is_float))
				return 1;
	}
	time_runs(w, nfn, reps, t, med, best, worst);
	for (i = 0; i < w->nthr; i++)
		if (!sum_checked(w->lane[i].d, w->bytes, is_float))
			return 1;
	m = nfn == 2 && med[1] < med[0];
	all = (double)w->bytes * w->nthr;
	human(hb, sizeof(hb), w->bytes);
	printf("# reduce %s sum %s %s: %.2f GB/s", dtype,
	       who(w, hw, sizeof(hw)), hb, all / med[m] / 1e9);
	if (nfn == 2)
		printf(" (default %.2f, avx2 %.2f)", all / med[0] / 1e9,
		       all / med[1] / 1e9);
	printf("\n");
	printf("reduce_bw dtype=%s bytes=%zu reps=%d median_GBps=%.3f best_GBps=%.3f worst_GBps=%.3f threads=%d vec=%s\n",
	       dtype, w->bytes, reps, all / med[m] / 1e9,
	       all / best[m] / 1e9, all / worst[m] / 1e9, w->nthr,
	       m ? "avx2" : "default");
	return 0;
}

/*
 * The copy's candidates: libc's memcpy() and copy_words(); report the
 * faster median, in bytes copied by all threads together.
 */
static int copy_bw(struct work *w, int reps, double *t)
{
	static const char *const name[2] = { "memcpy", "words" };
	double md[2], bst[2], wst[2], all;
	char hb[32], hw[32];
	int i, k, m;

	for (i = 0; i < w->nthr; i++) {
		unsigned char *src = w->lane[i].a;
		size_t bytes = w->bytes, off;

		for (off = 0; off < (bytes < 4096 ? bytes : 4096); off++)
			src[off] = (unsigned char)(off * 7 + 1 + i);
		for (off = 4096; off < bytes; off += 4096)
			memcpy(src + off, src,
			       bytes - off < 4096 ? bytes - off : 4096);
	}
	for (k = 0; k < 2; k++) {	/* warm-up, and the check */
		for (i = 0; i < w->nthr; i++)
			memset(w->lane[i].d, 0, w->bytes);
		timed(w, k);
		for (i = 0; i < w->nthr; i++) {
			if (memcmp(w->lane[i].d, w->lane[i].a, w->bytes)) {
				fprintf(stderr, "memcpy_bw: %s: copy mismatch\n",
					name[k]);
				return 1;
			}
		}
	}
	time_runs(w, 2, reps, t, md, bst, wst);
	m = md[1] < md[0];
	all = (double)w->bytes * w->nthr;
	human(hb, sizeof(hb), w->bytes);
	printf("# memcpy %s %s: %.2f GB/s (memcpy %.2f, words %.2f)\n",
	       who(w, hw, sizeof(hw)), hb, all / md[m] / 1e9,
	       all / md[0] / 1e9, all / md[1] / 1e9);
	printf("memcpy_bw bytes=%zu reps=%d median_GBps=%.3f best_GBps=%.3f worst_GBps=%.3f threads=%d via=%s\n",
	       w->bytes, reps, all / md[m] / 1e9, all / bst[m] / 1e9,
	       all / wst[m] / 1e9, w->nthr, name[m]);
	return 0;
}

/*
 * Each thread its own buffers; with more than one, thread i (the caller is
 * 0) on the i-th CPU this process may use (one thread runs where the
 * scheduler puts it, as before -t).  Return: 0, 1 on allocation failure.
 */
static int start_threads(struct work *w, pthread_t *tid,
			 struct worker_arg *wa)
{
	size_t len = (w->bytes + 4095) & ~(size_t)4095;
	cpu_set_t allowed, one;
	int i, cpu = -1;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		CPU_ZERO(&allowed);
	for (i = 0; i < w->nthr; i++) {
		struct lane *l = &w->lane[i];

		l->a = aligned_alloc(4096, len);
		l->d = aligned_alloc(4096, len);
		l->b = w->sum ? aligned_alloc(4096, len) : NULL;
		if (!l->a || !l->d || (w->sum && !l->b)) {
			fprintf(stderr, "memcpy_bw: cannot allocate %d x %d x %zu bytes\n",
				w->nthr, w->sum ? 3 : 2, w->bytes);
			return 1;
		}
	}
	if (w->nthr == 1)
		return 0;
	for (i = 0; i < w->nthr; i++) {
		while (++cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed))
			;
		CPU_ZERO(&one);
		if (cpu < CPU_SETSIZE)
			CPU_SET(cpu, &one);
		if (!i) {
			if (cpu < CPU_SETSIZE)
				sched_setaffinity(0, sizeof(one), &one);
			continue;
		}
		wa[i] = (struct worker_arg){ .w = w, .i = i };
		if (pthread_create(&tid[i], NULL, worker, &wa[i])) {
			fprintf(stderr, "memcpy_bw: cannot start a thread\n");
			return 1;
		}
		if (cpu < CPU_SETSIZE)
			pthread_setaffinity_np(tid[i], sizeof(one), &one);
	}
	return 0;
}

static void stop_threads(struct work *w, pthread_t *tid)
{
	int i;

	w->stop = 1;
	atomic_fetch_add_explicit(&w->go, 1, memory_order_release);
	for (i = 1; i < w->nthr; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < w->nthr; i++) {
		free(w->lane[i].a);
		free(w->lane[i].b);
		free(w->lane[i].d);
	}
}

int main(int argc, char **argv)
{
	static const sum_fn f32[2] = { sum_f32, sum_f32_avx2 };
	static const sum_fn i32[2] = { sum_i32, sum_i32_avx2 };
	static struct work w = { .nthr = 1, .bytes = 64u << 20 };
	static pthread_t tid[MAX_THREADS];
	static struct worker_arg wa[MAX_THREADS];
	const char *dtype = NULL;
	int reps = 11, opt, ret, cpus;
	cpu_set_t allowed;
	double *t;

	while ((opt = getopt(argc, argv, "d:r:t:h")) != -1) {
		switch (opt) {
		case 'd':
			dtype = optarg;
			if (!strcmp(dtype, "float")) {
				w.sum = f32;
			} else if (!strcmp(dtype, "int32")) {
				w.sum = i32;
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
		case 't':
			w.nthr = atoi(optarg);
			cpus = MAX_THREADS;
			if (!sched_getaffinity(0, sizeof(allowed), &allowed))
				cpus = CPU_COUNT(&allowed);
			if (cpus > MAX_THREADS)
				cpus = MAX_THREADS;
			if (w.nthr < 1 || w.nthr > cpus) {
				fprintf(stderr, "memcpy_bw: -t: need 1..%d (one thread per CPU this process may use)\n",
					cpus);
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
	if (optind < argc && parse_size(argv[optind++], &w.bytes)) {
		fprintf(stderr, "memcpy_bw: bad size '%s'\n", argv[optind - 1]);
		return 2;
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (w.sum && w.bytes % 32) {
		fprintf(stderr, "memcpy_bw: -d: BYTES must be a multiple of 32\n");
		return 2;
	}
	t = calloc(2 * (size_t)reps, sizeof(*t));	/* two kinds timed */
	if (!t || start_threads(&w, tid, wa)) {
		if (!t)
			fprintf(stderr, "memcpy_bw: out of memory\n");
		return 1;
	}
	ret = w.sum ? reduce_bw(&w, dtype, reps, t) : copy_bw(&w, reps, t);
	stop_threads(&w, tid);
	free(t);
	return ret;
}
