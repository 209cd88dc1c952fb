// Batches on a GPU: the bytes that arrive (device to device, device to
// pinned host, pinned host to device, many sizes and offsets, over buffers
// and raw pointers), the source access orders, the legacy default stream,
// a capturing stream, batched prefetch/discard of managed buffers and the
// last prefetch location, copy_to with no destination, the device's memory
// resource and the failure-callback adaptor over a pool. Managed
// allocations stay small (a few MiB in all).
#include <dlfcn.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "batches_gpu_fixture.hpp"

namespace {

int32_t driver_version() {
  int32_t v = 0;
  EXPECT_EQ(cumem_driver_version(&v), CUMEM_SUCCESS);
  return v;
}

using BatchGpu = BatchGpuTest;

// Regions of many sizes at many offsets, laid out one after another (with
// gaps) in one source and one destination buffer.
struct Layout {
  std::vector<size_t> src_offsets, dst_offsets, sizes;
  size_t src_size = 0, dst_size = 0;
};
Layout many_regions() {
  Layout l;
  const size_t sizes[] = {1, 3, 255, 256, 4096, 4097, 65537, size_t{1} << 20};
  const size_t shifts[] = {0, 1, 7, 4095};
  for (size_t size : sizes)
    for (size_t shift : shifts) {
      l.src_offsets.push_back(l.src_size + shift);
      l.src_size += shift + size + 13;
      l.dst_offsets.push_back(l.dst_size + (shift * 3) % 4096);
      l.dst_size += (shift * 3) % 4096 + size + 29;
      l.sizes.push_back(size);
    }
  return l;
}

TEST_F(BatchGpu, BytesArriveBetweenEveryPairOfKindsAtManySizesAndOffsets) {
  const Layout l = many_regions();
  struct Kind {
    const char* name;
    cumem_resource_t* resource;
  };
  const Kind kinds[] = {{"device", device_mr}, {"pinned", pinned_mr}, {"legacy_pinned", legacy_pinned_mr}};
  const cumem_batch_statistics_t before = batch_statistics();
  unsigned seed = 1;
  size_t batches = 0;
  for (const Kind& from : kinds)
    for (const Kind& to : kinds) {
      SCOPED_TRACE(std::string(from.name) + " -> " + to.name);
      cumem_buffer_t* src = make(from.resource, l.src_size);
      cumem_buffer_t* dst = make(to.resource, l.dst_size);
      const std::vector<uint8_t> data = random_bytes(l.src_size, seed++);
      write(src, data);
      write(dst, std::vector<uint8_t>(l.dst_size, 0xEE));
      const size_t n = l.sizes.size();
      std::vector<cumem_buffer_t*> dsts(n, dst);
      std::vector<const cumem_buffer_t*> srcs(n, src);
      CUMEM_ASSERT_OK(cumem_copy_batch(stream, n, dsts.data(), l.dst_offsets.data(), srcs.data(),
                                       l.src_offsets.data(), l.sizes.data(), nullptr, 0));
      ++batches;
      std::vector<uint8_t> want(l.dst_size, 0xEE);
      for (size_t i = 0; i < n; ++i)
        std::memcpy(want.data() + l.dst_offsets[i], data.data() + l.src_offsets[i], l.sizes[i]);
      EXPECT_TRUE(read(dst, l.dst_size) == want) << "the bytes between the regions stay too";
    }
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_TRUE(after.driver_copy_batch) << "the H200's CUDA 12.8+ driver has cuMemcpyBatchAsync";
  EXPECT_EQ(after.copy_batches, before.copy_batches + batches);
  EXPECT_EQ(after.copy_batches_looped, before.copy_batches_looped)
      << "a created stream takes the batch call";
}

TEST_F(BatchGpu, RawPointersWithOffsetsAndPerCopyOptions) {
  const Layout l = many_regions();
  cumem_buffer_t* src = make(device_mr, l.src_size);
  cumem_buffer_t* dst = make(pinned_mr, l.dst_size);
  const std::vector<uint8_t> data = random_bytes(l.src_size, 99);
  write(src, data);
  void* s = nullptr;
  void* d = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(src, &s));
  CUMEM_ASSERT_OK(cumem_buffer_ptr(dst, &d));
  const size_t n = l.sizes.size();
  std::vector<void*> dsts(n);
  std::vector<const void*> srcs(n);
  for (size_t i = 0; i < n; ++i) {
    dsts[i] = d;
    srcs[i] = s;
  }
  // Every second copy with other options: runs of options reach the driver.
  std::vector<cumem_copy_options_t> options(n, CUMEM_COPY_OPTIONS_INIT);
  for (size_t i = 1; i < n; i += 2) {
    options[i].src_access_order = CUMEM_COPY_SRC_ACCESS_ORDER_ANY;
    options[i].dst_location_hint = {CUMEM_LOCATION_HOST, 0};
    options[i].overlap_mode = CUMEM_COPY_OVERLAP_PREFER_COMPUTE;
  }
  CUMEM_ASSERT_OK(cumem_copy_batch_raw(stream, n, dsts.data(), l.dst_offsets.data(), srcs.data(),
                                       l.src_offsets.data(), l.sizes.data(), options.data(), n));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  const auto* got = static_cast<const uint8_t*>(d);
  for (size_t i = 0; i < n; ++i)
    EXPECT_EQ(std::memcmp(got + l.dst_offsets[i], data.data() + l.src_offsets[i], l.sizes[i]), 0)
        << "copy " << i;
}

