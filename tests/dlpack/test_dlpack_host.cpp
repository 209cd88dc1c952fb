// DLPack export and import on host memory (no GPU): layouts, devices,
// deleters called exactly once, every bad dtype/shape/stride, closed buffers.
#include <cstring>
#include <thread>

#include "dlpack_test_util.hpp"

namespace {

class DlpackHost : public ::testing::Test {
 protected:
  void SetUp() override {
    HandTensor::deleted = 0;
    CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &resource));
    CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 64, nullptr, &buffer));
    CUMEM_ASSERT_OK(cumem_buffer_ptr(buffer, &ptr));
    for (int i = 0; i < 64; ++i) static_cast<uint8_t*>(ptr)[i] = static_cast<uint8_t>(i);
  }
  void TearDown() override {
    cumem_buffer_release(buffer);
    cumem_resource_release(resource);
  }
  // Exports with options and expects `status` with `fragment` in the message.
  void expect_export_error(const cumem_dlpack_options_t& o, cumem_status_t status,
                           const char* fragment) {
    DLManagedTensorVersioned* t = nullptr;
    CUMEM_EXPECT_ERROR(cumem_buffer_to_dlpack(buffer, &o, &t), status, fragment);
    EXPECT_EQ(t, nullptr);
  }
  void expect_import_error(HandTensor& h, cumem_status_t status, const char* fragment,
                           cumem_bool_t allow_read_only = CUMEM_FALSE) {
    cumem_buffer_t* b = nullptr;
    CUMEM_EXPECT_ERROR(cumem_buffer_from_dlpack(&h.versioned, allow_read_only, &b), status,
                       fragment);
    EXPECT_EQ(b, nullptr);
    EXPECT_EQ(HandTensor::deleted.load(), 0) << "a failed import must not call the deleter";
  }

  cumem_resource_t* resource = nullptr;
  cumem_buffer_t* buffer = nullptr;
  void* ptr = nullptr;
};

TEST_F(DlpackHost, DefaultExportIsOneDimensionalBytesOnTheCpu) {
  DLManagedTensorVersioned* t = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(buffer, nullptr, &t));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->version.major, 1u);
  EXPECT_EQ(t->version.minor, 1u);
  EXPECT_EQ(t->flags, 0u);
  const DLTensor& d = t->dl_tensor;
  EXPECT_EQ(d.data, ptr);
  EXPECT_EQ(d.byte_offset, 0u);
  EXPECT_EQ(d.device.device_type, kDLCPU);
  EXPECT_EQ(d.device.device_id, 0);
  ASSERT_EQ(d.ndim, 1);
  EXPECT_EQ(d.shape[0], 64);
  ASSERT_NE(d.strides, nullptr);
  EXPECT_EQ(d.strides[0], 1);
  EXPECT_EQ(d.dtype.code, kDLUInt);
  EXPECT_EQ(d.dtype.bits, 8);
  EXPECT_EQ(d.dtype.lanes, 1);
  EXPECT_EQ(static_cast<uint8_t*>(d.data)[63], 63);
  t->deleter(t);
}

TEST_F(DlpackHost, TensorKeepsTheBufferAliveUntilItsDeleterRuns) {
  DLManagedTensorVersioned* t = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(buffer, nullptr, &t));
  CUMEM_ASSERT_OK(cumem_buffer_release(buffer));
  buffer = nullptr;
  EXPECT_EQ(statistics_of(resource).live_allocations, 1u);  // still alive
  EXPECT_EQ(static_cast<uint8_t*>(t->dl_tensor.data)[10], 10);
  // The deleter may run on any thread.
  std::thread([t] { t->deleter(t); }).join();
  EXPECT_EQ(statistics_of(resource).live_allocations, 0u);
  EXPECT_EQ(statistics_of(resource).bytes_in_use, 0u);
}

TEST_F(DlpackHost, LegacyExportHasTheSameLayout) {
  cumem_dlpack_options_t o = CUMEM_DLPACK_OPTIONS_INIT;
  o.dtype_code = kDLFloat;
  o.dtype_bits = 32;
  o.dtype_lanes = 1;
  DLManagedTensor* t = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack_legacy(buffer, &o, &t));
  EXPECT_EQ(t->dl_tensor.shape[0], 16);
  EXPECT_EQ(t->dl_tensor.dtype.code, kDLFloat);
  EXPECT_EQ(t->dl_tensor.data, ptr);
  CUMEM_ASSERT_OK(cumem_buffer_release(buffer));
  buffer = nullptr;
  EXPECT_EQ(statistics_of(resource).live_allocations, 1u);
  t->deleter(t);
  EXPECT_EQ(statistics_of(resource).live_allocations, 0u);
  o.read_only = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 64, nullptr, &buffer));
  CUMEM_EXPECT_ERROR(cumem_buffer_to_dlpack_legacy(buffer, &o, &t), CUMEM_ERROR_INVALID_ARGUMENT,
                     "read_only");
}

