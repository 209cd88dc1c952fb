#!/bin/sh
# expect_exit.sh STATUS TEXT PROGRAM [ARGS...]
# Runs PROGRAM and passes when it exits with STATUS and its output (stdout
# and stderr) contains TEXT.
set -u
want=$1 text=$2
shift 2
output=$("$@" 2>&1)
got=$?
printf '%s\n' "$output"
if [ "$got" -ne "$want" ]; then
  echo "FAIL: exit status $got, expected $want"; exit 1
fi
case $output in
  *"$text"*) echo "OK: exit status $got and the message says \"$text\"" ;;
  *) echo "FAIL: the output does not say \"$text\""; exit 1 ;;
esac
