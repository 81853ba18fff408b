#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2153 # GUEST_IPS, GUEST_COUNT, ... come from vms.sh
#
# bench-hosts.sh: the cross-host benchmark (make bench-hosts).  Boots
# BENCH_GUESTS qemu guests with selftests/rig/vms.sh (private network,
# rxe0, the remote-exec agent), loads collective.ko in each and, in the
# same boot, from guest 0:
#   1. ib_write_bw between guests 0 and 1 over rxe0 at every size: the
#      link's ceiling;
#   2. for each ranks-per-guest L in BENCH_LOCAL: coll_perf across the
#      guests over each transport in BENCH_TRANSPORTS (collrun's multi-host
#      form, COLL_TRANSPORT), then Open MPI's mpi_perf across the same guests
#      (mpirun through the rig's rexec agent, TCP BTL on 10.77.0.0/24);
# then prints, per L and primitive, the merged table of tools/compare-hosts.sh
# (busbw of each, ours vs Open MPI, each vs the link) and a summary.
# Takes the guest lock (/tmp/coll-guest.lock, COLL_GUEST_LOCK).
#
# Environment (host side; passed to the guests):
#   BENCH_GUESTS      guests (2; 2..8)
#   BENCH_SMP         vCPUs per guest (2)          BENCH_MEM   RAM per guest (2G)
#   BENCH_LOCAL       ranks per guest, a list ("1 2")
#   BENCH_TRANSPORTS  coll transports, a list ("rdma tcp"; also "auto",
#                     "rdma-busy": RDMA with module parameter busy_poll_us
#                     set to BENCH_BUSY_US in every guest for that run, and
#                     "rdma-qpsN": RDMA with rdma_qps=N, N from 2 to 8)
#   BENCH_BUSY_US     busy_poll_us of the "rdma-busy" runs (50)
#   BENCH_PRIMS       primitives, comma-separated, or "all" (all)
#   BENCH_ARGS        coll_perf/mpi_perf size options (-b 8 -e 2M -f 8 -n 5 -w 1)
#   BENCH_MPI         0: no Open MPI runs
#   BENCH_BW          0: no ib_write_bw
#   BENCH_BW_BYTES    bytes each ib_write_bw size moves (4M; 10..1000 iterations)
#   BENCH_INSMOD_ARGS module parameters (peer_timeout_ms=30000: see README.md)
#   BENCH_TIMEOUT     seconds for the whole boot (1500)
#   BENCH_LOSSLESS    1: the guests' switch over unix sockets (vms.sh
#                     --lossless), which queues rather than drops a frame
#                     while a guest is busy; 0: the UDP one, whose losses
#                     cost rxe a 0.5 s retransmission each (1)
#   BENCH_OUT         raw outputs (build/bench-hosts), shared with the guests
# Exit status: 0 when every coll_perf run succeeded with 0 wrong elements
# and the guests' kernel logs are clean.
#
# bench-hosts.sh --table [DIR]: the README's markdown table from the
# outputs of a run (default BENCH_OUT).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/.." && pwd -P)

: "${BENCH_GUESTS:=2}" "${BENCH_SMP:=2}" "${BENCH_MEM:=2G}" "${BENCH_LOCAL:=1 2}"
: "${BENCH_TRANSPORTS:=rdma tcp}" "${BENCH_PRIMS:=all}"
: "${BENCH_ARGS:=-b 8 -e 2M -f 8 -n 5 -w 1}" "${BENCH_MPI:=1}" "${BENCH_BW:=1}"
: "${BENCH_BW_BYTES:=4194304}" "${BENCH_INSMOD_ARGS=peer_timeout_ms=30000}"
: "${BENCH_BUSY_US:=50}" "${BENCH_TIMEOUT:=1500}" "${BENCH_OUT:=$root/build/bench-hosts}" "${BENCH_LOSSLESS:=1}"
RDV_PORT=29500
# the primitive names coll_perf prints, in its order (enum coll_prim)
ALL_PRIMS="allreduce broadcast reduce allgather reducescatter alltoall scatter gather barrier"