TEST_F(DlpackHost, ShapeStridesAndOffset) {
  const int64_t shape[] = {2, 3};
  cumem_dlpack_options_t o = CUMEM_DLPACK_OPTIONS_INIT;
  o.dtype_code = kDLFloat;
  o.dtype_bits = 32;
  o.dtype_lanes = 1;
  o.ndim = 2;
  o.shape = shape;
  o.byte_offset = 8;
  o.read_only = CUMEM_TRUE;
  DLManagedTensorVersioned* t = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(buffer, &o, &t));
  EXPECT_EQ(t->dl_tensor.data, static_cast<char*>(ptr) + 8);
  EXPECT_EQ(t->flags, DLPACK_FLAG_BITMASK_READ_ONLY);
  ASSERT_EQ(t->dl_tensor.ndim, 2);
  EXPECT_EQ(t->dl_tensor.shape[0], 2);
  EXPECT_EQ(t->dl_tensor.shape[1], 3);
  EXPECT_EQ(t->dl_tensor.strides[0], 3);
  EXPECT_EQ(t->dl_tensor.strides[1], 1);
  t->deleter(t);

  // A reversed view: negative stride from the last element.
  const int64_t four[] = {4};
  const int64_t back[] = {-1};
  o = CUMEM_DLPACK_OPTIONS_INIT;
  o.ndim = 1;
  o.shape = four;
  o.strides = back;
  o.byte_offset = 63;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(buffer, &o, &t));
  EXPECT_EQ(*static_cast<uint8_t*>(t->dl_tensor.data), 63);
  EXPECT_EQ(t->dl_tensor.strides[0], -1);
  t->deleter(t);

  // A scalar, and a tensor with no elements (any strides).
  o = CUMEM_DLPACK_OPTIONS_INIT;
  o.shape = four;  // not read: ndim 0
  o.ndim = 0;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(buffer, &o, &t));
  EXPECT_EQ(t->dl_tensor.ndim, 0);
  t->deleter(t);
  const int64_t empty[] = {0, 1000};
  const int64_t wild[] = {1000000, -7};
  o.ndim = 2;
  o.shape = empty;
  o.strides = wild;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(buffer, &o, &t));
  t->deleter(t);
}

TEST_F(DlpackHost, ZeroFilledOptionsMeanBytes) {
  cumem_dlpack_options_t o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  DLManagedTensorVersioned* t = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(buffer, &o, &t));
  EXPECT_EQ(t->dl_tensor.shape[0], 64);
  EXPECT_EQ(t->dl_tensor.dtype.bits, 8);
  t->deleter(t);
  o.struct_size = 7;  // ends inside dtype_lanes (bytes 6..7)
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "dtype_lanes");
}

