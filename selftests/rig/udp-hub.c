// SPDX-License-Identifier: GPL-2.0
/*
 * udp-hub: a tiny learning Ethernet switch for qemu guests on 127.0.0.1.
 *
 * Each guest's NIC is "-netdev socket,udp=127.0.0.1:HUBPORT,localaddr=127.0.0.1:0":
 * qemu sends every frame as one UDP datagram to HUBPORT and accepts frames
 * from any sender. The hub binds one loopback UDP port per guest (ephemeral,
 * so there is nothing to collide with), learns each guest's address from the
 * first datagram it receives on that port, learns source MACs, and forwards
 * each frame to the port owning its destination MAC, flooding broadcast,
 * multicast and unknown destinations. It never touches anything but 127.0.0.1.
 *
 * UDP loses frames: the kernel drops a datagram when qemu's socket buffer is
 * full (qemu stops reading while the guest's receive ring is full), and a
 * busy TCG guest makes that happen often under load.  With -u DIR the hub
 * is lossless instead: one unix datagram socket per guest, DIR/hubI.sock,
 * for "-netdev dgram,id=n0,local.type=unix,local.path=...,
 * remote.type=unix,remote.path=DIR/hubI.sock" (qemu 7.2 and later).  The
 * hub connects its socket to the guest's once it has heard from it, so a
 * full guest queue is EAGAIN, not a drop: the frame waits in a queue of that
 * port (bounded) until the guest reads again.  qemu, the other way, holds
 * the guest's transmit queue while the hub's socket is full.
 *
 * usage: udp-hub -n N [-u DIR] [-o PORTFILE] [-c FIFO] [-t SECS] [-p PID] [-v]
 *   -n N         number of guest ports (1..64)
 *   -u DIR       unix datagram sockets DIR/hub0.sock ... (lossless), not UDP
 *   -o PORTFILE  write the N port numbers (-u: socket paths; one line,
 *                space-separated) to this file, atomically, once bound
 *                (default: stdout)
 *   -c FIFO      take commands from this named pipe (made if missing), one a
 *                line (see below)
 *   -t SECS      exit after SECS seconds in any case (default 3600)
 *   -p PID       exit when process PID is gone (checked every second)
 *   -v           print statistics to stderr on exit
 * SIGTERM/SIGINT/SIGHUP end it at once.
 *
 * Commands (-c), to inject faults into the guests' network:
 *   cut I [REPLY]      drop every frame port I (0-based) sends or would be
 *                      sent from now on, as if its cable were pulled
 *   restore I [REPLY]  plug it back in
 * With REPLY (an absolute path), the hub writes "ok cut I" (or "error: ...")
 * to that file, atomically, once the command has taken effect: every frame
 * handled after that point obeys it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_PORTS 64
#define MAX_MACS 1024
#define FRAME_MAX (65536 + 4096)
#define QUEUE_MAX (16 << 20)	/* bytes waiting for one guest (-u), at most */

struct frame {
	struct frame *next;
	size_t len;
	uint8_t data[];
};

struct port {
	int fd;
	uint16_t port;
	int known;			/* peer address learned (-u: connected) */
	int cut;			/* its link is cut: no frame in or out */
	struct sockaddr_in peer;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];	/* -u */
	struct frame *qhead, *qtail;	/* -u: waiting for the guest to read */
	size_t qbytes, qmax;
	unsigned long rx, tx, drop, cutdrop, waited;
};

static const char *unix_dir;

struct mac_entry {
	uint8_t mac[6];
	int port;
};

static struct port ports[MAX_PORTS];
static int nports;
static struct mac_entry macs[MAX_MACS];
static int nmacs;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int mac_lookup(const uint8_t *mac)
{
	for (int i = 0; i < nmacs; i++)
		if (!memcmp(macs[i].mac, mac, 6))
			return macs[i].port;
	return -1;
}

static void mac_learn(const uint8_t *mac, int port)
{
	if (mac[0] & 1)		/* a multicast source is bogus */
		return;
	for (int i = 0; i < nmacs; i++) {
		if (!memcmp(macs[i].mac, mac, 6)) {
			macs[i].port = port;
			return;
		}
	}
	if (nmacs < MAX_MACS) {
		memcpy(macs[nmacs].mac, mac, 6);
		macs[nmacs++].port = port;
	}
}