# --------------------------------------------------------------------------
# In the guests

log() { echo "# [$(cut -d' ' -f1 /proc/uptime)s] $*"; }

# bw_sizes: the sizes coll_perf steps through (-b, -e, -f of BENCH_ARGS).
bw_sizes() {
	# shellcheck disable=SC2086 # split on purpose
	set -- $BENCH_ARGS
	local b=8 e=$((32 << 20)) f=2 s
	while [ $# -gt 0 ]; do
		case $1 in
		-b) b=$(to_bytes "$2"); shift ;;
		-e) e=$(to_bytes "$2"); shift ;;
		-f) f=$2; shift ;;
		esac
		shift
	done
	for ((s = b; s <= e; s *= f)); do echo "$s"; done
}

to_bytes() {
	local v=$1 m=1
	case $v in
	*[kK]) m=1024; v=${v%?} ;;
	*[mM]) m=$((1 << 20)); v=${v%?} ;;
	*[gG]) m=$((1 << 30)); v=${v%?} ;;
	esac
	echo $((v * m))
}

bw_iters() {	# SIZE: iterations moving about BENCH_BW_BYTES, 10..1000
	local n=$((BENCH_BW_BYTES / $1))
	((n < 10)) && n=10
	((n > 1000)) && n=1000
	echo "$n"
}

# ib_write_bw, guest 1 serving (through rexec), guest 0 the client, at each
# size with 4 writes in flight and with perftest's default depth (up to 128,
# at most the iterations): on the rig's link, many writes in flight lose
# frames and stall on RC retransmission, few are latency-bound for small
# messages; the better of the two is the size's figure.  The ceiling for a
# size S is the best figure at any size <= S (a transfer of S bytes can go
# as smaller messages; the rig loses frames in long bursts, so ib_write_bw
# at 2 MiB is far below the link's capacity).  Writes "SIZE CEILING_GBPS
# MEASURED_GBPS DEPTH" lines (--report_gbits: Gb/s / 8).
run_link() {
	local out=$1 peer=$2 s d n line srv='' best bestd bw
	local sizes
	sizes=$(bw_sizes | tr '\n' ' ')
	: >"$out.raw"
	# The server side, through rexec: one ib_write_bw per run, in turn.
	for s in $sizes; do
		for d in 4 default; do
			srv+="timeout 120 ib_write_bw -d rxe0 -x 1 -F -s $s -n $(bw_iters "$s") $(bw_depth "$d") --report_gbits >/dev/null 2>&1; "
		done
	done
	"$COLL_REXEC" "$peer" "$srv" &
	local server=$!
	for s in $sizes; do
		best='' bestd=''
		for d in 4 default; do
			n=$(bw_iters "$s")
			# shellcheck disable=SC2046 # the depth option: none or two words
			if coll_retry 60 0.5 timeout 120 ib_write_bw -d rxe0 -x 1 -F -s "$s" -n "$n" \
				$(bw_depth "$d") --report_gbits "$peer" >"$BENCH_OUT/ib_write_bw-$s-$d.txt" 2>&1; then
				# "#bytes #iterations BW-peak BW-average MsgRate", in Gb/s
				line=$(grep -A1 '#bytes' "$BENCH_OUT/ib_write_bw-$s-$d.txt" | tail -n 1)
				bw=$(awk '{ printf "%.6f", $4 / 8 }' <<<"$line")
				if [ -z "$best" ] || awk -v a="$bw" -v b="$best" 'BEGIN { exit !(a > b) }'; then
					best=$bw bestd=$d
				fi
			else
				log "ib_write_bw -s $s (depth $d) failed (see $BENCH_OUT/ib_write_bw-$s-$d.txt)"
			fi
		done
		[ -z "$best" ] || echo "$s $best $bestd" >>"$out.raw"
	done
	wait "$server" 2>/dev/null
	{
		echo "# ib_write_bw -d rxe0 (RC WRITE, guest 0 -> guest 1), GB/s = 1e9 B/s"
		echo "# size  ceiling(best at <= size)  measured  tx_depth"
		awk '{ if ($2 > m) m = $2; printf "%s %.6f %s %s\n", $1, m, $2, $3 }' "$out.raw"
	} >"$out"
}

