// The resource kinds of the conformance suite (conformance.hpp): what each
// kind is, and a factory that makes a fresh resource of it. A list of kinds
// is one line per kind; an adaptor kind is made from its upstream's kind
// (adaptor() below), so "limit over host" or "limit over the device pool" is
// one line too.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <string>
#include <utility>

#include "test_util.hpp"

// How a resource frees memory given on a stream.
enum class FreeOrder {
  stream_ordered,    // queued on the stream (pools): close returns at once
  synchronous,       // waits for the stream, then frees before close returns
  driver_dependent,  // either, as the driver allows; properties tell which
};

// The device the memory is tied to (resource and buffer device_id).
enum class DeviceTie {
  none,    // device_id -1
  device,  // the ordinal of the device the resource was made for
};

struct ResourceKind {
  std::string name;  // the test name's suffix: letters, digits and '_'
  // A fresh resource (the caller owns one reference), or NULL with the
  // library's message left in cumem_last_error_message(). `device` is NULL
  // for kinds that need no GPU.
  std::function<cumem_resource_t*(cumem_device_t* device)> make;
  bool needs_gpu = false;
  // What the kind is, as its properties and its buffers' info must say.
  cumem_resource_kind_t kind = CUMEM_RESOURCE_HOST;
  cumem_memory_kind_t memory = CUMEM_MEMORY_HOST;
  bool host_accessible = false;
  bool device_accessible = false;
  DeviceTie device_tie = DeviceTie::none;
  FreeOrder free_order = FreeOrder::synchronous;
  size_t alignment = 1;  // every non-empty allocation starts at a multiple
};

// gtest prints a kind by its name.
inline void PrintTo(const ResourceKind& kind, std::ostream* os) { *os << kind.name; }

inline std::string kind_name(const ::testing::TestParamInfo<ResourceKind>& info) {
  return info.param.name;
}

// Runs `create(&resource)` and returns the resource, or NULL if it failed.
template <class Create>
cumem_resource_t* make_with(Create&& create) {
  cumem_resource_t* resource = nullptr;
  return create(&resource) == CUMEM_SUCCESS ? resource : nullptr;
}

// The host resource; alignment 0 means the default options (NULL).
inline ResourceKind host_kind(std::string name, size_t alignment = 0) {
  ResourceKind k;
  k.name = std::move(name);
  k.make = [alignment](cumem_device_t*) {
    return make_with([&](cumem_resource_t** out) {
      if (alignment == 0) return cumem_host_resource_create(nullptr, out);
      cumem_host_resource_options_t o = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
      o.alignment = alignment;
      return cumem_host_resource_create(&o, out);
    });
  };
  k.kind = CUMEM_RESOURCE_HOST;
  k.memory = CUMEM_MEMORY_HOST;
  k.host_accessible = true;
  k.alignment = alignment == 0 ? 64 : alignment;  // cumem.h: alignment 0 means 64
  return k;
}

// What every GPU kind shares. 256 bytes is the alignment CUDA's allocators
// give (RMM's tests check the same).
inline ResourceKind gpu_kind(std::string name, cumem_resource_kind_t kind,
                             cumem_memory_kind_t memory, bool host_accessible,
                             DeviceTie tie, FreeOrder free_order) {
  ResourceKind k;
  k.name = std::move(name);
  k.needs_gpu = true;
  k.kind = kind;
  k.memory = memory;
  k.host_accessible = host_accessible;
  k.device_accessible = true;
  k.device_tie = tie;
  k.free_order = free_order;
  k.alignment = 256;
  return k;
}

// Device memory from the device's default pool, or a new pool of its own.
inline ResourceKind device_pool_kind(std::string name, bool new_pool) {
  ResourceKind k = gpu_kind(std::move(name), CUMEM_RESOURCE_DEVICE, CUMEM_MEMORY_DEVICE, false,
                            DeviceTie::device, FreeOrder::stream_ordered);
  k.make = [new_pool](cumem_device_t* device) {
    return make_with([&](cumem_resource_t** out) {
      cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
      o.new_pool = new_pool ? CUMEM_TRUE : CUMEM_FALSE;
      return cumem_device_resource_create(device, &o, out);
    });
  };
  return k;
}

