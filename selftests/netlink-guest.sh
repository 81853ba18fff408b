#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs INSIDE a qemu guest, as root (selftests/netlink.sh boots it): the
# generic netlink family "collective" through collctl and through the
# kernel's own YNL CLI (tools/ynl/cli.py, with uapi/collective.yaml).
# TAP on stdout.  Never run it on a machine whose kernel you care about.
set -u

if ! grep -qi qemu /sys/class/dmi/id/sys_vendor 2>/dev/null; then
	echo "Bail out! not a qemu guest"
	exit 1
fi

ROOT=${COLL_ROOT:-$(pwd)}
cd "$ROOT" || exit 1
# COLL_ROOT names the project here, but the library reads it as the
# rendezvous address: the ranks must not see it.
unset COLL_ROOT
# What the tunables and statistics show is the module's own work: the
# ranks' small calls go through it, not through mapped slots in user space
# (their own section below unsets this).
export COLL_MAP=0
BIN=${COLL_BUILD:-$ROOT/build}/selftests
C=$ROOT/tools/collctl
LOAD=$BIN/coll_nl_load
RUN=$ROOT/tools/collrun
PY=/usr/bin/python3
# shellcheck source=rig/guest-lib.sh
. "$COLL_GUEST_LIB"		# coll_pyj, coll_wait_file
YNL="$PY $ROOT/tools/ynl/cli.py --spec $ROOT/uapi/collective.yaml --no-schema --output-json"
KO=$ROOT/kmod/collective.ko
T=$(mktemp -d)
chmod 777 "$T"
MARK="collective-netlink: start $$"
TR=/sys/kernel/tracing
NOBODY=(setpriv --reuid 65534 --regid 65534 --clear-groups)
OTHER=(setpriv --reuid 1 --regid 1 --clear-groups)

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n $1${2:+ # $2}"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n $1${2:+ # $2}"; }
check() {	# check "description" command...: ok if it succeeds
	local d=$1
	shift
	if "$@" > "$T/check.out" 2>&1; then
		ok "$d"
	else
		not_ok "$d"
		sed 's/^/# /' "$T/check.out" | head -40
	fi
}
diag() { sed 's/^/# /'; }

# The one live communicator's serial (the newest).
comm_serial() {
	$C -j comm show > "$T/comms.json" && coll_pyj "$T/comms.json" 'd[-1]["comm"]'
}

# Two ranks as root in the background: bg_load NAME LOAD-ARGS...; rank 0
# creates $T/NAME.ready once their collectives are done.
bg_load() {
	local name=$1
	shift
	"$RUN" -n 2 -t 120 "$LOAD" -r "$T/$name.ready" "$@" > "$T/$name.log" 2>&1 &
}

echo "TAP version 13"
echo "$MARK" > /dev/kmsg

# ---- load ----------------------------------------------------------------
for d in $(modinfo -F depends "$KO" | tr , ' '); do modprobe "$d"; done
if insmod "$KO"; then ok "insmod collective"; else
	not_ok "insmod collective"
	echo "1..$n"
	exit 1
fi
mountpoint -q $TR || mount -t tracefs nodev $TR 2>/dev/null ||
	mount -t debugfs nodev /sys/kernel/debug
[ -d $TR/events ] || TR=/sys/kernel/debug/tracing
# The two tracepoints the checks below read, switched on once for the
# whole run: each switch patches kernel text (text_poke_bp(), an IPI to
# every vCPU), and a 2-vCPU TCG guest once stalled 26 s in one (a soft
# lockup before any rank ran).  Each check empties the trace first and
# reads only its own event's lines.
echo 1 > $TR/events/collective/coll_op_start/enable
echo 1 > $TR/events/collective/coll_chunk/enable

# ---- reading the tunables: collctl text, JSON, the YNL CLI, unprivileged -
$C tune show > "$T/tune.txt" 2>&1
$C -j tune show > "$T/tune.json" 2>&1
$C -j -p tune show > "$T/tune-p.json" 2>&1
check "collctl -j and -p tune show parse and say what the text says" \
	$PY -c '
import json, sys
t = dict(l.split() for l in open(sys.argv[1]) if l.strip())
j = json.load(open(sys.argv[2])); p = json.load(open(sys.argv[3]))
assert j == p, (j, p)
assert len(j) == 24 and {k: str(v) for k, v in j.items()} == t, (j, t)
' "$T/tune.txt" "$T/tune.json" "$T/tune-p.json"
$YNL --do tune-get --json '{}' > "$T/ynl-tune.json" 2>&1
check "the YNL CLI's tune-get agrees with collctl" \
	$PY -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert a == b, (a, b)
' "$T/ynl-tune.json" "$T/tune.json"
check "an unprivileged user reads the tunables" "${NOBODY[@]}" $C tune show

# ---- setting them: EPERM, extack, ranges -----------------------------------
"${NOBODY[@]}" $C tune set solo-bytes 0 > "$T/eperm.txt" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "module-wide tunables need CAP_NET_ADMIN" "$T/eperm.txt" &&
   [ "$($C -j tune show > "$T/t.json"; coll_pyj "$T/t.json" 'd["solo-bytes"]')" = 32768 ]; then
	ok "unprivileged module-wide set: EPERM with the kernel's message, nothing changed"
else
	not_ok "unprivileged module-wide set: EPERM with the kernel's message, nothing changed"
	diag < "$T/eperm.txt"
fi
$YNL --do tune-set --json '{"solo-bytes": 1}' > /dev/null 2>&1 &&
	[ "$($C -j tune show > "$T/t.json"; coll_pyj "$T/t.json" 'd["solo-bytes"]')" = 1 ] &&
	$C tune set solo-bytes 32768 &&
	ok "root sets a module-wide tunable through the YNL CLI" ||
	not_ok "root sets a module-wide tunable through the YNL CLI"

bad_value() {	# bad_value EXPECTED-TEXT ARGS...
	local want=$1
	shift
	if ! $C tune set "$@" > "$T/bad.txt" 2>&1 && grep -qF "$want" "$T/bad.txt"; then
		ok "tune set $* fails: $want"
	else
		not_ok "tune set $* fails: $want"
		diag < "$T/bad.txt"
	fi
}
bad_value "Error: integer out of range: solo-bytes (valid: 0..16777216)" solo-bytes 16777217
bad_value "Error: integer out of range: allreduce-algo (valid: 0..5)" allreduce.algo 6
bad_value "Error: integer out of range: ring-chunk-bytes (valid: 1024..67108864)" ring-chunk-bytes 1000
bad_value "Error: integer out of range: join-timeout-ms (valid: 100..3600000)" join-timeout-ms 0
bad_value "Error: no such communicator: comm" comm 999999 spin-ns 0
$YNL --do tune-set --json '{"spin-ns": 2000000000}' > "$T/ynl-bad.txt" 2>&1
grep -q "integer out of range" "$T/ynl-bad.txt" && grep -q "spin-ns" "$T/ynl-bad.txt" &&
	grep -q "'max-value': 1000000000" "$T/ynl-bad.txt" &&
	ok "the YNL CLI shows the same extack (attribute and range)" ||
	{ not_ok "the YNL CLI shows the same extack (attribute and range)"; diag < "$T/ynl-bad.txt"; }

# ---- a forced algorithm, module-wide: stats and the coll_op_start tracepoint
: > $TR/trace
$C tune set allreduce.algo ring
bg_load ring -H 3
coll_wait_file "$T/ring.ready" 60
s=$(comm_serial)
$C -j stats comm "$s" > "$T/ring-stats.json"
$C stats comm "$s" > "$T/ring-stats.txt" 2>&1
wait
$C tune set allreduce.algo auto
if [ "$(coll_pyj "$T/ring-stats.json" '[(a["algo"], a["calls"]) for p in d["prims"] if p["prim"] == "allreduce" for a in p["algos"]]')" = "[('ring', 10)]" ] &&
   [ "$(grep -c "coll_op_start: comm=$s seq=[0-9]* allreduce algo=1 " $TR/trace)" = 10 ]; then
	ok "module-wide allreduce.algo ring: 10 ring AllReduces in stats and in coll_op_start"
else
	not_ok "module-wide allreduce.algo ring: 10 ring AllReduces in stats and in coll_op_start"
	diag < "$T/ring-stats.json"; grep coll_op_start $TR/trace | head -5 | diag
	diag < "$T/ring.log"
fi

# ---- the automatic choice within one host: the algo_rules table ----------
AR=/sys/module/collective/parameters/algo_rules
SB=/sys/module/collective/parameters/slot_bytes
ar_default=$(cat $AR)
sb_default=$(cat $SB)
# algos NP BYTES: the algorithms (coll_op_start's algo=) of 3 AllReduces
algos() {
	: > $TR/trace
	"$RUN" -n "$1" -t 60 "$LOAD" -b "$2" -n 3 > "$T/algos.log" 2>&1 ||
		diag < "$T/algos.log"
	sed -n 's/.*coll_op_start: .* allreduce algo=\([0-9]\) .*/\1/p' $TR/trace |
		tr '\n' ' '
}
ar_bad=0
for bad in "allreduce@1M=hier" "allreduce@1M=auto" "allreduce/0@1K=ring" \
	   "allreduce/1025@1K=ring" "nosuch@1K=ring" "allreduce@=ring" \
	   "allreduce@1Q=ring" "allreduce=ring" "allreduce@1K=ring allreduce/2@1024=tree" \
	   "$(for i in $(seq 65); do printf 'reduce@%d=ring ' "$i"; done)"; do
	if echo "$bad" > $AR 2> "$T/ar.err" || ! grep -q "Invalid argument\|too long" "$T/ar.err" ||
	   [ "$(cat $AR)" != "$ar_default" ]; then
		ar_bad=1
		echo "'$bad' accepted or changed the table" | diag
		diag < "$T/ar.err"
	fi
done
[ $ar_bad = 0 ] && ok "algo_rules: bad rules refused (EINVAL/E2BIG), the table unchanged" ||
	not_ok "algo_rules: bad rules refused (EINVAL/E2BIG), the table unchanged"
echo "allreduce@8K=ring, allreduce/4@0=tree  broadcast@1K=tree" > $AR
check "algo_rules reads back sorted, ranks and suffixes spelled out" \
	test "$(cat $AR)" = "allreduce/2@8K=ring allreduce/4@0=tree broadcast/2@1K=tree"
echo 0 > $SB		# no eager slots: every call takes the task path
a1=$(algos 2 4096) a2=$(algos 2 16384) a3=$(algos 3 65536) a4=$(algos 4 1024)
$C tune set allreduce.algo naive
a5=$(algos 2 16384)
$C tune set allreduce.algo auto
echo none > $AR
a6=$(algos 2 16384)
echo "$sb_default" > $SB
echo "$ar_default" > $AR
# direct=2 ring=1 naive=3 tree=4
if [ "$a1|$a2|$a3|$a4|$a5|$a6" = "2 2 2 |1 1 1 |1 1 1 |4 4 4 |3 3 3 |2 2 2 " ]; then
	ok "algo_rules pick by size and ranks (2 ranks 4K direct, 16K ring; 3 ranks ring; 4 ranks tree); a forced algorithm wins; none: direct"
else
	not_ok "algo_rules pick by size and ranks (2 ranks 4K direct, 16K ring; 3 ranks ring; 4 ranks tree); a forced algorithm wins; none: direct" \
		"$a1|$a2|$a3|$a4|$a5|$a6"
fi
check "algo_rules restored to the default" test "$(cat $AR)" = "$ar_default"

# ---- pins: the first call pins its buffers, the registration cache serves
# the other nine (reg_cache, on by default)
coll_pyj "$T/ring-stats.json" '[(p["pins"], p["pinned-pages"] >= p["pins"], p["reg-hits"]) for p in d["prims"] if p["prim"] == "allreduce"]' > "$T/pins.txt"
[ "$(cat "$T/pins.txt")" = "[(4, True, 36)]" ] && grep -qw "pins 4" "$T/ring-stats.txt" &&
	grep -qw "reg-hits 36" "$T/ring-stats.txt" &&
	ok "stats: 10 AllReduces of 2 ranks pinned 4 buffers, 36 registration-cache hits" ||
	{ not_ok "stats: 10 AllReduces of 2 ranks pinned 4 buffers, 36 registration-cache hits" "$(cat "$T/pins.txt")"; diag < "$T/ring-stats.txt"; }

# ---- a rank withholding its call; per-communicator tuning by its owner ------
# Rank 1 withholds its call until wh.go exists (at most 90 s), and both
# hold the communicator until wh.done exists: a clock (12 s, then 8) ran
# out on a slow machine before the tuning below or the YNL CLI's read.
rm -f "$T/wh.go" "$T/wh.done"
"${NOBODY[@]}" "$RUN" -n 2 -t 180 "$LOAD" -w "1:90:$T/wh.go" -H "90:$T/wh.done" -r "$T/wh.ready" > "$T/wh.log" 2>&1 &
i=0
until [ -n "$("${NOBODY[@]}" $C -j op show 2>/dev/null | $PY -c 'import json,sys; print(json.load(sys.stdin) or "")')" ] || [ $i -ge 100 ]; do
	sleep 0.1; i=$((i + 1))
done
sleep 1.2
s=$("${NOBODY[@]}" $C -j comm show > "$T/c.json"; coll_pyj "$T/c.json" 'd[-1]["comm"]')
"${NOBODY[@]}" $C op show > "$T/op.txt" 2>&1
"${NOBODY[@]}" $C -j op show > "$T/op.json" 2>&1
$YNL --dump op-get > "$T/ynl-op.json" 2>&1
"${NOBODY[@]}" $C diag -t 1000 > "$T/diag-hung.txt" 2>&1
"${OTHER[@]}" $C -j comm show > "$T/other.json" 2>&1
"${OTHER[@]}" $C tune set comm "$s" allreduce.algo tree > "$T/other-set.txt" 2>&1
other_rc=$?
"${NOBODY[@]}" $C tune set comm "$s" allreduce.algo tree > "$T/own-set.txt" 2>&1
own_rc=$?
"${NOBODY[@]}" $C -j tune show comm "$s" > "$T/own-tune.json" 2>&1
touch "$T/wh.go"
if grep -q "^comm $s seq 0 prim allreduce .* state arriving .* arrived 1 missing 1$" "$T/op.txt" &&
   [ "$(coll_pyj "$T/op.json" '[(o["comm"], o["seq"], o["missing"]) for o in d]')" = "[($s, 0, [1])]" ]; then
	ok "collctl op show names the rank withholding its call (rank 1)"
else
	not_ok "collctl op show names the rank withholding its call (rank 1)"
	diag < "$T/op.txt"; diag < "$T/op.json"
fi
check "the YNL CLI's op-get agrees with collctl" $PY -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert len(a) == len(b) == 1, (a, b)
for k in ("comm", "seq", "prim", "algo", "bytes", "state", "arrived", "missing"):
    assert a[0][k] == b[0][k], (k, a, b)
' "$T/ynl-op.json" "$T/op.json"
grep -q "comm $s: allreduce seq 0 has waited .* s for rank 1, which has not called it" "$T/diag-hung.txt" &&
	ok "collctl diag names the hung collective and the rank" ||
	{ not_ok "collctl diag names the hung collective and the rank"; diag < "$T/diag-hung.txt"; }
[ "$(cat "$T/other.json")" = "[]" ] && [ $other_rc -ne 0 ] &&
	grep -q "no such communicator" "$T/other-set.txt" &&
	ok "another user neither sees nor tunes the communicator" ||
	{ not_ok "another user neither sees nor tunes the communicator"; diag < "$T/other.json"; diag < "$T/other-set.txt"; }
[ $own_rc -eq 0 ] && [ "$(coll_pyj "$T/own-tune.json" '(d["allreduce-algo"], d["overridden"])')" = "('tree', ['allreduce-algo'])" ] &&
	ok "its owner (unprivileged) tunes the communicator" ||
	{ not_ok "its owner (unprivileged) tunes the communicator"; diag < "$T/own-set.txt"; diag < "$T/own-tune.json"; }
coll_wait_file "$T/wh.ready" 60
"${NOBODY[@]}" $C -j stats comm "$s" > "$T/wh-stats.json" 2>&1
$YNL --do stats-get --json "{\"comm\": $s}" > "$T/ynl-stats.json" 2>&1
touch "$T/wh.done"
wait
# The withheld first call went the eager path (4 KiB, AUTO, nothing forced
# then); rank 1 follows it there, tuned or not; the nine after run tree.
if [ "$(coll_pyj "$T/wh-stats.json" '[(a["algo"], a["calls"], p["eager"], p["calls"]) for p in d["prims"] if p["prim"] == "allreduce" for a in p["algos"]]')" = "[('tree', 9, 1, 10)]" ]; then
	ok "per-communicator allreduce.algo tree: the withheld call eager, then 9 tree AllReduces in its stats"
else
	not_ok "per-communicator allreduce.algo tree: the withheld call eager, then 9 tree AllReduces in its stats"
	diag < "$T/wh-stats.json"; diag < "$T/wh.log"
fi
check "the YNL CLI's stats-get agrees with collctl" $PY -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
pa = {p["prim"]: p for p in a["prim"]}; pb = {p["prim"]: p for p in b["prims"]}
assert a["comm"] == b["comm"] and pa.keys() == pb.keys(), (a, b)
for k, p in pa.items():
    q = pb[k]
    assert (p["calls"], p["bytes"], p["time-ns"], p["hist"], p["pins"], p["pinned-pages"], p["reg-hits"], p["eager"]) == (q["calls"], q["bytes"], q["time-ns"], q["hist"], q["pins"], q["pinned-pages"], q["reg-hits"], q["eager"]), (p, q)
' "$T/ynl-stats.json" "$T/wh-stats.json"

# ---- thresholds move the path: solo-bytes (one thread runs it all) ----------
# The pids that ran the chunks of each collective, from coll_chunk.
max_threads() {
	awk '/coll_chunk:/ { split($1, a, "-"); pid = a[length(a)];
		match($0, /comm=[0-9]+ seq=[0-9]+/); k = substr($0, RSTART, RLENGTH);
		if (!seen[k "," pid]++) n[k]++ }
	     END { m = 0; for (k in n) if (n[k] > m) m = n[k]; print m }' $TR/trace
}
# 4 MiB AllReduces (8 MiB moved, below 16 MiB) in 16 KiB chunks: long
# enough (tens of ms under TCG) that the rank that arrived first is awake
# and claiming chunks before the other has claimed them all, even when
# both ranks share one vCPU and the waker runs out its time slice first.
# (64 KiB ones could end within the 0.1-0.2 ms a sleeping vCPU takes to
# wake; 1 MiB ones, 5 of them, all ran on one thread once in CI.)
solo_run() {	# solo_run SOLO_BYTES: the most threads one collective used
	$C tune set solo-bytes "$1" exec-chunk-bytes 16384
	: > $TR/trace
	coll_bounded 150 "$RUN" -n 2 -t 120 "$LOAD" -b 4194304 -n 10 > "$T/solo.log" 2>&1
	max_threads
}
solo_on=$(solo_run 16777216)
solo_off=$(solo_run 0)
$C tune set solo-bytes 32768 exec-chunk-bytes 65536
[ "$solo_on" = 1 ] && [ "$solo_off" = 2 ] &&
	ok "solo-bytes: 4 MiB AllReduces run by one thread at 16 MiB, by both ranks at 0" ||
	not_ok "solo-bytes: 4 MiB AllReduces run by one thread at 16 MiB, by both ranks at 0" \
		"threads: $solo_on and $solo_off"

