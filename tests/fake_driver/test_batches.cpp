// Batches on the fake memory driver (fake_memory_cuda.cpp), whose device
// memory is host memory: the bytes that arrive, what libcumem queues on the
// driver (one batch call, or the loop), the checks done before anything is
// queued, and the statistics. Registered several times (meson.build):
//   Batch*, Managed*       a CUDA 13.0 driver with every batch call, without
//                          loaded code (so no copy kernels: the driver's way;
//                          test_batches_kernel.cpp has them);
//   Loop*                  FAKE_CUDA_NO_BATCH: a driver without them;
//   Cuda128*               FAKE_CUDA_VERSION=12080: 12.8's cuMemcpyBatchAsync.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "batches_fixture.hpp"

namespace {

using namespace batches_test;

// ---------------------------------------------------------------------------
// Copies, CUDA 13.0
// ---------------------------------------------------------------------------

TEST_F(Batches, CopiesOfEveryKindArriveInOneDriverCall) {
  cumem_buffer_t* d1 = make(device_mr, 4096, 1);
  cumem_buffer_t* d2 = make(device_mr, 4096, 2);
  cumem_buffer_t* d3 = make(device_mr, 4096, 3);
  cumem_buffer_t* p1 = make(pinned_mr, 4096, 4);
  cumem_buffer_t* p2 = make(pinned_mr, 8192, 5);
  // Pinned to device, device to device, device to pinned twice; copy 2
  // reads what copy 1 reads (sources may overlap), copy 3 writes the half
  // of p2 next to the half copy 0 reads.
  cumem_buffer_t* dsts[] = {d1, d2, p1, p2};
  const cumem_buffer_t* srcs[] = {p2, d3, d3, d3};
  size_t dst_offsets[] = {0, 1000, 7, 1};
  const size_t src_offsets[] = {4096, 0, 100, 0};
  const size_t sizes[] = {4096, 3000, 3989, 4096};
  std::vector<std::vector<unsigned char>> want;
  for (int i = 0; i < 4; ++i) {
    const auto* s = static_cast<const unsigned char*>(ptr(const_cast<cumem_buffer_t*>(srcs[i])));
    want.emplace_back(s + src_offsets[i], s + src_offsets[i] + sizes[i]);
  }
  // At offset 1, copy 3 would write one byte of what copy 0 reads.
  CUMEM_EXPECT_ERROR(cumem_copy_batch(stream, 4, dsts, dst_offsets, srcs, src_offsets, sizes,
                                      nullptr, 0),
                     CUMEM_ERROR_INVALID_ARGUMENT,
                     "copy 3 of the batch writes its destination");
  EXPECT_NE(std::string(cumem_last_error_message()).find("of copy 0"), std::string::npos)
      << cumem_last_error_message();
  expect_nothing_queued();
  dst_offsets[3] = 0;
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 4, dsts, dst_offsets, srcs, src_offsets, sizes,
                                   nullptr, 0));
  for (int i = 0; i < 4; ++i) {
    const auto* d = static_cast<const unsigned char*>(ptr(dsts[i])) + dst_offsets[i];
    EXPECT_EQ(std::memcmp(d, want[i].data(), sizes[i]), 0) << "copy " << i;
  }
  const std::vector<std::string> calls = log();
  ASSERT_EQ(calls.size(), 1u) << calls[0];
  EXPECT_EQ(calls[0], "memcpy_batch stream=" + stream_name(stream) + " copies=4 attrs=1");
  ASSERT_EQ(fake().last_attrs.size(), 1u);
  EXPECT_EQ(fake().last_attrs[0].src_access_order, 1) << "stream order by default";
  EXPECT_EQ(fake().last_attrs[0].src_hint_type, 0);
  EXPECT_EQ(fake().last_attrs[0].flags, 0u);
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_TRUE(after.driver_copy_batch);
  EXPECT_TRUE(after.driver_prefetch_batch);
  EXPECT_TRUE(after.driver_discard_batch);
  EXPECT_EQ(after.copy_batches, before.copy_batches + 1);
  EXPECT_EQ(after.copies, before.copies + 4);
  EXPECT_EQ(after.copy_batches_looped, before.copy_batches_looped);
  EXPECT_EQ(after.copies_looped, before.copies_looped);
  EXPECT_EQ(after.copy_batches_by_kernel, before.copy_batches_by_kernel)
      << "a driver without loaded code has no copy kernels";
  EXPECT_EQ(after.copies_by_kernel, before.copies_by_kernel);
}

TEST_F(Batches, NullSizesMeanWholeBuffersOfEqualLength) {
  cumem_buffer_t* a = make(device_mr, 512, 10);
  cumem_buffer_t* b = make(device_mr, 512, 20);
  cumem_buffer_t* c = make(pinned_mr, 600, 30);
  cumem_buffer_t* dsts[] = {b, c};
  const cumem_buffer_t* srcs[] = {a, a};
  // c is 600 bytes, a 512: with no sizes, copy 1 must be whole buffers.
  CUMEM_EXPECT_ERROR(cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0),
                     CUMEM_ERROR_SIZE_MISMATCH, "copy 1 of the batch: the source has 512 bytes");
  expect_nothing_queued();
  // With an offset of 88 into c, the rest of c is 512 bytes.
  const size_t dst_offsets[] = {0, 88};
  CUMEM_ASSERT_OK(
      cumem_copy_batch(stream, 2, dsts, dst_offsets, srcs, nullptr, nullptr, nullptr, 0));
  EXPECT_TRUE(same_bytes(b, 0, a, 0, 512));
  EXPECT_TRUE(same_bytes(c, 88, a, 0, 512));
}

