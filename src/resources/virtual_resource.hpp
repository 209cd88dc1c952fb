// The virtual-memory resource (cuda.core's VirtualMemoryResource): each
// allocation is a range of reserved address space (src/vmm/range.hpp) with
// physical chunks mapped over its rounded size. Buffers of it grow and
// shrink (resize, cuda.core's modify_allocation): in place while the
// reserved addresses allow, else by mapping the same chunks into a larger
// range (no copy); shrinking gives chunks back. Frees, the old addresses of
// a moved buffer and the chunks a shrink gives back are unmapped after the
// work queued on the given stream (vmm::ReleaseQueue).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "../vmm/release_queue.hpp"
#include "dmabuf_source.hpp"
#include "ipc_shareable.hpp"
#include "peer_access.hpp"
#include "resource.hpp"
#include "snapshottable.hpp"
#include "virtual_shareable.hpp"

namespace cumem::core {

class VirtualIpcHandle;

struct VirtualOptions {
  vmm::SpecOptions spec;  // location, granularity, handle types, GPUDirect RDMA
  size_t chunk_size = 0;  // rounded up to the granularity; 0: kDefaultChunk
  uint64_t address_hint = 0;
  uint64_t alignment = 0;     // of every buffer's address; 0: the granularity
  uint64_t reserve_size = 0;  // address space every buffer reserves at least
  std::vector<int> peers;     // devices given access besides the resource's own
  bool peers_read_only = false;
};

struct VirtualStatistics {
  uint64_t granularity = 0;
  uint64_t chunk_size = 0;
  uint64_t bytes_mapped = 0;    // physical bytes held: buffers' and pending releases'
  uint64_t bytes_reserved = 0;  // address space of the live buffers
  uint64_t bytes_pending = 0;   // physical bytes waiting for their stream's work
  uint64_t grows_in_place = 0;
  uint64_t grows_moved = 0;
  uint64_t shrinks = 0;
  uint64_t chunks_created = 0;   // physical chunks (driver handles) ever made
  uint64_t chunks_released = 0;  // and released: the live ones are the difference
};

class VirtualResource final : public Resource,
                              public IpcShareable,
                              public VirtualShareable,
                              public Snapshottable,
                              public DmaBufSource,
                              public PeerAccessible {
 public:
  // Physical memory is mapped in chunks of this (PyTorch's large page),
  // rounded up to the granularity: few chunks per buffer (mapping costs per
  // chunk, synchronously), and a shrink gives memory back in these steps.
  static constexpr size_t kDefaultChunk = size_t{20} << 20;

  static Ref<Resource> create(Ref<Device> device, const VirtualOptions& options);

  // The allocation at `ptr` of `old_size` bytes (the size it was allocated
  // or last resized to) now has `new_size` (> 0) bytes; returns its
  // address, which changes only when the buffer moved. Ordered on `stream`
  // (null: the legacy default stream): old addresses and released chunks
  // stay mapped until the work queued there before the call is done. All
  // or nothing: on a throw the allocation is as it was, with its access.
  void* resize(void* ptr, size_t old_size, size_t new_size, const Stream* stream);
  // `peer`'s access to every buffer, present and future (vmm::Access::none
  // revokes it). The resource's own device keeps read-write access.
  void set_access(const Device& peer, vmm::Access access);
  vmm::Access get_access(const Device& peer) const;
  // PeerAccessible: set_access with read-write or none.
  void set_peer_access(const Device& peer, bool read_write) override {
    set_access(peer, read_write ? vmm::Access::read_write : vmm::Access::none);
  }
  bool peer_access(const Device& peer) const override {
    return get_access(peer) == vmm::Access::read_write;
  }
  VirtualStatistics virtual_statistics() const;
  // Snapshottable: each allocation's range, mapped and unmapped.
  void snapshot(snapshot::Builder& out) const override;
  // DmaBufSource: the allocation's mapped range (all its chunks: one
  // device, one set of properties), and the chunks holding the bytes.
  DmaBufRanges dmabuf_ranges(void* ptr, size_t size, uintptr_t first,
                             size_t bytes) const override;
  // Waits for the work that pending releases wait for, then releases them.
  void release_pending();

  // IPC of a buffer (virtual_ipc.cpp): its chunks' POSIX fds and the
  // descriptor listing them.
  Ref<VirtualIpcHandle> get_virtual_ipc_handle(void* ptr, size_t size) const override;
  // Maps the chunks of `handle` into one range on `device`, as a buffer's
  // memory whose resource is a new imported virtual resource.
  static Ref<Resource> import(Ref<Device> device, const VirtualIpcHandle& handle, void** out_ptr,
                              size_t* out_size);
  // A virtual buffer does not share by a pool descriptor: says what does.
  IpcDescriptor get_ipc_descriptor(void* ptr, size_t size) const override;
  Ref<AllocationHandle> get_allocation_handle() const override;

  std::string describe() const override;

 protected:
  void* do_allocate(size_t size, const Stream* stream) override;
  void do_deallocate(void* ptr, size_t size, const Stream* stream) override;
  std::string usage_details() const override;

 private:
  struct Allocation {
    std::unique_ptr<vmm::Range> range;
    size_t size = 0;        // as asked for
    size_t mapped_end = 0;  // [0, mapped_end) is mapped
  };

  VirtualResource(Ref<Device> device, const ResourceProperties& properties,
                  std::shared_ptr<const vmm::Spec> spec, const VirtualOptions& options,
                  std::vector<vmm::AccessEntry> access, uint64_t capacity);
  ~VirtualResource() override;
  // The allocation at `ptr`, whose size must be `size`; invalid_argument otherwise.
  Allocation& find(void* ptr, size_t size, const char* doing);
  // Address space for a buffer of `rounded` bytes.
  size_t reserve_for(size_t rounded) const;
  // Runs `f`; on out of memory, waits for the pending releases and runs it
  // once more (f is all or nothing).
  template <class F>
  auto retrying(F&& f) -> decltype(f());
  std::unique_ptr<vmm::Range> new_range(size_t rounded);
  // Each returns the allocation as it is after the call (a move makes a
  // new entry of live_ and drops the old one).
  Allocation& grow(Allocation& a, size_t rounded, const Stream* stream);
  Allocation& relocate(Allocation& a, size_t rounded, size_t reserve, const Stream* stream);
  void shrink(Allocation& a, size_t rounded, const Stream* stream);

  std::shared_ptr<const vmm::Spec> spec_;
  size_t chunk_size_;
  uint64_t address_hint_, alignment_, reserve_size_;
  uint64_t capacity_;  // bytes the location has: more is out of memory at once
  bool imported_;

  mutable std::mutex mutex_;  // guards everything below; held over driver calls
  std::vector<vmm::AccessEntry> access_;
  std::unordered_map<uintptr_t, Allocation> live_;
  vmm::ReleaseQueue pending_;
  uint64_t grows_in_place_ = 0, grows_moved_ = 0, shrinks_ = 0;
};

// create_virtual_resource(): the factory, as the other kinds have.
Ref<Resource> create_virtual_resource(Ref<Device> device, const VirtualOptions& options);

}  // namespace cumem::core