// During-API-call: the source may be changed as soon as the call returns.
TEST_F(BatchGpu, ASourceReadDuringTheCallMayBeReusedAtOnce) {
  cumem_buffer_t* src = make(legacy_pinned_mr, 1 << 16);
  cumem_buffer_t* dst = make(device_mr, 1 << 16);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  void* s = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(src, &s));
  std::memset(s, 0x5C, 1 << 16);
  cumem_copy_options_t during = CUMEM_COPY_OPTIONS_INIT;
  during.src_access_order = CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL;
  cumem_buffer_t* dsts[] = {dst};
  const cumem_buffer_t* srcs[] = {src};
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 1, dsts, nullptr, srcs, nullptr, nullptr, &during, 1));
  std::memset(s, 0x00, 1 << 16);  // allowed now
  EXPECT_TRUE(read(dst, 1 << 16) == std::vector<uint8_t>(1 << 16, 0x5C));
}

// The legacy default stream, which the driver refuses for batch calls: the
// batch must still run after the work queued before it (a 256 MiB fill) and
// before the work queued after it.
TEST_F(BatchGpu, TheLegacyDefaultStreamKeepsItsOrder) {
  const size_t big = size_t{256} << 20;
  cumem_buffer_t* src = make(device_mr, big);
  cumem_buffer_t* dst = make(device_mr, 1 << 20);
  cumem_buffer_t* out = make(device_mr, 1 << 20);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_buffer_fill(src, 0x00, 1, nullptr));
  CUMEM_ASSERT_OK(cumem_buffer_fill(src, 0x3B, 1, nullptr));  // still running, probably
  cumem_buffer_t* dsts[] = {dst};
  const cumem_buffer_t* srcs[] = {src};
  const size_t src_offsets[] = {big - (1 << 20)};
  const size_t sizes[] = {1 << 20};
  CUMEM_ASSERT_OK(cumem_copy_batch(nullptr, 1, dsts, nullptr, srcs, src_offsets, sizes, nullptr, 0));
  // After it on the legacy stream: a copy that must see the batch's bytes.
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(dst, out, nullptr));
  cumem_stream_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_legacy_default(device, &legacy));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(legacy));
  cumem_stream_release(legacy);
  EXPECT_TRUE(read(out, 1 << 20) == std::vector<uint8_t>(1 << 20, 0x3B));
}

using GraphFn = int (*)(void*);
using InstantiateFn = int (*)(void**, void*, unsigned long long);
using LaunchFn = int (*)(void*, void*);

