// SPDX-License-Identifier: GPL-2.0
/*
 * Groups (COLL_GROUP): several collectives of one communicator in one call,
 * matched as one.
 *
 * A group becomes a list of parts, each one collective of the usual kind
 * (a struct coll_sub in a struct coll_task, run by coll_run.c):
 *
 * - fused: the small AllReduces (at most COLL_GROUP_FUSE_BYTES, the same
 *   dtype, redop and algo) are copied at the call into a kernel buffer of
 *   at most COLL_GROUP_BUCKET_BYTES per rank, in the order they come, and
 *   reduced there in place by one AllReduce; the caller copies each result
 *   out once it is done.  Nothing of theirs is pinned, and one collective
 *   replaces many: the cost of a call, of matching and of waking the ranks
 *   is paid once for the bucket (the tensor fusion of Horovod and of
 *   torch's DDP buckets, done where the data already passes);
 * - every other op: pinned (through the registration cache) and run as by
 *   COLL_SUBMIT.
 *
 * The list is a function of the ops alone (the rule and its limits are in
 * the ABI), so every rank, on every host, makes the same list.  Every part
 * carries the group's fingerprint (a hash of every op's matched fields) in
 * its descriptor, which the ranks compare as they compare the rest: if one
 * op differs, every part of the group disagrees, and the whole group fails
 * with EPROTO on every rank before any buffer is touched.
 *
 * The order of a call follows COLL_SUBMIT's (coll_match.c): validate every
 * op; reserve nothing; stage and pin every part and build its plan (no lock
 * held); then publish all parts in one hold of the communicator's lock, so
 * that they take consecutive sequence numbers.  A failure before that
 * changes nothing.  Then the caller runs the parts in order, and copies the
 * fused results out.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jhash.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "coll_loc.h"
#include "coll_trace.h"

/* One part of a group: a collective. */
struct coll_gpart {
	struct coll_sub *sub;
	struct coll_task *cand;
	u32 first;		/* its first op */
	u64 bytes;		/* fused: bytes of its buffer */
	bool fused;
};

/* What the group's call holds. */
struct coll_gcall {
	struct coll_op *ops;
	u32 nops;
	u32 *part_of;		/* each op's part */
	u64 *off;		/* each fused op's byte offset in its part */
	struct coll_gpart *parts;
	u32 nparts;
	struct coll_sub **subs;		/* for publication */
	struct coll_task **cands;
	struct coll_task **tasks;
	bool *starts;
	u32 fingerprint;
};

static bool coll_group_fusable(const struct coll_op *op, u32 flags)
{
	u64 bytes = op->count * coll_dtype_size(op->dtype);

	return !(flags & COLL_GROUP_F_NOFUSE) && op->prim == COLL_ALLREDUCE &&
	       op->count && op->count <= COLL_GROUP_FUSE_BYTES &&
	       bytes <= COLL_GROUP_FUSE_BYTES;
}

/* The fields every rank must agree on, of every op, hashed. */
static u32 coll_group_fingerprint(const struct coll_gcall *g, u32 flags)
{
	u32 h = jhash_2words(g->nops, flags, 0x636f6c6c);
	u32 i;

	for (i = 0; i < g->nops; i++) {
		const struct coll_op *op = &g->ops[i];
		u32 w[7] = { op->prim, op->dtype, op->redop, op->root,
			     op->algo, lower_32_bits(op->count),
			     upper_32_bits(op->count) };

		h = jhash2(w, ARRAY_SIZE(w), h);
	}
	return h | 1;	/* never 0, a call outside any group */
}

/*
 * Read and check the ops.  Return: 0, or what COLL_SUBMIT would return for
 * the first op that does not validate (EINVAL also for the group's own
 * rules), or -EFAULT, -E2BIG, -ENOMEM.
 */
