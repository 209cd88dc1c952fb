// What detecting stream capture costs, on a stream that does not capture:
// the driver's two questions (cuStreamIsCapturing, cuStreamGetCaptureInfo
// asked for the status and id only, as libcumem asks), the same through
// cumem_stream_get_capture_info (and for the legacy default stream, which
// needs no call), the per-thread default stream (its context made
// current), a relaxed-mode scope (two cuThreadExchangeStreamCaptureMode
// calls, around every unsafe call), and the framework entry points' pair
// on a stream (which asks at the allocation and at the free) against the
// legacy default stream (which asks nothing), and on a stream made with
// cuStreamCreate (a framework's, foreign to libcumem: a large block's free
// records an event, a small block's every 16th), beside the cached raw pair
// these costs compare with (through a libcumem stream handle, and through
// the native handles the entry points take). Run: build/bench/bench_capture
// (skips without a GPU). The README's "CUDA graphs" section reads its numbers from here.
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cumem/cumem.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace {

struct Driver {
  PFN_cuStreamIsCapturing_v10000 is_capturing = nullptr;
  PFN_cuStreamGetCaptureInfo_v12030 get_capture_info = nullptr;
  PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange_mode = nullptr;
  PFN_cuStreamCreate_v2000 stream_create = nullptr;
  bool load() {
    const char* env = std::getenv("CUMEM_LIBCUDA");
    void* lib = dlopen(env && *env ? env : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    auto proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
    if (!proc) return false;
    auto entry = [&](const char* name, int version, auto& fn) {
      void* p = nullptr;
      CUdriverProcAddressQueryResult found{};
      if (proc(name, &p, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) == CUDA_SUCCESS &&
          found == CU_GET_PROC_ADDRESS_SUCCESS)
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    entry("cuStreamIsCapturing", 10000, is_capturing);
    entry("cuStreamGetCaptureInfo", 12030, get_capture_info);
    entry("cuThreadExchangeStreamCaptureMode", 10010, exchange_mode);
    entry("cuStreamCreate", 2000, stream_create);
    return is_capturing && get_capture_info && exchange_mode;
  }
};

struct Setup {
  bool ok = false;
  cumem_device_t* device = nullptr;
  cumem_stream_t* stream = nullptr;
  cumem_resource_t* pool = nullptr;
  cumem_resource_t* cache = nullptr;
  CUstream native = nullptr;
  CUstream foreign = nullptr;  // made with cuStreamCreate, as PyTorch's and CuPy's streams
  Driver driver;
};

Setup& setup() {
  static Setup s = [] {
    Setup r;
    int32_t count = 0;
    if (cumem_device_count(&count) != CUMEM_SUCCESS || count == 0) return r;
    if (!r.driver.load()) return r;
    void* native = nullptr;
    if (cumem_device_get(0, &r.device) != CUMEM_SUCCESS ||
        cumem_device_set_current(r.device) != CUMEM_SUCCESS ||
        cumem_stream_create(r.device, nullptr, &r.stream) != CUMEM_SUCCESS ||
        cumem_stream_native(r.stream, &native) != CUMEM_SUCCESS ||
        cumem_device_resource_create(r.device, nullptr, &r.pool) != CUMEM_SUCCESS ||
        cumem_caching_resource_create(r.pool, &r.cache) != CUMEM_SUCCESS ||
        cumem_framework_set_resource(0, r.cache) != CUMEM_SUCCESS) {
      std::fprintf(stderr, "setup failed: %s\n", cumem_last_error_message());
      return r;
    }
    r.native = static_cast<CUstream>(native);
    // The foreign stream's rows skip where it cannot be made.
    if (r.driver.stream_create &&
        r.driver.stream_create(&r.foreign, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
      r.foreign = nullptr;
    r.ok = true;
    return r;
  }();
  return s;
}

bool usable(benchmark::State& state) {
  if (setup().ok) return true;
  state.SkipWithError("no CUDA device (or the driver lacks the capture calls)");
  return false;
}

void driver_cuStreamIsCapturing(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  for (auto _ : state) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (s.driver.is_capturing(s.native, &status) != CUDA_SUCCESS) state.SkipWithError("failed");
    benchmark::DoNotOptimize(status);
  }
}

void driver_cuStreamGetCaptureInfo(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  for (auto _ : state) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    if (s.driver.get_capture_info(s.native, &status, &id, nullptr, nullptr, nullptr, nullptr) !=
        CUDA_SUCCESS)
      state.SkipWithError("failed");
    benchmark::DoNotOptimize(status);
    benchmark::DoNotOptimize(id);
  }
}

void driver_per_thread_stream_cuStreamIsCapturing(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  cumem_device_set_current(s.device);
  for (auto _ : state) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (s.driver.is_capturing(CU_STREAM_PER_THREAD, &status) != CUDA_SUCCESS)
      state.SkipWithError("failed");
    benchmark::DoNotOptimize(status);
  }
}

// The relaxed-mode scope libcumem puts around every unsafe call.
void driver_relaxed_scope(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  for (auto _ : state) {
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    s.driver.exchange_mode(&mode);
    s.driver.exchange_mode(&mode);
    benchmark::DoNotOptimize(mode);
  }
}

void cumem_get_capture_info_stream(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  for (auto _ : state) {
    cumem_capture_info_t info = CUMEM_CAPTURE_INFO_INIT;
    if (cumem_stream_get_capture_info(s.stream, &info) != CUMEM_SUCCESS)
      state.SkipWithError(cumem_last_error_message());
    benchmark::DoNotOptimize(info);
  }
}

void cumem_get_capture_info_legacy(benchmark::State& state) {
  if (!usable(state)) return;
  for (auto _ : state) {
    cumem_capture_info_t info = CUMEM_CAPTURE_INFO_INIT;
    if (cumem_stream_get_capture_info(nullptr, &info) != CUMEM_SUCCESS)
      state.SkipWithError(cumem_last_error_message());
    benchmark::DoNotOptimize(info);
  }
}

// The cached raw pair, for scale: what a capture question would add to.
void cumem_cached_pair(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = nullptr;
    if (cumem_resource_allocate_raw(s.cache, size, s.stream, &p) != CUMEM_SUCCESS ||
        cumem_resource_deallocate_raw(s.cache, p, size, s.stream) != CUMEM_SUCCESS) {
      state.SkipWithError(cumem_last_error_message());
      break;
    }
  }
  cumem_stream_synchronize(s.stream);
}

// The same pair through the native handle (cumem_resource_allocate_native),
// on the stream and on the legacy default stream: the raw pair a framework
// entry point compares with, since a framework always names a native stream.
void cumem_cached_pair_native(benchmark::State& state, void* stream) {
  if (!usable(state)) return;
  const Setup& s = setup();
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = nullptr;
    if (cumem_resource_allocate_native(s.cache, size, stream, &p) != CUMEM_SUCCESS ||
        cumem_resource_deallocate_native(s.cache, p, size, stream) != CUMEM_SUCCESS) {
      state.SkipWithError(cumem_last_error_message());
      break;
    }
  }
  cumem_device_synchronize(s.device);
}
void cumem_cached_pair_native_on_stream(benchmark::State& state) {
  cumem_cached_pair_native(state, usable(state) ? static_cast<void*>(setup().native) : nullptr);
}
void cumem_cached_pair_native_on_legacy_stream(benchmark::State& state) {
  cumem_cached_pair_native(state, nullptr);
}
// On a stream libcumem did not make (a framework's): frees record the
// stream's free marker (an event: a large block's at once, small blocks'
// every 16th), since the stream may be destroyed by its owner before a
// block freed on it is reused on another.
bool foreign_usable(benchmark::State& state) {
  if (!usable(state)) return false;
  if (setup().foreign) return true;
  state.SkipWithError("cuStreamCreate failed");
  return false;
}
void cumem_cached_pair_native_on_foreign_stream(benchmark::State& state) {
  if (foreign_usable(state)) cumem_cached_pair_native(state, setup().foreign);
}

