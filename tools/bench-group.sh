#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-group.sh: what a group (COLL_GROUP) buys, in one guest boot.
# tools/coll_group_perf with 2 and 4 ranks: 100 AllReduces per batch of
# 8 B, 4 KiB and 16 KiB, int32 and float, as 100 separate calls, as one
# group with COLL_GROUP_F_NOFUSE and as one fused group (the three forms
# interleaved, median of 5 rounds of 20 batches); every result checked.
# Prints each figure and the ratio of each group to the separate calls;
# the target of the issue is 100 x 4 KiB fused >= 5x.
#
#   selftests/rig/vm.sh --name bench-group --mem 2G -- tools/bench-group.sh
#
# Runs INSIDE a qemu guest (it loads the module).  Env: RANKS ("2 4"),
# SIZES ("8 4096 16384"), DTYPES ("int32 float"), COLL_INSMOD_ARGS.
set -u
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
# The module's own paths: the calls go through it, not the mapped slots.
export COLL_MAP=${COLL_MAP:-0}
bench_load bench-group.sh
rc=0
for n in ${RANKS:-2 4}; do
	for dt in ${DTYPES:-int32 float}; do
		for c in ${SIZES:-8 4096 16384}; do
			group_perf "$n" -k 100 -c "$c" -d "$dt" -i 20 -r 5 ||
				rc=1
		done
	done
done
tools/collrun -n 2 -t 60 tools/coll_perf -p allreduce -b 8 -e 8 -n 5 -w 1 |
	grep '^# floor'
rmmod collective || rc=1
exit $rc
