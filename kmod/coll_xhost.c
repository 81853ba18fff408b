// SPDX-License-Identifier: GPL-2.0
/*
 * Collectives across hosts: how the hosts of a communicator run one plan
 * together.
 *
 * Every host builds the same plan (the agreement at round 0 checks that
 * they could: same primitive, type, op, root, count, algorithm and ring
 * chunk) and runs the instances whose destination is one of its ranks.
 * A source on another host is pulled: small rounds come with the peer's
 * READY (eager data), large ones are read chunk by chunk (RDMA READ, or a
 * read request over TCP) into kernel memory, from which the local
 * transport reduces or copies.
 *
 * Rounds are gated by READY frames: READY(t) from a host says "I finished
 * round t-1, and the data you read from me in round t is in place until
 * you say READY(t+1)".  A host opens round t once it has finished round
 * t-1 (and sent READY(t)) and every peer's READY(t) has arrived; round
 * nrounds is the end (everyone's reads of this host's buffers are over, so
 * they may be unpinned).  A peer is never more than one round ahead of a
 * collective: each host keeps two payload slots per peer.  Collectives run
 * side by side (non-blocking requests), so a peer may start later ones
 * before this host has created them: the communicator keeps their first
 * frames (READY(0), ABORT) for up to COLL_XHOST_AHEAD collectives ahead.
 *
 * A collective that fails on one host for a reason the others cannot see
 * (its local ranks disagree, no memory for its plan) is ABORTed to the
 * peers, which fail it with the same errno; the communicator lives on.  A
 * frame that does not fit this protocol fails the link and so the
 * communicator.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/slab.h>
#include <linux/sizes.h>
#include <linux/sort.h>

#include "coll_loc.h"

/* Instances x sources a round may have and still be sent eagerly. */
#define COLL_XSEG_MAX		4096
/* Kernel memory one thread reads a chunk's remote sources into, at most. */
#define COLL_XSTAGE_MAX		SZ_1M
/* Reads one source of a chunk may take: grants are at least 2 MiB apart. */
#define COLL_XPIECES		4

struct coll_xseg {		/* bytes of one rank's buffer */
	u32 rank;
	u32 buf;
	u64 off;
	u64 len;
	u64 at;			/* where in the payload */
};

struct coll_xslot {		/* a peer's READY for one round */
	struct coll_msg *msg;
	u32 round;
	u32 eager_limit;	/* the sender's, from the frame */
	bool checked;		/* its size is being or was checked */
	bool valid;		/* ... and fits the plan */
	bool eager;
	struct coll_xseg *seg;
	u32 nseg;
	u32 data_off;		/* where the eager data starts in msg */
};

struct coll_xpeer {
	u32 ready;		/* READY rounds received (the next is this) */
	struct coll_xslot slot[2];	/* by round parity */
	struct coll_wire_desc desc;	/* from its READY(0) */
	int abort_err;		/* it aborted the collective */
	struct coll_wire_export *exp;	/* its grants, sorted */
	u32 nexp;
	struct coll_xgrant *grants;	/* ours to it */
	u32 ngrants;
};

struct coll_xgrant {
	struct coll_link *link;		/* holds a ref */
	void *cookie;
};

/* Grants one READY(0) may carry. */
#define COLL_XEXPORT_MAX	1024

struct coll_xtask {
	u32 nhosts;
	u32 sent;		/* READY rounds being sent (for peers' turn) */
	u32 queued;		/* READY rounds queued to every peer */
	u32 opened;		/* rounds opened */
	bool started;		/* the plan exists */
	bool abort_sent;	/* task->lock: our ABORT went out */
	struct coll_wire_desc desc;	/* ours */
	bool granting;		/* our buffers may be read, not only sent */
	struct coll_xpeer peer[];
};

bool coll_xhost_spans(const struct coll_task *task)
{
	return task->xt;
}

/* Is @rank a rank of this host? */
bool coll_xhost_local(const struct coll_task *task, u32 rank)
{
	const struct coll_hosts *h = task->comm->hosts;

	return !h || h->rank_host[rank] == h->self;
}

int coll_xtask_alloc(struct coll_task *task, struct coll_comm *comm)
{
	u32 nh = comm->hosts->nhosts;
	struct coll_xtask *xt;

	xt = coll_kvzalloc(struct_size(xt, peer, nh));
	if (!xt)
		return -ENOMEM;
	xt->nhosts = nh;
	task->xt = xt;
	return 0;
}

static void coll_xslot_clear(struct coll_xslot *sl)
{
	coll_msg_free(sl->msg);
	kvfree(sl->seg);
	memset(sl, 0, sizeof(*sl));
}

/*
 * The task is over and everyone let go: revoke the grants (invalidating the
 * peers' keys), then the pages may be unpinned.  Never in a CQ's context:
 * coll_task.c frees tasks that span hosts from the workqueue.
 */
void coll_xtask_free(struct coll_task *task)
{
	struct coll_xtask *xt = task->xt;
	u32 h, i;

	if (!xt)
		return;
	for (h = 0; h < xt->nhosts; h++) {
		struct coll_xpeer *pr = &xt->peer[h];

		for (i = 0; i < pr->ngrants; i++) {
			pr->grants[i].link->ops->revoke(pr->grants[i].cookie);
			coll_link_put(pr->grants[i].link);
		}
		kfree(pr->grants);
		kvfree(pr->exp);
		for (i = 0; i < 2; i++)
			coll_xslot_clear(&pr->slot[i]);
	}
	coll_kvfree(xt, struct_size(xt, peer, xt->nhosts));
	task->xt = NULL;
}

/* ---- segments: what one host reads from another in a round ------------ */

static int coll_xseg_cmp(const void *a, const void *b)
{
	const struct coll_xseg *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->buf != y->buf)
		return x->buf < y->buf ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return 0;
}

