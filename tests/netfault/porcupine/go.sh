#!/bin/sh
# Builds or tests the Porcupine checker (CMake runs it; README.md in
# tests/netfault, "Which checker covers what"). A download that fails (no
# network, no module proxy) must not fail the project's build: the build
# then says so and leaves no binary, and netfault prints that it skips the
# Porcupine check. The test exits 77 (a ctest SKIP) for the same reason.
#
#   go.sh build GO OUTPUT
#   go.sh test GO
set -u
cd "$(dirname "$0")" || exit 2
mode=$1
GO=$2
export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local CGO_ENABLED=0
if [ -z "${HOME:-}" ] && [ -z "${GOCACHE:-}" ]; then
    export GOCACHE="${TMPDIR:-/tmp}/rlock-go-cache" GOPATH="${TMPDIR:-/tmp}/rlock-go"
fi
if ! out=$("$GO" mod download 2>&1); then
    echo "netfault: the Porcupine checker cannot be built: its module did not download:" >&2
    echo "$out" >&2
    if [ "$mode" = build ]; then
        echo "netfault: NOT BUILT: netfault will skip the Porcupine check (and say so)" >&2
        rm -f "$3"
        exit 0
    fi
    echo "SKIP: no module" >&2
    exit 77
fi
case "$mode" in
build)
    if ! "$GO" build -o "$3" .; then
        echo "netfault: NOT BUILT: go build failed: netfault will skip the Porcupine check" >&2
        rm -f "$3"
    fi
    exit 0
    ;;
test) exec "$GO" test -count=1 ./... ;;
esac
exit 2
