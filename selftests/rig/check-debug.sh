#!/bin/bash
# check-debug.sh: run the selftests under the rig's debug kernel (KASAN,
# lockdep, DEBUG_ATOMIC_SLEEP, kmemleak, DEBUG_OBJECTS, UBSAN, DEBUG_LIST).
#
#   selftests/rig/check-debug.sh [--no-build] [--timeout SECS] [-v]
#
# On the host: builds (when needed) the debug kernel and collective.ko against
# it (debug-kernel.sh), the selftests into build/debug-selftests, then boots
# one guest on that kernel (vm.sh with KERNEL=, KVER=, COLL_MODDIR=) and runs
# itself there with --guest:
#   pass 1: selftests/guest-run.sh (insmod, coll_abi, coll_correct with small
#           sizes, coll_kill, rmmod) with the default module parameters;
#   pass 2: coll_correct again with tiny chunks (ring_chunk_bytes,
#           exec_chunk_bytes, solo_bytes=0), so that small sizes still take
#           the pipelined and multi-threaded paths;
#   then a kmemleak scan (everything new since boot is printed; leaks naming
#   the module fail) and a dmesg check: every KASAN/lockdep/BUG/WARNING/UBSAN/
#   DEBUG_OBJECTS/list-corruption report fails the run and is printed.
# Exit status: 0 clean; 1 a test or the check failed; vm.sh's 99/124/125
# when the rig itself saw a splat, a timeout or no result.
#
# Env (host): COLL_CORRECT_MAXBYTES (default 65536; empty = 1 MiB as in CI),
# COLL_CORRECT_BIG (default 0: no 64 MiB part), COLL_DEBUG_TESTS
# (pass 1 programs, default "coll_abi coll_harden coll_fail_nth
# coll_regcache coll_group coll_uring coll_correct coll_kill"),
# COLL_DEBUG_PASS2=0 skips pass 2, COLL_DEBUG_PASS2_ARGS, SMP (2), MEM (2G).
# Then selftests/hosts.sh under the same kernel and module (2 guests x 2
# ranks over RDMA with 2 queue pairs per peer and TCP, 3 guests x 1 over RDMA
# with busy polling, small sizes), every guest's
# dmesg checked against the same reports: COLL_DEBUG_HOSTS=0 skips it,
# COLL_DEBUG_HOSTS_CONFIGS, COLL_DEBUG_HOSTS_SIZES, COLL_DEBUG_HOSTS_TIMEOUT.
set -uo pipefail

# Benign, though it matches: under coll_fail_nth's injected slab failures
# kmemleak's own scan-area allocation may fail (vmap()'s alloc_vmap_area()
# asks for one), and kmemleak then scans the whole object (pr_warn_once).
# Its failing to allocate an object is not benign (it disables itself).
SPLAT_BENIGN='kmemleak: Cannot allocate a scan area, scanning the full object'
SPLAT_PAT='BUG:|WARNING:|Oops|Call Trace|general protection|KASAN|UBSAN|kernel BUG|refcount_t:|list_(add|del) corruption|possible circular locking|possible recursive locking|inconsistent lock state|lock held when returning|suspicious RCU usage|sleeping function called|scheduling while atomic|ODEBUG|blocked for more than|soft lockup|hard LOCKUP|RCU stall|Unable to handle|kmemleak: .*(not|failed)'

