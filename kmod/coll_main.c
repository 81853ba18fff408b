// SPDX-License-Identifier: GPL-2.0
/*
 * collective: collective communication as a device.
 *
 * The misc device /dev/collective, its descriptors, the ioctl table and the
 * module parameters.  The ioctl ABI is uapi/linux/collective.h; dispatch
 * follows drivers/iommu/iommufd/main.c: a table of (command, struct size,
 * first-version size) and copy_struct_from_user(), so structs can grow.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "coll_loc.h"

struct coll_stats coll_stats;
struct workqueue_struct *coll_wq;

unsigned int coll_join_timeout_ms = 30000;
module_param_named(join_timeout_ms, coll_join_timeout_ms, uint, 0644);
MODULE_PARM_DESC(join_timeout_ms,
		 "Default time COLL_COMM_INIT waits for all ranks (ms)");

unsigned int coll_default_algo = COLL_ALGO_AUTO;
module_param_named(algo, coll_default_algo, uint, 0644);
MODULE_PARM_DESC(algo,
		 "Algorithm for COLL_ALGO_AUTO: 0 by size and topology (see hier_bytes), 1 ring, 2 direct, 3 naive, 4 tree, 5 hier");

unsigned int coll_ring_chunk_bytes = 256 << 10;
module_param_named(ring_chunk_bytes, coll_ring_chunk_bytes, uint, 0644);
MODULE_PARM_DESC(ring_chunk_bytes, "Ring pipelining chunk (bytes)");

unsigned int coll_exec_chunk_bytes = 64 << 10;
module_param_named(exec_chunk_bytes, coll_exec_chunk_bytes, uint, 0644);
MODULE_PARM_DESC(exec_chunk_bytes,
		 "Unit of work that one thread claims at a time (bytes)");

unsigned int coll_solo_bytes = 32 << 10;
module_param_named(solo_bytes, coll_solo_bytes, uint, 0644);
MODULE_PARM_DESC(solo_bytes,
		 "Collectives moving at most this much (every rank's larger buffer, summed over the ranks) are run by one thread, without waking the others in between");

/*
 * 64 KiB (16 slots: 1 MiB a communicator): measured with bench-eager.sh,
 * the slots beat the task path up to 128 KiB for AllGather and Broadcast,
 * but an AllReduce stops paying between 48 KiB (2 ranks of 16 KiB, 4 of
 * 8 KiB: 1.2x) and 80 KiB (4 ranks of 16 KiB: 0.46x), where one rank's
 * serial reduction loses to the task path's shared one.
 */
unsigned int coll_slot_bytes = 64 << 10;
module_param_named(slot_bytes, coll_slot_bytes, uint, 0644);
MODULE_PARM_DESC(slot_bytes,
		 "Blocking collectives of one host with COLL_ALGO_AUTO whose data (every rank's input, and a reduction's result) fits in this many bytes go through the communicator's eager slots: no pinning, and a root returns at once (0: never, at once; at most 262144; the slots are sized at a communicator's first such call)");

/*
 * 64 KiB (1.1 MiB a communicator with 16 slots): measured with
 * bench-eager.sh at 256 KiB, the mapped slots beat the eager path at every
 * size up to 32 KiB a rank for the copies and ReduceScatter, but an
 * AllReduce or a Reduce, where every rank (the root) reduces every input
 * itself, stops paying between 64 KiB (4 ranks of 16 KiB: 1.2-1.5x) and
 * 128 KiB of inputs (4 of 32 KiB: 0.76-1.06x).
 */
unsigned int coll_map_bytes = 64 << 10;
module_param_named(map_bytes, coll_map_bytes, uint, 0644);
MODULE_PARM_DESC(map_bytes,
		 "Bytes of each of the mapped slots (map_slots) of a communicator joined with COLL_COMM_F_MAP, in whole 64-byte lines, read when its first rank joins (0: no mapped slots; at most 262144; a slot holds a page and a line more, see out_slot_bytes): its blocking collectives whose inputs fit in a slot run in user space, without a system call");

