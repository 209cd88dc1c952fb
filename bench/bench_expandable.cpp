// The caching adaptor with expandable segments against the plain one, in one
// process and one run on device 0 (issue 18), so that the page size can be
// chosen from measurements:
//   1. a cached allocate + free pair (no page mapped), 256 B to 64 MiB: the
//      expandable cache against today's (min and median of 7 repetitions);
//   2. a pair that maps new pages: for each page size (2 to 64 MiB) and
//      block size (2 MiB to 1 GiB), the allocation that maps the block's
//      pages and the release_cached that unmaps them (after a wait for the
//      device), median of the repetitions, and the pages a block takes;
//   3. PyTorch's fragmentation example (8 x 16 MiB live, freed, then
//      4 x 32 MiB live): device memory taken (cuMemGetInfo before and at
//      the peak) for the plain cache over a new pool and the expandable
//      cache with each page size.
// Needs only libcumem and a GPU (exits 77 without one). Run:
// build/bench/bench_expandable
#include <cumem/cumem.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t KiB = 1024, MiB = 1024 * KiB;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct Env {
  cumem_device_t* device = nullptr;
  cumem_stream_t* stream = nullptr;
  cumem_resource_t* pool = nullptr;  // the device's default pool
};

// A caching adaptor over `upstream`: expandable with `page_size` (0 with
// expandable: the default), or the plain one.
cumem_resource_t* make_cache(cumem_resource_t* upstream, bool expandable, uint64_t page_size) {
  cumem_caching_resource_options_t o = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  o.expandable = expandable ? CUMEM_TRUE : CUMEM_FALSE;
  o.page_size = page_size;
  cumem_resource_t* r = nullptr;
  if (cumem_caching_resource_create_with_options(upstream, &o, &r) != CUMEM_SUCCESS) {
    std::printf("  cannot make the cache: %s\n", cumem_last_error_message());
    return nullptr;
  }
  return r;
}

bool pair(cumem_resource_t* r, size_t size, cumem_stream_t* s) {
  void* p = nullptr;
  return cumem_resource_allocate_raw(r, size, s, &p) == CUMEM_SUCCESS &&
         cumem_resource_deallocate_raw(r, p, size, s) == CUMEM_SUCCESS;
}

struct Latency {
  double min = -1, median = -1;
};

Latency pair_latency(cumem_resource_t* r, size_t size, cumem_stream_t* s) {
  constexpr int count = 20000;
  for (int i = 0; i < 1000; ++i) pair(r, size, s);  // warm: the block is cached
  std::vector<double> runs;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = Clock::now();
    for (int i = 0; i < count; ++i)
      if (!pair(r, size, s)) return {};
    runs.push_back(us_since(t0) * 1e3 / count);
  }
  std::sort(runs.begin(), runs.end());
  return {runs.front(), runs[3]};
}

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

uint64_t free_memory(const Env& env) {
  uint64_t free = 0, total = 0;
  cumem_device_memory_info(env.device, &free, &total);
  return free;
}

// Device memory the fragmentation example takes through `cache`, in bytes
// (0 when an allocation failed).
uint64_t fragmentation_example(const Env& env, cumem_resource_t* cache) {
  cumem_device_synchronize(env.device);
  const uint64_t start = free_memory(env);
  uint64_t lowest = start;
  std::vector<void*> blocks;
  bool ok = true;
  for (int i = 0; i < 8; ++i) {
    void* p = nullptr;
    ok = ok && cumem_resource_allocate_raw(cache, 16 * MiB, env.stream, &p) == CUMEM_SUCCESS;
    blocks.push_back(p);
    lowest = std::min(lowest, free_memory(env));
  }
  for (void* p : blocks)
    if (p) cumem_resource_deallocate_raw(cache, p, 16 * MiB, env.stream);
  blocks.clear();
  for (int i = 0; i < 4; ++i) {
    void* p = nullptr;
    ok = ok && cumem_resource_allocate_raw(cache, 32 * MiB, env.stream, &p) == CUMEM_SUCCESS;
    blocks.push_back(p);
    lowest = std::min(lowest, free_memory(env));
  }
  for (void* p : blocks)
    if (p) cumem_resource_deallocate_raw(cache, p, 32 * MiB, env.stream);
  cumem_caching_resource_trim(cache, 0);
  return ok ? start - lowest : 0;
}

}  // namespace