TEST_F(DlpackHost, BadDtypesShapesAndStridesAreRefused) {
  const cumem_dlpack_options_t base = CUMEM_DLPACK_OPTIONS_INIT;
  cumem_dlpack_options_t o = base;
  o.dtype_code = kDLFloat;  // bits left 0
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "dtype_bits is 0");
  o = base;
  o.dtype_code = kDLInt;
  o.dtype_bits = 4;
  o.dtype_lanes = 1;
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "not whole bytes");
  o.dtype_bits = 8;
  o.dtype_lanes = 0;
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "lanes 0");
  o = base;
  o.dtype_code = 99;
  o.dtype_bits = 8;
  o.dtype_lanes = 1;
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "dtype code 99");
  o = base;
  o.dtype_code = kDLFloat;
  o.dtype_bits = 64;
  o.dtype_lanes = 1;
  o.byte_offset = 4;  // 60 bytes left: not whole 8-byte elements
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "whole number");
  o = base;
  o.ndim = 2;  // shape NULL
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "shape is NULL");
  const int64_t shape[] = {4, 4};
  o.shape = shape;
  o.ndim = -1;
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "ndim -1");
  o.ndim = CUMEM_DLPACK_MAX_NDIM + 1;
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "ndim 65");
  const int64_t negative[] = {4, -4};
  o.ndim = 2;
  o.shape = negative;
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "negative size");
  const int64_t big[] = {9, 8};  // 72 bytes > 64
  o.shape = big;
  expect_export_error(o, CUMEM_ERROR_OUT_OF_RANGE, "reaches bytes 0..71");
  o.shape = shape;
  const int64_t too_far[] = {5, 1};  // last element at 3*5+3 = 18 < 64: fine
  o.strides = too_far;
  DLManagedTensorVersioned* t = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(buffer, &o, &t));
  t->deleter(t);
  const int64_t past[] = {20, 1};  // 3*20+3 = 63: fits; with byte_offset 1 it does not
  o.strides = past;
  o.byte_offset = 1;
  expect_export_error(o, CUMEM_ERROR_OUT_OF_RANGE, "reaches bytes 1..64");
  const int64_t before[] = {-1, 1};
  o.strides = before;
  o.byte_offset = 2;  // reaches 3 elements before the first: byte -1
  expect_export_error(o, CUMEM_ERROR_OUT_OF_RANGE, "reaches bytes -1");
  o.byte_offset = 65;
  expect_export_error(o, CUMEM_ERROR_OUT_OF_RANGE, "past the buffer");
  // Overflowing counts and reaches.
  const int64_t huge[] = {INT64_MAX, INT64_MAX};
  o = base;
  o.ndim = 2;
  o.shape = huge;
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "overflows");
  const int64_t huge_strides[] = {INT64_MAX, INT64_MIN};
  o.strides = huge_strides;
  expect_export_error(o, CUMEM_ERROR_OUT_OF_RANGE, "2^64");
  o = base;
  o.device_type = kDLCUDA;
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "cannot present pageable host memory");
  o.device_type = 42;
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "device_type 42");
  o = base;
  o.reserved0 = 1;
  expect_export_error(o, CUMEM_ERROR_INVALID_ARGUMENT, "reserved0");
  EXPECT_EQ(statistics_of(resource).live_allocations, 1u);
}

TEST_F(DlpackHost, ClosedBuffersAreNotExportedAndExportedOnesNotClosed) {
  DLManagedTensorVersioned* t = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(buffer, nullptr, &t));
  CUMEM_EXPECT_ERROR(cumem_buffer_close(buffer, nullptr), CUMEM_ERROR_INVALID_STATE,
                     "1 DLPack tensor views");
  t->deleter(t);
  // A tensor of a slice holds its parent open too.
  cumem_buffer_t* slice = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(buffer, 8, 8, &slice));
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(slice, nullptr, &t));
  EXPECT_EQ(t->dl_tensor.data, static_cast<char*>(ptr) + 8);
  EXPECT_EQ(t->dl_tensor.shape[0], 8);
  CUMEM_EXPECT_ERROR(cumem_buffer_close(buffer, nullptr), CUMEM_ERROR_INVALID_STATE, "DLPack");
  t->deleter(t);
  cumem_buffer_release(slice);
  CUMEM_ASSERT_OK(cumem_buffer_close(buffer, nullptr));
  CUMEM_EXPECT_ERROR(cumem_buffer_to_dlpack(buffer, nullptr, &t), CUMEM_ERROR_BUFFER_CLOSED,
                     "closed");
  DLManagedTensor* l = nullptr;
  CUMEM_EXPECT_ERROR(cumem_buffer_to_dlpack_legacy(buffer, nullptr, &l), CUMEM_ERROR_BUFFER_CLOSED,
                     "closed");
  CUMEM_EXPECT_ERROR(cumem_buffer_to_dlpack(nullptr, nullptr, &t), CUMEM_ERROR_INVALID_ARGUMENT,
                     "buffer");
  CUMEM_EXPECT_ERROR(cumem_buffer_to_dlpack(buffer, nullptr, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "out_tensor");
}

