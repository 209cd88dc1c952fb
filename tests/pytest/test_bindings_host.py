"""The rest of the bindings where no GPU is needed (host memory, or the fake
memory driver for the device marks): the tracking, logging and callback
adaptors, pool and managed options, devices, streams and events, program
options with NVRTC."""
import ctypes
import gc

import pytest

import cumem


def test_tracking_adaptor(host):
    t = cumem.Resource.tracking(host)
    a, b = t.allocate(100), t.allocate(28)
    assert t.tracking_outstanding() == (2, 128)
    report = t.tracking_report()
    assert "100" in report and "28" in report, report
    a.close()
    b.close()
    assert t.tracking_outstanding() == (0, 0)
    with pytest.raises(cumem.CumemError) as e:
        host.tracking_report()
    assert e.value.status_name == "CUMEM_ERROR_NOT_SUPPORTED"


def test_logging_adaptor(host, tmp_path):
    path = tmp_path / "ops.csv"
    log = cumem.Resource.logging(host, path)
    log.allocate(64).close()
    log.release()
    gc.collect()
    lines = path.read_text().splitlines()
    assert lines[0].startswith("time_ns,thread,operation,ptr,size,stream"), lines
    assert [line.split(",")[2] for line in lines[1:]] == ["allocate", "deallocate"]
    assert lines[1].split(",")[4] == "64"
    with pytest.raises(cumem.CumemError, match="cannot open the log file .*x.csv. for writing"):
        cumem.Resource.logging(host, tmp_path / "no" / "such" / "dir" / "x.csv")


def test_callback_resource_serves_buffers_from_python_functions():
    blocks = {}
    calls = []

    def allocate(size, stream):
        if size > 1 << 20:
            return 0  # out of memory
        block = (ctypes.c_char * size)()
        blocks[ctypes.addressof(block)] = block
        calls.append(("allocate", size, stream))
        return ctypes.addressof(block)

    def deallocate(ptr, size, stream):
        calls.append(("deallocate", size, stream))
        del blocks[ptr]

    r = cumem.Resource.callback(allocate, deallocate, host_accessible=True)
    assert r.properties()["kind"] == 12  # CUMEM_RESOURCE_CALLBACK
    b = r.allocate(100)
    b.fill(4)
    assert b.read(0, 3) == b"\x04\x04\x04"
    assert r.statistics()["bytes_in_use"] == 100
    with pytest.raises(cumem.CumemError) as e:
        r.allocate(2 << 20)
    assert e.value.status_name == "CUMEM_ERROR_OUT_OF_MEMORY"
    b.close()
    assert calls == [("allocate", 100, 0), ("deallocate", 100, 0)]
    assert not blocks

    def broken(size, stream):
        raise RuntimeError("no")

    r2 = cumem.Resource.callback(broken, deallocate)
    with pytest.raises(cumem.CumemError) as e:
        r2.allocate(8)
    assert e.value.status_name == "CUMEM_ERROR_OUT_OF_MEMORY"
    with pytest.raises(ValueError, match="memory_kind"):
        cumem.Resource.callback(allocate, deallocate, memory_kind="video")


def test_host_shared_resource_and_raw_errors(host):
    with pytest.raises(cumem.CumemError) as e:
        cumem.Resource.host_shared(0)
    assert e.value.status_name == "CUMEM_ERROR_INVALID_ARGUMENT"
    r = cumem.Resource.host_shared(1 << 16)
    assert r.allocate(100).ptr % 256 == 0


@pytest.mark.device
def test_pool_options_are_checked(device):
    with pytest.raises(cumem.CumemError) as e:
        cumem.Resource.device(device, max_size=1 << 20)  # max_size needs new_pool
    assert e.value.status_name == "CUMEM_ERROR_INVALID_ARGUMENT"
    assert "max_size" in e.value.message
    with pytest.raises(cumem.CumemError) as e:
        cumem.Resource.device(device, release_threshold=1, release_all_unused=True)
    assert e.value.status_name == "CUMEM_ERROR_INVALID_ARGUMENT"
    with pytest.raises(TypeError):
        cumem.Resource.device(device, colour="blue")


