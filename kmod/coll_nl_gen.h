/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/* Do not edit directly, auto-generated from: */
/*	uapi/collective.yaml */
/* YNL-GEN kernel source */
/* Policy tables only, ranges not const for 6.1 (tools/ynl/ynl-gen.sh) */

#ifndef COLL_NL_GEN_H
#define COLL_NL_GEN_H

#include <net/netlink.h>
#include <linux/collective_nl.h>

/* Integer value ranges */
static struct netlink_range_validation collective_a_tune_solo_bytes_range = {
	.max	= COLLECTIVE_SOLO_BYTES_MAX,
};

static struct netlink_range_validation collective_a_tune_eager_bytes_range = {
	.max	= COLLECTIVE_EAGER_BYTES_MAX,
};

static struct netlink_range_validation collective_a_tune_ring_chunk_bytes_range = {
	.min	= COLLECTIVE_CHUNK_BYTES_MIN,
	.max	= COLLECTIVE_CHUNK_BYTES_MAX,
};

static struct netlink_range_validation collective_a_tune_exec_chunk_bytes_range = {
	.min	= COLLECTIVE_CHUNK_BYTES_MIN,
	.max	= COLLECTIVE_CHUNK_BYTES_MAX,
};

static struct netlink_range_validation collective_a_tune_spin_ns_range = {
	.max	= COLLECTIVE_SPIN_NS_MAX,
};

static struct netlink_range_validation collective_a_tune_join_timeout_ms_range = {
	.min	= COLLECTIVE_TIMEOUT_MS_MIN,
	.max	= COLLECTIVE_TIMEOUT_MS_MAX,
};

static struct netlink_range_validation collective_a_tune_peer_timeout_ms_range = {
	.min	= COLLECTIVE_TIMEOUT_MS_MIN,
	.max	= COLLECTIVE_TIMEOUT_MS_MAX,
};

static struct netlink_range_validation collective_a_tune_max_requests_range = {
	.min	= 1ULL,
	.max	= COLLECTIVE_MAX_REQUESTS_MAX,
};

static struct netlink_range_validation collective_a_tune_max_comms_range = {
	.min	= 1ULL,
	.max	= COLLECTIVE_MAX_COMMS_MAX,
};

static struct netlink_range_validation collective_a_tune_busy_poll_us_range = {
	.max	= COLLECTIVE_BUSY_POLL_US_MAX,
};

/* COLLECTIVE_CMD_TUNE_GET - do */
static const struct nla_policy collective_tune_get_nl_policy[COLLECTIVE_A_TUNE_COMM + 1] = {
	[COLLECTIVE_A_TUNE_COMM] = { .type = NLA_U32, },
};

