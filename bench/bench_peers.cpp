// The allocators a CUDA user picks between, side by side in one process and
// one run on device 0: the driver's pool, cudaMallocAsync, cuMemAlloc,
// PyTorch's caching allocator (c10), libcumem's device resource and
// libcumem's caching adaptor (raw pointers, buffers, the C++ facade).
// Prints, with ratios to the driver pool and to PyTorch:
//   1. pair latency at 256 B, 64 KiB, 1 MiB and 64 MiB (min and median of
//      7 repetitions; the main thread pinned to one core);
//   2. aggregate 64 KiB pairs/s from 1 to 16 threads, each on its own stream;
//   3. random traces (RMM's random_allocations shape, and one up to 64 MiB):
//      time, peak in use, peak reserved from the device (the pool's
//      high-water mark, or PyTorch's own count) and the caching adaptor's
//      own peak reserved;
//   4. replay of a log the logging adaptor wrote of the first trace;
//   5. pinned 1 MiB pairs;
//   6. copies through buffers against cuMemcpyAsync, and a 64 B copy;
//   7. the cost of one C ABI call against a plain function call.
// The framework entry points (cumem_torch_alloc/free, what PyTorch's
// CUDAPluggableAllocator calls) over the same caching adaptor, set as device
// 0's framework resource, run in 1 and 2 on the same native streams as the
// raw rows, with their ratio to the raw pair (issue 20: at most 1.3x, and
// at 16 threads at least 0.8x the raw aggregate).
// The caching adaptor with expandable segments (issue 18) runs beside the
// plain one in 1-3, and 3b gives the device memory every allocator takes at
// the peak of the RMM-shaped trace (cuMemGetInfo after each allocation).
// `bench_peers N` runs sections 1 to N only (1 2: the pairs and threads).
// Built where PyTorch's C++ headers are found (bench/meson.build).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cumem/cumem.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cumem/cumem.hpp>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "peer_torch.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t KiB = 1024, MiB = 1024 * KiB;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The stream a call runs on, as each API names it.
struct Streams {
  cudaStream_t cuda = nullptr;
  cumem_stream_t* cumem = nullptr;
};

// One allocator: allocate returns nullptr on failure; `pair`, when set,
// replaces allocate + deallocate for the latency and thread tables.
struct Allocator {
  const char* name;
  void* (*allocate)(void* ctx, size_t size, const Streams& s);
  bool (*deallocate)(void* ctx, void* p, size_t size, const Streams& s);
  void* ctx;
  bool (*pair)(void* ctx, size_t size, const Streams& s) = nullptr;

  bool run_pair(size_t size, const Streams& s) const {
    if (pair) return pair(ctx, size, s);
    void* p = allocate(ctx, size, s);
    return p && deallocate(ctx, p, size, s);
  }
};

struct Latency {
  double min = -1, median = -1;
};

Latency pair_latency(const Allocator& a, size_t size, const Streams& s, int count) {
  for (int i = 0; i < count / 10 + 1; ++i) a.run_pair(size, s);  // warm
  std::vector<double> runs;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < count; ++i)
      if (!a.run_pair(size, s)) return {};
    runs.push_back(seconds_since(t0) * 1e9 / count);
  }
  cudaStreamSynchronize(s.cuda);
  std::sort(runs.begin(), runs.end());
  return {runs.front(), runs[3]};
}

// Aggregate pairs per second of `threads` threads, each on its own stream.
// The cache is emptied before the streams go: a cached block keeps the
// stream it was freed on, whose CUstream must stay valid until then.
double pairs_per_second(const Allocator& a, cumem_device_t* device, cumem_resource_t* cache,
                        int threads, int count) {
  std::vector<Streams> streams(static_cast<size_t>(threads));
  for (Streams& s : streams) {
    cudaStreamCreateWithFlags(&s.cuda, cudaStreamNonBlocking);
    cumem_stream_wrap(device, s.cuda, &s.cumem);
  }
  std::atomic<int> ready{0};
  std::atomic<bool> go{false}, failed{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      cudaSetDevice(0);
      const Streams& s = streams[static_cast<size_t>(t)];
      for (int i = 0; i < 100; ++i) a.run_pair(64 * KiB, s);  // warm this thread's cache
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int i = 0; i < count; ++i)
        if (!a.run_pair(64 * KiB, s)) failed = true;
    });
  while (ready.load() < threads) std::this_thread::yield();
  const auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& w : workers) w.join();
  const double seconds = seconds_since(t0);
  for (Streams& s : streams) cudaStreamSynchronize(s.cuda);
  cumem_caching_resource_release_cached(cache);
  for (Streams& s : streams) {
    cumem_stream_release(s.cumem);
    cudaStreamDestroy(s.cuda);
  }
  return failed ? -1 : threads * static_cast<double>(count) / seconds;
}

