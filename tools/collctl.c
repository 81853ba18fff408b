// SPDX-License-Identifier: MIT
/*
 * collctl: see and tune the collective module live, over its generic
 * netlink family "collective" (uapi/collective.yaml), in the style of
 * iproute2's rdma tool:
 *
 *   collctl [-j] [-p] tune show [comm N]
 *   collctl tune set [comm N] [reset] NAME VALUE [NAME VALUE...]
 *   collctl comm show [N]
 *   collctl op show [comm N]
 *   collctl stats [show] [comm N]
 *   collctl monitor [-c COUNT]
 *   collctl diag [-t MS]
 *
 * Every field is printed once, for text and JSON alike (struct out).  The
 * kernel's extended ACK is printed on errors: its message, the attribute
 * it names and, for a range, the range.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <linux/netlink.h>

#include <linux/collective.h>
#include <linux/collective_nl.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

static const char *const prim_names[] = {
	"allreduce", "reduce", "reducescatter", "allgather", "broadcast",
	"scatter", "gather", "alltoall", "barrier",
};
static const char *const algo_names[] = {
	"auto", "ring", "direct", "naive", "tree", "hier",
};
static const char *const transport_names[] = { "self", "rdma", "tcp", "none" };
static const char *const fallback_names[] = {
	"none", "asked", "no-device", "connect", "peer",
};
static const char *const comm_state_names[] = {
	"joining", "connecting", "ready", "dead", "gone",
};
static const char *const op_state_names[] = { "arriving", "running", "done" };
static const char *const event_names[] = {
	"created", "ready", "destroyed", "failed", "fallback",
};

/* The tunables, in the order of their attributes from COLLECTIVE_A_TUNE_ALGO. */
static const char *const tune_names[] = {
	"algo", "allreduce-algo", "reduce-algo", "reducescatter-algo",
	"allgather-algo", "broadcast-algo", "scatter-algo", "gather-algo",
	"alltoall-algo", "barrier-algo", "solo-bytes", "eager-bytes",
	"hier-bytes", "ring-chunk-bytes", "exec-chunk-bytes", "spin-ns",
	"join-timeout-ms", "peer-timeout-ms", "plan-cache", "max-requests",
	"max-comms", "busy-poll-us", "rdma-qps", "mr-pool",
};
#define NTUNE (sizeof(tune_names) / sizeof(tune_names[0]))
#define NAMES(a) (a), (sizeof(a) / sizeof((a)[0]))

static const char *name_of(const char *const *names, size_t n, uint32_t v)
{
	static char buf[16];

	if (v < n)
		return names[v];
	snprintf(buf, sizeof(buf), "%u", v);
	return buf;
}

static bool tune_is_algo(unsigned int i)
{
	return i <= COLLECTIVE_A_TUNE_BARRIER_ALGO - COLLECTIVE_A_TUNE_ALGO;
}

/* ---- output: every field once, text or JSON ---------------------------- */

static bool json, pretty;

/*
 * JSON: objects and arrays nest as they are opened.  Text: a top-level
 * object is a line of "key value" pairs; a nested object (a peer, a
 * primitive's statistics) is a line of its own, indented; an array of
 * objects prints nothing itself.
 */
struct out {
	int depth;		/* JSON nesting */
	bool first[32];		/* nothing printed yet at this depth */
	bool arr[32];		/* this depth is an array */
	int tdepth;		/* text: objects open */
	bool bol;		/* text: nothing on this line yet */
};

static struct out o = { .bol = true };

static void indent(int n)
{
	for (int i = 0; i < n; i++)
		fputs(pretty ? "  " : "    ", stdout);
}

static void json_key(const char *key)
{
	if (!o.first[o.depth])
		putchar(',');
	o.first[o.depth] = false;
	if (pretty) {
		putchar('\n');
		indent(o.depth);
	} else if (o.depth && !o.arr[o.depth]) {
		putchar(' ');
	}
	if (key && !o.arr[o.depth])
		printf("\"%s\": ", key);
}

