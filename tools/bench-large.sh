#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-large.sh: large collectives, in one guest boot: collective.ko
# against Open MPI and MPICH (the faster of the two at each point), and
# every figure beside the bound that memory traffic and reduction speed
# set for it on this guest, with RANKS (2 and 4) ranks; coll_perf /
# mpi_perf -n 5 -w 2 -T 200, every result checked, the three programs
# interleaved (their order rotating), REPS rounds, medians.
#
#   selftests/rig/vm.sh --name bench-large --mem 4G -- tools/bench-large.sh
#
# The bounds (C = min(ranks, CPUs), B = single-thread memcpy bandwidth, R =
# single-thread speed of d = a + b in the case's type, both measured here
# by memcpy_bw first; S the printed size, P ranks):
#   copies: the bytes that must be written in all / (C x B): Broadcast
#     (P-1) S (run in place by both sides: MPI_Bcast has one buffer);
#     AllGather and AlltoAll P S (every receive buffer, out of place);
#     Scatter and Gather S;
#   reductions: (P-1) pairwise combines of S bytes in all at R, plus, for
#     AllReduce, the (P-1) S bytes of results every rank copies from the
#     others at B, over C CPUs: AllReduce (P-1) S (1/R + 1/B) / C,
#     ReduceScatter and Reduce (P-1) S / (R C).
# C x B and C x R assume that C CPUs copy and reduce C times as fast as
# one, which memory bandwidth (and an emulator) may not allow: the "par"
# bound is the same work at the speeds memcpy_bw -t C measures for C
# threads copying and reducing at once, each its own buffers of size S:
# written / B_C, (P-1) S (1/R_C + 1/B_C), (P-1) S / R_C.
#
# Runs INSIDE a qemu guest (it loads the module).  Env: REPS (5), RANKS
# ("2 4"), SIZES ("1M 16M"), CASES (PRIM[:DTYPE][@SIZE,SIZE...], float and
# SIZES by default; default "allreduce:float@1M,16M,64M
# allreduce:int32@1M,16M,64M reducescatter reduce broadcast allgather
# alltoall scatter gather"), MPI (0: ours only).
set -u
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
bench_load bench-large.sh
out=$(mktemp)
cases=${CASES:-allreduce:float@1M,16M,64M allreduce:int32@1M,16M,64M reducescatter reduce broadcast allgather alltoall scatter gather}
args=(-n 5 -w 2 -T 200)
fail=0

tools/memcpy_bw -r 5 > "$out.mem" || exit 1
tools/memcpy_bw -r 5 -d float >> "$out.mem" || exit 1
tools/memcpy_bw -r 5 -d int32 >> "$out.mem" || exit 1
# case_sizes CASE: the sizes of a case (its @SIZE,... or SIZES).
case_sizes() {
	local sizes=${SIZES:-1M 16M}
	case $1 in *@*) sizes=${1#*@} sizes=${sizes//,/ } ;; esac
	echo "$sizes"
}

cpus=$(nproc)
# What C CPUs copy and reduce together at each size of the cases (C =
# min(ranks, CPUs) > 1): the parallel bound's speeds.
allsizes=
for c in $cases; do
	allsizes="$allsizes $(case_sizes "$c")"
done
# shellcheck disable=SC2086 # split on purpose
allsizes=$(printf '%s\n' $allsizes | sort -u)
for n in ${RANKS:-2 4}; do
	c=$(( n < cpus ? n : cpus ))
	[ "$c" -gt 1 ] && echo "$c"
done | sort -u > "$out.cs"
while read -r c; do
	for b in $allsizes; do
		tools/memcpy_bw -t "$c" -r 5 "$b" >> "$out.mem" || exit 1
		for d in float int32; do
			tools/memcpy_bw -t "$c" -r 5 -d "$d" "$b" >> "$out.mem" ||
				exit 1
		done
	done
done < "$out.cs"
grep '^#' "$out.mem"
echo "# guest CPUs: $cpus"

# one PRIM DTYPE SIZE NP FORM: one run, its rows tagged
one() {
	local p=$1 d=$2 b=$3 n=$4 form=$5
	local -a cmd
	case $form in
	ours) cmd=(tools/collrun -n "$n" -t 900 tools/coll_perf) ;;
	*) mpi_cmd "$form" "$n" 900 && cmd=("${MPI_CMD[@]}") ;;
	esac
	echo "## $p $d $n $form" >> "$out"
	ip=0
	[ "$p" = broadcast ] && ip=1
	if ! "${cmd[@]}" -p "$p" -d "$d" -b "$b" -e "$b" -i $ip "${args[@]}" \
	     > "$out.one" 2>&1; then
		echo "# $form -p $p -d $d -b $b with $n ranks failed:"
		sed 's/^/#   /' "$out.one" | tail -5
		fail=1
	fi
	grep -v '^#' "$out.one" >> "$out"
}

