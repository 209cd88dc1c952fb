// Buffer lifetime: making buffers, slices, closing.
#include "buffer.hpp"

#include "driver/driver.hpp"
#include "error.hpp"
#include "log.hpp"
#include "resources/virtual_resource.hpp"

namespace cumem::core {
namespace {

// Written field by field into the buffer's own info: a BufferInfo built on
// the stack and copied in was read back in 16-byte loads right after its
// narrower stores, a store-forwarding stall that cost the buffer pair
// about a tenth of its time (perf on the host resource).
void set_info_from(BufferInfo& info, const ResourceProperties& p, void* ptr, size_t size) {
  info.device_id = p.device_id;
  info.ptr = ptr;
  info.size = size;
  info.memory_kind = p.memory_kind;
  info.device_accessible = p.device_accessible;
  info.host_accessible = p.host_accessible;
  info.is_slice = false;
  info.owns_memory = true;
}

// What the driver knows of foreign memory; plain host memory when there is
// no driver or the driver does not know the pointer.
BufferInfo info_from_pointer(void* ptr, size_t size, Ref<Device>& device) {
  BufferInfo info;
  info.ptr = ptr;
  info.size = size;
  info.memory_kind = MemoryKind::host;
  info.host_accessible = true;
  if (!ptr || !driver::available()) return info;
  unsigned int memory_type = 0;
  int ordinal = -1;
  unsigned int is_managed = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      CU_POINTER_ATTRIBUTE_IS_MANAGED};
  void* values[] = {&memory_type, &ordinal, &is_managed};
  const auto& drv = driver::get();
  if (!drv.cuPointerGetAttributes_fn ||
      drv.cuPointerGetAttributes_fn(3, attributes, values, reinterpret_cast<CUdeviceptr>(ptr)) !=
          CUDA_SUCCESS)
    return info;
  if (is_managed) {
    info.memory_kind = MemoryKind::managed;
    info.device_accessible = true;
    info.host_accessible = true;
    info.device_id = ordinal;
  } else if (memory_type == CU_MEMORYTYPE_DEVICE) {
    info.memory_kind = MemoryKind::device;
    info.device_accessible = true;
    info.host_accessible = false;
    info.device_id = ordinal;
  } else if (memory_type == CU_MEMORYTYPE_HOST) {
    info.memory_kind = MemoryKind::pinned;
    info.device_accessible = true;
    info.host_accessible = true;
    info.device_id = -1;
  } else {
    return info;
  }
  if (ordinal >= 0) {
    try {
      device = Device::get(ordinal);
    } catch (const Error&) {
      device = nullptr;
    }
  }
  return info;
}

// [ptr, ptr + size) must be a range of addresses: ptr NULL only with size
// 0, and no wrap past the end of the address space.
void check_range(void* ptr, size_t size) {
  if (!ptr && size != 0)
    fail(Status::invalid_argument, "ptr is NULL but size is " + std::to_string(size));
  if (size > UINTPTR_MAX - reinterpret_cast<uintptr_t>(ptr))
    fail(Status::invalid_argument, "the range of " + std::to_string(size) +
                                       " bytes at ptr wraps past the end of the address space");
}

}  // namespace

Buffer::Buffer(Ref<Resource>&& resource, void* ptr, size_t size, const Stream* stream) noexcept
    : Object(Tag::buffer),
      owner_(Owner::resource),
      resource_(std::move(resource)),
      deallocation_stream_(Ref<Stream>::share(const_cast<Stream*>(stream))) {
  set_info_from(info_, resource_->properties(), ptr, size);
}

Ref<Buffer> Buffer::owned_by(Ref<Resource> resource, void* ptr, size_t size,
                              const Stream* stream) {
  return Ref<Buffer>::adopt(new Buffer(std::move(resource), ptr, size, stream));
}

Ref<Buffer> Buffer::allocate(const Resource& resource, size_t size, const Stream* stream) {
  Resource& r = const_cast<Resource&>(resource);
  void* ptr = r.allocate_raw(size, stream);
  ThisThread& t = this_thread();  // for the slot and the resource reference
  Buffer* b;
  try {
    // The slot is allocated before the arguments are evaluated: no
    // reference is taken when it cannot be had.
    b = new (t) Buffer(Ref<Resource>::adopt((r.retain(t), &r)), ptr, size, stream);
  } catch (...) {
    r.deallocate_raw(ptr, size, stream);  // no buffer: give the memory back
    throw;
  }
  return Ref<Buffer>::adopt(b);
}

