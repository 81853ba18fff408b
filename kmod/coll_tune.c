// SPDX-License-Identifier: GPL-2.0
/*
 * Tunables: the module-wide defaults (the module parameters, and an
 * algorithm per primitive that only netlink sets) and each communicator's
 * overrides of those that a communicator can carry.
 *
 * Readers are lockless, in the data path: a communicator's override counts
 * where its bit is set, the module-wide value otherwise.  An override's
 * value is written before its bit (smp_wmb() against the reader's
 * smp_rmb()), so a reader never sees a set bit with an unwritten value; a
 * collective that starts while a tunable changes runs with the old value
 * or the new one.  Writers are serialized by coll_tune_lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/mutex.h>

#include "coll_loc.h"

static DEFINE_MUTEX(coll_tune_mutex);

/* Module-wide algorithm per primitive (COLL_ALGO_AUTO: as "algo"). */
static unsigned int coll_prim_algo[COLL_PRIM_MAX];

#define COLL_TUNE_PRIM(P, n)						\
	[COLL_TUNE_PRIM_ALGO + COLL_##P] = {				\
		n "-algo", &coll_prim_algo[COLL_##P], true		\
	}

const struct coll_tune_desc coll_tune_descs[COLL_TUNE_NR] = {
	[COLL_TUNE_ALGO] = { "algo", &coll_default_algo, true },
	COLL_TUNE_PRIM(ALLREDUCE, "allreduce"),
	COLL_TUNE_PRIM(REDUCE, "reduce"),
	COLL_TUNE_PRIM(REDUCESCATTER, "reducescatter"),
	COLL_TUNE_PRIM(ALLGATHER, "allgather"),
	COLL_TUNE_PRIM(BROADCAST, "broadcast"),
	COLL_TUNE_PRIM(SCATTER, "scatter"),
	COLL_TUNE_PRIM(GATHER, "gather"),
	COLL_TUNE_PRIM(ALLTOALL, "alltoall"),
	COLL_TUNE_PRIM(BARRIER, "barrier"),
	[COLL_TUNE_SOLO_BYTES] = { "solo-bytes", &coll_solo_bytes, true },
	/* every host of a collective must agree: module-wide only */
	[COLL_TUNE_EAGER_BYTES] = { "eager-bytes", &coll_eager_bytes, false },
	[COLL_TUNE_HIER_BYTES] = { "hier-bytes", &coll_hier_bytes, true },
	[COLL_TUNE_RING_CHUNK_BYTES] = { "ring-chunk-bytes",
					 &coll_ring_chunk_bytes, true },
	[COLL_TUNE_EXEC_CHUNK_BYTES] = { "exec-chunk-bytes",
					 &coll_exec_chunk_bytes, true },
	[COLL_TUNE_SPIN_NS] = { "spin-ns", &coll_spin_ns, true },
	[COLL_TUNE_JOIN_TIMEOUT_MS] = { "join-timeout-ms",
					&coll_join_timeout_ms, false },
	[COLL_TUNE_PEER_TIMEOUT_MS] = { "peer-timeout-ms",
					&coll_peer_timeout_ms, false },
	[COLL_TUNE_PLAN_CACHE] = { "plan-cache", &coll_plan_cache_size,
				   false },
	[COLL_TUNE_MAX_REQUESTS] = { "max-requests", &coll_max_requests,
				     false },
	[COLL_TUNE_MAX_COMMS] = { "max-comms", &coll_max_comms, false },
	[COLL_TUNE_BUSY_POLL_US] = { "busy-poll-us", &coll_busy_poll_us,
				     true },
	/* read when a link or a device is set up: module-wide */
	[COLL_TUNE_RDMA_QPS] = { "rdma-qps", &coll_rdma_qps, false },
	[COLL_TUNE_MR_POOL] = { "mr-pool", &coll_mr_pool, false },
};

/* The netlink attribute of each tunable follows the order of the ids. */
static_assert(COLLECTIVE_A_TUNE_ALGO + COLL_TUNE_PRIM_ALGO + COLL_ALLREDUCE ==
	      COLLECTIVE_A_TUNE_ALLREDUCE_ALGO);
static_assert(COLLECTIVE_A_TUNE_ALGO + COLL_TUNE_PRIM_ALGO + COLL_BARRIER ==
	      COLLECTIVE_A_TUNE_BARRIER_ALGO);
static_assert(COLLECTIVE_A_TUNE_ALGO + COLL_TUNE_SOLO_BYTES ==
	      COLLECTIVE_A_TUNE_SOLO_BYTES);
static_assert(COLLECTIVE_A_TUNE_ALGO + COLL_TUNE_MR_POOL ==
	      COLLECTIVE_A_TUNE_MR_POOL);
static_assert(COLLECTIVE_A_TUNE_MR_POOL + 1 == COLLECTIVE_A_TUNE_OVERRIDDEN);
static_assert(COLL_BARRIER + 1 == COLL_PRIM_MAX);

void coll_tune_lock(void)
{
	mutex_lock(&coll_tune_mutex);
}

void coll_tune_unlock(void)
{
	mutex_unlock(&coll_tune_mutex);
}

/**
 * coll_tune_get() - the value of a tunable for a communicator
 * @comm: the communicator, or NULL for the module-wide value
 * @id: the tunable
 *
 * Locks: none (see the top of this file).
 */
u32 coll_tune_get(const struct coll_comm *comm, enum coll_tune_id id)
{
	if (comm && test_bit(id, comm->tune.set)) {
		/* pairs with smp_wmb() in coll_tune_set() */
		smp_rmb();
		return READ_ONCE(comm->tune.val[id]);
	}
	return READ_ONCE(*coll_tune_descs[id].global);
}

/**
 * coll_tune_algo() - the algorithm COLL_ALGO_AUTO resolves to, if forced
 * @comm: the communicator
 * @prim: the primitive
 *
 * The most specific wins: the communicator's for this primitive, the
 * communicator's for all, the module's for this primitive, the module's.
 *
 * Return: an algorithm, or COLL_ALGO_AUTO to choose by size and topology.
 */
u32 coll_tune_algo(const struct coll_comm *comm, u32 prim)
{
	enum coll_tune_id pid = COLL_TUNE_PRIM_ALGO + prim;
	u32 algo = COLL_ALGO_AUTO;

	if (test_bit(pid, comm->tune.set))
		algo = coll_tune_get(comm, pid);
	if (algo == COLL_ALGO_AUTO && test_bit(COLL_TUNE_ALGO, comm->tune.set))
		algo = coll_tune_get(comm, COLL_TUNE_ALGO);
	if (algo == COLL_ALGO_AUTO)
		algo = coll_tune_get(NULL, pid);
	if (algo == COLL_ALGO_AUTO)
		algo = coll_tune_get(NULL, COLL_TUNE_ALGO);
	return algo < COLL_ALGO_MAX ? algo : COLL_ALGO_AUTO;
}

/**
 * coll_tune_set() - set a tunable, checked by the caller
 * @comm: the communicator to override it for, or NULL: module-wide
 * @id: the tunable (per_comm if @comm)
 * @val: its value, in the spec's range
 *
 * Locks: coll_tune_lock.
 */
void coll_tune_set(struct coll_comm *comm, enum coll_tune_id id, u32 val)
{
	lockdep_assert_held(&coll_tune_mutex);
	if (!comm) {
		WRITE_ONCE(*coll_tune_descs[id].global, val);
		return;
	}
	WRITE_ONCE(comm->tune.val[id], val);
	/* the value before the bit: pairs with smp_rmb() in coll_tune_get() */
	smp_wmb();
	set_bit(id, comm->tune.set);
}

/**
 * coll_tune_reset() - drop a communicator's overrides
 * @comm: the communicator
 *
 * Locks: coll_tune_lock.
 */
void coll_tune_reset(struct coll_comm *comm)
{
	lockdep_assert_held(&coll_tune_mutex);
	bitmap_zero(comm->tune.set, COLL_TUNE_NR);
}
