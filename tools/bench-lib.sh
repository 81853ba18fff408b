# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by the benchmarks that run INSIDE a qemu guest and load the
# module themselves (bench-group.sh, bench-regcache.sh).

# bench_load NAME: refuse to run outside a qemu guest, go to the project
# (COLL_ROOT), load kmod/collective.ko after its dependencies, with
# COLL_INSMOD_ARGS.  Exits on failure.
bench_load() {
	if ! grep -qi qemu /sys/class/dmi/id/sys_vendor 2>/dev/null; then
		echo "$1: not a qemu guest" >&2
		exit 1
	fi
	cd "${COLL_ROOT:-.}" || exit 1
	unset COLL_ROOT	# the project's path here; the library's rendezvous
	for d in $(modinfo -F depends kmod/collective.ko | tr , ' '); do
		modprobe "$d"
	done
	# shellcheck disable=SC2086 # split on purpose
	insmod kmod/collective.ko ${COLL_INSMOD_ARGS:-} || exit 1
}

# group_perf NP ARGS...: tools/coll_group_perf on NP ranks (collrun, 600 s).
group_perf() {
	local n=$1
	shift
	tools/collrun -n "$n" -t 600 tools/coll_group_perf "$@"
}
