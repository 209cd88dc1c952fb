#!/bin/sh
# Fuzzes the IPC descriptor decoder (tests/ipc/fuzz_descriptor.cpp) with
# libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer.
# Usage: tools/fuzz.sh [seconds]   (default 60)
# Builds into build-fuzz/, runs on a copy of tests/ipc/corpus/ (libFuzzer adds
# the inputs it finds to its corpus folder; the committed seeds stay as they
# are), prints the number of executions, and exits non-zero on any crash or
# sanitizer report, leaving the input in build-fuzz/artifacts/.
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
# shellcheck disable=SC2086  # $cuda_include is "" or two words
clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I src $cuda_include \
  tests/ipc/fuzz_descriptor.cpp src/ipc/descriptor.cpp src/error.cpp \
  -o "$out/fuzz_descriptor"

rm -rf "$out/corpus" "$out/artifacts"
cp -r tests/ipc/corpus "$out/corpus"
mkdir -p "$out/artifacts"

log="$out/fuzz.log"
status=0
"$out/fuzz_descriptor" -max_total_time="$seconds" -artifact_prefix="$out/artifacts/" \
  "$out/corpus" >"$log" 2>&1 || status=$?

runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log")
if [ "$status" -ne 0 ] || [ -z "$runs" ] ||
  grep -q -e '^==[0-9]*==ERROR' -e 'runtime error:' -e 'deadly signal' "$log"; then
  tail -n 60 "$log" >&2
  echo "fuzz: FAILED (exit status $status); see $log and $out/artifacts/" >&2
  exit 1
fi
echo "fuzz: $runs executions in ${seconds} s, no crash or sanitizer report (log: $log)"
