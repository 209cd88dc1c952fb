// Batches of small copies on libcumem's copy kernels, on the fake memory
// driver with loaded code (fake_copy_kernel.cpp: it decodes the launch's
// parameters by the PTX's sizes, checks every copy's memory is a kernel's
// to reach, and runs the kernels' own code on the host, so the bytes that
// arrive are theirs). Registered three times (meson.build):
//   KernelBatches*         FAKE_CUDA_COPY_KERNEL=1: which batches take the
//                          kernels, the launches they make, the bytes, the
//                          statistics, capture and the legacy stream;
//   KernelRefused*         FAKE_CUDA_COPY_KERNEL=refuse: the PTX is refused,
//                          batches go the driver's way for the process;
//   KernelLaunchRefused*   FAKE_CUDA_COPY_KERNEL=refuse_launch: the first
//                          launch is refused, the same.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "batches_fixture.hpp"

namespace {

using namespace batches_test;

constexpr size_t KiB = 1024;

class KernelBatches : public Batches {
 protected:
  // Copy i takes `size` bytes at i * size of `src` to a shuffled slot of
  // `dst` (both n * size bytes), as one batch on `s`.
  cumem_status_t scatter(cumem_stream_t* s, cumem_buffer_t* dst, cumem_buffer_t* src, size_t n,
                         size_t size, const cumem_copy_options_t* options = nullptr,
                         size_t num_options = 0) {
    std::vector<size_t> slots(n);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), std::mt19937(static_cast<unsigned>(n)));
    last_src_offsets.assign(n, 0);
    last_dst_offsets.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      last_src_offsets[i] = i * size;
      last_dst_offsets[i] = slots[i] * size;
    }
    last_sizes.assign(n, size);
    std::vector<cumem_buffer_t*> dsts(n, dst);
    std::vector<const cumem_buffer_t*> srcs(n, src);
    return cumem_copy_batch(s, n, dsts.data(), last_dst_offsets.data(), srcs.data(),
                            last_src_offsets.data(), last_sizes.data(), options, num_options);
  }
  // Whether every copy of the last scatter arrived.
  bool arrived(cumem_buffer_t* dst, cumem_buffer_t* src) {
    for (size_t i = 0; i < last_sizes.size(); ++i)
      if (!same_bytes(dst, last_dst_offsets[i], src, last_src_offsets[i], last_sizes[i]))
        return false;
    return true;
  }
  std::vector<FakeKernelLaunch> launches() {
    std::lock_guard<std::mutex> lock(fake().mutex);
    return fake().launches;
  }
  int libraries_loaded() {
    std::lock_guard<std::mutex> lock(fake().mutex);
    return fake().libraries_loaded;
  }
  std::string kernel_line(const char* kernel, const std::string& where, size_t copies) {
    return std::string("kernel ") + kernel + " stream=" + where + " copies=" + std::to_string(copies);
  }

  std::vector<size_t> last_src_offsets, last_dst_offsets, last_sizes;
};

class KernelRefused : public KernelBatches {};
class KernelLaunchRefused : public KernelBatches {};

// ---------------------------------------------------------------------------
// FAKE_CUDA_COPY_KERNEL=1
// ---------------------------------------------------------------------------

