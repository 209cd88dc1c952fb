// The framework entry points' configuration (CUMEM_ALLOC_CONF,
// cumem_framework_configure) on the fake memory driver
// (fake_memory_cuda.cpp: one device without memory pools, whose default
// resource is cuMemAlloc's, with managed memory). The program runs once per
// environment, the filter picking the tests written for it:
//   FrameworkConfigure*      CUMEM_ALLOC_CONF=kind:caching,limit:1MiB
//   FrameworkConfigureBad*   CUMEM_ALLOC_CONF=kind:pool
//   FrameworkConfigureBoth*  CUMEM_ALLOC_CONF=kind:device, CUMEM_FRAMEWORK_RESOURCE=caching
#include <string>

#include "test_util.hpp"

namespace {

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

class FrameworkConfigure : public ::testing::Test {
 protected:
  void SetUp() override {
    CUMEM_ASSERT_OK(cumem_device_get(0, &device));
    CUMEM_ASSERT_OK(cumem_device_get_memory_resource(device, &memory));
  }
  void TearDown() override {
    EXPECT_EQ(cumem_framework_set_resource(0, nullptr), CUMEM_SUCCESS);
    cumem_resource_release(memory);
    cumem_device_release(device);
  }
  cumem_device_t* device = nullptr;
  cumem_resource_t* memory = nullptr;  // the device's memory resource
};

// The environment's configuration: a limit of 1 MiB over a caching adaptor
// over the device's memory resource. (The first test: the environment is
// read once, and later tests replace it.)
TEST_F(FrameworkConfigure, A_TheEnvironmentsConfiguration) {
  cumem_resource_t* r = framework_resource(0);
  EXPECT_EQ(kind_of(r), CUMEM_RESOURCE_LIMIT);
  cumem_resource_t* again = framework_resource(0);
  EXPECT_EQ(again, r) << "one default until something changes";
  const uint64_t before = statistics_of(memory).bytes_in_use;
  void* p = cumem_torch_alloc(1000, 0, nullptr);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  cumem_torch_free(p, 1000, 0, nullptr);
  EXPECT_GT(statistics_of(memory).bytes_in_use, before)
      << "the block stays cached above the device's memory resource";
  EXPECT_EQ(statistics_of(r).bytes_in_use, 0u);
  EXPECT_EQ(cumem_torch_alloc((1 << 20) + 1, 0, nullptr), nullptr) << "above the limit";
  EXPECT_NE(std::string(cumem_last_error_message()).find("limit"), std::string::npos)
      << cumem_last_error_message();
  cumem_resource_release(again);
  cumem_resource_release(r);
}

TEST_F(FrameworkConfigure, B_ConfigureReplacesItForTheNextChoice) {
  cumem_resource_t* old = framework_resource(0);
  void* p = cumem_torch_alloc(4096, 0, nullptr);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  EXPECT_EQ(statistics_of(old).bytes_in_use, 4096u);

  CUMEM_ASSERT_OK(cumem_framework_configure(""));  // the defaults, whatever the environment says
  cumem_resource_t* r = framework_resource(0);
  EXPECT_EQ(r, memory) << "the defaults: the device's memory resource itself";
  void* q = cumem_torch_alloc(2 << 20, 0, nullptr);
  EXPECT_NE(q, nullptr) << "no limit any more: " << cumem_last_error_message();
  // The allocation made before goes back to the resource that made it.
  cumem_torch_free(p, 4096, 0, nullptr);
  EXPECT_EQ(statistics_of(old).bytes_in_use, 0u);
  cumem_torch_free(q, 2 << 20, 0, nullptr);

  CUMEM_ASSERT_OK(cumem_framework_configure("kind:caching"));
  cumem_resource_t* caching = framework_resource(0);
  EXPECT_EQ(kind_of(caching), CUMEM_RESOURCE_CACHING);
  cumem_caching_statistics_t cs = CUMEM_CACHING_STATISTICS_INIT;
  CUMEM_ASSERT_OK(cumem_caching_resource_get_statistics(caching, &cs));

  CUMEM_ASSERT_OK(cumem_framework_configure("managed:true"));
  cumem_resource_t* managed = framework_resource(0);
  EXPECT_EQ(kind_of(managed), CUMEM_RESOURCE_MANAGED);
  void* m = cumem_torch_alloc(512, 0, nullptr);
  ASSERT_NE(m, nullptr) << cumem_last_error_message();
  EXPECT_EQ(statistics_of(managed).bytes_in_use, 512u);
  cumem_torch_free(m, 512, 0, nullptr);

  for (cumem_resource_t* x : {old, r, caching, managed}) cumem_resource_release(x);
}

TEST_F(FrameworkConfigure, C_SetResourceWinsAndAFailedConfigureChangesNothing) {
  CUMEM_ASSERT_OK(cumem_framework_configure("kind:caching"));
  cumem_resource_t* caching = framework_resource(0);
  cumem_resource_t* pinned = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &pinned));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, pinned));
  CUMEM_ASSERT_OK(cumem_framework_configure("limit:1KiB"));
  cumem_resource_t* set = framework_resource(0);
  EXPECT_EQ(set, pinned) << "a resource set for the device stays in use";
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  cumem_resource_t* limited = framework_resource(0);
  EXPECT_EQ(kind_of(limited), CUMEM_RESOURCE_LIMIT);

  CUMEM_EXPECT_ERROR(cumem_framework_configure("limit:1KiB,limit:2KiB"),
                     CUMEM_ERROR_INVALID_ARGUMENT, "the key 'limit' is given twice");
  cumem_resource_t* still = framework_resource(0);
  EXPECT_EQ(still, limited) << "a refused text changes nothing";
  for (cumem_resource_t* x : {caching, pinned, set, limited, still}) cumem_resource_release(x);
}

