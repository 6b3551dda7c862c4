#!/usr/bin/env bash
# The shared library's ABI against the committed baseline
# (abi/librlock.abi.xml, made by scripts/abi-baseline), with libabigail
# (Debian's abigail-tools):
#
#   tests/abi/abi_check.sh LIBRARY SOURCE_DIR BUILD_DIR
#
# Fails (1) when the library exports a symbol not named rlock_*, or when
# abidiff finds a change an existing binary would notice (a function removed
# or its signature changed, a public type changed other than by fields added
# at the end of the structs abi/suppressions.ini names) while the soname is
# still the baseline's. A new soname (the minor version raised, for 0.x) is
# a declared break: it passes, saying to run scripts/abi-baseline. Added
# functions pass. Exits 77 (skipped) without abidw/abidiff, or when the
# library has no debug information (build it with -g: RelWithDebInfo or
# Debug).
set -euo pipefail

lib="$1"
src="$2"
build="$3"
baseline="$src/abi/librlock.abi.xml"
suppr="$src/abi/suppressions.ini"

for tool in abidw abidiff readelf nm python3; do
    command -v "$tool" >/dev/null 2>&1 ||
        { echo "abi_check: SKIP: no $tool (abigail-tools, binutils)"; exit 77; }
done
readelf -S "$lib" | grep -q '\.debug_info' ||
    { echo "abi_check: SKIP: $lib has no debug information"; exit 77; }

# Only the public API is exported (cmake/librlock.map).
others="$(nm -D --defined-only "$lib" | awk '{ print $3 }' | grep -v '^rlock_[a-z0-9]' || true)"
if [ -n "$others" ]; then
    echo "abi_check: FAIL: $lib exports symbols outside rlock_*:" >&2
    echo "$others" >&2
    exit 1
fi

soname_now="$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')"
soname_base="$(sed -n "1s/.* soname='\([^']*\)'.*/\1/p" "$baseline")"
if [ "$soname_now" != "$soname_base" ]; then
    echo "abi_check: soname $soname_now, the baseline's $soname_base: an ABI break is declared;"
    echo "abi_check: run scripts/abi-baseline $build and commit abi/librlock.abi.xml"
    exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$src/scripts/abi-baseline" --out "$tmp/now.abi.xml" "$build" >/dev/null
# The structs abi/suppressions.ini lets grow must only have grown at the
# end: libabigail's own rule also passes a changed member.
python3 "$src/tests/abi/appended_only.py" "$baseline" "$tmp/now.abi.xml" \
    rlock_config rlock_stats rlock_backoff rlock_lock_lost_info ||
    { echo "abi_check: FAIL: a public struct changed other than by fields added at its end" \
        "under soname $soname_now" >&2; exit 1; }
set +e
abidiff --no-added-syms --suppressions "$suppr" "$baseline" "$tmp/now.abi.xml" >"$tmp/report" 2>&1
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
    cat "$tmp/report"
    echo "abi_check: FAIL (abidiff exit $rc): the ABI changed incompatibly under soname" \
        "$soname_now. Undo the change, or raise the minor version (project() in" \
        "CMakeLists.txt: a new soname) and run scripts/abi-baseline." >&2
    exit 1
fi
echo "abi_check: $soname_now matches abi/librlock.abi.xml"