// Issue 22's batch: 1,000 copies of 4 KiB each way, one launch each.
TEST_F(KernelBatches, ThousandSmallCopiesOfEachDirectionAreOneLaunch) {
  struct Pair {
    const char* name;
    cumem_resource_t* from;
    cumem_resource_t* to;
  };
  const Pair pairs[] = {{"device -> device", device_mr, device_mr},
                        {"device -> pinned", device_mr, pinned_mr},
                        {"pinned -> device", pinned_mr, device_mr},
                        {"managed -> device", managed_mr, device_mr}};
  unsigned seed = 1;
  for (const Pair& p : pairs) {
    SCOPED_TRACE(p.name);
    cumem_buffer_t* src = make(p.from, 1000 * 4 * KiB, seed++);
    cumem_buffer_t* dst = make(p.to, 1000 * 4 * KiB, 0);
    fake().clear();
    const cumem_batch_statistics_t before = batch_statistics();
    CUMEM_ASSERT_OK(scatter(stream, dst, src, 1000, 4 * KiB));
    EXPECT_TRUE(arrived(dst, src));
    EXPECT_EQ(log(), (std::vector<std::string>{
                         kernel_line("cumem_copy_batch_large", stream_name(stream), 1000)}));
    const std::vector<FakeKernelLaunch> l = launches();
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].grid, 1000u) << "one block per copy";
    EXPECT_EQ(l[0].block, 256u);
    EXPECT_EQ(l[0].param_bytes, 32752u);
    const cumem_batch_statistics_t after = batch_statistics();
    EXPECT_EQ(after.copy_batches, before.copy_batches + 1);
    EXPECT_EQ(after.copies, before.copies + 1000);
    EXPECT_EQ(after.copy_batches_by_kernel, before.copy_batches_by_kernel + 1);
    EXPECT_EQ(after.copies_by_kernel, before.copies_by_kernel + 1000);
    EXPECT_EQ(after.copy_batches_looped, before.copy_batches_looped);
  }
  EXPECT_EQ(libraries_loaded(), 1) << "the kernels are loaded once for the device";
}

// Every relative alignment of source and destination (16, 8, 4, 2, 1 byte
// words) with sizes that leave heads and tails, and nothing written outside
// the regions.
TEST_F(KernelBatches, OddSizesAtUnalignedOffsets) {
  const size_t sizes[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 4095, 4096, 4097, 65535, 65536};
  const size_t src_shifts[] = {0, 1, 3, 8, 15};
  const size_t dst_shifts[] = {0, 1, 2, 4, 8, 12, 15};
  std::vector<size_t> src_offsets, dst_offsets, lengths;
  size_t src_size = 0, dst_size = 0;
  for (size_t size : sizes)
    for (size_t s : src_shifts)
      for (size_t d : dst_shifts) {
        src_size = (src_size + 15) / 16 * 16 + s;
        dst_size = (dst_size + 15) / 16 * 16 + 32 + d;  // a gap of 32 bytes at least
        src_offsets.push_back(src_size);
        dst_offsets.push_back(dst_size);
        lengths.push_back(size);
        src_size += size;
        dst_size += size;
      }
  dst_size += 32;
  const size_t n = lengths.size();
  ASSERT_LE(n, 1637u) << "one launch";
  cumem_buffer_t* src = make(device_mr, src_size, 7);
  cumem_buffer_t* dst = make(pinned_mr, dst_size, 0);
  std::memset(ptr(dst), 0xEE, dst_size);
  std::vector<cumem_buffer_t*> dsts(n, dst);
  std::vector<const cumem_buffer_t*> srcs(n, src);
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, n, dsts.data(), dst_offsets.data(), srcs.data(),
                                   src_offsets.data(), lengths.data(), nullptr, 0));
  ASSERT_EQ(launches().size(), 1u);
  std::vector<unsigned char> want(dst_size, 0xEE);
  const auto* s = static_cast<const unsigned char*>(ptr(src));
  for (size_t i = 0; i < n; ++i) std::memcpy(want.data() + dst_offsets[i], s + src_offsets[i], lengths[i]);
  const auto* got = static_cast<const unsigned char*>(ptr(dst));
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(got + dst_offsets[i], want.data() + dst_offsets[i], lengths[i]), 0)
        << "copy " << i << ": " << lengths[i] << " bytes from offset " << src_offsets[i]
        << " to offset " << dst_offsets[i];
  EXPECT_EQ(std::memcmp(got, want.data(), dst_size), 0) << "a byte outside the regions changed";
}

