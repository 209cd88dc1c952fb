// The fixture of the virtual resource's host tests: libcumem through its C
// API on the VMM fake driver (two fake devices, memory that is host
// memory), with the fake's control API to count driver handles, inject
// failures and hold streams busy. Every test ends with nothing live in the
// fake: every reservation freed, every chunk released, every mapping gone.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fake_vmm.hpp"
#include "test_util.hpp"

constexpr size_t kGranule = size_t{64} << 10;      // the fake's minimum granularity
constexpr size_t kRecommended = size_t{2} << 20;   // its recommended one

class VirtualTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(fake.missing(), "");
    fake.reset();
    CUMEM_ASSERT_OK(cumem_device_get(0, &device));
    CUMEM_ASSERT_OK(cumem_device_get(1, &peer));
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  }
  void TearDown() override {
    cumem_stream_release(stream);
    cumem_device_release(peer);
    cumem_device_release(device);
    const FakeVmmCounts c = fake.counts();
    EXPECT_EQ(c.live_reservations, 0u) << "a reservation was never freed";
    EXPECT_EQ(c.live_handles, 0u) << "a chunk was never released";
    EXPECT_EQ(c.live_mappings, 0u) << "a mapping was never unmapped";
    EXPECT_EQ(c.live_bytes, 0u) << "physical memory is still held";
    fake.reset();
  }

  // A virtual resource of device 0 at the minimum granularity (64 KiB in the
  // fake), with chunks of `chunk` bytes and POSIX fds.
  cumem_resource_t* make(size_t chunk = kGranule, void (*tune)(cumem_virtual_resource_options_t&) = nullptr) {
    cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
    o.granularity = CUMEM_GRANULARITY_MINIMUM;
    o.chunk_size = chunk;
    o.handle_types = CUMEM_IPC_HANDLE_POSIX_FD;
    if (tune) tune(o);
    cumem_resource_t* r = nullptr;
    const cumem_status_t s = cumem_virtual_resource_create(device, &o, &r);
    EXPECT_EQ(s, CUMEM_SUCCESS) << cumem_last_error_message();
    return r;
  }
  static cumem_virtual_statistics_t vstats(const cumem_resource_t* r) {
    cumem_virtual_statistics_t s = CUMEM_VIRTUAL_STATISTICS_INIT;
    EXPECT_EQ(cumem_virtual_resource_get_statistics(r, &s), CUMEM_SUCCESS) << cumem_last_error_message();
    return s;
  }
  static unsigned char* bytes(const cumem_buffer_t* b) {
    void* p = nullptr;
    EXPECT_EQ(cumem_buffer_ptr(b, &p), CUMEM_SUCCESS) << cumem_last_error_message();
    return static_cast<unsigned char*>(p);
  }
  static size_t size_of(const cumem_buffer_t* b) {
    size_t n = 0;
    EXPECT_EQ(cumem_buffer_size(b, &n), CUMEM_SUCCESS) << cumem_last_error_message();
    return n;
  }
  CUstream native(const cumem_stream_t* s) const {
    void* p = nullptr;
    EXPECT_EQ(cumem_stream_native(s, &p), CUMEM_SUCCESS);
    return static_cast<CUstream>(p);
  }
  // Fills `n` bytes at `p` with a pattern that depends on `seed` and the offset.
  static void pattern(unsigned char* p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>((i * 131 + seed) >> 3);
  }
  static ::testing::AssertionResult has_pattern(const unsigned char* p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i)
      if (p[i] != static_cast<unsigned char>((i * 131 + seed) >> 3))
        return ::testing::AssertionFailure() << "byte " << i << " of " << n << " lost its value";
    return ::testing::AssertionSuccess();
  }

  FakeVmm fake;
  cumem_device_t* device = nullptr;
  cumem_device_t* peer = nullptr;
  cumem_stream_t* stream = nullptr;
};
