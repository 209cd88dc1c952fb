// CUDA IPC of tensors (torch.multiprocessing): PyTorch asks the sending
// process's allocator for a handle of a storage (shareIpcHandle) and the
// receiving process's for a pointer to it (getIpcDevPtr). The handle string
// is libcumem's (both processes must use this allocator), in one of two
// forms, by the block:
//   a block of the framework's expandable cache (the default), large or
//     small: the pages that hold it (a virtual IPC handle: one POSIX fd per
//     page and the descriptor listing them); the receiver takes the fds
//     with pidfd_getfd (cumem_virtual_ipc_handle_from_pid), as PyTorch's
//     expandable segments do, and maps them;
//   an allocation of an IPC-enabled pool (a framework resource set to such
//     a pool, or a plain cache's small block over one): the
//     pool's fd and descriptor, and the block's descriptor; the receiver
//     takes the fd the same way, imports the pool (once per process) and
//     opens the block.
//
// Lifetime: the sender keeps the fds open while the block is allocated
// (Record::shared; the pool's for as long as the allocator lives);
// torch.multiprocessing keeps the storage alive until every receiver has
// dropped it. The receiver's mapping is unmapped when its tensor goes.
//
// String layouts (this machine's byte order: both ends are on one host):
//   pages: "CUMEMTI1", u32 pid, u32 fd count N, N x i32 fd, the descriptor
//   pool:  "CUMEMTP1", u32 pid, i32 pool fd, 160 bytes pool descriptor,
//          160 bytes block descriptor
#include <unistd.h>

#include <c10/cuda/CUDAFunctions.h>

#include <cstring>

#include "allocator.hpp"

