// SPDX-License-Identifier: GPL-2.0
/*
 * coll_hosts_fault: a fault in the middle of a large collective whose
 * ranks span hosts (qemu guests).
 *
 *   coll_hosts_fault --nnodes H --node I --local L --root ADDR:PORT
 *                    --fault cut|rdma|kill|poweroff --victim V
 *                    [--fault-cmd CMD] [--transport auto|tcp|rdma]
 *                    [--expect-transport tcp|rdma] [--count N]
 *                    [--delay-ms D] [--bound-ms B] [--give-up-ms G]
 *                    [--victim-addr IP] [--clock-port P]
 *
 * Run on every host with the same arguments but --node; COLL_ID (the same
 * everywhere) comes from the environment.  The L local ranks (processes
 * forked here, global ranks I*L .. I*L+L-1) join through libcollective's
 * rendezvous and run in-place fp32 AllReduces of N elements (default 4 Mi:
 * 16 MiB) back to back.  Each rank takes the time just before its second
 * collective ("armed"); on host V, once every local rank is armed, this
 * process waits D ms more and injects the fault, in the middle of that
 * collective:
 *
 *   kill      SIGKILL to local rank 0 of host V
 *   cut       the rig's hub drops all traffic of host V's link (a request
 *             to vms.sh's hub, see selftests/rig/README.md), or CMD
 *   rdma      CMD (rdma link delete: host V's RDMA device goes away)
 *   poweroff  CMD (host V powers off; nothing here reports)
 *
 * Every other rank, here and on the other hosts, must then get ECONNRESET
 * (a peer left or died, or its link failed: uapi/linux/collective.h)
 * within B ms (default 5000) of the fault, never hang (a rank gives up G ms
 * after it armed, default 60000), and its next collective must fail with
 * ECONNRESET at once.  Once every local rank has destroyed its
 * communicator (or died), COLL_INFO must come back to 0 pinned pages, 0
 * communicators and 0 collectives.
 *
 * Time: each host's clock is its own.  Before joining, every other host
 * measures the offset of its clock to host V's by UDP round trips on the
 * guests' network (--victim-addr; NTP's way: the sample with the shortest
 * round trip, +-half of it), and just before injecting, host V tells them
 * the fault's time on its clock.  A rank's figure is the time from the
 * moment the fault started (the command was started, the signal sent) to
 * the error, give or take that half round trip (printed); it includes the
 * fault command's own time.  Without the word from host V (no
 * --victim-addr), a rank counts from its own armed time + D instead:
 * hosts arm within a message's time of each other, and the figure says it
 * is an estimate.  The bound is on a hang, not a benchmark.
 *
 * Prints TAP: join (and the transport to the other hosts), one line per
 * surviving local rank (its errno and the time to it; the next collective
 * and destroy), COLL_INFO after everything, and on host V whether the
 * fault landed in the middle of a collective.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "coll_selftest.h"
#include <libcollective.h>

#define MAX_LOCAL	8
#define MAX_HOSTS	16
#define MAX_ITERS	100000

enum fault { F_CUT, F_RDMA, F_KILL, F_POWEROFF };

static const char *const fault_names[] = {
	[F_CUT] = "cut", [F_RDMA] = "rdma", [F_KILL] = "kill",
	[F_POWEROFF] = "poweroff",
};

struct opts {
	int nnodes, node, local, victim;
	const char *root;
	const char *fault_cmd;
	enum fault fault;
	unsigned int flags;
	int expect;		/* enum coll_transport to the other hosts, or -1 */
	uint64_t count;
	int delay_ms, bound_ms, give_up_ms;
	const char *victim_addr;	/* for the clock */
	int clock_port;
};

static struct opts o;

struct rank_res {
	int joined;		/* 1: joined; -errno: failed to */
	int transport_ok;	/* COLL_COMM_QUERY agrees with --expect */
	char topo[160];
	int armed;		/* 1 once t_arm is set */
	int in_coll;		/* inside coll_allreduce() right now */
	int64_t t_arm;
	int64_t t_start;	/* of the call that failed */
	int64_t t_err;
	int err;		/* positive errno of the failing call */
	int iter;		/* its index */
	int first_wrong;	/* collective 0 gave a wrong element */
	int err2;		/* the next collective's errno */
	int64_t t_err2_us;	/* its duration */
	int destroy;		/* coll_comm_destroy()'s result */
	int done;
};

