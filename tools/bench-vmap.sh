#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-vmap.sh: what mapping pinned buffers contiguously (module
# parameter obuf_vmap) buys the local transport, in one guest boot.
# Large copies and reductions (coll_perf -n 5 -w 2 -T 150, every result
# checked) with obuf_vmap=1 and 0 back to back, their order swapped every
# round, REPS rounds; each run is its own process, so its buffers are
# pinned (and mapped or not) afresh.  Prints per case the median time of
# each, the ratio of the medians and the median of the rounds' ratios
# (> 1: the mapping is faster).
#
#   selftests/rig/vm.sh --name bench-vmap --mem 2G -- tools/bench-vmap.sh
#
# Runs INSIDE a qemu guest (it loads the module).  Env: REPS (7).
set -u
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
export COLL_MAP=${COLL_MAP:-0}
bench_load bench-vmap.sh
out=$(mktemp)
param=/sys/module/collective/parameters/obuf_vmap
# NP PRIM DTYPE SIZE INPLACE
cases=("2 allreduce int32 16M 0" "2 allreduce float 16M 0"
       "2 broadcast float 16M 1" "2 allgather float 16M 0"
       "2 alltoall float 1M 0" "4 allgather float 1M 0"
       "4 gather float 1M 0" "4 allreduce int32 16M 0")
fail=0
for r in $(seq "${REPS:-7}"); do
	order="1 0"
	[ $((r % 2)) = 0 ] && order="0 1"
	for c in "${cases[@]}"; do
		# shellcheck disable=SC2086 # split on purpose
		set -- $c
		for v in $order; do
			echo "$v" > "$param"
			echo "## $r $v $1 $2 $3 $4" >> "$out"
			if ! tools/collrun -n "$1" -t 600 tools/coll_perf -p "$2" \
			     -d "$3" -b "$4" -e "$4" -i "$5" -n 5 -w 2 -T 150 \
			     2>&1 | grep -v '^#' >> "$out"; then
				echo "# obuf_vmap=$v $c failed" >&2
				fail=1
			fi
		done
	done
done
echo 1 > "$param"
rmmod collective
/usr/bin/python3 - "$out" <<'EOF'
import statistics, sys
t, key = {}, None
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith('## '):
        key = (int(f[1]), int(f[2]), ' '.join(f[3:7]))
    elif key and len(f) >= 9 and f[0].isdigit():
        t[key] = float(f[5])
        if f[-1] != '0':
            print('# wrong results:', key)
cases = sorted({k[2] for k in t}, key=lambda c: (c.split()[0], c))
print('# medians of %d rounds (us); ratio > 1: mapped is faster'
      % len({k[0] for k in t}))
print('%-28s %12s %12s %8s %14s' % ('ranks primitive type size',
      'mapped', 'page by page', 'ratio', 'round ratios'))
for c in cases:
    rounds = sorted({k[0] for k in t if k[2] == c})
    a = [t[(r, 1, c)] for r in rounds if (r, 1, c) in t]
    b = [t[(r, 0, c)] for r in rounds if (r, 0, c) in t]
    q = [t[(r, 0, c)] / t[(r, 1, c)] for r in rounds
         if (r, 0, c) in t and (r, 1, c) in t]
    if not a or not b:
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    print('%-28s %12.1f %12.1f %8.2f %14.2f' % (c, ma, mb, mb / ma,
                                                statistics.median(q)))
EOF
rm -f "$out"
exit $fail
