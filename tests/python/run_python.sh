#!/bin/sh
# run_python.sh MODULES SCRIPT [ARGS...]
# Runs SCRIPT with the first Python that can import every module in MODULES
# (comma-separated; "" for none): $CUMEM_PYTHON if set (it must), else
# python3 on PATH, else /opt/torch/.venv/bin/python3 (the GPU machine's
# PyTorch and CuPy environment), else /usr/bin/python3 (the distribution's,
# where Debian's python3-pytest is). Exits 77 (meson: skipped) when none can.
set -u
modules=$1 script=$2
shift 2
imports=$(printf '%s' "$modules" | tr ',' '\n' | sed '/^$/d; s/^/import /' | tr '\n' ';')
if [ -n "${CUMEM_PYTHON:-}" ]; then
  candidates=$CUMEM_PYTHON
else
  candidates="python3 /opt/torch/.venv/bin/python3 /usr/bin/python3"
fi
for py in $candidates; do
  command -v "$py" >/dev/null 2>&1 || continue
  if "$py" -c "$imports" >/dev/null 2>&1; then
    exec "$py" "$script" "$@"
  fi
done
echo "skipped: no Python among ($candidates) can import: ${modules:-(nothing)}; set CUMEM_PYTHON" >&2
exit 77
