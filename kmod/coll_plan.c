// SPDX-License-Identifier: GPL-2.0
/*
 * Plans: schedules (coll_sched.c, pure) cached per communicator and shape.
 *
 * A plan depends only on the communicator's size and layout (ranks per
 * host) and on (primitive,
 * algorithm, root, count, in-place AlltoAll, ring chunk, claim unit), the
 * key; every collective of that shape on that communicator shares it, so
 * steady state builds nothing.  A plan is freed independently of the
 * collectives that used it: each running task holds a reference, the
 * cache holds one and drops the least recently used plan beyond
 * plan_cache plans.  A plan's size is linear in the number of ranks and
 * bounded (COLL_SCHED_MAX_STEPS), so one call allocates a bounded amount.
 *
 * The schedule code's allocation hooks live here: charged to the caller's
 * memory cgroup, never warning (the sizes follow from a user's count).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>

#include "coll_loc.h"

void *coll_sched_zalloc(size_t n, size_t size)
{
	return kvcalloc(n, size, GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
}

void coll_sched_free_mem(void *p)
{
	kvfree(p);
}

static void coll_plan_free(struct kref *kref)
{
	struct coll_plan *plan = container_of(kref, struct coll_plan, kref);

	atomic64_sub(plan->bytes, &coll_stats.kbytes);
	atomic64_dec(&coll_stats.plans);
	coll_sched_destroy(&plan->sched);
	kfree(plan);
}

void coll_plan_put(struct coll_plan *plan)
{
	if (plan)
		kref_put(&plan->kref, coll_plan_free);
}

void coll_plan_cache_init(struct coll_plan_cache *pc)
{
	mutex_init(&pc->lock);
	INIT_LIST_HEAD(&pc->plans);
	pc->nplans = 0;
}

/* The communicator is going away: drop the cache's references. */
void coll_plan_cache_flush(struct coll_plan_cache *pc)
{
	struct coll_plan *plan, *tmp;

	mutex_lock(&pc->lock);
	list_for_each_entry_safe(plan, tmp, &pc->plans, node) {
		list_del(&plan->node);
		coll_plan_put(plan);
	}
	pc->nplans = 0;
	mutex_unlock(&pc->lock);
	mutex_destroy(&pc->lock);
}

static struct coll_plan *coll_plan_build(struct coll_comm *comm,
					 const struct coll_plan_key *key,
					 int *err)
{
	struct coll_sched_args args = {
		.prim = key->prim,
		.algo = key->algo,
		.nranks = comm->nranks,
		.local = comm->hosts ? comm->hosts->local : 0,
		.root = key->root,
		.count = key->count,
		.chunk = key->chunk,
		.exec_chunk = key->exec_chunk,
		.flags = key->flags,
	};
	struct coll_plan *plan;

	plan = kzalloc(sizeof(*plan), GFP_KERNEL_ACCOUNT);
	if (!plan) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = coll_sched_build(&args, &plan->sched);
	if (*err) {
		kfree(plan);
		return NULL;
	}
	kref_init(&plan->kref);
	plan->key = *key;
	plan->bytes = sizeof(*plan) + coll_sched_bytes(&plan->sched);
	atomic64_add(plan->bytes, &coll_stats.kbytes);
	atomic64_inc(&coll_stats.plans);
	return plan;
}

/**
 * coll_plan_get() - the plan for a shape, from the cache or built
 * @comm: the communicator
 * @key: the shape
 *
 * Locks: takes comm->plans.lock; may sleep.
 *
 * Return: a plan with a reference for the caller, or ERR_PTR(-errno).
 */
struct coll_plan *coll_plan_get(struct coll_comm *comm,
				const struct coll_plan_key *key)
{
	struct coll_plan_cache *pc = &comm->plans;
	struct coll_plan *plan, *victim = NULL;
	u32 max = READ_ONCE(coll_plan_cache_size);
	int err;

	mutex_lock(&pc->lock);
	list_for_each_entry(plan, &pc->plans, node) {
		if (!memcmp(&plan->key, key, sizeof(*key))) {
			list_move(&plan->node, &pc->plans);
			kref_get(&plan->kref);
			mutex_unlock(&pc->lock);
			return plan;
		}
	}
	plan = coll_plan_build(comm, key, &err);
	if (!plan) {
		mutex_unlock(&pc->lock);
		return ERR_PTR(err);
	}
	if (max) {
		kref_get(&plan->kref);		/* the cache's */
		list_add(&plan->node, &pc->plans);
		if (++pc->nplans > max) {
			victim = list_last_entry(&pc->plans, struct coll_plan,
						 node);
			list_del(&victim->node);
			pc->nplans--;
		}
	}
	mutex_unlock(&pc->lock);
	coll_plan_put(victim);
	return plan;
}
