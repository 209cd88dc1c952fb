// cumem_device_* entry points.
#include "capi.hpp"

#include <algorithm>
#include <cstddef>

#include "../src/buffer.hpp"
#include "../src/default_resource.hpp"
#include "../src/device.hpp"

using namespace cumem::core;
using namespace cumem::capi;

CUMEM_EXPORT cumem_status_t cumem_device_count(int32_t* out_count) {
  CUMEM_TRY
  out(out_count, "out_count");
  *out_count = Device::count();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_get(int32_t ordinal, cumem_device_t** out_device) {
  CUMEM_TRY
  out(out_device, "out_device");
  *out_device = to_handle<cumem_device_t>(Device::get(ordinal));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_retain(cumem_device_t* device) {
  CUMEM_TRY
  retain_handle(device, "device");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_release(cumem_device_t* device) {
  CUMEM_TRY
  release_handle(device, "device");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_ordinal(const cumem_device_t* device,
                                                 int32_t* out_ordinal) {
  CUMEM_TRY
  const Device& d = object(device, "device");
  out(out_ordinal, "out_ordinal");
  *out_ordinal = d.ordinal();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_get_properties(const cumem_device_t* device,
                                                        cumem_device_properties_t* props) {
  CUMEM_TRY
  const Device& d = object(device, "device");
  check_out_struct(props, "props");
  const DeviceProperties p = d.properties();
  cumem_device_properties_t v{};
  copy_fields(v, p);
  const size_t n = std::min(p.name.size(), sizeof v.name - 1);
  std::memcpy(v.name, p.name.data(), n);
  v.name[n] = '\0';
  std::memcpy(v.uuid, p.uuid.data(), sizeof v.uuid);
  // The probe makes memory (once per device): only for a caller whose
  // struct has the field.
  if (props->struct_size >= offsetof(cumem_device_properties_t, fabric_export_supported) +
                                sizeof v.fabric_export_supported)
    v.fabric_export_supported = to_bool(d.fabric_probe().supported);
  write_out_struct(props, v);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_get_attribute(const cumem_device_t* device,
                                                       int32_t attribute, int32_t* out_value) {
  CUMEM_TRY
  const Device& d = object(device, "device");
  out(out_value, "out_value");
  *out_value = d.attribute(static_cast<CUdevice_attribute>(attribute));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_set_current(const cumem_device_t* device) {
  CUMEM_TRY
  object(device, "device").set_current();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_synchronize(const cumem_device_t* device) {
  CUMEM_TRY
  object(device, "device").synchronize();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_memory_info(const cumem_device_t* device,
                                                     uint64_t* out_free, uint64_t* out_total) {
  CUMEM_TRY
  const Device& d = object(device, "device");
  out(out_free, "out_free");
  out(out_total, "out_total");
  uint64_t f = 0, t = 0;
  d.memory_info(f, t);
  *out_free = f;
  *out_total = t;
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_can_access_peer(const cumem_device_t* device,
                                                         const cumem_device_t* peer,
                                                         cumem_bool_t* out_can_access) {
  CUMEM_TRY
  const Device& d = object(device, "device");
  const Device& p = object(peer, "peer");
  out(out_can_access, "out_can_access");
  *out_can_access = to_bool(d.can_access_peer(p));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_enable_peer_access(const cumem_device_t* device,
                                                            const cumem_device_t* peer) {
  CUMEM_TRY
  const Device& d = object(device, "device");
  d.enable_peer_access(object(peer, "peer"));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_stream_priority_range(const cumem_device_t* device,
                                                               int32_t* out_least,
                                                               int32_t* out_greatest) {
  CUMEM_TRY
  const Device& d = object(device, "device");
  out(out_least, "out_least");
  out(out_greatest, "out_greatest");
  int least = 0, greatest = 0;
  d.stream_priority_range(least, greatest);
  *out_least = least;
  *out_greatest = greatest;
  CUMEM_CATCH
}

// The device's memory resource (src/default_resource.hpp).
CUMEM_EXPORT cumem_status_t cumem_device_get_memory_resource(const cumem_device_t* device,
                                                             cumem_resource_t** out_resource) {
  CUMEM_TRY
  const Device& d = object(device, "device");
  out(out_resource, "out_resource");
  *out_resource = to_handle<cumem_resource_t>(device_memory_resource(d));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_set_memory_resource(const cumem_device_t* device,
                                                             cumem_resource_t* resource) {
  CUMEM_TRY
  const Device& d = object(device, "device");
  Resource* r = optional(resource, "resource");
  set_device_memory_resource(d, Ref<Resource>::share(r));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_device_allocate(const cumem_device_t* device, size_t size,
                                                  const cumem_stream_t* stream,
                                                  cumem_buffer_t** out_buffer) {
  CUMEM_TRY
  const Device& d = object(device, "device");
  const Stream* s = optional(stream, "stream");
  out(out_buffer, "out_buffer");
  *out_buffer = to_new_handle<cumem_buffer_t>(Buffer::allocate(device_memory_resource(d), size, s));
  CUMEM_CATCH
}
