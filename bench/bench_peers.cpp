// The allocators a CUDA user picks between, side by side in one process and
// one run, on one warmed device pool: the driver's pool, cudaMallocAsync,
// cuMemAlloc, PyTorch's caching allocator (c10), libcumem's device resource
// and libcumem's caching adaptor. Prints the median of 7 repetitions of a
// pair's latency at four sizes, the aggregate rate of 64 KiB pairs from 1 to
// 16 threads (each on its own stream), and the ratios to the driver pool and
// to PyTorch. Built where PyTorch's C++ headers are found (bench/meson.build).
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cumem/cumem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
// One allocate + free of `size` bytes on `stream`; false on failure.
using Pair = std::function<bool(size_t size, cudaStream_t stream)>;

double median_ns(const Pair& pair, size_t size, cudaStream_t stream, int count) {
  for (int i = 0; i < count / 10 + 1; ++i) pair(size, stream);  // warm
  std::vector<double> runs;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < count; ++i)
      if (!pair(size, stream)) return -1;
    const auto t1 = Clock::now();
    runs.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / count);
  }
  cudaStreamSynchronize(stream);
  std::sort(runs.begin(), runs.end());
  return runs[3];
}

// Aggregate pairs per second of `threads` threads, each on its own stream.
double pairs_per_second(const Pair& pair, int threads, int count) {
  std::vector<cudaStream_t> streams(static_cast<size_t>(threads));
  for (auto& s : streams) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  std::vector<std::thread> workers;
  const auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      cudaSetDevice(0);
      for (int i = 0; i < count; ++i) pair(64 << 10, streams[static_cast<size_t>(t)]);
    });
  for (auto& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& s : streams) {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
  return threads * static_cast<double>(count) / seconds;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("bench_peers: no CUDA device\n");
    return 77;
  }
  cudaSetDevice(0);
  cudaFree(nullptr);  // the primary context, shared with libcumem
  c10::cuda::CUDACachingAllocator::init(devices);

  cumem_device_t* device = nullptr;
  cumem_resource_t* pool = nullptr;
  cumem_resource_t* cache = nullptr;
  void* native_pool = nullptr;
  if (cumem_device_get(0, &device) != CUMEM_SUCCESS ||
      cumem_device_resource_create(device, nullptr, &pool) != CUMEM_SUCCESS ||
      cumem_caching_resource_create(pool, &cache) != CUMEM_SUCCESS ||
      cumem_resource_pool_native(pool, &native_pool) != CUMEM_SUCCESS) {
    std::printf("bench_peers: %s\n", cumem_last_error_message());
    return 1;
  }
  // libcumem's streams wrap the same CUstreams (cached per thread).
  auto wrapped = [&](cudaStream_t s) {
    static thread_local std::map<cudaStream_t, cumem_stream_t*> streams;
    cumem_stream_t*& w = streams[s];
    if (!w) cumem_stream_wrap(device, s, &w);
    return w;
  };
  auto raw_pair = [&](cumem_resource_t* r) {
    return Pair([&, r](size_t size, cudaStream_t s) {
      void* p = nullptr;
      cumem_stream_t* ws = wrapped(s);
      return cumem_resource_allocate_raw(r, size, ws, &p) == CUMEM_SUCCESS &&
             cumem_resource_deallocate_raw(r, p, size, ws) == CUMEM_SUCCESS;
    });
  };
  const CUmemoryPool cu_pool = static_cast<CUmemoryPool>(native_pool);
  struct Named {
    std::string name;
    Pair pair;
    bool threads;
  };
  std::vector<Named> all = {
      {"driver pool", [&](size_t size, cudaStream_t s) {
         CUdeviceptr p = 0;
         return cuMemAllocFromPoolAsync(&p, size, cu_pool, s) == CUDA_SUCCESS &&
                cuMemFreeAsync(p, s) == CUDA_SUCCESS;
       }, true},
      {"cudaMallocAsync", [](size_t size, cudaStream_t s) {
         void* p = nullptr;
         return cudaMallocAsync(&p, size, s) == cudaSuccess && cudaFreeAsync(p, s) == cudaSuccess;
       }, false},
      {"PyTorch caching", [](size_t size, cudaStream_t s) {
         void* p = c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(size, s);
         c10::cuda::CUDACachingAllocator::raw_delete(p);
         return p != nullptr;
       }, true},
      {"libcumem device resource", raw_pair(pool), false},
      {"libcumem caching", raw_pair(cache), true},
  };
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  const size_t sizes[] = {256, 64 << 10, 1 << 20, 64 << 20};
  std::map<std::string, std::vector<double>> ns;
  std::printf("pair latency, median of 7 x 20000 pairs (ns)\n%-26s %10s %10s %10s %10s\n", "",
              "256 B", "64 KiB", "1 MiB", "64 MiB");
  for (const Named& a : all) {
    std::printf("%-26s", a.name.c_str());
    for (size_t size : sizes) {
      ns[a.name].push_back(median_ns(a.pair, size, stream, 20000));
      std::printf(" %10.0f", ns[a.name].back());
    }
    std::printf("\n");
  }
  {
    // cuMemAlloc is synchronous and slow: fewer pairs.
    Pair sync = [](size_t size, cudaStream_t) {
      CUdeviceptr p = 0;
      return cuMemAlloc(&p, size) == CUDA_SUCCESS && cuMemFree(p) == CUDA_SUCCESS;
    };
    std::printf("%-26s", "cuMemAlloc + cuMemFree");
    for (size_t size : sizes) std::printf(" %10.0f", median_ns(sync, size, stream, 200));
    std::printf("\n");
  }
  std::printf("\nratios to the driver pool and to PyTorch (lower is faster), 256 B / 64 MiB\n");
  for (const Named& a : all)
    std::printf("%-26s %6.2f %6.2f   %6.2f %6.2f\n", a.name.c_str(),
                ns[a.name][0] / ns["driver pool"][0], ns[a.name][3] / ns["driver pool"][3],
                ns[a.name][0] / ns["PyTorch caching"][0], ns[a.name][3] / ns["PyTorch caching"][3]);
  std::printf("\n64 KiB pairs, a stream per thread (aggregate M pairs/s)\n%-26s", "");
  const int thread_counts[] = {1, 2, 4, 8, 16};
  for (int t : thread_counts) std::printf(" %8d", t);
  std::printf("\n");
  for (const Named& a : all) {
    if (!a.threads) continue;
    std::printf("%-26s", a.name.c_str());
    for (int t : thread_counts) std::printf(" %8.2f", pairs_per_second(a.pair, t, 40000) / 1e6);
    std::printf("\n");
  }
  cudaStreamDestroy(stream);
  cumem_resource_release(cache);
  cumem_resource_release(pool);
  cumem_device_release(device);
  return 0;
}
