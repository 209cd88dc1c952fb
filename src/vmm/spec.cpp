#include "spec.hpp"

#include "../capture.hpp"
#include "../driver/driver.hpp"
#include "../error.hpp"

namespace cumem::core::vmm {
namespace {

// A device attribute that older drivers do not know: 0 when the driver
// refuses to say (the feature is then missing for us too).
int optional_attribute(const Device& device, CUdevice_attribute attribute) {
  int value = 0;
  if (CUMEM_CU_QUIET(cuDeviceGetAttribute, (&value, attribute, device.native())) != CUDA_SUCCESS)
    return 0;
  return value;
}

void require(const Device& device, CUdevice_attribute attribute, const std::string& what) {
  if (optional_attribute(device, attribute) == 0)
    fail(Status::not_supported, device.describe() + " " + what);
}

CUmemLocation location_of(const SpecOptions& o) {
  CUmemLocation l = to_cu(o.location);
  if (o.location.type == LocationType::host) l.id = 0;  // ignored by the driver
  return l;
}

size_t read_granularity(const CUmemAllocationProp& prop, Granularity which, const std::string& where) {
  size_t granularity = 0;
  const CUmemAllocationGranularity_flags flag = which == Granularity::minimum
                                                    ? CU_MEM_ALLOC_GRANULARITY_MINIMUM
                                                    : CU_MEM_ALLOC_GRANULARITY_RECOMMENDED;
  CUMEM_CU(cuMemGetAllocationGranularity, (&granularity, &prop, flag),
           "reading the allocation granularity of " + where);
  if (granularity == 0 || (granularity & (granularity - 1)) != 0)
    fail(Status::driver, "the driver reports an allocation granularity of " +
                             std::to_string(granularity) + " bytes for " + where +
                             ", which is not a power of two");
  return granularity;
}

// One granule created and released with FABRIC among the handle types. The
// FABRIC-capable H200s here have no IMEX channel: the driver then refuses
// the creation (or later the export), so FABRIC is granted only on success.
// Returns the driver's answer to the creation.
CUresult probe_fabric(CUmemAllocationProp prop, size_t granularity) {
  prop.requestedHandleTypes =
      static_cast<CUmemAllocationHandleType>(prop.requestedHandleTypes | kHandleFabric);
  CUmemGenericAllocationHandle handle = 0;
  const CUresult r = CUMEM_CU_RESULT(cuMemCreate, (&handle, granularity, &prop, 0));
  if (r == CUDA_SUCCESS)
    CUMEM_CU_CLEANUP(cuMemRelease, (handle), "releasing the FABRIC probe's granule");
  return r;
}

// `options` with what NCCL's qualified allocator has added, where the
// device allows it: POSIX fd handles and GPUDirect RDMA (FABRIC is added
// after its probe, in Spec::create). The caller's own asks stay required.
SpecOptions qualified_for_nccl(const Device& d, const SpecOptions& options) {
  SpecOptions o = options;
  if (!o.nccl_qualified) return o;
  if (optional_attribute(d, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED))
    o.handle_types |= kHandlePosixFd;
  if (optional_attribute(d, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED))
    o.gpu_direct_rdma = true;
  return o;
}

}  // namespace

std::shared_ptr<const Spec> Spec::create(Ref<Device> device, const SpecOptions& options) {
  const Device& d = *device;
  const Location& where = options.location;
  validate(where, {LocationType::device, LocationType::host, LocationType::host_numa},
           "a virtual memory location");
  if (where.type == LocationType::device && where.id != d.ordinal())
    fail(Status::invalid_argument, "the location names device " + std::to_string(where.id) +
                                       " but the memory is made for " + d.describe() +
                                       "; make it with device " + std::to_string(where.id));
  const uint32_t known = kHandlePosixFd | kHandleFabric;
  if (options.handle_types & ~known)
    fail(Status::invalid_argument, "handle types " + std::to_string(options.handle_types) +
                                       " include unknown bits (POSIX fd is 1, FABRIC 8)");

  ScopedContext scope(d);
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  require(d, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
          "does not support virtual memory management (cuMemCreate, cuMemMap)");
  if (where.type == LocationType::host)
    require(d, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            "cannot make host-located virtual memory (the driver does not report "
            "CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)");
  if (where.type == LocationType::host_numa)
    require(d, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            "cannot make virtual memory located on a host NUMA node (the driver does not "
            "report CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)");
  SpecOptions o = qualified_for_nccl(d, options);
  if (o.handle_types & kHandlePosixFd)
    require(d, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
            "cannot export virtual memory as POSIX file descriptors");
  if (o.handle_types & kHandleFabric)
    require(d, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED,
            "cannot export virtual memory as FABRIC handles");
  if (o.gpu_direct_rdma)
    require(d, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
            "does not support GPUDirect RDMA with virtual memory");

  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = location_of(o);
  // FABRIC joins only after its probe: no driver call before it sees it.
  prop.requestedHandleTypes =
      static_cast<CUmemAllocationHandleType>(o.handle_types & kHandlePosixFd);
  prop.allocFlags.gpuDirectRDMACapable = o.gpu_direct_rdma ? 1 : 0;
  const std::string what = core::describe(where) + " memory";
  const size_t granularity = read_granularity(prop, o.granularity, what);
  // FABRIC: asked for, it must pass its probe; for NCCL, it is added where
  // the device reports fabric support and the probe passes, else left out.
  const bool fabric_asked = (o.handle_types & kHandleFabric) != 0;
  const bool fabric_optional =
      !fabric_asked && o.nccl_qualified &&
      optional_attribute(d, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED) != 0;
  if (fabric_asked || fabric_optional) {
    const CUresult r = probe_fabric(prop, granularity);
    if (r == CUDA_SUCCESS) {
      o.handle_types |= kHandleFabric;
      prop.requestedHandleTypes =
          static_cast<CUmemAllocationHandleType>(prop.requestedHandleTypes | kHandleFabric);
    } else if (fabric_asked) {
      fail(Status::not_supported,
           "FABRIC handles are not usable for " + what + ": the probe (cuMemCreate of one " +
               describe_bytes(granularity) + " granule with the FABRIC handle type) failed with " +
               driver::describe(r) +
               "; FABRIC needs an IMEX channel (nvidia-imex); use POSIX file descriptors instead");
    }
  }
  return std::shared_ptr<const Spec>(new Spec(std::move(device), o, prop, granularity));
}

std::shared_ptr<const Spec> Spec::from_properties(Ref<Device> device,
                                                  const CUmemAllocationProp& prop) {
  SpecOptions o;
  o.location.type = static_cast<LocationType>(prop.location.type);
  o.location.id = prop.location.id;
  o.handle_types = static_cast<uint32_t>(prop.requestedHandleTypes);
  o.gpu_direct_rdma = prop.allocFlags.gpuDirectRDMACapable != 0;
  o.granularity = Granularity::minimum;
  ScopedContext scope(*device);
  RelaxedCaptureMode relaxed;  // never invalidates another thread's capture
  const size_t granularity = read_granularity(prop, o.granularity, "imported memory");
  return std::shared_ptr<const Spec>(new Spec(std::move(device), o, prop, granularity));
}

size_t Spec::round_up(size_t bytes) const {
  if (bytes > SIZE_MAX - (granularity_ - 1))
    fail(Status::out_of_memory, describe_bytes(bytes) + " rounded up to the granularity of " +
                                    describe_bytes(granularity_) + " does not fit in size_t");
  return (bytes + granularity_ - 1) & ~(granularity_ - 1);
}

std::string Spec::describe() const {
  if (options_.location.type == LocationType::host) return "host memory";
  return core::describe(options_.location) + " memory";
}

}  // namespace cumem::core::vmm