// On a capturing stream the driver's copies are captured one by one (memcpy
// nodes), and the graph, launched, copies the bytes. (CUMEM_COPY_OVERLAP_PREFER_COMPUTE
// keeps these small copies off libcumem's copy kernels, whose capture
// test_copy_kernel_gpu.cpp has.)
TEST_F(BatchGpu, ACapturingStreamCapturesTheCopies) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto instantiate = reinterpret_cast<InstantiateFn>(dlsym(lib, "cuGraphInstantiateWithFlags"));
  auto launch = reinterpret_cast<LaunchFn>(dlsym(lib, "cuGraphLaunch"));
  auto destroy_exec = reinterpret_cast<GraphFn>(dlsym(lib, "cuGraphExecDestroy"));
  auto destroy_graph = reinterpret_cast<GraphFn>(dlsym(lib, "cuGraphDestroy"));
  ASSERT_TRUE(instantiate && launch && destroy_exec && destroy_graph);
  cumem_buffer_t* a = make(device_mr, 4096);
  cumem_buffer_t* b = make(pinned_mr, 4096);
  cumem_buffer_t* c = make(device_mr, 4096);
  write(a, random_bytes(4096, 5));
  write(b, std::vector<uint8_t>(4096, 0));
  write(c, std::vector<uint8_t>(4096, 0));
  cumem_buffer_t* dsts[] = {b, c};
  const cumem_buffer_t* srcs[] = {a, a};
  cumem_copy_options_t engines = CUMEM_COPY_OPTIONS_INIT;
  engines.overlap_mode = CUMEM_COPY_OVERLAP_PREFER_COMPUTE;
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_THREAD_LOCAL));
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, &engines, 1));
  void* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture(stream, &graph));
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(batch_statistics().copy_batches_looped, before.copy_batches_looped + 1);
  EXPECT_TRUE(read(b, 4096) == std::vector<uint8_t>(4096, 0)) << "nothing ran yet";
  CUMEM_ASSERT_OK(cumem_device_set_current(device));
  void* exec = nullptr;
  ASSERT_EQ(instantiate(&exec, graph, 0), 0);
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
  ASSERT_EQ(launch(exec, native), 0);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  const std::vector<uint8_t> want = read(a, 4096);
  EXPECT_TRUE(read(b, 4096) == want);
  EXPECT_TRUE(read(c, 4096) == want);
  destroy_exec(exec);
  destroy_graph(graph);
}

TEST_F(BatchGpu, CopyToWithNoDestination) {
  cumem_buffer_t* a = make(device_mr, 100000);
  const std::vector<uint8_t> data = random_bytes(100000, 8);
  write(a, data);
  cumem_buffer_t* copy = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_copy_to_new(a, stream, &copy));
  buffers.push_back(copy);
  EXPECT_TRUE(read(copy, 100000) == data);
  cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
  CUMEM_ASSERT_OK(cumem_buffer_get_info(copy, &info));
  EXPECT_EQ(info.memory_kind, CUMEM_MEMORY_DEVICE);
}

// ---------------------------------------------------------------------------
// Managed memory
// ---------------------------------------------------------------------------

class ManagedBatchGpu : public BatchGpu {
 protected:
  void SetUp() override {
    BatchGpu::SetUp();
    if (IsSkipped()) return;
    cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
    CUMEM_ASSERT_OK(cumem_device_get_properties(device, &p));
    if (!p.managed_memory || !p.concurrent_managed_access)
      GTEST_SKIP() << "the device has no concurrent managed access";
    host_numa_id = p.host_numa_id;
    cumem_managed_resource_options_t o = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
    o.disable_pool = CUMEM_TRUE;  // cuMemAllocManaged: the range queries work on it
    CUMEM_ASSERT_OK(cumem_managed_resource_create(device, &o, &managed_mr));
    CUMEM_ASSERT_OK(cumem_managed_resource_create(device, nullptr, &managed_pool_mr));
  }
  void TearDown() override {
    for (cumem_buffer_t* b : buffers) cumem_buffer_release(b);
    buffers.clear();
    cumem_resource_release(managed_mr);
    cumem_resource_release(managed_pool_mr);
    BatchGpu::TearDown();
  }
  cumem_location_t last(cumem_buffer_t* b) {
    cumem_location_t l = {static_cast<cumem_location_type_t>(99), 99};
    EXPECT_EQ(cumem_buffer_get_last_prefetch_location(b, &l), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return l;
  }
  cumem_resource_t* managed_mr = nullptr;
  cumem_resource_t* managed_pool_mr = nullptr;
  int32_t host_numa_id = -1;
};

TEST_F(ManagedBatchGpu, PrefetchBatchMovesPagesAndIsRecorded) {
  std::vector<cumem_buffer_t*> m;
  for (int i = 0; i < 16; ++i) m.push_back(make(managed_mr, 64 << 10));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  EXPECT_EQ(last(m[0]).type, CUMEM_LOCATION_NONE) << "never prefetched";
  // Written on the host, prefetched to the device, filled there, prefetched back.
  for (cumem_buffer_t* b : m) {
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &p));
    std::memset(p, 0x01, 64 << 10);
  }
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  const cumem_location_t host = {CUMEM_LOCATION_HOST, 0};
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, m.size(), m.data(), &dev, 1));
  for (cumem_buffer_t* b : m) CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x6D, 1, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  for (cumem_buffer_t* b : m) {
    const cumem_location_t l = last(b);
    EXPECT_EQ(l.type, CUMEM_LOCATION_DEVICE);
    EXPECT_EQ(l.id, 0);
  }
  // Half to the host, half to the device, one location each.
  std::vector<cumem_location_t> where;
  for (size_t i = 0; i < m.size(); ++i) where.push_back(i % 2 ? host : dev);
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, m.size(), m.data(), where.data(), where.size()));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(last(m[i]).type, where[i].type) << i;
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_ptr(m[i], &p));
    const auto* bytes = static_cast<const uint8_t*>(p);
    size_t wrong = 0;
    for (size_t k = 0; k < (64u << 10); ++k) wrong += bytes[k] != 0x6D;
    EXPECT_EQ(wrong, 0u) << "buffer " << i;
  }
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_EQ(after.prefetch_batches, before.prefetch_batches + 2);
  if (driver_version() >= 13000) {
    EXPECT_EQ(after.prefetch_batches_looped, before.prefetch_batches_looped);
  }
}