bw_depth() {	# DEPTH: the ib_write_bw option for a tx depth ("default": none)
	[ "$1" = default ] || echo "-t $1"
}

# run_coll L TRANSPORT OUT: coll_perf over every guest, L ranks each.
run_coll() {
	local local=$1 t=$2 out=$3 id port ip k=0 r rc=0 pids=()
	RDV_PORT=$((RDV_PORT + 1))
	port=$RDV_PORT
	id=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	# The id reaches the other guests on stdin (never on a command line).
	for ip in $GUEST_IPS; do
		if [ "$k" != 0 ]; then
			printf '%s\n' "$id" | "$COLL_REXEC" "$ip" "COLL_TRANSPORT=$t $T/collrun --id-fd 0 \
				--nnodes $GUEST_COUNT --node-rank $k --master $FIRST:$port -n $local -t 1200 \
				$T/coll_perf -p $BENCH_PRIMS $BENCH_ARGS" >"$out.g$k" 2>&1 &
			pids+=($!)
		fi
		k=$((k + 1))
	done
	# shellcheck disable=SC2086 # BENCH_ARGS splits on purpose
	COLL_TRANSPORT=$t "$T/collrun" --id-fd 3 --nnodes "$GUEST_COUNT" --node-rank 0 \
		--master "$FIRST:$port" -n "$local" -t 1200 \
		"$T/coll_perf" -p "$BENCH_PRIMS" $BENCH_ARGS >"$out" 2>"$out.err" 3<<<"$id" || rc=$?
	for k in "${pids[@]}"; do
		wait "$k" || { r=$?; [ "$rc" != 0 ] || rc=$r; }
	done
	return "$rc"
}

# set_param NAME VALUE: a module parameter, in every guest.
set_param() {
	local ip
	for ip in $GUEST_IPS; do
		if [ "$ip" = "$FIRST" ]; then
			echo "$2" >"/sys/module/collective/parameters/$1"
		else
			"$COLL_REXEC" "$ip" "echo $2 > /sys/module/collective/parameters/$1"
		fi
	done
}

# run_coll_as L NAME OUT: run_coll for a name of BENCH_TRANSPORTS.
run_coll_as() {
	local rc=0
	case $2 in
	rdma-busy)
		set_param busy_poll_us "$BENCH_BUSY_US" || return 1
		run_coll "$1" rdma "$3" || rc=$?
		set_param busy_poll_us 0
		return "$rc" ;;
	rdma-qps[2-8])
		set_param rdma_qps "${2#rdma-qps}" || return 1
		run_coll "$1" rdma "$3" || rc=$?
		set_param rdma_qps 1
		return "$rc" ;;
	*)	run_coll "$1" "$2" "$3" ;;
	esac
}

# run_mpi L OUT: mpi_perf over every guest, L ranks each (Open MPI, TCP BTL).
run_mpi() {
	local local=$1 out=$2 hosts='' ip
	for ip in $GUEST_IPS; do hosts+=${hosts:+,}$ip:$local; done
	# shellcheck disable=SC2086
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 1200 \
	mpirun --mca plm_rsh_agent "$COLL_REXEC" --host "$hosts" -np $((GUEST_COUNT * local)) \
		--mca pml ob1 --mca btl tcp,self,vader --mca btl_tcp_if_include 10.77.0.0/24 \
		--mca oob_tcp_if_include 10.77.0.0/24 \
		"$T/mpi_perf" -p "$BENCH_PRIMS" $BENCH_ARGS >"$out" 2>"$out.err"
}

