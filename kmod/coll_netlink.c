// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family "collective" (uapi/collective.yaml): the
 * tunables, the communicators, the collectives in flight, the statistics,
 * and a multicast group of notifications.
 *
 * The uapi header and the policy tables (coll_nl_gen.h) are generated from
 * the spec by the kernel's YNL generator; the generator's ops table uses
 * struct genl_split_ops, which 6.1 does not have, so the table below is
 * written by hand in 6.1's struct genl_ops, one entry per command.
 *
 * Visibility: a communicator is seen by the processes of its owner's user
 * (the effective uid of its creator) and by those with CAP_NET_ADMIN over
 * the namespace; one that the caller may not see does not exist for it
 * (ENOENT).  Only communicators of the caller's network namespace are
 * seen.  Nothing says a communicator's id or a user address: communicators
 * are named by their serial number.
 *
 * Setting a module-wide tunable needs CAP_NET_ADMIN in the initial user
 * namespace (they are the module's parameters, one set for every
 * namespace); setting a communicator's, its owner or CAP_NET_ADMIN over
 * the namespace.  Ranges are checked by the generated policies, which the
 * core reports by extended ACK (the attribute and the policy's range).
 * The notifications may say what any user's communicators do: the group
 * needs CAP_NET_ADMIN.
 *
 * Locks: the handlers hold no lock of their own; they take a reference on
 * each communicator (coll_comm_next()) and the locks the getters document;
 * the dumps of collectives and statistics fill the message under comm->lock
 * (nla_put() does not allocate).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <net/sock.h>

#include "coll_loc.h"
#include "coll_nl_gen.h"

/* Missing ranks listed per collective, at most (the rest are counted). */
#define COLL_NL_MISSING_MAX	128

enum coll_nl_groups {
	COLL_NLGRP_EVENTS,
};

static struct genl_family coll_nl_family;

/* May the sender of @skb see or tune anything in @net? */
static bool coll_nl_admin(const struct sk_buff *skb)
{
	return netlink_net_capable(skb, CAP_NET_ADMIN);
}

/* Locks: none.  The sender's own user, or CAP_NET_ADMIN over its netns. */
static bool coll_nl_visible(const struct sk_buff *skb,
			    const struct coll_comm *comm)
{
	return uid_eq(comm->owner, current_euid()) || coll_nl_admin(skb);
}

/* The communicator named by @attr, with a reference, if the sender sees it. */
static struct coll_comm *coll_nl_comm(struct sk_buff *skb,
				      struct genl_info *info,
				      struct nlattr *attr)
{
	struct coll_comm *comm;

	comm = coll_comm_get_serial(genl_info_net(info), nla_get_u32(attr));
	if (comm && !coll_nl_visible(skb, comm)) {
		coll_comm_put(comm);
		comm = NULL;
	}
	if (!comm)
		NL_SET_ERR_MSG_ATTR(info->extack, attr, "no such communicator");
	return comm;
}

static u32 coll_nl_uid(kuid_t uid)
{
	return from_kuid_munged(current_user_ns(), uid);
}

/* ---- tunables -------------------------------------------------------- */

static int coll_nl_tune_fill(struct sk_buff *msg, struct coll_comm *comm)
{
	u32 id;

	if (comm && nla_put_u32(msg, COLLECTIVE_A_TUNE_COMM, comm->serial))
		return -EMSGSIZE;
	for (id = 0; id < COLL_TUNE_NR; id++) {
		const struct coll_tune_desc *d = &coll_tune_descs[id];
		struct coll_comm *c = d->per_comm ? comm : NULL;

		if (nla_put_u32(msg, COLLECTIVE_A_TUNE_ALGO + id,
				coll_tune_get(c, id)))
			return -EMSGSIZE;
	}
	if (!comm)
		return 0;
	for (id = 0; id < COLL_TUNE_NR; id++)
		if (test_bit(id, comm->tune.set) &&
		    nla_put_string(msg, COLLECTIVE_A_TUNE_OVERRIDDEN,
				   coll_tune_descs[id].name))
			return -EMSGSIZE;
	return 0;
}

static int coll_nl_tune_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *attr = info->attrs[COLLECTIVE_A_TUNE_COMM];
	struct coll_comm *comm = NULL;
	struct sk_buff *msg;
	void *hdr;
	int err;

	if (attr) {
		comm = coll_nl_comm(skb, info, attr);
		if (!comm)
			return -ENOENT;
	}
	err = -ENOMEM;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		goto out_put;
	hdr = genlmsg_put_reply(msg, info, &coll_nl_family, 0,
				COLLECTIVE_CMD_TUNE_GET);
	err = -EMSGSIZE;
	if (!hdr || coll_nl_tune_fill(msg, comm)) {
		nlmsg_free(msg);
		goto out_put;
	}
	genlmsg_end(msg, hdr);
	err = genlmsg_reply(msg, info);
out_put:
	if (comm)
		coll_comm_put(comm);
	return err;
}