static void queue_free(struct port *p, unsigned long *count)
{
	while (p->qhead) {
		struct frame *f = p->qhead;

		p->qhead = f->next;
		free(f);
		(*count)++;
	}
	p->qtail = NULL;
	p->qbytes = 0;
}

/* -u: send what waits for port @p until the guest's socket is full. */
static void flush_queue(struct port *p)
{
	while (p->qhead) {
		struct frame *f = p->qhead;

		if (send(p->fd, f->data, f->len, MSG_DONTWAIT) < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
				return;
			p->drop++;	/* the guest is gone */
		} else {
			p->tx++;
		}
		p->qhead = f->next;
		p->qbytes -= f->len;
		free(f);
	}
	p->qtail = NULL;
}

/* -u: keep a frame for port @p until its guest reads again. */
static void enqueue(struct port *p, const void *buf, size_t len)
{
	struct frame *f;

	if (p->qbytes + len > QUEUE_MAX || !(f = malloc(sizeof(*f) + len))) {
		p->drop++;
		return;
	}
	f->next = NULL;
	f->len = len;
	memcpy(f->data, buf, len);
	if (p->qtail)
		p->qtail->next = f;
	else
		p->qhead = f;
	p->qtail = f;
	p->qbytes += len;
	if (p->qbytes > p->qmax)
		p->qmax = p->qbytes;
	p->waited++;
}

static void send_to(int to, const void *buf, size_t len)
{
	struct port *p = &ports[to];

	if (p->cut) {
		p->cutdrop++;
		return;
	}
	if (!p->known) {
		p->drop++;
		return;
	}
	if (unix_dir) {
		if (p->qhead) {
			enqueue(p, buf, len);	/* in order, behind the others */
		} else if (send(p->fd, buf, len, MSG_DONTWAIT) < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
				enqueue(p, buf, len);
			else
				p->drop++;	/* the guest is gone */
		} else {
			p->tx++;
		}
		return;
	}
	if (sendto(p->fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&p->peer,
		   sizeof(p->peer)) < 0)
		p->drop++;	/* guest gone or its socket full: like a lossy wire */
	else
		p->tx++;
}

static void handle(int from, const uint8_t *buf, size_t len)
{
	const uint8_t *dst = buf, *src = buf + 6;
	int to;

	ports[from].rx++;
	if (ports[from].cut) {
		ports[from].cutdrop++;
		return;
	}
	if (len < 14)
		return;
	mac_learn(src, from);
	to = (dst[0] & 1) ? -1 : mac_lookup(dst);
	if (to == from)
		return;
	if (to >= 0) {
		send_to(to, buf, len);
		return;
	}
	for (int i = 0; i < nports; i++)
		if (i != from)
			send_to(i, buf, len);
}

/* -u: what guest @i sent; the first datagram tells who the guest is. */
static void recv_unix(int i, uint8_t *buf, size_t size)
{
	for (int k = 0; k < 64; k++) {
		struct sockaddr_un from;
		socklen_t flen = sizeof(from);
		ssize_t len = recvfrom(ports[i].fd, buf, size, MSG_DONTWAIT,
				       (struct sockaddr *)&from, &flen);

		if (len < 0)
			return;
		if (!ports[i].known) {
			/* from now on only that socket reaches this port, and
			 * POLLOUT says whether it has room */
			if (flen <= offsetof(struct sockaddr_un, sun_path) ||
			    connect(ports[i].fd, (struct sockaddr *)&from, flen) < 0)
				continue;
			ports[i].known = 1;
		}
		if (len == 0)
			continue;
		handle(i, buf, (size_t)len);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: udp-hub -n N [-u DIR] [-o PORTFILE] [-c FIFO] [-t SECS] [-p PID] [-v]\n");
	exit(2);
}

/* Write @msg to @path atomically (a temporary file renamed over it). */
static void reply(const char *path, const char *msg)
{
	char tmp[4096];
	FILE *f;

	if (!path)
		return;
	if (path[0] != '/' ||
	    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >=
	    (int)sizeof(tmp)) {
		fprintf(stderr, "udp-hub: bad reply path %s\n", path);
		return;
	}
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "udp-hub: %s: %s\n", tmp, strerror(errno));
		return;
	}
	fprintf(f, "%s\n", msg);
	if (fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "udp-hub: %s: %s\n", path, strerror(errno));
		unlink(tmp);
	}
}

