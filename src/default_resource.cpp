#include "default_resource.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "error.hpp"
#include "snapshot/registry.hpp"

namespace cumem::core {
namespace {

struct Slot {
  std::mutex mutex;
  Ref<Resource> chosen;    // set by the user; null: the default
  Ref<Resource> fallback;  // the default, once made
  std::atomic<uint64_t> version{0};
};

// One slot per device ordinal. Never destroyed: resources are used from
// static destructors and atexit handlers (the frameworks free late).
struct State {
  explicit State(int devices) : slots(static_cast<size_t>(devices)) {}
  std::vector<Slot> slots;
};

std::atomic<State*>& state_pointer() noexcept {
  static std::atomic<State*> pointer{nullptr};
  return pointer;
}

State& state() {
  static std::once_flag once;
  std::call_once(once, [] { state_pointer().store(new State(Device::count()), std::memory_order_release); });
  return *state_pointer().load(std::memory_order_acquire);
}

State* state_if_made() noexcept { return state_pointer().load(std::memory_order_acquire); }

Slot& slot_of(const Device& device) {
  State& s = state();
  // Device objects exist only for ordinals below the count.
  return s.slots[static_cast<size_t>(device.ordinal())];
}

}  // namespace

void check_resource_for_device(const Resource& resource, int ordinal, const std::string& role) {
  const ResourceProperties& p = resource.properties();
  if (!p.device_accessible)
    fail(Status::invalid_argument,
         role + " must serve device-accessible memory (kernels are given its pointers), and " +
             resource.describe() + " does not (properties.device_accessible is false)");
  if (p.is_imported)
    fail(Status::invalid_argument, role + " must be able to allocate, and " +
                                       resource.describe() +
                                       " was imported from another process, which cannot");
  if (p.device_id >= 0 && p.device_id != ordinal)
    fail(Status::wrong_device, resource.describe() + " serves device " +
                                   std::to_string(p.device_id) + ", so it cannot be " + role +
                                   " of device " + std::to_string(ordinal));
}

Ref<Resource> device_memory_resource(const Device& device) {
  Slot& slot = slot_of(device);
  std::lock_guard<std::mutex> lock(slot.mutex);
  if (slot.chosen) return slot.chosen;
  if (!slot.fallback)
  {
    slot.fallback = create_device_resource(Ref<Device>::share(const_cast<Device*>(&device)),
                                           PoolOptions{});
    snapshot::publish(*slot.fallback);  // listed in snapshots of the process
  }
  return slot.fallback;
}

void set_device_memory_resource(const Device& device, Ref<Resource> resource) {
  if (resource)
    check_resource_for_device(*resource, device.ordinal(), "the device's memory resource");
  Slot& slot = slot_of(device);
  Ref<Resource> old;
  {
    std::lock_guard<std::mutex> lock(slot.mutex);
    old = std::move(slot.chosen);
    slot.chosen = std::move(resource);
    slot.version.fetch_add(1, std::memory_order_release);
  }
  // `old` is released here, outside the lock; its buffers keep it alive.
}

uint64_t device_memory_resource_version(int ordinal) noexcept {
  State* s = state_if_made();
  if (!s || ordinal < 0 || static_cast<size_t>(ordinal) >= s->slots.size()) return 0;
  return s->slots[static_cast<size_t>(ordinal)].version.load(std::memory_order_acquire);
}

}  // namespace cumem::core
