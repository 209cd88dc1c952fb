// cumem_buffer_get_dmabuf on the engines fake driver: every kind of device
// memory exported as its backing allocation rounded out to host pages,
// with the buffer's offset (pools, cuMemAlloc, virtual ranges whole or by
// chunk, caching segments and small blocks, expandable pages, adaptors,
// slices), and every refusal with its status and message.
#include <sys/mman.h>

#include <cstring>
#include <vector>

#include <cumem/cumem.hpp>

#include "engines_fixture.hpp"

namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// An export that succeeded, checked against the rules every export keeps
// and against what the fake driver was asked for; closes its fd.
struct Exported {
  cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
  FakeDmaBuf asked{};
  Exported() { d.fd = -1; }
  ~Exported() {
    if (d.fd >= 0) close(d.fd);
  }
};

class Dmabuf : public EnginesTest {
 protected:
  // Exports `b` and checks the invariants.
  void expect_export(const cumem_buffer_t* b, Exported& e, uint32_t flags = 0) {
    e.d.fd = -1;
    CUMEM_ASSERT_OK(cumem_buffer_get_dmabuf(b, flags, &e.d));
    ASSERT_GE(e.d.fd, 0);
    EXPECT_EQ(e.d.struct_size, sizeof(cumem_dmabuf_t));
    EXPECT_EQ(e.d.device_id, 0);
    EXPECT_EQ(e.d.address % kPage, 0u) << "the range starts at a host page";
    EXPECT_EQ(e.d.length % kPage, 0u) << "the range is whole host pages";
    size_t size = 0;
    CUMEM_ASSERT_OK(cumem_buffer_size(b, &size));
    EXPECT_LE(e.d.offset + size, e.d.length) << "the buffer lies inside the range";
    EXPECT_EQ(e.d.address + e.d.offset, address_of(b)) << "the offset is the buffer's";
    EXPECT_NE(fcntl(e.d.fd, F_GETFD) & FD_CLOEXEC, 0) << "the fd is close-on-exec";
    ASSERT_TRUE(fake.dmabuf(e.d.fd, &e.asked)) << "the fd is the driver's dma-buf";
    EXPECT_EQ(e.asked.base, e.d.address);
    EXPECT_EQ(e.asked.size, e.d.length);
    EXPECT_EQ(e.asked.flags, flags & CUMEM_DMABUF_MAPPING_PCIE ? 1u : 0u);
  }
  static uintptr_t page_down(uintptr_t v) { return v & ~(uintptr_t(kPage) - 1); }
  static uintptr_t page_up(uintptr_t v) { return (v + kPage - 1) & ~(uintptr_t(kPage) - 1); }
};

TEST_F(Dmabuf, APoolBufferIsItsAllocationRoundedOutToPagesWithItsOffset) {
  cumem_resource_t* pool = device_pool();
  // Small allocations share the driver's segments at 512-byte steps, so
  // the middle one starts inside a page.
  cumem_buffer_t* a = allocate(pool, 1000);
  cumem_buffer_t* b = allocate(pool, 1000);
  cumem_buffer_t* c = allocate(pool, 1000);
  const uintptr_t p = address_of(b);
  ASSERT_NE(p % kPage, 0u) << "the fake sub-allocates as the driver does";
  Exported e;
  expect_export(b, e);
  EXPECT_EQ(e.d.address, page_down(p));
  EXPECT_EQ(e.d.length, page_up(p + 1000) - page_down(p));
  EXPECT_EQ(e.d.offset, p - page_down(p));
  EXPECT_EQ(e.d.whole_allocation, CUMEM_TRUE);
  // A new pool's large buffer: its own segment, offset 0.
  cumem_resource_t* mine = device_pool(true);
  cumem_buffer_t* big = allocate(mine, 3 * kMiB);
  Exported f;
  expect_export(big, f);
  EXPECT_EQ(f.d.offset, 0u);
  EXPECT_EQ(f.d.length, 3 * kMiB);
  for (cumem_buffer_t* x : {a, b, c, big}) cumem_buffer_release(x);
  cumem_resource_release(mine);
  cumem_resource_release(pool);
}

