// The virtual-memory range layer (src/vmm/) on the VMM fake driver, whose
// memory is host memory: specs, chunks, reservations, mappings and ranges,
// every failure half-way rolled back, and every driver handle given back
// (each test ends with nothing live in the fake).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "error.hpp"
#include "fake_vmm.hpp"
#include "vmm/range.hpp"

namespace {

using cumem::core::Device;
using cumem::core::Error;
using cumem::core::Location;
using cumem::core::LocationType;
using cumem::core::Ref;
using cumem::core::Status;
namespace vmm = cumem::core::vmm;

constexpr size_t kGranule = size_t{64} << 10;  // the fake's minimum granularity
constexpr Location kDevice0{LocationType::device, 0};
constexpr Location kDevice1{LocationType::device, 1};

// Runs `f` and returns the status of the Error it throws (success if none).
template <class F>
Status status_of(F&& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.status();
  }
  return Status::success;
}

class VmmRange : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = fake.missing();
    ASSERT_EQ(why, "");
    fake.reset();
    device = Device::get(0);
    vmm::SpecOptions o;
    o.location = kDevice0;
    o.granularity = vmm::Granularity::minimum;
    o.handle_types = vmm::kHandlePosixFd;
    spec = vmm::Spec::create(device, o);
    ASSERT_EQ(spec->granularity(), kGranule);
  }
  void TearDown() override {
    spec.reset();
    const FakeVmmCounts c = fake.counts();
    EXPECT_EQ(c.live_reservations, 0u) << "a reservation was never freed";
    EXPECT_EQ(c.live_handles, 0u) << "a chunk was never released";
    EXPECT_EQ(c.live_mappings, 0u) << "a mapping was never unmapped";
    EXPECT_EQ(c.live_bytes, 0u) << "physical memory is still held";
    fake.reset();
  }

  // A range of `granules` granules with device 0 given read-write access.
  std::unique_ptr<vmm::Range> range(size_t granules) {
    auto r = vmm::Range::reserve(spec, granules * kGranule);
    r->set_access(kDevice0, vmm::Access::read_write);
    return r;
  }
  static unsigned char* at(const vmm::Range& r, size_t offset) {
    return reinterpret_cast<unsigned char*>(r.address() + offset);
  }

  FakeVmm fake;
  Ref<Device> device;
  std::shared_ptr<const vmm::Spec> spec;
};

TEST_F(VmmRange, MapsChunksOfTheChosenSizeAndGivesEveryHandleBack) {
  {
    auto r = range(8);
    EXPECT_EQ(r->reserved(), 8 * kGranule);
    EXPECT_EQ(r->mapped(), 0u);
    EXPECT_EQ(r->address() % kGranule, 0u);
    fake.reset();
    r->map(0, 5 * kGranule, 2 * kGranule);  // chunks of 2, 2 and 1 granules
    EXPECT_EQ(fake.log(),
              "cuMemCreate cuMemMap cuMemCreate cuMemMap cuMemCreate cuMemMap cuMemSetAccess ")
        << "the access is set once over the chunks of one map";
    EXPECT_EQ(r->mapped(), 5 * kGranule);
    {
      const std::vector<vmm::ChunkInfo> chunks = r->chunks();  // each holds a share
      ASSERT_EQ(chunks.size(), 3u);
      EXPECT_EQ(chunks[0].offset, 0u);
      EXPECT_EQ(chunks[0].size, 2 * kGranule);
      EXPECT_EQ(chunks[1].offset, 2 * kGranule);
      EXPECT_EQ(chunks[2].offset, 4 * kGranule);
      EXPECT_EQ(chunks[2].size, kGranule);
      EXPECT_NE(chunks[0].handle, chunks[1].handle);
      EXPECT_EQ(chunks[0].handle, chunks[0].chunk->handle());
    }
    EXPECT_TRUE(r->is_mapped(0, 5 * kGranule));
    EXPECT_FALSE(r->is_mapped(0, 6 * kGranule));
    // The memory is there (the fake's is host memory).
    std::memset(at(*r, 0), 0xAB, 5 * kGranule);
    EXPECT_EQ(at(*r, 5 * kGranule - 1)[0], 0xAB);
    EXPECT_EQ(fake.counts().live_handles, 3u);

    r->unmap(2 * kGranule, 3 * kGranule);  // the last two chunks
    EXPECT_EQ(r->mapped(), 2 * kGranule);
    EXPECT_EQ(fake.counts().unmaps, 2u);
    EXPECT_EQ(fake.counts().releases, 2u);
    EXPECT_EQ(fake.counts().live_handles, 1u);
  }
  const FakeVmmCounts c = fake.counts();
  EXPECT_EQ(c.creates, 3u);
  EXPECT_EQ(c.releases, 3u);
  EXPECT_EQ(c.maps, 3u);
  EXPECT_EQ(c.unmaps, 3u);
  EXPECT_EQ(c.frees, 1u);
}

