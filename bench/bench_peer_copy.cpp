// Copies between two GPUs, libcumem against the raw driver in one process
// and one run (issue "Two GPUs"): a buffer of device 0 and one of device 1
// (new pools, each granted to the other device), each direction on a stream
// of either device, 1 GiB and 64 MiB. For each: the GPU time of the
// driver's cuMemcpyPeerAsync of the same bytes, of cumem_buffer_copy_to and
// of one cumem_copy_batch of 16 pieces, each the median of 9 repetitions
// timed with events after a warm run; prints GB/s and libcumem as % of the
// driver. Before every method the destination is zeroed; after it every
// byte is compared with the source's (word i holds a function of i and the
// row, so misplaced pieces show). Exits 1 on a mismatch or a failed call,
// 77 with fewer than two GPUs or no peer path between devices 0 and 1.
// Run: build/bench/bench_peer_copy
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cumem/cumem.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t MiB = size_t{1} << 20;
constexpr int kReps = 9;
constexpr size_t kPieces = 16;

[[noreturn]] void die(const char* what) {
  std::printf("bench_peer_copy: %s: %s\n", what, cumem_last_error_message());
  std::exit(1);
}
void ok(cumem_status_t s, const char* what) {
  if (s != CUMEM_SUCCESS) die(what);
}

// The driver's entry points, as libcumem resolves them (cuGetProcAddress
// with the version of the signature compiled against).
struct Driver {
  PFN_cuMemcpyPeerAsync_v4000 memcpy_peer = nullptr;
  PFN_cuCtxGetCurrent_v4000 ctx_get_current = nullptr;
  const char* why_not = "";
  bool load() {
    // The driver libcumem loads ($CUMEM_LIBCUDA, as libcumem reads it).
    const char* env = std::getenv("CUMEM_LIBCUDA");
    const char* path = env && *env ? env : "libcuda.so.1";
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      why_not = "dlopen of the CUDA driver failed";
      return false;
    }
    auto get = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
    if (!get) {
      why_not = "the driver has no cuGetProcAddress_v2 (CUDA 12.0+)";
      return false;
    }
    auto sym = [&](const char* name, int at) {
      void* fn = nullptr;
      CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      get(name, &fn, at, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);
      return found == CU_GET_PROC_ADDRESS_SUCCESS ? fn : nullptr;
    };
    memcpy_peer = reinterpret_cast<PFN_cuMemcpyPeerAsync_v4000>(sym("cuMemcpyPeerAsync", 4000));
    ctx_get_current = reinterpret_cast<PFN_cuCtxGetCurrent_v4000>(sym("cuCtxGetCurrent", 4000));
    if (!memcpy_peer || !ctx_get_current) {
      why_not = "cuGetProcAddress found no cuMemcpyPeerAsync or cuCtxGetCurrent";
      return false;
    }
    return true;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void* ptr_of(const cumem_buffer_t* b) {
  void* p = nullptr;
  ok(cumem_buffer_ptr(b, &p), "cumem_buffer_ptr");
  return p;
}

// One GPU of the pair: its primary context (for cuMemcpyPeerAsync), a
// stream and two timing events of it, and a new pool of its own.
struct Side {
  cumem_device_t* device = nullptr;
  CUcontext context = nullptr;
  cumem_stream_t* stream = nullptr;
  CUstream native = nullptr;
  cumem_event_t* e0 = nullptr;
  cumem_event_t* e1 = nullptr;
  cumem_resource_t* pool = nullptr;