TEST_F(Batches, EveryCopyIsCheckedBeforeAnythingIsQueued) {
  cumem_buffer_t* a = make(device_mr, 1024, 1);
  cumem_buffer_t* b = make(device_mr, 1024, 2);
  cumem_buffer_t* c = make(device_mr, 1024, 3);
  cumem_buffer_t* dsts[] = {b, c};
  const cumem_buffer_t* srcs[] = {a, a};
  size_t sizes[] = {100, 100};
  size_t dst_offsets[] = {0, 0};
  size_t src_offsets[] = {0, 0};
  auto run = [&] {
    return cumem_copy_batch(stream, 2, dsts, dst_offsets, srcs, src_offsets, sizes, nullptr, 0);
  };
  // A region past its buffer's end, named by index.
  dst_offsets[1] = 1000;
  CUMEM_EXPECT_ERROR(run(), CUMEM_ERROR_OUT_OF_RANGE,
                     "copy 1 of the batch: the destination region [1000, 1000 + 100) overruns");
  dst_offsets[1] = 0;
  src_offsets[0] = SIZE_MAX;
  CUMEM_EXPECT_ERROR(run(), CUMEM_ERROR_OUT_OF_RANGE, "copy 0 of the batch: the source region");
  src_offsets[0] = 0;
  // One copy's source and destination overlapping, in one buffer.
  srcs[0] = c;
  dsts[1] = a;
  dst_offsets[1] = 50;
  CUMEM_EXPECT_ERROR(run(), CUMEM_ERROR_INVALID_ARGUMENT,
                     "copy 1 of the batch: its source");
  srcs[0] = a;
  // Two destinations overlapping.
  dsts[1] = b;
  CUMEM_EXPECT_ERROR(run(), CUMEM_ERROR_INVALID_ARGUMENT,
                     "copy 0 of the batch and copy 1 have overlapping destinations");
  dst_offsets[1] = 100;  // adjacent, not overlapping: fine
  expect_nothing_queued();
  CUMEM_ASSERT_OK(run());
  EXPECT_TRUE(same_bytes(b, 100, a, 0, 100));
  fake().clear();
  // Sources may overlap each other (the same bytes read twice).
  dsts[1] = c;
  CUMEM_ASSERT_OK(run());
  fake().clear();
  // A closed buffer.
  CUMEM_ASSERT_OK(cumem_buffer_close(c, stream));
  fake().clear();
  CUMEM_EXPECT_ERROR(run(), CUMEM_ERROR_BUFFER_CLOSED,
                     "copy 1 of the batch: its destination buffer (dsts[1]) was closed");
  srcs[0] = c;
  dsts[1] = b;
  CUMEM_EXPECT_ERROR(run(), CUMEM_ERROR_BUFFER_CLOSED, "its source buffer (srcs[0])");
  srcs[0] = a;
  // Handles: NULL, released or of another type, named by element.
  dsts[1] = nullptr;
  CUMEM_EXPECT_ERROR(run(), CUMEM_ERROR_INVALID_ARGUMENT, "'dsts[1]' must not be NULL");
  dsts[1] = reinterpret_cast<cumem_buffer_t*>(device_mr);
  CUMEM_EXPECT_ERROR(run(), CUMEM_ERROR_INVALID_ARGUMENT, "'dsts[1]'");
  dsts[1] = b;
  cumem_buffer_t* gone = make(device_mr, 64, 0);
  buffers.pop_back();
  CUMEM_ASSERT_OK(cumem_buffer_release(gone));
  fake().clear();
  srcs[1] = gone;
  CUMEM_EXPECT_ERROR(run(), CUMEM_ERROR_INVALID_ARGUMENT, "'srcs[1]'");
  // Arrays: NULL only with count 0.
  CUMEM_EXPECT_ERROR(cumem_copy_batch(stream, 2, nullptr, nullptr, srcs, nullptr, sizes, nullptr, 0),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'dsts' must not be NULL with a count of 2");
  CUMEM_EXPECT_ERROR(cumem_copy_batch(stream, 2, dsts, nullptr, nullptr, nullptr, sizes, nullptr, 0),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'srcs'");
  expect_nothing_queued();
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0));
  expect_nothing_queued();
}

TEST_F(Batches, EmptyCopiesCopyNothingAndAreNotCounted) {
  cumem_buffer_t* a = make(device_mr, 256, 1);
  cumem_buffer_t* b = make(device_mr, 256, 2);
  cumem_buffer_t* dsts[] = {b, b};
  const cumem_buffer_t* srcs[] = {a, a};
  const size_t sizes[] = {0, 256};
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, sizes, nullptr, 0));
  EXPECT_TRUE(same_bytes(a, 0, b, 0, 256));
  ASSERT_EQ(log().size(), 1u);
  EXPECT_NE(log()[0].find("copies=1 "), std::string::npos) << log()[0];
  EXPECT_EQ(batch_statistics().copies, before.copies + 1);
  // A batch of empty copies only queues nothing and counts nothing.
  fake().clear();
  const size_t none[] = {0, 0};
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, none, nullptr, 0));
  expect_nothing_queued();
  EXPECT_EQ(batch_statistics().copy_batches, before.copy_batches + 1);
}

TEST_F(Batches, OptionsOnePerCopyReachTheDriverAsRuns) {
  std::vector<cumem_buffer_t*> dsts;
  std::vector<const cumem_buffer_t*> srcs;
  cumem_buffer_t* src = make(managed_mr, 4 * 4096, 7);
  std::vector<size_t> src_offsets;
  const std::vector<size_t> sizes(4, 4096);
  for (size_t i = 0; i < 4; ++i) {
    dsts.push_back(make(device_mr, 4096, 0));
    srcs.push_back(src);
    src_offsets.push_back(i * 4096);
  }
  cumem_copy_options_t plain = CUMEM_COPY_OPTIONS_INIT;
  cumem_copy_options_t hinted = CUMEM_COPY_OPTIONS_INIT;
  hinted.src_access_order = CUMEM_COPY_SRC_ACCESS_ORDER_ANY;
  hinted.src_location_hint = {CUMEM_LOCATION_HOST, 0};
  hinted.dst_location_hint = {CUMEM_LOCATION_DEVICE, 0};
  hinted.overlap_mode = CUMEM_COPY_OVERLAP_PREFER_COMPUTE;
  const cumem_copy_options_t options[] = {plain, plain, hinted, plain};
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 4, dsts.data(), nullptr, srcs.data(), src_offsets.data(),
                                   sizes.data(), options, 4));
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(same_bytes(dsts[i], 0, src, i * 4096, 4096)) << i;
  ASSERT_EQ(fake().last_attr_indices, (std::vector<size_t>{0, 2, 3}));
  ASSERT_EQ(fake().last_attrs.size(), 3u);
  const FakeCopyAttributes& h = fake().last_attrs[1];
  EXPECT_EQ(h.src_access_order, 3) << "CU_MEMCPY_SRC_ACCESS_ORDER_ANY";
  EXPECT_EQ(h.src_hint_type, 2) << "CU_MEM_LOCATION_TYPE_HOST";
  EXPECT_EQ(h.dst_hint_type, 1);
  EXPECT_EQ(h.dst_hint_id, 0);
  EXPECT_EQ(h.flags, 1u) << "CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE";
  EXPECT_EQ(fake().last_attrs[0].src_access_order, 1);
  EXPECT_EQ(fake().last_attrs[2].src_access_order, 1);
  // One set for every copy goes once.
  fake().clear();
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 4, dsts.data(), nullptr, srcs.data(), src_offsets.data(),
                                   sizes.data(), &hinted, 1));
  EXPECT_EQ(fake().last_attr_indices, (std::vector<size_t>{0}));
  EXPECT_EQ(fake().last_attrs[0].src_access_order, 3);
  // During-API-call: the driver keeps the promise (no wait of ours).
  fake().clear();
  cumem_copy_options_t during = CUMEM_COPY_OPTIONS_INIT;
  during.src_access_order = CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL;
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 4, dsts.data(), nullptr, srcs.data(), src_offsets.data(),
                                   sizes.data(), &during, 1));
  EXPECT_EQ(fake().last_attrs[0].src_access_order, 2);
  EXPECT_EQ(fake().count("sync"), 0u);
}

