/* Lists every CUDA device and its properties through libcumem's C API, or
 * says clearly why it cannot (no driver, no device). */
#include <cumem/cumem.h>

#include <stdio.h>

static int report(cumem_status_t status, const char* what) {
  if (status == CUMEM_SUCCESS) return 0;
  fprintf(stderr, "%s: %s: %s\n", what, cumem_status_string(status), cumem_last_error_message());
  return 1;
}

int main(void) {
  int32_t count = 0;
  int32_t driver = 0;
  const uint32_t v = cumem_version();
  printf("libcumem %u.%u.%u\n", (unsigned)(v / 10000), (unsigned)(v / 100 % 100), (unsigned)(v % 100));
  if (report(cumem_driver_version(&driver), "loading the CUDA driver")) return 1;
  printf("CUDA driver %d.%d\n", driver / 1000, (driver % 1000) / 10);
  if (report(cumem_device_count(&count), "counting devices")) return 1;
  printf("%d device%s\n", count, count == 1 ? "" : "s");
  for (int32_t i = 0; i < count; ++i) {
    cumem_device_t* dev = NULL;
    cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
    uint64_t free_bytes = 0, total_bytes = 0;
    if (report(cumem_device_get(i, &dev), "getting a device")) return 1;
    if (report(cumem_device_get_properties(dev, &p), "reading properties") ||
        report(cumem_device_memory_info(dev, &free_bytes, &total_bytes), "reading memory")) {
      cumem_device_release(dev);
      return 1;
    }
    printf("device %d: %s\n", p.ordinal, p.name);
    printf("  uuid                      ");
    for (int b = 0; b < 16; ++b) printf("%02x%s", p.uuid[b], (b == 3 || b == 5 || b == 7 || b == 9) ? "-" : "");
    printf("\n");
    printf("  compute capability        %d.%d\n", p.compute_capability_major, p.compute_capability_minor);
    printf("  memory                    %.1f GiB total, %.1f GiB free\n",
           (double)p.total_memory / 1073741824.0, (double)free_bytes / 1073741824.0);
    printf("  multiprocessors           %d\n", p.multiprocessor_count);
    printf("  memory pools              %s\n", p.memory_pools_supported ? "yes" : "no");
    printf("  pool IPC handle types     %s%s%s\n",
           (p.ipc_handle_types & CUMEM_IPC_HANDLE_POSIX_FD) ? "posix-fd " : "",
           (p.ipc_handle_types & CUMEM_IPC_HANDLE_FABRIC) ? "fabric " : "",
           p.ipc_handle_types ? "" : "none");
    printf("  managed memory            %s (concurrent access: %s)\n", p.managed_memory ? "yes" : "no",
           p.concurrent_managed_access ? "yes" : "no");
    printf("  virtual memory management %s\n", p.virtual_memory_management ? "yes" : "no");
    printf("  host NUMA node            %d\n", p.host_numa_id);
    printf("  PCI                       %04x:%02x:%02x\n", p.pci_domain_id, p.pci_bus_id, p.pci_device_id);
    printf("  max threads per block     %d\n", p.max_threads_per_block);
    printf("  max shared memory (opt-in) %d bytes\n", p.max_shared_memory_per_block_optin);
    printf("  thread-block clusters     %s\n", p.cluster_launch ? "yes" : "no");
    cumem_device_release(dev);
  }
  return 0;
}