/* Append a segment, allocating the array on first use. */
static int coll_xseg_add(struct coll_xseg **seg, u32 *n,
			 const struct coll_place *p, u64 cnt, u32 esize)
{
	if (*n == COLL_XSEG_MAX)
		return -E2BIG;
	if (!*seg) {
		*seg = kvmalloc_array(COLL_XSEG_MAX, sizeof(**seg), GFP_KERNEL);
		if (!*seg)
			return -ENOMEM;
	}
	(*seg)[(*n)++] = (struct coll_xseg){
		.rank = p->rank,
		.buf = p->buf,
		.off = p->off * esize,
		.len = cnt * esize,
	};
	return 0;
}

/*
 * The bytes host @dst reads from host @src in round @round, as sorted,
 * merged segments, with their offsets in an eager payload.  Both hosts
 * compute the same list.  Return: 0, -E2BIG (too many pieces to send
 * eagerly), -ENOMEM.
 */
static int coll_xsegs(struct coll_task *task, u32 round, u32 src, u32 dst,
		      struct coll_xseg **out, u32 *nout, u64 *bytes)
{
	const struct coll_sched *s = task->sched;
	const struct coll_hosts *hs = task->comm->hosts;
	struct coll_xseg *seg = NULL;
	u32 f, a, b, j, n = 0, m;
	u64 at = 0;
	int err = 0;

	*out = NULL;
	*nout = 0;
	*bytes = 0;
	for (f = s->round_first[round]; f < s->round_first[round + 1]; f++) {
		const struct coll_step *st = &s->steps[f];

		for (a = 0; a < st->na; a++) {
			for (b = 0; b < st->nb; b++) {
				struct coll_place p;
				u64 cnt = coll_step_inst(s, st, a, b, &p);

				if (!cnt || hs->rank_host[p.rank] != dst)
					continue;
				for (j = 0; j < st->nsrc && !err; j++) {
					coll_step_src(s, st, a, b, j, &p);
					if (hs->rank_host[p.rank] == src)
						err = coll_xseg_add(&seg, &n, &p,
								    cnt,
								    task->esize);
				}
				if (err) {
					kvfree(seg);
					return err;
				}
			}
		}
	}
	if (!n)
		return 0;
	sort(seg, n, sizeof(*seg), coll_xseg_cmp, NULL);
	for (m = 0, j = 1; j < n; j++) {
		struct coll_xseg *l = &seg[m];

		if (seg[j].rank == l->rank && seg[j].buf == l->buf &&
		    seg[j].off <= l->off + l->len) {
			l->len = max(l->len, seg[j].off + seg[j].len - l->off);
			continue;
		}
		seg[++m] = seg[j];
	}
	n = m + 1;
	for (j = 0; j < n; j++) {
		seg[j].at = at;
		at += seg[j].len;
	}
	*out = seg;
	*nout = n;
	*bytes = at;
	return 0;
}

/* The eager limit this host uses towards a link. */
static u32 coll_xlimit(const struct coll_link *l)
{
	return min_t(u32, READ_ONCE(coll_eager_bytes), l->max_eager);
}

/* Is the round small enough to go with READY, under @limit? */
static bool coll_xeager(u64 bytes, int err, u32 limit)
{
	return !err && bytes <= limit;
}

/* Copy @len bytes at byte @pos of a local obuf into @dst. */
static void coll_xcopy_out(u8 *dst, const struct coll_obuf *ob, u64 pos,
			   u64 len)
{
	while (len) {
		u64 at = ob->first_off + pos;
		unsigned int off = offset_in_page(at);
		size_t n = min_t(u64, len, PAGE_SIZE - off);
		u8 *p = kmap_local_page(coll_obuf_page(ob, at >> PAGE_SHIFT));

		memcpy(dst, p + off, n);
		kunmap_local(p);
		dst += n;
		pos += n;
		len -= n;
	}
}

/* ---- sending READY and ABORT ----------------------------------------------- */

static void coll_xhost_desc(struct coll_task *task, struct coll_wire_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->prim = cpu_to_le32(task->desc.prim);
	d->dtype = cpu_to_le32(task->desc.dtype);
	d->redop = cpu_to_le32(task->desc.redop);
	d->root = cpu_to_le32(task->desc.root);
	d->algo = cpu_to_le32(task->desc.algo);
	/*
	 * In place is each rank's own affair (a Reduce's root alone, say),
	 * except for AlltoAll, whose plan it changes: agreed on for it only,
	 * as between the ranks of one host (coll_desc_equal()).
	 */
	d->flags = cpu_to_le32(task->desc.prim == COLL_ALLTOALL &&
			       task->desc.inplace ? 1 : 0);
	d->count = cpu_to_le64(task->desc.count);
	d->chunk = cpu_to_le64(task->plan->key.chunk);
	d->group = cpu_to_le32(task->desc.group);
}

static struct coll_link *coll_xhost_link(struct coll_comm *comm, u32 host)
{
	struct coll_link *l;

	mutex_lock(&comm->links_lock);
	l = comm->links[host];
	if (l)
		coll_link_get(l);
	mutex_unlock(&comm->links_lock);
	return l;
}

static int coll_export_cmp(const void *a, const void *b)
{
	const struct coll_wire_export *x = a, *y = b;

	if (x->rank != y->rank)
		return le32_to_cpu(x->rank) < le32_to_cpu(y->rank) ? -1 : 1;
	if (x->buf != y->buf)
		return le32_to_cpu(x->buf) < le32_to_cpu(y->buf) ? -1 : 1;
	if (x->off != y->off)
		return le64_to_cpu(x->off) < le64_to_cpu(y->off) ? -1 : 1;
	return 0;
}

/*
 * Grant @host's link read access to every buffer of this host's ranks, for
 * this collective; the exports go into @exp.  Return: 0 or -errno.
 */
