#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hosts-security.sh: the module's wire protocol under attack (part of the
# suite "hosts").  One boot of two guests (vms.sh), the module loaded in
# both.  Guest 0 is the victim, guest 1 the attacker (coll_wire_fuzz):
#
#   live       meanwhile, on both guests, two communicators between real
#              ranks (one over RDMA, one over TCP) run AllReduces checked
#              element by element, from before the first attack until after
#              the last
#   unauth     TCP and rdma_cm clients without the id at the victim's port
#   tag        knowing the id, wrong and replayed PROOFs, no PROOF, floods
#   fake-tcp   an authenticated fake host over TCP sends what no honest
#   fake-rdma  host sends (and, as controls, runs honest collectives)
#
# then, on each guest: the live communicators were right all along, the
# module holds nothing (COLL_INFO) and no queue pair is left, rmmod works,
# and the kernel log has no splat.
#
# On the host:  selftests/hosts-security.sh
# Prints TAP: every case line of both guests, "g0:"/"g1:" in front.
# The guests are joined by vms.sh --lossless, as in hosts-faults.sh: the
# floods overrun the rig's lossy UDP hub, and after a lost frame rxe in 6.1
# may never finish a retransmission, so a queue pair's destroy waits rxe's
# 50 s (each sent skb holds a reference on its QP) and a phase can hang on
# the rig, not on the module (1 boot of 9 did; see rig/README.md).
# SECURITY_LOSSY=1 uses the lossy network all the same.
# Env: SECURITY_TIMEOUT (s, per guest; default 900), SECURITY_PHASES (a
# subset of "unauth tag fake-tcp fake-rdma"), SECURITY_LOSSY,
# COLL_GUEST_LOCK.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/.." && pwd -P)
PEER_MS=4000
PHASE_S=300	# a phase takes 10-60 s; a hung one is shown, then killed

# The number of queue pairs the guest's RDMA devices have.
nqp() {
	rdma resource show qp 2>/dev/null | grep -c lqpn
}

guest_main() {
	# shellcheck source=rig/guest-lib.sh
	. "$COLL_GUEST_LIB"
	local bin=${COLL_BUILD:-$root/build}/selftests/coll_wire_fuzz
	local ko=$root/kmod/collective.ko run=$COLL_RUN_DIR i=$GUEST_INDEX
	local victim=${GUEST_IPS%% *} attacker=${GUEST_IPS##* }
	local role=attacker rc=0 ph live qp0 qp kb0 t
	[ "$i" = 0 ] && role=victim

	echo "# guest $i ($GUEST_IP): the $role"
	coll_wait_peers 60 || { echo "Bail out! peers unreachable"; return 1; }
	coll_insmod "$ko" peer_timeout_ms=$PEER_MS || { echo "Bail out! insmod"; return 1; }
	qp0=$(nqp)
	kb0=$("$bin" --role info) || kb0=unknown
	coll_barrier 120 || { echo "Bail out! barrier"; return 1; }

	"$bin" --role live --victim "$victim" --node "$i" --stop "$run/stop-$i" \
		--ready "$run/ready-$i" >"$run/live-$i.tap" 2>&1 &
	live=$!
	for ((t = 0; t < 600; t++)); do
		[ -e "$run/ready-$i" ] && break
		kill -0 "$live" 2>/dev/null || break
		sleep 0.2
	done
	[ -e "$run/ready-$i" ] || echo "# the live communicators did not form"
	coll_barrier 180 || { echo "Bail out! barrier"; return 1; }

	for ph in ${SECURITY_PHASES:-unauth tag fake-tcp fake-rdma}; do
		if [ "$role" = attacker ] || [ "$ph" != unauth ]; then
			t=$SECONDS
			coll_bounded "$PHASE_S" "$bin" --role "$role" --phase "$ph" \
				--victim "$victim" --attacker "$attacker" \
				--peer-timeout-ms "$PEER_MS" >"$run/$ph-$i.tap" 2>&1
			case $? in
			0) ;;
			124)
				echo "@tap@ not ok - $ph (guest $i): still running after $PHASE_S s (stacks below)"
				rc=1
				;;
			*) rc=1 ;;
			esac
			sed -n -e 's/^\(\(not \)\?ok\) [0-9]* /@tap@ \1 - /p' \
				-e 's/^# /@tap@ # /p' "$run/$ph-$i.tap"
			echo "# $ph: $((SECONDS - t)) s"
		fi
		coll_barrier 900 || { echo "# barrier after $ph failed"; rc=1; }
	done

	: >"$run/stop-$i"
	for ((t = 0; t < 600; t++)); do
		kill -0 "$live" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$live" 2>/dev/null; then
		kill -9 "$live"
		echo "@tap@ not ok - live (guest $i): still running 2 minutes after the stop"
		rc=1
	fi
	wait "$live" || rc=1
	sed -n -e 's/^\(\(not \)\?ok\) [0-9]* /@tap@ \1 - /p' \
		-e 's/^# /@tap@ # /p' "$run/live-$i.tap"

	"$bin" --role idle --node "$i" --kernel-bytes "$kb0" | sed -n 's/^\(\(not \)\?ok\) [0-9]* /@tap@ \1 - /p'
	for ((t = 0; t < 100; t++)); do
		qp=$(nqp)
		[ "$qp" = "$qp0" ] && break
		sleep 0.2
	done
	if [ "$qp" = "$qp0" ]; then
		echo "@tap@ ok - queue pairs (guest $i): back to $qp0"
	else
		echo "@tap@ not ok - queue pairs (guest $i): $qp, not $qp0"
		rdma resource show qp | sed 's/^/# /'
		rc=1
	fi
	coll_barrier 120 || true
	if rmmod collective; then
		echo "@tap@ ok - rmmod (guest $i)"
	else
		echo "@tap@ not ok - rmmod (guest $i)"
		rc=1
	fi
	if coll_dmesg_splats >/dev/null; then
		coll_dmesg_splats | head -n 40 | sed 's/^/# dmesg| /'
		echo "@tap@ not ok - kernel log (guest $i): splats"
		rc=1
	else
		echo "@tap@ ok - kernel log (guest $i): no splat"
	fi
	dmesg | grep -c 'collective:' | sed 's/^/# module log lines: /'
	coll_barrier 60 || true
	return "$rc"
}