static void text_key(const char *key)
{
	if (!o.bol)
		putchar(' ');
	o.bol = false;
	if (key)
		printf("%s ", key);
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void out_u64(const char *key, uint64_t v)
{
	if (json)
		json_key(key);
	else
		text_key(key);
	printf("%" PRIu64, v);
}

static void out_str(const char *key, const char *v)
{
	if (json) {
		json_key(key);
		json_str(v);
	} else {
		text_key(key);
		fputs(v, stdout);
	}
}

/* A flag: true or false in JSON; in text "KEY yes" when set, else nothing. */
static void out_flag(const char *key, bool v)
{
	if (json) {
		json_key(key);
		fputs(v ? "true" : "false", stdout);
	} else if (v) {
		out_str(key, "yes");
	}
}

/* Open an object (a line in text, starting with @key if given) or array. */
static void out_open(const char *key, bool array)
{
	if (json) {
		if (o.depth)
			json_key(key);
		putchar(array ? '[' : '{');
		o.depth++;
		o.first[o.depth] = true;
		o.arr[o.depth] = array;
		return;
	}
	if (array)
		return;
	if (!o.bol)
		putchar('\n');
	indent(o.tdepth);
	o.tdepth++;
	o.bol = true;
	if (key && o.tdepth > 1) {
		fputs(key, stdout);
		o.bol = false;
	}
}

static void out_close(bool array)
{
	if (json) {
		bool empty = o.first[o.depth];

		o.depth--;
		if (pretty && !empty) {
			putchar('\n');
			indent(o.depth);
		}
		putchar(o.arr[o.depth + 1] ? ']' : '}');
		if (!o.depth)
			putchar('\n');
		return;
	}
	if (array)
		return;
	o.tdepth--;
	if (!o.tdepth && !o.bol) {
		putchar('\n');
		o.bol = true;
	}
}

/* Arrays of numbers: "missing 1,3" in text. */
static void out_list_u64(const char *key, const uint64_t *v, int n)
{
	if (json) {
		out_open(key, true);
		for (int i = 0; i < n; i++)
			out_u64(NULL, v[i]);
		out_close(true);
		return;
	}
	text_key(key);
	for (int i = 0; i < n; i++)
		printf("%s%" PRIu64, i ? "," : "", v[i]);
	if (!n)
		putchar('-');
}

static void out_list_str(const char *key, const char *const *v, int n)
{
	if (json) {
		out_open(key, true);
		for (int i = 0; i < n; i++)
			out_str(NULL, v[i]);
		out_close(true);
		return;
	}
	text_key(key);
	for (int i = 0; i < n; i++)
		printf("%s%s", i ? "," : "", v[i]);
	if (!n)
		putchar('-');
}

/* A top-level list of objects: a JSON array, lines in text. */
static void out_begin_list(void)
{
	if (json) {
		putchar('[');
		o.depth = 1;
		o.first[1] = true;
		o.arr[1] = true;
	}
}

static void out_end_list(void)
{
	if (json) {
		if (pretty && !o.first[1])
			putchar('\n');
		puts("]");
		o.depth = 0;
	}
}

/* ---- netlink ------------------------------------------------------------ */

static struct nl_sock *sk;
static int family;
static struct nl_msg *last_req;		/* for the extack's attribute offset */
static const char *const *req_attr_names;	/* by attribute type */
static size_t req_nattr_names;

struct ack {
	int err;
	bool done;
};

static void print_extack(struct nlmsghdr *nlh, struct nlmsgerr *e)
{
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1] = { 0 };
	unsigned int ack_len = sizeof(*nlh) + sizeof(int) + sizeof(*nlh);
	const char *attr = NULL;
	char range[96] = "";

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		ack_len += e->msg.nlmsg_len - sizeof(*nlh);
	if (nlh->nlmsg_len <= ack_len)
		return;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)nlh + ack_len),
		      nlh->nlmsg_len - ack_len, NULL))
		return;
	if (tb[NLMSGERR_ATTR_OFFS] && last_req) {
		uint32_t off = nla_get_u32(tb[NLMSGERR_ATTR_OFFS]);
		struct nlmsghdr *req = nlmsg_hdr(last_req);

		if (off >= NLMSG_HDRLEN + GENL_HDRLEN &&
		    off + sizeof(struct nlattr) <= req->nlmsg_len) {
			struct nlattr *a = (struct nlattr *)((char *)req + off);
			int t = nla_type(a);

			if (t > 0 && (size_t)t < req_nattr_names &&
			    req_attr_names[t])
				attr = req_attr_names[t];
		}
	}
	if (tb[NLMSGERR_ATTR_POLICY]) {
		struct nlattr *p[NL_POLICY_TYPE_ATTR_MAX + 1] = { 0 };

		if (!nla_parse_nested(p, NL_POLICY_TYPE_ATTR_MAX,
				      tb[NLMSGERR_ATTR_POLICY], NULL) &&
		    p[NL_POLICY_TYPE_ATTR_MIN_VALUE_U] &&
		    p[NL_POLICY_TYPE_ATTR_MAX_VALUE_U])
			snprintf(range, sizeof(range), " (valid: %" PRIu64 "..%" PRIu64 ")",
				 (uint64_t)nla_get_u64(p[NL_POLICY_TYPE_ATTR_MIN_VALUE_U]),
				 (uint64_t)nla_get_u64(p[NL_POLICY_TYPE_ATTR_MAX_VALUE_U]));
	}
	fprintf(stderr, "Error: %s%s%s%s\n",
		tb[NLMSGERR_ATTR_MSG] ? nla_get_string(tb[NLMSGERR_ATTR_MSG]) :
		strerror(-e->error), attr ? ": " : "", attr ? attr : "", range);
}

static int cb_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)e - 1;
	struct ack *ack = arg;

	(void)nla;
	ack->err = e->error;
	ack->done = true;
	print_extack(nlh, e);
	return NL_STOP;
}

static int cb_finish(struct nl_msg *msg, void *arg)
{
	struct ack *ack = arg;

	(void)msg;
	ack->done = true;
	return NL_STOP;
}

static int cb_ack(struct nl_msg *msg, void *arg)
{
	return cb_finish(msg, arg);
}

static int nl_open(void)
{
	int one = 1;

	sk = nl_socket_alloc();
	if (!sk || genl_connect(sk)) {
		fprintf(stderr, "collctl: cannot open a generic netlink socket\n");
		return -1;
	}
	nl_socket_set_buffer_size(sk, 1 << 20, 1 << 20);
	nl_socket_set_msg_buf_size(sk, 1 << 16);
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one,
		   sizeof(one));
	family = genl_ctrl_resolve(sk, COLLECTIVE_FAMILY_NAME);
	if (family < 0) {
		fprintf(stderr,
			"collctl: no netlink family \"%s\": is the collective module loaded?\n",
			COLLECTIVE_FAMILY_NAME);
		return -1;
	}
	return 0;
}

/* Called for every reply: its attributes (the last of each type) and all. */
typedef int (*msg_fn)(struct nlattr **tb, struct nlmsghdr *nlh, void *arg);

