// SPDX-License-Identifier: GPL-2.0
/*
 * Groups (COLL_GROUP): several collectives of one communicator in one call,
 * matched as one.
 *
 * A group becomes a list of parts, each one collective of the usual kind
 * (a struct coll_sub in a struct coll_task, run by coll_run.c):
 *
 * - fused: the small AllReduces (at most COLL_GROUP_FUSE_BYTES, the same
 *   dtype, redop and algo) are laid end to end, in the order they come,
 *   in buckets of at most COLL_GROUP_BUCKET_BYTES per rank, each reduced
 *   by one AllReduce: the cost of a call, of matching and of waking the
 *   ranks is paid once per bucket (the tensor fusion of Horovod and of
 *   torch's DDP buckets, done where the data already passes).  On one host
 *   a bucket is a composite obuf over the ops' own pinned buffers (the
 *   registration cache finds them pinned in a loop: coll_group_direct()),
 *   so nothing is copied; else, or when that cannot be
 *   (coll_group_direct_ok()), the ops' inputs are copied at the call into
 *   a kernel buffer, reduced there in place, and the caller copies each
 *   result out once it is done, nothing of theirs pinned;
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
#include <linux/sort.h>
#include <linux/uaccess.h>

#include "coll_loc.h"
#include "coll_trace.h"

/* One part of a group: a collective. */
struct coll_gpart {
	struct coll_sub *sub;
	struct coll_task *cand;
	u32 first;		/* its first op */
	u64 bytes;		/* fused: bytes of its buffer */
	u32 nops;
	bool fused;
	bool direct;		/* fused on the ops' own pages, no bucket */
};

/* A byte range of a user buffer: [start, end). */
struct coll_grange {
	u64 start, end;
};

/*
 * A group call's arrays, in one allocation that the descriptor keeps for
 * its next group (coll_group_alloc()): under TCG, allocating and zeroing
 * them took 16 us of a 2-rank group of 100 AllReduces of 4 KiB (~500 us).
 */
struct coll_gmem {
	size_t bytes;		/* of mem */
	u8 mem[] __aligned(8);
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
	struct coll_grange *ranges;	/* 2 * nops: coll_group_direct_ok() */
	u32 fingerprint;
	struct coll_gmem *gm;		/* holds the arrays */
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
	bool bulk;
	u32 i;
	int ret;

