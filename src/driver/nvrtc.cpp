#include "nvrtc.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "../error.hpp"

namespace cumem::core::nvrtc {
namespace {

struct Loaded {
  Table table;
  bool ok = false;
  std::string error;  // why loading failed
};

const char* const install_hint =
    "install NVRTC (the CUDA toolkit's cuda-nvrtc package), put its lib directory on "
    "LD_LIBRARY_PATH, or set $CUMEM_LIBNVRTC to the library's path";

// The sonames through the loader's search path first; then the lib64
// folders of the toolkits named by the environment and of the one libcumem
// was built against, which the loader often does not search.
std::vector<std::string> default_candidates() {
  std::vector<std::string> c{"libnvrtc.so.13", "libnvrtc.so.12"};
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) roots.push_back(v);
#ifdef CUMEM_CUDA_ROOT
  roots.push_back(CUMEM_CUDA_ROOT);
#endif
  for (const std::string& root : roots)
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12"})
      c.push_back(root + "/lib64/" + name);
  return c;
}

void load(Loaded& out) {
  const char* env = std::getenv("CUMEM_LIBNVRTC");
  const bool from_env = env && *env;
  const std::vector<std::string> candidates =
      from_env ? std::vector<std::string>{env} : default_candidates();
  std::string tried;
  void* lib = nullptr;
  for (const std::string& path : candidates) {
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      out.table.path = path;
      break;
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + ("'" + path + "'") +
             (from_env ? " (from $CUMEM_LIBNVRTC)" : "") + ": " +
             (why ? why : "unknown dlopen error");
  }
  if (!lib) {
    out.error = "cannot load NVRTC, the CUDA run-time compiler; tried " + tried + "; " +
                install_hint;
    return;
  }
  Table& t = out.table;
#define CUMEM_NVRTC_RESOLVE(name)                                                     \
  t.name##_fn = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name));               \
  if (!t.name##_fn) {                                                                 \
    out.error = "the library '" + t.path + "' is not a usable NVRTC: it lacks " #name \
                " (NVRTC 11.2 or newer is needed); " + install_hint;                  \
    dlclose(lib);                                                                     \
    return;                                                                           \
  }
  CUMEM_NVRTC_FUNCTIONS(CUMEM_NVRTC_RESOLVE)
#undef CUMEM_NVRTC_RESOLVE
  if (t.nvrtcVersion_fn(&t.major, &t.minor) != NVRTC_SUCCESS) {
    out.error = "nvrtcVersion failed in '" + t.path + "'; " + install_hint;
    dlclose(lib);
    return;
  }
  // The library stays loaded for the life of the process: programs may be
  // compiled from any thread at any time.
  out.ok = true;
}

Loaded& loaded() {
  static Loaded instance;
  static std::once_flag once;
  std::call_once(once, [] { load(instance); });
  return instance;
}

Status status_of(nvrtcResult result) {
  switch (result) {
    case NVRTC_ERROR_OUT_OF_MEMORY: return Status::out_of_memory;
    case NVRTC_ERROR_INVALID_INPUT:
    case NVRTC_ERROR_INVALID_OPTION:
    case NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID: return Status::invalid_argument;
    // The builtins library next to libnvrtc is missing or broken.
    case NVRTC_ERROR_BUILTIN_OPERATION_FAILURE: return Status::no_compiler;
    default: return Status::compilation;
  }
}

}  // namespace

const Table& get() {
  Loaded& l = loaded();
  if (!l.ok) fail(Status::no_compiler, l.error);
  return l.table;
}

std::string describe(const Table& table) {
  return "NVRTC " + std::to_string(table.major) + "." + std::to_string(table.minor) + " (" +
         table.path + ")";
}

void check(nvrtcResult result, const char* function, const std::string& what,
           const std::string& log) {
  if (result == NVRTC_SUCCESS) return;
  const char* name = get().nvrtcGetErrorString_fn(result);
  fail(status_of(result), std::string(function) + " failed with " +
                              (name ? std::string(name)
                                    : "nvrtcResult " + std::to_string(result)) +
                              " while " + what +
                              (log.empty() ? std::string() : "; compiler log:\n" + log));
}

}  // namespace cumem::core::nvrtc
