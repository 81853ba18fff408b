#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-group.sh: what a group (COLL_GROUP) buys, in one guest boot.
# tools/coll_group_perf with 2 and 4 ranks: 100 AllReduces per batch of
# 8 B, 4 KiB and 16 KiB, int32 and float, as 100 separate calls, as one
# group with COLL_GROUP_F_NOFUSE and as one fused group (the three forms
# interleaved, median of 5 rounds of 20 batches); every result checked.
# Prints each figure and the ratio of each group to the separate calls;
# the target of the issue is 100 x 4 KiB fused >= 5x.
#
# Beside each batch, its bound (C = min(ranks, CPUs); B_C and R_C what C
# CPUs copy and reduce together, measured here by memcpy_bw -t C with
# buffers of the batch's bytes S = ops x bytes; P ranks): the batch's
# AllReduce, (P-1) S (1/R_C + 1/B_C), as bench-large counts it.  No form
# can take less: calls / bound is the largest speed-up any form could have
# over the calls, and bound / fused how close the fused group (on one
# host, one AllReduce over the ops' own pinned pages) comes to it.
#
#   selftests/rig/vm.sh --name bench-group --mem 2G -- tools/bench-group.sh
#
# Runs INSIDE a qemu guest (it loads the module).  Env: RANKS ("2 4"),
# SIZES ("8 4096 16384"), DTYPES ("int32 float"), OPS (100),
# COLL_INSMOD_ARGS.
set -u
# shellcheck source=tools/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
# The module's own paths: the calls go through it, not the mapped slots.
export COLL_MAP=${COLL_MAP:-0}
bench_load bench-group.sh
ops=${OPS:-100}
out=$(mktemp)
cpus=$(nproc)

# speed C WHAT BYTES: in $gbps, GB/s of memcpy_bw -t C (copy, or the sum
# in WHAT), measured once per boot: every row of the same C and size is
# bounded by the same figures.
declare -A measured
speed() {
	local key="$1 $2 $3"
	local -a d=()

	if [ -z "${measured[$key]:-}" ]; then
		[ "$2" != copy ] && d=(-d "$2")
		measured[$key]=$(tools/memcpy_bw -t "$1" "${d[@]}" -r 21 "$3" |
			awk '/^(memcpy|reduce)_bw/ { for (i = 2; i <= NF; i++)
				if ($i ~ /^median_GBps=/) print substr($i, 13) }')
		[ -n "${measured[$key]}" ] || return 1
	fi
	gbps=${measured[$key]}
}

# bounds N DTYPE BYTES: the bound lines of the batch just printed ($out).
bounds() {
	local n=$1 dt=$2 c=$3 s C b r gbps
	C=$((n < cpus ? n : cpus))
	s=$((ops * c))
	speed "$C" copy "$s" && b=$gbps || return 1
	speed "$C" "$dt" "$s" && r=$gbps || return 1
	awk -v n="$n" -v s="$s" -v k="$ops" -v C="$C" -v b="$b" -v r="$r" '
	/^  separate calls/ { calls = $(NF - 2) }
	/^  group, fused/ { fused = $(NF - 2) }
	END {
		bnd = (n - 1) * s * (1 / (r * 1e9) + 1 / (b * 1e9)) * 1e6
		printf "# bound (%d CPUs at once, %d B each: copy %.2f GB/s, sum %.2f GB/s): %.1f us a batch (%.2f us/op)", C, s, b, r, bnd, bnd / k
		if (calls > 0)
			printf "; calls / bound %.2fx", calls / bnd
		if (fused > 0)
			printf "; bound / fused %.2f", bnd / fused
		printf "\n"
	}' "$out"
}

rc=0
for n in ${RANKS:-2 4}; do
	for dt in ${DTYPES:-int32 float}; do
		for c in ${SIZES:-8 4096 16384}; do
			group_perf "$n" -k "$ops" -c "$c" -d "$dt" -i 20 \
				   -r 5 > "$out" || rc=1
			cat "$out"
			bounds "$n" "$dt" "$c" || rc=1
		done
	done
done
tools/collrun -n 2 -t 60 tools/coll_perf -p allreduce -b 8 -e 8 -n 5 -w 1 |
	grep '^# floor'
rmmod collective || rc=1
rm -f "$out"
exit $rc
