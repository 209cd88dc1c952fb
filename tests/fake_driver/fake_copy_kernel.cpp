// Loaded code on the fake memory driver, for libcumem's batch copy kernels:
// cuLibraryLoadData reads the PTX's entries and their parameter sizes,
// cuLaunchKernelEx of cumem_copy_batch_small/_large decodes the parameters
// by the PTX's sizes, checks that every copy's memory is a kernel's to
// reach (device, pinned or managed allocations of the fake), and runs the
// kernels' own code (src/copy_kernel.cu, compiled here for the host) block
// by block and thread by thread, so that the bytes that arrive are the
// kernel's. Served only where $FAKE_CUDA_COPY_KERNEL says (read at the
// driver's load):
//   unset          no loaded code at all (the entry points are missing);
//   1              the kernels load and run;
//   refuse         cuLibraryGetModule answers CUDA_ERROR_UNSUPPORTED_PTX_VERSION
//                  (an older driver's answer to CUDA 13's PTX);
//   refuse_launch  the code loads, but every launch answers
//                  CUDA_ERROR_NO_BINARY_FOR_GPU.
#include "fake_copy_kernel.hpp"

#include <cudaTypedefs.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>

// The kernels' source, for the host: each CUDA thread becomes a call with
// threadIdx, blockIdx, blockDim and gridDim set (the kernels share nothing
// between threads, so one thread after another does what the GPU does).
namespace fake_memory::emulated {
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};
thread_local Dim3 threadIdx, blockIdx, blockDim, gridDim;
}  // namespace fake_memory::emulated
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
using namespace fake_memory::emulated;
#define __global__ __attribute__((visibility("hidden")))
#define __device__
#define __forceinline__ inline
#define __grid_constant__
#define __launch_bounds__(threads)
#include "../../src/copy_kernel.cu"
#undef __global__
#undef __device__
#undef __forceinline__
#undef __grid_constant__
#undef __launch_bounds__

