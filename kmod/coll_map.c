// SPDX-License-Identifier: GPL-2.0
/*
 * Mapped slots: the pages through which the ranks of a communicator of one
 * host run their small blocking collectives in user space.
 *
 * The protocol is user space's (libcollective; the layout is in the uapi
 * header, "Mapped slots"): each rank copies its input into a slot, then
 * publishes a sequence number in its own line, reads what it needs and
 * publishes that it is done.  The kernel's part is what user space cannot
 * do for itself:
 *
 * - the memory: zeroed pages, charged to the memory cgroup of the first
 *   member that asks (COLL_COMM_MAP), mapped only into members' address
 *   spaces (mmap() on a descriptor that holds the membership), and kept
 *   alive by their mappings after the communicator is gone;
 * - the membership: a rank that leaves, dies or is killed kills the
 *   communicator (coll_comm_end()), and coll_map_kill() then marks the
 *   header dead and wakes every sleeper, so that no rank waits for a peer
 *   that will never come;
 * - sleeping: a rank that has polled long enough sleeps in COLL_MAP_WAIT
 *   until the lines it watches reach a number, counted in the header's
 *   sleepers word; whoever publishes a number and then sees that word
 *   non-zero calls COLL_MAP_WAKE (a futex's protocol: the sleeper counts
 *   itself, then checks; the publisher publishes, then looks), which wakes
 *   only the sleepers whose number has come (coll_map_wake_fn()).
 *
 * Nothing in the mapped pages is trusted: any member may write any of it.
 * The kernel only reads the ranks' lines there (plain loads, compared with
 * the number waited for), counts its sleepers there, and writes the
 * header's state; it decides nothing else from them and no kernel pointer
 * lives there.  Each sleep is bounded (COLL_MAP_RECHECK), so a sleepers
 * word that a member clobbered costs a late wake-up, never a hang.
 *
 * Locks: comm->lock publishes comm->map once (never changed until the
 * communicator is freed) and orders it against comm->dead: coll_map_kill()
 * runs after the communicator is marked dead and sees any map published
 * before; one published after sees dead and is refused.  map->wq is the
 * sleepers' wait queue; its lock is held (interrupts off) while the wake
 * function reads the lines.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/wait.h>

#include "coll_loc.h"
#include "coll_trace.h"

/* mmap() offsets: (handle + 1) << COLL_MAP_OFFSET_SHIFT */
#define COLL_MAP_OFFSET_SHIFT	31
/* A sleeper looks again this often even if nobody wakes it. */
#define COLL_MAP_RECHECK	HZ