struct req_ctx {
	msg_fn fn;
	void *arg;
	int maxattr;
};

static int cb_valid(struct nl_msg *msg, void *arg)
{
	struct req_ctx *ctx = arg;
	struct nlattr *tb[64] = { 0 };

	if (!ctx->fn || genlmsg_parse(nlmsg_hdr(msg), 0, tb, ctx->maxattr, NULL))
		return NL_SKIP;
	return ctx->fn(tb, nlmsg_hdr(msg), ctx->arg) ? NL_STOP : NL_OK;
}

/* Every attribute of a reply, multi-attrs included. */
#define for_each_attr(a, nlh, rem)					\
	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlh), 0),	\
			  genlmsg_attrlen(nlmsg_data(nlh), 0), rem)

static struct nl_msg *req_new(uint8_t cmd, bool dump, const char *const *names,
			      size_t nnames)
{
	struct nl_msg *m = nlmsg_alloc();

	if (!m) {
		fprintf(stderr, "collctl: out of memory\n");
		exit(1);
	}
	genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0,
		    dump ? NLM_F_DUMP : 0, cmd, COLLECTIVE_FAMILY_VERSION);
	req_attr_names = names;
	req_nattr_names = nnames;
	return m;
}

/* Send @m (freed), hand every reply to @fn; 0 or the kernel's -errno. */
static int req_run(struct nl_msg *m, int maxattr, msg_fn fn, void *arg)
{
	struct req_ctx ctx = { fn, arg, maxattr };
	struct ack ack = { 0 };
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	int ret;

	last_req = m;
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, cb_valid, &ctx);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, cb_finish, &ack);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, cb_ack, &ack);
	nl_cb_err(cb, NL_CB_CUSTOM, cb_error, &ack);
	ret = nl_send_auto(sk, m);
	if (ret < 0) {
		fprintf(stderr, "collctl: send: %s\n", nl_geterror(ret));
		ack.err = -EIO;
		ack.done = true;
	}
	while (!ack.done) {
		ret = nl_recvmsgs(sk, cb);
		if (ret < 0 && !ack.done) {
			fprintf(stderr, "collctl: receive: %s\n", nl_geterror(ret));
			ack.err = -EIO;
			break;
		}
	}
	nl_cb_put(cb);
	last_req = NULL;
	nlmsg_free(m);
	return ack.err;
}

static long parse_num(const char *s, bool *ok)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	*ok = !errno && !*end && end != s && v >= 0;
	return *ok ? v : 0;
}

/* "comm N" at argv[*i], if there. */
static bool parse_comm(int argc, char **argv, int *i, uint32_t *comm)
{
	bool ok;

	if (*i + 1 >= argc || strcmp(argv[*i], "comm"))
		return false;
	*comm = parse_num(argv[*i + 1], &ok);
	if (!ok) {
		fprintf(stderr, "collctl: bad communicator \"%s\"\n", argv[*i + 1]);
		exit(2);
	}
	*i += 2;
	return true;
}

static const char *errname(uint32_t e)
{
	const char *n = e ? strerrorname_np(e) : "0";

	return n ? n : "?";
}

/* ---- tune --------------------------------------------------------------- */

static const char *tune_attr_names[COLLECTIVE_A_TUNE_MAX + 1];

static void tune_names_init(void)
{
	tune_attr_names[COLLECTIVE_A_TUNE_COMM] = "comm";
	tune_attr_names[COLLECTIVE_A_TUNE_RESET] = "reset";
	for (unsigned int i = 0; i < NTUNE; i++)
		tune_attr_names[COLLECTIVE_A_TUNE_ALGO + i] = tune_names[i];
}

static int tune_show_msg(struct nlattr **tb, struct nlmsghdr *nlh, void *arg)
{
	const char *over[NTUNE];
	struct nlattr *a;
	int rem, n = 0;

	(void)arg;
	out_open(NULL, false);
	if (tb[COLLECTIVE_A_TUNE_COMM])
		out_u64("comm", nla_get_u32(tb[COLLECTIVE_A_TUNE_COMM]));
	for (unsigned int i = 0; i < NTUNE; i++) {
		struct nlattr *v = tb[COLLECTIVE_A_TUNE_ALGO + i];

		if (!v)
			continue;
		if (!json && !o.bol) {	/* text: one tunable a line */
			putchar('\n');
			o.bol = true;
		}
		if (tune_is_algo(i))
			out_str(tune_names[i],
				name_of(NAMES(algo_names), nla_get_u32(v)));
		else
			out_u64(tune_names[i], nla_get_u32(v));
	}
	if (tb[COLLECTIVE_A_TUNE_COMM]) {
		for_each_attr(a, nlh, rem)
			if (nla_type(a) == COLLECTIVE_A_TUNE_OVERRIDDEN &&
			    n < (int)NTUNE)
				over[n++] = nla_get_string(a);
		if (!json) {
			putchar('\n');
			o.bol = true;
		}
		out_list_str("overridden", over, n);
	}
	out_close(false);
	return 0;
}

/* "allreduce.algo", "solo_bytes" -> the spec's "allreduce-algo", "solo-bytes" */
static int tune_index(const char *arg)
{
	char name[64];

	snprintf(name, sizeof(name), "%s", arg);
	for (char *p = name; *p; p++)
		if (*p == '.' || *p == '_')
			*p = '-';
	for (unsigned int i = 0; i < NTUNE; i++)
		if (!strcmp(name, tune_names[i]))
			return i;
	return -1;
}

