// The C++ facade's DLPack calls (cumem.hpp), on host memory.
#include <cumem/cumem.hpp>

#include "dlpack_test_util.hpp"
#include "facade_util.hpp"

namespace {

TEST(DlpackFacade, ExportImportRoundTrip) {
  HandTensor::deleted = 0;
  auto r = cumem::Resource::host();
  auto b = r.allocate(32);
  b.fill_bytes(5);
  auto o = cumem::dlpack_options();
  o.dtype_code = kDLUInt;
  o.dtype_bits = 16;
  o.dtype_lanes = 1;
  DLManagedTensorVersioned* t = b.to_dlpack(&o);
  EXPECT_EQ(t->dl_tensor.shape[0], 16);
  EXPECT_CUMEM_THROW(b.close(), CUMEM_ERROR_INVALID_STATE, "DLPack tensor");
  auto view = cumem::Buffer::from_dlpack(t);
  EXPECT_EQ(view.ptr(), b.ptr());
  EXPECT_EQ(view.size(), 32u);
  EXPECT_EQ(view.data<uint8_t>()[31], 5);
  view.reset();  // the export's deleter runs: b may close now
  b.close();

  auto c = r.allocate(8);
  DLManagedTensor* l = c.to_dlpack_legacy();
  auto lv = cumem::Buffer::from_dlpack_legacy(l);
  EXPECT_EQ(lv.size(), 8u);
  c.reset();
  EXPECT_EQ(r.statistics().live_allocations, 1u);
  lv.reset();
  EXPECT_EQ(r.statistics().live_allocations, 0u);

  // A refused import throws and leaves the tensor to the caller.
  uint8_t data[4] = {};
  HandTensor h(data, {4});
  h.versioned.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  EXPECT_CUMEM_THROW(cumem::Buffer::from_dlpack(&h.versioned), CUMEM_ERROR_NOT_SUPPORTED, "read-only");
  EXPECT_EQ(HandTensor::deleted.load(), 0);
  { auto ro = cumem::Buffer::from_dlpack(&h.versioned, true); }
  EXPECT_EQ(HandTensor::deleted.load(), 1);
  h.legacy.dl_tensor.ndim = -1;
  EXPECT_CUMEM_THROW(cumem::Buffer::from_dlpack_legacy(&h.legacy), CUMEM_ERROR_INVALID_ARGUMENT, "ndim -1");
  EXPECT_EQ(HandTensor::deleted.load(), 1);
}

TEST(DlpackFacade, NativeRawPairOnTheHostResource) {
  auto r = cumem::Resource::host();
  void* p = r.allocate_native(100);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(r.statistics().bytes_in_use, 100u);
  r.deallocate_native(p, 100);
  // CU_STREAM_LEGACY (0x1) is the legacy default stream, as NULL is.
  void* legacy = reinterpret_cast<void*>(uintptr_t{1});
  p = r.allocate_native(10, legacy);
  r.deallocate_native(p, 10, legacy);
  EXPECT_EQ(r.statistics().bytes_in_use, 0u);
  EXPECT_EQ(r.statistics().total_allocations, 2u);
  EXPECT_CUMEM_THROW(r.deallocate_native(nullptr, 10), CUMEM_ERROR_INVALID_ARGUMENT, "NULL pointer");
}

}  // namespace
