// The conformance suite (../conformance.hpp) over the expandable caching
// adaptor on the VMM fake driver, whose device memory is host memory: the
// upstream is a callback resource that says it is device memory of device 0
// (it serves the small blocks). Host suite. The stream-order tests need a
// real GPU (a kernel): the gpu suite runs them over
// caching_expandable_over_device_pool.
#include <cstdlib>

#include "../conformance.hpp"
#include "fake_vmm.hpp"

namespace {

int32_t device_allocate(size_t size, void*, void*, void** out) {
  *out = std::aligned_alloc(256, (size + 255) / 256 * 256);
  return *out ? 0 : 1;
}
void device_deallocate(void* ptr, size_t, void*, void*) { std::free(ptr); }

// Device memory "of device 0" that the fake's copies and fills can reach.
ResourceKind fake_device_kind() {
  ResourceKind k = gpu_kind("fake_device", CUMEM_RESOURCE_CALLBACK, CUMEM_MEMORY_DEVICE, false,
                            DeviceTie::device, FreeOrder::stream_ordered);
  k.make = [](cumem_device_t* device) {
    return make_with([&](cumem_resource_t** out) {
      cumem_resource_callbacks_t c = CUMEM_RESOURCE_CALLBACKS_INIT;
      c.memory_kind = CUMEM_MEMORY_DEVICE;
      c.allocate = device_allocate;
      c.deallocate = device_deallocate;
      c.stream_ordered = CUMEM_TRUE;
      return cumem_callback_resource_create(device, &c, out);
    });
  };
  return k;
}

const ResourceKind fake_kinds[] = {
    expandable_caching_kind("caching_expandable_over_fake_device", fake_device_kind()),
};

INSTANTIATE_TEST_SUITE_P(FakeVmm, ResourceConformance, ::testing::ValuesIn(fake_kinds), kind_name);

// A device of 4 GiB, so that each stream's range reserves 4.5 GiB of the
// fake's address arena rather than 90 GiB (the default 80 GiB device). The
// fake stays loaded (by this object) from here on, so that libcumem finds
// the setting when it loads the same library.
class SmallFakeDevice : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_EQ(fake_.missing(), "");
    fake_.set_memory(uint64_t{4} << 30);
  }

 private:
  FakeVmm fake_;
};
const auto* const small_fake_device = ::testing::AddGlobalTestEnvironment(new SmallFakeDevice);

}  // namespace

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ResourceStreamOrder);
