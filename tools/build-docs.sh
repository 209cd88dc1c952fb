#!/bin/sh
# Builds the HTML API reference (Doxygen, from include/cumem/cumem.h) into
# build-docs/docs/html, installing doxygen first if it is missing (as
# tools/build.sh installs the build dependencies). Fails on doxygen errors
# and on doc comments doxygen misreads; its warnings about public names left
# undocumented are printed, with a count, and kept in
# build-docs/docs/doxygen-warnings.log.
set -eu
cd "$(dirname "$0")/.."

if ! command -v doxygen >/dev/null 2>&1; then
  echo "installing: doxygen"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  if ! { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends doxygen; }; then
    echo "warning: could not install doxygen; the build below will fail" >&2
  fi
fi

[ -f build-docs/build.ninja ] || meson setup build-docs -Ddocs=enabled -Dtests=disabled \
  -Dexamples=disabled -Dbenchmarks=disabled
meson compile -C build-docs docs
echo "API reference: build-docs/docs/html/index.html"
