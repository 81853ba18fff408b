/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of the collective module: communicators, collectives and the
 * chunks of the data path.  Communicators are named by a serial number,
 * never by their id (a secret).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM collective

#if !defined(_COLL_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _COLL_TRACE_H

#include <linux/tracepoint.h>

#include "coll_loc.h"

#define coll_show_prim(p)					\
	__print_symbolic(p,					\
			 { COLL_ALLREDUCE, "allreduce" },	\
			 { COLL_REDUCE, "reduce" },		\
			 { COLL_REDUCESCATTER, "reducescatter" },	\
			 { COLL_ALLGATHER, "allgather" },	\
			 { COLL_BROADCAST, "broadcast" },	\
			 { COLL_SCATTER, "scatter" },		\
			 { COLL_GATHER, "gather" },		\
			 { COLL_ALLTOALL, "alltoall" },		\
			 { COLL_BARRIER, "barrier" })

DECLARE_EVENT_CLASS(coll_comm_class,
		    TP_PROTO(const struct coll_comm *comm, u32 rank,
			     u32 njoined),
		    TP_ARGS(comm, rank, njoined),
		    TP_STRUCT__entry(__field(u32, comm)
				     __field(u32, nranks)
				     __field(u32, rank)
				     __field(u32, njoined)),
		    TP_fast_assign(__entry->comm = comm->serial;
				   __entry->nranks = comm->nranks;
				   __entry->rank = rank;
				   __entry->njoined = njoined;),
		    TP_printk("comm=%u rank=%u/%u joined=%u", __entry->comm,
			      __entry->rank, __entry->nranks,
			      __entry->njoined));

DEFINE_EVENT(coll_comm_class, coll_comm_join,
	     TP_PROTO(const struct coll_comm *comm, u32 rank, u32 njoined),
	     TP_ARGS(comm, rank, njoined));

DEFINE_EVENT(coll_comm_class, coll_comm_leave,
	     TP_PROTO(const struct coll_comm *comm, u32 rank, u32 njoined),
	     TP_ARGS(comm, rank, njoined));

TRACE_EVENT(coll_op_submit,
	    TP_PROTO(const struct coll_task *task, u32 rank,
		     const struct coll_desc *desc, bool nonblock),
	    TP_ARGS(task, rank, desc, nonblock),
	    TP_STRUCT__entry(__field(u32, comm)
			     __field(u64, seq)
			     __field(u32, rank)
			     __field(u32, prim)
			     __field(u32, dtype)
			     __field(u32, redop)
			     __field(u64, count)
			     __field(bool, nonblock)),
	    TP_fast_assign(__entry->comm = task->comm->serial;
			   __entry->seq = task->seq;
			   __entry->rank = rank;
			   __entry->prim = desc->prim;
			   __entry->dtype = desc->dtype;
			   __entry->redop = desc->redop;
			   __entry->count = desc->count;
			   __entry->nonblock = nonblock;),
	    TP_printk("comm=%u seq=%llu rank=%u %s dtype=%u redop=%u count=%llu%s",
		      __entry->comm, __entry->seq, __entry->rank,
		      coll_show_prim(__entry->prim), __entry->dtype,
		      __entry->redop, __entry->count,
		      __entry->nonblock ? " nonblock" : ""));

/* A group (COLL_GROUP): its ops, and the collectives they became. */
TRACE_EVENT(coll_group,
	    TP_PROTO(const struct coll_task *first, u32 rank, u32 nops,
		     u32 nparts),
	    TP_ARGS(first, rank, nops, nparts),
	    TP_STRUCT__entry(__field(u32, comm)
			     __field(u64, seq)
			     __field(u32, rank)
			     __field(u32, nops)
			     __field(u32, nparts)),
	    TP_fast_assign(__entry->comm = first->comm->serial;
			   __entry->seq = first->seq;
			   __entry->rank = rank;
			   __entry->nops = nops;
			   __entry->nparts = nparts;),
	    TP_printk("comm=%u seq=%llu rank=%u ops=%u collectives=%u",
		      __entry->comm, __entry->seq, __entry->rank,
		      __entry->nops, __entry->nparts));

/* The eager path (coll_eager.c): a rank at a slot, and what it did. */
#define COLL_TRACE_EAGER_ARRIVE		0
#define COLL_TRACE_EAGER_LAST		1
#define COLL_TRACE_EAGER_DISAGREE	2

TRACE_EVENT(coll_eager,
	    TP_PROTO(const struct coll_comm *comm, u32 rank,
		     const struct coll_desc *d, u64 seq, u32 what),
	    TP_ARGS(comm, rank, d, seq, what),
	    TP_STRUCT__entry(__field(u32, comm)
			     __field(u64, seq)
			     __field(u32, rank)
			     __field(u32, prim)
			     __field(u64, count)
			     __field(u32, what)),
	    TP_fast_assign(__entry->comm = comm->serial;
			   __entry->seq = seq;
			   __entry->rank = rank;
			   __entry->prim = d->prim;
			   __entry->count = d->count;
			   __entry->what = what;),
	    TP_printk("comm=%u seq=%llu rank=%u prim=%u count=%llu %s",
		      __entry->comm, __entry->seq, __entry->rank,
		      __entry->prim, __entry->count,
		      __print_symbolic(__entry->what,
				       { COLL_TRACE_EAGER_ARRIVE, "arrive" },
				       { COLL_TRACE_EAGER_LAST, "last" },
				       { COLL_TRACE_EAGER_DISAGREE,
					 "disagree" })));

