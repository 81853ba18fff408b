// SPDX-License-Identifier: GPL-2.0
/*
 * The automatic choice of algorithm between the ranks of one host: a table
 * of rules, measured (tools/bench-algo.sh sweeps every algorithm and prints
 * the table it would pick), loaded with the module and replaceable at any
 * time through the module parameter "algo_rules".
 *
 * A rule reads PRIM[/RANKS]@BYTES=ALGO: from BYTES (count x element size,
 * the call's buffer of count elements; K, M and G suffixes) up, with at
 * least RANKS ranks (2 if left out), PRIM runs ALGO (direct, ring, tree or
 * naive).  Rules are separated by spaces or commas.  For a call, the rules
 * of its primitive with the most ranks not above the communicator's count
 * make its table; the one with the largest BYTES not above the call's size
 * wins; with none, DIRECT.  So a class reaches up to the next one: ending
 * it takes a rule of the next class (PRIM/3@0=direct ends a 2-rank one).
 * An empty line (or "none") drops every rule.
 *
 * Readers run in the data path under rcu_read_lock(); a write parses a
 * whole new table, checked before it replaces the old one (a bad line
 * changes nothing: EINVAL), under coll_algo_mutex.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>

#include "coll_loc.h"

#define COLL_ALGO_MAX_RULES	64

struct coll_algo_rule {
	u64 bytes;		/* from this size up */
	u16 ranks;		/* with at least this many ranks */
	u8 prim;
	u8 algo;
};

struct coll_algo_rules {
	struct rcu_head rcu;
	u32 n;
	struct coll_algo_rule r[COLL_ALGO_MAX_RULES];	/* sorted: prim, ranks, bytes */
};

static const char *const coll_prim_names[COLL_PRIM_MAX] = {
	[COLL_ALLREDUCE] = "allreduce",
	[COLL_REDUCE] = "reduce",
	[COLL_REDUCESCATTER] = "reducescatter",
	[COLL_ALLGATHER] = "allgather",
	[COLL_BROADCAST] = "broadcast",
	[COLL_SCATTER] = "scatter",
	[COLL_GATHER] = "gather",
	[COLL_ALLTOALL] = "alltoall",
	[COLL_BARRIER] = "barrier",
};

/* The algorithms a rule may name: those of one host. */
static const char *const coll_algo_names[COLL_ALGO_MAX] = {
	[COLL_ALGO_RING] = "ring",
	[COLL_ALGO_DIRECT] = "direct",
	[COLL_ALGO_NAIVE] = "naive",
	[COLL_ALGO_TREE] = "tree",
};

