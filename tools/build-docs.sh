#!/bin/sh
# Builds the HTML API reference (Doxygen, from include/cumem/cumem.h) into
# build-docs/docs/html, installing doxygen first if it is missing (as
# tools/build.sh installs the build dependencies). Fails on doxygen errors
# and on doc comments doxygen misreads; its warnings about public names left
# undocumented are printed, with a count, and kept in
# build-docs/docs/doxygen-warnings.log.
set -eu
cd "$(dirname "$0")/.."

. tools/install-missing.sh
need doxygen doxygen
install_needed || echo "the build below will fail" >&2

[ -f build-docs/build.ninja ] || meson setup build-docs -Ddocs=enabled -Dtests=disabled \
  -Dexamples=disabled -Dbenchmarks=disabled
meson compile -C build-docs docs
echo "API reference: build-docs/docs/html/index.html"
