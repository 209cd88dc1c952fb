// IPC entry points: allocation handles, imported resources, buffer
// descriptors, and sending both over a Unix domain socket. Interprocess
// events are in event.cpp.
#include "capi.hpp"

#include <unistd.h>

#include <cstring>
#include <vector>

#include "../src/buffer.hpp"
#include "../src/ipc/allocation_handle.hpp"
#include "../src/ipc/transport.hpp"
#include "../src/resources/adaptor.hpp"
#include "../src/resources/ipc_shareable.hpp"
#include "../src/resources/resource.hpp"

using namespace cumem::core;
using namespace cumem::capi;

static_assert(CUMEM_IPC_DESCRIPTOR_SIZE == kIpcDescriptorSize, "descriptor size");

namespace {

void write_descriptor(const IpcDescriptor& d, cumem_ipc_descriptor_t* out) {
  uint8_t bytes[kIpcDescriptorSize];
  encode(d, bytes);
  std::memcpy(out->bytes, bytes, sizeof bytes);
}

IpcShareable& shareable(const cumem_resource_t* resource) {
  const Resource& r = object(resource, "resource");
  // Through adaptors that hand out their upstream's pointers as they are.
  IpcShareable* s = find_through_pass_through<IpcShareable>(&r);
  if (!s)
    fail(Status::not_supported,
         r.describe() + " cannot be exported: only IPC-enabled resources can (a device or "
                        "pinned pool created with ipc_enabled, a host shared resource, or one "
                        "imported from those)");
  return *s;
}

}  // namespace

