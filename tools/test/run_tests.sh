#!/bin/sh
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2016 # awk and sh -c programs are single-quoted on purpose
#
# Native tests of the tools: no module, no /dev/collective.
#   - collrun: environment, exit statuses, kill-on-failure, timeout;
#   - collctl: usage, no module, generated netlink files match the spec;
#   - coll_perf: clean failure without a device or outside collrun (end to
#     end against the module: selftests/guest-run.sh, in a guest);
#   - mpi_perf (when mpirun exists): np=2, every primitive, 0 wrong, and the
#     same size/count columns as coll_perf;
#   - memcpy_bw, compare.sh and compare-hosts.sh output.
# Prints TAP; exit 1 if anything failed.
#
# QUICK=1 runs a smaller matrix.

set -u
cd "$(dirname "$0")/.." || exit 1
T=${TMPDIR:-/tmp}/coll_tools_test.$$
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT
n=0 fail=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $1"; }
check() {	# check DESCRIPTION COMMAND...
	d=$1; shift
	if "$@"; then ok "$d"; else nok "$d"; fi
}
rc_is() {	# rc_is WANT COMMAND...: exit status of COMMAND is WANT
	want=$1; shift
	"$@" > "$T/out" 2> "$T/err"
	[ $? -eq "$want" ]
}

# ---------------------------------------------------------------- collrun
./collrun -n 3 sh -c 'echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $COLL_ID"' > "$T/env"
check "collrun: 3 ranks ran" [ "$(wc -l < "$T/env")" -eq 3 ]
check "collrun: ranks 0..2, world 3" [ "$(cut -d' ' -f1,2,3,4 "$T/env" | sort | tr '\n' ,)" = "0 0 3 3,1 1 3 3,2 2 3 3," ]
check "collrun: one 32-hex id shared" [ "$(cut -d' ' -f5 "$T/env" | sort -u | grep -c '^[0-9a-f]\{32\}$')" -eq 1 ]
id=00112233445566778899aabbccddeeff
check "collrun: COLL_ID from the environment" [ "$(COLL_ID=$id ./collrun -n 2 sh -c 'echo $COLL_ID' | sort -u)" = $id ]
check "collrun: --id-fd reads the id" [ "$(echo " $id" | ./collrun -n 2 --id-fd 0 sh -c 'echo $COLL_ID' | sort -u)" = $id ]
check "collrun: -i is refused (argv is public)" rc_is 125 ./collrun -n 1 -i $id true
check "collrun: the id is not in the ranks' argv" [ -z "$(COLL_ID=$id ./collrun -n 1 sh -c 'cat /proc/$$/cmdline /proc/$PPID/cmdline | tr "\\0" " " | grep -o $COLL_ID')" ]
check "collrun: exit status of the failing rank" rc_is 3 ./collrun -n 4 sh -c '[ $RANK = 2 ] && exit 3; sleep 30'
check "collrun: names the failing rank" grep -q 'rank 2 .*exited with status 3' "$T/err"
check "collrun: 128+signal" rc_is 139 ./collrun -n 2 sh -c '[ $RANK = 1 ] && kill -SEGV $$; sleep 30'
check "collrun: timeout exits 124" rc_is 124 ./collrun -n 2 -t 0.3 sleep 30
check "collrun: SIGKILL after 2 s for a rank ignoring SIGTERM" \
	rc_is 1 ./collrun -n 2 sh -c 'trap "" TERM; [ $RANK = 0 ] && sleep 0.2 && exit 1; while :; do sleep 0.1; done'
check "collrun: unexecutable program exits 127" rc_is 127 ./collrun -n 2 /nonexistent/prog
check "collrun: bad -n exits 125" rc_is 125 ./collrun -n 0 true
check "collrun: bad COLL_ID exits 125" rc_is 125 env COLL_ID=123 ./collrun -n 1 true
check "collrun: bad --id-fd exits 125" rc_is 125 sh -c 'echo 123 | ./collrun -n 1 --id-fd 0 true'
check "collrun: all succeed exits 0" rc_is 0 ./collrun -n 4 true

# ------------------------------------------------------- coll_perf, no device
check "coll_perf: outside collrun exits 2" rc_is 2 env -u RANK -u WORLD_SIZE -u COLL_ID ./coll_perf
check "coll_perf: no device exits 1" rc_is 1 env COLL_DEVICE=/nonexistent/collective ./collrun -n 2 ./coll_perf
check "coll_perf: no device says so" grep -q 'cannot open /nonexistent/collective: No such file or directory' "$T/err"
check "coll_perf: bad option exits 2" rc_is 2 ./collrun -n 1 ./coll_perf -p nosuch
check "coll_perf: bad primitive list exits 2" rc_is 2 ./collrun -n 1 ./coll_perf -p allreduce,,barrier
check "coll_perf: -h" rc_is 0 ./coll_perf -h

