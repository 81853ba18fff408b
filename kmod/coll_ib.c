// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA devices, through an ib_client (net/smc/smc_ib.c's way): one record
 * per device, with a protection domain every link on it shares.  Records
 * are krefs; a link holds one from the set-up of its queue pair until it
 * is freed (its grants, which hold the link, deregister their memory
 * regions in the domain after the queue pair is gone).  When a device goes
 * away (rdma link delete, the driver unloading), every link on it fails,
 * which kills its communicators, and the removal waits until the last of
 * them has let go.
 *
 * Each record also pools fast-registration memory regions (FRWR) for the
 * grants of zero-copy reads: a grant takes a region per stretch of up to
 * mr_pages pages and gives it back when the collective ends.  Only a
 * region whose LOCAL_INV completed goes back into the pool: one that could
 * not be invalidated (its link died first) is deregistered, since its key
 * would otherwise stay valid in the protection domain every link on the
 * device shares.  At most mr_pool regions wait in a pool; beyond that they
 * are deregistered.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "coll_loc.h"

static LIST_HEAD(coll_ibdevs);
static DEFINE_MUTEX(coll_ibdevs_lock);
static atomic_t coll_ibdevs_count = ATOMIC_INIT(0);

static int coll_ib_add(struct ib_device *ib);
static void coll_ib_remove(struct ib_device *ib, void *data);

static struct ib_client coll_ib_client = {
	.name = "collective",
	.add = coll_ib_add,
	.remove = coll_ib_remove,
};

static void coll_ibdev_release(struct kref *kref)
{
	struct coll_ibdev *d = container_of(kref, struct coll_ibdev, kref);

	complete(&d->released);
}

void coll_ibdev_put(struct coll_ibdev *d)
{
	kref_put(&d->kref, coll_ibdev_release);
}

/**
 * coll_ibdev_get() - the record of a device, with a reference
 * @ib: the device (from a cm_id that resolved an address)
 *
 * Locks: takes coll_ibdevs_lock.
 *
 * Return: the record, or NULL if the device is unknown or going away.
 */
struct coll_ibdev *coll_ibdev_get(struct ib_device *ib)
{
	struct coll_ibdev *d, *found = NULL;

	mutex_lock(&coll_ibdevs_lock);
	list_for_each_entry(d, &coll_ibdevs, node) {
		if (d->ib == ib && !d->removing &&
		    kref_get_unless_zero(&d->kref)) {
			found = d;
			break;
		}
	}
	mutex_unlock(&coll_ibdevs_lock);
	return found;
}

/* Devices the module can use (COLL_INFO). */
u32 coll_ib_count(void)
{
	return atomic_read(&coll_ibdevs_count);
}

/**
 * coll_ibdev_mr_get() - a fast-registration region for a grant
 * @d: the device, referenced by the caller
 *
 * Locks: takes d->lock.
 *
 * Return: an invalidated region of the pool (its key's last byte moves on
 * before it is registered again), else a new one mapping up to
 * @d->mr_pages pages, or an ERR_PTR.
 */
struct ib_mr *coll_ibdev_mr_get(struct coll_ibdev *d)
{
	struct ib_mr *mr;

	spin_lock(&d->lock);
	mr = list_first_entry_or_null(&d->mrs, struct ib_mr, qp_entry);
	if (mr) {
		list_del_init(&mr->qp_entry);
		d->nmrs--;
	}
	spin_unlock(&d->lock);
	if (mr) {
		atomic64_inc(&coll_stats.mr_reuses);
		return mr;
	}
	mr = ib_alloc_mr(d->pd, IB_MR_TYPE_MEM_REG, d->mr_pages);
	if (!IS_ERR(mr))
		atomic64_inc(&coll_stats.mr_allocs);
	return mr;
}

/**
 * coll_ibdev_mr_put() - a grant's region is done with
 * @d: the device it came from
 * @mr: the region
 * @invalidated: its LOCAL_INV completed (no key of it is valid)
 *
 * Locks: takes d->lock.  May sleep (deregistering).
 */
void coll_ibdev_mr_put(struct coll_ibdev *d, struct ib_mr *mr,
		       bool invalidated)
{
	if (invalidated) {
		spin_lock(&d->lock);
		if (d->nmrs < READ_ONCE(coll_mr_pool)) {
			list_add(&mr->qp_entry, &d->mrs);
			d->nmrs++;
			mr = NULL;
		}
		spin_unlock(&d->lock);
	}
	if (mr)
		ib_dereg_mr(mr);
}

/* Locks: d->lock.  A link on the device, failed if the device goes. */
void coll_ibdev_add_link(struct coll_ibdev *d, struct list_head *node)
{
	spin_lock(&d->lock);
	list_add_tail(node, &d->links);
	spin_unlock(&d->lock);
}

void coll_ibdev_del_link(struct coll_ibdev *d, struct list_head *node)
{
	spin_lock(&d->lock);
	list_del_init(node);
	spin_unlock(&d->lock);
}

static int coll_ib_add(struct ib_device *ib)
{
	struct coll_ibdev *d;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->pd = ib_alloc_pd(ib, 0);
	if (IS_ERR(d->pd)) {
		int err = PTR_ERR(d->pd);

		kfree(d);
		return err;
	}
	kref_init(&d->kref);		/* the client's */
	init_completion(&d->released);
	spin_lock_init(&d->lock);
	INIT_LIST_HEAD(&d->links);
	INIT_LIST_HEAD(&d->mrs);
	d->mr_pages = min_t(u32, COLL_IB_MR_PAGES,
			    ib->attrs.max_fast_reg_page_list_len);
	d->ib = ib;
	mutex_lock(&coll_ibdevs_lock);
	list_add_tail(&d->node, &coll_ibdevs);
	mutex_unlock(&coll_ibdevs_lock);
	atomic_inc(&coll_ibdevs_count);
	ib_set_client_data(ib, &coll_ib_client, d);
	return 0;
}

static void coll_ib_remove(struct ib_device *ib, void *data)
{
	struct coll_ibdev *d = data;
	struct ib_mr *mr, *t;

	mutex_lock(&coll_ibdevs_lock);
	d->removing = true;
	list_del(&d->node);
	mutex_unlock(&coll_ibdevs_lock);
	atomic_dec(&coll_ibdevs_count);

	coll_rdma_device_gone(d);
	coll_ibdev_put(d);
	/* every link on it is gone, and every region of its grants */
	wait_for_completion(&d->released);
	list_for_each_entry_safe(mr, t, &d->mrs, qp_entry) {
		list_del(&mr->qp_entry);
		ib_dereg_mr(mr);
	}
	ib_dealloc_pd(d->pd);
	kfree(d);
}

int coll_ib_init(void)
{
	return ib_register_client(&coll_ib_client);
}

void coll_ib_exit(void)
{
	ib_unregister_client(&coll_ib_client);
}
