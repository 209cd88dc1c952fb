// Batches of small copies on libcumem's copy kernels (SM copies), on a GPU:
// the bytes of 1,000 copies of 4 KiB device to device, device to pinned host
// and pinned host to device (pinned pools and cuMemHostAlloc), of managed
// memory, of odd sizes at unaligned offsets (every relative alignment, and
// nothing written outside the regions), of batches split into several
// launches, on the legacy default stream after work queued there, under a
// CUDA graph capture (the graph run twice, reading the sources at each run),
// and the opt-out (CUMEM_COPY_OVERLAP_PREFER_COMPUTE). The kernels are PTX of
// CUDA 13.0: an older driver refuses them, and the tests then check that the
// batches went the driver's way with the same bytes.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "batches_gpu_fixture.hpp"

namespace {

constexpr size_t KiB = 1024;

bool kernels_expected() {
  int32_t v = 0;
  EXPECT_EQ(cumem_driver_version(&v), CUMEM_SUCCESS);
  return v >= 13000;
}

class CopyKernelGpu : public BatchGpuTest {
 protected:
  // n copies of `size` bytes from slot i of `src` to a shuffled slot of
  // `dst`, as one batch on `s`; `want` becomes what `dst` must then hold,
  // from `data` (src's bytes) over `before` (dst's).
  cumem_status_t scatter(cumem_stream_t* s, cumem_buffer_t* dst, cumem_buffer_t* src, size_t n,
                         size_t size, const std::vector<uint8_t>& data,
                         std::vector<uint8_t>& want, const cumem_copy_options_t* options = nullptr,
                         size_t num_options = 0) {
    std::vector<size_t> slots(n);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), std::mt19937(static_cast<unsigned>(n + size)));
    src_offsets.assign(n, 0);
    dst_offsets.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      src_offsets[i] = i * size;
      dst_offsets[i] = slots[i] * size;
      std::memcpy(want.data() + dst_offsets[i], data.data() + src_offsets[i], size);
    }
    sizes.assign(n, size);
    std::vector<cumem_buffer_t*> dsts(n, dst);
    std::vector<const cumem_buffer_t*> srcs(n, src);
    return cumem_copy_batch(s, n, dsts.data(), dst_offsets.data(), srcs.data(), src_offsets.data(),
                            sizes.data(), options, num_options);
  }
  void expect_by_kernel(const cumem_batch_statistics_t& before, uint64_t batches, uint64_t copies) {
    const cumem_batch_statistics_t after = batch_statistics();
    if (kernels_expected()) {
      EXPECT_EQ(after.copy_batches_by_kernel, before.copy_batches_by_kernel + batches);
      EXPECT_EQ(after.copies_by_kernel, before.copies_by_kernel + copies);
    } else {
      EXPECT_EQ(after.copy_batches_by_kernel, before.copy_batches_by_kernel)
          << "a driver older than 13.0 refuses the kernels' PTX";
    }
    EXPECT_EQ(after.copy_batches_looped, before.copy_batches_looped);
  }

  std::vector<size_t> src_offsets, dst_offsets, sizes;
};

// Issue 22's batch, each way.
TEST_F(CopyKernelGpu, ThousandCopiesOf4KiBEachWay) {
  struct Pair {
    const char* name;
    cumem_resource_t* from;
    cumem_resource_t* to;
  };
  const Pair pairs[] = {{"device -> device", device_mr, device_mr},
                        {"device -> pinned pool", device_mr, pinned_mr},
                        {"device -> cuMemHostAlloc", device_mr, legacy_pinned_mr},
                        {"pinned pool -> device", pinned_mr, device_mr},
                        {"cuMemHostAlloc -> device", legacy_pinned_mr, device_mr}};
  const size_t n = 1000, size = 4 * KiB;
  unsigned seed = 22;
  for (const Pair& p : pairs) {
    SCOPED_TRACE(p.name);
    cumem_buffer_t* src = make(p.from, n * size);
    cumem_buffer_t* dst = make(p.to, n * size);
    const std::vector<uint8_t> data = random_bytes(n * size, seed++);
    write(src, data);
    write(dst, std::vector<uint8_t>(n * size, 0));
    std::vector<uint8_t> want(n * size, 0);
    const cumem_batch_statistics_t before = batch_statistics();
    CUMEM_ASSERT_OK(scatter(stream, dst, src, n, size, data, want));
    EXPECT_TRUE(read(dst, n * size) == want);
    expect_by_kernel(before, 1, n);
  }
}

