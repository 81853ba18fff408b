#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs INSIDE a qemu guest, as root: loads kmod/collective.ko, runs the
# selftests, removes the module and checks the kernel log.  Never run it on
# a machine whose kernel you care about.
#
# Output: TAP on stdout, one line per step (insmod, each test program with
# its own TAP indented as "# " diagnostics, the way the kselftest runner
# does it, rmmod, kernel log, kmemleak when the kernel has it).  Exit
# status 0 only if every step passed (a skipped program counts as passed).
#
# Environment:
#   COLL_ROOT          project root (default: the current directory)
#   COLL_SELFTESTS     directory of the test programs
#                      (default: ${COLL_BUILD:-$COLL_ROOT/build}/selftests)
#   COLL_TESTS         programs to run (default: coll_abi coll_harden coll_correct
#                      coll_kill coll_regcache coll_group coll_uring coll_map)
#   COLL_INSMOD_ARGS   module parameters for insmod
#   COLL_KO            module file (default: $COLL_ROOT/kmod/collective.ko)
#   COLL_TIMEOUT       seconds per program (default per program below)
#   COLL_KMSG_LINES    kernel log lines to echo at the end (default 200)
#   COLL_SEED          passed through to coll_correct (repeats its inputs)
#   COLL_CORRECT_ONLY  passed through: coll_correct runs only that test
#   COLL_DEVICE        device node (default /dev/collective), also read by
#                      the test programs

set -u

# Safety latch: this script loads a kernel module.  Only in a qemu guest
# (DMI says QEMU) unless COLL_GUEST_OK=1 says otherwise.
if [ "${COLL_GUEST_OK:-0}" != 1 ] &&
   ! grep -qi qemu /sys/class/dmi/id/sys_vendor 2>/dev/null; then
	echo "Bail out! not a qemu guest (set COLL_GUEST_OK=1 to insist)"
	exit 1
fi

ROOT=${COLL_ROOT:-$(pwd)}
cd "$ROOT" || { echo "Bail out! cannot cd to $ROOT"; exit 1; }
BIN=${COLL_SELFTESTS:-${COLL_BUILD:-$ROOT/build}/selftests}
TESTS=${COLL_TESTS:-coll_abi coll_harden coll_correct coll_kill coll_regcache coll_group coll_uring coll_map}
KO=${COLL_KO:-$ROOT/kmod/collective.ko}
MOD=collective
DEV=${COLL_DEVICE:-/dev/collective}
MARK="collective-selftests: start $$ $(date +%s 2>/dev/null)"
TMP=$(mktemp -d 2>/dev/null || echo "${TMPDIR:-/tmp}/coll-selftests.$$")
mkdir -p "$TMP" 2>/dev/null
trap 'rm -rf "$TMP"' EXIT

n=0
failed=0

ok() {		# ok "description" [directive]
	n=$((n + 1))
	echo "ok $n $1${2:+ # $2}"
}

not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n $1${2:+ # $2}"
}

diag() {	# prefix every line of stdin with "# "
	while IFS= read -r line; do
		printf '# %s\n' "$line"
	done
}

default_timeout() {
	case $1 in
	coll_correct) echo 1500 ;;
	coll_kill) echo 600 ;;
	coll_regcache) echo 600 ;;
	coll_harden) echo 1200 ;;
	*) echo 300 ;;
	esac
}

# Processes still running one of our programs (after a timeout): the
# harness kills a test's process group only on its own timeouts.
kill_strays() {
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		case $exe in
		"$BIN"/coll_*) kill -9 "${p#/proc/}" 2>/dev/null ;;
		esac
	done
}

kmemleak=/sys/kernel/debug/kmemleak
if [ ! -e $kmemleak ] && [ -d /sys/kernel/debug ]; then
	mount -t debugfs none /sys/kernel/debug 2>/dev/null
fi
[ -w $kmemleak ] && have_kmemleak=1 || have_kmemleak=0

# shellcheck disable=SC2086 # a list of names
set -- $TESTS
echo "TAP version 13"
echo "1..$(($# + 3 + have_kmemleak))"

echo "$MARK" > /dev/kmsg 2>/dev/null

# ---- load --------------------------------------------------------------
loaded=0
if [ -d /sys/module/$MOD ]; then
	echo "# $MOD already loaded: removing it first"
	rmmod $MOD 2>&1 | diag
fi
# shellcheck disable=SC2086 # COLL_INSMOD_ARGS is split on purpose
if [ -d /sys/module/$MOD ]; then
	not_ok "insmod $MOD" "an older $MOD is loaded and cannot be removed"
elif [ ! -f "$KO" ]; then
	not_ok "insmod $MOD" "$KO missing (build kmod/ first)"
elif ! { for d in $(modinfo -F depends "$KO" 2>/dev/null | tr , ' '); do
		modprobe "$d" || exit 1; done; } > "$TMP/insmod" 2>&1 ||
     ! insmod "$KO" ${COLL_INSMOD_ARGS:-} >> "$TMP/insmod" 2>&1; then
	diag < "$TMP/insmod"
	not_ok "insmod $MOD" "insmod $KO failed"