rxe_counters() {	# one line: the rxe0 counters that say frames were lost
	local f c out=''
	for c in completer_retry_err duplicate_request out_of_seq_request rcvd_seq_err retry_exceeded_err; do
		f=/sys/class/infiniband/rxe0/ports/1/hw_counters/$c
		[ -r "$f" ] && out+=" $c=$(cat "$f")"
	done
	echo "${out# }"
}

guest_driver() {
	local peer fail=0 l t f prims p names link
	peer=$(coll_peer_ips | head -n 1)
	mkdir -p "$BENCH_OUT" && rm -f "$BENCH_OUT"/*.txt "$BENCH_OUT"/*.g[0-9]* "$BENCH_OUT"/*.err
	{
		echo "# collective.ko across $GUEST_COUNT qemu guests (TCG, $(nproc) vCPU each, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)), kernel $(uname -r)"
		echo "# link: rxe0 (soft-RoCE) on virtio-net, MTU $(cat /sys/class/net/eth0/mtu), udp-hub on the host ($([ "${BENCH_LOSSLESS:-0}" = 1 ] && echo "unix sockets, lossless" || echo UDP))"
		echo "# module: ${BENCH_INSMOD_ARGS:-defaults}; options: -p $BENCH_PRIMS $BENCH_ARGS (float sum)"
	} | tee "$BENCH_OUT/conditions.txt"

	if [ "$BENCH_BW" != 0 ]; then
		log "ib_write_bw (the link's ceiling)"
		run_link "$BENCH_OUT/link.txt" "$peer"
		sed 's/^/#   /' "$BENCH_OUT/link.txt"
	fi
	for l in $BENCH_LOCAL; do
		for t in $BENCH_TRANSPORTS; do
			log "coll_perf: $GUEST_COUNT guests x $l ranks, transport $t (rxe0: $(rxe_counters))"
			if ! run_coll_as "$l" "$t" "$BENCH_OUT/coll-${l}x-$t.txt"; then
				log "coll_perf ${l}x $t FAILED:"
				cat "$BENCH_OUT/coll-${l}x-$t.txt.err" "$BENCH_OUT/coll-${l}x-$t.txt".g* 2>/dev/null |
					grep -v '^#' | head -n 20 | sed 's/^/#   /'
				fail=1
			fi
		done
		if [ "$BENCH_MPI" != 0 ]; then
			log "Open MPI mpi_perf: $GUEST_COUNT guests x $l ranks, TCP BTL (rxe0: $(rxe_counters))"
			if ! run_mpi "$l" "$BENCH_OUT/mpi-${l}x.txt"; then
				log "mpi_perf ${l}x failed:"
				grep -v '^#' "$BENCH_OUT/mpi-${l}x.txt.err" | head -n 20 | sed 's/^/#   /'
			fi
		fi
	done
	log "done (rxe0: $(rxe_counters))"

	# ---- tables ----
	prims=$BENCH_PRIMS
	[ "$prims" != all ] || prims=${ALL_PRIMS// /,}
	link=()
	[ "$BENCH_BW" = 0 ] || [ ! -s "$BENCH_OUT/link.txt" ] || link=(-l "$BENCH_OUT/link.txt")
	for l in $BENCH_LOCAL; do
		for p in $ALL_PRIMS; do
			case ,$prims, in *,$p,*) ;; *) continue ;; esac
			echo "#"
			echo "# ==== $p: $GUEST_COUNT guests x $l ranks ($((GUEST_COUNT * l)) ranks)"
			names=()
			for t in $BENCH_TRANSPORTS; do
				f=$BENCH_OUT/coll-${l}x-$t.txt
				[ -s "$f" ] || f=-
				names+=("${t//-/_}=$f")
			done
			f=$BENCH_OUT/mpi-${l}x.txt
			[ "$BENCH_MPI" != 0 ] && [ -s "$f" ] || f=-
			names+=("mpi=$f")
			"$T/compare-hosts.sh" -p "$p" "${link[@]}" "${names[@]}" |
				tee "$BENCH_OUT/table-${l}x-$p.txt" || fail=1
		done
	done
	summary
	return "$fail"
}

# One line per ranks-per-guest and primitive: the largest size's busbw of
# each run and the link, and the geometric means of the ratios.
summary() {
	local l p f
	echo "#"
	echo "# ==== summary (largest size: busbw MB/s; geometric means over all sizes)"
	for l in $BENCH_LOCAL; do
		for p in $ALL_PRIMS; do
			f=$BENCH_OUT/table-${l}x-$p.txt
			[ -s "$f" ] || continue
			awk -v tag="${GUEST_COUNT}x$l $p" '
				/^#       size/ { for (i = 2; i <= NF; i++) col[i - 1] = $i; nc = NF - 1; next }
				/^# geometric mean/ { gm = gm sprintf(" %s=%s", $4, $NF); next }
				/^#/ { next }
				{ last = $0 }
				END {
					n = split(last, v, " "); s = "size " v[1]
					for (i = 2; i <= nc && i <= n; i++) if (col[i] ~ /MBps$/) s = s " " col[i] "=" v[i]
					printf "# %-22s %s |%s\n", tag, s, gm
				}' "$f"
		done
	done
}

guest_main() {
	# shellcheck source=/dev/null # selftests/rig/guest-lib.sh
	. "$COLL_GUEST_LIB"
	T=$COLL_ROOT/tools
	FIRST=${GUEST_IPS%% *}
	local rc=0
	coll_wait_peers 60 || { echo "# peers unreachable"; return 1; }
	# shellcheck disable=SC2086 # module parameters split on purpose
	coll_insmod "$COLL_ROOT/kmod/collective.ko" $BENCH_INSMOD_ARGS || return 1
	coll_barrier 120 || return 1
	if [ "$GUEST_INDEX" = 0 ]; then
		guest_driver || rc=1
		coll_barrier 120 || rc=1
	else
		# The driver runs our parts through rexec; wait for its end.
		coll_barrier $((BENCH_TIMEOUT - 60)) || rc=1
	fi
	rmmod collective || { echo "# rmmod failed"; rc=1; }
	if coll_dmesg_splats >/dev/null; then
		echo "# kernel log of guest $GUEST_INDEX:"
		coll_dmesg_splats | head -n 40 | sed 's/^/#   /'
		rc=1
	fi
	return "$rc"
}

# markdown_table DIR: the README's table from a run's table-*.txt files.
markdown_table() {
	local dir=$1 f l p
	echo "| ranks | primitive | 2 MiB busbw, MB/s: rdma / tcp / Open MPI / link | ours/MPI at 2 MiB: rdma, tcp | smallest size, ms: rdma / tcp / MPI | geometric mean ours/MPI: rdma, tcp |"
	echo "|---|---|---|---|---|---|"
	for f in "$dir"/table-*x-*.txt; do
		[ -s "$f" ] || continue
		l=${f##*/table-}; l=${l%%x-*}
		p=${f##*x-}; p=${p%.txt}
		awk -v l="$l" -v p="$p" -v order="allreduce broadcast reduce allgather reducescatter alltoall scatter gather barrier" '
			/^#       size/ { for (i = 2; i <= NF; i++) col[$i] = i - 1; next }
			/^# geometric mean/ { gm[$4] = $NF; next }
			/^#/ { next }
			{ n++; if (n == 1) first = $0; last = $0 }
			function f(row, name,   v) { split(row, v, " "); return (name in col) ? v[col[name]] : "-" }
			function ms(x) { return x == "-" ? "-" : sprintf("%.1f", x / 1000) }
			END {
				split(order, o, " "); for (i in o) if (o[i] == p) k = i
				if (p == "barrier")
					printf "%d|%s | %s | - | %s, %s | %s / %s / %s | |\n", k, l, p,
						gm["rdma/mpi"], gm["tcp/mpi"], ms(f(first, "rdma_us")), ms(f(first, "tcp_us")), ms(f(first, "mpi_us"))
				else
					printf "%d|%s | %s | %s / %s / %s / %s | %s, %s | %s / %s / %s | %s, %s |\n", k, l, p,
						f(last, "rdma_MBps"), f(last, "tcp_MBps"), f(last, "mpi_MBps"), f(last, "link_MBps"),
						f(last, "rdma/mpi"), f(last, "tcp/mpi"),
						ms(f(first, "rdma_us")), ms(f(first, "tcp_us")), ms(f(first, "mpi_us")),
						gm["rdma/mpi"], gm["tcp/mpi"]
			}' "$f"
	done | sort -t'|' -k2,2n -k1,1n | cut -d'|' -f2- | sed 's/^/| /; s/ *$//'
}

