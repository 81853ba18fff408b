#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hosts-faults.sh: faults in the middle of a large collective whose ranks
# span qemu guests (part of the suite "hosts", after hosts.sh).
#
# On the host:  selftests/hosts-faults.sh [PHASE...]
#   PHASE is FAULT:TRANSPORT[:LOCAL[:PARAM=VALUE[,PARAM=VALUE]]], run in
#   order in one boot of $FAULTS_GUESTS guests (default 3; the last one is
#   the victim), each with LOCAL ranks (default 1) and those module
#   parameters.  FAULT is one of
#     cut       the hub drops every frame of the victim's link (vms.sh's
#               hub control), restored after the phase
#     kill      SIGKILL to a rank of the victim in the middle of the collective
#     rdma      rdma link delete rxe0 on the victim (re-added after the phase)
#     poweroff  the victim loses power: sysrq b, a reset with no shutdown
#               (no device is closed, no peer told), which qemu -no-reboot
#               turns into its exit; last phase only
#   and TRANSPORT is auto (RDMA: the rig gives every guest rxe0), rdma or
#   tcp.  Default: cut:rdma cut:tcp kill:rdma:2 kill:tcp
#   rdma:rdma:1:busy_poll_us=50 (the device goes while ranks busy-poll its
#   completion queues) poweroff:rdma.
# In each guest (vms.sh runs this file with --guest), for every phase:
#   load the module (peer_timeout_ms=$FAULTS_PEER_TIMEOUT_MS), meet the
#   others, run coll_hosts_fault (the victim injects the fault), undo the
#   fault where it can be undone, rmmod, check the kernel log, meet again.
#
# Prints TAP: per phase and guest, coll_hosts_fault's lines (join; per
# surviving rank ECONNRESET within $FAULTS_BOUND_MS of the fault and the
# time it took, the next collective and destroy; COLL_INFO back to 0
# pinned pages; on the victim, that the fault landed in a collective),
# then rmmod and the kernel log; the powered-off guest must have exited as
# announced; and the boot as a whole.
# The guests are joined by vms.sh --lossless: over the rig's lossy UDP
# network, rxe's slow recovery of lost packets stalls healthy links for
# seconds under this load (see rig/README.md); FAULTS_LOSSY=1 uses it all
# the same.  peer_timeout_ms is 2000 so that a dead peer is noticed within
# 2.5 s (a ping every timeout/4), well inside the 5 s bound.
# Env: FAULTS_GUESTS, FAULTS_COUNT (fp32 elements, default 4Mi = 16 MiB),
# FAULTS_DELAY_MS (into the collective, 500), FAULTS_BOUND_MS (5000),
# FAULTS_PEER_TIMEOUT_MS (module parameter, 2000), FAULTS_TIMEOUT (per
# boot, s), FAULTS_LOSSY, COLL_GUEST_LOCK.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/.." && pwd -P)
RDV_PORT=29500
PAT='BUG:|WARNING:|Oops|Call Trace|general protection|KASAN|UBSAN|kernel BUG|refcount_t:|list_(add|del) corruption|possible circular locking|blocked for more than|soft lockup|hard LOCKUP|RCU stall|Unable to handle'

# ---- in a guest ----------------------------------------------------------

# The fault command the victim's coll_hosts_fault runs.
fault_cmd() {
	case $1 in
	rdma) echo 'rdma link delete rxe0' ;;
	# An orderly sysrq o once left the victim's kernel in a soft lockup
	# (ksoftirqd, after "sysrq: Power Off", rxe and a live communicator):
	# not what this phase is about, and not what a power cut does.
	poweroff) echo 'echo b >/proc/sysrq-trigger; sleep 60' ;;
	*) echo '' ;;	# cut: coll_hosts_fault asks the hub itself
	esac
}

