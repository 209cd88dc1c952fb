#include "device.hpp"

#include "capture.hpp"

#include <memory>
#include <vector>

#include "driver/driver.hpp"
#include "error.hpp"

namespace cumem::core {
namespace {

struct Registry {
  std::once_flag once;
  std::vector<Device*> devices;  // never freed: devices live for the process
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: handles may outlive static destructors
  return *r;
}

}  // namespace

int driver_version() { return driver::get().driver_version; }

int Device::count() {
  const auto& drv = driver::get();
  if (!drv.has_devices) return 0;
  int n = 0;
  CUMEM_CU(cuDeviceGetCount, (&n), "counting devices");
  return n;
}

Ref<Device> Device::get(int ordinal) {
  Registry& r = registry();
  const int n = count();
  if (ordinal < 0 || ordinal >= n)
    fail(Status::no_device, "there is no CUDA device " + std::to_string(ordinal) + " (" +
                                std::to_string(n) + " device" + (n == 1 ? "" : "s") +
                                " present)");
  std::call_once(r.once, [&] {
    r.devices.resize(static_cast<size_t>(n));
  });
  // Devices are created under the ordinal's own lock below; creation of the
  // slot itself is guarded by a registry-wide mutex.
  static std::mutex create_mutex;
  Device* device;
  {
    std::lock_guard<std::mutex> lock(create_mutex);
    auto& slot = r.devices[static_cast<size_t>(ordinal)];
    if (!slot) {
      CUdevice handle = 0;
      CUMEM_CU(cuDeviceGet, (&handle, ordinal), "getting device " + std::to_string(ordinal));
      slot = new Device(ordinal, handle);
    }
    device = slot;
  }
  device->acquire();
  return Ref<Device>::adopt(device);
}

void Device::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  // The context is held while the count is above zero, and after it fell to
  // zero until last_reference_gone() takes this lock: either way it is kept.
  if (!context_) {
    CUcontext ctx = nullptr;
    CUMEM_CU(cuDevicePrimaryCtxRetain, (&ctx, handle_),
             "retaining the primary context of device " + std::to_string(ordinal_));
    context_ = ctx;
  }
  add_refs(1);
}

void Device::last_reference_gone() const noexcept {
  CUresult released = CUDA_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Another thread's Device::get may have taken a reference since the
    // count fell to zero (then the context stays), or a later fall to zero
    // released it already.
    if (core_refs() != 0 || !context_) return;
    released = CUMEM_CU_QUIET(cuDevicePrimaryCtxRelease, (handle_));
    context_ = nullptr;
  }
  // Logged outside the lock, so that a log callback may use this device.
  // The context may be gone already at process exit (then at debug).
  driver::report_cleanup(released, "cuDevicePrimaryCtxRelease", "releasing a device's primary context");
}

std::string Device::describe() const {
  return "device " + std::to_string(ordinal_);
}

int Device::attribute(CUdevice_attribute attribute) const {
  int value = 0;
  CUMEM_CU(cuDeviceGetAttribute, (&value, attribute, handle_),
           "reading attribute " + std::to_string(static_cast<int>(attribute)) + " of " +
               describe());
  return value;
}

const DeviceLimits& Device::limits() const {
  std::call_once(limits_once_, [this] {
    DeviceLimits l;
    const CUdevice_attribute grid[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                                        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
    const CUdevice_attribute block[3] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                         CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                         CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
    for (int i = 0; i < 3; ++i) {
      l.max_grid[i] = attribute(grid[i]);
      l.max_block[i] = attribute(block[i]);
    }
    l.max_shared_memory_per_block_optin =
        attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    l.cluster_launch = attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH) != 0;
    limits_ = l;  // only on success: a throw leaves the flag unset for a retry
  });
  return limits_;
}

const std::array<uint8_t, 16>& Device::uuid() const {
  std::call_once(uuid_once_, [this] {
    CUuuid uuid{};
    CUMEM_CU(cuDeviceGetUuid, (&uuid, handle_), "reading the UUID of " + describe());
    for (size_t i = 0; i < 16; ++i) uuid_[i] = static_cast<uint8_t>(uuid.bytes[i]);
  });
  return uuid_;
}

