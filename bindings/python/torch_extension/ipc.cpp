// CUDA IPC of tensors (torch.multiprocessing): PyTorch asks the sending
// process's allocator for a handle of a storage (shareIpcHandle) and the
// receiving process's for a pointer to it (getIpcDevPtr). libcumem's
// framework cache shares a large block as the pages that hold it (a
// virtual IPC handle: one POSIX fd per page, and the descriptor listing
// them); the handle string carries the sender's pid and fd numbers, and the
// receiver takes the fds with pidfd_getfd (cumem_virtual_ipc_handle_from_pid),
// as PyTorch's expandable segments do. Both processes must use libcumem's
// allocator: the string is libcumem's, not PyTorch's.
//
// Lifetime: the sender keeps the fds open while the block is allocated
// (Record::shared; torch.multiprocessing keeps the storage alive until
// every receiver has dropped it). The receiver's mapping holds the
// physical pages on its own and is unmapped when its tensor goes.
//
// String layout (this machine's byte order: both ends are on one host):
//   8 bytes "CUMEMTI1", u32 pid, u32 fd count N, N x i32 fd, then the
//   descriptor's bytes (the rest).
#include <unistd.h>

#include <c10/cuda/CUDAFunctions.h>

#include <cstring>

#include "allocator.hpp"

namespace cumem_torch {

namespace {

constexpr char kMagic[8] = {'C', 'U', 'M', 'E', 'M', 'T', 'I', '1'};

std::shared_ptr<cumem_virtual_ipc_handle_t> own(cumem_virtual_ipc_handle_t* h) {
  return std::shared_ptr<cumem_virtual_ipc_handle_t>(
      h, [](cumem_virtual_ipc_handle_t* p) { cumem_virtual_ipc_handle_release(p); });
}

std::string encode(const cumem_virtual_ipc_handle_t* h) {
  uint32_t count = 0;
  CUMEM_TORCH_OK(cumem_virtual_ipc_handle_fd_count(h, &count), "counting a handle's fds");
  size_t length = 0;
  CUMEM_TORCH_OK(cumem_virtual_ipc_handle_descriptor(h, nullptr, 0, &length),
                 "reading a handle's descriptor");
  std::string out(sizeof kMagic + 8 + 4 * size_t{count} + length, '\0');
  char* p = out.data();
  std::memcpy(p, kMagic, sizeof kMagic);
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

}  // namespace

cca::ShareableHandle Allocator::shareIpcHandle(void* ptr) {
  Shard& shard = shard_of(ptr);
  std::lock_guard<std::mutex> lock(shard.mutex);
  auto it = shard.records.find(ptr);
  CUMEM_TORCH_CHECK(it != shard.records.end(), "libcumem: cannot share ", pointer_text(ptr),
                    " with another process: not the start of an allocation of libcumem's "
                    "PyTorch allocator");
  Record& record = it->second;
  CUMEM_TORCH_CHECK(!record.pool, "libcumem: cannot share ", pointer_text(ptr),
                    " with another process: it belongs to a private pool (a CUDA graph's or a "
                    "MemPool's); clone the tensor outside the pool to share it");
  if (!record.shared) {
    cumem_virtual_ipc_handle_t* h = nullptr;
    CUMEM_TORCH_OK(cumem_resource_get_virtual_ipc_handle_native(record.resource, ptr,
                                                                record.size, &h),
                   "sharing a CUDA tensor's storage of ", bytes_text(record.requested),
                   " with another process (torch.multiprocessing)");
    record.shared = own(h);
  }
  return cca::ShareableHandle{0, encode(record.shared.get())};
}

std::shared_ptr<void> Allocator::getIpcDevPtr(std::string handle) {
  CUMEM_TORCH_CHECK(handle.size() >= 16 && std::memcmp(handle.data(), kMagic, 8) == 0,
                    "libcumem: cannot open a CUDA tensor of another process: its handle (",
                    handle.size(), " bytes) is not libcumem's",
                    handle.size() >= 2 && (handle[1] == 'c' || handle[1] == 'e')
                        ? " but PyTorch's own allocator's: the sending process must use "
                          "libcumem's allocator too (cumem.torch.use_libcumem_allocator() before "
                          "its first CUDA tensor), or neither may"
                        : "");
  uint32_t pid = 0, count = 0;
  std::memcpy(&pid, handle.data() + 8, 4);
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
  const std::shared_ptr<cumem_virtual_ipc_handle_t> held = own(h);
  const int ordinal = c10::cuda::current_device();
  cumem_device_t* device = nullptr;
  CUMEM_TORCH_OK(cumem_device_get(ordinal, &device), "opening a CUDA tensor on device ", ordinal);
  cumem_buffer_t* buffer = nullptr;
  const cumem_status_t s = cumem_buffer_from_virtual_ipc_handle(device, h, nullptr, &buffer);
  if (s != CUMEM_SUCCESS) {
    cumem_device_release(device);
    fail(s, text("mapping a CUDA tensor of process ", pid, " on device ", ordinal));
  }
  void* ptr = nullptr;
  cumem_buffer_ptr(buffer, &ptr);
  // The tensor's last kernels may still run on any of this process's
  // streams when it goes: the device is waited for, then the mapping goes.
  return std::shared_ptr<void>(ptr, [buffer, device](void*) {
    cumem_device_synchronize(device);
    cumem_buffer_close(buffer, nullptr);
    cumem_buffer_release(buffer);
    cumem_device_release(device);
  });
}

}  // namespace cumem_torch
