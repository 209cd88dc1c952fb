// The fixture of the communication-engine host tests: libcumem through its
// C API on the engines fake driver (tests/fake_driver/fake_engines.cpp:
// the VMM fake with memory pools, cuMemAlloc and dma-buf export, all of
// host memory), with both control APIs. Every test ends with no file
// descriptor left open that it did not have at the start, and nothing live
// in the fake.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "fake_engines.hpp"
#include "fake_vmm.hpp"
#include "test_util.hpp"

constexpr size_t kMiB = size_t{1} << 20;

// Open file descriptors of this process (/proc/self/fd, less the one that
// reads it).
inline int open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - 1;
}

class EnginesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(vmm.missing(), "");
    ASSERT_EQ(fake.missing(), "");
    vmm.reset();
    fake.reset();
    fds_before = open_fds();
    CUMEM_ASSERT_OK(cumem_device_get(0, &device));
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  }
  void TearDown() override {
    cumem_stream_release(stream);
    cumem_device_release(device);
    vmm.set_attribute(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, -2);
    EXPECT_EQ(open_fds(), fds_before) << "a file descriptor leaked";
    const FakeVmmCounts c = vmm.counts();
    EXPECT_EQ(c.live_mappings, 0u) << "virtual memory is still mapped";
    EXPECT_EQ(c.live_handles, 0u) << "a chunk was never released";
    EXPECT_EQ(fake.counts().fabric_pools, 0u) << "a pool was asked for with the FABRIC type";
  }

  cumem_resource_t* device_pool(bool new_pool = false) {
    cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
    o.new_pool = new_pool ? CUMEM_TRUE : CUMEM_FALSE;
    cumem_resource_t* r = nullptr;
    EXPECT_EQ(cumem_device_resource_create(device, &o, &r), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return r;
  }
  // A virtual resource of device 0 at the recommended granularity (2 MiB in
  // the fake) with chunks of `chunk` bytes.
  cumem_resource_t* virtual_resource(size_t chunk, cumem_location_type_t where = CUMEM_LOCATION_NONE) {
    cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
    o.chunk_size = chunk;
    o.location.type = where;
    cumem_resource_t* r = nullptr;
    EXPECT_EQ(cumem_virtual_resource_create(device, &o, &r), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return r;
  }
  cumem_buffer_t* allocate(cumem_resource_t* r, size_t size) {
    cumem_buffer_t* b = nullptr;
    EXPECT_EQ(cumem_resource_allocate(r, size, stream, &b), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return b;
  }
  static uintptr_t address_of(const cumem_buffer_t* b) {
    void* p = nullptr;
    EXPECT_EQ(cumem_buffer_ptr(b, &p), CUMEM_SUCCESS) << cumem_last_error_message();
    return reinterpret_cast<uintptr_t>(p);
  }
  // The resource's id, as snapshots and unmap events name it.
  static uint64_t id_of(const cumem_resource_t* r) {
    cumem_snapshot_t* s = nullptr;
    EXPECT_EQ(cumem_snapshot_take(r, &s), CUMEM_SUCCESS) << cumem_last_error_message();
    cumem_snapshot_resource_t e = CUMEM_SNAPSHOT_RESOURCE_INIT;
    EXPECT_EQ(cumem_snapshot_get_resource(s, 0, &e), CUMEM_SUCCESS) << cumem_last_error_message();
    cumem_snapshot_release(s);
    return e.id;
  }

  FakeVmm vmm;
  FakeEngines fake;
  cumem_device_t* device = nullptr;
  cumem_stream_t* stream = nullptr;
  int fds_before = 0;
};