static int coll_nl_tune_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *attr = info->attrs[COLLECTIVE_A_TUNE_COMM];
	struct netlink_ext_ack *extack = info->extack;
	struct coll_comm *comm = NULL;
	int err = 0;
	u32 id;

	if (attr) {
		comm = coll_nl_comm(skb, info, attr);
		if (!comm)
			return -ENOENT;
		if (!uid_eq(comm->owner, current_euid()) &&
		    !coll_nl_admin(skb)) {
			NL_SET_ERR_MSG(extack,
				       "only the communicator's owner or CAP_NET_ADMIN may tune it");
			err = -EPERM;
			goto out_put;
		}
	} else if (!netlink_capable(skb, CAP_NET_ADMIN)) {
		NL_SET_ERR_MSG(extack,
			       "module-wide tunables need CAP_NET_ADMIN");
		return -EPERM;
	} else if (info->attrs[COLLECTIVE_A_TUNE_RESET]) {
		NL_SET_ERR_MSG_ATTR(extack, info->attrs[COLLECTIVE_A_TUNE_RESET],
				    "reset needs a communicator (comm)");
		return -EINVAL;
	}

	/* Check everything before changing anything. */
	for (id = 0; comm && id < COLL_TUNE_NR; id++) {
		struct nlattr *a = info->attrs[COLLECTIVE_A_TUNE_ALGO + id];

		if (a && !coll_tune_descs[id].per_comm) {
			NL_SET_ERR_MSG_ATTR(extack, a,
					    "not a per-communicator tunable (module-wide only)");
			err = -EOPNOTSUPP;
			goto out_put;
		}
	}

	coll_tune_lock();
	if (comm && info->attrs[COLLECTIVE_A_TUNE_RESET])
		coll_tune_reset(comm);
	for (id = 0; id < COLL_TUNE_NR; id++) {
		struct nlattr *a = info->attrs[COLLECTIVE_A_TUNE_ALGO + id];

		if (a)
			coll_tune_set(comm, id, nla_get_u32(a));
	}
	coll_tune_unlock();
out_put:
	if (comm)
		coll_comm_put(comm);
	return err;
}

/* ---- communicators ------------------------------------------------------ */

static int coll_nl_comm_peers(struct sk_buff *msg, struct coll_comm *comm)
{
	u32 h, nh = comm->hosts ? comm->hosts->nhosts : 1;
	struct coll_peer_info pi;
	struct nlattr *nest;

	for (h = 0; h < nh; h++) {
		coll_comm_peer_info(comm, h, &pi);
		nest = nla_nest_start(msg, COLLECTIVE_A_COMM_PEER);
		if (!nest ||
		    nla_put_u32(msg, COLLECTIVE_A_PEER_HOST, h) ||
		    nla_put_u32(msg, COLLECTIVE_A_PEER_NRANKS, pi.nranks) ||
		    nla_put_u32(msg, COLLECTIVE_A_PEER_TRANSPORT,
				pi.transport) ||
		    nla_put_u32(msg, COLLECTIVE_A_PEER_FALLBACK, pi.fallback) ||
		    nla_put_u64_64bit(msg, COLLECTIVE_A_PEER_BYTES_SENT,
				      pi.bytes_sent, COLLECTIVE_A_PEER_PAD) ||
		    nla_put_u64_64bit(msg, COLLECTIVE_A_PEER_BYTES_RECEIVED,
				      pi.bytes_received, COLLECTIVE_A_PEER_PAD) ||
		    nla_put_u32(msg, COLLECTIVE_A_PEER_QPS, pi.qps))
			return -EMSGSIZE;
		nla_nest_end(msg, nest);
	}
	return 0;
}

static u32 coll_nl_comm_nops(struct coll_comm *comm)
{
	struct coll_task *task;
	u32 n = 0;

	spin_lock(&comm->lock);
	list_for_each_entry(task, &comm->tasks, node)
		n++;
	spin_unlock(&comm->lock);
	return n;
}

