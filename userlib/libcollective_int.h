/* SPDX-License-Identifier: MIT */
/* Private to libcollective: what its files share. */
#ifndef LIBCOLLECTIVE_INT_H
#define LIBCOLLECTIVE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "libcollective.h"

/* COLL_COMM_INIT with the host tables (nhosts 0: one host). */
int coll_comm_init_tables(coll_comm_t **commp, int nranks, int rank,
			  const coll_id_t *id, unsigned int nhosts,
			  const struct coll_host *hosts,
			  const uint32_t *rank_hosts, unsigned int timeout_ms,
			  unsigned int flags);

#endif
