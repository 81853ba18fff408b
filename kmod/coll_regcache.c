// SPDX-License-Identifier: GPL-2.0
/*
 * The registration cache: user buffers stay pinned across collectives, so
 * a loop that reuses its buffers pins nothing once warm.
 *
 * One cache per open descriptor (struct coll_file), for the process that
 * first pins through it (its mm, mmgrab'ed): a call from another mm (a
 * child sharing the descriptor after fork) pins uncached, as before.  An
 * entry (struct coll_reg) is a pinned obuf keyed by its exact (address,
 * length, writable); the key is the user's whole range, so a hit needs no
 * new view of the pages.  Linked entries are on a list in least recently
 * used order (for eviction) and in a hash by address (for lookup): a hit
 * or a miss costs one chain, whatever order a program meets its buffers
 * in (a list walk cost a miss all 256 entries, and a buffer met out of
 * LRU order all those before it).
 *
 * Each entry watches its pages with an mmu_interval_notifier, as
 * drivers/infiniband/core/umem_odp.c does: anything that changes what the
 * range maps (munmap, mremap, MADV_DONTNEED, mprotect, fork's write
 * protection, migration, exit) unlinks the entry at once, so it is never
 * served again.  The callback never unpins nor removes the notifier (that
 * would wait for the invalidation it runs in): the cache's reference is
 * dropped later, from a work item or at the cache's next operation, and
 * calls in flight keep theirs, so their pages stay pinned until they end.
 *
 * Publish last: a buffer pinned on a miss enters the cache only when the
 * call that pinned it ends well (coll_regcache_unuse()), so a call that
 * fails leaves nothing pinned behind.  The notifier is inserted before
 * pinning and the sequence read then (mmu_interval_read_begin()) is checked
 * under the lock when the entry is linked (mmu_interval_read_retry()): an
 * invalidation at any time after the pin keeps the entry out.
 *
 * Bounded: at most reg_cache entries per descriptor (least recently used
 * unused one evicted first), and an RLIMIT_MEMLOCK failure evicts unused
 * entries and retries once.  A cached entry keeps its pages charged to
 * mm->pinned_vm; dropping it uncharges them.
 *
 * Lifetimes: an entry holds a reference on its descriptor's coll_file
 * (whose cache it points to) and is referenced (kref) by the cache while
 * linked or waiting on the stale list, and by each call using it.  Closing
 * the descriptor drops the cache's references (coll_regcache_flush()).
 *
 * Locks: coll_regcache.lock (spinlock), innermost; taken by the notifier's
 * callback, which may run in reclaim or under mmap_lock: nothing sleeps or
 * allocates under it, and neither unpinning nor notifier removal happens
 * with it held.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>

#include "coll_loc.h"

/*
 * 256: a program whose 100 collectives each have their own two buffers
 * (gradient buckets) thrashed 64 entries, and paid a pin per buffer per
 * call (tools/bench-group.sh: 8-byte AllReduces of 2 ranks 30.9 us at 64
 * against 18.8 us at 256).
 */
unsigned int coll_reg_cache = 256;
module_param_named(reg_cache, coll_reg_cache, uint, 0644);
MODULE_PARM_DESC(reg_cache,
		 "Pinned buffers kept per descriptor for the next collectives (least recently used dropped first; 0: pin and unpin on every call)");

struct coll_reg {
	struct kref kref;
	struct mmu_interval_notifier mn;
	struct coll_regcache *rc;	/* in a coll_file we hold a ref on */
	struct coll_obuf *ob;		/* ob->reg == this */
	struct list_head node;		/* rc->entries or rc->stale, rc->lock */
	struct hlist_node hnode;	/* rc->lock: in rc->index exactly while
					 * linked (in rc->entries, servable)
					 */
	u64 uaddr;
	u64 len;
	bool writable;
	bool pending;			/* rc->lock: pinned by a call in flight,
					 * not linked yet
					 */
	u32 users;			/* rc->lock: calls using it */
	unsigned long seq;		/* mmu_interval_read_begin() before pin */
};

static struct coll_file *coll_reg_file(struct coll_reg *e)
{
	return container_of(e->rc, struct coll_file, rc);
}

