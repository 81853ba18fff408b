// SPDX-License-Identifier: MIT
/*
 * perf_common: benchmark driver shared by coll_perf and mpi_perf.
 *
 * Sizes and counts (nccl-tests conventions)
 * -----------------------------------------
 * A size S from -b/-e/-f gives n = S / element size elements, and
 *
 *   primitive      count      send elems        recv elems        printed size
 *   allreduce      n          n                 n                 n * es
 *   reduce         n          n                 n (root)          n * es
 *   broadcast      n          n (root)          n                 n * es
 *   reducescatter  n/P        P*(n/P)           n/P               P*(n/P) * es
 *   allgather      n/P        n/P               P*(n/P)           P*(n/P) * es
 *   alltoall       n/P        P*(n/P)           P*(n/P)           P*(n/P) * es
 *   scatter        n/P        P*(n/P) (root)    n/P               P*(n/P) * es
 *   gather         n/P        n/P               P*(n/P) (root)    P*(n/P) * es
 *   barrier        0          -                 -                 0
 *
 * (P ranks, es bytes per element.)  The printed size is the larger of the
 * send and receive buffers of a rank, as nccl-tests prints it; count is what
 * the primitive is called with.  Sizes whose count comes out 0 are skipped.
 *
 * Time and bandwidth
 * ------------------
 * Per size: (with -c 1) one checked run; WARMUP untimed runs; a barrier; ITERS
 * runs back to back between two clock_gettime(CLOCK_MONOTONIC) reads; time =
 * elapsed / ITERS on each rank, then the maximum over ranks (an allreduce of
 * the times).  algbw = size / time (GB/s = 1e9 B/s); busbw = algbw * factor
 * with the nccl-tests factors (perf_bus_factor()).  "# Avg bus bandwidth" is
 * the mean busbw over all printed rows (barrier rows excluded).
 *
 * Checking (-c 1)
 * ---------------
 * Before the checked run, the receive buffer is filled with 0xff bytes
 * (NaN for floating types) and then the input with a pattern that depends on
 * (rank, index).  Reductions use small integers chosen so that every partial
 * sum or product is exact in the element type whatever order the ranks are
 * combined in (sums bounded by the type's exact-integer range, products of
 * +-1 and +-2 only), so the reference is exact; only avg of floating types is
 * compared with a tolerance of 2 ulp of the type (the division may be done as
 * a multiplication by 1/P).  Integer sums and products wrap in the element
 * type, as the module's do.  Data movement uses a hash of (rank, index).
 * #wrong is the number of result elements that differ, summed over ranks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf_common.h"
#include "libcollective.h"

/* ------------------------------------------------------------------ */
/* Element access                                                      */

static int is_float(int dtype)
{
	return dtype == COLL_FP16 || dtype == COLL_BF16 || dtype == COLL_FP32 ||
	       dtype == COLL_FP64;
}

static int is_signed(int dtype)
{
	return dtype == COLL_INT8 || dtype == COLL_INT32 || dtype == COLL_INT64 ||
	       is_float(dtype);
}

