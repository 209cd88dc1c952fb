#!/bin/sh
# Installs libcumem into a scratch prefix, then builds a C and a C++ program
# against the installed headers with `pkg-config --cflags --libs cumem` and
# runs them: they list the devices, or (with no driver) say why they cannot.
set -eu
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
meson setup "$work/build" --prefix="$work/prefix" -Dtests=disabled -Dexamples=false >/dev/null
meson install -C "$work/build" >/dev/null
pcdir=$(dirname "$(find "$work/prefix" -name cumem.pc | head -n 1)")
export PKG_CONFIG_PATH="$pcdir"
libdir=$(pkg-config --variable=libdir cumem)
echo "pkg-config --cflags --libs cumem: $(pkg-config --cflags --libs cumem)"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror examples/device_query.c -o "$work/query_c" $(pkg-config --cflags --libs cumem)
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Werror examples/device_query.cpp -o "$work/query_cpp" $(pkg-config --cflags --libs cumem)
status=0
for program in query_c query_cpp; do
  echo "--- $program"
  if LD_LIBRARY_PATH="$libdir" "$work/$program"; then
    :
  else
    # Without a driver the programs must fail with the clear message.
    LD_LIBRARY_PATH="$libdir" "$work/$program" 2>&1 | grep -q CUMEM_ERROR_NO_DRIVER || status=1
    echo "(exited non-zero: no CUDA driver here)"
  fi
done
exit $status
