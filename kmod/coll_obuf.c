// SPDX-License-Identifier: GPL-2.0
/*
 * Registered user buffers ("obufs"): user pages pinned with FOLL_LONGTERM
 * and charged to the owner's RLIMIT_MEMLOCK through mm->pinned_vm, the way
 * drivers/infiniband/core/umem.c does.  The kernel then reads and reduces
 * into them from any context, whichever rank's thread executes the step.
 *
 * As ib_umem_get(), the charge comes first and nothing is allocated in
 * proportion to the buffer before pages are actually pinned: page pointers
 * are kept at most one page of them at a time ("leaves", the last one just
 * as large as it needs to be, so that a small buffer kept pinned by the
 * registration cache costs little), each allocated just before it is
 * filled by pin_user_pages_fast(), and the table of leaves
 * (at most COLL_MAX_BYTES / PAGE_SIZE / COLL_OBUF_LEAF entries, 4 MiB) only
 * once the first leaf is pinned.  So a huge range at an unmapped address
 * fails at its first page, quickly, having allocated one page.
 *
 * A pinned buffer of two pages or more is also mapped contiguously into the
 * kernel (vmap(), module parameter obuf_vmap), for the local transport to
 * copy and reduce it in long windows; the mapping goes when the pages are
 * unpinned.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "coll_loc.h"

static int coll_obuf_charge(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	u64 pinned = atomic64_add_return(npages, &mm->pinned_vm);

	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -EDQUOT;
	}
	return 0;
}

static unsigned long coll_obuf_leaf_pages(const struct coll_obuf *ob,
					  unsigned long leaf)
{
	return min_t(unsigned long, COLL_OBUF_LEAF,
		     ob->npages - leaf * COLL_OBUF_LEAF);
}

static size_t coll_obuf_leaf_bytes(const struct coll_obuf *ob,
				   unsigned long leaf)
{
	return coll_obuf_leaf_pages(ob, leaf) * sizeof(struct page *);
}

/*
 * Map a pinned buffer of two pages or more contiguously into the kernel
 * (vmap), so that the local transport walks it in windows of many pages
 * rather than page by page: under TCG each window costs about as much as
 * summing 1 KiB, so a 4 KiB buffer at an odd address took two or three.
 * io_uring maps its rings the same way.  0 turns it off for new obufs
 * (measurement); the registration cache keeps those it has.
 */
static unsigned int coll_obuf_vmap_on = 1;
module_param_named(obuf_vmap, coll_obuf_vmap_on, uint, 0644);
MODULE_PARM_DESC(obuf_vmap,
		 "map pinned buffers of 2 pages or more contiguously (vmap): 0 off, else on (default: 1)");

/* Best effort: without a mapping, the pages are walked one by one. */
static void coll_obuf_vmap(struct coll_obuf *ob)
{
	struct page **pages = ob->leaves[0];
	unsigned long l;

	if (!READ_ONCE(coll_obuf_vmap_on) || ob->npages < 2 ||
	    ob->npages > UINT_MAX)
		return;
	if (ob->nleaves > 1) {
		pages = kvmalloc_array(ob->npages, sizeof(*pages),
				       GFP_KERNEL_ACCOUNT);
		if (!pages)
			return;
		for (l = 0; l < ob->nleaves; l++)
			memcpy(pages + l * COLL_OBUF_LEAF, ob->leaves[l],
			       coll_obuf_leaf_bytes(ob, l));
	}
	ob->vaddr = vmap(pages, ob->npages, VM_MAP, PAGE_KERNEL);
	if (pages != ob->leaves[0])
		kvfree(pages);
}

/* Unpin (or free) the first @npinned pages and free the leaves. */
static void coll_obuf_unpin(struct coll_obuf *ob, unsigned long npinned,
			    struct page **leaf0)
{
	unsigned long l, n, i;

	for (l = 0; npinned; l++) {
		struct page **leaf = ob->leaves ? ob->leaves[l] : leaf0;

		n = min_t(unsigned long, npinned, coll_obuf_leaf_pages(ob, l));
		if (ob->kernel) {
			for (i = 0; i < n; i++)
				__free_page(leaf[i]);
		} else {
			unpin_user_pages_dirty_lock(leaf, n, ob->writable);
		}
		npinned -= n;
	}
	if (ob->leaves) {
		for (l = 0; l < ob->nleaves && ob->leaves[l]; l++)
			coll_kvfree(ob->leaves[l], coll_obuf_leaf_bytes(ob, l));
		coll_kvfree(ob->leaves, ob->nleaves * sizeof(*ob->leaves));
		ob->leaves = NULL;
	} else {
		coll_kvfree(leaf0, coll_obuf_leaf_bytes(ob, 0));
	}
}