// A launch holds at most 1,637 copies (204 in the small kernel, whose
// parameters fit 4 KiB): larger batches are split into launches of about
// equal size.
TEST_F(KernelBatches, BatchesLargerThanOneLaunchAreSplit) {
  struct Case {
    size_t copies;
    const char* kernel;
    std::vector<unsigned> launches;
  };
  const Case cases[] = {
      {2, "cumem_copy_batch_small", {2}},
      {204, "cumem_copy_batch_small", {204}},
      {205, "cumem_copy_batch_large", {205}},
      {1637, "cumem_copy_batch_large", {1637}},
      {1638, "cumem_copy_batch_large", {819, 819}},
      {5000, "cumem_copy_batch_large", {1250, 1250, 1250, 1250}},
  };
  cumem_buffer_t* src = make(device_mr, 5000 * 16, 3);
  cumem_buffer_t* dst = make(device_mr, 5000 * 16, 0);
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.copies) + " copies");
    fake().clear();
    std::memset(ptr(dst), 0, 5000 * 16);
    const cumem_batch_statistics_t before = batch_statistics();
    CUMEM_ASSERT_OK(scatter(stream, dst, src, c.copies, 16));
    EXPECT_TRUE(arrived(dst, src));
    std::vector<unsigned> got;
    for (const FakeKernelLaunch& l : launches()) {
      EXPECT_EQ(l.kernel, c.kernel);
      EXPECT_EQ(l.param_bytes, std::string(c.kernel) == "cumem_copy_batch_small" ? 4088u : 32752u);
      got.push_back(l.copies);
    }
    EXPECT_EQ(got, c.launches);
    const cumem_batch_statistics_t after = batch_statistics();
    EXPECT_EQ(after.copy_batches_by_kernel, before.copy_batches_by_kernel + 1) << "one batch";
    EXPECT_EQ(after.copies_by_kernel, before.copies_by_kernel + c.copies);
  }
}

