#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# netlink-hosts.sh: the netlink suite's half across hosts.  One boot of two
# guests (vms.sh, lossless network, rxe0 in each), one or two ranks in each
# (collrun --nnodes 2), and collctl in both, showing what only ranks on
# several hosts can show:
#   - comm show: the peer host, its transport and queue pairs; diag quiet
#   - eager-bytes and mr-pool: which RDMA regions a small AllReduce takes
#     (none when eager; allocated, or reused from the pool)
#   - rdma-qps: the queue pairs to the peer
#   - hier-bytes, module-wide and per communicator: the algorithm chosen
#   - busy-poll-us, module-wide and per communicator: the coll_busy_poll
#     tracepoint
#   - op show and diag name the rank of the other host that has not called
#   - a TCP fallback (no RDMA device on host 0): comm show's reason, the
#     monitor's fallback event, diag's finding, on both hosts
#   - peer-timeout-ms: how soon a cut link fails the communicator, and the
#     monitor's failed event
#
# On the host:  selftests/netlink-hosts.sh     (TAP; takes the guest lock)
# In each guest (vms.sh runs this file with --guest).
# Env: NLH_TIMEOUT (the boot's limit, s), COLL_GUEST_LOCK.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/.." && pwd -P)

# ---- in each guest ------------------------------------------------------------

# tap ok|not_ok DESCRIPTION [DETAIL]: a result of this guest
tap() {
	echo "@nl@ $([ "$1" = ok ] && echo ok || echo 'not ok') - $2${3:+ # $3}"
}
# say FILE: show FILE as diagnostics
say() { sed 's/^/# /' "$1" 2>/dev/null | head -n 40; }

# newest_comm: the serial of this host's newest communicator (0: none)
newest_comm() {
	$C -j comm show > "$T/comms.json" 2>/dev/null &&
		coll_pyj "$T/comms.json" 'max([c["comm"] for c in d] + [0])'
}

