// Two GPUs: peer access to pools and allocations, peer access through
// cumem_resource_set_peer_access on every kind that has it (used by a kernel
// on the peer), and the errors for objects of another device. Skips on
// machines with one GPU.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_fixture.hpp"
#include "peer_kernel_ptx.hpp"

namespace {

class PeerTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    if (device_count < 2) GTEST_SKIP() << "peer tests need two GPUs; this machine has one";
    CUMEM_ASSERT_OK(cumem_device_get(1, &other));
  }
  void TearDown() override {
    cumem_device_release(other);
    GpuTest::TearDown();
  }
  cumem_device_t* other = nullptr;
};

TEST_F(PeerTest, PoolAccessGrantQueryRevoke) {
  cumem_bool_t can = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_device_can_access_peer(other, device, &can));
  if (!can) GTEST_SKIP() << "device 1 cannot access device 0's memory on this machine";
  cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
  o.new_pool = CUMEM_TRUE;
  cumem_resource_t* pool0 = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &o, &pool0));
  cumem_bool_t access = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_resource_pool_get_access(pool0, other, &access));
  EXPECT_EQ(access, CUMEM_FALSE);
  CUMEM_ASSERT_OK(cumem_resource_pool_set_access(pool0, other, CUMEM_TRUE));
  CUMEM_ASSERT_OK(cumem_resource_pool_get_access(pool0, other, &access));
  EXPECT_EQ(access, CUMEM_TRUE);

  // Device 1 copies from device 0's pool memory on its own stream.
  cumem_resource_t* res1 = nullptr;
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(other, nullptr, &res1));
  CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &host));
  cumem_stream_t* s1 = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(other, nullptr, &s1));
  cumem_buffer_t* on0 = nullptr;
  cumem_buffer_t* on1 = nullptr;
  cumem_buffer_t* check = nullptr;
  const size_t size = 8u << 20;
  CUMEM_ASSERT_OK(cumem_resource_allocate(pool0, size, nullptr, &on0));
  CUMEM_ASSERT_OK(cumem_resource_allocate(res1, size, s1, &on1));
  CUMEM_ASSERT_OK(cumem_resource_allocate(host, size, nullptr, &check));
  CUMEM_ASSERT_OK(cumem_buffer_fill(on0, 0xC0FFEE00u, 4, nullptr));
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(on0, on1, s1));
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(on1, check, s1));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(s1));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(check, &p));
  size_t wrong = 0;
  for (size_t i = 0; i < size / 4; ++i) wrong += static_cast<uint32_t*>(p)[i] != 0xC0FFEE00u;
  EXPECT_EQ(wrong, 0u);

  // Memory of device 0 cannot be filled on device 1's stream.
  CUMEM_EXPECT_ERROR(cumem_buffer_fill(on0, 0, 1, s1), CUMEM_ERROR_WRONG_DEVICE, "device 0");

  cumem_buffer_release(on0);
  cumem_buffer_release(on1);
  cumem_buffer_release(check);
  CUMEM_ASSERT_OK(cumem_resource_pool_set_access(pool0, other, CUMEM_FALSE));
  CUMEM_ASSERT_OK(cumem_resource_pool_get_access(pool0, other, &access));
  EXPECT_EQ(access, CUMEM_FALSE);
  cumem_stream_release(s1);
  cumem_resource_release(host);
  cumem_resource_release(res1);
  cumem_resource_release(pool0);
}

// read_words(const unsigned* src, unsigned* dst, unsigned long long n):
using peer_test::kReadWordsPtx;

