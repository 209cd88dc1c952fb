// Expandable segments alone (src/resources/caching/expandable.hpp), over a
// recording page source (no driver, no memory): which pages get mapped and
// unmapped, and where blocks go, for sequences of allocations and frees.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "error.hpp"
#include "resources/caching/expandable.hpp"

namespace {

using namespace cumem::core;
using namespace cumem::core::caching;
constexpr uint64_t MiB = uint64_t{1} << 20;

// What the page source was asked, in order: "reserve R1 1000", "map R1 0+40",
// "unmap R1 20+20", "free R1" (ranges numbered from 1, sizes in MiB).
struct Calls {
  std::vector<std::string> log;
  bool refuse_next_map = false;
  int refuse_access_of_range = 0;  // the range (number) whose next set_access fails
  // The next unmap stops before the page at this range offset (as a driver
  // refusing its cuMemUnmap); UINT64_MAX: none.
  uint64_t refuse_unmap_at = UINT64_MAX;
  std::string take() {
    std::string out;
    for (const std::string& c : log) out += (out.empty() ? "" : ", ") + c;
    log.clear();
    return out;
  }
};

class RecordingRange;

// The ranges not destroyed yet (the segments leave a range with blocks in
// use mapped on purpose; the test destroys those itself).
struct LiveRanges {
  std::set<RecordingRange*> ranges;
};

class RecordingRange final : public PageRange {
 public:
  RecordingRange(Calls& calls, LiveRanges& live, int number, uint64_t size, uint64_t page)
      : calls_(calls), live_(live), number_(number), size_(size), page_(page) {
    live_.ranges.insert(this);
  }
  ~RecordingRange() override {
    live_.ranges.erase(this);
    calls_.log.push_back("free R" + std::to_string(number_));
  }
  // Never touched: 16 TiB apart, so ranges never overlap.
  char* base() const override { return reinterpret_cast<char*>(uintptr_t(number_) << 44); }
  uint64_t size() const override { return size_; }
  uint64_t page_size() const override { return page_; }
  void map(uint64_t offset, uint64_t bytes) override {
    check(offset, bytes);
    if (calls_.refuse_next_map) {
      calls_.refuse_next_map = false;
      fail(Status::out_of_memory, "the recording source refused to map");
    }
    for (uint64_t p = offset; p < offset + bytes; p += page_) {
      EXPECT_FALSE(mapped_[p]) << "page at " << p << " mapped twice";
      mapped_[p] = true;
    }
    calls_.log.push_back("map R" + std::to_string(number_) + " " + std::to_string(offset / MiB) +
                         "+" + std::to_string(bytes / MiB));
  }
  void set_access(int ordinal, bool read_write) override {
    if (calls_.refuse_access_of_range == number_) {
      calls_.refuse_access_of_range = 0;
      fail(Status::driver, "the recording source refused the access");
    }
    calls_.log.push_back("access R" + std::to_string(number_) + " dev" + std::to_string(ordinal) +
                         (read_write ? " rw" : " none"));
  }
  uint64_t unmap(uint64_t offset, uint64_t bytes) noexcept override {
    check(offset, bytes);
    uint64_t end = offset + bytes;
    if (calls_.refuse_unmap_at >= offset && calls_.refuse_unmap_at < end) {
      end = calls_.refuse_unmap_at;
      calls_.refuse_unmap_at = UINT64_MAX;
      calls_.log.push_back("refused R" + std::to_string(number_) + " " +
                           std::to_string(end / MiB));
    }
    for (uint64_t p = offset; p < end; p += page_) {
      EXPECT_TRUE(mapped_[p]) << "page at " << p << " unmapped but not mapped";
      mapped_[p] = false;
    }
    if (end > offset)
      calls_.log.push_back("unmap R" + std::to_string(number_) + " " +
                           std::to_string(offset / MiB) + "+" + std::to_string((end - offset) / MiB));
    return end - offset;
  }