// Pinned host memory from a host-located pool (default options).
inline ResourceKind pinned_pool_kind(std::string name) {
  ResourceKind k = gpu_kind(std::move(name), CUMEM_RESOURCE_PINNED, CUMEM_MEMORY_PINNED, true,
                            DeviceTie::none, FreeOrder::stream_ordered);
  k.make = [](cumem_device_t* device) {
    return make_with([&](cumem_resource_t** out) {
      return cumem_pinned_resource_create(device, nullptr, out);
    });
  };
  return k;
}

// Pinned host memory from cuMemHostAlloc.
inline ResourceKind legacy_pinned_kind(std::string name) {
  ResourceKind k = gpu_kind(std::move(name), CUMEM_RESOURCE_LEGACY_PINNED, CUMEM_MEMORY_PINNED,
                            true, DeviceTie::none, FreeOrder::synchronous);
  k.make = [](cumem_device_t* device) {
    return make_with([&](cumem_resource_t** out) {
      return cumem_legacy_pinned_resource_create(device, out);
    });
  };
  return k;
}

// Managed memory preferring the device: from the managed pool where the
// driver has one (use_pool: disable_pool false), else cuMemAllocManaged.
inline ResourceKind managed_kind(std::string name, bool use_pool) {
  ResourceKind k =
      gpu_kind(std::move(name), CUMEM_RESOURCE_MANAGED, CUMEM_MEMORY_MANAGED, true,
               DeviceTie::device, use_pool ? FreeOrder::driver_dependent : FreeOrder::synchronous);
  k.make = [use_pool](cumem_device_t* device) {
    return make_with([&](cumem_resource_t** out) {
      cumem_managed_resource_options_t o = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
      o.preferred_location.type = CUMEM_LOCATION_DEVICE;
      const cumem_status_t s = cumem_device_ordinal(device, &o.preferred_location.id);
      if (s != CUMEM_SUCCESS) return s;
      o.disable_pool = use_pool ? CUMEM_FALSE : CUMEM_TRUE;
      return cumem_managed_resource_create(device, &o, out);
    });
  };
  return k;
}

// Device memory from a virtual memory resource (cuMemCreate + cuMemMap;
// every allocation a reserved range), with its default options.
inline ResourceKind virtual_kind(std::string name) {
  ResourceKind k = gpu_kind(std::move(name), CUMEM_RESOURCE_VIRTUAL, CUMEM_MEMORY_DEVICE, false,
                            DeviceTie::device, FreeOrder::stream_ordered);
  k.make = [](cumem_device_t* device) {
    return make_with([&](cumem_resource_t** out) {
      return cumem_virtual_resource_create(device, nullptr, out);
    });
  };
  return k;
}

// Makes an adaptor over `upstream` (the upstream stays the caller's).
using AdaptorCreate =
    std::function<cumem_status_t(cumem_resource_t* upstream, cumem_resource_t** out)>;

// An adaptor kind: a fresh upstream from `upstream`'s factory, wrapped by
// `create`, which must keep the upstream alive (the factory drops its own
// reference). The adaptor is expected to behave as its upstream does.
inline ResourceKind adaptor(std::string name, const ResourceKind& upstream, AdaptorCreate create) {
  ResourceKind k = upstream;
  k.name = std::move(name);
  k.make = [make_upstream = upstream.make, create = std::move(create)](cumem_device_t* device) {
    cumem_resource_t* up = make_upstream(device);
    if (!up) return static_cast<cumem_resource_t*>(nullptr);
    cumem_resource_t* adapted = make_with([&](cumem_resource_t** out) { return create(up, out); });
    cumem_resource_release(up);
    return adapted;
  };
  return k;
}

// The limit adaptor over `upstream`, capped at `limit_bytes`.
inline ResourceKind limit_kind(std::string name, const ResourceKind& upstream, uint64_t limit_bytes) {
  ResourceKind k = adaptor(std::move(name), upstream,
                           [limit_bytes](cumem_resource_t* up, cumem_resource_t** out) {
                             return cumem_limit_resource_create(up, limit_bytes, out);
                           });
  k.kind = CUMEM_RESOURCE_LIMIT;
  return k;
}

