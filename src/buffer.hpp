// A span of memory with an owner: allocated from a resource, wrapped
// (owned through a resource, or foreign with a release callback), host
// memory registered with the driver, or a slice of another buffer.
// Closing frees it ordered on a stream; a closed buffer refuses every
// operation with Status::buffer_closed and never touches freed memory.
#pragma once

#include <atomic>
#include <cstddef>

#include "ipc/descriptor.hpp"
#include "object.hpp"
#include "resources/resource.hpp"
#include "stream.hpp"

namespace cumem::core {

class VirtualIpcHandle;

struct BufferInfo {
  int device_id = -1;
  void* ptr = nullptr;
  size_t size = 0;
  MemoryKind memory_kind = MemoryKind::host;
  bool device_accessible = false;
  bool host_accessible = false;
  bool is_slice = false;
  bool owns_memory = false;
};

enum class Advice {
  set_read_mostly = 1,
  unset_read_mostly = 2,
  set_preferred_location = 3,
  unset_preferred_location = 4,
  set_accessed_by = 5,
  unset_accessed_by = 6,
};

using ReleaseFn = void (*)(void* ptr, size_t size, void* user_data);

// A buffer's memory as a dma-buf file descriptor (src/dmabuf.cpp), for
// RDMA registration (ibv_reg_dmabuf_mr) by communication engines.
struct DmaBuf {
  int fd = -1;            // owned by the caller
  uint64_t offset = 0;    // of the buffer's first byte in the fd's range
  uint64_t length = 0;    // of the fd's range, a multiple of the host page size
  uint64_t address = 0;   // device address of the range's first byte
  int device_id = -1;
  bool whole_allocation = true;  // false: only the chunks holding the buffer
};
// Flags of Buffer::get_dmabuf: the driver's CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE.
constexpr uint32_t kDmaBufMappingPcie = 0x1;

class Buffer final : public Object {
 public:
  static Ref<Buffer> allocate(Ref<Resource> resource, size_t size, const Stream* stream);
  // The same from a resource the caller holds throughout: the buffer takes
  // its reference once the memory is there (cumem_resource_allocate).
  static Ref<Buffer> allocate(const Resource& resource, size_t size, const Stream* stream);
  static Ref<Buffer> wrap_owned(Ref<Resource> resource, void* ptr, size_t size);
  static Ref<Buffer> wrap(void* ptr, size_t size, ReleaseFn release, void* user_data);
  static Ref<Buffer> register_host(Ref<Device> device, void* ptr, size_t size);
  Ref<Buffer> slice(size_t offset, size_t length);
  // IPC (src/sharing/buffer_ipc.cpp): this buffer's descriptor for another
  // process, and a buffer opened from another process's descriptor.
  IpcDescriptor get_ipc_descriptor() const;
  static Ref<Buffer> from_ipc_descriptor(Ref<Resource> resource, const uint8_t* descriptor,
                                         const Stream* stream);
  // IPC of virtual memory (src/sharing/virtual_buffer_ipc.cpp): this buffer's
  // chunks as file descriptors, and a buffer mapping another process's.
  Ref<VirtualIpcHandle> get_virtual_ipc_handle() const;
  static Ref<Buffer> from_virtual_ipc_handle(Ref<Device> device, const VirtualIpcHandle& handle,
                                             const Stream* stream);

  // dma-buf export (src/dmabuf.cpp): the backing allocation of this
  // buffer's device memory (the whole pool or cuMemAlloc allocation, the
  // virtual range, the caching adaptor's segment), rounded out to host
  // pages, as a new file descriptor, and where the buffer lies in it.
  DmaBuf get_dmabuf(uint32_t flags) const;

  // Throws buffer_closed once this buffer or a parent was closed.
  void ensure_open() const;
  bool is_closed() const noexcept;

  void* ptr() const { ensure_open(); return info_.ptr; }
  size_t size() const { ensure_open(); return info_.size; }
  BufferInfo info() const;
  // The owning resource (null for foreign and registered memory).
  const Ref<Resource>& resource() const { ensure_open(); return resource_; }

  void set_deallocation_stream(Ref<Stream> stream);
  // DLPack (src/dlpack/): a tensor of this buffer is alive. close() is
  // refused while any tensor of this buffer or of a slice of it is.
  void add_export() noexcept;
  void remove_export() noexcept;
  // For factories of wrapped memory: the release callback, set once every
  // check has passed (so that a failing factory never calls it).
  void set_release(ReleaseFn release, void* user_data) noexcept;
  void close(const Stream* stream);
  // Virtual memory (src/resources/virtual_resource.hpp): the buffer now has
  // `new_size` bytes, its contents kept up to the smaller size; its address
  // may change; an empty buffer gets a new allocation. Ordered on `stream`
  // (null: the deallocation stream). Only
  // for a whole buffer of a virtual resource, with no slice or DLPack
  // tensor of it alive (they would keep the old address or size).
  void resize(size_t new_size, const Stream* stream);

  static void copy(Buffer& dst, size_t dst_offset, const Buffer& src, size_t src_offset,
                   size_t length, const Stream* stream);
  void fill(uint32_t value, uint32_t width, const Stream* stream);
  void prefetch(Location location, const Stream* stream);
  void advise(Advice advice, Location location);
  void discard(const Stream* stream);
  // Batches of one (src/managed_batch.cpp) and the driver's record of the
  // last prefetch (none when pages differ or were never prefetched).
  void discard_prefetch(Location location, const Stream* stream);
  Location last_prefetch_location() const;
  // cuda.core's copy_to with no destination: a buffer of this size from
  // this buffer's resource, filled with a copy on `stream`.
  Ref<Buffer> copy_to_new(const Stream* stream) const;

 private:
  // none: nothing to free (yet), as while a factory is still filling it in.
  enum class Owner { none, resource, callback, registered, slice };
  Buffer() : Object(Tag::buffer) {}
  // A buffer that frees [ptr, ptr+size) through `resource`, on `stream`
  // unless told another.
  Buffer(Ref<Resource>&& resource, void* ptr, size_t size, const Stream* stream) noexcept;
  static Ref<Buffer> owned_by(Ref<Resource> resource, void* ptr, size_t size,
                              const Stream* stream);
  // Only last_reference_gone() destroys a buffer: it frees the memory
  // first, and releases the slot itself (not the virtual destructor).
  ~Buffer() override = default;
  void last_reference_gone() const noexcept override;
  void free_memory(const Stream* stream);
  // free_memory() of memory no resource owns.
  [[gnu::noinline]] void free_other_memory(const Stream* stream);
  // free_memory() on the deallocation stream, marked as a remembered one
  // (RememberedStreamScope) when there is one.
  void free_on_deallocation_stream(ThisThread& t);
  // The device whose context driver calls on this memory use, or null.
  const Device* context_device() const noexcept {
    return device_ ? device_.get() : resource_ ? resource_->device() : nullptr;
  }
  void require_managed(const char* operation) const;

  Owner owner_ = Owner::none;
  BufferInfo info_;  // also the pointer and size
  Ref<Resource> resource_;
  Ref<Buffer> parent_;
  Ref<Device> device_;  // for memory no resource owns (wrapped, registered)
  Ref<Stream> deallocation_stream_;
  ReleaseFn release_ = nullptr;
  void* user_data_ = nullptr;
  std::atomic<bool> closed_{false};
  std::atomic<uint32_t> exports_{0};
  std::atomic<uint32_t> slices_{0};  // live slices of this buffer (resize refuses them)
};

}  // namespace cumem::core
