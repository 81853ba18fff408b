# shellcheck shell=bash
# Host-side helpers shared by vm.sh, vms.sh and mkinitramfs.sh (sourced, not run).
#
# Environment (all optional):
#   KVER        guest kernel version (default: newest 6.1.x in /lib/modules)
#   KERNEL      guest kernel image (default: vmlinux extracted from /boot/vmlinuz-$KVER)
#   COLL_PVH=0  boot /boot/vmlinuz-$KVER itself instead of the extracted vmlinux
#   COLL_ROOT   project root shared read-write with the guest at the same path
#               (default: the repository containing this script)
#   COLL_BUILD  build directory (default: $COLL_ROOT/build)
#   COLL_MODDIR modules directory the initramfs takes its modules from
#               (default: /lib/modules/$KVER; see mkinitramfs.sh)

RIG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
RIG_PROG=${RIG_PROG:-$(basename "$0")}

rig_msg() { printf '%s: %s\n' "$RIG_PROG" "$*" >&2; }
rig_die() { rig_msg "error: $*"; exit 125; }
rig_bad() { rig_msg "error: $*"; exit 2; } # bad usage

rig_kver() {
	if [ -n "${KVER:-}" ]; then
		printf '%s\n' "$KVER"
		return
	fi
	local v
	v=$(find /lib/modules -mindepth 1 -maxdepth 1 -name '6.1.*' -printf '%f\n' 2>/dev/null |
		sort -V | tail -n 1 || true)
	[ -n "$v" ] || rig_die "no 6.1 kernel in /lib/modules (install linux-image-amd64 or set KVER)"
	printf '%s\n' "$v"
}

rig_root() {
	local r=${COLL_ROOT:-$RIG_DIR/../..}
	(cd "$r" && pwd -P)
}

rig_build() {
	local b
	b=${COLL_BUILD:-$(rig_root)/build}
	mkdir -p "$b"
	(cd "$b" && pwd -P)
}

# Paths handed to qemu -virtfs and to the kernel command line must be plain.
rig_check_path() {
	case $1 in
	/*) ;;
	*) rig_die "$2 must be an absolute path: $1" ;;
	esac
	case $1 in
	*[[:space:],\"\'\\]*) rig_die "$2 contains whitespace, a comma, a quote or a backslash: $1" ;;
	esac
}

# rig_initramfs KVER: print the path of an up-to-date initramfs, (re)building it
# when missing or older than the scripts that make it or the kernel's modules.dep.
rig_initramfs() {
	local kver=$1 out dir
	dir=$(rig_build)/rig
	out=$dir/initramfs-$kver.cpio.gz
	mkdir -p "$dir"
	(
		flock 9
		local f stale=0
		[ -s "$out" ] || stale=1
		for f in "$RIG_DIR/mkinitramfs.sh" "$RIG_DIR/init" "$RIG_DIR/host-lib.sh" \
			"${COLL_MODDIR:-/lib/modules/$kver}/modules.dep"; do
			[ "$f" -nt "$out" ] && stale=1
		done
		if [ "$stale" = 1 ]; then
			KVER=$kver "$RIG_DIR/mkinitramfs.sh" "$out" >&2 ||
				rig_die "mkinitramfs.sh failed"
		fi
	) 9>"$dir/.initramfs.lock" || exit $?
	printf '%s\n' "$out"
}

# rig_hub: print the path of an up-to-date udp-hub binary, building it if needed.
rig_hub() {
	local dir
	dir=$(rig_build)/rig
	mkdir -p "$dir"
	(
		flock 9
		make -s -C "$RIG_DIR" OUT="$dir" >&2 || rig_die "building udp-hub failed"
	) 9>"$dir/.hub.lock" || exit $?
	printf '%s\n' "$dir/udp-hub"
}

# rig_tsc_khz: print the host's TSC frequency in kHz (nothing if unknown),
# measured once per host boot, for the guests' tsc_early_khz= (tsc-khz.c).
rig_tsc_khz() {
	local dir boot
	dir=$(rig_build)/rig
	boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || true)
	mkdir -p "$dir"
	(
		flock 9
		make -s -C "$RIG_DIR" OUT="$dir" >&2 || exit 0
		if [ "$(head -n 1 "$dir/tsc-khz.txt" 2>/dev/null)" != "$boot" ]; then
			printf '%s\n%s\n' "$boot" "$("$dir/tsc-khz" || true)" >"$dir/tsc-khz.txt"
		fi
	) 9>"$dir/.hub.lock"
	sed -n 2p "$dir/tsc-khz.txt" 2>/dev/null || true
}

# rig_extract_vmlinux IMG OUT: extract the uncompressed vmlinux (ELF) from a bzImage.
rig_extract_vmlinux() {
	local img=$1 out=$2 spec pat tool off
	for spec in '\xfd7zXZ\x00:xz -dc --single-stream' '\x28\xb5\x2f\xfd:zstd -qdc' \
		'\x1f\x8b\x08\x00:gzip -dc'; do
		pat=${spec%%:*} tool=${spec#*:}
		command -v "${tool%% *}" >/dev/null || continue
		off=$(LC_ALL=C grep -obUaP "$pat" "$img" 2>/dev/null | head -n 1 | cut -d: -f1 || true)
		[ -n "$off" ] || continue
		# shellcheck disable=SC2086 # $tool is a command with options
		tail -c "+$((off + 1))" "$img" | $tool >"$out" 2>/dev/null || true
		if [ "$(head -c 4 "$out" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; then
			return 0
		fi
	done
	rm -f "$out"
	return 1
}

# rig_kernel KVER: print the kernel image to boot. By default the uncompressed
# vmlinux, extracted once from /boot/vmlinuz-KVER into build/rig/ and booted by
# qemu through its PVH entry point: this skips the in-guest xz decompression,
# about 6 s of every boot under TCG. Falls back to the bzImage.
rig_kernel() {
	local kver=$1 img out dir
	if [ -n "${KERNEL:-}" ]; then
		[ -r "$KERNEL" ] || rig_die "KERNEL=$KERNEL not readable"
		printf '%s\n' "$KERNEL"
		return
	fi
	img=/boot/vmlinuz-$kver
	[ -r "$img" ] || rig_die "kernel image $img not readable (apt-get install linux-image-amd64)"
	if [ "${COLL_PVH:-1}" = 0 ] || ! grep -qx 'CONFIG_PVH=y' "/boot/config-$kver" 2>/dev/null; then
		printf '%s\n' "$img"
		return
	fi
	dir=$(rig_build)/rig
	out=$dir/vmlinux-$kver
	mkdir -p "$dir"
	(
		flock 9
		if [ ! -s "$out" ] || [ "$img" -nt "$out" ]; then
			if rig_extract_vmlinux "$img" "$out.tmp.$$"; then
				mv -f "$out.tmp.$$" "$out"
			else
				rm -f "$out"
			fi
		fi
	) 9>"$dir/.vmlinux.lock"
	if [ -s "$out" ]; then
		printf '%s\n' "$out"
	else
		rig_msg "warning: cannot extract vmlinux from $img; booting the bzImage (slower)"
		printf '%s\n' "$img"
	fi
}