/* The last reference: no caller, no cache.  May sleep; no lock held. */
static void coll_reg_free(struct kref *kref)
{
	struct coll_reg *e = container_of(kref, struct coll_reg, kref);
	struct coll_file *cf = coll_reg_file(e);

	mmu_interval_notifier_remove(&e->mn);
	if (e->ob) {
		e->ob->reg = NULL;
		coll_obuf_release(e->ob);
	}
	coll_kvfree(e, sizeof(*e));
	kref_put(&cf->kref, coll_file_release);
}

static void coll_reg_put_list(struct list_head *list)
{
	struct coll_reg *e, *tmp;

	list_for_each_entry_safe(e, tmp, list, node) {
		list_del_init(&e->node);
		kref_put(&e->kref, coll_reg_free);
	}
}

/* Is @e linked: in rc->entries and rc->index, servable? */
static bool coll_reg_linked(struct coll_reg *e)
{
	lockdep_assert_held(&e->rc->lock);
	return hash_hashed(&e->hnode);
}

/* Take a linked entry out of the lookup list onto @to. */
static void coll_reg_unlink(struct coll_regcache *rc, struct coll_reg *e,
			    struct list_head *to)
{
	lockdep_assert_held(&rc->lock);
	rc->nentries--;
	hash_del(&e->hnode);
	list_move_tail(&e->node, to);
}

static bool coll_reg_invalidate(struct mmu_interval_notifier *mn,
				const struct mmu_notifier_range *range,
				unsigned long cur_seq)
{
	struct coll_reg *e = container_of(mn, struct coll_reg, mn);
	struct coll_regcache *rc = e->rc;

	spin_lock(&rc->lock);
	mmu_interval_set_seq(mn, cur_seq);
	if (coll_reg_linked(e)) {
		coll_reg_unlink(rc, e, &rc->stale);
		/* the cache's reference goes outside this callback */
		queue_work(coll_wq, &rc->reap_work);
	}
	spin_unlock(&rc->lock);
	return true;
}

static const struct mmu_interval_notifier_ops coll_reg_mn_ops = {
	.invalidate = coll_reg_invalidate,
};

static void coll_regcache_reap(struct work_struct *work)
{
	struct coll_regcache *rc = container_of(work, struct coll_regcache,
						reap_work);
	LIST_HEAD(drop);

	spin_lock(&rc->lock);
	list_splice_init(&rc->stale, &drop);
	spin_unlock(&rc->lock);
	/* the descriptor is open (flush cancels us first): rc stays */
	coll_reg_put_list(&drop);
}

/**
 * coll_regcache_init() - an empty cache, for a new descriptor
 * @rc: the cache
 */
void coll_regcache_init(struct coll_regcache *rc)
{
	spin_lock_init(&rc->lock);
	INIT_LIST_HEAD(&rc->entries);
	INIT_LIST_HEAD(&rc->stale);
	hash_init(rc->index);
	INIT_WORK(&rc->reap_work, coll_regcache_reap);
}

static struct coll_reg *coll_regcache_find(struct coll_regcache *rc,
					   u64 uaddr, u64 len, bool writable)
{
	struct coll_reg *e;

	lockdep_assert_held(&rc->lock);
	hash_for_each_possible(rc->index, e, hnode, uaddr)
		if (e->uaddr == uaddr && e->len == len &&
		    e->writable == writable)
			return e;
	return NULL;
}

/*
 * Unlink unused entries, least recently used first, onto @drop until
 * @want pages are freed; return those pages.
 */
static unsigned long coll_regcache_evict_locked(struct coll_regcache *rc,
						unsigned long want,
						struct list_head *drop)
{
	struct coll_reg *e, *tmp;
	unsigned long freed = 0;

	lockdep_assert_held(&rc->lock);
	list_for_each_entry_safe(e, tmp, &rc->entries, node) {
		if (freed >= want)
			break;
		if (e->users)
			continue;
		coll_reg_unlink(rc, e, drop);
		freed += e->ob->npages;
		atomic64_inc(&coll_stats.reg_evictions);
	}
	return freed;
}

/*
 * Over RLIMIT_MEMLOCK: drop unused entries and the stale ones waiting,
 * enough for @npages.  Return whether any went (worth a retry).
 */