TEST_F(Dmabuf, ALegacyDeviceBufferIsItsCuMemAllocAllocation) {
  cumem_resource_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &legacy));
  cumem_buffer_t* first = allocate(legacy, 700);
  cumem_buffer_t* b = allocate(legacy, 5000);
  const uintptr_t p = address_of(b);
  Exported e;
  expect_export(b, e);
  EXPECT_EQ(e.d.address, page_down(p));
  EXPECT_EQ(e.d.length, page_up(p + 5000) - page_down(p));
  cumem_buffer_release(first);
  cumem_buffer_release(b);
  cumem_resource_release(legacy);
}

TEST_F(Dmabuf, ASliceIsItsRootsAllocationWithTheSlicesOffset) {
  cumem_resource_t* pool = device_pool(true);
  cumem_buffer_t* b = allocate(pool, 4 * kMiB);
  cumem_buffer_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(b, 3 * kMiB + 100, 4096, &s));
  cumem_buffer_t* ss = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(s, 8, 16, &ss));
  Exported whole, part, inner;
  expect_export(b, whole);
  expect_export(s, part);
  expect_export(ss, inner);
  EXPECT_EQ(part.d.address, whole.d.address) << "the same backing allocation";
  EXPECT_EQ(part.d.length, whole.d.length);
  EXPECT_EQ(part.d.offset, 3 * kMiB + 100);
  EXPECT_EQ(inner.d.offset, 3 * kMiB + 108);
  cumem_buffer_release(ss);
  cumem_buffer_release(s);
  cumem_buffer_release(b);
  cumem_resource_release(pool);
}

TEST_F(Dmabuf, ACachedBlockIsItsWholeSegmentNeverOffsetZero) {
  cumem_resource_t* pool = device_pool();
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
  // Two large blocks split from one 20 MiB segment.
  cumem_buffer_t* a = allocate(cache, 3 * kMiB);
  cumem_buffer_t* b = allocate(cache, 3 * kMiB);
  Exported ea, eb;
  expect_export(a, ea);
  expect_export(b, eb);
  EXPECT_EQ(ea.d.address, eb.d.address) << "both blocks are in one segment";
  EXPECT_EQ(ea.d.length, size_t{20} << 20) << "the whole segment";
  EXPECT_NE(ea.d.offset, eb.d.offset);
  EXPECT_EQ(eb.d.offset, address_of(b) - ea.d.address);
  EXPECT_GT(eb.d.offset, 0u) << "the second block is not at the segment's start";
  // A small block is an upstream allocation of its own.
  cumem_buffer_t* small = allocate(cache, 1000);
  Exported es;
  expect_export(small, es);
  EXPECT_LE(es.d.length, 2 * kPage);
  // Freed and reused: the same answer for the block handed out again.
  const uintptr_t where = address_of(b);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  cumem_buffer_release(b);
  b = allocate(cache, 3 * kMiB);
  ASSERT_EQ(address_of(b), where);
  Exported again;
  expect_export(b, again);
  EXPECT_EQ(again.d.offset, eb.d.offset);
  for (cumem_buffer_t* x : {a, b, small}) cumem_buffer_release(x);
  cumem_resource_release(cache);
  cumem_resource_release(pool);
}

TEST_F(Dmabuf, AdaptorsPassTheQuestionToTheirUpstream) {
  cumem_resource_t* pool = device_pool(true);
  cumem_resource_t* tracking = nullptr;
  CUMEM_ASSERT_OK(cumem_tracking_resource_create(pool, CUMEM_FALSE, &tracking));
  cumem_resource_t* limit = nullptr;
  CUMEM_ASSERT_OK(cumem_limit_resource_create(tracking, 64 * kMiB, &limit));
  cumem_resource_t* aligned = nullptr;
  CUMEM_ASSERT_OK(cumem_aligned_resource_create(limit, 65536, &aligned));
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(aligned, &cache));
  // The aligned adaptor pads once the pool hands out a misaligned address:
  // a small allocation first.
  cumem_buffer_t* odd = allocate(aligned, 1000);
  cumem_buffer_t* padded = allocate(aligned, 1000);
  EXPECT_EQ(address_of(padded) % 65536, 0u);
  Exported e;
  expect_export(padded, e);
  EXPECT_EQ(e.d.length % kPage, 0u);
  EXPECT_GE(e.d.length, 1000 + 65535 - kPage) << "the pool's padded allocation";
  // A block of the cache over the whole chain: its segment, found by the
  // pool at the bottom.
  cumem_buffer_t* block = allocate(cache, 5 * kMiB);
  Exported f;
  expect_export(block, f);
  EXPECT_GE(f.d.length, size_t{20} << 20);
  for (cumem_buffer_t* x : {odd, padded, block}) cumem_buffer_release(x);
  for (cumem_resource_t* r : {cache, aligned, limit, tracking, pool}) cumem_resource_release(r);
}