static int cmd_tune(int argc, char **argv)
{
	bool set = argc && !strcmp(argv[0], "set");
	int i = argc && (set || !strcmp(argv[0], "show")) ? 1 : 0;
	struct nl_msg *m;
	uint32_t comm;
	bool ok = true;

	tune_names_init();
	m = req_new(set ? COLLECTIVE_CMD_TUNE_SET : COLLECTIVE_CMD_TUNE_GET,
		    false, tune_attr_names, COLLECTIVE_A_TUNE_MAX + 1);
	while (i < argc) {
		int t;
		long v = -1;

		if (parse_comm(argc, argv, &i, &comm)) {
			nla_put_u32(m, COLLECTIVE_A_TUNE_COMM, comm);
			continue;
		}
		if (set && !strcmp(argv[i], "reset")) {
			nla_put_flag(m, COLLECTIVE_A_TUNE_RESET);
			i++;
			continue;
		}
		if (!set || i + 1 >= argc) {
			fprintf(stderr, "collctl: tune: unexpected \"%s\"\n", argv[i]);
			return 2;
		}
		t = tune_index(argv[i]);
		if (t < 0) {
			fprintf(stderr, "collctl: unknown tunable \"%s\"\n", argv[i]);
			return 2;
		}
		if (tune_is_algo(t))
			for (size_t a = 0; a < sizeof(algo_names) / sizeof(*algo_names); a++)
				if (!strcmp(argv[i + 1], algo_names[a]))
					v = a;
		if (v < 0)
			v = parse_num(argv[i + 1], &ok);
		if (!ok || v > UINT32_MAX) {
			fprintf(stderr, "collctl: bad value \"%s\" for %s\n",
				argv[i + 1], tune_names[t]);
			return 2;
		}
		nla_put_u32(m, COLLECTIVE_A_TUNE_ALGO + t, v);
		i += 2;
	}
	return req_run(m, COLLECTIVE_A_TUNE_MAX, set ? NULL : tune_show_msg,
		       NULL) ? 1 : 0;
}

/* ---- communicators ------------------------------------------------------ */

static const char *const comm_attr_names[COLLECTIVE_A_COMM_MAX + 1] = {
	[COLLECTIVE_A_COMM_SERIAL] = "comm",
};

static uint64_t get_uint(const struct nlattr *a)
{
	if (!a)
		return 0;
	return nla_len(a) == 8 ? nla_get_u64((struct nlattr *)a) :
				 nla_get_u32((struct nlattr *)a);
}

static void print_peer(struct nlattr *nest)
{
	struct nlattr *p[COLLECTIVE_A_PEER_MAX + 1] = { 0 };

	if (nla_parse_nested(p, COLLECTIVE_A_PEER_MAX, nest, NULL))
		return;
	out_open("peer", false);
	out_u64("host", get_uint(p[COLLECTIVE_A_PEER_HOST]));
	out_u64("nranks", get_uint(p[COLLECTIVE_A_PEER_NRANKS]));
	out_str("transport", name_of(NAMES(transport_names),
				     get_uint(p[COLLECTIVE_A_PEER_TRANSPORT])));
	out_str("fallback", name_of(NAMES(fallback_names),
				    get_uint(p[COLLECTIVE_A_PEER_FALLBACK])));
	out_u64("bytes-sent", get_uint(p[COLLECTIVE_A_PEER_BYTES_SENT]));
	out_u64("bytes-received", get_uint(p[COLLECTIVE_A_PEER_BYTES_RECEIVED]));
	out_u64("qps", get_uint(p[COLLECTIVE_A_PEER_QPS]));
	out_close(false);
}

static int comm_msg(struct nlattr **tb, struct nlmsghdr *nlh, void *arg)
{
	struct nlattr *a;
	int rem;

	(void)arg;
	out_open(NULL, false);
	out_u64("comm", get_uint(tb[COLLECTIVE_A_COMM_SERIAL]));
	out_u64("nranks", get_uint(tb[COLLECTIVE_A_COMM_NRANKS]));
	out_u64("local-ranks", get_uint(tb[COLLECTIVE_A_COMM_LOCAL_RANKS]));
	out_u64("joined", get_uint(tb[COLLECTIVE_A_COMM_JOINED]));
	out_u64("owner-uid", get_uint(tb[COLLECTIVE_A_COMM_OWNER_UID]));
	out_str("state", name_of(NAMES(comm_state_names),
				 get_uint(tb[COLLECTIVE_A_COMM_STATE])));
	out_u64("nhosts", get_uint(tb[COLLECTIVE_A_COMM_NHOSTS]));
	out_u64("host", get_uint(tb[COLLECTIVE_A_COMM_HOST]));
	out_u64("ranks-per-host", get_uint(tb[COLLECTIVE_A_COMM_RANKS_PER_HOST]));
	out_u64("ops-in-flight", get_uint(tb[COLLECTIVE_A_COMM_OPS_IN_FLIGHT]));
	out_str("error", errname(get_uint(tb[COLLECTIVE_A_COMM_ERROR])));
	out_u64("age-ms", get_uint(tb[COLLECTIVE_A_COMM_AGE_MS]));
	out_open("peers", true);
	for_each_attr(a, nlh, rem)
		if (nla_type(a) == COLLECTIVE_A_COMM_PEER)
			print_peer(a);
	out_close(true);
	out_close(false);
	return 0;
}

