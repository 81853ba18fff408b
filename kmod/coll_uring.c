// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring submission: IORING_OP_URING_CMD on a /dev/collective descriptor.
 *
 * A program posts collectives as SQEs and reaps their results as CQEs,
 * without a system call each.  The SQE (of a ring set up with
 * IORING_SETUP_SQE128) carries cmd_op COLL_SUBMIT and a struct coll_op in
 * its 80-byte command area.  The collective is submitted as a blocking
 * COLL_SUBMIT would be, and matches as one does, but nothing waits: a
 * small one takes the eager path (coll_eager.c), where it completes at
 * once if its result is there and is parked in its slot otherwise; any
 * other goes the task path as a non-blocking submission without a handle.
 * Either way its CQE carries the result, 0 or -errno, and the SQE's
 * user_data names it.  An SQE the ioctl would refuse completes at once
 * with that error and changes nothing.
 *
 * Lifetimes.  A command on the task path holds a reference on its coll_req
 * until the completion is posted (coll_uring_done(), in the submitter's
 * task work); a parked one holds its communicator.  io_uring holds the
 * descriptor's struct file until then, so coll_release() cannot run while
 * a command is in flight.  A process that dies with commands in flight
 * would then keep its communicators, and their peers waiting, for ever:
 * io_uring of 6.1 cannot cancel a driver's command.  So the descriptor's
 * ->flush(), which runs at every close of the process's file table, leaves
 * every communicator of the descriptor when an exiting process closes it
 * with commands of its own in flight (coll_uring_flush()); they fail with
 * ECONNRESET as a close would make them, and the peers see the rank gone.
 *
 * Each descriptor holds at most max_requests commands in flight (ENOSPC
 * beyond), beside its request handles.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "coll_loc.h"
#include "coll_uring.h"

/* The command area of a 128-byte SQE: from sqe->cmd to the end. */
#define COLL_URING_CMD_BYTES	80
static_assert(sizeof(struct coll_op) <= COLL_URING_CMD_BYTES);

/* The command's 80 bytes, wherever this kernel keeps them. */
static const void *coll_uring_payload(const struct io_uring_cmd *ioucmd)
{
#ifdef COLL_HAVE_IO_URING_CMD_H
	return io_uring_sqe_cmd(ioucmd->sqe);
#else
	return ioucmd->cmd;
#endif
}

/* The command's own bytes (pdu): its request. */
static struct coll_req **coll_uring_pdu(struct io_uring_cmd *ioucmd)
{
	BUILD_BUG_ON(sizeof(struct coll_req *) > sizeof(ioucmd->pdu));
	return (struct coll_req **)ioucmd->pdu;
}

void coll_uring_init(struct coll_file *cf)
{
	spin_lock_init(&cf->ulock);
	INIT_LIST_HEAD(&cf->ucmds);
}

/* Take a place for one more command in flight: 0 or -ENOSPC. */
int coll_uring_reserve(struct coll_file *cf)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&cf->ulock, flags);
	if (cf->nucmds >= READ_ONCE(coll_max_requests))
		ret = -ENOSPC;
	else	/* read locklessly by coll_eager_submit() */
		WRITE_ONCE(cf->nucmds, cf->nucmds + 1);
	spin_unlock_irqrestore(&cf->ulock, flags);
	return ret;
}

void coll_uring_unreserve(struct coll_file *cf)
{
	unsigned long flags;

	spin_lock_irqsave(&cf->ulock, flags);
	WRITE_ONCE(cf->nucmds, cf->nucmds - 1);
	spin_unlock_irqrestore(&cf->ulock, flags);
}

/*
 * @req belongs to @ioucmd from now on (the caller gave it the command's
 * reference, which coll_uring_done() drops): listed for flush.  Called
 * before the part is published, since it may complete at once.
 */
void coll_uring_track(struct coll_file *cf, struct coll_req *req,
		      struct io_uring_cmd *ioucmd)
{
	unsigned long flags;

	req->ioucmd = ioucmd;
	req->owner = current->files;
	*coll_uring_pdu(ioucmd) = req;
	spin_lock_irqsave(&cf->ulock, flags);
	list_add_tail(&req->unode, &cf->ucmds);
	spin_unlock_irqrestore(&cf->ulock, flags);
}

/* Undo coll_uring_track(): the part was never published. */
void coll_uring_untrack(struct coll_file *cf, struct coll_req *req)
{
	unsigned long flags;

	spin_lock_irqsave(&cf->ulock, flags);
	list_del(&req->unode);
	spin_unlock_irqrestore(&cf->ulock, flags);
	req->ioucmd = NULL;
}

