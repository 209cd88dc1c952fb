#include "capture_pools.hpp"

#include "../../error.hpp"

namespace cumem::core::caching {

PrivatePool& CapturePools::pool(uint64_t id) {
  auto& p = pools_[id];
  if (!p) p = std::make_unique<PrivatePool>(id);
  return *p;
}

PrivatePool* CapturePools::find(uint64_t id) {
  auto it = pools_.find(id);
  return it == pools_.end() ? nullptr : it->second.get();
}

void CapturePools::handed_out(PrivatePool& p, void* ptr, uint64_t size) {
  if (!live_.emplace(ptr, Live{&p, size}).second)
    fail(Status::internal, "a capture's pool handed out a block that is in use already");
  p.in_use += size;
}

PrivatePool* CapturePools::owner(void* ptr) const {
  auto it = live_.find(ptr);
  return it == live_.end() ? nullptr : it->second.pool;
}

uint64_t CapturePools::returned(PrivatePool& p, void* ptr) {
  auto it = live_.find(ptr);
  if (it == live_.end() || it->second.pool != &p)
    fail(Status::internal, "a block returned to a capture's pool that did not hand it out");
  const uint64_t size = it->second.size;
  live_.erase(it);
  p.in_use -= size;
  return size;
}

void CapturePools::erase(uint64_t id) { pools_.erase(id); }

uint64_t CapturePools::reserved() const {
  uint64_t n = 0;
  for (const auto& [id, p] : pools_) n += p->reserved;
  return n;
}

uint64_t CapturePools::free_bytes() const {
  uint64_t n = 0;
  for (const auto& [id, p] : pools_) n += p->free_bytes();
  return n;
}

}  // namespace cumem::core::caching
