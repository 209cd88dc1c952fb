// The virtual resource through the C API on the VMM fake driver: options,
// allocation at the granularity, stream-ordered frees, growing in place and
// by moving (contents and access kept, no copy), shrinking, peer access,
// out of memory, and cuda.core's bug classes on the host (the gpu suite
// repeats them on a device: test_virtual_gpu.cpp).
#include <cstddef>
#include <random>

#include "virtual_fixture.hpp"

namespace {

TEST_F(VirtualTest, PropertiesSayWhatTheResourceIs) {
  cumem_resource_t* r = make();
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(r, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_VIRTUAL);
  EXPECT_EQ(p.device_accessible, CUMEM_TRUE);
  EXPECT_EQ(p.host_accessible, CUMEM_FALSE);
  EXPECT_EQ(p.device_id, 0);
  EXPECT_EQ(p.is_stream_ordered, CUMEM_TRUE);
  EXPECT_EQ(p.is_pool, CUMEM_FALSE);
  EXPECT_EQ(p.ipc_enabled, CUMEM_TRUE);
  EXPECT_EQ(p.is_imported, CUMEM_FALSE);
  const cumem_virtual_statistics_t s = vstats(r);
  EXPECT_EQ(s.granularity, kGranule);
  EXPECT_EQ(s.chunk_size, kGranule);
  EXPECT_EQ(s.bytes_mapped, 0u);
  cumem_resource_release(r);

  // The defaults: recommended granularity, 20 MiB chunks, no IPC.
  CUMEM_ASSERT_OK(cumem_virtual_resource_create(device, nullptr, &r));
  const cumem_virtual_statistics_t d = vstats(r);
  EXPECT_EQ(d.granularity, kRecommended);
  EXPECT_EQ(d.chunk_size, size_t{20} << 20);
  CUMEM_ASSERT_OK(cumem_resource_get_properties(r, &p));
  EXPECT_EQ(p.ipc_enabled, CUMEM_FALSE);
  cumem_resource_release(r);

  // A chunk size that is not a multiple of the granularity is rounded up.
  r = make(kGranule + 1);
  EXPECT_EQ(vstats(r).chunk_size, 2 * kGranule);
  cumem_resource_release(r);
}

TEST_F(VirtualTest, HostMemoryIsPinnedAndReachableByTheHostWhereTheDriverAllows) {
  cumem_resource_t* r = make(kGranule, [](cumem_virtual_resource_options_t& o) {
    o.location.type = CUMEM_LOCATION_HOST_NUMA;
    o.location.id = 0;
  });
  ASSERT_NE(r, nullptr);
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(r, &p));
  EXPECT_EQ(p.host_accessible, CUMEM_TRUE) << "the fake lets the host in for host NUMA memory";
  EXPECT_EQ(p.device_id, -1);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 1000, nullptr, &b));
  cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
  CUMEM_ASSERT_OK(cumem_buffer_get_info(b, &info));
  EXPECT_EQ(info.memory_kind, CUMEM_MEMORY_PINNED);
  EXPECT_EQ(fake.access_of(info.ptr, -1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(fake.access_of(info.ptr, 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  std::memset(info.ptr, 7, 1000);
  cumem_buffer_release(b);
  cumem_resource_release(r);
}

TEST_F(VirtualTest, OptionsAreCheckedByName) {
  struct Case {
    void (*tune)(cumem_virtual_resource_options_t&);
    cumem_status_t status;
    const char* says;
  };
  const Case cases[] = {
      {[](cumem_virtual_resource_options_t& o) { o.location = {CUMEM_LOCATION_DEVICE, 1}; },
       CUMEM_ERROR_INVALID_ARGUMENT, "names device 1 but the memory is made for device 0"},
      {[](cumem_virtual_resource_options_t& o) { o.location = {CUMEM_LOCATION_DEVICE, 5}; },
       CUMEM_ERROR_NO_DEVICE, "device 5"},
      {[](cumem_virtual_resource_options_t& o) { o.location = {CUMEM_LOCATION_HOST_NUMA, -1}; },
       CUMEM_ERROR_INVALID_ARGUMENT, "host NUMA node -1"},
      {[](cumem_virtual_resource_options_t& o) { o.location = {CUMEM_LOCATION_HOST_NUMA_CURRENT, 0}; },
       CUMEM_ERROR_INVALID_ARGUMENT, "cannot be"},
      {[](cumem_virtual_resource_options_t& o) { o.granularity = static_cast<cumem_granularity_t>(7); },
       CUMEM_ERROR_INVALID_ARGUMENT, "options->granularity 7"},
      {[](cumem_virtual_resource_options_t& o) { o.handle_types = 2; },
       CUMEM_ERROR_INVALID_ARGUMENT, "options->handle_types 2"},
      {[](cumem_virtual_resource_options_t& o) { o.alignment = 3 * kGranule; },
       CUMEM_ERROR_INVALID_ARGUMENT, "options->alignment"},
      {[](cumem_virtual_resource_options_t& o) { o.address_hint = 4096; },
       CUMEM_ERROR_INVALID_ARGUMENT, "options->address_hint"},
      {[](cumem_virtual_resource_options_t& o) { o.peer_count = 2; },
       CUMEM_ERROR_INVALID_ARGUMENT, "options->peers is NULL"},
      {[](cumem_virtual_resource_options_t& o) {
         static const int32_t bad[] = {9};
         o.peers = bad;
         o.peer_count = 1;
       },
       CUMEM_ERROR_NO_DEVICE, "device 9"},
      {[](cumem_virtual_resource_options_t& o) { o.handle_types |= CUMEM_IPC_HANDLE_FABRIC; },
       CUMEM_ERROR_NOT_SUPPORTED, "FABRIC handles are not usable"},
  };
  for (const Case& c : cases) {
    cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
    o.granularity = CUMEM_GRANULARITY_MINIMUM;
    o.handle_types = CUMEM_IPC_HANDLE_POSIX_FD;
    c.tune(o);
    cumem_resource_t* r = nullptr;
    CUMEM_EXPECT_ERROR(cumem_virtual_resource_create(device, &o, &r), c.status, c.says);
    EXPECT_EQ(r, nullptr);
  }
  EXPECT_EQ(fake.counts().live_handles, 0u) << "the FABRIC probe made nothing that stays";

  // The struct_size rules, as for every options struct.
  cumem_virtual_resource_options_t zero;
  std::memset(&zero, 0, sizeof zero);
  cumem_resource_t* r = nullptr;
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_create(device, &zero, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "cumem_virtual_resource_options_init()");
  struct {
    cumem_virtual_resource_options_t known;
    uint64_t newer;
  } larger = {CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT, 1};
  larger.known.struct_size = sizeof larger;
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_create(device, &larger.known, &r),
                     CUMEM_ERROR_NOT_SUPPORTED, "larger than this library's");
  cumem_virtual_resource_options_t older = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  older.struct_size = offsetof(cumem_virtual_resource_options_t, address_hint);  // an older caller
  older.granularity = CUMEM_GRANULARITY_MINIMUM;
  CUMEM_ASSERT_OK(cumem_virtual_resource_create(device, &older, &r));
  EXPECT_EQ(vstats(r).granularity, kGranule);
  cumem_resource_release(r);
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0);
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_create(device, nullptr, &r), CUMEM_ERROR_NOT_SUPPORTED,
                     "does not support virtual memory management");
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, -2);
}

