// Two GPUs: peer access to pools and allocations, and the errors for
// objects of another device. Skips on machines with one GPU.
#include <string>
#include <vector>

#include "gpu_fixture.hpp"

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
