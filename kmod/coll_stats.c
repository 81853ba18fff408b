// SPDX-License-Identifier: GPL-2.0
/*
 * Statistics per communicator and primitive: calls, bytes, time, a
 * histogram of sizes, the algorithms run, the buffers pinned and the errors
 * by errno.  Counted
 * once per collective on this host, when it ends (coll_run.c), under the
 * communicator's lock, which the netlink dump takes to read them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/ktime.h>

#include "coll_loc.h"

/**
 * coll_stats_bucket() - the histogram bucket of a call of @bytes per rank
 * @bytes: the size
 *
 * Bucket 0 holds calls of at most 64 bytes, bucket i calls of at most
 * 64 << 2i bytes, the last one everything larger (COLLECTIVE_HIST_BUCKETS).
 *
 * Return: the bucket.
 */
u32 coll_stats_bucket(u64 bytes)
{
	u32 b;

	if (bytes <= 64)
		return 0;
	b = DIV_ROUND_UP(fls64(bytes - 1) - 6, 2);
	return min_t(u32, b, COLLECTIVE_HIST_BUCKETS - 1);
}

static void coll_stats_error(struct coll_pstat *ps, int err)
{
	u32 e = -err, i;

	for (i = 0; i < COLL_STAT_NERR - 1; i++) {
		if (ps->err_no[i] == e || !ps->err_no[i]) {
			ps->err_no[i] = e;
			ps->err_count[i]++;
			return;
		}
	}
	/* the last slot: its own errno, or any other once the rest are taken */
	if (!ps->err_no[i])
		ps->err_no[i] = e;
	ps->err_count[i]++;
}

/*
 * The end of one collective in @ps: its error, or its bytes, time and
 * histograms.  Return: @status.
 */
static int coll_stats_end(struct coll_pstat *ps, u64 bytes, u64 t_start,
			  int status)
{
	if (status) {
		coll_stats_error(ps, status);
		return status;
	}
	ps->bytes += bytes;
	if (t_start)
		ps->time_ns += ktime_get_ns() - t_start;
	ps->hist[coll_stats_bucket(bytes)]++;
	ps->hist_bytes[coll_stats_bucket(bytes)] += bytes;
	return 0;
}

/**
 * coll_stats_task_done() - count a collective that ended
 * @task: the collective, DONE
 * @status: its result
 *
 * Locks: task->comm->lock.
 */
void coll_stats_task_done(struct coll_task *task, int status)
{
	struct coll_comm *comm = task->comm;
	u32 prim = coll_task_prim(task);
	struct coll_pstat *ps;
	u32 r;

	lockdep_assert_held(&comm->lock);
	if (!comm->stats || prim >= COLL_PRIM_MAX)
		return;
	ps = &comm->stats->prim[prim];
	ps->calls++;
	/* sub[] is stable and npins/npinned/nhits were set before publication. */
	for (r = 0; r < task->nranks; r++) {
		const struct coll_sub *sub = task->sub[r];

		if (sub) {
			ps->pins += sub->npins;
			ps->pinned_pages += sub->npinned;
			ps->reg_hits += sub->nhits;
		}
	}
	if (!coll_stats_end(ps, task->bytes, task->t_start, status) &&
	    task->desc.algo < COLL_ALGO_MAX)
		ps->algo[task->desc.algo]++;
}

/**
 * coll_stats_eager_done() - count a collective that went through the slots
 * @comm: its communicator
 * @d: its descriptor (the first rank's)
 * @t_start: ns: when the last rank arrived (0 if none did)
 * @status: its result
 *
 * Locks: comm->lock.
 */
void coll_stats_eager_done(struct coll_comm *comm, const struct coll_desc *d,
			   u64 t_start, int status)
{
	u64 bytes = d->count * coll_desc_esize(d);
	struct coll_pstat *ps;

	lockdep_assert_held(&comm->lock);
	if (!comm->stats || d->prim >= COLL_PRIM_MAX)
		return;
	ps = &comm->stats->prim[d->prim];
	ps->calls++;
	ps->eager++;
	coll_stats_end(ps, bytes, t_start, status);
}

/**
 * coll_stats_global_done() - the module-wide counters of a collective ended
 * @bytes: its bytes
 * @status: its result
 */
void coll_stats_global_done(u64 bytes, int status)
{
	atomic64_dec(&coll_stats.ops);
	if (!status) {
		atomic64_inc(&coll_stats.ops_total);
		atomic64_add(bytes, &coll_stats.bytes_total);
	}
}