/*
 * 0: 64 slots (COLL_MAP_SLOTS_SHARED) for a communicator whose ranks on
 * this host outnumber the online CPUs, 16 (COLL_MAP_SLOTS_OWN) otherwise.
 * The count is how far a root of a rooted small collective (Broadcast,
 * Scatter, a sender of Reduce or Gather) may run ahead of the slowest
 * rank.  With 4 ranks on 2 CPUs, one boot, 5 interleaved rounds, -n 100
 * -w 20 -T 200, medians in us with 16/32/64/128 slots (Open MPI): 8-byte
 * Broadcast 13.8/10.9/7.9/5.8 (12.9), Reduce 15.8/10.7/8.7/7.6 (15.8),
 * 32-byte Scatter 12.8/8.5/8.3/7.0 (14.8), Gather 15.1/9.3/7.7/8.5
 * (17.3), 1 KiB Broadcast 17.6/13.0/11.0/12.2.  With 2 ranks on 2 CPUs
 * the lead buys nothing and the larger ring costs (one boot, 9 rounds,
 * 1 KiB, 16/64 slots (Open MPI)): Reduce 9.05/12.67 (10.01), AllGather
 * 3.46/3.99 (6.35), AlltoAll 3.72/4.71 (6.54); Broadcast, Scatter,
 * Gather and AllReduce within noise.
 */
unsigned int coll_map_slots;
module_param_named(map_slots, coll_map_slots, uint, 0644);
MODULE_PARM_DESC(map_slots,
		 "How many mapped slots a communicator joined with COLL_COMM_F_MAP has, read when its first rank joins (2 to 256; 0: 64 if its ranks on this host outnumber the online CPUs, else 16): how far a root of a small rooted collective may run ahead of the others");

/*
 * 300 us: with 4 ranks on 2 CPUs a rooted small collective through the
 * mapped slots has its ranks wait for each other in bursts (the root runs
 * up to 16 ahead, then waits for the slowest); at 100 us the waiters slept
 * in COLL_MAP_WAIT ~120 times in 2,100 Broadcasts, each sleep ~290 us until
 * its wake-up, with the CPU idle meanwhile.  At 300 us (three boots, 4-6
 * rounds each, the values alternated): 4-rank 8-byte Reduce 1.35-1.45x
 * faster, Broadcast 1.12-1.14x, 32-byte Gather 1.19-1.59x, Scatter
 * 0.86-1.24x; over all the 4-rank points of a boot (8, 12) the geometric
 * mean 1.12-1.13x; 2 ranks unchanged (0.96-1.03x).  A wait polls only
 * while it yields its CPU to anyone else who wants it (see the waits).
 */
unsigned int coll_spin_ns = 300000;
module_param_named(spin_ns, coll_spin_ns, uint, 0644);
MODULE_PARM_DESC(spin_ns,
		 "How long a thread polls for the next round before it sleeps (ns)");

unsigned int coll_max_requests = 4096;
module_param_named(max_requests, coll_max_requests, uint, 0644);
MODULE_PARM_DESC(max_requests,
		 "Non-blocking requests not yet collected that one descriptor may hold (ENOSPC beyond)");

unsigned int coll_max_comms = 1024;
module_param_named(max_comms, coll_max_comms, uint, 0644);
MODULE_PARM_DESC(max_comms,
		 "Communicators one process may be a member of (EMFILE beyond)");

unsigned int coll_port = 20571;
module_param_named(port, coll_port, uint, 0444);
MODULE_PARM_DESC(port,
		 "TCP port the module listens on for the modules of peer hosts (per network namespace)");

unsigned int coll_eager_bytes = 65536;
module_param_named(eager_bytes, coll_eager_bytes, uint, 0644);
MODULE_PARM_DESC(eager_bytes,
		 "A round moving at most this much from one host to another sends it with its READY (copy path); more is read (zero-copy)");

unsigned int coll_peer_timeout_ms = 3000;
module_param_named(peer_timeout_ms, coll_peer_timeout_ms, uint, 0644);
MODULE_PARM_DESC(peer_timeout_ms,
		 "A peer host that says nothing for this long is dead: its communicators fail with ECONNRESET");