TEST_F(Dmabuf, AVirtualBufferIsItsWholeMappedRangeNotTheDriversOneChunk) {
  cumem_resource_t* vr = virtual_resource(2 * kMiB);
  cumem_buffer_t* b = allocate(vr, 7 * kMiB);  // 4 chunks of 2 MiB
  Exported e;
  expect_export(b, e);
  EXPECT_EQ(e.d.address, address_of(b));
  EXPECT_EQ(e.d.length, 8 * kMiB) << "every chunk, not the one cuMemGetAddressRange names";
  EXPECT_EQ(e.d.offset, 0u);
  EXPECT_EQ(e.d.whole_allocation, CUMEM_TRUE);
  // Grown in place: a new export covers the new chunks.
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 11 * kMiB, stream));
  Exported g;
  expect_export(b, g);
  EXPECT_EQ(g.d.length, 12 * kMiB);
  cumem_buffer_release(b);
  cumem_resource_release(vr);
}

TEST_F(Dmabuf, WhereTheDriverRefusesSeveralChunksTheChunksHoldingTheBufferGo) {
  fake.refuse_multi_chunk(true);
  cumem_resource_t* vr = virtual_resource(2 * kMiB);
  cumem_buffer_t* b = allocate(vr, 8 * kMiB);
  // A slice inside the third chunk: that chunk alone.
  cumem_buffer_t* s = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(b, 4 * kMiB + 4096, 8192, &s));
  Exported e;
  expect_export(s, e);
  EXPECT_EQ(e.d.whole_allocation, CUMEM_FALSE);
  EXPECT_EQ(e.d.address, address_of(b) + 4 * kMiB);
  EXPECT_EQ(e.d.length, 2 * kMiB);
  EXPECT_EQ(e.d.offset, 4096u);
  EXPECT_EQ(fake.counts().dmabuf_refusals, 1u) << "the whole range was asked for first";
  // A buffer over several chunks has nothing smaller that holds it.
  cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
  d.fd = -7;
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, 0, &d), CUMEM_ERROR_DRIVER,
                     "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(d.fd, -7) << "nothing written on failure";
  cumem_buffer_t* across = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(b, 2 * kMiB - 8, 16, &across));
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(across, 0, &d), CUMEM_ERROR_DRIVER,
                     "takes no range over several chunks");
  EXPECT_NE(std::string(cumem_last_error_message()).find("chunk_size"), std::string::npos)
      << cumem_last_error_message();
  cumem_buffer_release(across);
  cumem_buffer_release(s);
  cumem_buffer_release(b);
  cumem_resource_release(vr);
}

TEST_F(Dmabuf, ACacheOverVirtualMemoryExportsTheVirtualRangeOfItsSegment) {
  cumem_resource_t* vr = virtual_resource(2 * kMiB);
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(vr, &cache));
  cumem_buffer_t* a = allocate(cache, 3 * kMiB);
  cumem_buffer_t* b = allocate(cache, 3 * kMiB);
  Exported e;
  expect_export(b, e);
  EXPECT_EQ(e.d.length, size_t{20} << 20) << "the segment's virtual range, all its chunks";
  EXPECT_EQ(e.d.address, address_of(a));
  EXPECT_EQ(e.d.offset, address_of(b) - address_of(a));
  cumem_buffer_release(a);
  cumem_buffer_release(b);
  cumem_resource_release(cache);
  cumem_resource_release(vr);
}