static int coll_xhost_grant(struct coll_task *task, struct coll_link *l,
			    struct coll_xpeer *pr, struct coll_wire_export *exp,
			    u32 *nexp)
{
	u32 r, b, n, max = 2 * task->nlocal;
	int err = 0;

	pr->grants = kcalloc(max, sizeof(*pr->grants), GFP_KERNEL);
	if (!pr->grants)
		return -ENOMEM;
	*nexp = 0;
	for (r = 0; r < task->nranks && !err; r++) {
		struct coll_sub *sub = task->sub[r];

		for (b = 0; sub && b < 2 && !err; b++) {
			u64 len = coll_sched_buf_elems(task->desc.prim,
						       task->nranks,
						       task->desc.root, r, b,
						       task->desc.count) *
				  task->esize;
			u32 k;

			if (!sub->ob[b] || !len)
				continue;
			err = l->ops->grant(l, sub->ob[b], sub->base[b], len,
					    exp + *nexp,
					    COLL_XEXPORT_MAX - *nexp, &n,
					    &pr->grants[pr->ngrants].cookie);
			if (err)
				break;
			coll_link_get(l);
			pr->grants[pr->ngrants++].link = l;
			for (k = 0; k < n; k++) {
				exp[*nexp + k].rank = cpu_to_le32(r);
				exp[*nexp + k].buf = cpu_to_le32(b);
			}
			*nexp += n;
		}
	}
	return err;
}

/* READY(@round) to @host, with round 0's agreement and the eager data. */
static int coll_xhost_send_ready(struct coll_task *task, u32 host, u32 round)
{
	struct coll_link *l = coll_xhost_link(task->comm, host);
	u32 self = task->comm->hosts->self, nseg = 0, i, hdr = 0, nexp = 0;
	struct coll_wire_export *exp = NULL;
	struct coll_xseg *seg = NULL;
	struct coll_msg *m;
	u64 bytes = 0;
	u32 limit;
	int err = 0;
	u8 *p;

	if (!l)
		return -ECONNRESET;
	limit = coll_xlimit(l);
	if (round < task->sched->nrounds)
		err = coll_xsegs(task, round, self, host, &seg, &nseg, &bytes);
	if (err && err != -E2BIG)
		goto out_put;
	if (!coll_xeager(bytes, err, limit))
		bytes = 0;
	err = 0;
	if (!round) {
		if (task->xt->granting && l->ops->grant) {
			exp = kvmalloc_array(COLL_XEXPORT_MAX, sizeof(*exp),
					     GFP_KERNEL | __GFP_ZERO);
			err = exp ? coll_xhost_grant(task, l,
						     &task->xt->peer[host],
						     exp, &nexp) : -ENOMEM;
			if (err)
				goto out_free;
		}
		hdr = sizeof(struct coll_wire_desc) + nexp * sizeof(*exp);
	}
	m = coll_msg_alloc(hdr + bytes);
	if (!m) {
		err = -ENOMEM;
		goto out_free;
	}
	m->hdr.magic = cpu_to_le32(COLL_WIRE_MAGIC);
	m->hdr.type = COLL_MSG_READY;
	m->hdr.len = cpu_to_le32(m->len);
	m->hdr.round = cpu_to_le32(round);
	m->hdr.seq = cpu_to_le64(task->seq);
	m->hdr.arg = cpu_to_le64(limit);
	p = m->data;
	if (!round) {
		struct coll_wire_desc *d = (struct coll_wire_desc *)p;

		coll_xhost_desc(task, d);
		d->nexports = cpu_to_le32(nexp);
		memcpy(p + sizeof(*d), exp, nexp * sizeof(*exp));
		p += hdr;
	}
	for (i = 0; bytes && i < nseg; i++) {
		const struct coll_sub *sub = task->sub[seg[i].rank];

		if (WARN_ONCE(!sub || !sub->ob[seg[i].buf],
			      "seq %llu round %u prim %u count %llu: seg %u of %u rank %u buf %u off %llu len %llu sub %p",
			      task->seq, round, task->desc.prim, task->desc.count,
			      i, nseg, seg[i].rank, seg[i].buf, seg[i].off,
			      seg[i].len, sub)) {
			coll_msg_free(m);
			err = -EINVAL;
			goto out_free;
		}
		coll_xcopy_out(p + seg[i].at, sub->ob[seg[i].buf],
			       sub->base[seg[i].buf] + seg[i].off, seg[i].len);
	}
	err = l->ops->send(l, m);
out_free:
	kvfree(exp);
	kvfree(seg);
out_put:
	coll_link_put(l);
	return err;
}

/* A peer sent what no honest peer sends: its link (and so all) fails. */
static void coll_xhost_link_fail(struct coll_comm *comm, u32 host,
				 const char *why)
{
	struct coll_link *l = coll_xhost_link(comm, host);

	if (l) {
		coll_link_fail(l, -ECONNRESET, why);
		coll_link_put(l);
	}
}

static void coll_xhost_send_abort(struct coll_task *task, int err)
{
	struct coll_comm *comm = task->comm;
	struct coll_link *l;
	u32 h;

	for (h = 0; h < comm->hosts->nhosts; h++) {
		if (h == comm->hosts->self)
			continue;
		l = coll_xhost_link(comm, h);
		if (!l)
			continue;
		coll_link_send(l, COLL_MSG_ABORT, task->seq, 0, -err, NULL, 0);
		coll_link_put(l);
	}
}

/* ---- the gate ----------------------------------------------------------------- */

/*
 * Locks: task->lock.  Can round xt->opened open?  Every peer's READY for it
 * has come and ours is queued to every peer (so that whatever this host
 * sends in that round goes after it on each link).
 */
