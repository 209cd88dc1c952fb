#include "dlpack.hpp"

#include <memory>
#include <string>
#include <vector>

#include "../driver/driver.hpp"
#include "../error.hpp"

namespace cumem::core::dlpack {
namespace {

static_assert(sizeof(size_t) == sizeof(uint64_t), "a tensor's byte count must fit size_t");

const char* device_type_name(int32_t t) {
  switch (t) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    default: return "a device type libcumem does not handle";
  }
}

const char* kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::host: return "pageable host";
    case MemoryKind::device: return "device";
    case MemoryKind::pinned: return "pinned host";
    case MemoryKind::managed: return "managed";
  }
  return "unknown";
}

// One exported tensor: the managed struct, its shape and strides, and the
// reference that keeps the buffer alive. Freed by the deleter.
template <class Managed>
struct ExportContext {
  Managed managed{};
  std::vector<int64_t> dims;  // shape then strides
  Ref<Buffer> buffer;
};

template <class Managed>
void delete_export(Managed* self) noexcept {
  if (!self) return;
  auto* ctx = static_cast<ExportContext<Managed>*>(self->manager_ctx);
  ctx->buffer->remove_export();
  delete ctx;  // drops the buffer reference
}

template <class Managed>
Managed* export_tensor(Ref<Buffer> buffer, const ExportOptions& o, DLTensor Managed::*tensor) {
  const BufferInfo info = buffer->info();  // throws buffer_closed
  const DLDevice device = export_device(info, o.device_type);
  const ExportLayout layout =
      check_export(info.size, o.dtype, o.ndim, o.shape, o.strides, o.byte_offset);
  auto ctx = std::make_unique<ExportContext<Managed>>();
  ctx->dims.assign(layout.shape, layout.shape + layout.ndim);
  ctx->dims.insert(ctx->dims.end(), layout.strides, layout.strides + layout.ndim);
  DLTensor& t = ctx->managed.*tensor;
  t.data = info.ptr ? static_cast<char*>(info.ptr) + o.byte_offset : nullptr;
  t.device = device;
  t.ndim = layout.ndim;
  t.dtype = layout.dtype;
  t.shape = layout.ndim ? ctx->dims.data() : nullptr;
  t.strides = layout.ndim ? ctx->dims.data() + layout.ndim : nullptr;
  t.byte_offset = 0;
  ctx->managed.manager_ctx = ctx.get();
  ctx->managed.deleter = &delete_export<Managed>;
  buffer->add_export();
  ctx->buffer = std::move(buffer);
  return &ctx.release()->managed;
}

template <class Managed>
void call_deleter(void*, size_t, void* user_data) {
  auto* m = static_cast<Managed*>(user_data);
  if (m->deleter) m->deleter(m);
}

Ref<Buffer> import_tensor(const DLTensor& t, uint64_t flags, ReleaseFn release, void* user_data) {
  const uint64_t bytes = check_import(t, flags);
  const int32_t type = t.device.device_type;
  const bool cuda = type == kDLCUDA || type == kDLCUDAHost || type == kDLCUDAManaged;
  if (!cuda && type != kDLCPU)
    fail(Status::not_supported, "device type " + std::to_string(type) +
                                    " is not one libcumem imports (kDLCPU 1, kDLCUDA 2, "
                                    "kDLCUDAHost 3, kDLCUDAManaged 13)");
  // kDLCPU tensors say device 0, CUDA ones the ordinal: none is negative.
  if (t.device.device_id < 0)
    fail(Status::invalid_argument, std::string("a ") + device_type_name(type) +
                                       " tensor with the negative device id " +
                                       std::to_string(t.device.device_id));
  if (!t.data && bytes > 0)
    fail(Status::invalid_argument, "data is NULL but the tensor has " + std::to_string(bytes) +
                                       " bytes");
  const uintptr_t base = reinterpret_cast<uintptr_t>(t.data);
  if (t.byte_offset > UINTPTR_MAX - base || bytes > UINTPTR_MAX - base - t.byte_offset)
    fail(Status::invalid_argument, "data + byte_offset " + std::to_string(t.byte_offset) +
                                       " + " + std::to_string(bytes) +
                                       " bytes wraps past the end of the address space");
  void* ptr = t.data ? reinterpret_cast<void*>(base + t.byte_offset) : nullptr;
  if (cuda) (void)driver::get();  // throws no_driver, naming the library
  Ref<Buffer> buffer = Buffer::wrap(ptr, static_cast<size_t>(bytes), nullptr, nullptr);
  if (bytes > 0) {
    const BufferInfo info = buffer->info();
    bool fits = true;
    switch (type) {
      case kDLCPU: fits = info.host_accessible; break;
      case kDLCUDA: fits = info.memory_kind == MemoryKind::device ||
                           info.memory_kind == MemoryKind::managed; break;
      case kDLCUDAHost: fits = info.memory_kind == MemoryKind::pinned; break;
      case kDLCUDAManaged: fits = info.memory_kind == MemoryKind::managed; break;
    }
    if (!fits)
      fail(Status::invalid_argument,
           std::string("the tensor says ") + device_type_name(type) + " but the driver knows its " +
               "memory as " + kind_name(info.memory_kind) + " memory" +
               (info.memory_kind == MemoryKind::host && cuda ? " (or does not know the pointer)"
                                                             : ""));
    if (type == kDLCUDA && info.device_id >= 0 && info.device_id != t.device.device_id &&
        info.memory_kind == MemoryKind::device)
      fail(Status::invalid_argument, "the tensor says device " +
                                         std::to_string(t.device.device_id) +
                                         " but the driver places its memory on device " +
                                         std::to_string(info.device_id));
  }
  buffer->set_release(release, user_data);
  return buffer;
}

}  // namespace