unsigned int coll_hier_bytes = 256 << 10;
module_param_named(hier_bytes, coll_hier_bytes, uint, 0644);
MODULE_PARM_DESC(hier_bytes,
		 "Across hosts laid out host by host, automatic choice: AllReduce, AllGather and Broadcast whose result buffer holds this many bytes or more run HIER, smaller ones DIRECT (the same on every host)");

unsigned int coll_mr_pool = 64;
module_param_named(mr_pool, coll_mr_pool, uint, 0644);
MODULE_PARM_DESC(mr_pool,
		 "Invalidated fast-registration memory regions kept per RDMA device for the next grants (0: allocate one for every grant)");

unsigned int coll_rdma_qps = 1;
module_param_named(rdma_qps, coll_rdma_qps, uint, 0644);
MODULE_PARM_DESC(rdma_qps,
		 "Queue pairs to each peer host over RDMA, 1 to 8, for communicators created after the change: the first carries the frames, the reads of large rounds are spread over all");

unsigned int coll_busy_poll_us;
module_param_named(busy_poll_us, coll_busy_poll_us, uint, 0644);
MODULE_PARM_DESC(busy_poll_us,
		 "0: RDMA completions are handled from their interrupts; N: a rank waiting on a peer host polls its communicator's RDMA completion queues itself for up to N us before it sleeps (many small messages)");

unsigned int coll_plan_cache_size = 16;
module_param_named(plan_cache, coll_plan_cache_size, uint, 0644);
MODULE_PARM_DESC(plan_cache,
		 "Plans cached per communicator (least recently used dropped first; 0: no cache)");

static int coll_open(struct inode *inode, struct file *file)
{
	struct coll_file *cf;

	cf = coll_kvzalloc(sizeof(*cf));
	if (!cf)
		return -ENOMEM;
	kref_init(&cf->kref);
	mutex_init(&cf->lock);
	xa_init_flags(&cf->members, XA_FLAGS_ALLOC | XA_FLAGS_ACCOUNT);
	xa_init_flags(&cf->reqs, XA_FLAGS_ALLOC | XA_FLAGS_ACCOUNT);
	atomic_set(&cf->ndone, 0);
	init_waitqueue_head(&cf->wq);
	coll_uring_init(cf);
	coll_regcache_init(&cf->rc);
	file->private_data = cf;
	return 0;
}

void coll_file_release(struct kref *kref)
{
	struct coll_file *cf = container_of(kref, struct coll_file, kref);

	coll_regcache_destroy(&cf->rc);
	coll_obuf_release(cf->gstage);
	coll_group_mem_free(cf->gmem);
	xa_destroy(&cf->members);
	xa_destroy(&cf->reqs);
	mutex_destroy(&cf->lock);
	coll_kvfree(cf, sizeof(*cf));
}

/*
 * The descriptor's last reference is gone (close, or the process died):
 * leave every communicator, which fails the peers' pending collectives,
 * and drop every request, then the registration cache.  Buffers are
 * unpinned as the last reference to each collective goes, once no executor
 * can touch them.
 */
static int coll_release(struct inode *inode, struct file *file)
{
	struct coll_file *cf = file->private_data;

	coll_comm_leave_all(cf);
	coll_req_release_all(cf);
	coll_regcache_flush(&cf->rc);
	kref_put(&cf->kref, coll_file_release);
	return 0;
}

/* Every close of a file table holding the descriptor (coll_uring.c). */
static int coll_flush(struct file *file, fl_owner_t id)
{
	return coll_uring_flush(file->private_data, id);
}

/* A membership's mapped slots (coll_map.c). */
static int coll_mmap(struct file *file, struct vm_area_struct *vma)
{
	return coll_map_mmap(file->private_data, vma);
}

static __poll_t coll_poll(struct file *file, poll_table *wait)
{
	struct coll_file *cf = file->private_data;

	poll_wait(file, &cf->wq, wait);
	return coll_file_has_done(cf) ? EPOLLIN | EPOLLRDNORM : 0;
}