/* Locks: as coll_comm_nl_state() and coll_comm_peer_info(), in turn. */
static int coll_nl_comm_fill(struct sk_buff *msg, struct coll_comm *comm,
			     u32 portid, u32 seq, int flags)
{
	const struct coll_hosts *hs = comm->hosts;
	u32 state, njoined;
	int error;
	void *hdr;

	hdr = genlmsg_put(msg, portid, seq, &coll_nl_family, flags,
			  COLLECTIVE_CMD_COMM_GET);
	if (!hdr)
		return -EMSGSIZE;
	state = coll_comm_nl_state(comm, &njoined, &error);
	if (nla_put_u32(msg, COLLECTIVE_A_COMM_SERIAL, comm->serial) ||
	    nla_put_u32(msg, COLLECTIVE_A_COMM_NRANKS, comm->nranks) ||
	    nla_put_u32(msg, COLLECTIVE_A_COMM_LOCAL_RANKS,
			coll_comm_nlocal(comm)) ||
	    nla_put_u32(msg, COLLECTIVE_A_COMM_JOINED, njoined) ||
	    nla_put_u32(msg, COLLECTIVE_A_COMM_OWNER_UID,
			coll_nl_uid(comm->owner)) ||
	    nla_put_u32(msg, COLLECTIVE_A_COMM_STATE, state) ||
	    nla_put_u32(msg, COLLECTIVE_A_COMM_NHOSTS, hs ? hs->nhosts : 1) ||
	    nla_put_u32(msg, COLLECTIVE_A_COMM_HOST, hs ? hs->self : 0) ||
	    nla_put_u32(msg, COLLECTIVE_A_COMM_RANKS_PER_HOST,
			hs ? hs->local : comm->nranks) ||
	    nla_put_u32(msg, COLLECTIVE_A_COMM_OPS_IN_FLIGHT,
			coll_nl_comm_nops(comm)) ||
	    nla_put_u32(msg, COLLECTIVE_A_COMM_ERROR, -error) ||
	    nla_put_u64_64bit(msg, COLLECTIVE_A_COMM_AGE_MS,
			      jiffies_to_msecs(jiffies - comm->born),
			      COLLECTIVE_A_COMM_PAD) ||
	    coll_nl_comm_peers(msg, comm)) {
		genlmsg_cancel(msg, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return 0;
}

static int coll_nl_comm_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *attr = info->attrs[COLLECTIVE_A_COMM_SERIAL];
	struct coll_comm *comm;
	struct sk_buff *msg;
	int err;

	if (GENL_REQ_ATTR_CHECK(info, COLLECTIVE_A_COMM_SERIAL))
		return -EINVAL;
	comm = coll_nl_comm(skb, info, attr);
	if (!comm)
		return -ENOENT;
	err = -ENOMEM;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		goto out_put;
	err = coll_nl_comm_fill(msg, comm, info->snd_portid, info->snd_seq, 0);
	if (err) {
		nlmsg_free(msg);
		goto out_put;
	}
	err = genlmsg_reply(msg, info);
out_put:
	coll_comm_put(comm);
	return err;
}

/*
 * Dump state: cb->args[0] is the serial of the last communicator done
 * (0: none yet); for collectives, cb->args[1] the sequence number to
 * resume at within the next one.
 */
static int coll_nl_comm_get_dumpit(struct sk_buff *skb,
				   struct netlink_callback *cb)
{
	struct net *net = sock_net(skb->sk);
	u32 after = cb->args[0];
	struct coll_comm *comm;
	int err = 0;

	while ((comm = coll_comm_next(net, after))) {
		if (coll_nl_visible(cb->skb, comm))
			err = coll_nl_comm_fill(skb, comm,
						NETLINK_CB(cb->skb).portid,
						cb->nlh->nlmsg_seq, NLM_F_MULTI);
		if (!err)
			after = comm->serial;
		coll_comm_put(comm);
		if (err)
			break;
	}
	cb->args[0] = after;
	if (err && !skb->len)
		return err;
	return skb->len;
}

/* ---- collectives in flight ---------------------------------------------- */

static bool coll_nl_rank_local(const struct coll_comm *comm, u32 rank)
{
	return !comm->hosts ||
	       coll_hosts_of(comm->hosts, rank) == comm->hosts->self;
}

/* What op-get says of every collective in flight, task or eager slot. */
struct coll_nl_op_head {
	u64 seq;
	u32 prim;
	u32 algo;
	u64 bytes;
	u32 state;		/* enum coll_task_state */
	u32 round;
	u32 nrounds;
	u64 t_first;		/* ns: its first rank came */
	u32 arrived;
};

/* The message's header and every attribute but the missing ranks. */
static void *coll_nl_op_put(struct sk_buff *msg, struct coll_comm *comm,
			    const struct coll_nl_op_head *h, u32 portid,
			    u32 seq)
{
	void *hdr;

	hdr = genlmsg_put(msg, portid, seq, &coll_nl_family, NLM_F_MULTI,
			  COLLECTIVE_CMD_OP_GET);
	if (!hdr)
		return NULL;
	if (nla_put_u32(msg, COLLECTIVE_A_OP_COMM, comm->serial) ||
	    nla_put_u64_64bit(msg, COLLECTIVE_A_OP_SEQ, h->seq,
			      COLLECTIVE_A_OP_PAD) ||
	    nla_put_u32(msg, COLLECTIVE_A_OP_PRIM, h->prim) ||
	    nla_put_u32(msg, COLLECTIVE_A_OP_ALGO, h->algo) ||
	    nla_put_u64_64bit(msg, COLLECTIVE_A_OP_BYTES, h->bytes,
			      COLLECTIVE_A_OP_PAD) ||
	    nla_put_u32(msg, COLLECTIVE_A_OP_STATE, h->state) ||
	    nla_put_u32(msg, COLLECTIVE_A_OP_ROUND, h->round) ||
	    nla_put_u32(msg, COLLECTIVE_A_OP_NROUNDS, h->nrounds) ||
	    nla_put_u64_64bit(msg, COLLECTIVE_A_OP_AGE_MS,
			      div_u64(ktime_get_ns() - h->t_first,
				      NSEC_PER_MSEC), COLLECTIVE_A_OP_PAD) ||
	    nla_put_u32(msg, COLLECTIVE_A_OP_ARRIVED, h->arrived)) {
		genlmsg_cancel(msg, hdr);
		return NULL;
	}
	return hdr;
}

/* Locks: comm->lock; takes task->lock (coll_xhost_heard_from()). */
static int coll_nl_op_fill(struct sk_buff *msg, struct coll_task *task,
			   u32 portid, u32 seq)
{
	struct coll_comm *comm = task->comm;
	enum coll_task_state state = coll_task_state(task);
	const struct coll_sub *first = NULL;
	u32 r, nmissing = 0, h, lasth = U32_MAX;
	struct coll_nl_op_head head = {
		.seq = task->seq,
		.prim = coll_task_prim(task),
		.state = state,
		.t_first = task->t_first,
		.arrived = task->narrived,
	};
	bool heard = false;
	void *hdr;

	lockdep_assert_held(&comm->lock);
	for (r = 0; r < task->nranks && !first; r++)
		first = task->sub[r];
	if (state != COLL_TASK_ARRIVING && task->sched) {
		head.algo = task->desc.algo;
		head.bytes = task->bytes;
		head.nrounds = task->sched->nrounds;
		/* pairs with smp_store_release() in coll_run_open() */
		head.round = min(smp_load_acquire(&task->phase) / 2,
				 head.nrounds);
	} else {
		head.algo = first ? first->desc.algo : COLL_ALGO_AUTO;
		head.bytes = first && first->desc.prim != COLL_BARRIER ?
			first->desc.count * coll_dtype_size(first->desc.dtype) :
			0;
	}

	hdr = coll_nl_op_put(msg, comm, &head, portid, seq);
	if (!hdr)
		return -EMSGSIZE;
	for (r = 0; r < task->nranks; r++) {
		if (task->sub[r])
			continue;
		/* another host's: missing until that host's READY(0) came */
		if (!coll_nl_rank_local(comm, r)) {
			h = coll_hosts_of(comm->hosts, r);
			if (h != lasth) {
				lasth = h;
				heard = coll_xhost_heard_from(task, h);
			}
			if (heard)
				continue;
		}
		if (++nmissing > COLL_NL_MISSING_MAX)
			break;
		if (nla_put_u32(msg, COLLECTIVE_A_OP_MISSING, r))
			goto cancel;
	}
	genlmsg_end(msg, hdr);
	return 0;
cancel:
	genlmsg_cancel(msg, hdr);
	return -EMSGSIZE;
}

/*
 * Locks: comm->lock.  A collective in an eager slot (coll_eager.c): no
 * task, no rounds; the algorithm is AUTO, the state ARRIVING until every
 * rank has come, RUNNING after (the results being copied out).
 */
static int coll_nl_eager_fill(struct sk_buff *msg, struct coll_comm *comm,
			      const struct coll_eager_op *op, u32 portid,
			      u32 seq)
{
	struct coll_nl_op_head head = {
		.seq = op->seq,
		.prim = op->desc.prim,
		.algo = op->desc.algo,
		.bytes = op->desc.count * coll_desc_esize(&op->desc),
		.state = op->narrived < comm->nranks ? COLL_TASK_ARRIVING :
						       COLL_TASK_RUNNING,
		.t_first = op->t_first,
		.arrived = op->narrived,
	};
	u32 r, nmissing = 0;
	void *hdr;

	lockdep_assert_held(&comm->lock);
	hdr = coll_nl_op_put(msg, comm, &head, portid, seq);
	if (!hdr)
		return -EMSGSIZE;
	for_each_clear_bit(r, op->arrived, comm->nranks) {
		if (++nmissing > COLL_NL_MISSING_MAX)
			break;
		if (nla_put_u32(msg, COLLECTIVE_A_OP_MISSING, r))
			goto cancel;
	}
	genlmsg_end(msg, hdr);
	return 0;
cancel:
	genlmsg_cancel(msg, hdr);
	return -EMSGSIZE;
}

/*
 * Locks: comm->lock.  The collective of the mapped slots that waits for a
 * rank (coll_map.c): flagged mapped, its sequence number the slots' own.
 */
static int coll_nl_map_fill(struct sk_buff *msg, struct coll_comm *comm,
			    u32 portid, u32 seq)
{
	struct coll_map_op op;
	struct coll_nl_op_head head;
	u64 now = ktime_get_ns();
	u32 r, nmissing = 0;
	void *hdr;

	lockdep_assert_held(&comm->lock);
	if (!coll_map_op_locked(comm, &op))
		return 0;
	head = (struct coll_nl_op_head){
		.seq = op.seq,
		.prim = op.prim,
		.algo = COLL_ALGO_AUTO,
		.bytes = op.bytes,
		.state = COLL_TASK_ARRIVING,
		.t_first = op.t_wait && op.t_wait <= now ? op.t_wait : now,
		.arrived = op.narrived,
	};
	hdr = coll_nl_op_put(msg, comm, &head, portid, seq);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_flag(msg, COLLECTIVE_A_OP_MAPPED))
		goto cancel;
	for (r = 0; r < comm->nranks; r++) {
		if (!coll_map_missing(&op, r))
			continue;
		if (++nmissing > COLL_NL_MISSING_MAX)
			break;
		if (nla_put_u32(msg, COLLECTIVE_A_OP_MISSING, r))
			goto cancel;
	}
	genlmsg_end(msg, hdr);
	return 0;
cancel:
	genlmsg_cancel(msg, hdr);
	return -EMSGSIZE;
}