# coll_perf against the real module: selftests/guest-run.sh (in a guest).

# ----------------------------------------------------------------- mpi_perf
if [ -x ./mpi_perf ] && command -v mpirun > /dev/null 2>&1; then
	mrun() {
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		mpirun --oversubscribe --mca btl self,vader --mca pml ob1 "$@"
	}
	check "mpi_perf: np 2, every primitive, 0 wrong" \
		rc_is 0 mrun -np 2 ./mpi_perf -p all -b 1 -e 100K -f 5 -n 2 -w 1 -d int32 -o max -r 1
	check "mpi_perf: ... in place" \
		rc_is 0 mrun -np 2 ./mpi_perf -p all -b 1 -e 100K -f 5 -n 2 -w 1 -d double -o prod -i 1 -r 1
	check "mpi_perf: -p LIST runs those primitives in enum order" \
		sh -c "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --mca btl self,vader --mca pml ob1 -np 2 ./mpi_perf -p barrier,allreduce -b 8 -e 8 -n 1 -w 0 | sed -n 's/^# Collective: \\([a-z]*\\).*/\\1/p' | tr '\\n' ' ' | grep -qx 'allreduce barrier '"
	check "mpi_perf: half is skipped with a comment" \
		sh -c "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --mca btl self,vader --mca pml ob1 -np 2 ./mpi_perf -d half -b 1K -e 1K | grep -q '^# skipping allreduce: MPI has no half'"
	if [ -f "$T/ours_all" ] && [ -f $FAKE ]; then
		mrun -np 4 ./mpi_perf -p all -b 8 -e 64K -f 8 -n 2 -w 1 > "$T/mpi_all" 2>&1
		# size, count, type, redop, root of every row must line up.
		awk '!/^#/ { print $1, $2, $3, $4, $5 }' "$T/ours_all" > "$T/c1"
		awk '!/^#/ { print $1, $2, $3, $4, $5 }' "$T/mpi_all" > "$T/c2"
		check "mpi_perf and coll_perf rows line up (np 4, every primitive)" cmp -s "$T/c1" "$T/c2"
		./memcpy_bw -r 3 16M > "$T/mem"
		check "compare.sh: merged table" sh -c "./compare.sh -p allreduce $T/ours_all $T/mpi_all $T/mem > $T/cmp && [ \$(grep -vc '^#' $T/cmp) -eq 5 ]"
		check "compare.sh: several primitives need -p" rc_is 2 ./compare.sh "$T/ours_all" "$T/mpi_all" 5
	fi
else
	echo "# skipping mpi_perf tests: no mpi_perf or mpirun"
fi

# ------------------------------------------------------------ compare-hosts.sh
cat > "$T/h1" <<'EOF2'
# Collective: allreduce  nranks 4  factor(busbw) 1.5000
           8             2     float     sum      -1     1000.00        0.000        0.000        0
     1048576        262144     float     sum      -1   100000.00        0.010        0.016        0
# Collective: barrier  nranks 4  factor(busbw) 0.0000
           0             0      none    none      -1      100.00        0.000        0.000        0
EOF2
sed 's/100000.00        0.010        0.016        0/200000.00        0.005        0.008        7/' "$T/h1" > "$T/h2"
cat > "$T/h3" <<'EOF2'
# Collective: allreduce  nranks 4  factor(busbw) 1.5000
           8             2     float     sum      -1      500.00        0.000        0.000        0
     1048576        262144     float     sum      -1   400000.00        0.003        0.004        0
EOF2
printf '# size GBps\n8 0.0001\n1000000 0.01\n' > "$T/hl"
./compare-hosts.sh -p allreduce -l "$T/hl" a="$T/h1" b="$T/h2" m="$T/h3" > "$T/hc" 2>&1
check "compare-hosts.sh: one row per size" [ "$(grep -vc '^#' "$T/hc")" -eq 2 ]
# 1 MiB: a busbw = 1048576 / 100000 us * 1.5 = 15.73 MB/s; a/m = 4; a/link = 1.573 (link 10 MB/s)
check "compare-hosts.sh: busbw from the time, ratios to the peer and the link" \
	awk '$1 == 1048576 { exit !($2 == "15.73" && $5 == "10" && $6 == "4.000" && $7 == "2.000" && $8 == "1.573") }' "$T/hc"
