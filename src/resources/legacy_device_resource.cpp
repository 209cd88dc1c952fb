// Device memory from cuMemAlloc, freed synchronously, whose buffers share
// with other processes through legacy IPC (cuIpcGetMemHandle). The same
// resource opens such descriptors from other processes (cuIpcOpenMemHandle),
// one mapping per exporter allocation however often it is opened. It is
// also the device resource of devices without memory pools.
#include <cstring>
#include <map>
#include <mutex>

#include <unistd.h>

#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"
#include "../unmap_events.hpp"
#include "dmabuf_source.hpp"
#include "ipc_shareable.hpp"
#include "sync_resource.hpp"

namespace cumem::core {
namespace {

ResourceProperties legacy_device_properties(const Device& device, ResourceKind kind) {
  ResourceProperties p;
  p.kind = kind;
  p.memory_kind = MemoryKind::device;
  p.device_accessible = true;
  p.device_id = device.ordinal();
  p.ipc_enabled = true;
  return p;
}

class LegacyDeviceResource final : public SyncResource, public IpcShareable, public DmaBufSource {
 public:
  LegacyDeviceResource(Ref<Device> device, ResourceKind kind)
      : SyncResource(device, legacy_device_properties(*device, kind)) {}
  std::string describe() const override {
    return "legacy device resource (cuMemAlloc) of " + device_->describe();
  }

  IpcDescriptor get_ipc_descriptor(void* ptr, size_t size) const override {
    {
      // A buffer opened from a descriptor gives that descriptor again (the
      // driver cannot export a mapping it imported).
      std::lock_guard<std::mutex> lock(mutex_);
      const auto range = opened_.equal_range(ptr);
      for (auto it = range.first; it != range.second; ++it)
        if (it->second.size == size) return it->second;
    }
    ScopedContext scope(*device_);
    RelaxedCaptureMode relaxed;
    CUdeviceptr base = 0;
    size_t range = 0;
    CUMEM_CU(cuMemGetAddressRange, (&base, &range, reinterpret_cast<CUdeviceptr>(ptr)),
             "finding the allocation of a buffer to share");
    CUipcMemHandle handle{};
    CUMEM_CU(cuIpcGetMemHandle, (&handle, base), "exporting a buffer with cuIpcGetMemHandle");
    IpcDescriptor d;
    d.type = IpcType::legacy_buffer;
    d.memory_kind = MemoryKind::device;
    d.size = size;
    d.offset = reinterpret_cast<CUdeviceptr>(ptr) - base;
    d.device_uuid = device_->uuid();
    static_assert(sizeof handle.reserved == sizeof d.export_data, "CUipcMemHandle is 64 bytes");
    std::memcpy(d.export_data.data(), handle.reserved, sizeof handle.reserved);
    d.exporter_pid = static_cast<uint32_t>(getpid());
    return d;
  }