TEST_F(VirtualTest, SizesThatAreNotMultiplesOfTheGranularityWork) {
  cumem_resource_t* r = make(4 * kGranule);
  for (size_t size : {size_t{1}, size_t{100}, kGranule - 1, kGranule + 1, 5 * kGranule + 3}) {
    SCOPED_TRACE(size);
    cumem_buffer_t* b = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, size, stream, &b));
    const size_t rounded = (size + kGranule - 1) / kGranule * kGranule;
    EXPECT_EQ(size_of(b), size);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes(b)) % kGranule, 0u);
    const cumem_virtual_statistics_t s = vstats(r);
    EXPECT_EQ(s.bytes_mapped, rounded);
    EXPECT_EQ(s.bytes_reserved, 2 * rounded) << "twice the rounded size: room to grow in place";
    CUMEM_ASSERT_OK(cumem_buffer_fill(b, 0xAB, 1, stream));
    EXPECT_EQ(bytes(b)[size - 1], 0xAB);
    EXPECT_EQ(statistics_of(r).bytes_in_use, size) << "the statistics count the size asked for";
    CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
    cumem_buffer_release(b);
    EXPECT_EQ(vstats(r).bytes_mapped, 0u) << "an idle stream frees at once";
  }
  EXPECT_EQ(fake.counts().creates, fake.counts().releases);
  cumem_resource_release(r);
}

