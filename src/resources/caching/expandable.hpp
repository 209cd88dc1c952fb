// Expandable segments, the central part of an expandable cache: each stream
// has an address range for each page size (more when one fills up) in which
// large blocks are pieces; physical pages are mapped under a stream's range
// of the block's page size (pages.hpp) when its free
// pieces cannot serve a request, where free and unmapped space together
// fit it with the fewest new pages, and unmapped again when the cache gives
// memory back. So a block freed at one size serves any other size, and
// neighbours of different ages merge, without asking for new memory; what
// the cache holds is what it maps. PyTorch's expandable segments work so
// (c10/cuda/CUDACachingAllocator.cpp, ExpandableSegment).
//
// Bookkeeping and the calls to the pages (pages.hpp), under the adaptor's
// central lock. Pieces are handed out, freed and merged as in every segment
// (segments.hpp); this adds the unmapped pieces: whole pages of a range
// with nothing mapped, merged with unmapped neighbours.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "pages.hpp"
#include "segments.hpp"

namespace cumem::core::caching {

// One reserved range, grown on behalf of one stream, mapped in pages of
// one size (pages.hpp: blocks of two large pages or more have ranges of
// large pages, the others ranges of small pages).
struct ExpandableSegment {
  std::unique_ptr<PageRange> pages;
  uintptr_t owner = 0;  // the stream key whose requests map pages here
};

// What grow() did, beyond the piece it hands out (Taken).
struct Grown {
  Taken taken;              // the new block (on the asking stream's key)
  uint64_t mapped = 0;      // bytes of pages mapped for it
  char* mapped_at = nullptr;  // where
  // Free pieces it took in (a free neighbour of the new pages, on the
  // asking stream or on none): the free pieces on these keys are one fewer.
  uintptr_t consumed[2] = {};
  int consumed_count = 0;
};

class ExpandableSegments : public Segments {
 public:
  explicit ExpandableSegments(PageSource& pages) : pages_(pages) {}
  // Destroys the ranges, unmapping their pages, except ranges with pieces
  // still handed out (the user's, allocated and never freed): those stay
  // mapped for as long as the process lives (leaked_bytes() says how much).
  ~ExpandableSegments() override;

  // Maps pages for a block of `rounded` bytes (a multiple of kMinBlock) on
  // stream `key`: in that stream's ranges with the block's page size
  // (PageSource::page_for), where pages mapped after a free piece of the
  // stream (or of none), or into a hole, fit it, at the spot that maps the
  // fewest bytes (the lowest address among equals: a free piece before
  // the unmapped space makes up part of the block); in a new range when
  // none does. (The first such spot by address, as PyTorch's expandable
  // segments take, left ResNet-50's second training 0.09 GiB higher than
  // its first; this, 0.05.) All or nothing: the page
  // source's out_of_memory (or a refused reservation) leaves everything as
  // it was.
  Grown grow(uint64_t rounded, uintptr_t key);
  // Unmaps the whole pages of free pieces, the largest spans first, while
  // `cached` > `keep` (each span's bytes are taken off `cached`), then
  // destroys the ranges left with nothing mapped. Only after a wait for the
  // device (the pieces' work is done). Returns the bytes unmapped; each
  // span unmapped (address, bytes) goes into `spans` when given.
  uint64_t unmap_free(uint64_t keep, uint64_t& cached,
                      std::vector<std::pair<char*, uint64_t>>* spans = nullptr);

  // Recycling, for a block of `rounded` bytes on `key` that no free piece
  // can serve: grow() would map new pages, while free pieces too small for
  // the block may hold whole pages of their own (fragments between blocks
  // in use). fragment_bytes() says how many of the bytes grow() would map
  // such pages could give; recycle() unmaps that many (largest fragments
  // first, a fragment's last pages first, in ranges of either page size: a
  // fragment's pages may be larger than the block's, and then it unmaps
  // more than grow() maps) and returns the bytes unmapped,
  // so that grow() then maps no more physical memory than the cache held.
  // `done`, when given, says which fragments recycle() may unmap (those
  // whose work is done: recycle_markers.hpp); the others stay (and grow()
  // maps more). Without it, every fragment: only after a wait for the device. `at_most`: the bytes it
  // may still unmap (what an earlier call for the same block left to do).
  uint64_t fragment_bytes(uint64_t rounded, uintptr_t key) const;
  uint64_t recycle(uint64_t rounded, uintptr_t key,
                   std::vector<std::pair<char*, uint64_t>>* spans = nullptr,
                   const std::function<bool(const Piece&)>& done = nullptr,
                   uint64_t at_most = UINT64_MAX);