/*
 * Every collective of @comm from sequence number *@from on, tasks and
 * eager slots merged in order of sequence number; first, unless *@mapped
 * says it is done, the one of the mapped slots that waits.
 */
static int coll_nl_op_comm(struct sk_buff *skb, struct netlink_callback *cb,
			   struct coll_comm *comm, u64 *from, long *mapped)
{
	u32 portid = NETLINK_CB(cb->skb).portid, nlseq = cb->nlh->nlmsg_seq;
	struct coll_task *task;
	struct coll_eager_op op;
	bool have_op;
	int err = 0;

	spin_lock(&comm->lock);
	if (!*mapped) {
		err = coll_nl_map_fill(skb, comm, portid, nlseq);
		if (err)
			goto out_unlock;
		*mapped = 1;
	}
	have_op = coll_eager_op_locked(comm, *from, &op);
	list_for_each_entry(task, &comm->tasks, node) {
		if (task->seq < *from)
			continue;
		while (have_op && op.seq < task->seq) {
			err = coll_nl_eager_fill(skb, comm, &op, portid, nlseq);
			if (err) {
				*from = op.seq;
				goto out_unlock;
			}
			have_op = coll_eager_op_locked(comm, op.seq + 1, &op);
		}
		err = coll_nl_op_fill(skb, task, portid, nlseq);
		if (err) {
			*from = task->seq;
			goto out_unlock;
		}
	}
	while (have_op) {
		err = coll_nl_eager_fill(skb, comm, &op, portid, nlseq);
		if (err) {
			*from = op.seq;
			break;
		}
		have_op = coll_eager_op_locked(comm, op.seq + 1, &op);
	}
out_unlock:
	spin_unlock(&comm->lock);
	return err;
}

