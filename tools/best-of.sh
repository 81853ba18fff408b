#!/bin/sh
# SPDX-License-Identifier: MIT
#
# best-of.sh: of two mpi_perf outputs (two MPI libraries, same primitive and
# sizes), the faster row for each size: the best peer, for compare.sh.
#
#   best-of.sh A.txt B.txt > BEST.txt
#
# Comment lines come from A.  A row of A is replaced by B's row of the same
# size when B's time (column 6, microseconds) is lower.  Sizes only in B are
# left out.  POSIX sh and awk only ($AWK overrides awk).
set -eu
[ $# -eq 2 ] || { echo "usage: best-of.sh A.txt B.txt" >&2; exit 2; }
${AWK:-awk} '
	NR == FNR {
		if ($0 !~ /^#/ && NF >= 9) { t[$1] = $6; row[$1] = $0 }
		next
	}
	/^#/ || NF < 9 { print; next }
	($1 in t) && t[$1] + 0 < $6 + 0 { print row[$1]; next }
	{ print }
' "$2" "$1"
