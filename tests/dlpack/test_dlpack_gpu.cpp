// DLPack export and import of device, pinned and managed memory: devices by
// kind, bytes seen through the imported buffer, kinds the driver disagrees
// with refused.
#include <cstring>
#include <vector>

#include "dlpack_test_util.hpp"
#include "gpu_fixture.hpp"

namespace {

struct Kind {
  const char* name;
  DLDeviceType device_type;
  cumem_memory_kind_t memory;
};

class DlpackGpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    HandTensor::deleted = 0;
    CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  }
  void TearDown() override {
    cumem_resource_release(host);
    GpuTest::TearDown();
  }
  // The resource for a kind, or nullptr (with a skip message) where the
  // device or driver lacks it.
  cumem_resource_t* make(const std::string& kind) {
    cumem_resource_t* r = nullptr;
    cumem_status_t s = CUMEM_SUCCESS;
    if (kind == "device") s = cumem_device_resource_create(device, nullptr, &r);
    if (kind == "pinned") s = cumem_pinned_resource_create(device, nullptr, &r);
    if (kind == "legacy_pinned") s = cumem_legacy_pinned_resource_create(device, &r);
    if (kind == "managed") s = cumem_managed_resource_create(device, nullptr, &r);
    if (s == CUMEM_ERROR_NOT_SUPPORTED) return nullptr;
    EXPECT_EQ(s, CUMEM_SUCCESS) << cumem_last_error_message();
    return r;
  }
  std::vector<uint8_t> read(cumem_buffer_t* b, size_t n) {
    std::vector<uint8_t> out(n);
    cumem_buffer_t* dst = nullptr;
    EXPECT_EQ(cumem_resource_allocate(host, n, nullptr, &dst), CUMEM_SUCCESS);
    EXPECT_EQ(cumem_buffer_copy_to(b, dst, nullptr), CUMEM_SUCCESS) << cumem_last_error_message();
    EXPECT_EQ(cumem_device_synchronize(device), CUMEM_SUCCESS);
    void* p = nullptr;
    EXPECT_EQ(cumem_buffer_ptr(dst, &p), CUMEM_SUCCESS);
    std::memcpy(out.data(), p, n);
    cumem_buffer_release(dst);
    return out;
  }
  cumem_resource_t* host = nullptr;
};

TEST_F(DlpackGpu, EveryKindExportsWithItsDeviceAndImportsBack) {
  const std::pair<const char*, Kind> kinds[] = {
      {"device", {"device", kDLCUDA, CUMEM_MEMORY_DEVICE}},
      {"pinned", {"pinned", kDLCUDAHost, CUMEM_MEMORY_PINNED}},
      {"legacy_pinned", {"legacy pinned", kDLCUDAHost, CUMEM_MEMORY_PINNED}},
      {"managed", {"managed", kDLCUDAManaged, CUMEM_MEMORY_MANAGED}},
  };
  for (const auto& [name, kind] : kinds) {
    SCOPED_TRACE(name);
    cumem_resource_t* r = make(name);
    if (!r) {
      std::printf("[  NOTE    ] %s memory not supported here: skipped\n", name);
      continue;
    }
    cumem_buffer_t* b = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, 4096, nullptr, &b));
    CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0xAB, 1, nullptr));
    DLManagedTensorVersioned* t = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(b, nullptr, &t));
    EXPECT_EQ(t->dl_tensor.device.device_type, kind.device_type);
    EXPECT_EQ(t->dl_tensor.device.device_id, 0);
    cumem_buffer_t* back = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_from_dlpack(t, CUMEM_FALSE, &back));
    cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
    CUMEM_ASSERT_OK(cumem_buffer_get_info(back, &info));
    EXPECT_EQ(info.memory_kind, kind.memory);
    EXPECT_EQ(info.size, 4096u);
    const std::vector<uint8_t> bytes = read(back, 4096);
    EXPECT_EQ(bytes[0], 0xAB);
    EXPECT_EQ(bytes[4095], 0xAB);
    CUMEM_ASSERT_OK(cumem_buffer_release(b));
    EXPECT_EQ(statistics_of(r).live_allocations, 1u);  // the tensor keeps it
    CUMEM_ASSERT_OK(cumem_buffer_release(back));      // runs the export's deleter
    CUMEM_ASSERT_OK(cumem_device_synchronize(device));
    EXPECT_EQ(statistics_of(r).live_allocations, 0u);
    cumem_resource_release(r);
  }
}