struct shm {
	struct rank_res r[MAX_LOCAL];
	int64_t t_fault;	/* when the fault started, on this host's clock
				 * (elsewhere: host V's word, converted) */
	int64_t t_fault_done;
	int in_coll_at_fault;	/* local ranks inside a collective then */
	int fault_rc;
	/* the clock: host V keeps who asked for its time */
	struct sockaddr_in peers[MAX_HOSTS];
	int npeers;
	int64_t offset;		/* host V's clock - this host's */
	int64_t rtt;		/* of the sample it comes from; 0: none */
};

/* ---- the clock ---------------------------------------------------------------- */

#define CLOCK_MAGIC	0x434f4c4c464c5431ULL	/* "COLLFLT1" */

enum { CLOCK_PING, CLOCK_PONG, CLOCK_FAULT };

struct clock_msg {
	uint64_t magic;
	uint32_t type;
	uint32_t seq;
	int64_t t1;		/* the asker's clock */
	int64_t t2;		/* host V's clock */
};

static int clock_socket(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (port && bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A message of @type from @fd within @ms, or -1. */
static int clock_recv(int fd, struct clock_msg *m, struct sockaddr_in *from,
		      int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	socklen_t fl = sizeof(*from);

	if (poll(&p, 1, ms) != 1)
		return -1;
	if (recvfrom(fd, m, sizeof(*m), 0, (struct sockaddr *)from, &fl) !=
	    (ssize_t)sizeof(*m) || m->magic != CLOCK_MAGIC)
		return -1;
	return 0;
}

/*
 * Host V: answer every PING with its clock and remember who asked, until
 * killed.  A process of its own (the ranks are processes too).
 */
static int clock_server(int fd, struct shm *sh)
{
	struct sockaddr_in from;
	struct clock_msg m;
	int i;

	for (;;) {
		if (clock_recv(fd, &m, &from, 1000) || m.type != CLOCK_PING)
			continue;
		m.type = CLOCK_PONG;
		m.t2 = st_now_ns();
		sendto(fd, &m, sizeof(m), 0, (struct sockaddr *)&from,
		       sizeof(from));
		for (i = 0; i < sh->npeers; i++)
			if (sh->peers[i].sin_addr.s_addr == from.sin_addr.s_addr &&
			    sh->peers[i].sin_port == from.sin_port)
				break;
		if (i == sh->npeers && i < MAX_HOSTS) {
			sh->peers[i] = from;
			__atomic_store_n(&sh->npeers, i + 1, __ATOMIC_RELEASE);
		}
	}
	return 0;
}

/*
 * Another host: the offset of host V's clock to ours, from the round trip
 * that took least of 40 (host V may start a little later: up to 60 s).
 * Return: 0, or -1 (no answer).
 */
static int clock_sync(int fd, struct shm *sh)
{
	struct sockaddr_in v = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)o.clock_port) };
	int64_t end = st_now_ns() + 60 * 1000000000LL;
	struct sockaddr_in from;
	struct clock_msg m;
	uint32_t seq = 0;
	int got = 0;

	if (inet_pton(AF_INET, o.victim_addr, &v.sin_addr) != 1)
		return -1;
	while (got < 40 && st_now_ns() < end) {
		struct clock_msg q = { .magic = CLOCK_MAGIC, .type = CLOCK_PING,
				       .seq = ++seq };
		int64_t t3;

		q.t1 = st_now_ns();
		sendto(fd, &q, sizeof(q), 0, (struct sockaddr *)&v, sizeof(v));
		while (!clock_recv(fd, &m, &from, 200)) {
			if (m.type != CLOCK_PONG || m.seq != seq)
				continue;
			t3 = st_now_ns();
			if (!sh->rtt || t3 - q.t1 < sh->rtt) {
				sh->rtt = t3 - q.t1;
				sh->offset = m.t2 - (q.t1 + t3) / 2;
			}
			got++;
			break;
		}
		st_sleep_ms(got ? 5 : 100);
	}
	return got ? 0 : -1;
}