if [ "${1:-}" = --guest ]; then
	guest_main
	exit
fi
if [ "${1:-}" = --table ]; then
	markdown_table "${2:-$BENCH_OUT}"
	exit
fi

# --------------------------------------------------------------------------
# On the host

for p in collrun coll_perf compare-hosts.sh; do
	[ -x "$here/$p" ] || { echo "bench-hosts.sh: $here/$p missing (make)" >&2; exit 1; }
done
if [ "$BENCH_MPI" != 0 ] && [ ! -x "$here/mpi_perf" ]; then
	echo "bench-hosts.sh: no mpi_perf (mpicc missing?): BENCH_MPI=0" >&2
	BENCH_MPI=0
fi
[ -f "$root/kmod/collective.ko" ] || { echo "bench-hosts.sh: no kmod/collective.ko (make guest-build)" >&2; exit 1; }
mkdir -p "$BENCH_OUT"
lock=${COLL_GUEST_LOCK:-/tmp/coll-guest.lock}
envs=()
for v in BENCH_LOCAL BENCH_TRANSPORTS BENCH_PRIMS BENCH_ARGS BENCH_MPI BENCH_BW BENCH_BW_BYTES \
	BENCH_INSMOD_ARGS BENCH_TIMEOUT BENCH_OUT BENCH_LOSSLESS; do
	envs+=(--env "$v=${!v}")
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-hosts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "# bench-hosts: $BENCH_GUESTS guests, waiting for $lock" >&2
rc=0
# The machine, and how busy it was around the boot (the figures are only
# as quiet as the host).
{
	echo "# host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(uname -r)"
	echo "# host load average before the boot: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$tmp/host"
lossless=()
[ "$BENCH_LOSSLESS" = 1 ] && lossless=(--lossless)
flock "$lock" "$root/selftests/rig/vms.sh" -n "$BENCH_GUESTS" --smp "$BENCH_SMP" --mem "$BENCH_MEM" \
	--rexec --name bench-hosts --timeout "$BENCH_TIMEOUT" --grace 120 "${envs[@]}" \
	"${lossless[@]}" \
	-- "$here/bench-hosts.sh" --guest >"$tmp/out" 2>"$tmp/err" || rc=$?
# Guest 0's output is the report; the others' only when they have something to say.
echo "# host load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$tmp/host"
{
	cat "$tmp/host"
	awk '/^===== guest 0 /{ on = 1; next } /^===== guest /{ on = 0 } on' "$tmp/out"
} | tee "$BENCH_OUT/report.txt"
awk '/^===== guest [1-9]/{ on = 1; hdr = $0; next } on && NF { if (hdr) { print "# " hdr; hdr = "" } print }' "$tmp/out"
if [ "$rc" != 0 ]; then
	echo "# vms.sh exited $rc"
	tail -n 30 "$tmp/err" | sed 's/^/# /'
fi
echo "# raw outputs in $BENCH_OUT (report.txt, tables, coll-*.txt, mpi-*.txt, link.txt)"
exit "$rc"