# ---- exec-chunk-bytes: the number of chunks ----------------------------------
chunks() {	# chunks EXEC_CHUNK_BYTES: coll_chunk events of one 64 KiB AllReduce
	$C tune set exec-chunk-bytes "$1"
	: > $TR/trace
	coll_bounded 150 "$RUN" -n 2 -t 120 "$LOAD" -b 65536 -n 1 > "$T/chunk.log" 2>&1
	grep -c "coll_chunk:" $TR/trace
}
c64=$(chunks 65536)
c4=$(chunks 4096)
$C tune set exec-chunk-bytes 65536
[ "$c4" -gt $((c64 * 2)) ] &&
	ok "exec-chunk-bytes: 4 KiB claims make $c4 chunks where 64 KiB made $c64" ||
	not_ok "exec-chunk-bytes: 4 KiB claims make more chunks" "$c4 vs $c64"

# ---- ring-chunk-bytes: the rounds of a forced ring -----------------------------
tune_get() { $C -j tune show > "$T/t.json" && coll_pyj "$T/t.json" "d[\"$1\"]"; }
rcb=$(tune_get ring-chunk-bytes)
rounds() {	# rounds RING_CHUNK_BYTES: rounds of one 1 MiB ring AllReduce
	$C tune set allreduce.algo ring ring-chunk-bytes "$1"
	: > $TR/trace
	coll_bounded 150 "$RUN" -n 2 -t 120 "$LOAD" -b 1048576 -n 1 > "$T/rcb.log" 2>&1 ||
		diag < "$T/rcb.log" >&2
	sed -n 's/.*coll_op_start: .* allreduce algo=1 rounds=\([0-9]*\) .*/\1/p' $TR/trace | head -1
}
r4=$(rounds 4096)
r256=$(rounds 262144)
$C tune set allreduce.algo auto ring-chunk-bytes "$rcb"
[ -n "$r4" ] && [ -n "$r256" ] && [ "$r4" -gt $((r256 * 4)) ] &&
	ok "ring-chunk-bytes: a 1 MiB ring AllReduce takes $r4 rounds in 4 KiB chunks, $r256 in 256 KiB" ||
	not_ok "ring-chunk-bytes: more rounds in smaller chunks" "rounds '$r4' and '$r256'"