TEST_F(Batches, OptionsFromAnOlderCallerUseTheirStructSizeAsStride) {
  cumem_buffer_t* a = make(device_mr, 64, 1);
  cumem_buffer_t* b = make(device_mr, 64, 2);
  cumem_buffer_t* c = make(device_mr, 64, 3);
  cumem_buffer_t* dsts[] = {b, c};
  const cumem_buffer_t* srcs[] = {a, a};
  // An older cumem_copy_options_t that ended after src_location_hint (16
  // bytes): dst_location_hint and overlap_mode keep their defaults.
  uint32_t old[2][4] = {{16, CUMEM_COPY_SRC_ACCESS_ORDER_ANY, CUMEM_LOCATION_HOST, 0},
                        {16, CUMEM_COPY_SRC_ACCESS_ORDER_STREAM, CUMEM_LOCATION_NONE, 0}};
  const auto* options = reinterpret_cast<const cumem_copy_options_t*>(old);
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, options, 2));
  ASSERT_EQ(fake().last_attrs.size(), 2u);
  EXPECT_EQ(fake().last_attrs[0].src_access_order, 3);
  EXPECT_EQ(fake().last_attrs[0].src_hint_type, 2);
  EXPECT_EQ(fake().last_attrs[0].dst_hint_type, 0);
  EXPECT_EQ(fake().last_attrs[1].src_access_order, 1);
  fake().clear();
  // Every struct of the array must have the same struct_size.
  old[1][0] = 12;
  CUMEM_EXPECT_ERROR(
      cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, options, 2),
      CUMEM_ERROR_INVALID_ARGUMENT, "options[1].struct_size is 12 but options[0]'s is 16");
  // A struct_size inside a field is refused as everywhere.
  old[0][0] = 10;
  old[1][0] = 10;
  CUMEM_EXPECT_ERROR(
      cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, options, 1),
      CUMEM_ERROR_INVALID_ARGUMENT, "not a multiple of 4");
  old[0][0] = 0;
  CUMEM_EXPECT_ERROR(
      cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, options, 1),
      CUMEM_ERROR_INVALID_ARGUMENT, "zero-filled");
  EXPECT_NE(std::string(cumem_last_error_message()).find("cumem_copy_options_init()"),
            std::string::npos);
  expect_nothing_queued();
}

TEST_F(Batches, BadOptionsAreRefusedByName) {
  cumem_buffer_t* a = make(device_mr, 64, 1);
  cumem_buffer_t* b = make(device_mr, 64, 2);
  cumem_buffer_t* c = make(device_mr, 64, 3);
  cumem_buffer_t* dsts[] = {b, c, b};
  const cumem_buffer_t* srcs[] = {a, a, a};
  const size_t dst_offsets[] = {0, 0, 32};
  const size_t sizes[] = {32, 32, 32};
  cumem_copy_options_t o[3] = {CUMEM_COPY_OPTIONS_INIT, CUMEM_COPY_OPTIONS_INIT,
                               CUMEM_COPY_OPTIONS_INIT};
  auto run = [&](size_t n) {
    return cumem_copy_batch(stream, 3, dsts, dst_offsets, srcs, nullptr, sizes, o, n);
  };
  CUMEM_EXPECT_ERROR(run(2), CUMEM_ERROR_INVALID_ARGUMENT,
                     "num_options is 2 for a batch of 3 copies");
  CUMEM_EXPECT_ERROR(run(0), CUMEM_ERROR_INVALID_ARGUMENT, "num_options is 0");
  CUMEM_EXPECT_ERROR(cumem_copy_batch(stream, 3, dsts, dst_offsets, srcs, nullptr, sizes, nullptr, 1),
                     CUMEM_ERROR_INVALID_ARGUMENT, "options is NULL but num_options is 1");
  o[2].src_access_order = static_cast<cumem_copy_src_access_order_t>(7);
  CUMEM_EXPECT_ERROR(run(3), CUMEM_ERROR_INVALID_ARGUMENT,
                     "options[2].src_access_order 7 is not a source access order");
  o[2] = o[0];
  o[1].overlap_mode = static_cast<cumem_copy_overlap_mode_t>(5);
  CUMEM_EXPECT_ERROR(run(3), CUMEM_ERROR_INVALID_ARGUMENT, "options[1].overlap_mode 5");
  o[1] = o[0];
  o[0].dst_location_hint = {CUMEM_LOCATION_DEVICE, 3};
  CUMEM_EXPECT_ERROR(run(3), CUMEM_ERROR_NO_DEVICE, "options[0].dst_location_hint names device 3");
  o[0].dst_location_hint = {CUMEM_LOCATION_HOST_NUMA, 4096};
  CUMEM_EXPECT_ERROR(run(3), CUMEM_ERROR_INVALID_ARGUMENT, "names host NUMA node 4096");
  o[0].dst_location_hint = {static_cast<cumem_location_type_t>(9), 0};
  CUMEM_EXPECT_ERROR(run(3), CUMEM_ERROR_INVALID_ARGUMENT, "options[0].dst_location_hint cannot be");
  expect_nothing_queued();
  o[0].dst_location_hint = {CUMEM_LOCATION_HOST_NUMA_CURRENT, 0};
  CUMEM_ASSERT_OK(run(3));
}