TEST_F(ManagedBatchGpu, HostNumaNodeLocations) {
  if (host_numa_id < 0) GTEST_SKIP() << "the system reports no host NUMA node";
  cumem_buffer_t* b = make(managed_mr, 1 << 20);
  const cumem_location_t node = {CUMEM_LOCATION_HOST_NUMA, host_numa_id};
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 1, &b, &node, 1));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  const cumem_location_t l = last(b);
  if (driver_version() >= 13000) {
    EXPECT_EQ(l.type, CUMEM_LOCATION_HOST_NUMA);
    EXPECT_EQ(l.id, host_numa_id);
  } else {
    EXPECT_EQ(l.type, CUMEM_LOCATION_HOST);
  }
  // Advice: the preferred location may be a node or the thread's node.
  CUMEM_ASSERT_OK(cumem_buffer_advise(b, CUMEM_ADVICE_SET_PREFERRED_LOCATION, node));
  const cumem_location_t current = {CUMEM_LOCATION_HOST_NUMA_CURRENT, 0};
  CUMEM_ASSERT_OK(cumem_buffer_advise(b, CUMEM_ADVICE_SET_PREFERRED_LOCATION, current));
  CUMEM_ASSERT_OK(cumem_buffer_advise(b, CUMEM_ADVICE_UNSET_PREFERRED_LOCATION, {}));
  CUMEM_ASSERT_OK(cumem_buffer_prefetch(b, current, stream));
  // A pinned pool on that node.
  cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
  o.use_host_numa_id = CUMEM_TRUE;
  o.host_numa_id = host_numa_id;
  cumem_resource_t* pinned_node = nullptr;
  CUMEM_ASSERT_OK(cumem_pinned_resource_create(device, &o, &pinned_node));
  cumem_buffer_t* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(pinned_node, 4096, stream, &p));
  CUMEM_ASSERT_OK(cumem_buffer_fill(p, 0x12, 1, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_buffer_release(p);
  cumem_resource_release(pinned_node);
  o.host_numa_id = 4096;
  cumem_resource_t* nowhere = nullptr;
  CUMEM_EXPECT_ERROR(cumem_pinned_resource_create(device, &o, &nowhere),
                     CUMEM_ERROR_INVALID_ARGUMENT, "which this system does not have");
}

TEST_F(ManagedBatchGpu, DiscardBatchesAndTheLegacyDefaultStream) {
  cumem_buffer_t* m[2] = {make(managed_mr, 1 << 20), make(managed_mr, 1 << 20)};
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  if (driver_version() < 13000) {
    CUMEM_EXPECT_ERROR(cumem_discard_batch(stream, 2, m), CUMEM_ERROR_NOT_SUPPORTED, "13.0");
    GTEST_SKIP() << "discards need CUDA 13.0";
  }
  CUMEM_ASSERT_OK(cumem_discard_batch(stream, 2, m));
  CUMEM_ASSERT_OK(cumem_discard_prefetch_batch(stream, 2, m, &dev, 1));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  EXPECT_EQ(last(m[0]).type, CUMEM_LOCATION_DEVICE);
  // The legacy default stream, which the driver refuses for these calls.
  CUMEM_ASSERT_OK(cumem_buffer_discard(m[0], nullptr));
  const cumem_location_t host = {CUMEM_LOCATION_HOST, 0};
  CUMEM_ASSERT_OK(cumem_buffer_discard_prefetch(m[1], host, nullptr));
  CUMEM_ASSERT_OK(cumem_prefetch_batch(nullptr, 1, m, &host, 1));
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  EXPECT_EQ(last(m[1]).type, CUMEM_LOCATION_HOST);
  EXPECT_EQ(last(m[0]).type, CUMEM_LOCATION_HOST);
  // Written after the discard, the memory holds what was written.
  CUMEM_ASSERT_OK(cumem_buffer_fill(m[0], 0x44, 1, nullptr));
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(m[0], &p));
  EXPECT_EQ(static_cast<const uint8_t*>(p)[12345], 0x44);
}