/* Pin the pages of leaf @l (already allocated) from @uaddr's page on. */
static int coll_obuf_pin_leaf(struct coll_obuf *ob, u64 uaddr,
			      unsigned long l, struct page **leaf)
{
	unsigned int gup = FOLL_LONGTERM | (ob->writable ? FOLL_WRITE : 0);
	unsigned long want = coll_obuf_leaf_pages(ob, l), done = 0;
	u64 start = (uaddr & PAGE_MASK) + ((u64)l * COLL_OBUF_LEAF << PAGE_SHIFT);
	int ret;

	while (done < want) {
		ret = pin_user_pages_fast(start + (done << PAGE_SHIFT),
					  want - done, gup, leaf + done);
		if (ret <= 0) {
			if (done)
				unpin_user_pages(leaf, done);
			return ret ? ret : -EFAULT;
		}
		done += ret;
	}
	return 0;
}

/**
 * coll_obuf_pin() - pin a user range of the current process
 * @uaddr: user address
 * @len: length in bytes, > 0
 * @writable: the kernel will write to it
 * @out: the new obuf
 *
 * Return: 0, -EOVERFLOW for a range that wraps, -EDQUOT over
 * RLIMIT_MEMLOCK (checked before anything is allocated; the registration
 * cache evicts then, callers report -ENOMEM), -ENOMEM, -EFAULT for memory
 * that cannot be pinned, -EINTR on a fatal signal.
 */
int coll_obuf_pin(u64 uaddr, u64 len, bool writable, struct coll_obuf **out)
{
	struct page **leaf0 = NULL;
	struct coll_obuf *ob;
	unsigned long l, pinned = 0;
	u64 end;
	int ret;

	if (check_add_overflow(uaddr, len, &end))
		return -EOVERFLOW;
	if (end > TASK_SIZE_MAX)
		return -EFAULT;

	ob = coll_kvzalloc(sizeof(*ob));
	if (!ob)
		return -ENOMEM;
	ob->len = len;
	ob->writable = writable;
	ob->first_off = offset_in_page(uaddr);
	ob->npages = (PAGE_ALIGN(end) - (uaddr & PAGE_MASK)) >> PAGE_SHIFT;
	ob->nleaves = DIV_ROUND_UP(ob->npages, COLL_OBUF_LEAF);
	ob->mm = current->mm;
	mmgrab(ob->mm);
	ret = coll_obuf_charge(ob->mm, ob->npages);
	if (ret)
		goto err_drop_mm;

	for (l = 0; l < ob->nleaves; l++) {
		struct page **leaf = coll_kvzalloc(coll_obuf_leaf_bytes(ob, l));

		if (!leaf) {
			ret = -ENOMEM;
			goto err_unpin;
		}
		if (!l) {
			leaf0 = leaf;
		} else {
			if (l == 1) {
				/* Worth a table now that a page is pinned. */
				ob->leaves = coll_kvzalloc(ob->nleaves *
							   sizeof(*ob->leaves));
				if (!ob->leaves) {
					coll_kvfree(leaf,
						    coll_obuf_leaf_bytes(ob, l));
					ret = -ENOMEM;
					goto err_unpin;
				}
				ob->leaves[0] = leaf0;
			}
			ob->leaves[l] = leaf;
		}
		ret = coll_obuf_pin_leaf(ob, uaddr, l, leaf);
		if (ret)
			goto err_unpin;
		pinned += coll_obuf_leaf_pages(ob, l);
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err_unpin;
		}
		cond_resched();
	}
	if (!ob->leaves) {
		/* One leaf: the table is that leaf's slot in the obuf. */
		ob->leaves = coll_kvzalloc(sizeof(*ob->leaves));
		if (!ob->leaves) {
			ret = -ENOMEM;
			goto err_unpin;
		}
		ob->leaves[0] = leaf0;
	}
	coll_obuf_vmap(ob);
	atomic64_add(ob->npages, &coll_stats.pinned_pages);
	*out = ob;
	return 0;