# ---- plan-cache: the plans a communicator keeps (COLL_INFO) ----------------------
pc=$(tune_get plan-cache)
plans() {	# plans PLAN_CACHE: plans held after 5 shapes, communicator alive
	$C tune set plan-cache "$1"
	coll_bounded 150 "$RUN" -n 2 -t 120 "$LOAD" -b 65536 -n 10 -s 5 -i > "$T/pc.log" 2>&1 ||
		diag < "$T/pc.log" >&2
	sed -n 's/^plans=//p' "$T/pc.log" | sort -u | tr '\n' ' '
}
p16=$(plans 16)
p2=$(plans 2)
p0=$(plans 0)
$C tune set plan-cache "$pc"
[ "$p16" = "5 " ] && [ "$p2" = "2 " ] && [ "$p0" = "0 " ] &&
	ok "plan-cache: 5 shapes leave 5 plans at 16, 2 at 2, none at 0" ||
	not_ok "plan-cache: 5 shapes leave 5 plans at 16, 2 at 2, none at 0" \
		"plans '$p16' '$p2' '$p0'"

# ---- max-requests: the non-blocking requests a descriptor may hold ----------------
mr=$(tune_get max-requests)
queue() {	# queue MAX_REQUESTS: the lines of 3 non-blocking AllReduces, twice
	$C tune set max-requests "$1"
	coll_bounded 150 "$RUN" -n 2 -t 120 "$LOAD" -n 0 -q 3 > "$T/mr.log" 2>&1 ||
		diag < "$T/mr.log" >&2
	grep '^accepted=' "$T/mr.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';'
}
q2=$(queue 2)
q3=$(queue 3)
$C tune set max-requests "$mr"
[ "$q2" = " 4 accepted=2 err=ENOSPC;" ] && [ "$q3" = " 4 accepted=3 err=none;" ] &&
	ok "max-requests: at 2 the third non-blocking call gets ENOSPC (twice per rank), at 3 none" ||
	not_ok "max-requests: at 2 the third non-blocking call gets ENOSPC, at 3 none" "'$q2' '$q3'"