static bool coll_xhost_can_open(struct coll_task *task)
{
	struct coll_xtask *xt = task->xt;
	u32 self = task->comm->hosts->self, h, r = xt->opened;

	lockdep_assert_held(&task->lock);
	if (!xt->started || xt->queued <= r || r > task->sched->nrounds)
		return false;
	for (h = 0; h < xt->nhosts; h++) {
		const struct coll_xslot *sl = &xt->peer[h].slot[r & 1];

		if (h == self)
			continue;
		if (xt->peer[h].ready <= r || sl->round != r || !sl->valid)
			return false;
	}
	return true;
}

static bool coll_xdesc_equal(const struct coll_wire_desc *a,
			     const struct coll_wire_desc *b)
{
	return a->prim == b->prim && a->dtype == b->dtype &&
	       a->redop == b->redop && a->root == b->root &&
	       a->algo == b->algo && a->flags == b->flags &&
	       a->count == b->count && a->chunk == b->chunk &&
	       a->group == b->group;
}

/* Open every round that can be opened; end the task at nrounds. */
static void coll_xhost_try_open(struct coll_task *task)
{
	struct coll_xtask *xt = task->xt;
	u32 self = task->comm->hosts->self, round, h;
	int err = 0;

	for (;;) {
		spin_lock(&task->lock);
		if (READ_ONCE(task->status) || !coll_xhost_can_open(task)) {
			spin_unlock(&task->lock);
			return;
		}
		round = xt->opened++;
		if (!round) {
			for (h = 0; h < xt->nhosts; h++)
				if (h != self &&
				    !coll_xdesc_equal(&xt->desc,
						      &xt->peer[h].desc))
					err = -EPROTO;
		}
		spin_unlock(&task->lock);
		if (err) {
			coll_xhost_failed(task, err);
			return;
		}
		coll_run_open(task, round);
		if (round == task->sched->nrounds)
			return;
	}
}

/* ---- READY and ABORT from a peer ------------------------------------------------ */

/*
 * Locks: task->lock.  File a peer's READY, validated against what this
 * host knows of the task.  Return: 0 or -EPROTO.
 */
static int coll_xhost_file(struct coll_task *task, u32 host,
			   struct coll_msg *m, bool *keep)
{
	struct coll_xtask *xt = task->xt;
	struct coll_xpeer *pr = &xt->peer[host];
	u32 round = le32_to_cpu(m->hdr.round);
	struct coll_xslot *sl;

	lockdep_assert_held(&task->lock);
	*keep = false;
	if (le64_to_cpu(m->hdr.arg) > COLL_WIRE_MAX_PAYLOAD / 2 ||
	    round != pr->ready || round > xt->sent ||
	    (xt->started && round > task->sched->nrounds)) {
		pr_warn_ratelimited("comm %u: host %u: READY seq %llu round %u out of turn (expected %u, sent %u, rounds %u)\n",
				    task->comm->serial, host, task->seq, round,
				    pr->ready, xt->sent,
				    xt->started ? task->sched->nrounds : 0);
		return -EPROTO;
	}
	if (!round) {
		if (m->len < sizeof(pr->desc))
			return -EPROTO;
		memcpy(&pr->desc, m->data, sizeof(pr->desc));
		if (le32_to_cpu(pr->desc.nexports) > COLL_XEXPORT_MAX ||
		    m->len < sizeof(pr->desc) +
			     le32_to_cpu(pr->desc.nexports) *
			     sizeof(struct coll_wire_export))
			return -EPROTO;
	}
	sl = &pr->slot[round & 1];
	coll_xslot_clear(sl);
	sl->msg = m;
	sl->round = round;
	sl->eager_limit = le64_to_cpu(m->hdr.arg);
	sl->data_off = round ? 0 : sizeof(pr->desc) +
		       le32_to_cpu(pr->desc.nexports) *
		       sizeof(struct coll_wire_export);
	*keep = true;
	pr->ready = round + 1;
	return 0;
}

/*
 * The grants in a peer's READY(0): for ranks of that peer, within their
 * buffers; kept sorted for coll_xhost_export_find().  Return: 0 or -EPROTO.
 */
static int coll_xhost_exports(struct coll_task *task, u32 host,
			      struct coll_xslot *sl)
{
	struct coll_xpeer *pr = &task->xt->peer[host];
	u32 n = le32_to_cpu(pr->desc.nexports), k;
	struct coll_wire_export *exp;
	u64 end;

	if (!n)
		return 0;
	exp = kvmalloc_array(n, sizeof(*exp), GFP_KERNEL);
	if (!exp)
		return -EPROTO;
	memcpy(exp, sl->msg->data + sizeof(pr->desc), n * sizeof(*exp));
	for (k = 0; k < n; k++) {
		u32 rank = le32_to_cpu(exp[k].rank), buf = le32_to_cpu(exp[k].buf);
		u64 len = le64_to_cpu(exp[k].len);

		if (rank >= task->nranks ||
		    task->comm->hosts->rank_host[rank] != host ||
		    buf > COLL_SBUF_RECV || !len || exp[k].__reserved ||
		    check_add_overflow(le64_to_cpu(exp[k].off), len, &end) ||
		    end > coll_sched_buf_elems(task->desc.prim, task->nranks,
					       task->desc.root, rank, buf,
					       task->desc.count) * task->esize) {
			kvfree(exp);
			return -EPROTO;
		}
	}
	sort(exp, n, sizeof(*exp), coll_export_cmp, NULL);
	spin_lock(&task->lock);
	kvfree(pr->exp);
	pr->exp = exp;
	pr->nexp = n;
	spin_unlock(&task->lock);
	return 0;
}