TEST_F(VirtualTest, AFreeOnABusyStreamWaitsForItsWork) {
  cumem_resource_t* r = make();
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 3 * kGranule, stream, &b));
  unsigned char* p = bytes(b);
  fake.busy_stream(native(stream));  // a kernel still uses the buffer
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  cumem_buffer_release(b);
  EXPECT_EQ(statistics_of(r).bytes_in_use, 0u) << "counted as freed when enqueued";
  EXPECT_EQ(vstats(r).bytes_pending, 3 * kGranule);
  p[3 * kGranule - 1] = 1;  // still mapped: the kernel's late writes land safely
  EXPECT_EQ(fake.counts().unmaps, 0u);
  // Nothing is released before the stream's work is done, whatever is called.
  cumem_buffer_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, kGranule, nullptr, &other));
  EXPECT_EQ(vstats(r).bytes_pending, 3 * kGranule);
  fake.finish_stream(native(stream));
  CUMEM_ASSERT_OK(cumem_buffer_close(other, nullptr));  // the next call reclaims
  cumem_buffer_release(other);
  const cumem_virtual_statistics_t s = vstats(r);
  EXPECT_EQ(s.bytes_pending, 0u);
  EXPECT_EQ(s.bytes_mapped, 0u);
  EXPECT_EQ(fake.counts().live_handles, 0u);

  // release_pending waits for the work itself.
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, kGranule, stream, &b));
  fake.busy_stream(native(stream));
  CUMEM_ASSERT_OK(cumem_buffer_close(b, nullptr));  // NULL: the deallocation stream, `stream`
  cumem_buffer_release(b);
  EXPECT_EQ(vstats(r).bytes_pending, kGranule);
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
  EXPECT_EQ(vstats(r).bytes_pending, 0u);
  cumem_resource_release(r);
}

TEST_F(VirtualTest, ReleasingTheResourceWaitsForPendingFrees) {
  cumem_resource_t* r = make();
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, kGranule, stream, &b));
  fake.busy_stream(native(stream));
  cumem_buffer_release(b);  // closes on the deallocation stream
  EXPECT_EQ(fake.counts().live_handles, 1u);
  cumem_resource_release(r);
  // TearDown: nothing is left.
}

TEST_F(VirtualTest, GrowsInPlaceThenMovesWithTheSameChunksAndContents) {
  cumem_resource_t* r = make(2 * kGranule);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 3 * kGranule, stream, &b));
  unsigned char* first = bytes(b);
  pattern(first, 3 * kGranule, 1);
  // Within the reservation (twice the size): same address.
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 5 * kGranule + 10, stream));
  EXPECT_EQ(bytes(b), first);
  EXPECT_EQ(size_of(b), 5 * kGranule + 10);
  EXPECT_TRUE(has_pattern(first, 3 * kGranule, 1));
  EXPECT_EQ(vstats(r).grows_in_place, 1u);
  EXPECT_EQ(statistics_of(r).bytes_in_use, 5 * kGranule + 10);
  EXPECT_EQ(statistics_of(r).total_allocations, 1u) << "a resize is not an allocation";
  // Past it: the driver gives the addresses right after (the fake does).
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 9 * kGranule, stream));
  EXPECT_EQ(bytes(b), first);
  EXPECT_EQ(vstats(r).grows_in_place, 2u);
  pattern(first, 9 * kGranule, 2);
  // The addresses after it are taken: the buffer moves, its chunks with it.
  fake.refuse_hints(true);
  const FakeVmmCounts before = fake.counts();
  fake.busy_stream(native(stream));  // work queued before the resize uses the old address
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 30 * kGranule, stream));
  unsigned char* moved = bytes(b);
  EXPECT_NE(moved, first);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(moved) % kGranule, 0u);
  EXPECT_TRUE(has_pattern(moved, 9 * kGranule, 2)) << "no copy, the same physical memory";
  EXPECT_EQ(fake.counts().creates - before.creates, 11u) << "only the 21 new granules: 11 chunks";
  EXPECT_EQ(vstats(r).grows_moved, 1u);
  first[0] = 0x5A;  // the old addresses are still mapped: queued work finishes safely
  EXPECT_EQ(moved[0], 0x5A) << "and they are the same memory";
  fake.finish_stream(native(stream));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
  EXPECT_EQ(fake.access_of(first, 0), -1) << "the old addresses are gone once the work is done";
  EXPECT_EQ(moved[0], 0x5A);
  EXPECT_EQ(vstats(r).bytes_mapped, 30 * kGranule);
  EXPECT_EQ(vstats(r).bytes_reserved, 60 * kGranule);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  cumem_buffer_release(b);
  cumem_resource_release(r);
}

