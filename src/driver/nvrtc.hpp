// NVRTC, the run-time CUDA C++ compiler, loaded at run time. libcumem never
// links libnvrtc: the library is dlopen'ed on first use ($CUMEM_LIBNVRTC,
// else libnvrtc.so.13, else libnvrtc.so.12) and its entry points are
// resolved once with dlsym into one table. A process that never compiles
// never needs NVRTC.
#pragma once

#include <nvrtc.h>

#include <string>

namespace cumem::core::nvrtc {

// Every NVRTC entry point libcumem calls; all exist since NVRTC 11.2.
#define CUMEM_NVRTC_FUNCTIONS(X) \
  X(nvrtcGetErrorString)         \
  X(nvrtcVersion)                \
  X(nvrtcGetNumSupportedArchs)   \
  X(nvrtcGetSupportedArchs)      \
  X(nvrtcCreateProgram)          \
  X(nvrtcDestroyProgram)         \
  X(nvrtcCompileProgram)         \
  X(nvrtcGetProgramLogSize)      \
  X(nvrtcGetProgramLog)          \
  X(nvrtcGetPTXSize)             \
  X(nvrtcGetPTX)                 \
  X(nvrtcGetCUBINSize)           \
  X(nvrtcGetCUBIN)               \
  X(nvrtcAddNameExpression)      \
  X(nvrtcGetLoweredName)

struct Table {
#define CUMEM_NVRTC_MEMBER(name) decltype(&::name) name##_fn = nullptr;
  CUMEM_NVRTC_FUNCTIONS(CUMEM_NVRTC_MEMBER)
#undef CUMEM_NVRTC_MEMBER
  int major = 0, minor = 0;  // NVRTC's own version, e.g. 13 and 0
  std::string path;          // the name or path that was loaded
};

// The loaded NVRTC; throws Error(no_compiler) naming every path tried and
// why each failed (loading is attempted once; later calls throw the same).
const Table& get();

// "NVRTC 13.0 (libnvrtc.so.13)" for messages.
std::string describe(const Table& table);

// Throws unless `result` is NVRTC_SUCCESS: "<function> failed with
// NVRTC_ERROR_X while <what>", followed by the compiler's log when there is
// one, with a status that matches the error.
void check(nvrtcResult result, const char* function, const std::string& what,
           const std::string& log = {});

}  // namespace cumem::core::nvrtc
