// A resource that may hold memory it does not use (a pool's reserve, a
// cache's blocks) and can give it back to the system when asked. A pool
// trims itself to 0; an adaptor passes the request to its upstream (the
// caching adaptor gives its cached blocks back first), so a request made
// above a chain of adaptors reaches the pool at its bottom.
//
// A capability beside the Resource interface (which stays allocate,
// deallocate, properties, statistics and describe), found as IpcShareable
// and Caching are: an adaptor asks its upstream with trim_unused(upstream),
// without knowing what kind it is.
#pragma once

#include "resource.hpp"

namespace cumem::core {

class Trimmable {
 public:
  // Gives back what is held and not in use. Memory freed on a stream is
  // unused only once that stream's work ran: a caller that freed on a
  // stream waits for it first.
  virtual void trim_unused() = 0;

 protected:
  ~Trimmable() = default;
};

// resource.trim_unused() where the resource is Trimmable; else nothing (it
// holds no memory beyond what is in use).
inline void trim_unused(Resource& resource) {
  if (auto* t = dynamic_cast<Trimmable*>(&resource)) t->trim_unused();
}

}  // namespace cumem::core
