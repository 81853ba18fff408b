#!/bin/sh
# Every function the header declares is listed in the version script and
# exported by the shared library at a LIBCOLLECTIVE_1.N version, and nothing
# else is; the released 1.0 stanza is exactly test/abi-1.0.txt (a released
# stanza never changes: new functions go into a new one).
set -eu
cd "$(dirname "$0")/.."
tmp=${TMPDIR:-/tmp}/abi_check.$$
trap 'rm -f "$tmp".*' EXIT
grep -o 'coll_[a-z0-9_]*(' libcollective.h | tr -d '(' | sort -u > "$tmp.hdr"
grep -v '^[[:space:]]*\*\|^/\*' libcollective.map | grep -o 'coll_[a-z0-9_]*' | sort -u > "$tmp.map"
sed -n '/^LIBCOLLECTIVE_1.0 {/,/^};/p' libcollective.map | grep -o 'coll_[a-z0-9_]*' | sort > "$tmp.v10"
nm -D --defined-only libcollective.so.1 | awk '$2 == "T" { print $3 }' |
	sed 's/@@*LIBCOLLECTIVE_1\.[0-9]*$//' | sort -u > "$tmp.so"
nm -D --defined-only libcollective.so.1 | awk '$2 == "T" && $3 !~ /@@LIBCOLLECTIVE_1\.[0-9]+$/ { print "unversioned: " $3; bad = 1 } END { exit bad }'
fail=0
if ! cmp -s "$tmp.hdr" "$tmp.map"; then echo "header vs map:"; diff "$tmp.hdr" "$tmp.map" || true; fail=1; fi
if ! cmp -s "$tmp.hdr" "$tmp.so"; then echo "header vs .so:"; diff "$tmp.hdr" "$tmp.so" || true; fail=1; fi
if ! cmp -s "$tmp.v10" test/abi-1.0.txt; then echo "the released 1.0 stanza changed:"; diff test/abi-1.0.txt "$tmp.v10" || true; fail=1; fi
[ "$(readelf -d libcollective.so.1 | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" = libcollective.so.1 ] ||
	{ echo "bad soname"; fail=1; }
[ $fail = 0 ] && echo "abi_check: ok ($(wc -l < "$tmp.hdr") symbols; 1.0 unchanged)"
exit $fail