/* One command line from the control pipe. */
static void command(char *line)
{
	char *save = NULL, *verb, *arg, *path, *end, msg[128];
	long i = -1;

	verb = strtok_r(line, " \t", &save);
	arg = strtok_r(NULL, " \t", &save);
	path = strtok_r(NULL, " \t", &save);
	if (!verb)
		return;
	if (arg) {
		errno = 0;
		i = strtol(arg, &end, 10);
		if (errno || *end || end == arg)
			i = -1;
	}
	if ((strcmp(verb, "cut") && strcmp(verb, "restore")) || i < 0 ||
	    i >= nports || strtok_r(NULL, " \t", &save)) {
		snprintf(msg, sizeof(msg), "error: bad command '%s %s'", verb,
			 arg ? arg : "");
		fprintf(stderr, "udp-hub: %s\n", msg);
		reply(path, msg);
		return;
	}
	ports[i].cut = !strcmp(verb, "cut");
	if (ports[i].cut)	/* what waits for it is lost with the cable */
		queue_free(&ports[i], &ports[i].cutdrop);
	snprintf(msg, sizeof(msg), "ok %s %ld", verb, i);
	fprintf(stderr, "udp-hub: port %ld (%u) %s\n", i, ports[i].port,
		ports[i].cut ? "cut" : "restored");
	reply(path, msg);
}

/* Read what the control pipe has; run each complete line. */
static void control(int fd)
{
	static char buf[8192];
	static size_t have;
	ssize_t n;
	char *nl;

	for (;;) {
		n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = 0;
		while ((nl = memchr(buf, '\n', have))) {
			*nl = 0;
			command(buf);
			have -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, have);
		}
		if (have == sizeof(buf) - 1)
			have = 0;	/* a line that long is garbage */
	}
}