 private:
  void check(uint64_t offset, uint64_t bytes) const {
    EXPECT_EQ(offset % page_, 0u);
    EXPECT_EQ(bytes % page_, 0u);
    EXPECT_GT(bytes, 0u);
    EXPECT_LE(offset + bytes, size_);
  }
  Calls& calls_;
  LiveRanges& live_;
  int number_;
  uint64_t size_, page_;
  std::map<uint64_t, bool> mapped_;
};

// Pages of one size, or (with `large`) small pages for blocks under `large`
// bytes and pages of `large` for the others.
class RecordingPages final : public PageSource {
 public:
  RecordingPages(Calls& calls, uint64_t page, uint64_t range, uint64_t large = 0)
      : calls_(calls), page_(page), large_(large ? large : page), range_(range) {}
  // Destroys the ranges the segments left (blocks in use); returns how many.
  size_t destroy_left() {
    const std::set<RecordingRange*> left = live.ranges;
    for (RecordingRange* r : left) delete r;
    return left.size();
  }
  LiveRanges live;
  uint64_t page_size() const override { return page_; }
  uint64_t large_page_size() const override { return large_; }
  uint64_t range_size() const override { return range_; }
  // Logged as "reserve R1 1000" (pages of one size) or "reserve R1 1000/2"
  // (a range of 2 MiB pages, with two sizes).
  std::unique_ptr<PageRange> reserve(uint64_t bytes, uint64_t page) override {
    EXPECT_TRUE(page == page_ || page == large_) << page;
    EXPECT_EQ(bytes % page, 0u);
    ++ranges_;
    calls_.log.push_back("reserve R" + std::to_string(ranges_) + " " + std::to_string(bytes / MiB) +
                         (page_ == large_ ? "" : "/" + std::to_string(page / MiB)));
    return std::make_unique<RecordingRange>(calls_, live, ranges_, bytes, page);
  }

 private:
  Calls& calls_;
  uint64_t page_, large_, range_;
  int ranges_ = 0;
};

// Address of `mib` MiB into range `n`.
char* at(int n, uint64_t mib) { return reinterpret_cast<char*>(uintptr_t(n) << 44) + mib * MiB; }

// Segments over a recording source of pages of `Page` bytes, or (with
// `Large`) of `Page` and `Large` bytes.
template <uint64_t Page, uint64_t Large>
class SegmentsOver : public ::testing::Test {
 protected:
  // Tests may end with blocks in use: the segments then leave their ranges
  // mapped, and the test destroys them here.
  void TearDown() override {
    owned.reset();
    pages.destroy_left();
  }
  Calls calls;
  RecordingPages pages{calls, Page, 1000 * MiB, Large};
  std::unique_ptr<ExpandableSegments> owned = std::make_unique<ExpandableSegments>(pages);
  ExpandableSegments& segments = *owned;

