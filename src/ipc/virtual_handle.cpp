#include "virtual_handle.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "../error.hpp"
#include "descriptor.hpp"
#include "owned_fds.hpp"
#include "transport.hpp"

namespace cumem::core {

Ref<VirtualIpcHandle> VirtualIpcHandle::adopt(const VirtualDescriptor& descriptor,
                                              std::vector<int> fds) {
  std::vector<uint8_t> bytes = encode_virtual(descriptor);  // validates
  if (fds.size() != descriptor.chunks.size())
    fail(Status::invalid_argument, std::to_string(fds.size()) + " file descriptors for " +
                                       describe(descriptor) + "; it needs one per chunk");
  for (size_t i = 0; i < fds.size(); ++i)
    if (fds[i] < 0 || fcntl(fds[i], F_GETFD) < 0)
      fail(Status::invalid_argument, "file descriptor " + std::to_string(fds[i]) + " of chunk " +
                                         std::to_string(i) + " is not open in this process");
  return Ref<VirtualIpcHandle>::adopt(new VirtualIpcHandle(descriptor, std::move(bytes), std::move(fds)));
}

Ref<VirtualIpcHandle> VirtualIpcHandle::take(const VirtualDescriptor& descriptor,
                                             std::vector<int> fds) {
  try {
    return adopt(descriptor, fds);
  } catch (...) {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
    throw;
  }
}

Ref<VirtualIpcHandle> VirtualIpcHandle::from_fds(const uint8_t* bytes, size_t length,
                                                 const int* fds, uint32_t count) {
  const VirtualDescriptor d = decode_virtual(bytes, length);
  if (count > 0 && !fds) fail(Status::invalid_argument, "fds is NULL for " + std::to_string(count) + " file descriptors");
  return adopt(d, std::vector<int>(fds, fds + count));
}

Ref<VirtualIpcHandle> VirtualIpcHandle::from_pid(const uint8_t* bytes, size_t length, int pid,
                                                 const int* remote_fds, uint32_t count) {
  const VirtualDescriptor d = decode_virtual(bytes, length);
  if (count > 0 && !remote_fds)
    fail(Status::invalid_argument, "remote_fds is NULL for " + std::to_string(count) +
                                       " file descriptors");
  if (count != d.chunks.size())
    fail(Status::invalid_argument, std::to_string(count) + " file descriptors for " + describe(d) +
                                       "; it needs one per chunk");
  OwnedFds taken;  // closed if a later one fails
  for (uint32_t i = 0; i < count; ++i) taken.add(fd_from_pid(pid, remote_fds[i], d.exporter_pid));
  return take(d, taken.release());
}

VirtualIpcHandle::~VirtualIpcHandle() {
  for (int fd : fds_) ::close(fd);
}

void VirtualIpcHandle::send(int socket) const {
  // The descriptor in 160-byte pieces (the last one padded with zeros),
  // with the first fd; then one message per further fd.
  const size_t pieces = (bytes_.size() + kIpcDescriptorSize - 1) / kIpcDescriptorSize;
  std::vector<uint8_t> padded(pieces * kIpcDescriptorSize, 0);
  std::memcpy(padded.data(), bytes_.data(), bytes_.size());
  send_message(socket, fds_[0], padded.data(), static_cast<uint32_t>(pieces));
  for (size_t i = 1; i < fds_.size(); ++i) send_message(socket, fds_[i], nullptr, 0);
}

Ref<VirtualIpcHandle> VirtualIpcHandle::receive(int socket) {
  const char* doing = "receiving a virtual IPC handle: ";
  OwnedFds fds;
  ReceivedMessage first = receive_message(socket, kIpcMaxMessageDescriptors);
  if (first.fd >= 0) fds.add(first.fd);
  if (first.fd < 0)
    fail(Status::invalid_argument,
         std::string(doing) + "its first message carries no file descriptor (was it sent with "
                              "cumem_ipc_send_virtual?)");
  std::vector<uint8_t> bytes;
  bytes.reserve(first.descriptors.size() * kIpcDescriptorSize);
  for (const auto& piece : first.descriptors) bytes.insert(bytes.end(), piece.begin(), piece.end());
  const uint32_t n = virtual_chunk_count(bytes.data(), bytes.size());
  const size_t length = virtual_descriptor_length(n);
  const size_t pieces = (length + kIpcDescriptorSize - 1) / kIpcDescriptorSize;
  if (first.descriptors.size() != pieces)
    fail(Status::invalid_argument, std::string(doing) + "a descriptor of " + std::to_string(n) +
                                       " chunks takes " + std::to_string(pieces) +
                                       " pieces of 160 bytes, but " +
                                       std::to_string(first.descriptors.size()) + " arrived");
  for (size_t i = length; i < bytes.size(); ++i)
    if (bytes[i] != 0)
      fail(Status::invalid_argument, std::string(doing) + "the padding after the descriptor is not zero");
  const VirtualDescriptor d = decode_virtual(bytes.data(), length);
  for (uint32_t i = 1; i < n; ++i) {
    ReceivedMessage next = receive_message(socket, 0);
    if (next.fd >= 0) fds.add(next.fd);
    if (next.fd < 0 || !next.descriptors.empty())
      fail(Status::invalid_argument, std::string(doing) + "message " + std::to_string(i + 1) +
                                         " of " + std::to_string(n) +
                                         " must carry one file descriptor and nothing else");
  }
  std::vector<int> owned = fds.release();
  try {
    return adopt(d, owned);
  } catch (...) {
    for (int fd : owned) ::close(fd);
    throw;
  }
}

}  // namespace cumem::core
