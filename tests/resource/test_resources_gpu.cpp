// Every resource kind on a real GPU: properties, statistics, pools and their
// options, stream-ordered close, wrapping and registering memory.
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu_fixture.hpp"

namespace {

class ResourceTest : public GpuTest {
 protected:
  static cumem_resource_properties_t props(cumem_resource_t* r) {
    cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
    EXPECT_EQ(cumem_resource_get_properties(r, &p), CUMEM_SUCCESS) << cumem_last_error_message();
    return p;
  }
  static cumem_resource_statistics_t stats(cumem_resource_t* r) {
    cumem_resource_statistics_t s = CUMEM_RESOURCE_STATISTICS_INIT;
    EXPECT_EQ(cumem_resource_get_statistics(r, &s), CUMEM_SUCCESS) << cumem_last_error_message();
    return s;
  }
  static cumem_pool_attributes_t attributes(cumem_resource_t* r) {
    cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
    EXPECT_EQ(cumem_resource_pool_get_attributes(r, &a), CUMEM_SUCCESS) << cumem_last_error_message();
    return a;
  }
  static cumem_buffer_info_t info(cumem_buffer_t* b) {
    cumem_buffer_info_t i = CUMEM_BUFFER_INFO_INIT;
    EXPECT_EQ(cumem_buffer_get_info(b, &i), CUMEM_SUCCESS) << cumem_last_error_message();
    return i;
  }
  // Allocates, checks the buffer, frees, and checks the statistics balance.
  static void exercise(cumem_resource_t* r, cumem_memory_kind_t kind, bool host_accessible) {
    cumem_buffer_t* b = nullptr;
    const cumem_resource_statistics_t before = stats(r);
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, 1u << 20, nullptr, &b));
    const cumem_buffer_info_t i = info(b);
    EXPECT_NE(i.ptr, nullptr);
    EXPECT_EQ(i.size, 1u << 20);
    EXPECT_EQ(i.memory_kind, kind);
    EXPECT_EQ(i.device_accessible, CUMEM_TRUE);
    EXPECT_EQ(i.host_accessible, host_accessible ? CUMEM_TRUE : CUMEM_FALSE);
    const cumem_resource_statistics_t during = stats(r);
    EXPECT_EQ(during.bytes_in_use, before.bytes_in_use + (1u << 20));
    EXPECT_EQ(during.live_allocations, before.live_allocations + 1);
    EXPECT_EQ(during.total_allocations, before.total_allocations + 1);
    EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
    if (host_accessible) std::memset(i.ptr, 0x3C, 1u << 20);
    CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));
    cumem_buffer_release(b);
    const cumem_resource_statistics_t after = stats(r);
    EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
    EXPECT_EQ(after.live_allocations, before.live_allocations);
  }
};

TEST_F(ResourceTest, DefaultDevicePoolKeepsFreedMemory) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &r));
  const auto p = props(r);
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_DEVICE);
  EXPECT_EQ(p.device_accessible, CUMEM_TRUE);
  EXPECT_EQ(p.host_accessible, CUMEM_FALSE);
  EXPECT_EQ(p.device_id, 0);
  EXPECT_EQ(p.is_pool, CUMEM_TRUE);
  EXPECT_EQ(p.is_stream_ordered, CUMEM_TRUE);
  EXPECT_EQ(attributes(r).release_threshold, UINT64_MAX);
  void* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_pool_native(r, &pool));
  EXPECT_NE(pool, nullptr);
  exercise(r, CUMEM_MEMORY_DEVICE, false);
  cumem_bool_t access = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_resource_pool_get_access(r, device, &access));
  EXPECT_EQ(access, CUMEM_TRUE);
  CUMEM_EXPECT_ERROR(cumem_resource_pool_set_access(r, device, CUMEM_FALSE),
                     CUMEM_ERROR_INVALID_ARGUMENT, "its own");
  cumem_resource_release(r);
}

TEST_F(ResourceTest, DefaultPoolRejectsNewPoolOptions) {
  cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
  o.max_size = 1u << 20;
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_device_resource_create(device, &o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "set new_pool");
  EXPECT_EQ(r, nullptr);
}

