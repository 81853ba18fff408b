// SPDX-License-Identifier: GPL-2.0
/*
 * Registered user buffers ("obufs"): user pages pinned with FOLL_LONGTERM
 * and charged to the owner's RLIMIT_MEMLOCK through mm->pinned_vm, the way
 * drivers/infiniband/core/umem.c does.  The kernel then reads and reduces
 * into them from any context, whichever rank's thread executes the step.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "coll_loc.h"

/* Pin in batches so one call never holds mmap_lock for too long. */
#define COLL_PIN_BATCH 512

static int coll_obuf_charge(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	u64 pinned = atomic64_add_return(npages, &mm->pinned_vm);

	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
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
 * Return: 0, -EOVERFLOW for a range that wraps, -ENOMEM (also over
 * RLIMIT_MEMLOCK), -EFAULT for memory that cannot be pinned.
 */
int coll_obuf_pin(u64 uaddr, u64 len, bool writable, struct coll_obuf **out)
{
	unsigned int gup = FOLL_LONGTERM | (writable ? FOLL_WRITE : 0);
	struct coll_obuf *ob;
	unsigned long done = 0;
	u64 end;
	int ret;

	if (check_add_overflow(uaddr, len, &end))
		return -EOVERFLOW;
	if (end > TASK_SIZE_MAX)
		return -EFAULT;

	ob = kzalloc(sizeof(*ob), GFP_KERNEL);
	if (!ob)
		return -ENOMEM;
	ob->len = len;
	ob->writable = writable;
	ob->first_off = offset_in_page(uaddr);
	ob->npages = (PAGE_ALIGN(end) - (uaddr & PAGE_MASK)) >> PAGE_SHIFT;
	ob->pages = kvmalloc_array(ob->npages, sizeof(*ob->pages), GFP_KERNEL);
	if (!ob->pages) {
		ret = -ENOMEM;
		goto err_free_ob;
	}

	ob->mm = current->mm;
	mmgrab(ob->mm);
	ret = coll_obuf_charge(ob->mm, ob->npages);
	if (ret)
		goto err_drop_mm;

	while (done < ob->npages) {
		int n = min_t(unsigned long, ob->npages - done, COLL_PIN_BATCH);

		ret = pin_user_pages_fast((uaddr & PAGE_MASK) +
					  (done << PAGE_SHIFT), n, gup,
					  ob->pages + done);
		if (ret <= 0) {
			ret = ret ? ret : -EFAULT;
			goto err_unpin;
		}
		done += ret;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err_unpin;
		}
	}
	atomic64_add(ob->npages, &coll_stats.pinned_pages);
	*out = ob;
	return 0;

err_unpin:
	unpin_user_pages(ob->pages, done);
	atomic64_sub(ob->npages, &ob->mm->pinned_vm);
	if (ret != -ENOMEM && ret != -EINTR)
		ret = -EFAULT;
err_drop_mm:
	mmdrop(ob->mm);
	kvfree(ob->pages);
err_free_ob:
	kfree(ob);
	return ret;
}

/**
 * coll_obuf_release() - unpin and free
 * @ob: the obuf, or NULL
 *
 * May sleep.  Written pages are marked dirty.
 */
void coll_obuf_release(struct coll_obuf *ob)
{
	if (!ob)
		return;
	unpin_user_pages_dirty_lock(ob->pages, ob->npages, ob->writable);
	atomic64_sub(ob->npages, &ob->mm->pinned_vm);
	atomic64_sub(ob->npages, &coll_stats.pinned_pages);
	mmdrop(ob->mm);
	kvfree(ob->pages);
	kfree(ob);
}