# ---- max-comms: the communicators a process may be a member of -------------------
mc=$(tune_get max-comms)
more() {	# more MAX_COMMS EXTRA: what joining EXTRA more communicators gave
	$C tune set max-comms "$1"
	coll_bounded 150 "$RUN" -n 2 -t 120 "$LOAD" -n 1 -c "$2" > "$T/mc.log" 2>&1 ||
		diag < "$T/mc.log" >&2
	grep '^comms=' "$T/mc.log" | sort -u | tr '\n' ';'
}
c22=$(more 2 2)
c21=$(more 2 1)
$C tune set max-comms "$mc"
[ "$c22" = "comms=1 err=EMFILE;" ] && [ "$c21" = "comms=1 err=none;" ] &&
	ok "max-comms: at 2, a process in one communicator joins one more, then EMFILE" ||
	not_ok "max-comms: at 2, one more, then EMFILE" "'$c22' '$c21'"

# ---- join-timeout-ms: a rank alone gives up in time ------------------------------
$C tune set join-timeout-ms 300
t0=$(date +%s%N)
RANK=0 WORLD_SIZE=2 COLL_ID=0123456789abcdef0123456789abcdef "$LOAD" -n 0 > "$T/jt.log" 2>&1
jrc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
$C tune set join-timeout-ms 30000
[ $jrc -ne 0 ] && [ $ms -lt 3000 ] && grep -qi "timed out\|ETIMEDOUT" "$T/jt.log" &&
	ok "join-timeout-ms 300: a lone rank gives up after $ms ms" ||
	{ not_ok "join-timeout-ms 300: a lone rank gives up" "rc $jrc after $ms ms"; diag < "$T/jt.log"; }

