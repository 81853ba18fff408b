// SPDX-License-Identifier: GPL-2.0
/*
 * The host tables of a communicator that spans several hosts: which host
 * each rank is on, and where each host's module listens.  Copied from the
 * caller of COLL_COMM_INIT, validated, immutable afterwards.  Every local
 * rank must give the same tables; peer hosts prove they have the same ones
 * by the layout digest, an HMAC of the tables keyed with the id, carried in
 * the connection handshake.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "coll_loc.h"

void coll_hosts_free(struct coll_hosts *h)
{
	if (!h)
		return;
	coll_kvfree(h->tab, h->nhosts * sizeof(*h->tab));
	coll_kvfree(h->rank_host, h->bytes);
	coll_kvfree(h->host_nranks, h->nhosts * sizeof(*h->host_nranks));
	coll_kvfree(h, sizeof(*h));
}

static bool coll_host_valid(const struct coll_host *hst)
{
	static const u8 zero[16];

	return !hst->__reserved16 && !hst->__reserved && hst->port &&
	       memcmp(hst->addr, zero, sizeof(zero));
}

/**
 * coll_hosts_from_user() - copy and check COLL_COMM_INIT's host tables
 * @arg: the argument, with nhosts != 0
 * @out: the tables
 *
 * Return: 0, -EINVAL (a table that does not hold together: a host index out
 * of range, a host without ranks, two hosts with one address, a bad entry),
 * -EFAULT, -ENOMEM.
 */
int coll_hosts_from_user(const struct coll_comm_init *arg,
			 struct coll_hosts **out)
{
	u32 nh = arg->nhosts, n = arg->nranks, i, j;
	struct coll_hosts *h;
	int ret = -ENOMEM;

	if (nh > COLL_MAX_HOSTS || nh > n || !arg->hosts_uptr ||
	    !arg->rank_hosts_uptr)
		return -EINVAL;
	h = coll_kvzalloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->nhosts = nh;
	h->flags = arg->flags;
	h->bytes = n * sizeof(*h->rank_host);
	h->tab = coll_kvzalloc(nh * sizeof(*h->tab));
	h->rank_host = coll_kvzalloc(h->bytes);
	h->host_nranks = coll_kvzalloc(nh * sizeof(*h->host_nranks));
	if (!h->tab || !h->rank_host || !h->host_nranks)
		goto err_free;
	ret = -EFAULT;
	if (copy_from_user(h->tab, u64_to_user_ptr(arg->hosts_uptr),
			   nh * sizeof(*h->tab)) ||
	    copy_from_user(h->rank_host, u64_to_user_ptr(arg->rank_hosts_uptr),
			   h->bytes))
		goto err_free;

	ret = -EINVAL;
	for (i = 0; i < nh; i++) {
		if (!coll_host_valid(&h->tab[i]))
			goto err_free;
		for (j = 0; j < i; j++)
			if (!memcmp(h->tab[i].addr, h->tab[j].addr, 16) &&
			    h->tab[i].port == h->tab[j].port)
				goto err_free;
	}
	for (i = 0; i < n; i++) {
		if (h->rank_host[i] >= nh)
			goto err_free;
		h->host_nranks[h->rank_host[i]]++;
	}
	for (i = 0; i < nh; i++)
		if (!h->host_nranks[i])
			goto err_free;
	h->self = h->rank_host[arg->rank];
	h->nlocal = h->host_nranks[h->self];
	/* host by host, as many on each: what the HIER plans assume */
	h->local = n / nh;
	for (i = 0; i < n && h->local; i++)
		if (n % nh || h->rank_host[i] != i / h->local)
			h->local = 0;
	*out = h;
	return 0;

err_free:
	coll_hosts_free(h);
	return ret;
}

/* Do two local ranks agree on the tables (and on the flags)? */
bool coll_hosts_equal(const struct coll_hosts *a, const struct coll_hosts *b)
{
	return a->nhosts == b->nhosts && a->self == b->self &&
	       a->flags == b->flags && a->bytes == b->bytes &&
	       !memcmp(a->tab, b->tab, a->nhosts * sizeof(*a->tab)) &&
	       !memcmp(a->rank_host, b->rank_host, a->bytes);
}

/*
 * The digest that tells two hosts they were given the same tables and the
 * same flags (a host requiring RDMA never accepts a TCP link from a peer
 * that was told it may fall back).
 */
int coll_hosts_layout(struct coll_hosts *h, struct coll_auth *auth)
{
	char label[48];

	snprintf(label, sizeof(label), "collective layout v1 flags %u",
		 h->flags);
	return coll_auth_mac(auth, label, h->tab,
			     h->nhosts * sizeof(*h->tab), h->rank_host,
			     h->bytes, h->layout);
}