static int coll_ioctl_info(struct coll_file *cf, struct coll_ucmd *ucmd)
{
	struct coll_info *arg = ucmd->cmd;

	if (arg->flags)
		return -EOPNOTSUPP;
	arg->out_abi_version = COLL_ABI_VERSION;
	arg->out_max_ranks = COLL_MAX_RANKS;
	arg->out_pinned_pages = atomic64_read(&coll_stats.pinned_pages);
	arg->out_comms = atomic64_read(&coll_stats.comms);
	arg->out_ops = atomic64_read(&coll_stats.ops);
	arg->out_ops_total = atomic64_read(&coll_stats.ops_total);
	arg->out_bytes_total = atomic64_read(&coll_stats.bytes_total);
	arg->out_reqs = atomic64_read(&coll_stats.reqs);
	arg->out_kernel_bytes = atomic64_read(&coll_stats.kbytes);
	arg->out_plans = atomic64_read(&coll_stats.plans);
	arg->out_max_requests = READ_ONCE(coll_max_requests);
	arg->out_max_comms = READ_ONCE(coll_max_comms);
	arg->out_port = READ_ONCE(coll_port);
	arg->out_rdma_devs = coll_ib_count();
	arg->out_mr_allocs = atomic64_read(&coll_stats.mr_allocs);
	arg->out_mr_reuses = atomic64_read(&coll_stats.mr_reuses);
	arg->out_reg_hits = atomic64_read(&coll_stats.reg_hits);
	arg->out_reg_misses = atomic64_read(&coll_stats.reg_misses);
	arg->out_reg_evictions = atomic64_read(&coll_stats.reg_evictions);
	/* Nothing else happens: write it all back, as much as the caller has. */
	if (copy_to_user(ucmd->ubuf, arg,
			 min_t(u32, ucmd->usize, sizeof(*arg))))
		return -EFAULT;
	return 0;
}

static int coll_ioctl_comm_destroy(struct coll_file *cf,
				   struct coll_ucmd *ucmd)
{
	struct coll_comm_destroy *arg = ucmd->cmd;

	if (arg->flags)
		return -EOPNOTSUPP;
	if (arg->__reserved)
		return -EINVAL;
	return coll_comm_leave(cf, arg->comm);
}

static int coll_ioctl_wait(struct coll_file *cf, struct coll_ucmd *ucmd)
{
	return coll_req_wait(cf, ucmd->cmd, false);
}

static int coll_ioctl_test(struct coll_file *cf, struct coll_ucmd *ucmd)
{
	return coll_req_wait(cf, ucmd->cmd, true);
}

union coll_ucmd_buffer {
	struct coll_info info;
	struct coll_comm_init comm_init;
	struct coll_comm_destroy comm_destroy;
	struct coll_op op;
	struct coll_wait wait;
	struct coll_comm_query query;
	struct coll_group group;
	struct coll_comm_map comm_map;
	struct coll_map_wait map_wait;
	struct coll_map_wake map_wake;
};

/*
 * The handlers write their own outputs (struct coll_ucmd), each before it
 * publishes anything, so that a failed ioctl changes nothing.
 */
struct coll_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	int (*execute)(struct coll_file *cf, struct coll_ucmd *ucmd);
};

#define COLL_IOCTL_OP(_ioctl, _fn, _struct, _last)			\
	[_IOC_NR(_ioctl) - COLL_CMD_BASE] = {				\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union coll_ucmd_buffer) < \
					  sizeof(_struct)),		\
		.min_size = offsetofend(_struct, _last),		\
		.execute = _fn,						\
	}