  // A large block for stream `key`, as the adaptor asks: free pieces
  // first, then new pages.
  void* allocate(uint64_t bytes, uintptr_t key = 1) {
    const Taken t = segments.take(bytes, key);
    if (t.ptr) return t.ptr;
    return segments.grow(bytes, key).taken.ptr;
  }
};

using Expandable = SegmentsOver<20 * MiB, 0>;

TEST_F(Expandable, TheFirstBlockReservesARangeAndMapsTheFewestPages) {
  EXPECT_EQ(allocate(30 * MiB), at(1, 0));
  EXPECT_EQ(calls.take(), "reserve R1 1000, map R1 0+40");
  EXPECT_EQ(segments.mapped_bytes(), 40 * MiB);
  EXPECT_EQ(segments.free_bytes(), 10 * MiB) << "the rest of the second page is free";
  // The rest serves the next block without a new page.
  EXPECT_EQ(allocate(6 * MiB), at(1, 30));
  EXPECT_EQ(calls.take(), "");
  // A block larger than the rest: pages right after it, joined with it.
  EXPECT_EQ(allocate(10 * MiB), at(1, 36));
  EXPECT_EQ(calls.take(), "map R1 40+20");
  EXPECT_EQ(segments.mapped_bytes(), 60 * MiB);
  EXPECT_EQ(segments.free_bytes(), 14 * MiB);
  EXPECT_EQ(segments.pages_mapped(), 3u);
}

TEST_F(Expandable, BlocksFreedAtOneSizeServeAnotherWithoutNewPages) {
  // PyTorch's fragmentation example: 8 x 16 MiB live, freed, then 4 x 32 MiB.
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(allocate(16 * MiB));
  EXPECT_EQ(segments.mapped_bytes(), 140 * MiB) << "128 MiB in 7 pages of 20 MiB";
  for (void* b : blocks) segments.put_back(b, 1);
  EXPECT_EQ(segments.free_bytes(), 140 * MiB);
  EXPECT_EQ(segments.piece_count(), 2u) << "merged into one free piece (and the unmapped rest)";
  calls.take();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(allocate(32 * MiB), at(1, 32 * i));
  EXPECT_EQ(calls.take(), "") << "no page mapped for the 32 MiB blocks";
  EXPECT_EQ(segments.mapped_bytes(), 140 * MiB);
}

TEST_F(Expandable, EachStreamGrowsARangeOfItsOwn) {
  EXPECT_EQ(allocate(4 * MiB, 1), at(1, 0));
  EXPECT_EQ(calls.take(), "reserve R1 1000, map R1 0+20");
  // Stream 1's free 16 MiB is too small: stream 2 maps pages in its own range.
  EXPECT_EQ(allocate(30 * MiB, 2), at(2, 0));
  EXPECT_EQ(calls.take(), "reserve R2 1000, map R2 0+40");
  EXPECT_EQ(allocate(8 * MiB, 2), at(2, 30)) << "stream 2's free rest, the best fit";
  EXPECT_EQ(segments.range_count(), 2u);
  // A free piece of another stream is reused before new pages are mapped
  // (the adaptor orders the reuse after that stream).
  const Taken t = segments.take(14 * MiB, 3);
  EXPECT_EQ(t.ptr, at(1, 4)) << "stream 1's 16 MiB";
  EXPECT_EQ(t.freed_key, 1u);
  EXPECT_EQ(calls.take(), "");
}

TEST_F(Expandable, TrimmingUnmapsWholeFreePagesLargestFirstAndFreesEmptyRanges) {
  void* a = allocate(50 * MiB);  // 0..50: pages 0..60
  void* b = allocate(30 * MiB);  // 50..80: the rest of page 40..60, and page 60..80
  void* c = allocate(45 * MiB);  // 80..125: pages 80..140
  ASSERT_EQ(b, at(1, 50));
  ASSERT_EQ(c, at(1, 80));
  EXPECT_EQ(calls.take(), "reserve R1 1000, map R1 0+60, map R1 60+20, map R1 80+60");
  EXPECT_EQ(segments.mapped_bytes(), 140 * MiB);
  segments.put_back(a, 1);
  segments.put_back(c, 1);
  segments.forget_streams({});
  // Free: 0..50 (pages 0..40 whole) and 80..140 (pages 80..140 whole).
  uint64_t cached = segments.free_bytes();
  EXPECT_EQ(cached, 110 * MiB);
  EXPECT_EQ(segments.unmap_free(0, cached), 100 * MiB);
  EXPECT_EQ(calls.take(), "unmap R1 80+60, unmap R1 0+40")
      << "whole free pages, largest span first; the page under b and a's end stays";
  EXPECT_EQ(cached, 10 * MiB) << "40..50 stays mapped and free";
  EXPECT_EQ(segments.mapped_bytes(), 40 * MiB);
  EXPECT_EQ(segments.pages_unmapped(), 5u);
  // Freed, b merges with its free neighbour: everything goes, and the
  // range with it.
  segments.put_back(b, 1);
  segments.forget_streams({});
  cached = segments.free_bytes();
  EXPECT_EQ(segments.unmap_free(0, cached), 40 * MiB);
  EXPECT_EQ(calls.take(), "unmap R1 40+40, free R1");
  EXPECT_EQ(segments.mapped_bytes(), 0u);
  EXPECT_EQ(segments.range_count(), 0u);
  EXPECT_EQ(segments.piece_count(), 0u);
}

// A free piece inside one page holds no whole page: a trim leaves it
// mapped (found on the H200: the span's end was taken below its start).
TEST_F(Expandable, AFreePieceInsideOnePageIsLeftMapped) {
  void* a = allocate(25 * MiB);  // 0..25 on pages 0..40
  void* b = allocate(10 * MiB);  // 25..35
  void* c = allocate(5 * MiB);   // 35..40
  ASSERT_EQ(b, at(1, 25));
  ASSERT_EQ(c, at(1, 35));
  calls.take();
  segments.put_back(b, 1);
  segments.forget_streams({});
  uint64_t cached = segments.free_bytes();
  ASSERT_EQ(cached, 10 * MiB);
  EXPECT_EQ(segments.unmap_free(0, cached), 0u);
  EXPECT_EQ(calls.take(), "") << "no page lies wholly inside 25..35";
  EXPECT_EQ(cached, 10 * MiB);
  EXPECT_EQ(segments.mapped_bytes(), 40 * MiB);
  segments.put_back(a, 1);
  segments.put_back(c, 1);
  segments.forget_streams({});
  cached = segments.free_bytes();
  EXPECT_EQ(segments.unmap_free(0, cached), 40 * MiB) << "merged, the pages go";
}

TEST_F(Expandable, TrimmingStopsAtWhatItIsAskedToKeep) {
  void* a = allocate(40 * MiB);
  void* b = allocate(20 * MiB);
  void* c = allocate(60 * MiB);
  calls.take();
  segments.put_back(a, 1);
  segments.put_back(c, 1);
  segments.forget_streams({});
  uint64_t cached = segments.free_bytes();
  ASSERT_EQ(cached, 100 * MiB);
  EXPECT_EQ(segments.unmap_free(50 * MiB, cached), 60 * MiB);
  EXPECT_EQ(calls.take(), "unmap R1 60+60") << "the largest span only";
  EXPECT_EQ(cached, 40 * MiB);
  segments.put_back(b, 1);
}

TEST_F(Expandable, AHoleLeftByATrimIsMappedAgainAtTheLowestAddress) {
  void* a = allocate(40 * MiB);
  void* b = allocate(20 * MiB);
  segments.put_back(a, 1);
  segments.forget_streams({});
  uint64_t cached = segments.free_bytes();
  segments.unmap_free(0, cached);
  calls.take();
  // 0..40 is a hole before b: a 30 MiB block goes there, not after b.
  EXPECT_EQ(allocate(30 * MiB), at(1, 0));
  EXPECT_EQ(calls.take(), "map R1 0+40");
  // A block larger than the hole's rest goes after b.
  EXPECT_EQ(allocate(25 * MiB), at(1, 60));
  EXPECT_EQ(calls.take(), "map R1 60+40");
  segments.put_back(b, 1);
}

TEST_F(Expandable, NewPagesGoWhereTheyMapTheFewestBytes) {
  void* x0 = allocate(20 * MiB);
  void* x1 = allocate(20 * MiB);
  void* x2 = allocate(20 * MiB);
  void* x3 = allocate(30 * MiB);  // [60, 90), and [90, 100) free
  EXPECT_EQ(calls.take(), "reserve R1 1000, map R1 0+20, map R1 20+20, map R1 40+20, map R1 60+40");
  segments.put_back(x1, 1);
  segments.put_back(x2, 1);
  segments.forget_streams({});
  uint64_t cached = segments.free_bytes();
  segments.unmap_free(10 * MiB, cached);  // the 40 MiB between x0 and x3 go
  EXPECT_EQ(calls.take(), "unmap R1 20+40");
  // 25 MiB: the hole at 20 would map two pages; after x3, the free 10 MiB
  // and one new page hold it. (The lowest spot alone, as PyTorch's
  // expandable segments choose, took the hole.)
  EXPECT_EQ(allocate(25 * MiB), at(1, 90));
  EXPECT_EQ(calls.take(), "map R1 100+20");
  // Equal costs: the lowest address.
  EXPECT_EQ(allocate(40 * MiB), at(1, 20));
  EXPECT_EQ(calls.take(), "map R1 20+40");
  (void)x0;
  (void)x3;
}

TEST_F(Expandable, AHoleBetweenFreePiecesJoinsThemBoth) {
  void* a = allocate(30 * MiB);  // 0..30
  void* b = allocate(50 * MiB);  // 30..80
  void* c = allocate(15 * MiB);  // 80..95
  segments.put_back(b, 1);
  segments.forget_streams({});
  uint64_t cached = segments.free_bytes();
  ASSERT_EQ(segments.unmap_free(0, cached), 40 * MiB);  // pages 40..80; 30..40 stays free
  calls.take();
  segments.put_back(a, 1);  // 0..40 free, then the hole 40..80, then c
  // 60 MiB: the free 40 MiB before the hole and 20 MiB of it.
  EXPECT_EQ(allocate(60 * MiB), at(1, 0));
  EXPECT_EQ(calls.take(), "map R1 40+20");
  segments.put_back(c, 1);
}

TEST_F(Expandable, OutOfMemoryWhileMappingChangesNothing) {
  void* a = allocate(10 * MiB);
  calls.take();
  const uint64_t pieces = segments.piece_count();
  calls.refuse_next_map = true;
  try {
    allocate(30 * MiB);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::out_of_memory);
  }
  EXPECT_EQ(segments.piece_count(), pieces);
  EXPECT_EQ(segments.mapped_bytes(), 20 * MiB);
  EXPECT_EQ(segments.free_bytes(), 10 * MiB);
  EXPECT_EQ(allocate(30 * MiB), at(1, 10)) << "the same request works once memory is there";
  EXPECT_EQ(calls.take(), "map R1 20+20");
  segments.put_back(a, 1);
}