else
	# devtmpfs makes the node; without it, make one from sysfs.
	i=0
	while [ ! -c $DEV ] && [ $i -lt 50 ]; do
		sleep 0.1 2>/dev/null || sleep 1
		i=$((i + 1))
	done
	if [ ! -c $DEV ] && [ -r /sys/class/misc/$MOD/dev ]; then
		mm=$(cat /sys/class/misc/$MOD/dev)
		mknod $DEV c "${mm%:*}" "${mm#*:}"
	fi
	if [ -c $DEV ]; then
		loaded=1
		ok "insmod $MOD"
	else
		not_ok "insmod $MOD" "loaded, but no $DEV"
	fi
fi

# ---- the programs -------------------------------------------------------
for t in "$@"; do
	prog=$BIN/$t
	echo "# selftests: $MOD: $t"
	if [ $loaded -ne 1 ]; then
		not_ok "selftests: $MOD: $t" "SKIP module not loaded"
		continue
	fi
	if [ ! -x "$prog" ]; then
		not_ok "selftests: $MOD: $t" "$prog missing (make -C selftests)"
		continue
	fi
	secs=${COLL_TIMEOUT:-$(default_timeout "$t")}
	start=$(date +%s)
	if command -v timeout > /dev/null 2>&1; then
		{ timeout -s KILL "$secs" "$prog" 2>&1; echo $? > "$TMP/rc"; } | diag
	else
		{ "$prog" 2>&1; echo $? > "$TMP/rc"; } | diag
	fi
	rc=$(cat "$TMP/rc" 2>/dev/null || echo 255)
	echo "# $t: exit $rc after $(($(date +%s) - start)) s"
	case $rc in
	0) ok "selftests: $MOD: $t" ;;
	4) ok "selftests: $MOD: $t" "SKIP" ;;
	124|137)
		kill_strays
		not_ok "selftests: $MOD: $t" "TIMEOUT $secs seconds" ;;
	*) not_ok "selftests: $MOD: $t" "exit=$rc" ;;
	esac
done

# ---- unload -------------------------------------------------------------
if [ $loaded -eq 1 ]; then
	i=0
	# A request or pinned page still held: the module must let go soon.
	while ! rmmod $MOD > "$TMP/rmmod" 2>&1; do
		i=$((i + 1))
		if [ $i -ge 5 ]; then
			break
		fi
		sleep 1
	done
	if [ -d /sys/module/$MOD ]; then
		diag < "$TMP/rmmod"
		[ -r /sys/module/$MOD/refcnt ] &&
			echo "# refcnt $(cat /sys/module/$MOD/refcnt)"
		not_ok "rmmod $MOD" "module still loaded"
	elif [ $i -gt 0 ]; then
		diag < "$TMP/rmmod"
		not_ok "rmmod $MOD" "needed $((i + 1)) attempts"
	else
		ok "rmmod $MOD"
	fi
else
	not_ok "rmmod $MOD" "SKIP module was not loaded"
fi

# ---- the kernel log -----------------------------------------------------
dmesg > "$TMP/dmesg.all" 2>/dev/null
if grep -qF "$MARK" "$TMP/dmesg.all"; then
	sed -n "\\|$MARK|,\$p" "$TMP/dmesg.all" > "$TMP/dmesg"
else
	cp "$TMP/dmesg.all" "$TMP/dmesg"	# ring buffer wrapped
	echo "# kernel log start marker lost: checking the whole log"
fi
PAT='BUG:|WARNING:|Oops|Call Trace|general protection|KASAN|UBSAN|kernel BUG|refcount_t:|list_(add|del) corruption|possible circular locking|blocked for more than|soft lockup|hard LOCKUP|RCU stall|Unable to handle'
if grep -qE "$PAT" "$TMP/dmesg"; then
	echo "# kernel log since insmod:"
	head -n "${COLL_KMSG_LINES:-200}" "$TMP/dmesg" | diag
	not_ok "kernel log: no BUG/WARNING/Oops/Call Trace"
else
	if grep -q "$MOD" "$TMP/dmesg"; then
		echo "# kernel log lines naming $MOD:"
		grep "$MOD" "$TMP/dmesg" | grep -vF "$MARK" |
			head -n "${COLL_KMSG_LINES:-200}" | diag
	fi
	ok "kernel log: no BUG/WARNING/Oops/Call Trace"
fi

# ---- kmemleak (debug kernels) --------------------------------------------
if [ "$have_kmemleak" -eq 1 ]; then
	echo scan > $kmemleak 2>/dev/null
	sleep 1
	echo scan > $kmemleak 2>/dev/null
	cat $kmemleak > "$TMP/leaks" 2>/dev/null
	if grep -q "\[$MOD\]\|coll_" "$TMP/leaks"; then
		head -n 200 "$TMP/leaks" | diag
		not_ok "kmemleak: nothing from $MOD"
	else
		ok "kmemleak: nothing from $MOD"
	fi
fi

[ $failed -eq 0 ]
