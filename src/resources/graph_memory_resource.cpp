// Graph memory: what a CUDA graph allocates for itself. An allocation on a
// capturing stream becomes a graph allocation node (cuMemAllocAsync under
// capture): the graph owns the memory, which keeps its address over every
// launch of the graph and which the driver may back with the same physical
// memory as other graphs' allocations whose lifetimes do not overlap.
// Memory no capture allocates could be handed to work outside the graph, so
// an allocation on a stream that does not capture is refused. A free is
// cuMemFreeAsync on its stream: a graph free node on a capturing stream, or
// an ordinary stream-ordered free of graph memory outside (after the graph
// ran; the driver allows both).
#include "graph_memory_resource.hpp"

#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"

namespace cumem::core {
namespace {

ResourceProperties graph_memory_properties(const Device& device) {
  ResourceProperties p;
  p.kind = ResourceKind::graph_memory;
  p.memory_kind = MemoryKind::device;
  p.device_accessible = true;
  p.device_id = device.ordinal();
  p.stream_ordered = true;
  return p;
}

class GraphMemoryResource final : public Resource, public GraphMemory {
 public:
  explicit GraphMemoryResource(Ref<Device> device)
      : Resource(device, graph_memory_properties(*device)) {}
  std::string describe() const override {
    return "graph memory resource of " + device_->describe();
  }

  GraphMemoryAttributes attributes() const override {
    ScopedContext scope(*device_);
    RelaxedCaptureMode relaxed;
    GraphMemoryAttributes a;
    a.reserved_mem_current = get(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, "reserved_mem_current");
    a.reserved_mem_high = get(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, "reserved_mem_high");
    a.used_mem_current = get(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, "used_mem_current");
    a.used_mem_high = get(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, "used_mem_high");
    return a;
  }

  void trim() override {
    ScopedContext scope(*device_);
    // Frees memory synchronously: relaxed, so that no capture is invalidated.
    RelaxedCaptureMode relaxed;
    CUMEM_CU(cuDeviceGraphMemTrim, (device_->native()),
             "trimming the graph memory of " + device_->describe());
  }

  void reset_highs() override {
    ScopedContext scope(*device_);
    RelaxedCaptureMode relaxed;
    // The driver resets a high to the current value when it is set to 0.
    for (const auto attribute : {CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH}) {
      cuuint64_t zero = 0;
      CUMEM_CU(cuDeviceSetGraphMemAttribute, (device_->native(), attribute, &zero),
               "resetting the graph memory highs of " + device_->describe());
    }
  }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    if (stream && &stream->device() != device_.get())
      fail(Status::wrong_device,
           "the graph memory resource of " + device_->describe() + " cannot allocate on " +
               stream->describe());
    const CaptureStatus status = capture_status(stream);
    if (status != CaptureStatus::active)
      fail(Status::invalid_state,
           std::string("the graph memory resource allocates only on a stream that is capturing "
                       "a CUDA graph, and ") +
               (stream ? stream->describe() : std::string("the legacy default stream")) +
               (status == CaptureStatus::invalidated
                    ? "'s capture was invalidated"
                    : stream ? " is not capturing" : " cannot capture") +
               "; allocate outside graphs from the device resource");
    ScopedContext scope(*device_);
    CUdeviceptr ptr = 0;
    CUMEM_CU(cuMemAllocAsync, (&ptr, size, stream->native()),
             "allocating " + describe_bytes(size) + " of graph memory on " + stream->describe());
    return reinterpret_cast<void*>(ptr);
  }

  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    ScopedContext scope(stream ? stream->device() : *device_);
    RelaxedCaptureMode relaxed;  // a free outside graphs leaves other captures valid
    CUMEM_CU(cuMemFreeAsync, (reinterpret_cast<CUdeviceptr>(ptr), native_or_legacy(stream)),
             "freeing " + describe_bytes(size) + " of graph memory");
  }

 private:
  uint64_t get(CUgraphMem_attribute attribute, const char* name) const {
    cuuint64_t value = 0;
    CUMEM_CU(cuDeviceGetGraphMemAttribute, (device_->native(), attribute, &value),
             std::string("reading the graph memory attribute ") + name + " of " +
                 device_->describe());
    return value;
  }
};

}  // namespace

Ref<Resource> create_graph_memory_resource(Ref<Device> device) {
  // Graph memory nodes need stream-ordered allocation (memory pools).
  if (device->attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) == 0)
    fail(Status::not_supported,
         device->describe() + " has no memory pools, so its graphs cannot allocate memory");
  return Ref<Resource>::adopt(new GraphMemoryResource(std::move(device)));
}

}  // namespace cumem::core
