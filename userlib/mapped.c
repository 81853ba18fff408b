// SPDX-License-Identifier: MIT
/*
 * The mapped path: small blocking collectives of a communicator of one host
 * run here, in user space, through the slots the module maps into every
 * member (COLL_COMM_MAP; the layout is in <linux/collective.h>, "Mapped
 * slots").  No system call while the ranks keep pace with each other.
 *
 * Collective number s (one per blocking call of the communicator, from 1)
 * uses slot s % nslots.  A rank:
 *  1. waits until every rank has left collective s - nslots (the slot's
 *     last user), then writes its struct coll_map_desc and its input into
 *     slot s, and publishes arrived = s;
 *  2. waits for what it needs: nothing (a root of Broadcast or Scatter, a
 *     sender of Reduce or Gather), the root's input (the others of a
 *     Broadcast or Scatter) or every rank's (the rest);
 *  3. checks that the ranks it waited for called the same collective
 *     (EPROTO otherwise, for every rank that checks), copies or reduces
 *     its result straight into its receive buffer (reductions in rank
 *     order, reduce.c), and publishes left = s.
 * Waiting polls (a short spin, then yielding the CPU so that a rank that
 * shares it with the one it waits for lets that one run; one look between
 * yields when the ranks outnumber the CPUs, see MAP_SPINS) for up to the
 * header's spin_ns, then sleeps in COLL_MAP_WAIT; whoever publishes a
 * number and then sees sleepers calls COLL_MAP_WAKE.
 *
 * Calls the slots do not take (larger, a forced algorithm, groups) go to
 * the module, after the same agreement through a slot with nothing but
 * the descriptor (COLL_MAP_DESC_F_KERNEL): so ranks that disagree about a
 * collective, or about which way it goes, fail with EPROTO rather than
 * wait for each other in different places.
 *
 * A communicator's mapped calls are serialised by its mutex.  Nothing read
 * from the slots is used as a size or an index: those come from the
 * module's answer to COLL_COMM_MAP and from the caller's own arguments.
 */
#define _GNU_SOURCE		/* sched_getaffinity, CPU_COUNT */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "libcollective_int.h"

/*
 * Pauses between two yields of a polling wait: MAP_SPINS while every rank
 * of the communicator can have a CPU of its own, MAP_SPINS_SHARED (yield
 * after one look) when the ranks outnumber the CPUs this process may run
 * on, so that a waiter hands its CPU at once to a rank that has work
 * (under TCG a pause costs ~1 us: 50 of them kept the vCPU from the rank
 * sharing it for ~60 us a turn).  COLL_MAP_SPINS overrides both.
 */
#define MAP_SPINS		50
#define MAP_SPINS_SHARED	1
#define MAP_SPINS_MAX		100000

