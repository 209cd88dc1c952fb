// The conformance suite of memory resources (the shape of RMM's
// mr_ref_test.hpp): test bodies every resource kind must pass, through the
// public C API alone. conformance_host.cpp instantiates them over the kinds
// that need no GPU, conformance_gpu.cpp over the GPU kinds; a new kind or
// adaptor joins with one line in one of those lists (resource_kinds.hpp).
//
// ResourceConformance: every kind. ResourceStreamOrder: GPU kinds only.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu_fixture.hpp"
#include "spin_kernel.hpp"
#include "resource_kinds.hpp"

// A fresh resource of the kind under test (for device 0 with GPU kinds),
// and a host resource to read back memory the host cannot read in place.
class ResourceConformance : public ::testing::TestWithParam<ResourceKind> {
 protected:
  void SetUp() override {
    if (kind().needs_gpu) {
      const std::string reason = no_gpu_reason();
      if (!reason.empty()) GTEST_SKIP() << reason;
      CUMEM_ASSERT_OK(cumem_device_get(0, &device));
      CUMEM_ASSERT_OK(cumem_device_ordinal(device, &ordinal));
    }
    resource = kind().make(device);
    ASSERT_NE(resource, nullptr) << "cannot make the resource of kind " << kind().name << ": "
                                 << cumem_last_error_message();
    CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &staging));
  }
  void TearDown() override {
    cumem_resource_release(staging);
    cumem_resource_release(resource);
    cumem_device_release(device);
  }

  const ResourceKind& kind() const { return GetParam(); }

  cumem_resource_statistics_t statistics() const {
    cumem_resource_statistics_t s = CUMEM_RESOURCE_STATISTICS_INIT;
    EXPECT_EQ(cumem_resource_get_statistics(resource, &s), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return s;
  }
  cumem_resource_properties_t properties() const {
    cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
    EXPECT_EQ(cumem_resource_get_properties(resource, &p), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return p;
  }
  // Checks all four statistics at once; wrap calls in SCOPED_TRACE.
  void expect_statistics(uint64_t bytes, uint64_t peak, uint64_t live, uint64_t total) const {
    const cumem_resource_statistics_t s = statistics();
    EXPECT_EQ(s.bytes_in_use, bytes);
    EXPECT_EQ(s.peak_bytes_in_use, peak);
    EXPECT_EQ(s.live_allocations, live);
    EXPECT_EQ(s.total_allocations, total);
  }
  void expect_statistics(const cumem_resource_statistics_t& e) const {
    expect_statistics(e.bytes_in_use, e.peak_bytes_in_use, e.live_allocations, e.total_allocations);
  }

  // The device id the kind's memory must report.
  int32_t expected_device_id() const {
    return kind().device_tie == DeviceTie::device ? ordinal : -1;
  }
  // Whether closing waits for the stream (and frees) before it returns.
  bool frees_synchronously() const {
    if (kind().free_order == FreeOrder::driver_dependent) return !properties().is_stream_ordered;
    return kind().free_order == FreeOrder::synchronous;
  }

  // A new stream of the device for GPU kinds; NULL for host kinds.
  cumem_stream_t* new_stream() const {
    cumem_stream_t* s = nullptr;
    if (device) {
      EXPECT_EQ(cumem_stream_create(device, nullptr, &s), CUMEM_SUCCESS)
          << cumem_last_error_message();
    }
    return s;
  }

  static void* pointer(const cumem_buffer_t* b) {
    void* p = nullptr;
    EXPECT_EQ(cumem_buffer_ptr(b, &p), CUMEM_SUCCESS) << cumem_last_error_message();
    return p;
  }
  void expect_aligned(const void* p) const {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kind().alignment, 0u)
        << p << " is not aligned to " << kind().alignment << " bytes";
  }

  // Waits for `stream` (NULL: the legacy default stream, for GPU kinds).
  void wait(const cumem_stream_t* stream) const {
    if (stream) {
      EXPECT_EQ(cumem_stream_synchronize(stream), CUMEM_SUCCESS) << cumem_last_error_message();
    } else if (device) {
      EXPECT_EQ(cumem_device_synchronize(device), CUMEM_SUCCESS) << cumem_last_error_message();
    }
  }

  // The buffer's contents as 32-bit words once the work queued on `stream`
  // is done: read in place where the host can, else copied on `stream` into
  // a buffer of the host resource.
  std::vector<uint32_t> words(const cumem_buffer_t* b, const cumem_stream_t* stream) const {
    size_t size = 0;
    EXPECT_EQ(cumem_buffer_size(b, &size), CUMEM_SUCCESS) << cumem_last_error_message();
    std::vector<uint32_t> out(size / sizeof(uint32_t));
    if (kind().host_accessible) {
      wait(stream);
      std::memcpy(out.data(), pointer(b), out.size() * sizeof(uint32_t));
      return out;
    }
    cumem_buffer_t* host = nullptr;
    EXPECT_EQ(cumem_resource_allocate(staging, size, nullptr, &host), CUMEM_SUCCESS)
        << cumem_last_error_message();
    if (!host) return out;
    EXPECT_EQ(cumem_buffer_copy_to(b, host, stream), CUMEM_SUCCESS) << cumem_last_error_message();
    wait(stream);
    std::memcpy(out.data(), pointer(host), out.size() * sizeof(uint32_t));
    cumem_buffer_release(host);
    return out;
  }

  // "" when every word is `expected`, else where and what the first other
  // word is, and how many differ.
  static std::string mismatch(const std::vector<uint32_t>& got, uint32_t expected) {
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != expected && wrong++ == 0) first = i;
    }
    if (wrong == 0) return "";
    std::ostringstream os;
    os << wrong << " of " << got.size() << " words differ from 0x" << std::hex << expected
       << "; word " << std::dec << first << " is 0x" << std::hex << got[first];
    return os.str();
  }

  // Allocates sizes 1, 100, 4096 and 1 MiB, frees two, resets the peak,
  // allocates 64 bytes and frees everything, checking every statistic after
  // each step. `allocate(size)` returns a handle, `free(handle, size)`
  // frees it: buffers and raw pointers go through the same pattern.
  template <class Allocate, class Free>
  void check_statistics_pattern(Allocate allocate, Free free) {
    const cumem_resource_statistics_t s0 = statistics();
    const uint64_t b0 = s0.bytes_in_use, l0 = s0.live_allocations, t0 = s0.total_allocations;
    const size_t sizes[] = {1, 100, 4096, size_t{1} << 20};
    const uint64_t all = 1 + 100 + 4096 + (uint64_t{1} << 20);
    CUMEM_ASSERT_OK(cumem_resource_reset_peak(resource));
    decltype(allocate(size_t{1})) handles[4] = {};
    for (int i = 0; i < 4; ++i) {
      handles[i] = allocate(sizes[i]);
      ASSERT_TRUE(handles[i]) << "size " << sizes[i] << ": " << cumem_last_error_message();
    }
    {
      SCOPED_TRACE("after allocating 1, 100, 4096 and 1 MiB");
      expect_statistics(b0 + all, b0 + all, l0 + 4, t0 + 4);
    }
    free(handles[1], sizes[1]);
    free(handles[3], sizes[3]);
    {
      SCOPED_TRACE("after freeing 100 and 1 MiB");
      expect_statistics(b0 + 4097, b0 + all, l0 + 2, t0 + 4);
    }
    CUMEM_ASSERT_OK(cumem_resource_reset_peak(resource));
    {
      SCOPED_TRACE("after reset_peak");
      expect_statistics(b0 + 4097, b0 + 4097, l0 + 2, t0 + 4);
    }
    auto extra = allocate(64);
    ASSERT_TRUE(extra) << cumem_last_error_message();
    {
      SCOPED_TRACE("after allocating 64 more");
      expect_statistics(b0 + 4161, b0 + 4161, l0 + 3, t0 + 5);
    }
    free(handles[0], sizes[0]);
    free(handles[2], sizes[2]);
    free(extra, 64);
    SCOPED_TRACE("after freeing everything");
    expect_statistics(b0, b0 + 4161, l0, t0 + 5);
  }

  cumem_device_t* device = nullptr;
  int32_t ordinal = -1;
  cumem_resource_t* resource = nullptr;
  cumem_resource_t* staging = nullptr;
};