if [ "${1:-}" = --guest ]; then
	guest_main
	exit
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hosts-security.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
lock=${COLL_GUEST_LOCK:-/tmp/coll-guest.lock}
id=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

echo "TAP version 13"
echo "# ==== 2 guests: guest 0 the victim, guest 1 the attacker"
t0=$SECONDS
vrc=0
net=()
[ "${SECURITY_LOSSY:-0}" = 1 ] || net=(--lossless)
flock "$lock" "$here/rig/vms.sh" -n 2 --name hosts-security "${net[@]}" \
	--timeout "${SECURITY_TIMEOUT:-900}" --grace 120 \
	--env "COLL_ID=$id" ${SECURITY_PHASES:+--env "SECURITY_PHASES=$SECURITY_PHASES"} \
	-- "$here/hosts-security.sh" --guest >"$tmp/out" 2>"$tmp/err" || vrc=$?
awk -v dir="$tmp" '/^===== guest [0-9]+ /{ g = $3; next } g != "" { print > (dir "/g" g) }' "$tmp/out"
n=0 fail=0
for g in 0 1; do
	if [ ! -s "$tmp/g$g" ]; then
		n=$((n + 1)) fail=$((fail + 1))
		echo "not ok $n g$g: no output"
		continue
	fi
	grep -E '^# (guest|[a-z-]+: [0-9]+ s|the live)' "$tmp/g$g"
	while IFS= read -r line; do
		case $line in
		'@tap@ # '*) echo "# g$g: ${line#@tap@ # }" ;;
		'@tap@ ok - '*) n=$((n + 1)); echo "ok $n g$g: ${line#@tap@ ok - }" ;;
		'@tap@ not ok - '*)
			n=$((n + 1)) fail=$((fail + 1))
			echo "not ok $n g$g: ${line#@tap@ not ok - }"
			;;
		esac
	done < <(grep '^@tap@ ' "$tmp/g$g")
	grep '^# dmesg| ' "$tmp/g$g"
done
if [ "$vrc" != 0 ]; then
	echo "# vms.sh exited $vrc"
	sed 's/^/# /' "$tmp/err" | tail -n 30
	if [ "$fail" = 0 ]; then
		n=$((n + 1)) fail=1
		echo "not ok $n the guests: vms.sh exited $vrc"
	fi
fi
echo "# $((SECONDS - t0)) s"
echo "1..$n"
[ "$fail" = 0 ]
