// The virtual resource on a real device (gpu suite; each test skips, saying
// why, without one): ownership over 10,000 random cycles, cuda.core's VMM
// bug classes as named regression tests, kernels writing memory that is
// being freed, moved or shrunk, peers, host memory, FABRIC, and IPC with a
// child process (fork + exec of this program: --vmm-child ROLE FD).
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gpu_fixture.hpp"
#include "spin_kernel.hpp"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

cumem_virtual_statistics_t vstats(const cumem_resource_t* r) {
  cumem_virtual_statistics_t s = CUMEM_VIRTUAL_STATISTICS_INIT;
  EXPECT_EQ(cumem_virtual_resource_get_statistics(r, &s), CUMEM_SUCCESS) << cumem_last_error_message();
  return s;
}

uint64_t free_memory(const cumem_device_t* d) {
  uint64_t free_bytes = 0, total = 0;
  EXPECT_EQ(cumem_device_memory_info(d, &free_bytes, &total), CUMEM_SUCCESS) << cumem_last_error_message();
  return free_bytes;
}

// Every 32-bit word of `b` once the work on `s` is done ("" when all are `word`).
std::string mismatch(const cumem_buffer_t* b, size_t bytes, uint32_t word, cumem_stream_t* s) {
  cumem_resource_t* host = nullptr;
  cumem_buffer_t* h = nullptr;
  if (cumem_host_resource_create(nullptr, &host) != CUMEM_SUCCESS ||
      cumem_resource_allocate(host, bytes, nullptr, &h) != CUMEM_SUCCESS)
    return cumem_last_error_message();
  cumem_buffer_t* part = nullptr;
  std::string why;
  if (cumem_buffer_slice(const_cast<cumem_buffer_t*>(b), 0, bytes, &part) != CUMEM_SUCCESS ||
      cumem_buffer_copy_to(part, h, s) != CUMEM_SUCCESS || cumem_stream_synchronize(s) != CUMEM_SUCCESS) {
    why = cumem_last_error_message();
  } else {
    void* p = nullptr;
    cumem_buffer_ptr(h, &p);
    const auto* w = static_cast<const uint32_t*>(p);
    for (size_t i = 0; i < bytes / 4; ++i)
      if (w[i] != word) {
        char text[96];
        std::snprintf(text, sizeof text, "word %zu is 0x%08x, not 0x%08x", i, w[i], word);
        why = text;
        break;
      }
  }
  cumem_buffer_release(part);
  cumem_buffer_release(h);
  cumem_resource_release(host);
  return why;
}

class VirtualGpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    int32_t vmm = 0;
    CUMEM_ASSERT_OK(cumem_device_get_attribute(device, 102 /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */, &vmm));
    if (!vmm) GTEST_SKIP() << "device 0 has no virtual memory management";
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  }
  void TearDown() override {
    cumem_stream_release(stream);
    GpuTest::TearDown();
  }
  // A virtual resource at the recommended granularity (2 MiB on an H200).
  cumem_resource_t* make(uint64_t chunk = 0, uint32_t handle_types = 0,
                         const int32_t* peers = nullptr, uint32_t peer_count = 0) {
    cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
    o.chunk_size = chunk;
    o.handle_types = handle_types;
    o.peers = peers;
    o.peer_count = peer_count;
    cumem_resource_t* r = nullptr;
    EXPECT_EQ(cumem_virtual_resource_create(device, &o, &r), CUMEM_SUCCESS) << cumem_last_error_message();
    return r;
  }
  // Checks the resource holds nothing and every chunk it made is released.
  static void expect_empty(const cumem_resource_t* r) {
    const cumem_virtual_statistics_t s = vstats(r);
    EXPECT_EQ(s.bytes_mapped, 0u);
    EXPECT_EQ(s.bytes_reserved, 0u);
    EXPECT_EQ(s.bytes_pending, 0u);
    EXPECT_EQ(s.chunks_created, s.chunks_released) << "a driver handle is still live";
  }
  // The free memory of device 0 with the driver's lazy state already made:
  // virtual memory (one allocation and free first), and the first kernel's
  // local memory and the first copies (a fill read back: 400 MiB on the
  // H200 the first time, seen when this test ran first).
  uint64_t baseline(cumem_resource_t* r) {
    cumem_buffer_t* b = nullptr;
    EXPECT_EQ(cumem_resource_allocate(r, kMiB, stream, &b), CUMEM_SUCCESS) << cumem_last_error_message();
    EXPECT_EQ(cumem_buffer_fill(b, 0x5a5a5a5au, 4, stream), CUMEM_SUCCESS) << cumem_last_error_message();
    EXPECT_EQ(mismatch(b, kMiB, 0x5a5a5a5au, stream), "");
    cumem_buffer_release(b);
    EXPECT_EQ(cumem_stream_synchronize(stream), CUMEM_SUCCESS);
    EXPECT_EQ(cumem_virtual_resource_release_pending(r), CUMEM_SUCCESS);
    return free_memory(device);
  }
  // Free memory is back where it started, to one granule: the device's
  // free memory moves in 2 MiB steps with the driver's own bookkeeping too
  // (seen once on the H200 after 10,000 cycles, every chunk released). A
  // leaked chunk is caught exactly by expect_empty's counts; this catches
  // leaks the counts cannot see (cuda.core's held handles: 4 GiB).
  void expect_free_memory_back(uint64_t before, const cumem_resource_t* r) {
    const uint64_t after = free_memory(device);
    const uint64_t granule = vstats(r).granularity;
    EXPECT_LE(before > after ? before - after : 0, granule)
        << "device free memory was " << before << " bytes and is now " << after;
  }

  cumem_stream_t* stream = nullptr;
};

TEST_F(VirtualGpu, GranularityAndPropertiesOfTheDevice) {
  cumem_resource_t* r = make();
  const cumem_virtual_statistics_t s = vstats(r);
  EXPECT_GE(s.granularity, 4096u);
  EXPECT_EQ(s.granularity & (s.granularity - 1), 0u);
  EXPECT_EQ(s.chunk_size % s.granularity, 0u);
  std::printf("[ info     ] recommended granularity %llu bytes, chunk size %llu\n",
              static_cast<unsigned long long>(s.granularity),
              static_cast<unsigned long long>(s.chunk_size));
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(r, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_VIRTUAL);
  EXPECT_EQ(p.device_id, 0);
  cumem_resource_release(r);
  cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  o.granularity = CUMEM_GRANULARITY_MINIMUM;
  CUMEM_ASSERT_OK(cumem_virtual_resource_create(device, &o, &r));
  EXPECT_LE(vstats(r).granularity, s.granularity) << "the minimum is not above the recommended";
  cumem_resource_release(r);
}

