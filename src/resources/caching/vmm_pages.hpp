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

// 2 MiB, the H200's granularity (PyTorch maps 20 MiB pages for its large
// blocks): the cache recycles the whole pages of fragments before it maps
// new ones (expandable.hpp), and small pages leave fewer bytes stranded in
// fragments; replayed training traces hold 0.3-0.7 % over their peak in use
// on 2 MiB pages, 1-3.5 % on 20 MiB ones. Mapping costs more calls per
// block (bench_expandable measures both).
inline constexpr uint64_t kDefaultPageSize = uint64_t{2} << 20;

// Device memory of `device` in pages of `page_size` bytes (0: the default,
// raised to a multiple of the granularity; else it must be a multiple of
// the device's granularity: invalid_argument naming it). A device without
// virtual memory management is not_supported.
std::unique_ptr<PageSource> device_pages(Ref<Device> device, uint64_t page_size);

}  // namespace cumem::core::caching
