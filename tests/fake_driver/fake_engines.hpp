// The control API of the engines fake driver (fake_cuda_engines: the VMM
// fake plus memory pools, cuMemAlloc and dma-buf export, fake_engines.cpp),
// for tests. Reached through dlopen of $CUMEM_LIBCUDA, as FakeVmm is.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" {

struct FakeEnginesCounts {
  uint64_t dmabuf_exports;     // cuMemGetHandleForAddressRange calls that gave an fd
  uint64_t dmabuf_refusals;    // and that refused
  uint64_t pools_created, pools_destroyed;
  uint64_t fabric_pools;       // cuMemPoolCreate asked for the FABRIC handle type (refused)
  uint64_t pool_trims;         // cuMemPoolTrimTo calls
  uint64_t live_allocations;   // pool, cuMemAlloc, cuMemHostAlloc and managed memory not freed
};

// What an exported dma-buf fd covers (fake_engines_dmabuf).
struct FakeDmaBuf {
  uint64_t base, size, flags;
};

}  // extern "C"

class FakeEngines {
 public:
  FakeEngines() {
    const char* path = std::getenv("CUMEM_LIBCUDA");
    library_ = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!library_) return;
    find(counts_, "fake_engines_counts");
    find(dmabuf_, "fake_engines_dmabuf");
    find(reset_, "fake_engines_reset");
    find(refuse_multi_chunk_, "fake_engines_refuse_multi_chunk");
    find(allow_pcie_, "fake_engines_allow_pcie");
  }
  ~FakeEngines() {
    if (library_) dlclose(library_);
  }
  FakeEngines(const FakeEngines&) = delete;
  FakeEngines& operator=(const FakeEngines&) = delete;

  std::string missing() const {
    if (!library_) return "CUMEM_LIBCUDA does not name a loadable fake driver";
    if (!counts_ || !dmabuf_ || !reset_ || !refuse_multi_chunk_ || !allow_pcie_)
      return "the library named by CUMEM_LIBCUDA is not the engines fake (fake_cuda_engines)";
    return "";
  }
  FakeEnginesCounts counts() const {
    FakeEnginesCounts c{};
    counts_(&c);
    return c;
  }
  // What the dma-buf `fd` was exported for; false when the fake did not
  // export it.
  bool dmabuf(int fd, FakeDmaBuf* out) const { return dmabuf_(fd, out) == 0; }
  // Zeroes the counts (not the live ones) and restores every setting.
  void reset() const { reset_(); }
  // With on, a dma-buf over more than one mapped chunk is refused with
  // CUDA_ERROR_INVALID_VALUE (as a driver that exports one chunk at most).
  void refuse_multi_chunk(bool on) const { refuse_multi_chunk_(on ? 1 : 0); }
  // With on, CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE is accepted (else
  // CUDA_ERROR_NOT_SUPPORTED, as on a platform without the BAR1 path).
  void allow_pcie(bool on) const { allow_pcie_(on ? 1 : 0); }

 private:
  template <class F>
  void find(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(library_, name));
  }
  void* library_ = nullptr;
  void (*counts_)(FakeEnginesCounts*) = nullptr;
  int (*dmabuf_)(int, FakeDmaBuf*) = nullptr;
  void (*reset_)() = nullptr;
  void (*refuse_multi_chunk_)(int) = nullptr;
  void (*allow_pcie_)(int) = nullptr;
};
