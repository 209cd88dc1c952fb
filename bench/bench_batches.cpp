// Copies at scale, against the raw driver in one process and one run on
// device 0 (issue 22's goals):
//   1. 1,000 copies of 4 KiB (device to device, device to pinned host, pinned
//      host to device) between scattered regions of two buffers: host time of
//      one cumem_copy_batch against 1,000 cuMemcpyAsync calls, medians of 21
//      repetitions. The batch is timed both ways libcumem can take it: its
//      copy kernels (the default for such a batch; SM copies) and the
//      driver's batch call (forced by CUMEM_COPY_OVERLAP_PREFER_COMPUTE, the
//      opt-out); beside them the driver's own cuMemcpyBatchAsync (libcumem's
//      share) and 1,000 cumem_buffer_copy_region calls, the GPU time of the
//      kernel batch, the driver's batch and the loop, and what asking the
//      driver about 2,000 pointers costs (cuPointerGetAttributes: what a
//      kernel path for cumem_copy_batch_raw would add). The statistics say
//      which way each batch went; the bytes that arrive are checked after
//      every method;
//   2. batched prefetch of 1,000 managed buffers of 64 KiB (62.5 MiB in all)
//      to the device: host time of one cumem_prefetch_batch against 1,000
//      cuMemPrefetchAsync calls (and 1,000 cumem_buffer_prefetch calls), for
//      buffers that are allocations of their own (cuMemAllocManaged, the
//      managed pool) and for buffers in one allocation (slices of one
//      buffer; 256 KiB blocks of a caching adaptor over managed memory);
//   3. bandwidth of every copy path libcumem has (copy_to, copy_region, a
//      batch of one, a batch of 16 pieces) against cuMemcpyAsync of the same
//      bytes: 1 GiB device to device, 256 MiB each way with pinned memory.
// Prints the ratios the goals are stated in; exits 1 on a byte mismatch or a
// failed call, 77 without a GPU. Run: build/bench/bench_batches
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cumem/cumem.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t KiB = 1024, MiB = 1024 * KiB;
constexpr int kCopies = 1000;
constexpr size_t kCopySize = 4 * KiB;
constexpr int kReps = 21;

[[noreturn]] void die(const char* what) {
  std::printf("bench_batches: %s: %s\n", what, cumem_last_error_message());
  std::exit(1);
}
void ok(cumem_status_t s, const char* what) {
  if (s != CUMEM_SUCCESS) die(what);
}