static bool coll_regcache_evict(struct coll_regcache *rc,
				unsigned long npages)
{
	LIST_HEAD(drop);
	bool any;

	spin_lock(&rc->lock);
	coll_regcache_evict_locked(rc, npages, &drop);
	list_splice_init(&rc->stale, &drop);
	spin_unlock(&rc->lock);
	any = !list_empty(&drop);
	coll_reg_put_list(&drop);
	return any;
}

/* coll_obuf_pin()'s memlock error (-EDQUOT) is -ENOMEM to the caller. */
static int coll_regcache_errno(int ret)
{
	return ret == -EDQUOT ? -ENOMEM : ret;
}

/* Pin outside the cache. */
static int coll_regcache_pin_uncached(u64 uaddr, u64 len, bool writable,
				      struct coll_obuf **out)
{
	return coll_regcache_errno(coll_obuf_pin(uaddr, len, writable, out));
}

/* Is the cache usable by current?  Records its mm at first use. */
static bool coll_regcache_mine(struct coll_regcache *rc)
{
	bool mine;

	spin_lock(&rc->lock);
	if (!rc->mm && !rc->closed) {
		rc->mm = current->mm;
		mmgrab(rc->mm);
	}
	mine = rc->mm == current->mm && !rc->closed;
	spin_unlock(&rc->lock);
	return mine;
}

/* A hit: one more user, one more reference, most recently used. */
static void coll_reg_use_locked(struct coll_regcache *rc, struct coll_reg *e)
{
	lockdep_assert_held(&rc->lock);
	e->users++;
	kref_get(&e->kref);
	list_move_tail(&e->node, &rc->entries);
}

/**
 * coll_regcache_pin() - a pinned obuf for a user range, from the cache
 * @cf: the caller's descriptor
 * @uaddr: user address
 * @len: length in bytes, > 0
 * @writable: the kernel will write to it
 * @out: the obuf; give it back with coll_regcache_unuse() if (*@out)->reg,
 *       else coll_obuf_release()
 * @hit: set if it was found pinned
 *
 * Uses the descriptor's cache if the module parameter reg_cache is not 0
 * and current->mm is the cache's; otherwise pins as coll_obuf_pin() does.
 * Over RLIMIT_MEMLOCK, evicts unused entries and tries once more.  What a
 * miss pins enters the cache when the call gives it back having ended
 * well.
 *
 * Locks: takes cf->rc.lock; none may be held (pinning sleeps).
 *
 * Return: 0, or coll_obuf_pin()'s errors (-ENOMEM over RLIMIT_MEMLOCK).
 */
int coll_regcache_pin(struct coll_file *cf, u64 uaddr, u64 len,
		      bool writable, struct coll_obuf **out, bool *hit)
{
	struct coll_regcache *rc = &cf->rc;
	u32 limit = READ_ONCE(coll_reg_cache);
	unsigned long npages;
	struct coll_reg *e;
	LIST_HEAD(drop);
	u64 start, end;
	int ret;

	*hit = false;
	if (!limit || !current->mm || check_add_overflow(uaddr, len, &end) ||
	    !len || end > TASK_SIZE_MAX || !coll_regcache_mine(rc))
		return coll_regcache_pin_uncached(uaddr, len, writable, out);

	spin_lock(&rc->lock);
	e = coll_regcache_find(rc, uaddr, len, writable);
	if (e)
		coll_reg_use_locked(rc, e);
	list_splice_init(&rc->stale, &drop);	/* reap at each operation */
	spin_unlock(&rc->lock);
	coll_reg_put_list(&drop);
	if (e) {
		atomic64_inc(&coll_stats.reg_hits);
		*hit = true;
		*out = e->ob;
		return 0;
	}
	atomic64_inc(&coll_stats.reg_misses);

	e = coll_kvzalloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	kref_init(&e->kref);		/* the caller's */
	INIT_LIST_HEAD(&e->node);
	INIT_HLIST_NODE(&e->hnode);
	e->rc = rc;			/* before the callback may run */
	e->uaddr = uaddr;
	e->len = len;
	e->writable = writable;
	start = uaddr & PAGE_MASK;
	npages = (PAGE_ALIGN(end) - start) >> PAGE_SHIFT;
	ret = mmu_interval_notifier_insert(&e->mn, current->mm, start,
					   npages << PAGE_SHIFT,
					   &coll_reg_mn_ops);
	if (ret) {
		coll_kvfree(e, sizeof(*e));
		/*
		 * The mm's first notifier takes all its locks, and gives up
		 * with EINTR on any pending signal, task work included (an
		 * io_uring submitter has some whenever a completion of its
		 * is queued): pin uncached then, as without a cache.
		 */
		if (ret == -EINTR && !fatal_signal_pending(current))
			return coll_regcache_pin_uncached(uaddr, len, writable,
							  out);
		return ret;
	}
	kref_get(&cf->kref);

	/* from here, an invalidation of the range keeps it out of the cache */
	e->seq = mmu_interval_read_begin(&e->mn);
	ret = coll_obuf_pin(uaddr, len, writable, &e->ob);
	if (ret == -EDQUOT && coll_regcache_evict(rc, npages))
		ret = coll_obuf_pin(uaddr, len, writable, &e->ob);
	if (ret) {
		kref_put(&e->kref, coll_reg_free);
		return coll_regcache_errno(ret);
	}
	e->ob->reg = e;
	e->pending = true;		/* rc->lock not needed: not published */
	e->users = 1;
	*out = e->ob;
	return 0;
}