// A trace: size > 0 allocates into `slot`, size 0 frees it.
struct Op {
  uint32_t slot;
  uint64_t size;
};
struct Trace {
  std::vector<Op> ops;
  uint32_t slots = 0;
  uint64_t peak_in_use = 0;
};

// A slot for a new allocation: a freed one, else a new one.
uint32_t take_slot(Trace& t, std::vector<uint32_t>& free_slots) {
  if (free_slots.empty()) return t.slots++;
  const uint32_t slot = free_slots.back();
  free_slots.pop_back();
  return slot;
}

// RMM's random_allocations shape: sizes log-uniform in [lo, hi], at most
// max_live alive, allocate or free with equal odds; all freed at the end.
Trace random_trace(size_t operations, uint32_t max_live, uint64_t lo, uint64_t hi, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> log_size(std::log(double(lo)), std::log(double(hi)));
  Trace t;
  std::vector<std::pair<uint32_t, uint64_t>> live;
  std::vector<uint32_t> free_slots;
  uint64_t in_use = 0;
  for (size_t i = 0; i < operations; ++i) {
    const bool allocate = live.empty() || (live.size() < max_live && rng() % 2 == 0);
    if (allocate) {
      const uint32_t slot = take_slot(t, free_slots);
      const uint64_t size = static_cast<uint64_t>(std::exp(log_size(rng)));
      live.emplace_back(slot, size);
      t.ops.push_back({slot, size});
      in_use += size;
      t.peak_in_use = std::max(t.peak_in_use, in_use);
    } else {
      const size_t k = rng() % live.size();
      t.ops.push_back({live[k].first, 0});
      in_use -= live[k].second;
      free_slots.push_back(live[k].first);
      live[k] = live.back();
      live.pop_back();
    }
  }
  for (const auto& [slot, size] : live) t.ops.push_back({slot, 0});
  return t;
}

// Runs a trace; the time in ms, or -1 when an allocation failed.
double run_trace(const Allocator& a, const Trace& t, const Streams& s) {
  std::vector<std::pair<void*, uint64_t>> slots(t.slots);
  bool ok = true;
  const auto t0 = Clock::now();
  for (const Op& op : t.ops) {
    auto& [p, size] = slots[op.slot];
    if (op.size) {
      p = a.allocate(a.ctx, op.size, s);
      size = op.size;
      ok = ok && p;
    } else if (p) {
      ok = a.deallocate(a.ctx, p, size, s) && ok;
      p = nullptr;
    }
  }
  const double ms = seconds_since(t0) * 1e3;
  cudaStreamSynchronize(s.cuda);
  return ok ? ms : -1;
}

// Reads back the CSV the logging adaptor wrote: allocate and deallocate
// lines, matched by pointer, become a trace.
Trace trace_from_log(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  Trace t;
  std::unordered_map<std::string, uint32_t> slot_of;
  std::vector<uint32_t> free_slots;
  uint64_t in_use = 0;
  std::unordered_map<uint32_t, uint64_t> size_of;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string time, thread, operation, ptr, size;
    std::getline(fields, time, ',');
    std::getline(fields, thread, ',');
    std::getline(fields, operation, ',');
    std::getline(fields, ptr, ',');
    std::getline(fields, size, ',');
    if (operation == "allocate") {
      const uint32_t slot = take_slot(t, free_slots);
      slot_of[ptr] = slot;
      const uint64_t bytes = std::stoull(size);
      size_of[slot] = bytes;
      t.ops.push_back({slot, bytes});
      in_use += bytes;
      t.peak_in_use = std::max(t.peak_in_use, in_use);
    } else if (operation == "deallocate") {
      const auto it = slot_of.find(ptr);
      if (it == slot_of.end()) continue;
      t.ops.push_back({it->second, 0});
      in_use -= size_of[it->second];
      free_slots.push_back(it->second);
      slot_of.erase(it);
    }
  }
  return t;
}