struct coll_map {
	void *base;
	size_t bytes;
	struct coll_map_hdr *hdr;
	struct coll_map_ctl *ctl;	/* nranks, COLL_MAP_LINE apart */
	struct coll_map_desc *desc;	/* nslots * nranks */
	unsigned char *data;		/* nslots * slot_bytes */
	uint32_t nslots, slot_bytes, nranks, rank;
	uint64_t spin_ns;
	uint32_t spins;			/* pauses between two yields */
	uint64_t seq;			/* the last collective begun here */
	uint64_t min_left;		/* every rank has left this one */
	pthread_mutex_t lock;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int map_ioctl(coll_comm_t *c, unsigned long cmd, void *arg)
{
	int saved = errno, ret;

	ret = ioctl(c->fd, cmd, arg) < 0 ? -errno : 0;
	errno = saved;
	return ret;
}

/*
 * How many pauses a polling wait makes between two yields (MAP_SPINS).
 * Leaves errno as it found it.
 */
static uint32_t map_spins(uint32_t nranks)
{
	const char *s = getenv("COLL_MAP_SPINS");
	int saved = errno, ok;
	unsigned long v;
	cpu_set_t set;
	char *end;
	long ncpus;

	if (s && *s) {
		errno = 0;
		v = strtoul(s, &end, 10);
		ok = !errno && !*end && v >= 1 && v <= MAP_SPINS_MAX;
		errno = saved;
		if (ok)
			return (uint32_t)v;
	}
	if (!sched_getaffinity(0, sizeof(set), &set))
		ncpus = CPU_COUNT(&set);
	else
		ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	errno = saved;
	return ncpus > 0 && nranks > (unsigned long)ncpus ? MAP_SPINS_SHARED :
							    MAP_SPINS;
}

int coll_map_setup(coll_comm_t *c)
{
	struct coll_comm_map cm;
	struct coll_map *m;
	int saved = errno, ret;
	void *p;

	memset(&cm, 0, sizeof(cm));
	cm.size = sizeof(cm);
	cm.comm = c->handle;
	ret = map_ioctl(c, COLL_COMM_MAP, &cm);
	if (ret == -EOPNOTSUPP)		/* the module made no slots */
		return 0;
	if (ret)
		return ret;
	if (!cm.out_nslots || cm.out_data_offset >= cm.out_bytes ||
	    cm.out_bytes - cm.out_data_offset <
	    (uint64_t)cm.out_nslots * cm.out_slot_bytes)
		return -EPROTO;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	p = mmap(NULL, cm.out_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd,
		 (off_t)cm.out_offset);
	if (p == MAP_FAILED) {
		ret = -errno;
		errno = saved;
		free(m);
		return ret;
	}
	m->base = p;
	m->bytes = cm.out_bytes;
	m->hdr = p;
	m->ctl = (struct coll_map_ctl *)((char *)p + cm.out_ctl_offset);
	m->desc = (struct coll_map_desc *)((char *)p + cm.out_desc_offset);
	m->data = (unsigned char *)p + cm.out_data_offset;
	m->nslots = cm.out_nslots;
	m->slot_bytes = cm.out_slot_bytes;
	m->nranks = (uint32_t)c->nranks;
	m->rank = (uint32_t)c->rank;
	m->spin_ns = m->hdr->spin_ns;
	m->spins = map_spins(m->nranks);
	pthread_mutex_init(&m->lock, NULL);
	/* The reduction kernels' choice (a few ms under an emulator): here,
	 * in the join, rather than in the first small collective. */
	coll_red_uses_avx2(COLL_FP32);
	c->map = m;
	return 0;
}

void coll_map_teardown(coll_comm_t *c)
{
	struct coll_map *m = c->map;

	if (!m)
		return;
	/* a thread still in a collective has seen the death by now */
	pthread_mutex_lock(&m->lock);
	munmap(m->base, m->bytes);
	pthread_mutex_unlock(&m->lock);
	pthread_mutex_destroy(&m->lock);
	free(m);
	c->map = NULL;
}

/* The communicator's death, as the module wrote it: 0 or -errno. */
static int map_dead(const struct coll_map *m)
{
	uint32_t err;

	if (__atomic_load_n(&m->hdr->state, __ATOMIC_ACQUIRE) == COLL_MAP_LIVE)
		return 0;
	err = __atomic_load_n(&m->hdr->error, __ATOMIC_RELAXED);
	return err && err < 4096 ? -(int)err : -ECONNRESET;
}

static __u64 *map_field(const struct coll_map *m, uint32_t r, int what)
{
	struct coll_map_ctl *l = &m->ctl[r];

	return what == COLL_MAP_ARRIVED ? &l->arrived : &l->left;
}

/* Have @rank's (every rank's, COLL_MAP_ALL) @what reached @seq? */
static int map_reached(const struct coll_map *m, int what, uint32_t rank,
		       uint64_t seq)
{
	uint32_t r;

	if (rank != COLL_MAP_ALL)
		return __atomic_load_n(map_field(m, rank, what),
				       __ATOMIC_ACQUIRE) >= seq;
	for (r = 0; r < m->nranks; r++)
		if (__atomic_load_n(map_field(m, r, what), __ATOMIC_ACQUIRE) <
		    seq)
			return 0;
	return 1;
}

/*
 * Is a rank asleep in COLL_MAP_WAIT for what is there now?  From the
 * sleepers' lines (struct coll_map_ctl sleep_*), checked before use.
 */
static int map_sleeper_due(const struct coll_map *m)
{
	uint32_t r, what, rank;
	uint64_t seq;

	for (r = 0; r < m->nranks; r++) {
		if (r == m->rank)
			continue;
		seq = __atomic_load_n(&m->ctl[r].sleep_seq, __ATOMIC_SEQ_CST);
		if (!seq)
			continue;
		what = __atomic_load_n(&m->ctl[r].sleep_what, __ATOMIC_RELAXED);
		rank = __atomic_load_n(&m->ctl[r].sleep_rank, __ATOMIC_RELAXED);
		if (what >= COLL_MAP_WHAT_MAX ||
		    (rank != COLL_MAP_ALL && rank >= m->nranks))
			return 1;	/* not a line of ours: wake, to be safe */
		if (map_reached(m, (int)what, rank, seq))
			return 1;
	}
	return 0;
}

/*
 * Publish @seq in this rank's @what, then wake the sleepers if one of
 * them waits for what is there now.  Every store and load here is
 * sequentially consistent: against the sleeper's count-then-check in the
 * module, and between two ranks publishing at once, the later of whose
 * looks sees both numbers.
 */
static void map_publish(coll_comm_t *c, struct coll_map *m, int what,
			uint64_t seq)
{
	struct coll_map_wake w;

	__atomic_store_n(map_field(m, m->rank, what), seq, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&m->hdr->sleepers, __ATOMIC_SEQ_CST) ||
	    !map_sleeper_due(m))
		return;
	memset(&w, 0, sizeof(w));
	w.size = sizeof(w);
	w.comm = c->handle;
	(void)map_ioctl(c, COLL_MAP_WAKE, &w);
}

