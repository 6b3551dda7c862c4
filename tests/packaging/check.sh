#!/usr/bin/env bash
# Installs the rlock build in BUILD_DIR into a temporary prefix, then builds
# and runs the consumer in tests/packaging/consumer against it, out of tree.
#
#   check.sh MODE BUILD_DIR VERSION C_COMPILER [EXTRA_C_FLAGS]
#
# MODE: find_package (CMake's find_package(rlock), rlock::rlock and
#       rlock::rlock_static), pkg_config (pkg-config rlock, shared and --static),
#       subdirectory (add_subdirectory of the source tree; builds rlock again).
# EXTRA_C_FLAGS: the sanitizer flags the library was built with, which its
# consumers need too.
set -euo pipefail

mode="$1"
build="$2"
version="$3"
cc="$4"
flags="${5:-}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

run_both() {
    for exe in "$@"; do
        echo "== $exe"
        "$exe" "$version"
    done
}

case "$mode" in
find_package)
    cmake --install "$build" --prefix "$prefix" >/dev/null
    cmake -S "$here/consumer" -B "$work/b" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags -Wall -Wextra -Werror" >/dev/null
    cmake --build "$work/b" >/dev/null
    # The shared one finds librlock.so through its build RPATH.
    run_both "$work/b/consumer_shared" "$work/b/consumer_static"
    ;;
pkg_config)
    cmake --install "$build" --prefix "$prefix" >/dev/null
    export PKG_CONFIG_PATH="$(dirname "$(find "$prefix" -name rlock.pc)")"
    pkg-config --modversion rlock | grep -qx "$version"
    # The library's own dependencies' flags stay out of its consumers'.
    if pkg-config --cflags rlock | grep -q -e hiredis -e _FILE_OFFSET_BITS; then
        echo "pkg-config --cflags rlock leaks hiredis's flags: $(pkg-config --cflags rlock)" >&2
        exit 1
    fi
    libdir="$(pkg-config --variable=libdir rlock)"
    # shellcheck disable=SC2046,SC2086 # word splitting wanted
    "$cc" $flags -Wall -Wextra -Werror -o "$work/consumer_shared" "$here/consumer/main.c" \
        $(pkg-config --cflags --libs rlock)
    # shellcheck disable=SC2046,SC2086
    "$cc" $flags -Wall -Wextra -Werror -o "$work/consumer_static" "$here/consumer/main.c" \
        $(pkg-config --cflags rlock) "$libdir/librlock.a" \
        $(pkg-config --static --libs rlock | sed 's/-lrlock//')
    LD_LIBRARY_PATH="$libdir" run_both "$work/consumer_shared"
    run_both "$work/consumer_static"
    ;;
subdirectory)
    cmake -S "$here/consumer" -B "$work/b" -DRLOCK_SOURCE_DIR="$here/../.." \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" >/dev/null
    cmake --build "$work/b" -j2 >/dev/null
    run_both "$work/b/consumer_shared" "$work/b/consumer_static"
    ;;
*)
    echo "usage: check.sh find_package|pkg_config|subdirectory BUILD_DIR VERSION CC [FLAGS]" >&2
    exit 2
    ;;
esac
echo "PASS ($mode)"
