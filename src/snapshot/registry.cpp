#include "registry.hpp"

#include <map>
#include <mutex>

#include "../resources/resource.hpp"

namespace cumem::core::snapshot {
namespace {

struct Registry {
  std::mutex mutex;
  uint64_t next_id = 1;
  std::map<uint64_t, const Resource*> live;
};

// Never destroyed: resources may outlive every static destructor (a
// framework's allocator released at exit).
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

uint64_t register_resource(const Resource* resource) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const uint64_t id = r.next_id++;
  try {
    r.live.emplace(id, resource);
  } catch (...) {
    // No memory for the entry: the resource works, and snapshots of the
    // whole process will not list it.
  }
  return id;
}

void unregister_resource(uint64_t id) noexcept {
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