/*
 * Another host: wait for host V's word of the fault, and keep it on this
 * host's clock.  A process of its own, killed at the end.
 */
static int clock_listen(int fd, struct shm *sh)
{
	struct sockaddr_in from;
	struct clock_msg m;

	for (;;) {
		if (clock_recv(fd, &m, &from, 1000) || m.type != CLOCK_FAULT)
			continue;
		__atomic_store_n(&sh->t_fault, m.t2 - sh->offset,
				 __ATOMIC_RELEASE);
		return 0;
	}
}

/* Host V: tell every host that synced that the fault is now (@t). */
static void clock_tell(int fd, struct shm *sh, int64_t t)
{
	struct clock_msg m = { .magic = CLOCK_MAGIC, .type = CLOCK_FAULT,
			       .t2 = t };
	int i, n = __atomic_load_n(&sh->npeers, __ATOMIC_ACQUIRE), k;

	/* twice: a datagram may be lost, and it costs nothing */
	for (k = 0; k < 2; k++)
		for (i = 0; i < n; i++)
			sendto(fd, &m, sizeof(m), 0,
			       (struct sockaddr *)&sh->peers[i],
			       sizeof(sh->peers[i]));
}

/* Run @fn(@fd, @sh) in a child process; its pid, or -1. */
static pid_t clock_spawn(int (*fn)(int, struct shm *), int fd, struct shm *sh)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(fn(fd, sh));
	}
	return pid;
}


static const char *transport_name(unsigned int t)
{
	switch (t) {
	case COLL_TRANSPORT_SELF: return "self";
	case COLL_TRANSPORT_RDMA: return "rdma";
	case COLL_TRANSPORT_TCP: return "tcp";
	default: return "none";
	}
}

static bool is_victim(void)
{
	return o.node == o.victim;
}

/* The rank that the fault itself takes away (not a survivor). */
static bool is_casualty(int local)
{
	return is_victim() && (o.fault == F_POWEROFF ||
			       (o.fault == F_KILL && local == 0));
}

static void check_topology(struct rank_res *res, coll_comm_t *comm)
{
	struct coll_peer_info pi[MAX_HOSTS];
	struct coll_comm_query q;
	size_t off = 0;
	int r, h;

	res->transport_ok = 0;
	r = coll_comm_query(comm, &q, pi, MAX_HOSTS);
	if (r) {
		snprintf(res->topo, sizeof(res->topo), "COLL_COMM_QUERY: %s",
			 coll_strerror(r));
		return;
	}
	res->transport_ok = 1;
	for (h = 0; h < (int)q.out_nhosts && h < MAX_HOSTS; h++) {
		unsigned int want = h == o.node ? COLL_TRANSPORT_SELF :
				    (unsigned int)o.expect;

		if (o.expect >= 0 && pi[h].transport != want)
			res->transport_ok = 0;
		if (off < sizeof(res->topo))
			off += snprintf(res->topo + off, sizeof(res->topo) - off,
					"%shost%d=%s", h ? " " : "", h,
					transport_name(pi[h].transport));
	}
}

