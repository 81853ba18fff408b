// SPDX-License-Identifier: MIT
/*
 * collrun: start N local ranks of a program and wait for them.
 *
 *   collrun -n N [-t TIMEOUT_S] [--id-fd FD] [-v] PROG [ARGS...]
 *   collrun --nnodes H --node-rank I --master ADDR:PORT -n N [...] PROG [...]
 *
 * The second form (torchrun's) starts the N local ranks of host I of H:
 * global ranks I*N .. I*N+N-1 of H*N, meeting at ADDR:PORT (COLL_ROOT),
 * where global rank 0's process (on node 0) listens.  Every host must be
 * given the same id (COLL_ID or --id-fd; a random one would differ).
 *
 * Each rank is PROG run with RANK, LOCAL_RANK (both 0..N-1), WORLD_SIZE and
 * LOCAL_WORLD_SIZE (both N) and COLL_ID in its environment;
 * coll_comm_init_env() reads them.  The id is the communicator's secret, so
 * it never appears on a command line (every local user can read
 * /proc/PID/cmdline; only the owner and root can read /proc/PID/environ):
 * it is a fresh random one, or COLL_ID from collrun's own environment, or
 * 32 hex digits read from file descriptor FD (--id-fd).  -i, which took it
 * in argv, is refused.  Output passes
 * through unchanged (ranks share collrun's stdout and stderr).  Rank 0 gets
 * collrun's stdin unless that is a terminal; every other rank reads
 * /dev/null.
 *
 * Each rank runs in its own process group, so killing a rank also kills what
 * it started.  When a rank exits non-zero or is killed by a signal, collrun
 * names it on stderr, sends SIGTERM to the others, SIGKILL 2 s later to any
 * still alive, and exits with that first failure's status (its exit code, or
 * 128 + signal number).  With -t, when TIMEOUT_S seconds pass first, collrun
 * kills every rank the same way and exits 124.  SIGINT, SIGTERM, SIGHUP and
 * SIGQUIT sent to collrun are passed on to every rank (SIGKILL 2 s later);
 * collrun then exits 128 + that signal.  Exit 125 means collrun itself failed
 * (bad usage, fork failure), 127 that PROG could not be executed.
 *
 * Signals are handled synchronously: collrun blocks them and waits in
 * sigtimedwait(), so there is no handler and no reaping race.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "libcollective.h"

#define KILL_GRACE_S	2.0
#define EXIT_INTERNAL	125
#define EXIT_TIMEOUT	124
#define EXIT_NOEXEC	127

struct rank {
	pid_t pid;	/* also the process group id; 0 once reaped */
};

static struct rank *ranks;
static int nranks, nalive;
static long nnodes = 1, node_rank;
static const char *master;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: collrun -n N [-t TIMEOUT_S] [--id-fd FD] [-v] PROG [ARGS...]\n"
		"  -n N          number of local ranks (1..%d)\n"
		"  -t TIMEOUT_S  kill every rank after this many seconds, exit 124\n"
		"  --nnodes H --node-rank I --master ADDR:PORT\n"
		"                this is host I of H: global ranks I*N..I*N+N-1,\n"
		"                meeting at ADDR:PORT (COLL_ROOT) with the others\n"
		"  --id-fd FD    read the communicator id (32 hex digits) from FD\n"
		"                (default: COLL_ID from the environment, else random;\n"
		"                never on the command line, where anyone can read it)\n"
		"  -v            print each rank's exit on stderr\n"
		"Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, COLL_ID.\n"
		"Exit: 0 all ranks succeeded; first failing rank's status (128+sig if\n"
		"killed); 124 timeout; 125 collrun error; 127 PROG not executable.\n",
		COLL_MAX_RANKS);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void signal_all(int sig)
{
	int i;

	for (i = 0; i < nranks; i++)
		if (ranks[i].pid > 0)
			kill(-ranks[i].pid, sig);
}

static int find_rank(pid_t pid)
{
	int i;

	for (i = 0; i < nranks; i++)
		if (ranks[i].pid == pid)
			return i;
	return -1;
}

static void setenv_int(const char *name, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", v);
	setenv(name, buf, 1);
}

/* In the child: never returns. */
static void exec_rank(int r, const char *idstr, char **argv,
		      const sigset_t *oldmask)
{
	setpgid(0, 0);
	setenv_int("RANK", node_rank * nranks + r);
	setenv_int("LOCAL_RANK", r);
	setenv_int("WORLD_SIZE", nnodes * nranks);
	setenv_int("LOCAL_WORLD_SIZE", nranks);
	setenv_int("GROUP_RANK", node_rank);
	setenv("COLL_ID", idstr, 1);
	if (master)
		setenv("COLL_ROOT", master, 1);
	if (r != 0 || isatty(STDIN_FILENO)) {
		int fd = open("/dev/null", O_RDONLY);

		if (fd >= 0 && fd != STDIN_FILENO) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
	}
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	execvp(argv[0], argv);
	fprintf(stderr, "collrun: rank %d: cannot execute %s: %s\n", r,
		argv[0], strerror(errno));
	_exit(EXIT_NOEXEC);
}

