// The NVTX v3 headers of the CUDA toolkit are header-only: the first NVTX
// call looks for a tool's injection library and, without one, turns every
// NVTX call into a no-op. We call none until a tool is known to be there.
#include "nvtx.hpp"

#if CUMEM_NVTX

#include <cstdlib>
#include <string>

#include <nvtx3/nvToolsExt.h>

#include "log.hpp"

namespace cumem::core::nvtx {

std::atomic<uint8_t> state{kUndecided};

namespace {

const char* const kNames[] = {
    "cumem_resource_allocate",        "cumem_resource_allocate_raw",
    "cumem_resource_deallocate_raw",  "cumem_resource_allocate_native",
    "cumem_resource_deallocate_native", "cumem_buffer_close",
    "cumem_buffer_copy_to",           "cumem_buffer_copy_from",
    "cumem_buffer_copy_region",       "cumem_buffer_fill",
    "cumem_torch_alloc",              "cumem_torch_free",
    "cumem_cupy_malloc",              "cumem_cupy_free",
    "cumem_copy_batch",               "cumem_copy_batch_raw",
};
static_assert(sizeof kNames / sizeof kNames[0] == static_cast<size_t>(Op::count),
              "one name per nvtx::Op");

nvtxDomainHandle_t domain = nullptr;
nvtxStringHandle_t names[static_cast<size_t>(Op::count)] = {};

// How NVTX v3 finds a tool in a shared library on Linux
// (nvtxDetail/nvtxInit.h): the library NVTX_INJECTION64_PATH names, which
// Nsight Systems and other tools set. (Its other ways do not apply here: the
// "already injected" lookup is compiled out in NVTX 3's load sequence 2, and
// a static injection would have to be linked into libcumem itself.)
const char* tool() {
  const char* path = std::getenv(sizeof(void*) == 4 ? "NVTX_INJECTION32_PATH" : "NVTX_INJECTION64_PATH");
  return path && *path ? path : nullptr;
}

bool start() noexcept {
  const char* found = tool();
  if (!found) return false;
  domain = nvtxDomainCreateA("libcumem");  // NVTX loads the tool here
  for (size_t i = 0; i < static_cast<size_t>(Op::count); ++i)
    names[i] = nvtxDomainRegisterStringA(domain, kNames[i]);
  if (log::enabled(log::Level::info)) {
    try {
      log::write(log::Level::info, std::string("NVTX ranges on (a tool is attached: ") +
                                       "NVTX_INJECTION64_PATH=" + found + "), in domain libcumem");
    } catch (...) {
    }
  }
  return true;
}

}  // namespace

bool decide() noexcept {
  static const bool started = start();  // once, even if threads race here
  if (state.load(std::memory_order_relaxed) == kUndecided)
    state.store(started ? kOn : kOff, std::memory_order_relaxed);
  return started;
}

void push(Op op) noexcept {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = names[static_cast<size_t>(op)];
  nvtxDomainRangePushEx(domain, &a);
}

void pop() noexcept { nvtxDomainRangePop(domain); }

}  // namespace cumem::core::nvtx

#endif