static int coll_nl_op_get_dumpit(struct sk_buff *skb,
				 struct netlink_callback *cb)
{
	const struct genl_dumpit_info *info = genl_dumpit_info(cb);
	struct nlattr *only = info->attrs[COLLECTIVE_A_OP_COMM];
	struct net *net = sock_net(skb->sk);
	u32 after = cb->args[0];
	u64 from = cb->args[1];
	long mapped = cb->args[2];
	struct coll_comm *comm;
	int err = 0;

	while ((comm = coll_comm_next(net, after))) {
		if ((!only || nla_get_u32(only) == comm->serial) &&
		    coll_nl_visible(cb->skb, comm))
			err = coll_nl_op_comm(skb, cb, comm, &from, &mapped);
		if (!err) {
			after = comm->serial;
			from = 0;
			mapped = 0;
		}
		coll_comm_put(comm);
		if (err)
			break;
	}
	cb->args[0] = after;
	cb->args[1] = from;
	cb->args[2] = mapped;
	if (err && !skb->len)
		return err;
	return skb->len;
}

/* ---- statistics --------------------------------------------------------- */

static int coll_nl_pstat_fill(struct sk_buff *msg, u32 prim,
			      const struct coll_pstat *ps)
{
	struct nlattr *nest, *sub;
	u32 i;

	nest = nla_nest_start(msg, COLLECTIVE_A_STATS_PRIM);
	if (!nest ||
	    nla_put_u32(msg, COLLECTIVE_A_PRIM_STATS_PRIM, prim) ||
	    nla_put_u64_64bit(msg, COLLECTIVE_A_PRIM_STATS_CALLS, ps->calls,
			      COLLECTIVE_A_PRIM_STATS_PAD) ||
	    nla_put_u64_64bit(msg, COLLECTIVE_A_PRIM_STATS_BYTES, ps->bytes,
			      COLLECTIVE_A_PRIM_STATS_PAD) ||
	    nla_put_u64_64bit(msg, COLLECTIVE_A_PRIM_STATS_TIME_NS,
			      ps->time_ns, COLLECTIVE_A_PRIM_STATS_PAD) ||
	    nla_put_u64_64bit(msg, COLLECTIVE_A_PRIM_STATS_PINS, ps->pins,
			      COLLECTIVE_A_PRIM_STATS_PAD) ||
	    nla_put_u64_64bit(msg, COLLECTIVE_A_PRIM_STATS_PINNED_PAGES,
			      ps->pinned_pages, COLLECTIVE_A_PRIM_STATS_PAD) ||
	    nla_put_u64_64bit(msg, COLLECTIVE_A_PRIM_STATS_REG_HITS,
			      ps->reg_hits, COLLECTIVE_A_PRIM_STATS_PAD) ||
	    nla_put_u64_64bit(msg, COLLECTIVE_A_PRIM_STATS_EAGER,
			      ps->eager, COLLECTIVE_A_PRIM_STATS_PAD))
		return -EMSGSIZE;
	for (i = 0; i < COLLECTIVE_HIST_BUCKETS; i++)
		if (nla_put_u64_64bit(msg, COLLECTIVE_A_PRIM_STATS_HIST,
				      ps->hist[i], COLLECTIVE_A_PRIM_STATS_PAD))
			return -EMSGSIZE;
	for (i = 0; i < COLLECTIVE_HIST_BUCKETS; i++)
		if (nla_put_u64_64bit(msg, COLLECTIVE_A_PRIM_STATS_HIST_BYTES,
				      ps->hist_bytes[i],
				      COLLECTIVE_A_PRIM_STATS_PAD))
			return -EMSGSIZE;
	for (i = 0; i < COLL_ALGO_MAX; i++) {
		if (!ps->algo[i])
			continue;
		sub = nla_nest_start(msg, COLLECTIVE_A_PRIM_STATS_ALGO);
		if (!sub ||
		    nla_put_u32(msg, COLLECTIVE_A_ALGOCOUNT_ALGO, i) ||
		    nla_put_u64_64bit(msg, COLLECTIVE_A_ALGOCOUNT_COUNT,
				      ps->algo[i], COLLECTIVE_A_ALGOCOUNT_PAD))
			return -EMSGSIZE;
		nla_nest_end(msg, sub);
	}
	for (i = 0; i < COLL_STAT_NERR; i++) {
		if (!ps->err_no[i])
			continue;
		sub = nla_nest_start(msg, COLLECTIVE_A_PRIM_STATS_ERRORS);
		if (!sub ||
		    nla_put_u32(msg, COLLECTIVE_A_ERRCOUNT_ERRNO, ps->err_no[i]) ||
		    nla_put_u64_64bit(msg, COLLECTIVE_A_ERRCOUNT_COUNT,
				      ps->err_count[i],
				      COLLECTIVE_A_ERRCOUNT_PAD))
			return -EMSGSIZE;
		nla_nest_end(msg, sub);
	}
	nla_nest_end(msg, nest);
	return 0;
}

