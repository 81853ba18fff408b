#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-regcache.sh: what the registration cache buys, in one guest boot.
# AllReduce and Broadcast (int32, 8 B .. 16 MiB, coll_perf -n 50 -w 10) with
# 1 and 2 ranks, reg_cache=0 (pin and unpin every call) and reg_cache=64
# interleaved, REPS rounds; prints the median time per call of each and
# their ratio.
#
#   selftests/rig/vm.sh --name bench-regcache --mem 2G -- tools/bench-regcache.sh
#
# Runs INSIDE a qemu guest (it loads the module).  Env: REPS (3).
set -u
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
# The module's own paths: the calls go through it, not the mapped slots.
export COLL_MAP=${COLL_MAP:-0}
bench_load bench-regcache.sh
out=$(mktemp)
rc_default=$(cat /sys/module/collective/parameters/reg_cache)
for _ in $(seq "${REPS:-3}"); do
	for rc in 0 64; do
		echo "$rc" > /sys/module/collective/parameters/reg_cache
		for n in 1 2; do
			for p in allreduce broadcast; do
				echo "## $p $n $rc" >> "$out"
				tools/collrun -n "$n" -t 300 tools/coll_perf -p "$p" -b 8 \
					-e 16M -f 8 -n 50 -w 10 -d int32 2>&1 |
					grep -v '^#' >> "$out"
			done
		done
	done
done
echo "$rc_default" > /sys/module/collective/parameters/reg_cache
tools/collrun -n 2 -t 60 tools/coll_perf -p allreduce -b 8 -e 8 -n 5 -w 1 |
	grep '^# floor'
rmmod collective
/usr/bin/python3 - "$out" <<'EOF'
import statistics, sys
t, key = {}, None
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith('## '):
        key = (f[1], int(f[2]), int(f[3]))
    elif key and len(f) >= 9 and f[0].isdigit():
        t.setdefault(key + (int(f[0]),), []).append(float(f[5]))
print('%-10s %5s %9s %14s %14s %8s' % ('primitive', 'ranks', 'bytes',
      'uncached (us)', 'cached (us)', 'ratio'))
for p, n, rc, size in sorted(k for k in t if k[2] == 0):
    a = statistics.median(t[(p, n, 0, size)])
    b = statistics.median(t.get((p, n, 64, size), [float('nan')]))
    print('%-10s %5d %9d %14.2f %14.2f %8.2f' % (p, n, size, a, b, a / b))
EOF
rm -f "$out"
