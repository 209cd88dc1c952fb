"""Issue 17, item 3 from Python: a buffer allocated on a wrapped cuda.core
stream, released after the user dropped the stream, must not free on a
destroyed CUstream (it crashed, or logged CUDA_ERROR_INVALID_CONTEXT and
leaked). cumem.Stream.wrap keeps the cuda.core stream alive while any buffer
may still use it; the free then runs on the live stream, and no warning is
logged."""
import gc

from cuda.core import Device as CoreDevice

import cumem
from gpu_common import require_gpu, run

require_gpu()

messages = []
cumem.set_log_callback(lambda level, text: messages.append((level, text)))
cumem.set_log_level("warning")


def test_buffer_outlives_the_users_stream_object():
    dev = CoreDevice(0)
    dev.set_current()
    pool = cumem.Resource.device(0)
    for round_ in range(50):
        core_stream = dev.create_stream()
        s = cumem.Stream.wrap(0, core_stream)
        b = pool.allocate(1 << 20, s)
        b.fill(round_ & 0xFF, 1, s)
        del core_stream, s  # the user's references are gone
        gc.collect()
        b.release()  # frees on the wrapped stream: must still be alive
        gc.collect()
    dev.sync()
    st = pool.statistics()
    assert st["live_allocations"] == 0, st
    warnings = [t for level, t in messages if "ignored" in t or "INVALID_CONTEXT" in t]
    assert not warnings, warnings


run([test_buffer_outlives_the_users_stream_object])