@pytest.mark.device
def test_legacy_device_and_managed_resources(device):
    legacy = cumem.Resource.legacy_device(device)
    assert legacy.properties()["kind"] == 7
    legacy.allocate(256).close()
    managed = cumem.Resource.managed(device, disable_pool=True)
    b = managed.allocate(4096)
    assert b.memory_kind == "managed"
    with pytest.raises(ValueError, match="advice"):
        b.advise("sometimes")
    try:
        b.advise("set_preferred_location", device)
    except cumem.CumemError as e:  # the fake driver has no cuMemAdvise
        assert e.status_name == "CUMEM_ERROR_NOT_SUPPORTED" and "cuMemAdvise" in e.message
    b.close()
    with pytest.raises(TypeError, match="a location is"):
        cumem.Resource.managed(device, preferred_location=object())
    with pytest.raises(cumem.CumemError) as e:
        legacy.pool_attributes()
    assert e.value.status_name == "CUMEM_ERROR_NOT_SUPPORTED"


@pytest.mark.device
def test_peer_access_of_memory_without_any_is_refused_by_name(device):
    # Managed memory has no access to set; on a GPU so does the device
    # itself as its own peer.
    managed = cumem.Resource.managed(device, disable_pool=True)
    cached = cumem.Resource.caching(managed)
    for r in (managed, cached):
        with pytest.raises(cumem.CumemError) as e:
            r.set_peer_access(device)
        assert e.value.status_name == "CUMEM_ERROR_NOT_SUPPORTED"
        assert "has no peer access to set" in e.value.message
        with pytest.raises(cumem.CumemError):
            r.peer_access(device)
    cached.release()
    managed.release()


@pytest.mark.device
def test_devices_streams_and_events(device):
    p = device.properties()
    assert p["ordinal"] == 0 and isinstance(p["name"], str) and len(p["uuid"]) == 16
    assert p["compute_capability"] == (p["compute_capability_major"],
                                       p["compute_capability_minor"])
    free, total = device.memory_info()
    assert total >= free > 0
    least, greatest = device.stream_priority_range()
    assert greatest <= least
    assert device.attribute(75) == p["compute_capability_major"]  # ..._COMPUTE_CAPABILITY_MAJOR
    assert not device.can_access_peer(device), "a device is never its own peer"
    device.set_current()
    s = device.create_stream(blocking=True, priority=greatest)
    assert greatest <= s.priority <= least
    assert s.query() and s.is_done
    e = s.record(enable_timing=True)
    e.synchronize()
    assert e.is_done
    start = cumem.Event(device, enable_timing=True).record(s)
    end = cumem.Event(device, enable_timing=True).record(s)
    end.sync()
    assert end - start >= 0.0 and start.elapsed_ms(end) >= 0.0
    s.wait(e)
    s.wait(cumem.Stream.per_thread_default(device))
    assert device.default_stream.native in (0, 1)
    assert "Stream" in repr(s)
    ipc_event = cumem.Event(device, interprocess=True)
    with pytest.raises(cumem.CumemError):
        cumem.Event(device, enable_timing=True).get_ipc_handle()  # not interprocess
    with pytest.raises(ValueError, match="64 bytes"):
        cumem.Event.from_ipc_handle(device, b"short")
    del ipc_event


def _nvrtc_or_skip():
    try:
        return cumem.nvrtc_version()
    except cumem.CumemError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e.message}")


SOURCE = r"""
template <typename T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a * VALUE; }
"""


@pytest.mark.device
def test_program_options(device):
    _nvrtc_or_skip()
    p = cumem.Program.compile(device, SOURCE, options=["-DVALUE=3"],
                              name_expressions=["scale<float>"], name="scale.cu")
    lowered = p.lowered_name("scale<float>")
    assert lowered.startswith("_Z") and "scale" in lowered
    assert p.code[:4] == b"\x7fELF", "cubin by default"
    ptx = cumem.Program.compile(device, SOURCE, options=["-DVALUE=3"],
                                name_expressions=["scale<double>"], code_type="ptx",
                                arch="compute_80")
    assert b".version" in ptx.code and ptx.code.endswith(b"\x00")
    with pytest.raises(cumem.CumemError) as e:
        p.lowered_name("scale<int>")
    assert e.value.status_name == "CUMEM_ERROR_NOT_FOUND"
    with pytest.raises(cumem.CumemError) as e:
        cumem.Program.compile(device, "__global__ void k(int* x) { *x = VALUE; }",
                              name="broken.cu")  # VALUE undefined
    assert e.value.status_name == "CUMEM_ERROR_COMPILATION"
    assert "VALUE" in e.value.message and "broken.cu" in e.value.message
    with pytest.raises(ValueError, match="code_type"):
        cumem.Program.compile(device, SOURCE, code_type="sass")
    with pytest.raises(TypeError, match="sequences of strings"):
        cumem.Program.compile(device, SOURCE, options="-DVALUE=3")