/* The grant of a peer covering byte @off of (rank, buf), or NULL. */
static const struct coll_wire_export *
coll_xhost_export_find(const struct coll_xpeer *pr, u32 rank, u32 buf,
		       u64 off)
{
	u32 lo = 0, hi = pr->nexp;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		const struct coll_wire_export *e = &pr->exp[mid];
		u32 er = le32_to_cpu(e->rank), eb = le32_to_cpu(e->buf);
		u64 end = le64_to_cpu(e->off) + le64_to_cpu(e->len);
		bool below = er != rank ? er < rank :
			     eb != buf ? eb < buf : end <= off;

		if (below)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == pr->nexp || le32_to_cpu(pr->exp[lo].rank) != rank ||
	    le32_to_cpu(pr->exp[lo].buf) != buf ||
	    le64_to_cpu(pr->exp[lo].off) > off)
		return NULL;
	return &pr->exp[lo];
}

/*
 * A peer's READY for @round, filed: check the eager data's size against
 * what the plan says (once, whoever gets here first: the task's start for
 * a READY(0) that came before the plan, the receiver otherwise).  Return:
 * 0, -EPROTO (a frame that does not fit), or -ENOMEM.
 */
static int coll_xhost_check_slot(struct coll_task *task, u32 host, u32 round)
{
	struct coll_xtask *xt = task->xt;
	struct coll_xslot *sl = &xt->peer[host].slot[round & 1];
	u32 self = task->comm->hosts->self, nseg = 0, len, data_off;
	struct coll_xseg *seg = NULL;
	bool eager = false, agree;
	u64 bytes = 0;
	int err = 0;

	spin_lock(&task->lock);
	if (!xt->started || !sl->msg || sl->round != round || sl->checked) {
		spin_unlock(&task->lock);
		return 0;
	}
	sl->checked = true;
	len = sl->msg->len;
	data_off = sl->data_off;
	spin_unlock(&task->lock);

	/* another descriptor: -EPROTO for the collective as round 0 opens */
	agree = round != 0 || coll_xdesc_equal(&xt->desc, &xt->peer[host].desc);
	if (agree && round == 0 && coll_xhost_exports(task, host, sl))
		return -EPROTO;
	if (agree) {
		if (round < task->sched->nrounds)
			err = coll_xsegs(task, round, host, self, &seg, &nseg,
					 &bytes);
		if (err && err != -E2BIG)
			return err;
		eager = coll_xeager(bytes, err, sl->eager_limit);
		if (len != data_off + (eager ? bytes : 0)) {
			pr_warn_ratelimited("comm %u: host %u: READY seq %llu round %u carries %u bytes, the plan says %llu\n",
					    task->comm->serial, host, task->seq,
					    round, len,
					    data_off + (eager ? bytes : 0));
			kvfree(seg);
			return -EPROTO;
		}
	}
	spin_lock(&task->lock);
	sl->seg = seg;
	sl->nseg = nseg;
	sl->eager = eager;
	sl->valid = true;
	spin_unlock(&task->lock);
	return 0;
}

/* Locks: comm->lock.  The task of @seq in flight, with a reference. */
static struct coll_task *coll_xhost_task(struct coll_comm *comm, u64 seq)
{
	struct coll_task *task;

	lockdep_assert_held(&comm->lock);
	list_for_each_entry(task, &comm->tasks, node) {
		if (task->seq == seq) {
			coll_task_get(task);
			return task;
		}
	}
	return NULL;
}

/**
 * coll_xhost_too_far() - may a collective of sequence @seq be created?
 * @comm: a communicator spanning hosts
 * @seq: the new collective's
 *
 * Not while COLL_XHOST_AHEAD collectives are in flight here: a host that
 * completed none of them may not have created even the first, and keeps
 * the first frames of that many only (coll_xhost_stash()).
 *
 * Locks: comm->lock.
 */
bool coll_xhost_too_far(struct coll_comm *comm, u64 seq)
{
	struct coll_task *oldest;

	lockdep_assert_held(&comm->lock);
	oldest = list_first_entry_or_null(&comm->tasks, struct coll_task,
					  node);
	return oldest && seq - oldest->seq >= COLL_XHOST_AHEAD;
}

/*
 * Locks: comm->lock.  Keep a first frame of a collective not created yet:
 * one READY(0) and one ABORT at most per collective, for the next
 * COLL_XHOST_AHEAD ones; anything else is not a frame an honest peer sends.
 */
static int coll_xhost_stash(struct coll_comm *comm, u32 host,
			    struct coll_msg *m)
{
	u64 seq = le64_to_cpu(m->hdr.seq);
	struct coll_msg *old;
	bool bad;

	lockdep_assert_held(&comm->lock);
	/* seq >= next_task_seq: coll_xhost_route() drops older ones */
	bad = seq - comm->next_task_seq >= COLL_XHOST_AHEAD ||
	      (m->hdr.type == COLL_MSG_READY && m->hdr.round);
	list_for_each_entry(old, &comm->early[host], node)
		bad |= old->hdr.seq == m->hdr.seq &&
		       old->hdr.type == m->hdr.type;
	if (bad) {
		pr_warn_ratelimited("comm %u: host %u: frame %u for seq %llu round %u, no such collective (next %llu)\n",
				    comm->serial, host, m->hdr.type, seq,
				    le32_to_cpu(m->hdr.round),
				    comm->next_task_seq);
		return -EPROTO;
	}
	list_add_tail(&m->node, &comm->early[host]);
	return 0;
}

static int coll_xhost_ready(struct coll_task *task, u32 host,
			    struct coll_msg *m)
{
	u32 round = le32_to_cpu(m->hdr.round);
	bool keep;
	int err;

	spin_lock(&task->lock);
	err = coll_xhost_file(task, host, m, &keep);
	spin_unlock(&task->lock);
	if (!keep)
		coll_msg_free(m);
	if (!err)
		err = coll_xhost_check_slot(task, host, round);
	if (!err)
		coll_xhost_try_open(task);
	if (!err && !round)
		coll_run_heard(task);	/* it may have failed here */
	return err;
}

static int coll_xhost_abort(struct coll_task *task, u32 host,
			    struct coll_msg *m)
{
	int err = -(int)le64_to_cpu(m->hdr.arg);

