#!/usr/bin/env bash
# Builds and runs the consumer in tests/packaging/consumer out of tree
# against an installed rlock: the version check (main.c) and the async API on
# the program's own libev loop (async.c, run against a private redis-server
# through with_redis), each against the shared and the static library.
#
#   check.sh MODE BUILD_DIR VERSION C_COMPILER [EXTRA_C_FLAGS]
#
# MODE: find_package (BUILD_DIR installed into a temporary prefix; CMake's
#       find_package(rlock), rlock::rlock and rlock::rlock_static),
#       pkg_config (the same prefix; pkg-config rlock, shared and --static),
#       subdirectory (add_subdirectory of the source tree; builds rlock again),
#       system (no install: find_package and pkg-config on what is installed
#       under /usr, e.g. by the Debian packages; tests/packaging/deb_check.sh).
# EXTRA_C_FLAGS: the sanitizer flags the library was built with, which its
# consumers need too.
# RLOCK_WITH_REDIS: the with_redis program (default BUILD_DIR/tests/with_redis).
set -euo pipefail

mode="$1"
build="$2"
version="$3"
cc="$4"
flags="${5:-}"
here="$(cd "$(dirname "$0")" && pwd)"
with_redis="${RLOCK_WITH_REDIS:-$build/tests/with_redis}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

if [ ! -x "$with_redis" ]; then
    echo "check.sh: no with_redis program at $with_redis (set RLOCK_WITH_REDIS)" >&2
    exit 1
fi

# run_version EXE...: each prints and checks its version.
run_version() {
    local exe
    for exe in "$@"; do
        echo "== $exe"
        "$exe" "$version"
    done
}

# run_async EXE...: each locks and unlocks asynchronously on EV_DEFAULT, on a
# private redis-server whose address with_redis appends.
run_async() {
    local exe
    for exe in "$@"; do
        echo "== $exe (private redis-server)"
        "$with_redis" "$exe" "$version"
    done
}

# with_cmake [PREFIX]: find_package(rlock) from PREFIX, build, run.
with_cmake() {
    cmake -S "$here/consumer" -B "$work/b" -DCMAKE_PREFIX_PATH="$1" \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags -Wall -Wextra -Werror" >/dev/null
    echo "find_package(rlock): $(grep '^rlock_DIR:' "$work/b/CMakeCache.txt")"
    cmake --build "$work/b" >/dev/null
    # The shared ones find librlock.so through their build RPATH.
    run_version "$work/b/consumer_shared" "$work/b/consumer_static"
    run_async "$work/b/consumer_async_shared" "$work/b/consumer_async_static"
}

# with_pkg_config: pkg-config rlock (PKG_CONFIG_PATH as set), build, run.
with_pkg_config() {
    pkg-config --modversion rlock | grep -qx "$version"
    echo "pkg-config rlock: $(pkg-config --variable=pcfiledir rlock)/rlock.pc"
    # The library's own dependencies' flags stay out of its consumers'.
    if pkg-config --cflags rlock | grep -q -e hiredis -e _FILE_OFFSET_BITS; then
        echo "pkg-config --cflags rlock leaks hiredis's flags: $(pkg-config --cflags rlock)" >&2
        exit 1
    fi
    # Its paths as pkg-config compares them, whole and normalised: it drops
    # a system directory (-I/usr/include) only when spelled as one, never
    # /usr/lib/x86_64-linux-gnu/pkgconfig/../../../include.
    if pkg-config --cflags --libs rlock | grep -q -e '/\.\./' -e '/\./'; then
        echo "pkg-config rlock gives unnormalised paths: $(pkg-config --cflags --libs rlock)" >&2
        exit 1
    fi
    local libdir prog
    libdir="$(pkg-config --variable=libdir rlock)"
    for prog in main async; do
        # shellcheck disable=SC2046,SC2086 # word splitting wanted
        "$cc" $flags -Wall -Wextra -Werror -o "$work/${prog}_shared" "$here/consumer/$prog.c" \
            $(pkg-config --cflags --libs rlock)
        # shellcheck disable=SC2046,SC2086
        "$cc" $flags -Wall -Wextra -Werror -o "$work/${prog}_static" "$here/consumer/$prog.c" \
            $(pkg-config --cflags rlock) "$libdir/librlock.a" \
            $(pkg-config --static --libs rlock | sed 's/-lrlock//')
    done
    LD_LIBRARY_PATH="$libdir" run_version "$work/main_shared"
    LD_LIBRARY_PATH="$libdir" run_async "$work/async_shared"
    run_version "$work/main_static"
    run_async "$work/async_static"
}

case "$mode" in
find_package)
    cmake --install "$build" --prefix "$prefix" >/dev/null
    with_cmake "$prefix"
    ;;
pkg_config)
    cmake --install "$build" --prefix "$prefix" >/dev/null
    PKG_CONFIG_PATH="$(dirname "$(find "$prefix" -name rlock.pc)")"
    export PKG_CONFIG_PATH
    with_pkg_config
    ;;
subdirectory)
    cmake -S "$here/consumer" -B "$work/b" -DRLOCK_SOURCE_DIR="$here/../.." \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" >/dev/null
    cmake --build "$work/b" -j2 >/dev/null
    run_version "$work/b/consumer_shared" "$work/b/consumer_static"
    run_async "$work/b/consumer_async_shared" "$work/b/consumer_async_static"
    ;;
system)
    # /usr first, before /usr/local, where another copy might be.
    with_cmake /usr
    case "$(grep '^rlock_DIR:' "$work/b/CMakeCache.txt")" in
    *=/usr/lib/*) ;;
    *)
        echo "find_package(rlock) did not find the copy under /usr/lib" >&2
        exit 1
        ;;
    esac
    rm -rf "$work/b"
    unset PKG_CONFIG_PATH
    case "$(pkg-config --variable=pcfiledir rlock)" in
    /usr/lib/*) ;;
    *)
        echo "pkg-config found rlock.pc outside /usr/lib" >&2
        exit 1
        ;;
    esac
    # Installed in /usr: pkg-config drops the system directories, as for
    # any Debian package (-I/usr/include would reorder a consumer's own).
    if [ -n "$(pkg-config --cflags rlock | tr -d ' ')" ] ||
        pkg-config --libs rlock | grep -q -e '-L/usr/lib' -e '-L/usr/include'; then
        echo "pkg-config rlock keeps system directories: $(pkg-config --cflags --libs rlock)" >&2
        exit 1
    fi
    with_pkg_config
    ;;
*)
    echo "usage: check.sh find_package|pkg_config|subdirectory|system BUILD_DIR VERSION CC [FLAGS]" >&2
    exit 2
    ;;
esac
echo "PASS ($mode)"
