#!/bin/bash
# shellcheck disable=SC2016 # the bash -c programs are single-quoted on purpose
# test-rexec.sh: checks the rig's remote-exec agent (rexec.py) on the host,
# on loopback only: the daemon binds 127.0.0.2 (COLL_REXEC_NET=127.0.0.0/8),
# the client runs commands through it as an ssh stand-in, and mpirun (when
# installed) starts a 2-"host" job through it (127.0.0.2 is not one of the
# host's interface addresses, so Open MPI launches its orted there with the
# agent).  Prints TAP; exits 0 if all pass.
#
# Run on the host:  selftests/rig/test-rexec.sh      (no guest, no root needed)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
agent=$here/rexec.py
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rexec-test.XXXXXX")
export COLL_REXEC_KEY COLL_REXEC_NET=127.0.0.0/8
COLL_REXEC_KEY=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
# A port of our own, so that two runs never meet.
export COLL_REXEC_PORT=$((20000 + $$ % 20000))
daemon=''
cleanup() {
	[ -z "$daemon" ] || kill "$daemon" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

n=0 fail=0
check() {	# description command...
	local what=$1
	shift
	n=$((n + 1))
	if "$@" >"$tmp/out.$n" 2>&1; then
		echo "ok $n $what"
	else
		echo "not ok $n $what"
		sed 's/^/# /' "$tmp/out.$n" | tail -n 10
		fail=$((fail + 1))
	fi
}
rx() { /usr/bin/python3 "$agent" "$@"; }
export agent
export -f rx

echo "TAP version 13"
/usr/bin/python3 "$agent" --serve --bind 127.0.0.2 --log "$tmp/daemon.log" &
daemon=$!
for _ in $(seq 50); do
	(exec 3<>/dev/tcp/127.0.0.2/"$COLL_REXEC_PORT") 2>/dev/null && break
	sleep 0.1
done

check "runs a command, arguments joined as ssh does" \
	bash -c '[ "$(rx -x -o BatchMode=yes 127.0.0.2 echo a "\"b c\"" "; echo d")" = "$(printf "a b c\nd")" ]'
check "exit status is relayed" bash -c 'rx 127.0.0.2 "exit 3"; [ $? = 3 ]'
check "killed by a signal: 128 + N" bash -c 'rx 127.0.0.2 "kill -9 \$\$"; [ $? = 137 ]'
check "stdin is relayed, then its end" bash -c '[ "$(printf "x\ny\n" | rx 127.0.0.2 "wc -l")" = 2 ]'
check "-n: stdin from /dev/null" bash -c '[ "$(echo z | rx -n 127.0.0.2 "cat; echo end")" = end ]'
check "stdout and stderr stay apart" \
	bash -c '[ "$(rx 127.0.0.2 "echo out; echo err >&2" 2>/dev/null)" = out ]'
check "3 MB of output" bash -c '[ "$(rx 127.0.0.2 "head -c 3000000 /dev/zero" | wc -c)" = 3000000 ]'
check "a wrong key is refused (255)" \
	bash -c 'COLL_REXEC_KEY=00112233445566778899aabbccddeeff rx 127.0.0.2 true; [ $? = 255 ]'
check "an address outside COLL_REXEC_NET is refused (255)" \
	bash -c 'COLL_REXEC_NET=10.77.0.0/24 rx 127.0.0.2 true; [ $? = 255 ]'
check "the daemon refuses to listen outside COLL_REXEC_NET" \
	bash -c 'COLL_REXEC_NET=10.77.0.0/24 rx --serve --bind 127.0.0.3; [ $? = 2 ]'
# A killed client takes its command's process group down with it.
mark="sleep 600.$$"
check "a killed client ends the remote command" bash -c '
	/usr/bin/python3 "$agent" 127.0.0.2 "'"$mark"'" & c=$!
	for _ in $(seq 50); do pgrep -fx "'"$mark"'" >/dev/null && break; sleep 0.1; done
	pgrep -fx "'"$mark"'" >/dev/null || exit 1
	kill $c; wait $c
	for _ in $(seq 50); do pgrep -fx "'"$mark"'" >/dev/null || exit 0; sleep 0.1; done
	exit 1'

if command -v mpirun >/dev/null 2>&1; then
	check "mpirun --mca plm_rsh_agent rexec.py: a job on two hosts" bash -c '
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 \
		mpirun --mca plm_rsh_agent "'"$agent"'" --host 127.0.0.2:1,localhost:1 -np 2 \
			--mca oob_tcp_if_include lo --mca btl self,tcp --mca btl_tcp_if_include lo \
			--mca pml ob1 sh -c "echo rank \$OMPI_COMM_WORLD_RANK" | sort | tr "\n" " " |
			grep -qx "rank 0 rank 1 "'
else
	n=$((n + 1))
	echo "ok $n mpirun through rexec.py # SKIP no mpirun"
fi
grep -q "bad key" "$tmp/daemon.log" || { echo "# daemon log has no 'bad key' line"; fail=$((fail + 1)); }
echo "1..$n"
[ "$fail" = 0 ]
