// SPDX-License-Identifier: GPL-2.0
/*
 * Proving knowledge of a communicator's id without sending it.
 *
 * A communicator that spans hosts keeps an HMAC-SHA256 transform keyed with
 * its id.  From it come the tag that names the communicator on the wire
 * (HMAC(id, "collective tag"), truncated), the layout digest that lets two
 * hosts check that they agree on the host tables, and the MACs of the
 * connection handshake (coll_wire.h).  MACs are compared in constant time.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/algapi.h>
#include <crypto/hash.h>
#include <linux/err.h>

#include "coll_loc.h"

static const char coll_tag_label[] = "collective tag v1";

/**
 * coll_auth_init() - the communicator's keyed transform and tag
 * @auth: to fill
 * @id: the communicator's id
 *
 * Return: 0 or -errno (-ENOENT: no hmac(sha256) in this kernel).
 */
int coll_auth_init(struct coll_auth *auth, const u8 *id)
{
	u8 mac[COLL_WIRE_MAC_BYTES];
	int ret;

	auth->tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(auth->tfm)) {
		ret = PTR_ERR(auth->tfm);
		auth->tfm = NULL;
		return ret;
	}
	ret = crypto_shash_setkey(auth->tfm, id, COLL_ID_BYTES);
	if (!ret)
		ret = coll_auth_mac(auth, coll_tag_label, NULL, 0, NULL, 0, mac);
	if (ret) {
		crypto_free_shash(auth->tfm);
		auth->tfm = NULL;
		return ret;
	}
	memcpy(auth->tag, mac, COLL_WIRE_TAG_BYTES);
	memzero_explicit(mac, sizeof(mac));
	return 0;
}

void coll_auth_destroy(struct coll_auth *auth)
{
	if (auth->tfm)
		crypto_free_shash(auth->tfm);
	auth->tfm = NULL;
}

/**
 * coll_auth_mac() - HMAC(id, label || a || b)
 * @auth: the communicator's transform
 * @label: a NUL-terminated domain separator (its NUL included)
 * @a: first part, or NULL
 * @alen: its length
 * @b: second part, or NULL
 * @blen: its length
 * @out: COLL_WIRE_MAC_BYTES
 *
 * Return: 0 or -errno.
 */
int coll_auth_mac(struct coll_auth *auth, const char *label, const void *a,
		  size_t alen, const void *b, size_t blen, u8 *out)
{
	SHASH_DESC_ON_STACK(desc, auth->tfm);
	int ret;

	desc->tfm = auth->tfm;
	ret = crypto_shash_init(desc);
	if (!ret)
		ret = crypto_shash_update(desc, label, strlen(label) + 1);
	if (!ret && a)
		ret = crypto_shash_update(desc, a, alen);
	if (!ret && b)
		ret = crypto_shash_update(desc, b, blen);
	if (!ret)
		ret = crypto_shash_final(desc, out);
	shash_desc_zero(desc);
	return ret;
}

/* Constant-time comparison of two MACs: true if equal. */
bool coll_auth_equal(const u8 *a, const u8 *b)
{
	return !crypto_memneq(a, b, COLL_WIRE_MAC_BYTES);
}
