#!/bin/sh
# check_no_link.sh PLUGIN.so
# A plugin must not link libcumem: no DT_NEEDED entry naming libcumem, and
# no undefined cumem_* symbol (it calls libcumem only through the table its
# host gives it). Prints what it found either way.
set -eu
plugin=$1
needed=$(readelf -d "$plugin" | awk '/\(NEEDED\)/ { print $NF }' | tr -d '[]')
echo "$plugin needs: $(echo $needed)"
if printf '%s\n' "$needed" | grep -q 'libcumem'; then
  echo "FAIL: $plugin has a DT_NEEDED entry on libcumem"; exit 1
fi
undefined=$(nm -D --undefined-only "$plugin" | awk '{ print $NF }' | sed 's/@.*//')
cumem_undefined=$(printf '%s\n' "$undefined" | grep '^cumem_' || true)
if [ -n "$cumem_undefined" ]; then
  echo "FAIL: $plugin refers to libcumem's symbols directly:"; printf '%s\n' "$cumem_undefined"
  exit 1
fi
exported=$(nm -D --defined-only "$plugin" | awk '$2 == "T" { print $3 }')
echo "$plugin exports: $(echo $exported)"
echo "OK: no DT_NEEDED on libcumem, no undefined cumem_* symbol ($(printf '%s\n' "$undefined" | grep -c .) undefined symbols, none of libcumem's)"