/* The mapped slots (coll_map.c): sleeps, wake-ups, the death mark. */
#define COLL_TRACE_MAP_WAIT		0
#define COLL_TRACE_MAP_WOKEN		1
#define COLL_TRACE_MAP_WAKE		2
#define COLL_TRACE_MAP_KILL		3

TRACE_EVENT(coll_map,
	    TP_PROTO(const struct coll_comm *comm, u32 rank, u32 what,
		     u32 watched, u64 seq),
	    TP_ARGS(comm, rank, what, watched, seq),
	    TP_STRUCT__entry(__field(u32, comm)
			     __field(u32, rank)
			     __field(u32, what)
			     __field(u32, watched)
			     __field(u64, seq)),
	    TP_fast_assign(__entry->comm = comm->serial;
			   __entry->rank = rank;
			   __entry->what = what;
			   __entry->watched = watched;
			   __entry->seq = seq;),
	    TP_printk("comm=%u rank=%d %s watched=%d seq=%llu",
		      __entry->comm, (int)__entry->rank,
		      __print_symbolic(__entry->what,
				       { COLL_TRACE_MAP_WAIT, "wait" },
				       { COLL_TRACE_MAP_WOKEN, "woken" },
				       { COLL_TRACE_MAP_WAKE, "wake" },
				       { COLL_TRACE_MAP_KILL, "kill" }),
		      (int)__entry->watched, __entry->seq));

DECLARE_EVENT_CLASS(coll_op_class,
		    TP_PROTO(const struct coll_task *task, int err),
		    TP_ARGS(task, err),
		    TP_STRUCT__entry(__field(u32, comm)
				     __field(u64, seq)
				     __field(u32, prim)
				     __field(u32, algo)
				     __field(u32, nrounds)
				     __field(u32, nsteps)
				     __field(int, err)),
		    TP_fast_assign(__entry->comm = task->comm->serial;
				   __entry->seq = task->seq;
				   __entry->prim = task->desc.prim;
				   __entry->algo = task->desc.algo;
				   __entry->nrounds = task->sched ?
						task->sched->nrounds : 0;
				   __entry->nsteps = task->sched ?
						task->sched->nsteps : 0;
				   __entry->err = err;),
		    TP_printk("comm=%u seq=%llu %s algo=%u rounds=%u families=%u err=%d",
			      __entry->comm, __entry->seq,
			      coll_show_prim(__entry->prim), __entry->algo,
			      __entry->nrounds, __entry->nsteps,
			      __entry->err));

DEFINE_EVENT(coll_op_class, coll_op_start,
	     TP_PROTO(const struct coll_task *task, int err),
	     TP_ARGS(task, err));

DEFINE_EVENT(coll_op_class, coll_op_done,
	     TP_PROTO(const struct coll_task *task, int err),
	     TP_ARGS(task, err));

TRACE_EVENT(coll_chunk,
	    TP_PROTO(const struct coll_task *task, u32 round, u32 step,
		     u32 a, u32 b, u64 elem, u64 n),
	    TP_ARGS(task, round, step, a, b, elem, n),
	    TP_STRUCT__entry(__field(u32, comm)
			     __field(u64, seq)
			     __field(u32, round)
			     __field(u32, step)
			     __field(u32, a)
			     __field(u32, b)
			     __field(u64, elem)
			     __field(u64, n)),
	    TP_fast_assign(__entry->comm = task->comm->serial;
			   __entry->seq = task->seq;
			   __entry->round = round;
			   __entry->step = step;
			   __entry->a = a;
			   __entry->b = b;
			   __entry->elem = elem;
			   __entry->n = n;),
	    TP_printk("comm=%u seq=%llu round=%u family=%u inst=%u,%u elem=%llu n=%llu",
		      __entry->comm, __entry->seq, __entry->round,
		      __entry->step, __entry->a, __entry->b, __entry->elem,
		      __entry->n));

/* A rank polled its links' completion queues itself (busy_poll_us). */
TRACE_EVENT(coll_busy_poll,
	    TP_PROTO(const struct coll_task *task, u32 round, u32 links,
		     u32 completions, u64 ns, bool done),
	    TP_ARGS(task, round, links, completions, ns, done),
	    TP_STRUCT__entry(__field(u32, comm)
			     __field(u64, seq)
			     __field(u32, round)
			     __field(u32, links)
			     __field(u32, completions)
			     __field(u64, ns)
			     __field(bool, done)),
	    TP_fast_assign(__entry->comm = task->comm->serial;
			   __entry->seq = task->seq;
			   __entry->round = round;
			   __entry->links = links;
			   __entry->completions = completions;
			   __entry->ns = ns;
			   __entry->done = done;),
	    TP_printk("comm=%u seq=%llu round=%u links=%u completions=%u ns=%llu done=%d",
		      __entry->comm, __entry->seq, __entry->round,
		      __entry->links, __entry->completions, __entry->ns,
		      __entry->done));

#endif /* _COLL_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE coll_trace
#include <trace/define_trace.h>
