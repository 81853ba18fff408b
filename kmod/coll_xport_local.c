// SPDX-License-Identifier: GPL-2.0
/*
 * The local transport: data movement between the pinned pages of ranks of
 * this host, by a single copy (no staging).  A chunk is walked in windows
 * of at most COLL_WINDOW_MAX bytes that lie within one page of every buffer
 * that is not vmapped (coll_obuf.c maps pinned buffers of two pages or
 * more contiguously) and within one piece of a composite; a page is mapped
 * with kmap_local_page().  An element that straddles a page boundary in
 * some buffer goes through the stack.  Reductions run inside
 * coll_fpu_begin() and kernel_fpu_end() when the kernel needs the FPU, one
 * section per COLL_FPU_SPAN bytes (a window no longer than that).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/mm.h>
#include <asm/fpu/api.h>

#include "coll_loc.h"

/*
 * A place in a rank's buffer: the obuf and a byte position in it; or, for a
 * source fetched from another host, kernel memory (lin) holding the chunk.
 */
struct coll_cur {
	struct coll_obuf *ob;
	u64 pos;
	u8 *lin;
	u32 *hint;	/* a composite's piece last found, or NULL */
};

static struct coll_cur coll_cur_of(const struct coll_task *task,
				   const struct coll_place *p, u64 elem)
{
	const struct coll_sub *sub = task->sub[p->rank];

	return (struct coll_cur){
		.ob = sub->ob[p->buf],
		.pos = sub->base[p->buf] + (p->off + elem) * task->esize,
	};
}

static bool coll_oseg_has(const struct coll_obuf *ob, u32 i, u64 pos)
{
	return i < ob->nsegs && ob->segs[i].at <= pos &&
	       pos - ob->segs[i].at < ob->segs[i].ob->len;
}

/*
 * The obuf that holds byte @pos of @c's buffer, and @pos in it: the buffer
 * itself, or the piece of a composite (a fused group's buffers, end to
 * end): the one found last or the next (a chunk walks forward), else found
 * by bisection.
 */
static const struct coll_obuf *coll_cur_piece(const struct coll_cur *c,
					      u64 *pos)
{
	const struct coll_obuf *ob = c->ob;
	u32 lo = c->hint ? *c->hint : 0, hi, mid;

	if (!ob->segs)
		return ob;
	if (!coll_oseg_has(ob, lo, *pos)) {
		if (coll_oseg_has(ob, lo + 1, *pos)) {
			lo++;
		} else {
			lo = 0;
			hi = ob->nsegs;
			while (hi - lo > 1) {
				mid = lo + (hi - lo) / 2;
				if (ob->segs[mid].at <= *pos)
					lo = mid;
				else
					hi = mid;
			}
		}
		if (c->hint)
			*c->hint = lo;
	}
	*pos -= ob->segs[lo].at;
	return ob->segs[lo].ob;
}

/*
 * Map @c's buffer at @done; in *@left the bytes from there within one page
 * of it (all the rest of it if vmapped), and one piece.
 */
static void *coll_cur_map_left(const struct coll_cur *c, u64 done,
			       unsigned int *left)
{
	const struct coll_obuf *ob;
	u64 pos = c->pos + done, at;

	if (c->lin) {
		*left = UINT_MAX;
		return c->lin + done;
	}
	ob = coll_cur_piece(c, &pos);
	at = ob->first_off + pos;
	if (ob->vaddr) {
		*left = min_t(u64, ob->len - pos, UINT_MAX);
		return ob->vaddr + at;
	}
	*left = min_t(u64, PAGE_SIZE - offset_in_page(at), ob->len - pos);
	return kmap_local_page(coll_obuf_page(ob, at >> PAGE_SHIFT)) +
	       offset_in_page(at);
}

static void coll_cur_unmap(const struct coll_cur *c, void *p)
{
	if (!c->lin && !is_vmalloc_addr(p))
		kunmap_local(p);
}

/* Bytes from @done on within one window of the buffer (as mapped). */
static unsigned int coll_cur_page_left(const struct coll_cur *c, u64 done)
{
	unsigned int left;
	void *p = coll_cur_map_left(c, done, &left);

	coll_cur_unmap(c, p);
	return left;
}

static void *coll_cur_map(const struct coll_cur *c, u64 done)
{
	unsigned int left;

	return coll_cur_map_left(c, done, &left);
}

/* Byte copies for an element that straddles a page boundary. */
static void coll_cur_read(const struct coll_cur *c, u64 done, u8 *buf,
			  unsigned int len)
{
	while (len) {
		unsigned int n = min(len, coll_cur_page_left(c, done));
		u8 *p = coll_cur_map(c, done);

		memcpy(buf, p, n);
		coll_cur_unmap(c, p);
		buf += n;
		done += n;
		len -= n;
	}
}

