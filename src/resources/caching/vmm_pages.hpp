// The pages of an expandable cache from the virtual-memory layer (src/vmm/):
// ranges reserved on the upstream's device, physical memory created and
// mapped one page-sized chunk at a time (so that any page can be unmapped
// alone), read-write for that device.
#pragma once

#include <cstdint>
#include <memory>

#include "../../device.hpp"
#include "pages.hpp"

namespace cumem::core::caching {

// 20 MiB: PyTorch's page for its large blocks.
inline constexpr uint64_t kDefaultPageSize = uint64_t{20} << 20;

// Device memory of `device` in pages of `page_size` bytes (0: the default,
// raised to a multiple of the granularity; else it must be a multiple of
// the device's granularity: invalid_argument naming it). A device without
// virtual memory management is not_supported.
std::unique_ptr<PageSource> device_pages(Ref<Device> device, uint64_t page_size);

}  // namespace cumem::core::caching