  void open(int ordinal, const Driver& driver) {
    ok(cumem_device_get(ordinal, &device), "cumem_device_get");
    ok(cumem_device_set_current(device), "cumem_device_set_current");
    if (driver.ctx_get_current(&context) != CUDA_SUCCESS || !context) die("cuCtxGetCurrent");
    ok(cumem_stream_create(device, nullptr, &stream), "cumem_stream_create");
    void* n = nullptr;
    ok(cumem_stream_native(stream, &n), "cumem_stream_native");
    native = static_cast<CUstream>(n);
    cumem_event_options_t eo = CUMEM_EVENT_OPTIONS_INIT;
    eo.enable_timing = CUMEM_TRUE;
    ok(cumem_event_create(device, &eo, &e0), "cumem_event_create");
    ok(cumem_event_create(device, &eo, &e1), "cumem_event_create");
    cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
    po.new_pool = CUMEM_TRUE;
    ok(cumem_device_resource_create(device, &po, &pool), "cumem_device_resource_create");
  }
  void close() {
    cumem_resource_release(pool);
    cumem_event_release(e0);
    cumem_event_release(e1);
    cumem_stream_release(stream);
    cumem_device_release(device);
  }
};

// GPU milliseconds of `copy` on `on`'s stream, median of kReps after a
// warm run.
template <class Copy>
double gpu_ms(const Side& on, Copy copy) {
  copy();
  std::vector<double> runs;
  for (int r = 0; r < kReps; ++r) {
    ok(cumem_event_record(on.e0, on.stream), "cumem_event_record");
    copy();
    ok(cumem_event_record(on.e1, on.stream), "cumem_event_record");
    ok(cumem_event_synchronize(on.e1), "cumem_event_synchronize");
    float ms = 0;
    ok(cumem_event_elapsed_ms(on.e0, on.e1, &ms), "cumem_event_elapsed_ms");
    runs.push_back(ms);
  }
  return median(runs);
}

struct Host {
  cumem_resource_t* pinned = nullptr;  // cuMemHostAlloc, portable
  cumem_buffer_t* reference = nullptr;
  cumem_buffer_t* check = nullptr;
};

// One row: `bytes` from `from` to `to`, on `on`'s stream (one of the two).
bool row(const Driver& driver, Host& host, Side& from, Side& to, Side& on, size_t bytes,
         uint32_t seed) {
  // Each buffer allocated and freed on its own device's stream.
  cumem_buffer_t *src = nullptr, *dst = nullptr;
  ok(cumem_resource_allocate(from.pool, bytes, from.stream, &src), "allocate the source");
  ok(cumem_resource_allocate(to.pool, bytes, to.stream, &dst), "allocate the destination");
  ok(cumem_stream_synchronize(from.stream), "cumem_stream_synchronize");
  ok(cumem_stream_synchronize(to.stream), "cumem_stream_synchronize");
  auto* words = static_cast<uint32_t*>(ptr_of(host.reference));
  for (size_t i = 0; i < bytes / 4; ++i) words[i] = static_cast<uint32_t>(i * 2654435761u) ^ seed;
  cumem_buffer_t *ref = nullptr, *chk = nullptr;  // the first `bytes` of the host buffers
  ok(cumem_buffer_slice(host.reference, 0, bytes, &ref), "slice");
  ok(cumem_buffer_slice(host.check, 0, bytes, &chk), "slice");
  ok(cumem_buffer_copy_to(ref, src, on.stream), "write the source");
  ok(cumem_stream_synchronize(on.stream), "cumem_stream_synchronize");

  bool all_ok = true;
  auto zero = [&] {
    ok(cumem_buffer_fill(dst, 0, 4, to.stream), "zero the destination");
    ok(cumem_stream_synchronize(to.stream), "cumem_stream_synchronize");
  };
  auto check = [&](const char* method) {
    ok(cumem_buffer_copy_to(dst, chk, on.stream), "read the destination");
    ok(cumem_stream_synchronize(on.stream), "cumem_stream_synchronize");
    if (std::memcmp(ptr_of(chk), ptr_of(ref), bytes) != 0) {
      std::printf("    %s: MISMATCH (the bytes that arrived are not the source's)\n", method);
      all_ok = false;
    }
  };
  const auto s = reinterpret_cast<CUdeviceptr>(ptr_of(src));
  const auto d = reinterpret_cast<CUdeviceptr>(ptr_of(dst));
  zero();
  const double peer = gpu_ms(on, [&] {
    if (driver.memcpy_peer(d, to.context, s, from.context, bytes, on.native) != CUDA_SUCCESS)
      die("cuMemcpyPeerAsync");
  });
  check("cuMemcpyPeerAsync");
  zero();
  const double copy_to =
      gpu_ms(on, [&] { ok(cumem_buffer_copy_to(src, dst, on.stream), "cumem_buffer_copy_to"); });
  check("cumem_buffer_copy_to");
  const size_t piece = bytes / kPieces;
  std::vector<cumem_buffer_t*> dsts(kPieces, dst);
  std::vector<const cumem_buffer_t*> srcs(kPieces, src);
  std::vector<size_t> offsets(kPieces), sizes(kPieces, piece);
  for (size_t i = 0; i < kPieces; ++i) offsets[i] = i * piece;
  zero();
  const double batch = gpu_ms(on, [&] {
    ok(cumem_copy_batch(on.stream, kPieces, dsts.data(), offsets.data(), srcs.data(), offsets.data(),
                        sizes.data(), nullptr, 0),
       "cumem_copy_batch");
  });
  check("cumem_copy_batch");

  int32_t f = -1, t = -1, o = -1;
  ok(cumem_device_ordinal(from.device, &f), "cumem_device_ordinal");
  ok(cumem_device_ordinal(to.device, &t), "cumem_device_ordinal");
  ok(cumem_device_ordinal(on.device, &o), "cumem_device_ordinal");
  auto gbps = [&](double ms) { return bytes / (ms * 1e6); };
  std::printf("  %5zu MiB  %d -> %d  stream of %d  %9.1f  %9.1f %6.1f %%  %9.1f %6.1f %%%s\n",
              bytes / MiB, f, t, o, gbps(peer), gbps(copy_to), 100.0 * peer / copy_to, gbps(batch),
              100.0 * peer / batch, all_ok ? "" : "  MISMATCH");
  cumem_buffer_release(ref);
  cumem_buffer_release(chk);
  ok(cumem_stream_synchronize(on.stream), "cumem_stream_synchronize");
  ok(cumem_buffer_close(src, from.stream), "cumem_buffer_close");
  ok(cumem_buffer_close(dst, to.stream), "cumem_buffer_close");
  cumem_buffer_release(src);
  cumem_buffer_release(dst);
  ok(cumem_stream_synchronize(from.stream), "cumem_stream_synchronize");
  ok(cumem_stream_synchronize(to.stream), "cumem_stream_synchronize");
  return all_ok;
}

}  // namespace