  void* open_ipc_descriptor(const IpcDescriptor& d, const Stream*) override {
    if (d.type != IpcType::legacy_buffer)
      fail(Status::invalid_argument, "a legacy device resource opens legacy descriptors, not " +
                                         core::describe(d) + "; import its pool first");
    if (d.device_uuid != device_->uuid())
      fail(Status::wrong_device,
           "the descriptor names memory of another device than " + device_->describe());
    if (static_cast<pid_t>(d.exporter_pid) == getpid())
      fail(Status::invalid_argument,
           "legacy IPC cannot open memory exported by this same process (the driver refuses "
           "it); use the buffer itself");
    std::lock_guard<std::mutex> lock(mutex_);
    Mapping* m = nullptr;
    auto it = mappings_.find(d.export_data);
    if (it != mappings_.end()) {
      m = &it->second;
    } else {
      ScopedContext scope(*device_);
      RelaxedCaptureMode relaxed;
      CUipcMemHandle handle{};
      std::memcpy(handle.reserved, d.export_data.data(), sizeof handle.reserved);
      CUdeviceptr base = 0;
      CUMEM_CU(cuIpcOpenMemHandle, (&base, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
               "opening a legacy IPC descriptor of process " + std::to_string(d.exporter_pid));
      CUdeviceptr start = 0;
      size_t range = 0;
      const CUresult r = CUMEM_CU_RESULT(cuMemGetAddressRange, (&start, &range, base));
      if (r != CUDA_SUCCESS) {
        CUMEM_CU_CLEANUP(cuIpcCloseMemHandle, (base), "closing a refused legacy IPC mapping");
        driver::check(r, "cuMemGetAddressRange", "checking an opened legacy IPC mapping");
      }
      m = &mappings_[d.export_data];
      m->base = base;
      m->range = range;
    }
    if (d.offset > m->range || d.size > m->range - d.offset) {
      if (m->opens == 0) close_mapping(d.export_data);
      fail(Status::invalid_argument,
           "the descriptor's range [" + std::to_string(d.offset) + ", +" + std::to_string(d.size) +
               ") passes the " + std::to_string(m->range) + " bytes the driver mapped");
    }
    ++m->opens;
    void* ptr = reinterpret_cast<void*>(m->base + d.offset);
    opened_.emplace(ptr, d);
    return ptr;
  }

  // The cuMemAlloc allocation; not memory opened from another process.
  DmaBufRanges dmabuf_ranges(void* ptr, size_t, uintptr_t first, size_t bytes) const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (opened_.count(ptr) != 0)
        fail(Status::not_supported,
             "this buffer maps memory of another process (a legacy IPC descriptor) and cannot "
             "be exported as a dma-buf here: export it in the process that allocated it");
    }
    DmaBufRanges r;
    r.device = device_.get();
    r.what = "the cuMemAlloc allocation";
    r.whole = driver_allocation(*device_, first, bytes, r.what);
    return r;
  }

 protected:
  void* do_allocate(size_t size, const Stream*) override {
    ScopedContext scope(*device_);
    RelaxedCaptureMode relaxed;  // synchronous: never captured, never invalidates
    CUdeviceptr ptr = 0;
    CUMEM_CU(cuMemAlloc, (&ptr, size), "allocating " + describe_bytes(size) + " with cuMemAlloc");
    return reinterpret_cast<void*>(ptr);
  }
  void free_now(void* ptr, size_t size) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = opened_.find(ptr);
      if (it != opened_.end()) {
        const auto key = it->second.export_data;
        opened_.erase(it);
        if (--mappings_[key].opens == 0) close_mapping(key);
        return;
      }
    }
    if (unmap::any()) {
      unmap::Event e;
      e.reason = unmap::Reason::free;
      e.address = reinterpret_cast<uintptr_t>(ptr);
      e.size = size;
      e.resource_id = id();
      e.device_id = device_->ordinal();
      unmap::notify(e);
    }
    ScopedContext scope(*device_);
    CUMEM_CU(cuMemFree, (reinterpret_cast<CUdeviceptr>(ptr)),
             "freeing " + describe_bytes(size) + " with cuMemFree");
  }

 private:
  struct Mapping {
    CUdeviceptr base = 0;
    size_t range = 0;
    uint32_t opens = 0;
  };
  // Under mutex_.
  void close_mapping(const std::array<uint8_t, 64>& key) {
    auto it = mappings_.find(key);
    if (it == mappings_.end()) return;
    ScopedContext scope(*device_);
    CUMEM_CU_CLEANUP(cuIpcCloseMemHandle, (it->second.base), "closing a legacy IPC mapping");
    mappings_.erase(it);
  }

  mutable std::mutex mutex_;
  std::map<std::array<uint8_t, 64>, Mapping> mappings_;
  std::multimap<void*, IpcDescriptor> opened_;  // by the pointer handed out
};

}  // namespace

Ref<Resource> create_legacy_device_resource(Ref<Device> device, ResourceKind kind) {
  return Ref<Resource>::adopt(new LegacyDeviceResource(std::move(device), kind));
}

}  // namespace cumem::core