// 10,000 random allocate / grow / shrink / close cycles on two streams,
// with kernels (fills) queued on the buffers: the device's free memory ends
// where it started and no driver handle is left. Each buffer is used,
// resized and closed on the one stream it was allocated on (the caller's
// rule: a free is ordered after its own stream's work only).
TEST_F(VirtualGpu, TenThousandRandomCyclesLeaveFreeMemoryAndNoHandle) {
  cumem_resource_t* r = make();
  const uint64_t before = baseline(r);
  cumem_stream_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &other));
  std::mt19937 rng(10000);
  struct Live {
    cumem_buffer_t* buffer;
    cumem_stream_t* stream;
  };
  std::vector<Live> live;
  for (int cycle = 0; cycle < 10000; ++cycle) {
    const size_t size = 4 * (1 + rng() % (16 * kMiB));  // up to 64 MiB, any multiple of 4
    const unsigned op = live.size() < 2 ? 0 : live.size() > 24 ? 3 : rng() % 4;
    if (op == 0) {
      cumem_stream_t* s = rng() % 2 ? stream : other;
      cumem_buffer_t* b = nullptr;
      ASSERT_EQ(cumem_resource_allocate(r, size, s, &b), CUMEM_SUCCESS)
          << "cycle " << cycle << ": " << cumem_last_error_message();
      live.push_back({b, s});
      if (rng() % 4 == 0) {
        ASSERT_EQ(cumem_buffer_fill(b, static_cast<uint32_t>(cycle), 4, s), CUMEM_SUCCESS);
      }
    } else if (op == 3) {
      const size_t i = rng() % live.size();
      ASSERT_EQ(cumem_buffer_close(live[i].buffer, live[i].stream), CUMEM_SUCCESS)
          << cumem_last_error_message();
      cumem_buffer_release(live[i].buffer);
      live.erase(live.begin() + static_cast<long>(i));
    } else {
      const Live& l = live[rng() % live.size()];
      ASSERT_EQ(cumem_buffer_resize(l.buffer, size, l.stream), CUMEM_SUCCESS)
          << "cycle " << cycle << ": " << cumem_last_error_message();
      if (rng() % 4 == 0) {
        ASSERT_EQ(cumem_buffer_fill(l.buffer, static_cast<uint32_t>(cycle), 4, l.stream),
                  CUMEM_SUCCESS);
      }
    }
  }
  for (const Live& l : live) cumem_buffer_release(l.buffer);  // closes on its stream
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(other));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
  const cumem_virtual_statistics_t s = vstats(r);
  std::printf("[ info     ] %llu chunks made and released; grows in place %llu, moved %llu, shrinks %llu\n",
              static_cast<unsigned long long>(s.chunks_created),
              static_cast<unsigned long long>(s.grows_in_place),
              static_cast<unsigned long long>(s.grows_moved), static_cast<unsigned long long>(s.shrinks));
  expect_empty(r);
  expect_free_memory_back(before, r);
  EXPECT_EQ(statistics_of(r).bytes_in_use, 0u);
  cumem_stream_release(other);
  cumem_resource_release(r);
  EXPECT_EQ(cumem_device_synchronize(device), CUMEM_SUCCESS) << "no kernel faulted";
}

// cuda.core: physical handles were never released, so 64 x 64 MiB
// allocate + close held 4 GiB.
TEST_F(VirtualGpu, RegressionAllocateCloseDoesNotHoldMemory_64x64MiB) {
  cumem_resource_t* r = make();
  const uint64_t before = baseline(r);
  for (int i = 0; i < 64; ++i) {
    cumem_buffer_t* b = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, 64 * kMiB, stream, &b));
    CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
    cumem_buffer_release(b);
  }
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
  expect_empty(r);
  expect_free_memory_back(before, r);
  cumem_resource_release(r);
}

// cuda.core: grow extensions could not be freed.
TEST_F(VirtualGpu, RegressionGrowExtensionsAreFreedWithTheBuffer) {
  cumem_resource_t* r = make();
  const uint64_t before = baseline(r);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 8 * kMiB, stream, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x11111111u, 4, stream));
  for (size_t mib : {12, 16, 40, 100, 300}) {
    CUMEM_ASSERT_OK(cumem_buffer_resize(b, mib * kMiB, stream));
  }
  EXPECT_EQ(mismatch(b, 8 * kMiB, 0x11111111u, stream), "") << "the first 8 MiB kept";
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  cumem_buffer_release(b);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
  const cumem_virtual_statistics_t s = vstats(r);
  EXPECT_EQ(s.grows_in_place + s.grows_moved, 5u);
  expect_empty(r);
  expect_free_memory_back(before, r);
  cumem_resource_release(r);
}

