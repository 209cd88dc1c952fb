// Pageable host memory: aligned_alloc and free, no driver needed.
#include <cstdlib>

#include "../error.hpp"
#include "resource.hpp"

namespace cumem::core {
namespace {

class HostResource final : public Resource {
 public:
  explicit HostResource(size_t alignment)
      : Resource(nullptr, host_properties()), alignment_(alignment) {}
  std::string describe() const override {
    return "host resource (alignment " + std::to_string(alignment_) + ")";
  }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    (void)stream;  // nothing to order: the memory is ready at once
    const size_t rounded = (size + alignment_ - 1) / alignment_ * alignment_;
    if (rounded < size) fail(Status::out_of_memory, "the size overflows when rounded up");
    void* p = std::aligned_alloc(alignment_, rounded);
    if (!p) fail(Status::out_of_memory, "aligned_alloc returned NULL");
    return p;
  }
  void do_deallocate(void* ptr, size_t, const Stream* stream) override {
    // Work queued on the stream may still read the memory.
    if (stream) stream->synchronize();
    std::free(ptr);
  }

 private:
  static ResourceProperties host_properties() {
    ResourceProperties p;
    p.kind = ResourceKind::host;
    p.memory_kind = MemoryKind::host;
    p.host_accessible = true;
    return p;
  }
  size_t alignment_;
};

}  // namespace

Ref<Resource> create_host_resource(size_t alignment) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0)
    fail(Status::invalid_argument, "host resource alignment " + std::to_string(alignment) +
                                       " must be a power of two and at least " +
                                       std::to_string(sizeof(void*)));
  return Ref<Resource>::adopt(new HostResource(alignment));
}

}  // namespace cumem::core
