#!/bin/sh
# Fuzzes, with libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer,
# the IPC descriptor decoders (tests/ipc/fuzz_descriptor.cpp, seeds in
# tests/ipc/corpus/; tests/ipc/fuzz_virtual_descriptor.cpp, seeds in
# tests/ipc/corpus_virtual/), receiving an IPC message from a hostile peer
# (tests/ipc/fuzz_transport.cpp, seeds in tests/ipc/corpus_transport/),
# DLPack import metadata (tests/dlpack/
# fuzz_dlpack_import.cpp, seeds in tests/dlpack/corpus/) and the framework's
# configuration text (tests/framework/fuzz_alloc_conf.cpp, seeds in
# tests/framework/corpus_alloc_conf/), one after the other: the Meson run
# target `fuzz` of a clang build (tests/fuzz/meson.build).
# Usage: tools/fuzz.sh [seconds]   (default 60: the total, split evenly)
# Sets up build-fuzz/ once (clang, -Dfuzzing=enabled, the sanitizers) and
# builds only the fuzz programs; each runs on a copy of its corpus, and a
# crash or sanitizer report fails, leaving the input in
# build-fuzz/tests/fuzz/artifacts-<target>/. The seeds alone are replayed
# by every build's host suite (fuzz_*_replay).
set -eu
cd "$(dirname "$0")/.."

seconds="${1:-60}"
case "$seconds" in
  '' | *[!0-9]*) echo "usage: tools/fuzz.sh [seconds]" >&2; exit 2 ;;
esac
# The targets: the entries of tests/fuzz/meson.build's fuzz_targets.
targets=$(grep -c "^  'fuzz_[a-z_]*': {" tests/fuzz/meson.build)
each=$((seconds / targets))
[ "$each" -ge 1 ] || each=1

. tools/install-missing.sh
need clang++ clang  # libFuzzer comes with clang
install_needed

out=build-fuzz
if [ ! -f "$out/build.ninja" ]; then
  log=$(mktemp)
  CC=clang CXX=clang++ meson setup "$out" -Dfuzzing=enabled -Dfuzz-seconds="$each" \
    -Db_sanitize=address,undefined -Db_lundef=false -Dtests=disabled -Dexamples=disabled \
    -Dbenchmarks=disabled -Dtorch=disabled >"$log" 2>&1 || { tail -n 40 "$log" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
else
  meson configure "$out" -Dfuzz-seconds="$each"
fi
meson compile -C "$out" fuzz