static int cmd_comm(int argc, char **argv)
{
	int i = argc && !strcmp(argv[0], "show") ? 1 : 0;
	bool one = i < argc, ok;
	struct nl_msg *m;
	int ret;

	m = req_new(COLLECTIVE_CMD_COMM_GET, !one, comm_attr_names,
		    COLLECTIVE_A_COMM_MAX + 1);
	if (one) {
		if (!strcmp(argv[i], "comm") && i + 1 < argc)
			i++;
		nla_put_u32(m, COLLECTIVE_A_COMM_SERIAL, parse_num(argv[i], &ok));
		if (!ok) {
			fprintf(stderr, "collctl: bad communicator \"%s\"\n", argv[i]);
			return 2;
		}
		ret = req_run(m, COLLECTIVE_A_COMM_MAX, comm_msg, NULL);
		return ret ? 1 : 0;
	}
	out_begin_list();
	ret = req_run(m, COLLECTIVE_A_COMM_MAX, comm_msg, NULL);
	out_end_list();
	return ret ? 1 : 0;
}

/* ---- collectives in flight ---------------------------------------------- */

static int op_msg(struct nlattr **tb, struct nlmsghdr *nlh, void *arg)
{
	uint64_t missing[1024];
	struct nlattr *a;
	int rem, n = 0;

	(void)arg;
	for_each_attr(a, nlh, rem)
		if (nla_type(a) == COLLECTIVE_A_OP_MISSING && n < 1024)
			missing[n++] = nla_get_u32(a);
	out_open(NULL, false);
	out_u64("comm", get_uint(tb[COLLECTIVE_A_OP_COMM]));
	out_u64("seq", get_uint(tb[COLLECTIVE_A_OP_SEQ]));
	out_str("prim", name_of(NAMES(prim_names), get_uint(tb[COLLECTIVE_A_OP_PRIM])));
	out_str("algo", name_of(NAMES(algo_names), get_uint(tb[COLLECTIVE_A_OP_ALGO])));
	out_u64("bytes", get_uint(tb[COLLECTIVE_A_OP_BYTES]));
	out_str("state", name_of(NAMES(op_state_names),
				 get_uint(tb[COLLECTIVE_A_OP_STATE])));
	out_u64("round", get_uint(tb[COLLECTIVE_A_OP_ROUND]));
	out_u64("nrounds", get_uint(tb[COLLECTIVE_A_OP_NROUNDS]));
	out_u64("age-ms", get_uint(tb[COLLECTIVE_A_OP_AGE_MS]));
	out_u64("arrived", get_uint(tb[COLLECTIVE_A_OP_ARRIVED]));
	out_list_u64("missing", missing, n);
	out_flag("mapped", tb[COLLECTIVE_A_OP_MAPPED]);
	out_close(false);
	return 0;
}

static const char *const op_attr_names[COLLECTIVE_A_OP_MAX + 1] = {
	[COLLECTIVE_A_OP_COMM] = "comm",
};

static int cmd_op(int argc, char **argv)
{
	int i = argc && !strcmp(argv[0], "show") ? 1 : 0;
	struct nl_msg *m;
	uint32_t comm;
	int ret;

	m = req_new(COLLECTIVE_CMD_OP_GET, true, op_attr_names,
		    COLLECTIVE_A_OP_MAX + 1);
	if (parse_comm(argc, argv, &i, &comm))
		nla_put_u32(m, COLLECTIVE_A_OP_COMM, comm);
	if (i < argc) {
		fprintf(stderr, "collctl: op: unexpected \"%s\"\n", argv[i]);
		return 2;
	}
	out_begin_list();
	ret = req_run(m, COLLECTIVE_A_OP_MAX, op_msg, NULL);
	out_end_list();
	return ret ? 1 : 0;
}

/* ---- statistics ---------------------------------------------------------- */

struct pstat {
	uint32_t prim;
	uint64_t calls, bytes, time_ns, pins, pinned_pages, reg_hits, eager;
	uint64_t hist[COLLECTIVE_HIST_BUCKETS];
	uint64_t hist_bytes[COLLECTIVE_HIST_BUCKETS];
	uint64_t algo[8];
	uint32_t err_no[16];
	uint64_t err_count[16];
	int nerr;
};

static void parse_pstat(struct nlattr *nest, struct pstat *ps)
{
	struct nlattr *a, *b;
	int rem, rem2, h = 0, hb = 0;

	memset(ps, 0, sizeof(*ps));
	nla_for_each_nested(a, nest, rem) {
		switch (nla_type(a)) {
		case COLLECTIVE_A_PRIM_STATS_PRIM:
			ps->prim = nla_get_u32(a);
			break;
		case COLLECTIVE_A_PRIM_STATS_CALLS:
			ps->calls = nla_get_u64(a);
			break;
		case COLLECTIVE_A_PRIM_STATS_BYTES:
			ps->bytes = nla_get_u64(a);
			break;
		case COLLECTIVE_A_PRIM_STATS_TIME_NS:
			ps->time_ns = nla_get_u64(a);
			break;
		case COLLECTIVE_A_PRIM_STATS_PINS:
			ps->pins = nla_get_u64(a);
			break;
		case COLLECTIVE_A_PRIM_STATS_PINNED_PAGES:
			ps->pinned_pages = nla_get_u64(a);
			break;
		case COLLECTIVE_A_PRIM_STATS_REG_HITS:
			ps->reg_hits = nla_get_u64(a);
			break;
		case COLLECTIVE_A_PRIM_STATS_EAGER:
			ps->eager = nla_get_u64(a);
			break;
		case COLLECTIVE_A_PRIM_STATS_HIST:
			if (h < COLLECTIVE_HIST_BUCKETS)
				ps->hist[h++] = nla_get_u64(a);
			break;
		case COLLECTIVE_A_PRIM_STATS_HIST_BYTES:
			if (hb < COLLECTIVE_HIST_BUCKETS)
				ps->hist_bytes[hb++] = nla_get_u64(a);
			break;
		case COLLECTIVE_A_PRIM_STATS_ALGO: {
			uint32_t algo = 0;
			uint64_t count = 0;

			nla_for_each_nested(b, a, rem2) {
				if (nla_type(b) == COLLECTIVE_A_ALGOCOUNT_ALGO)
					algo = nla_get_u32(b);
				else if (nla_type(b) == COLLECTIVE_A_ALGOCOUNT_COUNT)
					count = nla_get_u64(b);
			}
			if (algo < 8)
				ps->algo[algo] = count;
			break;
		}
		case COLLECTIVE_A_PRIM_STATS_ERRORS:
			if (ps->nerr >= 16)
				break;
			nla_for_each_nested(b, a, rem2) {
				if (nla_type(b) == COLLECTIVE_A_ERRCOUNT_ERRNO)
					ps->err_no[ps->nerr] = nla_get_u32(b);
				else if (nla_type(b) == COLLECTIVE_A_ERRCOUNT_COUNT)
					ps->err_count[ps->nerr] = nla_get_u64(b);
			}
			ps->nerr++;
			break;
		}
	}
}

