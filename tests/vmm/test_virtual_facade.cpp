// The C++ facade's virtual memory (cumem.hpp: Resource::virtual_memory,
// Buffer::resize, the virtual_* calls, VirtualIpcHandle, ipc_send_virtual)
// on the VMM fake driver.
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "facade_util.hpp"
#include "fake_vmm.hpp"

namespace {

constexpr size_t kGranule = size_t{64} << 10;

class VirtualFacade : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(fake.missing(), "");
    fake.reset();
  }
  void TearDown() override {
    const FakeVmmCounts c = fake.counts();
    EXPECT_EQ(c.live_handles, 0u);
    EXPECT_EQ(c.live_mappings, 0u);
    EXPECT_EQ(c.live_reservations, 0u);
  }
  FakeVmm fake;
};

TEST_F(VirtualFacade, AllocatesResizesAndShares) {
  cumem::Device device = cumem::Device::get(0);
  cumem::Device peer = cumem::Device::get(1);
  cumem_virtual_resource_options_t o = cumem::virtual_resource_options();
  o.granularity = CUMEM_GRANULARITY_MINIMUM;
  o.chunk_size = kGranule;
  o.handle_types = CUMEM_IPC_HANDLE_POSIX_FD;
  cumem::Resource r = cumem::Resource::virtual_memory(device, o);
  EXPECT_EQ(r.kind(), CUMEM_RESOURCE_VIRTUAL);
  cumem::Stream s = cumem::Stream::create(device);
  cumem::Buffer b = r.allocate(3 * kGranule, s);
  std::memset(b.ptr(), 0x21, 3 * kGranule);
  b.resize(10 * kGranule, s);
  EXPECT_EQ(b.size(), 10 * kGranule);
  EXPECT_EQ(b.data<unsigned char>()[3 * kGranule - 1], 0x21);
  EXPECT_EQ(r.virtual_statistics().bytes_mapped, 10 * kGranule);
  r.virtual_set_access(peer, CUMEM_ACCESS_READ);
  EXPECT_EQ(r.virtual_get_access(peer), CUMEM_ACCESS_READ);
  EXPECT_EQ(fake.access_of(b.ptr(), 1), CU_MEM_ACCESS_FLAGS_PROT_READ);
  // The same through the call for any resource: read-write, or none.
  EXPECT_FALSE(r.peer_access(peer)) << "read-only is not read-write";
  r.set_peer_access(peer, true);
  EXPECT_TRUE(r.peer_access(peer));
  EXPECT_EQ(fake.access_of(b.ptr(), 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  r.virtual_set_access(peer, CUMEM_ACCESS_READ);
  EXPECT_CUMEM_THROW(b.resize(0, s), CUMEM_ERROR_INVALID_ARGUMENT, "close it instead");

  cumem::VirtualIpcHandle h = b.get_virtual_ipc_handle();
  EXPECT_EQ(h.fd_count(), 10u);
  EXPECT_EQ(h.descriptor().size(), 100u + 10 * 16);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
  cumem::ipc_send_virtual(sv[0], h);
  cumem::VirtualIpcHandle got = cumem::ipc_receive_virtual(sv[1]);
  ::close(sv[0]);
  ::close(sv[1]);
  EXPECT_EQ(got.descriptor(), h.descriptor());
  std::vector<int32_t> fds;
  for (uint32_t i = 0; i < got.fd_count(); ++i) fds.push_back(dup(got.fd(i)));
  cumem::VirtualIpcHandle rebuilt = cumem::VirtualIpcHandle::from_fds(got.descriptor(), fds);
  cumem::Buffer imported = cumem::Buffer::from_virtual_ipc_handle(device, rebuilt);
  EXPECT_EQ(imported.size(), 10 * kGranule);
  EXPECT_EQ(imported.data<unsigned char>()[0], 0x21);
  EXPECT_TRUE(imported.resource().properties().is_imported);
  imported.close();
  b.close(s);
  r.release_pending();
  EXPECT_EQ(r.virtual_statistics().bytes_mapped, 0u);
  EXPECT_CUMEM_THROW(cumem::Resource::host().virtual_statistics(), CUMEM_ERROR_NOT_SUPPORTED,
                     "is not a virtual memory resource");
}

}  // namespace