// Device 0's memory from every kind whose access can be set, granted to
// device 1 with cumem_resource_set_peer_access and read there by a kernel:
// a block allocated before the grant and one after (the expandable cache
// maps pages for it then: they get the access too), then revoked.
TEST_F(PeerTest, EveryKindGrantsAPeerAccessThatItsKernelsUse) {
  cumem_bool_t can = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_device_can_access_peer(other, device, &can));
  if (!can) GTEST_SKIP() << "device 1 cannot access device 0's memory on this machine";
  cumem_library_t* library = nullptr;
  CUMEM_ASSERT_OK(cumem_library_load_data(other, kReadWordsPtx, sizeof kReadWordsPtx, &library));
  cumem_kernel_t* kernel = nullptr;
  const cumem_status_t got = cumem_library_get_kernel(library, "read_words", &kernel);
  cumem_library_release(library);
  CUMEM_ASSERT_OK(got);
  cumem_stream_t* s1 = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(other, nullptr, &s1));
  cumem_resource_t* on1 = nullptr;
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(other, nullptr, &on1));
  CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &host));

  cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
  po.new_pool = CUMEM_TRUE;
  cumem_resource_t* pool = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &po, &pool));
  cumem_resource_t* pool_for_cache = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, &po, &pool_for_cache));
  cumem_resource_t* virt = nullptr;
  CUMEM_ASSERT_OK(cumem_virtual_resource_create(device, nullptr, &virt));
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool_for_cache, &cache));
  cumem_resource_t* device_memory = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &device_memory));
  cumem_caching_resource_options_t eo = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  eo.expandable = CUMEM_TRUE;
  cumem_resource_t* expandable = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create_with_options(device_memory, &eo, &expandable));
  struct Kind {
    const char* name;
    cumem_resource_t* resource;
  };
  const Kind kinds[] = {{"a new pool", pool},
                        {"the virtual-memory resource", virt},
                        {"the caching adaptor over a pool", cache},
                        {"the expandable cache", expandable}};
  uint32_t pattern = 0xA5000000u;
  for (const Kind& k : kinds) {
    SCOPED_TRACE(k.name);
    cumem_bool_t access = CUMEM_TRUE;
    CUMEM_ASSERT_OK(cumem_resource_get_peer_access(k.resource, other, &access));
    EXPECT_EQ(access, CUMEM_FALSE) << "no access before the grant";
    CUMEM_ASSERT_OK(cumem_resource_get_peer_access(k.resource, device, &access));
    EXPECT_EQ(access, CUMEM_TRUE) << "its own device";
    cumem_buffer_t* before = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(k.resource, 4u << 20, nullptr, &before));
    CUMEM_ASSERT_OK(cumem_resource_set_peer_access(k.resource, other, CUMEM_TRUE));
    CUMEM_ASSERT_OK(cumem_resource_get_peer_access(k.resource, other, &access));
    EXPECT_EQ(access, CUMEM_TRUE);
    cumem_buffer_t* after = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(k.resource, 24u << 20, nullptr, &after));
    for (cumem_buffer_t* src : {before, after}) {
      size_t size = 0;
      CUMEM_ASSERT_OK(cumem_buffer_size(src, &size));
      ++pattern;
      CUMEM_ASSERT_OK(cumem_buffer_fill(src, pattern, 4, nullptr));
      CUMEM_ASSERT_OK(cumem_device_synchronize(device));
      cumem_buffer_t* dst = nullptr;
      cumem_buffer_t* check = nullptr;
      CUMEM_ASSERT_OK(cumem_resource_allocate(on1, size, s1, &dst));
      CUMEM_ASSERT_OK(cumem_resource_allocate(host, size, nullptr, &check));
      CUMEM_ASSERT_OK(cumem_buffer_fill(dst, 0, 1, s1));
      void* src_ptr = nullptr;
      void* dst_ptr = nullptr;
      CUMEM_ASSERT_OK(cumem_buffer_ptr(src, &src_ptr));
      CUMEM_ASSERT_OK(cumem_buffer_ptr(dst, &dst_ptr));
      unsigned long long n = size / 4;
      void* args[] = {&src_ptr, &dst_ptr, &n};
      cumem_launch_config_t config = CUMEM_LAUNCH_CONFIG_INIT;
      config.grid[0] = 264;
      config.block[0] = 256;
      CUMEM_ASSERT_OK(cumem_launch(kernel, s1, &config, args, 3));
      CUMEM_ASSERT_OK(cumem_buffer_copy_to(dst, check, s1));
      CUMEM_ASSERT_OK(cumem_stream_synchronize(s1));
      void* p = nullptr;
      CUMEM_ASSERT_OK(cumem_buffer_ptr(check, &p));
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) wrong += static_cast<uint32_t*>(p)[i] != pattern;
      EXPECT_EQ(wrong, 0u) << (src == before ? "allocated before the grant" : "after it");
      cumem_buffer_release(dst);
      cumem_buffer_release(check);
    }
    cumem_buffer_release(before);
    cumem_buffer_release(after);
    CUMEM_ASSERT_OK(cumem_device_synchronize(device));
    CUMEM_ASSERT_OK(cumem_resource_set_peer_access(k.resource, other, CUMEM_FALSE));
    CUMEM_ASSERT_OK(cumem_resource_get_peer_access(k.resource, other, &access));
    EXPECT_EQ(access, CUMEM_FALSE) << "revoked";
  }
  for (cumem_resource_t* r : {expandable, device_memory, cache, virt, pool_for_cache, pool, host, on1})
    cumem_resource_release(r);
  cumem_stream_release(s1);
  cumem_kernel_release(kernel);
}

TEST_F(PeerTest, EnablePeerAccessIsIdempotent) {
  cumem_bool_t can = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_device_can_access_peer(device, other, &can));
  if (!can) {
    CUMEM_EXPECT_ERROR(cumem_device_enable_peer_access(device, other), CUMEM_ERROR_NOT_SUPPORTED,
                       "no peer path");
    return;
  }
  CUMEM_ASSERT_OK(cumem_device_enable_peer_access(device, other));
  CUMEM_ASSERT_OK(cumem_device_enable_peer_access(device, other));
}

TEST_F(PeerTest, ObjectsOfAnotherDeviceAreRefused) {
  cumem_stream_t* s1 = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(other, nullptr, &s1));
  cumem_event_t* e0 = nullptr;
  CUMEM_ASSERT_OK(cumem_event_create(device, nullptr, &e0));
  CUMEM_EXPECT_ERROR(cumem_event_record(e0, s1), CUMEM_ERROR_WRONG_DEVICE, "device 1");
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(s1, &native));
  cumem_stream_t* wrapped = nullptr;
  CUMEM_EXPECT_ERROR(cumem_stream_wrap(device, native, &wrapped), CUMEM_ERROR_WRONG_DEVICE,
                     "not to device 0");
  EXPECT_EQ(wrapped, nullptr);
  cumem_event_release(e0);
  cumem_stream_release(s1);
}

}  // namespace