TEST_F(Dmabuf, AnExpandableBlockIsThePagesThatHoldIt) {
  cumem_resource_t* pool = device_pool();
  cumem_caching_resource_options_t co = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  co.expandable = CUMEM_TRUE;
  co.page_size = 2 * kMiB;
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create_with_options(pool, &co, &cache));
  cumem_buffer_t* a = allocate(cache, 3 * kMiB);   // pages 0-1
  cumem_buffer_t* b = allocate(cache, 1 * kMiB);   // from 3 MiB: page 1
  Exported ea, eb;
  expect_export(a, ea);
  expect_export(b, eb);
  EXPECT_EQ(ea.d.address, address_of(a));
  EXPECT_EQ(ea.d.length, 4 * kMiB);
  EXPECT_EQ(eb.d.address, address_of(a) + 2 * kMiB);
  EXPECT_EQ(eb.d.length, 2 * kMiB);
  EXPECT_EQ(eb.d.offset, kMiB);
  cumem_buffer_release(a);
  cumem_buffer_release(b);
  cumem_resource_release(cache);
  cumem_resource_release(pool);
}

TEST_F(Dmabuf, TheFlagReachesTheDriverAndItsRefusalIsNotSupported) {
  cumem_resource_t* pool = device_pool(true);
  cumem_buffer_t* b = allocate(pool, kMiB);
  cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, CUMEM_DMABUF_MAPPING_PCIE, &d),
                     CUMEM_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED");
  EXPECT_NE(std::string(cumem_last_error_message()).find("cuMemGetHandleForAddressRange"),
            std::string::npos);
  fake.allow_pcie(true);
  Exported e;
  expect_export(b, e, CUMEM_DMABUF_MAPPING_PCIE);
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, 2, &d), CUMEM_ERROR_INVALID_ARGUMENT,
                     "flags 2 include unknown bits");
  cumem_buffer_release(b);
  cumem_resource_release(pool);
}

TEST_F(Dmabuf, TheDeviceAttributeIsCheckedFirst) {
  cumem_resource_t* pool = device_pool(true);
  cumem_buffer_t* b = allocate(pool, kMiB);
  cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_device_get_properties(device, &p));
  EXPECT_EQ(p.dma_buf_supported, CUMEM_TRUE);
  vmm.set_attribute(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 0);
  CUMEM_ASSERT_OK(cumem_device_get_properties(device, &p));
  EXPECT_EQ(p.dma_buf_supported, CUMEM_FALSE);
  const uint64_t asked = fake.counts().dmabuf_exports + fake.counts().dmabuf_refusals;
  cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, 0, &d), CUMEM_ERROR_NOT_SUPPORTED,
                     "does not support dma-buf export (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0");
  vmm.set_attribute(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, -1);  // a driver that lacks it
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, 0, &d), CUMEM_ERROR_NOT_SUPPORTED,
                     "the driver does not know CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED");
  EXPECT_EQ(fake.counts().dmabuf_exports + fake.counts().dmabuf_refusals, asked)
      << "nothing was asked of the driver";
  cumem_buffer_release(b);
  cumem_resource_release(pool);
}

void free_host(void* ptr, size_t, void*) { std::free(ptr); }