namespace fake_memory {
namespace {

using cumem::core::copy_kernel::Copies;
using cumem::core::copy_kernel::kLargeCopies;
using cumem::core::copy_kernel::kSmallCopies;

enum class Mode { off, on, refuse, refuse_launch };

Mode mode() {
  static const Mode m = [] {
    const char* v = std::getenv("FAKE_CUDA_COPY_KERNEL");
    if (!v || !*v) return Mode::off;
    if (std::strcmp(v, "refuse") == 0) return Mode::refuse;
    if (std::strcmp(v, "refuse_launch") == 0) return Mode::refuse_launch;
    return Mode::on;
  }();
  return m;
}

struct Kernel {
  std::string name;
  size_t param_bytes = 0;
};
struct Library {
  std::map<std::string, std::unique_ptr<Kernel>> kernels;  // by entry name
};

std::mutex libraries_mutex;
std::map<const void*, std::unique_ptr<Library>> libraries;

const Kernel* find_kernel(const void* handle) {
  std::lock_guard<std::mutex> lock(libraries_mutex);
  for (const auto& [_, library] : libraries)
    for (const auto& [name, kernel] : library->kernels)
      if (kernel.get() == handle) return kernel.get();
  return nullptr;
}

CUresult CUDAAPI fake_cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*,
                                        void**, unsigned int, CUlibraryOption*, void**,
                                        unsigned int) {
  if (!library || !code) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    ++state().libraries_loaded;
  }
  const std::string ptx(static_cast<const char*>(code));
  if (ptx.find(".version") == std::string::npos) return CUDA_ERROR_INVALID_IMAGE;
  auto loaded = std::make_unique<Library>();
  // ".entry NAME(\n\t.param .align 8 .b8 NAME_param_0[BYTES]\n)": kernels of
  // one struct parameter, as libcumem's are.
  const std::regex entry(R"(\.entry (\w+)\(\s*\.param \.align \d+ \.b8 \w+_param_0\[(\d+)\]\s*\))");
  for (std::sregex_iterator it(ptx.begin(), ptx.end(), entry), end; it != end; ++it) {
    auto kernel = std::make_unique<Kernel>();
    kernel->name = (*it)[1];
    kernel->param_bytes = std::stoul((*it)[2]);
    loaded->kernels[kernel->name] = std::move(kernel);
  }
  *library = reinterpret_cast<CUlibrary>(loaded.get());
  std::lock_guard<std::mutex> lock(libraries_mutex);
  libraries[loaded.get()] = std::move(loaded);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuLibraryUnload(CUlibrary library) {
  std::lock_guard<std::mutex> lock(libraries_mutex);
  return libraries.erase(library) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI fake_cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (mode() == Mode::refuse) return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  std::lock_guard<std::mutex> lock(libraries_mutex);
  if (libraries.count(library) == 0) return CUDA_ERROR_INVALID_HANDLE;
  *module = reinterpret_cast<CUmodule>(library);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
  std::lock_guard<std::mutex> lock(libraries_mutex);
  auto it = libraries.find(library);
  if (it == libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
  auto k = it->second->kernels.find(name);
  if (k == it->second->kernels.end()) return CUDA_ERROR_NOT_FOUND;
  *kernel = reinterpret_cast<CUkernel>(k->second.get());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuKernelGetAttribute(int* value, CUfunction_attribute attribute,
                                           CUkernel kernel, CUdevice device) {
  if (!find_kernel(kernel) || device != 0) return CUDA_ERROR_INVALID_VALUE;
  // __launch_bounds__(256) in the source.
  *value = attribute == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 256 : 0;
  return CUDA_SUCCESS;
}

// The parameters by the PTX's size alone: count at 0, then N destinations,
// N sources (8 bytes each) and N sizes (4 bytes each) from byte 8, where
// 8 + 20 N is the declared size rounded up to 8. Every copy's memory must
// be a kernel's to reach (and none empty: libcumem sends none).
CUresult check_copies(const Kernel& kernel, const unsigned char* p, unsigned* count) {
  const size_t n = (kernel.param_bytes - 8) / 20;
  if ((8 + 20 * n + 7) / 8 * 8 != kernel.param_bytes) return CUDA_ERROR_INVALID_VALUE;
  unsigned reserved = 0;
  std::memcpy(count, p, 4);
  std::memcpy(&reserved, p + 4, 4);
  if (*count == 0 || *count > n || reserved != 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < *count; ++i) {
    uint64_t dst = 0, src = 0;
    uint32_t size = 0;
    std::memcpy(&dst, p + 8 + 8 * i, 8);
    std::memcpy(&src, p + 8 + 8 * n + 8 * i, 8);
    std::memcpy(&size, p + 8 + 16 * n + 4 * i, 4);
    if (size == 0 || !kernel_reachable(dst, size) || !kernel_reachable(src, size))
      return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  return CUDA_SUCCESS;
}

template <unsigned N>
void run(const void* params, const CUlaunchConfig& config) {
  const auto& copies = *static_cast<const Copies<N>*>(params);
  gridDim = {config.gridDimX, 1, 1};
  blockDim = {config.blockDimX, 1, 1};
  for (unsigned b = 0; b < config.gridDimX; ++b)
    for (unsigned t = 0; t < config.blockDimX; ++t) {
      blockIdx = {b, 0, 0};
      threadIdx = {t, 0, 0};
      copy_all(copies);
    }
}

CUresult CUDAAPI fake_cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction function,
                                       void** params, void** extra) {
  if (!in_context()) return CUDA_ERROR_INVALID_CONTEXT;
  const Kernel* kernel = find_kernel(function);
  if (!config || !kernel) return CUDA_ERROR_INVALID_HANDLE;
  if (mode() == Mode::refuse_launch) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  const CUlaunchConfig& c = *config;
  // One dimension of blocks of 16 to 256 threads (the kernels' bounds and
  // their head and tail bytes), no shared memory, no attributes.
  if (c.gridDimX == 0 || c.gridDimY != 1 || c.gridDimZ != 1 || c.blockDimX < 16 ||
      c.blockDimX > 256 || c.blockDimY != 1 || c.blockDimZ != 1 || c.sharedMemBytes != 0 ||
      c.numAttrs != 0 || !params || !params[0] || extra)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned count = 0;
  const CUresult r = check_copies(*kernel, static_cast<const unsigned char*>(params[0]), &count);
  if (r != CUDA_SUCCESS) return r;
  if (kernel->name == "cumem_copy_batch_small" && kernel->param_bytes == sizeof(Copies<kSmallCopies>))
    run<kSmallCopies>(params[0], c);
  else if (kernel->name == "cumem_copy_batch_large" &&
           kernel->param_bytes == sizeof(Copies<kLargeCopies>))
    run<kLargeCopies>(params[0], c);
  else
    return CUDA_ERROR_INVALID_VALUE;  // not a kernel of today's src/copy_kernel.cu
  FakeKernelLaunch launch;
  launch.kernel = kernel->name;
  launch.grid = c.gridDimX;
  launch.block = c.blockDimX;
  launch.copies = count;
  launch.param_bytes = kernel->param_bytes;
  std::lock_guard<std::mutex> lock(state().mutex);
  state().launches.push_back(launch);
  state().log.push_back("kernel " + kernel->name + " stream=" + stream_name(c.hStream) +
                        " copies=" + std::to_string(count));
  return CUDA_SUCCESS;
}

}  // namespace

void* copy_kernel_entry(const char* symbol) {
  if (mode() == Mode::off) return nullptr;
#define FAKE_ENTRY(name, version) \
  if (std::strcmp(symbol, #name) == 0) \
    return reinterpret_cast<void*>(static_cast<PFN_##name##_v##version>(&fake_##name));
  FAKE_ENTRY(cuLibraryLoadData, 12000)
  FAKE_ENTRY(cuLibraryUnload, 12000)
  FAKE_ENTRY(cuLibraryGetModule, 12000)
  FAKE_ENTRY(cuLibraryGetKernel, 12000)
  FAKE_ENTRY(cuKernelGetAttribute, 12000)
  FAKE_ENTRY(cuLaunchKernelEx, 11060)
#undef FAKE_ENTRY
  return nullptr;
}

}  // namespace fake_memory