/* COLLECTIVE_CMD_TUNE_SET - do */
static const struct nla_policy collective_tune_set_nl_policy[COLLECTIVE_A_TUNE_RESET + 1] = {
	[COLLECTIVE_A_TUNE_COMM] = { .type = NLA_U32, },
	[COLLECTIVE_A_TUNE_ALGO] = NLA_POLICY_MAX(NLA_U32, 5),
	[COLLECTIVE_A_TUNE_ALLREDUCE_ALGO] = NLA_POLICY_MAX(NLA_U32, 5),
	[COLLECTIVE_A_TUNE_REDUCE_ALGO] = NLA_POLICY_MAX(NLA_U32, 5),
	[COLLECTIVE_A_TUNE_REDUCESCATTER_ALGO] = NLA_POLICY_MAX(NLA_U32, 5),
	[COLLECTIVE_A_TUNE_ALLGATHER_ALGO] = NLA_POLICY_MAX(NLA_U32, 5),
	[COLLECTIVE_A_TUNE_BROADCAST_ALGO] = NLA_POLICY_MAX(NLA_U32, 5),
	[COLLECTIVE_A_TUNE_SCATTER_ALGO] = NLA_POLICY_MAX(NLA_U32, 5),
	[COLLECTIVE_A_TUNE_GATHER_ALGO] = NLA_POLICY_MAX(NLA_U32, 5),
	[COLLECTIVE_A_TUNE_ALLTOALL_ALGO] = NLA_POLICY_MAX(NLA_U32, 5),
	[COLLECTIVE_A_TUNE_BARRIER_ALGO] = NLA_POLICY_MAX(NLA_U32, 5),
	[COLLECTIVE_A_TUNE_SOLO_BYTES] = NLA_POLICY_FULL_RANGE(NLA_U32, &collective_a_tune_solo_bytes_range),
	[COLLECTIVE_A_TUNE_EAGER_BYTES] = NLA_POLICY_FULL_RANGE(NLA_U32, &collective_a_tune_eager_bytes_range),
	[COLLECTIVE_A_TUNE_HIER_BYTES] = { .type = NLA_U32, },
	[COLLECTIVE_A_TUNE_RING_CHUNK_BYTES] = NLA_POLICY_FULL_RANGE(NLA_U32, &collective_a_tune_ring_chunk_bytes_range),
	[COLLECTIVE_A_TUNE_EXEC_CHUNK_BYTES] = NLA_POLICY_FULL_RANGE(NLA_U32, &collective_a_tune_exec_chunk_bytes_range),
	[COLLECTIVE_A_TUNE_SPIN_NS] = NLA_POLICY_FULL_RANGE(NLA_U32, &collective_a_tune_spin_ns_range),
	[COLLECTIVE_A_TUNE_JOIN_TIMEOUT_MS] = NLA_POLICY_FULL_RANGE(NLA_U32, &collective_a_tune_join_timeout_ms_range),
	[COLLECTIVE_A_TUNE_PEER_TIMEOUT_MS] = NLA_POLICY_FULL_RANGE(NLA_U32, &collective_a_tune_peer_timeout_ms_range),
	[COLLECTIVE_A_TUNE_PLAN_CACHE] = NLA_POLICY_MAX(NLA_U32, COLLECTIVE_PLAN_CACHE_MAX),
	[COLLECTIVE_A_TUNE_MAX_REQUESTS] = NLA_POLICY_FULL_RANGE(NLA_U32, &collective_a_tune_max_requests_range),
	[COLLECTIVE_A_TUNE_MAX_COMMS] = NLA_POLICY_FULL_RANGE(NLA_U32, &collective_a_tune_max_comms_range),
	[COLLECTIVE_A_TUNE_BUSY_POLL_US] = NLA_POLICY_FULL_RANGE(NLA_U32, &collective_a_tune_busy_poll_us_range),
	[COLLECTIVE_A_TUNE_RDMA_QPS] = NLA_POLICY_RANGE(NLA_U32, 1, COLLECTIVE_RDMA_QPS_MAX),
	[COLLECTIVE_A_TUNE_MR_POOL] = NLA_POLICY_MAX(NLA_U32, COLLECTIVE_MR_POOL_MAX),
	[COLLECTIVE_A_TUNE_RESET] = { .type = NLA_FLAG, },
};

/* COLLECTIVE_CMD_COMM_GET - do */
static const struct nla_policy collective_comm_get_nl_policy[COLLECTIVE_A_COMM_SERIAL + 1] = {
	[COLLECTIVE_A_COMM_SERIAL] = { .type = NLA_U32, },
};

/* COLLECTIVE_CMD_OP_GET - dump */
static const struct nla_policy collective_op_get_nl_policy[COLLECTIVE_A_OP_COMM + 1] = {
	[COLLECTIVE_A_OP_COMM] = { .type = NLA_U32, },
};

/* COLLECTIVE_CMD_STATS_GET - do */
static const struct nla_policy collective_stats_get_nl_policy[COLLECTIVE_A_STATS_COMM + 1] = {
	[COLLECTIVE_A_STATS_COMM] = { .type = NLA_U32, },
};

#endif /* COLL_NL_GEN_H */