TEST_F(Batches, RawPointersWithOffsets) {
  cumem_buffer_t* a = make(device_mr, 4096, 5);
  cumem_buffer_t* b = make(pinned_mr, 4096, 6);
  void* dsts[] = {ptr(b), ptr(b)};
  const void* srcs[] = {ptr(a), ptr(a)};
  const size_t dst_offsets[] = {0, 2048};
  const size_t src_offsets[] = {1024, 0};
  size_t sizes[] = {2048, 2048};
  CUMEM_ASSERT_OK(
      cumem_copy_batch_raw(stream, 2, dsts, dst_offsets, srcs, src_offsets, sizes, nullptr, 0));
  EXPECT_TRUE(same_bytes(b, 0, a, 1024, 2048));
  EXPECT_TRUE(same_bytes(b, 2048, a, 0, 2048));
  EXPECT_EQ(fake().count("memcpy_batch"), 1u);
  fake().clear();
  // The pointer ranges are checked as buffer regions are.
  CUMEM_EXPECT_ERROR(cumem_copy_batch_raw(stream, 2, dsts, nullptr, srcs, src_offsets, sizes,
                                          nullptr, 0),
                     CUMEM_ERROR_INVALID_ARGUMENT, "have overlapping destinations");
  dsts[1] = nullptr;
  CUMEM_EXPECT_ERROR(cumem_copy_batch_raw(stream, 2, dsts, dst_offsets, srcs, src_offsets, sizes,
                                          nullptr, 0),
                     CUMEM_ERROR_INVALID_ARGUMENT, "copy 1 of the batch: dsts[1] is NULL with a size of 2048");
  dsts[1] = reinterpret_cast<void*>(UINTPTR_MAX - 100);
  CUMEM_EXPECT_ERROR(cumem_copy_batch_raw(stream, 2, dsts, nullptr, srcs, src_offsets, sizes,
                                          nullptr, 0),
                     CUMEM_ERROR_INVALID_ARGUMENT, "wraps past the end of the address space");
  CUMEM_EXPECT_ERROR(cumem_copy_batch_raw(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'sizes' must not be NULL");
  expect_nothing_queued();
  // NULL with size 0 copies nothing.
  dsts[1] = nullptr;
  sizes[1] = 0;
  CUMEM_ASSERT_OK(cumem_copy_batch_raw(stream, 2, dsts, dst_offsets, srcs, src_offsets, sizes,
                                       nullptr, 0));
  EXPECT_NE(log().at(0).find("copies=1 "), std::string::npos);
}

// The driver refuses the legacy default stream for batch calls: the batch
// runs on the per-thread default stream between two event waits.
TEST_F(Batches, TheLegacyDefaultStreamIsOrderedAroundThePerThreadStream) {
  cumem_buffer_t* a = make(device_mr, 512, 1);
  cumem_buffer_t* b = make(device_mr, 512, 2);
  cumem_buffer_t* dsts[] = {b};
  const cumem_buffer_t* srcs[] = {a};
  CUMEM_ASSERT_OK(cumem_copy_batch(nullptr, 1, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0));
  EXPECT_TRUE(same_bytes(a, 0, b, 0, 512));
  EXPECT_EQ(log(), (std::vector<std::string>{"record stream=legacy", "wait stream=ptds",
                                             "memcpy_batch stream=ptds copies=1 attrs=1",
                                             "record stream=ptds", "wait stream=legacy"}));
  // The same for a handle of the legacy default stream.
  fake().clear();
  cumem_stream_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_legacy_default(device, &legacy));
  CUMEM_ASSERT_OK(cumem_copy_batch(legacy, 1, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0));
  EXPECT_EQ(fake().count("memcpy_batch stream=ptds"), 1u);
  cumem_stream_release(legacy);
  // The per-thread default stream is a stream the driver takes as it is.
  fake().clear();
  cumem_stream_t* ptds = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_per_thread_default(device, &ptds));
  CUMEM_ASSERT_OK(cumem_copy_batch(ptds, 1, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0));
  EXPECT_EQ(log(), (std::vector<std::string>{"memcpy_batch stream=ptds copies=1 attrs=1"}));
  cumem_stream_release(ptds);
}

// The batch call has no graph form: on a capturing stream the copies go one
// by one (each captured as a memcpy node).
TEST_F(Batches, ACapturingStreamGetsTheLoop) {
  cumem_buffer_t* a = make(device_mr, 512, 1);
  cumem_buffer_t* b = make(device_mr, 512, 2);
  cumem_buffer_t* c = make(device_mr, 512, 3);
  cumem_buffer_t* dsts[] = {b, c};
  const cumem_buffer_t* srcs[] = {a, a};
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(stream, &native));
  {
    std::lock_guard<std::mutex> lock(fake().mutex);
    fake().capturing.push_back(native);
  }
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0));
  EXPECT_EQ(log(), (std::vector<std::string>{"memcpy stream=" + stream_name(stream),
                                             "memcpy stream=" + stream_name(stream)}));
  EXPECT_TRUE(same_bytes(a, 0, c, 0, 512));
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_EQ(after.copy_batches_looped, before.copy_batches_looped + 1);
  EXPECT_EQ(after.copies_looped, before.copies_looped + 2);
  // A source read during the call cannot be promised inside a capture.
  fake().clear();
  cumem_copy_options_t during = CUMEM_COPY_OPTIONS_INIT;
  during.src_access_order = CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL;
  CUMEM_EXPECT_ERROR(
      cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, &during, 1),
      CUMEM_ERROR_INVALID_ARGUMENT, "capturing a graph");
  expect_nothing_queued();
  std::lock_guard<std::mutex> lock(fake().mutex);
  fake().capturing.clear();
}

// Pageable host memory on both sides is copied by the host after the stream
// is waited for, as cumem_buffer_copy_to does; the rest of the batch goes to
// the driver.
TEST_F(Batches, HostToHostCopiesAreDoneByTheHost) {
  cumem_buffer_t* h1 = make(host_mr, 300, 1);
  cumem_buffer_t* h2 = make(host_mr, 300, 2);
  cumem_buffer_t* d1 = make(device_mr, 300, 3);
  cumem_buffer_t* dsts[] = {h2, d1};
  const cumem_buffer_t* srcs[] = {h1, h1};
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0));
  EXPECT_TRUE(same_bytes(h1, 0, h2, 0, 300));
  EXPECT_TRUE(same_bytes(h1, 0, d1, 0, 300));
  EXPECT_EQ(log(), (std::vector<std::string>{"sync stream=" + stream_name(stream),
                                             "memcpy_batch stream=" + stream_name(stream) +
                                                 " copies=1 attrs=1"}));
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_EQ(after.copies, before.copies + 2);
  EXPECT_EQ(after.copies_looped, before.copies_looped);
}

TEST_F(Batches, StatisticsFollowTheStructSizeRules) {
  cumem_batch_statistics_t s = CUMEM_BATCH_STATISTICS_INIT;
  s.struct_size = 0;
  CUMEM_EXPECT_ERROR(cumem_batch_get_statistics(&s), CUMEM_ERROR_INVALID_ARGUMENT, "zero-filled");
  // An older caller's struct that ends after copies: nothing past it written.
  struct {
    cumem_batch_statistics_t s;
  } big;
  std::memset(&big, 0xEE, sizeof big);
  big.s.struct_size = offsetof(cumem_batch_statistics_t, copies_looped);
  CUMEM_ASSERT_OK(cumem_batch_get_statistics(&big.s));
  EXPECT_EQ(big.s.struct_size, offsetof(cumem_batch_statistics_t, copies_looped));
  EXPECT_EQ(big.s.copies_looped, 0xEEEEEEEEEEEEEEEEu);
  EXPECT_EQ(big.s.driver_copy_batch, CUMEM_TRUE);
}