#define COLL_RULE(p, n, b, a) \
	{ .prim = COLL_##p, .ranks = (n), .bytes = (b), .algo = COLL_ALGO_##a }

/*
 * The default, measured with tools/bench-algo.sh (float sum, 2 vCPUs
 * under TCG; README.md, "Algorithms of one host"): where an algorithm beat
 * DIRECT by 13-31 % in every sweep.  Sorted as a parsed table is.
 */
static struct coll_algo_rules coll_algo_default = {
	.n = 11,
	.r = {
		/* 2 ranks: a tree, not two rounds, for small and large */
		COLL_RULE(ALLREDUCE, 2, 0, TREE),
		COLL_RULE(ALLREDUCE, 2, SZ_8K, DIRECT),
		COLL_RULE(ALLREDUCE, 2, SZ_256K, TREE),
		/* 3 ranks, and 4 to 7 ranks: a tree for large ones */
		COLL_RULE(ALLREDUCE, 3, SZ_256K, TREE),
		COLL_RULE(ALLREDUCE, 4, SZ_2M, TREE),
		/* 8 and more: through one rank when small, a tree when large */
		COLL_RULE(ALLREDUCE, 8, 0, NAIVE),
		COLL_RULE(ALLREDUCE, 8, SZ_8K, DIRECT),
		COLL_RULE(ALLREDUCE, 8, SZ_2M, TREE),
		/* 2 ranks: a small Reduce pipelined along the ring; not 3+ */
		COLL_RULE(REDUCE, 2, 0, RING),
		COLL_RULE(REDUCE, 2, SZ_8K, DIRECT),
		COLL_RULE(REDUCE, 3, 0, DIRECT),
	},
};

static DEFINE_MUTEX(coll_algo_mutex);
static struct coll_algo_rules __rcu *coll_algo_table =
	RCU_INITIALIZER(&coll_algo_default);

static void coll_algo_free(struct coll_algo_rules *t)
{
	if (t && t != &coll_algo_default)
		kfree_rcu(t, rcu);
}

/**
 * coll_algo_choose() - the algorithm the rules pick for a call of one host
 * @prim: the primitive
 * @nranks: the communicator's ranks
 * @bytes: count x element size
 *
 * Locks: none (RCU inside).  Return: an algorithm, DIRECT without a rule.
 */
u32 coll_algo_choose(u32 prim, u32 nranks, u64 bytes)
{
	const struct coll_algo_rules *t;
	const struct coll_algo_rule *r;
	u32 algo = COLL_ALGO_DIRECT, i, ranks = 0;

	rcu_read_lock();
	t = rcu_dereference(coll_algo_table);
	/*
	 * Sorted by (prim, ranks, bytes): the class of the most ranks not
	 * above nranks comes last, and in it the last rule not above bytes
	 * wins.
	 */
	for (i = 0; i < t->n; i++) {
		r = &t->r[i];
		if (r->prim != prim || r->ranks > nranks)
			continue;
		if (r->ranks != ranks) {	/* a larger class replaces it */
			ranks = r->ranks;
			algo = COLL_ALGO_DIRECT;
		}
		if (r->bytes <= bytes)
			algo = r->algo;
	}
	rcu_read_unlock();
	return algo;
}

static int coll_algo_rule_cmp(const void *a, const void *b)
{
	const struct coll_algo_rule *x = a, *y = b;

	if (x->prim != y->prim)
		return x->prim < y->prim ? -1 : 1;
	if (x->ranks != y->ranks)
		return x->ranks < y->ranks ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return 0;
}

/* The index of @name in @names (which has holes), or -EINVAL. */
static int coll_algo_lookup(const char *const *names, int n, const char *name)
{
	int i;

	/* not match_string(): it stops at the first hole */
	for (i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], name))
			return i;
	return -EINVAL;
}

/* PRIM[/RANKS]@BYTES=ALGO, in place (the token is a copy). */
static int coll_algo_parse_rule(char *tok, struct coll_algo_rule *r)
{
	char *at, *eq, *sl, *end;
	unsigned int ranks = 2;
	unsigned long long bytes;
	int p, a;

	at = strchr(tok, '@');
	eq = at ? strchr(at, '=') : NULL;
	if (!eq)
		return -EINVAL;
	*at = '\0';
	*eq = '\0';
	sl = strchr(tok, '/');
	if (sl) {
		*sl = '\0';
		if (kstrtouint(sl + 1, 10, &ranks) || ranks < 1 ||
		    ranks > COLL_MAX_RANKS)
			return -EINVAL;
	}
	p = coll_algo_lookup(coll_prim_names, COLL_PRIM_MAX, tok);
	a = coll_algo_lookup(coll_algo_names, COLL_ALGO_MAX, eq + 1);
	if (p < 0 || a < 0 || !at[1])
		return -EINVAL;
	bytes = memparse(at + 1, &end);
	if (*end)
		return -EINVAL;
	r->prim = p;
	r->algo = a;
	r->ranks = ranks;
	r->bytes = bytes;
	return 0;
}