	coll_msg_free(m);
	spin_lock(&task->lock);
	task->xt->peer[host].abort_err = err;
	spin_unlock(&task->lock);
	coll_xhost_failed(task, err);
	coll_run_heard(task);
	return 0;
}

/*
 * A frame for collective @m->hdr.seq: hand it to @handle with the task, or
 * keep it for the next collective if that one does not exist yet.
 * Consumes @m.  Return: 0 or -EPROTO.
 */
static int coll_xhost_route(struct coll_link *l, struct coll_msg *m,
			    int (*handle)(struct coll_task *task, u32 host,
					  struct coll_msg *m))
{
	struct coll_comm *comm = l->comm;
	struct coll_task *task;
	int err;

	spin_lock(&comm->lock);
	task = coll_xhost_task(comm, le64_to_cpu(m->hdr.seq));
	if (!task && le64_to_cpu(m->hdr.seq) < comm->next_task_seq) {
		/*
		 * A collective that ended here: one that failed (the peer's
		 * READY or ABORT crossed ours), as no frame follows the end
		 * of one that succeeded.  Nothing left to do with it.
		 */
		spin_unlock(&comm->lock);
		coll_msg_free(m);
		return 0;
	}
	if (!task) {
		err = coll_xhost_stash(comm, l->host, m);
		spin_unlock(&comm->lock);
		if (err)
			coll_msg_free(m);
		return err;
	}
	spin_unlock(&comm->lock);
	err = handle(task, l->host, m);
	coll_task_put(task);
	return err;
}

/**
 * coll_xhost_on_ready() - a peer's READY arrived
 * @l: the link it came on
 * @m: the frame; consumed
 *
 * Return: 0 or -EPROTO.
 */
int coll_xhost_on_ready(struct coll_link *l, struct coll_msg *m)
{
	return coll_xhost_route(l, m, coll_xhost_ready);
}

/**
 * coll_xhost_on_abort() - a peer failed a collective
 * @l: the link it came on
 * @m: the frame; consumed
 *
 * Return: 0 or -EPROTO.
 */
int coll_xhost_on_abort(struct coll_link *l, struct coll_msg *m)
{
	/* checked before it is kept for a collective not there yet */
	if (m->len || m->hdr.round ||
	    !coll_link_errno_ok(le64_to_cpu(m->hdr.arg))) {
		coll_msg_free(m);
		return -EPROTO;
	}
	return coll_xhost_route(l, m, coll_xhost_abort);
}

/**
 * coll_xhost_adopt_early() - a task was created: take the frames that came
 * for it before it existed
 * @task: the new task, not yet visible to anyone else
 *
 * Locks: comm->lock (the caller publishes the task under it).
 */
void coll_xhost_adopt_early(struct coll_task *task)
{
	struct coll_comm *comm = task->comm;
	struct coll_msg *m, *next;
	bool keep;
	u32 h;

	lockdep_assert_held(&comm->lock);
	comm->next_task_seq = task->seq + 1;
	for (h = 0; h < comm->hosts->nhosts; h++) {
		list_for_each_entry_safe(m, next, &comm->early[h], node) {
			if (le64_to_cpu(m->hdr.seq) != task->seq)
				continue;
			list_del_init(&m->node);
			if (m->hdr.type == COLL_MSG_ABORT) {
				/* not yet visible: no lock needed */
				task->xt->peer[h].abort_err =
					-(int)le64_to_cpu(m->hdr.arg);
				WRITE_ONCE(task->status,
					   task->status ?:
					   task->xt->peer[h].abort_err);
				coll_msg_free(m);
			} else {
				spin_lock(&task->lock);
				/* validated when the task starts */
				if (coll_xhost_file(task, h, m, &keep))
					keep = false;
				spin_unlock(&task->lock);
				if (!keep)
					coll_msg_free(m);
			}
		}
	}
}

/**
 * coll_xhost_heard_from() - have all the ranks of @host called the collective?
 * @task: a task in flight
 * @host: a peer host
 *
 * A host sends READY(0) once every one of its ranks has called the
 * collective (its plan exists), so until it has come, the ranks of @host
 * are the ones a hung collective waits for (which of them, that host
 * knows: collctl op show there).
 *
 * Locks: takes task->lock (under comm->lock, as coll_xhost_heard_last()).
 */
bool coll_xhost_heard_from(struct coll_task *task, u32 host)
{
	struct coll_xtask *xt = task->xt;
	bool heard;

	if (!xt)
		return true;
	spin_lock(&task->lock);
	heard = xt->peer[host].ready > 0;
	spin_unlock(&task->lock);
	return heard;
}

/**
 * coll_xhost_heard_last() - does the task need nothing more from @host?
 * @task: a task in flight
 * @host: a peer host
 *
 * True once this host has finished every round (and said so) and the
 * peer's READY for the end has come: what is left is the other peers'
 * last READY, no read and no frame from @host.
 *
 * Locks: takes task->lock (under comm->lock, as coll_xhost_adopt_early()).
 */
bool coll_xhost_heard_last(struct coll_task *task, u32 host)
{
	struct coll_xtask *xt = task->xt;
	bool last;

	if (!xt)
		return false;
	spin_lock(&task->lock);
	last = xt->started && !task->status &&
	       xt->sent > task->sched->nrounds &&
	       xt->peer[host].ready > task->sched->nrounds;
	spin_unlock(&task->lock);
	return last;
}

/* ---- the task's life ----------------------------------------------------------------- */

/*
 * Could a peer have to read rather than be sent what it needs?  Not if all
 * this host's buffers together fit the smallest eager limit of its links.
 */
