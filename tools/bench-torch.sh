#!/bin/bash
# SPDX-License-Identifier: MIT
#
# make bench-torch: boot one guest (under the machine's guest lock), load
# the module, and run tools/bench_torch.py: all_reduce of a 25 MiB bucket
# and one DDP step, Gloo against collective in the same processes.
#
#   tools/bench-torch.sh [NRANKS [REPEATS]]     (default 2 7)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
np=${1:-2}
reps=${2:-7}
ls userlib/torch/torch_collective/_C*.so >/dev/null 2>&1 ||
	{ echo "bench-torch.sh: build userlib/torch first (make torch)" >&2; exit 1; }
exec flock "${COLL_GUEST_LOCK:-/tmp/coll-guest.lock}" \
	selftests/rig/vm.sh --name bench-torch --mem 4G --timeout 1200 \
	--setup 'coll_insmod kmod/collective.ko' \
	-- /usr/bin/python3 tools/bench_torch.py "$np" "$reps"