int main() {
  int32_t count = 0;
  if (cumem_device_count(&count) != CUMEM_SUCCESS || count == 0) {
    std::printf("bench_expandable: no CUDA device (%s)\n", cumem_last_error_message());
    return 77;
  }
  Env env;
  if (cumem_device_get(0, &env.device) != CUMEM_SUCCESS ||
      cumem_stream_create(env.device, nullptr, &env.stream) != CUMEM_SUCCESS ||
      cumem_device_resource_create(env.device, nullptr, &env.pool) != CUMEM_SUCCESS) {
    std::printf("bench_expandable: %s\n", cumem_last_error_message());
    return 1;
  }
  cumem_resource_t* plain = make_cache(env.pool, false, 0);
  cumem_resource_t* expandable = make_cache(env.pool, true, 0);
  if (!plain || !expandable) return 1;

  // 1. Cached pairs.
  const size_t sizes[] = {256, 64 * KiB, 1 * MiB, 64 * MiB};
  std::printf("1. cached allocate + free pair, one stream: min / median of 7 repetitions (ns)\n");
  std::printf("%-30s %15s %15s %15s %15s\n", "", "256 B", "64 KiB", "1 MiB", "64 MiB");
  Latency by[2][4];
  const char* names[2] = {"caching (today's)", "caching, expandable (2 MiB)"};
  cumem_resource_t* caches[2] = {plain, expandable};
  for (int c = 0; c < 2; ++c) {
    std::printf("%-30s", names[c]);
    for (int i = 0; i < 4; ++i) {
      by[c][i] = pair_latency(caches[c], sizes[i], env.stream);
      std::printf(" %7.1f /%6.1f", by[c][i].min, by[c][i].median);
    }
    std::printf("\n");
  }
  std::printf("%-30s", "expandable / today's, medians");
  for (int i = 0; i < 4; ++i)
    std::printf(" %15.3f", by[0][i].median > 0 ? by[1][i].median / by[0][i].median : 0.0);
  std::printf("\n");
  cumem_stream_synchronize(env.stream);
  cumem_caching_resource_trim(plain, 0);
  cumem_caching_resource_trim(expandable, 0);

  // 2. Pairs that map pages. Each cache keeps one page-sized block at the
  // start of its range (so the range stays reserved and every timed block
  // needs new pages); the block is allocated (mapping its pages), freed,
  // and the cache released (unmapping them after a wait for the device).
  const uint64_t page_sizes[] = {2 * MiB, 4 * MiB, 8 * MiB, 20 * MiB, 64 * MiB};
  const size_t blocks[] = {2 * MiB, 20 * MiB, 100 * MiB, 1024 * MiB};
  std::printf("\n2. a pair that maps new pages: allocate (maps) / release_cached (unmaps), median (us);"
              " pages a block takes\n");
  std::printf("%-14s", "page size");
  for (size_t b : blocks) std::printf(" %24zu MiB", b / MiB);
  std::printf("\n");
  for (uint64_t page : page_sizes) {
    cumem_resource_t* cache = make_cache(env.pool, true, page);
    if (!cache) continue;
    void* anchor = nullptr;
    if (cumem_resource_allocate_raw(cache, page, env.stream, &anchor) != CUMEM_SUCCESS) {
      std::printf("  %s\n", cumem_last_error_message());
      cumem_resource_release(cache);
      continue;
    }
    std::printf("%10llu MiB", static_cast<unsigned long long>(page / MiB));
    for (size_t b : blocks) {
      const int reps = b >= 1024 * MiB ? 5 : 15;
      std::vector<double> map_us, unmap_us;
      cumem_caching_statistics_t before = CUMEM_CACHING_STATISTICS_INIT;
      cumem_caching_resource_get_statistics(cache, &before);
      bool ok = true;
      for (int r = 0; r < reps && ok; ++r) {
        void* p = nullptr;
        auto t0 = Clock::now();
        ok = cumem_resource_allocate_raw(cache, b, env.stream, &p) == CUMEM_SUCCESS;
        map_us.push_back(us_since(t0));
        if (!ok) break;
        cumem_resource_deallocate_raw(cache, p, b, env.stream);
        t0 = Clock::now();
        cumem_caching_resource_release_cached(cache);
        unmap_us.push_back(us_since(t0));
      }
      cumem_caching_statistics_t after = CUMEM_CACHING_STATISTICS_INIT;
      cumem_caching_resource_get_statistics(cache, &after);
      if (!ok) {
        std::printf(" %28s", "failed");
        continue;
      }
      std::printf(" %9.0f / %8.0f (%5llu)", median(map_us), median(unmap_us),
                  static_cast<unsigned long long>((after.pages_mapped - before.pages_mapped) / reps));
    }
    std::printf("\n");
    cumem_resource_deallocate_raw(cache, anchor, page, env.stream);
    cumem_resource_release(cache);
  }

  // 3. The fragmentation example.
  std::printf("\n3. PyTorch's fragmentation example (8 x 16 MiB, freed, 4 x 32 MiB; 128 MiB live):"
              " device memory taken (MiB)\n");
  {
    cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
    po.new_pool = CUMEM_TRUE;
    po.release_all_unused = CUMEM_TRUE;  // the pool gives back what the cache does not hold
    cumem_resource_t* own_pool = nullptr;
    if (cumem_device_resource_create(env.device, &po, &own_pool) == CUMEM_SUCCESS) {
      cumem_resource_t* cache = make_cache(own_pool, false, 0);
      if (cache) {
        std::printf("%-30s %8.1f\n", "caching (today's), new pool",
                    double(fragmentation_example(env, cache)) / MiB);
        cumem_resource_release(cache);
      }
      cumem_resource_release(own_pool);
    }
    for (uint64_t page : page_sizes) {
      cumem_resource_t* cache = make_cache(env.pool, true, page);
      if (!cache) continue;
      char name[64];
      std::snprintf(name, sizeof name, "expandable, %llu MiB pages",
                    static_cast<unsigned long long>(page / MiB));
      std::printf("%-30s %8.1f\n", name, double(fragmentation_example(env, cache)) / MiB);
      cumem_resource_release(cache);
    }
  }

  cumem_resource_release(plain);
  cumem_resource_release(expandable);
  cumem_stream_synchronize(env.stream);
  cumem_stream_release(env.stream);
  cumem_resource_release(env.pool);
  cumem_device_release(env.device);
  return 0;
}