# ---- a rank withholding its call on a communicator with mapped slots -------
# Rank 1 withholds its call until mwh.go exists, as in the first such
# test above: op show, the YNL CLI (a Python start: seconds under TCG) and
# diag -t 1000 all run inside it (a clock of 6 s once ran out first).
rm -f "$T/mwh.go"
env -u COLL_MAP "${NOBODY[@]}" "$RUN" -n 2 -t 180 "$LOAD" -w "1:90:$T/mwh.go" -H 1 -r "$T/mwh.ready" > "$T/mwh.log" 2>&1 &
mwh=$!
i=0
until [ -n "$("${NOBODY[@]}" $C -j op show 2>/dev/null | $PY -c 'import json,sys; print(json.load(sys.stdin) or "")')" ] || [ $i -ge 100 ]; do
	sleep 0.1; i=$((i + 1))
done
sleep 1.2
s=$(comm_serial)
"${NOBODY[@]}" $C op show > "$T/mop.txt" 2>&1
"${NOBODY[@]}" $C -j op show > "$T/mop.json" 2>&1
$YNL --dump op-get > "$T/ynl-mop.json" 2>&1
"${NOBODY[@]}" $C diag -t 1000 > "$T/mdiag.txt" 2>&1
touch "$T/mwh.go"
if grep -q "^comm $s seq 1 prim allreduce algo auto bytes 4096 state arriving .* arrived 1 missing 1 mapped yes$" "$T/mop.txt" &&
   [ "$(coll_pyj "$T/mop.json" '[(o["comm"], o["seq"], o["missing"], o["mapped"]) for o in d]')" = "[($s, 1, [1], True)]" ] &&
   [ "$(coll_pyj "$T/ynl-mop.json" '[(o["seq"], o["missing"], o["mapped"]) for o in d]')" = "[(1, [1], True)]" ]; then
	ok "op show names the rank withholding its call in the mapped slots (collctl and the YNL CLI)"
