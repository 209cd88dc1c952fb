#include "copy_kernel.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "capture.hpp"
#include "copy_kernel_params.hpp"
#include "copy_kernel_ptx.hpp"
#include "driver/driver.hpp"
#include "error.hpp"
#include "log.hpp"
#include "program/kernel.hpp"
#include "program/library.hpp"

namespace cumem::core::copy_kernel {
namespace {

// The parameter structs are what the PTX declares (the generator read the
// sizes from it), within the limits of the two launch kinds.
static_assert(sizeof(Copies<kSmallCopies>) == kSmallParamBytes,
              "Copies<kSmallCopies> differs from the PTX's parameter: run tools/gen_copy_kernel.py");
static_assert(sizeof(Copies<kLargeCopies>) == kLargeParamBytes,
              "Copies<kLargeCopies> differs from the PTX's parameter: run tools/gen_copy_kernel.py");
static_assert(kSmallParamBytes <= 4096, "the small kernel's parameters must fit 4 KiB");
static_assert(kLargeParamBytes <= 32764, "CUDA 12.1+ allows 32,764 bytes of parameters");
static_assert(kMaxCopyBytes <= UINT32_MAX, "sizes travel as 32-bit numbers");

// The kernels of one device, loaded on its first batch.
struct Slot {
  std::once_flag once;
  std::atomic<bool> usable{false};
  Ref<Kernel> small, large;  // kept for the process once loaded
};

// One slot per device ordinal. Never destroyed: batches may run from
// static destructors and atexit handlers.
struct State {
  explicit State(int devices) : slots(static_cast<size_t>(devices)) {}
  std::vector<Slot> slots;
};

State& state() {
  static State* s = new State(Device::count());
  return *s;
}

void unavailable(const Device& device, const std::string& why) noexcept {
  if (!log::enabled(log::Level::info)) return;
  try {
    log::write(log::Level::info, "batch copies on " + device.describe() +
                                     " go to the driver's copies: the copy kernels are "
                                     "unavailable (" + why + ")");
  } catch (...) {
  }
}

void load(Slot& slot, const Device& device) noexcept {
  try {
    if (!driver::get().cuLaunchKernelEx_fn) driver::missing("cuLaunchKernelEx", 11060);
    // Loading code is no business of a capture underway on this thread.
    RelaxedCaptureMode relaxed;
    Ref<Library> library = Library::load(Device::get(device.ordinal()), kPtx, sizeof kPtx);
    Ref<Kernel> small = Kernel::get(library, "cumem_copy_batch_small");
    Ref<Kernel> large = Kernel::get(library, "cumem_copy_batch_large");
    const int threads = std::min(small->max_threads_per_block(), large->max_threads_per_block());
    if (threads < static_cast<int>(kThreads))
      fail(Status::not_supported, "they may run " + std::to_string(threads) +
                                      " threads per block, below the " +
                                      std::to_string(kThreads) + " they are launched with");
    slot.small = std::move(small);
    slot.large = std::move(large);
    slot.usable.store(true, std::memory_order_release);
  } catch (const std::exception& e) {
    unavailable(device, e.what());
  } catch (...) {
    unavailable(device, "an unknown failure");
  }
}

// The driver's answers to code it cannot run here (at the first launch in
// a context, where loading was deferred).
bool code_refused(CUresult r) noexcept {
  switch (r) {
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_SOURCE:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_JIT_COMPILATION_DISABLED:
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
      return true;
    default:
      return false;
  }
}

// Packs copies [0, m) into `p` and launches `kernel` with it: one block
// per copy.
template <unsigned N>
CUresult submit(const Kernel& kernel, Copies<N>& p, const Copy* copies, size_t m, CUstream s) {
  p.count = static_cast<unsigned>(m);
  p.reserved = 0;
  for (size_t k = 0; k < m; ++k) {
    p.dst[k] = reinterpret_cast<uintptr_t>(copies[k].dst);
    p.src[k] = reinterpret_cast<uintptr_t>(copies[k].src);
    p.size[k] = static_cast<unsigned>(copies[k].size);
  }
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(m);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = kThreads;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = s;
  void* args[] = {&p};
  // The driver copies the parameters at the launch (or into the captured
  // node), so `p` may be reused at once.
  return CUMEM_CU_RESULT(cuLaunchKernelEx,
                         (&config, reinterpret_cast<CUfunction>(kernel.native()), args, nullptr));
}

}  // namespace

bool launch(const Device& device, const Stream* stream, const Copy* copies, size_t n) {
  if (n == 0) return true;
  State& s = state();
  const auto ordinal = static_cast<size_t>(device.ordinal());
  if (ordinal >= s.slots.size()) return false;
  Slot& slot = s.slots[ordinal];
  std::call_once(slot.once, [&] { load(slot, device); });
  if (!slot.usable.load(std::memory_order_acquire)) return false;
  const CUstream native = native_or_legacy(stream);
  const size_t launches = (n + kLargeCopies - 1) / kLargeCopies;
  const size_t per_launch = (n + launches - 1) / launches;
  // Value-initialised: the parameters past `count` are zeros, not stale heap.
  std::unique_ptr<Copies<kSmallCopies>> small;
  std::unique_ptr<Copies<kLargeCopies>> large;
  for (size_t done = 0; done < n;) {
    const size_t m = std::min(per_launch, n - done);
    CUresult r = CUDA_SUCCESS;
    if (m <= kSmallCopies) {
      if (!small) small = std::make_unique<Copies<kSmallCopies>>();
      r = submit(*slot.small, *small, copies + done, m, native);
    } else {
      if (!large) large = std::make_unique<Copies<kLargeCopies>>();
      r = submit(*slot.large, *large, copies + done, m, native);
    }
    if (r != CUDA_SUCCESS) {
      // Nothing queued yet: the driver's copies do the batch (and report a
      // failure that is not the kernels' own, such as a broken context).
      if (done == 0) {
        if (code_refused(r)) {
          slot.usable.store(false, std::memory_order_release);
          unavailable(device, "the first launch failed with " + driver::describe(r));
        }
        return false;
      }
      driver::check(r, "cuLaunchKernelEx",
                    "launching the batch copy kernel for " + std::to_string(m) + " of the " +
                        std::to_string(n) + " copies of a batch on " +
                        (stream ? stream->describe()
                                : "the legacy default stream of " + device.describe()) +
                        " (" + std::to_string(done) + " copies were queued before)");
    }
    done += m;
  }
  return true;
}

}  // namespace cumem::core::copy_kernel
