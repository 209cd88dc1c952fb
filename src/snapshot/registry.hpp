// Every live resource of the process that snapshots may list, by the
// number that names it in snapshots and history events (a resource's id:
// 1, 2, ... in creation order, never reused). A resource is listed once it
// is whole: when the user first holds a handle to it (Resource's
// user_handles_live), or when the core publishes one it made for itself
// (the device's default resource, the frameworks' adaptor); it leaves the
// list in its destructor. Only resource creation, the first handle and
// destruction take the registry's lock.
#pragma once

#include <cstdint>
#include <vector>

#include "../object.hpp"

namespace cumem::core {
class Resource;
}

namespace cumem::core::snapshot {

// A new resource's id (Resource's constructor).
uint64_t next_resource_id() noexcept;
// Lists a resource that is constructed whole; again is fine.
void publish(const Resource& resource) noexcept;
// Resource's destructor.
void unpublish(uint64_t id) noexcept;

// A reference to each listed resource, oldest first: those whose last
// reference is already gone (being destroyed) are left out.
std::vector<Ref<Resource>> live_resources();

}  // namespace cumem::core::snapshot
