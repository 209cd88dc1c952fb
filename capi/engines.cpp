// What communication engines use: a buffer's dma-buf (src/dmabuf.cpp) and
// the unmap notifications (src/unmap_events.hpp).
#include "capi.hpp"

#include <unistd.h>

#include <cstddef>

#include "../src/buffer.hpp"
#include "../src/unmap_events.hpp"

using namespace cumem::core;
using namespace cumem::capi;

static_assert(CUMEM_DMABUF_MAPPING_PCIE == kDmaBufMappingPcie, "the C flag is the core's");

CUMEM_EXPORT cumem_status_t cumem_buffer_get_dmabuf(const cumem_buffer_t* buffer, uint32_t flags,
                                                    cumem_dmabuf_t* dmabuf) {
  CUMEM_TRY
  const Buffer& b = object(buffer, "buffer");
  check_out_struct(dmabuf, "dmabuf");
  // The struct hands out the fd: a caller's struct must hold all of it.
  if (dmabuf->struct_size < sizeof(cumem_dmabuf_t))
    fail(Status::invalid_argument,
         "argument 'dmabuf' (cumem_dmabuf_t) has struct_size " +
             std::to_string(dmabuf->struct_size) + ", less than the " +
             std::to_string(sizeof(cumem_dmabuf_t)) +
             " bytes of the struct, which holds the file descriptor handed out; use "
             "CUMEM_DMABUF_INIT");
  const DmaBuf d = b.get_dmabuf(flags);
  cumem_dmabuf_t v{};
  copy_fields(v, d);
  write_out_struct(dmabuf, v);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_unmap_subscribe(cumem_unmap_callback_t callback,
                                                  void* user_data, uint64_t* out_subscription) {
  CUMEM_TRY
  if (!callback) null_argument("callback");
  out(out_subscription, "out_subscription");
  *out_subscription = unmap::subscribe([callback, user_data](const unmap::Event& e) {
    cumem_unmap_event_t v{};
    v.struct_size = static_cast<uint32_t>(sizeof v);
    v.reason = static_cast<cumem_unmap_reason_t>(e.reason);
    v.address = static_cast<uint64_t>(e.address);
    v.size = e.size;
    v.resource_id = e.resource_id;
    v.device_id = e.device_id;
    callback(&v, user_data);
  });
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_unmap_unsubscribe(uint64_t subscription) {
  CUMEM_TRY
  unmap::unsubscribe(subscription);
  CUMEM_CATCH
}
