// Every buffer semantic on the host resource: no driver or GPU needed.
#include <cstdint>
#include <cstring>
#include <vector>

#include "test_util.hpp"

namespace {

class HostBufferTest : public ::testing::Test {
 protected:
  void SetUp() override { CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &resource)); }
  void TearDown() override { cumem_resource_release(resource); }

  cumem_buffer_t* allocate(size_t size) {
    cumem_buffer_t* b = nullptr;
    EXPECT_EQ(cumem_resource_allocate(resource, size, nullptr, &b), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return b;
  }
  static uint8_t* bytes(cumem_buffer_t* b) {
    void* p = nullptr;
    EXPECT_EQ(cumem_buffer_ptr(b, &p), CUMEM_SUCCESS);
    return static_cast<uint8_t*>(p);
  }
  cumem_resource_statistics_t stats() {
    cumem_resource_statistics_t s = CUMEM_RESOURCE_STATISTICS_INIT;
    EXPECT_EQ(cumem_resource_get_statistics(resource, &s), CUMEM_SUCCESS);
    return s;
  }

  cumem_resource_t* resource = nullptr;
};

TEST_F(HostBufferTest, PropertiesOfTheHostResource) {
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(resource, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_HOST);
  EXPECT_EQ(p.host_accessible, CUMEM_TRUE);
  EXPECT_EQ(p.device_accessible, CUMEM_FALSE);
  EXPECT_EQ(p.device_id, -1);
  EXPECT_EQ(p.is_pool, CUMEM_FALSE);
  cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
  CUMEM_EXPECT_ERROR(cumem_resource_pool_get_attributes(resource, &a), CUMEM_ERROR_NOT_SUPPORTED,
                     "not one");
  CUMEM_EXPECT_ERROR(cumem_resource_pool_trim(resource, 0), CUMEM_ERROR_NOT_SUPPORTED, "pool");
  void* pool = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_pool_native(resource, &pool), CUMEM_ERROR_NOT_SUPPORTED, "pool");
}

TEST_F(HostBufferTest, AllocationIsAlignedAndWritable) {
  cumem_host_resource_options_t o = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  o.alignment = 4096;
  cumem_resource_t* aligned = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(&o, &aligned));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(aligned, 100, nullptr, &b));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &p));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  std::memset(p, 0x5A, 100);
  cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
  CUMEM_ASSERT_OK(cumem_buffer_get_info(b, &info));
  EXPECT_EQ(info.ptr, p);
  EXPECT_EQ(info.size, 100u);
  EXPECT_EQ(info.memory_kind, CUMEM_MEMORY_HOST);
  EXPECT_EQ(info.host_accessible, CUMEM_TRUE);
  EXPECT_EQ(info.device_accessible, CUMEM_FALSE);
  EXPECT_EQ(info.device_id, -1);
  EXPECT_EQ(info.owns_memory, CUMEM_TRUE);
  EXPECT_EQ(info.is_slice, CUMEM_FALSE);
  cumem_resource_t* from = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_resource(b, &from));
  EXPECT_EQ(from, aligned);
  cumem_resource_release(from);
  cumem_buffer_release(b);
  cumem_resource_release(aligned);
}

TEST_F(HostBufferTest, BadAlignmentIsRejected) {
  cumem_host_resource_options_t o = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  cumem_resource_t* r = nullptr;
  o.alignment = 48;
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&o, &r), CUMEM_ERROR_INVALID_ARGUMENT, "power of two");
  o.alignment = 2;
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&o, &r), CUMEM_ERROR_INVALID_ARGUMENT, "alignment 2");
  EXPECT_EQ(r, nullptr);
  o.struct_size = 0;
  CUMEM_EXPECT_ERROR(cumem_host_resource_create(&o, &r), CUMEM_ERROR_INVALID_ARGUMENT, "struct_size");
}

TEST_F(HostBufferTest, OlderSmallerOptionsKeepDefaults) {
  cumem_host_resource_options_t o;
  std::memset(&o, 0xFF, sizeof o);
  o.struct_size = sizeof(uint32_t);  // a caller that knows no field
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(&o, &r));
  cumem_resource_release(r);
}

