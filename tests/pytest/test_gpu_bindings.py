"""The bindings on a GPU: the configuration's pool of its own and expandable
cache, pool attributes and trim, kernels compiled with options and launched
by their lowered names, the CUDA array interface with CuPy and PyTorch."""
import ctypes

import pytest

import cumem

pytestmark = pytest.mark.gpu


def test_configured_framework_resources():
    try:
        cumem.configure(release_threshold="1GiB")
        r = cumem.framework_resource(0)
        assert r.properties()["is_pool"]
        assert r.pool_attributes()["release_threshold"] == 1 << 30
        assert r.handle != cumem.Device(0).memory_resource.handle, "a pool of its own"
        cumem.configure(kind="caching", expandable=True, limit="4GiB")
        r = cumem.framework_resource(0)
        assert r.properties()["kind"] == 6  # the limit adaptor on top
        b = r.allocate(64 << 20)
        b.fill(1)
        with pytest.raises(cumem.CumemError) as e:
            r.allocate(5 << 30)
        assert e.value.status_name == "CUMEM_ERROR_OUT_OF_MEMORY"
        b.close()
    finally:
        cumem.configure()


def test_pool_attributes_and_trim():
    pool = cumem.Resource.device(0, new_pool=True, release_threshold=0)
    b = pool.allocate(8 << 20)
    b.close()
    cumem.Device(0).synchronize()
    pool.set_pool_attributes(release_threshold=1 << 20, reuse_allow_opportunistic=False)
    a = pool.pool_attributes()
    assert a["release_threshold"] == 1 << 20 and a["reuse_allow_opportunistic"] is False
    pool.pool_trim(0)
    assert pool.pool_attributes()["reserved_mem_current"] == 0
    pool.pool_reset_highs()
    assert pool.pool_native != 0
    assert pool.pool_get_access(0) is True


def test_kernels_with_options_and_lowered_names():
    src = r"""
    template <typename T> __global__ void scale(T* x, T a, size_t n) {
      size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
      if (i < n) x[i] *= a * FACTOR;
    }"""
    p = cumem.Program.compile(0, src, options=["-DFACTOR=2", "-std=c++17"],
                              name_expressions=["scale<float>"])
    k = p.load().get_kernel(p.lowered_name("scale<float>"))
    assert k.attributes()["max_threads_per_block"] >= 256 and k.native
    n = 1024
    b = cumem.Device(0).memory_resource.allocate(n * 4)
    b.write((ctypes.c_float * n)(*([1.5] * n)))
    s = cumem.Stream(0)
    cumem.launch(k, s, (n + 255) // 256, 256, b, ctypes.c_float(3.0), ctypes.c_size_t(n))
    s.synchronize()
    out = (ctypes.c_float * n).from_buffer_copy(b.read())
    assert all(v == 9.0 for v in out)
    ptx = cumem.Program.compile(0, src.replace("FACTOR", "1"), name_expressions=["scale<double>"],
                                code_type="ptx")
    assert cumem.Library.load_data(0, ptx.code).get_kernel(ptx.lowered_name("scale<double>"))


def test_cuda_array_interface_with_cupy():
    cp = pytest.importorskip("cupy")
    b = cumem.Device(0).memory_resource.allocate(4096)
    a = cp.asarray(b.cuda_array_view("float32", shape=(32, 32)))
    assert a.data.ptr == b.ptr and a.shape == (32, 32)
    a[:] = 4.0
    cp.cuda.Device(0).synchronize()
    assert b.read(0, 4) == cp.float32(4.0).tobytes()
    theirs = cp.arange(256, dtype=cp.float32)
    mine = cumem.as_buffer(theirs)
    assert mine.ptr == theirs.data.ptr and mine.size == 1024
    cp.cuda.Device(0).synchronize()
    assert mine.read(4, 4) == cp.float32(1.0).tobytes()
    assert cumem.kernel_arguments([theirs])[0].value == theirs.data.ptr


def test_cuda_array_interface_with_torch():
    torch = pytest.importorskip("torch")
    b = cumem.Device(0).memory_resource.allocate(1024)
    t = torch.as_tensor(b.cuda_array_view("float32"), device="cuda")
    assert t.data_ptr() == b.ptr and t.numel() == 256
    t.fill_(5.0)
    torch.cuda.synchronize()
    assert b.read(0, 4) == torch.tensor(5.0).numpy().tobytes()
    s = torch.cuda.Stream()
    if hasattr(s, "__cuda_stream__"):
        r = cumem.Device(0).memory_resource
        x = r.allocate(256, s)
        assert x._stream.native == s.cuda_stream
        x.close(s)
    mine = cumem.as_buffer(torch.ones(64, device="cuda"))
    assert mine.size == 256