TEST_F(Expandable, ABlockLargerThanARangeGetsARangeOfItsSize) {
  EXPECT_EQ(allocate(1500 * MiB), at(1, 0));
  EXPECT_EQ(calls.take(), "reserve R1 1500, map R1 0+1500");
  EXPECT_EQ(allocate(4 * MiB), at(2, 0)) << "nothing left in the first range";
  EXPECT_EQ(calls.take(), "reserve R2 1000, map R2 0+20");
}

TEST_F(Expandable, ANewPageJoinsAFreePieceOfItsStreamOrOfNone) {
  void* a = allocate(15 * MiB, 1);  // 0..15; 15..20 free on stream 1
  calls.take();
  // Stream 1: its 5 MiB free rest and one new page serve 25 MiB.
  void* b = allocate(25 * MiB, 1);
  EXPECT_EQ(b, at(1, 15));
  EXPECT_EQ(calls.take(), "map R1 20+20");
  segments.put_back(a, 1);
  segments.put_back(b, 1);
  EXPECT_EQ(segments.free_bytes(), 40 * MiB);
  EXPECT_EQ(segments.piece_count(), 2u);
}

// Two page sizes, the device's default: 8 MiB pages for blocks of 16 MiB or
// more, 2 MiB pages for the others, each size in ranges of its own.
using TwoPageSizes = SegmentsOver<2 * MiB, 8 * MiB>;

