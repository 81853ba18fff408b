#!/bin/sh
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2016 # the awk program is single-quoted on purpose
#
# compare-hosts.sh: merge several coll_perf / mpi_perf outputs of the same
# primitive and sizes, and the link's ceiling, into one table (the
# cross-host benchmark, tools/bench-hosts.sh; compare.sh is the one-host
# form).
#
#   compare-hosts.sh [-p PRIM] [-r REF] [-l LINK] NAME=FILE [NAME=FILE...]
#
# Each NAME=FILE is one run (e.g. rdma=coll-rdma.txt tcp=coll-tcp.txt
# mpi=mpi.txt); REF names the peer the others are compared with (default:
# the last NAME).  LINK is a file of "SIZE GBPS" lines: the link's
# bandwidth in GB/s at that message size (ib_write_bw); a row takes the LINK size
# nearest its own (in ratio).  -p picks one primitive out of files made
# with several (-p all or a list); without it every file must hold one, the
# same.  "-" as FILE: no such run (its columns print "-").  File names
# must not contain "=" (awk would take them for assignments).
#
# Output, one row per size found in any file:
#
#   size  NAME_MBps...  link_MBps  NAME/REF...  NAME/link...  NAME_us...  note
#
# NAME_MBps is the bus bandwidth in MB/s (1e6 B/s; recomputed from the
# time, the size and the nccl-tests factor in the file's "# Collective:"
# line, so that slow rows keep 4 digits), link_MBps the LINK figure in MB/s,
# NAME_us the time in microseconds as the tool printed it;
# NAME/REF is REF_us / NAME_us (> 1: NAME is faster; exact where busbw
# rounds to 0, and meaningful for the barrier); NAME/link is NAME_MBps /
# link_MBps (how much of the wire's ceiling the collective's bus bandwidth
# reaches).  note says WRONG(NAME) when that file's #wrong for the size is
# not 0 or N/A.  Ends with the geometric mean of every NAME/REF and
# NAME/link over the sizes where it exists.  POSIX sh and awk ($AWK).

set -eu

usage() {
	echo "usage: compare-hosts.sh [-p PRIM] [-r REF] [-l LINK] NAME=FILE [NAME=FILE...]" >&2
	exit 2
}

prim='' ref='' link=''
while getopts p:r:l:h opt; do
	case $opt in
	p) prim=$OPTARG ;;
	r) ref=$OPTARG ;;
	l) link=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
names='' files=''
for a in "$@"; do
	case $a in
	[A-Za-z]*=*) ;;
	*) echo "compare-hosts.sh: want NAME=FILE, got '$a'" >&2; exit 2 ;;
	esac
	n=${a%%=*} f=${a#*=}
	case $n in *[!A-Za-z0-9_]*) echo "compare-hosts.sh: bad name '$n'" >&2; exit 2 ;; esac
	[ "$f" = - ] || [ -r "$f" ] || { echo "compare-hosts.sh: cannot read $f" >&2; exit 2; }
	names="$names $n"
	files="$files $f"
done
[ -n "$ref" ] || ref=$n
case " $names " in *" $ref "*) ;; *) echo "compare-hosts.sh: -r $ref names no input" >&2; exit 2 ;; esac
if [ -n "$link" ] && [ ! -r "$link" ]; then
	echo "compare-hosts.sh: cannot read $link" >&2
	exit 2
fi

# The inputs in order, each after an awk assignment fi=INDEX (so that an
# empty or "-" file still takes its place); the link file is the last.
set --
k=0
for f in $files; do
	k=$((k + 1))
	[ "$f" != - ] || f=/dev/null
	set -- "$@" "fi=$k" "$f"
done
[ -z "$link" ] || set -- "$@" "fi=$((k + 1))" "$link"

exec ${AWK:-awk} -v want="$prim" -v names="$names" -v ref="$ref" \
	-v haslink="${link:+1}" -v nfiles="$k" '
