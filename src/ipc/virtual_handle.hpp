// A virtual-memory buffer exported for another process: one POSIX file
// descriptor per physical chunk (owned, closed with the object) and the
// descriptor that lists the chunks (virtual_descriptor.hpp). Travels over a
// Unix socket in the messages of transport.hpp: the first carries the
// descriptor, cut in 160-byte pieces, and the first fd; each next message
// one more fd and no descriptor.
#pragma once

#include <cstdint>
#include <vector>

#include "../object.hpp"
#include "virtual_descriptor.hpp"

namespace cumem::core {

class VirtualIpcHandle final : public Object {
 public:
  // Takes `fds` (one per chunk, in order) after checking `descriptor` and
  // that each fd is open; on a throw the caller still owns them.
  static Ref<VirtualIpcHandle> adopt(const VirtualDescriptor& descriptor, std::vector<int> fds);
  // As adopt(), but the fds are closed when it throws: for fds this
  // process just made.
  static Ref<VirtualIpcHandle> take(const VirtualDescriptor& descriptor, std::vector<int> fds);
  // The descriptor's bytes are decoded (validated) first; the fds must be
  // as many as its chunks. On a throw the caller still owns them.
  static Ref<VirtualIpcHandle> from_fds(const uint8_t* bytes, size_t length, const int* fds,
                                        uint32_t count);
  // As from_fds, with the fds taken from process `pid` (its fds
  // `remote_fds`, pidfd_getfd: transport.hpp's fd_from_pid, which checks
  // that `pid` is the descriptor's exporter). Nothing is kept on a throw.
  static Ref<VirtualIpcHandle> from_pid(const uint8_t* bytes, size_t length, int pid,
                                        const int* remote_fds, uint32_t count);

  const VirtualDescriptor& descriptor() const noexcept { return descriptor_; }
  const std::vector<uint8_t>& bytes() const noexcept { return bytes_; }
  const std::vector<int>& fds() const noexcept { return fds_; }

  // Sends it (blocking); one sender per socket at a time.
  void send(int socket) const;
  // Receives one sent by send(); every fd received is closed on a throw.
  static Ref<VirtualIpcHandle> receive(int socket);

 private:
  VirtualIpcHandle(const VirtualDescriptor& d, std::vector<uint8_t> bytes, std::vector<int> fds)
      : Object(Tag::virtual_ipc_handle), descriptor_(d), bytes_(std::move(bytes)),
        fds_(std::move(fds)) {}
  ~VirtualIpcHandle() override;

  VirtualDescriptor descriptor_;
  std::vector<uint8_t> bytes_;
  std::vector<int> fds_;
};

}  // namespace cumem::core