TEST_F(TwoPageSizes, LargeBlocksMapLargePagesAndSmallerOnesSmallPagesInRangesOfTheirOwn) {
  void* a = allocate(30 * MiB);
  EXPECT_EQ(a, at(1, 0));
  EXPECT_EQ(calls.take(), "reserve R1 1000/8, map R1 0+32") << "four pages of 8 MiB";
  // A free piece serves any block, whichever pages hold it.
  void* b = allocate(2 * MiB);
  EXPECT_EQ(b, at(1, 30));
  EXPECT_EQ(calls.take(), "");
  // Under 16 MiB and larger than every free piece: 2 MiB pages, elsewhere.
  void* c = allocate(12 * MiB);
  EXPECT_EQ(c, at(2, 0));
  EXPECT_EQ(calls.take(), "reserve R2 1000/2, map R2 0+12") << "six pages of 2 MiB";
  // 16 MiB is two large pages.
  void* d = allocate(16 * MiB);
  EXPECT_EQ(d, at(1, 32));
  EXPECT_EQ(calls.take(), "map R1 32+16");
  EXPECT_EQ(segments.pages_mapped(), 12u);
  EXPECT_EQ(segments.mapped_bytes(), 60 * MiB);
  // Trimmed, the whole pages of both sizes go, and both ranges.
  for (void* p : {a, b, c, d}) segments.put_back(p, 1);
  segments.forget_streams({});
  uint64_t cached = segments.free_bytes();
  EXPECT_EQ(cached, 60 * MiB);
  EXPECT_EQ(segments.unmap_free(0, cached), 60 * MiB);
  EXPECT_EQ(calls.take(), "unmap R1 0+48, unmap R2 0+12, free R1, free R2");
  EXPECT_EQ(segments.pages_unmapped(), 12u);
  EXPECT_EQ(segments.range_count(), 0u);
}

