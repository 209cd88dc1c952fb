// The pages under a large block of an expandable cache, exported for
// another process: one POSIX file descriptor per page (the pages were made
// with that handle type: CachingOptions::handle_types) and where the block
// begins in them. The caching adaptor turns them into a virtual IPC handle
// (src/ipc/virtual_handle.hpp) that another process maps into one range
// (VirtualResource::import). The pages stay mapped here while the block is
// handed out; the importer's mapping holds the physical memory on its own.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "../../ipc/owned_fds.hpp"
#include "segments.hpp"

namespace cumem::core::caching {

struct SharedPages {
  std::vector<std::pair<uint64_t, uint64_t>> pages;  // (offset from the first, size)
  OwnedFds fds;                                      // one per page
  uint64_t offset = 0;                               // of the block in the first page
};

// The pages that hold the first `size` bytes of the handed-out piece `p` of
// an expandable range (under the cache's central lock): whole pages, from
// the one holding p->ptr to the one holding its last byte.
void export_block_pages(const Piece& p, uint64_t size, SharedPages& out);

}  // namespace cumem::core::caching