static void coll_cur_write(const struct coll_cur *c, u64 done, const u8 *buf,
			   unsigned int len)
{
	while (len) {
		unsigned int n = min(len, coll_cur_page_left(c, done));
		u8 *p = coll_cur_map(c, done);

		memcpy(p, buf, n);
		coll_cur_unmap(c, p);
		buf += n;
		done += n;
		len -= n;
	}
}

static void coll_swap_bytes(u8 *a, u8 *b, unsigned int len)
{
	u8 tmp[128];

	while (len) {
		unsigned int n = min_t(unsigned int, len, sizeof(tmp));

		memcpy(tmp, a, n);
		memcpy(a, b, n);
		memcpy(b, tmp, n);
		a += n;
		b += n;
		len -= n;
	}
}

/*
 * Bytes reduced in one FPU section, over as many windows as that takes:
 * a section per window cost as much as a 1 KiB window's sum under TCG
 * (kernel_fpu_begin() and two LDMXCSRs: a fused group's pieces make such
 * windows), while preemption stays off for no longer than a few
 * microseconds on hardware.
 */
#define COLL_FPU_SPAN	(16 * 1024U)

/*
 * The longest window: copies of vmapped buffers in windows of 16 pages
 * (their per-window cost then a few per cent of the copy's under TCG);
 * chunks are sized for the cache already.
 */
#define COLL_WINDOW_MAX	(64 * 1024U)

/* Sources of a chunk resolved once, before its windows (the rest each time). */
#define COLL_RANGE_SRCS 8

/* One chunk being run: its step, instance and the element it starts at. */
struct coll_range {
	const struct coll_task *task;
	const struct coll_chunk *ch;
	const void *const *remote;
	struct coll_cur dst;
	struct coll_cur src[COLL_RANGE_SRCS];
	u32 nsrc;		/* of them resolved */
	u32 hint[COLL_RANGE_SRCS + 1];	/* theirs (coll_cur_piece()) */
	coll_reduce_fn fn;
	bool fpu;
	bool avg;
};

static struct coll_cur coll_range_resolve(const struct coll_range *r, u32 j)
{
	struct coll_place p;

	if (r->remote && r->remote[j])
		return (struct coll_cur){ .lin = (u8 *)r->remote[j] };
	coll_step_src(r->task->sched, r->ch->step, r->ch->a, r->ch->b, j, &p);
	return coll_cur_of(r->task, &p, r->ch->elem);
}

static struct coll_cur coll_range_src(const struct coll_range *r, u32 j)
{
	return j < r->nsrc ? r->src[j] : coll_range_resolve(r, j);
}

/* One element that straddles a page in some buffer, through the stack. */
static noinline void coll_range_bounce(const struct coll_range *r, u64 done)
{
	const struct coll_step *st = r->ch->step;
	unsigned int es = r->task->esize;
	struct coll_cur s;
	u8 d[8], b[8];
	u32 j;

	s = coll_range_src(r, 0);
	coll_cur_read(&s, done, d, es);
	switch (st->kind) {
	case COLL_STEP_COPY:
		break;
	case COLL_STEP_SWAP:
		coll_cur_read(&r->dst, done, b, es);
		coll_cur_write(&s, done, b, es);
		break;
	case COLL_STEP_REDUCE:
		for (j = 1; j < st->nsrc; j++) {
			s = coll_range_src(r, j);
			coll_cur_read(&s, done, b, es);
			r->fn(d, d, b, 1);
		}
		if (r->avg)
			coll_reduce_div(r->task->desc.dtype, d, 1,
					r->task->nranks);
		break;
	}
	coll_cur_write(&r->dst, done, d, es);
}

/* A window that lies within one page of every buffer involved. */
static noinline void coll_range_window(const struct coll_range *r,
				       u64 done, unsigned int len)
{
	const struct coll_step *st = r->ch->step;
	size_t n = len / r->task->esize;
	struct coll_cur s, t;
	void *d, *a, *b;
	u32 j;

	d = coll_cur_map(&r->dst, done);
	s = coll_range_src(r, 0);
	a = coll_cur_map(&s, done);
	switch (st->kind) {
	case COLL_STEP_COPY:
		if (d != a)	/* a composite's piece in place */
			coll_copy(d, a, len);
		coll_cur_unmap(&s, a);
		break;
	case COLL_STEP_SWAP:
		coll_swap_bytes(d, a, len);
		coll_cur_unmap(&s, a);
		break;
	case COLL_STEP_REDUCE:
		t = coll_range_src(r, 1);
		b = coll_cur_map(&t, done);
		r->fn(d, a, b, n);
		coll_cur_unmap(&t, b);
		coll_cur_unmap(&s, a);
		for (j = 2; j < st->nsrc; j++) {
			t = coll_range_src(r, j);
			b = coll_cur_map(&t, done);
			r->fn(d, d, b, n);
			coll_cur_unmap(&t, b);
		}
		if (r->avg)
			coll_reduce_div(r->task->desc.dtype, d, n,
					r->task->nranks);
		break;
	}
	coll_cur_unmap(&r->dst, d);
}

