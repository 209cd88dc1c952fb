#!/bin/sh
# check_symbols.sh LIBRARY SYMBOL_LIST
# The library must export only cumem_* functions, exactly those listed.
# Version-node entries of the linker script (type A, e.g. LIBCUMEM_1) are
# not functions and are left out.
set -eu
lib=$1 list=$2
actual=$(nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u)
stray=$(printf '%s\n' "$actual" | grep -v '^cumem_' || true)
if [ -n "$stray" ]; then
  echo "exported symbols outside the cumem_ prefix:"; printf '%s\n' "$stray"; exit 1
fi
if ! diff -u "$list" - <<EOF2
$actual
EOF2
then
  echo "the exported symbols differ from $list (update it when the ABI changes on purpose)"
  exit 1
fi
echo "$(printf '%s\n' "$actual" | wc -l) symbols, all cumem_*, as listed"