	/* ops of our size: one copy (else, or if it faults, op by op) */
	bulk = arg->op_size == sizeof(*g->ops) &&
	       !copy_from_user(g->ops, u64_to_user_ptr(arg->ops_uptr),
			       array_size(g->nops, sizeof(*g->ops)));
	for (i = 0; i < g->nops; i++) {
		struct coll_op *op = &g->ops[i];
		void __user *u = u64_to_user_ptr(arg->ops_uptr +
						 (u64)i * arg->op_size);

		ret = bulk ? 0 : copy_struct_from_user(op, sizeof(*op), u,
							arg->op_size);
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
		part->nops++;
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

/* A user range of one op of a fused part, for coll_group_direct_ok(). */
static int coll_grange_cmp(const void *a, const void *b)
{
	const struct coll_grange *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sort @r by start unless it is (as the buffers of a loop's ops often are). */
static void coll_granges_sort(struct coll_grange *r, u32 n)
{
	u32 i;

	for (i = 1; i < n; i++) {
		if (r[i].start < r[i - 1].start) {
			sort(r, n, sizeof(*r), coll_grange_cmp, NULL);
			return;
		}
	}
}

/*
 * Does a range of @w (written) overlap any other of @w or of @rd (read)?
 * Both sorted by start: one sweep over their merge.
 */
static bool coll_granges_clash(const struct coll_grange *w, u32 nw,
			       const struct coll_grange *rd, u32 nr)
{
	u64 end_all = 0, end_w = 0;
	u32 i = 0, j = 0;

	while (i < nw || j < nr) {
		bool write = j >= nr || (i < nw && w[i].start <= rd[j].start);
		const struct coll_grange *c = write ? &w[i++] : &rd[j++];

		if (c->start < (write ? end_all : end_w))
			return true;
		end_all = max(end_all, c->end);
		if (write)
			end_w = max(end_w, c->end);
	}
	return false;
}

/*
 * A fused part of smaller ops (on average) takes the bucket: copying a
 * small op costs less than finding its two buffers in the registration
 * cache.  Measured under TCG, 2 ranks, 100 int32 AllReduces a group: per
 * op 64 B and 512 B the bucket was 1.47x and 1.13x faster, 1 KiB, 2 KiB and
 * 4 KiB the own pages 1.21x, 1.49x and 1.81x.
 */
#define COLL_GROUP_DIRECT_MIN_BYTES	1024U

/*
 * May a fused part run on its ops' own pages?  On one host only (the RDMA
 * and TCP transports register whole obufs, not composites); only for ops
 * of COLL_GROUP_DIRECT_MIN_BYTES on average; only if the
 * registration cache can keep all its buffers (else every call would pin
 * them again, dearer than the bucket's copies); only if every op is in
 * place or its two buffers are apart, and no op's buffer overlaps one
 * that another op writes (the ABI leaves such a group's order undefined;
 * the bucket, which reads every input before it writes, keeps what such a
 * group got before).  Needs no lock; reads no user memory.
 */
static bool coll_group_direct_ok(const struct coll_gcall *g, u32 p,
				 const struct coll_comm *comm)
{
	const struct coll_gpart *part = &g->parts[p];
	struct coll_grange *w, *rd;
	u32 i, nw = 0, nr = 0;
	bool ok = true;

	if (comm->hosts || 2ULL * part->nops > READ_ONCE(coll_reg_cache) ||
	    part->bytes < (u64)part->nops * COLL_GROUP_DIRECT_MIN_BYTES)
		return false;
	w = g->ranges;
	rd = w + part->nops;
	for (i = part->first; i < g->nops && ok; i++) {
		const struct coll_op *op = &g->ops[i];
		u64 bytes = op->count * coll_dtype_size(op->dtype);

		if (g->part_of[i] != p)
			continue;
		if (op->sendbuf + bytes < op->sendbuf ||
		    op->recvbuf + bytes < op->recvbuf)
			ok = false;	/* wraps: the bucket says EOVERFLOW */
		w[nw++] = (struct coll_grange){ op->recvbuf,
						op->recvbuf + bytes };
		if (op->sendbuf != op->recvbuf)
			rd[nr++] = (struct coll_grange){ op->sendbuf,
							 op->sendbuf + bytes };
	}
	if (ok) {
		coll_granges_sort(w, nw);
		coll_granges_sort(rd, nr);
		ok = !coll_granges_clash(w, nw, rd, nr);
	}
	return ok;
}

/*
 * A piece of a fused part's composite that the registration cache did not
 * have: pinned now; or, not its own (in place), @in's obuf.
 */
static int coll_group_pin_seg(struct coll_sub *sub, struct coll_file *cf,
			      struct coll_oseg *sg, const struct coll_oseg *in,
			      bool writable)
{
	struct coll_obuf *ob;
	int ret;

	if (!sg->own) {
		sg->ob = in->ob;
		return 0;
	}
	if (sg->ob)
		return 0;
	ret = coll_sub_pin_buf(sub, cf, sg->uaddr, sg->len, writable, &ob);
	if (!ret)
		sg->ob = ob;
	return ret;
}

/*
 * A fused part on its ops' own pages: each op's buffers pinned through the
 * registration cache (found there in a loop that reuses them), end to end
 * in two composite obufs (send, receive) in the order of the bucket's
 * offsets; one AllReduce then reads and writes the users' pages, nothing
 * copied in or out, nothing probed.  All ops in place: one composite, an
 * in-place AllReduce; some: their pieces of the send composite borrow the
 * receive composite's (same place in both, as in place).  In the caller's
 * process.  On error @sub holds nothing of it (the caller stages instead).
 */
static int coll_group_direct(struct coll_gcall *g, u32 p, struct coll_sub *sub,
			     struct coll_file *cf)
{
	struct coll_gpart *part = &g->parts[p];
	u32 esize = coll_dtype_size(g->ops[part->first].dtype);
	struct coll_obuf *cs = NULL, *cr;
	bool inplace = true;
	u32 i;
	int ret;

	for (i = part->first; i < g->nops; i++)
		if (g->part_of[i] == p &&
		    g->ops[i].sendbuf != g->ops[i].recvbuf)
			inplace = false;
	ret = coll_obuf_composite(part->nops, &cr);
	if (ret)
		return ret;
	sub->ob[COLL_SBUF_RECV] = cr;
	sub->ob[COLL_SBUF_SEND] = cr;
	if (!inplace) {
		ret = coll_obuf_composite(part->nops, &cs);
		if (ret)
			goto err_unpin;
		sub->ob[COLL_SBUF_SEND] = cs;
	}
	for (i = part->first; i < g->nops; i++) {
		const struct coll_op *op = &g->ops[i];
		u64 bytes = op->count * esize;

		if (g->part_of[i] != p)
			continue;
		cr->segs[cr->nsegs++] = (struct coll_oseg){
			.at = g->off[i], .uaddr = op->recvbuf, .len = bytes,
			.own = true };
		if (cs)
			cs->segs[cs->nsegs++] = (struct coll_oseg){
				.at = g->off[i], .uaddr = op->sendbuf,
				.len = bytes,
				.own = op->sendbuf != op->recvbuf };
	}
	/* the cache's first, in one go each; then what it did not have */
	sub->nhits += coll_regcache_get_segs(cf, cr, true);
	if (cs)
		sub->nhits += coll_regcache_get_segs(cf, cs, false);
	for (i = 0; i < cr->nsegs; i++) {
		ret = coll_group_pin_seg(sub, cf, &cr->segs[i], NULL, true);
		if (ret)
			goto err_unpin;
		cr->npages += cr->segs[i].ob->npages;
		if (!cs)
			continue;
		ret = coll_group_pin_seg(sub, cf, &cs->segs[i], &cr->segs[i],
					 false);
		if (ret)
			goto err_unpin;
		if (cs->segs[i].own)
			cs->npages += cs->segs[i].ob->npages;
	}
	cr->len = part->bytes;
	cr->writable = true;
	if (cs)
		cs->len = part->bytes;
	sub->desc.count = part->bytes / esize;
	sub->desc.inplace = inplace;
	part->direct = true;
	return 0;

err_unpin:
	coll_sub_unpin(sub, false);
	sub->npins = 0;
	sub->npinned = 0;
	sub->nhits = 0;
	return ret;
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
			ret = -EAGAIN;
			if (coll_group_direct_ok(g, p, comm))
				ret = coll_group_direct(g, p, sub, cf);
			if (ret)
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
		if (!err && g->parts[p].fused && !g->parts[p].direct)
			err = coll_group_unstage(g, p);
		if (!ret)
			ret = err;
		coll_task_release_rank(task, rank);
		coll_task_put(task);
	}
	return ret;
}

void coll_group_mem_free(struct coll_gmem *gm)
{
	if (gm)
		coll_kvfree(gm, struct_size(gm, mem, gm->bytes));
}

static void coll_group_free(struct coll_gcall *g, struct coll_file *cf)
{
	u32 p;

	if (g->parts) {
		for (p = 0; p < g->nparts; p++) {
			coll_task_free_unused(g->parts[p].cand);
			coll_sub_free(g->parts[p].sub);
		}
	}
	/* kept for the next group, unless another thread's is */
	if (g->gm && cmpxchg(&cf->gmem, NULL, g->gm))
		coll_group_mem_free(g->gm);
}

/* The call's arrays: the descriptor's kept ones if large enough. */
static int coll_group_alloc(struct coll_gcall *g, u32 nops,
			    struct coll_file *cf)
{
	/* by alignment, largest first; nops <= COLL_GROUP_MAX_OPS */
	size_t sz[] = {
		array_size(nops, sizeof(*g->ops)),
		array_size(nops, sizeof(*g->off)),
		array_size(nops, sizeof(*g->parts)),
		array_size(nops, sizeof(*g->subs)),
		array_size(nops, sizeof(*g->cands)),
		array_size(nops, sizeof(*g->tasks)),
		array_size(nops, sizeof(*g->starts)),
		array_size(2 * nops, sizeof(*g->ranges)),
		array_size(nops, sizeof(*g->part_of)),
	};
	size_t at[ARRAY_SIZE(sz) + 1] = {};
	struct coll_gmem *gm;
	u32 i;
	u8 *base;

	for (i = 0; i < ARRAY_SIZE(sz); i++)
		at[i + 1] = at[i] + ALIGN(sz[i], sizeof(u64));
	gm = xchg(&cf->gmem, NULL);
	if (gm && gm->bytes < at[ARRAY_SIZE(sz)]) {
		coll_group_mem_free(gm);
		gm = NULL;
	}
	if (!gm) {
		gm = coll_kvzalloc(struct_size(gm, mem, at[ARRAY_SIZE(sz)]));
		if (!gm)
			return -ENOMEM;
		gm->bytes = at[ARRAY_SIZE(sz)];
	}
	g->gm = gm;
	base = gm->mem;
	/* what is read before written: the pointers and flags per part */
	memset(base + at[3], 0, at[7] - at[3]);
	g->nops = nops;
	g->ops = (void *)base;
	g->off = (void *)(base + at[1]);
	g->parts = (void *)(base + at[2]);
	g->subs = (void *)(base + at[3]);
	g->cands = (void *)(base + at[4]);
	g->tasks = (void *)(base + at[5]);
	g->starts = (void *)(base + at[6]);
	g->ranges = (void *)(base + at[7]);
	g->part_of = (void *)(base + at[8]);
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

	ret = coll_group_alloc(&g, arg->nops, cf);
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
	coll_group_free(&g, cf);
out_put_member:
	if (m)
		coll_member_put(m);
	return ret;
}
