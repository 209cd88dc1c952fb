#include "framework.hpp"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "capture.hpp"
#include "deferred_frees.hpp"
#include "default_resource.hpp"
#include "driver/driver.hpp"
#include "error.hpp"
#include "native_stream.hpp"
#include "resources/caching_resource.hpp"
#include "snapshot/registry.hpp"

namespace cumem::core::framework {
namespace {

constexpr int kMaxDevices = 64;
constexpr size_t kShards = 64;

// The resource choice of one device: the one set_resource gave, else the
// default ($CUMEM_FRAMEWORK_RESOURCE over the device's memory resource),
// cached with the device memory resource's version it was made for.
struct Slot {
  std::mutex mutex;
  Ref<Resource> resource;
  Ref<Resource> fallback;
  Ref<Resource> fallback_upstream;  // the device's memory resource under it
  uint64_t fallback_version = 0;
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

// What $CUMEM_FRAMEWORK_RESOURCE asks for, read once (as CUMEM_LOG_LEVEL
// is): the device's memory resource, or a caching adaptor over it.
enum class DefaultKind { device, caching, expandable, invalid };
DefaultKind default_kind(std::string& value) {
  static const std::string* env = [] {
    const char* v = std::getenv("CUMEM_FRAMEWORK_RESOURCE");
    return new std::string(v ? v : "");
  }();
  value = *env;
  if (env->empty() || *env == "device") return DefaultKind::device;
  if (*env == "caching") return DefaultKind::caching;
  if (*env == "expandable") return DefaultKind::expandable;
  return DefaultKind::invalid;
}

// The default for `device` over its memory resource `upstream`: the
// upstream itself, or a caching adaptor over it (`kept`, the slot's adaptor
// of before, when it was made over the same upstream).
Ref<Resource> make_default(Ref<Resource> upstream, const Ref<Resource>& kept,
                           const Ref<Resource>& kept_upstream) {
  std::string value;
  switch (default_kind(value)) {
    case DefaultKind::device: return upstream;
    case DefaultKind::caching:
      if (kept && kept_upstream.get() == upstream.get()) return kept;
      return create_caching_resource(std::move(upstream));
    case DefaultKind::expandable: {
      // The caching adaptor with expandable segments (PyTorch's
      // expandable_segments:True).
      if (kept && kept_upstream.get() == upstream.get()) return kept;
      CachingOptions expandable;
      expandable.expandable = true;
      return create_caching_resource(std::move(upstream), expandable);
    }
    case DefaultKind::invalid: break;
  }
  fail(Status::invalid_argument, "CUMEM_FRAMEWORK_RESOURCE is '" + value +
                                     "'; it must be 'device', 'caching', 'expandable' or unset");
}


std::string pointer_text(void* ptr) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", ptr);
  return buf;
}

}  // namespace

void set_resource(int device, Ref<Resource> resource) {
  check_device(device);
  if (resource) check_resource_for_device(*resource, device, "a framework resource");
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
  // Read before the device's resource is: a change in between makes the
  // next call look again, never keeps a stale choice.
  const uint64_t version = device_memory_resource_version(device);
  Ref<Resource> kept, kept_upstream;
  {
    std::lock_guard<std::mutex> lock(slot.mutex);
    if (slot.resource) return slot.resource;
    if (slot.fallback && slot.fallback_version == version) return slot.fallback;
    kept = slot.fallback;
    kept_upstream = slot.fallback_upstream;
  }
  check_device(device);
  Ref<Resource> upstream = device_memory_resource(*Device::get(device));
  Ref<Resource> made = make_default(upstream, kept, kept_upstream);
  snapshot::publish(*made);  // listed in snapshots of the process
  std::lock_guard<std::mutex> lock(slot.mutex);
  if (slot.resource) return slot.resource;  // set meanwhile
  // Another thread made one for the same version first: theirs stays.
  if (slot.fallback && slot.fallback_version == version) return slot.fallback;
  slot.fallback = made;
  slot.fallback_upstream = std::move(upstream);
  slot.fallback_version = version;
  return made;
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
