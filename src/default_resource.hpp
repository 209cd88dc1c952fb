// Each device's memory resource (cuda.core's Device.memory_resource, RMM's
// per-device resource): the resource libcumem uses for a device unless told
// otherwise. Until one is set, the device's default resource: the device
// resource over its default pool, made on first use and kept for the
// process, so that it is the same object every time.
#pragma once

#include <cstdint>
#include <string>

#include "resources/resource.hpp"

namespace cumem::core {

// The device's memory resource (makes the default one on first use).
Ref<Resource> device_memory_resource(const Device& device);
// Sets it; null goes back to the default. Refuses what
// check_resource_for_device refuses.
void set_device_memory_resource(const Device& device, Ref<Resource> resource);
// Changes whenever the device's memory resource is set (0 before): lets a
// cache of it (the framework entry points') see a change with one load.
uint64_t device_memory_resource_version(int ordinal) noexcept;

// What may serve a device's allocations: memory the device can access, from
// a resource that can allocate, of this device or of none. `role` names the
// use in messages ("the device's memory resource").
void check_resource_for_device(const Resource& resource, int ordinal, const std::string& role);

}  // namespace cumem::core
