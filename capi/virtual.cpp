// cumem_virtual_resource_* and cumem_buffer_resize: the virtual-memory
// resource (src/resources/virtual_resource.hpp). Its IPC is in
// virtual_ipc.cpp.
#include "capi.hpp"

#include "../src/buffer.hpp"
#include "../src/resources/virtual_resource.hpp"

using namespace cumem::core;
using namespace cumem::capi;

namespace {

const cumem_virtual_resource_options_t default_virtual_options =
    CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;

// The C options, where 0 is every default, as the core's.
VirtualOptions virtual_options(const cumem_virtual_resource_options_t* options,
                               const Device& device) {
  const auto o = read_options(options, default_virtual_options, "options");
  VirtualOptions v;
  const Location location{static_cast<LocationType>(o.location.type), o.location.id};
  v.spec.location = location.type == LocationType::none
                        ? Location{LocationType::device, device.ordinal()}
                        : location;
  switch (o.granularity) {
    case CUMEM_GRANULARITY_RECOMMENDED: v.spec.granularity = vmm::Granularity::recommended; break;
    case CUMEM_GRANULARITY_MINIMUM: v.spec.granularity = vmm::Granularity::minimum; break;
    default:
      fail(Status::invalid_argument, "options->granularity " +
                                         std::to_string(static_cast<int>(o.granularity)) +
                                         " is not a cumem_granularity_t");
  }
  const uint32_t known = CUMEM_IPC_HANDLE_POSIX_FD | CUMEM_IPC_HANDLE_FABRIC;
  if (o.handle_types & ~known)
    fail(Status::invalid_argument, "options->handle_types " + std::to_string(o.handle_types) +
                                       " has bits other than CUMEM_IPC_HANDLE_POSIX_FD (1) and "
                                       "CUMEM_IPC_HANDLE_FABRIC (8)");
  static_assert(CUMEM_IPC_HANDLE_POSIX_FD == vmm::kHandlePosixFd &&
                    CUMEM_IPC_HANDLE_FABRIC == vmm::kHandleFabric,
                "the C handle-type bits are the driver's");
  v.spec.handle_types = o.handle_types;
  v.spec.gpu_direct_rdma = o.gpu_direct_rdma != 0;
  v.spec.nccl_qualified = o.nccl_qualified != 0;
  check_reserved(o.reserved0, "options->reserved0");
  v.address_hint = o.address_hint;
  v.alignment = o.alignment;
  if (o.chunk_size > SIZE_MAX)
    fail(Status::invalid_argument, "options->chunk_size " + std::to_string(o.chunk_size) +
                                       " does not fit in size_t");
  v.chunk_size = static_cast<size_t>(o.chunk_size);
  v.reserve_size = o.reserve_size;
  if (o.peer_count > 0 && !o.peers)
    fail(Status::invalid_argument, "options->peers is NULL but options->peer_count is " +
                                       std::to_string(o.peer_count));
  v.peers.assign(o.peers, o.peers + o.peer_count);
  v.peers_read_only = o.peers_read_only != 0;
  return v;
}

VirtualResource& virtual_of(const cumem_resource_t* resource) {
  const Resource& r = object(resource, "resource");
  auto* v = dynamic_cast<VirtualResource*>(const_cast<Resource*>(&r));
  if (!v) fail(Status::not_supported, r.describe() + " is not a virtual memory resource");
  return *v;
}

vmm::Access to_core(cumem_access_t access) {
  switch (access) {
    case CUMEM_ACCESS_NONE: return vmm::Access::none;
    case CUMEM_ACCESS_READ: return vmm::Access::read;
    case CUMEM_ACCESS_READ_WRITE: return vmm::Access::read_write;
    default: break;
  }
  fail(Status::invalid_argument, "access " + std::to_string(static_cast<int>(access)) +
                                     " is not a cumem_access_t (NONE 0, READ 1, READ_WRITE 3)");
}

cumem_access_t to_c(vmm::Access access) {
  switch (access) {
    case vmm::Access::none: return CUMEM_ACCESS_NONE;
    case vmm::Access::read: return CUMEM_ACCESS_READ;
    case vmm::Access::read_write: return CUMEM_ACCESS_READ_WRITE;
  }
  return CUMEM_ACCESS_NONE;
}

}  // namespace

CUMEM_EXPORT void cumem_virtual_resource_options_init(cumem_virtual_resource_options_t* options) {
  if (options) *options = default_virtual_options;
}

CUMEM_EXPORT cumem_status_t cumem_virtual_resource_create(
    const cumem_device_t* device, const cumem_virtual_resource_options_t* options,
    cumem_resource_t** out_resource) {
  CUMEM_TRY
  Ref<Device> d = ref(device, "device");
  out(out_resource, "out_resource");
  const VirtualOptions v = virtual_options(options, *d);
  *out_resource = to_handle<cumem_resource_t>(create_virtual_resource(std::move(d), v));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_buffer_resize(cumem_buffer_t* buffer, size_t new_size,
                                                const cumem_stream_t* stream) {
  CUMEM_TRY
  Buffer& b = object(buffer, "buffer");
  const Stream* s = optional(stream, "stream");
  b.resize(new_size, s);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_virtual_resource_set_access(cumem_resource_t* resource,
                                                              const cumem_device_t* peer,
                                                              cumem_access_t access) {
  CUMEM_TRY
  VirtualResource& v = virtual_of(resource);
  const Device& p = object(peer, "peer");
  v.set_access(p, to_core(access));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_virtual_resource_get_access(const cumem_resource_t* resource,
                                                              const cumem_device_t* peer,
                                                              cumem_access_t* out_access) {
  CUMEM_TRY
  const VirtualResource& v = virtual_of(resource);
  const Device& p = object(peer, "peer");
  out(out_access, "out_access");
  *out_access = to_c(v.get_access(p));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_virtual_resource_get_statistics(
    const cumem_resource_t* resource, cumem_virtual_statistics_t* stats) {
  CUMEM_TRY
  const VirtualResource& v = virtual_of(resource);
  check_out_struct(stats, "stats");
  const VirtualStatistics s = v.virtual_statistics();
  cumem_virtual_statistics_t out_value = CUMEM_VIRTUAL_STATISTICS_INIT;
  copy_fields(out_value, s);
  write_out_struct(stats, out_value);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_virtual_resource_release_pending(cumem_resource_t* resource) {
  CUMEM_TRY
  virtual_of(resource).release_pending();
  CUMEM_CATCH
}