TEST_F(DlpackHost, ImportViewsTheTensorAndCallsItsDeleterOnce) {
  uint8_t data[32];
  for (int i = 0; i < 32; ++i) data[i] = static_cast<uint8_t>(100 + i);
  HandTensor h(data, {2, 3}, {kDLFloat, 32, 1});
  h.t().byte_offset = 4;  // 24 bytes from data + 4
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_from_dlpack(&h.versioned, CUMEM_FALSE, &b));
  cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
  CUMEM_ASSERT_OK(cumem_buffer_get_info(b, &info));
  EXPECT_EQ(info.ptr, data + 4);
  EXPECT_EQ(info.size, 24u);
  EXPECT_EQ(info.memory_kind, CUMEM_MEMORY_HOST);
  EXPECT_EQ(info.owns_memory, CUMEM_TRUE);
  cumem_resource_t* none = reinterpret_cast<cumem_resource_t*>(1);
  CUMEM_ASSERT_OK(cumem_buffer_resource(b, &none));
  EXPECT_EQ(none, nullptr);
  // Copy into a libcumem buffer and read back.
  cumem_buffer_t* copy = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 24, nullptr, &copy));
  CUMEM_ASSERT_OK(cumem_buffer_copy_from(copy, b, nullptr));
  void* cp = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(copy, &cp));
  EXPECT_EQ(std::memcmp(cp, data + 4, 24), 0);
  cumem_buffer_release(copy);
  cumem_buffer_t* extra = b;
  CUMEM_ASSERT_OK(cumem_buffer_retain(extra));
  CUMEM_ASSERT_OK(cumem_buffer_release(b));
  EXPECT_EQ(HandTensor::deleted.load(), 0);
  CUMEM_ASSERT_OK(cumem_buffer_close(extra, nullptr));
  EXPECT_EQ(HandTensor::deleted.load(), 1);
  CUMEM_ASSERT_OK(cumem_buffer_release(extra));
  EXPECT_EQ(HandTensor::deleted.load(), 1);

  // Legacy form; released without a close.
  HandTensor l(data, {32});
  CUMEM_ASSERT_OK(cumem_buffer_from_dlpack_legacy(&l.legacy, &b));
  CUMEM_ASSERT_OK(cumem_buffer_release(b));
  EXPECT_EQ(HandTensor::deleted.load(), 2);
}

TEST_F(DlpackHost, ImportAcceptsCompactStridesAndSizeOneDimensions) {
  uint8_t data[24] = {};
  HandTensor h(data, {2, 1, 3}, {kDLInt, 32, 1});
  h.set_strides({3, 99, 1});  // the size-1 dimension's stride does not matter
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_from_dlpack(&h.versioned, CUMEM_FALSE, &b));
  size_t size = 0;
  CUMEM_ASSERT_OK(cumem_buffer_size(b, &size));
  EXPECT_EQ(size, 24u);
  cumem_buffer_release(b);
  // No elements: any strides, size 0.
  HandTensor e(data, {4, 0}, {kDLInt, 32, 1});
  e.set_strides({-5, 77});
  CUMEM_ASSERT_OK(cumem_buffer_from_dlpack(&e.versioned, CUMEM_FALSE, &b));
  CUMEM_ASSERT_OK(cumem_buffer_size(b, &size));
  EXPECT_EQ(size, 0u);
  cumem_buffer_release(b);
  // Sub-byte: int4 x 3 packed is 2 bytes; padded, 3.
  HandTensor s(data, {3}, {kDLInt, 4, 1});
  CUMEM_ASSERT_OK(cumem_buffer_from_dlpack(&s.versioned, CUMEM_FALSE, &b));
  CUMEM_ASSERT_OK(cumem_buffer_size(b, &size));
  EXPECT_EQ(size, 2u);
  cumem_buffer_release(b);
  s.versioned.flags = DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
  CUMEM_ASSERT_OK(cumem_buffer_from_dlpack(&s.versioned, CUMEM_FALSE, &b));
  CUMEM_ASSERT_OK(cumem_buffer_size(b, &size));
  EXPECT_EQ(size, 3u);
  cumem_buffer_release(b);
  EXPECT_EQ(HandTensor::deleted.load(), 4);
}