static int stats_msg(struct nlattr **tb, struct nlmsghdr *nlh, void *arg)
{
	struct nlattr *a;
	struct pstat ps;
	int rem;

	(void)arg;
	out_open(NULL, false);
	out_u64("comm", get_uint(tb[COLLECTIVE_A_STATS_COMM]));
	out_u64("nranks", get_uint(tb[COLLECTIVE_A_STATS_NRANKS]));
	out_u64("spin-ns", get_uint(tb[COLLECTIVE_A_STATS_SPIN_NS]));
	out_open("prims", true);
	for_each_attr(a, nlh, rem) {
		if (nla_type(a) != COLLECTIVE_A_STATS_PRIM)
			continue;
		parse_pstat(a, &ps);
		out_open(NULL, false);
		out_str("prim", name_of(NAMES(prim_names), ps.prim));
		out_u64("calls", ps.calls);
		out_u64("bytes", ps.bytes);
		out_u64("time-ns", ps.time_ns);
		out_u64("pins", ps.pins);
		out_u64("pinned-pages", ps.pinned_pages);
		out_u64("reg-hits", ps.reg_hits);
		out_u64("eager", ps.eager);
		out_list_u64("hist", ps.hist, COLLECTIVE_HIST_BUCKETS);
		out_list_u64("hist-bytes", ps.hist_bytes, COLLECTIVE_HIST_BUCKETS);
		out_open("algos", true);
		for (int i = 0; i < 8; i++) {
			if (!ps.algo[i])
				continue;
			out_open(NULL, false);
			out_str("algo", name_of(NAMES(algo_names), i));
			out_u64("calls", ps.algo[i]);
			out_close(false);
		}
		out_close(true);
		out_open("errors", true);
		for (int i = 0; i < ps.nerr; i++) {
			out_open(NULL, false);
			out_str("errno", errname(ps.err_no[i]));
			out_u64("calls", ps.err_count[i]);
			out_close(false);
		}
		out_close(true);
		out_close(false);
	}
	out_close(true);
	out_close(false);
	return 0;
}

static const char *const stats_attr_names[COLLECTIVE_A_STATS_MAX + 1] = {
	[COLLECTIVE_A_STATS_COMM] = "comm",
};

static int cmd_stats(int argc, char **argv)
{
	int i = argc && !strcmp(argv[0], "show") ? 1 : 0;
	struct nl_msg *m;
	uint32_t comm;
	bool one;
	int ret;

	one = parse_comm(argc, argv, &i, &comm);
	if (i < argc) {
		fprintf(stderr, "collctl: stats: unexpected \"%s\"\n", argv[i]);
		return 2;
	}
	m = req_new(COLLECTIVE_CMD_STATS_GET, !one, stats_attr_names,
		    COLLECTIVE_A_STATS_MAX + 1);
	if (one) {
		nla_put_u32(m, COLLECTIVE_A_STATS_COMM, comm);
		return req_run(m, COLLECTIVE_A_STATS_MAX, stats_msg, NULL) ? 1 : 0;
	}
	out_begin_list();
	ret = req_run(m, COLLECTIVE_A_STATS_MAX, stats_msg, NULL);
	out_end_list();
	return ret ? 1 : 0;
}

/* ---- monitor ------------------------------------------------------------ */

static int event_msg(struct nlattr **tb, struct nlmsghdr *nlh, void *arg)
{
	long *left = arg;
	uint32_t type = get_uint(tb[COLLECTIVE_A_EVENT_TYPE]);

	if (genlmsg_hdr(nlh)->cmd != COLLECTIVE_CMD_EVENT_NTF)
		return 0;
	out_open(NULL, false);
	out_str("event", name_of(NAMES(event_names), type));
	out_u64("comm", get_uint(tb[COLLECTIVE_A_EVENT_COMM]));
	out_u64("nranks", get_uint(tb[COLLECTIVE_A_EVENT_NRANKS]));
	out_u64("owner-uid", get_uint(tb[COLLECTIVE_A_EVENT_OWNER_UID]));
	if (tb[COLLECTIVE_A_EVENT_ERROR])
		out_str("error", errname(get_uint(tb[COLLECTIVE_A_EVENT_ERROR])));
	if (tb[COLLECTIVE_A_EVENT_REASON])
		out_str("reason", nla_get_string(tb[COLLECTIVE_A_EVENT_REASON]));
	if (tb[COLLECTIVE_A_EVENT_HOST])
		out_u64("host", get_uint(tb[COLLECTIVE_A_EVENT_HOST]));
	if (tb[COLLECTIVE_A_EVENT_FALLBACK])
		out_str("fallback", name_of(NAMES(fallback_names),
					    get_uint(tb[COLLECTIVE_A_EVENT_FALLBACK])));
	out_close(false);
	fflush(stdout);
	return *left > 0 && --*left == 0;
}