function die(msg) { print "compare-hosts.sh: " msg > "/dev/stderr"; err = 1; exit 2 }
function g(x) { return x == "" ? "-" : x }
BEGIN {
	nn = split(names, nm, " ")
	for (i = 1; i <= nn; i++) if (nm[i] == ref) ri = i
}
FNR == 1 { cur = "" }
haslink && fi == nfiles + 1 {
	if ($0 ~ /^#/ || NF < 2) next
	nl++; lsize[nl] = $1 + 0; lbw[nl] = $2 * 1000
	next
}
/^# Collective:/ {
	cur = $3
	fac[fi] = 1
	for (i = 4; i < NF; i++) if ($i == "factor(busbw)") fac[fi] = $(i + 1) + 0
	if (want == "" && !((fi, cur) in prims)) { prims[fi, cur] = 1; np[fi]++; pname[fi] = cur }
	next
}
/^#/ || NF == 0 { next }
$1 !~ /^[0-9]+$/ { next }
{
	if (want != "" && cur != want) next
	k = fi SUBSEP $1
	if (k in bus) next		# first row of a size wins
	# busbw in MB/s from the time, unrounded: size / time * the factor
	bus[k] = $6 + 0 > 0 ? sprintf("%.4g", $1 / $6 * fac[fi]) : $8 * 1000
	tus[k] = $6; wrong[k] = $9
	if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
}
END {
	if (err) exit 2
	if (want == "") {
		for (i = 1; i <= nfiles; i++) {
			if (np[i] > 1) die("a file holds several primitives: pick one with -p")
			if (np[i] && want != "" && pname[i] != want) die("different primitives: " want " vs " pname[i])
			if (np[i]) want = pname[i]
		}
	}
	if (n == 0) die("no data rows" (want != "" ? " for " want : ""))
	printf "# primitive %s; busbw in MB/s; %s/%s = %s_us / %s_us (> 1: faster than %s)%s\n", want,
		"NAME", ref, ref, "NAME", ref, haslink ? "; NAME/link = busbw / link_MBps (nearest size)" : ""
	hdr = sprintf("#%11s", "size")
	for (i = 1; i <= nn; i++) hdr = hdr sprintf("  %11s", nm[i] "_MBps")
	if (haslink) hdr = hdr sprintf("  %10s", "link_MBps")
	for (i = 1; i <= nn; i++) if (i != ri) hdr = hdr sprintf("  %9s", nm[i] "/" ref)
	if (haslink) for (i = 1; i <= nn; i++) hdr = hdr sprintf("  %9s", nm[i] "/link")
	for (i = 1; i <= nn; i++) hdr = hdr sprintf("  %10s", nm[i] "_us")
	print hdr "  note"
	# sort the sizes numerically (insertion sort: few rows)
	for (i = 2; i <= n; i++) {
		v = order[i]
		for (j = i - 1; j >= 1 && order[j] + 0 > v + 0; j--) order[j + 1] = order[j]
		order[j + 1] = v
	}
	for (r = 1; r <= n; r++) {
		s = order[r]
		lk = ""
		if (haslink && nl > 0 && s + 0 > 0) {
			best = 0
			for (j = 1; j <= nl; j++) {
				if (lsize[j] <= 0) continue
				d = log(lsize[j] / s); if (d < 0) d = -d
				if (!best || d < bd) { best = j; bd = d }
			}
			if (best && lbw[best] > 0) lk = lbw[best]
		}
		line = sprintf("%12s", s)
		for (i = 1; i <= nn; i++) line = line sprintf("  %11s", g(bus[i SUBSEP s]))
		if (haslink) line = line sprintf("  %10s", lk == "" ? "-" : sprintf("%.4g", lk))
		rt = tus[ri SUBSEP s]
		for (i = 1; i <= nn; i++) {
			if (i == ri) continue
			t = tus[i SUBSEP s]; x = "-"
			if (t != "" && rt != "" && t + 0 > 0 && rt + 0 > 0) {
				x = sprintf("%.3f", rt / t); cnt[i]++; lg[i] += log(rt / t)
			}
			line = line sprintf("  %9s", x)
		}
		if (haslink)
			for (i = 1; i <= nn; i++) {
				b = bus[i SUBSEP s]; x = "-"
				if (lk != "" && b != "" && b + 0 > 0) {
					x = sprintf("%.3f", b / lk); lcnt[i]++; llg[i] += log(b / lk)
				}
				line = line sprintf("  %9s", x)
			}
		for (i = 1; i <= nn; i++) line = line sprintf("  %10s", g(tus[i SUBSEP s]))
		note = ""
		for (i = 1; i <= nn; i++) {
			w = wrong[i SUBSEP s]
			if (w != "" && w != "0" && w != "N/A") note = note "WRONG(" nm[i] ") "
		}
		sub(/ $/, "", note)
		print (note == "" ? line : line "  " note)
	}
	for (i = 1; i <= nn; i++)
		if (i != ri && cnt[i])
			printf "# geometric mean %s/%s over %d sizes: %.3f\n", nm[i], ref, cnt[i], exp(lg[i] / cnt[i])
	for (i = 1; i <= nn; i++)
		if (lcnt[i])
			printf "# geometric mean %s/link over %d sizes: %.3f\n", nm[i], lcnt[i], exp(llg[i] / lcnt[i])
}' "$@"