// --- The allocators -------------------------------------------------------

struct Env {
  cumem_device_t* device = nullptr;
  cumem_resource_t* pool = nullptr;   // libcumem device resource (the default pool)
  cumem_resource_t* cache = nullptr;  // caching adaptor over it
  cumem_resource_t* expandable = nullptr;  // caching adaptor with expandable segments over it
  CUmemoryPool cu_pool = nullptr;
  cumem::Resource facade_cache;
};

void* pool_allocate(void* ctx, size_t size, const Streams& s) {
  CUdeviceptr p = 0;
  return cuMemAllocFromPoolAsync(&p, size, static_cast<Env*>(ctx)->cu_pool, s.cuda) == CUDA_SUCCESS
             ? reinterpret_cast<void*>(p)
             : nullptr;
}
bool pool_deallocate(void*, void* p, size_t, const Streams& s) {
  return cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(p), s.cuda) == CUDA_SUCCESS;
}
void* runtime_allocate(void*, size_t size, const Streams& s) {
  void* p = nullptr;
  return cudaMallocAsync(&p, size, s.cuda) == cudaSuccess ? p : nullptr;
}
bool runtime_deallocate(void*, void* p, size_t, const Streams& s) {
  return cudaFreeAsync(p, s.cuda) == cudaSuccess;
}
void* legacy_allocate(void*, size_t size, const Streams&) {
  CUdeviceptr p = 0;
  return cuMemAlloc(&p, size) == CUDA_SUCCESS ? reinterpret_cast<void*>(p) : nullptr;
}
bool legacy_deallocate(void*, void* p, size_t, const Streams&) {
  return cuMemFree(reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS;
}
void* torch_allocate(void*, size_t size, const Streams& s) {
  return peer_torch::allocate(size, s.cuda);
}
bool torch_deallocate(void*, void* p, size_t, const Streams&) {
  peer_torch::deallocate(p);
  return true;
}
void* raw_allocate(void* ctx, size_t size, const Streams& s) {
  void* p = nullptr;
  return cumem_resource_allocate_raw(static_cast<cumem_resource_t*>(ctx), size, s.cumem, &p) ==
                 CUMEM_SUCCESS
             ? p
             : nullptr;
}
bool raw_deallocate(void* ctx, void* p, size_t size, const Streams& s) {
  return cumem_resource_deallocate_raw(static_cast<cumem_resource_t*>(ctx), p, size, s.cumem) ==
         CUMEM_SUCCESS;
}
void* buffer_allocate(void* ctx, size_t size, const Streams& s) {
  cumem_buffer_t* b = nullptr;
  return cumem_resource_allocate(static_cast<cumem_resource_t*>(ctx), size, s.cumem, &b) ==
                 CUMEM_SUCCESS
             ? b
             : nullptr;
}
void* entry_allocate(void*, size_t size, const Streams& s) {
  return cumem_torch_alloc(size, 0, s.cuda);
}
bool entry_deallocate(void*, void* p, size_t size, const Streams& s) {
  cumem_torch_free(p, size, 0, s.cuda);
  return true;
}
bool buffer_deallocate(void*, void* b, size_t, const Streams& s) {
  const bool ok = cumem_buffer_close(static_cast<cumem_buffer_t*>(b), s.cumem) == CUMEM_SUCCESS;
  return cumem_buffer_release(static_cast<cumem_buffer_t*>(b)) == CUMEM_SUCCESS && ok;
}
bool facade_pair(void* ctx, size_t size, const Streams& s) {
  try {
    cumem::Buffer b = static_cast<Env*>(ctx)->facade_cache.allocate(size, cumem::StreamRef(s.cumem));
    b.close(cumem::StreamRef(s.cumem));
    return true;
  } catch (const cumem::Error&) {
    return false;
  }
}

// Peak reserved from the device: the pool's high-water mark (all but
// PyTorch allocate from the device's default pool), or PyTorch's own.
void reset_reserved(const Env& env, bool torch) {
  cudaDeviceSynchronize();
  if (torch) {
    peer_torch::empty_cache();
    peer_torch::reset_peak();
  }
  cumem_caching_resource_release_cached(env.cache);
  cuMemPoolTrimTo(env.cu_pool, 0);
  cuuint64_t zero = 0;
  cuMemPoolSetAttribute(env.cu_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero);
}
uint64_t peak_reserved(const Env& env, bool torch) {
  if (torch) return peer_torch::peak_reserved();
  cuuint64_t high = 0;
  cuMemPoolGetAttribute(env.cu_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &high);
  return high;
}

// The plain function a C ABI call is measured against.
struct FakeBuffer {
  void* ptr;
  size_t size;
};
__attribute__((noinline)) int fake_size(const FakeBuffer* b, size_t* out) {
  asm volatile("" ::: "memory");
  *out = b->size;
  return 0;
}

double ratio(double a, double b) { return a > 0 && b > 0 ? a / b : 0; }

// An expandable caching adaptor over `pool` with pages of `page_size`
// bytes (0: the default, 20 MiB); NULL (and a message) if it cannot be made.
cumem_resource_t* make_expandable(cumem_resource_t* pool, uint64_t page_size) {
  cumem_caching_resource_options_t o = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  o.expandable = CUMEM_TRUE;
  o.page_size = page_size;
  cumem_resource_t* r = nullptr;
  if (cumem_caching_resource_create_with_options(pool, &o, &r) != CUMEM_SUCCESS) {
    std::printf("bench_peers: %s\n", cumem_last_error_message());
    return nullptr;
  }
  return r;
}

// Runs a trace twice (the second run finds the caches filled) and returns
// the device memory taken at the peak: the drop of cuMemGetInfo's free
// memory from before the first run to its lowest, read after every
// allocation (0 when an allocation failed).
uint64_t device_memory_at_peak(const Allocator& a, const Trace& t, const Streams& s) {
  cudaDeviceSynchronize();
  size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  const size_t start = free;
  size_t lowest = free;
  std::vector<std::pair<void*, uint64_t>> slots(t.slots);
  bool ok = true;
  for (int run = 0; run < 2; ++run) {
    for (const Op& op : t.ops) {
      auto& [p, size] = slots[op.slot];
      if (op.size) {
        p = a.allocate(a.ctx, op.size, s);
        size = op.size;
        ok = ok && p;
        cudaMemGetInfo(&free, &total);
        lowest = std::min(lowest, free);
      } else if (p) {
        ok = a.deallocate(a.ctx, p, size, s) && ok;
        p = nullptr;
      }
    }
  }
  cudaStreamSynchronize(s.cuda);
  return ok ? start - lowest : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int last_section = argc > 1 ? std::atoi(argv[1]) : 7;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("bench_peers: no CUDA device\n");
    return 77;
  }
  cudaSetDevice(0);
  cudaFree(nullptr);  // the primary context, shared with libcumem
  peer_torch::init(devices);
  // The main thread runs on one core for the latency table only (threads
  // created while it is pinned would inherit the mask).
  cpu_set_t all_cores;
  sched_getaffinity(0, sizeof all_cores, &all_cores);
  {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(2, &one);
    sched_setaffinity(0, sizeof one, &one);
  }

  Env env;
  void* native_pool = nullptr;
  if (cumem_device_get(0, &env.device) != CUMEM_SUCCESS ||
      cumem_device_resource_create(env.device, nullptr, &env.pool) != CUMEM_SUCCESS ||
      cumem_caching_resource_create(env.pool, &env.cache) != CUMEM_SUCCESS ||
      cumem_resource_pool_native(env.pool, &native_pool) != CUMEM_SUCCESS) {
    std::printf("bench_peers: %s\n", cumem_last_error_message());
    return 1;
  }
  env.cu_pool = static_cast<CUmemoryPool>(native_pool);
  env.expandable = make_expandable(env.pool, 0);
  if (!env.expandable) return 1;
  cumem_resource_retain(env.cache);
  env.facade_cache = cumem::Resource::adopt(env.cache);

  const Allocator driver_pool{"driver pool", pool_allocate, pool_deallocate, &env};
  const Allocator runtime{"cudaMallocAsync", runtime_allocate, runtime_deallocate, nullptr};
  const Allocator torch{"PyTorch caching", torch_allocate, torch_deallocate, nullptr};
  const Allocator device_raw{"libcumem device resource", raw_allocate, raw_deallocate, env.pool};
  const Allocator cache_raw{"libcumem caching, raw", raw_allocate, raw_deallocate, env.cache};
  const Allocator cache_buffer{"libcumem caching, buffer", buffer_allocate, buffer_deallocate,
                               env.cache};
  const Allocator cache_facade{"libcumem caching, C++", nullptr, nullptr, &env, facade_pair};
  const Allocator legacy{"cuMemAlloc + cuMemFree", legacy_allocate, legacy_deallocate, nullptr};
  const Allocator expandable_raw{"libcumem expandable, raw", raw_allocate, raw_deallocate,
                                 env.expandable};
  const Allocator entry{"libcumem caching, torch entry", entry_allocate, entry_deallocate, nullptr};
  if (cumem_framework_set_resource(0, env.cache) != CUMEM_SUCCESS) {
    std::printf("bench_peers: %s\n", cumem_last_error_message());
    return 1;
  }

  Streams main_stream;
  cudaStreamCreateWithFlags(&main_stream.cuda, cudaStreamNonBlocking);
  cumem_stream_wrap(env.device, main_stream.cuda, &main_stream.cumem);

  const auto finish = [&] {
    cumem_stream_release(main_stream.cumem);
    cudaStreamDestroy(main_stream.cuda);
    env.facade_cache = cumem::Resource();
    cumem_resource_release(env.expandable);
    cumem_resource_release(env.cache);
    cumem_resource_release(env.pool);
    cumem_device_release(env.device);
    return 0;
  };

  // 1. Pair latency.
  const size_t sizes[] = {256, 64 * KiB, 1 * MiB, 64 * MiB};
  const Allocator* latency_rows[] = {&driver_pool, &runtime,      &torch,
                                     &device_raw,  &cache_raw,    &cache_buffer,
                                     &cache_facade, &expandable_raw, &entry,
                                     &legacy};
  std::map<std::string, std::vector<Latency>> lat;
  std::printf("1. allocate + free pair, one stream: min / median of 7 repetitions (ns)\n");
  std::printf("%-28s %15s %15s %15s %15s\n", "", "256 B", "64 KiB", "1 MiB", "64 MiB");
  for (const Allocator* a : latency_rows) {
    std::printf("%-28s", a->name);
    for (size_t size : sizes) {
      const Latency l = pair_latency(*a, size, main_stream, a == &legacy ? 200 : 20000);
      lat[a->name].push_back(l);
      std::printf(" %7.0f /%6.0f", l.min, l.median);
    }
    std::printf("\n");
  }
  std::printf("ratios of medians to the driver pool | to PyTorch, per size\n");
  for (const Allocator* a : latency_rows) {
    std::printf("%-28s", a->name);
    for (int i = 0; i < 4; ++i)
      std::printf(" %5.2f", ratio(lat[a->name][i].median, lat["driver pool"][i].median));
    std::printf("  |");
    for (int i = 0; i < 4; ++i)
      std::printf(" %5.2f", ratio(lat[a->name][i].median, lat["PyTorch caching"][i].median));
    std::printf("\n");
  }
  std::printf("%-28s", "torch entry / caching, raw");
  for (int i = 0; i < 4; ++i)
    std::printf(" %5.2f", ratio(lat[entry.name][i].median, lat[cache_raw.name][i].median));
  std::printf("\n");

  if (last_section < 2) return finish();

  // 2. Threads.
  sched_setaffinity(0, sizeof all_cores, &all_cores);
  std::printf("\n2. 64 KiB pairs, a stream per thread (aggregate M pairs/s)\n%-28s", "");
  const int thread_counts[] = {1, 2, 4, 8, 16};
  for (int t : thread_counts) std::printf(" %8d", t);
  std::printf("\n");
  const Allocator* thread_rows[] = {&driver_pool, &torch, &device_raw, &cache_raw, &cache_buffer,
                                    &expandable_raw, &entry};
  std::map<std::string, std::vector<double>> rates;
  for (const Allocator* a : thread_rows) {
    const bool fast = a == &cache_raw || a == &cache_buffer || a == &expandable_raw || a == &entry;
    cumem_resource_t* cache = a == &expandable_raw ? env.expandable : env.cache;
    std::printf("%-28s", a->name);
    for (int t : thread_counts) {
      const double rate = pairs_per_second(*a, env.device, cache, t, fast ? 400000 : 20000) / 1e6;
      rates[a->name].push_back(rate);
      std::printf(" %8.2f", rate);
    }
    std::printf("\n");
  }
  std::printf("%-28s", "torch entry / caching, raw");
  for (size_t i = 0; i < std::size(thread_counts); ++i)
    std::printf(" %8.2f", ratio(rates[entry.name][i], rates[cache_raw.name][i]));
  std::printf("\n");

  if (last_section < 3) return finish();

  // 3. Random traces.
  const Trace rmm = random_trace(100000, 4096, 256, 8 * MiB, 42);
  const Trace big = random_trace(100000, 2000, 256, 64 * MiB, 43);
  const Allocator* trace_rows[] = {&driver_pool, &runtime,      &torch,         &device_raw,
                                   &cache_raw,   &cache_buffer, &expandable_raw};
  for (const auto& [title, trace] : {std::pair<const char*, const Trace*>{"RMM random_allocations: 100 k operations, 256 B - 8 MiB, <= 4096 live", &rmm},
                                     std::pair<const char*, const Trace*>{"100 k operations, 256 B - 64 MiB, <= 2000 live", &big}}) {
    std::printf("\n3. random trace, %s; peak in use %.0f MiB\n", title,
                double(trace->peak_in_use) / MiB);
    std::printf("%-28s %10s %20s %24s\n", "", "time (ms)", "peak reserved (MiB)",
                "cache's own peak (MiB)");
    for (const Allocator* row : trace_rows) {
      const bool is_torch = row == &torch;
      // A caching row runs on a cache of its own, so that its peak is this
      // trace's alone.
      Allocator a = *row;
      cumem_resource_t* fresh = nullptr;
      if (a.ctx == env.cache) {
        cumem_caching_resource_create(env.pool, &fresh);
        a.ctx = fresh;
      } else if (a.ctx == env.expandable) {
        // Its large blocks are its own pages, not the pool's: its own peak
        // (last column) is what it reserved; the pool's holds its small blocks.
        fresh = make_expandable(env.pool, 0);
        a.ctx = fresh;
      }
      reset_reserved(env, is_torch);
      run_trace(a, *trace, main_stream);  // warm: the caches fill
      const double ms = run_trace(a, *trace, main_stream);
      std::printf("%-28s %10.1f %20.0f", a.name, ms, double(peak_reserved(env, is_torch)) / MiB);
      if (fresh) {
        cumem_caching_statistics_t c = CUMEM_CACHING_STATISTICS_INIT;
        cumem_caching_resource_get_statistics(fresh, &c);
        std::printf(" %24.0f", double(c.peak_bytes_reserved) / MiB);
        cudaDeviceSynchronize();
        cumem_resource_release(fresh);
      }
      std::printf("\n");
    }
  }
  reset_reserved(env, true);

  // 3b. Device memory taken at the peak of the RMM-shaped trace, the same
  // measure for every allocator (cuMemGetInfo after each allocation), over
  // two runs from empty caches.
  {
    std::printf("\n3b. RMM-shaped trace: device memory taken at the peak (cuMemGetInfo), peak in use"
                " %.0f MiB\n", double(rmm.peak_in_use) / MiB);
    std::printf("%-34s %12s %14s %12s\n", "", "taken (MiB)", "/ peak in use", "/ PyTorch");
    cumem_resource_t* plain = nullptr;
    cumem_caching_resource_create(env.pool, &plain);
    cumem_resource_t* expandable_2 = make_expandable(env.pool, 2 * MiB);
    cumem_resource_t* expandable_20 = make_expandable(env.pool, 20 * MiB);
    cumem_resource_t* expandable_64 = make_expandable(env.pool, 64 * MiB);
    const Allocator rows[] = {
        {"PyTorch caching", torch_allocate, torch_deallocate, nullptr},
        {"libcumem device resource", raw_allocate, raw_deallocate, env.pool},
        {"libcumem caching", raw_allocate, raw_deallocate, plain},
        {"libcumem expandable, 2 MiB pages", raw_allocate, raw_deallocate, expandable_2},
        {"libcumem expandable, 20 MiB pages", raw_allocate, raw_deallocate, expandable_20},
        {"libcumem expandable, 64 MiB pages", raw_allocate, raw_deallocate, expandable_64},
    };
    double torch_mib = 0;
    for (const Allocator& a : rows) {
      if (!a.ctx && a.allocate != torch_allocate) continue;
      const bool is_torch = a.allocate == torch_allocate;
      reset_reserved(env, true);
      for (cumem_resource_t* c : {plain, expandable_2, expandable_20, expandable_64})
        if (c) cumem_caching_resource_trim(c, 0);
      const double mib = double(device_memory_at_peak(a, rmm, main_stream)) / MiB;
      if (is_torch) torch_mib = mib;
      std::printf("%-34s %12.0f %14.3f %12.3f\n", a.name, mib, mib * MiB / double(rmm.peak_in_use),
                  ratio(mib, torch_mib));
    }
    cudaDeviceSynchronize();
    for (cumem_resource_t* c : {plain, expandable_2, expandable_20, expandable_64})
      cumem_resource_release(c);
    reset_reserved(env, true);
  }

  // 4. Replay of a log.
  {
    const std::string path = "/tmp/cumem_bench_replay.csv";
    cumem_resource_t* logged = nullptr;
    if (cumem_logging_resource_create(env.cache, path.c_str(), &logged) != CUMEM_SUCCESS) {
      std::printf("bench_peers: %s\n", cumem_last_error_message());
      return 1;
    }
    const Allocator logging{"logging", raw_allocate, raw_deallocate, logged};
    run_trace(logging, rmm, main_stream);
    cumem_resource_release(logged);  // flushes the file
    const Trace replay = trace_from_log(path);
    std::printf("\n4. replay of the logging adaptor's CSV of the RMM trace (%zu operations)\n",
                replay.ops.size());
    std::printf("%-28s %10s\n", "", "time (ms)");
    for (const Allocator* a : trace_rows) {
      reset_reserved(env, a == &torch);
      run_trace(*a, replay, main_stream);
      std::printf("%-28s %10.1f\n", a->name, run_trace(*a, replay, main_stream));
    }
    reset_reserved(env, true);
  }

  // 5. Pinned pairs.
  {
    cumem_resource_t* legacy_pinned = nullptr;
    cumem_resource_t* pinned_pool = nullptr;
    cumem_resource_t* pinned_cache = nullptr;
    if (cumem_legacy_pinned_resource_create(env.device, &legacy_pinned) != CUMEM_SUCCESS ||
        cumem_pinned_resource_create(env.device, nullptr, &pinned_pool) != CUMEM_SUCCESS ||
        cumem_caching_resource_create(pinned_pool, &pinned_cache) != CUMEM_SUCCESS) {
      std::printf("bench_peers: %s\n", cumem_last_error_message());
      return 1;
    }
    const Allocator rows[] = {
        {"legacy pinned (cuMemHostAlloc)", raw_allocate, raw_deallocate, legacy_pinned},
        {"pinned pool", raw_allocate, raw_deallocate, pinned_pool},
        {"caching over pinned pool", raw_allocate, raw_deallocate, pinned_cache},
    };
    std::printf("\n5. pinned 1 MiB pair, min / median (ns)\n");
    for (const Allocator& a : rows) {
      const Latency l = pair_latency(a, MiB, main_stream, a.ctx == legacy_pinned ? 200 : 20000);
      std::printf("%-28s %7.0f /%6.0f\n", a.name, l.min, l.median);
    }
    cumem_resource_release(pinned_cache);
    cumem_resource_release(pinned_pool);
    cumem_resource_release(legacy_pinned);
  }

  // 6. Copies.
  {
    const size_t big_copy = 1024 * MiB;
    cumem_buffer_t *src = nullptr, *dst = nullptr, *small_src = nullptr, *small_dst = nullptr;
    if (cumem_resource_allocate(env.pool, big_copy, main_stream.cumem, &src) != CUMEM_SUCCESS ||
        cumem_resource_allocate(env.pool, big_copy, main_stream.cumem, &dst) != CUMEM_SUCCESS ||
        cumem_resource_allocate(env.pool, 64, main_stream.cumem, &small_src) != CUMEM_SUCCESS ||
        cumem_resource_allocate(env.pool, 64, main_stream.cumem, &small_dst) != CUMEM_SUCCESS) {
      std::printf("bench_peers: %s\n", cumem_last_error_message());
      return 1;
    }
    cumem_buffer_fill(src, 7, 1, main_stream.cumem);
    void *src_ptr = nullptr, *dst_ptr = nullptr, *ssrc = nullptr, *sdst = nullptr;
    cumem_buffer_ptr(src, &src_ptr);
    cumem_buffer_ptr(dst, &dst_ptr);
    cumem_buffer_ptr(small_src, &ssrc);
    cumem_buffer_ptr(small_dst, &sdst);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    auto time_copies = [&](auto copy, int n) {
      copy();  // warm
      cudaEventRecord(e0, main_stream.cuda);
      for (int i = 0; i < n; ++i) copy();
      cudaEventRecord(e1, main_stream.cuda);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      return ms / n;
    };
    const float buffer_ms =
        time_copies([&] { cumem_buffer_copy_to(src, dst, main_stream.cumem); }, 20);
    const float driver_ms = time_copies(
        [&] {
          cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst_ptr),
                        reinterpret_cast<CUdeviceptr>(src_ptr), big_copy, main_stream.cuda);
        },
        20);
    std::printf("\n6. copies, 1 GiB device to device (ms, GB/s)\n");
    std::printf("%-28s %8.3f %8.0f\n", "buffer copy_to", buffer_ms, big_copy / (buffer_ms * 1e6));
    std::printf("%-28s %8.3f %8.0f\n", "cuMemcpyAsync", driver_ms, big_copy / (driver_ms * 1e6));
    std::printf("%-28s %8.1f %%\n", "buffer / driver bandwidth", 100.0 * driver_ms / buffer_ms);
    auto small_latency = [&](auto copy) {
      std::vector<double> runs;
      for (int i = 0; i < 2000; ++i) {
        const auto t0 = Clock::now();
        copy();
        cudaStreamSynchronize(main_stream.cuda);
        runs.push_back(seconds_since(t0) * 1e9);
      }
      std::sort(runs.begin(), runs.end());
      return runs[runs.size() / 2];
    };
    const double buffer_small =
        small_latency([&] { cumem_buffer_copy_to(small_src, small_dst, main_stream.cumem); });
    const double driver_small = small_latency([&] {
      cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(sdst), reinterpret_cast<CUdeviceptr>(ssrc), 64,
                    main_stream.cuda);
    });
    std::printf("64 B copy + stream synchronize, median (ns): buffer %.0f, cuMemcpyAsync %.0f\n",
                buffer_small, driver_small);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    for (cumem_buffer_t* b : {src, dst, small_src, small_dst}) {
      cumem_buffer_close(b, main_stream.cumem);
      cumem_buffer_release(b);
    }
  }

  // 7. The C ABI call.
  {
    cumem_buffer_t* b = nullptr;
    cumem_resource_allocate(env.cache, 256, main_stream.cumem, &b);
    FakeBuffer fake{nullptr, 256};
    const int n = 50000000;
    size_t sum = 0, out = 0;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      cumem_buffer_size(b, &out);
      sum += out;
    }
    const double abi_ns = seconds_since(t0) * 1e9 / n;
    t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      fake_size(&fake, &out);
      sum += out;
    }
    const double plain_ns = seconds_since(t0) * 1e9 / n;
    std::printf("\n7. one C ABI call (cumem_buffer_size): %.2f ns; a plain function call: %.2f ns;"
                " overhead %.2f ns (checksum %zu)\n",
                abi_ns, plain_ns, abi_ns - plain_ns, sum % 7);
    // What the caching adaptor's capture check costs on every call.
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    t0 = Clock::now();
    for (int i = 0; i < n / 10; ++i) {
      cuStreamIsCapturing(main_stream.cuda, &status);
      sum += status;
    }
    std::printf("   cuStreamIsCapturing: %.2f ns a call\n", seconds_since(t0) * 1e9 / (n / 10));
    cumem_buffer_close(b, main_stream.cumem);
    cumem_buffer_release(b);
  }

  return finish();
}
