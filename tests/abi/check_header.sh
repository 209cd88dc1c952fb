#!/bin/sh
# check_header.sh COMPILER LANGUAGE STANDARD INCLUDE_DIR FILE
# Compiles FILE alone (a public header, or a C file using it) with every
# warning as an error.
set -eu
compiler=$1 language=$2 standard=$3 include_dir=$4 file=$5
# shellcheck disable=SC2086
exec $compiler -x "$language" "-std=$standard" -fsyntax-only -Wall -Wextra -Werror -pedantic \
  -I"$include_dir" "$file"