Ref<Buffer> Buffer::allocate(Ref<Resource> resource, size_t size, const Stream* stream) {
  // The caller's reference keeps the resource alive on the failure path too.
  return allocate(*resource, size, stream);
}

Ref<Buffer> Buffer::wrap_owned(Ref<Resource> resource, void* ptr, size_t size) {
  check_range(ptr, size);
  return owned_by(std::move(resource), ptr, size, nullptr);
}

Ref<Buffer> Buffer::wrap(void* ptr, size_t size, ReleaseFn release, void* user_data) {
  check_range(ptr, size);
  Ref<Buffer> buffer = Ref<Buffer>::adopt(new Buffer);
  Buffer& b = *buffer;
  b.owner_ = Owner::callback;
  b.info_ = info_from_pointer(ptr, size, b.device_);
  b.info_.owns_memory = release != nullptr;
  b.release_ = release;
  b.user_data_ = user_data;
  return buffer;
}

Ref<Buffer> Buffer::register_host(Ref<Device> device, void* ptr, size_t size) {
  if (!ptr || size == 0)
    fail(Status::invalid_argument, "cannot register host memory with a NULL pointer or size 0");
  check_range(ptr, size);
  Ref<Buffer> buffer = Ref<Buffer>::adopt(new Buffer);
  {
    ScopedContext scope(*device);
    CUMEM_CU(cuMemHostRegister,
             (ptr, size, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP),
             "registering " + describe_bytes(size) + " of host memory");
  }
  Buffer& b = *buffer;
  b.owner_ = Owner::registered;
  b.info_.ptr = ptr;
  b.info_.size = size;
  b.info_.memory_kind = MemoryKind::pinned;
  b.info_.device_accessible = true;
  b.info_.host_accessible = true;
  b.info_.owns_memory = false;
  b.device_ = std::move(device);
  return buffer;
}

Ref<Buffer> Buffer::slice(size_t offset, size_t length) {
  ensure_open();
  if (offset > info_.size || length > info_.size - offset)
    fail(Status::out_of_range, "slice [" + std::to_string(offset) + ", " +
                                   std::to_string(offset) + " + " + std::to_string(length) +
                                   ") overruns the buffer of " + std::to_string(info_.size) + " bytes");
  Ref<Buffer> view = Ref<Buffer>::adopt(new Buffer);
  Buffer& s = *view;
  s.owner_ = Owner::slice;
  s.info_ = info_;
  s.info_.ptr = info_.ptr ? static_cast<char*>(info_.ptr) + offset : nullptr;
  s.info_.size = length;
  s.info_.is_slice = true;
  s.info_.owns_memory = false;
  s.resource_ = resource_;
  s.device_ = device_;
  s.deallocation_stream_ = deallocation_stream_;
  s.parent_ = Ref<Buffer>::share(this);
  slices_.fetch_add(1, std::memory_order_relaxed);
  return view;
}

bool Buffer::is_closed() const noexcept {
  for (const Buffer* b = this; b; b = b->parent_.get())
    if (b->closed_.load(std::memory_order_acquire)) return true;
  return false;
}

void Buffer::ensure_open() const {
  if (closed_.load(std::memory_order_acquire))
    fail(Status::buffer_closed, "the buffer was closed");
  for (const Buffer* b = parent_.get(); b; b = b->parent_.get())
    if (b->closed_.load(std::memory_order_acquire))
      fail(Status::buffer_closed, "the buffer this slice views was closed");
}

BufferInfo Buffer::info() const {
  ensure_open();
  return info_;
}

void Buffer::set_deallocation_stream(Ref<Stream> stream) {
  ensure_open();
  deallocation_stream_ = std::move(stream);
}

void Buffer::add_export() noexcept {
  for (Buffer* b = this; b; b = b->parent_.get()) b->exports_.fetch_add(1, std::memory_order_relaxed);
}

void Buffer::remove_export() noexcept {
  for (Buffer* b = this; b; b = b->parent_.get()) b->exports_.fetch_sub(1, std::memory_order_acq_rel);
}

void Buffer::set_release(ReleaseFn release, void* user_data) noexcept {
  release_ = release;
  user_data_ = user_data;
  info_.owns_memory = release != nullptr;
}