static int coll_group_read(struct coll_gcall *g, const struct coll_group *arg,
			   u32 nranks)
{
	u32 i;
	int ret;

	for (i = 0; i < g->nops; i++) {
		struct coll_op *op = &g->ops[i];
		void __user *u = u64_to_user_ptr(arg->ops_uptr +
						 (u64)i * arg->op_size);

		ret = copy_struct_from_user(op, sizeof(*op), u, arg->op_size);
		if (ret)
			return ret;
		if (op->size != arg->op_size || op->comm != arg->comm ||
		    op->flags)
			return -EINVAL;
		ret = coll_op_check(op);
		if (ret)
			return ret;
		if (coll_prim_rooted(op->prim) && op->root >= nranks)
			return -EINVAL;
	}
	return 0;
}

/* Split the ops into parts (coll_group.c's header: the ABI's rule). */
static void coll_group_split(struct coll_gcall *g, u32 flags)
{
	u32 i, p;

	g->nparts = 0;
	for (i = 0; i < g->nops; i++) {
		const struct coll_op *op = &g->ops[i];
		u64 bytes = op->count * coll_dtype_size(op->dtype);
		bool fuse = coll_group_fusable(op, flags);
		struct coll_gpart *part = NULL;

		if (fuse) {
			/* the open bucket of the same kind, if it has room */
			for (p = g->nparts; p-- > 0;) {
				const struct coll_op *f;

				if (!g->parts[p].fused)
					continue;
				f = &g->ops[g->parts[p].first];
				if (f->dtype != op->dtype ||
				    f->redop != op->redop || f->algo != op->algo)
					continue;
				if (g->parts[p].bytes + bytes <=
				    COLL_GROUP_BUCKET_BYTES)
					part = &g->parts[p];
				break;
			}
		}
		if (!part) {
			part = &g->parts[g->nparts++];
			*part = (struct coll_gpart){
				.first = i,
				.fused = fuse,
			};
		}
		g->part_of[i] = part - g->parts;
		if (part->fused) {
			g->off[i] = part->bytes;
			part->bytes += bytes;
		}
	}
}

/**
 * coll_group_stage_keep() - a fused part's buffer is free again
 * @cf: the descriptor whose group it served
 * @ob: the buffer (@ob->stage); no collective touches it any more
 *
 * The descriptor keeps one, so that a program that calls the same group
 * again and again (the gradient buckets of a training loop) does not
 * allocate and free its pages every time: measured under TCG, the pages of
 * a 400 KiB bucket took about as long to allocate as its copy in.  It goes
 * with the descriptor's last reference (coll_file_release()).
 */
void coll_group_stage_keep(struct coll_file *cf, struct coll_obuf *ob)
{
	if (cmpxchg(&cf->gstage, NULL, ob))
		coll_obuf_release(ob);
}

/* A kernel buffer of @len bytes: the one the descriptor kept if it fits. */
static int coll_group_stage_get(struct coll_file *cf, u64 len,
				struct coll_obuf **out)
{
	struct coll_obuf *ob = xchg(&cf->gstage, NULL);
	int ret;

	if (ob && ob->npages == DIV_ROUND_UP(len, PAGE_SIZE)) {
		ob->len = len;
		*out = ob;
		return 0;
	}
	coll_obuf_release(ob);
	ret = coll_obuf_alloc_kernel(len, out);
	if (!ret)
		(*out)->stage = true;
	return ret;
}

/*
 * A fused part: its kernel buffer, with the send buffers of its ops copied
 * in; their receive buffers must be writable.  In the caller's process.
 */
static int coll_group_stage(struct coll_gcall *g, struct coll_gpart *part,
			    struct coll_sub *sub, struct coll_file *cf)
{
	const struct coll_op *f = &g->ops[part->first];
	u32 esize = coll_dtype_size(f->dtype);
	struct coll_obuf *ob;
	u32 i;
	int ret;