TEST_F(DlpackGpu, PresentationsAndMismatches) {
  cumem_resource_t* r = make("device");
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 256, nullptr, &b));
  cumem_dlpack_options_t o = CUMEM_DLPACK_OPTIONS_INIT;
  o.device_type = kDLCPU;
  DLManagedTensorVersioned* t = nullptr;
  CUMEM_EXPECT_ERROR(cumem_buffer_to_dlpack(b, &o, &t), CUMEM_ERROR_INVALID_ARGUMENT,
                     "cannot present device memory");
  // Device memory claimed as another device, or as pinned: refused.
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &p));
  HandTensor h(p, {256}, {kDLUInt, 8, 1}, {kDLCUDA, 1});
  cumem_buffer_t* v = nullptr;
  CUMEM_EXPECT_ERROR(cumem_buffer_from_dlpack(&h.versioned, CUMEM_FALSE, &v),
                     CUMEM_ERROR_INVALID_ARGUMENT, "places its memory on device 0");
  h.t().device = {kDLCUDAHost, 0};
  CUMEM_EXPECT_ERROR(cumem_buffer_from_dlpack(&h.versioned, CUMEM_FALSE, &v),
                     CUMEM_ERROR_INVALID_ARGUMENT, "knows its memory as device memory");
  h.t().device = {kDLCPU, 0};
  CUMEM_EXPECT_ERROR(cumem_buffer_from_dlpack(&h.versioned, CUMEM_FALSE, &v),
                     CUMEM_ERROR_INVALID_ARGUMENT, "the tensor says kDLCPU");
  h.t().device = {kDLCUDA, 0};
  h.t().byte_offset = 16;
  h.shape[0] = 240;
  CUMEM_ASSERT_OK(cumem_buffer_from_dlpack(&h.versioned, CUMEM_FALSE, &v));
  void* vp = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(v, &vp));
  EXPECT_EQ(vp, static_cast<char*>(p) + 16);
  cumem_buffer_release(v);
  EXPECT_EQ(HandTensor::deleted.load(), 1);
  cumem_buffer_release(b);
  cumem_resource_release(r);

  // Managed memory presented as kDLCUDA and as kDLCPU; pinned as kDLCPU
  // only (a consumer told kDLCUDA would copy it as device memory, which the
  // runtime refuses).
  for (const char* kind : {"managed", "pinned"}) {
    SCOPED_TRACE(kind);
    cumem_resource_t* m = make(kind);
    if (!m) continue;
    CUMEM_ASSERT_OK(cumem_resource_allocate(m, 64, nullptr, &b));
    const bool pinned = std::string(kind) == "pinned";
    if (pinned) {
      o.device_type = kDLCUDA;
      CUMEM_EXPECT_ERROR(cumem_buffer_to_dlpack(b, &o, &t), CUMEM_ERROR_INVALID_ARGUMENT,
                         "cannot present");
    }
    for (int32_t type : pinned ? std::vector<int32_t>{kDLCPU} : std::vector<int32_t>{kDLCUDA, kDLCPU}) {
      o.device_type = type;
      CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(b, &o, &t));
      EXPECT_EQ(t->dl_tensor.device.device_type, type);
      cumem_buffer_t* back = nullptr;
      CUMEM_ASSERT_OK(cumem_buffer_from_dlpack(t, CUMEM_FALSE, &back));
      cumem_buffer_release(back);
    }
    o.device_type = std::string(kind) == "managed" ? kDLCUDAHost : kDLCUDAManaged;
    CUMEM_EXPECT_ERROR(cumem_buffer_to_dlpack(b, &o, &t), CUMEM_ERROR_INVALID_ARGUMENT,
                       "cannot present");
    cumem_buffer_release(b);
    CUMEM_ASSERT_OK(cumem_device_synchronize(device));
    EXPECT_EQ(statistics_of(m).live_allocations, 0u);
    cumem_resource_release(m);
  }
}

}  // namespace