err_unpin:
	coll_obuf_unpin(ob, pinned, leaf0);
	atomic64_sub(ob->npages, &ob->mm->pinned_vm);
	if (ret != -ENOMEM && ret != -EINTR)
		ret = -EFAULT;
err_drop_mm:
	mmdrop(ob->mm);
	coll_kvfree(ob, sizeof(*ob));
	return ret;
}

/**
 * coll_obuf_alloc_kernel() - an obuf of kernel pages
 * @len: bytes, > 0
 * @out: the new obuf, its contents undefined (charged to the caller's
 *       memory cgroup, not to RLIMIT_MEMLOCK)
 *
 * Return: 0 or -ENOMEM.
 */
int coll_obuf_alloc_kernel(u64 len, struct coll_obuf **out)
{
	struct coll_obuf *ob;
	unsigned long i, l;

	ob = coll_kvzalloc(sizeof(*ob));
	if (!ob)
		return -ENOMEM;
	ob->kernel = true;
	ob->writable = true;
	ob->len = len;
	ob->npages = DIV_ROUND_UP(len, PAGE_SIZE);
	ob->nleaves = DIV_ROUND_UP(ob->npages, COLL_OBUF_LEAF);
	ob->leaves = coll_kvzalloc(ob->nleaves * sizeof(*ob->leaves));
	if (!ob->leaves)
		goto err_free_ob;
	for (l = 0; l < ob->nleaves; l++) {
		ob->leaves[l] = coll_kvzalloc(coll_obuf_leaf_bytes(ob, l));
		if (!ob->leaves[l])
			goto err_free_leaves;
	}
	for (i = 0; i < ob->npages; i++) {
		struct page *pg = alloc_page(GFP_KERNEL_ACCOUNT |
					     __GFP_NOWARN);

		if (!pg) {
			coll_obuf_unpin(ob, i, NULL);
			goto err_free_ob;
		}
		ob->leaves[i / COLL_OBUF_LEAF][i % COLL_OBUF_LEAF] = pg;
	}
	*out = ob;
	return 0;

err_free_leaves:
	coll_obuf_unpin(ob, 0, NULL);
err_free_ob:
	coll_kvfree(ob, sizeof(*ob));
	return -ENOMEM;
}

#define COLL_PROBE_PAGES	16

/**
 * coll_user_writable() - may the caller write these bytes?
 * @addr: user address, in the current process
 * @len: bytes; @addr + @len does not wrap
 *
 * Checked before a collective that will copy into user memory (the eager
 * slots, a fused group), as a pin would check it, so that a bad receive
 * buffer fails the call with nothing done: by the lockless page-table walk
 * (get_user_pages_fast_only(), no mmap_lock, no fault) when the pages are
 * there and writable, else by faulting them in for writing.
 *
 * Return: 0 or -EFAULT.
 */
int coll_user_writable(u64 addr, u64 len)
{
	unsigned long start = addr & PAGE_MASK;
	struct page *pages[COLL_PROBE_PAGES];
	u64 n = (PAGE_ALIGN(addr + len) - start) >> PAGE_SHIFT;
	int got = 0, i;

	if (!len)
		return 0;
	if (n <= COLL_PROBE_PAGES)
		got = get_user_pages_fast_only(start, n, FOLL_WRITE, pages);
	for (i = 0; i < got; i++)
		put_page(pages[i]);
	if (got == n)
		return 0;
	return fault_in_safe_writeable(u64_to_user_ptr(addr), len) ?
	       -EFAULT : 0;
}

/**
 * coll_obuf_copy_user() - copy between an obuf and user memory
 * @ob: the obuf
 * @pos: byte position in @ob
 * @uaddr: user address, in the current process
 * @len: bytes
 * @to_user: from @ob to @uaddr (else from @uaddr into @ob)
 *
 * May sleep (page faults).  Return: 0 or -EFAULT.
 */
