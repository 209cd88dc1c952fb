// The fabric probe (cumem_device_properties_t.fabric_export_supported) on
// the VMM fake driver with four devices, each asked in its own way: no
// fabric attribute, no IMEX channel (cuMemCreate refuses), an export that
// is refused, out of memory (not kept) and success; each answer kept per
// device. Run twice: as the H200s here are (FABRIC refused), and with
// $FAKE_VMM_ALLOW_FABRIC=1 (an IMEX channel from the start). Also what the
// plain VMM fake lacks: cuMemGetHandleForAddressRange.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fake_vmm.hpp"
#include "test_util.hpp"

namespace {

class Fabric : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(fake.missing(), "");
    fake.reset();
  }
  void TearDown() override {
    fake.set_attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, -2);
    EXPECT_EQ(fake.counts().live_handles, 0u) << "the probe left a chunk";
    fake.reset();
  }
  cumem_bool_t supported(int ordinal) {
    cumem_device_t* d = nullptr;
    EXPECT_EQ(cumem_device_get(ordinal, &d), CUMEM_SUCCESS) << cumem_last_error_message();
    cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
    p.fabric_export_supported = 77;
    EXPECT_EQ(cumem_device_get_properties(d, &p), CUMEM_SUCCESS) << cumem_last_error_message();
    cumem_device_release(d);
    return p.fabric_export_supported;
  }
  // A buffer of a virtual resource made with `o` on device `ordinal`, and
  // what its chunk was created with; the resource and buffer are released.
  struct Chunk {
    int handle_types = -1;
    int gpu_direct_rdma = -1;
    cumem_bool_t ipc_enabled = CUMEM_FALSE;
  };
  Chunk chunk_of(int ordinal, const cumem_virtual_resource_options_t& o) {
    Chunk c;
    cumem_device_t* d = nullptr;
    EXPECT_EQ(cumem_device_get(ordinal, &d), CUMEM_SUCCESS) << cumem_last_error_message();
    cumem_resource_t* r = nullptr;
    EXPECT_EQ(cumem_virtual_resource_create(d, &o, &r), CUMEM_SUCCESS) << cumem_last_error_message();
    cumem_buffer_t* b = nullptr;
    if (r) {
      EXPECT_EQ(cumem_resource_allocate(r, size_t{2} << 20, nullptr, &b), CUMEM_SUCCESS)
          << cumem_last_error_message();
      cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
      EXPECT_EQ(cumem_resource_get_properties(r, &p), CUMEM_SUCCESS);
      c.ipc_enabled = p.ipc_enabled;
    }
    if (b) {
      EXPECT_TRUE(fake.chunk_prop(buffer_address(b), &c.handle_types, &c.gpu_direct_rdma));
    }
    cumem_buffer_release(b);
    cumem_resource_release(r);
    cumem_device_release(d);
    return c;
  }
  FakeVmm fake;
};

// NCCL's qualified allocator (options.nccl_qualified): POSIX fd handles and
// GPUDirect RDMA where the device has them; FABRIC only after its probe,
// left out (not refused) when the probe fails, as on the H200s here.
TEST_F(Fabric, AnNcclQualifiedResourceTakesWhatTheDeviceAllows) {
  cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  o.nccl_qualified = CUMEM_TRUE;
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 1);
  Chunk c = chunk_of(0, o);
  EXPECT_EQ(c.handle_types, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) << "FABRIC refused: left out";
  EXPECT_EQ(c.gpu_direct_rdma, 1);
  EXPECT_EQ(c.ipc_enabled, CUMEM_TRUE);
  EXPECT_NE(fake.log().find("cuMemGetAllocationGranularity cuMemCreate "), std::string::npos)
      << "the FABRIC probe was asked: " << fake.log();

  // A device with none of it: the same options make plain memory, no probe.
  fake.reset();
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0);
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 0);
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 0);
  c = chunk_of(1, o);
  EXPECT_EQ(c.handle_types, 0);
  EXPECT_EQ(c.gpu_direct_rdma, 0);
  EXPECT_EQ(c.ipc_enabled, CUMEM_FALSE);
  EXPECT_EQ(fake.counts().creates, 1u) << "only the buffer's chunk, no probe";

  // What the caller asks for itself is still required.
  cumem_device_t* d = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(1, &d));
  cumem_resource_t* r = nullptr;
  o.gpu_direct_rdma = CUMEM_TRUE;
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_create(d, &o, &r), CUMEM_ERROR_NOT_SUPPORTED,
                     "GPUDirect RDMA");
  o.gpu_direct_rdma = CUMEM_FALSE;
  o.handle_types = CUMEM_IPC_HANDLE_POSIX_FD;
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_create(d, &o, &r), CUMEM_ERROR_NOT_SUPPORTED,
                     "POSIX file descriptors");
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, -2);
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, -2);
  o.handle_types = CUMEM_IPC_HANDLE_FABRIC;
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_create(d, &o, &r), CUMEM_ERROR_NOT_SUPPORTED,
                     "IMEX");
  o.handle_types = 0;
  o.reserved0 = 1;
  CUMEM_EXPECT_ERROR(cumem_virtual_resource_create(d, &o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "reserved0");
  EXPECT_EQ(r, nullptr);
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, -2);
  cumem_device_release(d);
}