TEST_F(VmmRange, SizesOffsetsAndOverlapsAreChecked) {
  auto r = range(4);
  std::string why;
  EXPECT_EQ(status_of([&] { r->map(1, kGranule, kGranule); }, &why), Status::invalid_argument);
  EXPECT_NE(why.find("not a multiple of the granularity"), std::string::npos) << why;
  EXPECT_EQ(status_of([&] { r->map(0, kGranule + 1, kGranule); }), Status::invalid_argument);
  EXPECT_EQ(status_of([&] { r->map(0, kGranule, 100); }), Status::invalid_argument);
  EXPECT_EQ(status_of([&] { r->map(0, kGranule, 0); }), Status::invalid_argument);
  EXPECT_EQ(status_of([&] { r->map(0, 0, kGranule); }), Status::invalid_argument);
  EXPECT_EQ(status_of([&] { r->map(3 * kGranule, 2 * kGranule, kGranule); }, &why),
            Status::invalid_argument);
  EXPECT_NE(why.find("overruns"), std::string::npos) << why;
  EXPECT_EQ(status_of([&] { r->map(SIZE_MAX - kGranule + 1, kGranule, kGranule); }),
            Status::invalid_argument);
  r->map(kGranule, 2 * kGranule, 2 * kGranule);
  EXPECT_EQ(status_of([&] { r->map(0, 2 * kGranule, kGranule); }, &why), Status::invalid_argument);
  EXPECT_NE(why.find("overlaps the chunk"), std::string::npos) << why;
  EXPECT_EQ(status_of([&] { r->unmap(2 * kGranule, kGranule); }, &why), Status::invalid_argument);
  EXPECT_NE(why.find("would cut the chunk"), std::string::npos) << why;
  EXPECT_EQ(status_of([&] { r->unmap(0, 2 * kGranule); }), Status::invalid_argument);
  EXPECT_EQ(r->mapped(), 2 * kGranule) << "refused calls change nothing";
  EXPECT_EQ(status_of([&] { vmm::Range::reserve(spec, 0); }), Status::invalid_argument);
  EXPECT_EQ(status_of([&] { vmm::Range::reserve(spec, kGranule + 4096); }), Status::invalid_argument);
  EXPECT_EQ(status_of([&] { vmm::Range::reserve(spec, kGranule, 3 * kGranule); }),
            Status::invalid_argument);
  // Unmapping a span with holes, or with nothing mapped, is fine.
  r->unmap(0, 4 * kGranule);
  EXPECT_EQ(r->mapped(), 0u);
  r->unmap(0, 4 * kGranule);
}

// Each driver call of a map can fail; whatever fails, what the call made
// is given back and the range is as before.
TEST_F(VmmRange, AFailedMapRollsBackEverythingItMade) {
  struct Case {
    const char* call;
    unsigned nth;
    CUresult result;
    Status status;
  };
  const Case cases[] = {
      {"cuMemCreate", 1, CUDA_ERROR_OUT_OF_MEMORY, Status::out_of_memory},
      {"cuMemCreate", 3, CUDA_ERROR_OUT_OF_MEMORY, Status::out_of_memory},
      {"cuMemMap", 1, CUDA_ERROR_INVALID_VALUE, Status::driver},
      {"cuMemMap", 2, CUDA_ERROR_OUT_OF_MEMORY, Status::out_of_memory},
      {"cuMemSetAccess", 1, CUDA_ERROR_INVALID_DEVICE, Status::no_device},
      {"cuMemSetAccess", 1, CUDA_ERROR_UNKNOWN, Status::driver},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.call) + " #" + std::to_string(c.nth));
    auto r = range(8);
    r->map(6 * kGranule, kGranule, kGranule);  // memory mapped before stays
    std::memset(at(*r, 6 * kGranule), 0x5C, kGranule);
    const FakeVmmCounts before = fake.counts();
    fake.fail(c.call, c.nth, c.result);
    std::string why;
    EXPECT_EQ(status_of([&] { r->map(0, 3 * kGranule, kGranule); }, &why), c.status);
    EXPECT_NE(why.find(c.call), std::string::npos) << why;
    const FakeVmmCounts after = fake.counts();
    EXPECT_EQ(after.creates - before.creates, after.releases - before.releases)
        << "every chunk the failed map created is released";
    EXPECT_EQ(after.maps - before.maps, after.unmaps - before.unmaps)
        << "every mapping the failed map made is unmapped";
    EXPECT_EQ(after.live_handles, before.live_handles);
    EXPECT_EQ(r->mapped(), kGranule);
    EXPECT_FALSE(r->is_mapped(0, kGranule));
    EXPECT_EQ(at(*r, 6 * kGranule)[kGranule - 1], 0x5C);
    // The span can be mapped again.
    r->map(0, 3 * kGranule, kGranule);
    EXPECT_EQ(r->mapped(), 4 * kGranule);
  }
}