  // Unmaps the whole pages of free pieces of any size for which `done`
  // says their work is done, the smallest spans first (a large free piece
  // is the likeliest to serve the next request), until `bytes` are
  // unmapped (rounded up to whole pages of the last span); returns the
  // bytes unmapped. A page the driver refuses to unmap stops it there
  // (logged): the bytes before it are returned. For the adaptor's repayment of pages mapped in
  // the place of fragments that were not known done (caching_resource.cpp,
  // repay_loans), which a free calls and must not fail.
  uint64_t unmap_done(uint64_t bytes, std::vector<std::pair<char*, uint64_t>>* spans,
                      const std::function<bool(const Piece&)>& done);

  // Grants (read_write) or revokes device `ordinal`'s access to every
  // range's pages, now and in ranges reserved later; all or nothing.
  void set_peer_access(int ordinal, bool read_write);
  bool peer_access(int ordinal) const { return peers_.count(ordinal) != 0; }

  uint64_t mapped_bytes() const { return mapped_; }  // pages mapped now
  uint64_t pages_mapped() const { return pages_mapped_; }    // ever, of either size
  uint64_t pages_unmapped() const { return pages_unmapped_; }  // ever, of either size
  size_t range_count() const { return segments_.size(); }
  // Bytes of ranges the destructor left mapped, for the adaptor's warning.
  uint64_t in_use_bytes() const;

 private:
  // Where grow() maps pages for a block: the unmapped piece, the free
  // pieces the new pages join, and the bytes to map; unmapped is null when
  // no range of the stream has room.
  struct Spot {
    Piece* unmapped = nullptr;
    Piece* before = nullptr;
    Piece* after = nullptr;
    uint64_t bytes = 0;
  };
  // The whole pages inside a free piece: (bytes, address, piece, the first
  // and last page offset within the piece).
  struct Span {
    uint64_t bytes;
    char* ptr;
    Piece* piece;
    uint64_t lo, hi;
  };

  Spot find_spot(uint64_t rounded, uintptr_t key) const;
  uint64_t bytes_to_map(const Spot& spot, uint64_t rounded) const;
  static bool next_to(const Spot& spot, const Span& s);
  // The whole pages of free pieces smaller than `below`, largest first.
  std::vector<Span> whole_pages(uint64_t below) const;
  // Unmaps the last `bytes` (whole pages) of span `s` and returns the
  // bytes unmapped: fewer when the pages refused one (PageRange::unmap),
  // and then the books count only those.
  uint64_t unmap_span(const Span& s, uint64_t bytes,
                      std::vector<std::pair<char*, uint64_t>>* spans_out);
  ExpandableSegment* add_range(uint64_t bytes, uintptr_t key, uint64_t page);
  static uint64_t page_of(const Piece* p);  // the page size of p's range
  void insert_unmapped(Piece* p);
  void erase_unmapped(Piece* p);
  // Turns [p->ptr + lo, p->ptr + hi) of the free piece `p` (page offsets
  // within p, whole pages) into an unmapped piece, merged with unmapped
  // neighbours; what is left of p on either side stays free.
  void make_unmapped(Piece* p, uint64_t lo, uint64_t hi);
  uint64_t offset_of(const Piece* p) const;

  PageSource& pages_;
  std::vector<std::unique_ptr<ExpandableSegment>> segments_;
  // Unmapped pieces by owning stream, their range's page size and address
  // (lowest first).
  std::set<std::tuple<uintptr_t, uint64_t, char*, Piece*>> unmapped_;
  uint64_t mapped_ = 0;
  uint64_t pages_mapped_ = 0, pages_unmapped_ = 0;
  std::set<int> peers_;  // devices given access (set_peer_access)
};

}  // namespace cumem::core::caching