static int cb_no_seq(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(void)arg;
	return NL_OK;
}

static int cmd_monitor(int argc, char **argv)
{
	struct req_ctx ctx = { event_msg, NULL, COLLECTIVE_A_EVENT_MAX };
	long left = -1;
	struct nl_cb *cb;
	bool ok = true;
	int grp, ret;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-c") && i + 1 < argc)
			left = parse_num(argv[++i], &ok);
		else
			ok = false;
		if (!ok) {
			fprintf(stderr, "collctl: monitor [-c COUNT]\n");
			return 2;
		}
	}
	ctx.arg = &left;
	grp = genl_ctrl_resolve_grp(sk, COLLECTIVE_FAMILY_NAME,
				    COLLECTIVE_MCGRP_EVENTS);
	if (grp < 0) {
		fprintf(stderr, "collctl: no group \"%s\": %s\n",
			COLLECTIVE_MCGRP_EVENTS, nl_geterror(grp));
		return 1;
	}
	ret = nl_socket_add_membership(sk, grp);
	if (ret) {
		fprintf(stderr, "collctl: cannot join \"%s\": %s (CAP_NET_ADMIN?)\n",
			COLLECTIVE_MCGRP_EVENTS, nl_geterror(ret));
		return 1;
	}
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, cb_valid, &ctx);
	/* notifications carry sequence number 0 */
	nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, cb_no_seq, NULL);
	/* an event of one object per line, in JSON as in text */
	pretty = false;
	for (;;) {
		ret = nl_recvmsgs(sk, cb);
		if (ret < 0 && ret != -NLE_INTR) {
			fprintf(stderr, "collctl: receive: %s\n", nl_geterror(ret));
			break;
		}
		if (!left)
			break;
	}
	nl_cb_put(cb);
	return left ? 1 : 0;
}

/* ---- diag --------------------------------------------------------------- */

/* Calls up to this bucket are small: at most 64 KiB (64 << 2 * 5). */
#define DIAG_SMALL_BUCKET	5
#define DIAG_MIN_CALLS		100

static int nproblems;

static void problem(uint32_t comm, const char *kind, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	nproblems++;
	if (!json) {
		printf("comm %u: %s\n", comm, msg);
		return;
	}
	out_open(NULL, false);
	out_u64("comm", comm);
	out_str("problem", kind);
	out_str("message", msg);
	out_close(false);
}

static const char *const fallback_why[] = {
	[COLL_FALLBACK_NO_DEVICE] = "no RDMA device reaches its address",
	[COLL_FALLBACK_CONNECT] = "rdma_cm could not connect",
	[COLL_FALLBACK_PEER] = "the peer chose TCP",
};

static int diag_comm(struct nlattr **tb, struct nlmsghdr *nlh, void *arg)
{
	uint32_t comm = get_uint(tb[COLLECTIVE_A_COMM_SERIAL]);
	struct nlattr *a;
	int rem;

	(void)arg;
	for_each_attr(a, nlh, rem) {
		struct nlattr *p[COLLECTIVE_A_PEER_MAX + 1] = { 0 };
		uint32_t fb;

		if (nla_type(a) != COLLECTIVE_A_COMM_PEER ||
		    nla_parse_nested(p, COLLECTIVE_A_PEER_MAX, a, NULL))
			continue;
		fb = get_uint(p[COLLECTIVE_A_PEER_FALLBACK]);
		if (get_uint(p[COLLECTIVE_A_PEER_TRANSPORT]) != COLL_TRANSPORT_TCP ||
		    fb < COLL_FALLBACK_NO_DEVICE || fb > COLL_FALLBACK_PEER)
			continue;
		problem(comm, "tcp-fallback",
			"host %" PRIu64 " is reached over TCP, not RDMA (%s): check the RDMA devices and routes between the hosts",
			get_uint(p[COLLECTIVE_A_PEER_HOST]), fallback_why[fb]);
	}
	return 0;
}

static int diag_op(struct nlattr **tb, struct nlmsghdr *nlh, void *arg)
{
	uint64_t age = get_uint(tb[COLLECTIVE_A_OP_AGE_MS]);
	uint32_t comm = get_uint(tb[COLLECTIVE_A_OP_COMM]);
	long threshold = *(long *)arg;
	char ranks[256] = "";
	struct nlattr *a;
	int rem, n = 0;
	size_t len = 0;

	if ((long)age < threshold)
		return 0;
	for_each_attr(a, nlh, rem) {
		if (nla_type(a) != COLLECTIVE_A_OP_MISSING)
			continue;
		if (len < sizeof(ranks) - 16)
			len += snprintf(ranks + len, sizeof(ranks) - len, "%s%u",
					n ? ", " : "", nla_get_u32(a));
		n++;
	}
	if (n)
		problem(comm, "hung",
			"%s seq %" PRIu64 "%s has waited %.1f s for rank%s %s, which %s not called it",
			name_of(NAMES(prim_names), get_uint(tb[COLLECTIVE_A_OP_PRIM])),
			get_uint(tb[COLLECTIVE_A_OP_SEQ]),
			tb[COLLECTIVE_A_OP_MAPPED] ? " of the mapped slots" : "",
			age / 1000.0,
			n > 1 ? "s" : "", ranks, n > 1 ? "have" : "has");
	else if (get_uint(tb[COLLECTIVE_A_OP_STATE]) == 1)
		problem(comm, "stuck",
			"%s seq %" PRIu64 " has run %.1f s and is in round %" PRIu64 " of %" PRIu64 ": every local rank called it; a peer host may be slow or gone",
			name_of(NAMES(prim_names), get_uint(tb[COLLECTIVE_A_OP_PRIM])),
			get_uint(tb[COLLECTIVE_A_OP_SEQ]), age / 1000.0,
			get_uint(tb[COLLECTIVE_A_OP_ROUND]),
			get_uint(tb[COLLECTIVE_A_OP_NROUNDS]));
	return 0;
}