static bool coll_xhost_granting(struct coll_task *task)
{
	struct coll_comm *comm = task->comm;
	u64 bytes = 0, limit = U64_MAX;
	u32 r, b, h;

	for (r = 0; r < task->nranks; r++)
		for (b = 0; task->sub[r] && b < 2; b++)
			bytes += coll_sched_buf_elems(task->desc.prim,
						      task->nranks,
						      task->desc.root, r, b,
						      task->desc.count) *
				 task->esize;
	for (h = 0; h < comm->hosts->nhosts; h++) {
		struct coll_link *l = coll_xhost_link(comm, h);

		if (!l)
			continue;
		limit = min_t(u64, limit, coll_xlimit(l));
		coll_link_put(l);
	}
	return bytes > limit;
}

/**
 * coll_xhost_start() - the plan exists: tell the peers, maybe open round 0
 * @task: a RUNNING task spanning hosts (round 0 closed)
 */
void coll_xhost_start(struct coll_task *task)
{
	struct coll_xtask *xt = task->xt;
	u32 self = task->comm->hosts->self, h;
	int err = 0;

	coll_xhost_desc(task, &xt->desc);
	xt->granting = coll_xhost_granting(task);
	/*
	 * Sent before sending: a peer may answer READY(0) with READY(1) while
	 * this host is still telling the others.
	 */
	spin_lock(&task->lock);
	xt->sent = 1;
	xt->started = true;
	spin_unlock(&task->lock);
	for (h = 0; h < xt->nhosts && !err; h++)
		if (h != self)
			err = coll_xhost_send_ready(task, h, 0);
	if (err) {
		coll_xhost_failed(task, err);
		return;
	}
	/* Only now may round 0 open: later READYs queue behind these. */
	spin_lock(&task->lock);
	xt->queued = 1;
	spin_unlock(&task->lock);
	/* READY(0)s that came before the plan existed */
	for (h = 0; h < xt->nhosts; h++) {
		if (h == self)
			continue;
		err = coll_xhost_check_slot(task, h, 0);
		if (err == -EPROTO) {
			coll_xhost_link_fail(task->comm, h,
					     "a READY that does not fit");
			return;
		}
		if (err) {
			coll_xhost_failed(task, err);
			return;
		}
	}
	coll_xhost_try_open(task);
}

/**
 * coll_xhost_finished() - this host finished round @round
 * @task: the task
 * @round: the round just finished
 */
void coll_xhost_finished(struct coll_task *task, u32 round)
{
	struct coll_xtask *xt = task->xt;
	u32 self = task->comm->hosts->self, h, next = round + 1;
	int err = 0;

	/* Sent before sending, as in coll_xhost_start(). */
	spin_lock(&task->lock);
	xt->sent = next + 1;
	spin_unlock(&task->lock);
	for (h = 0; h < xt->nhosts && !err; h++)
		if (h != self)
			err = coll_xhost_send_ready(task, h, next);
	if (err) {
		coll_xhost_failed(task, err);
		return;
	}
	spin_lock(&task->lock);
	xt->queued = next + 1;
	spin_unlock(&task->lock);
	coll_xhost_try_open(task);
}

/**
 * coll_xhost_failed() - the collective failed here: tell the peers
 * @task: the task
 * @err: what it fails with on every host
 */
void coll_xhost_failed(struct coll_task *task, int err)
{
	bool send;

	/* once: a peer's ABORT echoed back would bounce between hosts */
	spin_lock(&task->lock);
	send = !task->xt->abort_sent;
	task->xt->abort_sent = true;
	spin_unlock(&task->lock);
	if (send)
		coll_xhost_send_abort(task, err);
	coll_run_fail(task, err);
}

/**
 * coll_xhost_heard_all() - has every peer host had its say on the task?
 * @task: a task across hosts
 *
 * Every peer sent its READY(0) or its ABORT for it (or the communicator is
 * dead).  A collective that failed here ends only then: until a peer has
 * created it, that peer keeps the first frames of only COLL_XHOST_AHEAD
 * collectives past its last (coll_xhost_stash()), so a host whose
 * collectives fail at once (ranks that disagree) must not run further
 * ahead; and the ranks of a collective that fails learn so together, as
 * with one that succeeds.
 *
 * Locks: task->lock.
 */
bool coll_xhost_heard_all(struct coll_task *task)
{
	struct coll_xtask *xt = task->xt;
	u32 h;

	lockdep_assert_held(&task->lock);
	if (!xt || READ_ONCE(task->comm->dead))
		return true;
	for (h = 0; h < xt->nhosts; h++)
		if (h != task->comm->hosts->self && !xt->peer[h].ready &&
		    !xt->peer[h].abort_err)
			return false;
	return true;
}

/* ---- remote data ------------------------------------------------------------------------ */

/* The eager bytes for a place, or NULL. */
static const void *coll_xhost_eager(struct coll_xslot *sl,
				    const struct coll_place *p, u64 off,
				    u64 len)
{
	u32 lo = 0, hi = sl->nseg;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		const struct coll_xseg *sg = &sl->seg[mid];

		if (sg->rank < p->rank ||
		    (sg->rank == p->rank && (sg->buf < p->buf ||
		     (sg->buf == p->buf && sg->off + sg->len <= off))))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == sl->nseg)
		return NULL;
	if (sl->seg[lo].rank != p->rank || sl->seg[lo].buf != p->buf ||
	    off < sl->seg[lo].off ||
	    off + len > sl->seg[lo].off + sl->seg[lo].len)
		return NULL;
	return sl->msg->data + sl->data_off + sl->seg[lo].at +
	       (off - sl->seg[lo].off);
}

static bool coll_rread_done(struct coll_rread *rr)
{
	/* pairs with smp_store_release() in coll_rread_complete() */
	return smp_load_acquire(&rr->done);
}

/**
 * coll_xhost_fetch() - the remote sources of a chunk, in kernel memory
 * @task: the task, in the chunk's round
 * @ch: the chunk (its elements must fit COLL_XSTAGE_MAX per remote source)
 * @src: per source, NULL (local) or where its elements are
 * @staging: kernel memory this call allocated for reads, to kvfree()
 * @staging_len: its size
 *
 * Eager data is used in place; the rest is read from the peers (all at
 * once) and waited for.  Return: 0 or -errno (the task then fails).
 */
