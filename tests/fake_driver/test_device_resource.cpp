// The device's memory resource and the framework entry points' choice of
// resource, on the fake memory driver (fake_memory_cuda.cpp: one device
// without memory pools, so its default resource is cuMemAlloc's):
//   DeviceResource*, Framework*  no CUMEM_FRAMEWORK_RESOURCE;
//   FrameworkCaching*            CUMEM_FRAMEWORK_RESOURCE=caching;
//   FrameworkBogus*              CUMEM_FRAMEWORK_RESOURCE=bogus.
#include <string>

#include "test_util.hpp"

namespace {

cumem_resource_t* memory_resource(cumem_device_t* device) {
  cumem_resource_t* r = nullptr;
  EXPECT_EQ(cumem_device_get_memory_resource(device, &r), CUMEM_SUCCESS)
      << cumem_last_error_message();
  return r;
}

cumem_resource_t* framework_resource(int32_t device) {
  cumem_resource_t* r = nullptr;
  EXPECT_EQ(cumem_framework_get_resource(device, &r), CUMEM_SUCCESS) << cumem_last_error_message();
  return r;
}

cumem_resource_kind_t kind_of(cumem_resource_t* r) {
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  EXPECT_EQ(cumem_resource_get_properties(r, &p), CUMEM_SUCCESS);
  return p.kind;
}

class DeviceResource : public ::testing::Test {
 protected:
  void SetUp() override {
    CUMEM_ASSERT_OK(cumem_device_get(0, &device));
    CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
    CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &pinned));
  }
  void TearDown() override {
    // Back to the defaults for the next test.
    EXPECT_EQ(cumem_device_set_memory_resource(device, nullptr), CUMEM_SUCCESS);
    EXPECT_EQ(cumem_framework_set_resource(0, nullptr), CUMEM_SUCCESS);
    cumem_resource_release(pinned);
    cumem_resource_release(host);
    cumem_device_release(device);
  }
  cumem_device_t* device = nullptr;
  cumem_resource_t* host = nullptr;
  cumem_resource_t* pinned = nullptr;
};

TEST_F(DeviceResource, TheDefaultIsOneDeviceResourceForTheProcess) {
  cumem_resource_t* a = memory_resource(device);
  cumem_resource_t* b = memory_resource(device);
  EXPECT_EQ(a, b) << "the same object every time";
  EXPECT_EQ(kind_of(a), CUMEM_RESOURCE_DEVICE);
  // Allocating through the device uses it.
  cumem_buffer_t* buffer = nullptr;
  const uint64_t before = statistics_of(a).bytes_in_use;
  CUMEM_ASSERT_OK(cumem_device_allocate(device, 1000, nullptr, &buffer));
  EXPECT_EQ(statistics_of(a).bytes_in_use, before + 1000);
  cumem_resource_t* owner = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_resource(buffer, &owner));
  EXPECT_EQ(owner, a);
  cumem_resource_release(owner);
  cumem_buffer_release(buffer);
  cumem_resource_release(b);
  cumem_resource_release(a);
}

TEST_F(DeviceResource, SetAndBackToTheSameDefault) {
  cumem_resource_t* original = memory_resource(device);
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, pinned));
  cumem_resource_t* now = memory_resource(device);
  EXPECT_EQ(now, pinned);
  cumem_buffer_t* buffer = nullptr;
  CUMEM_ASSERT_OK(cumem_device_allocate(device, 64, nullptr, &buffer));
  EXPECT_EQ(statistics_of(pinned).bytes_in_use, 64u);
  // Buffers stay with the resource that made them.
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, nullptr));
  cumem_resource_t* again = memory_resource(device);
  EXPECT_EQ(again, original) << "NULL goes back to the same default object";
  cumem_buffer_release(buffer);
  EXPECT_EQ(statistics_of(pinned).bytes_in_use, 0u);
  cumem_resource_release(again);
  cumem_resource_release(now);
  cumem_resource_release(original);
}

TEST_F(DeviceResource, MemoryTheDeviceCannotAccessIsRefused) {
  cumem_resource_t* original = memory_resource(device);
  CUMEM_EXPECT_ERROR(cumem_device_set_memory_resource(device, host), CUMEM_ERROR_INVALID_ARGUMENT,
                     "the device's memory resource must serve device-accessible memory");
  EXPECT_NE(std::string(cumem_last_error_message()).find("device_accessible is false"),
            std::string::npos);
  cumem_resource_t* still = memory_resource(device);
  EXPECT_EQ(still, original) << "nothing changed";
  // An adaptor over device memory is device memory.
  cumem_resource_t* limit = nullptr;
  CUMEM_ASSERT_OK(cumem_limit_resource_create(original, 1 << 20, &limit));
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, limit));
  cumem_resource_release(limit);
  CUMEM_EXPECT_ERROR(cumem_device_set_memory_resource(nullptr, pinned), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'device'");
  cumem_resource_release(still);
  cumem_resource_release(original);
}