// The driver's entry points, as libcumem resolves them (cuGetProcAddress
// with the version of the signature compiled against).
struct Driver {
  PFN_cuMemcpyAsync_v4000 memcpy = nullptr;
  PFN_cuMemcpyBatchAsync_v13000 memcpy_batch = nullptr;
  PFN_cuMemPrefetchAsync_v12020 prefetch = nullptr;
  PFN_cuStreamSynchronize_v2000 sync = nullptr;
  PFN_cuPointerGetAttributes_v7000 pointer_attributes = nullptr;
  bool load() {
    // The driver libcumem loads ($CUMEM_LIBCUDA, as libcumem reads it).
    const char* env = std::getenv("CUMEM_LIBCUDA");
    void* lib = dlopen(env && *env ? env : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    auto get = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
    auto version = reinterpret_cast<PFN_cuDriverGetVersion_v2020>(dlsym(lib, "cuDriverGetVersion"));
    if (!get || !version) return false;
    int v = 0;
    version(&v);
    auto sym = [&](const char* name, int at) {
      void* fn = nullptr;
      CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      get(name, &fn, at, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);
      return found == CU_GET_PROC_ADDRESS_SUCCESS ? fn : nullptr;
    };
    memcpy = reinterpret_cast<PFN_cuMemcpyAsync_v4000>(sym("cuMemcpyAsync", 4000));
    if (v >= 13000)
      memcpy_batch = reinterpret_cast<PFN_cuMemcpyBatchAsync_v13000>(sym("cuMemcpyBatchAsync", 13000));
    prefetch = reinterpret_cast<PFN_cuMemPrefetchAsync_v12020>(sym("cuMemPrefetchAsync", 12020));
    sync = reinterpret_cast<PFN_cuStreamSynchronize_v2000>(sym("cuStreamSynchronize", 2000));
    pointer_attributes =
        reinterpret_cast<PFN_cuPointerGetAttributes_v7000>(sym("cuPointerGetAttributes", 7000));
    return memcpy && prefetch && sync && pointer_attributes;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Host microseconds of `submit` (what the calls cost the CPU), then the
// stream is waited for outside the timing; median of kReps after a warm run.
template <class Submit, class Wait>
double host_us(Submit submit, Wait wait) {
  submit();
  wait();
  std::vector<double> runs;
  for (int r = 0; r < kReps; ++r) {
    const auto t0 = Clock::now();
    submit();
    runs.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    wait();
  }
  return median(runs);
}

struct Env {
  cumem_device_t* device = nullptr;
  cumem_stream_t* stream = nullptr;
  CUstream native = nullptr;
  cumem_resource_t* device_mr = nullptr;
  cumem_resource_t* pinned_mr = nullptr;  // cuMemHostAlloc
  Driver driver;
  void wait() const { ok(cumem_stream_synchronize(stream), "cumem_stream_synchronize"); }
};

void* ptr_of(cumem_buffer_t* b) {
  void* p = nullptr;
  ok(cumem_buffer_ptr(b, &p), "cumem_buffer_ptr");
  return p;
}

// Writes / reads a whole buffer through a wrapped host vector.
void write_all(const Env& env, cumem_buffer_t* b, const std::vector<uint8_t>& data) {
  cumem_buffer_t* w = nullptr;
  ok(cumem_buffer_wrap(const_cast<uint8_t*>(data.data()), data.size(), nullptr, nullptr, &w), "wrap");
  ok(cumem_buffer_copy_to(w, b, env.stream), "write");
  env.wait();
  cumem_buffer_release(w);
}
std::vector<uint8_t> read_all(const Env& env, cumem_buffer_t* b, size_t size) {
  std::vector<uint8_t> out(size);
  cumem_buffer_t* w = nullptr;
  ok(cumem_buffer_wrap(out.data(), size, nullptr, nullptr, &w), "wrap");
  ok(cumem_buffer_copy_to(b, w, env.stream), "read");
  env.wait();
  cumem_buffer_release(w);
  return out;
}

// GPU milliseconds of `copy`, median of 9 after a warm run.
template <class Copy>
double gpu_ms(const Env& env, cumem_event_t* e0, cumem_event_t* e1, Copy copy) {
  copy();
  std::vector<double> runs;
  for (int r = 0; r < 9; ++r) {
    ok(cumem_event_record(e0, env.stream), "record");
    copy();
    ok(cumem_event_record(e1, env.stream), "record");
    ok(cumem_event_synchronize(e1), "event synchronize");
    float ms = 0;
    ok(cumem_event_elapsed_ms(e0, e1, &ms), "elapsed");
    runs.push_back(ms);
  }
  return median(runs);
}

struct Events {
  cumem_event_t* e0 = nullptr;
  cumem_event_t* e1 = nullptr;
  explicit Events(const Env& env) {
    cumem_event_options_t eo = CUMEM_EVENT_OPTIONS_INIT;
    eo.enable_timing = CUMEM_TRUE;
    ok(cumem_event_create(env.device, &eo, &e0), "event");
    ok(cumem_event_create(env.device, &eo, &e1), "event");
  }
  ~Events() {
    cumem_event_release(e0);
    cumem_event_release(e1);
  }
};

cumem_batch_statistics_t batch_statistics() {
  cumem_batch_statistics_t s = CUMEM_BATCH_STATISTICS_INIT;
  ok(cumem_batch_get_statistics(&s), "statistics");
  return s;
}

// 1. 1,000 copies of 4 KiB from regions of one buffer to scattered regions
// of another.
bool small_copies(const Env& env, const char* name, cumem_resource_t* from, cumem_resource_t* to) {
  const size_t bytes = kCopies * kCopySize;
  cumem_buffer_t *src = nullptr, *dst = nullptr;
  ok(cumem_resource_allocate(from, bytes, env.stream, &src), "allocate");
  ok(cumem_resource_allocate(to, bytes, env.stream, &dst), "allocate");
  std::mt19937 rng(22);
  std::vector<uint8_t> data(bytes);
  for (auto& x : data) x = static_cast<uint8_t>(rng());
  write_all(env, src, data);
  std::vector<size_t> perm(kCopies);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<cumem_buffer_t*> dsts(kCopies, dst);
  std::vector<const cumem_buffer_t*> srcs(kCopies, src);
  std::vector<size_t> dst_offsets(kCopies), src_offsets(kCopies), sizes(kCopies, kCopySize);
  std::vector<CUdeviceptr> dptrs(kCopies), sptrs(kCopies);
  const auto d0 = reinterpret_cast<uintptr_t>(ptr_of(dst));
  const auto s0 = reinterpret_cast<uintptr_t>(ptr_of(src));
  for (int i = 0; i < kCopies; ++i) {
    src_offsets[i] = i * kCopySize;
    dst_offsets[i] = perm[i] * kCopySize;
    sptrs[i] = s0 + src_offsets[i];
    dptrs[i] = d0 + dst_offsets[i];
  }
  std::vector<uint8_t> want(bytes);
  for (int i = 0; i < kCopies; ++i)
    std::memcpy(want.data() + dst_offsets[i], data.data() + src_offsets[i], kCopySize);
  bool all_ok = true;
  auto check = [&](const char* method) {
    const std::vector<uint8_t> got = read_all(env, dst, bytes);
    if (got != want) {
      std::printf("  %s %s: MISMATCH\n", name, method);
      all_ok = false;
    }
    write_all(env, dst, std::vector<uint8_t>(bytes, 0));
  };
  auto wait = [&] { env.wait(); };
  // The default (the copy kernels, where they load), and the opt-out that
  // keeps a batch on the copy engines (the driver's batch call).
  cumem_copy_options_t engines = CUMEM_COPY_OPTIONS_INIT;
  engines.overlap_mode = CUMEM_COPY_OVERLAP_PREFER_COMPUTE;
  auto cumem_batch = [&](const cumem_copy_options_t* options) {
    ok(cumem_copy_batch(env.stream, kCopies, dsts.data(), dst_offsets.data(), srcs.data(),
                        src_offsets.data(), sizes.data(), options, options ? 1 : 0),
       "cumem_copy_batch");
  };
  auto loop_calls = [&] {
    for (int i = 0; i < kCopies; ++i)
      if (env.driver.memcpy(dptrs[i], sptrs[i], kCopySize, env.native) != CUDA_SUCCESS)
        die("cuMemcpyAsync");
  };

  const cumem_batch_statistics_t before = batch_statistics();
  const double batch = host_us([&] { cumem_batch(nullptr); }, wait);
  const cumem_batch_statistics_t s1 = batch_statistics();
  check("cumem_copy_batch (default)");
  const bool by_kernel = s1.copy_batches_by_kernel - before.copy_batches_by_kernel == kReps + 1;
  const double engine_batch = host_us([&] { cumem_batch(&engines); }, wait);
  const cumem_batch_statistics_t s2 = batch_statistics();
  check("cumem_copy_batch (PREFER_COMPUTE: copy engines)");
  if (s2.copy_batches_by_kernel != s1.copy_batches_by_kernel) {
    std::printf("  %s: the opt-out took the copy kernels\n", name);
    all_ok = false;
  }
  const double loop = host_us(loop_calls, wait);
  check("cuMemcpyAsync x1000");
  double raw_batch = -1;
  if (env.driver.memcpy_batch) {
    CUmemcpyAttributes attr;
    std::memset(&attr, 0, sizeof attr);
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    size_t zero = 0;
    raw_batch = host_us(
        [&] {
          if (env.driver.memcpy_batch(dptrs.data(), sptrs.data(), sizes.data(), kCopies, &attr,
                                      &zero, 1, env.native) != CUDA_SUCCESS)
            die("cuMemcpyBatchAsync");
        },
        wait);
    check("cuMemcpyBatchAsync");
  }
  const double regions = host_us(
      [&] {
        for (int i = 0; i < kCopies; ++i)
          ok(cumem_buffer_copy_region(dst, dst_offsets[i], src, src_offsets[i], kCopySize,
                                      env.stream),
             "cumem_buffer_copy_region");
      },
      wait);
  check("cumem_buffer_copy_region x1000");
  // What a kernel path for pointer batches would first ask the driver: the
  // memory type, device and managed flag of each destination and source.
  const double pointers = host_us(
      [&] {
        unsigned memory_type = 0, is_managed = 0;
        int ordinal = -1;
        CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                            CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                            CU_POINTER_ATTRIBUTE_IS_MANAGED};
        void* values[] = {&memory_type, &ordinal, &is_managed};
        for (int i = 0; i < kCopies; ++i)
          for (CUdeviceptr p : {dptrs[i], sptrs[i]})
            if (env.driver.pointer_attributes(3, attributes, values, p) != CUDA_SUCCESS)
              die("cuPointerGetAttributes");
      },
      wait);
  // GPU time of the same bytes each way.
  Events ev(env);
  const double gpu_kernel = 1e3 * gpu_ms(env, ev.e0, ev.e1, [&] { cumem_batch(nullptr); });
  check("cumem_copy_batch (default), GPU timing");
  const double gpu_engines = 1e3 * gpu_ms(env, ev.e0, ev.e1, [&] { cumem_batch(&engines); });
  check("cumem_copy_batch (PREFER_COMPUTE), GPU timing");
  const double gpu_loop = 1e3 * gpu_ms(env, ev.e0, ev.e1, loop_calls);
  check("cuMemcpyAsync x1000, GPU timing");
  std::printf("  %-24s %9.1f %9.1f %9.1f %9.1f %9.1f %8.1f %%%s\n", name, batch, engine_batch,
              loop, raw_batch, regions, 100.0 * batch / loop,
              batch <= 0.5 * loop ? "" : "  (goal: <= 50 %)");
  std::printf("    default batch %s; engines batch %.1f %% of the loop\n"
              "    GPU us: kernels %.1f, driver's batch %.1f, loop %.1f\n"
              "    cuPointerGetAttributes x%d: %.1f us (%.1f %% of the loop)\n",
              by_kernel ? "by the copy kernels" : "NOT by the copy kernels (unavailable?)",
              100.0 * engine_batch / loop, gpu_kernel, gpu_engines, gpu_loop, 2 * kCopies,
              pointers, 100.0 * pointers / loop);
  for (cumem_buffer_t* b : {src, dst}) {
    cumem_buffer_close(b, env.stream);
    cumem_buffer_release(b);
  }
  return all_ok;
}

// 2. Prefetch of 1,000 managed buffers to the device, each way, by where
// the buffers come from:
//   a. cuMemAllocManaged each;   b. the device's managed pool (neighbours
//   there touch on the H200, and the driver still refuses a range across
//   two allocations, so both stay 1,000 ranges);
//   c. slices of one managed allocation;   d. a caching adaptor over the
//   managed resource (blocks of 256 KiB: pieces of its segments).
// In c and d the buffers that touch are one range for the driver.
enum class Source { allocations, pool, slices, cache };

const char* source_name(Source s) {
  switch (s) {
    case Source::allocations: return "cuMemAllocManaged each";
    case Source::pool: return "from the managed pool";
    case Source::slices: return "slices of one managed allocation";
    case Source::cache: return "a caching adaptor over managed memory";
  }
  return "?";
}

void prefetches(const Env& env, Source source) {
  const char tag = "abcd"[static_cast<int>(source)];
  cumem_managed_resource_options_t o = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
  o.disable_pool = source == Source::pool ? CUMEM_FALSE : CUMEM_TRUE;
  cumem_resource_t* managed = nullptr;
  if (cumem_managed_resource_create(env.device, &o, &managed) != CUMEM_SUCCESS) {
    std::printf("\n2%c. batched prefetch: skipped (%s)\n", tag, cumem_last_error_message());
    return;
  }
  const size_t each = source == Source::cache ? 256 * KiB : 64 * KiB;
  cumem_resource_t* from = managed;
  if (source == Source::cache) ok(cumem_caching_resource_create(managed, &from), "cache");
  cumem_buffer_t* whole = nullptr;  // the one allocation of the slices
  if (source == Source::slices) {
    ok(cumem_resource_allocate(managed, each * kCopies, env.stream, &whole), "allocate managed");
  }
  std::vector<cumem_buffer_t*> buffers(kCopies);
  std::vector<CUdeviceptr> ptrs(kCopies);
  for (int i = 0; i < kCopies; ++i) {
    if (whole)
      ok(cumem_buffer_slice(whole, each * i, each, &buffers[i]), "slice");
    else
      ok(cumem_resource_allocate(from, each, env.stream, &buffers[i]), "allocate managed");
    ptrs[i] = reinterpret_cast<CUdeviceptr>(ptr_of(buffers[i]));
    std::memset(ptr_of(buffers[i]), i & 0xFF, each);  // touch on the host
  }
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  const cumem_location_t host = {CUMEM_LOCATION_HOST, 0};
  CUmemLocation cu_dev{};
  cu_dev.type = CU_MEM_LOCATION_TYPE_DEVICE;
  cu_dev.id = 0;
  // After each timed prefetch to the device the pages go back to the host,
  // untimed, so that every repetition moves them.
  auto back = [&] {
    env.wait();
    ok(cumem_prefetch_batch(env.stream, kCopies, buffers.data(), &host, 1), "prefetch back");
    env.wait();
  };
  const double batch = host_us(
      [&] { ok(cumem_prefetch_batch(env.stream, kCopies, buffers.data(), &dev, 1), "cumem_prefetch_batch"); },
      back);
  const double loop = host_us(
      [&] {
        for (int i = 0; i < kCopies; ++i)
          if (env.driver.prefetch(ptrs[i], each, cu_dev, 0, env.native) != CUDA_SUCCESS)
            die("cuMemPrefetchAsync");
      },
      back);
  const double singles = host_us(
      [&] {
        for (int i = 0; i < kCopies; ++i)
          ok(cumem_buffer_prefetch(buffers[i], dev, env.stream), "cumem_buffer_prefetch");
      },
      back);
  // Where the pages are after the batch: every buffer's last prefetch.
  env.wait();
  ok(cumem_prefetch_batch(env.stream, kCopies, buffers.data(), &dev, 1), "cumem_prefetch_batch");
  env.wait();
  int on_device = 0;
  for (cumem_buffer_t* b : buffers) {
    cumem_location_t l{};
    ok(cumem_buffer_get_last_prefetch_location(b, &l), "last prefetch location");
    on_device += l.type == CUMEM_LOCATION_DEVICE && l.id == 0 ? 1 : 0;
  }
  if (on_device != kCopies) die("a buffer's pages are not on the device after the batch");
  cumem_batch_statistics_t s = CUMEM_BATCH_STATISTICS_INIT;
  ok(cumem_batch_get_statistics(&s), "statistics");
  size_t touching = 0;
  for (int i = 1; i < kCopies; ++i) touching += ptrs[i] == ptrs[i - 1] + each ? 1 : 0;
  std::printf("\n2%c. prefetch of %d managed buffers of %zu KiB (%s; %zu touch the one before) to "
              "the device, host us (median of %d)\n",
              tag, kCopies, each / KiB, source_name(source), touching, kReps);
  std::printf("  cumem_prefetch_batch %10.1f (%s)\n", batch,
              s.driver_prefetch_batch ? "cuMemPrefetchBatchAsync" : "the loop: no batch call");
  std::printf("  cuMemPrefetchAsync x%d %8.1f\n", kCopies, loop);
  std::printf("  cumem_buffer_prefetch x%d %6.1f\n", kCopies, singles);
  std::printf("  batch / loop %14.1f %%%s\n", 100.0 * batch / loop,
              batch <= 0.5 * loop ? "" : "  (goal: <= 50 %)");
  for (cumem_buffer_t* b : buffers) {
    cumem_buffer_close(b, env.stream);
    cumem_buffer_release(b);
  }
  if (whole) {
    cumem_buffer_close(whole, env.stream);
    cumem_buffer_release(whole);
  }
  if (from != managed) cumem_resource_release(from);
  if (source != Source::allocations) {
    cumem_resource_release(managed);
    return;
  }
  // The floor: the same bytes as one managed allocation, one
  // cuMemPrefetchAsync (what the driver's work per page costs the host,
  // whatever the number of calls).
  ok(cumem_resource_allocate(managed, each * kCopies, env.stream, &whole), "allocate managed");
  std::memset(ptr_of(whole), 1, each * kCopies);
  const CUdeviceptr whole_ptr = reinterpret_cast<CUdeviceptr>(ptr_of(whole));
  const double one = host_us(
      [&] {
        if (env.driver.prefetch(whole_ptr, each * kCopies, cu_dev, 0, env.native) != CUDA_SUCCESS)
          die("cuMemPrefetchAsync");
      },
      [&] {
        env.wait();
        ok(cumem_buffer_prefetch(whole, host, env.stream), "prefetch back");
        env.wait();
      });
  std::printf("  one cuMemPrefetchAsync of one %.1f MiB allocation (the floor) %.1f (%.1f %% of the "
              "loop)\n", double(each * kCopies) / double(1024 * KiB), one, 100.0 * one / loop);
  cumem_buffer_close(whole, env.stream);
  cumem_buffer_release(whole);
  cumem_resource_release(managed);
}

// 3. Bandwidth of each copy path against cuMemcpyAsync.
bool bandwidth(const Env& env, const char* name, cumem_resource_t* from, cumem_resource_t* to,
               size_t bytes) {
  cumem_buffer_t *src = nullptr, *dst = nullptr;
  ok(cumem_resource_allocate(from, bytes, env.stream, &src), "allocate");
  ok(cumem_resource_allocate(to, bytes, env.stream, &dst), "allocate");
  ok(cumem_buffer_fill(src, 0x5A, 1, env.stream), "fill");
  ok(cumem_buffer_fill(dst, 0x00, 1, env.stream), "fill");
  cumem_event_options_t eo = CUMEM_EVENT_OPTIONS_INIT;
  eo.enable_timing = CUMEM_TRUE;
  cumem_event_t *e0 = nullptr, *e1 = nullptr;
  ok(cumem_event_create(env.device, &eo, &e0), "event");
  ok(cumem_event_create(env.device, &eo, &e1), "event");
  const auto s = reinterpret_cast<CUdeviceptr>(ptr_of(src));
  const auto d = reinterpret_cast<CUdeviceptr>(ptr_of(dst));
  const double driver = gpu_ms(env, e0, e1, [&] {
    if (env.driver.memcpy(d, s, bytes, env.native) != CUDA_SUCCESS) die("cuMemcpyAsync");
  });
  const double copy_to = gpu_ms(env, e0, e1, [&] { ok(cumem_buffer_copy_to(src, dst, env.stream), "copy_to"); });
  const double region = gpu_ms(env, e0, e1, [&] {
    ok(cumem_buffer_copy_region(dst, 0, src, 0, bytes, env.stream), "copy_region");
  });
  const double one = gpu_ms(env, e0, e1, [&] {
    cumem_buffer_t* dsts[] = {dst};
    const cumem_buffer_t* srcs[] = {src};
    ok(cumem_copy_batch(env.stream, 1, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0), "batch");
  });
  const size_t pieces = 16, piece = bytes / pieces;
  std::vector<cumem_buffer_t*> dsts(pieces, dst);
  std::vector<const cumem_buffer_t*> srcs(pieces, src);
  std::vector<size_t> offsets(pieces), sizes(pieces, piece);
  for (size_t i = 0; i < pieces; ++i) offsets[i] = i * piece;
  const double sixteen = gpu_ms(env, e0, e1, [&] {
    ok(cumem_copy_batch(env.stream, pieces, dsts.data(), offsets.data(), srcs.data(), offsets.data(),
                        sizes.data(), nullptr, 0),
       "batch");
  });
  const std::vector<uint8_t> got = read_all(env, dst, bytes);
  const bool same = std::all_of(got.begin(), got.end(), [](uint8_t b) { return b == 0x5A; });
  auto pct = [&](double ms) { return 100.0 * driver / ms; };
  std::printf("  %-26s %8.1f   %6.1f %%  %6.1f %%  %6.1f %%  %6.1f %%%s\n", name,
              bytes / (driver * 1e6), pct(copy_to), pct(region), pct(one), pct(sixteen),
              same ? "" : "  MISMATCH");
  cumem_event_release(e0);
  cumem_event_release(e1);
  for (cumem_buffer_t* b : {src, dst}) {
    cumem_buffer_close(b, env.stream);
    cumem_buffer_release(b);
  }
  return same;
}

}  // namespace

int main() {
  int32_t count = 0;
  if (cumem_device_count(&count) != CUMEM_SUCCESS || count == 0) {
    std::printf("bench_batches: no GPU (%s)\n", cumem_last_error_message());
    return 77;
  }
  Env env;
  ok(cumem_device_get(0, &env.device), "device");
  ok(cumem_device_set_current(env.device), "set current");
  if (!env.driver.load()) {
    std::printf("bench_batches: cannot load the driver's entry points\n");
    return 1;
  }
  ok(cumem_stream_create(env.device, nullptr, &env.stream), "stream");
  void* native = nullptr;
  ok(cumem_stream_native(env.stream, &native), "native");
  env.native = static_cast<CUstream>(native);
  ok(cumem_device_get_memory_resource(env.device, &env.device_mr), "device resource");
  ok(cumem_legacy_pinned_resource_create(env.device, &env.pinned_mr), "pinned resource");
  int32_t driver = 0;
  cumem_driver_version(&driver);
  cumem_batch_statistics_t s = CUMEM_BATCH_STATISTICS_INIT;
  ok(cumem_batch_get_statistics(&s), "statistics");
  std::printf("driver CUDA %d.%d; cuMemcpyBatchAsync %s, cuMemPrefetchBatchAsync %s\n",
              driver / 1000, driver % 1000 / 10, s.driver_copy_batch ? "yes" : "no",
              s.driver_prefetch_batch ? "yes" : "no");

  bool all_ok = true;
  std::printf("\n1. %d copies of 4 KiB, host us (median of %d): cumem_copy_batch by the copy\n"
              "   kernels (default) and by the driver's batch (PREFER_COMPUTE), %d cuMemcpyAsync,\n"
              "   the driver's cuMemcpyBatchAsync, %d cumem_buffer_copy_region; kernels / cuMemcpyAsync\n",
              kCopies, kReps, kCopies, kCopies);
  std::printf("  %-24s %9s %9s %9s %9s %9s %10s\n", "", "kernels", "engines", "memcpy", "raw batch",
              "region", "ratio");
  all_ok &= small_copies(env, "device -> device", env.device_mr, env.device_mr);
  all_ok &= small_copies(env, "device -> pinned host", env.device_mr, env.pinned_mr);
  all_ok &= small_copies(env, "pinned host -> device", env.pinned_mr, env.device_mr);

  for (Source source : {Source::allocations, Source::pool, Source::slices, Source::cache})
    prefetches(env, source);

  std::printf("\n3. bandwidth against cuMemcpyAsync (GB/s), and each libcumem path as %% of it:\n"
              "  %-26s %8s   %8s  %8s  %8s  %8s\n", "", "driver", "copy_to", "region",
              "batch 1", "batch 16");
  all_ok &= bandwidth(env, "1 GiB device -> device", env.device_mr, env.device_mr, 1024 * MiB);
  all_ok &= bandwidth(env, "256 MiB device -> pinned", env.device_mr, env.pinned_mr, 256 * MiB);
  all_ok &= bandwidth(env, "256 MiB pinned -> device", env.pinned_mr, env.device_mr, 256 * MiB);

  ok(cumem_batch_get_statistics(&s), "statistics");
  std::printf("\nbatches: %llu copy batches (%llu looped, %llu by the copy kernels), %llu prefetch "
              "batches (%llu looped)\n",
              static_cast<unsigned long long>(s.copy_batches),
              static_cast<unsigned long long>(s.copy_batches_looped),
              static_cast<unsigned long long>(s.copy_batches_by_kernel),
              static_cast<unsigned long long>(s.prefetch_batches),
              static_cast<unsigned long long>(s.prefetch_batches_looped));
  cumem_resource_release(env.pinned_mr);
  cumem_resource_release(env.device_mr);
  cumem_stream_release(env.stream);
  cumem_device_release(env.device);
  std::printf(all_ok ? "bench_batches: every byte checked\n" : "bench_batches: FAILED\n");
  return all_ok ? 0 : 1;
}