// Zero means default: a zero-filled struct with struct_size set is the
// default pool keeping everything; release_all_unused is the driver's 0.
TEST_F(ResourceTest, PoolOptionsZeroMeansDefault) {
  cumem_pool_options_t o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &o, &r));
  EXPECT_EQ(attributes(r).release_threshold, UINT64_MAX);
  cumem_resource_release(r);

  o.release_all_unused = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &o, &r));
  EXPECT_EQ(attributes(r).release_threshold, 0u);
  cumem_resource_release(r);

  o.release_all_unused = CUMEM_FALSE;
  o.release_threshold = 1u << 20;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &o, &r));
  EXPECT_EQ(attributes(r).release_threshold, 1u << 20);
  cumem_resource_release(r);
  // The default pool's threshold back to the default, for the other tests.
  o.release_threshold = 0;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &o, &r));
  cumem_resource_release(r);
}

TEST_F(ResourceTest, NewPoolWithMaxSizeRunsOutCleanly) {
  cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
  o.new_pool = CUMEM_TRUE;
  o.max_size = 64u << 20;
  o.release_all_unused = CUMEM_TRUE;
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &o, &r));
  cumem_buffer_t* a = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 32u << 20, nullptr, &a));
  cumem_buffer_t* b = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate(r, 128u << 20, nullptr, &b), CUMEM_ERROR_OUT_OF_MEMORY,
                     "134217728 bytes");
  const std::string message = cumem_last_error_message();
  EXPECT_NE(message.find("pool of device 0"), std::string::npos) << message;
  EXPECT_NE(message.find("33554432 bytes (32.00 MiB) in use"), std::string::npos) << message;
  EXPECT_NE(message.find("reserves"), std::string::npos) << message;
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(stats(r).live_allocations, 1u);
  CUMEM_ASSERT_OK(cumem_buffer_close(a, nullptr));
  cumem_buffer_release(a);
  cumem_resource_release(r);
}

TEST_F(ResourceTest, OutOfMemoryOnTheDefaultPool) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &r));
  cumem_buffer_t* b = nullptr;
  const size_t huge = size_t{1} << 50;  // 1 PiB
  CUMEM_EXPECT_ERROR(cumem_resource_allocate(r, huge, nullptr, &b), CUMEM_ERROR_OUT_OF_MEMORY,
                     std::to_string(huge) + " bytes");
  EXPECT_NE(std::string(cumem_last_error_message()).find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(stats(r).live_allocations, 0u);
  cumem_resource_release(r);
}

TEST_F(ResourceTest, StreamOrderedCloseIsReusedOnTheSameStream) {
  cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
  o.new_pool = CUMEM_TRUE;
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &o, &r));
  cumem_stream_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &s));
  cumem_buffer_t* first = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 4u << 20, s, &first));
  void* p1 = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(first, &p1));
  CUMEM_ASSERT_OK(cumem_buffer_fill(first, 0xAA, 1, s));
  CUMEM_ASSERT_OK(cumem_buffer_close(first, s));  // free ordered on s
  cumem_buffer_t* second = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 4u << 20, s, &second));
  void* p2 = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(second, &p2));
  EXPECT_EQ(p1, p2) << "the pool reuses memory freed earlier on the same stream";
  // Closing without a stream uses the deallocation stream (the allocation's).
  CUMEM_ASSERT_OK(cumem_buffer_close(second, nullptr));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(s));
  cumem_buffer_release(first);
  cumem_buffer_release(second);
  EXPECT_EQ(stats(r).live_allocations, 0u);
  cumem_stream_release(s);
  cumem_resource_release(r);
}