// cumem_framework_set_resource(d, NULL) means the default: on a device that
// cannot map virtual memory (this fake), the device's memory resource itself:
// the same object each time (issue 17, item 9).
TEST_F(DeviceResource, FrameworkDefaultIsTheDevicesMemoryResource) {
  cumem_resource_t* mr = memory_resource(device);
  cumem_resource_t* f1 = framework_resource(0);
  EXPECT_EQ(f1, mr);
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, pinned));
  cumem_resource_t* f2 = framework_resource(0);
  EXPECT_EQ(f2, pinned);
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  cumem_resource_t* f3 = framework_resource(0);
  cumem_resource_t* f4 = framework_resource(0);
  EXPECT_EQ(f3, mr) << "NULL gives the same default as before";
  EXPECT_EQ(f4, mr);
  // The default follows the device's memory resource.
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, pinned));
  cumem_resource_t* f5 = framework_resource(0);
  EXPECT_EQ(f5, pinned);
  void* p = cumem_torch_alloc(256, 0, nullptr);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  EXPECT_EQ(statistics_of(pinned).bytes_in_use, 256u);
  // The allocation's free goes to the resource that made it, whatever is
  // chosen now.
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, nullptr));
  cumem_torch_free(p, 256, 0, nullptr);
  EXPECT_EQ(statistics_of(pinned).bytes_in_use, 0u);
  cumem_resource_t* f6 = framework_resource(0);
  EXPECT_EQ(f6, mr);
  for (cumem_resource_t* r : {mr, f1, f2, f3, f4, f5, f6}) cumem_resource_release(r);
}

// What the frameworks refuse, as the header lists it.
TEST_F(DeviceResource, FrameworkRefusesMemoryTheDeviceCannotAccess) {
  CUMEM_EXPECT_ERROR(cumem_framework_set_resource(0, host), CUMEM_ERROR_INVALID_ARGUMENT,
                     "a framework resource must serve device-accessible memory");
  cumem_resource_t* callbacks_host = nullptr;
  cumem_resource_callbacks_t c = CUMEM_RESOURCE_CALLBACKS_INIT;
  c.allocate = [](size_t, void*, void*, void** out) -> int32_t {
    *out = nullptr;
    return 1;
  };
  c.deallocate = [](void*, size_t, void*, void*) {};
  CUMEM_ASSERT_OK(cumem_callback_resource_create(nullptr, &c, &callbacks_host));
  CUMEM_EXPECT_ERROR(cumem_framework_set_resource(0, callbacks_host), CUMEM_ERROR_INVALID_ARGUMENT,
                     "device_accessible is false");
  // The same callbacks saying their host memory is device-accessible.
  cumem_resource_t* callbacks_mapped = nullptr;
  c.device_accessible = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_callback_resource_create(nullptr, &c, &callbacks_mapped));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, callbacks_mapped));
  CUMEM_EXPECT_ERROR(cumem_framework_set_resource(1, pinned), CUMEM_ERROR_NO_DEVICE, "device 1");
  CUMEM_EXPECT_ERROR(cumem_framework_set_resource(-1, pinned), CUMEM_ERROR_NO_DEVICE, "device -1");
  cumem_resource_release(callbacks_mapped);
  cumem_resource_release(callbacks_host);
}

// CUMEM_FRAMEWORK_RESOURCE=caching: a caching adaptor over the device's
// memory resource, the same one each time until that resource changes.
TEST(FrameworkCaching, OneCachingAdaptorOverTheDevicesMemoryResource) {
  cumem_device_t* device = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(0, &device));
  cumem_resource_t* a = framework_resource(0);
  cumem_resource_t* b = framework_resource(0);
  EXPECT_EQ(a, b);
  EXPECT_EQ(kind_of(a), CUMEM_RESOURCE_CACHING);
  cumem_resource_t* pinned = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &pinned));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, pinned));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  cumem_resource_t* c = framework_resource(0);
  EXPECT_EQ(c, a) << "NULL gives the same default as before";
  // A new device memory resource: a new adaptor over it.
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, pinned));
  cumem_resource_t* d = framework_resource(0);
  EXPECT_NE(d, a);
  EXPECT_EQ(kind_of(d), CUMEM_RESOURCE_CACHING);
  void* p = cumem_torch_alloc(1000, 0, nullptr);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  EXPECT_GE(statistics_of(pinned).bytes_in_use, 1000u) << "the adaptor is over the pinned resource";
  cumem_torch_free(p, 1000, 0, nullptr);
  cumem_resource_t* e = framework_resource(0);
  EXPECT_EQ(e, d);
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, nullptr));
  for (cumem_resource_t* r : {a, b, c, d, e, pinned}) cumem_resource_release(r);
  cumem_device_release(device);
}

TEST(FrameworkBogus, AnUnknownKindIsRefusedOnEveryChoice) {
  cumem_resource_t* r = nullptr;
  for (int i = 0; i < 2; ++i)
    CUMEM_EXPECT_ERROR(cumem_framework_get_resource(0, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                       "CUMEM_FRAMEWORK_RESOURCE is 'bogus'");
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(cumem_torch_alloc(64, 0, nullptr), nullptr);
  EXPECT_NE(std::string(cumem_last_error_message()).find("bogus"), std::string::npos);
  // An explicit resource still works.
  cumem_device_t* device = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(0, &device));
  cumem_resource_t* pinned = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &pinned));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, pinned));
  void* p = cumem_torch_alloc(64, 0, nullptr);
  EXPECT_NE(p, nullptr) << cumem_last_error_message();
  cumem_torch_free(p, 64, 0, nullptr);
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  cumem_resource_release(pinned);
  cumem_device_release(device);
}

}  // namespace