/* vm_flags became read-only with its helpers (6.3) */
static inline void coll_vm_flags_mod(struct vm_area_struct *vma,
				     unsigned long set, unsigned long clear)
{
#ifdef COLL_HAVE_VM_FLAGS_MOD
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

struct coll_map {
	struct page **pages;
	u32 npages;
	u32 nranks;
	u32 nslots;
	u32 slot_bytes;
	u32 ctl_off, desc_off, data_off;
	struct coll_map_hdr *hdr;	/* page 0, in the kernel's map */
	wait_queue_head_t wq;		/* COLL_MAP_WAIT sleepers */
};

/*
 * A slot's bytes: module parameter map_bytes, within its cap, rounded to
 * whole lines, and a page and a line more (0 if map_bytes is less than a
 * line: no slots).  The extra makes the slots' stride an odd number of
 * pages and lines, so that the slots' first lines, which every small
 * collective touches, fall in different TLB and cache sets: with a stride
 * of 64 KiB the 64 slots shared 16 sets of QEMU's direct-mapped TLB (2
 * ranks, 8 bytes, one boot, 7 rounds: Broadcast 1.41 us with 16 slots
 * against 1.91 with 64, AllReduce 2.48 against 2.87, AllGather 2.07
 * against 2.40; Barrier, which has no data, 1.64 and 1.68), and in a
 * cache of 4 KiB sets every first line would share one set.
 */
u32 coll_map_slot_bytes(void)
{
	u32 b = min(READ_ONCE(coll_map_bytes), COLL_MAP_MAX_BYTES);

	b = round_down(b, COLL_MAP_LINE);
	return b ? b + PAGE_SIZE + COLL_MAP_LINE : 0;
}

/**
 * coll_map_nslots() - how many slots a communicator gets
 * @nlocal: its ranks on this host
 *
 * Module parameter map_slots, clamped to its range; 0 (the default)
 * chooses: COLL_MAP_SLOTS_SHARED when the ranks outnumber the online CPUs,
 * so that a root may run far ahead of ranks waiting for a CPU, else
 * COLL_MAP_SLOTS_OWN, whose smaller ring of slots stays in the caches and
 * TLB (see coll_main.c for the figures).
 *
 * Return: the count, COLL_MAP_MIN_SLOTS to COLL_MAP_MAX_SLOTS.
 */
u32 coll_map_nslots(u32 nlocal)
{
	u32 v = READ_ONCE(coll_map_slots);

	if (!v)
		v = nlocal > num_online_cpus() ? COLL_MAP_SLOTS_SHARED :
						 COLL_MAP_SLOTS_OWN;
	return clamp_t(u32, v, COLL_MAP_MIN_SLOTS, COLL_MAP_MAX_SLOTS);
}

/*
 * Bytes of every rank's input of a collective in the slots: what must fit
 * in a slot for it to go that way (the rule of the uapi header).
 */
static u64 coll_map_footprint(const struct coll_op *arg, u32 n)
{
	u64 c = arg->count * coll_dtype_size(arg->dtype);

	switch (arg->prim) {
	case COLL_BROADCAST:
		return c;
	case COLL_REDUCESCATTER:
	case COLL_ALLTOALL:
		return c * n * n;
	case COLL_BARRIER:
		return 0;
	default:
		return c * n;
	}
}

/**
 * coll_map_takes() - is a blocking call the mapped slots' own?
 * @comm: its communicator
 * @rank: the caller's rank
 * @arg: the call, checked by coll_op_check() and its root by the caller
 *
 * Such a call's peers run it in user space: refused through the ioctl.
 * Needs no lock (comm->map_bytes is fixed when the communicator is made).
 *
 * Return: 0, -EXDEV if the slots take it, or coll_op_layout()'s error (a
 * bad layout says so first, as anywhere else).
 */
int coll_map_takes(struct coll_comm *comm, u32 rank,
		   const struct coll_op *arg)
{
	struct coll_layout lay;
	int ret;

	if (!comm->map_bytes || arg->algo != COLL_ALGO_AUTO)
		return 0;
	ret = coll_op_layout(arg, comm->nranks, rank, &lay);
	if (ret)
		return ret;
	/* count <= COLL_MAX_BYTES, n <= COLL_MAX_RANKS: no overflow */
	return coll_map_footprint(arg, comm->nranks) <= comm->map_bytes ?
	       -EXDEV : 0;
}

static void coll_map_free_pages(struct coll_map *map, u32 n)
{
	while (n--)
		__free_page(map->pages[n]);
	coll_kvfree(map->pages, map->npages * sizeof(*map->pages));
}

/* The @nslots slots of a communicator of @n ranks, @slot_bytes each. */
static struct coll_map *coll_map_alloc(u32 n, u32 nslots, u32 slot_bytes,
				       u32 spin_ns)
{
	struct coll_map_hdr *hdr;
	struct coll_map *map;
	u64 bytes;
	u32 i;

	map = coll_kvzalloc(sizeof(*map));
	if (!map)
		return NULL;
	map->nranks = n;
	map->nslots = nslots;
	map->slot_bytes = slot_bytes;
	map->ctl_off = PAGE_SIZE;
	map->desc_off = PAGE_ALIGN(map->ctl_off + (u64)n * COLL_MAP_LINE);
	map->data_off = PAGE_ALIGN(map->desc_off + (u64)nslots * n *
				   sizeof(struct coll_map_desc));
	bytes = map->data_off + (u64)nslots * slot_bytes;
	map->npages = PAGE_ALIGN(bytes) >> PAGE_SHIFT;
	map->pages = coll_kvzalloc(map->npages * sizeof(*map->pages));
	if (!map->pages)
		goto err_free_map;
	for (i = 0; i < map->npages; i++) {
		map->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO |
					   __GFP_NOWARN);
		if (!map->pages[i])
			goto err_free_pages;
	}
	atomic64_add((u64)map->npages << PAGE_SHIFT, &coll_stats.kbytes);
	init_waitqueue_head(&map->wq);
	hdr = page_address(map->pages[0]);
	map->hdr = hdr;
	hdr->magic = COLL_MAP_MAGIC;
	hdr->version = COLL_MAP_VERSION;
	hdr->nranks = n;
	hdr->nslots = nslots;
	hdr->slot_bytes = slot_bytes;
	hdr->spin_ns = spin_ns;
	return map;

err_free_pages:
	coll_map_free_pages(map, i);
err_free_map:
	coll_kvfree(map, sizeof(*map));
	return NULL;
}

static void coll_map_put_pages(struct coll_map *map)
{
	atomic64_sub((u64)map->npages << PAGE_SHIFT, &coll_stats.kbytes);
	coll_map_free_pages(map, map->npages);
	coll_kvfree(map, sizeof(*map));
}

