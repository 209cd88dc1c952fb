// Every live resource of the process, by a number that names it in
// snapshots and history events (a resource's id: 1, 2, ... in creation
// order, never reused). Resources register when they are made and leave
// when they are destroyed; a snapshot of the whole process walks the
// registry. Creating and destroying a resource takes the registry's lock,
// nothing else does.
#pragma once

#include <cstdint>
#include <vector>

#include "../object.hpp"

namespace cumem::core {
class Resource;
}

namespace cumem::core::snapshot {

// Called by Resource's constructor and destructor only.
uint64_t register_resource(const Resource* resource) noexcept;
void unregister_resource(uint64_t id) noexcept;

// A reference to each live resource, oldest first: those whose last
// reference is already gone (being destroyed) are left out.
std::vector<Ref<Resource>> live_resources();

}  // namespace cumem::core::snapshot
