#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hosts-torch.sh: the torch backend with its ranks on two hosts (part of the
# suite "torch", after guest-torch.sh).  Boots 2 qemu guests (vms.sh, rxe0
# on the private network, the lossless switch), one rank each, launched by
# torchrun's multi-node form (--nnodes 2 --node_rank I --master_addr guest 0):
# the backend, unchanged, meets at MASTER_ADDR:MASTER_PORT+1 because
# LOCAL_WORLD_SIZE (1) is below the world size (2), and the modules connect
# over RDMA.  torch_test.py's "ops" (every operation x dtype x reduce op
# against a Gloo group across the same two guests) and then its DDP run
# (bitwise equal to Gloo) run on it, by the same processes ("ops+ddp": torch
# imported once a rank); then rmmod and each guest's kernel log.
#
# On the host: selftests/torch/hosts-torch.sh   (takes the guest lock)
# Prints TAP: guest 0's case lines (each case ok only if both guests said
# ok), then rmmod and kernel log per guest.
# Env: COLL_GUEST_LOCK, HOSTS_TORCH_TIMEOUT (s, 900), HOSTS_TORCH_MODES
# (torch_test.py's runs, each one mode or several joined by "+", "ops+ddp").
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/../.." && pwd -P)
PORT=29700

guest_main() {
	# shellcheck source=../rig/guest-lib.sh
	. "$COLL_GUEST_LIB"
	local first=${GUEST_IPS%% *} rc=0 what
	local py=/usr/bin/python3 t=$root/selftests/torch/torch_test.py tag

	coll_wait_peers 60 || { echo "Bail out! peers unreachable"; return 1; }
	coll_insmod "$root/kmod/collective.ko" || { echo "Bail out! insmod"; return 1; }
	coll_barrier 120 || { echo "Bail out! barrier"; return 1; }
	for what in ${HOSTS_TORCH_MODES:-ops+ddp}; do
		tag=${what//+/-}	# a word of the output's "@tag@" prefix
		# Debian's torchrun (torch 1.13, Python 3.11) fails with its
		# default "--redirects 0 --tee 0" (Std.from_str: a zero Flag is
		# not iterated in 3.11, None comes back, AttributeError): pass
		# non-zero values; rank 0's stdout then comes back as
		# "[default0]:...".  COLL_ROOT is the rig's project directory
		# here, not a rendezvous.  Gloo across the guests: eth0.
		COLL_TRANSPORT=rdma GLOO_SOCKET_IFNAME=eth0 PYTHONWARNINGS=ignore \
		timeout -s KILL 600 "$py" -m torch.distributed.run \
			--nnodes 2 --node_rank "$GUEST_INDEX" --nproc_per_node 1 \
			--master_addr "$first" --master_port "$PORT" \
			--redirects 1 --tee 1 "$t" worker "$what" 2>&1 |
			sed -e 's/^\[default0\]://' -e "s/^/@$tag@ /"
		# The verdicts are rank 0's TAP lines; torchrun's own status
		# is not one (the DDP run SIGKILLs rank 1 on purpose).
		echo "@$tag@ # torchrun exited ${PIPESTATUS[0]}"
		PORT=$((PORT + 10))
		coll_barrier 300 || { echo "# barrier after $what failed"; rc=1; }
	done
	dmesg | grep 'collective: comm' | head -n 20 | sed 's/^/# dmesg| /'
	if rmmod collective; then echo "@@ ok rmmod"; else echo "@@ not ok rmmod"; rc=1; fi
	if coll_dmesg_splats >/dev/null; then
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

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hosts-torch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
lock=${COLL_GUEST_LOCK:-/tmp/coll-guest.lock}
echo "TAP version 13"
n=0 fail=0
tap() {		# ok|not_ok description
	n=$((n + 1))
	if [ "$1" = ok ]; then echo "ok $n $2"; else echo "not ok $n $2"; fail=$((fail + 1)); fi
}
vrc=0
flock "$lock" "$root/selftests/rig/vms.sh" -n 2 --name hosts-torch --mem 2G \
	--lossless --timeout "${HOSTS_TORCH_TIMEOUT:-900}" --grace 120 \
	${HOSTS_TORCH_MODES:+--env "HOSTS_TORCH_MODES=$HOSTS_TORCH_MODES"} \
	-- "$here/hosts-torch.sh" --guest >"$tmp/out" 2>"$tmp/err" || vrc=$?
awk -v dir="$tmp" '/^===== guest [0-9]+ /{ g = $3; next } g != "" { print > (dir "/g" g) }' "$tmp/out"
grep -h '^@[a-z-]*@ # \|^# dmesg' "$tmp/g0" "$tmp/g1" 2>/dev/null | sed 's/^@[a-z-]*@ //' | head -n 60
for what in ${HOSTS_TORCH_MODES:-ops+ddp}; do
	what=${what//+/-}
	if ! grep -qE "^@$what@ (not )?ok " "$tmp/g0" 2>/dev/null; then
		tap not_ok "2 hosts $what: no results"
		continue
	fi
	# Rank 0 (guest 0) prints each case's verdict over every rank.
	while IFS= read -r line; do
		name=$(sed -E 's/^@[a-z-]+@ (not )?ok [0-9]+ //' <<<"$line")
		case $line in "@$what@ not ok"*) verdict=not_ok ;; *) verdict=ok ;; esac
		tap "$verdict" "2 hosts $what: $name"
	done < <(grep -E "^@$what@ (not )?ok " "$tmp/g0")
done
for g in 0 1; do
	for what in rmmod "kernel log"; do
		if grep -q "^@@ ok $what" "$tmp/g$g" 2>/dev/null; then
			tap ok "2 hosts guest $g: $what"
		else
			tap not_ok "2 hosts guest $g: $what"
		fi
	done
done
if [ "$vrc" != 0 ]; then
	echo "# vms.sh exited $vrc"
	sed 's/^/# /' "$tmp/err" | tail -n 30
	grep -h '^# dmesg' "$tmp"/g* 2>/dev/null | head -n 30
fi
echo "1..$n"
[ "$fail" = 0 ]
