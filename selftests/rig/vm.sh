#!/bin/bash
# vm.sh: boot one qemu guest (TCG) on the 6.1 kernel, run CMD in it, exit with CMD's rc.
#
# The guest runs the host's own /usr and /etc (read-only, over virtio-9p) and
# sees the project root read-write at the same absolute path, so binaries built
# on the host run unchanged. See README.md.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: vm.sh [options] -- CMD [ARGS...]

Boots one guest, runs CMD (with bash, cwd = project root, stdin /dev/null)
and exits with its rc: 124 = timeout (hang), 125 = no result (panic, oops,
rig failure), 99 = CMD finished but dmesg has a kernel BUG/WARNING/Oops.

options:
  --smp N          vCPUs (default $SMP or 2)
  --mem SIZE       guest RAM (default $MEM or 2G)
  --timeout SECS   wall-clock limit for the whole boot+run (default $TIMEOUT or 600)
  --log FILE       console log (default build/logs/NAME-DATE-PID.log)
  --name NAME      guest name: host name, log and run-dir prefix (default: CMD's name)
  --net user|none  user: -nic user,model=virtio-net-pci,restrict=on, eth0 = 10.0.2.15/24
                   (no route out); none: no NIC unless given with --qemu (default user)
  --ip ADDR/LEN    IPv4 address for eth0
  --mtu N          MTU for eth0
  --env NAME=VAL   export NAME=VAL to CMD (repeatable)
  --setup CODE     bash code run before CMD, with guest-lib.sh sourced; a failure
                   ends the run with rc 97 (repeatable), e.g. --setup coll_rxe_up
  --cwd DIR        working directory for CMD (default: project root)
  --append ARGS    extra kernel command line
  --qemu ARG       one extra qemu argument (repeatable)
  --no-dmesg-check do not turn kernel BUG/WARNING splats into rc 99
  -v, --verbose    stream the console to stderr while the guest runs
  -q, --quiet      do not copy CMD's output to stdout
  -h, --help       this text
env: KVER KERNEL COLL_ROOT COLL_BUILD SMP MEM TIMEOUT (see README.md)
EOF
	exit "${1:-2}"
}

RIG_PROG=vm.sh
# shellcheck source=host-lib.sh
. "$(dirname "$0")/host-lib.sh"

smp=${SMP:-2}
mem=${MEM:-2G}
timeout=${TIMEOUT:-600}
log='' name='' net=user ip='' mtu='' cwd='' append='' rundir=''
verbose=0 quiet=0 dmesg_check=1
envs=() setups=() qemu_extra=()

need_arg() { [ $# -ge 2 ] || { rig_msg "option $1 needs an argument"; usage; }; }
while [ $# -gt 0 ]; do
	case $1 in
	--*=*)
		opt=${1%%=*} val=${1#*=}
		shift
		set -- "$opt" "$val" "$@"
		continue
		;;
	esac
	case $1 in
	--smp) need_arg "$@"; smp=$2; shift 2 ;;
	--mem) need_arg "$@"; mem=$2; shift 2 ;;
	--timeout) need_arg "$@"; timeout=$2; shift 2 ;;
	--log) need_arg "$@"; log=$2; shift 2 ;;
	--name) need_arg "$@"; name=$2; shift 2 ;;
	--net) need_arg "$@"; net=$2; shift 2 ;;
	--ip) need_arg "$@"; ip=$2; shift 2 ;;
	--mtu) need_arg "$@"; mtu=$2; shift 2 ;;
	--env) need_arg "$@"; envs+=("$2"); shift 2 ;;
	--setup) need_arg "$@"; setups+=("$2"); shift 2 ;;
	--cwd) need_arg "$@"; cwd=$2; shift 2 ;;
	--append) need_arg "$@"; append="$append $2"; shift 2 ;;
	--qemu) need_arg "$@"; qemu_extra+=("$2"); shift 2 ;;
	--run-dir) need_arg "$@"; rundir=$2; shift 2 ;; # internal (vms.sh)
	--no-dmesg-check) dmesg_check=0; shift ;;
	-v | --verbose) verbose=1; shift ;;
	-q | --quiet) quiet=1; shift ;;
	-h | --help) usage 0 ;;
	--) shift; break ;;
	*) rig_msg "unknown option: $1"; usage ;;
	esac