// cumem_torch_alloc/free over the caching adaptor: on a stream (a capture
// question at each end) and on the legacy default stream (none). The
// difference is what capture detection costs the framework entry points.
void torch_pair(benchmark::State& state, void* stream) {
  if (!usable(state)) return;
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = cumem_torch_alloc(size, 0, stream);
    if (!p) {
      state.SkipWithError(cumem_last_error_message());
      break;
    }
    cumem_torch_free(p, size, 0, stream);
  }
  cumem_device_synchronize(setup().device);
}
void torch_pair_on_stream(benchmark::State& state) {
  torch_pair(state, usable(state) ? static_cast<void*>(setup().native) : nullptr);
}
void torch_pair_on_legacy_stream(benchmark::State& state) { torch_pair(state, nullptr); }
void torch_pair_on_foreign_stream(benchmark::State& state) {
  if (foreign_usable(state)) torch_pair(state, setup().foreign);
}

}  // namespace

BENCHMARK(driver_cuStreamIsCapturing);
BENCHMARK(driver_cuStreamGetCaptureInfo);
BENCHMARK(driver_per_thread_stream_cuStreamIsCapturing);
BENCHMARK(driver_relaxed_scope);
BENCHMARK(cumem_get_capture_info_stream);
BENCHMARK(cumem_get_capture_info_legacy);
BENCHMARK(cumem_cached_pair)->Arg(256)->Arg(1 << 20);
BENCHMARK(cumem_cached_pair_native_on_stream)->Arg(256)->Arg(1 << 20);
BENCHMARK(cumem_cached_pair_native_on_legacy_stream)->Arg(256)->Arg(1 << 20);
BENCHMARK(cumem_cached_pair_native_on_foreign_stream)->Arg(256)->Arg(1 << 20);
BENCHMARK(torch_pair_on_stream)->Arg(256)->Arg(1 << 20);
BENCHMARK(torch_pair_on_legacy_stream)->Arg(256)->Arg(1 << 20);
BENCHMARK(torch_pair_on_foreign_stream)->Arg(256)->Arg(1 << 20);

BENCHMARK_MAIN();