// Every relative alignment of the two sides (16, 8, 4, 2 and 1-byte words)
// and sizes with heads and tails; the bytes between the regions stay.
TEST_F(CopyKernelGpu, OddSizesAtUnalignedOffsets) {
  const size_t lengths[] = {1, 3, 15, 17, 4095, 2, 7, 8, 16, 31, 4096, 4097, 65535, 65536};
  const size_t src_shifts[] = {0, 1, 3, 8, 15};
  const size_t dst_shifts[] = {0, 1, 2, 4, 8, 13};
  std::vector<size_t> so, dof, len;
  size_t src_size = 0, dst_size = 0;
  for (size_t l : lengths)
    for (size_t s : src_shifts)
      for (size_t d : dst_shifts) {
        src_size = (src_size + 15) / 16 * 16 + s;
        dst_size = (dst_size + 15) / 16 * 16 + 32 + d;
        so.push_back(src_size);
        dof.push_back(dst_size);
        len.push_back(l);
        src_size += l;
        dst_size += l;
      }
  dst_size += 32;
  const size_t n = len.size();
  struct Pair {
    const char* name;
    cumem_resource_t* from;
    cumem_resource_t* to;
  };
  const Pair pairs[] = {{"device -> device", device_mr, device_mr},
                        {"device -> pinned", device_mr, pinned_mr},
                        {"pinned -> device", legacy_pinned_mr, device_mr}};
  unsigned seed = 5;
  for (const Pair& p : pairs) {
    SCOPED_TRACE(p.name);
    cumem_buffer_t* src = make(p.from, src_size);
    cumem_buffer_t* dst = make(p.to, dst_size);
    const std::vector<uint8_t> data = random_bytes(src_size, seed++);
    write(src, data);
    write(dst, std::vector<uint8_t>(dst_size, 0xEE));
    std::vector<uint8_t> want(dst_size, 0xEE);
    for (size_t i = 0; i < n; ++i) std::memcpy(want.data() + dof[i], data.data() + so[i], len[i]);
    std::vector<cumem_buffer_t*> dsts(n, dst);
    std::vector<const cumem_buffer_t*> srcs(n, src);
    const cumem_batch_statistics_t before = batch_statistics();
    CUMEM_ASSERT_OK(cumem_copy_batch(stream, n, dsts.data(), dof.data(), srcs.data(), so.data(),
                                     len.data(), nullptr, 0));
    const std::vector<uint8_t> got = read(dst, dst_size);
    for (size_t i = 0; i < n; ++i)
      EXPECT_EQ(std::memcmp(got.data() + dof[i], want.data() + dof[i], len[i]), 0)
          << "copy " << i << ": " << len[i] << " bytes, source offset " << so[i]
          << ", destination offset " << dof[i];
    EXPECT_TRUE(got == want) << "the bytes between the regions stay too";
    expect_by_kernel(before, 1, n);
  }
}

// 5,000 copies: four launches (at most 1,637 copies each); managed memory.
TEST_F(CopyKernelGpu, ManyLaunchesAndManagedMemory) {
  const size_t n = 5000, size = 64;
  cumem_buffer_t* src = make(device_mr, n * size);
  cumem_buffer_t* dst = make(legacy_pinned_mr, n * size);
  const std::vector<uint8_t> data = random_bytes(n * size, 9);
  write(src, data);
  write(dst, std::vector<uint8_t>(n * size, 0));
  std::vector<uint8_t> want(n * size, 0);
  cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(scatter(stream, dst, src, n, size, data, want));
  EXPECT_TRUE(read(dst, n * size) == want);
  expect_by_kernel(before, 1, n);

  cumem_resource_t* managed = nullptr;
  CUMEM_ASSERT_OK(cumem_managed_resource_create(device, nullptr, &managed));
  cumem_buffer_t* m = make(managed, 256 * 4 * KiB);  // 1 MiB
  cumem_resource_release(managed);  // the buffer keeps it
  const std::vector<uint8_t> mdata = random_bytes(256 * 4 * KiB, 10);
  write(m, mdata);
  cumem_buffer_t* d = make(device_mr, 256 * 4 * KiB);
  write(d, std::vector<uint8_t>(256 * 4 * KiB, 0));
  std::vector<uint8_t> mwant(256 * 4 * KiB, 0);
  before = batch_statistics();
  CUMEM_ASSERT_OK(scatter(stream, d, m, 256, 4 * KiB, mdata, mwant));
  EXPECT_TRUE(read(d, 256 * 4 * KiB) == mwant);
  expect_by_kernel(before, 1, 256);
}

