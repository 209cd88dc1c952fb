// An adaptor is a resource over an upstream resource: it keeps the upstream
// alive, describes the same memory, and adds one behaviour of its own in
// do_allocate/do_deallocate (which pass the rest to upstream()). A request
// to give unused memory back (trimmable.hpp) and the question of a dma-buf
// export (dmabuf_source.hpp) are passed to the upstream.
#pragma once

#include "dmabuf_source.hpp"
#include "peer_access.hpp"
#include "resource.hpp"
#include "trimmable.hpp"

namespace cumem::core {

class Adaptor : public Resource, public Trimmable, public DmaBufSource, public PeerAccessible {
 public:
  const Resource& upstream() const noexcept { return *upstream_; }
  // An adaptor holds nothing of its own: the upstream gives back what it holds.
  void trim_unused() override { core::trim_unused(*upstream_); }
  // An adaptor that hands out its upstream's allocations as they are asks
  // the upstream; one that does not (caching, aligned) overrides this.
  DmaBufRanges dmabuf_ranges(void* ptr, size_t size, uintptr_t first,
                             size_t bytes) const override {
    return dmabuf_ranges_of(*upstream_, ptr, size, first, bytes);
  }
  // Peer access to an adaptor's memory is the upstream's (the caching
  // adaptor adds its expandable ranges); not_supported where the upstream
  // has none to set.
  void set_peer_access(const Device& peer, bool read_write) override {
    peer_accessible(*upstream_).set_peer_access(peer, read_write);
  }
  bool peer_access(const Device& peer) const override {
    return peer_accessible(*upstream_).peer_access(peer);
  }

 protected:
  // The adaptor's memory is the upstream's; `kind` says what the adaptor is.
  // Adaptors own no pool and export nothing themselves.
  Adaptor(Ref<Resource> upstream, ResourceKind kind)
      : Resource(upstream->device() ? Ref<Device>::share(const_cast<Device*>(upstream->device()))
                                    : nullptr,
                 adapted(upstream->properties(), kind)),
        upstream_(std::move(upstream)) {}
  Resource& upstream() noexcept { return *upstream_; }

 private:
  static ResourceProperties adapted(ResourceProperties p, ResourceKind kind) {
    p.kind = kind;
    p.is_pool = false;
    p.ipc_enabled = false;
    return p;
  }
  Ref<Resource> upstream_;
};

// The upstream of an adaptor that hands out its upstream's pointers as
// they are (limit, tracking, logging, failure callback), so that what is
// asked of one of its pointers (sharing it) can be asked of the upstream;
// null for any other resource (a cache or an aligned adaptor hands out
// pointers of its own).
inline const Resource* pass_through_upstream(const Resource& r) {
  switch (r.properties().kind) {
    case ResourceKind::limit:
    case ResourceKind::tracking:
    case ResourceKind::logging:
    case ResourceKind::failure_callback:
      if (const auto* a = dynamic_cast<const Adaptor*>(&r)) return &a->upstream();
      return nullptr;
    default:
      return nullptr;
  }
}

// `r` or the first resource beneath it through such adaptors that is a T
// (an IPC interface: what is asked of a pointer), or null.
template <class T>
T* find_through_pass_through(const Resource* r) {
  for (; r; r = pass_through_upstream(*r))
    if (auto* t = dynamic_cast<T*>(const_cast<Resource*>(r))) return t;
  return nullptr;
}

}  // namespace cumem::core