TEST_P(ResourceConformance, ZeroSizeAllocationIsAnEmptyUncountedBuffer) {
  const cumem_resource_statistics_t before = statistics();
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 0, nullptr, &b));
  ASSERT_NE(b, nullptr) << "size 0 still gives a buffer";
  void* p = reinterpret_cast<void*>(0x1);
  size_t size = 7;
  CUMEM_ASSERT_OK(cumem_buffer_ptr(b, &p));
  CUMEM_ASSERT_OK(cumem_buffer_size(b, &size));
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(size, 0u);
  cumem_resource_t* owner = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_resource(b, &owner));
  EXPECT_EQ(owner, resource);
  cumem_resource_release(owner);
  {
    SCOPED_TRACE("with an empty buffer open");
    expect_statistics(before);
  }
  CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));
  cumem_bool_t closed = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_buffer_is_closed(b, &closed));
  EXPECT_EQ(closed, CUMEM_TRUE);
  cumem_buffer_release(b);

  void* raw = reinterpret_cast<void*>(0x1);
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(resource, 0, nullptr, &raw));
  EXPECT_EQ(raw, nullptr);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(resource, nullptr, 0, nullptr));
  SCOPED_TRACE("after the empty buffer and the raw pair of size 0");
  expect_statistics(before);
}

