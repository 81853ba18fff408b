#!/bin/bash
# debug-kernel.sh: build the rig's debug guest kernel (KASAN, lockdep, kmemleak,
# DEBUG_OBJECTS, UBSAN, ...) and collective.ko against it.
#
#   selftests/rig/debug-kernel.sh [kernel|module|all|--print]   (default: all)
#
# kernel: extract /usr/src/linux-source-6.1.tar.xz into build/debug-kernel/
#   (once), `make tinyconfig` + debug-kernel.config (merge_config.sh), build
#   vmlinux and bzImage, and install modules.dep/modules.builtin into
#   build/debug-kernel/modroot (for mkinitramfs.sh: everything is built in).
#   Rebuilt only when debug-kernel.config is newer than the build's .config.
# module: copy kmod/, uapi/ and Kbuild into build/debug-mod/ and build
#   collective.ko there (kmod/collective.ko, the normal build, is untouched).
#
# --print: only print the paths below (rc 1 if kernel or module is not built).
# Prints, one per line: KERNEL=<bzImage for vm.sh> VMLINUX=... KTREE=<build tree>
# KVER=<release> MODDIR=<modules dir> MODULE=<collective.ko>.
#
# Env: JOBS (2), NICE (10), COLL_BUILD (build/), LINUX_SRC_TAR.
set -euo pipefail

RIG_PROG=debug-kernel.sh
# shellcheck source=host-lib.sh
. "$(dirname "$0")/host-lib.sh"

what=${1:-all}
case $what in kernel | module | all | --print) ;; *) rig_bad "usage: $0 [kernel|module|all|--print]" ;; esac

root=$(rig_root)
build=$(rig_build)
jobs=${JOBS:-2}
nice=(nice -n "${NICE:-10}")
tar=${LINUX_SRC_TAR:-/usr/src/linux-source-6.1.tar.xz}
frag=$RIG_DIR/debug-kernel.config
kdir=$build/debug-kernel
ktree=$kdir/linux-source-6.1
modroot=$kdir/modroot
mdir=$build/debug-mod

build_kernel() {
	if [ ! -f "$ktree/Makefile" ]; then
		[ -r "$tar" ] || rig_die "$tar not found (apt-get install linux-source-6.1)"
		rig_msg "extracting $tar into $kdir"
		mkdir -p "$kdir"
		"${nice[@]}" tar -xJf "$tar" -C "$kdir"
	fi
	if [ ! -f "$ktree/.config" ] || [ "$frag" -nt "$ktree/.config" ]; then
		rig_msg "configuring: tinyconfig + $frag"
		"${nice[@]}" make -s -C "$ktree" tinyconfig >/dev/null
		(cd "$ktree" && "${nice[@]}" scripts/kconfig/merge_config.sh -m .config "$frag" >/dev/null)
		"${nice[@]}" make -s -C "$ktree" olddefconfig
		# merge_config.sh -m does not check the result: report what did not stick.
		local line sym missing=0
		while IFS= read -r line; do
			case $line in
			CONFIG_*=*)
				grep -qxF -- "$line" "$ktree/.config" || {
					rig_msg "warning: $line did not stick: $(grep -E "^(# )?${line%%=*}[= ]" "$ktree/.config" || echo absent)"
					missing=1
				}
				;;
			'# CONFIG_'*' is not set')
				sym=${line#\# }
				sym=${sym%% *}
				! grep -q "^$sym=" "$ktree/.config" || { rig_msg "warning: $line did not stick"; missing=1; }
				;;
			esac
		done <"$frag"
		for sym in CONFIG_KASAN CONFIG_PROVE_LOCKING CONFIG_DEBUG_KMEMLEAK CONFIG_SLUB \
			CONFIG_TRACEPOINTS CONFIG_9P_FS CONFIG_VIRTIO_PCI CONFIG_DEVPORT; do
			grep -qx "$sym=y" "$ktree/.config" || rig_die "$sym is not set in $ktree/.config"
		done
		[ "$missing" = 0 ] || rig_msg "(some options of the fragment did not stick; see above)"
	fi
	rig_msg "building the kernel in $ktree (make -j$jobs; ~15-20 min from scratch on 2 cores)"
	# "all" builds vmlinux, bzImage and modules (naming them as separate goals
	# races in 6.1 Kbuild: modules.order files go missing).
	"${nice[@]}" make -s -C "$ktree" -j"$jobs" all
	local kver
	kver=$(make -s -C "$ktree" kernelrelease)
	if [ ! -f "$modroot/lib/modules/$kver/modules.dep" ] || [ "$ktree/vmlinux" -nt "$modroot/lib/modules/$kver/modules.dep" ]; then
		"${nice[@]}" make -s -C "$ktree" INSTALL_MOD_PATH="$modroot" DEPMOD=/sbin/depmod modules_install >/dev/null
		# depmod stamps modules.dep only when its content changes; the rig
		# compares its age with the initramfs.
		touch "$modroot/lib/modules/$kver/modules.dep"
	fi
}

build_module() {
	{ [ -f "$ktree/vmlinux" ] && [ -f "$ktree/Module.symvers" ]; } ||
		rig_die "no built kernel in $ktree; run $0 kernel"
	mkdir -p "$mdir"
	# Mirror the sources (only sources: build products stay in $mdir).
	rm -rf "$mdir/kmod.new" "$mdir/uapi.new"
	mkdir -p "$mdir/kmod.new"
	find "$root/kmod" -maxdepth 1 -type f \( -name '*.[ch]' -o -name Kbuild \) -exec cp -p {} "$mdir/kmod.new/" \;
	cp -rp "$root/uapi" "$mdir/uapi.new"
	cp -p "$root/Kbuild" "$mdir/Kbuild"
	# Replace changed files only, so make rebuilds what changed.
	mkdir -p "$mdir/kmod" "$mdir/uapi"
	rsync -rc --delete --exclude='*.o' --exclude='*.ko' --exclude='*.mod*' --exclude='.*.cmd' \
		--exclude=modules.order --exclude=Module.symvers "$mdir/kmod.new/" "$mdir/kmod/"
	rsync -rc --delete "$mdir/uapi.new/" "$mdir/uapi/"
	rm -rf "$mdir/kmod.new" "$mdir/uapi.new"
	rig_msg "building collective.ko against $ktree in $mdir"
	"${nice[@]}" make -s -C "$ktree" M="$mdir" -j"$jobs" modules
	[ -f "$mdir/kmod/collective.ko" ] || rig_die "no $mdir/kmod/collective.ko"
}

case $what in
kernel) build_kernel ;;
module) build_module ;;
all) build_kernel; build_module ;;
--print) [ -f "$ktree/vmlinux" ] && [ -f "$mdir/kmod/collective.ko" ] || exit 1 ;;
esac

kver=$(make -s -C "$ktree" kernelrelease)
# The bzImage: this KASAN vmlinux does not boot through qemu's PVH entry
# (qemu exits at once without a console line).
echo "KERNEL=$ktree/arch/x86/boot/bzImage"
echo "VMLINUX=$ktree/vmlinux"
echo "KTREE=$ktree"
echo "KVER=$kver"
echo "MODDIR=$modroot/lib/modules/$kver"
[ "$what" = kernel ] || echo "MODULE=$mdir/kmod/collective.ko"