int main(int argc, char **argv)
{
	static uint8_t buf[FRAME_MAX];
	const char *portfile = NULL, *ctl = NULL;
	double limit = 3600, deadline, next_check = 0;
	pid_t watch = 0;
	int verbose = 0, opt, npfd, ctlfd = -1;
	struct pollfd pfd[MAX_PORTS + 1];
	struct sigaction sa;

	while ((opt = getopt(argc, argv, "n:u:o:c:t:p:v")) != -1) {
		switch (opt) {
		case 'n': nports = atoi(optarg); break;
		case 'u': unix_dir = optarg; break;
		case 'o': portfile = optarg; break;
		case 'c': ctl = optarg; break;
		case 't': limit = atof(optarg); break;
		case 'p': watch = (pid_t)atol(optarg); break;
		case 'v': verbose = 1; break;
		default: usage();
		}
	}
	if (optind != argc || nports < 1 || nports > MAX_PORTS || limit <= 0)
		usage();

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	for (int i = 0; i < nports && unix_dir; i++) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int sz = 4 << 20;

		if (snprintf(a.sun_path, sizeof(a.sun_path), "%s/hub%d.sock", unix_dir, i) >=
		    (int)sizeof(a.sun_path)) {
			fprintf(stderr, "udp-hub: %s: path too long for a unix socket\n", unix_dir);
			return 1;
		}
		unlink(a.sun_path);
		ports[i].fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (ports[i].fd < 0 || bind(ports[i].fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			perror("udp-hub: unix socket/bind");
			return 1;
		}
		/* what may be in flight to the guest before EAGAIN */
		if (setsockopt(ports[i].fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
			setsockopt(ports[i].fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		memcpy(ports[i].path, a.sun_path, sizeof(a.sun_path));
		pfd[i].fd = ports[i].fd;
		pfd[i].events = POLLIN;
	}
	for (int i = 0; i < nports && !unix_dir; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t alen = sizeof(a);
		int sz = 4 << 20;

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ports[i].fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (ports[i].fd < 0 ||
		    bind(ports[i].fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    getsockname(ports[i].fd, (struct sockaddr *)&a, &alen) < 0) {
			perror("udp-hub: socket/bind");
			return 1;
		}
		/* Bursts of 9000-byte frames: ask for large buffers (best effort). */
		if (setsockopt(ports[i].fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
			setsockopt(ports[i].fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		if (setsockopt(ports[i].fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
			setsockopt(ports[i].fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		ports[i].port = ntohs(a.sin_port);
		pfd[i].fd = ports[i].fd;
		pfd[i].events = POLLIN;
	}
	npfd = nports;
	if (ctl) {
		/* Opened for writing too, so that it never reads end-of-file. */
		if ((mkfifo(ctl, 0600) && errno != EEXIST) ||
		    (ctlfd = open(ctl, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
			perror("udp-hub: control pipe");
			return 1;
		}
		pfd[npfd].fd = ctlfd;
		pfd[npfd++].events = POLLIN;
	}

	{
		char tmp[4096];
		FILE *f = stdout;

		if (portfile) {
			snprintf(tmp, sizeof(tmp), "%s.tmp.%d", portfile, (int)getpid());
			f = fopen(tmp, "w");
			if (!f) {
				perror("udp-hub: port file");
				return 1;
			}
		}
		for (int i = 0; i < nports; i++) {
			if (unix_dir)
				fprintf(f, "%s%s", i ? " " : "", ports[i].path);
			else
				fprintf(f, "%s%u", i ? " " : "", ports[i].port);
		}
		fputc('\n', f);
		if (portfile) {
			if (fclose(f) || rename(tmp, portfile)) {
				perror("udp-hub: port file");
				return 1;
			}
		} else {
			fflush(f);
		}
	}

	deadline = now() + limit;
	while (!stop) {
		int n;
		double t;

		for (int i = 0; i < nports; i++)
			pfd[i].events = POLLIN | (ports[i].qhead ? POLLOUT : 0);
		n = poll(pfd, npfd, 1000);

		if (n < 0 && errno != EINTR) {
			perror("udp-hub: poll");
			return 1;
		}
		for (int i = 0; n > 0 && i < nports; i++) {
			if (pfd[i].revents & POLLOUT)
				flush_queue(&ports[i]);
			if (!(pfd[i].revents & POLLIN))
				continue;
			if (unix_dir) {
				recv_unix(i, buf, sizeof(buf));
				continue;
			}
			/* Drain what is queued, bounded so no port starves the others. */
			for (int k = 0; k < 64; k++) {
				struct sockaddr_in from;
				socklen_t flen = sizeof(from);
				ssize_t len = recvfrom(ports[i].fd, buf, sizeof(buf), MSG_DONTWAIT,
						       (struct sockaddr *)&from, &flen);

				if (len < 0)
					break;
				if (from.sin_addr.s_addr != htonl(INADDR_LOOPBACK))
					continue;
				ports[i].peer = from;
				ports[i].known = 1;
				if (len == 0)
					continue;	/* qemu reads 0 bytes as "closed": never forward */
				handle(i, buf, (size_t)len);
			}
		}
		if (ctlfd >= 0 && (pfd[nports].revents & POLLIN))
			control(ctlfd);
		t = now();
		if (t >= deadline) {
			fprintf(stderr, "udp-hub: time limit (%.0f s) reached, exiting\n", limit);
			break;
		}
		if (watch && t >= next_check) {
			next_check = t + 1;
			if (kill(watch, 0) < 0 && errno == ESRCH)
				break;
		}
	}

	if (verbose)
		for (int i = 0; i < nports; i++)
			fprintf(stderr, "udp-hub: port %d (%u): rx %lu tx %lu drop %lu cut %lu waited %lu (at most %zu bytes)\n",
				i, ports[i].port, ports[i].rx, ports[i].tx, ports[i].drop,
				ports[i].cutdrop, ports[i].waited, ports[i].qmax);
	for (int i = 0; i < nports && unix_dir; i++)
		unlink(ports[i].path);
	return 0;
}