TEST_P(ResourceConformance, NewResourceHasCountedNothing) {
  expect_statistics(0, 0, 0, 0);
}

TEST_P(ResourceConformance, StatisticsAreExactForBuffers) {
  check_statistics_pattern(
      [&](size_t size) {
        cumem_buffer_t* b = nullptr;
        EXPECT_EQ(cumem_resource_allocate(resource, size, nullptr, &b), CUMEM_SUCCESS)
            << cumem_last_error_message();
        if (b) expect_aligned(pointer(b));
        return b;
      },
      [&](cumem_buffer_t* b, size_t) {
        EXPECT_EQ(cumem_buffer_close(b, nullptr), CUMEM_SUCCESS) << cumem_last_error_message();
        cumem_buffer_release(b);
      });
}

TEST_P(ResourceConformance, StatisticsAreExactForRawAllocations) {
  check_statistics_pattern(
      [&](size_t size) {
        void* p = nullptr;
        EXPECT_EQ(cumem_resource_allocate_raw(resource, size, nullptr, &p), CUMEM_SUCCESS)
            << cumem_last_error_message();
        expect_aligned(p);
        return p;
      },
      [&](void* p, size_t size) {
        EXPECT_EQ(cumem_resource_deallocate_raw(resource, p, size, nullptr), CUMEM_SUCCESS)
            << cumem_last_error_message();
      });
}

TEST_P(ResourceConformance, PropertiesAndBufferInfoMatchTheKind) {
  const cumem_resource_properties_t p = properties();
  EXPECT_EQ(p.kind, kind().kind);
  EXPECT_EQ(p.host_accessible, kind().host_accessible ? CUMEM_TRUE : CUMEM_FALSE);
  EXPECT_EQ(p.device_accessible, kind().device_accessible ? CUMEM_TRUE : CUMEM_FALSE);
  EXPECT_EQ(p.device_id, expected_device_id());
  if (kind().free_order != FreeOrder::driver_dependent) {
    EXPECT_EQ(p.is_stream_ordered,
              kind().free_order == FreeOrder::stream_ordered ? CUMEM_TRUE : CUMEM_FALSE);
  }

  const size_t size = 64 * 1024;
  cumem_stream_t* stream = new_stream();
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, size, stream, &b));
  cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
  CUMEM_ASSERT_OK(cumem_buffer_get_info(b, &info));
  EXPECT_EQ(info.memory_kind, kind().memory);
  EXPECT_EQ(info.host_accessible, p.host_accessible);
  EXPECT_EQ(info.device_accessible, p.device_accessible);
  EXPECT_EQ(info.device_id, p.device_id);
  EXPECT_EQ(info.size, size);
  EXPECT_NE(info.ptr, nullptr);
  EXPECT_EQ(info.ptr, pointer(b));
  EXPECT_EQ(info.is_slice, CUMEM_FALSE);
  EXPECT_EQ(info.owns_memory, CUMEM_TRUE);
  expect_aligned(info.ptr);
  int32_t id = -2;
  CUMEM_ASSERT_OK(cumem_buffer_device_id(b, &id));
  EXPECT_EQ(id, p.device_id);

  // The memory holds what is written from each side that can reach it.
  if (kind().host_accessible) {
    wait(stream);  // stream-ordered memory is the host's once the allocation is done
    std::memset(info.ptr, 0x5A, size);
    EXPECT_EQ(mismatch(words(b, stream), 0x5A5A5A5Au), "") << "written by the host";
  }
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0x0DDBA11u, 4, stream));
  EXPECT_EQ(mismatch(words(b, stream), 0x0DDBA11u), "") << "filled on the stream";
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  cumem_buffer_release(b);
  wait(stream);
  cumem_stream_release(stream);
}

