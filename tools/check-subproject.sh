#!/bin/sh
# Builds a parent Meson project (tests/consumers/meson) that uses libcumem as
# a subproject (this tree, linked into its subprojects/ as libcumem) with
# dependency('cumem'), which the subproject's meson.override_dependency
# answers. Checks that only the parent's test is registered (libcumem's
# tests, examples and benchmarks stay off in a parent's build), that the
# subproject builds the library alone, and runs the parent's test.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
version=$(awk '$1 == "#define" && $2 ~ /^CUMEM_VERSION_(MAJOR|MINOR|PATCH)$/ { v = v sep $3; sep = "." } END { print v }' include/cumem/cumem.h)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check-subproject: $*" >&2; exit 1; }

mkdir -p "$work/parent/subprojects"
cp tests/consumers/meson/meson.build tests/consumers/consumer.c "$work/parent/"
ln -s "$root" "$work/parent/subprojects/libcumem"
cd "$work/parent"
# --force-fallback-for: the subproject even where an installed cumem.pc exists.
meson setup build --force-fallback-for=cumem >"$work/setup.log" 2>&1 ||
  { cat "$work/setup.log"; fail "the parent project did not configure"; }
grep -q "Dependency cumem found: YES $version (overridden)" "$work/setup.log" ||
  { cat "$work/setup.log"; fail "dependency('cumem') was not answered by the subproject"; }

tests=$(meson test -C build --list --no-rebuild 2>/dev/null)
[ "$tests" = "consumer" ] || fail "the parent registers these tests, not only its own 'consumer':
$tests"
targets=$(meson introspect build --targets |
  python3 -c 'import json, sys; print(" ".join(sorted(t["name"] for t in json.load(sys.stdin) if t["subproject"] == "libcumem")))')
[ "$targets" = "cumem" ] || fail "the subproject builds more than the library: $targets"
echo "parent: tests registered: $tests; libcumem subproject targets: $targets"

meson compile -C build >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "the parent did not build"; }
meson test -C build --print-errorlogs >"$work/test.log" 2>&1 || { cat "$work/test.log"; cat build/meson-logs/testlog.txt; fail "the parent's test failed"; }
grep -E "^Ok: " "$work/test.log"
sed -n 's/^\(consumer: .*\)$/\1/p' build/meson-logs/testlog.txt
