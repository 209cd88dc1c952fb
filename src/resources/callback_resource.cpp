// A resource made of user callbacks: how allocators of other languages (a
// Rust arena, a Julia pool) plug into libcumem. The callbacks say what the
// memory is; libcumem keeps the statistics and the buffers.
#include "../error.hpp"
#include "callback_resource.hpp"

namespace cumem::core {
namespace {

// NULL for the legacy default stream, as the C ABI's callbacks see it.
void* native_of(const Stream* stream) { return stream ? static_cast<void*>(stream->native()) : nullptr; }

class CallbackResource final : public Resource {
 public:
  CallbackResource(Ref<Device> device, const ResourceProperties& props, const Callbacks& c)
      : Resource(std::move(device), props), callbacks_(c) {}
  ~CallbackResource() override {
    if (callbacks_.destroy) callbacks_.destroy(callbacks_.user_data);
  }
  std::string describe() const override { return "callback resource"; }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    void* ptr = nullptr;
    const int32_t rc = callbacks_.allocate(size, native_of(stream), callbacks_.user_data, &ptr);
    if (rc != 0 || (!ptr && size != 0))
      fail(Status::out_of_memory, "the allocate callback returned " + std::to_string(rc) +
                                      (rc == 0 ? " but no pointer" : ""));
    return ptr;
  }
  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    callbacks_.deallocate(ptr, size, native_of(stream), callbacks_.user_data);
  }

 private:
  Callbacks callbacks_;
};

}  // namespace

Ref<Resource> create_callback_resource(Ref<Device> device, const Callbacks& callbacks,
                                       const ResourceProperties& properties) {
  if (!callbacks.allocate || !callbacks.deallocate)
    fail(Status::invalid_argument, "the allocate and deallocate callbacks must not be NULL");
  ResourceProperties p = properties;
  p.kind = ResourceKind::callback;
  p.device_id = device ? device->ordinal() : -1;
  p.is_pool = false;
  p.ipc_enabled = false;
  p.is_imported = false;
  return Ref<Resource>::adopt(new CallbackResource(std::move(device), p, callbacks));
}

}  // namespace cumem::core
