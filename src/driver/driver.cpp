#include "driver.hpp"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "../error.hpp"
#include "../log.hpp"

namespace cumem::core::driver {
namespace {

struct Loaded {
  Table table;
  bool ok = false;
  std::string error;  // why loading failed
};

// CUDA does not survive fork(): a child of a process that initialised it
// gets errors (or worse) from every driver call. Set in such a child.
std::atomic<bool> forked_after_init{false};
void mark_forked_child() { forked_after_init.store(true, std::memory_order_relaxed); }
constexpr const char* kForkedMessage =
    "CUDA cannot be used in a process forked after CUDA was initialised; use exec (or "
    "posix_spawn) for the child, or fork before the first CUDA call. Host memory, the host "
    "shared resource, IPC descriptors and the socket calls still work in the child";

std::string version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// cuMemcpyBatchAsync: a 13.0+ driver gives the 13.0 signature; a 12.8 or
// 12.9 driver asked for 13.0 would hand out its own (failIdx) one, so it is
// asked for 12.8's, with that signature.
void resolve_memcpy_batch(PFN_cuGetProcAddress_v12000 get_proc, Table& t) {
  if (t.driver_version < 12080) return;
  const int version = t.driver_version >= 13000 ? 13000 : 12080;
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (get_proc("cuMemcpyBatchAsync", &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) !=
          CUDA_SUCCESS ||
      found != CU_GET_PROC_ADDRESS_SUCCESS || !fn)
    return;
  if (version == 13000)
    t.cuMemcpyBatchAsync_fn = reinterpret_cast<PFN_cuMemcpyBatchAsync_v13000>(fn);
  else
    t.cuMemcpyBatchAsync_v12080_fn = reinterpret_cast<PFN_cuMemcpyBatchAsync_v12080>(fn);
}

void load(Loaded& out) {
  const char* env = std::getenv("CUMEM_LIBCUDA");
  const std::string path = (env && *env) ? env : "libcuda.so.1";
  const std::string origin =
      (env && *env) ? " (from $CUMEM_LIBCUDA)" : " (set $CUMEM_LIBCUDA to use another path)";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    out.error = "cannot load the CUDA driver library '" + path + "'" + origin + ": " +
                (why ? why : "unknown dlopen error") +
                "; install the NVIDIA driver to use a GPU";
    return;
  }
  // cuGetProcAddress_v2 (CUDA 12.0+) reports why a symbol is missing.
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  auto init = reinterpret_cast<PFN_cuInit_v2000>(dlsym(lib, "cuInit"));
  auto get_version = reinterpret_cast<PFN_cuDriverGetVersion_v2020>(dlsym(lib, "cuDriverGetVersion"));
  if (!get_proc || !init || !get_version) {
    out.error = "the CUDA driver library '" + path + "'" + origin +
                " is too old or not a CUDA driver: it lacks cuGetProcAddress_v2, which "
                "libcumem needs (CUDA 12.0 or newer)";
    return;
  }
  Table& t = out.table;
  if (get_version(&t.driver_version) != CUDA_SUCCESS) t.driver_version = 0;
  const CUresult init_result = init(0);
  if (init_result == CUDA_ERROR_NO_DEVICE) {
    t.has_devices = false;
  } else if (init_result != CUDA_SUCCESS) {
    out.error = "cuInit failed on the CUDA driver library '" + path + "' (driver " +
                version_string(t.driver_version) + ") with CUresult " +
                std::to_string(static_cast<int>(init_result));
    return;
  } else {
    t.has_devices = true;
  }
#define CUMEM_DRIVER_RESOLVE(name, version)                                                  \
  {                                                                                          \
    void* fn = nullptr;                                                                      \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;             \
    if (get_proc(#name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) ==          \
            CUDA_SUCCESS &&                                                                  \
        found == CU_GET_PROC_ADDRESS_SUCCESS)                                                \
      t.name##_fn = reinterpret_cast<PFN_##name##_v##version>(fn);                           \
  }
  CUMEM_DRIVER_FUNCTIONS(CUMEM_DRIVER_RESOLVE)
#undef CUMEM_DRIVER_RESOLVE
  resolve_memcpy_batch(get_proc, t);
  out.ok = true;
  pthread_atfork(nullptr, nullptr, mark_forked_child);
}

// Set once loading succeeded (loaded_already).
std::atomic<const Table*> published{nullptr};

Loaded& loaded() {
  // Never destroyed: objects may be released from atexit handlers and
  // static destructors that run after this one would have.
  static Loaded* instance = new Loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    load(*instance);
    if (instance->ok) published.store(&instance->table, std::memory_order_release);
    if (!log::enabled(log::Level::info)) return;
    if (instance->ok)
      log::write(log::Level::info, "loaded the CUDA driver " +
                                       version_string(instance->table.driver_version) +
                                       (instance->table.has_devices ? "" : " (no devices)"));
    else
      log::write(log::Level::info, instance->error + " (host-only functions still work)");
  });
  return *instance;
}

