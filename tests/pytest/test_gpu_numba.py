"""The Numba EMM plugin with the real numba-cuda: NUMBA_CUDA_MEMORY_MANAGER
=cumem.numba (and cuda.set_memory_manager) routes device arrays to the
framework resource; kernels use them; freed arrays go back; Numba reads a
libcumem buffer through __cuda_array_interface__. Each case runs in a new
interpreter, since the manager must be chosen before Numba's first context."""
import pytest

from conftest import run_python

pytestmark = pytest.mark.gpu
pytest.importorskip("numba.cuda")

ARRAYS = r"""
import gc
import numpy as np
from numba import cuda
import cumem
SET_MANAGER
r = cumem.framework_resource(0)
before = r.statistics()["bytes_in_use"]
a = cuda.to_device(np.arange(1024, dtype=np.float32))
assert r.statistics()["bytes_in_use"] >= before + 4096, r.statistics()

@cuda.jit
def twice(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2

twice[4, 256](a)
assert (a.copy_to_host() == np.arange(1024, dtype=np.float32) * 2).all()
del a
gc.collect()
assert r.statistics()["bytes_in_use"] == before, r.statistics()

b = cumem.Device(0).memory_resource.allocate(4096)
v = cuda.as_cuda_array(b.cuda_array_view("float32"))
v.copy_to_device(np.full(1024, 3.0, dtype=np.float32))
cuda.synchronize()
assert b.read(0, 4) == np.float32(3.0).tobytes()
free, total = cuda.current_context().get_memory_info()
assert total >= free > 0
print("numba plugin ok")
"""


def test_numba_by_environment_variable():
    rc, out = run_python(ARRAYS.replace("SET_MANAGER", ""),
                         env={"NUMBA_CUDA_MEMORY_MANAGER": "cumem.numba"})
    assert rc == 0 and "numba plugin ok" in out, out


def test_numba_by_set_memory_manager():
    code = ARRAYS.replace("SET_MANAGER", "import cumem.numba\n"
                          "cuda.set_memory_manager(cumem.numba.CumemNumbaManager)")
    rc, out = run_python(code, env={"NUMBA_CUDA_MEMORY_MANAGER": None})
    assert rc == 0 and "numba plugin ok" in out, out


def test_numba_with_the_configured_cache():
    code = ARRAYS.replace("SET_MANAGER", "cumem.configure(kind='caching')")
    rc, out = run_python(code, env={"NUMBA_CUDA_MEMORY_MANAGER": "cumem.numba"})
    assert rc == 0 and "numba plugin ok" in out, out