TEST_P(ResourceConformance, CloseOnAStreamFreesAtOnceAndClosesTheBuffer) {
  // GPU kinds: a stream of their own; host kinds: no stream.
  cumem_stream_t* stream = new_stream();
  const cumem_resource_statistics_t before = statistics();
  const size_t size = size_t{1} << 20;
  cumem_buffer_t* b = nullptr;
  cumem_buffer_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, size, stream, &b));
  CUMEM_ASSERT_OK(cumem_resource_allocate(staging, size, nullptr, &other));
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0xC0FFEE11u, 4, stream));
  EXPECT_EQ(mismatch(words(b, stream), 0xC0FFEE11u), "");
  // Queued work the close must come after (or, freeing synchronously, wait for).
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0xFEEDF00Du, 4, stream));
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  {
    SCOPED_TRACE("right after close, before any synchronisation");
    const cumem_resource_statistics_t s = statistics();
    EXPECT_EQ(s.bytes_in_use, before.bytes_in_use);
    EXPECT_EQ(s.live_allocations, before.live_allocations);
    EXPECT_EQ(s.total_allocations, before.total_allocations + 1);
  }
  if (stream && frees_synchronously()) {
    cumem_bool_t done = CUMEM_FALSE;
    CUMEM_ASSERT_OK(cumem_stream_query(stream, &done));
    EXPECT_EQ(done, CUMEM_TRUE) << "a synchronous free waits for the stream's work first";
  }

  cumem_bool_t closed = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_buffer_is_closed(b, &closed));
  EXPECT_EQ(closed, CUMEM_TRUE);
  void* p = reinterpret_cast<void*>(0x1);
  CUMEM_EXPECT_ERROR(cumem_buffer_ptr(b, &p), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  EXPECT_EQ(p, reinterpret_cast<void*>(0x1));
  CUMEM_EXPECT_ERROR(cumem_buffer_fill(b, 0, 4, stream), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_to(b, other, stream), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  CUMEM_EXPECT_ERROR(cumem_buffer_close(b, stream), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  cumem_buffer_release(b);
  cumem_buffer_release(other);
  wait(stream);
  cumem_stream_release(stream);
  const cumem_resource_statistics_t after = statistics();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use) << "after the stream's work";
  EXPECT_EQ(after.live_allocations, before.live_allocations) << "after the stream's work";
}

TEST_P(ResourceConformance, OutOfMemoryIsReportedAndRecoveredFrom) {
  const size_t huge = size_t{1} << 50;  // 1 PiB: no kind can give it
  const std::string size_text = std::to_string(huge) + " bytes";
  const cumem_resource_statistics_t before = statistics();

  cumem_buffer_t* b = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate(resource, huge, nullptr, &b),
                     CUMEM_ERROR_OUT_OF_MEMORY, "out of memory");
  EXPECT_NE(std::string(cumem_last_error_message()).find(size_text), std::string::npos)
      << "the message names the size: " << cumem_last_error_message();
  EXPECT_EQ(b, nullptr) << "the out-parameter stays untouched on failure";
  void* raw = reinterpret_cast<void*>(0x1);
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(resource, huge, nullptr, &raw),
                     CUMEM_ERROR_OUT_OF_MEMORY, "out of memory");
  EXPECT_NE(std::string(cumem_last_error_message()).find(size_text), std::string::npos)
      << cumem_last_error_message();
  EXPECT_EQ(raw, reinterpret_cast<void*>(0x1));
  {
    SCOPED_TRACE("after two failed allocations");
    expect_statistics(before);
  }

  // The resource still works.
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, 4096, nullptr, &b));
  {
    SCOPED_TRACE("after a 4096-byte allocation following the failures");
    const cumem_resource_statistics_t s = statistics();
    EXPECT_EQ(s.bytes_in_use, before.bytes_in_use + 4096);
    EXPECT_EQ(s.live_allocations, before.live_allocations + 1);
    EXPECT_EQ(s.total_allocations, before.total_allocations + 1);
  }
  CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0xABCD1234u, 4, nullptr));
  EXPECT_EQ(mismatch(words(b, nullptr), 0xABCD1234u), "");
  CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));
  cumem_buffer_release(b);
}