int coll_obuf_copy_user(const struct coll_obuf *ob, u64 pos, u64 uaddr,
			u64 len, bool to_user)
{
	void __user *u = u64_to_user_ptr(uaddr);
	u64 done = 0;

	while (done < len) {
		u64 at = ob->first_off + pos + done;
		unsigned int o = offset_in_page(at);
		size_t n = min_t(u64, len - done, PAGE_SIZE - o);
		u8 *k = kmap_local_page(coll_obuf_page(ob, at >> PAGE_SHIFT));
		unsigned long left;

		if (to_user)
			left = copy_to_user(u + done, k + o, n);
		else
			left = copy_from_user(k + o, u + done, n);
		kunmap_local(k);
		if (left)
			return -EFAULT;
		done += n;
		cond_resched();
	}
	return 0;
}

/**
 * coll_obuf_snapshot() - a copy of bytes of an obuf, in kernel pages
 * @src: the obuf
 * @pos: byte position in @src
 * @len: bytes, > 0
 * @out: the copy, an obuf of kernel pages (charged to the caller's memory
 *       cgroup, not to RLIMIT_MEMLOCK)
 *
 * Return: 0 or -ENOMEM.
 */
int coll_obuf_snapshot(const struct coll_obuf *src, u64 pos, u64 len,
		       struct coll_obuf **out)
{
	struct coll_obuf *ob;
	u64 done = 0;
	int ret;

	ret = coll_obuf_alloc_kernel(len, &ob);
	if (ret)
		return ret;
	ob->writable = false;
	while (done < len) {
		u64 at = src->first_off + pos + done;
		unsigned int so = offset_in_page(at);
		unsigned int d = offset_in_page(done);
		size_t n = min_t(u64, len - done,
				 min(PAGE_SIZE - so, PAGE_SIZE - d));
		u8 *s = kmap_local_page(coll_obuf_page(src, at >> PAGE_SHIFT));
		u8 *t = kmap_local_page(coll_obuf_page(ob, done >> PAGE_SHIFT));

		memcpy(t + d, s + so, n);
		kunmap_local(t);
		kunmap_local(s);
		done += n;
		cond_resched();
	}
	*out = ob;
	return 0;
}

/**
 * coll_obuf_release() - unpin and free
 * @ob: the obuf, or NULL
 *
 * May sleep.  Written pages are marked dirty.  Not for an obuf of the
 * registration cache (@ob->reg): coll_regcache_unuse() gives those back.
 */
void coll_obuf_release(struct coll_obuf *ob)
{
	if (!ob)
		return;
	if (WARN_ON_ONCE(ob->reg))
		return;
	if (ob->vaddr)
		vunmap(ob->vaddr);
	coll_obuf_unpin(ob, ob->npages, NULL);
	if (!ob->kernel) {
		atomic64_sub(ob->npages, &ob->mm->pinned_vm);
		atomic64_sub(ob->npages, &coll_stats.pinned_pages);
		mmdrop(ob->mm);
	}
	coll_kvfree(ob, sizeof(*ob));
}

/* A composite and its pieces, in one allocation. */
static size_t coll_obuf_composite_bytes(u32 maxsegs)
{
	return size_add(sizeof(struct coll_obuf),
			array_size(maxsegs, sizeof(struct coll_oseg)));
}

/**
 * coll_obuf_composite() - an empty composite obuf
 * @maxsegs: the pieces it may get (1 or more)
 * @out: the new obuf: no pieces yet, len 0, not writable; the caller adds
 *       pieces end to end (each piece's at the sum of the lengths before
 *       it, nsegs counting them) and sets len, npages and writable
 *
 * It holds what its pieces with own set hold; coll_sub_unpin() gives
 * those back, then coll_obuf_composite_free().
 *
 * Return: 0 or -ENOMEM.
 */
int coll_obuf_composite(u32 maxsegs, struct coll_obuf **out)
{
	struct coll_obuf *ob;

	/* one allocation: the pieces right after the obuf */
	ob = coll_kvzalloc(coll_obuf_composite_bytes(maxsegs));
	if (!ob)
		return -ENOMEM;
	ob->segs = (struct coll_oseg *)(ob + 1);
	ob->maxsegs = maxsegs;
	ob->kernel = true;	/* charges nothing of its own */
	*out = ob;
	return 0;
}

/* Free a composite whose pieces were given back. */
void coll_obuf_composite_free(struct coll_obuf *ob)
{
	if (!ob)
		return;
	coll_kvfree(ob, coll_obuf_composite_bytes(ob->maxsegs));
}