// The legacy default stream: the launch runs after a fill queued there
// (256 MiB, still running, probably) and before a copy queued after it.
TEST_F(CopyKernelGpu, TheLegacyDefaultStreamKeepsItsOrder) {
  const size_t big = size_t{256} << 20;
  cumem_buffer_t* src = make(device_mr, big);
  cumem_buffer_t* dst = make(device_mr, 64 * KiB);
  cumem_buffer_t* out = make(device_mr, 64 * KiB);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_ASSERT_OK(cumem_buffer_fill(src, 0x00, 1, nullptr));
  CUMEM_ASSERT_OK(cumem_buffer_fill(src, 0x3B, 1, nullptr));
  std::vector<cumem_buffer_t*> dsts(16, dst);
  std::vector<const cumem_buffer_t*> srcs(16, src);
  std::vector<size_t> so(16), dof(16), len(16, 4 * KiB);
  for (size_t i = 0; i < 16; ++i) {
    so[i] = big - (i + 1) * 4 * KiB;  // the end of the fill
    dof[i] = i * 4 * KiB;
  }
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(cumem_copy_batch(nullptr, 16, dsts.data(), dof.data(), srcs.data(), so.data(),
                                   len.data(), nullptr, 0));
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(dst, out, nullptr));
  cumem_stream_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_legacy_default(device, &legacy));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(legacy));
  cumem_stream_release(legacy);
  EXPECT_TRUE(read(out, 64 * KiB) == std::vector<uint8_t>(64 * KiB, 0x3B));
  expect_by_kernel(before, 1, 16);
}

// Under a graph capture the launch is captured as kernel nodes that keep
// the descriptors: nothing runs at capture, each run of the graph copies
// the sources as they are then.
TEST_F(CopyKernelGpu, AGraphCaptureKeepsTheCopies) {
  const size_t n = 1000, size = 4 * KiB;
  cumem_buffer_t* src = make(device_mr, n * size);
  cumem_buffer_t* dev = make(device_mr, n * size);
  cumem_buffer_t* host = make(pinned_mr, n * size);
  const std::vector<uint8_t> first = random_bytes(n * size, 31);
  write(src, first);
  write(dev, std::vector<uint8_t>(n * size, 0));
  write(host, std::vector<uint8_t>(n * size, 0));
  std::vector<uint8_t> want_dev(n * size, 0), want_host(n * size, 0);
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_THREAD_LOCAL));
  CUMEM_ASSERT_OK(scatter(stream, dev, src, n, size, first, want_dev));
  const std::vector<size_t> dev_offsets = dst_offsets;
  // Device to pinned, the same sources to other slots.
  CUMEM_ASSERT_OK(scatter(stream, host, src, n / 2, 2 * size, first, want_host));
  cumem_graph_t* graph = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_end_capture_graph(stream, nullptr, &graph));
  expect_by_kernel(before, 2, n + n / 2);
  EXPECT_TRUE(read(dev, n * size) == std::vector<uint8_t>(n * size, 0)) << "nothing ran yet";
  CUMEM_ASSERT_OK(cumem_graph_launch(graph, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  EXPECT_TRUE(read(dev, n * size) == want_dev);
  EXPECT_TRUE(read(host, n * size) == want_host);
  // New sources, the same graph: its nodes read them at the run.
  const std::vector<uint8_t> second = random_bytes(n * size, 32);
  write(src, second);
  std::vector<uint8_t> want2(n * size, 0);
  for (size_t i = 0; i < n; ++i)
    std::memcpy(want2.data() + dev_offsets[i], second.data() + i * size, size);
  CUMEM_ASSERT_OK(cumem_graph_launch(graph, stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  EXPECT_TRUE(read(dev, n * size) == want2);
  cumem_graph_release(graph);
}

// CUMEM_COPY_OVERLAP_PREFER_COMPUTE keeps a batch on the copy engines.
TEST_F(CopyKernelGpu, PreferComputeKeepsTheCopyEngines) {
  const size_t n = 1000, size = 4 * KiB;
  cumem_buffer_t* src = make(device_mr, n * size);
  cumem_buffer_t* dst = make(legacy_pinned_mr, n * size);
  const std::vector<uint8_t> data = random_bytes(n * size, 44);
  write(src, data);
  write(dst, std::vector<uint8_t>(n * size, 0));
  std::vector<uint8_t> want(n * size, 0);
  cumem_copy_options_t o = CUMEM_COPY_OPTIONS_INIT;
  o.overlap_mode = CUMEM_COPY_OVERLAP_PREFER_COMPUTE;
  const cumem_batch_statistics_t before = batch_statistics();
  CUMEM_ASSERT_OK(scatter(stream, dst, src, n, size, data, want, &o, 1));
  EXPECT_TRUE(read(dst, n * size) == want);
  const cumem_batch_statistics_t after = batch_statistics();
  EXPECT_EQ(after.copy_batches_by_kernel, before.copy_batches_by_kernel);
  EXPECT_EQ(after.copy_batches_looped, before.copy_batches_looped) << "the driver's batch call";
}

}  // namespace
