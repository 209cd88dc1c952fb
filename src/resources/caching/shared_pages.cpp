#include "shared_pages.hpp"

#include "expandable.hpp"

namespace cumem::core::caching {

void export_block_pages(const Piece& p, uint64_t size, SharedPages& out) {
  const PageRange& range = *p.segment->pages;
  const uint64_t page = range.page_size();
  const uint64_t at = static_cast<uint64_t>(p.ptr - range.base());
  const uint64_t lo = at / page * page;
  const uint64_t hi = (at + size + page - 1) / page * page;
  range.export_pages(lo, hi - lo, out.pages, out.fds);
  out.offset = at - lo;
}

}  // namespace cumem::core::caching
