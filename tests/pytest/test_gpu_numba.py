"""The Numba EMM plugin with the real numba-cuda: NUMBA_CUDA_MEMORY_MANAGER
=cumem.numba (and cuda.set_memory_manager) routes device arrays to the
framework resource; kernels use them; freed arrays go back; Numba reads a
libcumem buffer through __cuda_array_interface__. Each case runs in a new
interpreter, since the manager must be chosen before Numba's first context."""
import pytest

from conftest import run_python

pytestmark = pytest.mark.gpu
pytest.importorskip("numba.cuda")

# Numba itself must compile a kernel here, with its own allocator: the GPU
# machine's numba-cuda fails with its NumPy (np.row_stack is gone in NumPy
# 2), which no memory manager can mend.
_PROBE = r"""
from numba import cuda
@cuda.jit
def one(x):
    x[0] = 1
a = cuda.device_array(1, dtype="int32")
one[1, 1](a)
assert a.copy_to_host()[0] == 1
print("numba compiles")
"""


_COMPILES = None


def arrays(set_manager):
    """ARRAYS with `set_manager`; without its kernel when Numba cannot
    compile one here (the memory checks still run)."""
    global _COMPILES
    if _COMPILES is None:
        rc, out = run_python(_PROBE, env={"NUMBA_CUDA_MEMORY_MANAGER": None})
        _COMPILES = rc == 0 and "numba compiles" in out
        if not _COMPILES:
            print("numba-cuda cannot compile a kernel here, kernels left out: " +
                  (out.strip().splitlines() or ["(no output)"])[-1])
    code = ARRAYS.replace("SET_MANAGER", set_manager)
    if not _COMPILES:
        start, end = code.index("# kernel:begin"), code.index("# kernel:end")
        code = code[:start] + code[end:]
    return code

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

assert (a.copy_to_host() == np.arange(1024, dtype=np.float32)).all()
# kernel:begin
@cuda.jit
def twice(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2

twice[4, 256](a)
assert (a.copy_to_host() == np.arange(1024, dtype=np.float32) * 2).all()
# kernel:end
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
    rc, out = run_python(arrays(""),
                         env={"NUMBA_CUDA_MEMORY_MANAGER": "cumem.numba"})
    assert rc == 0 and "numba plugin ok" in out, out


def test_numba_by_set_memory_manager():
    code = arrays("import cumem.numba\n"
                  "cuda.set_memory_manager(cumem.numba.CumemNumbaManager)")
    rc, out = run_python(code, env={"NUMBA_CUDA_MEMORY_MANAGER": None})
    assert rc == 0 and "numba plugin ok" in out, out


def test_numba_with_the_configured_cache():
    code = arrays("cumem.configure(kind='caching')")
    rc, out = run_python(code, env={"NUMBA_CUDA_MEMORY_MANAGER": "cumem.numba"})
    assert rc == 0 and "numba plugin ok" in out, out