int coll_xhost_fetch(struct coll_task *task, const struct coll_chunk *ch,
		     const void **src, void **staging, size_t *staging_len)
{
	const struct coll_sched *s = task->sched;
	const struct coll_hosts *hs = task->comm->hosts;
	const struct coll_step *st = ch->step;
	u32 round = st->round, j, nread = 0, k, nr;
	u64 len = ch->n * task->esize;
	struct coll_rread *rr = NULL;
	struct coll_place p;
	u8 *stage;
	int err = 0;

	*staging = NULL;
	*staging_len = 0;
	for (j = 0; j < st->nsrc; j++) {
		coll_step_src(s, st, ch->a, ch->b, j, &p);
		src[j] = NULL;
		if (hs->rank_host[p.rank] == hs->self)
			continue;
		{
			struct coll_xslot *sl =
				&task->xt->peer[hs->rank_host[p.rank]].slot[round & 1];

			if (sl->eager && sl->round == round) {
				src[j] = coll_xhost_eager(sl, &p,
							  (p.off + ch->elem) *
							  task->esize, len);
				if (!src[j])
					return -EPROTO;
				continue;
			}
		}
		nread++;
	}
	if (!nread)
		return 0;

	stage = kvmalloc(nread * len, GFP_KERNEL | __GFP_NOWARN);
	/* a piece spans at most a few grants (COLL_XPIECES) */
	rr = kcalloc(nread * COLL_XPIECES, sizeof(*rr), GFP_KERNEL);
	if (!stage || !rr) {
		kvfree(stage);
		kfree(rr);
		return -ENOMEM;
	}
	for (j = 0, k = 0, nr = 0; j < st->nsrc; j++) {
		u32 host;
		u64 off, left;
		u8 *sink;
		struct coll_link *l;

		coll_step_src(s, st, ch->a, ch->b, j, &p);
		host = hs->rank_host[p.rank];
		if (src[j] || host == hs->self)
			continue;
		sink = stage + (u64)k++ * len;
		src[j] = sink;
		off = (p.off + ch->elem) * task->esize;
		l = coll_xhost_link(task->comm, host);
		for (left = len; left; ) {
			struct coll_rread *x = &rr[nr];
			u64 n = left;

			*x = (struct coll_rread){
				.seq = task->seq,
				.rank = p.rank,
				.buf = p.buf,
				.off = off,
				.sink = sink,
				.wq = &task->wq,
			};
			INIT_LIST_HEAD(&x->node);
			if (l && l->ops->grant) {
				const struct coll_wire_export *e;

				e = coll_xhost_export_find(&task->xt->peer[host],
							   p.rank, p.buf, off);
				if (!e || nr + 1 == (u32)(nread * COLL_XPIECES)) {
					err = -EPROTO;	/* no grant covers it */
					break;
				}
				n = min(left, le64_to_cpu(e->off) +
					le64_to_cpu(e->len) - off);
				x->rkey = le32_to_cpu(e->rkey);
				x->raddr = le64_to_cpu(e->addr) +
					   (off - le64_to_cpu(e->off));
			}
			x->len = n;
			nr++;
			if (!l || l->ops->read(l, x))
				coll_rread_complete(x, -ECONNRESET);
			off += n;
			sink += n;
			left -= n;
		}
		if (l)
			coll_link_put(l);
		if (err)
			break;
	}
	/* The sinks are ours: wait for every read, even after a failure. */
	for (k = 0; k < nr; k++) {
		wait_event(task->wq, coll_rread_done(&rr[k]));
		if (!err && rr[k].status)
			err = rr[k].status;
	}
	kfree(rr);
	*staging = stage;
	*staging_len = nread * len;
	return err;
}

/**
 * coll_xhost_serve_read() - a peer asks for bytes of one of our buffers
 * @l: its link
 * @seq: the collective
 * @rd: what it asks for
 * @task: set to the task, with a reference that keeps the pages pinned
 * @ob: set to the buffer
 * @pos: set to the byte position in @ob
 *
 * Only the buffers of a collective in flight here, of a rank of this host,
 * in a round this host has announced, within the buffer.  Return: 0, or
 * -EPROTO for a request no honest peer sends.
 */
int coll_xhost_serve_read(struct coll_link *l, u64 seq,
			  const struct coll_wire_read *rd,
			  struct coll_task **task, struct coll_obuf **ob,
			  u64 *pos)
{
	struct coll_comm *comm = l->comm;
	u32 rank = le32_to_cpu(rd->rank), buf = le32_to_cpu(rd->buf);
	u64 off = le64_to_cpu(rd->off), len = le64_to_cpu(rd->len), end;
	struct coll_sub *sub;
	struct coll_task *t;

	spin_lock(&comm->lock);
	t = coll_xhost_task(comm, seq);
	spin_unlock(&comm->lock);
	if (!t)
		return -EPROTO;
	if (rank >= t->nranks || buf > COLL_SBUF_RECV || !len ||
	    len > COLL_XSTAGE_MAX || !coll_xhost_local(t, rank) ||
	    coll_task_state(t) != COLL_TASK_RUNNING || !t->xt ||
	    !READ_ONCE(t->xt->started))
		goto err_put;
	sub = t->sub[rank];
	if (!sub || !sub->ob[buf] ||
	    check_add_overflow(off, len, &end) ||
	    check_add_overflow(end, sub->base[buf], &end) ||
	    end > sub->ob[buf]->len)
		goto err_put;
	*task = t;
	*ob = sub->ob[buf];
	*pos = sub->base[buf] + off;
	return 0;

err_put:
	coll_task_put(t);
	return -EPROTO;
}