/**
 * coll_regcache_get_segs() - find a composite's pieces pinned, in one go
 * @cf: the caller's descriptor
 * @comp: a composite whose own pieces have uaddr and len set and ob NULL
 * @writable: the kernel will write to them
 *
 * What coll_regcache_pin() does on a hit, for every own piece, under one
 * hold of the lock (a fused group's buffers: taking it twice per buffer
 * was a quarter of a 2-rank group of 100 x 4 KiB AllReduces under TCG).
 * A piece found gets its obuf (in use, given back by coll_sub_unpin());
 * the others keep ob NULL, for coll_sub_pin_buf() to pin.
 *
 * Locks: takes cf->rc.lock (letting it go when the CPU is wanted).
 *
 * Return: the pieces found.
 */
u32 coll_regcache_get_segs(struct coll_file *cf, struct coll_obuf *comp,
			   bool writable)
{
	struct coll_regcache *rc = &cf->rc;
	struct coll_oseg *sg;
	struct coll_reg *e;
	LIST_HEAD(drop);
	u32 i, hits = 0;

	if (!READ_ONCE(coll_reg_cache) || !current->mm ||
	    !coll_regcache_mine(rc))
		return 0;
	spin_lock(&rc->lock);
	for (i = 0; i < comp->nsegs; i++) {
		sg = &comp->segs[i];
		if (!sg->own || sg->ob)
			continue;
		e = coll_regcache_find(rc, sg->uaddr, sg->len, writable);
		if (e) {
			coll_reg_use_locked(rc, e);
			sg->ob = e->ob;
			hits++;
		}
		if (!(i % 32))
			cond_resched_lock(&rc->lock);
	}
	list_splice_init(&rc->stale, &drop);	/* reap at each operation */
	spin_unlock(&rc->lock);
	coll_reg_put_list(&drop);
	atomic64_add(hits, &coll_stats.reg_hits);
	return hits;
}

/*
 * Link an entry whose call ended well, unless it was invalidated since its
 * pin, one like it is there already, or there is no room.  Return whether
 * it was (the caller's reference is then the cache's).
 */
static bool coll_regcache_link(struct coll_regcache *rc, struct coll_reg *e,
			       struct list_head *drop)
{
	u32 limit = READ_ONCE(coll_reg_cache);

	lockdep_assert_held(&rc->lock);
	if (rc->closed || !limit || mmu_interval_read_retry(&e->mn, e->seq) ||
	    coll_regcache_find(rc, e->uaddr, e->len, e->writable))
		return false;
	while (rc->nentries >= limit &&
	       coll_regcache_evict_locked(rc, 1, drop))
		;
	if (rc->nentries >= limit)
		return false;
	rc->nentries++;
	list_add_tail(&e->node, &rc->entries);
	hash_add(rc->index, &e->hnode, e->uaddr);
	return true;
}

/*
 * One user fewer; an entry pinned for the call is linked if @keep and still
 * valid.  Return whether it was (the cache then needs a reference).
 */