else
	not_ok "op show names the rank withholding its call in the mapped slots (collctl and the YNL CLI)"
	diag < "$T/mop.txt"; diag < "$T/mop.json"; diag < "$T/ynl-mop.json"
fi
grep -q "comm $s: allreduce seq 1 of the mapped slots has waited .* s for rank 1, which has not called it" "$T/mdiag.txt" &&
	ok "collctl diag names the collective of the mapped slots and the rank" ||
	{ not_ok "collctl diag names the collective of the mapped slots and the rank"; diag < "$T/mdiag.txt"; }
wait $mwh
mrc=$?
[ $mrc -eq 0 ] && [ "$("${NOBODY[@]}" $C -j op show)" = "[]" ] &&
	ok "the withheld calls then complete, checked, and op show is empty" ||
	{ not_ok "the withheld calls then complete, checked, and op show is empty" "rc $mrc"; diag < "$T/mwh.log"; }

# ---- collctl monitor: created, ready, failed when a rank is killed ----------------
$C monitor > "$T/mon.txt" 2>&1 &
mon=$!
$YNL --subscribe events --sleep 15 > "$T/ynl-mon.txt" 2>&1 &
ynlmon=$!
sleep 3
bg_load kill -H 60
kpid=$!
coll_wait_file "$T/kill.ready" 60
s=$(comm_serial)
victim=$(pgrep -f "^$LOAD" | tail -1)
kill -9 "$victim"
wait $kpid
sleep 1
kill "$mon" 2>/dev/null
wait "$ynlmon" 2>/dev/null
if grep -q "^event created comm $s " "$T/mon.txt" && grep -q "^event ready comm $s " "$T/mon.txt" &&
   grep -q "^event failed comm $s nranks 2 owner-uid 0 error ECONNRESET reason a rank closed its descriptor or died$" "$T/mon.txt"; then
	ok "collctl monitor sees the communicator created, ready, and failed when a rank is killed"