/*
 * The next window of a chunk whose sources are all resolved (at most
 * COLL_RANGE_SRCS): each buffer found and mapped once, the window as long
 * as every one allows, at most @len.  Return: its bytes, or 0 if an
 * element straddles a page boundary there (nothing done).
 */
static unsigned int coll_range_step(const struct coll_range *r, u64 done,
				    unsigned int len)
{
	const struct coll_step *st = r->ch->step;
	unsigned int es = r->task->esize, left;
	void *p[COLL_RANGE_SRCS + 1];
	u32 j, ns = st->nsrc;
	size_t n;

	p[0] = coll_cur_map_left(&r->dst, done, &left);
	len = min(len, left);
	for (j = 0; j < ns; j++) {
		p[j + 1] = coll_cur_map_left(&r->src[j], done, &left);
		len = min(len, left);
	}
	len -= len % es;
	n = len / es;
	if (n) {
		switch (st->kind) {
		case COLL_STEP_COPY:
			if (p[0] != p[1])	/* a composite's piece in place */
				coll_copy(p[0], p[1], len);
			break;
		case COLL_STEP_SWAP:
			coll_swap_bytes(p[0], p[1], len);
			break;
		case COLL_STEP_REDUCE:
			r->fn(p[0], p[1], p[2], n);
			for (j = 2; j < ns; j++)
				r->fn(p[0], p[0], p[j + 1], n);
			if (r->avg)
				coll_reduce_div(r->task->desc.dtype, p[0], n,
						r->task->nranks);
			break;
		}
	}
	for (j = ns; j > 0; j--)
		coll_cur_unmap(&r->src[j - 1], p[j]);
	coll_cur_unmap(&r->dst, p[0]);
	return len;
}

/* Elements [ch->elem, ch->elem + ch->n) of one instance. */
static void coll_xport_local_chunk(struct coll_task *task,
				   const struct coll_chunk *ch,
				   const void *const *remote)
{
	const struct coll_step *st = ch->step;
	struct coll_range r = { .task = task, .ch = ch, .remote = remote };
	unsigned int es = task->esize, fpu_left = 0;
	u64 done = 0, total = ch->n * es;
	struct coll_place p;
	struct coll_cur s;
	u32 j;

	coll_step_inst(task->sched, st, ch->a, ch->b, &p);
	r.dst = coll_cur_of(task, &p, ch->elem);
	r.dst.hint = &r.hint[COLL_RANGE_SRCS];
	for (j = 0; j < min_t(u32, st->nsrc, COLL_RANGE_SRCS); j++) {
		r.src[j] = coll_range_resolve(&r, j);
		r.src[j].hint = &r.hint[j];
	}
	r.nsrc = j;
	s = coll_range_src(&r, 0);
	if (st->kind == COLL_STEP_COPY && !s.lin && s.ob == r.dst.ob &&
	    s.pos == r.dst.pos)
		return;		/* in place: already there */
	if (st->kind == COLL_STEP_REDUCE) {
		r.fn = coll_reduce_get(task->desc.dtype, task->desc.redop,
				       &r.fpu);
		r.avg = task->desc.redop == COLL_AVG &&
			(st->flags & COLL_STEP_F_AVG);
	}

	while (done < total) {
		unsigned int len = min_t(u64, total - done, COLL_WINDOW_MAX);

		if (r.fpu && !fpu_left) {
			coll_fpu_begin();
			fpu_left = COLL_FPU_SPAN;
		}
		if (r.fpu)	/* a multiple of the element, as every window */
			len = min(len, fpu_left);
		if (st->nsrc <= COLL_RANGE_SRCS) {
			len = coll_range_step(&r, done, len);
		} else {
			len = min(len, coll_cur_page_left(&r.dst, done));
			for (j = 0; j < st->nsrc; j++) {
				s = coll_range_src(&r, j);
				len = min(len, coll_cur_page_left(&s, done));
			}
			len -= len % es;
			if (len)
				coll_range_window(&r, done, len);
		}
		if (!len)
			coll_range_bounce(&r, done);
		done += len ? len : es;
		fpu_left -= min(fpu_left, len ? len : es);
		if (fpu_left && done < total)
			continue;
		if (r.fpu)
			kernel_fpu_end();
		fpu_left = 0;
	}
}

const struct coll_xport_ops coll_xport_local = {
	.name = "local",
	.chunk = coll_xport_local_chunk,
};
