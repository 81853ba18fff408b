#!/bin/bash
# mkinitramfs.sh OUT: build the rig's tiny initramfs (gzip'ed newc cpio).
#
# Contents: a static busybox, the few modules needed to reach the host over
# virtio-9p (virtio_pci, 9p, 9pnet_virtio, overlay, virtio_net and their
# dependencies from modules.dep, in load order) and selftests/rig/init.
# Everything else (/usr, /etc, /lib/modules, the project tree) comes from the
# host over 9p at boot; see init.
#
# Env: KVER (default: newest 6.1.x in /lib/modules), BUSYBOX (default: busybox
# from PATH, must be static), COLL_MODDIR (modules directory of the kernel,
# default /lib/modules/$KVER; e.g. a debug kernel's `make modules_install
# INSTALL_MOD_PATH=...` tree, where modules.builtin says what needs no module).
set -euo pipefail

RIG_PROG=mkinitramfs.sh
# shellcheck source=host-lib.sh
. "$(dirname "$0")/host-lib.sh"

[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
out=$1
kver=$(rig_kver)
moddir=${COLL_MODDIR:-/lib/modules/$kver}
[ -f "$moddir/modules.dep" ] || rig_die "$moddir/modules.dep not found"

busybox=${BUSYBOX:-$(command -v busybox || true)}
[ -x "$busybox" ] || rig_die "busybox not found (apt-get install busybox-static)"
if ldd "$busybox" >/dev/null 2>&1; then
	rig_die "$busybox is dynamically linked; install busybox-static"
fi

# Modules wanted in the initramfs; dependencies are added from modules.dep.
wanted=(virtio_pci virtio_net 9pnet_virtio 9p overlay)

stage=$(mktemp -d "${TMPDIR:-/tmp}/coll-initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT

mkdir -p "$stage"/{bin,sbin,dev,proc,sys,newroot,modules}
cp "$busybox" "$stage/bin/busybox"
for applet in $("$stage/bin/busybox" --list); do
	[ -e "$stage/bin/$applet" ] || ln -s busybox "$stage/bin/$applet"
done
ln -s ../bin/busybox "$stage/sbin/modprobe"

# modules.dep: "path.ko: dep.ko dep.ko ..." with the complete (transitive)
# dependency list; the last one listed must be loaded first.
declare -A dep_line=() by_name=()
while IFS= read -r line; do
	path=${line%%:*}
	name=${path##*/}
	name=${name%%.ko*}
	name=${name//-/_}
	dep_line[$path]=${line#*:}
	by_name[$name]=$path
done <"$moddir/modules.dep"

declare -A added=()
order=()
add_path() {
	[ -n "${added[$1]:-}" ] && return 0
	added[$1]=1
	order+=("$1")
}
for m in "${wanted[@]}"; do
	path=${by_name[${m//-/_}]:-}
	if [ -z "$path" ]; then
		# Built into the kernel: nothing to load.
		if grep -q "/${m}\.ko" "$moddir/modules.builtin" 2>/dev/null; then
			continue
		fi
		rig_die "module $m not found in $moddir/modules.dep"
	fi
	read -r -a deps <<<"${dep_line[$path]}"
	for ((i = ${#deps[@]} - 1; i >= 0; i--)); do
		add_path "${deps[i]}"
	done
	add_path "$path"
done

: >"$stage/modules/order"
for path in "${order[@]}"; do
	file=${path##*/}
	case $file in
	*.ko) cp "$moddir/$path" "$stage/modules/$file" ;;
	*.ko.xz) xz -dc "$moddir/$path" >"$stage/modules/${file%.xz}" ;;
	*.ko.zst) zstd -qdc "$moddir/$path" >"$stage/modules/${file%.zst}" ;;
	*.ko.gz) gzip -dc "$moddir/$path" >"$stage/modules/${file%.gz}" ;;
	*) rig_die "unexpected module file $path" ;;
	esac
	file=${file%.xz}
	file=${file%.zst}
	file=${file%.gz}
	echo "$file" >>"$stage/modules/order"
done
echo "$kver" >"$stage/modules/kver"

install -m 0755 "$RIG_DIR/init" "$stage/init"

mkdir -p "$(dirname "$out")"
tmp=$out.tmp.$$
(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --quiet -R 0:0 | gzip -1) >"$tmp"
mv -f "$tmp" "$out"
echo "$RIG_PROG: $out ($(du -h "$out" | cut -f1), kernel $kver, ${#order[@]} modules)" >&2