/*
 * Wait until @rank's (or every rank's) @what reaches @seq: 0, or the
 * communicator's death (-ECONNRESET), or COLL_MAP_WAIT's error.
 */
static int map_wait(coll_comm_t *c, struct coll_map *m, int what,
		    uint32_t rank, uint64_t seq)
{
	__u64 *t_wait = &m->ctl[m->rank].t_wait;
	struct coll_map_ctl *l;
	struct coll_map_wait w;
	uint64_t until = 0, t;
	uint32_t i;
	int ret;

	for (;;) {
		for (i = 0; i < m->spins; i++) {
			if (map_reached(m, what, rank, seq)) {
				ret = 0;
				goto out;
			}
			ret = map_dead(m);
			if (ret)
				goto out;
			cpu_relax();
		}
		t = now_ns();
		if (!until) {
			/* a wait that lasts: say since when, for op-get */
			__atomic_store_n(t_wait, t, __ATOMIC_RELAXED);
			until = t + m->spin_ns;
		} else if (t >= until) {
			break;
		}
		sched_yield();
	}
	memset(&w, 0, sizeof(w));
	w.size = sizeof(w);
	w.comm = c->handle;
	w.what = (uint32_t)what;
	w.rank = rank;
	w.seq = seq;
	/* what it sleeps for, for the publishers; then the module counts it */
	l = &m->ctl[m->rank];
	__atomic_store_n(&l->sleep_what, (uint32_t)what, __ATOMIC_RELAXED);
	__atomic_store_n(&l->sleep_rank, rank, __ATOMIC_RELAXED);
	__atomic_store_n(&l->sleep_seq, seq, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	do {
		ret = map_ioctl(c, COLL_MAP_WAIT, &w);
	} while (ret == -ETIMEDOUT);
	__atomic_store_n(&l->sleep_seq, 0, __ATOMIC_RELAXED);
out:
	if (until)
		__atomic_store_n(t_wait, 0, __ATOMIC_RELAXED);
	return ret;
}

/* Bytes of every rank's input in a slot (the uapi header's rule). */
static uint64_t map_footprint(int prim, uint64_t c, uint64_t n)
{
	switch (prim) {
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

static int prim_reduces(int p)
{
	return p == COLL_ALLREDUCE || p == COLL_REDUCE ||
	       p == COLL_REDUCESCATTER;
}

static int prim_rooted(int p)
{
	return p == COLL_REDUCE || p == COLL_BROADCAST || p == COLL_SCATTER ||
	       p == COLL_GATHER;
}

/* Elements of a rank's send (buf 0) or receive (buf 1) buffer. */
static uint64_t buf_elems(int prim, uint64_t n, uint32_t root, uint32_t rank,
			  int buf, uint64_t count)
{
	int send = buf == 0;
	uint64_t all = count * n;

	switch (prim) {
	case COLL_ALLREDUCE:
		return count;
	case COLL_REDUCE:
		return send || rank == root ? count : 0;
	case COLL_REDUCESCATTER:
		return send ? all : count;
	case COLL_ALLGATHER:
		return send ? count : all;
	case COLL_BROADCAST:
		return !send || rank == root ? count : 0;
	case COLL_SCATTER:
		return !send ? count : rank == root ? all : 0;
	case COLL_GATHER:
		return send ? count : rank == root ? all : 0;
	case COLL_ALLTOALL:
		return all;
	}
	return 0;
}

/*
 * The in-place layouts (as the module's): 1 if this rank's buffers may
 * overlap, with the inner one @at elements into the outer (@recv_outer:
 * the receive buffer is the outer one).
 */
static int inplace_layout(int prim, uint32_t root, uint32_t rank,
			  uint64_t count, int *recv_outer, uint64_t *at)
{
	*recv_outer = 1;
	*at = 0;
	switch (prim) {
	case COLL_ALLREDUCE:
	case COLL_ALLTOALL:
		return 1;
	case COLL_REDUCE:
	case COLL_BROADCAST:
		return rank == root;
	case COLL_ALLGATHER:
		*at = rank * count;
		return 1;
	case COLL_GATHER:
		*at = rank * count;
		return rank == root;
	case COLL_REDUCESCATTER:
		*recv_outer = 0;
		*at = rank * count;
		return 1;
	case COLL_SCATTER:
		*recv_outer = 0;
		*at = rank * count;
		return rank == root;
	}
	return 0;
}

/* What this rank moves of a call, once checked. */
struct map_call {
	const struct coll_op *op;
	uint64_t c;			/* count * element size */
	uint64_t bytes[2];		/* send, receive */
	int inplace;
};

/*
 * The module's checks of COLL_SUBMIT (coll_op_check(), the root, the
 * layout), with its errnos, so that a call refused here is refused as the
 * ioctl would refuse it, before it meets anyone.
 */
static int map_check(const coll_comm_t *c, const struct coll_op *op,
		     struct map_call *mc)
{
	uint64_t n = (uint64_t)c->nranks, esize, total, addr[2], at;
	int b, recv_outer, inner, outer;

	if (op->prim >= COLL_PRIM_MAX || op->dtype >= COLL_DTYPE_MAX ||
	    op->redop >= COLL_REDOP_MAX || op->algo >= COLL_ALGO_MAX)
		return -EOPNOTSUPP;
	if (!prim_reduces((int)op->prim) && op->redop)
		return -EINVAL;
	if (!prim_rooted((int)op->prim) && op->root)
		return -EINVAL;
	if (op->prim == COLL_BARRIER &&
	    (op->count || op->sendbuf || op->recvbuf || op->dtype))
		return -EINVAL;
	if (op->count > COLL_MAX_BYTES)
		return -EOVERFLOW;
	if (prim_rooted((int)op->prim) && op->root >= n)
		return -EINVAL;
	esize = op->prim == COLL_BARRIER ? 1 : coll_dtype_size((int)op->dtype);
	total = op->count * n * esize;	/* count <= 2^40, n <= 2^10: fits */
	if (total > COLL_MAX_BYTES)
		return -EOVERFLOW;
	addr[0] = op->sendbuf;
	addr[1] = op->recvbuf;
	for (b = 0; b < 2; b++) {
		mc->bytes[b] = buf_elems((int)op->prim, n, op->root,
					 (uint32_t)c->rank, b, op->count) *
			       esize;
		if (addr[b] + mc->bytes[b] < addr[b])
			return -EOVERFLOW;
	}
	mc->op = op;
	mc->c = op->count * esize;
	mc->inplace = 0;
	if (!mc->bytes[0] || !mc->bytes[1] ||
	    addr[0] >= addr[1] + mc->bytes[1] ||
	    addr[1] >= addr[0] + mc->bytes[0])
		return 0;
	if (!inplace_layout((int)op->prim, op->root, (uint32_t)c->rank,
			    op->count, &recv_outer, &at))
		return -EINVAL;
	outer = recv_outer ? 1 : 0;	/* index: 0 send, 1 receive */
	inner = !outer;
	at *= esize;
	if (addr[inner] != addr[outer] + at ||
	    at + mc->bytes[inner] > mc->bytes[outer])
		return -EINVAL;
	mc->inplace = 1;
	return 0;
}

static struct coll_map_desc *map_desc(const struct coll_map *m, uint64_t seq,
				      uint32_t r)
{
	return &m->desc[(seq % m->nslots) * m->nranks + r];
}

static unsigned char *map_slot(const struct coll_map *m, uint64_t seq)
{
	return m->data + (seq % m->nslots) * m->slot_bytes;
}

/* Wait for slot @seq to be free, and take it: 0 or an error. */
static int map_claim(coll_comm_t *c, struct coll_map *m, uint64_t seq)
{
	uint64_t need = seq > m->nslots ? seq - m->nslots : 0;
	uint64_t low = UINT64_MAX, v;
	uint32_t r;
	int ret;

	if (m->min_left < need) {
		ret = map_wait(c, m, COLL_MAP_LEFT, COLL_MAP_ALL, need);
		if (ret)
			return ret;
		for (r = 0; r < m->nranks; r++) {
			v = __atomic_load_n(&m->ctl[r].left, __ATOMIC_ACQUIRE);
			low = v < low ? v : low;
		}
		m->min_left = low;
	}
	return 0;
}

/* Did the ranks @from .. @to - 1 call what this rank called? */
static int map_agree(const struct coll_map *m, uint64_t seq, uint32_t from,
		     uint32_t to)
{
	const struct coll_map_desc *mine = map_desc(m, seq, m->rank);
	uint32_t r;

	for (r = from; r < to; r++)
		if (r != m->rank &&
		    memcmp(map_desc(m, seq, r), mine, sizeof(*mine)))
			return -EPROTO;
	return 0;
}

/* The reduction of every rank's input at @off of its area into @dst. */
static void map_reduce(const struct coll_map *m, const struct coll_op *op,
		       unsigned char *slot, uint64_t stride, uint64_t off,
		       uint64_t len, void *dst)
{
	size_t esize = coll_dtype_size((int)op->dtype), elems = len / esize;
	coll_red_fn fn;
	uint32_t j;

	if (!len)
		return;
	if (m->nranks == 1) {
		memcpy(dst, slot + off, len);
		return;
	}
	fn = coll_red_get((int)op->dtype, (int)op->redop);
	fn(dst, slot + off, slot + stride + off, elems);
	for (j = 2; j < m->nranks; j++)
		fn(dst, dst, slot + j * stride + off, elems);
	if (op->redop == COLL_AVG)
		coll_red_div((int)op->dtype, dst, elems, m->nranks);
}

/* This rank's input into slot @s. */
static void map_copy_in(const struct coll_map *m, const struct map_call *mc,
			unsigned char *s)
{
	const struct coll_op *op = mc->op;
	const void *src = (const void *)(uintptr_t)op->sendbuf;
	uint64_t n = m->nranks, r = m->rank;

	switch (op->prim) {
	case COLL_BROADCAST:
	case COLL_SCATTER:
		if (r == op->root && mc->bytes[0])
			memcpy(s, src, mc->bytes[0]);
		break;
	case COLL_REDUCESCATTER:
	case COLL_ALLTOALL:
		if (mc->bytes[0])
			memcpy(s + r * n * mc->c, src, mc->bytes[0]);
		break;
	case COLL_BARRIER:
		break;
	default:
		if (mc->bytes[0])
			memcpy(s + r * mc->c, src, mc->bytes[0]);
	}
}

/* This rank's result, from slot @s, once every input it needs is there. */
static void map_copy_out(const struct coll_map *m, const struct map_call *mc,
			 unsigned char *s)
{
	const struct coll_op *op = mc->op;
	unsigned char *dst = (unsigned char *)(uintptr_t)op->recvbuf;
	uint64_t n = m->nranks, r = m->rank, c = mc->c, j;

	if (!mc->bytes[1])
		return;
	switch (op->prim) {
	case COLL_ALLREDUCE:
	case COLL_REDUCE:
		map_reduce(m, op, s, c, 0, c, dst);
		break;
	case COLL_REDUCESCATTER:
		map_reduce(m, op, s, n * c, r * c, c, dst);
		break;
	case COLL_ALLGATHER:
	case COLL_GATHER:
		memcpy(dst, s, n * c);
		break;
	case COLL_BROADCAST:
		memcpy(dst, s, c);
		break;
	case COLL_SCATTER:
		memcpy(dst, s + r * c, c);
		break;
	case COLL_ALLTOALL:
		for (j = 0; j < n; j++)
			memcpy(dst + j * c, s + j * n * c + r * c, c);
		break;
	}
}

/* A root of a Broadcast or Scatter: its own part, from its own buffer. */
static void map_copy_self(const struct coll_map *m, const struct map_call *mc)
{
	const struct coll_op *op = mc->op;
	unsigned char *dst = (unsigned char *)(uintptr_t)op->recvbuf;
	const unsigned char *src = (const unsigned char *)(uintptr_t)op->sendbuf;

	if (!mc->bytes[1] || mc->inplace)
		return;
	if (op->prim == COLL_SCATTER)
		src += m->rank * mc->c;
	memcpy(dst, src, mc->c);
}

/*
 * Run one collective (or, with COLL_MAP_DESC_F_KERNEL, only agree on it)
 * as sequence number m->seq + 1.  Locks: m->lock.
 */
static int map_run(coll_comm_t *c, struct coll_map *m,
		   const struct map_call *mc, const struct coll_map_desc *d)
{
	const struct coll_op *op = mc->op;
	uint64_t seq = m->seq + 1;
	uint32_t root = op ? op->root : 0;
	int prim = op ? (int)op->prim : -1, ret, need;
	unsigned char *s;

	ret = map_dead(m);
	if (ret)
		return ret;
	ret = map_claim(c, m, seq);
	if (ret)
		return ret;
	m->seq = seq;
	*map_desc(m, seq, m->rank) = *d;
	s = map_slot(m, seq);
	if (!(d->flags & COLL_MAP_DESC_F_KERNEL))
		map_copy_in(m, mc, s);

	/* 0: nothing of the others, 1: the root's input, 2: everyone's */
	need = 2;
	if (!(d->flags & COLL_MAP_DESC_F_KERNEL)) {
		if (prim == COLL_REDUCE || prim == COLL_GATHER)
			need = m->rank == root ? 2 : 0;
		else if (prim == COLL_BROADCAST || prim == COLL_SCATTER)
			need = m->rank == root ? 0 : 1;
	}
	if (!need) {
		__atomic_store_n(&m->ctl[m->rank].arrived, seq,
				 __ATOMIC_RELEASE);
		map_publish(c, m, COLL_MAP_LEFT, seq);
		if (prim == COLL_BROADCAST || prim == COLL_SCATTER)
			map_copy_self(m, mc);
		return 0;
	}
	map_publish(c, m, COLL_MAP_ARRIVED, seq);
	if (need == 1) {
		ret = map_wait(c, m, COLL_MAP_ARRIVED, root, seq);
		if (!ret)
			ret = map_agree(m, seq, root, root + 1);
	} else {
		ret = map_wait(c, m, COLL_MAP_ARRIVED, COLL_MAP_ALL, seq);
		if (!ret)
			ret = map_agree(m, seq, 0, m->nranks);
	}
	if (!ret && !(d->flags & COLL_MAP_DESC_F_KERNEL))
		map_copy_out(m, mc, s);
	map_publish(c, m, COLL_MAP_LEFT, seq);
	return ret;
}

static void desc_of(struct coll_map_desc *d, const struct coll_op *op,
		    uint32_t flags)
{
	memset(d, 0, sizeof(*d));
	d->prim = op->prim;
	d->dtype = op->dtype;
	d->redop = op->redop;
	d->root = op->root;
	d->algo = op->algo;
	d->flags = flags;
	d->count = op->count;
}

int coll_map_submit(coll_comm_t *c, const struct coll_op *op)
{
	struct coll_map *m = c->map;
	struct coll_map_desc d;
	struct map_call mc;
	uint32_t flags = 0;
	int ret;

	ret = map_check(c, op, &mc);
	if (ret)
		return ret;
	if (op->algo != COLL_ALGO_AUTO ||
	    map_footprint((int)op->prim, mc.c, m->nranks) > m->slot_bytes)
		flags = COLL_MAP_DESC_F_KERNEL;
	else if ((mc.bytes[0] && !op->sendbuf) ||
		 (mc.bytes[1] && !op->recvbuf))
		return -EFAULT;	/* as the module says of NULL, nothing done */
	if (op->prim == COLL_ALLTOALL && mc.inplace)
		flags |= COLL_MAP_DESC_F_INPLACE;
	desc_of(&d, op, flags);
	pthread_mutex_lock(&m->lock);
	ret = map_run(c, m, &mc, &d);
	pthread_mutex_unlock(&m->lock);
	if (!ret && (flags & COLL_MAP_DESC_F_KERNEL))
		return COLL_MAP_KERNEL;
	return ret;
}

int coll_map_agree_group(coll_comm_t *c, const struct coll_op *ops,
			 unsigned int nops, unsigned int flags)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a over the ops */
	struct coll_map *m = c->map;
	struct coll_map_desc d;
	struct map_call mc;
	unsigned int i;
	int ret;

	for (i = 0; i < nops; i++) {
		const uint32_t f[] = { ops[i].prim, ops[i].dtype, ops[i].redop,
				       ops[i].root, ops[i].algo,
				       (uint32_t)ops[i].count,
				       (uint32_t)(ops[i].count >> 32) };
		size_t k;

		for (k = 0; k < sizeof(f); k++) {
			h ^= ((const unsigned char *)f)[k];
			h *= 1099511628211ull;
		}
	}
	memset(&d, 0, sizeof(d));
	d.flags = COLL_MAP_DESC_F_KERNEL | COLL_MAP_DESC_F_GROUP;
	d.dtype = flags;
	d.redop = (uint32_t)(h >> 32);
	d.root = (uint32_t)h;
	d.count = nops;
	memset(&mc, 0, sizeof(mc));
	pthread_mutex_lock(&m->lock);
	ret = map_run(c, m, &mc, &d);
	pthread_mutex_unlock(&m->lock);
	return ret;
}
