"""The pytest suite of the Python package (tests/pytest).

It tests whichever `cumem` Python imports: the installed wheel (.ci/run
runs it from outside the source tree in a fresh virtual environment), or
the source tree's package with $CUMEM_LIBRARY and $PYTHONPATH set (meson's
python_pytest_* tests). Markers:

- device: needs a CUDA device, real or the fake memory driver of
  tests/fake_driver ($CUMEM_LIBCUDA=.../libfake_memory_cuda.so, whose
  device memory is host memory); skipped without one, saying so.
- gpu: needs a real GPU ($CUMEM_LIBCUDA unset and a device found); skipped
  elsewhere, saying so. Run them on the GPU machine: `meson test -C build
  --suite python python_pytest_gpu` (or pytest -m gpu tests/pytest).
- Tests that need torch, cupy, cuda.core or numba skip, saying so, where
  the module cannot be imported (pytest.importorskip).
"""
import os
import subprocess
import sys

import pytest

import cumem

HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_configure(config):
    config.addinivalue_line("markers", "device: needs a CUDA device (a real GPU or the fake "
                                       "memory driver named in $CUMEM_LIBCUDA)")
    config.addinivalue_line("markers", "gpu: needs a real GPU ($CUMEM_LIBCUDA unset)")


def _device_count():
    try:
        return cumem.device_count(), None
    except cumem.CumemError as e:
        return 0, e.message


def fake_driver():
    """The fake driver this process runs on ($CUMEM_LIBCUDA), or None."""
    return os.environ.get("CUMEM_LIBCUDA") or None


def pytest_collection_modifyitems(config, items):
    count, why = _device_count()
    no_device = None
    if count == 0:
        no_device = ("no CUDA device: " + (why or "the driver reports none") +
                     " (set CUMEM_LIBCUDA to tests/fake_driver's libfake_memory_cuda.so, or run "
                     "on a GPU)")
    no_gpu = no_device
    if no_gpu is None and fake_driver():
        no_gpu = f"needs a real GPU: running on the fake driver {fake_driver()}"
    for item in items:
        if "gpu" in item.keywords and no_gpu:
            item.add_marker(pytest.mark.skip(reason=no_gpu))
        elif "device" in item.keywords and no_device:
            item.add_marker(pytest.mark.skip(reason=no_device))


@pytest.fixture
def host():
    """A host resource (needs no driver)."""
    r = cumem.Resource.host()
    yield r
    r.release()


@pytest.fixture
def device():
    """Device 0 (tests using it are marked device or gpu)."""
    return cumem.Device(0)


def run_python(code, env=None, timeout=120):
    """Runs `code` in a new interpreter (the one running the tests, with this
    process's environment and `env` on top); returns (returncode, output)."""
    full = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    p = subprocess.run([sys.executable, "-c", code], env=full, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout, cwd=HERE)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def build_dir():
    """The meson build folder holding the test fake drivers, when known
    ($CUMEM_TEST_BUILD_DIR, else the folder of $CUMEM_LIBRARY), or None."""
    d = os.environ.get("CUMEM_TEST_BUILD_DIR")
    if d:
        return d
    lib = os.environ.get("CUMEM_LIBRARY")
    return os.path.dirname(lib) if lib else None


def fake_driver_path(name):
    """The path of the fake driver tests/fake_driver/lib<name>.so of the build,
    or skips the test saying why."""
    d = build_dir()
    path = os.path.join(d, "tests", "fake_driver", f"lib{name}.so") if d else None
    if not path or not os.path.exists(path):
        pytest.skip(f"the fake driver lib{name}.so is not found (set CUMEM_TEST_BUILD_DIR to the "
                    "meson build folder)")
    return path