TEST_F(VirtualTest, ShrinkingGivesWholeChunksBack) {
  cumem_resource_t* r = make(kGranule);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 16 * kGranule, stream, &b));
  unsigned char* p = bytes(b);
  pattern(p, 16 * kGranule, 3);
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, kGranule + 100, stream));
  EXPECT_EQ(bytes(b), p) << "a shrink keeps the address";
  EXPECT_EQ(vstats(r).bytes_mapped, 2 * kGranule);
  EXPECT_EQ(fake.counts().live_handles, 2u) << "14 of 16 chunks released";
  EXPECT_TRUE(has_pattern(p, kGranule + 100, 3));
  EXPECT_EQ(statistics_of(r).bytes_in_use, kGranule + 100);
  EXPECT_EQ(vstats(r).shrinks, 1u);

  // On a busy stream the tail stays mapped until the work is done; growing
  // over it first waits for that work.
  fake.busy_stream(native(stream));
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, kGranule, stream));
  EXPECT_EQ(vstats(r).bytes_pending, kGranule);
  p[kGranule + 5] = 1;  // still mapped
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 4 * kGranule, stream));
  EXPECT_EQ(vstats(r).bytes_pending, 0u);
  EXPECT_EQ(vstats(r).bytes_mapped, 4 * kGranule);
  EXPECT_TRUE(has_pattern(p, kGranule, 3));

  // A bigger chunk size: the new end inside a chunk keeps that chunk.
  cumem_buffer_release(b);
  cumem_resource_release(r);
  r = make(4 * kGranule);
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 8 * kGranule, stream, &b));
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 2 * kGranule, stream));
  EXPECT_EQ(vstats(r).bytes_mapped, 4 * kGranule) << "the first 4-granule chunk stays whole";
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 5 * kGranule, stream));
  EXPECT_EQ(vstats(r).bytes_mapped, 5 * kGranule);
  cumem_buffer_release(b);
  cumem_resource_release(r);
}

// A chunk of a shrink's tail that the driver refuses to unmap stays mapped
// for good: growing the buffer over it moves the buffer to a new range
// (contents kept) instead of failing on the address still mapped.
TEST_F(VirtualTest, GrowingOverATailTheDriverRefusedToUnmapMovesTheBuffer) {
  cumem_resource_t* r = make(kGranule);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 4 * kGranule, stream, &b));
  unsigned char* p = bytes(b);
  pattern(p, 4 * kGranule, 9);
  fake.fail("cuMemUnmap", 1, CUDA_ERROR_UNKNOWN);
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, kGranule, stream));  // the failure goes to the log
  EXPECT_EQ(bytes(b), p);
  EXPECT_EQ(vstats(r).bytes_mapped, kGranule);
  EXPECT_EQ(fake.access_of(p + kGranule, 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      << "the refused chunk is still mapped";
  EXPECT_EQ(fake.access_of(p + 2 * kGranule, 0), -1) << "the others were unmapped";
  // Unmapped behind the library's back (whose books still say it is), so
  // that the old range's address space can go when the buffer moves and
  // the test ends with nothing live.
  EXPECT_EQ(fake.unmap_at(p + kGranule), CUDA_SUCCESS);
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 3 * kGranule, stream));
  EXPECT_NE(bytes(b), p) << "moved: the old range's second chunk cannot be mapped again";
  EXPECT_TRUE(has_pattern(bytes(b), kGranule, 9));
  EXPECT_EQ(vstats(r).bytes_mapped, 3 * kGranule);
  cumem_buffer_release(b);
  cumem_resource_release(r);
}

TEST_F(VirtualTest, ResizeRefusesWhatWouldLeaveViewsBehind) {
  cumem_resource_t* r = make();
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, kGranule, stream, &b));
  cumem_buffer_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(b, 0, 10, &s));
  CUMEM_EXPECT_ERROR(cumem_buffer_resize(b, 2 * kGranule, stream), CUMEM_ERROR_INVALID_STATE,
                     "1 slice views this buffer");
  CUMEM_EXPECT_ERROR(cumem_buffer_resize(s, 20, stream), CUMEM_ERROR_NOT_SUPPORTED,
                     "a slice cannot be resized");
  cumem_buffer_release(s);
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 2 * kGranule, stream));
  CUMEM_EXPECT_ERROR(cumem_buffer_resize(b, 0, stream), CUMEM_ERROR_INVALID_ARGUMENT,
                     "close it instead");
  EXPECT_EQ(size_of(b), 2 * kGranule);
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 2 * kGranule, stream));  // the same size: nothing
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  CUMEM_EXPECT_ERROR(cumem_buffer_resize(b, kGranule, stream), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  cumem_buffer_release(b);

  // An empty buffer grows into a new allocation.
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 0, stream, &b));
  EXPECT_EQ(bytes(b), nullptr);
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 3 * kGranule, stream));
  EXPECT_NE(bytes(b), nullptr);
  EXPECT_EQ(statistics_of(r).live_allocations, 1u);
  cumem_buffer_release(b);
  EXPECT_EQ(statistics_of(r).live_allocations, 0u);
  cumem_resource_release(r);
}

