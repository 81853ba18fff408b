#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Runs INSIDE a qemu guest, as root (make run: selftests/rig/vm.sh -- this):
# loads kmod/collective.ko, measures single-thread memcpy, benchmarks every
# primitive with coll_perf, and with mpi_perf over Open MPI and over MPICH
# where they exist; prints per primitive the merged comparison against the
# faster of the two MPIs at each size (best-of.sh), and the geometric mean
# against each; removes the module.  Never run it on a
# machine whose kernel you care about.
#
# Environment:
#   COLL_ROOT          project root (default: the current directory)
#   COLL_BENCH_NP      ranks (default: 4)
#   COLL_BENCH_PRIMS   primitives (default: all nine)
#   COLL_BENCH_ARGS    extra coll_perf/mpi_perf options
#                      (default: -b 8 -e 16M -f 4 -n 10 -w 5 -T 100)
#   COLL_BENCH_OUT     directory for the raw outputs (default build/bench)
#   COLL_BENCH_MPI     0 to skip mpi_perf (both MPIs)
#   COLL_BENCH_GROUP   0 to skip the groups' figure (coll_group_perf)
#   COLL_BENCH_URING   0 to skip the io_uring figure (coll_group_perf)
#   COLL_BENCH_LARGE   0 to skip the large messages (bench-large.sh)
#   COLL_BENCH_LARGE_REPS  its rounds (default 5)
#   COLL_BENCH_MPI_TIMEOUT  seconds per MPI run (default 600)
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
# COLL_ROOT names the project here, but the library reads it as the
# rendezvous address (host:port): the ranks must not see it.
unset COLL_ROOT
T=$ROOT/tools
KO=$ROOT/kmod/collective.ko
MOD=collective
DEV=${COLL_DEVICE:-/dev/collective}
NP=${COLL_BENCH_NP:-4}
[ "$NP" -ge 2 ] 2>/dev/null || NP=2
PRIMS=${COLL_BENCH_PRIMS:-allreduce reduce reducescatter allgather broadcast scatter gather alltoall barrier}
ARGS=${COLL_BENCH_ARGS:--b 8 -e 16M -f 4 -n 10 -w 5 -T 100}
OUT=${COLL_BENCH_OUT:-$ROOT/build/bench}
mkdir -p "$OUT" || exit 1
fail=0

for p in collrun coll_perf memcpy_bw; do
	[ -x "$T/$p" ] || { echo "bench-guest.sh: $T/$p missing (make -C tools)" >&2; exit 1; }
done

# ---- load ----------------------------------------------------------------
[ -d /sys/module/$MOD ] && rmmod $MOD
# Its dependencies first (ib_core, rdma_cm, ...): insmod does not load them.
for d in $(modinfo -F depends "$KO" | tr , ' '); do modprobe "$d"; done
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

# Each MPI's launcher by its own name: mpirun is whichever the alternatives say.
ompi=0 mpich=0
if [ "${COLL_BENCH_MPI:-1}" != 0 ]; then
	[ -x "$T/mpi_perf" ] && command -v mpirun.openmpi > /dev/null 2>&1 && ompi=1
	[ -x "$T/mpi_perf.mpich" ] && command -v mpirun.mpich > /dev/null 2>&1 && mpich=1
fi
MTO=${COLL_BENCH_MPI_TIMEOUT:-600}