TEST_F(ResourceTest, PoolAttributesResetTrimAndSet) {
  cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
  o.new_pool = CUMEM_TRUE;
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &o, &r));
  void* raw = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 32u << 20, nullptr, &raw));
  auto a = attributes(r);
  EXPECT_GE(a.used_mem_current, 32u << 20);
  EXPECT_GE(a.reserved_mem_current, a.used_mem_current);
  EXPECT_GE(a.used_mem_high, a.used_mem_current);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(r, raw, 32u << 20, nullptr));
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  a = attributes(r);
  EXPECT_EQ(a.used_mem_current, 0u);
  EXPECT_GE(a.reserved_mem_current, 32u << 20) << "the default release threshold (0: keep everything) keeps memory";
  CUMEM_ASSERT_OK(cumem_resource_pool_reset_highs(r));
  a = attributes(r);
  EXPECT_EQ(a.used_mem_high, 0u);
  CUMEM_ASSERT_OK(cumem_resource_pool_trim(r, 0));
  a = attributes(r);
  EXPECT_EQ(a.reserved_mem_current, 0u);

  cumem_pool_attributes_t set = attributes(r);
  set.reuse_allow_opportunistic = CUMEM_FALSE;
  set.release_threshold = 1u << 20;
  CUMEM_ASSERT_OK(cumem_resource_pool_set_attributes(r, &set));
  a = attributes(r);
  EXPECT_EQ(a.reuse_allow_opportunistic, CUMEM_FALSE);
  EXPECT_EQ(a.release_threshold, 1u << 20);
  set.reuse_allow_opportunistic = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_resource_pool_set_attributes(r, &set));
  EXPECT_EQ(attributes(r).reuse_allow_opportunistic, CUMEM_TRUE);
  cumem_resource_release(r);
}

TEST_F(ResourceTest, IpcEnabledPool) {
  cumem_device_properties_t dp = CUMEM_DEVICE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_device_get_properties(device, &dp));
  cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
  o.new_pool = CUMEM_TRUE;
  o.ipc_enabled = CUMEM_TRUE;
  cumem_resource_t* r = nullptr;
  if (!(dp.ipc_handle_types & CUMEM_IPC_HANDLE_POSIX_FD)) {
    CUMEM_EXPECT_ERROR(cumem_device_resource_create(device, &o, &r), CUMEM_ERROR_NOT_SUPPORTED, "IPC");
    return;
  }
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &o, &r));
  EXPECT_EQ(props(r).ipc_enabled, CUMEM_TRUE);
  exercise(r, CUMEM_MEMORY_DEVICE, false);
  cumem_resource_release(r);
}

TEST_F(ResourceTest, PinnedPool) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_pinned_resource_create(device, nullptr, &r));
  const auto p = props(r);
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_PINNED);
  EXPECT_EQ(p.host_accessible, CUMEM_TRUE);
  EXPECT_EQ(p.device_accessible, CUMEM_TRUE);
  EXPECT_EQ(p.device_id, -1);
  EXPECT_EQ(p.is_pool, CUMEM_TRUE);
  exercise(r, CUMEM_MEMORY_PINNED, true);
  cumem_bool_t access = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_resource_pool_get_access(r, device, &access));
  EXPECT_EQ(access, CUMEM_TRUE) << "the device is granted access at creation";
  cumem_resource_release(r);

  cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
  o.new_pool = CUMEM_TRUE;
  o.max_size = 16u << 20;
  CUMEM_ASSERT_OK(cumem_pinned_resource_create(device, &o, &r));
  exercise(r, CUMEM_MEMORY_PINNED, true);
  cumem_buffer_t* b = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate(r, 64u << 20, nullptr, &b), CUMEM_ERROR_OUT_OF_MEMORY,
                     "pinned pool");
  cumem_resource_release(r);
}

TEST_F(ResourceTest, LegacyPinned) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &r));
  const auto p = props(r);
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_LEGACY_PINNED);
  EXPECT_EQ(p.is_pool, CUMEM_FALSE);
  EXPECT_EQ(p.is_stream_ordered, CUMEM_FALSE);
  exercise(r, CUMEM_MEMORY_PINNED, true);
  // Freeing on a stream waits for that stream's work first.
  cumem_stream_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &s));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 8u << 20, s, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x5A, 1, s));
  CUMEM_ASSERT_OK(cumem_buffer_close(b, s));
  cumem_buffer_release(b);
  cumem_stream_release(s);
  cumem_resource_release(r);
}

