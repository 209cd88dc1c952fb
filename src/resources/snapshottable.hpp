// A resource that can say what memory it holds, for snapshots
// (src/snapshot/): its segments and the blocks in each, and its own numbers
// (a pool's attributes, a cache's statistics). A capability beside the
// Resource interface, found as Trimmable is. The caching adaptor, the
// pools, the virtual resource and the tracking adaptor implement it; the
// snapshot passes through every other adaptor to its upstream, and knows
// the allocations of the resources that keep no segments (the host
// resource, a pool) from the memory history.
#pragma once

namespace cumem::core {

namespace snapshot {
class Builder;
}

class Snapshottable {
 public:
  // Adds what the resource holds now, consistent with itself (taken under
  // its own locks). May throw (a driver failure): the snapshot keeps the
  // message and goes on with the other resources.
  virtual void snapshot(snapshot::Builder& out) const = 0;

 protected:
  ~Snapshottable() = default;
};

}  // namespace cumem::core