check "compare-hosts.sh: wrong rows are flagged" grep -q '^ *1048576 .*WRONG(b)$' "$T/hc"
check "compare-hosts.sh: geometric means" grep -q '^# geometric mean a/m over 2 sizes: 1.414$' "$T/hc"
check "compare-hosts.sh: a missing run prints -" \
	sh -c "./compare-hosts.sh -p barrier a=$T/h1 b=- m=$T/h3 | grep -q '^ *0  *0  *-  *-  *-  *-  *100.00  *-  *-\$'"
check "compare-hosts.sh: several primitives need -p" rc_is 2 ./compare-hosts.sh a="$T/h1" m="$T/h3"
check "compare-hosts.sh: -r must name an input" rc_is 2 ./compare-hosts.sh -p allreduce -r x a="$T/h1"

# ----------------------------------------------------------------- memcpy_bw
./memcpy_bw -r 3 4M > "$T/mem" 2>&1
check "memcpy_bw: both lines, both copies checked" sh -c "grep -q '^# memcpy single-thread 4MiB: [0-9.]* GB/s (memcpy [0-9.]*, words [0-9.]*)\$' $T/mem && grep -q '^memcpy_bw bytes=4194304 reps=3 median_GBps=[0-9.]* .* via=\(memcpy\|words\)\$' $T/mem"
check "memcpy_bw: bad size exits 2" rc_is 2 ./memcpy_bw 12Q
for d in float int32; do
	./memcpy_bw -d $d -r 3 4M > "$T/red" 2>&1
	check "memcpy_bw -d $d: both lines, the sums checked" sh -c "grep -q '^# reduce $d sum single-thread 4MiB: [0-9.]* GB/s\( (default [0-9.]*, avx2 [0-9.]*)\)\?\$' $T/red && grep -q '^reduce_bw dtype=$d bytes=4194304 reps=3 median_GBps=[0-9.]* .* vec=\(default\|avx2\)\$' $T/red"
done
check "memcpy_bw: -d of an unknown type exits 2" rc_is 2 ./memcpy_bw -d int8 4M
check "memcpy_bw: -d with a size not a multiple of 32 exits 2" rc_is 2 ./memcpy_bw -d float 100
ncpu=$(nproc)
if [ "$ncpu" -ge 2 ]; then
	./memcpy_bw -t 2 -r 3 4M > "$T/mem2" 2>&1
	check "memcpy_bw -t 2: both lines, every thread's copy checked" sh -c "grep -q '^# memcpy 2 threads at once 4MiB: [0-9.]* GB/s (memcpy [0-9.]*, words [0-9.]*)\$' $T/mem2 && grep -q '^memcpy_bw bytes=4194304 reps=3 median_GBps=[0-9.]* .* threads=2 via=\(memcpy\|words\)\$' $T/mem2"
	./memcpy_bw -t 2 -d int32 -r 3 4M > "$T/red2" 2>&1
	check "memcpy_bw -t 2 -d int32: both lines, every thread's sum checked" sh -c "grep -q '^# reduce int32 sum 2 threads at once 4MiB: ' $T/red2 && grep -q '^reduce_bw dtype=int32 bytes=4194304 reps=3 .* threads=2 vec=' $T/red2"
fi
check "memcpy_bw: -t beyond the CPUs exits 2" rc_is 2 ./memcpy_bw -t $((ncpu + 1)) 4M
check "memcpy_bw: -t 0 exits 2" rc_is 2 ./memcpy_bw -t 0 4M

# ------------------------------------------------------------ collctl, no module
check "collctl: -h exits 0" rc_is 0 ./collctl -h
check "collctl: an unknown option exits 2" rc_is 2 ./collctl -x tune show
if [ ! -d /sys/module/collective ]; then
	./collctl tune show > "$T/cc" 2>&1
	check "collctl: without the module, exit 1 naming the family" \
		sh -c "[ \$(./collctl tune show >/dev/null 2>&1; echo \$?) = 1 ] && grep -q 'no netlink family \"collective\"' $T/cc"
fi
check "collctl: the generated netlink files match the spec" sh -c "make -s -C .. nlcheck > /dev/null"

echo "1..$n"
[ $fail -eq 0 ] || echo "# $fail of $n failed"
[ $fail -eq 0 ]
