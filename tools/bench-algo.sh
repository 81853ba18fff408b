#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-algo.sh: the sweep behind the automatic choice of algorithm, in one
# guest boot.  For each primitive that has more than one schedule
# (AllReduce, Reduce, ReduceScatter, AllGather, Broadcast), RANKS ranks and
# sizes 8 B to 16 MiB (x8), it times every algorithm forced
# (coll_perf -a), and the automatic choice under the module's current
# algo_rules, all on the task path (slot_bytes=0: the eager slots take
# no algorithm), interleaved, REPS rounds, median time per call; every
# result checked.  It prints the figures, the winner at each size, the
# automatic choice's ratio to the winner, and the rule table it would pick
# as an algo_rules line (a winner must beat DIRECT, the choice without a
# rule, by MARGIN percent in the median of its rounds' ratios; a band of
# sizes starts at the first size it wins, and goes on while its algorithm
# is no slower than DIRECT):
#
#   selftests/rig/vm.sh --name bench-algo --mem 2G -- tools/bench-algo.sh
#   echo "$line" > /sys/module/collective/parameters/algo_rules
#
# Runs INSIDE a qemu guest (it loads the module).  Env: REPS (3), RANKS
# ("2 4"), PRIMS (the five), DTYPE (float), MARGIN (15), COLL_INSMOD_ARGS.
set -u
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
# The module's own paths: the calls go through it, not the mapped slots.
export COLL_MAP=${COLL_MAP:-0}
bench_load bench-algo.sh
out=$(mktemp)
P=/sys/module/collective/parameters
slot_default=$(cat $P/slot_bytes)
echo 0 > $P/slot_bytes
prims=${PRIMS:-allreduce reduce reducescatter allgather broadcast}
rc=0

algos_of() {
	case $1 in
	allreduce) echo direct ring tree naive ;;
	reduce|allgather) echo direct ring naive ;;
	reducescatter) echo direct ring ;;
	broadcast) echo direct ring tree ;;
	esac
}

# rotate LIST... by K: the order of the algorithms changes every round, so
# that none is always the one run right after another
rotate() {
	local k=$1
	shift
	local -a l=("$@")
	echo "${l[@]:k % ${#l[@]}}" "${l[@]:0:k % ${#l[@]}}"
}

for round in $(seq "${REPS:-3}"); do
	for n in ${RANKS:-2 4}; do
		for p in $prims; do
			# shellcheck disable=SC2046 # a list of words
			for a in $(rotate "$round" $(algos_of "$p") auto); do
				echo "## $p $n $a" >> "$out"
				tools/collrun -n "$n" -t 600 tools/coll_perf -p "$p" \
					-a "$a" -d "${DTYPE:-float}" -b 8 -e 16M -f 8 \
					-n 10 -w 3 -T 100 2>&1 | grep -v '^#' >> "$out" ||
					rc=1
			done
		done
	done
done
echo "$slot_default" > $P/slot_bytes
echo "# algo_rules during the sweep: $(cat $P/algo_rules 2>/dev/null)"
rmmod collective || rc=1
MARGIN=${MARGIN:-15} /usr/bin/python3 - "$out" <<'EOF' || rc=1
import os, statistics, sys
t, key, bad = {}, None, 0
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith('## '):
        key = (f[1], int(f[2]), f[3])
    elif key and len(f) >= 9 and f[0].isdigit():
        t.setdefault(key + (int(f[0]),), []).append(float(f[5]))
        bad += int(f[8])
med = {k: statistics.median(v) for k, v in t.items()}
margin = 1 + float(os.environ['MARGIN']) / 100


def gain(p, n, a, b):
    """median over rounds of DIRECT's time / a's time in the same round"""
    d, x = t.get((p, n, 'direct', b), []), t.get((p, n, a, b), [])
    r = [u / v for u, v in zip(d, x) if v > 0]
    return statistics.median(r) if r else 0


def human(b):
    for s, u in (('G', 30), ('M', 20), ('K', 10)):
        if b and b % (1 << u) == 0:
            return '%d%s' % (b >> u, s)
    return str(b)


rules = []
for p, n in sorted({(k[0], k[1]) for k in med}, key=lambda x: (x[1], x[0])):
    algos = sorted({k[2] for k in med if k[:2] == (p, n)} - {'auto'})
    sizes = sorted({k[3] for k in med if k[:2] == (p, n)})
    print('\n%s, %d ranks: us per call (task path, median of %d rounds)' %
          (p, n, len(t[(p, n, algos[0], sizes[0])])))
    print('%9s' % 'bytes' + ''.join('%10s' % a for a in algos) +
          '%10s %8s %9s %8s' % ('auto', 'winner', 'win/dir', 'auto/win'))
    band = 'direct'
    nrules = len(rules)
    for b in sizes:
        row = {a: med.get((p, n, a, b)) for a in algos + ['auto']}
        g = {a: gain(p, n, a, b) for a in algos if row[a] is not None}
        win = max(g, key=g.get)
        # a rule only where it clearly beats what no rule gives; a band
        # goes on while its algorithm is no slower than DIRECT
        pick = win if g[win] >= margin else 'direct'
        if pick == 'direct' and g.get(band, 0) >= 1:
            pick = band
        if pick != band:
            rules.append('%s/%d@%s=%s' % (p, n, human(b), pick))
            band = pick
        auto = row['auto']
        print('%9d' % b + ''.join('%10.1f' % row[a] if row[a] else
                                  '%10s' % '-' for a in algos) +
              '%10.1f %8s %9.2f %8.2f' % (auto or 0, win, g[win],
                                          row[win] / auto if auto else 0))
    # a class reaches up to the next: end a smaller one's rules here
    mine = [r for r in rules if r.startswith(p + '/')]
    if len(rules) == nrules and mine and not mine[-1].endswith('@0=direct'):
        rules.append('%s/%d@0=direct' % (p, n))
print('\n# wrong elements, all runs: %d' % bad)
print("# win/dir: median over rounds of DIRECT's time / the winner's")
print('# the table it would pick (a winner at least %s%% faster than DIRECT),'
      ' for algo_rules:' % os.environ['MARGIN'])
print(' '.join(rules) if rules else 'none')
sys.exit(1 if bad else 0)
EOF
rm -f "$out"
exit $rc