TEST_F(FrameworkConfigure, D_WhatTheDeviceCannotMakeFailsAtTheChoice) {
  // The fake device has no memory pools: a pool of the framework's own
  // cannot be made, and every choice says why until configured again.
  CUMEM_ASSERT_OK(cumem_framework_configure("release_threshold:1GiB"));
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_framework_get_resource(0, &r), CUMEM_ERROR_NOT_SUPPORTED,
                     "has no memory pools");
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(cumem_torch_alloc(64, 0, nullptr), nullptr);
  EXPECT_NE(std::string(cumem_last_error_message()).find("has no memory pools"), std::string::npos)
      << cumem_last_error_message();
  CUMEM_ASSERT_OK(cumem_framework_configure("kind:caching,expandable:true"));
  CUMEM_EXPECT_ERROR(cumem_framework_get_resource(0, &r), CUMEM_ERROR_NOT_SUPPORTED, "");
  CUMEM_ASSERT_OK(cumem_framework_configure(""));
  r = framework_resource(0);
  EXPECT_EQ(r, memory);
  cumem_resource_release(r);
}

TEST_F(FrameworkConfigure, E_FollowsTheDevicesMemoryResource) {
  CUMEM_ASSERT_OK(cumem_framework_configure("kind:caching"));
  cumem_resource_t* a = framework_resource(0);
  cumem_resource_t* pinned = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &pinned));
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, pinned));
  cumem_resource_t* b = framework_resource(0);
  EXPECT_NE(b, a) << "a new adaptor over the new memory resource";
  void* p = cumem_torch_alloc(1000, 0, nullptr);
  ASSERT_NE(p, nullptr) << cumem_last_error_message();
  EXPECT_GE(statistics_of(pinned).bytes_in_use, 1000u);
  cumem_torch_free(p, 1000, 0, nullptr);
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, nullptr));
  // Managed memory does not follow it: the same resource across changes.
  CUMEM_ASSERT_OK(cumem_framework_configure("managed:true"));
  cumem_resource_t* m1 = framework_resource(0);
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, pinned));
  cumem_resource_t* m2 = framework_resource(0);
  EXPECT_EQ(m1, m2);
  CUMEM_ASSERT_OK(cumem_device_set_memory_resource(device, nullptr));
  for (cumem_resource_t* x : {a, b, pinned, m1, m2}) cumem_resource_release(x);
}

TEST(FrameworkConfigureBad, ABadEnvironmentIsRefusedUntilConfigured) {
  cumem_resource_t* r = nullptr;
  for (int i = 0; i < 2; ++i)
    CUMEM_EXPECT_ERROR(cumem_framework_get_resource(0, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                       "CUMEM_ALLOC_CONF: kind:pool is not a kind (device or caching)");
  EXPECT_EQ(cumem_torch_alloc(64, 0, nullptr), nullptr);
  EXPECT_NE(std::string(cumem_last_error_message()).find("cumem_torch_alloc: CUMEM_ALLOC_CONF"),
            std::string::npos)
      << cumem_last_error_message();
  CUMEM_ASSERT_OK(cumem_framework_configure("kind:caching"));
  r = framework_resource(0);
  EXPECT_EQ(kind_of(r), CUMEM_RESOURCE_CACHING);
  cumem_resource_release(r);
}

TEST(FrameworkConfigureBoth, TheTwoVariablesMustAgree) {
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_framework_get_resource(0, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "CUMEM_FRAMEWORK_RESOURCE=caching and CUMEM_ALLOC_CONF=kind:device disagree");
  EXPECT_EQ(r, nullptr);
}

}  // namespace
