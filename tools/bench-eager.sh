#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-eager.sh: small collectives, in one guest boot: collective.ko
# through the mapped slots (the library's default: in user space), through
# the kernel's eager slots (COLL_MAP=0, slot_bytes at its default), through
# the task path (COLL_MAP=0 and slot_bytes=0: pinned buffers, a task per
# call), and Open MPI and MPICH (the faster of the two at each point).  Every primitive, float sum,
# SIZES bytes (8 and 1 KiB), with 2 and 4 ranks, coll_perf / mpi_perf -n
# 100 -w 20 -T 200, the five interleaved, REPS rounds; prints the median
# time per call of each, the ratios, and the floor: a null ioctl on the
# device and 2.5 times it.
#
#   selftests/rig/vm.sh --name bench-eager --mem 4G -- tools/bench-eager.sh
#
# Runs INSIDE a qemu guest (it loads the module).  Env: REPS (3), RANKS
# ("2 4"), SIZES ("8 1024"), PRIMS (all nine), FORMS ("map eager task").
set -u
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
bench_load bench-eager.sh
out=$(mktemp)
param=/sys/module/collective/parameters/slot_bytes
slot_default=$(cat $param)
prims=${PRIMS:-allreduce reduce reducescatter allgather broadcast scatter gather alltoall barrier}
args=(-n 100 -w 20 -T 200)

# one PRIM SIZE NP FORM: one run, its rows tagged
one() {
	local p=$1 b=$2 n=$3 form=$4
	local -a cmd
	case $form in
	map) cmd=(tools/collrun -n "$n" -t 300 tools/coll_perf) ;;
	eager|task) cmd=(env COLL_MAP=0 tools/collrun -n "$n" -t 300
			 tools/coll_perf) ;;
	*) mpi_cmd "$form" "$n" 300 && cmd=("${MPI_CMD[@]}") ;;
	esac
	echo "## $p $b $n $form" >> "$out"
	"${cmd[@]}" -p "$p" -b "$b" -e "$b" "${args[@]}" 2>&1 |
		grep -v '^#' >> "$out"
}

forms="${FORMS:-map eager task} $(mpi_forms)"
for _ in $(seq "${REPS:-3}"); do
	for n in ${RANKS:-2 4}; do
		for p in $prims; do
			sizes=${SIZES:-8 1024}
			[ "$p" = barrier ] && sizes=8	# prints size 0
			for b in $sizes; do
				for form in $forms; do
					if [ "$form" = task ]; then
						echo 0 > $param
					else
						echo "$slot_default" > $param
					fi
					one "$p" "$b" "$n" "$form"
				done
			done
		done
	done
done
echo "$slot_default" > $param
tools/collrun -n 2 -t 60 tools/coll_perf -p barrier -n 5 -w 1 | grep '^# floor'
rmmod collective
/usr/bin/python3 - "$out" <<'EOF'
import statistics, sys
t, key = {}, None
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith('## '):
        key = (f[1], int(f[3]), f[4])
    elif key and len(f) >= 9 and f[0].isdigit():
        t.setdefault(key + (int(f[0]),), []).append(float(f[5]))
med = {k: statistics.median(v) for k, v in t.items()}
print('%-13s %5s %6s %9s %9s %9s %9s %7s %7s' % ('primitive', 'ranks',
      'bytes', 'map us', 'eager us', 'task us', 'best MPI', 'm/eager',
      'm/MPI'))
nan = float('nan')
for p, n, form, size in sorted(k for k in med if k[2] == 'map'):
    mp = med[(p, n, 'map', size)]
    e = med.get((p, n, 'eager', size), nan)
    tk = med.get((p, n, 'task', size), nan)
    peers = [med[k] for k in ((p, n, m, size) for m in ('ompi', 'mpich'))
             if k in med]
    mpi = min(peers) if peers else nan
    # ratios > 1: the mapped path is faster
    print('%-13s %5d %6d %9.2f %9.2f %9.2f %9.2f %7.2f %7.2f' %
          (p, n, size, mp, e, tk, mpi, e / mp, mpi / mp))
EOF
rm -f "$out"