// Big copies, pageable memory, sources read during the call, the opt-out,
// a batch of one and raw pointers stay the driver's; the edges around them
// take the kernels.
TEST_F(KernelBatches, WhatTheKernelsLeaveToTheDriver) {
  cumem_buffer_t* d1 = make(device_mr, 4 * 64 * KiB + 4, 1);
  cumem_buffer_t* d2 = make(device_mr, 4 * 64 * KiB + 4, 0);
  cumem_buffer_t* h = make(host_mr, 8 * KiB, 2);
  const std::string batch_line = "memcpy_batch stream=" + stream_name(stream) + " copies=2 attrs=";
  auto driver_way = [&](const char* what, cumem_status_t s, const char* attrs = "1") {
    SCOPED_TRACE(what);
    EXPECT_EQ(s, CUMEM_SUCCESS) << cumem_last_error_message();
    EXPECT_EQ(log(), (std::vector<std::string>{batch_line + attrs}));
    EXPECT_TRUE(launches().empty());
    fake().clear();
  };
  auto kernel_way = [&](const char* what, cumem_status_t s, size_t copies = 2) {
    SCOPED_TRACE(what);
    EXPECT_EQ(s, CUMEM_SUCCESS) << cumem_last_error_message();
    EXPECT_EQ(log(), (std::vector<std::string>{
                         kernel_line("cumem_copy_batch_small", stream_name(stream), copies)}));
    fake().clear();
  };
  const cumem_batch_statistics_t before = batch_statistics();
  kernel_way("two copies of 64 KiB", scatter(stream, d2, d1, 2, 64 * KiB));
  EXPECT_TRUE(arrived(d2, d1));
  driver_way("a copy of 64 KiB + 1", scatter(stream, d2, d1, 2, 64 * KiB + 1));
  EXPECT_TRUE(arrived(d2, d1));
  {
    cumem_buffer_t* dsts[] = {d2, d2};
    const cumem_buffer_t* srcs[] = {d1, h};
    const size_t dst_offsets[] = {0, 4096};
    const size_t sizes[] = {4096, 4096};
    driver_way("pageable memory on one side",
               cumem_copy_batch(stream, 2, dsts, dst_offsets, srcs, nullptr, sizes, nullptr, 0));
    EXPECT_TRUE(same_bytes(d2, 4096, h, 0, 4096));
  }
  cumem_copy_options_t during = CUMEM_COPY_OPTIONS_INIT;
  during.src_access_order = CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL;
  driver_way("a source read during the call", scatter(stream, d2, d1, 2, 4096, &during, 1));
  cumem_copy_options_t any = CUMEM_COPY_OPTIONS_INIT;
  any.src_access_order = CUMEM_COPY_SRC_ACCESS_ORDER_ANY;
  any.dst_location_hint = {CUMEM_LOCATION_HOST, 0};
  kernel_way("any source order, hints", scatter(stream, d2, d1, 2, 4096, &any, 1));
  cumem_copy_options_t options[2] = {CUMEM_COPY_OPTIONS_INIT, CUMEM_COPY_OPTIONS_INIT};
  options[1].overlap_mode = CUMEM_COPY_OVERLAP_PREFER_COMPUTE;
  driver_way("one copy prefers overlapping compute (the opt-out)",
             scatter(stream, d2, d1, 2, 4096, options, 2), "2");
  EXPECT_TRUE(arrived(d2, d1));
  {
    cumem_buffer_t* dsts[] = {d2};
    const cumem_buffer_t* srcs[] = {d1};
    const size_t sizes[] = {4096};
    EXPECT_EQ(cumem_copy_batch(stream, 1, dsts, nullptr, srcs, nullptr, sizes, nullptr, 0),
              CUMEM_SUCCESS);
    EXPECT_EQ(log(), (std::vector<std::string>{"memcpy_batch stream=" + stream_name(stream) +
                                               " copies=1 attrs=1"}))
        << "a batch of one";
    fake().clear();
  }
  {
    void* dsts[] = {ptr(d2), ptr(d2)};
    const void* srcs[] = {ptr(d1), ptr(d1)};
    const size_t dst_offsets[] = {0, 4096};
    const size_t sizes[] = {4096, 4096};
    driver_way("raw pointers", cumem_copy_batch_raw(stream, 2, dsts, dst_offsets, srcs, nullptr,
                                                    sizes, nullptr, 0));
  }
  {
    // Host-to-host copies are the host's; the rest of the batch takes the kernels.
    cumem_buffer_t* h2 = make(host_mr, 4096, 0);
    cumem_buffer_t* dsts[] = {h2, d2, d2};
    const cumem_buffer_t* srcs[] = {h, d1, d1};
    const size_t dst_offsets[] = {0, 0, 4096};
    const size_t sizes[] = {4096, 4096, 4096};
    fake().clear();
    const cumem_batch_statistics_t mixed = batch_statistics();
    CUMEM_ASSERT_OK(cumem_copy_batch(stream, 3, dsts, dst_offsets, srcs, nullptr, sizes, nullptr, 0));
    EXPECT_EQ(log(), (std::vector<std::string>{
                         "sync stream=" + stream_name(stream),
                         kernel_line("cumem_copy_batch_small", stream_name(stream), 2)}));
    EXPECT_TRUE(same_bytes(h2, 0, h, 0, 4096));
    EXPECT_TRUE(same_bytes(d2, 4096, d1, 0, 4096));
    const cumem_batch_statistics_t after = batch_statistics();
    EXPECT_EQ(after.copies, mixed.copies + 3);
    EXPECT_EQ(after.copies_by_kernel, mixed.copies_by_kernel + 2);
  }
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_EQ(after.copy_batches_by_kernel, before.copy_batches_by_kernel + 3);
  EXPECT_EQ(after.copy_batches, before.copy_batches + 9);
  EXPECT_EQ(after.copy_batches_looped, before.copy_batches_looped);
}

