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

// The default pages: 8 MiB for blocks of 16 MiB or more, 2 MiB (the
// H200's granularity) for the others. Each page costs driver calls
// whatever its size (cuMemCreate, cuMemMap, cuMemSetAccess; cuMemUnmap and
// cuMemRelease when it goes): 0.1 ms together on an idle H200, 0.37 ms to
// map and 0.28 ms to unmap while a kernel runs, which is when a training
// maps (tools/probes/vmm_busy_probe.py; no call waits for the kernel). A
// training's first run maps most of what it uses: on 2 MiB pages alone it
// ran 4-10 % slower than PyTorch's (GPT-2 13.8 steps/s against 14.4, MLP
// 13.9 against 15.3; 7086 and 5810 pages), on the default 14.7 and 14.9
// (2617 and 1272 pages). Small pages leave fewer bytes stranded where the
// cache recycles the whole pages of fragments before it maps new ones
// (expandable.hpp): GPT-2 took 1.005x its peak on 2 MiB pages, 1.008x on
// the default and on PyTorch's sizes (20 MiB pages for the blocks of
// 20 MiB or more), the MLP 1.009x, 1.010x and 1.035x (H200, 2026-12-03,
// bench/README.md).
inline constexpr uint64_t kDefaultPageSize = uint64_t{2} << 20;
inline constexpr uint64_t kDefaultLargePageSize = uint64_t{8} << 20;

// Device memory of `device` in pages: `page_size` 0 is the default pages
// (each raised to a multiple of the granularity); else every page is
// `page_size` bytes, which must be a multiple of the device's granularity
// (invalid_argument naming it). `handle_types` (vmm::kHandlePosixFd or 0):
// the pages can be exported to other processes (PageRange::export_pages).
// A device without virtual memory management, or without POSIX fd handles
// when they are asked for, is not_supported.
std::unique_ptr<PageSource> device_pages(Ref<Device> device, uint64_t page_size,
                                         uint32_t handle_types = 0);

}  // namespace cumem::core::caching
