#!/bin/sh
# Installs libcumem from ./build (made by tools/build.sh when missing) into a
# scratch staging directory (meson install --destdir, as a distribution
# package is made), then checks what a user of the installed library gets:
#  - the files: libcumem.so.<version>, the libcumem.so.<major> and
#    libcumem.so links, SONAME libcumem.so.<major>, with <version> read from
#    cumem.h (the rule of docs/ABI.md);
#  - pkg-config: a C and a C++ program built with
#    `pkg-config --cflags --libs cumem`;
#  - CMake: find_package(cumem 1.0 CONFIG) and cumem::cumem, from a copy of
#    the staged tree moved elsewhere (the package is relocatable); requests
#    the version file must refuse (next major, next minor) are refused;
#  - Meson: dependency('cumem') through pkg-config.
# The programs run: they list the devices, or (with no driver) say why they
# cannot.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
[ -f build/build.ninja ] || tools/build.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check-install: $*" >&2; exit 1; }

meson install -C build --destdir "$work/stage" >/dev/null
pc=$(find "$work/stage" -name cumem.pc | head -n 1)
[ -n "$pc" ] || fail "no cumem.pc installed"
libdir=$(dirname "$(dirname "$pc")")
# pkg-config reads the .pc of the staged tree and puts the staging directory
# before every path it prints.
PKG_CONFIG_PATH=$(dirname "$pc")
PKG_CONFIG_SYSROOT_DIR="$work/stage"
PKG_CONFIG_LIBDIR=/nonexistent
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR

# Versions and file names.
header="$root/include/cumem/cumem.h"
version=$(awk '$1 == "#define" && $2 ~ /^CUMEM_VERSION_(MAJOR|MINOR|PATCH)$/ { v = v sep $3; sep = "." } END { print v }' "$header")
major=${version%%.*}
minor=$(echo "$version" | cut -d. -f2)
if [ ! -f "$libdir/libcumem.so.$version" ] || [ -L "$libdir/libcumem.so.$version" ]; then
  fail "no file libcumem.so.$version in $libdir: $(ls "$libdir")"
fi
[ "$(readlink "$libdir/libcumem.so.$major")" = "libcumem.so.$version" ] || fail "libcumem.so.$major is not a link to libcumem.so.$version"
[ "$(readlink "$libdir/libcumem.so")" = "libcumem.so.$major" ] || fail "libcumem.so is not a link to libcumem.so.$major"
soname=$(readelf -d "$libdir/libcumem.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libcumem.so.$major" ] || fail "SONAME is '$soname', not libcumem.so.$major"
[ "$(pkg-config --modversion cumem)" = "$version" ] || fail "pkg-config says version $(pkg-config --modversion cumem), cumem.h $version"
echo "installed: libcumem.so.$version (SONAME $soname), pkg-config version $version"

status=0
# Runs a built program: success, or the no-driver failure with its message.
run() {
  name=$1; shift
  echo "--- $name"
  if LD_LIBRARY_PATH="$libdir" "$@" >"$work/out" 2>&1; then
    cat "$work/out"
  else
    cat "$work/out"
    if grep -q CUMEM_ERROR_NO_DRIVER "$work/out"; then
      echo "(exited non-zero: no CUDA driver here)"
    else
      status=1
    fi
  fi
}

echo "pkg-config --cflags --libs cumem: $(pkg-config --cflags --libs cumem)"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror examples/device_query.c -o "$work/query_c" $(pkg-config --cflags --libs cumem)
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Werror examples/device_query.cpp -o "$work/query_cpp" $(pkg-config --cflags --libs cumem)
run "query_c (pkg-config)" "$work/query_c"
run "query_cpp (pkg-config)" "$work/query_cpp"

# Meson: dependency('cumem') through pkg-config (no subproject to fall back on).
mkdir "$work/meson"
cp tests/consumers/meson/meson.build tests/consumers/consumer.c "$work/meson/"
meson setup "$work/meson/build" "$work/meson" --wrap-mode=nofallback >"$work/meson.log" 2>&1 ||
  { cat "$work/meson.log"; fail "the Meson consumer did not configure"; }
grep -q "Run-time dependency cumem found: YES $version" "$work/meson.log" ||
  { cat "$work/meson.log"; fail "Meson did not find cumem $version through pkg-config"; }
meson compile -C "$work/meson/build" >"$work/meson.log" 2>&1 || { cat "$work/meson.log"; fail "the Meson consumer did not build"; }
run "consumer (Meson, dependency('cumem') via pkg-config)" "$work/meson/build/consumer"

# CMake: the staged tree moved to another directory first.
mv "$work/stage" "$work/moved"
libdir=$(echo "$libdir" | sed "s#^$work/stage#$work/moved#")
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR
prefix=$(dirname "$(dirname "$(dirname "$(find "$work/moved" -path '*/include/cumem/cumem.h')")")")
mkdir "$work/cmake"
cp tests/consumers/cmake/CMakeLists.txt tests/consumers/consumer.c "$work/cmake/"
cmake -S "$work/cmake" -B "$work/cmake/build" -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log"; fail "the CMake consumer did not configure"; }
grep "cumem $version from $libdir/cmake/cumem" "$work/cmake.log" ||
  { cat "$work/cmake.log"; fail "CMake did not find cumem $version in $libdir/cmake/cumem"; }
cmake --build "$work/cmake/build" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "the CMake consumer did not build"; }
run "consumer (CMake, find_package(cumem 1.0 CONFIG))" "$work/cmake/build/consumer"
for request in "$((major + 1)).0" "$major.$((minor + 1))"; do
  if cmake -S "$work/cmake" -B "$work/cmake/build-$request" -DCMAKE_PREFIX_PATH="$prefix" \
       -DCUMEM_REQUEST="$request" >"$work/cmake.log" 2>&1; then
    cat "$work/cmake.log"; fail "find_package(cumem $request) accepted version $version"
  fi
  grep -q "$version" "$work/cmake.log" || { cat "$work/cmake.log"; fail "find_package(cumem $request) failed without naming $version"; }
  echo "find_package(cumem $request): refused (installed: $version)"
done
exit $status
