#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-place.sh: small collectives where ranks wait on each other, in one
# guest boot, for one module or several builds of it (an A/B).  An 8-byte
# Reduce with 4 ranks pinned to vCPUs in three placements (PLACES: the
# vCPU of rank 0, 1, 2, 3; "0001": the root and two senders on vCPU 0, the
# third sender alone on vCPU 1) and unpinned, then unpinned 4-rank Gather,
# Broadcast, Scatter, AllReduce and Barrier, and 1- and 2-rank AllReduce,
# Barrier and Broadcast; coll_perf -n 10 -w 5 -T 100 (as make run), every
# result checked, the modules interleaved, REPS rounds; prints the median
# time per call of each and every round's figure.
#
#   selftests/rig/vm.sh --name bench-place --mem 2G -- tools/bench-place.sh
#   selftests/rig/vm.sh --name bench-place --mem 2G \
#       --env KOS="/tmp/old.ko kmod/collective.ko" -- tools/bench-place.sh
#
# Runs INSIDE a qemu guest (it loads the module).  Env: REPS (3), KOS (the
# module files, kmod/collective.ko), PLACES ("0001 0011 0101").
set -u
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
# The module's own paths: the calls go through it, not the mapped slots.
export COLL_MAP=${COLL_MAP:-0}
bench_load bench-place.sh
rmmod collective
out=$(mktemp)
pin=$(mktemp)
# collrun gives each rank RANK; MAP names each rank's vCPU
# shellcheck disable=SC2016 # expanded by the wrapper, at each rank's start
printf '#!/bin/sh\nexec taskset -c "$(echo "$MAP" | cut -c$((RANK + 1)))" "$@"\n' > "$pin"
chmod +x "$pin"
args=(-n 10 -w 5 -T 100)

# one KO TAG NP ARGS...: one run, its rows tagged
one() {
	local ko=$1 tag=$2 n=$3
	shift 3
	tools/collrun -n "$n" -t 120 "$@" "${args[@]}" 2>&1 | grep -v '^#' |
		awk -v k="$ko" -v t="$tag" 'NF >= 9 { print k, t, $1, $6, $9 }' >> "$out"
}

for _ in $(seq "${REPS:-3}"); do
	for ko in ${KOS:-kmod/collective.ko}; do
		# shellcheck disable=SC2086 # split on purpose
		insmod "$ko" ${COLL_INSMOD_ARGS:-} || exit 1
		for map in ${PLACES:-0001 0011 0101}; do
			MAP=$map one "$ko" "reduce/4 pinned $map" 4 "$pin" \
				tools/coll_perf -p reduce -b 8 -e 8
		done
		for p in reduce gather broadcast scatter allreduce barrier; do
			b=8
			case $p in gather|scatter) b=32 ;; esac
			one "$ko" "$p/4" 4 tools/coll_perf -p "$p" -b $b -e $b
		done
		one "$ko" "allreduce/1" 1 tools/coll_perf -p allreduce -b 8 -e 8
		for p in allreduce barrier broadcast; do
			one "$ko" "$p/2" 2 tools/coll_perf -p "$p" -b 8 -e 8
		done
		rmmod collective
	done
done
rm -f "$pin"
/usr/bin/python3 - "$out" <<'EOF'
import statistics, sys
t, kos, tags = {}, [], []
for line in open(sys.argv[1]):
    f = line.split()
    ko, tag, us, wrong = f[0], ' '.join(f[1:-3]), float(f[-2]), f[-1]
    if wrong not in ('0', 'N/A'):
        sys.exit('bench-place: %s %s: %s wrong' % (ko, tag, wrong))
    for x, xs in ((ko, kos), (tag, tags)):
        if x not in xs:
            xs.append(x)
    t.setdefault((ko, tag), []).append(us)
print('# median time per call (us), [every round]; bytes: 8 (Gather, Scatter: 32)')
print('| collective / ranks | ' + ' | '.join(kos) + ' |')
print('|---|' + '---|' * len(kos))
for tag in tags:
    cells = []
    for ko in kos:
        v = t.get((ko, tag), [])
        cells.append('%.1f [%s]' % (statistics.median(v),
                                    ' '.join('%.0f' % x for x in v)) if v else '')
    print('| %s | %s |' % (tag, ' | '.join(cells)))
EOF
rm -f "$out"