uint16_t perf_f32_to_f16(float f)
{
	uint32_t x, sign, mant, h, rem, halfway;
	int32_t exp;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	mant = x & 0x7fffff;
	if (((x >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
	exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		int shift;

		if (exp < -10)
			return (uint16_t)sign;
		mant |= 0x800000;
		shift = 14 - exp;
		h = mant >> shift;
		rem = mant & ((1u << shift) - 1);
		halfway = 1u << (shift - 1);
		if (rem > halfway || (rem == halfway && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	h = ((uint32_t)exp << 10) | (mant >> 13);
	rem = mant & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;		/* a carry into the exponent is right, up to inf */
	return (uint16_t)(sign | h);
}

float perf_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
	float f;

	if (exp == 0x1f) {
		x = sign | 0x7f800000 | (mant << 13);
	} else if (exp == 0) {
		if (!mant) {
			x = sign;
		} else {
			int e = -1;

			do {
				e++;
				mant <<= 1;
			} while (!(mant & 0x400));
			mant &= 0x3ff;
			x = sign | ((uint32_t)(127 - 15 - e) << 23) | (mant << 13);
		}
	} else {
		x = sign | ((exp + 112) << 23) | (mant << 13);
	}
	memcpy(&f, &x, 4);
	return f;
}

uint16_t perf_f32_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)	/* NaN: keep it quiet */
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

float perf_bf16_to_f32(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;

	memcpy(&f, &x, 4);
	return f;
}

static uint64_t load_raw(const void *p, size_t i, size_t es)
{
	const unsigned char *b = (const unsigned char *)p + i * es;
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (es) {
	case 1: memcpy(&u8, b, 1); return u8;
	case 2: memcpy(&u16, b, 2); return u16;
	case 4: memcpy(&u32, b, 4); return u32;
	default: memcpy(&u64, b, 8); return u64;
	}
}

static void store_raw(void *p, size_t i, size_t es, uint64_t v)
{
	unsigned char *b = (unsigned char *)p + i * es;
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	switch (es) {
	case 1: memcpy(b, &u8, 1); break;
	case 2: memcpy(b, &u16, 2); break;
	case 4: memcpy(b, &u32, 4); break;
	default: memcpy(b, &v, 8); break;
	}
}

/* Bit pattern of a double in dtype (integers: the value, truncated). */
static uint64_t to_raw(int dtype, double d)
{
	float f = (float)d;
	uint32_t u32;
	uint64_t u64;

	switch (dtype) {
	case COLL_FP16: return perf_f32_to_f16(f);
	case COLL_BF16: return perf_f32_to_bf16(f);
	case COLL_FP32: memcpy(&u32, &f, 4); return u32;
	case COLL_FP64: memcpy(&u64, &d, 8); return u64;
	default: return (uint64_t)(int64_t)d;
	}
}

static double raw_to_double(int dtype, uint64_t raw)
{
	uint32_t u32 = (uint32_t)raw;
	float f;
	double d;

	switch (dtype) {
	case COLL_FP16: return perf_f16_to_f32((uint16_t)raw);
	case COLL_BF16: return perf_bf16_to_f32((uint16_t)raw);
	case COLL_FP32: memcpy(&f, &u32, 4); return f;
	case COLL_FP64: memcpy(&d, &raw, 8); return d;
	default: return 0;
	}
}

static uint64_t width_mask(size_t es)
{
	return es >= 8 ? ~0ULL : (1ULL << (8 * es)) - 1;
}

/* Sign-extend a raw integer of es bytes. */
static int64_t sext(uint64_t raw, size_t es)
{
	unsigned int sh = (unsigned int)(64 - 8 * es);

	return es >= 8 ? (int64_t)raw : (int64_t)(raw << sh) >> sh;
}

/* ------------------------------------------------------------------ */
/* Patterns and references                                             */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t hash2(int rank, size_t i)
{
	return mix(((uint64_t)(uint32_t)rank << 40) ^ (uint64_t)i);
}

/* Data movement: a value of dtype that identifies (rank, index). */
static uint64_t dat_raw(int dtype, int rank, size_t i)
{
	uint64_t h = hash2(rank, i);

	switch (dtype) {
	case COLL_FP16: return to_raw(dtype, (double)(h % 2048));
	case COLL_BF16: return to_raw(dtype, (double)(h % 256));
	case COLL_FP32: return to_raw(dtype, (double)(h % (1u << 24)));
	case COLL_FP64: return to_raw(dtype, (double)(h % (1ULL << 53)));
	default: return h;	/* truncated to the width by store_raw */
	}
}

/*
 * Reduction inputs repeat with this period in the index, so the reference
 * of an index is a table lookup (P * nranks work per size, not count *
 * nranks).  A prime, so that slices at rank * count see other values.
 */
#define RED_PERIOD 1021

/* Exact-integer range of a floating type: partial sums stay within it. */
static double exact_limit(int dtype)
{
	switch (dtype) {
	case COLL_FP16: return 2048;
	case COLL_BF16: return 256;
	case COLL_FP32: return 16777216.0;
	default: return 9007199254740992.0;
	}
}

struct red_pattern {
	int dtype, redop, nranks;
	int64_t m;		/* sum/avg: |value| <= m */
	int contributing;	/* sum/avg, floats: ranks >= this give 0 */
};

static void red_pattern_init(struct red_pattern *rp, int dtype, int redop,
			     int nranks)
{
	rp->dtype = dtype;
	rp->redop = redop;
	rp->nranks = nranks;
	rp->m = 8;
	rp->contributing = nranks;
	if (is_float(dtype)) {
		double lim = exact_limit(dtype);

		while (rp->m > 1 && (double)rp->m * nranks > lim)
			rp->m /= 2;
		if ((double)rp->m * nranks > lim)
			rp->contributing = (int)(lim / rp->m);
	}
}

/* Input value of rank at index k (0 <= k < RED_PERIOD), as an integer. */
static int64_t red_in(const struct red_pattern *rp, int rank, size_t k)
{
	uint64_t h = hash2(rank + 7919, k);
	int64_t v;

	switch (rp->redop) {
	case COLL_PROD:
		v = (h & 7) == 0 ? 2 : 1;
		if (is_signed(rp->dtype) && ((h >> 3) % 5) == 0)
			v = -v;
		return v;
	case COLL_MIN:
	case COLL_MAX:
		v = (int64_t)((h >> 8) % 255);
		return is_signed(rp->dtype) ? v - 127 : v;
	default:	/* sum, avg */
		if (rank >= rp->contributing)
			return 0;
		if (is_signed(rp->dtype))
			return (int64_t)((h >> 8) % (uint64_t)(2 * rp->m + 1)) - rp->m;
		return (int64_t)((h >> 8) % (uint64_t)(rp->m + 1));
	}
}

/* Reference result at index k: raw bits and tolerance (floats). */
static void red_ref(const struct red_pattern *rp, size_t k, uint64_t *raw,
		    double *tol, double *val)
{
	size_t es = coll_dtype_size(rp->dtype);
	int n = rp->nranks, q;

	*tol = 0;
	*val = 0;
	if (is_float(rp->dtype)) {
		double acc = (double)red_in(rp, 0, k), v;

		for (q = 1; q < n; q++) {
			v = (double)red_in(rp, q, k);
			switch (rp->redop) {
			case COLL_PROD: acc *= v; break;
			case COLL_MIN: acc = v < acc ? v : acc; break;
			case COLL_MAX: acc = v > acc ? v : acc; break;
			default: acc += v; break;
			}
		}
		if (rp->redop == COLL_AVG) {
			static const double eps[] = {
				[COLL_FP16] = 0x1p-10, [COLL_BF16] = 0x1p-7,
				[COLL_FP32] = 0x1p-23, [COLL_FP64] = 0x1p-52,
			};
			acc /= n;
			*tol = 2 * eps[rp->dtype] * fabs(acc);
		}
		*raw = to_raw(rp->dtype, acc);
		*val = raw_to_double(rp->dtype, *raw);
		if (rp->redop == COLL_AVG)
			*val = acc;
		return;
	}

	/* Integers: wrap in the element width. */
	{
		uint64_t mask = width_mask(es), acc;
		int sgn = is_signed(rp->dtype);

		acc = (uint64_t)red_in(rp, 0, k) & mask;
		for (q = 1; q < n; q++) {
			uint64_t v = (uint64_t)red_in(rp, q, k) & mask;

			switch (rp->redop) {
			case COLL_PROD:
				acc = (acc * v) & mask;
				break;
			case COLL_MIN:
			case COLL_MAX: {
				int less = sgn ? sext(v, es) < sext(acc, es) : v < acc;

				if (rp->redop == COLL_MIN ? less : !less && v != acc)
					acc = v;
				break;
			}
			default:
				acc = (acc + v) & mask;
				break;
			}
		}
		if (rp->redop == COLL_AVG) {
			if (sgn)
				acc = (uint64_t)(sext(acc, es) / n) & mask;
			else
				acc = acc / (uint64_t)n;
		}
		*raw = acc;
	}
}

static int is_reducing(int prim)
{
	return prim == COLL_ALLREDUCE || prim == COLL_REDUCE ||
	       prim == COLL_REDUCESCATTER;
}

static int is_rooted(int prim)
{
	return prim == COLL_REDUCE || prim == COLL_BROADCAST ||
	       prim == COLL_SCATTER || prim == COLL_GATHER;
}

/* Elements this rank sends (sendcount) for op; see the table at the top. */
static size_t send_elems(const struct perf_op *op, int nranks, int rank)
{
	size_t c = op->count, P = (size_t)nranks;

	switch (op->prim) {
	case COLL_REDUCESCATTER:
	case COLL_ALLTOALL:
		return c * P;
	case COLL_SCATTER:
		return rank == op->root ? c * P : 0;
	case COLL_BROADCAST:
		return rank == op->root ? c : 0;
	case COLL_BARRIER:
		return 0;
	default:
		return c;
	}
}

void perf_poison(void *p, size_t bytes)
{
	if (p && bytes)
		memset(p, 0xff, bytes);
}

void perf_fill(const struct perf_op *op, int nranks, int rank)
{
	size_t es = coll_dtype_size(op->dtype), n = send_elems(op, nranks, rank), i;

	if (!n || !op->sendptr)
		return;
	if (is_reducing(op->prim)) {
		struct red_pattern rp;
		uint64_t tab[RED_PERIOD];

		red_pattern_init(&rp, op->dtype, op->redop, nranks);
		for (i = 0; i < RED_PERIOD; i++) {
			int64_t v = red_in(&rp, rank, i);

			tab[i] = is_float(op->dtype) ? to_raw(op->dtype, (double)v)
						     : (uint64_t)v;
		}
		for (i = 0; i < n; i++)
			store_raw(op->sendptr, i, es, tab[i % RED_PERIOD]);
		return;
	}
	for (i = 0; i < n; i++)
		store_raw(op->sendptr, i, es, dat_raw(op->dtype, rank, i));
}

static int raw_equal(int dtype, size_t es, uint64_t got, uint64_t want)
{
	if (is_float(dtype))	/* by value: -0 == +0 */
		return raw_to_double(dtype, got) == raw_to_double(dtype, want);
	return ((got ^ want) & width_mask(es)) == 0;
}

/* Wrong elements among n results at resultptr, reduction reference. */
static uint64_t check_red(const struct perf_op *op, int nranks, size_t n,
			  size_t first)
{
	size_t es = coll_dtype_size(op->dtype), i, k;
	struct red_pattern rp;
	uint64_t raw[RED_PERIOD], bad = 0;
	double tol[RED_PERIOD], val[RED_PERIOD];

	red_pattern_init(&rp, op->dtype, op->redop, nranks);
	for (k = 0; k < RED_PERIOD; k++)
		red_ref(&rp, k, &raw[k], &tol[k], &val[k]);
	for (i = 0; i < n; i++) {
		uint64_t got = load_raw(op->resultptr, i, es);

		k = (first + i) % RED_PERIOD;
		if (tol[k] > 0 || (op->redop == COLL_AVG && is_float(op->dtype))) {
			double g = raw_to_double(op->dtype, got);

			bad += !(fabs(g - val[k]) <= tol[k]);
		} else {
			bad += !raw_equal(op->dtype, es, got, raw[k]);
		}
	}
	return bad;
}

uint64_t perf_check(const struct perf_op *op, int nranks, int rank)
{
	size_t es = coll_dtype_size(op->dtype), c = op->count, i;
	const void *r = op->resultptr;
	uint64_t bad = 0;
	int q;

	switch (op->prim) {
	case COLL_ALLREDUCE:
		return check_red(op, nranks, c, 0);
	case COLL_REDUCE:
		return rank == op->root ? check_red(op, nranks, c, 0) : 0;
	case COLL_REDUCESCATTER:
		return check_red(op, nranks, c, (size_t)rank * c);
	case COLL_BROADCAST:
		for (i = 0; i < c; i++)
			bad += !raw_equal(op->dtype, es, load_raw(r, i, es),
					  dat_raw(op->dtype, op->root, i));
		return bad;
	case COLL_SCATTER:
		for (i = 0; i < c; i++)
			bad += !raw_equal(op->dtype, es, load_raw(r, i, es),
					  dat_raw(op->dtype, op->root,
						  (size_t)rank * c + i));
		return bad;
	case COLL_GATHER:
		if (rank != op->root)
			return 0;
		/* fall through */
	case COLL_ALLGATHER:
		for (q = 0; q < nranks; q++)
			for (i = 0; i < c; i++)
				bad += !raw_equal(op->dtype, es,
						  load_raw(r, (size_t)q * c + i, es),
						  dat_raw(op->dtype, q, i));
		return bad;
	case COLL_ALLTOALL:
		for (q = 0; q < nranks; q++)
			for (i = 0; i < c; i++)
				bad += !raw_equal(op->dtype, es,
						  load_raw(r, (size_t)q * c + i, es),
						  dat_raw(op->dtype, q,
							  (size_t)rank * c + i));
		return bad;
	default:
		return 0;
	}
}

/* ------------------------------------------------------------------ */
/* Sizes, layouts, factors                                             */

int perf_parse_size(const char *s, size_t *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	case 't': case 'T': mul = 1ULL << 40; end++; break;
	default: break;
	}
	if (mul > 1 && (*end == 'i' || *end == 'I'))
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || (v && mul > ~0ULL / v) || v * mul > (size_t)-1)
		return -EINVAL;
	*out = (size_t)(v * mul);
	return 0;
}

size_t perf_counts(int prim, size_t bytes, size_t esize, int nranks,
		   size_t *sendcount, size_t *recvcount)
{
	size_t n = bytes / esize, P = (size_t)nranks, per = n / P;

	switch (prim) {
	case COLL_ALLREDUCE:
	case COLL_REDUCE:
	case COLL_BROADCAST:
		*sendcount = *recvcount = n;
		return n;
	case COLL_REDUCESCATTER:
	case COLL_SCATTER:
		*sendcount = per * P;
		*recvcount = per;
		return per;
	case COLL_ALLGATHER:
	case COLL_GATHER:
		*sendcount = per;
		*recvcount = per * P;
		return per;
	case COLL_ALLTOALL:
		*sendcount = *recvcount = per * P;
		return per;
	default:
		*sendcount = *recvcount = 0;
		return 0;
	}
}

double perf_bus_factor(int prim, int nranks)
{
	double n = nranks;

	switch (prim) {
	case COLL_ALLREDUCE:
		return 2 * (n - 1) / n;
	case COLL_REDUCESCATTER:
	case COLL_ALLGATHER:
	case COLL_ALLTOALL:
	case COLL_SCATTER:
	case COLL_GATHER:
		return (n - 1) / n;
	case COLL_REDUCE:
	case COLL_BROADCAST:
		return 1;
	default:
		return 0;
	}
}

/* The NCCL layouts, in-place as <linux/collective.h> documents them. */
void perf_layout_nccl(const struct perf_opts *o, struct perf_op *op,
		      void *sbuf, void *rbuf, int rank)
{
	size_t off = (size_t)rank * op->count * coll_dtype_size(op->dtype);

	if (op->prim == COLL_BARRIER) {
		op->sendptr = op->recvptr = op->resultptr = NULL;
		return;
	}
	if (!o->inplace) {
		op->sendptr = sbuf;
		op->recvptr = op->resultptr = rbuf;
		return;
	}
	switch (op->prim) {
	case COLL_ALLGATHER:
	case COLL_GATHER:
		op->recvptr = op->resultptr = rbuf;
		op->sendptr = (char *)rbuf + off;
		break;
	case COLL_REDUCESCATTER:
	case COLL_SCATTER:
		op->sendptr = rbuf;
		op->recvptr = op->resultptr = (char *)rbuf + off;
		break;
	default:
		op->sendptr = op->recvptr = op->resultptr = rbuf;
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Options                                                             */

static void usage(FILE *f, const struct perf_backend *be)
{
	fprintf(f,
		"usage: %s [-p PRIM] [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-n ITERS]\n"
		"       [-w WARMUP] [-c 0|1] [-d DTYPE] [-o REDOP] [-r ROOT] [-i 0|1]%s\n"
		"  -p PRIM   allreduce reduce reducescatter allgather broadcast scatter\n"
		"            gather alltoall barrier | all | a comma-separated list\n"
		"                                                   (default allreduce)\n"
		"  -b, -e    smallest and largest size in bytes, K/M/G suffixes (8, 32M)\n"
		"  -f        multiply the size by this factor each step     (default 2)\n"
		"  -n, -w    timed and warm-up iterations per size       (default 20, 5)\n"
		"  -T MS     repeat the timed iterations until MS have passed (default 0)\n"
		"  -c        check results (#wrong)                         (default 1)\n"
		"  -d DTYPE  int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double\n"
		"                                                       (default float)\n"
		"  -o REDOP  sum prod min max avg                         (default sum)\n"
		"  -r ROOT   root of reduce, broadcast, scatter, gather     (default 0)\n"
		"  -i 0|1    in place (NCCL layouts)                        (default 0)\n",
		be->name,
		be->features & PERF_F_ALGO ? " [-a ALGO] [-N] [-W DEPTH]" : "");
	if (be->features & PERF_F_ALGO)
		fprintf(f,
			"  -a ALGO   auto ring direct naive tree hier             (default auto)\n");
	if (be->features & PERF_F_NONBLOCK)
		fprintf(f,
			"  -N        non-blocking: i-calls and coll_wait()\n"
			"  -W DEPTH  with -N, requests in flight at once            (default 1)\n");
	fprintf(f,
		"Size is the larger per-rank buffer as in nccl-tests (send for\n"
		"reducescatter/scatter/alltoall, receive for allgather/gather): see the\n"
		"'#' header lines of the output.\n");
}

static void die_opt(const struct perf_backend *be, int opt, const char *arg,
		    const char *what)
{
	if (be->rank == 0)
		fprintf(stderr, "%s: -%c '%s': %s\n", be->name, opt, arg, what);
	be->abort(2);
}

static long parse_int_opt(const struct perf_backend *be, int opt,
			  const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		char msg[64];

		snprintf(msg, sizeof(msg), "need an integer in %ld..%ld", min, max);
		die_opt(be, opt, arg, msg);
	}
	return v;
}

/* -p: one primitive, "all", or a comma-separated list (run in enum order). */
static void parse_prims(const struct perf_backend *be, int opt,
			const char *arg, struct perf_opts *o)
{
	char name[32];
	const char *p = arg, *end;
	size_t len;
	int prim;

	if (!strcmp(arg, "all")) {
		o->prim = PERF_PRIM_ALL;
		o->prims = (1U << COLL_PRIM_MAX) - 1;
		return;
	}
	if (!strchr(arg, ',')) {
		if ((o->prim = coll_prim_from_name(arg)) < 0)
			die_opt(be, opt, arg, "unknown primitive");
		return;
	}
	o->prim = PERF_PRIM_ALL;
	o->prims = 0;
	for (;;) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (!len || len >= sizeof(name))
			die_opt(be, opt, arg, "bad primitive list");
		memcpy(name, p, len);
		name[len] = 0;
		if ((prim = coll_prim_from_name(name)) < 0)
			die_opt(be, opt, arg, "unknown primitive");
		o->prims |= 1U << prim;
		if (!end)
			break;
		p = end + 1;
	}
}

void perf_parse(int argc, char **argv, const struct perf_backend *be,
		struct perf_opts *o)
{
	int opt;

	memset(o, 0, sizeof(*o));
	o->prim = COLL_ALLREDUCE;
	o->minbytes = 8;
	o->maxbytes = 32 << 20;
	o->factor = 2;
	o->iters = 20;
	o->warmup = 5;
	o->check = 1;
	o->dtype = COLL_FP32;
	o->redop = COLL_SUM;
	o->root = 0;
	o->algo = COLL_ALGO_AUTO;
	o->window = 1;

	while ((opt = getopt(argc, argv, "p:b:e:f:n:w:T:c:d:o:r:a:i:NW:h")) != -1) {
		switch (opt) {
		case 'p':
			parse_prims(be, opt, optarg, o);
			break;
		case 'b':
			if (perf_parse_size(optarg, &o->minbytes))
				die_opt(be, opt, optarg, "bad size");
			break;
		case 'e':
			if (perf_parse_size(optarg, &o->maxbytes))
				die_opt(be, opt, optarg, "bad size");
			break;
		case 'f':
			o->factor = (unsigned long)parse_int_opt(be, opt, optarg, 2, 1 << 20);
			break;
		case 'n':
			o->iters = (int)parse_int_opt(be, opt, optarg, 1, 1 << 30);
			break;
		case 'w':
			o->warmup = (int)parse_int_opt(be, opt, optarg, 0, 1 << 30);
			break;
		case 'T':
			o->min_ms = (int)parse_int_opt(be, opt, optarg, 0, 3600000);
			break;
		case 'c':
			o->check = (int)parse_int_opt(be, opt, optarg, 0, 1);
			break;
		case 'd':
			if ((o->dtype = coll_dtype_from_name(optarg)) < 0)
				die_opt(be, opt, optarg, "unknown data type");
			break;
		case 'o':
			if ((o->redop = coll_redop_from_name(optarg)) < 0)
				die_opt(be, opt, optarg, "unknown reduction op");
			break;
		case 'r':
			o->root = (int)parse_int_opt(be, opt, optarg, 0, be->nranks - 1);
			break;
		case 'a':
			if (!(be->features & PERF_F_ALGO))
				die_opt(be, opt, optarg, "not supported by this tool");
			if ((o->algo = coll_algo_from_name(optarg)) < 0)
				die_opt(be, opt, optarg, "unknown algorithm");
			break;
		case 'i':
			o->inplace = (int)parse_int_opt(be, opt, optarg, 0, 1);
			break;
		case 'N':
			if (!(be->features & PERF_F_NONBLOCK))
				die_opt(be, opt, "", "not supported by this tool");
			o->nonblock = 1;
			break;
		case 'W':
			if (!(be->features & PERF_F_NONBLOCK))
				die_opt(be, opt, optarg, "not supported by this tool");
			o->window = (int)parse_int_opt(be, opt, optarg, 1, 1024);
			break;
		case 'h':
			if (be->rank == 0)
				usage(stdout, be);
			be->abort(0);
			break;
		default:
			if (be->rank == 0)
				usage(stderr, be);
			be->abort(2);
		}
	}
	if (optind < argc) {
		if (be->rank == 0)
			fprintf(stderr, "%s: unexpected argument '%s'\n", be->name, argv[optind]);
		be->abort(2);
	}
	if (o->minbytes < 1 || o->minbytes > o->maxbytes) {
		if (be->rank == 0)
			fprintf(stderr, "%s: need 1 <= -b MINBYTES <= -e MAXBYTES\n", be->name);
		be->abort(2);
	}
}

/* ------------------------------------------------------------------ */
/* Driver                                                              */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fail(const struct perf_backend *be, const char *what, int err)
{
	fprintf(stderr, "%s: rank %d: %s: %s\n", be->name, be->rank, what,
		be->strerror(err));
	be->abort(1);
}

static void print_header(const struct perf_backend *be, int prim)
{
	printf("#\n# Collective: %s  nranks %d  factor(busbw) %.4f\n",
	       coll_prim_name(prim), be->nranks,
	       perf_bus_factor(prim, be->nranks));
	switch (prim) {
	case COLL_ALLREDUCE: case COLL_REDUCE: case COLL_BROADCAST:
		printf("# size = count * esize (the buffer of count elements)\n");
		break;
	case COLL_REDUCESCATTER: case COLL_SCATTER:
		printf("# size = count * nranks * esize (send buffer%s); count = elements received per rank\n",
		       prim == COLL_SCATTER ? " at the root" : "");
		break;
	case COLL_ALLGATHER: case COLL_GATHER:
		printf("# size = count * nranks * esize (receive buffer%s); count = elements sent per rank\n",
		       prim == COLL_GATHER ? " at the root" : "");
		break;
	case COLL_ALLTOALL:
		printf("# size = count * nranks * esize (send = receive buffer); count = elements per peer\n");
		break;
	default:
		printf("# barrier: no data; algbw and busbw are 0\n");
		break;
	}
	printf("#%11s  %12s  %8s  %6s  %6s  %10s  %11s  %11s  %7s\n",
	       "size", "count", "type", "redop", "root", "time(us)",
	       "algbw(GB/s)", "busbw(GB/s)", "#wrong");
	fflush(stdout);
}

struct totals {
	double busbw_sum;
	int rows;
	uint64_t wrong;
};

static void run_size(const struct perf_backend *be, const struct perf_opts *o,
		     struct perf_op *op, size_t size, void *sbuf, void *rbuf,
		     size_t bufbytes, struct totals *tot)
{
	uint64_t wrong = 0;
	double t0, t;
	char wrongs[24];
	int ret, n;

	if (be->layout)
		be->layout(o, op, sbuf, rbuf);
	else
		perf_layout_nccl(o, op, sbuf, rbuf, be->rank);

	if (op->prim != COLL_BARRIER) {
		/* Pattern input (also for timing: no NaN, no denormals). */
		perf_poison(rbuf, bufbytes);
		if (!o->inplace)
			perf_poison(sbuf, bufbytes);
		perf_fill(op, be->nranks, be->rank);
	}
	if (o->check) {
		ret = be->run(o, op, 1);
		if (ret)
			fail(be, "checked run", ret);
		wrong = perf_check(op, be->nranks, be->rank);
		ret = be->sum_u64(&wrong);
		if (ret)
			fail(be, "summing #wrong", ret);
	}
	if (o->warmup) {
		ret = be->run(o, op, o->warmup);
		if (ret)
			fail(be, "warm-up", ret);
	}
	ret = be->barrier();
	if (ret)
		fail(be, "barrier", ret);
	/*
	 * Blocks of ITERS calls, until -T's time has passed (the slowest
	 * rank's clock decides, so every rank runs as many): small sizes get
	 * enough calls that one slow wake-up does not make the figure.
	 */
	t0 = now();
	for (n = 0;;) {
		ret = be->run(o, op, o->iters);
		if (ret)
			fail(be, "timed run", ret);
		n += o->iters;
		t = now() - t0;
		ret = be->max_double(&t);
		if (ret)
			fail(be, "max of times", ret);
		if (t * 1e3 >= o->min_ms || n >= (1 << 30) - o->iters)
			break;
	}
	t /= n;

	if (be->rank == 0) {
		double algbw = op->prim == COLL_BARRIER ? 0 : (double)size / t / 1e9;
		double busbw = algbw * perf_bus_factor(op->prim, be->nranks);

		if (o->check)
			snprintf(wrongs, sizeof(wrongs), "%llu", (unsigned long long)wrong);
		else
			snprintf(wrongs, sizeof(wrongs), "N/A");
		printf("%12zu  %12zu  %8s  %6s  %6d  %10.2f  %11.3f  %11.3f  %7s\n",
		       size, op->count,
		       op->prim == COLL_BARRIER ? "none" : coll_dtype_name(op->dtype),
		       is_reducing(op->prim) ? coll_redop_name(op->redop) : "none",
		       is_rooted(op->prim) ? op->root : -1, t * 1e6, algbw, busbw,
		       wrongs);
		fflush(stdout);
	}
	if (op->prim != COLL_BARRIER) {
		tot->busbw_sum += (double)size / t / 1e9 *
				  perf_bus_factor(op->prim, be->nranks);
		tot->rows++;
	}
	tot->wrong += wrong;
}

static void run_prim(const struct perf_backend *be, const struct perf_opts *o,
		     int prim, void *sbuf, void *rbuf, size_t bufbytes,
		     struct totals *tot)
{
	size_t es = coll_dtype_size(o->dtype), bytes;
	struct perf_op op;
	const char *why;

	memset(&op, 0, sizeof(op));
	op.prim = prim;
	op.dtype = o->dtype;
	op.redop = is_reducing(prim) ? o->redop : 0;
	op.root = is_rooted(prim) ? o->root : 0;
	if (be->rank == 0)
		print_header(be, prim);
	why = be->unsupported ? be->unsupported(o, &op) : NULL;
	if (why) {
		if (be->rank == 0)
			printf("# skipping %s: %s\n", coll_prim_name(prim), why);
		return;
	}
	if (prim == COLL_BARRIER) {
		op.count = 0;
		run_size(be, o, &op, 0, sbuf, rbuf, bufbytes, tot);
		return;
	}
	for (bytes = o->minbytes; bytes <= o->maxbytes; ) {
		size_t sc, rc, size;

		op.count = perf_counts(prim, bytes, es, be->nranks, &sc, &rc);
		size = (sc > rc ? sc : rc) * es;
		if (!op.count) {
			if (be->rank == 0)
				printf("# skipping size %zu: count 0 for %d ranks of %zu-byte %s\n",
				       bytes, be->nranks, es, coll_dtype_name(o->dtype));
		} else {
			run_size(be, o, &op, size, sbuf, rbuf, bufbytes, tot);
		}
		if (bytes > o->maxbytes / o->factor)
			break;
		bytes *= o->factor;
	}
}

int perf_main(const struct perf_backend *be, const struct perf_opts *o)
{
	size_t bufbytes = (o->maxbytes + 4095) & ~(size_t)4095;
	struct totals tot = { 0, 0, 0 };
	void *sbuf, *rbuf;
	const char *sep;
	int p;

	sbuf = aligned_alloc(4096, bufbytes);
	rbuf = aligned_alloc(4096, bufbytes);
	if (!sbuf || !rbuf) {
		fprintf(stderr, "%s: rank %d: cannot allocate 2 x %zu bytes\n",
			be->name, be->rank, bufbytes);
		be->abort(1);
	}
	memset(sbuf, 0, bufbytes);	/* pre-fault */
	memset(rbuf, 0, bufbytes);

	if (be->rank == 0) {
		printf("# %s: nranks %d  prim ", be->name, be->nranks);
		if (o->prim != PERF_PRIM_ALL)
			printf("%s", coll_prim_name(o->prim));
		else if (o->prims == (1U << COLL_PRIM_MAX) - 1)
			printf("all");
		else
			for (p = 0, sep = ""; p < COLL_PRIM_MAX; p++)
				if (o->prims & (1U << p)) {
					printf("%s%s", sep, coll_prim_name(p));
					sep = ",";
				}
		printf("  dtype %s  redop %s  root %d", coll_dtype_name(o->dtype),
		       coll_redop_name(o->redop), o->root);
		if (be->features & PERF_F_ALGO)
			printf("  algo %s", coll_algo_name(o->algo));
		printf("  inplace %d", o->inplace);
		if (be->features & PERF_F_NONBLOCK)
			printf("  nonblocking %d  window %d", o->nonblock,
			       o->nonblock ? o->window : 1);
		printf("\n# sizes %zu..%zu x%lu  iters %d  warmup %d  min-ms %d  check %d\n",
		       o->minbytes, o->maxbytes, o->factor, o->iters, o->warmup,
		       o->min_ms, o->check);
		printf("# time = wall time of back-to-back operations (ITERS at a time, until min-ms) / their number, max over ranks\n"
		       "# algbw = size / time, busbw = algbw * factor (nccl-tests), GB = 1e9 bytes\n"
		       "# #wrong = result elements differing from the reference, summed over ranks\n");
		fflush(stdout);
	}

	if (o->prim == PERF_PRIM_ALL) {
		for (p = 0; p < COLL_PRIM_MAX; p++)
			if (o->prims & (1U << p))
				run_prim(be, o, p, sbuf, rbuf, bufbytes, &tot);
	} else {
		run_prim(be, o, o->prim, sbuf, rbuf, bufbytes, &tot);
	}

	if (be->rank == 0) {
		printf("#\n# Wrong elements : %llu %s\n",
		       (unsigned long long)tot.wrong,
		       !o->check ? "(not checked)" : tot.wrong ? "FAILED" : "OK");
		printf("# Avg bus bandwidth : %.4f\n#\n",
		       tot.rows ? tot.busbw_sum / tot.rows : 0.0);
		fflush(stdout);
	}
	free(sbuf);
	free(rbuf);
	/*
	 * Nobody exits before rank 0 has printed everything: a launcher kills
	 * the remaining ranks as soon as one exits non-zero.  Only rank 0
	 * reports wrong results in its exit status.
	 */
	if (be->barrier())
		be->abort(1);
	return be->rank == 0 && tot.wrong ? 1 : 0;
}