static int status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_INTERNAL;
}

static void describe(char *buf, size_t len, int status)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)%s",
			 WTERMSIG(status), strsignal(WTERMSIG(status)),
			 WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, len, "ended with wait status %#x", status);
}

/* The id from @fd: 32 hex digits, surrounding white space allowed. */
static int read_id_fd(const char *arg, coll_id_t *id)
{
	char buf[128], *end, *p;
	size_t len = 0;
	ssize_t r;
	long fd;

	errno = 0;
	fd = strtol(arg, &end, 10);
	if (errno || *end || fd < 0 || fd > 1 << 20)
		return -EINVAL;
	while (len < sizeof(buf) - 1) {
		r = read((int)fd, buf + len, sizeof(buf) - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			break;
		len += r;
	}
	buf[len] = 0;
	close((int)fd);
	for (p = buf; *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'; p++)
		;
	for (end = p + strlen(p); end > p && (end[-1] == ' ' || end[-1] == '\t' ||
					     end[-1] == '\n' || end[-1] == '\r');)
		*--end = 0;
	r = coll_id_from_str(id, p);
	memset(buf, 0, sizeof(buf));
	return (int)r;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "id-fd", required_argument, NULL, 'I' },
		{ "nnodes", required_argument, NULL, 'H' },
		{ "node-rank", required_argument, NULL, 'R' },
		{ "master", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	double timeout = 0, deadline = 0, kill_at = 0;
	const char *idfd = NULL, *envid;
	int verbose = 0, opt, i, ret;
	int killing = 0, killed_hard = 0, exit_code = 0, failed = 0;
	char idstr[2 * COLL_ID_BYTES + 1], *end;
	sigset_t mask, oldmask;
	coll_id_t id;
	long n = 0;

	while ((opt = getopt_long(argc, argv, "+n:t:i:vh", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'n':
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || n < 1 || n > COLL_MAX_RANKS) {
				fprintf(stderr, "collrun: -n: need 1..%d ranks, got '%s'\n",
					COLL_MAX_RANKS, optarg);
				return EXIT_INTERNAL;
			}
			break;
		case 't':
			errno = 0;
			timeout = strtod(optarg, &end);
			if (errno || *end || !(timeout > 0)) {
				fprintf(stderr, "collrun: -t: need a positive number of seconds, got '%s'\n",
					optarg);
				return EXIT_INTERNAL;
			}
			break;
		case 'i':
			fprintf(stderr,
				"collrun: -i is refused: an id in argv is readable by every local user\n"
				"         (/proc/PID/cmdline); set COLL_ID in collrun's environment\n"
				"         or pass it on a file descriptor with --id-fd FD\n");
			return EXIT_INTERNAL;
		case 'I':
			idfd = optarg;
			break;
		case 'H':
			errno = 0;
			nnodes = strtol(optarg, &end, 10);
			if (errno || *end || nnodes < 1 ||
			    nnodes > COLL_MAX_RANKS) {
				fprintf(stderr, "collrun: --nnodes: need 1..%d, got '%s'\n",
					COLL_MAX_RANKS, optarg);
				return EXIT_INTERNAL;
			}
			break;
		case 'R':
			errno = 0;
			node_rank = strtol(optarg, &end, 10);
			if (errno || *end || node_rank < 0) {
				fprintf(stderr, "collrun: --node-rank: need a number, got '%s'\n",
					optarg);
				return EXIT_INTERNAL;
			}
			break;
		case 'M':
			master = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_INTERNAL;
		}
	}
	if (!n || optind >= argc) {
		usage(stderr);
		return EXIT_INTERNAL;
	}
	nranks = (int)n;
	if (node_rank >= nnodes || (nnodes > 1 && !master) ||
	    nnodes * nranks > COLL_MAX_RANKS) {
		fprintf(stderr, "collrun: --nnodes H --node-rank I --master ADDR:PORT: "
			"need I < H, a master with H > 1, and H * N <= %d\n",
			COLL_MAX_RANKS);
		return EXIT_INTERNAL;
	}

	envid = getenv("COLL_ID");
	if (idfd) {
		ret = read_id_fd(idfd, &id);
		if (ret) {
			fprintf(stderr, "collrun: --id-fd %s: need 32 hex digits (%s)\n",
				idfd, coll_strerror(ret));
			return EXIT_INTERNAL;
		}
	} else if (envid && *envid) {
		ret = coll_id_from_str(&id, envid);
		if (ret) {
			fprintf(stderr, "collrun: COLL_ID in the environment: need 32 hex digits\n");
			return EXIT_INTERNAL;
		}
	} else if (nnodes > 1) {
		fprintf(stderr, "collrun: --nnodes > 1: every host needs the same id: "
			"set COLL_ID or use --id-fd\n");
		return EXIT_INTERNAL;
	} else {
		ret = coll_get_unique_id(&id);
		if (ret) {
			fprintf(stderr, "collrun: cannot make an id: %s\n", coll_strerror(ret));
			return EXIT_INTERNAL;
		}
	}
	coll_id_to_str(&id, idstr, sizeof(idstr));
	if (verbose)
		fprintf(stderr, "collrun: %d ranks, id %s\n", nranks,
			idfd ? "from --id-fd" : envid && *envid ?
			"from COLL_ID" : "random");

	ranks = calloc(nranks, sizeof(*ranks));
	if (!ranks) {
		fprintf(stderr, "collrun: out of memory\n");
		return EXIT_INTERNAL;
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	fflush(NULL);

	if (timeout > 0)
		deadline = now() + timeout;
	for (i = 0; i < nranks; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "collrun: fork for rank %d: %s\n", i, strerror(errno));
			exit_code = EXIT_INTERNAL;
			failed = killing = 1;
			kill_at = now() + KILL_GRACE_S;
			signal_all(SIGTERM);
			break;
		}
		if (pid == 0)
			exec_rank(i, idstr, argv + optind, &oldmask);
		setpgid(pid, pid);	/* also in the child: whoever runs first */
		ranks[i].pid = pid;
		nalive++;
	}

	while (nalive > 0) {
		struct timespec ts, *tsp = NULL;
		double wake = 0, t;
		siginfo_t si;
		int sig;

		if (killing && !killed_hard)
			wake = kill_at;
		else if (!killing && deadline > 0)
			wake = deadline;
		if (wake > 0) {
			t = wake - now();
			if (t < 0)
				t = 0;
			ts.tv_sec = (time_t)t;
			ts.tv_nsec = (long)((t - ts.tv_sec) * 1e9);
			tsp = &ts;
		}
		sig = tsp ? sigtimedwait(&mask, &si, tsp) : sigwaitinfo(&mask, &si);
		if (sig < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) {
				fprintf(stderr, "collrun: sigwait: %s\n", strerror(errno));
				return EXIT_INTERNAL;
			}
			/* A deadline passed. */
			if (!killing && deadline > 0 && now() >= deadline) {
				fprintf(stderr, "collrun: timeout after %g s, killing %d rank%s\n",
					timeout, nalive, nalive == 1 ? "" : "s");
				exit_code = EXIT_TIMEOUT;
				failed = killing = 1;
				kill_at = now() + KILL_GRACE_S;
				signal_all(SIGTERM);
			} else if (killing && !killed_hard && now() >= kill_at) {
				if (verbose)
					fprintf(stderr, "collrun: %d rank%s still alive, sending SIGKILL\n",
						nalive, nalive == 1 ? "" : "s");
				killed_hard = 1;
				signal_all(SIGKILL);
			}
			continue;
		}
		if (sig != SIGCHLD) {
			if (!failed) {
				fprintf(stderr, "collrun: got signal %d (%s), passing it on to the ranks\n",
					sig, strsignal(sig));
				exit_code = 128 + sig;
				failed = 1;
			}
			if (!killing) {
				killing = 1;
				kill_at = now() + KILL_GRACE_S;
			}
			signal_all(sig);
			continue;
		}
		for (;;) {
			char what[96];
			int status, r;
			pid_t pid = waitpid(-1, &status, WNOHANG);

			if (pid <= 0)
				break;
			r = find_rank(pid);
			if (r < 0)
				continue;
			ranks[r].pid = 0;
			nalive--;
			describe(what, sizeof(what), status);
			if (status == 0) {
				if (verbose)
					fprintf(stderr, "collrun: rank %d (pid %d) %s\n", r, (int)pid, what);
				continue;
			}
			if (!failed) {
				if (nalive)
					fprintf(stderr, "collrun: rank %d (pid %d) %s; killing the other %d rank%s\n",
						r, (int)pid, what, nalive, nalive == 1 ? "" : "s");
				else
					fprintf(stderr, "collrun: rank %d (pid %d) %s\n", r, (int)pid, what);
				exit_code = status_code(status);
				failed = killing = 1;
				kill_at = now() + KILL_GRACE_S;
				signal_all(SIGTERM);
			} else if (verbose) {
				fprintf(stderr, "collrun: rank %d (pid %d) %s\n", r, (int)pid, what);
			}
		}
	}
	free(ranks);
	return exit_code;
}