/* Locks: takes comm->lock. */
static int coll_nl_stats_fill(struct sk_buff *msg, struct coll_comm *comm,
			      u32 portid, u32 seq, int flags)
{
	int err = 0;
	void *hdr;
	u32 p;

	hdr = genlmsg_put(msg, portid, seq, &coll_nl_family, flags,
			  COLLECTIVE_CMD_STATS_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(msg, COLLECTIVE_A_STATS_COMM, comm->serial) ||
	    nla_put_u32(msg, COLLECTIVE_A_STATS_NRANKS, comm->nranks) ||
	    nla_put_u32(msg, COLLECTIVE_A_STATS_SPIN_NS,
			coll_tune_get(comm, COLL_TUNE_SPIN_NS))) {
		genlmsg_cancel(msg, hdr);
		return -EMSGSIZE;
	}
	spin_lock(&comm->lock);
	for (p = 0; p < COLL_PRIM_MAX && !err; p++)
		if (comm->stats->prim[p].calls)
			err = coll_nl_pstat_fill(msg, p, &comm->stats->prim[p]);
	spin_unlock(&comm->lock);
	if (err) {
		genlmsg_cancel(msg, hdr);
		return err;
	}
	genlmsg_end(msg, hdr);
	return 0;
}

/* Room for every primitive's statistics. */
#define COLL_NL_STATS_SIZE	(16 * 1024)