// A capturing stream captures the launch (a kernel node keeps its
// parameters), not a loop of memcpy nodes.
TEST_F(KernelBatches, ACapturingStreamCapturesTheLaunch) {
  cumem_buffer_t* a = make(device_mr, 8192, 1);
  cumem_buffer_t* b = make(pinned_mr, 8192, 0);
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
  {
    std::lock_guard<std::mutex> lock(fake().mutex);
    fake().capturing.push_back(native);
  }
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(scatter(stream, b, a, 2, 4096));
  EXPECT_EQ(log(), (std::vector<std::string>{
                       kernel_line("cumem_copy_batch_small", stream_name(stream), 2)}));
  EXPECT_TRUE(arrived(b, a));
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_EQ(after.copy_batches_by_kernel, before.copy_batches_by_kernel + 1);
  EXPECT_EQ(after.copy_batches_looped, before.copy_batches_looped);
  // A source read during the call still cannot be promised there.
  fake().clear();
  cumem_copy_options_t during = CUMEM_COPY_OPTIONS_INIT;
  during.src_access_order = CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL;
  CUMEM_EXPECT_ERROR(scatter(stream, b, a, 2, 4096, &during, 1), CUMEM_ERROR_INVALID_ARGUMENT,
                     "capturing a graph");
  expect_nothing_queued();
  std::lock_guard<std::mutex> lock(fake().mutex);
  fake().capturing.clear();
}

// Kernels may be launched on the legacy default stream, which the driver's
// batch calls refuse: no detour through the per-thread stream.
TEST_F(KernelBatches, TheLegacyDefaultStreamTakesTheLaunchAsItIs) {
  cumem_buffer_t* a = make(device_mr, 8192, 1);
  cumem_buffer_t* b = make(device_mr, 8192, 0);
  CUMEM_ASSERT_OK(scatter(nullptr, b, a, 2, 4096));
  EXPECT_TRUE(arrived(b, a));
  EXPECT_EQ(log(), (std::vector<std::string>{kernel_line("cumem_copy_batch_small", "legacy", 2)}));
}

// ---------------------------------------------------------------------------
// FAKE_CUDA_COPY_KERNEL=refuse and refuse_launch
// ---------------------------------------------------------------------------

// An older driver refuses CUDA 13's PTX: the batch goes the driver's way,
// and so does every later one, without loading again.
TEST_F(KernelRefused, BatchesGoTheDriversWayForTheProcess) {
  cumem_buffer_t* a = make(device_mr, 8192, 1);
  cumem_buffer_t* b = make(pinned_mr, 8192, 0);
  const cumem_batch_statistics_t before = batch_statistics();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    fake().clear();
    CUMEM_ASSERT_OK(scatter(stream, b, a, 2, 4096));
    EXPECT_TRUE(arrived(b, a));
    EXPECT_EQ(log(), (std::vector<std::string>{"memcpy_batch stream=" + stream_name(stream) +
                                               " copies=2 attrs=1"}));
  }
  EXPECT_EQ(libraries_loaded(), 1) << "refused once, not asked again";
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_EQ(after.copy_batches, before.copy_batches + 2);
  EXPECT_EQ(after.copy_batches_by_kernel, before.copy_batches_by_kernel);
  EXPECT_EQ(after.copies_by_kernel, before.copies_by_kernel);
  EXPECT_EQ(after.copy_batches_looped, before.copy_batches_looped);
}

// The code loads but its first launch is refused (deferred loading into the
// context): nothing was queued, so the batch goes the driver's way, and so
// does every later one.
TEST_F(KernelLaunchRefused, BatchesGoTheDriversWayForTheProcess) {
  cumem_buffer_t* a = make(device_mr, 8192, 1);
  cumem_buffer_t* b = make(device_mr, 8192, 0);
  const cumem_batch_statistics_t before = batch_statistics();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    fake().clear();
    CUMEM_ASSERT_OK(scatter(stream, b, a, 2, 4096));
    EXPECT_TRUE(arrived(b, a));
    EXPECT_EQ(log(), (std::vector<std::string>{"memcpy_batch stream=" + stream_name(stream) +
                                               " copies=2 attrs=1"}));
    EXPECT_TRUE(launches().empty());
  }
  EXPECT_EQ(libraries_loaded(), 1);
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_EQ(after.copy_batches_by_kernel, before.copy_batches_by_kernel);
}

}  // namespace