	ret = coll_group_stage_get(cf, part->bytes, &ob);
	if (ret)
		return ret;
	sub->ob[COLL_SBUF_SEND] = ob;
	sub->ob[COLL_SBUF_RECV] = ob;
	sub->desc.count = part->bytes / esize;
	sub->desc.inplace = true;
	for (i = part->first; i < g->nops; i++) {
		const struct coll_op *op = &g->ops[i];
		u64 bytes = op->count * esize;

		if (g->part_of[i] != part - g->parts)
			continue;
		/* a range that wraps: as coll_obuf_pin() says it */
		if (op->sendbuf + bytes < op->sendbuf ||
		    op->recvbuf + bytes < op->recvbuf)
			return -EOVERFLOW;
		/* AllReduce: in place, or two buffers apart */
		if (op->sendbuf != op->recvbuf &&
		    coll_ranges_overlap(op->sendbuf, bytes, op->recvbuf, bytes))
			return -EINVAL;
		ret = coll_user_writable(op->recvbuf, bytes);
		if (ret)
			return ret;
		ret = coll_obuf_copy_user(ob, g->off[i], op->sendbuf, bytes,
					  false);
		if (ret)
			return ret;
	}
	return 0;
}

/* After a fused part ended well: its results to their receive buffers. */
static int coll_group_unstage(struct coll_gcall *g, u32 p)
{
	const struct coll_gpart *part = &g->parts[p];
	/* the task owns the part now; the caller's reference keeps it */
	struct coll_obuf *ob = g->subs[p]->ob[COLL_SBUF_RECV];
	int ret = 0;
	u32 i;

	for (i = part->first; i < g->nops && !ret; i++) {
		const struct coll_op *op = &g->ops[i];

		if (g->part_of[i] != p)
			continue;
		ret = coll_obuf_copy_user(ob, g->off[i], op->recvbuf,
					  op->count * coll_dtype_size(op->dtype),
					  true);
	}
	return ret;
}

/* Each part's buffers (staged or pinned), plan and candidate task. */
static int coll_group_prepare(struct coll_gcall *g, struct coll_file *cf,
			      struct coll_member *m)
{
	struct coll_comm *comm = m->comm;
	u32 p;
	int ret;

	for (p = 0; p < g->nparts; p++) {
		struct coll_gpart *part = &g->parts[p];
		const struct coll_op *op = &g->ops[part->first];
		struct coll_sub *sub = coll_sub_alloc();

		if (!sub)
			return -ENOMEM;
		part->sub = sub;
		if (part->fused) {
			sub->desc = (struct coll_desc){
				.prim = COLL_ALLREDUCE,
				.dtype = op->dtype,
				.redop = op->redop,
				.algo = op->algo,
			};
			sub->rank = m->rank;
			ret = coll_group_stage(g, part, sub, cf);
		} else {
			ret = coll_sub_pin(sub, cf, op, comm->nranks, m->rank);
		}
		if (ret)
			return ret;
		sub->desc.group = g->fingerprint;
		kref_get(&cf->kref);
		sub->cf = cf;
		ret = coll_run_plan_ahead(comm, sub);
		if (ret)
			return ret;
		part->cand = coll_task_alloc(comm);
		if (!part->cand)
			return -ENOMEM;
		g->subs[p] = sub;
		g->cands[p] = part->cand;
	}
	return 0;
}

/* Run the published parts in order; copy the fused results out. */
static int coll_group_run(struct coll_gcall *g, u32 rank)
{
	int ret = 0, err;
	u32 p;

	for (p = 0; p < g->nparts; p++) {
		if (g->starts[p]) {
			coll_run_start(g->tasks[p]);
			coll_task_put(g->tasks[p]);
		}
	}
	for (p = 0; p < g->nparts; p++) {
		struct coll_task *task = g->tasks[p];

		if (IS_ERR(task)) {	/* it met an eager collective */
			if (!ret)
				ret = PTR_ERR(task);
			continue;
		}
		err = coll_run_participate(task, true);
		if (!err && g->parts[p].fused)
			err = coll_group_unstage(g, p);
		if (!ret)
			ret = err;
		coll_task_release_rank(task, rank);
		coll_task_put(task);
	}
	return ret;
}