TEST_F(HostBufferTest, StatisticsCountBuffersAndRawAllocations) {
  cumem_buffer_t* a = allocate(1000);
  cumem_buffer_t* b = allocate(24);
  auto s = stats();
  EXPECT_EQ(s.bytes_in_use, 1024u);
  EXPECT_EQ(s.live_allocations, 2u);
  EXPECT_EQ(s.total_allocations, 2u);
  EXPECT_EQ(s.peak_bytes_in_use, 1024u);
  CUMEM_ASSERT_OK(cumem_buffer_close(a, nullptr));
  s = stats();
  EXPECT_EQ(s.bytes_in_use, 24u);
  EXPECT_EQ(s.live_allocations, 1u);
  EXPECT_EQ(s.peak_bytes_in_use, 1024u);
  CUMEM_ASSERT_OK(cumem_resource_reset_peak(resource));
  EXPECT_EQ(stats().peak_bytes_in_use, 24u);

  void* raw = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(resource, 64, nullptr, &raw));
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(stats().bytes_in_use, 88u);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(resource, raw, 64, nullptr));
  s = stats();
  EXPECT_EQ(s.bytes_in_use, 24u);
  EXPECT_EQ(s.total_allocations, 3u);
  // Releasing the last reference closes the buffer.
  cumem_buffer_release(b);
  EXPECT_EQ(stats().bytes_in_use, 0u);
  EXPECT_EQ(stats().live_allocations, 0u);
  cumem_buffer_release(a);
}

TEST_F(HostBufferTest, RawDeallocateOfNullNeedsSizeZero) {
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(resource, nullptr, 0, nullptr));
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(resource, nullptr, 8, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "NULL pointer");
  void* raw = reinterpret_cast<void*>(0x1);
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(resource, 0, nullptr, &raw));
  EXPECT_EQ(raw, nullptr);
}

TEST_F(HostBufferTest, SizeZeroBuffersAreValidAndEmpty) {
  cumem_buffer_t* z = allocate(0);
  void* p = reinterpret_cast<void*>(0x1);
  size_t size = 7;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(z, &p));
  CUMEM_ASSERT_OK(cumem_buffer_size(z, &size));
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(size, 0u);
  cumem_buffer_t* z2 = allocate(0);
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(z, z2, nullptr));
  CUMEM_ASSERT_OK(cumem_buffer_fill(z, 0xAB, 1, nullptr));
  EXPECT_EQ(stats().live_allocations, 0u) << "size 0 is not counted";
  CUMEM_ASSERT_OK(cumem_buffer_close(z, nullptr));
  cumem_buffer_release(z);
  cumem_buffer_release(z2);
}

TEST_F(HostBufferTest, CopyToAndFromWholeBuffers) {
  cumem_buffer_t* a = allocate(256);
  cumem_buffer_t* b = allocate(256);
  for (int i = 0; i < 256; ++i) bytes(a)[i] = static_cast<uint8_t>(i * 7 + 3);
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(a, b, nullptr));
  EXPECT_EQ(0, std::memcmp(bytes(a), bytes(b), 256));
  std::memset(bytes(a), 0, 256);
  CUMEM_ASSERT_OK(cumem_buffer_copy_from(a, b, nullptr));
  EXPECT_EQ(0, std::memcmp(bytes(a), bytes(b), 256));
  EXPECT_EQ(bytes(a)[5], static_cast<uint8_t>(5 * 7 + 3));
  cumem_buffer_release(a);
  cumem_buffer_release(b);
}

TEST_F(HostBufferTest, SizeMismatchIsReported) {
  cumem_buffer_t* a = allocate(16);
  cumem_buffer_t* b = allocate(32);
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_to(a, b, nullptr), CUMEM_ERROR_SIZE_MISMATCH, "16 bytes");
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_from(a, b, nullptr), CUMEM_ERROR_SIZE_MISMATCH, "32");
  cumem_buffer_release(a);
  cumem_buffer_release(b);
}

