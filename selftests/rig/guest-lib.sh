# shellcheck shell=bash
# Helpers for commands running inside a rig guest (vm.sh / vms.sh). Source it:
#   . "$COLL_GUEST_LIB"          (a copy in the run directory; always visible)
#   . "$COLL_ROOT/selftests/rig/guest-lib.sh"
# Functions return nonzero on failure and never exit the caller's shell.
#
# Guest environment (set by vm.sh / vms.sh):
#   COLL_ROOT COLL_RUN_DIR COLL_GUEST_NAME COLL_GUEST_LIB, and with vms.sh:
#   GUEST_INDEX GUEST_COUNT GUEST_IP GUEST_IPS

# coll_wait_file FILE SECONDS: until FILE exists; nonzero if it never did.
coll_wait_file() {
	local i=0
	while [ ! -e "$1" ] && [ $i -lt $(($2 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -e "$1" ]
}

# coll_pyj FILE EXPR: print EXPR of the JSON document in FILE (named d).
coll_pyj() {
	/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"
}

coll_log() { printf '[%s %ss] %s\n' "${COLL_GUEST_NAME:-guest}" "$(cut -d' ' -f1 /proc/uptime)" "$*" >&2; }

# coll_in_guest: true inside a rig guest.
coll_in_guest() { [ -n "${COLL_RUN_DIR:-}" ] && [ "$(hostname)" = "${COLL_GUEST_NAME:-}" ]; }

# coll_peer_ips: the other guests' addresses, one a line (vms.sh).
coll_peer_ips() {
	local ip
	for ip in ${GUEST_IPS:-}; do
		[ "$ip" = "${GUEST_IP:-}" ] || echo "$ip"
	done
}

# coll_retry TRIES DELAY CMD [ARGS...]: run CMD until it succeeds, at most TRIES times.
coll_retry() {
	local tries=$1 delay=$2 i
	shift 2
	for ((i = 1; i <= tries; i++)); do
		"$@" && return 0
		[ "$i" -lt "$tries" ] && sleep "$delay"
	done
	coll_log "gave up after $tries tries: $*"
	return 1
}

# coll_wait_peer IP [TIMEOUT_SECS=60]: wait until IP answers ping.
coll_wait_peer() {
	local ip=$1 limit=${2:-60} start=$SECONDS
	until ping -c 1 -W 1 "$ip" >/dev/null 2>&1; do
		if ((SECONDS - start >= limit)); then
			coll_log "peer $ip unreachable after ${limit}s"
			return 1
		fi
		sleep 0.2
	done
}

# coll_wait_peers [TIMEOUT_SECS=60]: wait for every other guest of vms.sh.
coll_wait_peers() {
	local ip
	for ip in $(coll_peer_ips); do
		coll_wait_peer "$ip" "${1:-60}" || return 1
	done
}

# coll_wait_port IP PORT [TIMEOUT_SECS=60]: wait until a TCP port accepts connections.
coll_wait_port() {
	local ip=$1 port=$2 limit=${3:-60} start=$SECONDS
	until (exec 3<>"/dev/tcp/$ip/$port") 2>/dev/null; do
		if ((SECONDS - start >= limit)); then
			coll_log "$ip:$port not accepting after ${limit}s"
			return 1
		fi
		sleep 0.2
	done
}

# coll_rxe_up [NETDEV [IBDEV]]: load rdma_rxe and create a soft-RoCE device.
# Default NETDEV: eth0 when it has an IPv4 address (rxe0), otherwise lo (rxelo).
# Idempotent. Waits until the port is ACTIVE. Prints the IB device name.
coll_rxe_up() {
	local nd=${1:-} ib=${2:-} i state
	if [ -z "$nd" ]; then
		if ip -4 -o addr show dev eth0 2>/dev/null | grep -q inet; then nd=eth0; else nd=lo; fi
	fi
	if [ -z "$ib" ]; then
		case $nd in lo) ib=rxelo ;; eth0) ib=rxe0 ;; *) ib=rxe_$nd ;; esac
	fi
	coll_modprobe rdma_rxe || { coll_log "modprobe rdma_rxe failed"; return 1; }
	if ! coll_modprobe ib_uverbs || ! coll_modprobe rdma_ucm; then
		coll_log "modprobe ib_uverbs/rdma_ucm failed"
		return 1
	fi
	ip link set "$nd" up || return 1
	if [ ! -d "/sys/class/infiniband/$ib" ]; then
		rdma link add "$ib" type rxe netdev "$nd" || { coll_log "rdma link add $ib on $nd failed"; return 1; }
	fi
	for ((i = 0; i < 100; i++)); do
		state=$(cat "/sys/class/infiniband/$ib/ports/1/state" 2>/dev/null || true)
		case $state in *ACTIVE*) echo "$ib"; return 0 ;; esac
		sleep 0.1
	done
	coll_log "$ib port not ACTIVE (state: ${state:-none})"
	return 1
}

