// Lists every CUDA device and its properties through libcumem's C++ facade,
// or says clearly why it cannot (no driver, no device).
#include <cumem/cumem.hpp>

#include <cstdio>
#include <string>

namespace {

const char* yes_no(cumem_bool_t b) { return b ? "yes" : "no"; }

std::string uuid_string(const uint8_t (&uuid)[16]) {
  std::string s;
  char byte[3];
  for (int b = 0; b < 16; ++b) {
    std::snprintf(byte, sizeof byte, "%02x", uuid[b]);
    s += byte;
    if (b == 3 || b == 5 || b == 7 || b == 9) s += '-';
  }
  return s;
}

void print_device(const cumem::Device& device) {
  const cumem_device_properties_t p = device.properties();
  const cumem::MemoryInfo memory = device.memory_info();
  const double gib = 1024.0 * 1024.0 * 1024.0;
  std::printf("device %d: %s\n", p.ordinal, p.name);
  std::printf("  uuid                      %s\n", uuid_string(p.uuid).c_str());
  std::printf("  compute capability        %d.%d\n", p.compute_capability_major,
              p.compute_capability_minor);
  std::printf("  memory                    %.1f GiB total, %.1f GiB free\n",
              static_cast<double>(p.total_memory) / gib, static_cast<double>(memory.free) / gib);
  std::printf("  multiprocessors           %d\n", p.multiprocessor_count);
  std::printf("  memory pools              %s\n", yes_no(p.memory_pools_supported));
  std::printf("  pool IPC handle types     %s%s%s\n",
              (p.ipc_handle_types & CUMEM_IPC_HANDLE_POSIX_FD) ? "posix-fd " : "",
              (p.ipc_handle_types & CUMEM_IPC_HANDLE_FABRIC) ? "fabric " : "",
              p.ipc_handle_types ? "" : "none");
  std::printf("  managed memory            %s (concurrent access: %s)\n", yes_no(p.managed_memory),
              yes_no(p.concurrent_managed_access));
  std::printf("  virtual memory management %s\n", yes_no(p.virtual_memory_management));
  std::printf("  host NUMA node            %d\n", p.host_numa_id);
  std::printf("  PCI                       %04x:%02x:%02x\n", p.pci_domain_id, p.pci_bus_id,
              p.pci_device_id);
  std::printf("  max threads per block     %d\n", p.max_threads_per_block);
  std::printf("  max shared memory (opt-in) %d bytes\n", p.max_shared_memory_per_block_optin);
  std::printf("  thread-block clusters     %s\n", yes_no(p.cluster_launch));
  const cumem::PriorityRange priorities = device.stream_priority_range();
  std::printf("  stream priorities         %d (lowest) to %d (highest)\n", priorities.least,
              priorities.greatest);
}

}  // namespace

int main() {
  const unsigned v = cumem::version();
  std::printf("libcumem %u.%u.%u\n", v / 10000, v / 100 % 100, v % 100);
  try {
    const int32_t driver = cumem::driver_version();
    std::printf("CUDA driver %d.%d\n", driver / 1000, (driver % 1000) / 10);
    const int32_t count = cumem::Device::count();
    std::printf("%d device%s\n", count, count == 1 ? "" : "s");
    for (int32_t i = 0; i < count; ++i) print_device(cumem::Device::get(i));
  } catch (const cumem::Error& e) {
    // what() holds the library's sentence and the status name.
    std::fprintf(stderr, "device_query: %s\n", e.what());
    return 1;
  }
  return 0;
}
