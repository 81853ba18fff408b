// SPDX-License-Identifier: GPL-2.0
/*
 * The copy kernel of the local transport: the kernel's memcpy(), or a loop
 * of unrolled 8-byte loads and stores, chosen at load by measurement.
 *
 * On hardware the kernel's memcpy() is the right copy (rep movsb where the
 * CPU has ERMS or FSRM).  Where the CPU hides those, x86's memcpy() is rep
 * movsq (REP_GOOD: a guest profile shows memcpy itself and clear_page_rep),
 * which an emulator (QEMU's TCG, whose cost is per guest instruction and
 * per loop turn) runs one 8-byte move a turn; a loop of 64 bytes a turn
 * copies a page 1.3x faster there, and 16 MiB copies between 2 or 4 ranks
 * ran 1.1-1.8x faster with it (README, "Large messages").  So the
 * module times both on a page at load and takes the loop only when it is
 * clearly faster: the kernel's own copy wins unless measurement says
 * otherwise, and noise does not flip the choice from one load to the next.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <asm/unaligned.h>

#include "coll_loc.h"

/* COLL_COPY_*, or -1 until coll_copy_select() has measured. */
static int coll_copy_kernel = -1;

/* Only COLL_COPY_MEMCPY or COLL_COPY_WORDS (EINVAL for anything else). */
static int coll_copy_kernel_set(const char *val, const struct kernel_param *kp)
{
	int v, ret;

	ret = kstrtoint(val, 0, &v);
	if (ret)
		return ret;
	if (v != COLL_COPY_MEMCPY && v != COLL_COPY_WORDS)
		return -EINVAL;
	WRITE_ONCE(*(int *)kp->arg, v);
	return 0;
}

static const struct kernel_param_ops coll_copy_kernel_ops = {
	.set = coll_copy_kernel_set,
	.get = param_get_int,
};

module_param_cb(copy_kernel, &coll_copy_kernel_ops, &coll_copy_kernel, 0644);
MODULE_PARM_DESC(copy_kernel,
		 "How the local transport copies: 0 the kernel's memcpy(), 1 unrolled 8-byte words (measured at load unless set then)");

/* 64 bytes a turn through eight registers; any alignment. */
static void coll_copy_words(void *dst, const void *src, size_t len)
{
	const u8 *s = src;
	u8 *d = dst;

	for (; len >= 64; len -= 64, d += 64, s += 64) {
		u64 w0 = get_unaligned((const u64 *)s);
		u64 w1 = get_unaligned((const u64 *)(s + 8));
		u64 w2 = get_unaligned((const u64 *)(s + 16));
		u64 w3 = get_unaligned((const u64 *)(s + 24));
		u64 w4 = get_unaligned((const u64 *)(s + 32));
		u64 w5 = get_unaligned((const u64 *)(s + 40));
		u64 w6 = get_unaligned((const u64 *)(s + 48));
		u64 w7 = get_unaligned((const u64 *)(s + 56));

		put_unaligned(w0, (u64 *)d);
		put_unaligned(w1, (u64 *)(d + 8));
		put_unaligned(w2, (u64 *)(d + 16));
		put_unaligned(w3, (u64 *)(d + 24));
		put_unaligned(w4, (u64 *)(d + 32));
		put_unaligned(w5, (u64 *)(d + 40));
		put_unaligned(w6, (u64 *)(d + 48));
		put_unaligned(w7, (u64 *)(d + 56));
	}
	memcpy(d, s, len);
}

/**
 * coll_copy() - copy @len bytes that do not overlap, with the chosen kernel
 * @dst: destination
 * @src: source
 * @len: bytes
 */
void coll_copy(void *dst, const void *src, size_t len)
{
	if (READ_ONCE(coll_copy_kernel) == COLL_COPY_WORDS)
		coll_copy_words(dst, src, len);
	else
		memcpy(dst, src, len);
}

#define COLL_COPY_BENCH_REPS	64
#define COLL_COPY_BENCH_TRIALS	5

/* Nanoseconds for COLL_COPY_BENCH_REPS copies of a page with @fn. */
static u64 coll_copy_time(void (*fn)(void *, const void *, size_t), void *d,
			  const void *s)
{
	u64 t0 = ktime_get_ns();
	int i;

	for (i = 0; i < COLL_COPY_BENCH_REPS; i++) {
		fn(d, s, PAGE_SIZE);
		barrier();
	}
	return ktime_get_ns() - t0;
}

static void coll_copy_memcpy(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
}

/**
 * coll_copy_select() - choose the copy kernel at load
 *
 * Unless copy_kernel was given at load: best of COLL_COPY_BENCH_TRIALS
 * interleaved trials each, and the words loop only if it took at most
 * nine tenths of memcpy()'s time.  Under TCG it took 0.73-0.78 of it in
 * six loads; with ERMS, memcpy() is rep movsb and far ahead.  Neither is
 * near the margin, so the choice does not flip from one load to the next.
 */
void coll_copy_select(void)
{
	u64 t_mem = U64_MAX, t_words = U64_MAX;
	void *buf;
	int i;

	if (coll_copy_kernel == COLL_COPY_MEMCPY ||
	    coll_copy_kernel == COLL_COPY_WORDS)
		return;
	coll_copy_kernel = COLL_COPY_MEMCPY;
	buf = kmalloc(2 * PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return;
	memset(buf, 0x5a, 2 * PAGE_SIZE);
	for (i = 0; i < COLL_COPY_BENCH_TRIALS; i++) {
		t_mem = min(t_mem, coll_copy_time(coll_copy_memcpy, buf,
						  buf + PAGE_SIZE));
		t_words = min(t_words, coll_copy_time(coll_copy_words, buf,
						      buf + PAGE_SIZE));
		cond_resched();
	}
	kfree(buf);
	if (t_words * 10 <= t_mem * 9)
		coll_copy_kernel = COLL_COPY_WORDS;
	pr_debug("copy: memcpy %llu ns, words %llu ns: %s\n", t_mem, t_words,
		 coll_copy_kernel == COLL_COPY_WORDS ? "words" : "memcpy");
}