TEST_F(ResourceTest, Managed) {
  cumem_managed_resource_options_t o = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
  o.preferred_location.type = CUMEM_LOCATION_DEVICE;
  o.preferred_location.id = 0;
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_managed_resource_create(device, &o, &r));
  const auto p = props(r);
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_MANAGED);
  EXPECT_EQ(p.host_accessible, CUMEM_TRUE);
  EXPECT_EQ(p.device_id, 0);
  printf("managed resource from a pool: %s\n", p.is_pool ? "yes" : "no (cuMemAllocManaged)");
  exercise(r, CUMEM_MEMORY_MANAGED, true);
  cumem_resource_release(r);
  o.disable_pool = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_managed_resource_create(device, &o, &r));
  EXPECT_EQ(props(r).is_pool, CUMEM_FALSE);
  exercise(r, CUMEM_MEMORY_MANAGED, true);
  cumem_resource_release(r);
}

TEST_F(ResourceTest, SyncFreeResourcesWaitForTheirStream) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &r));
  cumem_stream_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &s));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 4096, s, &b));
  CUMEM_ASSERT_OK(cumem_buffer_close(b, s));
  cumem_buffer_release(b);
  cumem_stream_release(s);
  cumem_resource_release(r);
}

void release_raw(void* ptr, size_t size, void* user_data) {
  auto* r = static_cast<cumem_resource_t*>(user_data);
  EXPECT_EQ(cumem_resource_deallocate_raw(r, ptr, size, nullptr), CUMEM_SUCCESS);
}

TEST_F(ResourceTest, WrapForeignDeviceMemory) {
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &r));
  void* raw = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 1u << 20, nullptr, &raw));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_wrap(raw, 1u << 20, release_raw, r, &b));
  const auto i = info(b);
  EXPECT_EQ(i.memory_kind, CUMEM_MEMORY_DEVICE) << "derived from the driver's pointer attributes";
  EXPECT_EQ(i.device_id, 0);
  EXPECT_EQ(i.device_accessible, CUMEM_TRUE);
  EXPECT_EQ(i.host_accessible, CUMEM_FALSE);
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 7, 4, nullptr));
  CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));
  EXPECT_EQ(stats(r).live_allocations, 0u) << "the release callback freed it";
  cumem_buffer_release(b);

  // Owned: freed through the resource, counted from adoption on.
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 1u << 20, nullptr, &raw));
  CUMEM_ASSERT_OK(cumem_buffer_wrap_owned(r, raw, 1u << 20, &b));
  EXPECT_EQ(stats(r).live_allocations, 1u);
  EXPECT_EQ(info(b).memory_kind, CUMEM_MEMORY_DEVICE);
  cumem_buffer_release(b);
  EXPECT_EQ(stats(r).live_allocations, 0u);
  cumem_resource_release(r);
}

TEST_F(ResourceTest, RegisterHostMemory) {
  const size_t size = 4u << 20;
  void* host = std::aligned_alloc(4096, size);
  ASSERT_NE(host, nullptr);
  std::memset(host, 0x11, size);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_register_host(device, host, size, &b));
  const auto i = info(b);
  EXPECT_EQ(i.memory_kind, CUMEM_MEMORY_PINNED);
  EXPECT_EQ(i.device_accessible, CUMEM_TRUE);
  EXPECT_EQ(i.owns_memory, CUMEM_FALSE);
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x22, 1, nullptr));
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  EXPECT_EQ(static_cast<unsigned char*>(host)[size - 1], 0x22);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));
  cumem_buffer_release(b);
  // Unregistered on close: registering again works.
  CUMEM_ASSERT_OK(cumem_buffer_register_host(device, host, size, &b));
  cumem_buffer_release(b);
  CUMEM_EXPECT_ERROR(cumem_buffer_register_host(device, host, 0, &b), CUMEM_ERROR_INVALID_ARGUMENT,
                     "size 0");
  std::free(host);
}

}  // namespace