// cuda.core: a grow that failed half-way lost the access rights. A grow
// that runs out of device memory after mapping some of its chunks leaves
// the buffer with its size, address, contents and every device's access.
TEST_F(VirtualGpu, RegressionAFailedGrowKeepsAccessAndContents) {
  const bool two = device_count >= 2;
  cumem_device_t* peer = nullptr;
  cumem_bool_t can = CUMEM_FALSE;
  if (two) {
    CUMEM_ASSERT_OK(cumem_device_get(1, &peer));
    CUMEM_ASSERT_OK(cumem_device_can_access_peer(peer, device, &can));
  }
  const int32_t peers[] = {1};
  // Half the free memory taken elsewhere, so that a grow can ask for more
  // than is free but less than the device has.
  cumem_resource_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &legacy));
  void* blocker = nullptr;
  const size_t blocked = static_cast<size_t>(free_memory(device) / 2);
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(legacy, blocked, nullptr, &blocker));
  // Chunks of 1 GiB: a grow to more than the free memory fails after the
  // first chunks are made, and must give them back.
  cumem_resource_t* r = make(uint64_t{1} << 30, 0, can ? peers : nullptr, can ? 1 : 0);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 64 * kMiB, stream, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x600DF00Du, 4, stream));
  void* before_ptr = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &before_ptr));
  const uint64_t chunks_before = vstats(r).chunks_created - vstats(r).chunks_released;
  const uint64_t too_much = free_memory(device) + (uint64_t{4} << 30);
  CUMEM_EXPECT_ERROR(cumem_buffer_resize(b, static_cast<size_t>(too_much), stream),
                     CUMEM_ERROR_OUT_OF_MEMORY, "cannot grow a buffer of");
  size_t size = 0;
  void* ptr = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_size(b, &size));
  CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &ptr));
  EXPECT_EQ(size, 64 * kMiB);
  EXPECT_EQ(ptr, before_ptr);
  EXPECT_EQ(vstats(r).chunks_created - vstats(r).chunks_released, chunks_before)
      << "the chunks the failed grow made are released";
  EXPECT_EQ(mismatch(b, 64 * kMiB, 0x600DF00Du, stream), "") << "the device still reads it";
  if (can) {
    // The peer still writes and reads it, on a stream of its own.
    cumem_stream_t* ps = nullptr;
    CUMEM_ASSERT_OK(cumem_stream_create(peer, nullptr, &ps));
    cumem_access_t a = CUMEM_ACCESS_NONE;
    CUMEM_ASSERT_OK(cumem_virtual_resource_get_access(r, peer, &a));
    EXPECT_EQ(a, CUMEM_ACCESS_READ_WRITE);
    cumem_kernel_t* kernel = nullptr;
    const cumem_status_t loaded = load_spin_kernel(peer, &kernel);
    if (loaded == CUMEM_SUCCESS) {
      CUMEM_ASSERT_OK(launch_spin(kernel, ptr, 64 * kMiB, 0xFEEDBEEFu, 0, ps));
      CUMEM_ASSERT_OK(cumem_stream_synchronize(ps));
      EXPECT_EQ(mismatch(b, 64 * kMiB, 0xFEEDBEEFu, stream), "") << "written by the peer's kernel";
      cumem_kernel_release(kernel);
    }
    cumem_stream_release(ps);
  }
  // A grow that fits works afterwards.
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 2 * 64 * kMiB, stream));
  cumem_buffer_release(b);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
  expect_empty(r);
  cumem_resource_release(r);
  cumem_device_release(peer);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(legacy, blocker, blocked, nullptr));
  cumem_resource_release(legacy);
}

// cuda.core: grow sizes that were not multiples of the granularity leaked.
TEST_F(VirtualGpu, RegressionUnalignedGrowSizesDoNotLeak) {
  cumem_resource_t* r = make();
  const uint64_t before = baseline(r);
  const uint64_t g = vstats(r).granularity;
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 3, stream, &b));
  for (size_t size : {size_t(g + 1), size_t(3 * g - 1), size_t(7), size_t(9 * g + 4097),
                      size_t(2 * g + 1), size_t(31 * g + 5), size_t(100)}) {
    CUMEM_ASSERT_OK(cumem_buffer_resize(b, size, stream));
    CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
    CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
    EXPECT_EQ(vstats(r).bytes_mapped % g, 0u);
    EXPECT_GE(vstats(r).bytes_mapped, size);
  }
  cumem_buffer_release(b);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
  expect_empty(r);
  expect_free_memory_back(before, r);
  cumem_resource_release(r);
}

