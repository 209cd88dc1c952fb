// libcumem against the raw CUDA driver, in one process and one run:
// stream-ordered allocate + free from the device's default pool (through the
// driver, libcumem's raw pair and libcumem buffers), the same through the
// caching adaptor, pairs from 1 to 16 threads each on its own stream, and
// device-to-device copies. The host_* benchmarks need no GPU. Run:
// build/bench/bench_memory (GPU benchmarks skip without a device).
//
// A buffer is what Python, Rust and C++ users hold, so its pair (allocate,
// release) is set beside the raw pair of the same resource, in C and through
// the C++ facade, on one thread and on 1..16 (issue 26's goals: a buffer
// pair at most 1.5x the raw pair, the facade the same as C, 16 threads with
// buffers at least 0.8x the raw aggregate).
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cumem/cumem.h>
#include <cumem/cumem.hpp>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// The driver entry points the baselines call, from the same libcuda.so.1
// libcumem loads (so that the benchmark also runs, skipping, without one).
struct Driver {
  PFN_cuMemAllocFromPoolAsync_v11020 alloc = nullptr;
  PFN_cuMemFreeAsync_v11020 free = nullptr;
  PFN_cuMemcpyAsync_v4000 copy = nullptr;
  bool load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    alloc = reinterpret_cast<PFN_cuMemAllocFromPoolAsync_v11020>(dlsym(lib, "cuMemAllocFromPoolAsync"));
    free = reinterpret_cast<PFN_cuMemFreeAsync_v11020>(dlsym(lib, "cuMemFreeAsync"));
    copy = reinterpret_cast<PFN_cuMemcpyAsync_v4000>(dlsym(lib, "cuMemcpyAsync"));
    return alloc && free && copy;
  }
};

struct Setup {
  bool ok = false;
  cumem_device_t* device = nullptr;
  cumem_stream_t* stream = nullptr;
  cumem_resource_t* pool = nullptr;  // the device's default pool
  cumem_resource_t* cache = nullptr;  // the caching adaptor over it
  CUstream native_stream = nullptr;
  CUmemoryPool native_pool = nullptr;
  Driver driver;
};

Setup& setup() {
  static Setup s = [] {
    Setup r;
    int32_t count = 0;
    if (cumem_device_count(&count) != CUMEM_SUCCESS || count == 0) return r;
    void* stream = nullptr;
    void* pool = nullptr;
    if (!r.driver.load()) return r;
    if (cumem_device_get(0, &r.device) != CUMEM_SUCCESS ||
        cumem_device_set_current(r.device) != CUMEM_SUCCESS ||
        cumem_stream_create(r.device, nullptr, &r.stream) != CUMEM_SUCCESS ||
        cumem_stream_native(r.stream, &stream) != CUMEM_SUCCESS ||
        cumem_device_resource_create(r.device, nullptr, &r.pool) != CUMEM_SUCCESS ||
        cumem_resource_pool_native(r.pool, &pool) != CUMEM_SUCCESS) {
      std::fprintf(stderr, "setup failed: %s\n", cumem_last_error_message());
      return r;
    }
    r.native_stream = static_cast<CUstream>(stream);
    r.native_pool = static_cast<CUmemoryPool>(pool);
    if (cumem_caching_resource_create(r.pool, &r.cache) != CUMEM_SUCCESS) return r;
    // Warm the pool so that whichever benchmark runs first does not pay for
    // its growth.
    for (size_t size : {size_t{256}, size_t{1} << 20, size_t{1} << 30}) {
      void* p = nullptr;
      if (cumem_resource_allocate_raw(r.pool, size, r.stream, &p) != CUMEM_SUCCESS ||
          cumem_resource_deallocate_raw(r.pool, p, size, r.stream) != CUMEM_SUCCESS)
        return r;
    }
    cumem_stream_synchronize(r.stream);
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

void driver_pool_alloc_free(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (s.driver.alloc(&p, size, s.native_pool, s.native_stream) != CUDA_SUCCESS ||
        s.driver.free(p, s.native_stream) != CUDA_SUCCESS) {
      state.SkipWithError("driver call failed");
      break;
    }
  }
  cumem_stream_synchronize(s.stream);
}

void cumem_raw_alloc_free(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = nullptr;
    if (cumem_resource_allocate_raw(s.pool, size, s.stream, &p) != CUMEM_SUCCESS ||
        cumem_resource_deallocate_raw(s.pool, p, size, s.stream) != CUMEM_SUCCESS) {
      state.SkipWithError(cumem_last_error_message());
      break;
    }
  }
  cumem_stream_synchronize(s.stream);
}