TEST_F(HostBufferTest, RegionCopyIsBoundsChecked) {
  cumem_buffer_t* a = allocate(100);
  cumem_buffer_t* b = allocate(50);
  for (int i = 0; i < 100; ++i) bytes(a)[i] = static_cast<uint8_t>(i);
  std::memset(bytes(b), 0xEE, 50);
  CUMEM_ASSERT_OK(cumem_buffer_copy_region(b, 10, a, 60, 40, nullptr));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(bytes(b)[i], 0xEE);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(bytes(b)[10 + i], 60 + i);
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_region(b, 11, a, 0, 40, nullptr), CUMEM_ERROR_OUT_OF_RANGE,
                     "destination region");
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_region(b, 0, a, 61, 40, nullptr), CUMEM_ERROR_OUT_OF_RANGE,
                     "source region");
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_region(b, SIZE_MAX, a, 0, 2, nullptr),
                     CUMEM_ERROR_OUT_OF_RANGE, "overruns");
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_region(b, 1, a, 0, SIZE_MAX, nullptr),
                     CUMEM_ERROR_OUT_OF_RANGE, "overruns");
  CUMEM_ASSERT_OK(cumem_buffer_copy_region(b, 50, a, 100, 0, nullptr));  // empty, at the ends
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_region(a, 10, a, 0, 20, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "overlap");
  CUMEM_ASSERT_OK(cumem_buffer_copy_region(a, 50, a, 0, 50, nullptr));  // same buffer, disjoint
  EXPECT_EQ(bytes(a)[75], 25);
  cumem_buffer_release(a);
  cumem_buffer_release(b);
}

TEST_F(HostBufferTest, FillWithEachWidth) {
  cumem_buffer_t* b = allocate(64);
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0xAB, 1, nullptr));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(bytes(b)[i], 0xAB);
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x1234, 2, nullptr));
  for (int i = 0; i < 32; ++i) {
    uint16_t v;
    std::memcpy(&v, bytes(b) + 2 * i, 2);
    EXPECT_EQ(v, 0x1234);
  }
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0xDEADBEEF, 4, nullptr));
  for (int i = 0; i < 16; ++i) {
    uint32_t v;
    std::memcpy(&v, bytes(b) + 4 * i, 4);
    EXPECT_EQ(v, 0xDEADBEEFu);
  }
  cumem_buffer_release(b);
}

TEST_F(HostBufferTest, FillErrors) {
  cumem_buffer_t* b = allocate(6);
  CUMEM_EXPECT_ERROR(cumem_buffer_fill(b, 1, 4, nullptr), CUMEM_ERROR_SIZE_MISMATCH, "multiple");
  CUMEM_EXPECT_ERROR(cumem_buffer_fill(b, 1, 3, nullptr), CUMEM_ERROR_INVALID_ARGUMENT, "1, 2 or 4");
  CUMEM_EXPECT_ERROR(cumem_buffer_fill(b, 1, 0, nullptr), CUMEM_ERROR_INVALID_ARGUMENT, "1, 2 or 4");
  CUMEM_EXPECT_ERROR(cumem_buffer_fill(b, 0x100, 1, nullptr), CUMEM_ERROR_INVALID_ARGUMENT, "fit");
  CUMEM_EXPECT_ERROR(cumem_buffer_fill(b, 0x10000, 2, nullptr), CUMEM_ERROR_INVALID_ARGUMENT, "fit");
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0xBEEF, 2, nullptr));
  cumem_buffer_release(b);
}

TEST_F(HostBufferTest, SliceViewsItsParent) {
  cumem_buffer_t* parent = allocate(100);
  for (int i = 0; i < 100; ++i) bytes(parent)[i] = static_cast<uint8_t>(i);
  cumem_buffer_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(parent, 20, 30, &s));
  size_t size = 0;
  CUMEM_ASSERT_OK(cumem_buffer_size(s, &size));
  EXPECT_EQ(size, 30u);
  EXPECT_EQ(bytes(s), bytes(parent) + 20);
  EXPECT_EQ(bytes(s)[0], 20);
  cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
  CUMEM_ASSERT_OK(cumem_buffer_get_info(s, &info));
  EXPECT_EQ(info.is_slice, CUMEM_TRUE);
  EXPECT_EQ(info.owns_memory, CUMEM_FALSE);
  // A slice of a slice, and the parent kept alive by its slices.
  cumem_buffer_t* inner = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(s, 5, 5, &inner));
  EXPECT_EQ(bytes(inner)[0], 25);
  cumem_buffer_release(parent);
  EXPECT_EQ(stats().live_allocations, 1u) << "the slices keep the parent alive";
  CUMEM_ASSERT_OK(cumem_buffer_fill(inner, 0x77, 1, nullptr));
  EXPECT_EQ(bytes(s)[5], 0x77);
  // Closing a slice frees nothing.
  CUMEM_ASSERT_OK(cumem_buffer_close(inner, nullptr));
  EXPECT_EQ(stats().live_allocations, 1u);
  cumem_buffer_release(inner);
  cumem_buffer_release(s);
  EXPECT_EQ(stats().live_allocations, 0u);
}

