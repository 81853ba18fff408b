#!/bin/bash
# vms.sh: boot N qemu guests joined by a private Ethernet (udp-hub on
# 127.0.0.1), run CMD in each, exit 0 only if every guest's CMD exited 0.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: vms.sh -n N [options] -- CMD [ARGS...]

Boots N >= 2 guests (see vm.sh) on a private L2 network: a udp-hub process
binds 127.0.0.1 ports and switches the frames between the guests' virtio-net
NICs (qemu -netdev socket,udp=...). Guest i has eth0 = 10.77.0.(i+1)/24, no
default route, MTU 9000 and soft-RoCE device rxe0 on eth0; CMD runs in every
guest (bash, cwd = project root) with GUEST_INDEX, GUEST_COUNT, GUEST_IP,
GUEST_IPS, COLL_RDMA_DEV, COLL_ROOT, COLL_HUB_CTL in its environment.
A guest can cut its own or another guest's link at the hub and restore it
(guest-lib.sh: coll_hub cut|restore [I]), and power itself off on purpose
(coll_expect_poweroff first: its rc is then 0).

options:
  -n N             number of guests (2..64, required)
  --smp N          vCPUs per guest (default $SMP or 1)
  --mem SIZE       RAM per guest (default $MEM or 1G)
  --timeout SECS   limit for each guest's boot+run (default $TIMEOUT or 600)
  --name NAME      group name: guests are NAME-g0..; logs build/logs/NAME-DATE-PID-gI.log
                   (default: CMD's name)
  --log-dir DIR    directory for the console logs (default build/logs)
  --mtu N          eth0 MTU (default 9000)
  --no-rxe         do not create rxe0
  --lossless       join the guests by unix datagram sockets (the hub queues a
                   frame while its guest is busy) rather than UDP (drops it)
  --rexec          start the remote-exec daemon in every guest (rexec.py, with a
                   fresh key); CMD gets COLL_REXEC, an ssh stand-in for mpirun
  --grace SECS     once a guest fails, stop the others after SECS (default 30; 0 = never)
  --env NAME=VAL   export NAME=VAL to CMD in every guest (repeatable)
  --setup CODE     as vm.sh --setup, in every guest, after rxe0 is up (repeatable)
  --append ARGS    extra kernel command line
  --no-dmesg-check do not turn kernel BUG/WARNING splats into rc 99
  -v, --verbose    stream all consoles (prefixed gI|) to stderr
  -q, --quiet      do not print the guests' output
  -h, --help       this text
Exit: 0 if all guests exited 0; else the first guest failure rc, preferring
one that is not 124 (timeout) or 130 (stopped after another guest failed).
EOF
	exit "${1:-2}"
}

RIG_PROG=vms.sh
# shellcheck source=host-lib.sh
. "$(dirname "$0")/host-lib.sh"

count='' name='' logdir='' mtu=9000 rxe=1 rexec=0 grace=30 verbose=0 quiet=0 lossless=0
smp=${SMP:-1}
mem=${MEM:-1G}
timeout=${TIMEOUT:-600}
pass=() envs=() setups=()

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
	-n) need_arg "$@"; count=$2; shift 2 ;;
	--smp) need_arg "$@"; smp=$2; shift 2 ;;
	--mem) need_arg "$@"; mem=$2; shift 2 ;;
	--timeout) need_arg "$@"; timeout=$2; shift 2 ;;
	--name) need_arg "$@"; name=$2; shift 2 ;;
	--log-dir) need_arg "$@"; logdir=$2; shift 2 ;;
	--mtu) need_arg "$@"; mtu=$2; shift 2 ;;
	--no-rxe) rxe=0; shift ;;
	--lossless) lossless=1; shift ;;
	--rexec) rexec=1; shift ;;
	--grace) need_arg "$@"; grace=$2; shift 2 ;;
	--env) need_arg "$@"; envs+=(--env "$2"); shift 2 ;;
	--setup) need_arg "$@"; setups+=(--setup "$2"); shift 2 ;;
	--append) need_arg "$@"; pass+=(--append "$2"); shift 2 ;;
	--no-dmesg-check) pass+=(--no-dmesg-check); shift ;;
	-v | --verbose) verbose=1; shift ;;
	-q | --quiet) quiet=1; shift ;;
	-h | --help) usage 0 ;;
	--) shift; break ;;
	*) rig_msg "unknown option: $1"; usage ;;
	esac