/* Task work of the submitter: post the CQE, then let the request go. */
static void coll_uring_done(struct io_uring_cmd *ioucmd,
			    unsigned int issue_flags)
{
	struct coll_req *req = *coll_uring_pdu(ioucmd);

	io_uring_cmd_done(ioucmd, READ_ONCE(req->status), 0, issue_flags);
	coll_req_put(req);
}

/**
 * coll_uring_complete() - the collective behind an io_uring command ended
 * @req: its request (the caller holds the part's reference)
 * @cf: its descriptor
 * @status: the result
 *
 * Any context: the completion is posted from the submitter's task work
 * (io_uring falls back to a kernel worker if that task is exiting).
 */
void coll_uring_complete(struct coll_req *req, struct coll_file *cf,
			 int status)
{
	unsigned long flags;

	WRITE_ONCE(req->status, status);
	spin_lock_irqsave(&cf->ulock, flags);
	list_del(&req->unode);
	WRITE_ONCE(cf->nucmds, cf->nucmds - 1);
	spin_unlock_irqrestore(&cf->ulock, flags);
	io_uring_cmd_complete_in_task(req->ioucmd, coll_uring_done);
}

/**
 * coll_uring_flush() - ->flush(): does an exiting process leave commands?
 * @cf: the descriptor
 * @id: the file table being closed
 *
 * An exiting process that submitted commands still in flight on @cf
 * leaves every communicator of @cf, as the close that io_uring's hold on
 * the file defers would have.  A close that is not an exit (or another
 * process's, sharing the descriptor) changes nothing.
 *
 * Locks: takes cf->ulock, then cf->lock and under it each comm->lock
 * (coll_eager_owns()), then what coll_comm_leave_all() takes.
 *
 * Return: 0.
 */
int coll_uring_flush(struct coll_file *cf, void *id)
{
	unsigned long flags, index;
	struct coll_member *m;
	struct coll_req *req;
	bool mine = false;

	if (!(current->flags & PF_EXITING))
		return 0;
	spin_lock_irqsave(&cf->ulock, flags);
	list_for_each_entry(req, &cf->ucmds, unode) {
		if (req->owner == id) {
			mine = true;
			break;
		}
	}
	spin_unlock_irqrestore(&cf->ulock, flags);
	/* or parked in an eager slot (coll_eager.c) */
	mutex_lock(&cf->lock);
	xa_for_each(&cf->members, index, m) {
		if (mine)
			break;
		mine = coll_eager_owns(m, id);
	}
	mutex_unlock(&cf->lock);
	if (mine)
		coll_comm_leave_all(cf);
	return 0;
}

/**
 * coll_uring_cmd() - file_operations.uring_cmd
 * @ioucmd: the command; cmd_op COLL_SUBMIT, a struct coll_op in its
 *          payload (IORING_SETUP_SQE128)
 * @issue_flags: IO_URING_F_*
 *
 * The payload is in memory the program shares with the kernel: it is
 * copied once, then checked as COLL_SUBMIT checks its argument; out_req,
 * an output of the ioctl, is ignored.  Issuing may sleep (a pin that misses
 * the registration cache), as an ioctl would.
 *
 * Return: -EIOCBQUEUED (the completion comes when the collective ends), or
 * -errno for the CQE at once: EINVAL without SQE128, a size smaller than
 * the kernel's struct or larger than 80, or non-zero uring_cmd_flags
 * (io_uring itself refuses those it does not know; IORING_URING_CMD_FIXED
 * is refused here); E2BIG for a larger struct whose tail is not 0; ENOTTY for
 * another cmd_op; EOPNOTSUPP for io_uring's IOPOLL rings; ENOSPC with
 * max_requests commands in flight; else what COLL_SUBMIT returns.
 */
int coll_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct coll_file *cf = ioucmd->file->private_data;
	u8 buf[COLL_URING_CMD_BYTES];
	struct coll_op arg;
	u32 size;

	if (ioucmd->cmd_op != COLL_SUBMIT)
		return -ENOTTY;
	if (issue_flags & IO_URING_F_IOPOLL)
		return -EOPNOTSUPP;
	if (!(issue_flags & IO_URING_F_SQE128) || ioucmd->flags)
		return -EINVAL;
	/* One copy: the program may write the ring meanwhile. */
	memcpy(buf, coll_uring_payload(ioucmd), sizeof(buf));
	memcpy(&size, buf, sizeof(size));
	/* As copy_struct_from_user(): a larger struct's tail must be 0. */
	if (size < sizeof(arg) || size > sizeof(buf))
		return -EINVAL;
	if (memchr_inv(buf + sizeof(arg), 0, size - sizeof(arg)))
		return -E2BIG;
	memcpy(&arg, buf, sizeof(arg));
	return coll_op_submit_one(cf, &arg, NULL, ioucmd);
}
