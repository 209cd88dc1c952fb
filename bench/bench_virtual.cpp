// The virtual memory resource against the raw driver, in one process and
// one run (GPU only; every benchmark skips without a device):
//  - map_unmap: mapping then unmapping one physical chunk of 2, 20 or
//    64 MiB, through the driver (cuMemCreate + cuMemMap + cuMemSetAccess,
//    then cuMemUnmap + cuMemRelease) and through libcumem (a buffer grown by
//    one chunk and shrunk back on an idle stream, which releases at once);
//  - grow_1GiB_by_1GiB: a 1 GiB buffer resized to 2 GiB (chunks mapped, no
//    copy), beside what growing costs without virtual memory (a new 2 GiB
//    pool allocation and a 1 GiB device-to-device copy);
//  - alloc_free: an allocate + free pair on the virtual resource (2 MiB to
//    1 GiB) beside the device's default pool.
// Run: build/bench/bench_virtual. The counter MiB/s is bytes mapped per
// second of the timed work.
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cumem/cumem.h>
#include <dlfcn.h>

#include <cstdio>

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;

// The driver's virtual memory calls, from the libcuda.so.1 libcumem loads.
struct Driver {
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemAddressReserve_v10020 reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  PFN_cuMemcpyAsync_v4000 copy = nullptr;
  template <class F>
  bool find(void* lib, F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    return f != nullptr;
  }
  bool load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib && find(lib, create, "cuMemCreate") && find(lib, release, "cuMemRelease") &&
           find(lib, reserve, "cuMemAddressReserve") && find(lib, address_free, "cuMemAddressFree") &&
           find(lib, map, "cuMemMap") && find(lib, unmap, "cuMemUnmap") &&
           find(lib, set_access, "cuMemSetAccess") && find(lib, copy, "cuMemcpyAsync");
  }
};

struct Setup {
  bool ok = false;
  cumem_device_t* device = nullptr;
  int32_t ordinal = 0;
  cumem_stream_t* stream = nullptr;
  CUstream native_stream = nullptr;
  cumem_resource_t* pool = nullptr;  // the device's default pool
  Driver driver;
};

Setup& setup() {
  static Setup s = [] {
    Setup r;
    int32_t count = 0;
    if (cumem_device_count(&count) != CUMEM_SUCCESS || count == 0 || !r.driver.load()) return r;
    void* native = nullptr;
    if (cumem_device_get(0, &r.device) != CUMEM_SUCCESS ||
        cumem_device_ordinal(r.device, &r.ordinal) != CUMEM_SUCCESS ||
        cumem_device_set_current(r.device) != CUMEM_SUCCESS ||
        cumem_stream_create(r.device, nullptr, &r.stream) != CUMEM_SUCCESS ||
        cumem_stream_native(r.stream, &native) != CUMEM_SUCCESS ||
        cumem_device_resource_create(r.device, nullptr, &r.pool) != CUMEM_SUCCESS) {
      std::fprintf(stderr, "setup failed: %s\n", cumem_last_error_message());
      return r;
    }
    r.native_stream = static_cast<CUstream>(native);
    r.ok = true;
    return r;
  }();
  return s;
}

bool usable(benchmark::State& state) {
  if (setup().ok) return true;
  state.SkipWithError("no CUDA device");
  return false;
}

// A virtual resource of device 0 with chunks of `chunk` bytes (0: default).
cumem_resource_t* virtual_resource(size_t chunk) {
  cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  o.chunk_size = chunk;
  cumem_resource_t* r = nullptr;
  if (cumem_virtual_resource_create(setup().device, &o, &r) != CUMEM_SUCCESS) return nullptr;
  return r;
}

void bytes_counter(benchmark::State& state, size_t bytes_per_iteration) {
  state.counters["MiB/s"] = benchmark::Counter(
      static_cast<double>(bytes_per_iteration) * static_cast<double>(state.iterations()) / kMiB,
      benchmark::Counter::kIsRate);
}

// One chunk of `range(0)` bytes created, mapped with read-write access for
// the device, unmapped and released: the driver's cost per chunk.
void map_unmap_driver(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  const size_t chunk = static_cast<size_t>(state.range(0));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = s.ordinal;
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUdeviceptr base = 0;
  if (s.driver.reserve(&base, chunk, 0, 0, 0) != CUDA_SUCCESS) {
    state.SkipWithError("cuMemAddressReserve failed");
    return;
  }
  for (auto _ : state) {
    CUmemGenericAllocationHandle h = 0;
    if (s.driver.create(&h, chunk, &prop, 0) != CUDA_SUCCESS ||
        s.driver.map(base, chunk, 0, h, 0) != CUDA_SUCCESS ||
        s.driver.set_access(base, chunk, &access, 1) != CUDA_SUCCESS ||
        s.driver.unmap(base, chunk) != CUDA_SUCCESS || s.driver.release(h) != CUDA_SUCCESS) {
      state.SkipWithError("a driver call failed");
      break;
    }
  }
  s.driver.address_free(base, chunk);
  bytes_counter(state, chunk);
}