TEST_F(VirtualTest, RawFreesMustNameAnAllocationWithItsSize) {
  cumem_resource_t* r = make();
  void* p = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 3 * kGranule, nullptr, &p));
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(r, p, kGranule, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "the allocation there has 196608 bytes");
  CUMEM_EXPECT_ERROR(cumem_resource_deallocate_raw(r, static_cast<char*>(p) + kGranule, kGranule, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "no allocation of");
  EXPECT_EQ(statistics_of(r).live_allocations, 1u) << "refused frees change nothing";
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(r, p, 3 * kGranule, nullptr));
  cumem_resource_release(r);
}

TEST_F(VirtualTest, OutOfMemoryWaitsForPendingFreesFirst) {
  fake.set_memory(8 * kGranule);
  cumem_resource_t* r = make();
  cumem_buffer_t* b = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate(r, 9 * kGranule, stream, &b), CUMEM_ERROR_OUT_OF_MEMORY,
                     "more than all of device 0 memory");
  CUMEM_EXPECT_ERROR(cumem_resource_allocate(r, size_t{1} << 50, stream, &b),
                     CUMEM_ERROR_OUT_OF_MEMORY, "1125899906842624 bytes");
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 6 * kGranule, stream, &b));
  fake.busy_stream(native(stream));
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  cumem_buffer_release(b);
  EXPECT_EQ(vstats(r).bytes_pending, 6 * kGranule);
  // 6 more granules fit only once the pending free is done: waited for.
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 6 * kGranule, nullptr, &b));
  EXPECT_EQ(vstats(r).bytes_pending, 0u);
  // Growing past what is free is refused, and the buffer stays as it was.
  pattern(bytes(b), 6 * kGranule, 4);
  cumem_buffer_t* c = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, kGranule, nullptr, &c));
  CUMEM_EXPECT_ERROR(cumem_buffer_resize(b, 8 * kGranule, nullptr), CUMEM_ERROR_OUT_OF_MEMORY,
                     "cannot grow a buffer of 393216 bytes");
  EXPECT_NE(std::string(cumem_last_error_message()).find("cuMemCreate"), std::string::npos)
      << cumem_last_error_message();
  EXPECT_EQ(size_of(b), 6 * kGranule);
  EXPECT_TRUE(has_pattern(bytes(b), 6 * kGranule, 4));
  EXPECT_EQ(vstats(r).bytes_mapped, 7 * kGranule);
  CUMEM_EXPECT_ERROR(cumem_buffer_resize(b, 9 * kGranule, nullptr), CUMEM_ERROR_OUT_OF_MEMORY,
                     "more than all of device 0 memory");
  cumem_buffer_release(c);
  cumem_buffer_release(b);
  cumem_resource_release(r);
}