# ---------------------------------------------------------------- in the guest
guest() {
	local root=${COLL_ROOT:?} ko=${COLL_KO:?} bin=${COLL_SELFTESTS:?} rc=0 t0 n
	local out=${COLL_RUN_DIR:-/tmp}
	local kml=/sys/kernel/debug/kmemleak
	cd "$root" || exit 1
	# guest-run.sh's latch looks for QEMU in DMI, which this kernel lacks
	# (no CONFIG_DMI): insist only when this is the debug kernel in a rig guest.
	case $(uname -r) in
	*-colldebug) ;;
	*) echo "Bail out! not the debug kernel ($(uname -r))"; exit 1 ;;
	esac
	grep -q 'coll\.run=' /proc/cmdline || { echo "Bail out! not a rig guest"; exit 1; }
	export COLL_GUEST_OK=1
	echo "# kernel $(uname -r); module $ko"
	t0=$(date +%s)
	if [ -w $kml ]; then
		# Reported boot-time objects are not reported again.
		echo scan >$kml; echo clear >$kml
	else
		echo "# warning: no $kml (kmemleak off?)"
	fi
	echo "# ===== pass 1: ${COLL_DEBUG_TESTS} (module defaults)"
	COLL_TESTS=$COLL_DEBUG_TESTS COLL_KO=$ko COLL_SELFTESTS=$bin \
		COLL_KMSG_LINES=400 sh "$root/selftests/guest-run.sh" || rc=1
	echo "# pass 1: $(($(date +%s) - t0)) s"
	if [ "${COLL_DEBUG_PASS2:-1}" != 0 ]; then
		echo "# ===== pass 2: coll_correct with insmod $COLL_DEBUG_PASS2_ARGS"
		COLL_TESTS=coll_correct COLL_KO=$ko COLL_SELFTESTS=$bin \
			COLL_INSMOD_ARGS=$COLL_DEBUG_PASS2_ARGS \
			COLL_KMSG_LINES=400 sh "$root/selftests/guest-run.sh" || rc=1
		echo "# passes 1+2: $(($(date +%s) - t0)) s"
	fi
	if [ -d /sys/module/collective ]; then
		echo "# collective still loaded; rmmod"
		rmmod collective || rc=1
	fi
	if [ -w $kml ]; then
		# Objects must be older than 5 s to be reported.
		sleep 6
		echo scan >$kml; sleep 1; echo scan >$kml
		cat $kml >"$out/kmemleak.txt"
		n=$(grep -c '^unreferenced object' "$out/kmemleak.txt")
		echo "# kmemleak: $n unreferenced objects since the start (full list: $out/kmemleak.txt)"
		if [ "$n" -gt 0 ]; then
			head -n 300 "$out/kmemleak.txt" | sed 's/^/# kmemleak| /'
			if grep -qE '\[collective\]|coll_' "$out/kmemleak.txt"; then
				echo "not ok - kmemleak: leaks from collective"
				rc=1
			else
				echo "# (none names collective)"
			fi
		fi
	fi
	dmesg >"$out/dmesg-full.txt"
	if grep -vF "$SPLAT_BENIGN" "$out/dmesg-full.txt" | grep -qE "$SPLAT_PAT"; then
		echo "not ok - kernel log has splats; each one (first 60 lines):"
		awk -v pat="$SPLAT_PAT" -v ok="$SPLAT_BENIGN" '
			{ line[NR] = $0 }
			END {
				last = 0
				for (i = 1; i <= NR; i++) {
					if (line[i] !~ pat || index(line[i], ok) ||
					    i <= last) continue
					s = i - 2; if (s < 1) s = 1
					print "# ----- splat at dmesg line " i
					for (j = s; j <= NR && j < s + 60; j++) print "# splat| " line[j]
					last = s + 59
				}
			}' "$out/dmesg-full.txt"
		rc=1
	else
		echo "ok - kernel log: no KASAN/lockdep/BUG/WARNING/UBSAN/ODEBUG reports"
	fi
	echo "# guest total: $(($(date +%s) - t0)) s, rc=$rc"
	# The rig's own dmesg check would say the same again (rc 99): our rc is the verdict.
	exit $rc
}

if [ "${1:-}" = --guest ]; then
	guest
fi

# ---------------------------------------------------------------- on the host
RIG_PROG=check-debug.sh
# shellcheck source=host-lib.sh
. "$(dirname "$0")/host-lib.sh"

build=1 timeout=5400 verbose=()
while [ $# -gt 0 ]; do
	case $1 in
	--no-build) build=0; shift ;;
	--timeout) timeout=$2; shift 2 ;;
	-v) verbose=(-v); shift ;;
	*) rig_bad "usage: $0 [--no-build] [--timeout SECS] [-v]" ;;
	esac
