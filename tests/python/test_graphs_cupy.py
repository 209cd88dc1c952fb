"""CuPy's CUDA graph capture (Stream.begin_capture) with libcumem as its
allocator, for the framework resource named by the first argument ("device"
or "caching"), in the three capture modes: arrays allocated and freed
inside the capture, 30 launches with eager arrays of the same sizes
between them, both checked against eager results.

CuPy's CFunctionAllocator passes no stream, so the stream-following
allocator (cumem.cupy.use_libcumem_allocator(follow_streams=True):
cumem_torch_alloc with CuPy's current stream, and cumem_cupy_free) is the
one under test: it makes the arrays allocated inside a capture the graph's
memory. CuPy instantiates its graphs without auto-free-on-launch, so a
graph launched again must free inside what it allocates (results go to
arrays made outside, out=...); a graph that keeps an array it allocated is
ended through libcumem with auto_free_on_launch instead."""
import os
import sys

kind = sys.argv[1] if len(sys.argv) > 1 else "device"
os.environ["CUMEM_FRAMEWORK_RESOURCE"] = kind
os.environ.setdefault("CUMEM_FRAMEWORK_QUIET", "0")

import cupy  # noqa: E402

import cumem  # noqa: E402
import cumem.cupy  # noqa: E402
from gpu_common import require_capture_safe, require_gpu, run  # noqa: E402

require_gpu()
require_capture_safe(kind)
cumem.cupy.use_libcumem_allocator(follow_streams=True)

N = 1 << 16
MODES = {"global": cupy.cuda.runtime.streamCaptureModeGlobal,
         "thread_local": cupy.cuda.runtime.streamCaptureModeThreadLocal,
         "relaxed": cupy.cuda.runtime.streamCaptureModeRelaxed}


def check_launches(launch, stream, x, y, mode):
    for i in range(30):
        x[...] = cupy.float32(i % 7)  # on the capture stream, before the launch
        eager = [cupy.full(N, i, dtype=cupy.float32) for _ in range(3)]
        launch()
        expected = cupy.sin(x * 2) + 1
        stream.synchronize()
        assert bool(cupy.array_equal(y, expected)), f"{mode}, launch {i}: the output differs"
        for k, e in enumerate(eager):
            assert bool((e == i).all()), f"{mode}, launch {i}: eager array {k} was overwritten"
        del eager


def captures_with_intermediates_freed_inside():
    stream = cupy.cuda.Stream(non_blocking=True)
    x = cupy.arange(N, dtype=cupy.float32)
    y = cupy.empty(N, dtype=cupy.float32)  # the output, made outside
    with stream:
        cupy.add(cupy.sin(x * 2), 1, out=y)  # warm up: kernels load outside captures
        stream.synchronize()
        for mode, value in MODES.items():
            stream.begin_capture(value)
            tmp = x * 2
            tmp2 = cupy.sin(tmp)
            del tmp  # freed inside the capture
            cupy.add(tmp2, 1, out=y)
            del tmp2
            graph = stream.end_capture()  # CuPy's own graph
            check_launches(lambda: graph.launch(stream), stream, x, y, mode)
            del graph
    stream.synchronize()


def a_graph_that_keeps_its_output():
    stream = cupy.cuda.Stream(non_blocking=True)
    x = cupy.arange(N, dtype=cupy.float32)
    with stream:
        cupy.sin(x * 2) + 1
        stream.synchronize()
        for mode, value in MODES.items():
            stream.begin_capture(value)
            tmp = cupy.sin(x * 2)
            y = tmp + 1  # allocated inside, kept: graph memory live after each launch
            del tmp
            graph = cumem.Stream.wrap(0, stream.ptr).end_capture_graph(auto_free_on_launch=True)
            check_launches(lambda: graph.launch(cumem.Stream.wrap(0, stream.ptr)), stream, x, y,
                           mode)
            del y  # graph memory freed outside the graph, after its launches
            stream.synchronize()
            graph.release()
    stream.synchronize()
    print(f"libcumem {cumem.framework_resource(0).statistics()}")


run([captures_with_intermediates_freed_inside, a_graph_that_keeps_its_output])
