// The configuration of the framework entry points' default resource, as
// one line of text: CUMEM_ALLOC_CONF="kind:caching,expandable:true,
// limit:40GiB" (PyTorch's PYTORCH_CUDA_ALLOC_CONF shape), the same text
// given to cumem_framework_configure, and the older
// CUMEM_FRAMEWORK_RESOURCE ("device", "caching", "expandable"). Parsing
// only: src/framework.cpp builds the resource it describes. No CUDA here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cumem::core {

struct AllocConf {
  enum class Kind { device, caching };
  // Nothing says what memory to use (no kind, expandable, page_size,
  // release_threshold or managed key; only limit may be given): the
  // framework chooses, the expandable cache over the device's memory
  // resource where the device has virtual memory management, else that
  // resource itself (src/framework.cpp). `kind` and `expandable` then hold
  // the fallback's values.
  bool automatic = true;
  // device: the memory itself (the device's memory resource, a pool of its
  // own, or managed memory); caching: a caching adaptor over it.
  Kind kind = Kind::device;
  bool expandable = false;        // the caching adaptor's expandable segments
  uint64_t page_size = 0;         // with expandable; 0: the adaptor's default
  uint64_t limit = 0;             // 0: none; else a limit adaptor on top
  bool own_pool = false;          // release_threshold was given
  uint64_t release_threshold = 0; // the own pool's, in the driver's terms
  bool managed = false;           // unified memory instead of device memory

  // Whether the memory is the device's memory resource (which the user may
  // change), rather than a resource the framework makes for itself.
  bool uses_device_memory_resource() const { return !own_pool && !managed; }
  // The keys that differ from the defaults, as the text that parses back to
  // this configuration ("" for the defaults; "kind:device" for the device
  // resource chosen rather than fallen back to).
  std::string text() const;
};

// The keys, in the order text() writes them and messages list them.
inline constexpr const char* kAllocConfKeys =
    "kind, expandable, page_size, limit, release_threshold, managed";

// Parses "key:value,key:value,..." (spaces around keys and values and empty
// items are ignored; "" is the defaults). Sizes are a whole number of bytes
// with an optional unit: B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB,
// GB, TB (powers of 1000), in any case; booleans true/false or 1/0, in any
// case. Throws Error(invalid_argument) naming the key at fault, prefixed
// with `origin` ("CUMEM_ALLOC_CONF: ..."; empty: no prefix): an unknown key,
// a key without a value or given twice, a bad value, or keys that do not go
// together (expandable without kind:caching, page_size without expandable,
// managed with release_threshold or expandable).
AllocConf parse_alloc_conf(std::string_view text, std::string_view origin);

// The configuration of the environment: `alloc_conf` (CUMEM_ALLOC_CONF's
// value) parsed, with `framework_resource` (CUMEM_FRAMEWORK_RESOURCE's,
// "device", "caching" or "expandable") as the older spelling of kind:device,
// kind:caching and kind:caching,expandable:true. Null or empty: unset. When
// both are set they must agree on kind and expandable. Throws as
// parse_alloc_conf does.
AllocConf alloc_conf_from_environment(const char* alloc_conf, const char* framework_resource);

}  // namespace cumem::core