else
	not_ok "collctl monitor sees the communicator created, ready, and failed when a rank is killed"
	diag < "$T/mon.txt"
fi
grep -q "'comm': $s\|\"comm\": $s" "$T/ynl-mon.txt" && grep -q "failed" "$T/ynl-mon.txt" &&
	ok "the YNL CLI's subscription sees the same failure" ||
	{ not_ok "the YNL CLI's subscription sees the same failure"; diag < "$T/ynl-mon.txt"; }
"${NOBODY[@]}" $C monitor -c 1 > "$T/mon-nobody.txt" 2>&1 &&
	not_ok "an unprivileged user cannot subscribe to the events" ||
	ok "an unprivileged user cannot subscribe to the events"

# ---- diag: nothing on a healthy run, each problem it claims when provoked ---
bg_load healthy -b 1048576 -n 5 -H 3
coll_wait_file "$T/healthy.ready" 60
$C diag > "$T/diag-ok.txt" 2>&1
$C -j diag > "$T/diag-ok.json" 2>&1
wait
[ "$(cat "$T/diag-ok.txt")" = "no problems found" ] && [ "$(coll_pyj "$T/diag-ok.json" 'd')" = "[]" ] &&
	ok "collctl diag finds nothing on a healthy run" ||
	{ not_ok "collctl diag finds nothing on a healthy run"; diag < "$T/diag-ok.txt"; }