// cuda.core: memory was unmapped before the stream's work was done. A slow
// kernel writes the buffer; the buffer is freed (or shrunk, or grown) on
// that stream at once; the memory stays valid until the kernel ends: the
// kernel does not fault, and the release happens after it.
TEST_F(VirtualGpu, RegressionUnmapWaitsForTheStreamsWork) {
  cumem_kernel_t* kernel = nullptr;
  const cumem_status_t loaded = load_spin_kernel(device, &kernel);
  if (loaded == CUMEM_ERROR_NO_COMPILER) GTEST_SKIP() << "NVRTC is missing: " << cumem_last_error_message();
  CUMEM_ASSERT_OK(loaded);
  cumem_resource_t* r = make(2 * kMiB);
  const size_t size = 64 * kMiB;
  for (const char* what : {"close", "shrink", "grow"}) {
    SCOPED_TRACE(what);
    cumem_buffer_t* b = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, size, stream, &b));
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &p));
    // 200 ms of spinning, then writes over all 64 MiB at the old address.
    CUMEM_ASSERT_OK(launch_spin(kernel, p, size, 0xBAD0BAD0u, 200 * 1000 * 1000, stream));
    cumem_bool_t done = CUMEM_TRUE;
    CUMEM_ASSERT_OK(cumem_stream_query(stream, &done));
    ASSERT_EQ(done, CUMEM_FALSE) << "the kernel must still run for this test to prove anything";
    const std::string w = what;
    if (w == "close") {
      CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
    } else if (w == "shrink") {
      CUMEM_ASSERT_OK(cumem_buffer_resize(b, 2 * kMiB, stream));
    } else {
      CUMEM_ASSERT_OK(cumem_buffer_resize(b, 16 * size, stream));  // likely to move
    }
    EXPECT_GT(vstats(r).bytes_pending + (w == "grow" ? 1 : 0), 0u)
        << "the memory the kernel writes waits for it";
    // Other calls while the kernel runs must not release it either.
    cumem_buffer_t* other = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, kMiB, nullptr, &other));
    cumem_buffer_release(other);
    CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));  // the kernel did not fault
    CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
    if (w == "grow") {
      void* now = nullptr;
      CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &now));
      std::printf("[ info     ] the grow %s\n", now == p ? "stayed in place" : "moved");
      EXPECT_EQ(mismatch(b, size, 0xBAD0BAD0u, stream), "") << "the kernel's writes are in the buffer";
    }
    cumem_buffer_release(b);
  }
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
  expect_empty(r);
  cumem_kernel_release(kernel);
  cumem_resource_release(r);
  EXPECT_EQ(cumem_device_synchronize(device), CUMEM_SUCCESS);
}

TEST_F(VirtualGpu, GrowingKeepsContentsAndShrinkingGivesMemoryBack) {
  cumem_resource_t* r = make(2 * kMiB);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 10 * kMiB, stream, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x01020304u, 4, stream));
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 1024 * kMiB, stream));
  EXPECT_EQ(mismatch(b, 10 * kMiB, 0x01020304u, stream), "");
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x0A0B0C0Du, 4, stream));
  EXPECT_EQ(vstats(r).bytes_mapped, 1024 * kMiB);
  const uint64_t low = free_memory(device);
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 6 * kMiB, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
  EXPECT_EQ(vstats(r).bytes_mapped, 6 * kMiB);
  EXPECT_GE(free_memory(device), low + 1000 * kMiB) << "the shrink gave the memory back";
  EXPECT_EQ(mismatch(b, 6 * kMiB, 0x0A0B0C0Du, stream), "");
  cumem_buffer_release(b);
  cumem_resource_release(r);
}

