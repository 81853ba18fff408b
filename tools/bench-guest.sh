#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Runs INSIDE a qemu guest, as root (make run: selftests/rig/vm.sh -- this):
# loads kmod/collective.ko, measures single-thread memcpy, benchmarks every
# primitive with coll_perf (and mpi_perf when mpirun exists), prints the
# merged comparison per primitive, removes the module.  Never run it on a
# machine whose kernel you care about.
#
# Environment:
#   COLL_ROOT          project root (default: the current directory)
#   COLL_BENCH_NP      ranks (default: 4)
#   COLL_BENCH_PRIMS   primitives (default: all nine)
#   COLL_BENCH_ARGS    extra coll_perf/mpi_perf options
#                      (default: -b 8 -e 16M -f 4 -n 10 -w 2)
#   COLL_BENCH_OUT     directory for the raw outputs (default build/bench)
#   COLL_BENCH_MPI     0 to skip mpi_perf
#   COLL_INSMOD_ARGS   module parameters for insmod
#   COLL_DEVICE        device node (default /dev/collective)
# Exit status: 0 when every coll_perf run succeeded with 0 wrong elements.

set -u

if [ "${COLL_GUEST_OK:-0}" != 1 ] &&
   ! grep -qi qemu /sys/class/dmi/id/sys_vendor 2>/dev/null; then
	echo "bench-guest.sh: not a qemu guest (set COLL_GUEST_OK=1 to insist)" >&2
	exit 1
fi

ROOT=${COLL_ROOT:-$(pwd)}
cd "$ROOT" || exit 1
T=$ROOT/tools
KO=$ROOT/kmod/collective.ko
MOD=collective
DEV=${COLL_DEVICE:-/dev/collective}
NP=${COLL_BENCH_NP:-4}
[ "$NP" -ge 2 ] 2>/dev/null || NP=2
PRIMS=${COLL_BENCH_PRIMS:-allreduce reduce reducescatter allgather broadcast scatter gather alltoall barrier}
ARGS=${COLL_BENCH_ARGS:--b 8 -e 16M -f 4 -n 10 -w 2}
OUT=${COLL_BENCH_OUT:-$ROOT/build/bench}
mkdir -p "$OUT" || exit 1
fail=0

for p in collrun coll_perf memcpy_bw; do
	[ -x "$T/$p" ] || { echo "bench-guest.sh: $T/$p missing (make -C tools)" >&2; exit 1; }
done

# ---- load ----------------------------------------------------------------
[ -d /sys/module/$MOD ] && rmmod $MOD
# shellcheck disable=SC2086 # split on purpose
insmod "$KO" ${COLL_INSMOD_ARGS:-} || { echo "bench-guest.sh: insmod $KO failed" >&2; exit 1; }
i=0
while [ ! -c "$DEV" ] && [ $i -lt 50 ]; do sleep 0.1 2>/dev/null || sleep 1; i=$((i + 1)); done
if [ ! -c "$DEV" ] && [ -r /sys/class/misc/$MOD/dev ]; then
	mm=$(cat /sys/class/misc/$MOD/dev)
	mknod "$DEV" c "${mm%:*}" "${mm#*:}"
fi
[ -c "$DEV" ] || { echo "bench-guest.sh: no $DEV" >&2; rmmod $MOD; exit 1; }
export COLL_DEVICE="$DEV"

# ---- measure ---------------------------------------------------------------
"$T/memcpy_bw" > "$OUT/memcpy.txt"
cat "$OUT/memcpy.txt"
echo "# ranks $NP, options: $ARGS"

mpi=0
if [ "${COLL_BENCH_MPI:-1}" != 0 ] && [ -x "$T/mpi_perf" ] && command -v mpirun > /dev/null 2>&1; then
	mpi=1
fi

for p in $PRIMS; do
	echo "#"
	echo "# ==== $p"
	# shellcheck disable=SC2086
	if ! "$T/collrun" -n "$NP" -t 1800 "$T/coll_perf" -p "$p" $ARGS > "$OUT/coll-$p.txt"; then
		echo "# coll_perf -p $p FAILED (see $OUT/coll-$p.txt)"
		fail=1
	fi
	grep -v '^# \(coll_perf\|sizes\|time =\|algbw =\|#wrong =\)' "$OUT/coll-$p.txt"
	if [ $mpi = 1 ]; then
		# shellcheck disable=SC2086
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		mpirun --oversubscribe --mca btl self,vader --mca pml ob1 -np "$NP" \
			"$T/mpi_perf" -p "$p" $ARGS > "$OUT/mpi-$p.txt" 2>&1 ||
			echo "# mpi_perf -p $p failed (see $OUT/mpi-$p.txt)"
		echo "# -- against Open MPI (shared memory, same guest, $NP ranks):"
		"$T/compare.sh" "$OUT/coll-$p.txt" "$OUT/mpi-$p.txt" "$OUT/memcpy.txt"
	fi
done

# ---- unload ------------------------------------------------------------------
rmmod $MOD || fail=1
echo "# raw outputs in $OUT"
exit $fail
