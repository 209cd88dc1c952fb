// The kinds whose free is synchronous (host, legacy pinned, cuMemAllocManaged,
// cuMemAlloc): a stream-ordered free becomes "wait, then free now". One rule
// for the stream: a given stream is synchronized; no stream means the legacy
// default stream of the resource's device (nothing to wait for on a
// resource without a device, the host kind).
//
// Under stream capture: a free on a capturing stream is refused
// (invalid_state, nothing freed): the captured work that uses the memory
// runs only when the graph is launched, so there is nothing to wait for,
// and the memory must outlive the graph. Without a stream, a free is
// refused while a blocking stream of the device captures (the legacy
// default stream then cannot be waited for). The driver calls of a free
// run in relaxed capture mode, so that they never invalidate another
// thread's capture.
#pragma once

#include "resource.hpp"

namespace cumem::core {

// The rule itself, for a resource that frees synchronously on behalf of
// another (the caching adaptor over a synchronous upstream).
void wait_before_free(const Device* device, const Stream* stream);

class SyncResource : public Resource {
 protected:
  using Resource::Resource;
  // Frees memory nothing uses any more (called in relaxed capture mode).
  virtual void free_now(void* ptr, size_t size) = 0;

 private:
  void do_deallocate(void* ptr, size_t size, const Stream* stream) final;
};

}  // namespace cumem::core