void Buffer::close(const Stream* stream) {
  ensure_open();
  if (const uint32_t n = exports_.load(std::memory_order_acquire))
    fail(Status::invalid_state,
         std::to_string(n) + " DLPack tensor" + (n == 1 ? " views" : "s view") +
             " this buffer's memory; closing would free it under them (release the buffer "
             "instead: the memory is freed when the last tensor's deleter runs)");
  if (closed_.exchange(true, std::memory_order_acq_rel))
    fail(Status::buffer_closed, "the buffer was closed");
  try {
    if (stream)
      free_memory(stream);
    else
      free_on_deallocation_stream(this_thread());
  } catch (...) {
    // Nothing was freed (a synchronous free refused on a capturing stream,
    // a driver error): the buffer stays open, so that closing it later, or
    // its last release, still frees the memory.
    closed_.store(false, std::memory_order_release);
    throw;
  }
}

void Buffer::resize(size_t new_size, const Stream* stream) {
  ensure_open();
  auto* resource = dynamic_cast<VirtualResource*>(resource_.get());
  if (owner_ == Owner::slice)
    fail(Status::not_supported, "a slice cannot be resized; resize the buffer it views");
  if (owner_ != Owner::resource || !resource)
    fail(Status::not_supported,
         "only buffers allocated from a virtual memory resource can be resized (this one's "
         "memory comes from " + (resource_ ? resource_->describe() : std::string("outside libcumem")) +
             ")");
  if (const uint32_t n = slices_.load(std::memory_order_acquire))
    fail(Status::invalid_state, std::to_string(n) + (n == 1 ? " slice views" : " slices view") +
                                    " this buffer; resizing could move or drop the memory under " +
                                    (n == 1 ? "it" : "them") + " (release the slices first)");
  if (const uint32_t n = exports_.load(std::memory_order_acquire))
    fail(Status::invalid_state, std::to_string(n) + " DLPack tensor" + (n == 1 ? " views" : "s view") +
                                    " this buffer; resizing could move or drop the memory under " +
                                    (n == 1 ? "it" : "them"));
  if (new_size == info_.size) return;
  const Stream* order = stream ? stream : deallocation_stream_.get();
  // An empty buffer holds no allocation yet: growing it makes one.
  void* ptr = info_.size == 0 ? resource->allocate_raw(new_size, order)
                              : resource->resize(info_.ptr, info_.size, new_size, order);
  info_.ptr = ptr;
  info_.size = new_size;
}

inline void Buffer::free_on_deallocation_stream(ThisThread& t) {
  const Stream* stream = deallocation_stream_.get();
  // No stream: nothing remembered to mark.
  if (!stream) return free_memory(nullptr);
  RememberedStreamScope remembered(t);
  free_memory(stream);
}

void Buffer::free_memory(const Stream* stream) {
  // The common case, inline where it is called; the others out of line.
  if (owner_ == Owner::resource) return resource_->deallocate_raw(info_.ptr, info_.size, stream);
  free_other_memory(stream);
}

void Buffer::free_other_memory(const Stream* stream) {
  switch (owner_) {
    case Owner::none:
    case Owner::slice:
    case Owner::resource:  // free_memory's
      return;
    case Owner::callback:
      if (stream) stream->synchronize();
      if (release_) release_(info_.ptr, info_.size, user_data_);
      return;
    case Owner::registered: {
      if (stream) stream->synchronize();
      ScopedContext scope(*device_);
      CUMEM_CU(cuMemHostUnregister, (info_.ptr), "unregistering " + describe_bytes(info_.size) + " of host memory");
      return;
    }
  }
}

// Buffers are destroyed here only (~Buffer frees nothing itself): the
// memory is freed unless the buffer was closed, then the resource
// reference is given back and the slot released, one TLS lookup for the
// three (the stream mark, the thread's credit, its free slots).
void Buffer::last_reference_gone() const noexcept {
  ThisThread& t = this_thread();
  Buffer* self = const_cast<Buffer*>(this);
  slab::header_of(self)->tag.store(0, std::memory_order_release);
  if (owner_ == Owner::slice && parent_) parent_->slices_.fetch_sub(1, std::memory_order_acq_rel);
  if (!closed_.load(std::memory_order_acquire)) {
    // Errors here are those close() would give; with no caller to report
    // them to, they go to the log.
    try {
      self->closed_.store(true, std::memory_order_release);
      self->free_on_deallocation_stream(t);
    } catch (...) {
      log::swallowed("freeing a buffer's memory as its last reference went");
    }
  }
  const Resource* resource = self->resource_.detach();
  self->~Buffer();
  if (resource) resource->release(t);
  slab::deallocate(t, self);  // what `delete this` would call
}

}  // namespace cumem::core