done
[ $# -gt 0 ] || { rig_msg "no command given"; usage; }
if ! [[ $count =~ ^[0-9]+$ ]] || [ "$count" -lt 2 ] || [ "$count" -gt 64 ]; then
	rig_bad "-n N is required, 2 <= N <= 64"
fi
[[ $grace =~ ^[0-9]+$ ]] || rig_bad "bad --grace: $grace"
[[ $mtu =~ ^[1-9][0-9]*$ ]] || rig_bad "bad --mtu: $mtu"
[[ $timeout =~ ^[1-9][0-9]*$ ]] || rig_bad "bad --timeout: $timeout"
if [ -z "$name" ]; then
	name=$(basename -- "$1" | tr -c 'A-Za-z0-9._\n-' _)
	name=${name:-vms}
fi
[[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || rig_bad "bad --name: $name"
RIG_PROG="vms.sh[$name]"

# Prepare the shared pieces once, before the guests race for them.
kver=$(rig_kver)
rig_kernel "$kver" >/dev/null
rig_initramfs "$kver" >/dev/null
hub=$(rig_hub)
build=$(rig_build)
stamp=$(date +%Y%m%d-%H%M%S)-$$
group=$build/rig/runs/$name-$stamp
logdir=${logdir:-$build/logs}
mkdir -p "$group" "$logdir"
logdir=$(cd "$logdir" && pwd -P)

ips=()
for ((i = 0; i < count; i++)); do
	ips+=("10.77.0.$((i + 1))")
done

pids=() tails=() hub_pid='' relay_pid='' sockdir=''
cleanup() {
	local p
	for p in "${tails[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ -n "$relay_pid" ]; then kill "$relay_pid" 2>/dev/null || true; fi
	if [ -n "$hub_pid" ]; then kill "$hub_pid" 2>/dev/null || true; fi
	if [ -n "$sockdir" ]; then rm -rf "$sockdir"; fi
}
trap cleanup EXIT
interrupted=0
# shellcheck disable=SC2317 # called through trap
on_signal() {
	local p
	interrupted=1
	rig_msg "interrupted; stopping the guests"
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
}
trap on_signal INT TERM HUP

# The hub exits on its own when this script is gone or after the time limit.
# It takes commands (cut / restore a guest's link) on the pipe hub.ctl.
# --lossless: unix sockets, in a short directory (sun_path has 108 bytes).
hub_mode=()
if [ "$lossless" = 1 ]; then
	sockdir=$(mktemp -d /tmp/coll-vms.XXXXXX)
	hub_mode=(-u "$sockdir")
fi
"$hub" -n "$count" "${hub_mode[@]}" -o "$group/hub.ports" -c "$group/hub.ctl" \
	-t $((timeout + 60)) -p $$ -v 2>"$group/hub.log" &
hub_pid=$!
for ((t = 0; t < 100; t++)); do
	[ -s "$group/hub.ports" ] && break
	kill -0 "$hub_pid" 2>/dev/null || break
	sleep 0.1
done
read -r -a hub_ports <"$group/hub.ports" 2>/dev/null || true
[ "${#hub_ports[@]}" = "$count" ] || rig_die "udp-hub did not start (see $group/hub.log)"

# Guests cannot reach the host's loopback: a guest asks for a hub command
# by writing the line "cut I" or "restore I" to hub.req in its run
# directory (shared over 9p; guest-lib.sh's coll_hub), this relay hands it
# to the hub (within 50 ms), and the hub answers in hub.reply there ("ok
# cut I", or "error: ...") once the command has taken effect.
hub_relay() {
	local i req line
	# read-write: opening a pipe so never blocks, even if the hub is gone
	exec 8<>"$group/hub.ctl"
	while kill -0 "$hub_pid" 2>/dev/null; do
		for ((i = 0; i < count; i++)); do
			req=$group/$name-g$i/hub.req
			[ -f "$req" ] || continue
			# a line and its newline (else not all written yet)
			IFS= read -r -n 64 line <"$req" || continue
			rm -f "$req"
			if [[ $line =~ ^(cut|restore)\ [0-9]+$ ]]; then
				echo "$line $group/$name-g$i/hub.reply" >&8
			else
				echo "error: bad request" >"$group/$name-g$i/hub.reply"
			fi
		done
		sleep 0.05
	done
}

setup_rxe=()
if [ "$rxe" = 1 ]; then
	setup_rxe=(--setup 'coll_rxe_up eth0 rxe0 >/dev/null' --env COLL_RDMA_DEV=rxe0)
fi

setup_rexec=()
if [ "$rexec" = 1 ]; then
	setup_rexec=(--env "COLL_REXEC=$RIG_DIR/rexec.py"
		--env "COLL_REXEC_KEY=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
		--setup coll_rexec_up)
fi

t0=$(date +%s)
declare -A index_of=()
logs=()
for ((i = 0; i < count; i++)); do
	logs[i]=$logdir/$name-$stamp-g$i.log
	: >"${logs[i]}"
	netdev="socket,id=n0,udp=127.0.0.1:${hub_ports[i]},localaddr=127.0.0.1:0"
	if [ "$lossless" = 1 ]; then
		netdev="dgram,id=n0,local.type=unix,local.path=$sockdir/g$i.sock"
		netdev+=",remote.type=unix,remote.path=${hub_ports[i]}"
	fi
	# shellcheck disable=SC2054 # commas belong to qemu's option syntax
	"$RIG_DIR/vm.sh" --name "$name-g$i" --smp "$smp" --mem "$mem" --timeout "$timeout" \
		--log "${logs[i]}" --run-dir "$group/$name-g$i" --net none \
		--qemu -netdev --qemu "$netdev" \
		--qemu -device --qemu "virtio-net-pci,netdev=n0,mac=$(printf '52:54:00:77:00:%02x' $((i + 1)))" \
		--ip "${ips[i]}/24" --mtu "$mtu" \
		--env "GUEST_INDEX=$i" --env "GUEST_COUNT=$count" --env "GUEST_IP=${ips[i]}" \
		--env "GUEST_IPS=${ips[*]}" --env COLL_HUB_CTL=1 \
		"${envs[@]}" "${setup_rxe[@]}" "${setup_rexec[@]}" "${setups[@]}" "${pass[@]}" \
		-q -- "$@" </dev/null >/dev/null 2>"$group/g$i.err" &
	pids[i]=$!
	index_of[$!]=$i
	if [ "$verbose" = 1 ]; then
		tail -n +1 -F "${logs[i]}" 2>/dev/null | sed -u "s/^/g$i| /" >&2 &
		tails+=($!)
	fi
done

hub_relay &
relay_pid=$!

rcs=()
live=("${pids[@]}")
killer=''
while [ ${#live[@]} -gt 0 ]; do
	done_pid='' st=0
	wait -n -p done_pid "${live[@]}" || st=$?
	[ -n "${done_pid:-}" ] || continue # a trapped signal interrupted wait (and unset done_pid)
	i=${index_of[$done_pid]}
	rcs[i]=$st
	next=()
	for p in "${live[@]}"; do [ "$p" = "$done_pid" ] || next+=("$p"); done
	live=("${next[@]}")
	if [ "$st" != 0 ] && [ "$grace" != 0 ] && [ -z "$killer" ] && [ ${#live[@]} -gt 0 ] &&
		[ "$interrupted" = 0 ]; then
		rig_msg "guest $i failed (rc $st); stopping the others in ${grace}s"
		(sleep "$grace" && kill -TERM "${live[@]}" 2>/dev/null) &
		killer=$!
	fi
done
[ -n "$killer" ] && { kill "$killer" 2>/dev/null || true; }
trap - INT TERM HUP
wall=$(($(date +%s) - t0))
cleanup
wait "$hub_pid" 2>/dev/null || true
hub_pid=''

result=0 fallback=0
for ((i = 0; i < count; i++)); do
	rc=${rcs[i]}
	if [ "$quiet" = 0 ]; then
		echo "===== guest $i (${ips[i]}) rc=$rc ====="
		cat "$group/$name-g$i/output.txt" 2>/dev/null || true
	fi
	if [ "$rc" != 0 ]; then
		sed "s/^/g$i| /" "$group/g$i.err" >&2
		case $rc in
		124 | 130) [ "$fallback" != 0 ] || fallback=$rc ;;
		*) [ "$result" != 0 ] || result=$rc ;;
		esac
	fi
done
[ "$result" != 0 ] || result=$fallback
[ "$interrupted" = 0 ] || result=130
for ((i = 0; i < count; i++)); do
	rig_msg "guest $i (${ips[i]}): rc=${rcs[i]} log=${logs[i]}"
done
if [ "$result" = 0 ]; then
	rig_msg "PASS: all $count guests exited 0 (wall ${wall}s; runs in $group)"
else
	rig_msg "FAIL: rc=$result (wall ${wall}s; runs in $group)"
fi
exit "$result"