static int coll_nl_stats_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *attr = info->attrs[COLLECTIVE_A_STATS_COMM];
	struct coll_comm *comm;
	struct sk_buff *msg;
	int err;

	if (GENL_REQ_ATTR_CHECK(info, COLLECTIVE_A_STATS_COMM))
		return -EINVAL;
	comm = coll_nl_comm(skb, info, attr);
	if (!comm)
		return -ENOENT;
	err = -ENOMEM;
	msg = genlmsg_new(COLL_NL_STATS_SIZE, GFP_KERNEL);
	if (!msg)
		goto out_put;
	err = coll_nl_stats_fill(msg, comm, info->snd_portid, info->snd_seq,
				 0);
	if (err) {
		nlmsg_free(msg);
		goto out_put;
	}
	err = genlmsg_reply(msg, info);
out_put:
	coll_comm_put(comm);
	return err;
}

/* A communicator's statistics are one message: make room for all of it. */
static int coll_nl_stats_get_start(struct netlink_callback *cb)
{
	cb->min_dump_alloc = COLL_NL_STATS_SIZE;
	return 0;
}

static int coll_nl_stats_get_dumpit(struct sk_buff *skb,
				    struct netlink_callback *cb)
{
	struct net *net = sock_net(skb->sk);
	u32 after = cb->args[0];
	struct coll_comm *comm;
	int err = 0;

	while ((comm = coll_comm_next(net, after))) {
		if (coll_nl_visible(cb->skb, comm))
			err = coll_nl_stats_fill(skb, comm,
						 NETLINK_CB(cb->skb).portid,
						 cb->nlh->nlmsg_seq,
						 NLM_F_MULTI);
		if (!err)
			after = comm->serial;
		coll_comm_put(comm);
		if (err)
			break;
	}
	cb->args[0] = after;
	if (err && !skb->len)
		return err;
	return skb->len;
}

/* ---- notifications ------------------------------------------------------ */

/**
 * coll_nl_notify() - tell the group "events" what happened to @comm
 * @comm: the communicator
 * @event: enum collective_event
 * @err: negative errno of a failure, or 0
 * @reason: what happened, or NULL
 * @host: the peer host of a fallback; of a failure, the one whose link
 *        failed or whose rank left (U32_MAX: none)
 * @fallback: enum coll_fallback of a fallback
 * @gfp: the caller's context
 *
 * Locks: none taken; any context that may allocate with @gfp.
 */