// The loaded driver's table, null when it could not be loaded: after the
// first call one atomic load and no call_once (every driver call asks).
const Table* table() {
  if (const Table* t = published.load(std::memory_order_acquire)) return t;
  Loaded& l = loaded();
  return l.ok ? &l.table : nullptr;
}

}  // namespace

const Table& get() {
  const Table* t = table();
  if (!t) fail(Status::no_driver, loaded().error);
  if (forked_after_init.load(std::memory_order_relaxed)) fail(Status::no_driver, kForkedMessage);
  return *t;
}

const Table* get_if_loaded() noexcept {
  try {
    const Table* t = table();
    // In a forked child, objects inherited from the parent are released
    // without driver calls: the parent's CUDA state is not the child's.
    if (forked_after_init.load(std::memory_order_relaxed)) return nullptr;
    return t;
  } catch (...) {
    return nullptr;
  }
}

const Table* loaded_already() noexcept { return published.load(std::memory_order_acquire); }

bool available() noexcept { return get_if_loaded() != nullptr; }

CUresult memcpy_batch(const Table& t, CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                      size_t count, CUmemcpyAttributes* attrs, size_t* attr_indices,
                      size_t num_attrs, CUstream stream, size_t* fail_index) noexcept {
  *fail_index = SIZE_MAX;
  if (t.cuMemcpyBatchAsync_fn)
    return t.cuMemcpyBatchAsync_fn(dsts, srcs, sizes, count, attrs, attr_indices, num_attrs,
                                   stream);
  if (t.cuMemcpyBatchAsync_v12080_fn)
    return t.cuMemcpyBatchAsync_v12080_fn(dsts, srcs, sizes, count, attrs, attr_indices,
                                          num_attrs, fail_index, stream);
  return CUDA_ERROR_NOT_SUPPORTED;
}

std::string describe(CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  Loaded& l = loaded();
  if (l.ok && l.table.cuGetErrorName_fn) l.table.cuGetErrorName_fn(result, &name);
  if (l.ok && l.table.cuGetErrorString_fn) l.table.cuGetErrorString_fn(result, &text);
  std::string out = name ? name : "CUresult " + std::to_string(static_cast<int>(result));
  if (text) out += std::string(" (") + text + ")";
  return out;
}

void report_cleanup(CUresult result, const char* function, const char* what) noexcept {
  // No driver: nothing was made that could need cleaning up.
  if (result == CUDA_SUCCESS || result == CUDA_ERROR_NOT_INITIALIZED) return;
  // At process exit the driver may shut down first: expected, so debug.
  const log::Level level =
      result == CUDA_ERROR_DEINITIALIZED ? log::Level::debug : log::Level::warning;
  if (!log::enabled(level)) return;
  try {
    log::write(level, std::string(function) + " failed with " + describe(result) + " while " +
                          what + "; ignored (nothing can report it)");
  } catch (...) {
    log::write(level, function);
  }
}

bool is_sticky(CUresult result) noexcept {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

void check(CUresult result, const char* function, const std::string& what) {
  if (result == CUDA_SUCCESS) return;
  Status status = Status::driver;
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY: status = Status::out_of_memory; break;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE: status = Status::no_device; break;
    case CUDA_ERROR_NOT_SUPPORTED: status = Status::not_supported; break;
    default: break;
  }
  std::string message =
      std::string(function) + " failed with " + describe(result) + " while " + what;
  if (is_sticky(result))
    message += "; the device's context is lost (a kernel faulted, a sticky error): every later "
               "CUDA call on it fails, so the process must exit and start again to use the "
               "device";
  fail(status, message);
}

void missing(const char* function, int needed_version) {
  const int have = loaded().table.driver_version;
  if (have >= needed_version)
    fail(Status::not_supported, std::string("the installed CUDA ") + version_string(have) +
                                    " driver does not provide " + function +
                                    ", which libcumem needs here");
  fail(Status::not_supported, std::string(function) + " needs a CUDA " +
                                  version_string(needed_version) +
                                  " driver or newer; the installed driver is CUDA " +
                                  version_string(have));
}

}  // namespace cumem::core::driver