static bool coll_reg_unuse_locked(struct coll_regcache *rc,
				  struct coll_reg *e, bool keep,
				  struct list_head *drop)
{
	lockdep_assert_held(&rc->lock);
	e->users--;
	if (!e->pending)
		return false;
	e->pending = false;
	return keep && coll_regcache_link(rc, e, drop);
}

/**
 * coll_regcache_unuse() - a call is done with a cached obuf
 * @e: its entry (ob->reg)
 * @keep: the call ended well: an entry pinned for it may enter the cache
 *
 * A linked entry becomes evictable once unused; one the call pinned is
 * linked if @keep and still valid; any other goes with its last user.  May
 * sleep.
 *
 * Locks: takes the cache's lock.
 */
void coll_regcache_unuse(struct coll_reg *e, bool keep)
{
	struct coll_regcache *rc = e->rc;
	bool cached;
	LIST_HEAD(drop);

	spin_lock(&rc->lock);
	cached = coll_reg_unuse_locked(rc, e, keep, &drop);
	spin_unlock(&rc->lock);
	coll_reg_put_list(&drop);
	if (!cached)
		kref_put(&e->kref, coll_reg_free);
}

/* A composite's own piece from the cache? */
static bool coll_oseg_cached(const struct coll_oseg *sg)
{
	return sg->own && sg->ob && sg->ob->reg;
}

/**
 * coll_regcache_unuse_segs() - a call is done with a composite's pieces
 * @comp: the composite; its own pieces from the cache are given back
 *        (ob->reg), the others left for the caller
 * @keep: as for coll_regcache_unuse()
 *
 * coll_regcache_unuse() for each, the lock taken once for them all.  May
 * sleep.
 *
 * Locks: takes the cache's lock.
 */
void coll_regcache_unuse_segs(struct coll_obuf *comp, bool keep)
{
	struct coll_regcache *rc = NULL;
	struct coll_reg *e;
	LIST_HEAD(drop);
	u32 i;

	for (i = 0; i < comp->nsegs && !rc; i++)
		if (coll_oseg_cached(&comp->segs[i]))
			rc = comp->segs[i].ob->reg->rc;
	if (!rc)
		return;
	spin_lock(&rc->lock);
	for (i = 0; i < comp->nsegs; i++) {
		if (!coll_oseg_cached(&comp->segs[i]))
			continue;
		e = comp->segs[i].ob->reg;
		if (WARN_ON_ONCE(e->rc != rc))
			continue;	/* one descriptor's: never */
		/* the cache's own reference, as the caller's goes */
		if (coll_reg_unuse_locked(rc, e, keep, &drop))
			kref_get(&e->kref);
	}
	spin_unlock(&rc->lock);
	coll_reg_put_list(&drop);
	for (i = 0; i < comp->nsegs; i++) {
		struct coll_obuf *ob = comp->segs[i].ob;

		if (!coll_oseg_cached(&comp->segs[i]) || ob->reg->rc != rc)
			continue;
		comp->segs[i].ob = NULL;	/* given back */
		kref_put(&ob->reg->kref, coll_reg_free);
	}
}

/**
 * coll_regcache_flush() - the descriptor is closing: drop every entry
 * @rc: its cache
 *
 * Entries that calls still use go when those calls end.  Nothing is
 * cached through @rc afterwards.  May sleep.
 *
 * Locks: takes rc->lock.
 */
void coll_regcache_flush(struct coll_regcache *rc)
{
	struct coll_reg *e;
	LIST_HEAD(drop);

	spin_lock(&rc->lock);
	rc->closed = true;
	list_for_each_entry(e, &rc->entries, node)
		hash_del(&e->hnode);
	rc->nentries = 0;
	list_splice_init(&rc->entries, &drop);
	list_splice_init(&rc->stale, &drop);
	spin_unlock(&rc->lock);
	/* nothing can queue it again: no entry is linked */
	cancel_work_sync(&rc->reap_work);
	coll_reg_put_list(&drop);
}

/**
 * coll_regcache_destroy() - the descriptor's last reference is gone
 * @rc: its cache, flushed, with no entry left (each held the descriptor)
 */
void coll_regcache_destroy(struct coll_regcache *rc)
{
	WARN_ON_ONCE(!list_empty(&rc->entries) || !list_empty(&rc->stale));
	if (rc->mm)
		mmdrop(rc->mm);
}