TEST_F(VirtualGpu, PeersGetAccessToEveryBuffer) {
  if (device_count < 2) GTEST_SKIP() << "needs two devices (nvidia-h200-x2)";
  cumem_device_t* peer = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(1, &peer));
  cumem_bool_t can = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_device_can_access_peer(peer, device, &can));
  if (!can) {
    cumem_device_release(peer);
    GTEST_SKIP() << "device 1 cannot access device 0";
  }
  cumem_kernel_t* kernel = nullptr;
  const cumem_status_t loaded = load_spin_kernel(peer, &kernel);
  if (loaded == CUMEM_ERROR_NO_COMPILER) GTEST_SKIP() << "NVRTC is missing";
  CUMEM_ASSERT_OK(loaded);
  cumem_stream_t* ps = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(peer, nullptr, &ps));
  cumem_resource_t* r = make();
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 8 * kMiB, stream, &b));
  CUMEM_ASSERT_OK(cumem_virtual_resource_set_access(r, peer, CUMEM_ACCESS_READ_WRITE));
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 100 * kMiB, stream));  // the new part too
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &p));
  CUMEM_ASSERT_OK(launch_spin(kernel, p, 100 * kMiB, 0x12345678u, 0, ps));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(ps));  // device 1 wrote all 100 MiB
  EXPECT_EQ(mismatch(b, 100 * kMiB, 0x12345678u, stream), "");
  CUMEM_ASSERT_OK(cumem_virtual_resource_set_access(r, peer, CUMEM_ACCESS_NONE));
  cumem_access_t a = CUMEM_ACCESS_READ;
  CUMEM_ASSERT_OK(cumem_virtual_resource_get_access(r, peer, &a));
  EXPECT_EQ(a, CUMEM_ACCESS_NONE);
  cumem_buffer_release(b);
  cumem_resource_release(r);
  cumem_stream_release(ps);
  cumem_kernel_release(kernel);
  cumem_device_release(peer);
}

TEST_F(VirtualGpu, HostLocatedMemory) {
  cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  o.location.type = CUMEM_LOCATION_HOST_NUMA;
  o.location.id = 0;
  cumem_resource_t* r = nullptr;
  const cumem_status_t s = cumem_virtual_resource_create(device, &o, &r);
  if (s == CUMEM_ERROR_NOT_SUPPORTED) GTEST_SKIP() << cumem_last_error_message();
  CUMEM_ASSERT_OK(s);
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(r, &p));
  std::printf("[ info     ] host NUMA virtual memory: host_accessible %u\n", p.host_accessible);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 4 * kMiB, stream, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x77777777u, 4, stream));
  EXPECT_EQ(mismatch(b, 4 * kMiB, 0x77777777u, stream), "");
  if (p.host_accessible) {
    void* ptr = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &ptr));
    EXPECT_EQ(static_cast<uint32_t*>(ptr)[12345], 0x77777777u) << "read by the host in place";
  }
  cumem_buffer_release(b);
  cumem_resource_release(r);
}

TEST_F(VirtualGpu, FabricIsRefusedWithoutAnImexChannelAndNothingCrashes) {
  cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  o.handle_types = CUMEM_IPC_HANDLE_POSIX_FD | CUMEM_IPC_HANDLE_FABRIC;
  cumem_resource_t* r = nullptr;
  const cumem_status_t s = cumem_virtual_resource_create(device, &o, &r);
  std::printf("[ info     ] FABRIC: %s %s\n", cumem_status_string(s),
              s == CUMEM_SUCCESS ? "" : cumem_last_error_message());
  if (s == CUMEM_SUCCESS) {
    cumem_buffer_t* b = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, kMiB, stream, &b));
    cumem_buffer_release(b);
    cumem_resource_release(r);
    return;
  }
  EXPECT_EQ(s, CUMEM_ERROR_NOT_SUPPORTED);
  EXPECT_NE(std::string(cumem_last_error_message()).find("probe"), std::string::npos);
}

