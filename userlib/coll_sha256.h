/* SPDX-License-Identifier: MIT */
/* SHA-256 and HMAC-SHA256 for the rendezvous (private to the library). */
#ifndef COLL_SHA256_H
#define COLL_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct coll_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t fill;
};

void coll_sha256_init(struct coll_sha256 *s);
void coll_sha256_update(struct coll_sha256 *s, const void *data, size_t len);
void coll_sha256_final(struct coll_sha256 *s, uint8_t out[32]);
/* HMAC(key, parts[0] || parts[1] || ...) */
void coll_hmac_sha256(const void *key, size_t klen, const void *const *parts,
		      const size_t *lens, int nparts, uint8_t out[32]);
int coll_memneq(const void *a, const void *b, size_t n);

#endif
