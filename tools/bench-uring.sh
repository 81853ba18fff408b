#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-uring.sh: 1,000 small collectives through io_uring against ioctls,
# in one guest boot.  tools/coll_group_perf with 2 and 4 ranks: batches of
# 1,000 int32 SUM AllReduces of 8 B and 4 KiB, the forms interleaved,
# median of 5 rounds, every result checked:
#  - blocking calls, one ioctl each (small ones take the eager path);
#  - 1,000 non-blocking calls, then 1,000 waits;
#  - io_uring, the whole batch in one io_uring_enter that also waits for
#    all of it (beyond the eager slots, commands take the task path);
#  - io_uring at depth 8 (half the eager slots), polling the completion
#    queue and yielding the CPU between looks: every command eager.
# Prints each figure and its ratio to the blocking calls, then the floor
# of one null ioctl.
#
#   selftests/rig/vm.sh --name bench-uring --mem 2G -- tools/bench-uring.sh
#
# Runs INSIDE a qemu guest (it loads the module).  Env: RANKS ("2 4"),
# SIZES ("8 4096"), OPS (1000), DEPTH (8), COLL_INSMOD_ARGS.
set -u
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
# The module's own paths: the calls go through it, not the mapped slots.
export COLL_MAP=${COLL_MAP:-0}
bench_load bench-uring.sh
rc=0
for n in ${RANKS:-2 4}; do
	for c in ${SIZES:-8 4096}; do
		group_perf "$n" -k "${OPS:-1000}" -c "$c" -d int32 -i 3 -r 5 \
			-F calls,nonblocking,uring || rc=1
		group_perf "$n" -k "${OPS:-1000}" -c "$c" -d int32 -i 3 -r 5 \
			-F calls,uring -q "${DEPTH:-8}" -s 2 || rc=1
	done
done
tools/collrun -n 2 -t 60 tools/coll_perf -p allreduce -b 8 -e 8 -n 5 -w 1 |
	grep '^# floor'
rmmod collective || rc=1
exit $rc
