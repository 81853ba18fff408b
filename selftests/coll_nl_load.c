// SPDX-License-Identifier: GPL-2.0
/*
 * coll_nl_load: a rank that gives the netlink suite (netlink.sh) something
 * to see.  Run under collrun: every rank joins from the environment, runs
 * ITERS collectives of PRIM on BYTES per rank (COLL_ALGO_AUTO, so the
 * tunables choose), rank 0 (LOCAL_RANK 0: the first rank of each host)
 * then creates READYFILE, and every rank sleeps
 * HOLD seconds, the communicator alive, before it leaves.  With -w R:S,
 * rank R waits S seconds before its first collective (the others wait for
 * it inside the module).  Every result is checked element by element
 * against the value computed here (int32 data, sum).
 *
 * A test that must do something while a rank withholds its call, or while
 * the communicator lives, says when it is done instead of racing a clock
 * (a slow machine once ran past 12 s): -w R:S:FILE waits until FILE
 * exists, at most S seconds; -H HOLD:FILE holds until FILE exists, at most
 * HOLD seconds.
 *
 * Options that show a tunable's effect:
 *   -s SHAPES  the ITERS calls cycle through SHAPES sizes (BYTES, BYTES-4,
 *              ...): as many plans (plan-cache)
 *   -w all:S   every rank waits S seconds before its first collective
 *              (time to tune the communicator before any plan is built)
 *   -i         print "plans=N" (COLL_INFO: plans the module holds) after
 *              the calls, the communicator still alive, and on a second
 *              line "mr-allocs=A mr-reuses=R": how many RDMA regions the
 *              module allocated and took from its pools during the calls
 *              (eager-bytes, mr-pool)
 *   -q Q       twice: submit Q non-blocking AllReduces at once, print
 *              "accepted=K err=NAME" (the first refusal, or "none"), then
 *              wait for the accepted ones and check them (max-requests)
 *   -c C       join C more communicators (ids derived from COLL_ID), print
 *              "comms=K err=NAME" (max-comms)
 *
 * usage: coll_nl_load [-p PRIM] [-b BYTES] [-n ITERS] [-H HOLD[:FILE]]
 *                     [-r READYFILE] [-w RANK:SECONDS[:FILE]] [-s SHAPES] [-i]
 *                     [-q Q] [-c C]
 * Exit: 0, or 1 with the first failing call's error or wrong element.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libcollective.h>

#define MAXQ 64
#define MAXC 64

static int rank, n;

/* Sleep until @file exists (if given), at most @secs seconds. */
static void wait_for(const char *file, long secs)
{
	long i;

	if (!file) {
		sleep(secs);
		return;
	}
	for (i = 0; i < secs * 20 && access(file, F_OK); i++)
		usleep(50000);
}

/* "N" or "N:FILE": the seconds, and the file or NULL. */
static int secs_file(const char *arg, long *secs, const char **file)
{
	char *end;

	*secs = strtol(arg, &end, 10);
	if (end == arg || *secs < 0 || (*end && (*end != ':' || !end[1])))
		return -1;
	*file = *end ? end + 1 : NULL;
	return 0;
}

/* Element j of rank r's send buffer. */
static uint32_t val(int r, long j)
{
	return (uint32_t)r * 1000003u + (uint32_t)j;
}

static void fill(int32_t *send, long count)
{
	long j;

	for (j = 0; j < count; j++)
		send[j] = (int32_t)val(rank, j);
}

static int bad(const char *prim, long j, uint32_t got, uint32_t want)
{
	fprintf(stderr, "coll_nl_load: rank %d: %s: element %ld is %u, not %u\n",
		rank, prim, j, got, want);
	return 1;
}

static int check_allreduce(const int32_t *recv, long count)
{
	long j;
	int r;

	for (j = 0; j < count; j++) {
		uint32_t want = 0;

		for (r = 0; r < n; r++)
			want += val(r, j);
		if ((uint32_t)recv[j] != want)
			return bad("allreduce", j, recv[j], want);
	}
	return 0;
}

/* One call of @prim on @count elements per rank, checked. */
static int run_one(coll_comm_t *comm, const char *prim, int32_t *send,
		   int32_t *recv, long count)
{
	long j, cb = count / n ?: 1;
	int ret, s;

	fill(send, !strcmp(prim, "alltoall") ? cb * n : count);
	if (!strcmp(prim, "allreduce")) {
		ret = coll_allreduce(comm, send, recv, count, COLL_INT32, COLL_SUM);
		return ret ?: check_allreduce(recv, count);
	}
	if (!strcmp(prim, "alltoall")) {
		ret = coll_alltoall(comm, send, recv, cb, COLL_INT32);
		for (s = 0; !ret && s < n; s++)
			for (j = 0; j < cb; j++)
				if ((uint32_t)recv[s * cb + j] != val(s, rank * cb + j))
					return bad(prim, s * cb + j, recv[s * cb + j],
						   val(s, rank * cb + j));
		return ret;
	}
	if (!strcmp(prim, "allgather")) {
		ret = coll_allgather(comm, send, recv, count, COLL_INT32);
		for (s = 0; !ret && s < n; s++)
			for (j = 0; j < count; j++)
				if ((uint32_t)recv[s * count + j] != val(s, j))
					return bad(prim, s * count + j,
						   recv[s * count + j], val(s, j));
		return ret;
	}
	if (!strcmp(prim, "broadcast")) {
		ret = coll_broadcast(comm, send, recv, count, COLL_INT32, 0);
		for (j = 0; !ret && rank && j < count; j++)
			if ((uint32_t)recv[j] != val(0, j))
				return bad(prim, j, recv[j], val(0, j));
		return ret;
	}
	if (!strcmp(prim, "barrier"))
		return coll_barrier(comm);
	return -EINVAL;
}

