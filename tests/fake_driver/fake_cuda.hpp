// What the parts of a fake driver library share (fake_cuda.cpp and the
// extras linked with it: fake_no_extras.cpp or fake_vmm.cpp). Not a header
// of libcumem or of the tests.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

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

}  // namespace fake