# wait_comm OLD SECS: wait until a communicator newer than OLD and than
# every one seen before exists (serials only grow; the last run's may still
# be listed while its last members let go); print its serial
wait_comm() {
	local old=$1 i=0 s seen

	seen=$(cat "$T/seen" 2> /dev/null || echo 0)	# (callers' subshells)
	[ -n "$old" ] && [ "$old" -gt "$seen" ] && seen=$old
	while [ $i -lt $(($2 * 10)) ]; do
		s=$(newest_comm)
		if [ -n "$s" ] && [ "$s" -gt "$seen" ]; then
			echo "$s" > "$T/seen"
			echo "$s"
			return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# xrun NAME LOCAL [LOAD ARGS...]: LOCAL ranks here of 2*LOCAL, in the
# background, their output in $T/NAME.log; rank 0 (guest 0) creates
# $T/NAME.ready when the collectives are done.  Every guest calls it with
# the same arguments, in the same order (the port and the id follow).
xrun() {
	local name=$1 local=$2
	shift 2
	run_no=$((run_no + 1))
	COLL_ID=$(printf '0123456789abcdef0123456789ab%04x' "$run_no") \
		"$RUN" --nnodes 2 --node-rank "$GUEST_INDEX" \
		--master "$FIRST:$((29500 + run_no))" -n "$local" -t 120 \
		"$LOAD" -r "$T/$name.ready" "$@" > "$T/$name.log" 2>&1 &
	xpid=$!
}

# xwait: wait for the last xrun; its exit status
xwait() {
	wait "$xpid"
}

# tune_here NAME VALUE...: a module-wide setting, on this host (each host has its own)
tune_here() {
	$C tune set "$@" > "$T/set.out" 2>&1 || { echo "# tune set $*: $(cat "$T/set.out")"; return 1; }
}

sync_point() {	# sync_point WHAT: every guest gets here
	coll_barrier 180 || { tap not_ok "barrier: $1"; return 1; }
}

# mrs NAME: "A R" from rank 0's -i output here (every guest has one rank 0
# of its own: the lowest local rank prints too; take the first pair)
mrs() {
	sed -n 's/^mr-allocs=\([0-9]*\) mr-reuses=\([0-9]*\)$/\1 \2/p' "$T/$1.log" | head -n 1
}

# algos FILE: the AllReduce algorithms and calls in a stats JSON
algos() {
	coll_pyj "$1" '[(a["algo"], a["calls"]) for p in d["prims"] if p["prim"] == "allreduce" for a in p["algos"]]'
}

# A run of LOCAL ranks here; what collctl says of its communicator is
# read once the collectives are done, while it lives.
# stats_run NAME LOCAL LOAD-ARGS...: leaves in $T NAME.comm (its serial),
# NAME.json (stats -j), NAME.cj and NAME.ct (comm show -j and text),
# NAME.dt and NAME.dj (diag text and -j)
stats_run() {
	local name=$1 local=$2 old s
	shift 2
	old=$(newest_comm)
	xrun "$name" "$local" -H 4 "$@"
	wait_comm "$old" 60 > "$T/$name.comm" || true
	coll_wait_file "$T/$name.ready" 90 || echo "# $name: no ready file"
	s=$(cat "$T/$name.comm")
	echo "# $name: comm ${s:-none}, ready at $(cut -d' ' -f1 /proc/uptime) s"
	if [ -n "$s" ]; then
		$C -j stats comm "$s" > "$T/$name.json" 2>&1
		$C -j comm show "$s" > "$T/$name.cj" 2>&1
		$C comm show "$s" > "$T/$name.ct" 2>&1
		$C diag > "$T/$name.dt" 2>&1
		$C -j diag > "$T/$name.dj" 2>&1
		echo "# $name: read at $(cut -d' ' -f1 /proc/uptime) s"
	fi
	xwait || echo "# $name: collrun exited $?"
}

trace_on() {	# trace_on EVENT
	echo 0 > "$TR/tracing_on"
	: > "$TR/trace"
	echo 1 > "$TR/events/collective/$1/enable"
	echo 1 > "$TR/tracing_on"
}

trace_off() {	# trace_off EVENT
	echo 0 > "$TR/events/collective/$1/enable"
}

guest_main() {
	# shellcheck source=rig/guest-lib.sh
	. "$COLL_GUEST_LIB"
	unset COLL_ROOT		# the project's path here; the library's rendezvous
	C=$root/tools/collctl
	RUN=$root/tools/collrun
	LOAD=${COLL_BUILD:-$root/build}/selftests/coll_nl_load
	YNL="/usr/bin/python3 $root/tools/ynl/cli.py --spec $root/uapi/collective.yaml --no-schema --output-json"
	FIRST=${GUEST_IPS%% *}
	RESET="a peer rank left the communicator"	# coll_strerror(-ECONNRESET)
	TR=/sys/kernel/tracing
	T=$(mktemp -d)
	run_no=0
	local g=$GUEST_INDEX other=$((1 - GUEST_INDEX)) s t0 t1 rc el

	coll_wait_peers 60 || { echo "Bail out! peers unreachable"; return 1; }
	coll_insmod "$root/kmod/collective.ko" || { echo "Bail out! insmod"; return 1; }
	mountpoint -q $TR || mount -t tracefs nodev $TR 2>/dev/null ||
		mount -t debugfs nodev /sys/kernel/debug
	[ -d $TR/events ] || TR=/sys/kernel/debug/tracing
	sync_point start || return 1

	# -- comm show, eager-bytes (no regions), diag quiet ----------------------
	COLL_TRANSPORT=rdma stats_run eager 1 -b 4096 -n 10 -i
	cp "$T/eager.cj" "$T/comm.json"
	cp "$T/eager.ct" "$T/comm.txt"
	cp "$T/eager.dt" "$T/diag-ok.txt"
	if [ "$(coll_pyj "$T/comm.json" '(d["nhosts"], d["host"], [(p["host"], p["nranks"], p["transport"], p["fallback"], p["qps"], p["bytes-sent"] > 0) for p in d["peers"]])')" = \
	     "(2, $g, [(0, 1, '$([ "$g" = 0 ] && echo self || echo rdma)', 'none', $([ "$g" = 0 ] && echo 0 || echo 1), $([ "$g" = 0 ] && echo False || echo True)), (1, 1, '$([ "$g" = 1 ] && echo self || echo rdma)', 'none', $([ "$g" = 1 ] && echo 0 || echo 1), $([ "$g" = 1 ] && echo False || echo True))])" ] &&
	   grep -q "peer host $other nranks 1 transport rdma fallback none .* qps 1$" "$T/comm.txt"; then
		tap ok "comm show: host $g of 2, host $other over RDMA with 1 QP (JSON and text)"
	else
		tap not_ok "comm show: host $g of 2, host $other over RDMA with 1 QP (JSON and text)"
		say "$T/comm.json"; say "$T/comm.txt"
	fi
	[ "$(cat "$T/diag-ok.txt")" = "no problems found" ] &&
		tap ok "diag finds nothing on a healthy run across hosts" ||
		{ tap not_ok "diag finds nothing on a healthy run across hosts"; say "$T/diag-ok.txt"; }
	[ "$(mrs eager)" = "0 0" ] &&
		tap ok "eager-bytes 65536: 4 KiB AllReduces over RDMA take no memory region" ||
		{ tap not_ok "eager-bytes 65536: 4 KiB AllReduces take no memory region" "$(mrs eager)"; say "$T/eager.log"; }
	sync_point eager

	# -- eager-bytes 0: every round read by RDMA READ; mr-pool 0 then 64 ------
	tune_here eager-bytes 0 mr-pool 0
	COLL_TRANSPORT=rdma stats_run nopool 1 -b 4096 -n 10 -i
	tune_here mr-pool 64
	COLL_TRANSPORT=rdma stats_run pool 1 -b 4096 -n 10 -i
	tune_here eager-bytes 65536
	read -r a0 r0 <<< "$(mrs nopool)"
	read -r a1 r1 <<< "$(mrs pool)"
	[ "${a0:-0}" -gt 0 ] && [ "${r0:-1}" = 0 ] &&
		tap ok "eager-bytes 0, mr-pool 0: the same AllReduces allocate regions ($a0), reuse none" ||
		{ tap not_ok "eager-bytes 0, mr-pool 0: the AllReduces allocate regions, reuse none" "${a0:-?} ${r0:-?}"; say "$T/nopool.log"; }
	[ "${r1:-0}" -gt 0 ] &&
		tap ok "mr-pool 64: they reuse regions from the pool ($r1 reused, $a1 allocated)" ||
		{ tap not_ok "mr-pool 64: they reuse regions from the pool" "${a1:-?} ${r1:-?}"; say "$T/pool.log"; }
	sync_point pool

	# -- rdma-qps 2 ----------------------------------------------------------------
	tune_here rdma-qps 2
	COLL_TRANSPORT=rdma stats_run qps 1 -b 1048576 -n 2
	tune_here rdma-qps 1
	cp "$T/qps.cj" "$T/qps.json"
	[ "$(coll_pyj "$T/qps.json" '[p["qps"] for p in d["peers"] if p["host"] != d["host"]]')" = "[2]" ] &&
		tap ok "rdma-qps 2: comm show counts 2 queue pairs to host $other" ||
		{ tap not_ok "rdma-qps 2: comm show counts 2 queue pairs to host $other"; say "$T/qps.json"; say "$T/qps.log"; }
	sync_point qps

	# -- hier-bytes, module-wide: 2 ranks a host, 64 KiB AllReduces -------------
	tune_here hier-bytes 4096
	COLL_TRANSPORT=rdma stats_run hier 2 -b 65536 -n 4
	tune_here hier-bytes 262144
	COLL_TRANSPORT=rdma stats_run direct 2 -b 65536 -n 4
	[ "$(algos "$T/hier.json")" = "[('hier', 4)]" ] && [ "$(algos "$T/direct.json")" = "[('direct', 4)]" ] &&
		tap ok "hier-bytes: 64 KiB AllReduces of 2x2 ranks go hier at 4096, direct at 262144" ||
		{ tap not_ok "hier-bytes: 64 KiB AllReduces go hier at 4096, direct at 262144" \
			"$(algos "$T/hier.json") $(algos "$T/direct.json")"; say "$T/hier.json"; say "$T/hier.log"; }
	sync_point hier

	# -- busy-poll-us, module-wide: the coll_busy_poll tracepoint ----------------
	trace_on coll_busy_poll
	COLL_TRANSPORT=rdma stats_run nobusy 1 -b 4096 -n 20
	n0=$(grep -c 'coll_busy_poll:' "$TR/trace")
	: > "$TR/trace"
	tune_here busy-poll-us 200
	COLL_TRANSPORT=rdma stats_run busy 1 -b 4096 -n 20
	tune_here busy-poll-us 0
	n1=$(grep -c "coll_busy_poll: comm=$(cat "$T/busy.comm") " "$TR/trace")
	trace_off coll_busy_poll
	[ "$n0" = 0 ] && [ "$n1" -gt 0 ] &&
		tap ok "busy-poll-us: no coll_busy_poll at 0, $n1 at 200" ||
		{ tap not_ok "busy-poll-us: no coll_busy_poll at 0, some at 200" "$n0 $n1"; grep coll_busy_poll "$TR/trace" | head -n 5 | sed 's/^/# /'; }
	sync_point busy

	# -- per communicator: hier-bytes and busy-poll-us, set before any call -------
	trace_on coll_busy_poll
	old=$(newest_comm)
	rm -f "$T/percomm.go"
	COLL_TRANSPORT=rdma xrun percomm 2 -b 65536 -n 4 -w "all:60:$T/percomm.go" -H 4
	s=$(wait_comm "$old" 60)
	$C tune set comm "$s" hier-bytes 4096 busy-poll-us 200 > "$T/percomm-set.txt" 2>&1
	touch "$T/percomm.go"	# the ranks here call once it is tuned
	$C -j tune show comm "$s" > "$T/percomm-tune.json" 2>&1
	$C -j tune show > "$T/percomm-mod.json" 2>&1
	coll_wait_file "$T/percomm.ready" 90 || sleep 12
	$C -j stats comm "$s" > "$T/percomm.json" 2>&1
	xwait || echo "# percomm: collrun exited $?"
	n1=$(grep -c "coll_busy_poll: comm=$s " "$TR/trace")
	trace_off coll_busy_poll
	[ "$(coll_pyj "$T/percomm-tune.json" '(d["hier-bytes"], d["busy-poll-us"], sorted(d["overridden"]))')" = "(4096, 200, ['busy-poll-us', 'hier-bytes'])" ] &&
	[ "$(coll_pyj "$T/percomm-mod.json" '(d["hier-bytes"], d["busy-poll-us"])')" = "(262144, 0)" ] &&
	[ "$(algos "$T/percomm.json")" = "[('hier', 4)]" ] && [ "$n1" -gt 0 ] &&
		tap ok "per communicator hier-bytes 4096, busy-poll-us 200: hier AllReduces, $n1 busy polls; module-wide unchanged" ||
		{ tap not_ok "per communicator hier-bytes 4096, busy-poll-us 200" "busy polls $n1"; say "$T/percomm-set.txt"; say "$T/percomm-tune.json"; say "$T/percomm.json"; say "$T/percomm.log"; }
	sync_point percomm

	# -- op show and diag across hosts: rank 1 (host 1) withholds its call ------
	old=$(newest_comm)
	# Rank 1 withholds its call until host 0 has read what it shows (the
	# sync point below): a clock of 10 s could run out on a slow machine.
	rm -f "$T/withhold.go"
	COLL_TRANSPORT=rdma xrun withhold 1 -b 4096 -n 1 -w "1:90:$T/withhold.go"
	s=$(wait_comm "$old" 60)
	if [ "$g" = 0 ]; then
		i=0
		until [ "$($C -j op show 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 1 ] || [ $i -ge 100 ]; do
			sleep 0.1; i=$((i + 1))
		done
		sleep 1.2
		$C op show > "$T/op.txt" 2>&1
		$C -j op show > "$T/op.json" 2>&1
		$YNL --dump op-get > "$T/ynl-op.json" 2>&1
		$C diag -t 1000 > "$T/diag-hung.txt" 2>&1
		grep -q "^comm $s seq 0 prim allreduce .* arrived 1 missing 1$" "$T/op.txt" &&
		[ "$(coll_pyj "$T/op.json" '[(o["comm"], o["seq"], o["missing"]) for o in d]')" = "[($s, 0, [1])]" ] &&
			tap ok "op show names rank 1, on the other host, as the one not arrived" ||
			{ tap not_ok "op show names rank 1, on the other host, as the one not arrived"; say "$T/op.txt"; say "$T/op.json"; }
		[ "$(coll_pyj "$T/ynl-op.json" '[(o["comm"], o["missing"]) for o in d]')" = "[($s, [1])]" ] &&
			tap ok "the YNL CLI's op-get agrees" ||
			{ tap not_ok "the YNL CLI's op-get agrees"; say "$T/ynl-op.json"; }
		grep -q "comm $s: allreduce seq 0 has waited .* s for rank 1, which has not called it" "$T/diag-hung.txt" &&
			tap ok "diag names the hung collective and the rank on the other host" ||
			{ tap not_ok "diag names the hung collective and the rank on the other host"; say "$T/diag-hung.txt"; }
	else
		sleep 3
		$C -j op show > "$T/op1.json" 2>&1
		[ "$(cat "$T/op1.json")" = "[]" ] &&
			tap ok "op show: nothing in flight on the host whose rank has not called" ||
			{ tap not_ok "op show: nothing in flight on the host whose rank has not called"; say "$T/op1.json"; }
	fi
	sync_point "withhold read"
	touch "$T/withhold.go"
	xwait && tap ok "the withheld AllReduce completes, checked, once rank 1 calls" ||
		{ tap not_ok "the withheld AllReduce completes once rank 1 calls"; say "$T/withhold.log"; }
	sync_point withhold

	# -- a TCP fallback: host 0 has no RDMA device -------------------------------
	[ "$g" = 0 ] && { rdma link delete rxe0 || echo "# rdma link delete rxe0 failed"; }
	sync_point nordma
	$C monitor > "$T/mon-fb.txt" 2>&1 &
	mon=$!
	sleep 1
	stats_run fallback 1 -b 4096 -n 5
	s=$(cat "$T/fallback.comm")
	cp "$T/fallback.cj" "$T/fb.json"
	cp "$T/fallback.dt" "$T/fb-diag.txt"
	cp "$T/fallback.dj" "$T/fb-diag.json"
	sleep 1
	kill "$mon" 2>/dev/null
	wait "$mon" 2>/dev/null
	say "$T/mon-fb.txt"
	say "$T/fallback.log"
	if [ "$g" = 0 ]; then why=no-device text="no RDMA device reaches its address"; else why=peer text="the peer chose TCP"; fi
	[ "$(coll_pyj "$T/fb.json" '[(p["host"], p["transport"], p["fallback"], p["qps"]) for p in d["peers"] if p["host"] != d["host"]]')" = "[($other, 'tcp', '$why', 0)]" ] &&
		tap ok "fallback: comm show has host $other over TCP, reason $why" ||
		{ tap not_ok "fallback: comm show has host $other over TCP, reason $why"; say "$T/fb.json"; say "$T/fallback.log"; }
	grep -q "^event fallback comm $s .*host $other fallback $why$" "$T/mon-fb.txt" &&
		tap ok "fallback: the monitor sees the fallback event" ||
		{ tap not_ok "fallback: the monitor sees the fallback event"; say "$T/mon-fb.txt"; }
	grep -q "^comm $s: host $other is reached over TCP, not RDMA ($text): check the RDMA devices" "$T/fb-diag.txt" &&
	[ "$(coll_pyj "$T/fb-diag.json" '[(p["comm"], p["problem"]) for p in d]')" = "[($s, 'tcp-fallback')]" ] &&
		tap ok "fallback: diag names it ($text)" ||
		{ tap not_ok "fallback: diag names it ($text)"; say "$T/fb-diag.txt"; say "$T/fb-diag.json"; }
	[ "$g" = 0 ] && { coll_rxe_up eth0 > /dev/null || echo "# rxe0 not restored"; }
	sync_point fallback

	# -- peer-timeout-ms: a cut link fails the communicator, 3000 then 800 ms -----
	for pt in 3000 800; do
		tune_here peer-timeout-ms "$pt"
		[ "$pt" = 800 ] && { $C monitor > "$T/mon-pt.txt" 2>&1 & mon=$!; }
		old=$(newest_comm)
		# rank 1 (host 1) withholds its call until host 1 sees the
		# communicator dead (at most 60 s): a fixed delay raced the cut
		# when host 0 was slow to get there, and the AllReduce completed
		rm -f "$T/pt$pt.go"
		COLL_TRANSPORT=tcp xrun "pt$pt" 1 -b 4096 -n 1 -w "1:60:$T/pt$pt.go"
		s=$(wait_comm "$old" 60)
		i=0
		until [ "$($C -j comm show "$s" 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null)" = ready ] || [ $i -ge 300 ]; do
			sleep 0.1; i=$((i + 1))
		done
		sync_point "pt$pt ready" || break
		if [ "$g" = 0 ]; then
			sleep 0.5
			t0=$(date +%s%N)
			coll_hub cut 1 || echo "# hub cut failed"
			xwait
			rc=$?
			t1=$(date +%s%N)
			coll_hub restore 1 || echo "# hub restore failed"
			el=$(((t1 - t0) / 1000000))
			if [ "$pt" = 3000 ]; then
				[ "$rc" != 0 ] && [ "$el" -ge 2000 ] && grep -q "$RESET" "$T/pt$pt.log" &&
					tap ok "peer-timeout-ms 3000: a cut link fails the AllReduce with ECONNRESET after $el ms" ||
					{ tap not_ok "peer-timeout-ms 3000: a cut link fails the AllReduce with ECONNRESET after 2 s or more" "rc $rc after $el ms"; say "$T/pt$pt.log"; }
			else
				[ "$rc" != 0 ] && [ "$el" -lt 2000 ] && grep -q "$RESET" "$T/pt$pt.log" &&
					tap ok "peer-timeout-ms 800: the same fails after $el ms" ||
					{ tap not_ok "peer-timeout-ms 800: the same fails within 2 s" "rc $rc after $el ms"; say "$T/pt$pt.log"; }
			fi
		else
			i=0
			while [ "$($C -j comm show "$s" 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null)" = ready ] && [ $i -lt 300 ]; do
				sleep 0.1; i=$((i + 1))
			done
			touch "$T/pt$pt.go"
			xwait
			rc=$?
			[ "$rc" != 0 ] && grep -q "$RESET" "$T/pt$pt.log" &&
				tap ok "peer-timeout-ms $pt: the rank on the cut host fails with ECONNRESET" ||
				{ tap not_ok "peer-timeout-ms $pt: the rank on the cut host fails with ECONNRESET" "rc $rc"; say "$T/pt$pt.log"; }
		fi
		sync_point "pt$pt done" || break
	done
	sleep 1
	kill "$mon" 2>/dev/null
	wait "$mon" 2>/dev/null
	tune_here peer-timeout-ms 3000
	grep -q "^event failed comm $s .*error ECONNRESET reason no word within peer_timeout_ms host $other$" "$T/mon-pt.txt" &&
		tap ok "the monitor sees the communicator fail: no word within peer_timeout_ms from host $other" ||
		{ tap not_ok "the monitor sees the communicator fail: no word within peer_timeout_ms from host $other"; say "$T/mon-pt.txt"; }
	! grep -q "^event fallback" "$T/mon-pt.txt" &&
		tap ok "the monitor sees no fallback when TCP was asked for" ||
		{ tap not_ok "the monitor sees no fallback when TCP was asked for"; say "$T/mon-pt.txt"; }

	# -- unload, kernel log ------------------------------------------------------------
	sleep 1
	if rmmod collective; then tap ok "rmmod"; else tap not_ok "rmmod"; fi
	if coll_dmesg_splats > /dev/null; then
		coll_dmesg_splats | head -n 40 | sed 's/^/# dmesg| /'
		tap not_ok "kernel log"
	else
		tap ok "kernel log"
	fi
	dmesg | grep -c 'not reached over RDMA' | sed 's/^/# fallback notices in the log: /'
	coll_barrier 60 || true
	rm -rf "$T"
	return 0
}

if [ "${1:-}" = --guest ]; then
	guest_main
	exit
fi

# ---- on the host ----------------------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/netlink-hosts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
lock=${COLL_GUEST_LOCK:-/tmp/coll-guest.lock}
echo "TAP version 13"
n=0 fail=0
vrc=0
flock "$lock" "$root/selftests/rig/vms.sh" -n 2 --name netlink-hosts --mem 2G \
	--lossless --timeout "${NLH_TIMEOUT:-900}" --grace 120 \
	-- "$here/netlink-hosts.sh" --guest > "$tmp/out" 2> "$tmp/err" || vrc=$?
awk -v dir="$tmp" '/^===== guest [0-9]+ /{ g = $3; next } g != "" { print > (dir "/g" g) }' "$tmp/out"
for g in 0 1; do
	if ! grep -q '^@nl@ ' "$tmp/g$g" 2> /dev/null; then
		n=$((n + 1)) fail=$((fail + 1))
		echo "not ok $n netlink across hosts, guest $g: no results"
		continue
	fi
	while IFS= read -r line; do
		case $line in
		"@nl@ ok - "*) n=$((n + 1)); echo "ok $n guest $g: ${line#@nl@ ok - }" ;;
		"@nl@ not ok - "*) n=$((n + 1)) fail=$((fail + 1)); echo "not ok $n guest $g: ${line#@nl@ not ok - }" ;;
		"# "*) echo "# g$g: ${line#\# }" ;;
		esac
	done < <(grep -E '^(@nl@ |# )' "$tmp/g$g")
done
if [ "$vrc" != 0 ]; then
	echo "# vms.sh exited $vrc"
	sed 's/^/# /' "$tmp/err" | tail -n 30
fi
echo "1..$n"
[ "$fail" = 0 ] && [ "$vrc" = 0 ]