guest_phase() {		# K FAULT TRANSPORT LOCAL [PARAMS]
	local k=$1 fault=$2 transport=$3 nlocal=$4 params=${5:-} out id mark i cmd up prc=0
	local bin=${COLL_BUILD:-$root/build}/selftests/coll_hosts_fault
	local victim=$((GUEST_COUNT - 1)) first=${GUEST_IPS%% *}
	local bound=${FAULTS_BOUND_MS:-5000}

	out=$COLL_RUN_DIR/fault-$k.tap
	id=${FAULTS_ID:0:30}$(printf '%02x' "$k")
	mark="hosts-faults: phase $k ($fault:$transport) $$"
	echo "$mark" >/dev/kmsg
	read -r up _ </proc/uptime
	echo "# phase $k: $fault over $transport, $nlocal local ranks${params:+, $params} (uptime $up s)"
	# shellcheck disable=SC2086 # parameters, one word each
	if ! coll_insmod "$root/kmod/collective.ko" \
		"peer_timeout_ms=${FAULTS_PEER_TIMEOUT_MS:-2000}" ${params//,/ }; then
		echo "@@P$k not ok insmod"
		return 1
	fi
	coll_barrier 120 || { echo "@@P$k not ok barrier before the phase"; return 1; }
	if [ "$GUEST_INDEX" = "$victim" ] && [ "$fault" = poweroff ]; then
		coll_expect_poweroff "hosts-faults phase $k: $fault"
	fi
	cmd=$(fault_cmd "$fault")
	COLL_ID=$id timeout -s KILL 400 "$bin" --nnodes "$GUEST_COUNT" \
		--node "$GUEST_INDEX" --local "$nlocal" --root "$first:$((RDV_PORT + k))" \
		--transport "$transport" \
		--expect-transport "$([ "$transport" = tcp ] && echo tcp || echo rdma)" \
		--fault "$fault" --victim "$victim" ${cmd:+--fault-cmd "$cmd"} \
		--victim-addr "${GUEST_IPS##* }" --clock-port $((RDV_PORT + 100 + k)) \
		--count "${FAULTS_COUNT:-4194304}" --delay-ms "${FAULTS_DELAY_MS:-500}" \
		--bound-ms "$bound" >"$out" 2>&1 || prc=$?
	sed "s/^/@P$k@ /" "$out"
	[ "$prc" = 0 ] || echo "# phase $k: coll_hosts_fault exited $prc"

	# Undo the fault: the others must have seen it by now (bound), so the
	# link comes back only once nothing can tell the difference.
	if [ "$GUEST_INDEX" = "$victim" ]; then
		case $fault in
		cut)
			sleep $((bound / 1000 + 1))
			coll_hub restore "$GUEST_INDEX" || echo "# phase $k: cannot restore the link"
			;;
		rdma)
			coll_rxe_up eth0 rxe0 >/dev/null || echo "# phase $k: cannot re-add rxe0"
			;;
		esac
	fi

	for ((i = 1; i <= 5; i++)); do
		rmmod collective 2>"$COLL_RUN_DIR/rmmod.err" && break
		sleep 1
	done
	if [ "$i" = 1 ]; then
		echo "@@P$k ok rmmod"
	elif [ "$i" -le 5 ]; then
		echo "@@P$k not ok rmmod # needed $i attempts: $(head -n 1 "$COLL_RUN_DIR/rmmod.err")"
	else
		echo "@@P$k not ok rmmod # $(head -n 1 "$COLL_RUN_DIR/rmmod.err"), refcnt $(cat /sys/module/collective/refcnt 2>/dev/null)"
	fi
	dmesg | sed -n "\\|$mark|,\$p" >"$COLL_RUN_DIR/dmesg-$k"
	grep -E 'collective: comm' "$COLL_RUN_DIR/dmesg-$k" | head -n 12 | sed "s/^/# P$k dmesg| /"
	if grep -qE "$PAT" "$COLL_RUN_DIR/dmesg-$k"; then
		grep -E -m 20 -B 2 -A 10 "$PAT" "$COLL_RUN_DIR/dmesg-$k" | head -n 60 |
			sed "s/^/# P$k dmesg| /"
		echo "@@P$k not ok kernel log"
	else
		echo "@@P$k ok kernel log"
	fi
	return 0
}

guest_main() {
	# shellcheck source=rig/guest-lib.sh
	. "$COLL_GUEST_LIB"
	local k=0 ph fault transport nlocal

	echo "# guest $GUEST_INDEX of $GUEST_COUNT ($GUEST_IP); victim: guest $((GUEST_COUNT - 1))"
	coll_wait_peers 60 || { echo "Bail out! peers unreachable"; return 1; }
	for ph in $FAULTS_PLAN; do
		IFS=: read -r fault transport nlocal params <<<"$ph"
		guest_phase "$k" "$fault" "$transport" "${nlocal:-1}" "$params" || return 1
		k=$((k + 1))
		[ "$fault" = poweroff ] && break
		coll_barrier 180 || { echo "Bail out! barrier after phase $((k - 1))"; return 1; }
	done
	return 0
}

if [ "${1:-}" = --guest ]; then
	guest_main
	exit
fi


# ---- on the host -----------------------------------------------------------