// ---------------------------------------------------------------------------
// IPC with a child process
// ---------------------------------------------------------------------------

constexpr uint32_t kPattern = 0x5a5a5a5a, kReply = 0xa5a5a5a5;
constexpr size_t kIpcBytes = 40 * kMiB;  // two 20 MiB chunks

pid_t start_child(const char* role, int& socket) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = dup(sv[1]);
    const std::string text = std::to_string(fd);
    execl("/proc/self/exe", "/proc/self/exe", "--vmm-child", role, text.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(sv[1]);
  socket = sv[0];
  return pid;
}

int child_check(cumem_status_t s, const char* what, int code) {
  if (s == CUMEM_SUCCESS) return 0;
  std::fprintf(stderr, "child: %s -> %s: %s\n", what, cumem_status_string(s), cumem_last_error_message());
  return code;
}
#define VMM_CHILD(expr, code) \
  if (int rc_ = child_check((expr), #expr, code)) return rc_

// Receives the handle, maps it, checks the pattern, writes the reply.
int consumer(int socket) {
  cumem_device_t* d = nullptr;
  cumem_stream_t* s = nullptr;
  cumem_virtual_ipc_handle_t* h = nullptr;
  cumem_buffer_t* b = nullptr;
  VMM_CHILD(cumem_device_get(0, &d), 2);
  VMM_CHILD(cumem_stream_create(d, nullptr, &s), 2);
  VMM_CHILD(cumem_ipc_receive_virtual(socket, &h), 3);
  VMM_CHILD(cumem_buffer_from_virtual_ipc_handle(d, h, s, &b), 4);
  size_t size = 0;
  cumem_buffer_size(b, &size);
  if (size != kIpcBytes) return 5;
  if (!mismatch(b, size, kPattern, s).empty()) return 6;
  VMM_CHILD(cumem_buffer_fill(b, kReply, 4, s), 7);
  VMM_CHILD(cumem_stream_synchronize(s), 7);
  const char done = 'd';
  if (write(socket, &done, 1) != 1) return 8;
  cumem_buffer_release(b);
  cumem_virtual_ipc_handle_release(h);
  cumem_stream_release(s);
  cumem_device_release(d);
  return 0;
}

TEST_F(VirtualGpu, AnotherProcessMapsTheBuffersChunks) {
  cumem_resource_t* r = make(20 * kMiB, CUMEM_IPC_HANDLE_POSIX_FD);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, kIpcBytes, stream, &b));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, kPattern, 4, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_virtual_ipc_handle_t* h = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_get_virtual_ipc_handle(b, &h));
  uint32_t n = 0;
  CUMEM_ASSERT_OK(cumem_virtual_ipc_handle_fd_count(h, &n));
  EXPECT_EQ(n, 2u);
  int socket = -1;
  const pid_t child = start_child("consumer", socket);
  ASSERT_GT(child, 0);
  CUMEM_ASSERT_OK(cumem_ipc_send_virtual(socket, h));
  char done = 0;
  const bool replied = read(socket, &done, 1) == 1;
  int status = 0;
  waitpid(child, &status, 0);
  close(socket);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's exit code (its stderr says why)";
  EXPECT_TRUE(replied);
  EXPECT_EQ(mismatch(b, kIpcBytes, kReply, stream), "") << "the child's writes are in our buffer";
  cumem_virtual_ipc_handle_release(h);
  cumem_buffer_release(b);
  cumem_resource_release(r);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--vmm-child") {
    const std::string role = argv[2];
    const int socket = std::atoi(argv[3]);
    if (role == "consumer") return consumer(socket);
    return 99;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