int main() {
  int32_t count = 0;
  if (cumem_device_count(&count) != CUMEM_SUCCESS) {
    std::printf("bench_peer_copy: no GPU (%s)\n", cumem_last_error_message());
    return 77;
  }
  if (count < 2) {
    std::printf("bench_peer_copy: copies between GPUs need two; this machine has %d\n", count);
    return 77;
  }
  Driver driver;
  if (!driver.load()) {
    std::printf("bench_peer_copy: cannot load the driver's entry points: %s\n", driver.why_not);
    return 1;
  }
  Side a, b;
  a.open(0, driver);
  b.open(1, driver);
  cumem_bool_t ab = CUMEM_FALSE, ba = CUMEM_FALSE;
  ok(cumem_device_can_access_peer(a.device, b.device, &ab), "cumem_device_can_access_peer");
  ok(cumem_device_can_access_peer(b.device, a.device, &ba), "cumem_device_can_access_peer");
  if (!ab || !ba) {
    std::printf("bench_peer_copy: no peer path between devices 0 and 1 (0 reaches 1: %s, 1 reaches "
                "0: %s): nothing to measure\n", ab ? "yes" : "no", ba ? "yes" : "no");
    a.close();
    b.close();
    return 77;
  }
  // Each pool's memory to the other device, and cuMemAlloc'd memory both
  // ways (the driver's peer copies of contexts that enabled each other).
  ok(cumem_resource_set_peer_access(a.pool, b.device, CUMEM_TRUE), "grant device 1 device 0's pool");
  ok(cumem_resource_set_peer_access(b.pool, a.device, CUMEM_TRUE), "grant device 0 device 1's pool");
  ok(cumem_device_enable_peer_access(a.device, b.device), "cumem_device_enable_peer_access");
  ok(cumem_device_enable_peer_access(b.device, a.device), "cumem_device_enable_peer_access");

  const size_t sizes[] = {1024 * MiB, 64 * MiB};
  Host host;
  ok(cumem_legacy_pinned_resource_create(a.device, &host.pinned), "cumem_legacy_pinned_resource_create");
  ok(cumem_resource_allocate(host.pinned, sizes[0], nullptr, &host.reference), "allocate pinned");
  ok(cumem_resource_allocate(host.pinned, sizes[0], nullptr, &host.check), "allocate pinned");

  int32_t version = 0;
  cumem_driver_version(&version);
  std::printf("bench_peer_copy: device 0 <-> device 1, peer access both ways, driver CUDA %d.%d;\n"
              "GPU time, median of %d; libcumem as %% of the driver (100 %%: as fast)\n\n",
              version / 1000, version % 1000 / 10, kReps);
  std::printf("  %-9s  %-6s  %-11s  %9s  %-18s  %-18s\n", "size", "copy", "on", "driver",
              "copy_to", "batch of 16");
  std::printf("  %-9s  %-6s  %-11s  %9s  %9s %8s  %9s %8s\n", "", "", "", "GB/s", "GB/s",
              "% driver", "GB/s", "% driver");
  bool all_ok = true;
  uint32_t seed = 1;
  for (size_t bytes : sizes) {
    all_ok &= row(driver, host, a, b, a, bytes, seed++);  // device 0 pushes
    all_ok &= row(driver, host, a, b, b, bytes, seed++);  // device 1 pulls
    all_ok &= row(driver, host, b, a, b, bytes, seed++);  // device 1 pushes
    all_ok &= row(driver, host, b, a, a, bytes, seed++);  // device 0 pulls
  }
  cumem_batch_statistics_t st = CUMEM_BATCH_STATISTICS_INIT;
  ok(cumem_batch_get_statistics(&st), "cumem_batch_get_statistics");
  std::printf("\n  cuMemcpyBatchAsync in this driver: %s\n",
              st.driver_copy_batch ? "yes (cumem_copy_batch hands it the 16 pieces)"
                                   : "no (cumem_copy_batch: one cuMemcpyAsync per piece)");
  cumem_buffer_release(host.reference);
  cumem_buffer_release(host.check);
  cumem_resource_release(host.pinned);
  a.close();
  b.close();
  std::printf("%s\n", all_ok ? "every copy's bytes arrived" : "MISMATCH: see above");
  return all_ok ? 0 : 1;
}
