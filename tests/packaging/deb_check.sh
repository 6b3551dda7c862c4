#!/usr/bin/env bash
# Builds rlock's Debian packages (CPack, cmake/RlockPackaging.cmake) in
# build-deb, checks their contents and dependencies, installs them with apt,
# builds and runs the find_package and pkg-config consumers (async API
# included, on a private redis-server) against the installed files under
# /usr, runs `rlock --version` and `man -w rlock`, then purges the packages
# and whatever apt pulled in for them, leaving the machine's package set as
# it found it.
#
#   tests/packaging/deb_check.sh [BUILD_DIR]
#
# BUILD_DIR: a built tree with the tests (default build), for with_redis.
# Needs root (it installs packages); exits 77 with a message, installing
# nothing, when not root or not on Debian. Refuses to run (exit 1) when a
# package of the same name is installed or a file the packages hold is
# already there, since removing them afterwards would not restore it.
set -euo pipefail

cd "$(dirname "$0")/../.."
src="$PWD"
build="$(cd "${1:-build}" && pwd)"
out="$src/build-deb"
# The library's package is named after its soname (Debian policy 8.1):
# librlock.so.0.MINOR for 0.x, librlock.so.MAJOR from 1.0 (CMakeLists.txt).
src_version="$(sed -n 's/^project(rlock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
case "$src_version" in
0.*) sover="${src_version%.*}" ;;
*) sover="${src_version%%.*}" ;;
esac
libpkg="librlock$sover"
names=("$libpkg" librlock-dev rlock)

skip() {
    echo "deb_check: SKIP: $*"
    exit 77
}
fail() {
    echo "deb_check: FAIL: $*" >&2
    exit 1
}

command -v dpkg >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 ||
    skip "not a Debian system (no dpkg or apt-get)"
[ "$(id -u)" -eq 0 ] || skip "installing the packages needs root; run as root to check them"
with_redis="$build/tests/with_redis"
[ -x "$with_redis" ] || fail "no $with_redis: build $build with the tests first"

status_of() {
    dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || echo not-installed
}
installed_set() {
    dpkg-query -W -f='${db:Status-Status} ${Package}:${Architecture}\n' |
        awk '$1 != "not-installed" { print $2 }' | sort
}
for p in "${names[@]}"; do
    [ "$(status_of "$p")" = not-installed ] ||
        fail "package $p is already on this machine ($(status_of "$p")); remove it first"
done

echo "== build-deb: configure, build, cpack (log: $out/deb_check.log)"
mkdir -p "$out"
log="$out/deb_check.log"
cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
    -DRLOCK_BUILD_TESTS=OFF -DRLOCK_BUILD_EXAMPLES=OFF >"$log" 2>&1 ||
    { cat "$log" >&2; fail "configure"; }
