#!/bin/sh
# Fuzzes, with libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer,
# the IPC descriptor decoder (tests/ipc/fuzz_descriptor.cpp, seeds in
# tests/ipc/corpus/) and DLPack import metadata (tests/dlpack/
# fuzz_dlpack_import.cpp, seeds in tests/dlpack/corpus/), one after the other.
# Usage: tools/fuzz.sh [seconds]   (default 60: the total, split evenly)
# Builds into build-fuzz/, runs each on a copy of its corpus (libFuzzer adds
# the inputs it finds to its corpus folder; the committed seeds stay as they
# are), prints the number of executions, and exits non-zero on any crash or
# sanitizer report, leaving the input in build-fuzz/artifacts-<target>/.
set -eu
cd "$(dirname "$0")/.."

seconds="${1:-60}"
case "$seconds" in
  '' | *[!0-9]*) echo "usage: tools/fuzz.sh [seconds]" >&2; exit 2 ;;
esac

if ! command -v clang++ >/dev/null 2>&1; then
  echo "installing: clang (for libFuzzer)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update && $sudo apt-get install -y --no-install-recommends clang
fi

# The descriptor code needs no CUDA header; the include path is given anyway,
# where one is found, so that the target may grow to include core headers.
cuda_include=""
for dir in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  if [ -n "$dir" ] && [ -f "$dir/include/cuda.h" ]; then
    cuda_include="-I $dir/include"
    break
  fi
done

out=build-fuzz
mkdir -p "$out"
each=$((seconds / 2))
[ "$each" -ge 1 ] || each=1

# fuzz NAME SOURCE CORPUS CORE_SOURCES...
fuzz() {
  name=$1 source=$2 corpus=$3
  shift 3
  # shellcheck disable=SC2086  # $cuda_include is "" or two words
  clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I src -I include $cuda_include "$source" "$@" -o "$out/$name"
  rm -rf "$out/corpus-$name" "$out/artifacts-$name"
  cp -r "$corpus" "$out/corpus-$name"
  mkdir -p "$out/artifacts-$name"
  log="$out/$name.log"
  status=0
  "$out/$name" -max_total_time="$each" -artifact_prefix="$out/artifacts-$name/" \
    "$out/corpus-$name" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log")
  if [ "$status" -ne 0 ] || [ -z "$runs" ] ||
    grep -q -e '^==[0-9]*==ERROR' -e 'runtime error:' -e 'deadly signal' "$log"; then
    tail -n 60 "$log" >&2
    echo "fuzz $name: FAILED (exit status $status); see $log and $out/artifacts-$name/" >&2
    exit 1
  fi
  echo "fuzz $name: $runs executions in ${each} s, no crash or sanitizer report (log: $log)"
}

fuzz fuzz_descriptor tests/ipc/fuzz_descriptor.cpp tests/ipc/corpus \
  src/ipc/descriptor.cpp src/error.cpp
fuzz fuzz_dlpack_import tests/dlpack/fuzz_dlpack_import.cpp tests/dlpack/corpus \
  src/dlpack/layout.cpp src/error.cpp
