#!/bin/sh
# Installs what libcumem needs to build and test (only what is missing),
# configures ./build once, and compiles. Usage: tools/build.sh [meson setup options]
set -eu
cd "$(dirname "$0")/.."

. tools/install-missing.sh
need c++ g++
need cc gcc
need meson meson
need ninja ninja-build
need pkg-config pkg-config
need nm binutils
# CMake builds the find_package(cumem) consumer of tools/check-install.sh.
need cmake cmake
# abidw/abidiff: the host suite's ABI check against abi/libcumem.abi.
need abidw abigail-tools
have_gtest=no
if pkg-config --exists gtest_main 2>/dev/null; then have_gtest=yes; fi
for dir in /usr/include /usr/local/include; do
  [ -f "$dir/gtest/gtest.h" ] && have_gtest=yes
done
[ "$have_gtest" = yes ] || need_package libgtest-dev
# pytest: the host suite's python_pytest_host (tests/pytest on the fake
# memory driver), which skips without it; asked of the Pythons that test
# would try (run_python.sh exits 77 when none imports it).
tests/python/run_python.sh pytest -c '' >/dev/null 2>&1 || need_package python3-pytest
install_needed || echo "the build may fail below" >&2

cuda_found=no
for dir in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr; do
  [ -n "$dir" ] && [ -f "$dir/include/cuda.h" ] && cuda_found=yes
done
if [ "$cuda_found" = no ]; then
  echo "error: cuda.h not found. Install the CUDA toolkit 12.x or newer (only its headers are" >&2
  echo "used) and set CUDA_HOME, or pass -Dcuda-root=DIR to this script." >&2
  exit 1
fi

[ -f build/build.ninja ] || meson setup build "$@"
meson compile -C build
