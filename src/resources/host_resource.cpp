// Pageable host memory: aligned_alloc and free, no driver needed.
#include <cstdlib>

#include "../error.hpp"
#include "sync_resource.hpp"

namespace cumem::core {
namespace {

// Larger alignments would turn every small allocation into a huge one.
constexpr size_t kMaxAlignment = size_t{1} << 21;  // 2 MiB, a huge page

ResourceProperties host_properties() {
  ResourceProperties p;
  p.kind = ResourceKind::host;
  p.memory_kind = MemoryKind::host;
  p.host_accessible = true;
  return p;
}

class HostResource final : public SyncResource {
 public:
  explicit HostResource(size_t alignment)
      : SyncResource(nullptr, host_properties()), alignment_(alignment) {}
  std::string describe() const override {
    return "host resource (alignment " + std::to_string(alignment_) + ")";
  }

 protected:
  void* do_allocate(size_t size, const Stream*) override {
    // Nothing to order on the stream: the memory is ready at once.
    const size_t rounded = (size + alignment_ - 1) / alignment_ * alignment_;
    if (rounded < size) fail(Status::out_of_memory, "the size overflows when rounded up");
    void* p = std::aligned_alloc(alignment_, rounded);
    if (!p) fail(Status::out_of_memory, "aligned_alloc returned NULL");
    return p;
  }
  void free_now(void* ptr, size_t) override { std::free(ptr); }

 private:
  size_t alignment_;
};

}  // namespace

Ref<Resource> create_host_resource(size_t alignment) {
  if (alignment < sizeof(void*) || alignment > kMaxAlignment || (alignment & (alignment - 1)) != 0)
    fail(Status::invalid_argument, "host resource alignment " + std::to_string(alignment) +
                                       " must be a power of two from " +
                                       std::to_string(sizeof(void*)) + " to " +
                                       std::to_string(kMaxAlignment));
  return Ref<Resource>::adopt(new HostResource(alignment));
}

}  // namespace cumem::core
