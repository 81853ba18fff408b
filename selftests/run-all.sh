#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run every test suite of the project and count the results:
#   unit      native unit tests of the schedules (no guest): every group,
#             within a work budget per case (the largest ~2% skipped)
#   native    native tests of the library, the tools and, once built, the
#             torch backend (no device)
#   guest     the kselftest-harness selftests inside one qemu guest
#   netlink   the generic netlink family in one qemu guest: collctl and the
#             kernel's YNL CLI (tools/ynl/cli.py) against each other, the
#             tunables' effects, permissions, extack, op show, monitor, diag
#             (netlink-guest.sh); then two guests (netlink-hosts.sh): the
#             tunables only ranks on several hosts show (eager-bytes,
#             mr-pool, rdma-qps, hier-bytes, busy-poll-us, peer-timeout-ms),
#             op show naming a rank of the other host, a TCP fallback seen by
#             comm show, monitor and diag
#   hosts     ranks spread over 2 and 3 guests (hosts.sh): every primitive
#             across hosts, each transport, element by element; then faults
#             in the middle of a large collective (hosts-faults.sh): a link
#             cut, an RDMA device deleted, a rank killed, a guest powered
#             off: ECONNRESET everywhere within 5 s, nothing left pinned,
#             rmmod works; then the wire protocol under attack
#             (hosts-security.sh: one boot of 2 guests, a live communicator
#             checked throughout)
#   torch     the torch.distributed backend (userlib/torch/) in one guest:
#             every operation x dtype x reduce op against Gloo with 2 and 4
#             ranks, DDP training bitwise equal to Gloo's, a rank killed
#             mid-training (selftests/torch/guest-torch.sh); then the
#             same with one rank on each of two guests, launched by
#             torchrun's multi-node form, over RDMA (hosts-torch.sh);
#             skipped when python3-torch or the built extension is missing
# and, only when named:
#   unit-full the schedules' unit tests with no budget (~5 min)
#   rdma2     a check of the rig itself (two guests, rping and ib_write_bw
#             over rxe): not a test of the project, so not run by default
#   rexec     the rig's remote-exec agent (rig/rexec.py) on the host's
#             loopback, with an Open MPI job launched through it
# Each suite prints TAP; a suite that fails without saying which test failed
# counts as one failure.  The last line is "N passed, N failed, N skipped".
# Guest suites take the machine's guest lock ($COLL_GUEST_LOCK, default
# /tmp/coll-guest.lock): with two cores, never two guest jobs at once.
#
# usage: selftests/run-all.sh [SUITE...]     (default: unit native guest netlink hosts torch)
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
logdir=$root/build/logs
mkdir -p "$logdir"

pass=0 fail=0 skip=0
failed=()

run_suite() {
	local name=$1 out rc p f s
	shift
	out=$logdir/suite-$name.tap
	echo "# ==== suite $name: $*"
	local t0=$SECONDS
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	# Test lines at the top level and, one level down, the lines of the
	# programs a suite runs (kselftest runner style "# ok N name"); the
	# runner's own per-program lines ("ok N selftests: ...") summarise
	# those and are not counted again.
	grep -E '^(# )?(not )?ok [0-9]+' "$out" |
		grep -vE '^(not )?ok [0-9]+ selftests: ' > "$out.tests"
	s=$(grep -cE '# *(SKIP|skip)' "$out.tests")
	p=$(grep -cE '^(# )?ok ' "$out.tests")
	f=$(grep -cE '^(# )?not ok ' "$out.tests")
	p=$((p - s))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - suite $name exited with rc $rc"
		f=1
	fi
	[ "$f" -gt 0 ] && failed+=("$name")
	echo "# ==== suite $name: rc=$rc passed=$p failed=$f skipped=$s ($((SECONDS - t0)) s)"
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
}

lock=${COLL_GUEST_LOCK:-/tmp/coll-guest.lock}

# The suite "hosts": collectives across guests, faults, then the wire under
# attack (each script a TAP stream of its own, taking the guest lock for
# each of its boots).
hosts_suite() {
	local rc=0
	selftests/hosts.sh || rc=1
	selftests/hosts-faults.sh || rc=1
	selftests/hosts-security.sh || rc=1
	return "$rc"
}

# The suite "netlink": one guest, then two.
netlink_suite() {
	local rc=0
	flock "$lock" selftests/rig/vm.sh --name netlink --mem 2G --timeout 600 \
		-- selftests/netlink-guest.sh || rc=1
	selftests/netlink-hosts.sh || rc=1
	return "$rc"
}

# The suite "torch", when torch and the extension are there: one guest
# boot (guest-torch.sh), then two guests with a rank each (hosts-torch.sh).
torch_suite() {
	if ! /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
	   ! ls userlib/torch/torch_collective/_C*.so >/dev/null 2>&1; then
		echo "ok 1 torch # SKIP python3-torch or userlib/torch not built (make deps torch)"
		return 0
	fi
	local rc=0
	flock "$lock" selftests/rig/vm.sh --name torch --mem 4G --timeout 900 \
		-- selftests/torch/guest-torch.sh || rc=1
	selftests/torch/hosts-torch.sh || rc=1
	return "$rc"
}

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(unit native guest netlink hosts torch)
for s in "${suites[@]}"; do
	case $s in
	unit)	run_suite unit make -s -C selftests/unit run ;;
	unit-full) run_suite unit-full make -s -C selftests/unit full ;;
	native)	run_suite native sh -c 'make -s -C userlib check && make -s -C tools check &&
			{ ! ls userlib/torch/torch_collective/_C*.so >/dev/null 2>&1 ||
			  make -s -C userlib/torch check; }' ;;
	guest)	run_suite guest flock "$lock" selftests/rig/vm.sh --name selftests \
			--mem 4G --timeout 2400 -- selftests/guest-run.sh ;;
	netlink) run_suite netlink netlink_suite ;;
	hosts)	run_suite hosts hosts_suite ;;
	torch)	run_suite torch torch_suite ;;
	rdma2)	run_suite rdma2 flock "$lock" selftests/rig/test-rdma-2guest.sh ;;
	rexec)	run_suite rexec selftests/rig/test-rexec.sh ;;
	*)	echo "unknown suite $s" >&2; exit 2 ;;
	esac
done

[ ${#failed[@]} -eq 0 ] || echo "# failed suites: ${failed[*]} (logs in $logdir)"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