// The aligned adaptor over `upstream`, at `alignment`.
inline ResourceKind aligned_kind(std::string name, const ResourceKind& upstream, size_t alignment) {
  ResourceKind k = adaptor(std::move(name), upstream,
                           [alignment](cumem_resource_t* up, cumem_resource_t** out) {
                             return cumem_aligned_resource_create(up, alignment, out);
                           });
  k.kind = CUMEM_RESOURCE_ALIGNED;
  k.alignment = std::max(upstream.alignment, alignment);
  return k;
}

// The caching adaptor over `upstream`.
inline ResourceKind caching_kind(std::string name, const ResourceKind& upstream) {
  ResourceKind k = adaptor(std::move(name), upstream, [](cumem_resource_t* up, cumem_resource_t** out) {
    return cumem_caching_resource_create(up, out);
  });
  k.kind = CUMEM_RESOURCE_CACHING;
  return k;
}

// The caching adaptor with expandable segments over `upstream` (a device
// memory kind), default page size.
inline ResourceKind expandable_caching_kind(std::string name, const ResourceKind& upstream) {
  ResourceKind k = adaptor(std::move(name), upstream, [](cumem_resource_t* up, cumem_resource_t** out) {
    cumem_caching_resource_options_t o = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
    o.expandable = CUMEM_TRUE;
    return cumem_caching_resource_create_with_options(up, &o, out);
  });
  k.kind = CUMEM_RESOURCE_CACHING;
  return k;
}

// The tracking adaptor over `upstream` (call stacks off).
inline ResourceKind tracking_kind(std::string name, const ResourceKind& upstream) {
  ResourceKind k = adaptor(std::move(name), upstream, [](cumem_resource_t* up, cumem_resource_t** out) {
    return cumem_tracking_resource_create(up, CUMEM_FALSE, out);
  });
  k.kind = CUMEM_RESOURCE_TRACKING;
  return k;
}

// The logging adaptor over `upstream`, logging to /dev/null.
inline ResourceKind logging_kind(std::string name, const ResourceKind& upstream) {
  ResourceKind k = adaptor(std::move(name), upstream, [](cumem_resource_t* up, cumem_resource_t** out) {
    return cumem_logging_resource_create(up, "/dev/null", out);
  });
  k.kind = CUMEM_RESOURCE_LOGGING;
  return k;
}

// A callback resource over aligned_alloc (64-byte aligned host memory).
inline int32_t conformance_allocate(size_t size, void*, void*, void** out) {
  *out = std::aligned_alloc(64, (size + 63) / 64 * 64);
  return *out ? 0 : 1;
}
inline void conformance_deallocate(void* ptr, size_t, void*, void*) { std::free(ptr); }
inline ResourceKind callback_kind(std::string name) {
  ResourceKind k;
  k.name = std::move(name);
  k.make = [](cumem_device_t*) {
    return make_with([](cumem_resource_t** out) {
      cumem_resource_callbacks_t c = CUMEM_RESOURCE_CALLBACKS_INIT;
      c.allocate = conformance_allocate;
      c.deallocate = conformance_deallocate;
      return cumem_callback_resource_create(nullptr, &c, out);
    });
  };
  k.kind = CUMEM_RESOURCE_CALLBACK;
  k.memory = CUMEM_MEMORY_HOST;
  k.host_accessible = true;
  k.alignment = 64;
  return k;
}

// The failure-callback adaptor over `upstream`, whose callback gives up
// (the conformance suite's out-of-memory case then fails as the upstream's).
inline cumem_failure_action_t conformance_give_up(const cumem_failure_info_t*, void*) {
  return CUMEM_FAILURE_FAIL;
}
inline ResourceKind failure_callback_kind(std::string name, const ResourceKind& upstream) {
  ResourceKind k = adaptor(std::move(name), upstream, [](cumem_resource_t* up, cumem_resource_t** out) {
    cumem_failure_callback_t c = CUMEM_FAILURE_CALLBACK_INIT;
    c.callback = conformance_give_up;
    return cumem_failure_callback_resource_create(up, &c, out);
  });
  k.kind = CUMEM_RESOURCE_FAILURE_CALLBACK;
  return k;
}