static const struct coll_ioctl_op coll_ioctl_ops[] = {
	COLL_IOCTL_OP(COLL_INFO, coll_ioctl_info, struct coll_info,
		      out_bytes_total),
	COLL_IOCTL_OP(COLL_COMM_INIT, coll_comm_join, struct coll_comm_init,
		      __reserved),
	COLL_IOCTL_OP(COLL_COMM_DESTROY, coll_ioctl_comm_destroy,
		      struct coll_comm_destroy, __reserved),
	COLL_IOCTL_OP(COLL_SUBMIT, coll_op_submit, struct coll_op, __reserved),
	COLL_IOCTL_OP(COLL_WAIT, coll_ioctl_wait, struct coll_wait,
		      timeout_ms),
	COLL_IOCTL_OP(COLL_TEST, coll_ioctl_test, struct coll_wait,
		      timeout_ms),
	COLL_IOCTL_OP(COLL_COMM_QUERY, coll_comm_query, struct coll_comm_query,
		      __reserved),
	COLL_IOCTL_OP(COLL_GROUP, coll_group_submit, struct coll_group,
		      __reserved),
	COLL_IOCTL_OP(COLL_COMM_MAP, coll_map_ioctl_map, struct coll_comm_map,
		      out_bytes),
	COLL_IOCTL_OP(COLL_MAP_WAIT, coll_map_ioctl_wait, struct coll_map_wait,
		      seq),
	COLL_IOCTL_OP(COLL_MAP_WAKE, coll_map_ioctl_wake, struct coll_map_wake,
		      __reserved),
};

static long coll_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct coll_file *cf = file->private_data;
	const struct coll_ioctl_op *op;
	union coll_ucmd_buffer buf;
	struct coll_ucmd ucmd = { .ubuf = (void __user *)arg, .cmd = &buf };
	unsigned int nr = _IOC_NR(cmd);
	int ret;

	if (_IOC_TYPE(cmd) != COLL_TYPE ||
	    nr - COLL_CMD_BASE >= ARRAY_SIZE(coll_ioctl_ops))
		return -ENOTTY;
	op = &coll_ioctl_ops[nr - COLL_CMD_BASE];
	if (cmd != _IO(COLL_TYPE, nr))
		return -ENOTTY;

	if (get_user(ucmd.usize, (u32 __user *)ucmd.ubuf))
		return -EFAULT;
	if (ucmd.usize < op->min_size)
		return -EINVAL;
	/* The kernel's own struct size, whatever the caller's was. */
	ret = copy_struct_from_user(&buf, op->size, ucmd.ubuf, ucmd.usize);
	if (ret)
		return ret;
	return op->execute(cf, &ucmd);
}

static const struct file_operations coll_fops = {
	.owner = THIS_MODULE,
	.open = coll_open,
	.release = coll_release,
	.flush = coll_flush,
	.unlocked_ioctl = coll_ioctl,
	.uring_cmd = coll_uring_cmd,
	.compat_ioctl = compat_ptr_ioctl,
	.poll = coll_poll,
	.mmap = coll_mmap,
	.llseek = noop_llseek,
};

static struct miscdevice coll_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = COLL_DEVICE_NAME,
	.fops = &coll_fops,
	.mode = 0666,
};

static int __init coll_init(void)
{
	int ret;

	coll_reduce_select();
	coll_copy_select();
	coll_comm_init_registry();
	coll_wq = alloc_workqueue("collective", WQ_UNBOUND, 0);
	if (!coll_wq)
		return -ENOMEM;
	ret = coll_cq_init();
	if (ret)
		goto err_destroy_wq;
	ret = coll_ib_init();
	if (ret)
		goto err_cq_exit;
	ret = coll_net_init();
	if (ret)
		goto err_ib_exit;
	ret = coll_nl_init();
	if (ret)
		goto err_net_exit;
	ret = misc_register(&coll_misc);
	if (ret)
		goto err_nl_exit;
	return 0;

err_nl_exit:
	coll_nl_exit();
err_net_exit:
	coll_net_exit();
err_ib_exit:
	coll_ib_exit();
err_cq_exit:
	coll_cq_exit();
err_destroy_wq:
	destroy_workqueue(coll_wq);
	return ret;
}

static void __exit coll_exit(void)
{
	misc_deregister(&coll_misc);
	coll_net_exit();
	/* links still going down let go of their devices in the workqueue */
	flush_workqueue(coll_wq);
	coll_ib_exit();
	coll_cq_exit();
	destroy_workqueue(coll_wq);
	coll_nl_exit();
}

module_init(coll_init);
module_exit(coll_exit);

MODULE_DESCRIPTION("Collective communication (AllReduce, AllGather, ...) as a device");
MODULE_AUTHOR("The collective authors");
MODULE_LICENSE("GPL");
