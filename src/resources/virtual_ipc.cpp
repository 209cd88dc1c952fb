// IPC of virtual-memory buffers: export (each chunk's POSIX fd and the
// descriptor listing them) and import (the chunks mapped into one range of
// an imported virtual resource), every field of the descriptor checked
// against what the driver says.
#include <unistd.h>

#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "../ipc/owned_fds.hpp"
#include "../ipc/virtual_handle.hpp"
#include "adaptor.hpp"
#include "virtual_resource.hpp"

namespace cumem::core {
namespace {

uint32_t descriptor_location(LocationType t) {
  switch (t) {
    case LocationType::device: return kVirtualDevice;
    case LocationType::host: return kVirtualHost;
    case LocationType::host_numa: return kVirtualHostNuma;
    default: return 0;
  }
}

// Of a descriptor decode() accepted (its location type is one of the three).
LocationType location_of_descriptor(uint32_t t) {
  switch (t) {
    case kVirtualDevice: return LocationType::device;
    case kVirtualHost: return LocationType::host;
    default: return LocationType::host_numa;
  }
}

// An imported chunk's handle, released unless handed to a Chunk.
struct ImportedHandle {
  CUmemGenericAllocationHandle handle = 0;
  bool owned = false;
  ~ImportedHandle() {
    if (owned) CUMEM_CU_CLEANUP(cuMemRelease, (handle), "releasing an imported chunk refused later");
  }
};

[[noreturn]] void refuse(const VirtualDescriptor& d, size_t chunk, const std::string& why) {
  fail(Status::invalid_argument, "cannot import " + describe(d) + ": chunk " +
                                     std::to_string(chunk) + " " + why);
}

}  // namespace

const VirtualShareable& virtual_shareable(const Resource* resource, const char* what) {
  // Through adaptors that hand out their upstream's pointers unchanged (a
  // limit above the framework's cache, tracking, logging): the memory is
  // the upstream's.
  if (const auto* v = find_through_pass_through<const VirtualShareable>(resource)) return *v;
  fail(Status::not_supported,
       std::string(what) + " comes from " +
           (resource ? resource->describe() : std::string("outside libcumem")) +
           ", which does not share as virtual IPC handles: the virtual memory resource and an "
           "expandable caching adaptor made with the POSIX fd handle type do");
}

Ref<VirtualIpcHandle> VirtualResource::get_virtual_ipc_handle(void* ptr, size_t size) const {
  if (!(spec_->prop().requestedHandleTypes & vmm::kHandlePosixFd))
    fail(Status::not_supported,
         describe() + " was made without the POSIX fd handle type, so its buffers cannot be "
                      "shared (set handle_types to CUMEM_IPC_HANDLE_POSIX_FD)");
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
  Allocation& a = size == 0 && it != live_.end()
                      ? const_cast<Allocation&>(it->second)
                      : const_cast<VirtualResource*>(this)->find(ptr, size, "sharing");
  VirtualDescriptor d;
  d.size = a.size;
  // An imported block of an expandable cache begins inside its first chunk.
  d.offset = reinterpret_cast<uintptr_t>(ptr) - static_cast<uintptr_t>(a.range->address());
  d.location_type = descriptor_location(spec_->options().location.type);
  d.location_id = spec_->is_host_memory() ? (spec_->options().location.type == LocationType::host
                                                 ? 0
                                                 : spec_->options().location.id)
                                          : device_->ordinal();
  if (!spec_->is_host_memory()) d.device_uuid = device_->uuid();
  d.exporter_pid = static_cast<uint32_t>(getpid());
  d.handle_types = static_cast<uint32_t>(spec_->prop().requestedHandleTypes);
  d.granularity = spec_->granularity();
  ScopedContext scope(*device_);
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  OwnedFds fds;
  for (const vmm::ChunkInfo& c : a.range->chunks()) {
    d.chunks.push_back({c.offset, c.size});
    fds.add(c.chunk->export_fd());
  }
  return VirtualIpcHandle::take(d, fds.release());
}

Ref<Resource> VirtualResource::import(Ref<Device> device, const VirtualIpcHandle& handle,
                                      void** out_ptr, size_t* out_size) {
  const VirtualDescriptor& d = handle.descriptor();
  const LocationType type = location_of_descriptor(d.location_type);
  if (type == LocationType::device && device->uuid() != d.device_uuid)
    fail(Status::wrong_device, "cannot import " + core::describe(d) + " on " + device->describe() +
                                   ": the memory lives on another device (its UUID differs)");
  ScopedContext scope(*device);
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  // Each fd must be a chunk the driver imports, whose properties are what
  // the descriptor says; the importing spec comes from the first chunk.
  std::shared_ptr<const vmm::Spec> spec;
  std::vector<std::shared_ptr<vmm::Chunk>> chunks;
  for (size_t i = 0; i < d.chunks.size(); ++i) {
    ImportedHandle imported;
    const int fd = handle.fds()[i];
    const CUresult r = CUMEM_CU_RESULT(
        cuMemImportFromShareableHandle,
        (&imported.handle, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    if (r != CUDA_SUCCESS)
      refuse(d, i, "comes with file descriptor " + std::to_string(fd) +
                       ", which the driver does not import as memory (" + driver::describe(r) + ")");
    imported.owned = true;
    CUmemAllocationProp prop{};
    CUMEM_CU(cuMemGetAllocationPropertiesFromHandle, (&prop, imported.handle),
             "reading the properties of an imported chunk");
    if (static_cast<uint32_t>(prop.location.type) != static_cast<uint32_t>(type))
      refuse(d, i, "is memory of location type " + std::to_string(static_cast<int>(prop.location.type)) +
                       " by the driver's account, not the descriptor's " +
                       std::to_string(d.location_type));
    if (type == LocationType::host_numa && prop.location.id != d.location_id)
      refuse(d, i, "lives on host NUMA node " + std::to_string(prop.location.id) +
                       " by the driver's account, not the descriptor's " +
                       std::to_string(d.location_id));
    // The driver reports no handle types for an imported chunk (seen on
    // 580.159); that it imported the fd as memory is the proof. The
    // importer's view says POSIX fd, as it came.
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if (!spec) {
      // The importer's view: its own device ordinal for device memory.
      if (type == LocationType::device) prop.location.id = device->ordinal();
      spec = vmm::Spec::from_properties(device, prop);
    }
    const size_t g = spec->granularity();
    if (d.chunks[i].offset % g != 0 || d.chunks[i].size % g != 0)
      refuse(d, i, "has an offset or size that is not a multiple of this driver's granularity of " +
                       describe_bytes(g));
    chunks.push_back(vmm::Chunk::adopt(spec, imported.handle, static_cast<size_t>(d.chunks[i].size)));
    imported.owned = false;
  }
  std::unique_ptr<vmm::Range> range =
      vmm::Range::reserve(spec, spec->round_up(static_cast<size_t>(d.mapped())));
  range->set_access(Location{LocationType::device, device->ordinal()}, vmm::Access::read_write);
  for (size_t i = 0; i < chunks.size(); ++i) {
    try {
      range->map_chunk(static_cast<size_t>(d.chunks[i].offset), chunks[i]);
    } catch (const Error& e) {
      refuse(d, i, "of " + describe_bytes(d.chunks[i].size) +
                       " does not map as the descriptor says (is its size the memory's?): " + e.what());
    }
  }

  ResourceProperties p;
  p.kind = ResourceKind::virtual_memory;
  p.memory_kind = type == LocationType::device ? MemoryKind::device : MemoryKind::pinned;
  p.device_accessible = true;
  p.device_id = type == LocationType::device ? device->ordinal() : -1;
  p.stream_ordered = true;
  p.is_imported = true;
  std::vector<vmm::AccessEntry> access{
      {Location{LocationType::device, device->ordinal()}, vmm::Access::read_write}};
  auto* resource = new VirtualResource(device, p, spec, VirtualOptions{}, std::move(access), 0);
  Ref<Resource> owner = Ref<Resource>::adopt(resource);
  // The buffer begins d.offset bytes into the chunks (a block of an
  // expandable cache inside its first page; 0 for a virtual buffer).
  const uintptr_t address = static_cast<uintptr_t>(range->address()) + d.offset;
  const size_t mapped = range->mapped();
  {
    std::lock_guard<std::mutex> lock(resource->mutex_);
    Allocation& a = resource->live_[address];
    range->set_owner(resource->id());  // its unmap is notified
    a.range = std::move(range);
    a.size = static_cast<size_t>(d.size);
    a.mapped_end = mapped;
  }
  *out_ptr = reinterpret_cast<void*>(address);
  *out_size = static_cast<size_t>(d.size);
  return owner;
}

}  // namespace cumem::core
