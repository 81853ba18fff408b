// SPDX-License-Identifier: GPL-2.0
/*
 * coll_nl_load: a rank that gives the netlink suite (netlink.sh) something
 * to see.  Run under collrun: every rank joins from the environment, runs
 * ITERS collectives of PRIM on BYTES per rank (COLL_ALGO_AUTO, so the
 * tunables choose), rank 0 then creates READYFILE, and every rank sleeps
 * HOLD seconds, the communicator alive, before it leaves.  With -w R:S,
 * rank R waits S seconds before its first collective (the others wait for
 * it inside the module).
 *
 * usage: coll_nl_load [-p PRIM] [-b BYTES] [-n ITERS] [-H HOLD]
 *                     [-r READYFILE] [-w RANK:SECONDS]
 * Exit: 0, or 1 with the first failing call's error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libcollective.h>

int main(int argc, char **argv)
{
	const char *prim = "allreduce", *ready = NULL;
	long bytes = 4096, iters = 10, hold = 0, wrank = -1, wsec = 0;
	coll_comm_t *comm;
	void *send, *recv;
	int opt, ret = 0, rank, n;
	long i, count;

	while ((opt = getopt(argc, argv, "p:b:n:H:r:w:")) != -1) {
		switch (opt) {
		case 'p': prim = optarg; break;
		case 'b': bytes = atol(optarg); break;
		case 'n': iters = atol(optarg); break;
		case 'H': hold = atol(optarg); break;
		case 'r': ready = optarg; break;
		case 'w':
			if (sscanf(optarg, "%ld:%ld", &wrank, &wsec) != 2)
				return 2;
			break;
		default:
			fprintf(stderr, "usage: see the top of coll_nl_load.c\n");
			return 2;
		}
	}
	ret = coll_comm_init_env(&comm);
	if (ret) {
		fprintf(stderr, "coll_nl_load: join: %s\n", coll_strerror(ret));
		return 1;
	}
	rank = coll_comm_rank(comm);
	n = coll_comm_size(comm);
	count = bytes / 4;
	send = calloc(1, bytes * n + 64);
	recv = calloc(1, bytes * n + 64);
	if (!send || !recv)
		return 1;
	if (rank == wrank)
		sleep(wsec);
	for (i = 0; i < iters && !ret; i++) {
		if (!strcmp(prim, "allreduce"))
			ret = coll_allreduce(comm, send, recv, count, COLL_INT32, COLL_SUM);
		else if (!strcmp(prim, "alltoall"))
			ret = coll_alltoall(comm, send, recv, count / n ?: 1, COLL_INT32);
		else if (!strcmp(prim, "allgather"))
			ret = coll_allgather(comm, send, recv, count, COLL_INT32);
		else if (!strcmp(prim, "broadcast"))
			ret = coll_broadcast(comm, send, recv, count, COLL_INT32, 0);
		else if (!strcmp(prim, "barrier"))
			ret = coll_barrier(comm);
		else
			ret = -EINVAL;
	}
	if (ret) {
		fprintf(stderr, "coll_nl_load: rank %d: %s: %s\n", rank, prim,
			coll_strerror(ret));
		return 1;
	}
	if (rank == 0 && ready)
		close(open(ready, O_CREAT | O_WRONLY, 0644));
	sleep(hold);
	coll_comm_destroy(comm);
	free(send);
	free(recv);
	return 0;
}