/**
 * coll_map_free() - the communicator is going: drop its slots
 * @comm: the communicator, unreferenced
 *
 * Pages still mapped somewhere live on until unmapped (the mappings hold
 * their own references).
 */
void coll_map_free(struct coll_comm *comm)
{
	if (comm->map)
		coll_map_put_pages(comm->map);
}

/* The map of a member's communicator, once made (else NULL). */
static struct coll_map *coll_map_of(struct coll_comm *comm)
{
	struct coll_map *map;

	spin_lock(&comm->lock);
	map = comm->map;
	spin_unlock(&comm->lock);
	return map;
}

/**
 * coll_map_kill() - the communicator died: tell the mapped slots
 * @comm: the communicator, marked dead
 *
 * Locks: takes comm->lock.
 */
void coll_map_kill(struct coll_comm *comm)
{
	struct coll_map *map;
	int err;

	spin_lock(&comm->lock);
	map = comm->map;
	err = comm->error;
	spin_unlock(&comm->lock);
	if (!map)
		return;
	WRITE_ONCE(map->hdr->error, err < 0 ? -err : ECONNRESET);
	/* the errno, then the state: user space reads them the other way */
	smp_wmb();
	WRITE_ONCE(map->hdr->state, COLL_MAP_DEAD);
	trace_coll_map(comm, COLL_MAP_ALL, COLL_TRACE_MAP_KILL, 0, 0);
	wake_up_all(&map->wq);
}

/* COLL_COMM_MAP */
int coll_map_ioctl_map(struct coll_file *cf, struct coll_ucmd *ucmd)
{
	struct coll_comm_map *arg = ucmd->cmd;
	struct coll_map *map, *fresh;
	struct coll_member *m;
	struct coll_comm *comm;
	int ret = 0;

	if (arg->flags)
		return -EOPNOTSUPP;
	m = coll_member_get(cf, arg->comm);
	if (!m)
		return -ENOENT;
	comm = m->comm;
	if (!comm->map_bytes) {
		ret = -EOPNOTSUPP;
		goto out_put;
	}
	map = coll_map_of(comm);
	if (!map) {
		fresh = coll_map_alloc(comm->nranks, comm->map_slots,
				       comm->map_bytes, READ_ONCE(coll_spin_ns));
		if (!fresh) {
			ret = -ENOMEM;
			goto out_put;
		}
		spin_lock(&comm->lock);
		if (comm->dead)
			ret = -ECONNRESET;
		else if (!comm->map)
			swap(comm->map, fresh);
		map = comm->map;
		spin_unlock(&comm->lock);
		if (fresh)
			coll_map_put_pages(fresh);
		if (ret)
			goto out_put;
	}
	arg->out_nslots = map->nslots;
	arg->out_slot_bytes = map->slot_bytes;
	arg->out_ctl_offset = map->ctl_off;
	arg->out_desc_offset = map->desc_off;
	arg->out_data_offset = map->data_off;
	arg->out_offset = ((u64)arg->comm + 1) << COLL_MAP_OFFSET_SHIFT;
	arg->out_bytes = (u64)map->npages << PAGE_SHIFT;
	if (copy_to_user(ucmd->ubuf, arg,
			 min_t(u32, ucmd->usize, sizeof(*arg))))
		ret = -EFAULT;
out_put:
	coll_member_put(m);
	return ret;
}

/**
 * coll_map_mmap() - mmap() of a descriptor: a membership's mapped slots
 * @cf: the descriptor
 * @vma: the new mapping, at the offset COLL_COMM_MAP gave
 *
 * Locks: the caller (mmap) holds the mm's mmap_lock for writing.
 *
 * Return: 0, -EINVAL (another offset or length, no slots yet, not shared,
 * executable) or -ENOENT (the descriptor does not hold the membership).
 */
int coll_map_mmap(struct coll_file *cf, struct vm_area_struct *vma)
{
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 handle = off >> COLL_MAP_OFFSET_SHIFT;
	struct coll_member *m;
	struct coll_map *map;
	unsigned long n;
	int ret = -EINVAL;

	if (!handle || handle - 1 > U32_MAX ||
	    off & (BIT_ULL(COLL_MAP_OFFSET_SHIFT) - 1))
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED) || (vma->vm_flags & VM_EXEC))
		return -EINVAL;
	m = coll_member_get(cf, handle - 1);
	if (!m)
		return -ENOENT;
	map = coll_map_of(m->comm);
	if (!map || vma_pages(vma) != map->npages)
		goto out_put;
	coll_vm_flags_mod(vma, VM_DONTEXPAND | VM_DONTDUMP | VM_MIXEDMAP,
			  VM_MAYEXEC);
	n = map->npages;
	ret = vm_insert_pages(vma, vma->vm_start, map->pages, &n);
