#include "framework.hpp"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "capture.hpp"
#include "deferred_frees.hpp"
#include "driver/driver.hpp"
#include "error.hpp"
#include "native_stream.hpp"
#include "resources/caching_resource.hpp"

namespace cumem::core::framework {
namespace {

constexpr int kMaxDevices = 64;
constexpr size_t kShards = 64;

struct Slot {
  std::mutex mutex;
  Ref<Resource> resource;
};

// `stream` is held so that a stream libcumem created outlives the
// allocation made on it (the free may be ordered after its work); null is
// the legacy default stream.
struct Record {
  Ref<Resource> resource;
  size_t size = 0;
  Ref<Stream> stream;
  bool captured = false;  // allocated on a capturing stream (graph memory)
};

struct Shard {
  std::mutex mutex;
  std::unordered_map<void*, Record> records;
};

// Never destroyed: frameworks free memory during interpreter and static
// teardown, after this library's static destructors would have run.
struct State {
  Slot slots[kMaxDevices];
  Shard shards[kShards];
};
State& state() {
  static State* s = new State;
  return *s;
}

Shard& shard_of(void* ptr) {
  // Allocations are at least 256-byte aligned; mix the bits above that.
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr) >> 8;
  return state().shards[(p ^ (p >> 7) ^ (p >> 17)) % kShards];
}

void check_device(int device) {
  if (device < 0 || device >= kMaxDevices)
    fail(Status::no_device, "device " + std::to_string(device) + " is out of range (0.." +
                                std::to_string(kMaxDevices - 1) + ")");
  (void)Device::get(device);  // throws no_device (or no_driver) for a bad ordinal
}

Ref<Resource> make_default(int device) {
  const char* env = std::getenv("CUMEM_FRAMEWORK_RESOURCE");
  const std::string kind = env ? env : "";
  if (!kind.empty() && kind != "device" && kind != "caching" && kind != "expandable")
    fail(Status::invalid_argument, "CUMEM_FRAMEWORK_RESOURCE is '" + kind +
                                       "'; it must be 'device', 'caching', 'expandable' or unset");
  Ref<Resource> r = create_device_resource(Device::get(device), PoolOptions{});
  if (kind == "caching") r = create_caching_resource(std::move(r));
  // The caching adaptor with expandable segments (PyTorch's expandable_segments:True).
  if (kind == "expandable") {
    CachingOptions expandable;
    expandable.expandable = true;
    r = create_caching_resource(std::move(r), expandable);
  }
  return r;
}


std::string pointer_text(void* ptr) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", ptr);
  return buf;
}

}  // namespace

void set_resource(int device, Ref<Resource> resource) {
  check_device(device);
  if (resource) {
    const ResourceProperties& p = resource->properties();
    if (!p.device_accessible)
      fail(Status::invalid_argument,
           "the frameworks need device-accessible memory, and " + resource->describe() +
               " is not");
    if (p.device_id >= 0 && p.device_id != device)
      fail(Status::wrong_device, resource->describe() + " serves device " +
                                     std::to_string(p.device_id) + ", not device " +
                                     std::to_string(device));
  }
  Slot& slot = state().slots[device];
  Ref<Resource> old;
  {
    std::lock_guard<std::mutex> lock(slot.mutex);
    old = std::move(slot.resource);
    slot.resource = std::move(resource);
  }
  // `old` is released here, outside the lock; its allocations keep it alive.
}

Ref<Resource> get_resource(int device) {
  if (device < 0 || device >= kMaxDevices) check_device(device);
  Slot& slot = state().slots[device];
  {
    std::lock_guard<std::mutex> lock(slot.mutex);
    if (slot.resource) return slot.resource;
  }
  check_device(device);
  Ref<Resource> made = make_default(device);
  std::lock_guard<std::mutex> lock(slot.mutex);
  if (!slot.resource) slot.resource = std::move(made);  // another thread may have won
  return slot.resource;
}

void* allocate(int device, size_t size, CUstream stream, Resource* resource) {
  if (size == 0) return nullptr;
  run_deferred_frees();  // frees a capture held back, once it ended
  Ref<Resource> r = resource ? Ref<Resource>::share(resource) : get_resource(device);
  Ref<Stream> s = native_stream(r->device(), stream);
  // No driver call on the legacy default stream, which cannot capture.
  const bool captured = capture_status(s.get()) != CaptureStatus::none;
  void* ptr = r->allocate_raw(size, s.get());
  try {
    Shard& shard = shard_of(ptr);
    std::lock_guard<std::mutex> lock(shard.mutex);
    const bool inserted = shard.records.emplace(ptr, Record{r, size, s, captured}).second;
    if (!inserted)
      fail(Status::internal, "the resource handed out " + pointer_text(ptr) +
                                 ", which is still allocated by the framework entry points");
  } catch (...) {
    r->deallocate_raw(ptr, size, s.get());
    throw;
  }
  return ptr;
}

void deallocate(void* ptr, size_t size, CUstream stream, bool stream_given) {
  if (!ptr) return;
  run_deferred_frees();
  Shard& shard = shard_of(ptr);
  Record record;
  {
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.records.find(ptr);
    if (it == shard.records.end())
      fail(Status::invalid_argument,
           "pointer " + pointer_text(ptr) +
               " was not allocated by libcumem's framework entry points, or was freed already");
    if (size != SIZE_MAX && size != it->second.size)
      fail(Status::invalid_argument, "pointer " + pointer_text(ptr) + " was allocated with " +
                                         std::to_string(it->second.size) +
                                         " bytes, not the " + std::to_string(size) +
                                         " given to free it (nothing was freed)");
    record = std::move(it->second);
    shard.records.erase(it);
  }
  try {
    const Ref<Stream> s = stream_given ? native_stream(record.resource->device(), stream)
                                       : record.stream;
    // Memory from outside any capture, freed on a capturing stream: a graph
    // cannot free it, so the free waits until the capture ends.
    if (!record.captured && capture_status(s.get()) != CaptureStatus::none) {
      defer_free({record.resource, ptr, record.size, record.stream, s});
      return;
    }
    const CUstream allocated_on = native_or_legacy(record.stream.get());
    const CUstream freed_on = native_or_legacy(s.get());
    if (freed_on != allocated_on) {
      const Device* device = s ? &s->device() : record.resource->device();
      // The record keeps a stream libcumem created alive, so the event can
      // be recorded on it; should that fail anyway, the device is waited for.
      if (device)
        order_or_synchronize(*device, allocated_on, freed_on,
                             "ordering a free after the allocating stream's work");
    }
    record.resource->deallocate_raw(ptr, record.size, s.get());
  } catch (...) {
    // Not freed: keep the record so that the memory can still be freed.
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.records.emplace(ptr, std::move(record));
    throw;
  }
}

}  // namespace cumem::core::framework
