#!/usr/bin/env bash
# The ABI of build/libcumem.so.1 (or the library after --library) against
# the baseline abi/libcumem.abi (the host suite's abi_baseline runs it):
# abidw describes the library's public types and functions (those of
# include/cumem/), abidiff compares the two descriptions, and any non-zero
# abidiff status fails (4 is an ABI change, 8 an incompatible one: both
# must be seen). A compatible addition updates the baseline in the same
# commit, with a CHANGELOG line: tools/check-abi.sh --update.
# Usage: tools/check-abi.sh [--library PATH] [--update]
# abigail-tools is installed when missing (Debian's package).
set -euo pipefail
cd "$(dirname "$0")/.."

. tools/install-missing.sh
need abidw abigail-tools
need abidiff abigail-tools
install_needed

lib=build/libcumem.so.1
update=no
while [ $# -gt 0 ]; do
  case "$1" in
    --library) lib=$2; shift 2 ;;
    --update) update=yes; shift ;;
    *) echo "usage: tools/check-abi.sh [--library PATH] [--update]" >&2; exit 2 ;;
  esac
done
[ -e "$lib" ] || { echo "check-abi: $lib is missing: run tools/build.sh first"; exit 1; }
current=$(mktemp)
trap 'rm -f "$current"' EXIT
abidw --headers-dir include/cumem --no-corpus-path --no-show-locs --drop-private-types \
  "$lib" --out-file "$current"

if [ "$update" = yes ]; then
  cp "$current" abi/libcumem.abi
  echo "check-abi: abi/libcumem.abi updated from $lib"
  exit 0
fi

status=0
abidiff abi/libcumem.abi "$current" || status=$?
if [ "$status" -ne 0 ]; then
  echo "check-abi: the ABI of $lib differs from abi/libcumem.abi (abidiff exit $status)."
  echo "A compatible addition: tools/check-abi.sh --update and a CHANGELOG line; anything else is a break (docs/ABI.md)."
  exit 1
fi
echo "check-abi: $lib has the ABI of abi/libcumem.abi"
