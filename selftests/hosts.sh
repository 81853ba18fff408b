#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hosts.sh: the suite "hosts": collectives whose ranks span qemu guests on
# the rig's private network (vms.sh), through the module's transports.
#
# On the host:  selftests/hosts.sh [CONFIG...]
#   CONFIG is GUESTSxLOCAL[:TRANSPORTS][@PARAM=VALUE[,PARAM=VALUE]][/udp],
#   e.g. 2x1:tcp or 3x2:tcp,auto or 3x1:auto@busy_poll_us=50 (module
#   parameters for that boot), default: the set below; auto and rdma
#   expect RDMA, as the rig gives every guest rxe0.  Each config is one
#   boot of GUESTS guests (vms.sh), each running LOCAL ranks, coll_hosts
#   once per transport.  The guests are joined by the rig's lossless
#   switch (vms.sh --lossless), or with /udp by its UDP hub, which drops
#   frames towards a busy guest: the transports must recover from loss
#   (TCP does at once; soft-RoCE's RC retransmission in 6.1 slowly, up to
#   seconds a stall, see rig/README.md), so the default set has one such
#   config, the smallest.
# In each guest (vms.sh runs this file with --guest): load the module, meet
# the others, run coll_hosts, meet again, unload, check the kernel log.
#
# Prints TAP: one line per case and transport and config, ok only if every
# guest said ok for it; then a line per guest for rmmod and the kernel log.
# Env: HOSTS_SIZES (coll_hosts --sizes), HOSTS_TIMEOUT (per boot, s),
# HOSTS_KO (the module the guests load; check-debug.sh gives the debug
# kernel's, with KERNEL/KVER/COLL_MODDIR), HOSTS_SPLATS (an extended regex
# of kernel reports that fail a guest's kernel log besides the usual ones),
# COLL_GUEST_LOCK.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/.." && pwd -P)
RDV_PORT=29400

