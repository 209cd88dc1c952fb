// A resource whose memory other devices can be given access to: what
// cudaDeviceEnablePeerAccess does for cudaMalloc memory, for the memory a
// resource hands out, now and later. A pool grants it with
// cuMemPoolSetAccess, a virtual-memory resource and an expandable cache
// with cuMemSetAccess over their mappings (and on every mapping made
// after), an adaptor by asking its upstream (the caching adaptor also its
// own ranges when expandable). Frameworks call it when they enable peer
// access between devices (PyTorch's enablePeerAccess): memory that is not
// cuMemAlloc'd is not reached by cuCtxEnablePeerAccess.
//
// A capability beside the Resource interface, found as Trimmable is.
#pragma once

#include "../device.hpp"
#include "../error.hpp"
#include "resource.hpp"

namespace cumem::core {

class PeerAccessible {
 public:
  // Grants (read_write) or revokes `peer`'s read-write access to every
  // allocation, present and future. The resource's own device always has
  // it (revoking it is invalid_argument); a peer without a path to the
  // device is not_supported. All or nothing.
  virtual void set_peer_access(const Device& peer, bool read_write) = 0;
  virtual bool peer_access(const Device& peer) const = 0;

 protected:
  ~PeerAccessible() = default;
};

// not_supported naming a resource without the capability (memory whose
// access cannot be changed: host memory, managed memory, a callback's).
[[noreturn]] inline void no_peer_access(const Resource& resource) {
  fail(Status::not_supported, resource.describe() +
                                  " has no peer access to set: its memory is reachable as it is "
                                  "or not at all (peer access applies to device pools, "
                                  "virtual-memory resources and adaptors over them)");
}

// The capability of `resource`, or no_peer_access().
inline PeerAccessible& peer_accessible(Resource& resource) {
  if (auto* p = dynamic_cast<PeerAccessible*>(&resource)) return *p;
  no_peer_access(resource);
}
inline const PeerAccessible& peer_accessible(const Resource& resource) {
  if (auto* p = dynamic_cast<const PeerAccessible*>(&resource)) return *p;
  no_peer_access(resource);
}

}  // namespace cumem::core