forms=ours
[ "${MPI:-1}" != 0 ] && forms="$forms $(mpi_forms)"
for r in $(seq "${REPS:-5}"); do
	for n in ${RANKS:-2 4}; do
		for c in $cases; do
			sizes=$(case_sizes "$c")
			c=${c%%@*}
			p=${c%%:*} d=float
			[ "$p" != "$c" ] && d=${c#*:}
			for b in $sizes; do
				# rotate the order of the programs every round
				# shellcheck disable=SC2086 # split on purpose
				set -- $forms
				for _ in $(seq $(( (r - 1) % $# ))); do
					set -- "${@:2}" "$1"
				done
				for form in "$@"; do
					one "$p" "$d" "$b" "$n" "$form"
				done
			done
		done
	done
done
rmmod collective
/usr/bin/python3 - "$out" "$out.mem" "$(nproc)" <<'EOF'
import statistics, sys
rows, key = {}, None
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith('## '):
        key = (f[1], f[2], int(f[3]), f[4])
    elif key and len(f) >= 9 and f[0].isdigit():
        if f[8] not in ('0', 'N/A'):
            print('# WRONG: %s %s %d ranks %s at %s bytes: %s' %
                  (key[0], key[1], key[2], key[3], f[0], f[8]))
        rows.setdefault(key + (int(f[0]),), []).append(float(f[5]))
speed, par = {}, {}
for line in open(sys.argv[2]):
    f = line.split()
    kv = dict(x.split('=', 1) for x in f[1:] if '=' in x)
    if not f or f[0] not in ('memcpy_bw', 'reduce_bw'):
        continue
    what = 'copy' if f[0] == 'memcpy_bw' else kv['dtype']
    v = float(kv['median_GBps']) * 1e9
    if int(kv.get('threads', '1')) == 1:
        speed[what] = v
    else:
        par[(what, int(kv['threads']), int(kv['bytes']))] = v
cpus = int(sys.argv[3])

def work_s(p, n, s, b, r):
    """Seconds for primitive p's work at copy speed b and reduction speed
    r, both in bytes per second of all CPUs together."""
    if p == 'allreduce':
        return (n - 1) * s * (1 / r + 1 / b)
    if p in ('reducescatter', 'reduce'):
        return (n - 1) * s / r
    written = {'broadcast': (n - 1) * s, 'allgather': n * s,
               'alltoall': n * s, 'scatter': s, 'gather': s}[p]
    return written / b

def bound_s(p, d, n, s):
    """Seconds the bound allows for primitive p of printed size s: C x B
    and C x R."""
    c = min(n, cpus)
    return work_s(p, n, s, c * speed['copy'],
                  c * speed.get(d, speed['float']))

def par_s(p, d, n, s):
    """Seconds for the bound's work at what C CPUs do together at size s."""
    c = min(n, cpus)
    b, r = (par.get(('copy', c, s)), par.get((d, c, s)))
    if c == 1 or b is None or r is None:
        return bound_s(p, d, n, s)
    return work_s(p, n, s, b, r)

def busf(p, n):
    """nccl-tests' bus bandwidth factor."""
    if p == 'allreduce':
        return 2 * (n - 1) / n
    if p in ('reducescatter', 'allgather', 'alltoall'):
        return (n - 1) / n
    return 1

nan = float('nan')
print('# medians of %d rounds; busbw in GB/s (nccl-tests factors); the bound'
      ' is busbw at the bound\'s time;' % max(len(v) for v in rows.values()))
print('# par: the same work at the speed the C CPUs reach together (memcpy_bw'
      ' -t C at the same size)')
print('# ours/MPI, ours/bound and ours/par are time ratios (> 1: ours is'
      ' faster)')
print('%-13s %-6s %5s %9s %10s %10s %8s %8s %8s %8s %8s %8s %8s' % (
      'primitive', 'dtype', 'ranks', 'bytes', 'ours ms', 'bestMPI ms',
      'busbw', 'MPI bus', 'bound', 'par bnd', 'ours/MPI', 'ours/bnd',
      'ours/par'))
for p, d, n, form, s in sorted(k for k in rows if k[3] == 'ours'):
    us = statistics.median(rows[(p, d, n, 'ours', s)])
    peers = [statistics.median(rows[k]) for k in
             ((p, d, n, m, s) for m in ('ompi', 'mpich')) if k in rows]
    mpi = min(peers) if peers else nan
    bnd = bound_s(p, d, n, s) * 1e6
    pb = par_s(p, d, n, s) * 1e6
    f = busf(p, n)
    print('%-13s %-6s %5d %9d %10.2f %10.2f %8.3f %8.3f %8.3f %8.3f %8.2f'
          ' %8.2f %8.2f' % (
          p, d, n, s, us / 1e3, mpi / 1e3, s / us * 1e-3 * f,
          s / mpi * 1e-3 * f, s / bnd * 1e-3 * f, s / pb * 1e-3 * f,
          mpi / us, bnd / us, pb / us))
EOF
rm -f "$out" "$out.mem" "$out.one" "$out.cs"
exit $fail