guest_main() {
	# shellcheck source=rig/guest-lib.sh
	. "$COLL_GUEST_LIB"
	local bin=${COLL_BUILD:-$root/build}/selftests/coll_hosts
	local ko=${HOSTS_KO:-$root/kmod/collective.ko} local=$HOSTS_LOCAL rc=0 t qps
	local first=${GUEST_IPS%% *} out

	echo "# guest $GUEST_INDEX of $GUEST_COUNT ($GUEST_IP), $local local ranks"
	coll_wait_peers 60 || { echo "Bail out! peers unreachable"; return 1; }
	# shellcheck disable=SC2086 # parameters, one word each
	coll_insmod "$ko" peer_timeout_ms=4000 ${HOSTS_PARAMS//,/ } ||
		{ echo "Bail out! insmod"; return 1; }
	coll_barrier 120 || { echo "Bail out! barrier"; return 1; }
	for t in ${HOSTS_TRANSPORTS//,/ }; do
		out=$COLL_RUN_DIR/coll_hosts-$t.tap
		qps=
		case ,$HOSTS_PARAMS, in
		*,rdma_qps=*) [ "$t" = tcp ] || qps=${HOSTS_PARAMS#*rdma_qps=} qps=${qps%%,*} ;;
		esac
		COLL_ID=$HOSTS_ID "$bin" --nnodes "$GUEST_COUNT" --node "$GUEST_INDEX" \
			--local "$local" --root "$first:$RDV_PORT" --transport "$t" \
			--expect-transport "$([ "$t" = tcp ] && echo tcp || echo rdma)" \
			${qps:+--expect-qps "$qps"} \
			${HOSTS_SIZES:+--sizes "$HOSTS_SIZES"} >"$out" 2>&1 || rc=1
		sed "s/^/@$t@ /" "$out"
		coll_barrier 300 || { echo "# barrier after $t failed"; rc=1; }
	done
	if rmmod collective; then echo "@@ ok rmmod"; else echo "@@ not ok rmmod"; rc=1; fi
	if [ -n "${HOSTS_SPLATS:-}" ] && dmesg | grep -qE "$HOSTS_SPLATS"; then
		dmesg | grep -E -A12 "$HOSTS_SPLATS" | head -n 60 | sed 's/^/# dmesg| /'
		echo "@@ not ok kernel log"
		rc=1
	elif coll_dmesg_splats >/dev/null; then
		coll_dmesg_splats | head -n 40 | sed 's/^/# dmesg| /'
		echo "@@ not ok kernel log"
		rc=1
	else
		echo "@@ ok kernel log"
	fi
	coll_barrier 60 || true
	return "$rc"
}

if [ "${1:-}" = --guest ]; then
	guest_main
	exit
fi

configs=("$@")
# shellcheck disable=SC2054 # a config names its transports with commas
[ ${#configs[@]} -gt 0 ] ||
	configs=(2x1:tcp,auto/udp 2x2:tcp,rdma@rdma_qps=2
		3x1:auto@busy_poll_us=50 3x2:tcp,auto@rdma_qps=3)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hosts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
lock=${COLL_GUEST_LOCK:-/tmp/coll-guest.lock}

echo "TAP version 13"
n=0 fail=0
tap() {		# ok|not_ok description
	n=$((n + 1))
	if [ "$1" = ok ]; then echo "ok $n $2"; else echo "not ok $n $2"; fail=$((fail + 1)); fi
}

for cfg in "${configs[@]}"; do
	params='' net=(--lossless) netname=lossless
	case $cfg in */udp) net=() netname=udp cfg=${cfg%/udp} ;; esac
	case $cfg in *@*) params=${cfg#*@} cfg=${cfg%%@*} ;; esac
	spec=${cfg%%:*} transports=${cfg#*:}
	[ "$transports" != "$cfg" ] || transports=tcp
	guests=${spec%x*} local=${spec#*x}
	label=${guests}x$local${params:+@$params}
	[ "$netname" = lossless ] || label+=/$netname
	id=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	echo "# ==== $guests guests x $local ranks, transports $transports${params:+, module $params}, $netname network"
	vrc=0 t0=$SECONDS
	flock "$lock" "$here/rig/vms.sh" -n "$guests" --name "hosts-${guests}x$local" "${net[@]}" \
		--timeout "${HOSTS_TIMEOUT:-900}" --grace 120 \
		--env "HOSTS_ID=$id" --env "HOSTS_LOCAL=$local" \
		--env "HOSTS_TRANSPORTS=$transports" --env "HOSTS_PARAMS=$params" \
		${HOSTS_SIZES:+--env "HOSTS_SIZES=$HOSTS_SIZES"} \
		${HOSTS_KO:+--env "HOSTS_KO=$HOSTS_KO"} \
		${HOSTS_SPLATS:+--env "HOSTS_SPLATS=$HOSTS_SPLATS"} \
		-- "$here/hosts.sh" --guest >"$tmp/out" 2>"$tmp/err" || vrc=$?
	# Per guest: its lines between "===== guest i" headers.
	awk -v dir="$tmp" '/^===== guest [0-9]+ /{ g = $3; next } g != "" { print > (dir "/g" g) }' "$tmp/out"
	grep -h '^# ' "$tmp"/g* 2>/dev/null | grep -v '^# dmesg' | sort -u | head -n 20
	for t in ${transports//,/ }; do
		# The case lines of guest 0 name the cases; every guest must agree.
		grep -E "^@$t@ (not )?ok " "$tmp/g0" 2>/dev/null | sed "s/^@$t@ //" |
			sed -E 's/^(not )?ok ([0-9]+) ([^#]*).*/\2 \3/' >"$tmp/cases"
		if [ ! -s "$tmp/cases" ]; then
			tap not_ok "$label $t: no results"
			continue
		fi
		while read -r k name; do
			verdict=ok why=''
			for ((g = 0; g < guests; g++)); do
				line=$(grep -m1 -E "^@$t@ (not )?ok $k " "$tmp/g$g" 2>/dev/null)
				case $line in
				"@$t@ ok "*) ;;
				*) verdict=not_ok; why+=" g$g:${line#*#}" ;;
				esac
			done
			tap "$verdict" "$label $t: $name${why:+ #$why}"
		done <"$tmp/cases"
	done
	for ((g = 0; g < guests; g++)); do
		for what in rmmod "kernel log"; do
			if grep -q "^@@ ok $what" "$tmp/g$g" 2>/dev/null; then
				tap ok "$label guest $g: $what"
			else
				tap not_ok "$label guest $g: $what"
			fi
		done
	done
	if [ "$vrc" != 0 ]; then
		echo "# vms.sh exited $vrc"
		sed 's/^/# /' "$tmp/err" | tail -n 30
	fi
	echo "# $label: $((SECONDS - t0)) s"
	rm -f "$tmp"/g*
done
echo "1..$n"
[ "$fail" = 0 ]