plan=("$@")
[ ${#plan[@]} -gt 0 ] ||
	plan=(cut:rdma cut:tcp kill:rdma:2 kill:tcp rdma:rdma:1:busy_poll_us=50 poweroff:rdma)
guests=${FAULTS_GUESTS:-3}
for ((k = 0; k < ${#plan[@]}; k++)); do
	IFS=: read -r fault transport nlocal params <<<"${plan[k]}"
	[[ ${params:-x=1} =~ ^[a-z_]+=[0-9]+(,[a-z_]+=[0-9]+)*$ ]] ||
		{ echo "bad module parameters in ${plan[k]}" >&2; exit 2; }
	case $fault in cut | kill | rdma | poweroff) ;; *) echo "bad fault in ${plan[k]}" >&2; exit 2 ;; esac
	case $transport in auto | rdma | tcp) ;; *) echo "bad transport in ${plan[k]}" >&2; exit 2 ;; esac
	[[ ${nlocal:-1} =~ ^[1-8]$ ]] || { echo "bad local ranks in ${plan[k]}" >&2; exit 2; }
	if [ "$fault" = poweroff ] && [ $((k + 1)) != ${#plan[@]} ]; then
		echo "poweroff must be the last phase" >&2
		exit 2
	fi
	if [ "$fault" = rdma ] && [ "$transport" = tcp ]; then
		echo "rdma link delete over tcp tests nothing" >&2
		exit 2
	fi
done
victim=$((guests - 1))
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hosts-faults.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
lock=${COLL_GUEST_LOCK:-/tmp/coll-guest.lock}

echo "TAP version 13"
n=0 fail=0
tap() {		# ok|not_ok description
	n=$((n + 1))
	if [ "$1" = ok ]; then echo "ok $n $2"; else echo "not ok $n $2"; fail=$((fail + 1)); fi
}

id=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "# ==== $guests guests, victim guest $victim: ${plan[*]}"
t0=$SECONDS
vrc=0
net=()
[ "${FAULTS_LOSSY:-0}" = 1 ] || net=(--lossless)
flock "$lock" "$here/rig/vms.sh" -n "$guests" --name hosts-faults "${net[@]}" \
	--timeout "${FAULTS_TIMEOUT:-900}" --grace 120 \
	--env "FAULTS_ID=$id" --env "FAULTS_PLAN=${plan[*]}" \
	${FAULTS_COUNT:+--env "FAULTS_COUNT=$FAULTS_COUNT"} \
	${FAULTS_DELAY_MS:+--env "FAULTS_DELAY_MS=$FAULTS_DELAY_MS"} \
	${FAULTS_BOUND_MS:+--env "FAULTS_BOUND_MS=$FAULTS_BOUND_MS"} \
	${FAULTS_PEER_TIMEOUT_MS:+--env "FAULTS_PEER_TIMEOUT_MS=$FAULTS_PEER_TIMEOUT_MS"} \
	-- "$here/hosts-faults.sh" --guest >"$tmp/out" 2>"$tmp/err" || vrc=$?
wall=$((SECONDS - t0))
# Per guest: its lines between "===== guest i (IP) rc=X" headers.
awk -v dir="$tmp" '/^===== guest [0-9]+ /{ g = $3; print $5 > (dir "/rc" g); next }
	g != "" { print > (dir "/g" g) }' "$tmp/out"
grep -h '^# \(guest\|node\)' "$tmp"/g* 2>/dev/null | sort -u | head -n 20

for ((k = 0; k < ${#plan[@]}; k++)); do
	IFS=: read -r fault transport nlocal params <<<"${plan[k]}"
	name="$fault/$transport${params:+@$params}"
	echo "# ---- phase $k: $name, ${nlocal:-1} local ranks per guest"
	for ((g = 0; g < guests; g++)); do
		f=$tmp/g$g
		grep -h "^# phase $k:\|^@P$k@ # \|^# P$k dmesg|" "$f" 2>/dev/null |
			grep -v '^# phase [0-9]*: [a-z]* over' |
			sed "s/^@P$k@ //; s/^# P$k dmesg| /# dmesg| /; s/^/# g$g: /" | head -n 30
		if [ "$fault" = poweroff ] && [ "$g" = "$victim" ]; then
			# it said it would (coll_expect_poweroff: rc 0), and did so
			# before its own end; that it was in the middle of the
			# collective the survivors say (their "lands in the
			# middle" case).  Its last lines ("# powering off now")
			# may die in the guest's pipe buffers with it.
			rc=$(sed 's/^rc=//' "$tmp/rc$g" 2>/dev/null)
			if [ "$rc" = 0 ] && ! grep -q "^@@P$k " "$f"; then
				tap ok "$name g$g: powered off in the middle of the collective"
			else
				tap not_ok "$name g$g: powered off in the middle of the collective # vm.sh rc ${rc:-none}"
			fi
			continue
		fi
		if ! grep -qE "^@P$k@ (not )?ok " "$f" 2>/dev/null; then
			tap not_ok "$name g$g: coll_hosts_fault # no results"
		fi
		while read -r verdict desc; do
			tap "$verdict" "$name g$g: $desc"
		done < <(sed -nE "s/^@P$k@ ok [0-9]+ /ok /p; s/^@P$k@ not ok [0-9]+ /not_ok /p" "$f" 2>/dev/null)
		for what in rmmod "kernel log"; do
			line=$(grep -m1 -E "^@@P$k (not )?ok $what" "$f" 2>/dev/null)
			case $line in
			"@@P$k ok $what"*) tap ok "$name g$g: $what" ;;
			"") tap not_ok "$name g$g: $what # not reached" ;;
			*) tap not_ok "$name g$g: $what${line#*"$what"}" ;;
			esac
		done
	done
done
if [ "$vrc" = 0 ]; then
	tap ok "boot: every guest exited as expected (${wall} s)"
else
	tap not_ok "boot: every guest exited as expected # vms.sh rc $vrc after ${wall} s"
	sed 's/^/# /' "$tmp/err" | tail -n 30
	grep -h '^Bail out!' "$tmp"/g* 2>/dev/null | sed 's/^/# /'
fi
echo "1..$n"
[ "$fail" = 0 ]