TEST_F(Dmabuf, MemoryThatIsNotDeviceMemoryOfAKnownAllocationIsRefusedByName) {
  struct Case {
    const char* what;
    cumem_resource_t* resource;
    const char* says;
  };
  cumem_host_resource_options_t ho = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(&ho, &host));
  cumem_resource_t* host_cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(host, &host_cache));
  cumem_pool_options_t po = CUMEM_POOL_OPTIONS_INIT;
  cumem_resource_t* pinned = nullptr;
  CUMEM_ASSERT_OK(cumem_pinned_resource_create(device, &po, &pinned));
  cumem_resource_t* legacy_pinned = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &legacy_pinned));
  cumem_managed_resource_options_t mo = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
  cumem_resource_t* managed_pool = nullptr;
  CUMEM_ASSERT_OK(cumem_managed_resource_create(device, &mo, &managed_pool));
  mo.disable_pool = CUMEM_TRUE;
  cumem_resource_t* managed = nullptr;
  CUMEM_ASSERT_OK(cumem_managed_resource_create(device, &mo, &managed));
  cumem_resource_t* host_virtual = virtual_resource(2 * kMiB, CUMEM_LOCATION_HOST);
  cumem_resource_callbacks_t cb = CUMEM_RESOURCE_CALLBACKS_INIT;
  cb.memory_kind = CUMEM_MEMORY_DEVICE;
  cb.allocate = [](size_t size, void*, void*, void** out) -> int32_t {
    *out = std::malloc(size);
    return *out ? 0 : 1;
  };
  cb.deallocate = [](void* ptr, size_t, void*, void*) { std::free(ptr); };
  cumem_resource_t* callback = nullptr;
  CUMEM_ASSERT_OK(cumem_callback_resource_create(device, &cb, &callback));
  const Case cases[] = {
      {"host", host, "pageable host memory"},
      {"caching over host", host_cache, "pageable host memory"},
      {"pinned pool", pinned, "pinned host memory"},
      {"legacy pinned", legacy_pinned, "pinned host memory"},
      {"managed pool", managed_pool, "managed memory"},
      {"cuMemAllocManaged", managed, "managed memory"},
      {"host-located virtual", host_virtual, "pinned host memory"},
      {"device callback", callback, "does not know the driver allocations"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    cumem_buffer_t* b = allocate(c.resource, 4096);
    cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
    CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, 0, &d), CUMEM_ERROR_NOT_SUPPORTED, c.says);
    EXPECT_NE(std::string(cumem_last_error_message()).find("cumem_buffer_get_dmabuf"),
              std::string::npos) << "the message names the call";
    cumem_buffer_release(b);
  }
  // Wrapped and registered memory.
  void* raw = std::malloc(8192);
  cumem_buffer_t* wrapped = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_wrap(raw, 8192, free_host, nullptr, &wrapped));
  cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(wrapped, 0, &d), CUMEM_ERROR_NOT_SUPPORTED,
                     "wrapped memory");
  cumem_buffer_release(wrapped);
  EXPECT_EQ(fake.counts().dmabuf_exports + fake.counts().dmabuf_refusals, 0u)
      << "no refusal reached the driver";
  for (cumem_resource_t* r : {host_cache, host, pinned, legacy_pinned, managed_pool, managed,
                              host_virtual, callback})
    cumem_resource_release(r);
}

TEST_F(Dmabuf, BadArgumentsClosedAndEmptyBuffersAndShortStructs) {
  cumem_resource_t* pool = device_pool(true);
  cumem_buffer_t* b = allocate(pool, kMiB);
  cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(nullptr, 0, &d), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'buffer'");
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, 0, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'dmabuf'");
  cumem_dmabuf_t zero;
  std::memset(&zero, 0, sizeof zero);
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, 0, &zero), CUMEM_ERROR_INVALID_ARGUMENT,
                     "zero-filled");
  cumem_dmabuf_t short_struct = CUMEM_DMABUF_INIT;
  short_struct.struct_size = offsetof(cumem_dmabuf_t, offset);
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, 0, &short_struct), CUMEM_ERROR_INVALID_ARGUMENT,
                     "holds the file descriptor");
  // A larger struct from a newer caller: our fields are written.
  struct Larger {
    cumem_dmabuf_t d;
    uint64_t more;
  } larger{};
  larger.d.struct_size = sizeof larger;
  larger.more = 77;
  CUMEM_ASSERT_OK(cumem_buffer_get_dmabuf(b, 0, &larger.d));
  EXPECT_EQ(larger.d.struct_size, sizeof(cumem_dmabuf_t));
  EXPECT_EQ(larger.more, 77u);
  close(larger.d.fd);
  cumem_buffer_t* empty = allocate(pool, 0);
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(empty, 0, &d), CUMEM_ERROR_INVALID_ARGUMENT,
                     "an empty buffer");
  cumem_buffer_release(empty);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, 0, &d), CUMEM_ERROR_BUFFER_CLOSED, "closed");
  cumem_buffer_release(b);
  cumem_resource_release(pool);
}

