#!/bin/sh
# check_symbols.sh LIBRARY SYMBOL_LIST VERSION_SCRIPT
# The library must export only cumem_* functions, exactly those listed, and
# the version script must name each of them explicitly (no wildcard), all
# in the version node LIBCUMEM_1. Version-node entries of the linker script
# (type A, e.g. LIBCUMEM_1) are not functions and are left out.
set -eu
lib=$1 list=$2 map=$3
scripted=$(sed -n 's/^ *\(cumem_[A-Za-z0-9_]*\);$/\1/p' "$map" | sort)
if grep -q 'cumem_\*' "$map"; then
  echo "$map exports by wildcard: list every name"; exit 1
fi
if ! printf '%s\n' "$scripted" | diff -u "$list" -; then
  echo "the names in $map differ from $list"; exit 1
fi
versioned=$(objdump -T "$lib" | awk '$NF ~ /^cumem_/ && $(NF-1) != "LIBCUMEM_1" { print $NF }')
if [ -n "$versioned" ]; then
  echo "exported outside the version node LIBCUMEM_1:"; printf '%s\n' "$versioned"; exit 1
fi
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
