// cumem info: the driver, NVRTC, each device with its memory and default
// pool, and what libcumem picks by default; as text or JSON. Without a
// driver it says so and still succeeds (what needs no GPU still works).
#include <cumem/cumem.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "../../src/snapshot/json.hpp"
#include "cli.hpp"

namespace cumem_cli {

const char* const kInfoUsage =
    "usage: cumem info [--json]\n"
    "\n"
    "Prints libcumem's version, the CUDA driver's (or that there is no driver, and\n"
    "why), NVRTC's, each device with its memory, capabilities and default memory\n"
    "pool's attributes, the resource libcumem uses for each device by default and\n"
    "for the frameworks, and the CUMEM_* environment variables set.\n"
    "\n"
    "  --json   one JSON object instead of text\n";

namespace {

using cumem::core::snapshot::Json;

struct Pool {
  cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
};

struct DeviceInfo {
  cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
  uint64_t free_bytes = 0;
  std::string resource_name, resource_kind, error;
  std::optional<Pool> pool;
};

const char* kind_name(cumem_resource_kind_t k) {
  switch (k) {
    case CUMEM_RESOURCE_DEVICE: return "device";
    case CUMEM_RESOURCE_LEGACY_DEVICE: return "legacy_device";
    case CUMEM_RESOURCE_CACHING: return "caching";
    default: return "other";
  }
}

std::string uuid_text(const uint8_t (&u)[16]) {
  char t[64];
  std::snprintf(t, sizeof t,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
  return t;
}

std::string version_text(int32_t v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// The device's memory resource: its name (from a snapshot of it) and, for
// a pool, its attributes.
void read_resource(const cumem_device_t* device, DeviceInfo& d) {
  cumem_resource_t* r = nullptr;
  if (cumem_device_get_memory_resource(device, &r) != CUMEM_SUCCESS) {
    d.error = cumem_last_error_message();
    return;
  }
  cumem_snapshot_t* s = nullptr;
  cumem_snapshot_resource_t info = CUMEM_SNAPSHOT_RESOURCE_INIT;
  if (cumem_snapshot_take(r, &s) == CUMEM_SUCCESS &&
      cumem_snapshot_get_resource(s, 0, &info) == CUMEM_SUCCESS) {
    d.resource_name = info.name;
    d.resource_kind = kind_name(info.kind);
  }
  cumem_snapshot_release(s);
  Pool pool;
  if (cumem_resource_pool_get_attributes(r, &pool.a) == CUMEM_SUCCESS) d.pool = pool;
  cumem_resource_release(r);
}

std::string framework_choice(const char* env) {
  const std::string v = env ? env : "";
  if (v.empty() || v == "device") return "the device's memory resource";
  if (v == "caching") return "a caching adaptor over the device's memory resource";
  if (v == "expandable") return "an expandable caching adaptor over the device's memory resource";
  return "none: CUMEM_FRAMEWORK_RESOURCE='" + v + "' is not device, caching or expandable";
}

const char* const kEnvironment[] = {"CUMEM_LIBCUDA", "CUMEM_LIBNVRTC", "CUMEM_LOG_LEVEL",
                                    "CUMEM_LOG_FILE", "CUMEM_FRAMEWORK_RESOURCE",
                                    "CUMEM_OOM_SNAPSHOT"};

std::string threshold_text(uint64_t t) {
  return t == UINT64_MAX ? "none (keeps all)" : human_bytes(t);
}

}  // namespace

int info_main(const Args& args) {
  bool json = false;
  for (const std::string& a : args) {
    if (a == "--json") json = true;
    else throw UsageError("unknown argument '" + a + "'");
  }
  const uint32_t v = cumem_version();
  const std::string library =
      std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);

  int32_t driver = 0;
  std::string driver_error;
  if (cumem_driver_version(&driver) != CUMEM_SUCCESS) driver_error = cumem_last_error_message();
  int32_t nvrtc_major = 0, nvrtc_minor = 0;
  std::string nvrtc_error;
  if (cumem_nvrtc_version(&nvrtc_major, &nvrtc_minor) != CUMEM_SUCCESS)
    nvrtc_error = cumem_last_error_message();

  std::vector<DeviceInfo> devices;
  std::string devices_error;
  int32_t count = 0;
  if (driver_error.empty()) {
    if (cumem_device_count(&count) != CUMEM_SUCCESS) devices_error = cumem_last_error_message();
    for (int32_t i = 0; i < count; ++i) {
      DeviceInfo d;
      cumem_device_t* device = nullptr;
      if (cumem_device_get(i, &device) != CUMEM_SUCCESS ||
          cumem_device_get_properties(device, &d.p) != CUMEM_SUCCESS) {
        d.p.ordinal = i;
        d.error = cumem_last_error_message();
      } else {
        uint64_t total = 0;
        if (cumem_device_memory_info(device, &d.free_bytes, &total) != CUMEM_SUCCESS)
          d.error = cumem_last_error_message();
        read_resource(device, d);
      }
      cumem_device_release(device);
      devices.push_back(d);
    }
  }
  const char* framework_env = std::getenv("CUMEM_FRAMEWORK_RESOURCE");

  if (json) {
    Json j;
    j.begin_object().field("schema", "cumem.info").field("version", 1).field("library", library);
    j.key("driver").begin_object().field("loaded", driver_error.empty());
    if (driver_error.empty()) j.field("version", driver);
    else j.field("error", driver_error);
    j.end_object();
    j.key("nvrtc").begin_object().field("found", nvrtc_error.empty());
    if (nvrtc_error.empty()) j.field("version", nvrtc_major * 1000 + nvrtc_minor * 10);
    else j.field("error", nvrtc_error);
    j.end_object();
    if (!devices_error.empty()) j.field("devices_error", devices_error);
    j.key("devices").begin_array();
    for (const DeviceInfo& d : devices) {
      j.begin_object().field("ordinal", d.p.ordinal);
      if (!d.error.empty()) j.field("error", d.error);
      j.field("name", d.p.name).field("uuid", uuid_text(d.p.uuid));
      j.field("compute_capability", std::to_string(d.p.compute_capability_major) + "." +
                                        std::to_string(d.p.compute_capability_minor));
      j.field("multiprocessors", d.p.multiprocessor_count);
      j.field("total_memory", d.p.total_memory).field("free_memory", d.free_bytes);
      j.field("memory_pools", d.p.memory_pools_supported != 0);
      j.field("virtual_memory_management", d.p.virtual_memory_management != 0);
      j.field("managed_memory", d.p.managed_memory != 0);
      j.field("concurrent_managed_access", d.p.concurrent_managed_access != 0);
      j.field("ipc_posix_fd", (d.p.ipc_handle_types & CUMEM_IPC_HANDLE_POSIX_FD) != 0);
      j.field("host_numa_id", d.p.host_numa_id);
      j.key("memory_resource").begin_object()
          .field("name", d.resource_name)
          .field("kind", d.resource_kind);
      if (d.pool) {
        const cumem_pool_attributes_t& a = d.pool->a;
        j.key("pool").begin_object()
            .field("release_threshold", a.release_threshold)
            .field("reserved_mem_current", a.reserved_mem_current)
            .field("reserved_mem_high", a.reserved_mem_high)
            .field("used_mem_current", a.used_mem_current)
            .field("used_mem_high", a.used_mem_high)
            .end_object();
      }
      j.end_object().end_object();
    }
    j.end_array();
    j.field("framework_resource", framework_choice(framework_env));
    j.key("environment").begin_object();
    for (const char* name : kEnvironment)
      if (const char* value = std::getenv(name)) j.field(name, value);
    j.end_object().end_object();
    std::printf("%s\n", j.text().c_str());
    return kOk;
  }

  std::printf("libcumem %s\n", library.c_str());
  if (driver_error.empty())
    std::printf("driver: CUDA %s (%d)\n", version_text(driver).c_str(), driver);
  else
    std::printf("driver: no driver (%s)\n", driver_error.c_str());
  if (nvrtc_error.empty())
    std::printf("NVRTC: %d.%d\n", nvrtc_major, nvrtc_minor);
  else
    std::printf("NVRTC: not found (%s)\n", nvrtc_error.c_str());
  if (!driver_error.empty()) {
    std::printf("devices: none (no driver); the host resource and its adaptors still work\n");
  } else if (!devices_error.empty()) {
    std::printf("devices: cannot be counted (%s)\n", devices_error.c_str());
  } else {
    std::printf("devices: %d\n", count);
  }
  for (const DeviceInfo& d : devices) {
    if (!d.error.empty() && d.p.name[0] == '\0') {
      std::printf("  device %d: %s\n", d.p.ordinal, d.error.c_str());
      continue;
    }
    std::printf("  device %d: %s, compute capability %d.%d, %d multiprocessors\n", d.p.ordinal,
                d.p.name, d.p.compute_capability_major, d.p.compute_capability_minor,
                d.p.multiprocessor_count);
    std::printf("    memory: %s total, %s free\n", human_bytes(d.p.total_memory).c_str(),
                human_bytes(d.free_bytes).c_str());
    std::printf("    %s, host NUMA node %d\n", uuid_text(d.p.uuid).c_str(), d.p.host_numa_id);
    std::printf("    memory pools: %s%s; virtual memory management: %s; managed memory: %s%s\n",
                d.p.memory_pools_supported ? "yes" : "no",
                (d.p.ipc_handle_types & CUMEM_IPC_HANDLE_POSIX_FD) ? " (IPC by POSIX fd)" : "",
                d.p.virtual_memory_management ? "yes" : "no", d.p.managed_memory ? "yes" : "no",
                d.p.concurrent_managed_access ? " (concurrent access)" : "");
    if (!d.resource_name.empty())
      std::printf("    default memory resource: %s\n", d.resource_name.c_str());
    if (d.pool) {
      const cumem_pool_attributes_t& a = d.pool->a;
      std::printf("      pool: release threshold %s; reserved %s (high %s); used %s (high %s)\n",
                  threshold_text(a.release_threshold).c_str(),
                  human_bytes(a.reserved_mem_current).c_str(),
                  human_bytes(a.reserved_mem_high).c_str(), human_bytes(a.used_mem_current).c_str(),
                  human_bytes(a.used_mem_high).c_str());
    }
    if (!d.error.empty()) std::printf("    (%s)\n", d.error.c_str());
  }
  std::printf("frameworks (cumem_torch_alloc, cumem_cupy_malloc): %s\n",
              framework_choice(framework_env).c_str());
  bool any = false;
  for (const char* name : kEnvironment)
    if (const char* value = std::getenv(name)) {
      std::printf("%s%s=%s", any ? ", " : "environment: ", name, value);
      any = true;
    }
  if (any) std::printf("\n");
  return kOk;
}

}  // namespace cumem_cli