done

root=$(rig_root)
cbuild=$(rig_build)
vars=$(mktemp)
trap 'rm -f "$vars"' EXIT
if [ "$build" = 1 ]; then
	"$RIG_DIR/debug-kernel.sh" all >"$vars" || rig_die "debug-kernel.sh failed"
	nice -n "${NICE:-10}" make -s -C "$root/selftests" OUTPUT="$cbuild/debug-selftests" all ||
		rig_die "building the selftests failed"
else
	"$RIG_DIR/debug-kernel.sh" --print >"$vars" 2>/dev/null ||
		rig_die "no debug kernel built yet (run without --no-build)"
fi
# shellcheck disable=SC1090
. "$vars"
for v in KERNEL KVER MODDIR MODULE; do
	[ -n "${!v:-}" ] || rig_die "debug-kernel.sh did not print $v"
done
[ -f "$MODULE" ] || rig_die "$MODULE missing"
rig_msg "kernel $KERNEL ($KVER), module $MODULE"

t0=$SECONDS
# One guest at a time on this machine (COLL_GUEST_LOCK, as run-all.sh).
exec 8>"${COLL_GUEST_LOCK:-/tmp/coll-guest.lock}"
flock 8
KERNEL=$KERNEL KVER=$KVER COLL_MODDIR=$MODDIR "$RIG_DIR/vm.sh" "${verbose[@]}" \
	--name check-debug --smp "${SMP:-2}" --mem "${MEM:-2G}" --timeout "$timeout" \
	--env COLL_KO="$MODULE" --env COLL_SELFTESTS="$cbuild/debug-selftests" \
	--env COLL_DEBUG_TESTS="${COLL_DEBUG_TESTS:-coll_abi coll_harden coll_fail_nth coll_regcache coll_group coll_uring coll_map coll_correct coll_kill}" \
	--env COLL_HARDEN_QUICK="${COLL_HARDEN_QUICK:-1}" \
	--env COLL_CORRECT_BIG="${COLL_CORRECT_BIG:-0}" --env COLL_CORRECT_MAXBYTES="${COLL_CORRECT_MAXBYTES-65536}" \
	--env COLL_DEBUG_PASS2="${COLL_DEBUG_PASS2:-1}" \
	--env COLL_DEBUG_PASS2_ARGS="${COLL_DEBUG_PASS2_ARGS:-ring_chunk_bytes=4096 exec_chunk_bytes=2048 solo_bytes=0}" \
	--env COLL_TIMEOUT="${COLL_TIMEOUT:-2400}" \
	-- bash "$RIG_DIR/check-debug.sh" --guest
rc=$?
exec 8>&-			# hosts.sh takes the lock for each of its boots
rig_msg "one guest: rc=$rc after $((SECONDS - t0)) s"

# Across hosts under the same kernel: ranks on 2 and 3 guests over RDMA and
# TCP (the links, grants, aborts and teardown under KASAN and lockdep).
if [ "${COLL_DEBUG_HOSTS:-1}" = 1 ]; then
	t1=$SECONDS
	# shellcheck disable=SC2086 # the configurations split on purpose
	KERNEL=$KERNEL KVER=$KVER COLL_MODDIR=$MODDIR HOSTS_KO=$MODULE \
		HOSTS_SIZES=${COLL_DEBUG_HOSTS_SIZES:-0,1,1001,65537} \
		HOSTS_SPLATS="$SPLAT_PAT" HOSTS_TIMEOUT=${COLL_DEBUG_HOSTS_TIMEOUT:-1800} \
		"$root/selftests/hosts.sh" ${COLL_DEBUG_HOSTS_CONFIGS:-2x2:rdma,tcp@rdma_qps=2 3x1:rdma@busy_poll_us=50} ||
		rc=1
	rig_msg "across hosts: done after $((SECONDS - t1)) s"
fi
rig_msg "rc=$rc after $((SECONDS - t0)) s"
exit $rc