TEST_F(Dmabuf, MemoryImportedFromAnotherProcessIsRefused) {
  // A virtual buffer exported and mapped again through its fds (what an
  // importer does); the importing side is memory of another process.
  cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  o.handle_types = CUMEM_IPC_HANDLE_POSIX_FD;
  cumem_resource_t* vr = nullptr;
  CUMEM_ASSERT_OK(cumem_virtual_resource_create(device, &o, &vr));
  cumem_buffer_t* b = allocate(vr, 2 * kMiB);
  cumem_virtual_ipc_handle_t* h = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_get_virtual_ipc_handle(b, &h));
  cumem_buffer_t* imported = nullptr;
  const cumem_status_t s = cumem_buffer_from_virtual_ipc_handle(device, h, stream, &imported);
  cumem_virtual_ipc_handle_release(h);
  if (s != CUMEM_SUCCESS) {
    cumem_buffer_release(b);
    cumem_resource_release(vr);
    GTEST_SKIP() << "this build does not map its own export: " << cumem_last_error_message();
  }
  cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(imported, 0, &d), CUMEM_ERROR_NOT_SUPPORTED,
                     "memory of another process");
  cumem_buffer_release(imported);
  cumem_buffer_release(b);
  cumem_resource_release(vr);
}

TEST_F(Dmabuf, ThousandsOfExportsLeakNoFileDescriptor) {
  cumem_resource_t* pool = device_pool();
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
  cumem_resource_t* vr = virtual_resource(2 * kMiB);
  cumem_buffer_t* buffers[] = {allocate(pool, 4096), allocate(cache, 3 * kMiB),
                               allocate(vr, 4 * kMiB)};
  const int before = open_fds();
  for (int i = 0; i < 3000; ++i) {
    cumem_dmabuf_t d = CUMEM_DMABUF_INIT;
    ASSERT_EQ(cumem_buffer_get_dmabuf(buffers[i % 3], 0, &d), CUMEM_SUCCESS)
        << cumem_last_error_message();
    ASSERT_EQ(close(d.fd), 0);
    // Refusals make no fd either.
    ASSERT_EQ(cumem_buffer_get_dmabuf(buffers[i % 3], 4, &d), CUMEM_ERROR_INVALID_ARGUMENT);
  }
  EXPECT_EQ(open_fds(), before);
  for (cumem_buffer_t* b : buffers) cumem_buffer_release(b);
  cumem_resource_release(vr);
  cumem_resource_release(cache);
  cumem_resource_release(pool);
}

TEST_F(Dmabuf, TheFacadeOwnsTheFd) {
  auto dev = cumem::Device::get(0);
  auto pool = cumem::Resource::device(dev);
  auto b = pool.allocate(3000);
  const int before = open_fds();
  {
    cumem::DmaBuf d = b.get_dmabuf();
    EXPECT_GE(d.fd(), 0);
    EXPECT_EQ(d.address() + d.offset(), reinterpret_cast<uintptr_t>(b.ptr()));
    EXPECT_EQ(d.length() % kPage, 0u);
    EXPECT_TRUE(d.whole_allocation());
    EXPECT_EQ(d.device_id(), 0);
    EXPECT_EQ(open_fds(), before + 1);
    cumem::DmaBuf moved = std::move(d);
    EXPECT_EQ(d.fd(), -1);
    const int kept = moved.release_fd();
    EXPECT_EQ(moved.fd(), -1);
    close(kept);
  }
  {
    cumem::DmaBuf d = b.get_dmabuf();
    (void)d;
  }
  EXPECT_EQ(open_fds(), before) << "the owner closed its fd";
  try {
    b.get_dmabuf(8);
    ADD_FAILURE() << "unknown flags were accepted";
  } catch (const cumem::Error& e) {
    EXPECT_EQ(e.status(), CUMEM_ERROR_INVALID_ARGUMENT);
  }
}

}  // namespace
