// What the parts of a fake driver library share (fake_cuda.cpp and the
// extras linked with it: fake_no_extras.cpp or fake_vmm.cpp). Not a header
// of libcumem or of the tests.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstddef>
#include <cstdint>

#define FAKE_CUDA_EXPORT __attribute__((visibility("default")))

namespace fake {

constexpr int kMaxDevices = 4;
// fake_cuda_set_attribute(attribute, kDefaultAttribute) drops an override.
constexpr int kDefaultAttribute = -2;

int device_count() noexcept;
bool valid_device(int ordinal) noexcept;
// The device whose primary context is current on this thread, or -1.
int current_device() noexcept;

// The entry point `name` of the extras, or nullptr; cuGetProcAddress_v2
// asks here first, so extras may replace the base fake's entry points.
void* extra_entry(const char* name) noexcept;

// The VMM extras (fake_vmm.cpp) ask the engines extras (fake_engines.cpp:
// memory pools, cuMemAlloc, dma-buf export) first; fake_no_engines.cpp
// has none.
void* engine_entry(const char* name) noexcept;

// What the VMM extras know of mapped virtual memory, for the engines
// extras (cuMemGetAddressRange, cuMemGetHandleForAddressRange).
struct VmmSpan {
  uintptr_t base = 0;
  size_t size = 0;
  int location_type = 0, location_id = 0;
  int handle_types = 0;
};
// The mapping that holds the address `p`.
bool vmm_mapping_at(uintptr_t p, VmmSpan* out) noexcept;
// Whether [p, p + n) is mapped without a gap by mappings of chunks with the
// same properties; `*mappings` gets how many mappings it spans and `*first`
// the first one.
bool vmm_range_mapped(uintptr_t p, size_t n, size_t* mappings, VmmSpan* first) noexcept;

}  // namespace fake
