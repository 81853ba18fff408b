#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs INSIDE a qemu guest, as root (selftests/rig/vm.sh): loads
# kmod/collective.ko, runs the torch backend's tests (torch_test.py) with 2
# ranks (then DDP) and 4, removes the module and checks the kernel log.
# TAP on stdout, numbered here (the Python prints "ok 0 ...").  Needs
# python3-torch on the host (the guest sees the host's /usr) and
# userlib/torch built.
#
# Environment: COLL_ROOT (default .), COLL_KO, COLL_TORCH_NP (default "2 4"),
# COLL_TORCH_DDP (default 1: the 2-rank run trains DDP after the operations).
set -u

if [ "${COLL_GUEST_OK:-0}" != 1 ] &&
   ! grep -qi qemu /sys/class/dmi/id/sys_vendor 2>/dev/null; then
	echo "Bail out! not a qemu guest (set COLL_GUEST_OK=1 to insist)"
	exit 1
fi
ROOT=${COLL_ROOT:-$(pwd)}
cd "$ROOT" || { echo "Bail out! cannot cd to $ROOT"; exit 1; }
KO=${COLL_KO:-$ROOT/kmod/collective.ko}
PY=/usr/bin/python3
T=$ROOT/selftests/torch/torch_test.py
MARK="collective-torch: start $$"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
start=$(date +%s)
echo "TAP version 13"
echo "$MARK" > /dev/kmsg 2>/dev/null

# Every "ok"/"not ok" line gets the next number; everything else passes.
n=0 failed=0
tap() {
	while IFS= read -r line; do
		case $line in
		"ok "*|"not ok "*)
			n=$((n + 1))
			case $line in "not ok "*) failed=$((failed + 1)) ;; esac
			# "ok 0 name" -> "ok N name"
			echo "$line" | sed -E "s/^(not ok|ok) [0-9]+/\\1 $n/" ;;
		*) echo "$line" ;;
		esac
	done
	echo "$n $failed" > "$TMP/count"
}
result() {	# result rc name
	if [ "$1" -eq 0 ]; then echo "ok 0 $2"; else echo "not ok 0 $2"; fi
}

{
	ls userlib/torch/torch_collective/_C*.so > /dev/null 2>&1 ||
		echo "# userlib/torch not built (make torch)"
	rmmod collective 2>/dev/null
	rc=0
	for d in $(modinfo -F depends "$KO" 2>/dev/null | tr , ' '); do
		modprobe "$d" >> "$TMP/insmod" 2>&1 || rc=1
	done
	insmod "$KO" >> "$TMP/insmod" 2>&1 || rc=1
	i=0
	while [ ! -c /dev/collective ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	[ -c /dev/collective ] || rc=1
	sed 's/^/# /' "$TMP/insmod"
	result $rc "insmod collective"
	# Each world size under torch_test.py's own launcher (torchrun's
	# env:// variables, without its agent: that one imports torch too,
	# which made 4 ranks under torchrun take 123 s against 73; torchrun
	# itself is run by hosts-torch.sh).  The 2 ranks run the operations
	# and then DDP in the same processes (the launcher imports torch once
	# and forks the ranks).
	for np in ${COLL_TORCH_NP:-2 4}; do
		s=$(date +%s)
		mode=ops
		[ "$np" = 2 ] && [ "${COLL_TORCH_DDP:-1}" = 1 ] && mode=ops+ddp
		$PY "$T" launch "$np" $mode 900
		rc=$?
		echo "# $mode np=$np: $(($(date +%s) - s)) s"
		result "$rc" "torch_test.py $mode np=$np: ranks exited as expected"
	done
	i=0
	while ! rmmod collective 2> "$TMP/rmmod"; do
		i=$((i + 1)); [ $i -ge 5 ] && break; sleep 1
	done
	[ -d /sys/module/collective ] && rc=1 || rc=0
	sed 's/^/# /' "$TMP/rmmod"
	result "$rc" "rmmod collective"
	dmesg | sed -n "\\|$MARK|,\$p" > "$TMP/dmesg"
	if grep -qE 'BUG:|WARNING:|Oops|Call Trace|general protection|refcount_t:|soft lockup|blocked for more than' "$TMP/dmesg"; then
		head -n 100 "$TMP/dmesg" | sed 's/^/# /'
		echo "not ok 0 kernel log: no BUG/WARNING/Oops/Call Trace"
	else
		echo "ok 0 kernel log: no BUG/WARNING/Oops/Call Trace"
	fi
} 2>&1 | tap
read -r n failed < "$TMP/count"
echo "1..$n"
echo "# torch suite: $n tests, $failed failed, $(($(date +%s) - start)) s in the guest"
[ "$failed" -eq 0 ]