TEST_F(VirtualTest, PeerAccessCoversEveryBufferPresentAndFuture) {
  cumem_resource_t* r = make();
  cumem_buffer_t* a = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 2 * kGranule, stream, &a));
  cumem_access_t got = CUMEM_ACCESS_READ_WRITE;
  CUMEM_ASSERT_OK(cumem_virtual_resource_get_access(r, peer, &got));
  EXPECT_EQ(got, CUMEM_ACCESS_NONE);
  CUMEM_ASSERT_OK(cumem_virtual_resource_get_access(r, device, &got));
  EXPECT_EQ(got, CUMEM_ACCESS_READ_WRITE);
  CUMEM_ASSERT_OK(cumem_virtual_resource_set_access(r, peer, CUMEM_ACCESS_READ));
  EXPECT_EQ(fake.access_of(bytes(a) + kGranule, 1), CU_MEM_ACCESS_FLAGS_PROT_READ);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, kGranule, stream, &b));
  EXPECT_EQ(fake.access_of(bytes(b), 1), CU_MEM_ACCESS_FLAGS_PROT_READ) << "a new buffer";
  CUMEM_ASSERT_OK(cumem_buffer_resize(a, 4 * kGranule, stream));
  EXPECT_EQ(fake.access_of(bytes(a) + 3 * kGranule, 1), CU_MEM_ACCESS_FLAGS_PROT_READ)
      << "a newly mapped part";
  CUMEM_ASSERT_OK(cumem_virtual_resource_get_access(r, peer, &got));
  EXPECT_EQ(got, CUMEM_ACCESS_READ);

  // All or nothing: the second buffer's change fails, the first gets its
  // read access back.
  fake.fail("cuMemSetAccess", 2, CUDA_ERROR_UNKNOWN);
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_set_access(r, peer, CUMEM_ACCESS_READ_WRITE),
                     CUMEM_ERROR_DRIVER, "cuMemSetAccess");
  EXPECT_EQ(fake.access_of(bytes(a), 1), CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(fake.access_of(bytes(b), 1), CU_MEM_ACCESS_FLAGS_PROT_READ);
  CUMEM_ASSERT_OK(cumem_virtual_resource_get_access(r, peer, &got));
  EXPECT_EQ(got, CUMEM_ACCESS_READ);

  CUMEM_ASSERT_OK(cumem_virtual_resource_set_access(r, peer, CUMEM_ACCESS_NONE));
  EXPECT_EQ(fake.access_of(bytes(a), 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_set_access(r, device, CUMEM_ACCESS_READ),
                     CUMEM_ERROR_INVALID_ARGUMENT, "from the device it is made for");
  CUMEM_ASSERT_OK(cumem_virtual_resource_set_access(r, device, CUMEM_ACCESS_READ_WRITE));
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_set_access(r, peer, static_cast<cumem_access_t>(2)),
                     CUMEM_ERROR_INVALID_ARGUMENT, "is not a cumem_access_t");
  cumem_buffer_release(a);
  cumem_buffer_release(b);
  cumem_resource_release(r);

  // Peers in the options, read only.
  r = make(kGranule, [](cumem_virtual_resource_options_t& o) {
    static const int32_t peers[] = {1, 0};  // the device itself is skipped
    o.peers = peers;
    o.peer_count = 2;
    o.peers_read_only = CUMEM_TRUE;
  });
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, kGranule, stream, &a));
  EXPECT_EQ(fake.access_of(bytes(a), 1), CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(fake.access_of(bytes(a), 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  cumem_buffer_release(a);
  cumem_resource_release(r);
}

// cuda.core's VMM bug classes, each its own regression test (host side).

// Physical handles were never released: 64 x 64 MiB allocate + close held
// 4 GiB. Here the fake has 256 MiB: a leaked chunk would run out by the 5th.
TEST_F(VirtualTest, RegressionAllocateCloseReleasesThePhysicalMemory) {
  fake.set_memory(uint64_t{256} << 20);
  cumem_resource_t* r = make(size_t{64} << 20);
  for (int i = 0; i < 64; ++i) {
    cumem_buffer_t* b = nullptr;
    SCOPED_TRACE("cycle " + std::to_string(i));
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, size_t{64} << 20, stream, &b));
    CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
    cumem_buffer_release(b);
    ASSERT_EQ(fake.counts().live_bytes, 0u) << "cycle " << i;
  }
  EXPECT_EQ(fake.counts().creates, 64u);
  EXPECT_EQ(fake.counts().releases, 64u);
  cumem_resource_release(r);
}

// Grow extensions that could not be freed: every chunk a grow adds goes
// with the buffer, whichever way it grew.
TEST_F(VirtualTest, RegressionGrowExtensionsAreFreedWithTheBuffer) {
  cumem_resource_t* r = make(kGranule);
  for (bool move : {false, true}) {
    fake.refuse_hints(move);
    cumem_buffer_t* b = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, kGranule, stream, &b));
    for (size_t n = 2; n <= 12; n += 3) CUMEM_ASSERT_OK(cumem_buffer_resize(b, n * kGranule, stream));
    CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
    cumem_buffer_release(b);
    const FakeVmmCounts c = fake.counts();
    EXPECT_EQ(c.live_handles, 0u) << (move ? "moved" : "in place");
    EXPECT_EQ(c.live_reservations, 0u) << (move ? "moved" : "in place");
    EXPECT_EQ(c.creates, c.releases);
  }
  cumem_resource_release(r);
}