# coll_modprobe MOD: modprobe MOD unless it is there already.  A kernel
# without /lib/modules in the guest (the debug kernel, which builds rxe,
# ib_core, ib_uverbs and rdma_cm in) has what it has built in.
coll_modprobe() {
	[ -d "/sys/module/$1" ] || [ ! -d "/lib/modules/$(uname -r)" ] || modprobe "$1"
}

# coll_insmod KO [PARAMS...]: modprobe KO's dependencies (modinfo depends=), then insmod it.
coll_insmod() {
	local ko=$1 deps d
	shift
	[ -f "$ko" ] || { coll_log "no module file $ko"; return 1; }
	deps=$(modinfo -F depends "$ko" 2>/dev/null || true)
	for d in ${deps//,/ }; do
		coll_modprobe "$d" || { coll_log "modprobe $d (needed by $ko) failed"; return 1; }
	done
	insmod "$ko" "$@" || { coll_log "insmod $ko failed"; return 1; }
}

# The guest's busybox (init puts its applets last in PATH as /.rig/bin).
COLL_BUSYBOX=${COLL_BUSYBOX:-/.rig/busybox}

# _coll_knock IP PORT: connect, expect "ok" from a _coll_serve_once listener.
_coll_knock() {
	(
		exec 3<>"/dev/tcp/$1/$2" || exit 1
		read -r -t 5 -u 3 ack || exit 1
		[ "$ack" = ok ]
	) 2>/dev/null
}

# _coll_serve_once PORT SECS: accept one connection, send "ok".
_coll_serve_once() {
	echo ok | timeout "$2" "$COLL_BUSYBOX" nc -l -p "$1" >/dev/null 2>&1
}

# coll_barrier [TIMEOUT_SECS=120]: wait until every guest of vms.sh reaches
# its barrier (TCP ports 7790/7791 on eth0; guest 0 coordinates). Use one
# before a guest finishes if its peers still need it: a guest that is done
# powers off and drops off the network.
coll_barrier() {
	local limit=${1:-120} start=$SECONDS k ip first
	[ "${GUEST_COUNT:-1}" -gt 1 ] || return 0
	first=${GUEST_IPS%% *}
	if [ "${GUEST_INDEX:-0}" = 0 ]; then
		for ((k = 1; k < GUEST_COUNT; k++)); do
			_coll_serve_once 7790 $((limit - (SECONDS - start) + 1)) ||
				{ coll_log "barrier: only $((k - 1)) of $((GUEST_COUNT - 1)) peers arrived"; return 1; }
		done
		for ip in $(coll_peer_ips); do
			until _coll_knock "$ip" 7791; do
				((SECONDS - start < limit)) || { coll_log "barrier: cannot release $ip"; return 1; }
				sleep 0.2
			done
		done
	else
		until _coll_knock "$first" 7790; do
			((SECONDS - start < limit)) || { coll_log "barrier: $first not answering"; return 1; }
			sleep 0.2
		done
		_coll_serve_once 7791 $((limit - (SECONDS - start) + 1)) ||
			{ coll_log "barrier: not released"; return 1; }
	fi
}

# coll_hub cut|restore [I=GUEST_INDEX]: cut guest I's link at vms.sh's hub
# (every frame it sends or would receive is dropped) or restore it.  Returns
# once the hub has done it, nonzero on error.  The protocol (a line in
# $COLL_RUN_DIR/hub.req, the answer in hub.reply) is vms.sh's; programs may
# speak it themselves (a shell command costs ~100 ms under TCG).
coll_hub() {
	local verb=${1:-} i=${2:-${GUEST_INDEX:-}} t line
	local req=$COLL_RUN_DIR/hub.req rep=$COLL_RUN_DIR/hub.reply
	[ -n "${COLL_HUB_CTL:-}" ] || { coll_log "coll_hub: no hub (not a vms.sh guest)"; return 1; }
	case $verb in cut | restore) ;; *) coll_log "coll_hub: cut or restore, not '$verb'"; return 1 ;; esac
	[[ $i =~ ^[0-9]+$ ]] || { coll_log "coll_hub: bad guest index '$i'"; return 1; }
	[ ! -e "$rep" ] || rm -f "$rep"
	echo "$verb $i" >"$req" || return 1
	for ((t = 0; t < 400; t++)); do
		if [ -s "$rep" ]; then
			read -r line <"$rep"
			rm -f "$rep"
			[ "$line" = "ok $verb $i" ] && return 0
			coll_log "coll_hub $verb $i: $line"
			return 1
		fi
		sleep 0.025
	done
	coll_log "coll_hub $verb $i: no answer from the hub"
	return 1
}

