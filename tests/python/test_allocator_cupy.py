"""CuPy computes with libcumem as its allocator (CFunctionAllocator); the
resource's statistics show the allocations."""
import gc

import cupy

import cumem
import cumem.cupy
from gpu_common import require_gpu

require_gpu()
resource = cumem.Resource.device(0)
cumem.cupy.use_libcumem_allocator(resource)
a = cupy.random.rand(1000, 1000)
b = a @ a.T + 1.0
total = float(b.sum())
stats = resource.statistics()
print(f"sum {total:.1f}; libcumem: {stats}")
assert stats["live_allocations"] >= 2 and stats["bytes_in_use"] >= 2 * 8_000_000, stats
assert cupy.allclose(b, b.T)
del a, b
gc.collect()
cupy.cuda.Device().synchronize()
after = resource.statistics()
assert after["bytes_in_use"] < stats["bytes_in_use"], after
# The per-device framework resource (param NULL) serves too.
cumem.cupy.use_libcumem_allocator(None)
c = cupy.ones(1 << 20, dtype=cupy.float32)
fr = cumem.framework_resource(0).statistics()
assert fr["live_allocations"] >= 1, fr
assert float(c.sum()) == float(1 << 20)
cupy.cuda.set_allocator(None)
print("1 passed, 0 failed")