void cumem_buffer_alloc_close(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    cumem_buffer_t* b = nullptr;
    if (cumem_resource_allocate(s.pool, size, s.stream, &b) != CUMEM_SUCCESS) {
      state.SkipWithError(cumem_last_error_message());
      break;
    }
    cumem_buffer_release(b);  // closes on the allocation's stream
  }
  cumem_stream_synchronize(s.stream);
}

// One pair on `resource`, raw; false (and the state skipped) on failure.
bool raw_pair(benchmark::State& state, cumem_resource_t* resource, size_t size,
              cumem_stream_t* stream) {
  void* p = nullptr;
  if (cumem_resource_allocate_raw(resource, size, stream, &p) == CUMEM_SUCCESS &&
      cumem_resource_deallocate_raw(resource, p, size, stream) == CUMEM_SUCCESS)
    return true;
  state.SkipWithError(cumem_last_error_message());
  return false;
}

void caching_raw_alloc_free(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state)
    if (!raw_pair(state, s.cache, size, s.stream)) break;
  cumem_stream_synchronize(s.stream);
}

void caching_buffer_alloc_close(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    cumem_buffer_t* b = nullptr;
    if (cumem_resource_allocate(s.cache, size, s.stream, &b) != CUMEM_SUCCESS) {
      state.SkipWithError(cumem_last_error_message());
      break;
    }
    cumem_buffer_release(b);
  }
  cumem_stream_synchronize(s.stream);
}

// The same pair through the C++ facade: cumem::Resource::allocate and the
// cumem::Buffer destructor.
void caching_facade_alloc_close(benchmark::State& state) {
  if (!usable(state)) return;
  const Setup& s = setup();
  cumem_resource_retain(s.cache);
  const cumem::Resource cache(s.cache);
  const cumem::StreamRef stream(s.stream);
  const size_t size = static_cast<size_t>(state.range(0));
  try {
    for (auto _ : state) {
      cumem::Buffer b = cache.allocate(size, stream);
      benchmark::DoNotOptimize(b.get());
    }
  } catch (const cumem::Error& e) {
    state.SkipWithError(e.what());
  }
  cumem_stream_synchronize(s.stream);
}

// 64 KiB pairs, each thread on a stream of its own; items/s is pairs/s.
void threads_pairs(benchmark::State& state, bool caching) {
  if (!usable(state)) return;
  const Setup& s = setup();
  cumem_stream_t* stream = nullptr;
  if (cumem_stream_create(s.device, nullptr, &stream) != CUMEM_SUCCESS) {
    state.SkipWithError(cumem_last_error_message());
    return;
  }
  void* native = nullptr;
  cumem_stream_native(stream, &native);
  for (auto _ : state) {
    if (caching) {
      if (!raw_pair(state, s.cache, 64 << 10, stream)) break;
    } else {
      CUdeviceptr p = 0;
      if (s.driver.alloc(&p, 64 << 10, s.native_pool, static_cast<CUstream>(native)) != CUDA_SUCCESS ||
          s.driver.free(p, static_cast<CUstream>(native)) != CUDA_SUCCESS) {
        state.SkipWithError("driver call failed");
        break;
      }
    }
  }
  state.SetItemsProcessed(state.iterations());
  cumem_stream_synchronize(stream);
  cumem_stream_release(stream);
}

// CPU only: the host resource and the caching adaptor over it.
cumem_resource_t* host_resource(bool caching) {
  static cumem_resource_t* host = [] {
    cumem_resource_t* r = nullptr;
    cumem_host_resource_create(nullptr, &r);
    return r;
  }();
  static cumem_resource_t* cache = [] {
    cumem_resource_t* r = nullptr;
    cumem_caching_resource_create(host, &r);
    return r;
  }();
  return caching ? cache : host;
}