// Live ranges of every thread's buffers; a new range must not overlap any.
class LiveRanges {
 public:
  // Adds [p, p + size); "" if it overlaps none, else the overlapped range.
  std::string add(const void* p, size_t size) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + size;
    std::lock_guard<std::mutex> lock(mutex_);
    auto next = ranges_.lower_bound(begin);
    if (next != ranges_.end() && next->first < end) return describe(begin, end, *next);
    if (next != ranges_.begin()) {
      const auto previous = std::prev(next);
      if (previous->second > begin) return describe(begin, end, *previous);
    }
    ranges_.emplace(begin, end);
    return "";
  }
  void remove(const void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    ranges_.erase(reinterpret_cast<uintptr_t>(p));
  }

 private:
  static std::string describe(uintptr_t begin, uintptr_t end,
                              const std::pair<const uintptr_t, uintptr_t>& live) {
    std::ostringstream os;
    os << std::hex << "[0x" << begin << ", 0x" << end << ") overlaps the live [0x" << live.first
       << ", 0x" << live.second << ")";
    return os.str();
  }
  std::mutex mutex_;
  std::map<uintptr_t, uintptr_t> ranges_;  // begin -> end
};

TEST_P(ResourceConformance, ConcurrentThreadsGetDisjointMemoryThatKeepsTheirData) {
  // Small sizes: managed memory must stay a few MiB per test.
  constexpr uint32_t threads = 16, iterations = 32;
  constexpr size_t live_per_thread = 3;
  constexpr uint32_t max_words = 16 * 1024;  // 64 KiB
  const cumem_resource_statistics_t before = statistics();
  LiveRanges ranges;

  auto work = [&](uint32_t t) {
    cumem_stream_t* stream = new_stream();
    std::mt19937 rng(1234 + t);
    struct Live {
      cumem_buffer_t* buffer;
      void* ptr;
      uint32_t pattern;
    };
    std::deque<Live> mine;
    // Checks the data once more, forgets the range, then closes.
    auto retire = [&](const Live& l) {
      EXPECT_EQ(mismatch(words(l.buffer, stream), l.pattern), "")
          << "thread " << t << ": a buffer lost its data while it was live";
      ranges.remove(l.ptr);
      EXPECT_EQ(cumem_buffer_close(l.buffer, stream), CUMEM_SUCCESS) << cumem_last_error_message();
      cumem_buffer_release(l.buffer);
    };
    for (uint32_t i = 0; i < iterations; ++i) {
      const size_t size = sizeof(uint32_t) * (1 + rng() % max_words);
      const uint32_t pattern = 0xC0000000u | (t << 16) | i;  // unique per thread and iteration
      cumem_buffer_t* b = nullptr;
      const cumem_status_t s = cumem_resource_allocate(resource, size, stream, &b);
      EXPECT_EQ(s, CUMEM_SUCCESS) << "thread " << t << ": " << cumem_last_error_message();
      if (s != CUMEM_SUCCESS) break;
      void* p = pointer(b);
      EXPECT_EQ(ranges.add(p, size), "") << "thread " << t << " got memory that is still live";
      EXPECT_EQ(cumem_buffer_fill(b, pattern, 4, stream), CUMEM_SUCCESS)
          << cumem_last_error_message();
      EXPECT_EQ(mismatch(words(b, stream), pattern), "") << "thread " << t << " iteration " << i;
      mine.push_back({b, p, pattern});
      if (mine.size() > live_per_thread) {
        retire(mine.front());
        mine.pop_front();
      }
    }
    for (const Live& l : mine) retire(l);
    wait(stream);
    cumem_stream_release(stream);
  };
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (std::thread& th : pool) th.join();

  const cumem_resource_statistics_t after = statistics();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.live_allocations, before.live_allocations);
  EXPECT_EQ(after.total_allocations, before.total_allocations + threads * iterations);
  EXPECT_GE(after.peak_bytes_in_use, before.bytes_in_use + sizeof(uint32_t));
}

