// The control API of the VMM fake driver (fake_cuda_vmm, fake_vmm.cpp), for
// tests: counts and a log of the virtual-memory calls libcumem makes,
// failure injection, streams whose work completes when the test says so.
// The test reaches it through dlopen of $CUMEM_LIBCUDA (the library
// libcumem loaded; the same path gives the same instance): FakeVmm below.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include <cuda.h>

extern "C" {

// Counts since the library was loaded (or fake_vmm_reset).
struct FakeVmmCounts {
  uint64_t reserves, frees;      // cuMemAddressReserve / cuMemAddressFree that succeeded
  uint64_t creates, releases;    // cuMemCreate + imports / cuMemRelease that succeeded
  uint64_t maps, unmaps;         // cuMemMap / cuMemUnmap (one per mapping unmapped)
  uint64_t set_access;           // cuMemSetAccess calls that succeeded
  uint64_t live_reservations;    // reserved and not freed
  uint64_t live_handles;         // created or imported and not released
  uint64_t live_mappings;        // mapped and not unmapped
  uint64_t live_bytes;           // physical bytes still held (handles or mappings alive)
  uint64_t vmm_calls;            // every call of a virtual-memory entry point
  uint64_t live_events;          // created and not destroyed
};

}  // extern "C"

// The control functions, found in the fake libcumem loaded.
class FakeVmm {
 public:
  FakeVmm() {
    const char* path = std::getenv("CUMEM_LIBCUDA");
    library_ = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!library_) return;
    find(counts_, "fake_vmm_counts");
    find(log_, "fake_vmm_log");
    find(reset_, "fake_vmm_reset");
    find(fail_, "fake_vmm_fail");
    find(fail_also_, "fake_vmm_fail_also");
    find(granularity_, "fake_vmm_set_granularity");
    find(refuse_hints_, "fake_vmm_refuse_hints");
    find(allow_fabric_, "fake_vmm_allow_fabric");
    find(memory_, "fake_vmm_set_memory");
    find(busy_, "fake_vmm_stream_busy");
    find(finish_, "fake_vmm_stream_finish");
    find(finish_behind_, "fake_vmm_stream_finish_behind");
    find(attribute_, "fake_cuda_set_attribute");
    find(access_of_, "fake_vmm_access");
    find(chunk_prop_, "fake_vmm_chunk_prop");
    find(unmap_at_, "fake_vmm_unmap_at");
  }
  ~FakeVmm() {
    if (library_) dlclose(library_);
  }
  FakeVmm(const FakeVmm&) = delete;
  FakeVmm& operator=(const FakeVmm&) = delete;

  // "" when every control function was found, else why not.
  std::string missing() const {
    if (!library_) return "CUMEM_LIBCUDA does not name a loadable fake driver";
    if (!counts_ || !log_ || !reset_ || !fail_ || !granularity_ || !refuse_hints_ ||
        !allow_fabric_ || !memory_ || !busy_ || !finish_ || !finish_behind_ || !attribute_ || !access_of_ ||
        !chunk_prop_ || !fail_also_ || !unmap_at_)
      return "the library named by CUMEM_LIBCUDA is not the VMM fake (fake_cuda_vmm)";
    return "";
  }

  FakeVmmCounts counts() const {
    FakeVmmCounts c{};
    counts_(&c);
    return c;
  }
  // Names of the virtual-memory calls since the last reset, in order, each
  // followed by a space ("cuMemAddressReserve cuMemCreate cuMemMap ").
  std::string log() const { return log_(); }
  // Zeroes the counts of calls (not the live ones), empties the log,
  // disarms any failure and restores every setting's default.
  void reset() const { reset_(); }
  // The `nth` next call (1: the next) of the entry point `name` (nullptr:
  // of any virtual-memory entry point) fails with `result`, once.
  void fail(const char* name, unsigned nth, CUresult result) const { fail_(name, nth, result); }
  // A second failure, armed apart from fail()'s: the `nth` next call of
  // `name` (not null) fails with `result`, once (for a rollback whose own
  // cleanup fails).
  void fail_also(const char* name, unsigned nth, CUresult result) const {
    fail_also_(name, nth, result);
  }
  void set_granularity(size_t minimum, size_t recommended) const {
    granularity_(minimum, recommended);
  }
  // With on, a reservation at an address hint is always placed elsewhere.
  void refuse_hints(bool on) const { refuse_hints_(on ? 1 : 0); }
  // With on, cuMemCreate accepts FABRIC (else CUDA_ERROR_NOT_PERMITTED, as
  // on a system without an IMEX channel).
  void allow_fabric(bool on) const { allow_fabric_(on ? 1 : 0); }
  // The device memory cuMemCreate may hand out (default 80 GiB).
  void set_memory(uint64_t bytes) const { memory_(bytes); }
  // Queues work on `stream`: its events and queries report it unfinished
  // until finish_stream (or a synchronisation) completes it.
  void busy_stream(CUstream stream) const { busy_(stream); }
  void finish_stream(CUstream stream) const { finish_(stream); }
  // Completes the work of `stream` but its last `behind` busy_stream calls
  // (a GPU that lags that far behind the host).
  void finish_stream_behind(CUstream stream, uint64_t behind) const {
    finish_behind_(stream, behind);
  }
  // Overrides a device attribute (-1: the driver does not know it;
  // -2: back to the fake's own value).
  void set_attribute(int attribute, int value) const { attribute_(attribute, value); }
  // The access flags (CU_MEM_ACCESS_FLAGS_PROT_*) `device` has at `address`
  // (-1: the host's), or -1 when nothing is mapped there.
  int access_of(const void* address, int device) const { return access_of_(address, device); }
  // The handle types and GPUDirect RDMA flag of the chunk mapped at
  // `address`; false when nothing is mapped there.
  bool chunk_prop(const void* address, int* handle_types, int* gpu_direct_rdma) const {
    return chunk_prop_(address, handle_types, gpu_direct_rdma) != 0;
  }
  // Unmaps the whole mapping that holds `address` behind the library's
  // back (to tidy up what a test made the driver refuse to unmap);
  // CUDA_ERROR_INVALID_VALUE when nothing is mapped there.
  CUresult unmap_at(const void* address) const { return unmap_at_(address); }
  bool is_mapped(const void* address) const { return access_of_(address, 0) != -1; }

 private:
  template <class F>
  void find(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(library_, name));
  }
  void* library_ = nullptr;
  void (*counts_)(FakeVmmCounts*) = nullptr;
  const char* (*log_)() = nullptr;
  void (*reset_)() = nullptr;
  void (*fail_)(const char*, unsigned, CUresult) = nullptr;
  void (*fail_also_)(const char*, unsigned, CUresult) = nullptr;
  void (*granularity_)(size_t, size_t) = nullptr;
  void (*refuse_hints_)(int) = nullptr;
  void (*allow_fabric_)(int) = nullptr;
  void (*memory_)(uint64_t) = nullptr;
  void (*busy_)(CUstream) = nullptr;
  void (*finish_)(CUstream) = nullptr;
  void (*finish_behind_)(CUstream, uint64_t) = nullptr;
  void (*attribute_)(int, int) = nullptr;
  int (*access_of_)(const void*, int) = nullptr;
  int (*chunk_prop_)(const void*, int*, int*) = nullptr;
  CUresult (*unmap_at_)(const void*) = nullptr;
};