// ---------------------------------------------------------------------------
// Managed memory, CUDA 13.0
// ---------------------------------------------------------------------------

cumem_location_t last_prefetch(cumem_buffer_t* b) {
  cumem_location_t l = {static_cast<cumem_location_type_t>(99), 99};
  EXPECT_EQ(cumem_buffer_get_last_prefetch_location(b, &l), CUMEM_SUCCESS)
      << cumem_last_error_message();
  return l;
}

bool is(cumem_location_t l, cumem_location_type_t type, int32_t id) {
  return l.type == type && l.id == id;
}

TEST_F(Batches, ManagedPrefetchBatchGoesAsOneCallAndIsRecorded) {
  cumem_buffer_t* m[3] = {make(managed_mr, 8192, 0), make(managed_mr, 4096, 0),
                          make(managed_mr, 4096, 0)};
  EXPECT_TRUE(is(last_prefetch(m[0]), CUMEM_LOCATION_NONE, 0)) << "never prefetched";
  const cumem_location_t locations[] = {
      {CUMEM_LOCATION_DEVICE, 0}, {CUMEM_LOCATION_DEVICE, 0}, {CUMEM_LOCATION_HOST_NUMA, 0}};
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 3, m, locations, 3));
  EXPECT_EQ(log(), (std::vector<std::string>{"prefetch_batch stream=" + stream_name(stream) +
                                             " buffers=3 locations=2"}));
  EXPECT_EQ(fake().last_location_indices, (std::vector<size_t>{0, 2}));
  EXPECT_TRUE(is(last_prefetch(m[0]), CUMEM_LOCATION_DEVICE, 0));
  EXPECT_TRUE(is(last_prefetch(m[2]), CUMEM_LOCATION_HOST_NUMA, 0));
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_EQ(after.prefetch_batches, before.prefetch_batches + 1);
  EXPECT_EQ(after.prefetches, before.prefetches + 3);
  EXPECT_EQ(after.prefetch_batches_looped, before.prefetch_batches_looped);
  // One location for all.
  fake().clear();
  const cumem_location_t host = {CUMEM_LOCATION_HOST, 0};
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 3, m, &host, 1));
  EXPECT_EQ(fake().last_location_indices, (std::vector<size_t>{0}));
  for (cumem_buffer_t* b : m) EXPECT_TRUE(is(last_prefetch(b), CUMEM_LOCATION_HOST, 0));
  // A slice prefetched alone: the whole buffer's pages now differ.
  cumem_buffer_t* half = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(m[0], 0, 4096, &half));
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 1, &half, &dev, 1));
  EXPECT_TRUE(is(last_prefetch(half), CUMEM_LOCATION_DEVICE, 0));
  EXPECT_TRUE(is(last_prefetch(m[0]), CUMEM_LOCATION_NONE, 0));
  cumem_buffer_release(half);
}

int address_range_queries() {
  std::lock_guard<std::mutex> lock(fake().mutex);
  return fake().address_range_queries;
}

// Buffers that touch in one allocation and go to the same location are one
// range for the driver (its cost is per range): here slices of one buffer,
// given out of order; a different location keeps its own range. One
// cuMemGetAddressRange per range, not per buffer.
TEST_F(Batches, ManagedSlicesThatTouchArePrefetchedAsOneRange) {
  cumem_buffer_t* whole = make(managed_mr, 16384, 0);
  cumem_buffer_t* s[4] = {};
  const size_t at[4] = {8192, 0, 4096, 12288};
  for (int i = 0; i < 4; ++i) CUMEM_ASSERT_OK(cumem_buffer_slice(whole, at[i], 4096, &s[i]));
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  const cumem_batch_statistics_t before = batch_statistics();
  const int queries = address_range_queries();
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 4, s, &dev, 1));
  EXPECT_EQ(log(), (std::vector<std::string>{"prefetch_batch stream=" + stream_name(stream) +
                                             " buffers=1 locations=1"}));
  EXPECT_EQ(address_range_queries(), queries + 1);
  for (cumem_buffer_t* b : s) EXPECT_TRUE(is(last_prefetch(b), CUMEM_LOCATION_DEVICE, 0));
  EXPECT_TRUE(is(last_prefetch(whole), CUMEM_LOCATION_DEVICE, 0)) << "every page moved";
  EXPECT_EQ(batch_statistics().prefetches, before.prefetches + 4) << "counted per buffer";
  // The slice at 12288 elsewhere: [0, 12288) stays one range.
  const cumem_location_t split[4] = {dev, dev, dev, {CUMEM_LOCATION_HOST, 0}};
  fake().clear();
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 4, s, split, 4));
  EXPECT_EQ(log(), (std::vector<std::string>{"prefetch_batch stream=" + stream_name(stream) +
                                             " buffers=2 locations=2"}));
  EXPECT_TRUE(is(last_prefetch(s[3]), CUMEM_LOCATION_HOST, 0));
  EXPECT_TRUE(is(last_prefetch(s[0]), CUMEM_LOCATION_DEVICE, 0));
  // Discards and discard-and-prefetch join them the same way.
  fake().clear();
  CUMEM_ASSERT_OK(cumem_discard_batch(stream, 4, s));
  CUMEM_ASSERT_OK(cumem_discard_prefetch_batch(stream, 4, s, &dev, 1));
  EXPECT_EQ(log(), (std::vector<std::string>{
                       "discard_batch stream=" + stream_name(stream) + " buffers=1",
                       "discard_prefetch_batch stream=" + stream_name(stream) +
                           " buffers=1 locations=1"}));
  // Slices with a gap between them stay two ranges.
  cumem_buffer_t* apart[2] = {s[1], s[0]};  // [0, 4096) and [8192, 12288)
  fake().clear();
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 2, apart, &dev, 1));
  EXPECT_EQ(log(), (std::vector<std::string>{"prefetch_batch stream=" + stream_name(stream) +
                                             " buffers=2 locations=1"}));
  for (cumem_buffer_t* b : s) cumem_buffer_release(b);
}

