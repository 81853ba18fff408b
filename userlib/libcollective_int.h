/* SPDX-License-Identifier: MIT */
/* Private to libcollective: what its files share. */
#ifndef LIBCOLLECTIVE_INT_H
#define LIBCOLLECTIVE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcollective.h"

struct coll_map;

struct coll_comm {
	int fd;
	uint32_t handle;	/* out_comm of COLL_COMM_INIT */
	int rank;
	int nranks;
	int algo;		/* enum coll_algo for later submits */
	int group_depth;	/* coll_group_start() calls not yet ended */
	struct coll_op *group;	/* the ops recorded meanwhile */
	unsigned int ngroup, group_cap;
	struct coll_map *map;	/* mapped slots (mapped.c), or NULL */
};

/* COLL_COMM_INIT with the host tables (nhosts 0: one host). */
int coll_comm_init_tables(coll_comm_t **commp, int nranks, int rank,
			  const coll_id_t *id, unsigned int nhosts,
			  const struct coll_host *hosts,
			  const uint32_t *rank_hosts, unsigned int timeout_ms,
			  unsigned int flags);

/* mapped.c: small blocking collectives in user space */
#define COLL_MAP_KERNEL	1	/* coll_map_submit(): agreed, now the ioctl */
int coll_map_setup(coll_comm_t *c);
void coll_map_teardown(coll_comm_t *c);
int coll_map_submit(coll_comm_t *c, const struct coll_op *op);
int coll_map_agree_group(coll_comm_t *c, const struct coll_op *ops,
			 unsigned int nops, unsigned int flags);

/* reduce.c: the module's reductions, for the mapped path */
typedef void (*coll_red_fn)(void *dst, const void *a, const void *b,
			    size_t n);
coll_red_fn coll_red_get(int dtype, int redop);
/* The baseline's (avx2 0) or AVX2's (1, where the CPU has it) kernel. */
coll_red_fn coll_red_get_vec(int dtype, int redop, int avx2);
int coll_red_have_avx2(void);
/* Whether coll_red_get() gives dtype's AVX2 kernels (chosen at first use). */
int coll_red_uses_avx2(int dtype);
void coll_red_div(int dtype, void *dst, size_t n, uint32_t q);

#endif
