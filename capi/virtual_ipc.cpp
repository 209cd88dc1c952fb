// IPC of virtual-memory buffers: virtual IPC handles (each chunk's POSIX fd
// and the descriptor listing them), sending them over a Unix domain socket,
// and the buffer an importer maps (src/ipc/virtual_handle.hpp,
// src/resources/virtual_ipc.cpp).
#include "capi.hpp"

#include <cstring>

#include "../src/buffer.hpp"
#include "../src/ipc/virtual_handle.hpp"
#include "../src/resources/resource.hpp"
#include "../src/resources/virtual_shareable.hpp"

using namespace cumem::core;
using namespace cumem::capi;

CUMEM_EXPORT cumem_status_t cumem_buffer_get_virtual_ipc_handle(
    const cumem_buffer_t* buffer, cumem_virtual_ipc_handle_t** out_handle) {
  CUMEM_TRY
  const Buffer& b = object(buffer, "buffer");
  out(out_handle, "out_handle");
  *out_handle = to_handle<cumem_virtual_ipc_handle_t>(b.get_virtual_ipc_handle());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_get_virtual_ipc_handle_native(
    const cumem_resource_t* resource, const void* ptr, size_t size,
    cumem_virtual_ipc_handle_t** out_handle) {
  CUMEM_TRY
  const Resource& r = object(resource, "resource");
  if (!ptr) null_argument("ptr");
  out(out_handle, "out_handle");
  *out_handle = to_handle<cumem_virtual_ipc_handle_t>(
      virtual_shareable(&r, "this allocation's memory")
          .get_virtual_ipc_handle(const_cast<void*>(ptr), size));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_virtual_ipc_handle_retain(cumem_virtual_ipc_handle_t* handle) {
  CUMEM_TRY
  retain_handle(handle, "handle");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_virtual_ipc_handle_release(cumem_virtual_ipc_handle_t* handle) {
  CUMEM_TRY
  release_handle(handle, "handle");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_virtual_ipc_handle_fd_count(
    const cumem_virtual_ipc_handle_t* handle, uint32_t* out_count) {
  CUMEM_TRY
  const VirtualIpcHandle& h = object(handle, "handle");
  out(out_count, "out_count");
  *out_count = static_cast<uint32_t>(h.fds().size());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_virtual_ipc_handle_fd(const cumem_virtual_ipc_handle_t* handle,
                                                        uint32_t index, int32_t* out_fd) {
  CUMEM_TRY
  const VirtualIpcHandle& h = object(handle, "handle");
  out(out_fd, "out_fd");
  if (index >= h.fds().size())
    fail(Status::out_of_range, "index " + std::to_string(index) + " is past the handle's " +
                                   std::to_string(h.fds().size()) + " file descriptors");
  *out_fd = h.fds()[index];
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_virtual_ipc_handle_descriptor(
    const cumem_virtual_ipc_handle_t* handle, uint8_t* bytes, size_t capacity,
    size_t* out_length) {
  CUMEM_TRY
  const VirtualIpcHandle& h = object(handle, "handle");
  if (!bytes && capacity > 0) null_argument("bytes");
  out(out_length, "out_length");
  const std::vector<uint8_t>& d = h.bytes();
  if (capacity > 0) std::memcpy(bytes, d.data(), d.size() < capacity ? d.size() : capacity);
  *out_length = d.size();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_virtual_ipc_handle_from_fds(
    const uint8_t* descriptor, size_t length, const int32_t* fds, uint32_t count,
    cumem_virtual_ipc_handle_t** out_handle) {
  CUMEM_TRY
  if (!descriptor) null_argument("descriptor");
  if (!fds && count > 0) null_argument("fds");
  out(out_handle, "out_handle");
  *out_handle = to_handle<cumem_virtual_ipc_handle_t>(
      VirtualIpcHandle::from_fds(descriptor, length, fds, count));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_virtual_ipc_handle_from_pid(
    const uint8_t* descriptor, size_t length, int32_t pid, const int32_t* remote_fds,
    uint32_t count, cumem_virtual_ipc_handle_t** out_handle) {
  CUMEM_TRY
  if (!descriptor) null_argument("descriptor");
  if (!remote_fds && count > 0) null_argument("remote_fds");
  out(out_handle, "out_handle");
  *out_handle = to_handle<cumem_virtual_ipc_handle_t>(
      VirtualIpcHandle::from_pid(descriptor, length, pid, remote_fds, count));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_ipc_send_virtual(int32_t socket,
                                                   const cumem_virtual_ipc_handle_t* handle) {
  CUMEM_TRY
  const VirtualIpcHandle& h = object(handle, "handle");
  h.send(socket);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_ipc_receive_virtual(int32_t socket,
                                                      cumem_virtual_ipc_handle_t** out_handle) {
  CUMEM_TRY
  out(out_handle, "out_handle");
  *out_handle = to_handle<cumem_virtual_ipc_handle_t>(VirtualIpcHandle::receive(socket));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_from_virtual_ipc_handle(
    const cumem_device_t* device, const cumem_virtual_ipc_handle_t* handle,
    const cumem_stream_t* stream, cumem_buffer_t** out_buffer) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  const VirtualIpcHandle& h = object(handle, "handle");
  const Stream* s = optional(stream, "stream");
  out(out_buffer, "out_buffer");
  *out_buffer = to_handle<cumem_buffer_t>(Buffer::from_virtual_ipc_handle(std::move(d), h, s));
  CUMEM_CATCH
}