// Separate allocations that touch (as neighbours from a pool, or from
// cuMemAllocManaged, often do on the H200): the driver refuses a range
// across two of them, so each stays its own range, and no call is refused.
TEST_F(Batches, ManagedAllocationsThatTouchStayOneRangeEach) {
  {
    std::lock_guard<std::mutex> lock(fake().mutex);
    fake().adjacent_managed = true;
  }
  cumem_buffer_t* m[3] = {make(managed_mr, 4096, 0), make(managed_mr, 4096, 0),
                          make(managed_mr, 4096, 0)};
  {
    std::lock_guard<std::mutex> lock(fake().mutex);
    fake().adjacent_managed = false;
  }
  ASSERT_EQ(static_cast<char*>(ptr(m[0])) + 4096, ptr(m[1])) << "the fake's arena";
  ASSERT_EQ(static_cast<char*>(ptr(m[1])) + 4096, ptr(m[2])) << "the fake's arena";
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  fake().clear();
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 3, m, &dev, 1));
  EXPECT_EQ(log(), (std::vector<std::string>{"prefetch_batch stream=" + stream_name(stream) +
                                             " buffers=3 locations=1"}));
  for (cumem_buffer_t* b : m) EXPECT_TRUE(is(last_prefetch(b), CUMEM_LOCATION_DEVICE, 0));
}

// A caching adaptor over managed memory gives out its large blocks (above
// 128 KiB) as pieces of its segments: those that touch go to the driver as
// one range. (Its small blocks are allocations of their own.)
TEST_F(Batches, ManagedBlocksOfACachingAdaptorTouchingInASegmentAreOneRange) {
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(managed_mr, &cache));
  constexpr int kBlocks = 16;
  constexpr size_t kBlock = 256 << 10;
  cumem_buffer_t* b[kBlocks] = {};
  std::vector<uintptr_t> starts;
  for (int i = 0; i < kBlocks; ++i) {
    CUMEM_ASSERT_OK(cumem_resource_allocate(cache, kBlock, stream, &b[i]));
    starts.push_back(reinterpret_cast<uintptr_t>(ptr(b[i])));
  }
  std::sort(starts.begin(), starts.end());
  size_t runs = 1;  // of blocks that touch, as this test sees them
  for (size_t i = 1; i < starts.size(); ++i) runs += starts[i] == starts[i - 1] + kBlock ? 0 : 1;
  ASSERT_LT(runs, static_cast<size_t>(kBlocks)) << "the cache carves blocks from one segment";
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  fake().clear();
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, kBlocks, b, &dev, 1));
  EXPECT_EQ(log(), (std::vector<std::string>{"prefetch_batch stream=" + stream_name(stream) +
                                             " buffers=" + std::to_string(runs) +
                                             " locations=1"}));
  for (cumem_buffer_t* x : b) {
    EXPECT_TRUE(is(last_prefetch(x), CUMEM_LOCATION_DEVICE, 0));
    EXPECT_EQ(cumem_buffer_close(x, stream), CUMEM_SUCCESS) << cumem_last_error_message();
    cumem_buffer_release(x);
  }
  cumem_resource_release(cache);
}

TEST_F(Batches, ManagedDiscardAndDiscardPrefetchBatches) {
  cumem_buffer_t* m[2] = {make(managed_mr, 4096, 0), make(managed_mr, 4096, 0)};
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(cumem_discard_batch(stream, 2, m));
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  CUMEM_ASSERT_OK(cumem_discard_prefetch_batch(stream, 2, m, &dev, 1));
  EXPECT_EQ(log(), (std::vector<std::string>{
                       "discard_batch stream=" + stream_name(stream) + " buffers=2",
                       "discard_prefetch_batch stream=" + stream_name(stream) +
                           " buffers=2 locations=1"}));
  EXPECT_TRUE(is(last_prefetch(m[1]), CUMEM_LOCATION_DEVICE, 0));
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_EQ(after.discard_batches, before.discard_batches + 2);
  EXPECT_EQ(after.discards, before.discards + 4);
  // The one-buffer calls are batches of one, and take the legacy stream.
  fake().clear();
  CUMEM_ASSERT_OK(cumem_buffer_discard(m[0], nullptr));
  const cumem_location_t host = {CUMEM_LOCATION_HOST, 0};
  CUMEM_ASSERT_OK(cumem_buffer_discard_prefetch(m[0], host, stream));
  EXPECT_EQ(log(), (std::vector<std::string>{
                       "record stream=legacy", "wait stream=ptds",
                       "discard_batch stream=ptds buffers=1", "record stream=ptds",
                       "wait stream=legacy",
                       "discard_prefetch_batch stream=" + stream_name(stream) +
                           " buffers=1 locations=1"}));
  EXPECT_TRUE(is(last_prefetch(m[0]), CUMEM_LOCATION_HOST, 0));
}