TEST_F(TwoPageSizes, FragmentsOfSmallPagesAreRecycledForALargeBlock) {
  void* x = allocate(8 * MiB);
  void* y = allocate(10 * MiB);
  void* z = allocate(2 * MiB);
  EXPECT_EQ(calls.take(), "reserve R1 1000/2, map R1 0+8, map R1 8+10, map R1 18+2");
  segments.put_back(y, 1);
  segments.forget_streams({});
  // 30 MiB fits no free piece; no range of 8 MiB pages exists yet, and the
  // new one would map 32 MiB: the fragment's 10 MiB of whole pages go first.
  EXPECT_EQ(segments.fragment_bytes(30 * MiB, 1), 10 * MiB);
  EXPECT_EQ(segments.recycle(30 * MiB, 1), 10 * MiB);
  EXPECT_EQ(calls.take(), "unmap R1 8+10");
  EXPECT_EQ(allocate(30 * MiB), at(2, 0));
  EXPECT_EQ(calls.take(), "reserve R2 1000/8, map R2 0+32");
  EXPECT_EQ(segments.mapped_bytes(), 42 * MiB);
  EXPECT_EQ(segments.pages_mapped(), 14u) << "4 + 5 + 1 of 2 MiB, 4 of 8 MiB";
  EXPECT_EQ(segments.pages_unmapped(), 5u);
  (void)x;
  (void)z;
}

TEST_F(TwoPageSizes, PeerAccessCoversEveryRangeAndTheRangesReservedLater) {
  allocate(30 * MiB);      // R1, 8 MiB pages
  allocate(12 * MiB);      // R2, 2 MiB pages
  calls.take();
  EXPECT_FALSE(segments.peer_access(1));
  segments.set_peer_access(1, true);
  EXPECT_EQ(calls.take(), "access R1 dev1 rw, access R2 dev1 rw");
  EXPECT_TRUE(segments.peer_access(1));
  segments.set_peer_access(1, true);
  EXPECT_EQ(calls.take(), "") << "already granted: no driver call";
  // A range reserved later has it before its first page is mapped.
  allocate(4 * MiB, 2);
  EXPECT_EQ(calls.take(), "reserve R3 1000/2, access R3 dev1 rw, map R3 0+4");
  segments.set_peer_access(1, false);
  EXPECT_EQ(calls.take(), "access R1 dev1 none, access R2 dev1 none, access R3 dev1 none");
  EXPECT_FALSE(segments.peer_access(1));
  allocate(4 * MiB, 3);
  EXPECT_EQ(calls.take(), "reserve R4 1000/2, map R4 0+4") << "revoked: not given to new ranges";
}

TEST_F(TwoPageSizes, APeerAccessThatFailsOnOneRangeChangesNone) {
  allocate(30 * MiB);
  allocate(12 * MiB);
  calls.take();
  calls.refuse_access_of_range = 2;
  try {
    segments.set_peer_access(1, true);
    ADD_FAILURE() << "the refusal was not passed on";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::driver);
  }
  EXPECT_EQ(calls.take(), "access R1 dev1 rw, access R1 dev1 none") << "R1 given back its access";
  EXPECT_FALSE(segments.peer_access(1));
  allocate(4 * MiB, 2);
  EXPECT_EQ(calls.take(), "reserve R3 1000/2, map R3 0+4");
}

