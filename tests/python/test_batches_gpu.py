"""Copies at scale from Python on a GPU: batch copies between device and
pinned memory with the bytes checked, batched prefetch of managed buffers
and their last prefetch location, the device's memory resource. Exits 77
without a GPU."""
import cumem
from gpu_common import pattern, require_gpu, run


def test_copy_batch_every_direction():
    device = cumem.Device(0)
    stream = cumem.Stream(device)
    kinds = [cumem.Resource.device(device), cumem.Resource.legacy_pinned(device)]
    for src_mr in kinds:
        for dst_mr in kinds:
            srcs = [src_mr.allocate(4096 + i, stream) for i in range(8)]
            dsts = [dst_mr.allocate(4096 + i, stream) for i in range(8)]
            for i, s in enumerate(srcs):
                s.write(pattern(4096 + i, i), stream=stream)
            cumem.copy_batch(stream, srcs, dsts)
            stream.synchronize()
            for i, d in enumerate(dsts):
                assert d.read(stream=stream) == pattern(4096 + i, i), i
    stats = cumem.batch_statistics()
    assert stats["driver_copy_batch"], stats


def test_copy_batch_options_and_offsets():
    device = cumem.Device(0)
    stream = cumem.Stream(device)
    src = cumem.Resource.device(device).allocate(1 << 16, stream)
    dst = cumem.Resource.legacy_pinned(device).allocate(1 << 16, stream)
    src.write(pattern(1 << 16, 3), stream=stream)
    options = [cumem.CopyOptions(), cumem.CopyOptions("any", dst_location_hint=cumem.Host())]
    cumem.copy_batch(stream, [src, src], [dst, dst], options=options, sizes=[100, 200],
                     src_offsets=[0, 1000], dst_offsets=[5000, 7])
    stream.synchronize()
    data = pattern(1 << 16, 3)
    assert dst.read(5000, 100) == data[:100]
    assert dst.read(7, 200) == data[1000:1200]


def test_prefetch_batch_and_last_prefetch_location():
    device = cumem.Device(0)
    stream = cumem.Stream(device)
    managed = cumem.Resource.managed(device)
    buffers = [managed.allocate(1 << 16, stream) for _ in range(8)]
    cumem.prefetch_batch(stream, buffers, device)
    stream.synchronize()
    try:
        where = buffers[0].last_prefetch_location
    except cumem.CumemError as e:
        assert e.status_name == "CUMEM_ERROR_NOT_SUPPORTED", e  # the managed pool, CUDA 13.0
        return
    assert isinstance(where, cumem.Device) and where.ordinal == 0, where
    cumem.prefetch_batch(stream, buffers, [cumem.Host()] * 8)
    stream.synchronize()
    assert buffers[7].last_prefetch_location == cumem.Host()


def test_device_memory_resource():
    device = cumem.Device(0)
    default = device.memory_resource
    assert default.properties()["kind"] == 2  # CUMEM_RESOURCE_DEVICE
    assert default.handle == device.memory_resource.handle
    # The framework's default: the expandable cache over it (the H200 maps
    # virtual memory); over pinned memory, which it cannot map, the memory
    # resource itself.
    framework = cumem.framework_resource(0)
    assert framework.properties()["kind"] == 9  # CUMEM_RESOURCE_CACHING
    assert "pages_mapped" in framework.caching_statistics()
    pinned = cumem.Resource.legacy_pinned(device)
    device.memory_resource = pinned
    b = device.allocate(1000)
    assert b.memory_kind == "pinned"
    assert cumem.framework_resource(0).handle == pinned.handle
    device.memory_resource = None
    assert device.memory_resource.handle == default.handle
    b.close()


if __name__ == "__main__":
    require_gpu()
    run([test_copy_batch_every_direction, test_copy_batch_options_and_offsets,
         test_prefetch_batch_and_last_prefetch_location, test_device_memory_resource])
