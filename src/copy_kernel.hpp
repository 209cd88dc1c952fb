// Batch copies done by the SMs (cub::DeviceMemcpy::Batched's way): the
// copies of a batch as one kernel launch (or a few), their descriptors
// passed by value as the launch's parameters. For many small copies a
// launch costs the host far less than one driver copy per copy, which is
// what the driver's cuMemcpyBatchAsync costs (measured on the H200, CUDA 13:
// 100-108 % of a cuMemcpyAsync loop for 1,000 copies of 4 KiB). The kernels
// (src/copy_kernel.cu) come as PTX (src/copy_kernel_ptx.hpp), loaded once
// per device on first use; where the driver refuses them the batch goes the
// driver's way, for the rest of the process. copy_batch.cpp decides which
// batches come here.
#pragma once

#include <cstddef>

#include "device.hpp"
#include "stream.hpp"

namespace cumem::core::copy_kernel {

// The largest copy the kernel path takes. One block per copy moves about
// 64 KiB in the time a copy engine's copy of it takes over PCIe (about 1.2 us
// at the 55 GB/s measured on the H200), which is also about what one
// cuMemcpyAsync costs the host: above it a copy is no longer dominated by
// the cost of submitting it, and the copy engines do it without taking SMs
// from the kernels of the stream.
constexpr size_t kMaxCopyBytes = 64 * 1024;
// The fewest copies worth a launch: one copy has nothing to share the
// launch with, and the copy engine does it for the same host cost without
// taking SMs.
constexpr size_t kMinCopies = 2;

struct Copy {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t size = 0;  // at most kMaxCopyBytes
};

// Queues `n` copies on `stream` (null: the legacy default stream) of
// `device`, whose context is current, as ceil(n / 1637) launches of about
// equal size, each with its descriptors as parameters (a capturing stream
// captures kernel nodes that keep them). Returns false, having queued
// nothing, when the kernels cannot run on `device` (not loadable, on the
// first call per device, or refused by the driver at the first launch as
// code it cannot run: logged once at info and remembered for the process)
// or the first launch failed otherwise (this batch only). Throws the
// driver's error for a later launch's failure (the message says how many
// copies were queued before).
bool launch(const Device& device, const Stream* stream, const Copy* copies, size_t n);

}  // namespace cumem::core::copy_kernel