void coll_nl_notify(struct coll_comm *comm, u32 event, int err,
		    const char *reason, u32 host, u32 fallback, gfp_t gfp)
{
	struct sk_buff *msg;
	void *hdr;

	if (!genl_has_listeners(&coll_nl_family, comm->net, COLL_NLGRP_EVENTS))
		return;
	msg = genlmsg_new(NLMSG_GOODSIZE, gfp);
	if (!msg)
		return;
	hdr = genlmsg_put(msg, 0, 0, &coll_nl_family, 0,
			  COLLECTIVE_CMD_EVENT_NTF);
	if (!hdr ||
	    nla_put_u32(msg, COLLECTIVE_A_EVENT_TYPE, event) ||
	    nla_put_u32(msg, COLLECTIVE_A_EVENT_COMM, comm->serial) ||
	    nla_put_u32(msg, COLLECTIVE_A_EVENT_NRANKS, comm->nranks) ||
	    nla_put_u32(msg, COLLECTIVE_A_EVENT_OWNER_UID,
			from_kuid_munged(&init_user_ns, comm->owner)) ||
	    (err && nla_put_u32(msg, COLLECTIVE_A_EVENT_ERROR, -err)) ||
	    (reason && nla_put_string(msg, COLLECTIVE_A_EVENT_REASON, reason)) ||
	    (event == COLLECTIVE_EVENT_FAILED && host != U32_MAX &&
	     nla_put_u32(msg, COLLECTIVE_A_EVENT_HOST, host)) ||
	    (event == COLLECTIVE_EVENT_FALLBACK &&
	     (nla_put_u32(msg, COLLECTIVE_A_EVENT_HOST, host) ||
	      nla_put_u32(msg, COLLECTIVE_A_EVENT_FALLBACK, fallback)))) {
		nlmsg_free(msg);
		return;
	}
	genlmsg_end(msg, hdr);
	genlmsg_multicast_netns(&coll_nl_family, comm->net, msg, 0,
				COLL_NLGRP_EVENTS, gfp);
}

/* ---- the family --------------------------------------------------------- */

static const struct genl_ops coll_nl_ops[] = {
	{
		.cmd = COLLECTIVE_CMD_TUNE_GET,
		.doit = coll_nl_tune_get_doit,
		.policy = collective_tune_get_nl_policy,
		.maxattr = COLLECTIVE_A_TUNE_COMM,
	},
	{
		/* permissions in the handler: a comm's owner may set its own */
		.cmd = COLLECTIVE_CMD_TUNE_SET,
		.doit = coll_nl_tune_set_doit,
		.policy = collective_tune_set_nl_policy,
		.maxattr = COLLECTIVE_A_TUNE_RESET,
	},
	{
		.cmd = COLLECTIVE_CMD_COMM_GET,
		.doit = coll_nl_comm_get_doit,
		.dumpit = coll_nl_comm_get_dumpit,
		.policy = collective_comm_get_nl_policy,
		.maxattr = COLLECTIVE_A_COMM_SERIAL,
	},
	{
		.cmd = COLLECTIVE_CMD_OP_GET,
		.dumpit = coll_nl_op_get_dumpit,
		.policy = collective_op_get_nl_policy,
		.maxattr = COLLECTIVE_A_OP_COMM,
	},
	{
		.cmd = COLLECTIVE_CMD_STATS_GET,
		.doit = coll_nl_stats_get_doit,
		.start = coll_nl_stats_get_start,
		.dumpit = coll_nl_stats_get_dumpit,
		.policy = collective_stats_get_nl_policy,
		.maxattr = COLLECTIVE_A_STATS_COMM,
	},
};

static const struct genl_multicast_group coll_nl_mcgrps[] = {
	[COLL_NLGRP_EVENTS] = {
		.name = COLLECTIVE_MCGRP_EVENTS,
		.flags = GENL_MCAST_CAP_NET_ADMIN,
	},
};

static struct genl_family coll_nl_family = {
	.name = COLLECTIVE_FAMILY_NAME,
	.version = COLLECTIVE_FAMILY_VERSION,
	.netnsok = true,
	.parallel_ops = true,
	.module = THIS_MODULE,
	.ops = coll_nl_ops,
	.n_ops = ARRAY_SIZE(coll_nl_ops),
	.resv_start_op = COLLECTIVE_CMD_EVENT_NTF + 1,
	.mcgrps = coll_nl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(coll_nl_mcgrps),
};

int coll_nl_init(void)
{
	return genl_register_family(&coll_nl_family);
}

void coll_nl_exit(void)
{
	genl_unregister_family(&coll_nl_family);
}