static void coll_group_free(struct coll_gcall *g)
{
	u32 p;

	if (g->parts) {
		for (p = 0; p < g->nparts; p++) {
			coll_task_free_unused(g->parts[p].cand);
			coll_sub_free(g->parts[p].sub);
		}
	}
	kvfree(g->parts);
	kvfree(g->part_of);
	kvfree(g->off);
	kvfree(g->subs);
	kvfree(g->cands);
	kvfree(g->tasks);
	kvfree(g->starts);
	kvfree(g->ops);
}

static int coll_group_alloc(struct coll_gcall *g, u32 nops)
{
	g->nops = nops;
	g->ops = kvcalloc(nops, sizeof(*g->ops), GFP_KERNEL_ACCOUNT);
	g->part_of = kvcalloc(nops, sizeof(*g->part_of), GFP_KERNEL_ACCOUNT);
	g->off = kvcalloc(nops, sizeof(*g->off), GFP_KERNEL_ACCOUNT);
	g->parts = kvcalloc(nops, sizeof(*g->parts), GFP_KERNEL_ACCOUNT);
	g->subs = kvcalloc(nops, sizeof(*g->subs), GFP_KERNEL_ACCOUNT);
	g->cands = kvcalloc(nops, sizeof(*g->cands), GFP_KERNEL_ACCOUNT);
	g->tasks = kvcalloc(nops, sizeof(*g->tasks), GFP_KERNEL_ACCOUNT);
	g->starts = kvcalloc(nops, sizeof(*g->starts), GFP_KERNEL_ACCOUNT);
	if (!g->ops || !g->part_of || !g->off || !g->parts || !g->subs ||
	    !g->cands || !g->tasks || !g->starts)
		return -ENOMEM;
	return 0;
}

/**
 * coll_group_submit() - COLL_GROUP
 * @cf: the caller's descriptor
 * @ucmd: the argument (struct coll_group); nothing is written back
 *
 * Locks: takes cf->lock (coll_member_get()), then (not nested)
 * comm->lock; neither is held while staging, pinning or waiting.
 *
 * Return: 0 or -errno as documented in the uapi header: the first error
 * of the group's collectives once they were accepted.
 */
int coll_group_submit(struct coll_file *cf, struct coll_ucmd *ucmd)
{
	struct coll_group *arg = ucmd->cmd;
	struct coll_gcall g = {};
	struct coll_member *m;
	u32 p, rank;
	int ret;

	if (arg->flags & ~COLL_GROUP_F_ALL)
		return -EOPNOTSUPP;
	if (arg->__reserved || arg->nops > COLL_GROUP_MAX_OPS ||
	    arg->op_size < offsetofend(struct coll_op, __reserved))
		return -EINVAL;

	m = coll_member_get(cf, arg->comm);
	if (!m)
		return -ENOENT;
	rank = m->rank;
	if (!arg->nops) {
		ret = 0;
		goto out_put_member;
	}

	ret = coll_group_alloc(&g, arg->nops);
	if (ret)
		goto out_free;
	ret = coll_group_read(&g, arg, m->comm->nranks);
	if (ret)
		goto out_free;
	coll_group_split(&g, arg->flags);
	g.fingerprint = coll_group_fingerprint(&g, arg->flags);
	ret = coll_group_prepare(&g, cf, m);
	if (ret)
		goto out_free;

	ret = coll_match_publish_group(m, g.subs, g.cands, g.nparts, g.tasks,
				       g.starts);
	if (ret)
		goto out_free;
	/*
	 * The parts belong to their tasks now, but for those that met an
	 * eager collective; unused candidates do not.
	 */
	for (p = 0; p < g.nparts; p++) {
		coll_task_free_unused(g.cands[p]);
		g.parts[p].cand = NULL;
		if (!IS_ERR(g.tasks[p]))
			g.parts[p].sub = NULL;
	}
	if (!IS_ERR(g.tasks[0]))
		trace_coll_group(g.tasks[0], rank, g.nops, g.nparts);
	coll_member_put(m);
	m = NULL;
	ret = coll_group_run(&g, rank);

out_free:
	coll_group_free(&g);
out_put_member:
	if (m)
		coll_member_put(m);
	return ret;
}
