#!/bin/sh
# Installs what libcumem needs to build and test (only what is missing),
# configures ./build once, and compiles. Usage: tools/build.sh [meson setup options]
set -eu
cd "$(dirname "$0")/.."

missing=""
command -v c++ >/dev/null 2>&1 || missing="$missing g++"
command -v cc >/dev/null 2>&1 || missing="$missing gcc"
command -v meson >/dev/null 2>&1 || missing="$missing meson"
command -v ninja >/dev/null 2>&1 || missing="$missing ninja-build"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v nm >/dev/null 2>&1 || missing="$missing binutils"
# CMake builds the find_package(cumem) consumer of tools/check-install.sh.
command -v cmake >/dev/null 2>&1 || missing="$missing cmake"
# abidw/abidiff: the host suite's ABI check against abi/libcumem.abi.
command -v abidw >/dev/null 2>&1 || missing="$missing abigail-tools"
have_gtest=no
if pkg-config --exists gtest_main 2>/dev/null; then have_gtest=yes; fi
for dir in /usr/include /usr/local/include; do
  [ -f "$dir/gtest/gtest.h" ] && have_gtest=yes
done
[ "$have_gtest" = yes ] || missing="$missing libgtest-dev"

if [ -n "$missing" ]; then
  echo "installing:$missing"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  if ! { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends $missing; }; then
    echo "warning: could not install$missing; the build may fail below" >&2
  fi
fi

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
