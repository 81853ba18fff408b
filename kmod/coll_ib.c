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

	mutex_lock(&coll_ibdevs_lock);
	d->removing = true;
	list_del(&d->node);
	mutex_unlock(&coll_ibdevs_lock);
	atomic_dec(&coll_ibdevs_count);

	coll_rdma_device_gone(d);
	coll_ibdev_put(d);
	/* every link on it is gone, and every region of its grants */
	wait_for_completion(&d->released);
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