// A grow that failed half-way lost the access rights: every failing step of
// a grow, in place and moving, leaves the buffer with its size, address,
// contents and every device's access.
TEST_F(VirtualTest, RegressionAFailedGrowKeepsAccessAndContents) {
  cumem_resource_t* r = make(kGranule, [](cumem_virtual_resource_options_t& o) {
    static const int32_t peers[] = {1};
    o.peers = peers;
    o.peer_count = 1;
  });
  struct Step {
    const char* call;
    unsigned nth;
    bool move;
  };
  const Step steps[] = {
      {"cuMemCreate", 1, false},        {"cuMemMap", 2, false},
      {"cuMemSetAccess", 1, false},     {"cuMemAddressReserve", 3, true},  // 1, 2: in place
      {"cuMemMap", 3, true},            {"cuMemSetAccess", 2, true},
      {"cuMemCreate", 2, true},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(std::string(s.call) + " #" + std::to_string(s.nth) + (s.move ? " moving" : " in place"));
    cumem_buffer_t* b = nullptr;
    CUMEM_ASSERT_OK(cumem_resource_allocate(r, 3 * kGranule, stream, &b));
    unsigned char* p = bytes(b);
    pattern(p, 3 * kGranule, 5);
    fake.refuse_hints(s.move);
    const FakeVmmCounts before = fake.counts();
    fake.fail(s.call, s.nth, CUDA_ERROR_OUT_OF_MEMORY);
    const size_t target = s.move ? 20 * kGranule : 5 * kGranule;
    EXPECT_EQ(cumem_buffer_resize(b, target, stream), CUMEM_ERROR_OUT_OF_MEMORY)
        << cumem_last_error_message();
    fake.fail(nullptr, 0, CUDA_SUCCESS);
    EXPECT_EQ(size_of(b), 3 * kGranule);
    EXPECT_EQ(bytes(b), p);
    EXPECT_TRUE(has_pattern(p, 3 * kGranule, 5));
    for (size_t g = 0; g < 3; ++g) {
      EXPECT_EQ(fake.access_of(p + g * kGranule, 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
      EXPECT_EQ(fake.access_of(p + g * kGranule, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
          << "the peer keeps its access";
    }
    const FakeVmmCounts after = fake.counts();
    EXPECT_EQ(after.live_handles, before.live_handles);
    EXPECT_EQ(after.live_mappings, before.live_mappings);
    // And the next grow works, with the peer's access on the new part too.
    CUMEM_ASSERT_OK(cumem_buffer_resize(b, target, stream));
    EXPECT_EQ(fake.access_of(bytes(b) + target - kGranule, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    EXPECT_TRUE(has_pattern(bytes(b), 3 * kGranule, 5));
    cumem_buffer_release(b);
  }
  fake.refuse_hints(false);
  cumem_resource_release(r);
}

// Grow sizes that were not multiples of the granularity leaked the
// remainder: any sequence of unaligned sizes maps exactly the rounded size
// and gives all of it back.
TEST_F(VirtualTest, RegressionUnalignedGrowSizesDoNotLeak) {
  cumem_resource_t* r = make(kGranule);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 1, stream, &b));
  const size_t sizes[] = {kGranule + 1, 3 * kGranule - 1, 7, 9 * kGranule + 4097, 2 * kGranule + 1,
                          31 * kGranule + 5, 100};
  for (size_t size : sizes) {
    CUMEM_ASSERT_OK(cumem_buffer_resize(b, size, stream));
    EXPECT_EQ(vstats(r).bytes_mapped, (size + kGranule - 1) / kGranule * kGranule) << size;
    EXPECT_EQ(statistics_of(r).bytes_in_use, size);
  }
  cumem_buffer_release(b);
  EXPECT_EQ(fake.counts().creates, fake.counts().releases);
  cumem_resource_release(r);
}

// Memory was unmapped before the stream's work was done: a close, a move
// and a shrink on a busy stream all keep the memory mapped until the work
// ends (the gpu suite runs a real kernel: test_virtual_gpu.cpp).
TEST_F(VirtualTest, RegressionNothingIsUnmappedBeforeTheStreamsWork) {
  cumem_resource_t* r = make(kGranule);
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 4 * kGranule, stream, &b));
  unsigned char* old = bytes(b);
  fake.busy_stream(native(stream));
  fake.refuse_hints(true);
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 40 * kGranule, stream));  // moves
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, kGranule, stream));       // shrinks
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));                  // frees
  cumem_buffer_release(b);
  EXPECT_EQ(fake.counts().unmaps, 0u) << "nothing unmapped while the stream is busy";
  old[4 * kGranule - 1] = 9;  // the kernel's writes through the first address land
  fake.finish_stream(native(stream));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
  EXPECT_EQ(fake.counts().live_mappings, 0u);
  cumem_resource_release(r);
}

