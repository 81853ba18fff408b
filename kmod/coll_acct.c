// SPDX-License-Identifier: GPL-2.0
/*
 * Accounting: what the module holds on behalf of users, and the limits on
 * it that are not RLIMIT_MEMLOCK (pinned pages are charged in coll_obuf.c).
 *
 * - Kernel memory: every object a user makes the module allocate is charged
 *   to the caller's memory cgroup (GFP_KERNEL_ACCOUNT, as iommufd does) and
 *   counted in coll_stats.kbytes, which COLL_INFO reports.
 * - Communicators per process: a process (thread group) may be a member of
 *   at most max_comms communicators; the count is kept per thread-group
 *   pid, which cannot be reused while we hold a reference to it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hashtable.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "coll_loc.h"

/**
 * coll_kvzalloc() - zeroed kernel memory charged to the caller
 * @size: bytes; the caller frees with coll_kvfree() and the same size
 *
 * Return: the memory, or NULL (quietly: a user's size may reach here).
 */
void *coll_kvzalloc(size_t size)
{
	void *p = kvzalloc(size, GFP_KERNEL_ACCOUNT | __GFP_NOWARN);

	if (p)
		atomic64_add(size, &coll_stats.kbytes);
	return p;
}

void coll_kvfree(void *p, size_t size)
{
	if (!p)
		return;
	atomic64_sub(size, &coll_stats.kbytes);
	kvfree(p);
}

struct coll_proc {
	struct hlist_node node;		/* coll_procs, coll_procs_lock */
	struct pid *tgid;		/* holds a ref */
	u32 ncomms;			/* coll_procs_lock */
};

static DEFINE_HASHTABLE(coll_procs, 6);
static DEFINE_SPINLOCK(coll_procs_lock);

/**
 * coll_proc_charge() - count one more communicator for the calling process
 * @out: the process's record, for coll_proc_uncharge()
 *
 * Locks: takes coll_procs_lock.
 *
 * Return: 0, -EMFILE at the max_comms limit, -ENOMEM.
 */
int coll_proc_charge(struct coll_proc **out)
{
	struct pid *tgid = task_tgid(current);
	u32 limit = READ_ONCE(coll_max_comms);
	struct coll_proc *p, *fresh;
	int ret = 0;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	if (!fresh)
		return -ENOMEM;

	spin_lock(&coll_procs_lock);
	hash_for_each_possible(coll_procs, p, node, (unsigned long)tgid)
		if (p->tgid == tgid)
			break;
	if (!p && limit) {
		p = fresh;
		fresh = NULL;
		p->tgid = get_pid(tgid);
		hash_add(coll_procs, &p->node, (unsigned long)tgid);
		atomic64_add(sizeof(*p), &coll_stats.kbytes);
	}
	if (!p || p->ncomms >= limit)
		ret = -EMFILE;
	else
		p->ncomms++;
	spin_unlock(&coll_procs_lock);
	kfree(fresh);
	if (!ret)
		*out = p;
	return ret;
}

/**
 * coll_proc_uncharge() - a membership charged by coll_proc_charge() ended
 * @proc: the record, or NULL
 *
 * Locks: takes coll_procs_lock.
 */
void coll_proc_uncharge(struct coll_proc *proc)
{
	struct pid *tgid = NULL;

	if (!proc)
		return;
	spin_lock(&coll_procs_lock);
	if (!--proc->ncomms) {
		hash_del(&proc->node);
		tgid = proc->tgid;
	}
	spin_unlock(&coll_procs_lock);
	if (tgid) {
		put_pid(tgid);
		atomic64_sub(sizeof(*proc), &coll_stats.kbytes);
		kfree(proc);
	}
}