# coll_expect_poweroff [WHY]: this guest is about to power off on purpose
# (poweroff -f, sysrq o): vm.sh then counts it as rc 0, not "no result".
coll_expect_poweroff() {
	echo "${1:-on purpose}" >"$COLL_RUN_DIR/poweroff" && sync
}

# coll_rexec_up: start the rig's remote-exec daemon (rexec.py --serve) on
# GUEST_IP, port COLL_REXEC_PORT (7792), key COLL_REXEC_KEY, log
# $COLL_RUN_DIR/rexec.log; wait until it listens.  vms.sh --rexec runs it in
# every guest; "$COLL_REXEC HOST CMD" (an ssh stand-in) then runs CMD on HOST.
coll_rexec_up() {
	local agent=${COLL_REXEC:-${COLL_ROOT:-}/selftests/rig/rexec.py}
	local log=${COLL_RUN_DIR:-/tmp}/rexec.log
	[ -n "${GUEST_IP:-}" ] || { coll_log "rexec: no GUEST_IP (vms.sh guests only)"; return 1; }
	[ -n "${COLL_REXEC_KEY:-}" ] || { coll_log "rexec: no COLL_REXEC_KEY"; return 1; }
	[ -f "$agent" ] || { coll_log "rexec: no $agent"; return 1; }
	/usr/bin/python3 "$agent" --serve </dev/null >>"$log" 2>&1 &
	coll_wait_port "$GUEST_IP" "${COLL_REXEC_PORT:-7792}" 30
}

# coll_dmesg_splats: print kernel BUG/WARNING/Oops lines from dmesg; true if any.
coll_dmesg_splats() {
	dmesg | grep -E 'BUG:|WARNING:|Oops|Call Trace|general protection fault|UBSAN:|KASAN:'
}

_coll_alive() {	# _coll_alive PID: running (not gone, not a zombie)?
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st%% *}" != Z ]
}

# _coll_gone PID TICKS: wait up to TICKS x 0.2 s for PID to end; 0 if it did.
_coll_gone() {
	local t
	for ((t = 0; t < $2; t++)); do
		_coll_alive "$1" || return 0
		sleep 0.2
	done
	! _coll_alive "$1"
}

_coll_tree() {	# _coll_tree PID: PID and its descendants, parents first
	local c
	echo "$1"
	for c in $(pgrep -P "$1"); do
		_coll_tree "$c"
	done
}

# coll_bounded SECS CMD...: run CMD; if it is still running after SECS,
# print where each thread of it and of its descendants (a launcher's ranks)
# waits (wchan, kernel stack) and, in a guest, the kernel's blocked tasks
# (sysrq w) and the kernel log's tail on stderr, then SIGKILL them all.
# Returns CMD's status, or 124 when it had to be killed (not waited for
# when it survives SIGKILL, stuck in the kernel).  For test steps whose
# hang would otherwise only show as the guest's own timeout, with no trace.
coll_bounded() {
	local secs=$1 pid p task tree
	shift
	"$@" &
	pid=$!
	if _coll_gone "$pid" $((secs * 5)); then
		wait "$pid"
		return
	fi
	tree=$(_coll_tree "$pid")
	echo "# coll_bounded: '$*' still running after $secs s (pid $pid)" >&2
	for p in $tree; do
		for task in /proc/"$p"/task/*; do
			echo "# pid $p thread ${task##*/} ($(cat "$task/comm" 2>/dev/null)) wchan $(cat "$task/wchan" 2>/dev/null):" >&2
			sed 's/^/#   /' "$task/stack" >&2 2>/dev/null
		done
	done
	if coll_in_guest; then
		echo w >/proc/sysrq-trigger 2>/dev/null
		sleep 1
		dmesg | tail -n 200 | sed 's/^/# dmesg| /' >&2
	fi
	# shellcheck disable=SC2086 # one pid a word
	kill -9 $tree 2>/dev/null
	# Stuck in the kernel: do not wait for it (that would hang too).
	if _coll_gone "$pid" 50; then
		wait "$pid" 2>/dev/null
	else
		echo "# coll_bounded: pid $pid survives SIGKILL" >&2
	fi
	return 124
}