static int diag_stats(struct nlattr **tb, struct nlmsghdr *nlh, void *arg)
{
	uint32_t comm = get_uint(tb[COLLECTIVE_A_STATS_COMM]);
	uint32_t spin = get_uint(tb[COLLECTIVE_A_STATS_SPIN_NS]);
	struct nlattr *a;
	struct pstat ps;
	int rem;

	(void)arg;
	for_each_attr(a, nlh, rem) {
		uint64_t small_calls = 0, small_bytes = 0;

		if (nla_type(a) != COLLECTIVE_A_STATS_PRIM)
			continue;
		parse_pstat(a, &ps);
		for (int b = 0; b <= DIAG_SMALL_BUCKET; b++) {
			small_calls += ps.hist[b];
			small_bytes += ps.hist_bytes[b];
		}
		if (ps.prim == COLL_ALLREDUCE && small_calls >= DIAG_MIN_CALLS &&
		    ps.bytes && small_bytes * 2 > ps.bytes)
			problem(comm, "small-allreduce",
				"%.0f%% of the AllReduce bytes move in calls of at most 64 KiB (%" PRIu64 " of %" PRIu64 " calls), too small to reach bandwidth: bucket or group them into larger calls",
				100.0 * small_bytes / ps.bytes, small_calls,
				ps.calls);
		if (ps.prim == COLL_ALLTOALL && !spin &&
		    small_calls >= DIAG_MIN_CALLS && small_calls * 2 > ps.calls)
			problem(comm, "alltoall-interrupt",
				"%" PRIu64 " small AlltoAlls (at most 64 KiB) ran in interrupt mode (spin-ns 0): try busy-poll, e.g. collctl tune set comm %u spin-ns 300000",
				small_calls, comm);
	}
	return 0;
}

static int cmd_diag(int argc, char **argv)
{
	long threshold = 1000;
	bool ok = true;
	int ret;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc)
			threshold = parse_num(argv[++i], &ok);
		else
			ok = false;
		if (!ok) {
			fprintf(stderr, "collctl: diag [-t MS]\n");
			return 2;
		}
	}
	out_begin_list();
	ret = req_run(req_new(COLLECTIVE_CMD_COMM_GET, true, NULL, 0),
		      COLLECTIVE_A_COMM_MAX, diag_comm, NULL);
	if (!ret)
		ret = req_run(req_new(COLLECTIVE_CMD_OP_GET, true, NULL, 0),
			      COLLECTIVE_A_OP_MAX, diag_op, &threshold);
	if (!ret)
		ret = req_run(req_new(COLLECTIVE_CMD_STATS_GET, true, NULL, 0),
			      COLLECTIVE_A_STATS_MAX, diag_stats, NULL);
	out_end_list();
	if (!json && !ret && !nproblems)
		printf("no problems found\n");
	return ret ? 1 : 0;
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: collctl [-j] [-p] OBJECT COMMAND [ARGS]\n"
		"  tune show [comm N]                     tunables (module-wide or N's)\n"
		"  tune set [comm N] [reset] NAME VALUE...  e.g. allreduce.algo ring,\n"
		"                                         solo-bytes 0, spin-ns 0\n"
		"  comm show [N]                          communicators\n"
		"  op show [comm N]                       collectives in flight\n"
		"  stats [show] [comm N]                  statistics per primitive\n"
		"  monitor [-c COUNT]                     notifications (CAP_NET_ADMIN)\n"
		"  diag [-t MS]                           name the problems it sees\n"
		"  -j JSON output, -p pretty (indented JSON)\n");
}

int main(int argc, char **argv)
{
	int i = 1, ret;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "-p") || !strcmp(argv[i], "--pretty"))
			pretty = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[i], "help")) {
		usage(stdout);
		return 0;
	}
	if (nl_open())
		return 1;
	argc -= i + 1;
	if (!strcmp(argv[i], "tune"))
		ret = cmd_tune(argc, argv + i + 1);
	else if (!strcmp(argv[i], "comm"))
		ret = cmd_comm(argc, argv + i + 1);
	else if (!strcmp(argv[i], "op"))
		ret = cmd_op(argc, argv + i + 1);
	else if (!strcmp(argv[i], "stats"))
		ret = cmd_stats(argc, argv + i + 1);
	else if (!strcmp(argv[i], "monitor"))
		ret = cmd_monitor(argc, argv + i + 1);
	else if (!strcmp(argv[i], "diag"))
		ret = cmd_diag(argc, argv + i + 1);
	else {
		fprintf(stderr, "collctl: unknown object \"%s\"\n", argv[i]);
		usage(stderr);
		ret = 2;
	}
	nl_socket_free(sk);
	return ret;
}
