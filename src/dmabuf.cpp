// dma-buf export of a buffer's device memory, for communication engines
// that register memory with an RDMA NIC through dmabuf (ibv_reg_dmabuf_mr:
// NCCL, UCX, NIXL, libfabric). The rules the driver and the engines set:
//  - cuMemGetHandleForAddressRange(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD)
//    takes memory from cuMemAlloc, memory pools and cuMemMap (wholly
//    mapped, one device, one set of allocation properties), on a device
//    with CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, and a range whose start and
//    size are multiples of the host page size;
//  - a sub-allocated block is exported as the whole backing allocation
//    with the block's offset in it (a transfer engine found PyTorch's
//    sub-allocations exported with offset 0 unusable); for virtual memory
//    the allocator's own range, since cuMemGetAddressRange reports one
//    chunk of a range of several.
// The resources say what their backing allocation is (DmaBufSource,
// resources/dmabuf_source.hpp); this file checks, rounds and exports.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "buffer.hpp"
#include "capture.hpp"
#include "driver/driver.hpp"
#include "error.hpp"
#include "resources/dmabuf_source.hpp"

namespace cumem::core {
namespace {

std::string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string span_text(const DmaBufSpan& s) {
  return describe_bytes(s.size) + " at " + hex(s.base);
}

size_t host_page() {
  const long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<size_t>(page) : size_t{4096};
}

// `s` rounded out to whole host pages.
DmaBufSpan page_aligned(const DmaBufSpan& s, size_t page) {
  const uintptr_t start = s.base & ~(uintptr_t(page) - 1);
  const uintptr_t end = s.base + s.size;
  if (end < s.base || end > UINTPTR_MAX - (page - 1))
    fail(Status::invalid_argument, "the range of " + span_text(s) +
                                       " wraps past the end of the address space");
  const uintptr_t aligned_end = (end + page - 1) & ~(uintptr_t(page) - 1);
  return DmaBufSpan{start, static_cast<size_t>(aligned_end - start)};
}

void check_device(const Device& device) {
  int value = 0;
  const CUresult r = CUMEM_CU_RESULT(
      cuDeviceGetAttribute, (&value, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, device.native()));
  if (r != CUDA_SUCCESS)
    fail(Status::not_supported,
         device.describe() + " cannot export dma-bufs: the driver does not know "
                             "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (" + driver::describe(r) +
             "; dma-buf export needs a CUDA 11.7 driver or newer)");
  if (value == 0)
    fail(Status::not_supported,
         device.describe() + " does not support dma-buf export "
                             "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: the driver needs "
                             "the NVIDIA open GPU kernel modules and a Linux kernel with dma-buf "
                             "support); register its memory with the NIC another way "
                             "(nvidia-peermem) or use another transport");
}

// cuMemGetHandleForAddressRange of `s`: the fd, or the driver's error.
CUresult try_export(const DmaBufSpan& s, uint32_t flags, int* fd) {
  unsigned long long cu_flags = 0;
  if (flags & kDmaBufMappingPcie) cu_flags |= CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE;
  return CUMEM_CU_RESULT(cuMemGetHandleForAddressRange,
                         (fd, static_cast<CUdeviceptr>(s.base), s.size,
                          CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, cu_flags));
}

Status status_of(CUresult r) {
  switch (r) {
    case CUDA_ERROR_NOT_SUPPORTED: return Status::not_supported;
    case CUDA_ERROR_OUT_OF_MEMORY: return Status::out_of_memory;
    default: return Status::driver;
  }
}

DmaBuf export_ranges(const DmaBufRanges& ranges, uintptr_t first, size_t bytes, uint32_t flags) {
  if (!ranges.device)
    fail(Status::internal, "the memory's device is unknown (" + ranges.what + ")");
  const Device& device = *ranges.device;
  const size_t page = host_page();
  ScopedContext scope(device);
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  check_device(device);
  const DmaBufSpan whole = page_aligned(ranges.whole, page);
  int fd = -1;
  bool whole_allocation = true;
  DmaBufSpan used = whole;
  CUresult r = try_export(whole, flags, &fd);
  std::string refused;
  if (r != CUDA_SUCCESS) {
    refused = "cuMemGetHandleForAddressRange failed with " + driver::describe(r) +
              " while exporting " + span_text(whole) + " of " + device.describe() +
              " as a dma-buf (" + ranges.what + " that holds the buffer, " + span_text(ranges.whole) +
              (whole.base == ranges.whole.base && whole.size == ranges.whole.size
                   ? ""
                   : ", rounded out to host pages of " + std::to_string(page) + " bytes") +
              ")";
    if (ranges.chunks.size == 0)
      fail(status_of(r), refused + (r == CUDA_ERROR_INVALID_VALUE ? ranges.refusal_hint : ""));
    // The driver may refuse a range over several chunks: the chunks that
    // hold the buffer alone.
    const DmaBufSpan chunks = page_aligned(ranges.chunks, page);
    const CUresult again = try_export(chunks, flags, &fd);
    if (again != CUDA_SUCCESS)
      fail(status_of(again),
           refused + "; the chunks that hold the buffer alone (" + span_text(chunks) +
               ") were refused too, with " + driver::describe(again) +
               (r == CUDA_ERROR_INVALID_VALUE && again == CUDA_ERROR_INVALID_VALUE
                    ? ": the driver takes no range over several chunks here, so make the "
                      "buffer fit in one chunk (a chunk_size of at least the buffer's size)"
                    : ""));
    used = chunks;
    whole_allocation = false;
  }
  if (fd < 0)
    fail(Status::driver, "cuMemGetHandleForAddressRange succeeded but gave the file descriptor " +
                             std::to_string(fd) + " for " + span_text(used));
  fcntl(fd, F_SETFD, FD_CLOEXEC);  // as every fd libcumem hands out
  if (first < used.base || bytes > used.size || first - used.base > used.size - bytes) {
    ::close(fd);
    fail(Status::internal, "the exported range " + span_text(used) + " does not hold the buffer's " +
                               describe_bytes(bytes) + " at " + hex(first) + " (" + ranges.what + ")");
  }
  DmaBuf out;
  out.fd = fd;
  out.offset = first - used.base;
  out.length = used.size;
  out.address = used.base;
  out.device_id = device.ordinal();
  out.whole_allocation = whole_allocation;
  return out;
}

}  // namespace

DmaBufSpan driver_allocation(const Device& device, uintptr_t first, size_t bytes,
                             const std::string& what) {
  ScopedContext scope(device);
  RelaxedCaptureMode relaxed;
  CUdeviceptr base = 0;
  size_t size = 0;
  CUMEM_CU(cuMemGetAddressRange, (&base, &size, static_cast<CUdeviceptr>(first)),
           "finding the driver allocation of " + what + " at " + hex(first) + " to export it");
  if (first < base || bytes > size || first - base > size - bytes)
    fail(Status::driver, "cuMemGetAddressRange says the allocation at " + hex(first) + " is " +
                             describe_bytes(size) + " at " + hex(base) + ", which does not hold " +
                             "the buffer's " + describe_bytes(bytes) + " (" + what + ")");
  return DmaBufSpan{static_cast<uintptr_t>(base), size};
}

DmaBufRanges dmabuf_ranges_of(const Resource& resource, void* ptr, size_t size, uintptr_t first,
                              size_t bytes) {
  const ResourceProperties& p = resource.properties();
  switch (p.memory_kind) {
    case MemoryKind::host:
      fail(Status::not_supported,
           "pageable host memory (" + resource.describe() +
               ") cannot be exported as a dma-buf: the driver exports device memory only; "
               "register host memory with the NIC directly (ibv_reg_mr)");
    case MemoryKind::pinned:
      fail(Status::not_supported,
           "pinned host memory (" + resource.describe() +
               ") is not exported as a dma-buf by libcumem: register it with the NIC as host "
               "memory (ibv_reg_mr), or allocate device memory (a device, legacy device or "
               "virtual resource, or a caching adaptor over one)");
    case MemoryKind::managed:
      fail(Status::not_supported,
           "managed memory (" + resource.describe() +
               ") cannot be exported as a dma-buf: the driver exports memory from cuMemAlloc, "
               "memory pools and cuMemMap only; use a device, legacy device or virtual "
               "resource");
    case MemoryKind::device:
      break;
  }
  const auto* source = dynamic_cast<const DmaBufSource*>(&resource);
  if (!source)
    fail(Status::not_supported,
         resource.describe() + " does not know the driver allocations behind its buffers, so "
                               "libcumem cannot export them as dma-bufs (device pools, legacy "
                               "device and virtual resources and the adaptors over them can)");
  return source->dmabuf_ranges(ptr, size, first, bytes);
}

DmaBuf Buffer::get_dmabuf(uint32_t flags) const {
  ensure_open();
  if (flags & ~kDmaBufMappingPcie)
    fail(Status::invalid_argument, "flags " + std::to_string(flags) +
                                       " include unknown bits (CUMEM_DMABUF_MAPPING_PCIE is 1)");
  if (info_.size == 0) fail(Status::invalid_argument, "an empty buffer has no dma-buf");
  // A slice is exported as its root buffer's allocation, with its offset.
  const Buffer* root = this;
  while (root->owner_ == Owner::slice && root->parent_) root = root->parent_.get();
  switch (root->owner_) {
    case Owner::resource: break;
    case Owner::registered:
      fail(Status::not_supported,
           "registered host memory (cumem_buffer_register_host) is pinned host memory, not "
           "exported as a dma-buf: register it with the NIC as host memory (ibv_reg_mr)");
    default:
      fail(Status::not_supported,
           "wrapped memory (cumem_buffer_wrap) has no resource that knows its driver "
           "allocation; export it with cuMemGetHandleForAddressRange yourself, or wrap it "
           "with cumem_buffer_wrap_owned and the resource that allocated it");
  }
  const DmaBufRanges ranges =
      dmabuf_ranges_of(*root->resource_, root->info_.ptr, root->info_.size,
                       reinterpret_cast<uintptr_t>(info_.ptr), info_.size);
  return export_ranges(ranges, reinterpret_cast<uintptr_t>(info_.ptr), info_.size, flags);
}

}  // namespace cumem::core
