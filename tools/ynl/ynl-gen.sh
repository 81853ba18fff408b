#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# ynl-gen.sh uapi SPEC OUT     the uapi header (ynl-gen-c.py --mode uapi)
# ynl-gen.sh policy SPEC OUT   the kernel's policy tables only
#
# Runs the kernel's YNL generator, vendored unchanged from linux-source-6.12
# (tools/net/ynl).  The generator validates the spec against genetlink.yaml
# two directories above it and names the spec relative to the directory
# that holds a MAINTAINERS file, so the spec is staged in such a tree: the
# output says "uapi/collective.yaml" whatever the checkout's path.
#
# "policy" keeps, of --mode kernel --source, the range structs and the
# policy tables, which build on 6.1; not the ops table, which uses
# struct genl_split_ops (6.2 and later): kmod/coll_netlink.c has that table
# by hand, in 6.1's struct genl_ops.  One edit for 6.1: its struct
# nla_policy points to a struct netlink_range_validation that is not const
# (const from 6.2 on), so the range structs lose their const.
set -eu
mode=$1 spec=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
name=$(basename "$spec")
mkdir -p "$stage/uapi"
: > "$stage/MAINTAINERS"
cp "$here/genetlink.yaml" "$stage/genetlink.yaml"
cp "$spec" "$stage/uapi/$name"
gen() {
	${PYTHON:-/usr/bin/python3} "$here/ynl-gen-c.py" --spec "$stage/uapi/$name" \
		-o "$stage/out" "$@"
}
case $mode in
uapi)
	gen --mode uapi --header
	cp "$stage/out" "$out"
	;;
policy)
	gen --mode kernel --source
	guard=COLL_NL_GEN_H
	{
		sed -n '1s|^// \(.*\)$|/* \1 */|p; 2,4p' "$stage/out"
		echo "/* Policy tables only, ranges not const for 6.1 (tools/ynl/ynl-gen.sh) */"
		echo
		echo "#ifndef $guard"
		echo "#define $guard"
		echo
		echo "#include <net/netlink.h>"
		echo "#include <linux/collective_nl.h>"
		echo
		sed -n '/^\/\* Integer value ranges \*\//,/^\/\* Ops table/p' "$stage/out" |
			sed '$d' |
			sed 's/^static const struct netlink_range_validation /static struct netlink_range_validation /'
		echo "#endif /* $guard */"
	} > "$stage/policy"
	cp "$stage/policy" "$out"
	;;
*)
	echo "usage: $0 uapi|policy SPEC OUT" >&2
	exit 2
	;;
esac