out_put:
	coll_member_put(m);
	return ret;
}

static struct coll_map_ctl *coll_map_line(struct coll_map *map, u32 r)
{
	u64 o = map->ctl_off + (u64)r * COLL_MAP_LINE;

	return page_address(map->pages[o >> PAGE_SHIFT]) + offset_in_page(o);
}

/**
 * coll_map_op_locked() - the collective of the mapped slots that waits
 * @comm: the communicator
 * @op: filled, if there is one
 *
 * The collective furthest on that a rank has arrived at while another has
 * not: what netlink's op-get shows.  From the mapped pages, so as the
 * ranks wrote it: a descriptor that does not validate shows as a Barrier.
 *
 * Locks: comm->lock.
 *
 * Return: true if there is one.
 */
bool coll_map_op_locked(struct coll_comm *comm, struct coll_map_op *op)
{
	struct coll_map *map = comm->map;
	const struct coll_map_desc *d = NULL;
	u64 seq = 0, at, t, o;
	u32 r, n, first = 0;

	lockdep_assert_held(&comm->lock);
	if (!map)
		return false;
	n = map->nranks;
	for (r = 0; r < n; r++)
		seq = max(seq, READ_ONCE(coll_map_line(map, r)->arrived));
	*op = (struct coll_map_op){ .map = map, .seq = seq };
	for (r = 0; r < n; r++) {
		struct coll_map_ctl *c = coll_map_line(map, r);

		at = READ_ONCE(c->arrived);
		if (at < seq)
			continue;
		if (!op->narrived++)
			first = r;
		t = READ_ONCE(c->t_wait);
		if (t && (!op->t_wait || t < op->t_wait))
			op->t_wait = t;
	}
	if (!seq || op->narrived == n)
		return false;
	o = map->desc_off + ((seq % map->nslots) * n + first) *
			    sizeof(*d);
	d = page_address(map->pages[o >> PAGE_SHIFT]) + offset_in_page(o);
	op->prim = READ_ONCE(d->prim);
	at = READ_ONCE(d->dtype);
	if (op->prim >= COLL_PRIM_MAX || at >= COLL_DTYPE_MAX) {
		op->prim = COLL_BARRIER;
		return true;
	}
	at = min_t(u64, READ_ONCE(d->count), COLL_MAX_BYTES);
	if (op->prim != COLL_BARRIER)
		op->bytes = at * coll_dtype_size(READ_ONCE(d->dtype) %
						 COLL_DTYPE_MAX);
	return true;
}

/* Has @rank not arrived at @op's collective yet? */
bool coll_map_missing(const struct coll_map_op *op, u32 rank)
{
	return READ_ONCE(coll_map_line(op->map, rank)->arrived) < op->seq;
}

/* Have the lines of @rank (or every rank) reached @seq in field @what? */
static bool coll_map_reached(struct coll_map *map, u32 what, u32 rank,
			     u64 seq)
{
	u32 r = rank == COLL_MAP_ALL ? 0 : rank;
	u32 end = rank == COLL_MAP_ALL ? map->nranks : rank + 1;
	u64 at;

	for (; r < end; r++) {
		struct coll_map_ctl *c = coll_map_line(map, r);

		at = what == COLL_MAP_ARRIVED ? READ_ONCE(c->arrived) :
						 READ_ONCE(c->left);
		if (at < seq)
			return false;
	}
	return true;
}

static bool coll_map_cond(struct coll_comm *comm, struct coll_map *map,
			  const struct coll_map_wait *arg)
{
	return coll_map_reached(map, arg->what, arg->rank, arg->seq) ||
	       READ_ONCE(comm->dead);
}

/* The member and map of a COLL_MAP_WAIT or COLL_MAP_WAKE. */
static int coll_map_lookup(struct coll_file *cf, u32 handle,
			   struct coll_member **mp, struct coll_map **mapp)
{
	struct coll_member *m = coll_member_get(cf, handle);

	if (!m)
		return -ENOENT;
	*mapp = coll_map_of(m->comm);
	if (!*mapp) {
		coll_member_put(m);
		return -EOPNOTSUPP;
	}
	*mp = m;
	return 0;
}

/* A sleeper of COLL_MAP_WAIT on map->wq, with what it waits for. */
struct coll_map_sleeper {
	struct wait_queue_entry wq;
	struct coll_comm *comm;
	struct coll_map *map;
	const struct coll_map_wait *arg;
};