done
[ $# -gt 0 ] || { rig_msg "no command given"; usage; }

[[ $smp =~ ^[1-9][0-9]*$ ]] || rig_bad "bad --smp: $smp"
[[ $mem =~ ^[1-9][0-9]*[KMGT]?$ ]] || rig_bad "bad --mem: $mem"
[[ $timeout =~ ^[1-9][0-9]*$ ]] || rig_bad "bad --timeout: $timeout"
[ -z "$mtu" ] || [[ $mtu =~ ^[1-9][0-9]*$ ]] || rig_bad "bad --mtu: $mtu"
[ -z "$ip" ] || [[ $ip =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$ ]] || rig_bad "bad --ip (want A.B.C.D/LEN): $ip"
if [ -z "$name" ]; then
	name=$(basename -- "$1" | tr -c 'A-Za-z0-9._\n-' _)
	name=${name:-vm}
fi
[[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || rig_bad "bad --name (letters, digits, . _ -): $name"
RIG_PROG="vm.sh[$name]"
case $net in
user) [ -n "$ip" ] || ip=10.0.2.15/24 ;;
none) ;;
*) rig_bad "bad --net: $net" ;;
esac
for e in "${envs[@]}"; do
	[[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || rig_bad "bad --env (want NAME=VALUE): $e"
done
case $append in *coll.*) rig_bad "--append must not set coll.* parameters" ;; esac

kver=$(rig_kver)
kernel=$(rig_kernel "$kver")
command -v qemu-system-x86_64 >/dev/null || rig_die "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
root=$(rig_root)
build=$(rig_build)
cwd=${cwd:-$root}
rig_check_path "$root" "project root"
rig_check_path "$cwd" "--cwd"
initrd=$(rig_initramfs "$kver")

stamp=$(date +%Y%m%d-%H%M%S)-$$
if [ -z "$rundir" ]; then
	mkdir -p "$build/rig/runs"
	# Old run directories (cmd.sh, rc, dmesg.txt, output.txt) are pruned after 2 days.
	find "$build/rig/runs" -mindepth 1 -maxdepth 1 -type d -mtime +2 -exec rm -rf {} + 2>/dev/null || true
	rundir=$build/rig/runs/$name-$stamp
fi
mkdir -p "$rundir"
rundir=$(cd "$rundir" && pwd -P)
rig_check_path "$rundir" "run directory"
rm -f "$rundir/rc" "$rundir/dmesg.txt" "$rundir/output.txt" "$rundir/poweroff"
if [ -z "$log" ]; then
	mkdir -p "$build/logs"
	log=$build/logs/$name-$stamp.log
fi
mkdir -p "$(dirname "$log")"
log=$(cd "$(dirname "$log")" && pwd -P)/$(basename "$log")
id=$(basename "$rundir")

# The command reaches the guest as a generated script in the run directory
# (shared over 9p), not through the kernel command line.
cp "$RIG_DIR/guest-lib.sh" "$rundir/guest-lib.sh"
{
	echo "# generated by vm.sh for guest $name; run by the guest's init with bash"
	printf 'export COLL_ROOT=%q COLL_RUN_DIR=%q COLL_GUEST_NAME=%q\n' "$root" "$rundir" "$name"
	printf 'export COLL_GUEST_LIB=%q\n' "$rundir/guest-lib.sh"
	for e in "${envs[@]}"; do
		printf 'export %s=%q\n' "${e%%=*}" "${e#*=}"
	done
	printf 'cd %q || exit 125\n' "$cwd"
	if [ ${#setups[@]} -gt 0 ]; then
		# shellcheck disable=SC2016 # expanded in the guest
		echo '. "$COLL_GUEST_LIB" || exit 97'
		for s in "${setups[@]}"; do
			printf '{ %s\n} || { echo %q >&2; exit 97; }\n' "$s" "vm.sh: guest setup failed: $s"
		done
	fi
	printf 'exec'
	printf ' %q' "$@"
	printf '\n'
} >"$rundir/cmd.sh"

# tsc=reliable: TCG's TSC is one host clock for all vCPUs, but the kernel's
# synchronization check fails under TCG and falls back to the HPET, which
# makes every clock_gettime() an emulated MMIO read (~3.4 us instead of ~0.2 us).
# tsc_early_khz: that clock runs at the host's TSC rate; left to itself the
# guest calibrates it against the emulated PIT, which a busy host (another
# guest booting) fools: seen at 852 MHz for 2596, the guest's clock, timers
# and timeouts then running three times too fast.
# softlockup_panic: a CPU stuck in the kernel is a splat (rc 99) anyway; as
# a panic the guest stops at once, and panic's console_verbose() prints the
# stuck CPU's stack, which loglevel=4 would hide (once a netlink boot sat
# 10 minutes in a soft lockup with no stack to show for it).
cmdline="console=ttyS0 loglevel=4 panic=-1 oops=panic softlockup_panic=1 tsc=reliable"
tsc_khz=$(rig_tsc_khz)
[ -n "$tsc_khz" ] && cmdline+=" tsc_early_khz=$tsc_khz"
cmdline+=" coll.root=$root coll.run=$rundir coll.name=$name"
[ -n "$ip" ] && cmdline+=" coll.ip=$ip"
[ -n "$mtu" ] && cmdline+=" coll.mtu=$mtu"
[ "$dmesg_check" = 0 ] && cmdline+=" coll.dmesg=0"
cmdline+=$append

# shellcheck disable=SC2054 # commas belong to qemu's option syntax
qemu=(qemu-system-x86_64 -accel tcg,thread=multi -M q35 -cpu max,-erms,-fsrm
	-smp "$smp" -m "$mem" -nodefaults -display none -no-reboot -monitor none
	-serial stdio -kernel "$kernel" -initrd "$initrd" -append "$cmdline"
	-device isa-debug-exit,iobase=0xf4,iosize=0x04
	-virtfs local,path=/usr,mount_tag=usr,security_model=none,readonly=on,multidevs=remap
	-virtfs local,path=/etc,mount_tag=etc,security_model=none,readonly=on,multidevs=remap
	-virtfs "local,path=$root,mount_tag=root,security_model=none,multidevs=remap"
	-virtfs "local,path=$rundir,mount_tag=run,security_model=none,multidevs=remap")
# shellcheck disable=SC2054
[ "$net" = user ] && qemu+=(-nic user,model=virtio-net-pci,restrict=on)
qemu+=("${qemu_extra[@]}")

: >"$log"
tail_pid=
if [ "$verbose" = 1 ]; then
	tail -n +1 -f "$log" >&2 &
	tail_pid=$!
fi
t0=$(date +%s%N)
timeout -k 10 "$timeout" "${qemu[@]}" </dev/null >"$log" 2>&1 &
qpid=$!
interrupted=0
# shellcheck disable=SC2317 # called through trap
on_signal() {
	interrupted=1
	kill -TERM "$qpid" 2>/dev/null || true
}
trap on_signal INT TERM HUP
while :; do
	qrc=0
	wait "$qpid" || qrc=$?
	# A trapped signal interrupts wait; wait again for qemu itself.
	kill -0 "$qpid" 2>/dev/null || break
done
trap - INT TERM HUP
wall=$((($(date +%s%N) - t0) / 1000000))
if [ -n "$tail_pid" ]; then
	sleep 0.2
	kill "$tail_pid" 2>/dev/null || true
	wait "$tail_pid" 2>/dev/null || true
fi

console() { tr -d '\r' <"$log"; }
# CMD's output: the console between the markers printed by the guest's init.
console | awk -v b="@@COLL-RIG BEGIN $id@@" -v e="@@COLL-RIG END $id " '
	!on && index($0, b) { on = 1; next }
	on && (i = index($0, e)) { if (i > 1) print substr($0, 1, i - 1); exit }
	on && !/^qemu-system-x86_64: / { print }' >"$rundir/output.txt"
[ "$quiet" = 1 ] || cat "$rundir/output.txt"

end_line=$(console | grep -m1 -o "@@COLL-RIG END $id rc=[0-9]*" || true)
marker_rc=${end_line##*rc=}
boot=$(console | sed -n 's/^coll-rig: guest .* up after \([0-9.]*\) s.*/\1/p' | head -n 1)
splats=$(console | grep -E '^\[ *[0-9]+\.[0-9]+\] .*(Kernel panic|BUG:|Oops|Call Trace|general protection fault|WARNING:|UBSAN:|KASAN:)' | head -n 5 || true)

rc=125
if [ "$interrupted" = 1 ]; then
	rig_msg "interrupted; qemu stopped"
	rc=130
elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	rig_msg "TIMEOUT: no result after ${timeout}s (guest hung or too slow); stopped qemu"
	rc=124
elif [ "$qrc" = 0 ] && [ -s "$rundir/poweroff" ] && [ -z "$end_line" ]; then
	# The guest said it would power off (guest-lib.sh coll_expect_poweroff).
	rig_msg "the guest powered off, as it announced: $(head -n 1 "$rundir/poweroff")"
	rc=0
elif [ "$qrc" = 0 ]; then
	rig_msg "NO RESULT: the guest stopped without reporting (kernel panic, oops, or init failure)"
elif [ $((qrc & 1)) = 1 ] && [ -n "$end_line" ]; then
	rc=$((qrc >> 1))
	# qemu's exit status keeps only 7 bits of the guest's rc; the rc file has all of it.
	if [ -f "$rundir/rc" ]; then
		frc=$(cat "$rundir/rc")
		[[ $frc =~ ^[0-9]+$ ]] && [ $((frc & 127)) = "$rc" ] && rc=$frc
	fi
	if [ "$rc" = 99 ]; then
		rig_msg "FAIL: kernel BUG/WARNING/Oops in the guest's dmesg (command rc=$marker_rc; failing with rc 99)"
	elif [ "$rc" = 97 ]; then
		rig_msg "FAIL: guest setup (--setup) failed (rc 97)"
	elif [ "$rc" != 0 ]; then
		rig_msg "FAIL: command exited with rc $rc"
	fi
	[ "$rc" = 99 ] || [ "$marker_rc" = "$rc" ] ||
		rig_msg "warning: console says rc=$marker_rc, isa-debug-exit says $rc"
else
	rig_msg "NO RESULT: qemu exited with status $qrc before the guest reported (qemu error?)"
fi
if [ -n "$splats" ]; then
	rig_msg "kernel panic/oops/BUG/WARNING on the console:"
	printf '%s\n' "$splats" | sed 's/^/    /' >&2
	[ "$rc" = 0 ] && rc=125
fi

summary="rc=$rc wall=$((wall / 1000)).$(((wall % 1000) / 100))s"
[ -n "$boot" ] && summary+=" boot=${boot}s"
summary+=" log=$log run=$rundir"
if [ "$rc" = 99 ]; then
	{
		echo "----- guest dmesg ($rundir/dmesg.txt) -----"
		console | sed -n '/^coll-rig: kernel BUG\/WARNING in dmesg/,$p' | sed -n '2,81p'
		echo "-----"
	} >&2
elif [ "$rc" != 0 ]; then
	{
		echo "----- last 40 console lines ($log) -----"
		console | tail -n 40
		echo "-----"
	} >&2
fi
rig_msg "$summary"
exit "$rc"