cmake --build "$out" -j"$(nproc)" >>"$log" 2>&1 || { cat "$log" >&2; fail "build"; }
rm -f "$out"/*.deb
(cd "$out" && cpack -G DEB) >>"$log" 2>&1 || { cat "$log" >&2; fail "cpack"; }
version="$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$out/CMakeCache.txt")"
arch="$(dpkg --print-architecture)"
declare -A deb
for p in "${names[@]}"; do
    deb[$p]="$out/${p}_${version}_${arch}.deb"
    [ -f "${deb[$p]}" ] || fail "cpack made no ${deb[$p]}: $(ls "$out"/*.deb 2>/dev/null)"
done

# ---- contents (dpkg -c) and dependencies (dpkg-deb -f) ----
contents() { dpkg -c "${deb[$1]}" | awk '{ print $6 }' | sed 's|^\./|/|'; }
has() { # has PACKAGE REGEX...: each regex matches a path in the package
    local p="$1" re list
    shift
    list="$(contents "$p")"
    for re in "$@"; do
        grep -qE "$re" <<<"$list" || fail "$p lacks a path matching $re"
    done
}
has_not() { # has_not PACKAGE REGEX: no path in the package matches
    if contents "$1" | grep -E "$2"; then
        fail "$1 holds the paths above (matching $2)"
    fi
}
depends() { # depends PACKAGE REGEX...: its Depends field matches each
    local p="$1" field re
    shift
    field="$(dpkg-deb -f "${deb[$p]}" Depends)"
    for re in "$@"; do
        grep -qE "$re" <<<"$field" || fail "$p: Depends \"$field\" lacks $re"
    done
}
libdir='^/usr/lib/[a-z0-9_]+-linux-[a-z0-9_]+'
has "$libpkg" "$libdir/librlock\.so\.${sover//./\\.}$" "$libdir/librlock\.so\.$version$"
has_not "$libpkg" '^/usr/(include|bin|share)/|\.a$|/cmake/|/pkgconfig/|librlock\.so$'
has librlock-dev '^/usr/include/rlock/rlock\.h$' '^/usr/include/rlock/version\.h$' \
    "$libdir/librlock\.a$" "$libdir/librlock\.so$" "$libdir/pkgconfig/rlock\.pc$" \
    "$libdir/cmake/rlock/rlockConfig\.cmake$" "$libdir/cmake/rlock/rlockConfigVersion\.cmake$" \
    "$libdir/cmake/rlock/rlockTargets\.cmake$"
has_not librlock-dev 'librlock\.so\.0|^/usr/bin/'
has rlock '^/usr/bin/rlock$' '^/usr/share/man/man1/rlock\.1(\.gz)?$'
has_not rlock '^/usr/lib/|^/usr/include/'
depends "$libpkg" '(^|, )libhiredis[^ ,]*' '(^|, )libev4' '(^|, )libssl3'
depends rlock '(^|, )libhiredis[^ ,]*' '(^|, )libev4' '(^|, )libssl3'
depends librlock-dev "(^|, )$libpkg \(= $version\)" '(^|, )libhiredis-dev' '(^|, )libev-dev' \
    '(^|, )libssl-dev'
echo "== contents and dependencies as expected"

# Files the packages would overwrite (dpkg replaces files no package owns,
# and purging would then delete them): refuse.
for p in "${names[@]}"; do
    while read -r f; do
        if [ -n "$f" ] && [ ! -d "$f" ] && { [ -e "$f" ] || [ -L "$f" ]; }; then
            fail "$f already exists; the $p package would replace it"
        fi
    done < <(contents "$p")
done

# ---- install; from here on, the exit trap restores the package set ----
before="$(installed_set)"
restore() {
    local rc=$? added
    echo "== purging the packages"
    apt-get purge -y -q -o DPkg::Lock::Timeout=120 "${names[@]}" </dev/null >/dev/null 2>&1 || true
    # What apt installed for them (none when their dependencies were there).
    added="$(comm -13 <(echo "$before") <(installed_set) | tr '\n' ' ')"
    if [ -n "${added// /}" ]; then
        echo "== purging what apt pulled in for them: $added"
        # shellcheck disable=SC2086 # a list of names
        apt-get purge -y -q -o DPkg::Lock::Timeout=120 $added </dev/null >/dev/null 2>&1 || true
    fi
    if [ "$(installed_set)" != "$before" ]; then
        echo "deb_check: FAIL: the package set differs from before:" >&2
        diff <(echo "$before") <(installed_set) >&2 || true
        rc=1
    elif [ -e /usr/include/rlock ] || [ -e /usr/bin/rlock ]; then
        echo "deb_check: FAIL: files remain after the purge" >&2
        rc=1
    fi
    exit "$rc"
}
trap restore EXIT

echo "== apt-get install ./librlock*.deb ./rlock*.deb (log: $out/apt.log)"
(cd "$out" && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    -o DPkg::Lock::Timeout=120 ./librlock*.deb ./rlock*.deb </dev/null) >"$out/apt.log" 2>&1 ||
    { cat "$out/apt.log" >&2; fail "apt-get install"; }
for p in "${names[@]}"; do
    [ "$(status_of "$p")" = installed ] || fail "$p is not installed after apt-get install"
done

# ---- use the installed files ----
got="$(/usr/bin/rlock --version)"
[ "$got" = "rlock $version" ] || fail "rlock --version: \"$got\", expected \"rlock $version\""
echo "== rlock --version: $got"
if command -v man >/dev/null 2>&1; then
    page="$(man -w rlock)" || fail "man -w rlock found no page"
    case "$page" in
    /usr/share/man/man1/rlock.1*) echo "== man -w rlock: $page" ;;
    *) fail "man -w rlock: $page, not the package's" ;;
    esac
else
    echo "== no man command: man -w rlock not checked"
fi
RLOCK_WITH_REDIS="$with_redis" bash tests/packaging/check.sh system "$build" "$version" cc
