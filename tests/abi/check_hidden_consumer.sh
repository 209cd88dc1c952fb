#!/bin/sh
# check_hidden_consumer.sh C_COMPILER C++_COMPILER INCLUDE_DIR LIBRARY SOURCE_DIR [FLAGS]
# Builds consumers that include the public headers under
# `#pragma GCC visibility push(hidden)` and link LIBRARY: a C executable, a
# -fPIC shared object (with -Wl,--no-undefined) and a C++ executable using
# that object; then runs both executables. Fails if any of them does not
# compile, link or pass. FLAGS (the library's -fsanitize=..., or empty) go to
# every compile and link.
set -eu
cc_cmd=$1 cxx_cmd=$2 include_dir=$3 lib=$4 src=$5 flags=${6:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
libdir=$(dirname "$lib")
warn="-Wall -Wextra -Werror -pedantic $flags"
# shellcheck disable=SC2086
$cc_cmd -std=c11 $warn -I"$include_dir" "$src/hidden_consumer.c" "$lib" -o "$work/consumer_c"
# shellcheck disable=SC2086
$cc_cmd -std=c11 $warn -fPIC -shared -fvisibility=hidden -DHIDDEN_CONSUMER_LIBRARY -I"$include_dir" \
  "$src/hidden_consumer.c" "$lib" -Wl,--no-undefined -o "$work/libhidden_consumer.so"
# shellcheck disable=SC2086
$cxx_cmd -std=c++17 $warn -fvisibility=hidden -I"$include_dir" "$src/hidden_consumer.cpp" \
  "$work/libhidden_consumer.so" "$lib" -o "$work/consumer_cpp"
LD_LIBRARY_PATH="$libdir:$work${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/consumer_c"
LD_LIBRARY_PATH="$libdir:$work${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/consumer_cpp"
