#!/bin/bash
# test-rdma-2guest.sh: proves the multi-guest rig. Boots two guests with
# vms.sh; guest 0 serves rping and ib_write_bw on rxe0, guest 1 runs the
# clients. Prints kselftest-style TAP on stdout; exits 0 if all tests pass.
#
# Run on the host:  selftests/rig/test-rdma-2guest.sh
# Env: TIMEOUT (per guest, default 300), BW_SIZE (65536), BW_ITERS (200).
# (Inside the guests vms.sh runs this same file with --guest.)
set -euo pipefail

bw_size=${BW_SIZE:-65536}
bw_iters=${BW_ITERS:-200}

guest_main() {
	# shellcheck source=guest-lib.sh
	. "$COLL_GUEST_LIB"
	local dev=${COLL_RDMA_DEV:-rxe0} server=${GUEST_IPS%% *} rc=0 line

	coll_wait_peers 60 || { echo "RESULT net fail"; return 1; }
	if [ "$GUEST_INDEX" = 0 ]; then
		# One client each; bounded in case the client never shows up.
		timeout 120 rping -s -a "$GUEST_IP" -C 50 >/tmp/rping.out 2>&1 || rc=$?
		echo "rping server rc=$rc"
		[ "$rc" = 0 ] || tail -n 5 /tmp/rping.out
		local rc2=0
		timeout 120 ib_write_bw -d "$dev" -x 1 -F -s "$bw_size" -n "$bw_iters" \
			--report_gbits >/tmp/bw.out 2>&1 || rc2=$?
		echo "ib_write_bw server rc=$rc2"
		[ "$rc2" = 0 ] || tail -n 5 /tmp/bw.out
		[ "$rc" = 0 ] && [ "$rc2" = 0 ]
	else
		sleep 1
		if coll_retry 30 1 timeout 60 rping -c -V -C 50 -a "$server" >/tmp/rping.out 2>&1; then
			echo "RESULT rping ok"
		else
			tail -n 5 /tmp/rping.out
			echo "RESULT rping fail"
			rc=1
		fi
		if coll_retry 30 1 timeout 60 ib_write_bw -d "$dev" -x 1 -F -s "$bw_size" -n "$bw_iters" \
			--report_gbits "$server" >/tmp/bw.out 2>&1; then
			# Result row after the "#bytes #iterations BW peak BW average ..." header.
			line=$(grep -A1 '#bytes' /tmp/bw.out | tail -n 1 || true)
			grep -B1 -A1 '#bytes' /tmp/bw.out | sed 's/^/ib_write_bw| /'
			read -r -a f <<<"$line"
			echo "RESULT ib_write_bw ok ${f[0]:-?} ${f[1]:-?} ${f[3]:-?}"
		else
			tail -n 5 /tmp/bw.out
			echo "RESULT ib_write_bw fail"
			rc=1
		fi
		return "$rc"
	fi
}

if [ "${1:-}" = --guest ]; then
	guest_main
	exit
fi

here=$(cd "$(dirname "$0")" && pwd -P)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rdma-2guest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "TAP version 13"
echo "1..2"
vrc=0
"$here/vms.sh" -n 2 --name rdma-2guest --timeout "${TIMEOUT:-300}" \
	--env "BW_SIZE=$bw_size" --env "BW_ITERS=$bw_iters" \
	-- "$here/test-rdma-2guest.sh" --guest >"$tmp/out" 2>"$tmp/err" || vrc=$?
sed 's/^/# /' "$tmp/out" "$tmp/err"

n=1
if grep -q '^RESULT rping ok' "$tmp/out"; then
	echo "ok $n rping between two guests"
else
	echo "not ok $n rping between two guests"
	[ "$vrc" != 0 ] || vrc=1
fi
n=2
bw=$(grep -m1 '^RESULT ib_write_bw ok' "$tmp/out" || true)
if [ -n "$bw" ]; then
	read -r _ _ _ size iters gbps <<<"$bw"
	echo "ok $n ib_write_bw between two guests"
	echo "# ib_write_bw: ${gbps} Gb/s average (${size} B x ${iters}, rxe over udp-hub, TCG)"
else
	echo "not ok $n ib_write_bw between two guests"
	[ "$vrc" != 0 ] || vrc=1
fi
[ "$vrc" = 0 ] || echo "# vms.sh exited $vrc"
exit "$vrc"
