#!/bin/sh
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2016 # awk and sh -c programs are single-quoted on purpose
#
# compare.sh: merge a coll_perf output and an mpi_perf output of the same
# primitive and sizes into one table.
#
#   compare.sh [-p PRIM] OURS.txt MPI.txt MEMCPY
#
# MEMCPY is the single-thread memcpy bandwidth in GB/s, either a number or a
# file holding memcpy_bw's output (its "memcpy_bw ... median_GBps=X" line).
# -p picks one primitive out of files made with "-p all"; without it each
# file must hold a single primitive (the same in both).
#
# Output, one row per size found in either file ("-" where a file has no row
# for that size or a ratio has no meaning):
#
#   size  ours_busbw  mpi_busbw  ours/mpi  ours/memcpy  mpi/memcpy  ours_us  mpi_us  note
#
# busbw in GB/s and times in microseconds as printed by the tools.  ours/mpi
# is mpi_us / ours_us: the busbw ratio for equal sizes, computed from the
# times so that it stays exact where busbw rounds to 0 (and means something
# for the barrier).  ours/memcpy and mpi/memcpy are busbw / MEMCPY.  note is
# "WRONG(ours)" or "WRONG(mpi)" when that file's #wrong column for the size
# is not 0 or N/A.
# Comment lines start with '#'.  Ends with the geometric mean of ours/mpi
# over the sizes both files have.  POSIX sh and awk only ($AWK overrides awk).

set -eu

usage() {
	echo "usage: compare.sh [-p PRIM] OURS.txt MPI.txt MEMCPY_GBPS|MEMCPY_BW_OUTPUT" >&2
	exit 2
}

prim=
while getopts p:h opt; do
	case $opt in
	p) prim=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 3 ] || usage
ours=$1 mpi=$2 mem=$3
for f in "$ours" "$mpi"; do
	[ -r "$f" ] || { echo "compare.sh: cannot read $f" >&2; exit 2; }
done
if [ -r "$mem" ]; then
	memv=$(awk '/^memcpy_bw / { for (i = 2; i <= NF; i++) if ($i ~ /^median_GBps=/) { sub(/^median_GBps=/, "", $i); print $i; exit } }' "$mem")
	[ -n "$memv" ] || { echo "compare.sh: no 'memcpy_bw ... median_GBps=' line in $mem" >&2; exit 2; }
	mem=$memv
fi
case $mem in
'' | *[!0-9.eE+-]*) echo "compare.sh: MEMCPY must be a number of GB/s or a memcpy_bw output file" >&2; exit 2 ;;
esac

exec ${AWK:-awk} -v want="$prim" -v mem="$mem" '
function fmt(x) { return sprintf("%.3f", x) }
function die(msg) { print "compare.sh: " msg > "/dev/stderr"; err = 1; exit 2 }
FNR == 1 { fi++; cur = "" }
/^# Collective:/ {
	cur = $3
	if (want == "" && cur != "") {
		if (!((fi, cur) in prims)) { prims[fi, cur] = 1; nprims[fi]++; pname[fi] = cur }
	}
	next
}
/^#/ || NF == 0 { next }
$1 !~ /^[0-9]+$/ { next }
{
	if (want != "" && cur != want) next
	key = fi SUBSEP $1
	if (key in busbw) next          # first row of a size wins
	busbw[key] = $8
	tus[key] = $6
	wrong[key] = $9
	if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
}
END {
	if (err) exit 2
	if (fi < 2) die("need two input files")
	if (want == "") {
		if (nprims[1] > 1 || nprims[2] > 1) die("a file holds several primitives: pick one with -p")
		if (pname[1] != pname[2]) die("different primitives: " pname[1] " vs " pname[2])
		want = pname[1]
	}
	if (n == 0) die("no data rows" (want != "" ? " for " want : ""))
	printf "# primitive %s, memcpy %s GB/s\n", want, mem
	printf "#%11s  %11s  %11s  %9s  %11s  %11s  %10s  %10s  %s\n", "size", "ours_busbw", "mpi_busbw", "ours/mpi", "ours/memcpy", "mpi/memcpy", "ours_us", "mpi_us", "note"
	nr = 0; lsum = 0
	for (i = 1; i <= n; i++) {
		s = order[i]; k1 = 1 SUBSEP s; k2 = 2 SUBSEP s
		o = (k1 in busbw) ? busbw[k1] : "-"
		m = (k2 in busbw) ? busbw[k2] : "-"
		ot = (k1 in tus) ? tus[k1] : "-"
		mt = (k2 in tus) ? tus[k2] : "-"
		r = "-"
		if (ot != "-" && mt != "-" && ot + 0 > 0 && mt + 0 > 0) {
			r = sprintf("%.3f", mt / ot)
			nr++; lsum += log(mt / ot)
		}
		fo = (o != "-" && mem + 0 > 0) ? fmt(o / mem) : "-"
		fm = (m != "-" && mem + 0 > 0) ? fmt(m / mem) : "-"
		note = ""
		if ((k1 in wrong) && wrong[k1] != "0" && wrong[k1] != "N/A") note = note "WRONG(ours) "
		if ((k2 in wrong) && wrong[k2] != "0" && wrong[k2] != "N/A") note = note "WRONG(mpi) "
		sub(/ $/, "", note)
		line = sprintf("%12s  %11s  %11s  %9s  %11s  %11s  %10s  %10s", s, o, m, r, fo, fm, ot, mt)
		print (note == "" ? line : line "  " note)
	}
	if (nr > 0)
		printf "# geometric mean ours/mpi over %d sizes: %.3f\n", nr, exp(lsum / nr)
}' "$ours" "$mpi"