DeviceProperties Device::properties() const {
  DeviceProperties p;
  p.ordinal = ordinal_;
  char name[256] = {};
  CUMEM_CU(cuDeviceGetName, (name, static_cast<int>(sizeof name - 1), handle_),
           "reading the name of " + describe());
  p.name = name;
  CUuuid uuid{};
  CUMEM_CU(cuDeviceGetUuid, (&uuid, handle_), "reading the UUID of " + describe());
  for (size_t i = 0; i < 16; ++i) p.uuid[i] = static_cast<uint8_t>(uuid.bytes[i]);
  size_t total = 0;
  CUMEM_CU(cuDeviceTotalMem, (&total, handle_), "reading the memory size of " + describe());
  p.total_memory = total;
  p.compute_capability_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p.compute_capability_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  p.multiprocessor_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p.memory_pools_supported = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
  p.ipc_handle_types = p.memory_pools_supported
      ? static_cast<uint32_t>(attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES))
      : 0u;
  p.managed_memory = attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) != 0;
  p.concurrent_managed_access = attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS) != 0;
  p.virtual_memory_management =
      attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) != 0;
  // HOST_NUMA_ID exists from CUDA 12.2; older drivers reject the attribute.
  int numa = -1;
  if (CUMEM_CU_QUIET(cuDeviceGetAttribute, (&numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, handle_)) !=
      CUDA_SUCCESS)
    numa = -1;
  p.host_numa_id = numa;
  p.pci_domain_id = attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  p.pci_bus_id = attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  p.pci_device_id = attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  p.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  p.max_shared_memory_per_block_optin =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  p.cluster_launch = attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH) != 0;
  // DMA_BUF_SUPPORTED exists from CUDA 11.7: an older driver's refusal is "no".
  int dma_buf = 0;
  if (CUMEM_CU_QUIET(cuDeviceGetAttribute,
                     (&dma_buf, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, handle_)) != CUDA_SUCCESS)
    dma_buf = 0;
  p.dma_buf_supported = dma_buf != 0;
  return p;
}

void Device::set_current() const {
  CUMEM_CU(cuCtxSetCurrent, (context_), "making the primary context of " + describe() + " current");
}

void Device::synchronize() const {
  ScopedContext scope(*this);
  // Relaxed: no other thread's global capture is invalidated by the mode.
  // The driver still refuses (and invalidates) a device-wide wait while a
  // stream of this device captures: cumem.h says so.
  RelaxedCaptureMode relaxed;
  CUMEM_CU(cuCtxSynchronize, (), "synchronizing " + describe());
}

void Device::memory_info(uint64_t& free_bytes, uint64_t& total_bytes) const {
  ScopedContext scope(*this);
  RelaxedCaptureMode relaxed;
  size_t f = 0, t = 0;
  CUMEM_CU(cuMemGetInfo, (&f, &t), "reading the free memory of " + describe());
  free_bytes = f;
  total_bytes = t;
}

bool Device::can_access_peer(const Device& peer) const {
  if (&peer == this) return false;
  int can = 0;
  CUMEM_CU(cuDeviceCanAccessPeer, (&can, handle_, peer.handle_),
           "asking whether " + describe() + " can access " + peer.describe());
  return can != 0;
}

void Device::enable_peer_access(const Device& peer) const {
  if (&peer == this)
    fail(Status::invalid_argument,
         "a device cannot enable peer access to itself (" + describe() + ")");
  if (!can_access_peer(peer))
    fail(Status::not_supported,
         describe() + " cannot access the memory of " + peer.describe() + " (no peer path)");
  ScopedContext scope(*this);
  const CUresult r = CUMEM_CU_RESULT(cuCtxEnablePeerAccess, (peer.context_, 0));
  if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) return;
  driver::check(r, "cuCtxEnablePeerAccess",
                "enabling access from " + describe() + " to " + peer.describe());
}

void Device::stream_priority_range(int& least, int& greatest) const {
  ScopedContext scope(*this);
  int l = 0, g = 0;
  CUMEM_CU(cuCtxGetStreamPriorityRange, (&l, &g),
           "reading the stream priority range of " + describe());
  least = l;
  greatest = g;
}

ScopedContext::ScopedContext(const Device& device) {
  CUMEM_CU(cuCtxGetCurrent, (&previous_), "reading the current context");
  if (previous_ != device.context()) {
    CUMEM_CU(cuCtxSetCurrent, (device.context()),
             "making the primary context of " + device.describe() + " current");
    changed_ = true;
  }
}

ScopedContext::~ScopedContext() {
  if (changed_) CUMEM_CU_CLEANUP(cuCtxSetCurrent, (previous_), "restoring the caller's current context");
}

}  // namespace cumem::core