TEST_F(VmmRange, NewlyMappedMemoryGetsTheRangesAccess) {
  auto r = range(4);
  r->map(0, kGranule, kGranule);
  EXPECT_EQ(fake.access_of(at(*r, 0), 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  r->set_access(kDevice0, vmm::Access::read);
  EXPECT_EQ(fake.access_of(at(*r, 0), 0), CU_MEM_ACCESS_FLAGS_PROT_READ);
  r->map(kGranule, kGranule, kGranule);
  EXPECT_EQ(fake.access_of(at(*r, kGranule), 0), CU_MEM_ACCESS_FLAGS_PROT_READ)
      << "a newly mapped part has the access of the rest";
  EXPECT_EQ(r->access(kDevice0), vmm::Access::read);
  r->set_access(kDevice0, vmm::Access::none);
  EXPECT_EQ(fake.access_of(at(*r, 0), 0), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  EXPECT_TRUE(r->access_list().empty());
  fake.reset();
  r->map(2 * kGranule, kGranule, kGranule);
  EXPECT_EQ(fake.log(), "cuMemCreate cuMemMap ") << "no access, no cuMemSetAccess";
  std::string why;
  EXPECT_EQ(status_of([&] { r->set_access(Location{LocationType::device, 7}, vmm::Access::read); },
                      &why),
            Status::no_device);
  EXPECT_EQ(status_of([&] { r->set_access(Location{LocationType::host, 0}, vmm::Access::read); }),
            Status::invalid_argument);
}

TEST_F(VmmRange, AFailedAccessChangeRestoresThePreviousAccess) {
  auto r = range(4);
  r->map(0, 3 * kGranule, kGranule);
  fake.fail("cuMemSetAccess", 3, CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(status_of([&] { r->set_access(kDevice0, vmm::Access::read); }), Status::driver);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(fake.access_of(at(*r, i * kGranule), 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        << "chunk " << i;
  EXPECT_EQ(r->access(kDevice0), vmm::Access::read_write);
}

TEST_F(VmmRange, DetachedMappingsStayMappedUntilDestroyed) {
  auto r = range(4);
  r->map(0, 2 * kGranule, kGranule);
  std::memset(at(*r, kGranule), 0x77, kGranule);
  vmm::Mappings later = r->detach(kGranule, kGranule);
  EXPECT_FALSE(later.empty());
  EXPECT_EQ(later.bytes(), kGranule);
  EXPECT_EQ(r->mapped(), kGranule);
  EXPECT_EQ(fake.counts().unmaps, 0u) << "detaching calls no driver";
  EXPECT_EQ(at(*r, kGranule)[0], 0x77) << "still mapped: queued work may still use it";
  EXPECT_TRUE(r->is_detached(kGranule, kGranule));
  EXPECT_FALSE(r->is_detached(0, kGranule));
  std::string why;
  EXPECT_EQ(status_of([&] { r->map(kGranule, kGranule, kGranule); }, &why), Status::invalid_argument);
  EXPECT_NE(why.find("detached mappings"), std::string::npos) << why;
  later.clear();
  EXPECT_FALSE(r->is_detached(kGranule, kGranule));
  EXPECT_EQ(fake.counts().unmaps, 1u);
  EXPECT_EQ(fake.counts().releases, 1u);
  r->map(kGranule, kGranule, kGranule);  // the span is free again
  vmm::Mappings other = r->detach(0, 2 * kGranule);
  vmm::Mappings moved = std::move(other);
  EXPECT_EQ(moved.bytes(), 2 * kGranule);
  // `moved` is destroyed after the range: it keeps the range's address
  // space reserved until its own mappings are unmapped.
}

// The books follow the driver: a chunk the driver refuses to unmap stays
// in the range, mapped (found in review: unmap() once dropped it from the
// books whatever cuMemUnmap said, and the next map over it failed).
TEST_F(VmmRange, AChunkTheDriverRefusesToUnmapStaysInTheRange) {
  auto r = range(4);
  r->map(0, 3 * kGranule, kGranule);
  std::memset(at(*r, 2 * kGranule), 0x5a, kGranule);
  fake.fail("cuMemUnmap", 2, CUDA_ERROR_UNKNOWN);
  std::string why;
  EXPECT_EQ(status_of([&] { r->unmap(0, 3 * kGranule); }, &why), Status::driver);
  EXPECT_NE(why.find("cuMemUnmap"), std::string::npos) << why;
  EXPECT_NE(why.find("stays mapped"), std::string::npos) << why;
  EXPECT_FALSE(r->is_mapped(0, kGranule)) << "the chunk before the refused one is unmapped";
  EXPECT_TRUE(r->is_mapped(kGranule, 2 * kGranule)) << "the refused chunk and the next stay";
  EXPECT_EQ(r->mapped(), 2 * kGranule);
  EXPECT_EQ(fake.counts().live_mappings, 2u) << "the books agree with the driver";
  EXPECT_FALSE(r->is_detached(kGranule, 2 * kGranule));
  EXPECT_EQ(at(*r, 2 * kGranule)[0], 0x5a) << "still mapped, contents kept";
  r->map(0, kGranule, kGranule);  // the unmapped chunk's span is free
  EXPECT_EQ(status_of([&] { r->map(kGranule, kGranule, kGranule); }), Status::invalid_argument)
      << "the refused chunk is still mapped there";
  r->unmap(0, 3 * kGranule);  // a later unmap gets it
  EXPECT_EQ(r->mapped(), 0u);
  EXPECT_EQ(fake.counts().live_mappings, 0u);
}

// Detached mappings are cleared where no one can hear of a failure (a
// destructor, the release queue): a chunk the driver refuses to unmap
// keeps its span out of the range's use, named as such, for good; the
// rest of the range works on.
TEST_F(VmmRange, ASpanTheDriverRefusedToUnmapIsNeverMappedAgain) {
  auto r = range(4);
  r->map(0, 3 * kGranule, kGranule);
  vmm::Mappings later = r->detach(kGranule, 2 * kGranule);
  fake.fail("cuMemUnmap", 1, CUDA_ERROR_UNKNOWN);
  later.clear();
  EXPECT_FALSE(r->is_detached(kGranule, 2 * kGranule));
  EXPECT_TRUE(r->is_stuck(kGranule, kGranule));
  EXPECT_FALSE(r->is_stuck(2 * kGranule, kGranule)) << "the second chunk was unmapped";
  EXPECT_FALSE(r->is_stuck(0, kGranule));
  std::string why;
  EXPECT_EQ(status_of([&] { r->map(kGranule, kGranule, kGranule); }, &why),
            Status::invalid_argument);
  EXPECT_NE(why.find("refused to unmap"), std::string::npos) << why;
  EXPECT_EQ(status_of([&] { r->map(0, 2 * kGranule, 2 * kGranule); }), Status::invalid_argument)
      << "nor any span over it";
  r->map(2 * kGranule, 2 * kGranule, kGranule);  // the rest of the range works on
  EXPECT_EQ(r->mapped(), 3 * kGranule);
  EXPECT_EQ(fake.counts().live_mappings, 4u) << "the range's three, and the refused chunk";
  // Unmapped behind the range's back, so that the test ends with nothing live.
  EXPECT_EQ(fake.unmap_at(at(*r, kGranule)), CUDA_SUCCESS);
}

// The same where a failed map() undoes what it made, and the driver
// refuses to unmap a chunk of it: the span stays out of use by name.
TEST_F(VmmRange, AChunkAFailedMapCannotTakeBackKeepsItsSpanOutOfUse) {
  auto r = range(4);
  fake.fail("cuMemSetAccess", 1, CUDA_ERROR_UNKNOWN);
  fake.fail_also("cuMemUnmap", 1, CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(status_of([&] { r->map(0, 2 * kGranule, kGranule); }), Status::driver);
  EXPECT_EQ(r->mapped(), 0u);
  EXPECT_TRUE(r->is_stuck(0, kGranule)) << "the first chunk's unmap was refused";
  EXPECT_FALSE(r->is_stuck(kGranule, kGranule));
  std::string why;
  EXPECT_EQ(status_of([&] { r->map(0, kGranule, kGranule); }, &why), Status::invalid_argument);
  EXPECT_NE(why.find("refused to unmap"), std::string::npos) << why;
  r->map(kGranule, kGranule, kGranule);
  // map_chunk: the chunk's access fails and so does its unmap.
  auto other = range(1);
  other->map(0, kGranule, kGranule);
  fake.fail("cuMemSetAccess", 1, CUDA_ERROR_UNKNOWN);
  fake.fail_also("cuMemUnmap", 1, CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(status_of([&] { r->map_chunk(2 * kGranule, other->chunks()[0].chunk); }),
            Status::driver);
  EXPECT_TRUE(r->is_stuck(2 * kGranule, kGranule));
  EXPECT_EQ(r->mapped(), kGranule);
  EXPECT_EQ(fake.counts().live_mappings, 4u) << "r's one, other's one, and the two refused";
  EXPECT_EQ(fake.unmap_at(at(*r, 0)), CUDA_SUCCESS);
  EXPECT_EQ(fake.unmap_at(at(*r, 2 * kGranule)), CUDA_SUCCESS);
}

TEST_F(VmmRange, ExtendsInPlaceWhereTheAddressesAfterItAreFree) {
  auto r = range(2);
  r->map(0, 2 * kGranule, 2 * kGranule);
  const CUdeviceptr base = r->address();
  ASSERT_TRUE(r->try_extend(2 * kGranule));
  EXPECT_EQ(r->address(), base);
  EXPECT_EQ(r->reserved(), 4 * kGranule);
  EXPECT_EQ(fake.counts().live_reservations, 2u);
  // A chunk never straddles two reservations: 3 granules from offset 1 ...
  r->unmap(0, 2 * kGranule);
  fake.reset();
  r->map(kGranule, 3 * kGranule, 4 * kGranule);
  const std::vector<vmm::ChunkInfo> chunks = r->chunks();
  ASSERT_EQ(chunks.size(), 2u) << "... is cut at the end of the first reservation";
  EXPECT_EQ(chunks[0].size, kGranule);
  EXPECT_EQ(chunks[1].size, 2 * kGranule);
  EXPECT_EQ(fake.log(), "cuMemCreate cuMemMap cuMemSetAccess cuMemCreate cuMemMap cuMemSetAccess ")
      << "the access is set once per reservation";
  std::memset(at(*r, kGranule), 1, 3 * kGranule);

  // The access of the second reservation's chunks fails: the whole map is
  // undone, the first reservation's chunk too.
  r->unmap(0, 4 * kGranule);
  fake.fail("cuMemSetAccess", 2, CUDA_ERROR_UNKNOWN);
  const FakeVmmCounts before_failure = fake.counts();
  std::string why;
  EXPECT_EQ(status_of([&] { r->map(kGranule, 3 * kGranule, kGranule); }, &why), Status::driver);
  EXPECT_NE(why.find("cuMemSetAccess"), std::string::npos) << why;
  EXPECT_EQ(fake.counts().live_handles, before_failure.live_handles);
  EXPECT_EQ(fake.counts().live_mappings, before_failure.live_mappings);
  EXPECT_EQ(r->mapped(), 0u);
  r->map(kGranule, 3 * kGranule, kGranule);
  EXPECT_EQ(r->mapped(), 3 * kGranule);

  fake.refuse_hints(true);
  const FakeVmmCounts before = fake.counts();
  EXPECT_FALSE(r->try_extend(kGranule));
  EXPECT_EQ(r->reserved(), 4 * kGranule);
  EXPECT_EQ(fake.counts().live_reservations, before.live_reservations)
      << "a reservation the driver placed elsewhere is freed at once";
  EXPECT_EQ(status_of([&] { r->try_extend(0); }), Status::invalid_argument);
}

TEST_F(VmmRange, RemapMapsTheSameChunksWithTheSameAccessAndNoCopy) {
  auto r = range(4);
  r->map(0, 3 * kGranule, kGranule);
  r->set_access(kDevice1, vmm::Access::read);
  for (size_t i = 0; i < 3 * kGranule; ++i) at(*r, 0)[i] = static_cast<unsigned char>(i * 7);
  const FakeVmmCounts before = fake.counts();
  std::unique_ptr<vmm::Range> moved = r->remap(8 * kGranule);
  EXPECT_NE(moved->address(), r->address());
  EXPECT_EQ(moved->reserved(), 8 * kGranule);
  EXPECT_EQ(moved->mapped(), 3 * kGranule);
  EXPECT_EQ(fake.counts().creates, before.creates) << "no new physical memory";
  const auto a = r->chunks(), b = moved->chunks();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].handle, b[i].handle);
    EXPECT_EQ(a[i].offset, b[i].offset);
  }
  EXPECT_EQ(moved->access(kDevice0), vmm::Access::read_write);
  EXPECT_EQ(moved->access(kDevice1), vmm::Access::read);
  EXPECT_EQ(fake.access_of(at(*moved, 2 * kGranule), 1), CU_MEM_ACCESS_FLAGS_PROT_READ);
  r.reset();  // the old addresses go; the chunks stay, mapped by `moved`
  EXPECT_EQ(fake.counts().releases, before.releases);
  for (size_t i = 0; i < 3 * kGranule; ++i)
    ASSERT_EQ(at(*moved, 0)[i], static_cast<unsigned char>(i * 7)) << "byte " << i;
  EXPECT_EQ(status_of([&] { moved->remap(2 * kGranule); }), Status::invalid_argument)
      << "too small for its chunks";
}

TEST_F(VmmRange, AFailedRemapLeavesTheOldRangeWhole) {
  auto r = range(4);
  r->map(0, 3 * kGranule, kGranule);
  std::memset(at(*r, 0), 0x42, 3 * kGranule);
  for (const char* call : {"cuMemAddressReserve", "cuMemMap", "cuMemSetAccess"}) {
    SCOPED_TRACE(call);
    const FakeVmmCounts before = fake.counts();
    fake.fail(call, std::string(call) == "cuMemAddressReserve" ? 1 : 2, CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(status_of([&] { r->remap(8 * kGranule); }), Status::out_of_memory);
    const FakeVmmCounts after = fake.counts();
    EXPECT_EQ(after.live_mappings, before.live_mappings);
    EXPECT_EQ(after.live_reservations, before.live_reservations);
    EXPECT_EQ(after.live_handles, before.live_handles);
    EXPECT_EQ(r->access(kDevice0), vmm::Access::read_write) << "access rights are kept";
    EXPECT_EQ(fake.access_of(at(*r, 0), 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    EXPECT_EQ(at(*r, 3 * kGranule - 1)[0], 0x42);
  }
}

TEST_F(VmmRange, MapChunkSharesAChunkBetweenRanges) {
  auto a = range(2);
  a->map(0, kGranule, kGranule);
  at(*a, 0)[5] = 99;
  auto b = range(2);
  auto chunk = vmm::Chunk::create(spec, kGranule);
  b->map_chunk(kGranule, chunk);
  EXPECT_EQ(b->mapped(), kGranule);
  at(*b, kGranule)[0] = 3;
  chunk.reset();  // b's mapping keeps it
  EXPECT_EQ(fake.counts().live_handles, 2u);
  EXPECT_EQ(at(*b, kGranule)[0], 3);
  EXPECT_EQ(status_of([&] { b->map_chunk(kGranule, vmm::Chunk::create(spec, kGranule)); }),
            Status::invalid_argument);
}

TEST_F(VmmRange, ChunksExportAsFileDescriptorsOnlyWithThatHandleType) {
  auto chunk = vmm::Chunk::create(spec, 2 * kGranule);
  const int fd = chunk->export_fd();
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), 2 * kGranule);
  ::close(fd);
  vmm::SpecOptions o;
  o.location = kDevice0;
  o.granularity = vmm::Granularity::minimum;
  auto plain = vmm::Chunk::create(vmm::Spec::create(device, o), kGranule);
  std::string why;
  EXPECT_EQ(status_of([&] { plain->export_fd(); }, &why), Status::not_supported);
  EXPECT_NE(why.find("POSIX file descriptor"), std::string::npos) << why;
  EXPECT_EQ(status_of([&] { vmm::Chunk::create(spec, kGranule / 2); }), Status::invalid_argument);
}

class VmmSpec : public VmmRange {};

TEST_F(VmmSpec, GranularityIsTheOneAskedFor) {
  vmm::SpecOptions o;
  o.location = kDevice0;
  EXPECT_EQ(vmm::Spec::create(device, o)->granularity(), size_t{2} << 20) << "recommended";
  o.granularity = vmm::Granularity::minimum;
  EXPECT_EQ(vmm::Spec::create(device, o)->granularity(), kGranule);
  auto s = vmm::Spec::create(device, o);
  EXPECT_EQ(s->round_up(1), kGranule);
  EXPECT_EQ(s->round_up(kGranule), kGranule);
  EXPECT_EQ(s->round_up(kGranule + 1), 2 * kGranule);
  EXPECT_EQ(status_of([&] { s->round_up(SIZE_MAX); }), Status::out_of_memory);
  EXPECT_EQ(s->describe(), "device 0 memory");
}

TEST_F(VmmSpec, FabricIsUsedOnlyAfterItsProbeSucceeds) {
  vmm::SpecOptions o;
  o.location = kDevice0;
  o.handle_types = vmm::kHandlePosixFd | vmm::kHandleFabric;
  fake.reset();
  std::string why;
  EXPECT_EQ(status_of([&] { vmm::Spec::create(device, o); }, &why), Status::not_supported);
  EXPECT_NE(why.find("probe"), std::string::npos) << why;
  EXPECT_NE(why.find("CUDA_ERROR_NOT_PERMITTED"), std::string::npos) << why;
  EXPECT_NE(why.find("IMEX"), std::string::npos) << why;
  // The probe was the only call that saw FABRIC, and it made nothing.
  EXPECT_EQ(fake.log(), "cuMemGetAllocationGranularity cuMemCreate ");
  EXPECT_EQ(fake.counts().creates, 0u);
  fake.allow_fabric(true);
  auto s = vmm::Spec::create(device, o);
  EXPECT_EQ(fake.counts().creates, 1u) << "the probe";
  EXPECT_EQ(fake.counts().releases, 1u) << "the probe is released";
  EXPECT_EQ(s->prop().requestedHandleTypes,
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC);
  auto r = vmm::Range::reserve(s, s->granularity());
  r->map(0, s->granularity(), s->granularity());
}

TEST_F(VmmSpec, WhatTheDeviceLacksIsNotSupportedByName) {
  struct Case {
    int attribute;
    vmm::SpecOptions options;
    const char* says;
  };
  vmm::SpecOptions plain;
  plain.location = kDevice0;
  vmm::SpecOptions posix = plain;
  posix.handle_types = vmm::kHandlePosixFd;
  vmm::SpecOptions rdma = plain;
  rdma.gpu_direct_rdma = true;
  vmm::SpecOptions host = plain;
  host.location = Location{LocationType::host, 0};
  vmm::SpecOptions numa = plain;
  numa.location = Location{LocationType::host_numa, 0};  // node 0: every Linux system has it
  const Case cases[] = {
      {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, plain, "virtual memory management"},
      {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, posix, "POSIX file descriptors"},
      {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, rdma, "GPUDirect RDMA"},
      {CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, host, "host-located"},
      {CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, numa, "host NUMA node"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.says);
    EXPECT_NO_THROW(vmm::Spec::create(device, c.options));
    for (int value : {0, -1}) {  // 0: not supported; -1: the driver does not know the attribute
      fake.set_attribute(c.attribute, value);
      std::string why;
      EXPECT_EQ(status_of([&] { vmm::Spec::create(device, c.options); }, &why), Status::not_supported);
      EXPECT_NE(why.find(c.says), std::string::npos) << why;
    }
    fake.set_attribute(c.attribute, -2);
  }
  auto h = vmm::Spec::create(device, host);
  EXPECT_TRUE(h->is_host_memory());
  EXPECT_EQ(h->prop().location.type, CU_MEM_LOCATION_TYPE_HOST);
  EXPECT_EQ(h->describe(), "host memory");
  EXPECT_EQ(vmm::Spec::create(device, numa)->describe(), "host NUMA node 0 memory");
}

TEST_F(VmmSpec, LocationsAreChecked) {
  vmm::SpecOptions o;
  o.location = Location{LocationType::host_numa_current, 0};
  EXPECT_EQ(status_of([&] { vmm::Spec::create(device, o); }), Status::invalid_argument);
  o.location = Location{LocationType::device, 3};
  EXPECT_EQ(status_of([&] { vmm::Spec::create(device, o); }), Status::no_device);
  o.location = kDevice0;
  o.handle_types = 0x4;
  EXPECT_EQ(status_of([&] { vmm::Spec::create(device, o); }), Status::invalid_argument);
}

// Random sequences of map, unmap, detach, extend, remap and destruction,
// with driver failures injected at random: whatever happens, nothing
// leaks (TearDown checks the fake holds nothing) and what succeeded is
// consistent.
TEST_F(VmmRange, RandomSequencesWithFailuresLeakNothing) {
  std::mt19937 rng(20261201);
  // Not the cleanup calls (cuMemUnmap, cuMemRelease, cuMemAddressFree):
  // a driver that refuses to give memory back leaks it whatever we do.
  const char* calls[] = {"cuMemCreate", "cuMemMap", "cuMemSetAccess", "cuMemAddressReserve",
                         "cuMemGetAllocationGranularity"};
  for (int round = 0; round < 200; ++round) {
    std::vector<std::unique_ptr<vmm::Range>> ranges;
    std::vector<vmm::Mappings> pending;
    for (int step = 0; step < 30; ++step) {
      if (rng() % 5 == 0) fake.fail(calls[rng() % 5], 1 + rng() % 3, CUDA_ERROR_OUT_OF_MEMORY);
      try {
        const unsigned op = rng() % 7;
        if (ranges.empty() || op == 0) {
          ranges.push_back(range(1 + rng() % 8));
          continue;
        }
        vmm::Range& r = *ranges[rng() % ranges.size()];
        const size_t granules = r.reserved() / kGranule;
        const size_t first = rng() % granules, count = 1 + rng() % (granules - first);
        switch (op) {
          case 1:
          case 2:
            if (!r.is_mapped(first * kGranule, kGranule))
              r.map(first * kGranule, kGranule * (1 + rng() % (granules - first)) , kGranule * (1 + rng() % 3));
            break;
          case 3: r.unmap(first * kGranule, count * kGranule); break;
          case 4: pending.push_back(r.detach(first * kGranule, count * kGranule)); break;
          case 5: r.try_extend(kGranule * (1 + rng() % 4)); break;
          case 6: {
            const size_t i = rng() % ranges.size();
            ranges[i] = ranges[i]->remap(ranges[i]->reserved() + kGranule);
            break;
          }
        }
      } catch (const Error& e) {
        // Refused calls (a chunk cut, an overlap) and injected failures.
        EXPECT_TRUE(e.status() == Status::invalid_argument || e.status() == Status::out_of_memory)
            << e.what();
      }
      for (const auto& r : ranges) {
        size_t sum = 0;
        for (const vmm::ChunkInfo& c : r->chunks()) sum += c.size;
        ASSERT_EQ(sum, r->mapped());
        ASSERT_LE(r->mapped(), r->reserved());
      }
    }
    fake.fail(nullptr, 0, CUDA_SUCCESS);
    if (rng() % 2) pending.clear();  // before or after the ranges
    ranges.clear();
    pending.clear();
    const FakeVmmCounts c = fake.counts();
    ASSERT_EQ(c.live_mappings, 0u) << "round " << round;
    ASSERT_EQ(c.live_handles, 0u) << "round " << round;
    ASSERT_EQ(c.live_reservations, 0u) << "round " << round;
  }
}

// Random map, unmap, detach and release of detached mappings, with the
// driver refusing cuMemUnmap now and then: after every step each granule
// the fake maps is one the range's books know (mapped, detached, or stuck),
// and each one they call mapped or detached is mapped in the fake.
TEST_F(VmmRange, RandomUnmapFailuresKeepTheBooksWithTheDriver) {
  std::mt19937 rng(20261207);
  size_t refused_unmaps = 0, stuck_granules = 0;  // both paths must be taken
  for (int round = 0; round < 100; ++round) {
    std::vector<std::unique_ptr<vmm::Range>> ranges;
    std::vector<vmm::Mappings> pending;
    for (int i = 0; i < 3; ++i) ranges.push_back(range(8));
    for (int step = 0; step < 40; ++step) {
      vmm::Range& r = *ranges[rng() % ranges.size()];
      const size_t first = rng() % 8, count = 1 + rng() % (8 - first);
      const bool refuse = rng() % 3 == 0;
      if (refuse) fake.fail("cuMemUnmap", 1 + rng() % 2, CUDA_ERROR_UNKNOWN);
      try {
        switch (rng() % 4) {
          case 0:
          case 1: r.map(first * kGranule, count * kGranule, kGranule * (1 + rng() % 2)); break;
          case 2: r.unmap(first * kGranule, count * kGranule); break;
          case 3:
            pending.push_back(r.detach(first * kGranule, count * kGranule));
            if (rng() % 2 && !pending.empty()) {
              const size_t i = rng() % pending.size();
              pending[i].clear();  // never throws; a refusal keeps the span out of use
              pending.erase(pending.begin() + static_cast<long>(i));
            }
            break;
        }
      } catch (const Error& e) {
        // Refused spans (overlaps, cut chunks, stuck spans) and refused unmaps.
        EXPECT_TRUE(e.status() == Status::invalid_argument || e.status() == Status::driver)
            << e.what();
        if (e.status() == Status::driver) ++refused_unmaps;
      }
      fake.fail(nullptr, 0, CUDA_SUCCESS);
      for (const auto& range : ranges)
        for (size_t g = 0; g < 8; ++g) {
          const size_t o = g * kGranule;
          const bool books = range->is_mapped(o, kGranule) || range->is_detached(o, kGranule);
          const bool driver = fake.is_mapped(at(*range, o));
          ASSERT_EQ(driver, books || range->is_stuck(o, kGranule))
              << "round " << round << ", step " << step << ", granule " << g;
          ASSERT_FALSE(books && range->is_stuck(o, kGranule)) << "round " << round;
        }
    }
    pending.clear();
    // What the driver refused stays mapped: unmapped behind the ranges'
    // backs so that each round ends with nothing live.
    for (const auto& range : ranges)
      for (size_t g = 0; g < 8; ++g)
        if (range->is_stuck(g * kGranule, kGranule) && fake.is_mapped(at(*range, g * kGranule))) {
          ++stuck_granules;
          ASSERT_EQ(fake.unmap_at(at(*range, g * kGranule)), CUDA_SUCCESS);
        }
    ranges.clear();
    const FakeVmmCounts c = fake.counts();
    ASSERT_EQ(c.live_mappings, 0u) << "round " << round;
    ASSERT_EQ(c.live_handles, 0u) << "round " << round;
    ASSERT_EQ(c.live_reservations, 0u) << "round " << round;
  }
  EXPECT_GT(refused_unmaps, 0u) << "no unmap() was refused: the test took no failure path";
  EXPECT_GT(stuck_granules, 0u) << "no span was left stuck: the test took no failure path";
}

}  // namespace

int main(int argc, char** argv) {
  // Two fake devices, for peer access; read once, when the fake loads.
  setenv("FAKE_CUDA_DEVICE_COUNT", "2", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
