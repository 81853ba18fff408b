// SPDX-License-Identifier: MIT
/*
 * mpi_perf: the same benchmark as coll_perf, through MPI, for comparison:
 *
 *   mpirun --oversubscribe --mca btl self,vader --mca pml ob1 -np 4 \
 *       mpi_perf -p allreduce -b 8 -e 64M -f 2
 *
 * (as root add OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1).
 * Same options (but -a, -N, -W), sizes, patterns, checks and columns as
 * coll_perf (perf_common.c), so that rows of equal size line up.  The
 * primitives map to MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter_block,
 * MPI_Allgather, MPI_Bcast, MPI_Scatter, MPI_Gather, MPI_Alltoall and
 * MPI_Barrier.  Differences:
 *   - half and bfloat16 have no MPI type: a comment line, nothing run;
 *   - MPI has no average: -o avg runs and checks MPI_SUM (a comment says so,
 *     and the redop column says sum);
 *   - in place (-i 1) uses MPI_IN_PLACE: the same layouts as NCCL except
 *     Reduce_scatter_block, whose result lands at the start of the buffer,
 *     and Bcast, which is always in place (out of place, the root
 *     broadcasts from its send buffer).
 *   - counts must fit in an int.
 * Needs libcollective only for the name tables (linked statically).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "libcollective.h"
#include "perf_common.h"

static int my_rank;

static MPI_Datatype mpi_type(int dtype)
{
	switch (dtype) {
	case COLL_INT8: return MPI_INT8_T;
	case COLL_UINT8: return MPI_UINT8_T;
	case COLL_INT32: return MPI_INT32_T;
	case COLL_UINT32: return MPI_UINT32_T;
	case COLL_INT64: return MPI_INT64_T;
	case COLL_UINT64: return MPI_UINT64_T;
	case COLL_FP32: return MPI_FLOAT;
	case COLL_FP64: return MPI_DOUBLE;
	default: return MPI_DATATYPE_NULL;
	}
}

static MPI_Op mpi_op(int redop)
{
	switch (redop) {
	case COLL_PROD: return MPI_PROD;
	case COLL_MIN: return MPI_MIN;
	case COLL_MAX: return MPI_MAX;
	default: return MPI_SUM;
	}
}

static const char *unsupported(const struct perf_opts *o, struct perf_op *op)
{
	(void)o;
	if (op->prim != COLL_BARRIER && mpi_type(op->dtype) == MPI_DATATYPE_NULL)
		return "MPI has no half or bfloat16 type";
	if (op->redop == COLL_AVG)
		op->redop = COLL_SUM;
	return NULL;
}

static void layout(const struct perf_opts *o, struct perf_op *op, void *sbuf,
		   void *rbuf)
{
	perf_layout_nccl(o, op, sbuf, rbuf, my_rank);
	if (op->prim == COLL_BROADCAST && !o->inplace && my_rank == op->root)
		op->recvptr = op->resultptr = sbuf;
	if (op->prim == COLL_REDUCESCATTER && o->inplace)
		op->recvptr = op->resultptr = rbuf;
}

static int run(const struct perf_opts *o, const struct perf_op *op, int n)
{
	MPI_Datatype t = mpi_type(op->dtype);
	MPI_Op mop = mpi_op(op->redop);
	MPI_Comm w = MPI_COMM_WORLD;
	int ip = o->inplace, root = op->root, isroot = my_rank == root;
	void *s = op->sendptr, *r = op->recvptr;
	int c, i, ret = MPI_SUCCESS;

	if (op->count > INT_MAX)
		return -EOVERFLOW;
	c = (int)op->count;
	/*
	 * In place, a non-root's unused buffer would alias the used one; MPI
	 * forbids aliased arguments, so pass NULL where it is not significant.
	 */
	if (ip && !isroot) {
		if (op->prim == COLL_REDUCE || op->prim == COLL_GATHER)
			r = NULL;
		if (op->prim == COLL_SCATTER)
			s = NULL;
	}
	for (i = 0; i < n && ret == MPI_SUCCESS; i++) {
		switch (op->prim) {
		case COLL_ALLREDUCE:
			ret = MPI_Allreduce(ip ? MPI_IN_PLACE : s, r, c, t, mop, w);
			break;
		case COLL_REDUCE:
			ret = MPI_Reduce(ip && isroot ? MPI_IN_PLACE : s, r, c, t,
					 mop, root, w);
			break;
		case COLL_REDUCESCATTER:
			ret = MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : s, r, c,
						       t, mop, w);
			break;
		case COLL_ALLGATHER:
			ret = MPI_Allgather(ip ? MPI_IN_PLACE : s, c, t, r, c, t, w);
			break;
		case COLL_BROADCAST:
			ret = MPI_Bcast(r, c, t, root, w);
			break;
		case COLL_SCATTER:
			ret = MPI_Scatter(s, c, t, ip && isroot ? MPI_IN_PLACE : r,
					  c, t, root, w);
			break;
		case COLL_GATHER:
			ret = MPI_Gather(ip && isroot ? MPI_IN_PLACE : s, c, t, r,
					 c, t, root, w);
			break;
		case COLL_ALLTOALL:
			ret = MPI_Alltoall(ip ? MPI_IN_PLACE : s, c, t, r, c, t, w);
			break;
		case COLL_BARRIER:
			ret = MPI_Barrier(w);
			break;
		default:
			return -EOPNOTSUPP;
		}
	}
	return ret;
}

static int barrier(void)
{
	return MPI_Barrier(MPI_COMM_WORLD);
}

static int max_double(double *v)
{
	return MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

static int sum_u64(uint64_t *v)
{
	return MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
}

/* Negative: an errno of ours; otherwise an MPI error code. */
static const char *errstr(int err)
{
	static char buf[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (err < 0)
		return strerror(-err);
	if (MPI_Error_string(err, buf, &len) != MPI_SUCCESS)
		snprintf(buf, sizeof(buf), "MPI error %d", err);
	return buf;
}

static void do_exit(int code)
{
	fflush(stdout);
	if (code == 1)
		MPI_Abort(MPI_COMM_WORLD, code);
	/* Usage errors and -h happen on every rank alike. */
	MPI_Finalize();
	exit(code);
}

int main(int argc, char **argv)
{
	struct perf_backend be = {
		.name = "mpi_perf",
		.features = 0,
		.unsupported = unsupported,
		.layout = layout,
		.run = run,
		.barrier = barrier,
		.max_double = max_double,
		.sum_u64 = sum_u64,
		.strerror = errstr,
		.abort = do_exit,
	};
	struct perf_opts o;
	int ret;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &be.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &be.nranks);
	my_rank = be.rank;
	perf_parse(argc, argv, &be, &o);
	if (be.rank == 0 && o.redop == COLL_AVG)
		printf("# redop avg: MPI has no average; timed and checked as MPI_SUM\n");
	ret = perf_main(&be, &o);
	fflush(stdout);
	MPI_Finalize();
	return ret;
}