// A recycle in passes (the adaptor's: fragments known done first, then
// the others): `done` leaves the fragments it refuses mapped, and a later
// pass for the same block unmaps only what the first left to do.
TEST_F(Expandable, ARecycleInPassesUnmapsOnlyWhatTheBlockNeeds) {
  std::vector<void*> in_use;
  in_use.push_back(allocate(20 * MiB));
  void* f1 = allocate(20 * MiB);  // at 20
  in_use.push_back(allocate(20 * MiB));
  void* f2 = allocate(80 * MiB);  // at 60
  in_use.push_back(allocate(20 * MiB));
  void* f3 = allocate(40 * MiB);  // at 160
  in_use.push_back(allocate(20 * MiB));
  for (void* f : {f1, f2, f3}) segments.put_back(f, 1);
  calls.take();
  // 90 MiB fits no free piece: 100 MiB of new pages, and 140 of fragments.
  const uint64_t wanted = segments.fragment_bytes(90 * MiB, 1);
  EXPECT_EQ(wanted, 100 * MiB);
  // Pass 1: only f1's work is known done.
  const uint64_t first = segments.recycle(90 * MiB, 1, nullptr,
                                          [&](const Piece& p) { return p.ptr == f1; });
  EXPECT_EQ(first, 20 * MiB);
  EXPECT_EQ(calls.take(), "unmap R1 20+20") << "f2 and f3 stay mapped";
  // Pass 2: the rest, at most the 80 MiB pass 1 left (without the limit it
  // would unmap 100 more: f2 and half of f3).
  EXPECT_EQ(segments.recycle(90 * MiB, 1, nullptr, nullptr, wanted - first), 80 * MiB);
  EXPECT_EQ(calls.take(), "unmap R1 60+80") << "f2, the largest; f3 stays";
  EXPECT_EQ(segments.free_bytes(), 40 * MiB);
}

// A page the driver refuses to unmap stays mapped in the books too: the
// segments count only what was unmapped, stop there, and serve the refused
// page again (found in review: the books once said unmapped whatever the
// driver did, and the next map over the page failed).
TEST_F(Expandable, APageTheDriverRefusesToUnmapStaysMappedAndFree) {
  void* a = allocate(60 * MiB);  // 0..60
  void* b = allocate(20 * MiB);  // 60..80
  void* c = allocate(40 * MiB);  // 80..120
  segments.put_back(a, 1);
  segments.put_back(c, 1);
  segments.forget_streams({});
  calls.take();
  uint64_t cached = segments.free_bytes();
  ASSERT_EQ(cached, 100 * MiB);
  calls.refuse_unmap_at = 20 * MiB;  // the second page of 0..60
  EXPECT_EQ(segments.unmap_free(0, cached), 20 * MiB);
  EXPECT_EQ(calls.take(), "refused R1 20, unmap R1 0+20")
      << "the largest span first, stopped at the refused page; 80..120 waits";
  EXPECT_EQ(cached, 80 * MiB);
  EXPECT_EQ(segments.mapped_bytes(), 100 * MiB);
  EXPECT_EQ(segments.free_bytes(), 80 * MiB) << "20..60 and 80..120, mapped and free";
  // Recycling for a 100 MiB block (it goes after 80..120, into the
  // unmapped rest) takes the fragment 20..60 and stops the same way.
  calls.refuse_unmap_at = 40 * MiB;
  EXPECT_EQ(segments.recycle(100 * MiB, 1), 20 * MiB);
  EXPECT_EQ(calls.take(), "refused R1 40, unmap R1 20+20");
  EXPECT_EQ(segments.mapped_bytes(), 80 * MiB);
  EXPECT_EQ(segments.free_bytes(), 60 * MiB) << "40..60, refused, and 80..120: mapped and free";
  // The refused page serves a block without a new page ...
  void* d = allocate(20 * MiB);
  EXPECT_EQ(d, at(1, 40));
  EXPECT_EQ(calls.take(), "");
  // ... and the next trim unmaps what it can.
  segments.forget_streams({});
  cached = segments.free_bytes();
  EXPECT_EQ(segments.unmap_free(0, cached), 40 * MiB);
  EXPECT_EQ(calls.take(), "unmap R1 80+40");
  EXPECT_EQ(segments.mapped_bytes(), 40 * MiB);
  segments.put_back(b, 1);
  segments.put_back(d, 1);
}

TEST_F(Expandable, ARangeWithBlocksInUseOutlivesTheSegments) {
  {
    Calls local;
    RecordingPages source{local, 20 * MiB, 1000 * MiB};
    auto s = std::make_unique<ExpandableSegments>(source);
    void* kept = s->grow(4 * MiB, 1).taken.ptr;
    void* freed = s->grow(4 * MiB, 2).taken.ptr;
    s->put_back(freed, 2);
    EXPECT_EQ(s->in_use_bytes(), 4 * MiB);
    (void)kept;
    local.take();
    s.reset();
    EXPECT_EQ(local.take(), "free R2") << "the range with a block in use is left mapped";
    EXPECT_EQ(source.destroy_left(), 1u);
  }
}

}  // namespace
