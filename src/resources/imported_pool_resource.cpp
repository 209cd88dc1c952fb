// A device or pinned pool imported from another process: it opens the
// exporter's buffer descriptors (cuMemPoolImportPointer), counting opens so
// that one descriptor opened twice is one mapping, and unmaps on the last
// close. It cannot allocate.
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>

#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "pool_resource.hpp"

namespace cumem::core {
namespace {

class ImportedPoolResource final : public PoolResource {
 public:
  ImportedPoolResource(Ref<Device> device, const ResourceProperties& props, CUmemoryPool pool,
                       std::string name, Ref<AllocationHandle> handle)
      : PoolResource(std::move(device), props, pool, true, std::move(name), 0,
                     handle->pool().pool_id, handle->pool().pool_key),
        handle_(std::move(handle)) {}
  ~ImportedPoolResource() override { forget_imported(pool_id(), this); }

  Ref<AllocationHandle> get_allocation_handle() const override {
    // Exported again: the same pool, through a copy of the file descriptor.
    return AllocationHandle::take(handle_->dup_fd(), handle_->pool());
  }

  IpcDescriptor get_ipc_descriptor(void* ptr, size_t size) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_ptr_.find(ptr);
    if (it == by_ptr_.end() || it->second->descriptor.size != size)
      fail(Status::not_supported, "only whole buffers opened from a descriptor of " +
                                      describe() + " can be shared again");
    return it->second->descriptor;
  }

  void* open_ipc_descriptor(const IpcDescriptor& d, const Stream* stream) override {
    if (d.type != IpcType::pool_buffer)
      fail(Status::invalid_argument, "a pool imported from another process opens pool buffer "
                                     "descriptors, not " + core::describe(d));
    if (d.pool_id != pool_id())
      fail(Status::invalid_argument, "the descriptor belongs to another pool than " + describe() +
                                         " (its pool id differs): import that pool first");
    // Before any field reaches the driver, which does not validate the
    // export data (forged export data crashed it).
    if (!authentic(d, pool_key()))
      fail(Status::invalid_argument,
           "the descriptor's authentication tag does not match the key of " + describe() +
               ": it was not made by a process holding the pool, or a field was changed after "
               "it was made (nothing was opened)");
    if (d.memory_kind != properties().memory_kind)
      fail(Status::invalid_argument, "the descriptor's memory kind is not " + describe() + "'s");
    if (properties().memory_kind == MemoryKind::device && d.device_uuid != device_->uuid())
      fail(Status::wrong_device, "the descriptor names memory of another device than " +
                                     device_->describe());
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_export_.find(d.export_data);
    if (it != by_export_.end()) {
      if (it->second.descriptor.size != d.size)
        fail(Status::invalid_argument, "the descriptor names memory open here already with " +
                                           std::to_string(it->second.descriptor.size) +
                                           " bytes, not " + std::to_string(d.size));
      ++it->second.opens;
      return it->second.ptr;
    }
    ScopedContext scope(stream ? stream->device() : *device_);
    RelaxedCaptureMode relaxed;
    CUmemPoolPtrExportData data{};
    std::memcpy(data.reserved, d.export_data.data(), sizeof data.reserved);
    CUdeviceptr ptr = 0;
    CUMEM_CU(cuMemPoolImportPointer, (&ptr, pool_native(), &data),
             "opening a buffer of " + std::to_string(d.size) + " bytes from " + describe());
    // The driver knows how much it mapped: a larger size is a lie.
    CUdeviceptr base = 0;
    size_t range = 0;
    const CUresult r = CUMEM_CU_RESULT(cuMemGetAddressRange, (&base, &range, ptr));
    if (r != CUDA_SUCCESS || d.size > range - (ptr - base)) {
      CUMEM_CU_CLEANUP(cuMemFreeAsync, (ptr, native_or_legacy(stream)), "closing a refused imported buffer");
      if (r != CUDA_SUCCESS) driver::check(r, "cuMemGetAddressRange", "checking an opened buffer");
      fail(Status::invalid_argument,
           "the descriptor says " + std::to_string(d.size) + " bytes, but the driver mapped " +
               std::to_string(range - (ptr - base)) + " there");
    }
    Opened& o = by_export_[d.export_data];
    o.ptr = reinterpret_cast<void*>(ptr);
    o.descriptor = d;
    o.opens = 1;
    by_ptr_[o.ptr] = &o;
    return o.ptr;
  }

 protected:
  void* do_allocate(size_t, const Stream*) override {
    fail(Status::not_supported,
         "cannot allocate from " + describe() +
             ": it was imported from another process; allocate there and share the buffer");
  }
  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_ptr_.find(ptr);
    if (it == by_ptr_.end())
      fail(Status::invalid_argument, "the pointer was not opened from " + describe());
    if (--it->second->opens > 0) return;
    const auto key = it->second->descriptor.export_data;
    by_ptr_.erase(it);
    by_export_.erase(key);
    // Unmaps the exporter's memory here; the exporter's allocation stays.
    PoolResource::do_deallocate(ptr, size, stream);
  }

 private:
  struct Opened {
    void* ptr = nullptr;
    IpcDescriptor descriptor;
    uint32_t opens = 0;
  };
  Ref<AllocationHandle> handle_;
  mutable std::mutex mutex_;
  std::map<std::array<uint8_t, 64>, Opened> by_export_;
  std::map<void*, Opened*> by_ptr_;
};

}  // namespace

Ref<Resource> import_pool(Ref<Device> device, const AllocationHandle& handle) {
  const IpcDescriptor& pool = handle.pool();
  const bool pinned = pool.memory_kind == MemoryKind::pinned;
  ResourceProperties props;
  props.kind = pinned ? ResourceKind::pinned : ResourceKind::device;
  props.memory_kind = pinned ? MemoryKind::pinned : MemoryKind::device;
  props.device_accessible = true;
  props.host_accessible = pinned;
  props.device_id = pinned ? -1 : device->ordinal();
  props.stream_ordered = true;
  props.is_pool = true;
  props.ipc_enabled = true;
  props.is_imported = true;
  ScopedContext scope(*device);
  RelaxedCaptureMode relaxed;
  CUmemoryPool imported = nullptr;
  CUMEM_CU(cuMemPoolImportFromShareableHandle,
           (&imported, reinterpret_cast<void*>(static_cast<intptr_t>(handle.fd())),
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           "importing " + describe(pool) + " from process " + std::to_string(pool.exporter_pid));
  const std::string name = std::string(pinned ? "pinned" : "device") + " pool imported from process " +
                           std::to_string(pool.exporter_pid);
  auto* resource = new ImportedPoolResource(device, props, imported, name,
                                            Ref<AllocationHandle>::share(
                                                const_cast<AllocationHandle*>(&handle)));
  Ref<Resource> ref = Ref<Resource>::adopt(resource);
  if (pinned) resource->pool_set_access(*device, true);
  return ref;
}

}  // namespace cumem::core