bg_load small -b 1024 -n 200 -H 3
coll_wait_file "$T/small.ready" 60
$C -j diag > "$T/diag-small.json" 2>&1
wait
[ "$(coll_pyj "$T/diag-small.json" '[p["problem"] for p in d]')" = "['small-allreduce']" ] &&
	ok "collctl diag: most AllReduce bytes in small calls" ||
	{ not_ok "collctl diag: most AllReduce bytes in small calls"; diag < "$T/diag-small.json"; }

spin0=$(cat /sys/module/collective/parameters/spin_ns)
$C tune set spin-ns 0
bg_load a2a -p alltoall -b 1024 -n 200 -H 3
coll_wait_file "$T/a2a.ready" 60
$C diag > "$T/diag-a2a.txt" 2>&1
wait
$C tune set spin-ns "$spin0"
grep -q "small AlltoAlls (at most 64 KiB) ran in interrupt mode (spin-ns 0): try busy-poll" "$T/diag-a2a.txt" &&
	[ "$(wc -l < "$T/diag-a2a.txt")" = 1 ] &&
	ok "collctl diag: many small AlltoAlls in interrupt mode (spin-ns 0, set module-wide)" ||
	{ not_ok "collctl diag: many small AlltoAlls in interrupt mode"; diag < "$T/diag-a2a.txt"; }

# ---- unload, kernel log -------------------------------------------------------
sleep 1
if rmmod collective; then ok "rmmod collective"; else not_ok "rmmod collective"; fi
dmesg | sed -n "\\|$MARK|,\$p" > "$T/dmesg"
if grep -qE 'BUG:|WARNING:|Oops|Call Trace|KASAN|UBSAN|refcount_t:|possible circular locking|blocked for more than' "$T/dmesg"; then
	not_ok "kernel log: no BUG/WARNING/Oops"
	head -80 "$T/dmesg" | diag
else
	ok "kernel log: no BUG/WARNING/Oops"
fi
echo "1..$n"
rm -rf "$T"
[ $failed -eq 0 ]
