#include "stream_order.hpp"

#include "../../driver/driver.hpp"

namespace cumem::core::caching {

void order_reuse(uintptr_t freed_key, const Stream* freed_on, const Stream* stream,
                 const Device* device, uint64_t mark) {
  const Device& context = stream ? stream->device() : *device;
  // A per-thread default stream cannot be named from another thread.
  if (is_per_thread_key(freed_key)) {
    ScopedContext scope(context);
    CUMEM_CU(cuCtxSynchronize, (),
             "ordering the reuse of a block freed on a per-thread default stream");
    return;
  }
  // A foreign stream may be gone by now (its owner destroyed it after the
  // free): never touched, a record of its free marker that covers the
  // block's free (made at the free or later) orders the reuse.
  if (freed_on && freed_on->foreign()) {
    if (freed_on->wait_for_marker(native_or_legacy(stream), mark ? mark : freed_on->eager_mark()))
      return;
    ScopedContext scope(context);
    CUMEM_CU(cuCtxSynchronize, (), "ordering the reuse of a block freed on a foreign stream");
    return;
  }
  order_or_synchronize(context, native_or_legacy(freed_on), native_or_legacy(stream),
                       "ordering a cached block's reuse");
}

}  // namespace cumem::core::caching