// Without $FAKE_VMM_ALLOW_FABRIC: the devices as the H200s here are.
TEST_F(Fabric, EachRefusalIsNoAndOnlyOutOfMemoryIsAskedAgain) {
  // Device 0: the driver reports no fabric handles; nothing is made.
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 0);
  EXPECT_EQ(supported(0), CUMEM_FALSE);
  EXPECT_EQ(fake.log(), "") << "no virtual-memory call";
  fake.set_attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, -2);

  // Device 1: no IMEX channel, cuMemCreate answers CUDA_ERROR_NOT_PERMITTED.
  fake.reset();
  EXPECT_EQ(supported(1), CUMEM_FALSE);
  EXPECT_EQ(fake.log(), "cuMemGetAllocationGranularity cuMemCreate ");
  EXPECT_EQ(fake.counts().creates, 0u);
  // The answer is kept: asked again with FABRIC allowed, the same, and the
  // driver is not asked.
  fake.reset();
  fake.allow_fabric(true);
  EXPECT_EQ(supported(1), CUMEM_FALSE);
  EXPECT_EQ(supported(0), CUMEM_FALSE);
  EXPECT_EQ(fake.log(), "");

  // Device 2: the granule is made, its export as a fabric handle refused.
  fake.fail("cuMemExportToShareableHandle", 1, CUDA_ERROR_NOT_PERMITTED);
  EXPECT_EQ(supported(2), CUMEM_FALSE);
  EXPECT_EQ(fake.log(),
            "cuMemGetAllocationGranularity cuMemCreate cuMemExportToShareableHandle (failed) "
            "cuMemRelease ");
  EXPECT_EQ(fake.counts().creates, 1u);
  EXPECT_EQ(fake.counts().releases, 1u) << "the granule is released";

  // Device 3: out of memory says no, and is asked again; then it works.
  fake.reset();
  fake.allow_fabric(true);
  fake.set_memory(0);
  EXPECT_EQ(supported(3), CUMEM_FALSE);
  fake.set_memory(uint64_t{80} << 30);
  EXPECT_EQ(supported(3), CUMEM_TRUE);
  EXPECT_EQ(fake.counts().creates, 1u);
  EXPECT_EQ(fake.counts().releases, 1u);
  fake.reset();
  EXPECT_EQ(supported(3), CUMEM_TRUE) << "kept";
  EXPECT_EQ(fake.log(), "");
}

// With $FAKE_VMM_ALLOW_FABRIC=1: fabric works from the first question.
TEST_F(Fabric, WithAnImexChannelItWorksAndIsProbedOnce) {
  ASSERT_STREQ(std::getenv("FAKE_VMM_ALLOW_FABRIC"), "1");
  EXPECT_EQ(supported(0), CUMEM_TRUE);
  EXPECT_EQ(fake.log(),
            "cuMemGetAllocationGranularity cuMemCreate cuMemExportToShareableHandle cuMemRelease ");
  EXPECT_EQ(supported(0), CUMEM_TRUE);
  EXPECT_EQ(fake.counts().creates, 1u) << "once per device";
  // A caller built before the field (struct_size without it) gets no probe.
  fake.reset();
  cumem_device_t* d = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(1, &d));
  cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
  p.struct_size = offsetof(cumem_device_properties_t, fabric_export_supported);
  p.fabric_export_supported = 77;
  CUMEM_ASSERT_OK(cumem_device_get_properties(d, &p));
  EXPECT_EQ(p.fabric_export_supported, 77u) << "not written";
  EXPECT_EQ(p.struct_size, offsetof(cumem_device_properties_t, fabric_export_supported));
  EXPECT_EQ(fake.log(), "") << "no probe for a caller that cannot see the answer";
  // The virtual resource still probes its own memory before using FABRIC.
  cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  o.handle_types = CUMEM_IPC_HANDLE_POSIX_FD | CUMEM_IPC_HANDLE_FABRIC;
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_virtual_resource_create(d, &o, &r));
  cumem_resource_release(r);
  cumem_device_release(d);
}

// With an IMEX channel, the NCCL-qualified resource's chunks are FABRIC
// exportable too.
TEST_F(Fabric, WithAnImexChannelAnNcclQualifiedResourceAddsFabric) {
  ASSERT_STREQ(std::getenv("FAKE_VMM_ALLOW_FABRIC"), "1");
  cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  o.nccl_qualified = CUMEM_TRUE;
  const Chunk c = chunk_of(2, o);
  EXPECT_EQ(c.handle_types, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC);
  EXPECT_EQ(c.ipc_enabled, CUMEM_TRUE);
}

// The plain VMM fake has no cuMemGetHandleForAddressRange, as a driver
// before CUDA 11.7: a clear refusal, no fd.
TEST_F(Fabric, ADriverWithoutTheDmabufCallSaysSo) {
  cumem_device_t* d = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(0, &d));
  cumem_virtual_resource_options_t o = CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT;
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_virtual_resource_create(d, &o, &r));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, size_t{2} << 20, nullptr, &b));
  cumem_dmabuf_t dmabuf = CUMEM_DMABUF_INIT;
  CUMEM_EXPECT_ERROR(cumem_buffer_get_dmabuf(b, 0, &dmabuf), CUMEM_ERROR_NOT_SUPPORTED,
                     "cuMemGetHandleForAddressRange");
  EXPECT_EQ(dmabuf.fd, 0) << "untouched";
  cumem_buffer_release(b);
  cumem_resource_release(r);
  cumem_device_release(d);
}

}  // namespace