/*
 * map->wq's wake function: a wake-up (COLL_MAP_WAKE, the death) reaches a
 * sleeper only once what it waits for is there, so that the publisher of
 * an unrelated number does not make it run (and, on a shared CPU, take
 * the CPU from the rank that works).
 *
 * Locks: map->wq's lock, interrupts off (reads only).
 */
static int coll_map_wake_fn(struct wait_queue_entry *wq, unsigned int mode,
			    int sync, void *key)
{
	struct coll_map_sleeper *s = container_of(wq, struct coll_map_sleeper,
						  wq);

	if (!coll_map_cond(s->comm, s->map, s->arg))
		return 0;
	return autoremove_wake_function(wq, mode, sync, key);
}

/*
 * Sleep on @map until coll_map_cond() or @t jiffies: what is left of @t,
 * 0 on timeout, or -EINTR on a fatal signal.  Counted in the header's
 * sleepers word from before its last look at the lines (set_current_state()
 * orders the two against the publisher's store-then-load).
 */
static long coll_map_sleep(struct coll_comm *comm, struct coll_map *map,
			   const struct coll_map_wait *arg, long t)
{
	atomic_t *sleepers = (atomic_t *)&map->hdr->sleepers;
	struct coll_map_sleeper s = {
		.comm = comm, .map = map, .arg = arg,
	};

	init_wait_entry(&s.wq, 0);
	s.wq.func = coll_map_wake_fn;
	atomic_inc(sleepers);
	for (;;) {
		if (prepare_to_wait_event(&map->wq, &s.wq, TASK_KILLABLE)) {
			t = -EINTR;
			break;
		}
		if (coll_map_cond(comm, map, arg) || !t)
			break;
		t = schedule_timeout(t);
	}
	finish_wait(&map->wq, &s.wq);
	atomic_dec(sleepers);
	return t;
}

/*
 * COLL_MAP_WAIT.  Sleeps (killable) in chunks of at most COLL_MAP_RECHECK,
 * looking again at the end of each even if nobody woke it.
 */
int coll_map_ioctl_wait(struct coll_file *cf, struct coll_ucmd *ucmd)
{
	struct coll_map_wait *arg = ucmd->cmd;
	struct coll_member *m;
	struct coll_comm *comm;
	struct coll_map *map;
	unsigned long deadline;
	long t;
	int ret;

	if (arg->flags)
		return -EOPNOTSUPP;
	if (arg->what >= COLL_MAP_WHAT_MAX)
		return -EINVAL;
	ret = coll_map_lookup(cf, arg->comm, &m, &map);
	if (ret)
		return ret;
	comm = m->comm;
	if (arg->rank != COLL_MAP_ALL && arg->rank >= comm->nranks) {
		ret = -EINVAL;
		goto out_put;
	}
	trace_coll_map(comm, m->rank, COLL_TRACE_MAP_WAIT, arg->rank,
		       arg->seq);
	deadline = jiffies + msecs_to_jiffies(arg->timeout_ms);
	while (!coll_map_cond(comm, map, arg)) {
		t = COLL_MAP_RECHECK;
		if (arg->timeout_ms) {
			if (time_after_eq(jiffies, deadline)) {
				ret = -ETIMEDOUT;
				break;
			}
			t = min_t(long, t, deadline - jiffies);
		}
		if (coll_map_sleep(comm, map, arg, t) < 0) {
			ret = -EINTR;
			break;
		}
	}
	if (!ret && !coll_map_reached(map, arg->what, arg->rank, arg->seq))
		ret = -ECONNRESET;
	trace_coll_map(comm, m->rank, COLL_TRACE_MAP_WOKEN, arg->rank,
		       arg->seq);
	if (ret == -EINTR)
		coll_comm_kill_why(comm, -ECONNRESET,
				   "a rank was killed in a collective");
out_put:
	coll_member_put(m);
	return ret;
}

/* COLL_MAP_WAKE */
int coll_map_ioctl_wake(struct coll_file *cf, struct coll_ucmd *ucmd)
{
	struct coll_map_wake *arg = ucmd->cmd;
	struct coll_member *m;
	struct coll_map *map;
	int ret;

	if (arg->flags)
		return -EOPNOTSUPP;
	if (arg->__reserved)
		return -EINVAL;
	ret = coll_map_lookup(cf, arg->comm, &m, &map);
	if (ret)
		return ret;
	trace_coll_map(m->comm, m->rank, COLL_TRACE_MAP_WAKE, COLL_MAP_ALL, 0);
	wake_up_all(&map->wq);
	coll_member_put(m);
	return 0;
}