// The host version of the 10,000-cycle test: random allocate, grow, shrink
// and close on random streams, some busy, with failures injected; at the
// end nothing is held (TearDown).
TEST_F(VirtualTest, TenThousandRandomCyclesLeaveNothingBehind) {
  cumem_resource_t* r = make(2 * kGranule);
  cumem_stream_t* other = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &other));
  std::mt19937 rng(18);
  std::vector<cumem_buffer_t*> live;
  const char* calls[] = {"cuMemCreate", "cuMemMap", "cuMemSetAccess", "cuMemAddressReserve"};
  for (int cycle = 0; cycle < 10000; ++cycle) {
    cumem_stream_t* s = rng() % 2 ? stream : other;
    if (rng() % 8 == 0) fake.busy_stream(native(s));
    if (rng() % 16 == 0) fake.finish_stream(native(rng() % 2 ? stream : other));
    if (rng() % 50 == 0) fake.fail(calls[rng() % 4], 1, CUDA_ERROR_OUT_OF_MEMORY);
    fake.refuse_hints(rng() % 3 == 0);
    const unsigned op = live.empty() ? 0 : rng() % 4;
    const size_t size = 1 + rng() % (24 * kGranule);
    cumem_status_t status = CUMEM_SUCCESS;
    if (op == 0) {
      cumem_buffer_t* b = nullptr;
      status = cumem_resource_allocate(r, size, s, &b);
      if (status == CUMEM_SUCCESS) live.push_back(b);
    } else if (op == 3) {
      const size_t i = rng() % live.size();
      status = cumem_buffer_close(live[i], s);
      cumem_buffer_release(live[i]);
      live.erase(live.begin() + static_cast<long>(i));
    } else {
      status = cumem_buffer_resize(live[rng() % live.size()], size, s);
    }
    ASSERT_TRUE(status == CUMEM_SUCCESS || status == CUMEM_ERROR_OUT_OF_MEMORY)
        << "cycle " << cycle << ": " << cumem_last_error_message();
  }
  fake.fail(nullptr, 0, CUDA_SUCCESS);
  for (cumem_buffer_t* b : live) cumem_buffer_release(b);
  fake.finish_stream(native(stream));
  fake.finish_stream(native(other));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(r));
  const cumem_virtual_statistics_t s = vstats(r);
  EXPECT_EQ(s.bytes_mapped, 0u);
  EXPECT_EQ(s.bytes_reserved, 0u);
  EXPECT_EQ(statistics_of(r).bytes_in_use, 0u);
  EXPECT_EQ(statistics_of(r).live_allocations, 0u);
  EXPECT_GT(s.grows_moved, 0u);
  EXPECT_GT(s.grows_in_place, 0u);
  EXPECT_GT(s.shrinks, 0u);
  const FakeVmmCounts c = fake.counts();
  EXPECT_EQ(c.creates, c.releases) << "every create has its release";
  EXPECT_EQ(s.chunks_created, c.creates) << "the resource counts what the driver made";
  EXPECT_EQ(s.chunks_released, c.releases);
  EXPECT_EQ(c.reserves, c.frees);
  EXPECT_EQ(c.maps, c.unmaps);
  cumem_stream_release(other);
  cumem_resource_release(r);
}

TEST_F(VirtualTest, NullOutPointersWithLiveVirtualObjects) {
  cumem_resource_t* r = make();
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, kGranule, stream, &b));
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_create(device, nullptr, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'out_resource'");
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_get_access(r, peer, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'out_access'");
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_get_access(r, nullptr, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'peer'");
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_set_access(r, nullptr, CUMEM_ACCESS_READ),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'peer'");
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_get_statistics(r, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'stats'");
  CUMEM_EXPECT_ERROR(cumem_buffer_get_virtual_ipc_handle(b, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'out_handle'");
  cumem_virtual_ipc_handle_t* h = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_get_virtual_ipc_handle(b, &h));
  CUMEM_EXPECT_ERROR(cumem_virtual_ipc_handle_fd_count(h, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'out_count'");
  CUMEM_EXPECT_ERROR(cumem_virtual_ipc_handle_fd(h, 0, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'out_fd'");
  CUMEM_EXPECT_ERROR(cumem_virtual_ipc_handle_descriptor(h, nullptr, 0, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'out_length'");
  size_t length = 0;
  CUMEM_EXPECT_ERROR(cumem_virtual_ipc_handle_descriptor(h, nullptr, 4, &length),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'bytes'");
  CUMEM_EXPECT_ERROR(cumem_buffer_from_virtual_ipc_handle(device, nullptr, nullptr, &b),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'handle'");
  CUMEM_EXPECT_ERROR(cumem_buffer_from_virtual_ipc_handle(device, h, nullptr, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'out_buffer'");
  cumem_virtual_ipc_handle_release(h);
  cumem_buffer_release(b);
  cumem_resource_release(r);
}

}  // namespace