// GPU kinds only: memory freed on one stream while a kernel still writes it.
class ResourceStreamOrder : public ResourceConformance {};


// Stream A: a kernel spins 100 ms, then writes X over the buffer; the buffer
// is closed on A right after the launch. Stream B: a buffer is allocated and
// filled with Y, with no ordering against A. If B got A's memory before the
// kernel was done, the kernel's late X lands on it. Twice: 1 MiB then the
// same size again, and 8 MiB then 4 MiB (a cache's large block, split).
TEST_P(ResourceStreamOrder, MemoryFreedUnderARunningKernelIsNotHandedOutUnordered) {
  ASSERT_TRUE(kind().needs_gpu) << "instantiate ResourceStreamOrder with GPU kinds only";
  cumem_kernel_t* kernel = nullptr;
  const cumem_status_t loaded = load_spin_kernel(device, &kernel);
  if (loaded == CUMEM_ERROR_NO_COMPILER)
    GTEST_SKIP() << "NVRTC is missing: " << cumem_last_error_message();
  CUMEM_ASSERT_OK(loaded);

  for (const auto& [size, second_size] : {std::pair<size_t, size_t>{size_t{1} << 20, size_t{1} << 20},
                                         std::pair<size_t, size_t>{size_t{8} << 20, size_t{4} << 20}}) {
  SCOPED_TRACE("first " + std::to_string(size) + " bytes, then " + std::to_string(second_size));
  cumem_stream_t* a = new_stream();
  cumem_stream_t* b = new_stream();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const uint32_t x = 0xBAD0BAD0u, y = 0x600DF00Du;

  cumem_buffer_t* first = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, size, a, &first));
  void* first_ptr = pointer(first);
  CUMEM_ASSERT_OK(launch_spin(kernel, first_ptr, size, x, 100 * 1000 * 1000, a));
  cumem_bool_t done = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_stream_query(a, &done));
  EXPECT_EQ(done, CUMEM_FALSE) << "the kernel must still run for this test to prove anything";
  CUMEM_ASSERT_OK(cumem_buffer_close(first, a));
  if (frees_synchronously()) {
    CUMEM_ASSERT_OK(cumem_stream_query(a, &done));
    EXPECT_EQ(done, CUMEM_TRUE) << "a synchronous free waits for the kernel first";
  }

  cumem_buffer_t* second = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(resource, second_size, b, &second));
  const bool same_memory = pointer(second) == first_ptr;
  CUMEM_ASSERT_OK(cumem_buffer_fill(second, y, 4, b));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(b));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(a));
  EXPECT_EQ(mismatch(words(second, b), y), "")
      << "the kernel on stream A wrote over memory handed out on stream B"
      << (same_memory ? " (B got A's freed memory)" : "");

  CUMEM_ASSERT_OK(cumem_buffer_close(second, b));
  cumem_buffer_release(second);
  cumem_buffer_release(first);
  wait(b);
  cumem_stream_release(a);
  cumem_stream_release(b);
  }
  cumem_kernel_release(kernel);
}
