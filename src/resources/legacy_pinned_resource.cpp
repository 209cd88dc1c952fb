// Pinned host memory from cuMemHostAlloc: synchronous, usable by every
// device (portable) and mapped into the device address space.
#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "sync_resource.hpp"

namespace cumem::core {
namespace {

ResourceProperties legacy_pinned_properties() {
  ResourceProperties p;
  p.kind = ResourceKind::legacy_pinned;
  p.memory_kind = MemoryKind::pinned;
  p.device_accessible = true;
  p.host_accessible = true;
  p.device_id = -1;
  return p;
}

class LegacyPinnedResource final : public SyncResource {
 public:
  explicit LegacyPinnedResource(Ref<Device> device)
      : SyncResource(std::move(device), legacy_pinned_properties()) {}
  std::string describe() const override {
    return "legacy pinned resource (cuMemHostAlloc) of " + device_->describe();
  }

 protected:
  void* do_allocate(size_t size, const Stream*) override {
    ScopedContext scope(*device_);
    RelaxedCaptureMode relaxed;  // synchronous: never captured, never invalidates
    void* p = nullptr;
    CUMEM_CU(cuMemHostAlloc, (&p, size, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
             "allocating " + describe_bytes(size) + " with cuMemHostAlloc");
    return p;
  }
  void free_now(void* ptr, size_t size) override {
    ScopedContext scope(*device_);
    CUMEM_CU(cuMemFreeHost, (ptr), "freeing " + describe_bytes(size) + " with cuMemFreeHost");
  }
};

}  // namespace

Ref<Resource> create_legacy_pinned_resource(Ref<Device> device) {
  return Ref<Resource>::adopt(new LegacyPinnedResource(std::move(device)));
}

}  // namespace cumem::core
