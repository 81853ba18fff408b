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

# mpi_forms: the MPIs here to run mpi_perf through: "ompi", "mpich", both
# or none (the launcher installed and the program built).
mpi_forms() {
	local f=
	command -v mpirun.openmpi > /dev/null && [ -x tools/mpi_perf ] &&
		f="$f ompi"
	command -v mpirun.mpich > /dev/null && [ -x tools/mpi_perf.mpich ] &&
		f="$f mpich"
	echo "$f"
}

# mpi_cmd FORM NP SECS: in the array MPI_CMD, mpi_perf on NP ranks through
# Open MPI (ompi: shared memory, btl vader) or MPICH (mpich), killed after
# SECS; returns 1 for another FORM.
# shellcheck disable=SC2034 # MPI_CMD is the caller's
mpi_cmd() {
	# shellcheck disable=SC2054 # "self,vader" is one argument
	case $1 in
	ompi) MPI_CMD=(env OMPI_ALLOW_RUN_AS_ROOT=1
		       OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
		       timeout -k 10 "$3" mpirun.openmpi --oversubscribe
		       --mca btl self,vader --mca pml ob1 -np "$2" tools/mpi_perf) ;;
	mpich) MPI_CMD=(timeout -k 10 "$3" mpirun.mpich -np "$2"
			tools/mpi_perf.mpich) ;;
	*) return 1 ;;
	esac
}