TEST_F(Batches, ManagedBatchesCheckEveryBuffer) {
  cumem_buffer_t* m = make(managed_mr, 8192, 0);
  cumem_buffer_t* d = make(device_mr, 4096, 0);
  cumem_buffer_t* closed = make(managed_mr, 4096, 0);
  CUMEM_ASSERT_OK(cumem_buffer_close(closed, stream));
  cumem_buffer_t* first = nullptr;
  cumem_buffer_t* second = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(m, 0, 4096, &first));
  CUMEM_ASSERT_OK(cumem_buffer_slice(m, 4095, 4097, &second));
  fake().clear();
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  cumem_buffer_t* list[2] = {m, d};
  CUMEM_EXPECT_ERROR(cumem_prefetch_batch(stream, 2, list, &dev, 1), CUMEM_ERROR_INVALID_ARGUMENT,
                     "buffers[1] is not managed memory");
  CUMEM_EXPECT_ERROR(cumem_discard_batch(stream, 2, list), CUMEM_ERROR_INVALID_ARGUMENT,
                     "buffers[1] is not managed memory");
  list[1] = closed;
  CUMEM_EXPECT_ERROR(cumem_discard_prefetch_batch(stream, 2, list, &dev, 1),
                     CUMEM_ERROR_BUFFER_CLOSED, "buffers[1]");
  // The same memory twice in one batch.
  list[1] = first;
  CUMEM_EXPECT_ERROR(cumem_prefetch_batch(stream, 2, list, &dev, 1), CUMEM_ERROR_INVALID_ARGUMENT,
                     "overlapping ranges");
  list[0] = first;
  list[1] = second;  // one byte of overlap
  CUMEM_EXPECT_ERROR(cumem_discard_batch(stream, 2, list), CUMEM_ERROR_INVALID_ARGUMENT,
                     "buffer 0 of the batch and buffer 1 have overlapping ranges");
  // Locations.
  const cumem_location_t bad[] = {{CUMEM_LOCATION_NONE, 0}, {CUMEM_LOCATION_DEVICE, 7}};
  cumem_buffer_t* one[] = {m};
  CUMEM_EXPECT_ERROR(cumem_prefetch_batch(stream, 1, one, bad, 1), CUMEM_ERROR_INVALID_ARGUMENT,
                     "locations[0] cannot be no location");
  CUMEM_EXPECT_ERROR(cumem_prefetch_batch(stream, 1, one, bad + 1, 1), CUMEM_ERROR_NO_DEVICE,
                     "locations[0] names device 7");
  CUMEM_EXPECT_ERROR(cumem_prefetch_batch(stream, 1, one, bad, 2), CUMEM_ERROR_INVALID_ARGUMENT,
                     "num_locations is 2 for a batch of 1 buffers");
  CUMEM_EXPECT_ERROR(cumem_prefetch_batch(stream, 1, one, nullptr, 1), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'locations'");
  CUMEM_EXPECT_ERROR(cumem_discard_batch(stream, 1, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'buffers'");
  expect_nothing_queued();
  // Empty buffers are skipped; a batch of them queues nothing.
  cumem_buffer_t* empty = make(managed_mr, 0, 0);
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 1, &empty, &dev, 1));
  expect_nothing_queued();
  EXPECT_TRUE(is(last_prefetch(empty), CUMEM_LOCATION_NONE, 0));
  // The single-buffer calls refuse other memory too.
  CUMEM_EXPECT_ERROR(cumem_buffer_discard_prefetch(d, dev, stream), CUMEM_ERROR_INVALID_ARGUMENT,
                     "managed");
  cumem_location_t out = {};
  CUMEM_EXPECT_ERROR(cumem_buffer_get_last_prefetch_location(d, &out),
                     CUMEM_ERROR_INVALID_ARGUMENT, "managed");
  CUMEM_EXPECT_ERROR(cumem_buffer_get_last_prefetch_location(closed, &out),
                     CUMEM_ERROR_BUFFER_CLOSED, "closed");
  cumem_buffer_release(first);
  cumem_buffer_release(second);
}

// Advice: the driver's rules per advice (host NUMA nodes for the preferred
// location, only a device or the host for accessed-by).
TEST_F(Batches, AdviceTakesTheLocationsTheDriverTakes) {
  cumem_buffer_t* m = make(managed_mr, 4096, 0);
  const cumem_location_t current = {CUMEM_LOCATION_HOST_NUMA_CURRENT, 0};
  const cumem_location_t node = {CUMEM_LOCATION_HOST_NUMA, 0};
  const cumem_location_t none = {CUMEM_LOCATION_NONE, 0};
  // The fake lacks cuMemAdvise: a valid location gets that far.
  CUMEM_EXPECT_ERROR(cumem_buffer_advise(m, CUMEM_ADVICE_SET_PREFERRED_LOCATION, current),
                     CUMEM_ERROR_NOT_SUPPORTED, "cuMemAdvise");
  CUMEM_EXPECT_ERROR(cumem_buffer_advise(m, CUMEM_ADVICE_UNSET_PREFERRED_LOCATION, none),
                     CUMEM_ERROR_NOT_SUPPORTED, "cuMemAdvise");
  CUMEM_EXPECT_ERROR(cumem_buffer_advise(m, CUMEM_ADVICE_SET_ACCESSED_BY, node),
                     CUMEM_ERROR_INVALID_ARGUMENT, "accessed-by advices' location cannot be host NUMA node 0");
  CUMEM_EXPECT_ERROR(cumem_buffer_advise(m, CUMEM_ADVICE_SET_PREFERRED_LOCATION, none),
                     CUMEM_ERROR_INVALID_ARGUMENT, "needs a location");
  const cumem_location_t far = {CUMEM_LOCATION_HOST_NUMA, 4096};
  CUMEM_EXPECT_ERROR(cumem_buffer_advise(m, CUMEM_ADVICE_SET_PREFERRED_LOCATION, far),
                     CUMEM_ERROR_INVALID_ARGUMENT, "which this system does not have");
  CUMEM_EXPECT_ERROR(cumem_buffer_prefetch(m, far, stream), CUMEM_ERROR_INVALID_ARGUMENT,
                     "host NUMA node 4096");
}

// ---------------------------------------------------------------------------
// copy_to with no destination
// ---------------------------------------------------------------------------

TEST_F(Batches, CopyToNewAllocatesFromTheSourcesResource) {
  cumem_buffer_t* a = make(device_mr, 1000, 9);
  const uint64_t in_use = statistics_of(device_mr).bytes_in_use;
  cumem_buffer_t* copy = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_copy_to_new(a, stream, &copy));
  buffers.push_back(copy);
  EXPECT_TRUE(same_bytes(a, 0, copy, 0, 1000));
  EXPECT_NE(ptr(copy), ptr(a));
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_resource(copy, &r));
  EXPECT_EQ(r, device_mr);
  cumem_resource_release(r);
  EXPECT_EQ(statistics_of(device_mr).bytes_in_use, in_use + 1000);
  // A slice's copy comes from its parent's resource.
  cumem_buffer_t* part = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(a, 10, 20, &part));
  cumem_buffer_t* part_copy = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_copy_to_new(part, stream, &part_copy));
  buffers.push_back(part_copy);
  EXPECT_TRUE(same_bytes(part_copy, 0, a, 10, 20));
  cumem_buffer_release(part);
  // Memory with no resource needs a destination.
  char bytes[16] = {};
  cumem_buffer_t* wrapped = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_wrap(bytes, sizeof bytes, nullptr, nullptr, &wrapped));
  cumem_buffer_t* none = nullptr;
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_to_new(wrapped, stream, &none), CUMEM_ERROR_INVALID_ARGUMENT,
                     "no resource to allocate its copy from");
  EXPECT_EQ(none, nullptr);
  cumem_buffer_release(wrapped);
  // Empty buffers give empty copies.
  cumem_buffer_t* empty = make(host_mr, 0, 0);
  CUMEM_ASSERT_OK(cumem_buffer_copy_to_new(empty, nullptr, &none));
  size_t size = 1;
  CUMEM_ASSERT_OK(cumem_buffer_size(none, &size));
  EXPECT_EQ(size, 0u);
  cumem_buffer_release(none);
}

// ---------------------------------------------------------------------------
// A driver without the batch calls
// ---------------------------------------------------------------------------

