// The graph memory resource (cuda.core's GraphMemoryResource): allocations
// only on a capturing stream, each one a graph allocation node
// (cuMemAllocAsync under capture), so that the graph owns the memory; and
// the device's graph memory: its attributes (cuDeviceGetGraphMemAttribute)
// and trim (cuDeviceGraphMemTrim). See graph_memory_resource.cpp.
#pragma once

#include <cstdint>

#include "resource.hpp"

namespace cumem::core {

// Bytes the device's graphs hold (CU_GRAPH_MEM_ATTR_*): reserved is what
// the graph allocator took from the system, used what graph allocations
// hold; the highs since the last reset_highs.
struct GraphMemoryAttributes {
  uint64_t reserved_mem_current = 0, reserved_mem_high = 0;
  uint64_t used_mem_current = 0, used_mem_high = 0;
};

// The graph memory resource's own calls (the C layer finds them by
// dynamic_cast). They concern the device's graph memory, which every graph
// memory resource of the device and every graph share.
class GraphMemory {
 public:
  virtual GraphMemoryAttributes attributes() const = 0;
  // Gives the memory no graph holds back to the system.
  virtual void trim() = 0;
  // Sets both highs to the current values.
  virtual void reset_highs() = 0;

 protected:
  ~GraphMemory() = default;
};

Ref<Resource> create_graph_memory_resource(Ref<Device> device);

}  // namespace cumem::core