// The same through libcumem: a one-chunk buffer grown by one chunk (mapped
// at once) and shrunk back (released at once: the stream is idle).
void map_unmap_cumem(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  const size_t chunk = static_cast<size_t>(state.range(0));
  cumem_resource_t* r = virtual_resource(chunk);
  cumem_buffer_t* b = nullptr;
  if (!r || cumem_resource_allocate(r, chunk, s.stream, &b) != CUMEM_SUCCESS) {
    state.SkipWithError(cumem_last_error_message());
    cumem_resource_release(r);
    return;
  }
  for (auto _ : state) {
    if (cumem_buffer_resize(b, 2 * chunk, s.stream) != CUMEM_SUCCESS ||
        cumem_buffer_resize(b, chunk, s.stream) != CUMEM_SUCCESS) {
      state.SkipWithError(cumem_last_error_message());
      break;
    }
  }
  cumem_virtual_statistics_t v = CUMEM_VIRTUAL_STATISTICS_INIT;
  cumem_virtual_resource_get_statistics(r, &v);
  state.counters["in_place"] = static_cast<double>(v.grows_in_place);
  cumem_buffer_release(b);
  cumem_resource_release(r);
  bytes_counter(state, chunk);
}

// A 1 GiB buffer resized to 2 GiB: only the resize is timed. With the
// default 20 MiB chunks (range 0) or 2 MiB ones (range 2 MiB).
void grow_1GiB_by_1GiB(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  cumem_resource_t* r = virtual_resource(static_cast<size_t>(state.range(0)));
  if (!r) {
    state.SkipWithError(cumem_last_error_message());
    return;
  }
  for (auto _ : state) {
    state.PauseTiming();
    cumem_buffer_t* b = nullptr;
    const bool made = cumem_resource_allocate(r, kGiB, s.stream, &b) == CUMEM_SUCCESS;
    state.ResumeTiming();
    if (!made || cumem_buffer_resize(b, 2 * kGiB, s.stream) != CUMEM_SUCCESS) {
      state.SkipWithError(cumem_last_error_message());
      cumem_buffer_release(b);
      break;
    }
    state.PauseTiming();
    cumem_buffer_release(b);
    cumem_stream_synchronize(s.stream);
    state.ResumeTiming();
  }
  cumem_virtual_statistics_t v = CUMEM_VIRTUAL_STATISTICS_INIT;
  cumem_virtual_resource_get_statistics(r, &v);
  state.counters["moved"] = static_cast<double>(v.grows_moved);
  cumem_resource_release(r);
  bytes_counter(state, kGiB);
}

// What the same growth costs without virtual memory: a new 2 GiB allocation
// from the device's pool and a copy of the old 1 GiB into it (timed to the
// copy's end).
void grow_1GiB_by_1GiB_copying(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  void* old = nullptr;
  if (cumem_resource_allocate_raw(s.pool, kGiB, s.stream, &old) != CUMEM_SUCCESS) {
    state.SkipWithError(cumem_last_error_message());
    return;
  }
  cumem_stream_synchronize(s.stream);
  for (auto _ : state) {
    void* grown = nullptr;
    if (cumem_resource_allocate_raw(s.pool, 2 * kGiB, s.stream, &grown) != CUMEM_SUCCESS ||
        s.driver.copy(reinterpret_cast<CUdeviceptr>(grown), reinterpret_cast<CUdeviceptr>(old), kGiB,
                      s.native_stream) != CUDA_SUCCESS ||
        cumem_stream_synchronize(s.stream) != CUMEM_SUCCESS) {
      state.SkipWithError(cumem_last_error_message());
      break;
    }
    state.PauseTiming();
    cumem_resource_deallocate_raw(s.pool, grown, 2 * kGiB, s.stream);
    cumem_stream_synchronize(s.stream);
    state.ResumeTiming();
  }
  cumem_resource_deallocate_raw(s.pool, old, kGiB, s.stream);
  cumem_stream_synchronize(s.stream);
  bytes_counter(state, kGiB);
}

// An allocate + free pair of range(0) bytes on the virtual resource (idle
// stream: the free unmaps at once), or on the device's default pool.
void alloc_free(benchmark::State& state, bool use_virtual) {
  if (!usable(state)) return;
  const Setup& s = setup();
  const size_t size = static_cast<size_t>(state.range(0));
  cumem_resource_t* r = use_virtual ? virtual_resource(0) : s.pool;
  if (!r) {
    state.SkipWithError(cumem_last_error_message());
    return;
  }
  for (auto _ : state) {
    void* p = nullptr;
    if (cumem_resource_allocate_raw(r, size, s.stream, &p) != CUMEM_SUCCESS ||
        cumem_resource_deallocate_raw(r, p, size, s.stream) != CUMEM_SUCCESS) {
      state.SkipWithError(cumem_last_error_message());
      break;
    }
  }
  cumem_stream_synchronize(s.stream);
  if (use_virtual) cumem_resource_release(r);
}

}  // namespace

BENCHMARK(map_unmap_driver)->Arg(2 * kMiB)->Arg(20 * kMiB)->Arg(64 * kMiB)->Unit(benchmark::kMicrosecond);
BENCHMARK(map_unmap_cumem)->Arg(2 * kMiB)->Arg(20 * kMiB)->Arg(64 * kMiB)->Unit(benchmark::kMicrosecond);
BENCHMARK(grow_1GiB_by_1GiB)->Arg(0)->Arg(2 * kMiB)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(grow_1GiB_by_1GiB_copying)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(alloc_free, virtual, true)->Arg(2 * kMiB)->Arg(64 * kMiB)->Arg(kGiB)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(alloc_free, device_pool, false)->Arg(2 * kMiB)->Arg(64 * kMiB)->Arg(kGiB)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
