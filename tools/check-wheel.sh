#!/bin/sh
# The Python package as a user installs it: builds the wheel from
# pyproject.toml (meson-python, offline: --no-isolation), installs it into a
# fresh virtual environment (--no-index), and runs the pytest suite
# (tests/pytest) from outside the source tree, so that `import cumem` can
# only be the installed package and must find the libcumem.so.1 inside it
# (CUMEM_EXPECT_INSTALLED=1 turns on test_installed.py's checks). The
# suite's device tests run on the fake memory driver of ./build.
# Usage: tools/check-wheel.sh   (after tools/build.sh)
set -eu
cd "$(dirname "$0")/.."
root=$PWD

# Debian's Python and its packaging tools (the distribution's python3, not
# whichever python3 comes first on PATH: Debian's packages are for it).
python=/usr/bin/python3
[ -x "$python" ] || python=python3
. tools/install-missing.sh
"$python" -c 'import mesonpy' 2>/dev/null || need_package python3-mesonpy
"$python" -c 'import build.__main__' 2>/dev/null || need_package python3-build  # not ./build, meson's folder
"$python" -c 'import pytest' 2>/dev/null || need_package python3-pytest
"$python" -c 'import venv, ensurepip' 2>/dev/null || need_package python3-venv
need patchelf patchelf  # meson-python asks for it
install_needed

# The wheel. (A build folder kept between runs would save the compile, but
# Debian 12's meson-python 0.12 cannot start one: its builddir setting
# reconfigures a folder it has only just made. The library alone takes about
# a minute and a half on two cores.)
rm -rf build-wheel
mkdir -p build-wheel
"$python" -m build --no-isolation --wheel -o build-wheel/dist . > build-wheel/build.log 2>&1 ||
  { tail -40 build-wheel/build.log; exit 1; }
wheel=$(ls build-wheel/dist/cumem-*.whl)
echo "built $wheel"
# What a wheel must hold: the library under its SONAME, the package, the
# headers; never the tests.
"$python" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for needed in ("cumem/libcumem.so.1", "cumem/__init__.py", "cumem/cuda_core.py",
               "cumem/numba.py", "cumem/include/cumem/cumem.h"):
    assert needed in names, f"{needed} is not in the wheel"
# The PyTorch extension is the one .so a wheel may hold (where the Python
# that builds it imports torch); libcumem itself is under its SONAME.
strays = [n for n in names if "test" in n.split("/")[-1] or
          (n.endswith(".so") and n != "cumem/_cumem_torch.so")]
assert not strays, f"the wheel holds files it should not: {strays}"
print(f"wheel: {len(names)} files, library and package inside, no tests")
PY

venv=$(mktemp -d /tmp/cumem-wheel-venv.XXXXXX)
outside=$(mktemp -d /tmp/cumem-wheel-run.XXXXXX)
trap 'rm -rf "$venv" "$outside"' EXIT
# --system-site-packages: pytest comes from Debian (no network here).
"$python" -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install --no-index --no-deps --quiet "$wheel"

cuda_root=${CUDA_HOME:-/usr/local/cuda}
cd "$outside"
env -u CUMEM_LIBRARY -u PYTHONPATH \
  CUMEM_EXPECT_INSTALLED=1 \
  CUMEM_LIBCUDA="$root/build/tests/fake_driver/libfake_memory_cuda.so" \
  CUMEM_TEST_BUILD_DIR="$root/build" \
  LD_LIBRARY_PATH="$cuda_root/lib64" \
  "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$root/tests/pytest"