CUMEM_EXPORT cumem_status_t cumem_resource_get_allocation_handle(
    const cumem_resource_t* resource, cumem_allocation_handle_t** out_handle) {
  CUMEM_TRY
  IpcShareable& s = shareable(resource);
  out(out_handle, "out_handle");
  *out_handle = to_handle<cumem_allocation_handle_t>(s.get_allocation_handle());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_get_ipc_descriptor_native(
    const cumem_resource_t* resource, const void* ptr, size_t size,
    cumem_ipc_descriptor_t* out_descriptor) {
  CUMEM_TRY
  IpcShareable& s = shareable(resource);
  if (!ptr) null_argument("ptr");
  out(out_descriptor, "out_descriptor");
  write_descriptor(s.get_ipc_descriptor(const_cast<void*>(ptr), size), out_descriptor);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_allocation_handle_retain(cumem_allocation_handle_t* handle) {
  CUMEM_TRY
  retain_handle(handle, "handle");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_allocation_handle_release(cumem_allocation_handle_t* handle) {
  CUMEM_TRY
  release_handle(handle, "handle");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_allocation_handle_fd(const cumem_allocation_handle_t* handle,
                                                       int32_t* out_fd) {
  CUMEM_TRY
  const AllocationHandle& h = object(handle, "handle");
  out(out_fd, "out_fd");
  *out_fd = h.fd();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_allocation_handle_dup_fd(const cumem_allocation_handle_t* handle,
                                                           int32_t* out_fd) {
  CUMEM_TRY
  const AllocationHandle& h = object(handle, "handle");
  out(out_fd, "out_fd");
  *out_fd = h.dup_fd();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_allocation_handle_descriptor(
    const cumem_allocation_handle_t* handle, cumem_ipc_descriptor_t* out_descriptor) {
  CUMEM_TRY
  const AllocationHandle& h = object(handle, "handle");
  out(out_descriptor, "out_descriptor");
  write_descriptor(h.pool(), out_descriptor);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_allocation_handle_from_fd(
    const cumem_ipc_descriptor_t* pool_descriptor, int32_t fd,
    cumem_allocation_handle_t** out_handle) {
  CUMEM_TRY
  if (!pool_descriptor) null_argument("pool_descriptor");
  out(out_handle, "out_handle");
  *out_handle = to_handle<cumem_allocation_handle_t>(
      AllocationHandle::from_fd(pool_descriptor->bytes, fd));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_allocation_handle_from_pid(
    const cumem_ipc_descriptor_t* pool_descriptor, int32_t pid, int32_t remote_fd,
    cumem_allocation_handle_t** out_handle) {
  CUMEM_TRY
  if (!pool_descriptor) null_argument("pool_descriptor");
  out(out_handle, "out_handle");
  *out_handle = to_handle<cumem_allocation_handle_t>(
      AllocationHandle::from_pid(pool_descriptor->bytes, pid, remote_fd));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_from_allocation_handle(
    const cumem_device_t* device, const cumem_allocation_handle_t* handle,
    cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Device> d = device ? ref(device, "device") : nullptr;
  Ref<AllocationHandle> h = ref(handle, "handle");
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(import_resource(std::move(d), std::move(h)));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_get_ipc_descriptor(const cumem_buffer_t* buffer,
                                                            cumem_ipc_descriptor_t* out_descriptor) {
  CUMEM_TRY
  const Buffer& b = object(buffer, "buffer");
  out(out_descriptor, "out_descriptor");
  const IpcDescriptor d = b.get_ipc_descriptor();
  write_descriptor(d, out_descriptor);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_from_ipc_descriptor(
    cumem_resource_t* resource, const cumem_ipc_descriptor_t* descriptor,
    const cumem_stream_t* stream, cumem_buffer_t** out_buffer) {
  CUMEM_TRY
  Ref<Resource> r = ref(resource, "resource");
  if (!descriptor) null_argument("descriptor");
  const Stream* s = optional(stream, "stream");
  out(out_buffer, "out_buffer");
  *out_buffer = to_handle<cumem_buffer_t>(Buffer::from_ipc_descriptor(std::move(r), descriptor->bytes, s));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_ipc_send(int32_t socket, const cumem_allocation_handle_t* handle,
                                           const cumem_ipc_descriptor_t* descriptors,
                                           uint32_t count) {
  CUMEM_TRY
  const AllocationHandle* h = optional(handle, "handle");
  if (!descriptors && count > 0) null_argument("descriptors");
  if (count + (h ? 1u : 0u) > kIpcMaxMessageDescriptors || count > kIpcMaxMessageDescriptors)
    fail(Status::invalid_argument, "count " + std::to_string(count) + " is above the " +
                                       std::to_string(kIpcMaxMessageDescriptors - (h ? 1 : 0)) +
                                       " descriptors one message can carry");
  // The pool's descriptor travels first, with its file descriptor.
  std::vector<uint8_t> bytes;
  bytes.reserve((count + 1) * kIpcDescriptorSize);
  if (h) {
    uint8_t pool[kIpcDescriptorSize];
    encode(h->pool(), pool);
    bytes.insert(bytes.end(), pool, pool + kIpcDescriptorSize);
  }
  for (uint32_t i = 0; i < count; ++i)
    bytes.insert(bytes.end(), descriptors[i].bytes, descriptors[i].bytes + kIpcDescriptorSize);
  send_message(socket, h ? h->fd() : -1, bytes.data(), count + (h ? 1 : 0));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_ipc_receive(int32_t socket, cumem_allocation_handle_t** out_handle,
                                              cumem_ipc_descriptor_t* descriptors,
                                              uint32_t capacity, uint32_t* out_count) {
  CUMEM_TRY
  if (!descriptors && capacity > 0) null_argument("descriptors");
  out(out_count, "out_count");
  // Read any message whole (so that a refused one leaves the connection in
  // step); the count is checked against capacity below.
  ReceivedMessage m = receive_message(socket, kIpcMaxMessageDescriptors);
  Ref<AllocationHandle> handle;
  size_t first = 0;
  if (m.fd >= 0) {
    const int fd = m.fd;
    m.fd = -1;
    if (!out_handle) {
      ::close(fd);
      fail(Status::invalid_argument,
           "the message carries an allocation handle, but out_handle is NULL (it was closed)");
    }
    if (m.descriptors.empty()) {
      ::close(fd);
      fail(Status::invalid_argument, "the message carries a file descriptor but no pool descriptor");
    }
    try {
      handle = AllocationHandle::from_fd(m.descriptors[0].data(), fd);
    } catch (...) {
      ::close(fd);
      throw;
    }
    first = 1;
  }
  const size_t count = m.descriptors.size() - first;
  if (count > capacity)
    fail(Status::invalid_argument, "the message carries " + std::to_string(count) +
                                       " descriptors, more than capacity " + std::to_string(capacity) +
                                       " (the message was dropped; the next one can be received)");
  for (size_t i = 0; i < count; ++i)
    std::memcpy(descriptors[i].bytes, m.descriptors[first + i].data(), kIpcDescriptorSize);
  if (out_handle) *out_handle = to_handle<cumem_allocation_handle_t>(std::move(handle));
  *out_count = static_cast<uint32_t>(count);
  CUMEM_CATCH
}