TEST_F(DlpackHost, BadTensorsAreRefusedAndStayTheCallers) {
  uint8_t data[64] = {};
  {
    HandTensor h(data, {4, 4});
    h.set_strides({1, 4});  // column-major
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "not contiguous: dimension 1");
  }
  {
    HandTensor h(data, {4, 4});
    h.set_strides({8, 1});  // padded rows
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "has stride 8");
  }
  {
    HandTensor h(data, {4});
    h.versioned.version = {2, 0};
    expect_import_error(h, CUMEM_ERROR_NOT_SUPPORTED, "DLPack version 2.0");
    h.versioned.version = {0, 9};
    expect_import_error(h, CUMEM_ERROR_NOT_SUPPORTED, "major version 1");
  }
  {
    HandTensor h(data, {4});
    h.versioned.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    expect_import_error(h, CUMEM_ERROR_NOT_SUPPORTED, "read-only");
    cumem_buffer_t* b = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_from_dlpack(&h.versioned, CUMEM_TRUE, &b));
    cumem_buffer_release(b);
    EXPECT_EQ(HandTensor::deleted.exchange(0), 1);
  }
  {
    HandTensor h(data, {4, -1});
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "dimension 1 has a negative size -1");
  }
  {
    HandTensor h(data, {INT64_MAX, 4});
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "overflows");
    // Sizes whose product wraps to exactly 0 mod 2^64 (found by the fuzzer).
    h.shape = {int64_t{0xbc000000}, int64_t{0xd20000000000}};
    h.t().shape = h.shape.data();
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "overflows");
    h.shape = {INT64_MAX / 2};
    h.t().shape = h.shape.data();
    h.t().ndim = 1;
    h.t().dtype = {kDLFloat, 64, 1};  // the bits overflow
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "overflows");
  }
  {
    HandTensor h(data, {4});
    h.t().ndim = 65;
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "ndim 65");
    h.t().ndim = -3;
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "ndim -3");
    h.t().ndim = 1;
    h.t().shape = nullptr;
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "shape is NULL");
  }
  {
    HandTensor h(data, {4}, {kDLFloat, 0, 1});
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "bits 0");
    h.t().dtype = {200, 8, 1};
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "dtype code 200");
  }
  {
    HandTensor h(nullptr, {4});
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "data is NULL");
    h.t().data = reinterpret_cast<void*>(UINTPTR_MAX - 2);
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "wraps past the end");
    h.t().data = data;
    h.t().byte_offset = UINT64_MAX - 2;
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "overflows");
  }
  {
    HandTensor h(data, {4}, {kDLUInt, 8, 1}, {kDLOpenCL, 0});
    expect_import_error(h, CUMEM_ERROR_NOT_SUPPORTED, "device type 4");
    h.t().device = {kDLCUDA, -1};
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "negative device id");
    // Issue 17, item 8: host tensors too (kDLCPU says device 0).
    h.t().device = {kDLCPU, -1};
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "negative device id");
    h.t().device = {kDLCUDAHost, -7};
    expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "negative device id");
    // Host memory claimed as CUDA memory.
    h.t().device = {kDLCUDA, 0};
    int32_t version = 0;
    if (cumem_driver_version(&version) != CUMEM_SUCCESS)
      expect_import_error(h, CUMEM_ERROR_NO_DRIVER, "");
    else
      expect_import_error(h, CUMEM_ERROR_INVALID_ARGUMENT, "the tensor says kDLCUDA");
  }
  cumem_buffer_t* b = nullptr;
  CUMEM_EXPECT_ERROR(cumem_buffer_from_dlpack(nullptr, CUMEM_FALSE, &b),
                     CUMEM_ERROR_INVALID_ARGUMENT, "tensor");
  CUMEM_EXPECT_ERROR(cumem_buffer_from_dlpack_legacy(nullptr, &b), CUMEM_ERROR_INVALID_ARGUMENT,
                     "tensor");
  HandTensor h(data, {4});
  CUMEM_EXPECT_ERROR(cumem_buffer_from_dlpack(&h.versioned, CUMEM_FALSE, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "out_buffer");
  EXPECT_EQ(HandTensor::deleted.load(), 0);
}

TEST_F(DlpackHost, RoundTripThroughDlpack) {
  DLManagedTensorVersioned* t = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack(buffer, nullptr, &t));
  CUMEM_ASSERT_OK(cumem_buffer_release(buffer));
  buffer = nullptr;
  cumem_buffer_t* back = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_from_dlpack(t, CUMEM_FALSE, &back));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(back, &p));
  EXPECT_EQ(p, ptr);
  CUMEM_ASSERT_OK(cumem_buffer_fill(back, 7, 1, nullptr));
  EXPECT_EQ(static_cast<uint8_t*>(ptr)[40], 7);
  EXPECT_EQ(statistics_of(resource).live_allocations, 1u);
  CUMEM_ASSERT_OK(cumem_buffer_release(back));  // calls the export's deleter
  EXPECT_EQ(statistics_of(resource).live_allocations, 0u);
  // Legacy both ways.
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 16, nullptr, &buffer));
  DLManagedTensor* l = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_to_dlpack_legacy(buffer, nullptr, &l));
  CUMEM_ASSERT_OK(cumem_buffer_from_dlpack_legacy(l, &back));
  CUMEM_ASSERT_OK(cumem_buffer_release(buffer));
  buffer = nullptr;
  EXPECT_EQ(statistics_of(resource).live_allocations, 1u);
  CUMEM_ASSERT_OK(cumem_buffer_close(back, nullptr));
  EXPECT_EQ(statistics_of(resource).live_allocations, 0u);
  cumem_buffer_release(back);
}

}  // namespace