for p in $PRIMS; do
	echo "#"
	echo "# ==== $p"
	# shellcheck disable=SC2086
	if ! "$T/collrun" -n "$NP" -t 1800 "$T/coll_perf" -p "$p" $ARGS > "$OUT/coll-$p.txt"; then
		echo "# coll_perf -p $p FAILED (see $OUT/coll-$p.txt)"
		fail=1
	fi
	grep -v '^# \(coll_perf\|sizes\|time =\|algbw =\|#wrong =\)' "$OUT/coll-$p.txt"
	peers=
	if [ $ompi = 1 ]; then
		# shellcheck disable=SC2086
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout -k 10 "$MTO" mpirun.openmpi --oversubscribe --mca btl self,vader \
			--mca pml ob1 -np "$NP" "$T/mpi_perf" -p "$p" $ARGS \
			> "$OUT/mpi-$p.txt" 2>&1 && peers="$peers mpi" ||
			echo "# Open MPI's mpi_perf -p $p failed (see $OUT/mpi-$p.txt)"
	fi
	if [ $mpich = 1 ]; then
		# shellcheck disable=SC2086
		timeout -k 10 "$MTO" mpirun.mpich -np "$NP" "$T/mpi_perf.mpich" -p "$p" $ARGS \
			> "$OUT/mpich-$p.txt" 2>&1 && peers="$peers mpich" ||
			echo "# MPICH's mpi_perf -p $p failed (see $OUT/mpich-$p.txt)"
	fi
	case $peers in
	" mpi mpich")
		"$T/best-of.sh" "$OUT/mpi-$p.txt" "$OUT/mpich-$p.txt" > "$OUT/best-$p.txt"
		echo "# -- against the faster of Open MPI (vader) and MPICH (shared memory) at each size, same guest, $NP ranks:"
		"$T/compare.sh" "$OUT/coll-$p.txt" "$OUT/best-$p.txt" "$OUT/memcpy.txt"
		printf '# against Open MPI alone: '
		"$T/compare.sh" "$OUT/coll-$p.txt" "$OUT/mpi-$p.txt" "$OUT/memcpy.txt" | tail -1 | sed 's/^# *//'
		printf '# against MPICH alone: '
		"$T/compare.sh" "$OUT/coll-$p.txt" "$OUT/mpich-$p.txt" "$OUT/memcpy.txt" | tail -1 | sed 's/^# *//'
		;;
	" mpi"|" mpich")
		echo "# -- against${peers# } only (shared memory, same guest, $NP ranks):"
		"$T/compare.sh" "$OUT/coll-$p.txt" "$OUT/${peers# }-$p.txt" "$OUT/memcpy.txt"
		;;
	esac
done

# ---- groups ----------------------------------------------------------------
# 100 AllReduces of 4 KiB as 100 calls, as one group, as one fused group
# (COLL_GROUP; tools/bench-group.sh has the sweep): the ways of submitting
# to the module, so with COLL_MAP=0; then the same calls through the
# mapped slots, as the library makes them by default.
if [ "${COLL_BENCH_GROUP:-1}" != 0 ] && [ -x "$T/coll_group_perf" ]; then
	echo "#"
	echo "# ==== groups: 100 float AllReduces of 4 KiB, $NP ranks (COLL_MAP=0)"
	COLL_MAP=0 "$T/collrun" -n "$NP" -t 600 "$T/coll_group_perf" -k 100 \
		-c 4096 -d float -i 10 -r 5 || fail=1
	echo "# ==== the same 100 calls through the mapped slots"
	"$T/collrun" -n "$NP" -t 600 "$T/coll_group_perf" -k 100 -c 4096 \
		-d float -i 10 -r 5 -F calls || fail=1
fi

# ---- io_uring ----------------------------------------------------------------
# 1,000 small AllReduces as calls and through io_uring at depth 8, polling
# the completion queue (tools/bench-uring.sh has the sweep).
if [ "${COLL_BENCH_URING:-1}" != 0 ] && [ -x "$T/coll_group_perf" ]; then
	echo "#"
	echo "# ==== io_uring: 1000 int32 AllReduces of 8 B, $NP ranks (COLL_MAP=0)"
	COLL_MAP=0 "$T/collrun" -n "$NP" -t 600 "$T/coll_group_perf" -k 1000 \
		-c 8 -d int32 -i 3 -r 5 -F calls,uring -q 8 -s 2 || fail=1
	echo "# ==== the same 1000 calls through the mapped slots"
	"$T/collrun" -n "$NP" -t 600 "$T/coll_group_perf" -k 1000 -c 8 \
		-d int32 -i 3 -r 5 -F calls || fail=1
fi

# ---- unload ------------------------------------------------------------------
rmmod $MOD || fail=1

# ---- large messages ----------------------------------------------------------
# Every primitive from 1 MiB up (AllReduce to 64 MiB, float and int32) with 2
# and 4 ranks, against both MPIs and beside the bound memory traffic and
# reduction speed set on this guest: tools/bench-large.sh, which loads the
# module itself.
if [ "${COLL_BENCH_LARGE:-1}" != 0 ] && [ -x "$T/bench-large.sh" ]; then
	echo "#"
	echo "# ==== large messages: 2 and 4 ranks, against the faster MPI and the bounds"
	REPS=${COLL_BENCH_LARGE_REPS:-5} MPI=${COLL_BENCH_MPI:-1} \
		"$T/bench-large.sh" > "$OUT/large.txt" 2>&1 || fail=1
	cat "$OUT/large.txt"
fi
echo "# raw outputs in $OUT"
exit $fail
