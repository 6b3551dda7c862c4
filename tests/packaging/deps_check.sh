#!/usr/bin/env bash
# Checks scripts/deps's package sets (installs nothing):
# - the demo's (scripts/deps --demo --print) has what building the library
#   and running the demo need, and none of the test-only tools: no JDK,
#   Maven, node, npm, clang, valgrind or cmocka;
# - the full set (scripts/deps --print) holds the demo's;
# - scripts/demo asks for the demo's set only.
#
#   deps_check.sh SOURCE_DIR
set -euo pipefail

src="$1"
demo="$(bash "$src/scripts/deps" --demo --print)"
full="$(bash "$src/scripts/deps" --print)"
failed=0

for p in build-essential cmake pkg-config libhiredis-dev libev-dev libssl-dev redis-server; do
    if ! grep -qx -- "$p" <<<"$demo"; then
        echo "scripts/deps --demo lacks $p" >&2
        failed=1
    fi
done
if extra="$(grep -E 'jdk|^maven$|^nodejs$|^npm$|clang|valgrind|cmocka' <<<"$demo")"; then
    echo "scripts/deps --demo installs test-only packages:" $extra >&2
    failed=1
fi
while read -r p; do
    if ! grep -qx -- "$p" <<<"$full"; then
        echo "scripts/deps (full) lacks the demo's $p" >&2
        failed=1
    fi
done <<<"$demo"
if ! grep -q 'scripts/deps --demo' "$src/scripts/demo"; then
    echo "scripts/demo does not use scripts/deps --demo" >&2
    failed=1
fi
if [ "$failed" -ne 0 ]; then
    exit 1
fi
echo "PASS: the demo's packages:" $demo