void host_pairs(benchmark::State& state, bool caching) {
  cumem_resource_t* r = host_resource(caching);
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state)
    if (!raw_pair(state, r, size, nullptr)) break;
  state.SetItemsProcessed(state.iterations());
}

// The same pairs with the memory history on (the README's "Seeing the
// memory"): what the history costs over host_pairs/caching_over_host, with
// the default ring (65536 events, two per pair) and, with `stacks`, a
// backtrace(3) per call. Thread 0 turns it on before the threads start and
// off after they end.
void host_pairs_history(benchmark::State& state, bool stacks) {
  cumem_resource_t* r = host_resource(true);
  const size_t size = static_cast<size_t>(state.range(0));
  if (state.thread_index() == 0) {
    cumem_memory_history_options_t o = CUMEM_MEMORY_HISTORY_OPTIONS_INIT;
    o.stacks = stacks ? CUMEM_TRUE : CUMEM_FALSE;
    if (cumem_memory_history_start(&o) != CUMEM_SUCCESS) {
      state.SkipWithError(cumem_last_error_message());
      return;
    }
  }
  for (auto _ : state)
    if (!raw_pair(state, r, size, nullptr)) break;
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) cumem_memory_history_stop();
}

// One buffer pair (allocate, release: the release closes) on `resource`;
// false (and the state skipped) on failure.
bool buffer_pair(benchmark::State& state, cumem_resource_t* resource, size_t size,
                 cumem_stream_t* stream) {
  cumem_buffer_t* b = nullptr;
  if (cumem_resource_allocate(resource, size, stream, &b) != CUMEM_SUCCESS) {
    state.SkipWithError(cumem_last_error_message());
    return false;
  }
  cumem_buffer_release(b);
  return true;
}

// Buffers on the caching adaptor, 64 KiB, each thread on a stream of its
// own, in C (facade false) or through the C++ facade; items/s is pairs/s,
// set beside threads_pairs/caching (the raw pairs).
void threads_buffer_pairs(benchmark::State& state, bool facade) {
  if (!usable(state)) return;
  const Setup& s = setup();
  cumem_stream_t* stream = nullptr;
  if (cumem_stream_create(s.device, nullptr, &stream) != CUMEM_SUCCESS) {
    state.SkipWithError(cumem_last_error_message());
    return;
  }
  cumem_resource_retain(s.cache);
  const cumem::Resource cache(s.cache);
  try {
    for (auto _ : state) {
      if (facade) {
        cumem::Buffer b = cache.allocate(64 << 10, cumem::StreamRef(stream));
        benchmark::DoNotOptimize(b.get());
      } else if (!buffer_pair(state, s.cache, 64 << 10, stream)) {
        break;
      }
    }
  } catch (const cumem::Error& e) {
    state.SkipWithError(e.what());
  }
  state.SetItemsProcessed(state.iterations());
  cumem_stream_synchronize(stream);
  cumem_stream_release(stream);
}

// Buffer pairs on the caching adaptor over the host resource (no GPU), set
// beside host_pairs/caching_over_host: in C, and through the facade.
void host_buffer_pairs(benchmark::State& state) {
  cumem_resource_t* r = host_resource(true);
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state)
    if (!buffer_pair(state, r, size, nullptr)) break;
  state.SetItemsProcessed(state.iterations());
}

void host_facade_pairs(benchmark::State& state) {
  cumem_resource_t* raw = host_resource(true);
  cumem_resource_retain(raw);
  const cumem::Resource r(raw);
  const size_t size = static_cast<size_t>(state.range(0));
  try {
    for (auto _ : state) {
      cumem::Buffer b = r.allocate(size);
      benchmark::DoNotOptimize(b.get());
    }
  } catch (const cumem::Error& e) {
    state.SkipWithError(e.what());
  }
  state.SetItemsProcessed(state.iterations());
}