DLDevice export_device(const BufferInfo& info, int32_t device_type) {
  const int32_t id = info.device_id >= 0 ? info.device_id : 0;
  if (device_type == 0) {
    switch (info.memory_kind) {
      case MemoryKind::host: return {kDLCPU, 0};
      case MemoryKind::device: return {kDLCUDA, id};
      case MemoryKind::pinned: return {kDLCUDAHost, id};
      case MemoryKind::managed: return {kDLCUDAManaged, id};
    }
  }
  bool ok = false;
  switch (device_type) {
    case kDLCPU: ok = info.host_accessible; break;
    // Pinned memory is device-accessible, but a consumer told kDLCUDA copies
    // it as device memory (cudaMemcpyDeviceToHost), which the runtime
    // refuses for host memory: device and managed memory only.
    case kDLCUDA: ok = info.memory_kind == MemoryKind::device ||
                       info.memory_kind == MemoryKind::managed; break;
    case kDLCUDAHost: ok = info.memory_kind == MemoryKind::pinned; break;
    case kDLCUDAManaged: ok = info.memory_kind == MemoryKind::managed; break;
    default: break;
  }
  if (!ok)
    fail(Status::invalid_argument,
         "device_type " + std::to_string(device_type) + " (" + device_type_name(device_type) +
             ") cannot present " + kind_name(info.memory_kind) +
             " memory (kDLCPU needs host-accessible memory, kDLCUDA device-accessible, "
             "kDLCUDAHost pinned, kDLCUDAManaged managed)");
  return {static_cast<DLDeviceType>(device_type), device_type == kDLCPU ? 0 : id};
}

DLManagedTensorVersioned* export_versioned(Ref<Buffer> buffer, const ExportOptions& options) {
  DLManagedTensorVersioned* m =
      export_tensor(std::move(buffer), options, &DLManagedTensorVersioned::dl_tensor);
  m->version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m->flags = options.read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  return m;
}

DLManagedTensor* export_legacy(Ref<Buffer> buffer, const ExportOptions& options) {
  if (options.read_only)
    fail(Status::invalid_argument,
         "read_only cannot be expressed by a legacy DLManagedTensor (it has no flags); "
         "export a versioned tensor");
  return export_tensor(std::move(buffer), options, &DLManagedTensor::dl_tensor);
}

Ref<Buffer> import_versioned(DLManagedTensorVersioned* tensor, bool allow_read_only) {
  if (tensor->version.major != 1)
    fail(Status::not_supported,
         "DLPack version " + std::to_string(tensor->version.major) + "." +
             std::to_string(tensor->version.minor) +
             ": libcumem imports major version 1 (its fields may differ in another)");
  if ((tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY) && !allow_read_only)
    fail(Status::not_supported,
         "the tensor is read-only and libcumem buffers are writable; pass allow_read_only "
         "to take it, promising never to write through the buffer");
  return import_tensor(tensor->dl_tensor, tensor->flags, &call_deleter<DLManagedTensorVersioned>,
                       tensor);
}

Ref<Buffer> import_legacy(DLManagedTensor* tensor) {
  return import_tensor(tensor->dl_tensor, 0, &call_deleter<DLManagedTensor>, tensor);
}

}  // namespace cumem::core::dlpack