TEST_F(Batches, LoopGivesTheSameBytesOneCallPerCopy) {
  cumem_buffer_t* a = make(device_mr, 4096, 1);
  cumem_buffer_t* b = make(pinned_mr, 4096, 2);
  cumem_buffer_t* c = make(device_mr, 4096, 3);
  cumem_buffer_t* dsts[] = {b, c};
  const cumem_buffer_t* srcs[] = {a, a};
  const cumem_batch_statistics_t before = batch_statistics();
  EXPECT_FALSE(before.driver_copy_batch);
  EXPECT_FALSE(before.driver_prefetch_batch);
  EXPECT_FALSE(before.driver_discard_batch);
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0));
  EXPECT_TRUE(same_bytes(a, 0, b, 0, 4096));
  EXPECT_TRUE(same_bytes(a, 0, c, 0, 4096));
  EXPECT_EQ(log(), (std::vector<std::string>{"memcpy stream=" + stream_name(stream),
                                             "memcpy stream=" + stream_name(stream)}));
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_EQ(after.copy_batches, before.copy_batches + 1);
  EXPECT_EQ(after.copy_batches_looped, before.copy_batches_looped + 1);
  EXPECT_EQ(after.copies_looped, before.copies_looped + 2);
  // Options are honoured: hints are hints, and a source read during the
  // call is kept by waiting for the stream before returning.
  fake().clear();
  cumem_copy_options_t during = CUMEM_COPY_OPTIONS_INIT;
  during.src_access_order = CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL;
  during.dst_location_hint = {CUMEM_LOCATION_HOST, 0};
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, &during, 1));
  EXPECT_EQ(log(), (std::vector<std::string>{"memcpy stream=" + stream_name(stream),
                                             "memcpy stream=" + stream_name(stream),
                                             "sync stream=" + stream_name(stream)}));
  // The legacy default stream is the loop's as it is.
  fake().clear();
  CUMEM_ASSERT_OK(cumem_copy_batch(nullptr, 2, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0));
  EXPECT_EQ(log(), (std::vector<std::string>{"memcpy stream=legacy", "memcpy stream=legacy"}));
  // The checks are the same.
  fake().clear();
  dsts[1] = b;
  CUMEM_EXPECT_ERROR(cumem_copy_batch(stream, 2, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0),
                     CUMEM_ERROR_INVALID_ARGUMENT, "overlapping destinations");
  expect_nothing_queued();
}

TEST_F(Batches, LoopPrefetchesOneByOneAndDiscardsNeedCuda13) {
  cumem_buffer_t* m[2] = {make(managed_mr, 4096, 0), make(managed_mr, 4096, 0)};
  const cumem_location_t locations[] = {{CUMEM_LOCATION_DEVICE, 0}, {CUMEM_LOCATION_HOST, 0}};
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(cumem_prefetch_batch(nullptr, 2, m, locations, 2));
  EXPECT_EQ(log(), (std::vector<std::string>{"prefetch stream=legacy", "prefetch stream=legacy"}));
  EXPECT_TRUE(is(last_prefetch(m[0]), CUMEM_LOCATION_DEVICE, 0));
  EXPECT_TRUE(is(last_prefetch(m[1]), CUMEM_LOCATION_HOST, 0));
  EXPECT_EQ(batch_statistics().prefetch_batches_looped, before.prefetch_batches_looped + 1);
  fake().clear();
  CUMEM_EXPECT_ERROR(cumem_discard_batch(stream, 2, m), CUMEM_ERROR_NOT_SUPPORTED,
                     "cuMemDiscardBatchAsync");
  CUMEM_EXPECT_ERROR(cumem_discard_prefetch_batch(stream, 2, m, locations, 2),
                     CUMEM_ERROR_NOT_SUPPORTED, "cuMemDiscardAndPrefetchBatchAsync");
  CUMEM_EXPECT_ERROR(cumem_buffer_discard(m[0], stream), CUMEM_ERROR_NOT_SUPPORTED,
                     "cuMemDiscardBatchAsync");
  expect_nothing_queued();
}

TEST_F(Batches, LoopPrefetchesSlicesThatTouchAsOneRange) {
  cumem_buffer_t* whole = make(managed_mr, 8192, 0);
  cumem_buffer_t* s[2] = {};
  CUMEM_ASSERT_OK(cumem_buffer_slice(whole, 4096, 4096, &s[0]));
  CUMEM_ASSERT_OK(cumem_buffer_slice(whole, 0, 4096, &s[1]));
  const cumem_location_t dev = {CUMEM_LOCATION_DEVICE, 0};
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 2, s, &dev, 1));
  EXPECT_EQ(log(), (std::vector<std::string>{"prefetch stream=" + stream_name(stream)}));
  EXPECT_TRUE(is(last_prefetch(whole), CUMEM_LOCATION_DEVICE, 0));
  for (cumem_buffer_t* b : s) cumem_buffer_release(b);
}

// ---------------------------------------------------------------------------
// CUDA 12.8: the batch copy's older signature
// ---------------------------------------------------------------------------

TEST_F(Batches, Cuda128CopiesGoThroughItsSignature) {
  cumem_buffer_t* a = make(device_mr, 4096, 1);
  cumem_buffer_t* b = make(device_mr, 4096, 2);
  cumem_buffer_t* dsts[] = {b};
  const cumem_buffer_t* srcs[] = {a};
  CUMEM_ASSERT_OK(cumem_copy_batch(stream, 1, dsts, nullptr, srcs, nullptr, nullptr, nullptr, 0));
  EXPECT_TRUE(same_bytes(a, 0, b, 0, 4096));
  EXPECT_EQ(log(), (std::vector<std::string>{"memcpy_batch_12080 stream=" + stream_name(stream) +
                                             " copies=1 attrs=1"}));
  const cumem_batch_statistics_t s = batch_statistics();
  EXPECT_TRUE(s.driver_copy_batch);
  EXPECT_FALSE(s.driver_prefetch_batch);
}

TEST_F(Batches, Cuda128PrefetchesLoopAndHostNodesReadBackAsTheHost) {
  cumem_buffer_t* m = make(managed_mr, 4096, 0);
  const cumem_location_t node = {CUMEM_LOCATION_HOST_NUMA, 0};
  CUMEM_ASSERT_OK(cumem_prefetch_batch(stream, 1, &m, &node, 1));
  EXPECT_EQ(log(), (std::vector<std::string>{"prefetch stream=" + stream_name(stream)}));
  EXPECT_TRUE(is(last_prefetch(m), CUMEM_LOCATION_HOST, 0))
      << "drivers before 13.0 report every host node as the host";
  CUMEM_EXPECT_ERROR(cumem_buffer_discard(m, stream), CUMEM_ERROR_NOT_SUPPORTED, "13.0");
}

}  // namespace
