#include "registry.hpp"

#include <atomic>
#include <map>
#include <mutex>

#include "../resources/resource.hpp"

namespace cumem::core::snapshot {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<uint64_t, const Resource*> live;
};

// Never destroyed: resources may outlive every static destructor (a
// framework's allocator released at exit).
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

std::atomic<uint64_t> next_id{1};

}  // namespace

uint64_t next_resource_id() noexcept { return next_id.fetch_add(1, std::memory_order_relaxed); }

void publish(const Resource& resource) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  try {
    r.live.emplace(resource.id(), &resource);
  } catch (...) {
    // No memory for the entry: the resource works, and snapshots of the
    // whole process will not list it.
  }
}

void unpublish(uint64_t id) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live.erase(id);
}

std::vector<Ref<Resource>> live_resources() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<Ref<Resource>> out;
  out.reserve(r.live.size());
  // A resource whose count reached 0 is in its destructor: its entry goes
  // only at the end of it (under this lock), so the memory is still there
  // to be asked, and try_retain says no.
  for (const auto& [id, resource] : r.live)
    if (resource->try_retain()) out.push_back(Ref<Resource>::adopt(const_cast<Resource*>(resource)));
  return out;
}

}  // namespace cumem::core::snapshot