static int rank_main(int local, void *arg)
{
	struct shm *sh = arg;
	struct rank_res *res = &sh->r[local];
	int nranks = o.nnodes * o.local, rank = o.node * o.local + local;
	size_t bytes = o.count * sizeof(float), i;
	coll_comm_t *comm = NULL;
	coll_id_t id;
	float *buf;
	int it, r;

	if (coll_id_from_str(&id, getenv("COLL_ID"))) {
		res->joined = -EINVAL;
		return 3;
	}
	buf = st_map(bytes);
	if (!buf) {
		res->joined = -ENOMEM;
		return 2;
	}
	for (i = 0; i < o.count; i++)
		buf[i] = 1.0f;
	r = coll_comm_init_root(&comm, nranks, rank, &id, o.root, 120000,
				o.flags);
	if (r) {
		res->joined = r;
		return 4;
	}
	res->joined = 1;
	check_topology(res, comm);

	for (it = 0; it < MAX_ITERS; it++) {
		int64_t t0 = st_now_ns();

		if (it == 1) {
			res->t_arm = t0;
			__atomic_store_n(&res->armed, 1, __ATOMIC_RELEASE);
		} else if (it > 1 && t0 - res->t_arm >
			   (int64_t)o.give_up_ms * 1000000LL) {
			break;		/* no error came: reported as a hang */
		}
		__atomic_store_n(&res->in_coll, 1, __ATOMIC_RELEASE);
		r = coll_allreduce(comm, buf, buf, o.count, COLL_FP32, COLL_SUM);
		__atomic_store_n(&res->in_coll, 0, __ATOMIC_RELEASE);
		if (r) {
			res->t_start = t0;
			res->t_err = st_now_ns();
			res->err = -r;
			res->iter = it;
			break;
		}
		if (it == 0) {
			/* every element is nranks now, then the sums grow */
			for (i = 0; i < o.count; i++)
				if (buf[i] != (float)nranks) {
					res->first_wrong = 1;
					break;
				}
			for (i = 0; i < o.count; i++)
				buf[i] = 1.0f;
		}
	}
	if (res->err) {
		int64_t t = st_now_ns();

		r = coll_allreduce(comm, buf, buf, o.count, COLL_FP32, COLL_SUM);
		res->err2 = -r;
		res->t_err2_us = (st_now_ns() - t) / 1000;
	}
	res->destroy = coll_comm_destroy(comm);
	munmap(buf, bytes);
	__atomic_store_n(&res->done, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Run the fault command; its exit status, or -errno. */
static int run_cmd(const char *cmd)
{
	pid_t pid;
	int st;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Cut this host's link at the rig's hub (selftests/rig/vms.sh; the host's
 * index is the guest's): the line "cut I" in $COLL_RUN_DIR/hub.req, the hub's answer in hub.reply once it
 * has taken effect.  What guest-lib.sh's coll_hub does, without the ~100 ms
 * a shell command costs in a TCG guest.  Return: 0, or -1.
 */
static int hub_cut(void)
{
	const char *dir = getenv("COLL_RUN_DIR");
	char req[4096], tmp[4112], rep[4096], want[32], got[64] = "";
	int64_t end = st_now_ns() + 10 * 1000000000LL;
	FILE *f;

	if (!dir || !getenv("COLL_HUB_CTL")) {
		printf("# no hub to cut the link at (not a vms.sh guest)\n");
		return -1;
	}
	snprintf(req, sizeof(req), "%s/hub.req", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", req);
	snprintf(rep, sizeof(rep), "%s/hub.reply", dir);
	snprintf(want, sizeof(want), "ok cut %d\n", o.node);
	unlink(rep);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "cut %d\n", o.node) < 0 || fclose(f) ||
	    rename(tmp, req))
		return -1;
	while (st_now_ns() < end) {
		f = fopen(rep, "r");
		if (f) {
			bool ok = fgets(got, sizeof(got), f) &&
				  !strcmp(got, want);

			fclose(f);
			if (got[0]) {
				unlink(rep);
				if (!ok)
					printf("# hub: %s", got);
				return ok ? 0 : -1;
			}
		}
		st_sleep_ms(2);
	}
	printf("# the hub did not answer\n");
	return -1;
}

/*
 * On the victim host: once every local rank is armed, wait D ms and
 * inject.  Return: 0, or -1 if the ranks never got there.
 */
static int inject(struct shm *sh, struct st_ranks *rk, int clock_fd)
{
	int64_t arm = 0, end = st_now_ns() + 600 * 1000000000LL;
	int l, n = 0;

	for (l = 0; l < o.local; l++) {
		while (!__atomic_load_n(&sh->r[l].armed, __ATOMIC_ACQUIRE)) {
			if (st_now_ns() > end || sh->r[l].joined < 0 ||
			    (sh->r[l].joined && sh->r[l].done))
				return -1;
			st_sleep_ms(1);
		}
		if (sh->r[l].t_arm > arm)
			arm = sh->r[l].t_arm;
	}
	while (st_now_ns() < arm + (int64_t)o.delay_ms * 1000000LL)
		st_sleep_ms(1);
	for (l = 0; l < o.local; l++)
		n += __atomic_load_n(&sh->r[l].in_coll, __ATOMIC_ACQUIRE);
	sh->in_coll_at_fault = n;
	if (o.fault == F_POWEROFF) {
		printf("# powering off now (%d of %d local ranks in a collective)\n",
		       n, o.local);
		fflush(stdout);
	}
	sh->t_fault = st_now_ns();
	if (clock_fd >= 0)
		clock_tell(clock_fd, sh, sh->t_fault);
	if (o.fault == F_KILL)
		sh->fault_rc = kill(rk->pid[0], SIGKILL) ? -errno : 0;
	else if (o.fault == F_CUT && !o.fault_cmd)
		sh->fault_rc = hub_cut();
	else
		sh->fault_rc = run_cmd(o.fault_cmd);
	sh->t_fault_done = st_now_ns();
	return 0;
}

static int ntap, nfail;

static void __attribute__((format(printf, 2, 3)))
tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d ", ok ? "ok" : "not ok", ++ntap);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		nfail++;
}

/* The fault's time on this host's clock (see the header); @exact: known. */
static int64_t fault_time(const struct shm *sh, const struct rank_res *r,
			  bool *exact)
{
	int64_t t = __atomic_load_n(&sh->t_fault, __ATOMIC_ACQUIRE);

	*exact = t != 0;
	return t ? t : r->t_arm + (int64_t)o.delay_ms * 1000000LL;
}

static void report_rank(const struct shm *sh, const struct st_ranks *rk,
			int l)
{
	const struct rank_res *r = &sh->r[l];
	int rank = o.node * o.local + l;
	char st[64];

	if (r->joined != 1) {
		tap(false, "rank %d: gets ECONNRESET within %d ms of the fault # did not join: %s",
		    rank, o.bound_ms, r->joined ? coll_strerror(r->joined) :
		    st_status_str(rk, l, st, sizeof(st)));
		return;
	}
	if (!r->err) {
		tap(false, "rank %d: gets ECONNRESET within %d ms of the fault # no error %d ms after it armed (%s)",
		    rank, o.bound_ms, o.give_up_ms,
		    st_status_str(rk, l, st, sizeof(st)));
	} else if (is_victim() && !__atomic_load_n(&sh->t_fault,
						    __ATOMIC_ACQUIRE)) {
		/* not the fault's doing: there was none (yet) */
		tap(false, "rank %d: gets ECONNRESET within %d ms of the fault # %s in collective %d, %.0f ms after it started, with no fault injected",
		    rank, o.bound_ms, st_errname(r->err), r->iter,
		    (r->t_err - r->t_start) / 1e6);
	} else {
		bool exact, ok;
		int64_t tf = fault_time(sh, r, &exact);
		double ms = (r->t_err - tf) / 1e6;
		char how[64];

		if (is_victim())
			snprintf(how, sizeof(how), "this host's clock");
		else if (exact)
			snprintf(how, sizeof(how), "clocks +-%.1f ms",
				 sh->rtt / 2e6);
		else
			snprintf(how, sizeof(how), "an estimate: no word from host %d",
				 o.victim);
		ok = r->err == ECONNRESET && ms <= o.bound_ms && r->iter >= 1;
		tap(ok, "rank %d: gets ECONNRESET within %d ms of the fault # %s after %.0f ms (%s); collective %d, %s",
		    rank, o.bound_ms, st_errname(r->err), ms, how, r->iter,
		    r->t_start <= tf ? "in flight at the fault" :
		    "started after the fault");
	}
	tap(r->err && r->err2 == ECONNRESET && r->t_err2_us < 1000000 &&
	    !r->destroy && !r->first_wrong,
	    "rank %d: the next collective fails with ECONNRESET, destroy works # next: %s in %lld us; destroy: %s%s",
	    rank, st_errname(r->err2), (long long)r->t_err2_us,
	    coll_strerror(r->destroy),
	    r->first_wrong ? "; the first AllReduce was wrong" : "");
}

static int parse_fault(const char *s)
{
	int f;

	for (f = 0; f < (int)(sizeof(fault_names) / sizeof(fault_names[0]));
	     f++)
		if (!strcmp(s, fault_names[f]))
			return f;
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "nnodes", required_argument, NULL, 'H' },
		{ "node", required_argument, NULL, 'I' },
		{ "local", required_argument, NULL, 'L' },
		{ "root", required_argument, NULL, 'R' },
		{ "transport", required_argument, NULL, 'T' },
		{ "expect-transport", required_argument, NULL, 'E' },
		{ "fault", required_argument, NULL, 'F' },
		{ "fault-cmd", required_argument, NULL, 'C' },
		{ "victim", required_argument, NULL, 'V' },
		{ "count", required_argument, NULL, 'N' },
		{ "delay-ms", required_argument, NULL, 'D' },
		{ "bound-ms", required_argument, NULL, 'B' },
		{ "give-up-ms", required_argument, NULL, 'G' },
		{ "victim-addr", required_argument, NULL, 'A' },
		{ "clock-port", required_argument, NULL, 'P' },
		{ 0 }
	};
	pid_t clock_pid = -1;
	int clock_fd = -1;
	struct coll_info want = { 0 }, got;
	struct st_ranks rk;
	struct shm *sh;
	int opt, l, f = -1, bad, joined = 0, tr_ok = 1;
	char st[64];
	int64_t t0;

	o.nnodes = 1;
	o.local = 1;
	o.victim = -1;
	o.expect = -1;
	o.count = 4 << 20;
	o.delay_ms = 500;
	o.bound_ms = 5000;
	o.give_up_ms = 60000;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'H': o.nnodes = atoi(optarg); break;
		case 'I': o.node = atoi(optarg); break;
		case 'L': o.local = atoi(optarg); break;
		case 'R': o.root = optarg; break;
		case 'T':
			o.flags = !strcmp(optarg, "tcp") ? COLL_COMM_F_TCP :
				  !strcmp(optarg, "rdma") ?
				  COLL_COMM_F_REQUIRE_RDMA : 0;
			break;
		case 'E':
			o.expect = !strcmp(optarg, "tcp") ? COLL_TRANSPORT_TCP :
				   !strcmp(optarg, "rdma") ?
				   COLL_TRANSPORT_RDMA : -1;
			break;
		case 'F': f = parse_fault(optarg); break;
		case 'C': o.fault_cmd = optarg; break;
		case 'V': o.victim = atoi(optarg); break;
		case 'N': o.count = strtoull(optarg, NULL, 0); break;
		case 'D': o.delay_ms = atoi(optarg); break;
		case 'B': o.bound_ms = atoi(optarg); break;
		case 'G': o.give_up_ms = atoi(optarg); break;
		case 'A': o.victim_addr = optarg; break;
		case 'P': o.clock_port = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!o.root || o.local < 1 || o.local > MAX_LOCAL || o.nnodes < 2 ||
	    o.nnodes > MAX_HOSTS || o.node < 0 || o.node >= o.nnodes ||
	    f < 0 || o.victim < 0 || o.victim >= o.nnodes || !o.count ||
	    (f != F_KILL && f != F_CUT && !o.fault_cmd)) {
		fprintf(stderr, "usage: coll_hosts_fault --nnodes H --node I --local L --root ADDR:PORT --fault cut|rdma|kill|poweroff --victim V [--fault-cmd CMD] ...\n");
		return 2;
	}
	o.fault = f;
	if (!o.clock_port) {
		const char *c = strrchr(o.root, ':');

		o.clock_port = c ? atoi(c + 1) + 100 : 0;
	}
	sh = st_shared(sizeof(*sh));
	if (!sh)
		return 2;

	printf("TAP version 13\n");
	printf("# node %d of %d, %d local ranks; fault %s on host %d, %d ms into AllReduce #1 of %llu fp32\n",
	       o.node, o.nnodes, o.local, fault_names[o.fault], o.victim,
	       o.delay_ms, (unsigned long long)o.count);
	fflush(stdout);
	if (o.victim_addr && o.clock_port > 0) {
		clock_fd = clock_socket(is_victim() ? o.clock_port : 0);
		if (clock_fd < 0)
			printf("# clock: no socket: %s\n", strerror(errno));
		else if (is_victim())
			clock_pid = clock_spawn(clock_server, clock_fd, sh);
		else if (clock_sync(clock_fd, sh))
			printf("# clock: no answer from host %d (%s:%d)\n",
			       o.victim, o.victim_addr, o.clock_port);
		else
			clock_pid = clock_spawn(clock_listen, clock_fd, sh);
		if (sh->rtt)
			printf("# clock: host %d's is %+.3f ms from ours, +-%.3f ms\n",
			       o.victim, sh->offset / 1e6, sh->rtt / 2e6);
	}
	if (st_ranks_spawn(&rk, o.local, rank_main, sh))
		return 2;
	if (is_victim() && inject(sh, &rk, clock_fd))
		printf("# the local ranks never armed: no fault injected\n");
	bad = st_ranks_wait(&rk, o.give_up_ms + 180000, o.give_up_ms);
	if (!is_victim() && clock_pid > 0) {
		/* host V's word may trail a fast error (SIGKILL): a moment */
		for (l = 0; l < 200 && !__atomic_load_n(&sh->t_fault,
							__ATOMIC_ACQUIRE); l++)
			st_sleep_ms(10);
	}
	if (clock_pid > 0) {
		kill(clock_pid, SIGKILL);
		waitpid(clock_pid, NULL, 0);
	}

	for (l = 0; l < o.local; l++) {
		if (sh->r[l].joined == 1)
			joined++;
		if (sh->r[l].joined == 1 && !sh->r[l].transport_ok)
			tr_ok = 0;
		printf("# node %d local %d: %s\n", o.node, l,
		       sh->r[l].joined == 1 ? sh->r[l].topo : "not joined");
	}
	tap(joined == o.local && tr_ok,
	    "every local rank joined, transport %s to the other hosts",
	    o.expect >= 0 ? transport_name(o.expect) : "any");

	if (is_victim()) {
		bool ok = sh->t_fault && sh->in_coll_at_fault == o.local &&
			  sh->fault_rc == 0;

		tap(ok, "the fault (%s) lands in the middle of a collective # %d of %d local ranks in one; %s exit %d after %.0f ms",
		    fault_names[o.fault], sh->in_coll_at_fault, o.local,
		    o.fault == F_KILL ? "kill" : "command", sh->fault_rc,
		    (sh->t_fault_done - sh->t_fault) / 1e6);
		if (o.fault == F_KILL)
			tap(rk.done[0] && WIFSIGNALED(rk.status[0]) &&
			    WTERMSIG(rk.status[0]) == SIGKILL,
			    "rank %d: killed by SIGKILL # %s", o.node * o.local,
			    st_status_str(&rk, 0, st, sizeof(st)));
	}
	for (l = 0; l < o.local; l++) {
		if (is_casualty(l))
			continue;
		report_rank(sh, &rk, l);
	}

	/* Everything let go: no pinned page, communicator or collective. */
	t0 = st_now_ns();
	l = st_info_settle(&want, &got, 10000);
	tap(!l, "COLL_INFO: 0 pinned pages, 0 communicators, 0 collectives # after %.0f ms: %llu pinned pages, %llu communicators, %llu collectives, %llu requests",
	    (st_now_ns() - t0) / 1e6, (unsigned long long)got.out_pinned_pages,
	    (unsigned long long)got.out_comms, (unsigned long long)got.out_ops,
	    (unsigned long long)got.out_reqs);
	if (bad && !(o.fault == F_KILL && is_victim() && bad == 1))
		printf("# %d local rank(s) did not exit cleanly\n", bad);
	printf("1..%d\n", ntap);
	return nfail ? 1 : 0;
}