static const char *errname(int err)
{
	switch (err) {
	case 0: return "none";
	case -ENOSPC: return "ENOSPC";
	case -EMFILE: return "EMFILE";
	case -ENOMEM: return "ENOMEM";
	default: return coll_strerror(err);
	}
}

/* Q non-blocking AllReduces at once, twice; each accepted one checked. */
static int run_queue(coll_comm_t *comm, int32_t *send, int32_t *recv,
		     long count, int q)
{
	coll_req_t req[MAXQ];
	int k, pass, ret, err;

	fill(send, count);
	for (pass = 0; pass < 2; pass++) {
		err = 0;
		for (k = 0; k < q; k++) {
			err = coll_iallreduce(comm, send, recv + k * count, count,
					      COLL_INT32, COLL_SUM, &req[k]);
			if (err)
				break;
		}
		printf("accepted=%d err=%s\n", k, errname(err));
		fflush(stdout);
		while (k--) {
			ret = coll_wait(&req[k], 0);
			if (ret)
				return ret;
			if (check_allreduce(recv + k * count, count))
				return 1;
		}
	}
	return 0;
}

/* C more communicators among the same ranks; all left before returning. */
static int join_more(int c)
{
	coll_comm_t *more[MAXC];
	coll_id_t id;
	int k, j, err = 0;

	if (coll_id_from_str(&id, getenv("COLL_ID")))
		return -EINVAL;
	for (k = 0; k < c; k++) {
		id.bytes[0] ^= 0x5a;
		id.bytes[1] = (uint8_t)k;
		err = coll_comm_init(&more[k], n, rank, &id, 10000);
		if (err)
			break;
	}
	printf("comms=%d err=%s\n", k, errname(err));
	fflush(stdout);
	for (j = 0; j < k; j++)
		coll_comm_destroy(more[j]);
	return err == -EMFILE ? 0 : err;
}

int main(int argc, char **argv)
{
	const char *prim = "allreduce", *ready = NULL;
	const char *wfile = NULL, *hfile = NULL;
	long bytes = 4096, iters = 10, hold = 0, wrank = -1, wsec = 0;
	long shapes = 1, q = 0, c = 0;
	int opt, ret = 0, info = 0;
	struct coll_info ci0;
	coll_comm_t *comm;
	int32_t *send, *recv;
	long i, count;

	while ((opt = getopt(argc, argv, "p:b:n:H:r:w:s:iq:c:")) != -1) {
		switch (opt) {
		case 'p': prim = optarg; break;
		case 'b': bytes = atol(optarg); break;
		case 'n': iters = atol(optarg); break;
		case 'H':
			if (secs_file(optarg, &hold, &hfile))
				return 2;
			break;
		case 'r': ready = optarg; break;
		case 'w': {
			const char *colon = strchr(optarg, ':');

			if (!colon)
				return 2;
			if (!strncmp(optarg, "all:", 4))
				wrank = -2;
			else if (sscanf(optarg, "%ld:", &wrank) != 1 || wrank < 0)
				return 2;
			if (secs_file(colon + 1, &wsec, &wfile))
				return 2;
			break;
		}
		case 's': shapes = atol(optarg); break;
		case 'i': info = 1; break;
		case 'q': q = atol(optarg); break;
		case 'c': c = atol(optarg); break;
		default:
			fprintf(stderr, "usage: see the top of coll_nl_load.c\n");
			return 2;
		}
	}
	if (bytes < 4 || shapes < 1 || shapes > bytes / 4 || q < 0 ||
	    q > MAXQ || c < 0 || c > MAXC) {
		fprintf(stderr, "coll_nl_load: bad option value\n");
		return 2;
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
	recv = calloc(1, bytes * (n > q ? n : q) + 64);
	if (!send || !recv)
		return 1;
	if (info && coll_get_info(&ci0))
		return 1;
	if (rank == wrank || wrank == -2)
		wait_for(wfile, wsec);
	for (i = 0; i < iters && !ret; i++)
		ret = run_one(comm, prim, send, recv, count - i % shapes);
	if (!ret && q)
		ret = run_queue(comm, send, recv, count, q);
	if (!ret && c)
		ret = join_more(c);
	if (ret) {
		if (ret < 0)
			fprintf(stderr, "coll_nl_load: rank %d: %s: %s\n", rank,
				prim, coll_strerror(ret));
		return 1;
	}
	if (info) {
		struct coll_info ci;

		/* The other rank may still be on its way out of the last call. */
		usleep(500000);
		ret = coll_get_info(&ci);
		if (ret)
			return 1;
		printf("plans=%llu\n", (unsigned long long)ci.out_plans);
		printf("mr-allocs=%llu mr-reuses=%llu\n",
		       (unsigned long long)(ci.out_mr_allocs - ci0.out_mr_allocs),
		       (unsigned long long)(ci.out_mr_reuses - ci0.out_mr_reuses));
		fflush(stdout);
	}
	/* rank 0, or across hosts the first rank of each host */
	if (ready && (getenv("LOCAL_RANK") ? !strcmp(getenv("LOCAL_RANK"), "0") :
		      rank == 0))
		close(open(ready, O_CREAT | O_WRONLY, 0644));
	wait_for(hfile, hold);
	coll_comm_destroy(comm);
	free(send);
	free(recv);
	return 0;
}