// Memory of the managed pool: the range query works, or says what to do.
TEST_F(ManagedBatchGpu, LastPrefetchLocationOfManagedPoolMemory) {
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(managed_pool_mr, &p));
  if (!p.is_pool) GTEST_SKIP() << "this driver has no managed pool";
  cumem_buffer_t* b = make(managed_pool_mr, 1 << 20);
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 1, &b, &dev, 1));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_location_t l = {};
  const cumem_status_t s = cumem_buffer_get_last_prefetch_location(b, &l);
  if (s == CUMEM_SUCCESS) {
    EXPECT_EQ(l.type, CUMEM_LOCATION_DEVICE);
  } else {
    EXPECT_EQ(s, CUMEM_ERROR_NOT_SUPPORTED) << cumem_last_error_message();
    EXPECT_NE(std::string(cumem_last_error_message()).find("disable_pool"), std::string::npos);
  }
}

// ---------------------------------------------------------------------------
// The device's memory resource, the failure-callback adaptor
// ---------------------------------------------------------------------------

TEST_F(BatchGpu, TheDevicesMemoryResourceIsItsDefaultPool) {
  cumem_resource_t* mr = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get_memory_resource(device, &mr));
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(mr, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_DEVICE);
  EXPECT_EQ(p.is_pool, CUMEM_TRUE);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_device_allocate(device, 1 << 20, stream, &b));
  buffers.push_back(b);
  cumem_resource_t* owner = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_resource(b, &owner));
  EXPECT_EQ(owner, mr);
  // The framework entry points use the expandable cache over it by default
  // (kind:device: the resource itself).
  cumem_resource_t* framework = nullptr;
  CUMEM_ASSERT_OK(cumem_framework_get_resource(0, &framework));
  CUMEM_ASSERT_OK(cumem_resource_get_properties(framework, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_CACHING);
  void* large = cumem_torch_alloc(32 << 20, 0, nullptr);
  ASSERT_NE(large, nullptr) << cumem_last_error_message();
  cumem_caching_statistics_t cs = CUMEM_CACHING_STATISTICS_INIT;
  CUMEM_ASSERT_OK(cumem_caching_resource_get_statistics(framework, &cs));
  EXPECT_GE(cs.pages_mapped, 1u) << "a large block maps pages";
  cumem_torch_free(large, 32 << 20, 0, nullptr);
  CUMEM_ASSERT_OK(cumem_framework_configure("kind:device"));
  cumem_resource_t* device_kind = nullptr;
  CUMEM_ASSERT_OK(cumem_framework_get_resource(0, &device_kind));
  EXPECT_EQ(device_kind, mr);
  CUMEM_ASSERT_OK(cumem_framework_configure(""));
  for (cumem_resource_t* r : {owner, framework, device_kind, mr}) cumem_resource_release(r);
}

struct Retry {
  cumem_buffer_t* held = nullptr;
  void* stream = nullptr;
  int calls = 0;
};
cumem_failure_action_t free_and_retry(const cumem_failure_info_t* info, void* user_data) {
  auto* r = static_cast<Retry*>(user_data);
  ++r->calls;
  r->stream = info->stream;
  if (!r->held) return CUMEM_FAILURE_FAIL;
  cumem_buffer_release(r->held);
  r->held = nullptr;
  return CUMEM_FAILURE_RETRY;
}

TEST_F(BatchGpu, FailureCallbackOverAPoolWithAMaxSize) {
  cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
  o.new_pool = CUMEM_TRUE;
  o.max_size = 4 << 20;
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &o, &pool));
  Retry retry;
  cumem_failure_callback_t c = CUMEM_FAILURE_CALLBACK_INIT;
  c.callback = free_and_retry;
  c.user_data = &retry;
  cumem_resource_t* adaptor = nullptr;
  CUMEM_ASSERT_OK(cumem_failure_callback_resource_create(pool, &c, &adaptor));
  CUMEM_ASSERT_OK(cumem_resource_allocate(adaptor, 3 << 20, stream, &retry.held));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(adaptor, 2 << 20, stream, &b));
  EXPECT_EQ(retry.calls, 1);
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
  EXPECT_EQ(retry.stream, native);
  cumem_buffer_t* c2 = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate(adaptor, 3 << 20, stream, &c2),
                     CUMEM_ERROR_OUT_OF_MEMORY, "the failure callback gave up");
  EXPECT_EQ(retry.calls, 2);
  cumem_buffer_release(b);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_resource_release(adaptor);
  cumem_resource_release(pool);
}

}  // namespace