static int coll_algo_parse(const char *val, struct coll_algo_rules **out)
{
	struct coll_algo_rules *t;
	char *buf, *cur, *tok;
	int ret = 0;
	u32 i;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	buf = kstrdup(val, GFP_KERNEL);
	if (!t || !buf) {
		ret = -ENOMEM;
		goto out_free;
	}
	cur = strim(buf);
	if (!strcmp(cur, "none"))
		cur = "";
	while ((tok = strsep(&cur, " ,\t\n")) != NULL) {
		if (!*tok)
			continue;
		if (t->n == COLL_ALGO_MAX_RULES) {
			ret = -E2BIG;
			goto out_free;
		}
		ret = coll_algo_parse_rule(tok, &t->r[t->n]);
		if (ret) {
			pr_warn("algo_rules: not PRIM[/RANKS]@BYTES=ALGO: %s\n",
				tok);
			goto out_free;
		}
		t->n++;
	}
	sort(t->r, t->n, sizeof(t->r[0]), coll_algo_rule_cmp, NULL);
	for (i = 1; i < t->n; i++) {
		if (!coll_algo_rule_cmp(&t->r[i - 1], &t->r[i])) {
			pr_warn("algo_rules: two rules for %s/%u@%llu\n",
				coll_prim_names[t->r[i].prim], t->r[i].ranks,
				t->r[i].bytes);
			ret = -EINVAL;
			goto out_free;
		}
	}
	kfree(buf);
	*out = t;
	return 0;

out_free:
	kfree(buf);
	kfree(t);
	return ret;
}

static int coll_algo_param_set(const char *val, const struct kernel_param *kp)
{
	struct coll_algo_rules *t, *old;
	int ret;

	ret = coll_algo_parse(val, &t);
	if (ret)
		return ret;
	mutex_lock(&coll_algo_mutex);
	old = rcu_replace_pointer(coll_algo_table, t,
				  lockdep_is_held(&coll_algo_mutex));
	mutex_unlock(&coll_algo_mutex);
	coll_algo_free(old);
	return 0;
}

/* One rule per token, in the order of the table; BYTES with a suffix. */
static int coll_algo_param_get(char *buf, const struct kernel_param *kp)
{
	static const char *const sfx[] = { "", "K", "M", "G" };
	const struct coll_algo_rules *t;
	int len = 0, s;
	u32 i;

	mutex_lock(&coll_algo_mutex);
	t = rcu_dereference_protected(coll_algo_table,
				      lockdep_is_held(&coll_algo_mutex));
	for (i = 0; i < t->n; i++) {
		const struct coll_algo_rule *r = &t->r[i];
		u64 b = r->bytes;

		for (s = 0; s < 3 && b && !(b & 1023); s++)
			b >>= 10;
		len += scnprintf(buf + len, PAGE_SIZE - len, "%s%s/%u@%llu%s=%s",
				 i ? " " : "", coll_prim_names[r->prim],
				 r->ranks, b, sfx[s], coll_algo_names[r->algo]);
	}
	mutex_unlock(&coll_algo_mutex);
	len += scnprintf(buf + len, PAGE_SIZE - len, "%s\n",
			 t->n ? "" : "none");
	return len;
}

/* At unload (or a failed load): the table is no longer read. */
static void coll_algo_param_free(void *arg)
{
	struct coll_algo_rules *t;

	t = rcu_replace_pointer(coll_algo_table, &coll_algo_default, true);
	if (t != &coll_algo_default)
		kfree(t);
}

static const struct kernel_param_ops coll_algo_param_ops = {
	.set = coll_algo_param_set,
	.get = coll_algo_param_get,
	.free = coll_algo_param_free,
};

module_param_cb(algo_rules, &coll_algo_param_ops, NULL, 0644);
MODULE_PARM_DESC(algo_rules,
		 "Automatic choice of algorithm within one host: rules PRIM[/RANKS]@BYTES=ALGO (from BYTES = count x element size up, with at least RANKS ranks, PRIM runs ALGO: direct, ring, tree or naive); the rules of the largest RANKS not above the communicator's apply, DIRECT below their smallest BYTES; \"none\": DIRECT always");
