// What the fake memory driver (fake_memory_cuda.cpp, with the copy kernels
// of fake_copy_kernel.cpp) tells its tests: the calls it received, in
// order, and what they carried. The tests reach it
// with dlopen of $CUMEM_LIBCUDA (the same library libcumem loaded) and
// dlsym of fake_memory_state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

struct FakeCopyAttributes {
  int src_access_order = 0;  // the driver's CUmemcpySrcAccessOrder
  int src_hint_type = 0, src_hint_id = 0;
  int dst_hint_type = 0, dst_hint_id = 0;
  unsigned flags = 0;
};

// One launch of libcumem's batch copy kernels (fake_copy_kernel.cpp).
struct FakeKernelLaunch {
  std::string kernel;       // "cumem_copy_batch_small" or "cumem_copy_batch_large"
  unsigned grid = 0, block = 0;
  unsigned copies = 0;      // the parameters' count
  size_t param_bytes = 0;   // the kernel's parameter size, as the loaded PTX declares it
};

struct FakeMemoryState {
  std::mutex mutex;
  // One line per call that queues work or orders streams, such as
  // "memcpy stream=legacy", "memcpy_batch stream=ptds copies=3 attrs=1",
  // "record stream=legacy", "wait stream=ptds", "sync stream=0x..",
  // "kernel cumem_copy_batch_large stream=0x.. copies=1000".
  std::vector<std::string> log;
  // The attribute runs of the last cuMemcpyBatchAsync: start index and
  // attributes of each.
  std::vector<size_t> last_attr_indices;
  std::vector<FakeCopyAttributes> last_attrs;
  // The locations of the last batched prefetch: start index, type, id.
  std::vector<size_t> last_location_indices;
  std::vector<std::pair<int, int>> last_locations;
  // Streams for which cuStreamIsCapturing answers "active".
  std::vector<void*> capturing;
  // The copy kernels' launches, and how many code images were loaded
  // (cuLibraryLoadData calls, refused ones too) since the process began.
  std::vector<FakeKernelLaunch> launches;
  int libraries_loaded = 0;
  // While true, managed allocations lie one after the other, no gap
  // between them (as neighbours from a pool may): a range across two of
  // them is still refused, as the real driver may.
  bool adjacent_managed = false;
  // cuMemGetAddressRange calls since the process began.
  int address_range_queries = 0;

  void clear() {
    std::lock_guard<std::mutex> lock(mutex);
    log.clear();
    last_attr_indices.clear();
    last_attrs.clear();
    last_location_indices.clear();
    last_locations.clear();
    launches.clear();
  }
  // How many log lines start with `prefix`.
  size_t count(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mutex);
    size_t n = 0;
    for (const std::string& line : log) n += line.compare(0, prefix.size(), prefix) == 0;
    return n;
  }
};

using FakeMemoryStateFn = FakeMemoryState* (*)();