namespace cumem_torch {

struct SharedBlock {
  std::string handle;
  std::shared_ptr<cumem_virtual_ipc_handle_t> pages;  // pages form: owns the fds
};

namespace {

constexpr char kPagesMagic[8] = {'C', 'U', 'M', 'E', 'M', 'T', 'I', '1'};
constexpr char kPoolMagic[8] = {'C', 'U', 'M', 'E', 'M', 'T', 'P', '1'};
constexpr size_t kPoolForm = 8 + 4 + 4 + 2 * CUMEM_IPC_DESCRIPTOR_SIZE;

std::string pages_form(const cumem_virtual_ipc_handle_t* h) {
  uint32_t count = 0;
  CUMEM_TORCH_OK(cumem_virtual_ipc_handle_fd_count(h, &count), "counting a handle's fds");
  size_t length = 0;
  CUMEM_TORCH_OK(cumem_virtual_ipc_handle_descriptor(h, nullptr, 0, &length),
                 "reading a handle's descriptor");
  std::string out(8 + 8 + 4 * size_t{count} + length, '\0');
  char* p = out.data();
  std::memcpy(p, kPagesMagic, 8);
  const uint32_t pid = static_cast<uint32_t>(getpid());
  std::memcpy(p + 8, &pid, 4);
  std::memcpy(p + 12, &count, 4);
  for (uint32_t i = 0; i < count; ++i) {
    int32_t fd = -1;
    CUMEM_TORCH_OK(cumem_virtual_ipc_handle_fd(h, i, &fd), "reading a handle's fd ", i);
    std::memcpy(p + 16 + 4 * size_t{i}, &fd, 4);
  }
  CUMEM_TORCH_OK(cumem_virtual_ipc_handle_descriptor(
                     h, reinterpret_cast<uint8_t*>(p + 16 + 4 * size_t{count}), length, &length),
                 "reading a handle's descriptor");
  return out;
}

std::string pool_form(const cumem_allocation_handle_t* pool, const cumem_ipc_descriptor_t& block) {
  int32_t fd = -1;
  CUMEM_TORCH_OK(cumem_allocation_handle_fd(pool, &fd), "reading a pool handle's fd");
  cumem_ipc_descriptor_t pool_descriptor;
  CUMEM_TORCH_OK(cumem_allocation_handle_descriptor(pool, &pool_descriptor),
                 "reading a pool handle's descriptor");
  std::string out(kPoolForm, '\0');
  char* p = out.data();
  std::memcpy(p, kPoolMagic, 8);
  const uint32_t pid = static_cast<uint32_t>(getpid());
  std::memcpy(p + 8, &pid, 4);
  std::memcpy(p + 12, &fd, 4);
  std::memcpy(p + 16, pool_descriptor.bytes, CUMEM_IPC_DESCRIPTOR_SIZE);
  std::memcpy(p + 16 + CUMEM_IPC_DESCRIPTOR_SIZE, block.bytes, CUMEM_IPC_DESCRIPTOR_SIZE);
  return out;
}

// The receiver's pointer: `buffer` (owned), unmapped when the tensor goes.
// Its last kernels may still run on any of this process's streams then: the
// device is waited for first.
std::shared_ptr<void> received(cumem_buffer_t* buffer, cumem_device_t* device) {
  void* ptr = nullptr;
  cumem_buffer_ptr(buffer, &ptr);
  return std::shared_ptr<void>(ptr, [buffer, device](void*) {
    cumem_device_synchronize(device);
    cumem_buffer_close(buffer, nullptr);
    cumem_buffer_release(buffer);
    cumem_device_release(device);
  });
}

cumem_device_t* current_device() {
  const int ordinal = c10::cuda::current_device();
  cumem_device_t* device = nullptr;
  CUMEM_TORCH_OK(cumem_device_get(ordinal, &device), "opening a CUDA tensor on device ", ordinal);
  return device;
}

}  // namespace

std::shared_ptr<cumem_allocation_handle_t> Allocator::pool_handle_of(cumem_resource_t* resource) {
  std::lock_guard<std::mutex> lock(ipc_mutex_);
  auto it = pool_handles_.find(resource);
  if (it != pool_handles_.end()) return it->second;
  cumem_allocation_handle_t* h = nullptr;
  CUMEM_TORCH_OK(cumem_resource_get_allocation_handle(resource, &h),
                 "exporting the IPC-enabled pool under the framework resource");
  cumem_resource_retain(resource);  // its pointer is the key: never reused meanwhile
  std::shared_ptr<cumem_allocation_handle_t> held(h, [resource](cumem_allocation_handle_t* p) {
    cumem_allocation_handle_release(p);
    cumem_resource_release(resource);
  });
  pool_handles_.emplace(resource, held);
  return held;
}

cca::ShareableHandle Allocator::shareIpcHandle(void* ptr) {
  Shard& shard = shard_of(ptr);
  std::unique_lock<cumem::core::SpinLock> lock(shard.lock);
  auto it = shard.records.find(ptr);
  CUMEM_TORCH_CHECK(it != shard.records.end(), "libcumem: cannot share ", pointer_text(ptr),
                    " with another process: not the start of an allocation of libcumem's "
                    "PyTorch allocator");
  Record& record = it->second;
  CUMEM_TORCH_CHECK(!record.pool, "libcumem: cannot share ", pointer_text(ptr),
                    " with another process: it belongs to a private pool (a CUDA graph's or a "
                    "MemPool's); clone the tensor outside the pool to share it");
  if (record.shared) return cca::ShareableHandle{0, record.shared->handle};
  auto shared = std::make_shared<SharedBlock>();
  cumem_virtual_ipc_handle_t* pages = nullptr;
  const cumem_status_t s =
      cumem_resource_get_virtual_ipc_handle_native(record.resource, ptr, record.size, &pages);
  if (s == CUMEM_SUCCESS) {
    shared->pages = std::shared_ptr<cumem_virtual_ipc_handle_t>(
        pages, [](cumem_virtual_ipc_handle_t* h) { cumem_virtual_ipc_handle_release(h); });
    shared->handle = pages_form(pages);
  } else {
    const std::string why_not_pages = cumem_last_error_message();
    CUMEM_TORCH_CHECK(s == CUMEM_ERROR_NOT_SUPPORTED, "libcumem: cannot share a CUDA tensor's "
                      "storage of ", bytes_text(record.requested), " with another process: ",
                      why_not_pages);
    // Not pages: an allocation of an IPC-enabled pool (or refused).
    cumem_ipc_descriptor_t block;
    CUMEM_TORCH_CHECK(cumem_resource_get_ipc_descriptor_native(record.resource, ptr, record.size,
                                                               &block) == CUMEM_SUCCESS,
                      "libcumem: cannot share a CUDA tensor's storage of ",
                      bytes_text(record.requested),
                      " with another process (torch.multiprocessing): as pages: ", why_not_pages,
                      "; as a pool's buffer: ", cumem_last_error_message());
    cumem_resource_t* resource = record.resource;
    lock.unlock();  // pool_handle_of takes its own lock; the record stays (PyTorch holds it)
    const std::shared_ptr<cumem_allocation_handle_t> pool = pool_handle_of(resource);
    shared->handle = pool_form(pool.get(), block);
    lock.lock();
    it = shard.records.find(ptr);
    CUMEM_TORCH_CHECK(it != shard.records.end(), "libcumem: ", pointer_text(ptr),
                      " was freed while it was being shared");
  }
  it->second.shared = shared;
  return cca::ShareableHandle{0, shared->handle};
}

std::shared_ptr<void> Allocator::getIpcDevPtr(std::string handle) {
  const bool pages = handle.size() >= 16 && std::memcmp(handle.data(), kPagesMagic, 8) == 0;
  const bool pool = handle.size() >= 16 && std::memcmp(handle.data(), kPoolMagic, 8) == 0;
  CUMEM_TORCH_CHECK(pages || pool,
                    "libcumem: cannot open a CUDA tensor of another process: its handle (",
                    handle.size(), " bytes) is not libcumem's",
                    handle.size() >= 2 && (handle[1] == 'c' || handle[1] == 'e')
                        ? " but PyTorch's own allocator's: the sending process must use "
                          "libcumem's allocator too (cumem.torch.use_libcumem_allocator() before "
                          "its first CUDA tensor), or neither may"
                        : "");
  uint32_t pid = 0;
  std::memcpy(&pid, handle.data() + 8, 4);
  if (pool) {
    CUMEM_TORCH_CHECK(handle.size() == kPoolForm, "libcumem: cannot open a CUDA tensor of "
                      "another process: its pool handle has ", handle.size(), " bytes, not ",
                      kPoolForm);
    int32_t fd = -1;
    std::memcpy(&fd, handle.data() + 12, 4);
    cumem_ipc_descriptor_t pool_descriptor, block;
    std::memcpy(pool_descriptor.bytes, handle.data() + 16, CUMEM_IPC_DESCRIPTOR_SIZE);
    std::memcpy(block.bytes, handle.data() + 16 + CUMEM_IPC_DESCRIPTOR_SIZE,
                CUMEM_IPC_DESCRIPTOR_SIZE);
    cumem_allocation_handle_t* h = nullptr;
    CUMEM_TORCH_OK(cumem_allocation_handle_from_pid(&pool_descriptor, static_cast<int32_t>(pid),
                                                    fd, &h),
                   "opening the pool of a CUDA tensor of process ", pid, " (torch.multiprocessing)");
    cumem_device_t* device = nullptr;
    cumem_resource_t* resource = nullptr;
    cumem_status_t s = CUMEM_SUCCESS;
    try {
      device = current_device();
      s = cumem_resource_from_allocation_handle(device, h, &resource);
    } catch (...) {
      cumem_allocation_handle_release(h);
      throw;
    }
    cumem_allocation_handle_release(h);
    if (s != CUMEM_SUCCESS) {
      cumem_device_release(device);
      fail(s, text("importing the pool of a CUDA tensor of process ", pid));
    }
    cumem_buffer_t* buffer = nullptr;
    s = cumem_buffer_from_ipc_descriptor(resource, &block, nullptr, &buffer);
    cumem_resource_release(resource);  // the buffer keeps it
    if (s != CUMEM_SUCCESS) {
      cumem_device_release(device);
      fail(s, text("opening a CUDA tensor of process ", pid));
    }
    return received(buffer, device);
  }
  uint32_t count = 0;
  std::memcpy(&count, handle.data() + 12, 4);
  CUMEM_TORCH_CHECK(count > 0 && handle.size() > 16 + 4 * size_t{count},
                    "libcumem: cannot open a CUDA tensor of another process: its handle of ",
                    handle.size(), " bytes is cut short (", count, " fds announced)");
  std::vector<int32_t> fds(count);
  std::memcpy(fds.data(), handle.data() + 16, 4 * size_t{count});
  const auto* descriptor = reinterpret_cast<const uint8_t*>(handle.data() + 16 + 4 * size_t{count});
  const size_t length = handle.size() - 16 - 4 * size_t{count};
  cumem_virtual_ipc_handle_t* h = nullptr;
  CUMEM_TORCH_OK(cumem_virtual_ipc_handle_from_pid(descriptor, length, static_cast<int32_t>(pid),
                                                   fds.data(), count, &h),
                 "opening a CUDA tensor of process ", pid, " (torch.multiprocessing)");
  const std::shared_ptr<cumem_virtual_ipc_handle_t> held(
      h, [](cumem_virtual_ipc_handle_t* p) { cumem_virtual_ipc_handle_release(p); });
  cumem_device_t* device = current_device();
  cumem_buffer_t* buffer = nullptr;
  const cumem_status_t s = cumem_buffer_from_virtual_ipc_handle(device, h, nullptr, &buffer);
  if (s != CUMEM_SUCCESS) {
    cumem_device_release(device);
    fail(s, text("mapping a CUDA tensor of process ", pid));
  }
  return received(buffer, device);
}

}  // namespace cumem_torch