TEST_F(HostBufferTest, SliceBoundsAreChecked) {
  cumem_buffer_t* b = allocate(10);
  cumem_buffer_t* s = reinterpret_cast<cumem_buffer_t*>(0x1);
  CUMEM_EXPECT_ERROR(cumem_buffer_slice(b, 5, 6, &s), CUMEM_ERROR_OUT_OF_RANGE, "overruns");
  CUMEM_EXPECT_ERROR(cumem_buffer_slice(b, 11, 0, &s), CUMEM_ERROR_OUT_OF_RANGE, "overruns");
  CUMEM_EXPECT_ERROR(cumem_buffer_slice(b, 1, SIZE_MAX, &s), CUMEM_ERROR_OUT_OF_RANGE, "overruns");
  EXPECT_EQ(s, reinterpret_cast<cumem_buffer_t*>(0x1));
  CUMEM_ASSERT_OK(cumem_buffer_slice(b, 10, 0, &s));
  cumem_buffer_release(s);
  cumem_buffer_release(b);
}

TEST_F(HostBufferTest, ClosedBufferAnswersBufferClosed) {
  cumem_buffer_t* b = allocate(16);
  cumem_buffer_t* other = allocate(16);
  cumem_buffer_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(b, 0, 8, &s));
  CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));
  EXPECT_EQ(stats().live_allocations, 1u);
  cumem_bool_t closed = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_buffer_is_closed(b, &closed));
  EXPECT_EQ(closed, CUMEM_TRUE);
  CUMEM_ASSERT_OK(cumem_buffer_is_closed(s, &closed));
  EXPECT_EQ(closed, CUMEM_TRUE) << "a slice of a closed buffer is closed";
  void* p = reinterpret_cast<void*>(0x1);
  size_t size = 3;
  CUMEM_EXPECT_ERROR(cumem_buffer_ptr(b, &p), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  EXPECT_EQ(p, reinterpret_cast<void*>(0x1));
  CUMEM_EXPECT_ERROR(cumem_buffer_size(b, &size), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  EXPECT_EQ(size, 3u);
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_to(b, other, nullptr), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_from(other, b, nullptr), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_region(other, 0, b, 0, 1, nullptr), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  CUMEM_EXPECT_ERROR(cumem_buffer_fill(b, 0, 1, nullptr), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  CUMEM_EXPECT_ERROR(cumem_buffer_close(b, nullptr), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  cumem_buffer_t* s2 = nullptr;
  CUMEM_EXPECT_ERROR(cumem_buffer_slice(b, 0, 1, &s2), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  CUMEM_EXPECT_ERROR(cumem_buffer_ptr(s, &p), CUMEM_ERROR_BUFFER_CLOSED, "slice views was closed");
  CUMEM_EXPECT_ERROR(cumem_buffer_fill(s, 0, 1, nullptr), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_buffer_resource(b, &r), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  int32_t id = 0;
  CUMEM_EXPECT_ERROR(cumem_buffer_device_id(b, &id), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
  CUMEM_EXPECT_ERROR(cumem_buffer_get_info(b, &info), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  CUMEM_EXPECT_ERROR(cumem_buffer_set_deallocation_stream(b, nullptr), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  cumem_location_t host = {CUMEM_LOCATION_HOST, 0};
  CUMEM_EXPECT_ERROR(cumem_buffer_prefetch(b, host, nullptr), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  // retain/release still work, and the memory is freed exactly once.
  CUMEM_ASSERT_OK(cumem_buffer_retain(b));
  cumem_buffer_release(b);
  cumem_buffer_release(s);
  cumem_buffer_release(b);
  EXPECT_EQ(stats().live_allocations, 1u);
  cumem_buffer_release(other);
}

struct ReleaseRecord {
  int calls = 0;
  void* ptr = nullptr;
  size_t size = 0;
};

void record_release(void* ptr, size_t size, void* user_data) {
  auto* r = static_cast<ReleaseRecord*>(user_data);
  ++r->calls;
  r->ptr = ptr;
  r->size = size;
}

TEST_F(HostBufferTest, WrapForeignMemoryWithACallback) {
  std::vector<uint8_t> storage(64, 0x11);
  ReleaseRecord record;
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_wrap(storage.data(), storage.size(), record_release, &record, &b));
  cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
  CUMEM_ASSERT_OK(cumem_buffer_get_info(b, &info));
  EXPECT_EQ(info.memory_kind, CUMEM_MEMORY_HOST);
  EXPECT_EQ(info.host_accessible, CUMEM_TRUE);
  EXPECT_EQ(info.owns_memory, CUMEM_TRUE);
  cumem_resource_t* r = reinterpret_cast<cumem_resource_t*>(0x1);
  CUMEM_ASSERT_OK(cumem_buffer_resource(b, &r));
  EXPECT_EQ(r, nullptr);
  // It copies and fills like any host buffer.
  cumem_buffer_t* other = allocate(64);
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x42, 1, nullptr));
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(b, other, nullptr));
  EXPECT_EQ(bytes(other)[63], 0x42);
  EXPECT_EQ(record.calls, 0);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));
  EXPECT_EQ(record.calls, 1);
  EXPECT_EQ(record.ptr, storage.data());
  EXPECT_EQ(record.size, 64u);
  cumem_buffer_release(b);
  EXPECT_EQ(record.calls, 1) << "released exactly once";
  cumem_buffer_release(other);
}

TEST_F(HostBufferTest, WrapWithoutCallbackAndReleaseWithoutClose) {
  uint8_t storage[8] = {};
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_wrap(storage, sizeof storage, nullptr, nullptr, &b));
  cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
  CUMEM_ASSERT_OK(cumem_buffer_get_info(b, &info));
  EXPECT_EQ(info.owns_memory, CUMEM_FALSE);
  cumem_buffer_release(b);

  ReleaseRecord record;
  CUMEM_ASSERT_OK(cumem_buffer_wrap(storage, sizeof storage, record_release, &record, &b));
  cumem_buffer_release(b);  // the last release runs the callback
  EXPECT_EQ(record.calls, 1);

  CUMEM_EXPECT_ERROR(cumem_buffer_wrap(nullptr, 8, nullptr, nullptr, &b),
                     CUMEM_ERROR_INVALID_ARGUMENT, "NULL");
  CUMEM_ASSERT_OK(cumem_buffer_wrap(nullptr, 0, nullptr, nullptr, &b));
  cumem_buffer_release(b);
}

TEST_F(HostBufferTest, WrapOwnedFreesThroughTheResource) {
  void* raw = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(resource, 128, nullptr, &raw));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_wrap_owned(resource, raw, 128, &b));
  EXPECT_EQ(stats().live_allocations, 1u) << "the raw allocation, counted once";
  EXPECT_EQ(bytes(b), raw);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));
  auto s = stats();
  EXPECT_EQ(s.live_allocations, 0u);
  EXPECT_EQ(s.bytes_in_use, 0u);
  cumem_buffer_release(b);
  CUMEM_EXPECT_ERROR(cumem_buffer_wrap_owned(resource, nullptr, 4, &b),
                     CUMEM_ERROR_INVALID_ARGUMENT, "NULL");
}

TEST_F(HostBufferTest, ManagedOperationsRefuseHostMemory) {
  cumem_buffer_t* b = allocate(64);
  cumem_location_t host = {CUMEM_LOCATION_HOST, 0};
  CUMEM_EXPECT_ERROR(cumem_buffer_prefetch(b, host, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "managed memory; this is host memory");
  CUMEM_EXPECT_ERROR(cumem_buffer_advise(b, CUMEM_ADVICE_SET_READ_MOSTLY, host),
                     CUMEM_ERROR_INVALID_ARGUMENT, "managed");
  CUMEM_EXPECT_ERROR(cumem_buffer_discard(b, nullptr), CUMEM_ERROR_INVALID_ARGUMENT, "managed");
  cumem_buffer_release(b);
}

TEST_F(HostBufferTest, ReleaseAcceptsNull) {
  cumem_buffer_release(nullptr);
  cumem_resource_release(nullptr);
  cumem_device_release(nullptr);
  cumem_stream_release(nullptr);
  cumem_event_release(nullptr);
}

}  // namespace