// The getters a dashboard or PyTorch's memory_stats polls: statistics and
// properties of a resource that 1 (Arg 1) or 16 (Arg 16) threads have used.
void getters(benchmark::State& state, bool statistics) {
  cumem_resource_t* r = host_resource(true);
  std::vector<std::thread> users;
  for (int64_t t = 1; t < state.range(0); ++t)
    users.emplace_back([r] {
      void* p = nullptr;
      if (cumem_resource_allocate_raw(r, 64, nullptr, &p) == CUMEM_SUCCESS)
        cumem_resource_deallocate_raw(r, p, 64, nullptr);
    });
  for (auto& u : users) u.join();
  cumem_resource_statistics_t s = CUMEM_RESOURCE_STATISTICS_INIT;
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  for (auto _ : state) {
    const cumem_status_t st = statistics ? cumem_resource_get_statistics(r, &s)
                                         : cumem_resource_get_properties(r, &p);
    if (st != CUMEM_SUCCESS) {
      state.SkipWithError(cumem_last_error_message());
      break;
    }
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(p);
  }
}

// Device-to-device copies of 1 GiB; bytes/s counts the bytes copied.
void copy_d2d(benchmark::State& state, bool through_cumem) {
  if (!usable(state)) return;
  const Setup& s = setup();
  const size_t size = size_t{1} << 30;
  cumem_buffer_t* a = nullptr;
  cumem_buffer_t* b = nullptr;
  void* pa = nullptr;
  void* pb = nullptr;
  if (cumem_resource_allocate(s.pool, size, s.stream, &a) != CUMEM_SUCCESS ||
      cumem_resource_allocate(s.pool, size, s.stream, &b) != CUMEM_SUCCESS ||
      cumem_buffer_fill(a, 0x5A, 1, s.stream) != CUMEM_SUCCESS ||
      cumem_buffer_ptr(a, &pa) != CUMEM_SUCCESS || cumem_buffer_ptr(b, &pb) != CUMEM_SUCCESS) {
    state.SkipWithError(cumem_last_error_message());
    return;
  }
  cumem_stream_synchronize(s.stream);
  for (auto _ : state) {
    const bool ok = through_cumem
        ? cumem_buffer_copy_to(a, b, s.stream) == CUMEM_SUCCESS
        : s.driver.copy(reinterpret_cast<CUdeviceptr>(pb), reinterpret_cast<CUdeviceptr>(pa),
                        size, s.native_stream) == CUDA_SUCCESS;
    if (!ok) {
      state.SkipWithError("copy failed");
      break;
    }
    cumem_stream_synchronize(s.stream);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(size));
  cumem_buffer_release(a);
  cumem_buffer_release(b);
  cumem_stream_synchronize(s.stream);
}

}  // namespace

BENCHMARK(driver_pool_alloc_free)->Arg(256)->Arg(1 << 20);
BENCHMARK(cumem_raw_alloc_free)->Arg(256)->Arg(1 << 20);
BENCHMARK(cumem_buffer_alloc_close)->Arg(256)->Arg(1 << 20);
BENCHMARK(caching_raw_alloc_free)->Arg(256)->Arg(64 << 10)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(caching_buffer_alloc_close)->Arg(256)->Arg(1 << 20);
BENCHMARK(caching_facade_alloc_close)->Arg(256)->Arg(1 << 20);
BENCHMARK_CAPTURE(threads_pairs, driver_pool, false)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK_CAPTURE(threads_pairs, caching, true)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK_CAPTURE(threads_buffer_pairs, caching_buffer, false)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK_CAPTURE(threads_buffer_pairs, caching_facade, true)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK_CAPTURE(host_pairs, host, false)->Arg(256)->Arg(64 << 10)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK_CAPTURE(host_pairs, caching_over_host, true)->Arg(256)->Arg(64 << 10)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK_CAPTURE(host_pairs_history, caching_over_host_history, false)->Arg(256)->Arg(64 << 10)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK_CAPTURE(host_pairs_history, caching_over_host_history_stacks, true)->Arg(256)->Arg(64 << 10)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK(host_buffer_pairs)->Arg(256)->Arg(64 << 10)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK(host_facade_pairs)->Arg(256)->Arg(64 << 10)->ThreadRange(1, 16)->UseRealTime();
BENCHMARK_CAPTURE(getters, statistics, true)->Arg(1)->Arg(16);
BENCHMARK_CAPTURE(getters, properties, false)->Arg(1)->Arg(16);
BENCHMARK_CAPTURE(copy_d2d, driver, false)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(copy_d2d, cumem, true)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
