// Devices on a real GPU.
#include <cstring>
#include <string>

#include "gpu_fixture.hpp"

using DeviceTest = GpuTest;

TEST_F(DeviceTest, CountAndOrdinals) {
  EXPECT_GE(device_count, 1);
  int32_t ordinal = -1;
  CUMEM_ASSERT_OK(cumem_device_ordinal(device, &ordinal));
  EXPECT_EQ(ordinal, 0);
}

TEST_F(DeviceTest, GetReturnsTheSameHandle) {
  cumem_device_t* again = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(0, &again));
  EXPECT_EQ(again, device);
  cumem_device_release(again);
}

TEST_F(DeviceTest, BadOrdinalIsNoDevice) {
  cumem_device_t* dev = reinterpret_cast<cumem_device_t*>(0x1);
  CUMEM_EXPECT_ERROR(cumem_device_get(device_count, &dev), CUMEM_ERROR_NO_DEVICE,
                     "no CUDA device " + std::to_string(device_count));
  EXPECT_EQ(dev, reinterpret_cast<cumem_device_t*>(0x1));
  CUMEM_EXPECT_ERROR(cumem_device_get(-1, &dev), CUMEM_ERROR_NO_DEVICE, "-1");
}

TEST_F(DeviceTest, Properties) {
  cumem_device_properties_t p = CUMEM_DEVICE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_device_get_properties(device, &p));
  EXPECT_EQ(p.ordinal, 0);
  EXPECT_GT(std::strlen(p.name), 0u);
  EXPECT_GE(p.compute_capability_major, 5);
  EXPECT_GT(p.total_memory, 1ull << 30);
  EXPECT_GT(p.multiprocessor_count, 0);
  EXPECT_GE(p.max_threads_per_block, 512);
  bool uuid_nonzero = false;
  for (uint8_t b : p.uuid) uuid_nonzero |= b != 0;
  EXPECT_TRUE(uuid_nonzero);
  // The properties agree with the raw attributes.
  int32_t sms = 0;
  CUMEM_ASSERT_OK(cumem_device_get_attribute(device, 16 /* MULTIPROCESSOR_COUNT */, &sms));
  EXPECT_EQ(sms, p.multiprocessor_count);
  printf("%s: cc %d.%d, %d SMs, pools %u, ipc 0x%x, managed %u/%u, vmm %u, numa %d\n", p.name,
         p.compute_capability_major, p.compute_capability_minor, p.multiprocessor_count,
         p.memory_pools_supported, p.ipc_handle_types, p.managed_memory,
         p.concurrent_managed_access, p.virtual_memory_management, p.host_numa_id);
}

TEST_F(DeviceTest, PropertiesHonourASmallerStructSize) {
  cumem_device_properties_t p;
  std::memset(&p, 0xEE, sizeof p);
  p.struct_size = offsetof(cumem_device_properties_t, name);  // covers only ordinal
  CUMEM_ASSERT_OK(cumem_device_get_properties(device, &p));
  EXPECT_EQ(p.ordinal, 0);
  EXPECT_EQ(static_cast<unsigned char>(p.name[0]), 0xEE) << "wrote past struct_size";
  p.struct_size = 0;
  CUMEM_EXPECT_ERROR(cumem_device_get_properties(device, &p), CUMEM_ERROR_INVALID_ARGUMENT,
                     "struct_size");
}

TEST_F(DeviceTest, UnknownAttributeIsADriverError) {
  int32_t v = 42;
  CUMEM_EXPECT_ERROR(cumem_device_get_attribute(device, 100000, &v), CUMEM_ERROR_DRIVER,
                     "cuDeviceGetAttribute");
  EXPECT_EQ(v, 42);
}

TEST_F(DeviceTest, MemoryInfoSynchronizeSetCurrent) {
  uint64_t free_bytes = 0, total = 0;
  CUMEM_ASSERT_OK(cumem_device_memory_info(device, &free_bytes, &total));
  EXPECT_GT(total, 0u);
  EXPECT_LE(free_bytes, total);
  CUMEM_ASSERT_OK(cumem_device_set_current(device));
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
}

TEST_F(DeviceTest, PeerAccessToItselfIsRefused) {
  cumem_bool_t can = CUMEM_TRUE;
  CUMEM_ASSERT_OK(cumem_device_can_access_peer(device, device, &can));
  EXPECT_EQ(can, CUMEM_FALSE);
  CUMEM_EXPECT_ERROR(cumem_device_enable_peer_access(device, device),
                     CUMEM_ERROR_INVALID_ARGUMENT, "itself");
}

TEST_F(DeviceTest, StreamPriorityRange) {
  int32_t least = 1, greatest = 1;
  CUMEM_ASSERT_OK(cumem_device_stream_priority_range(device, &least, &greatest));
  EXPECT_LE(greatest, least);
}

TEST_F(DeviceTest, WrongHandleTypeIsRejected) {
  cumem_stream_t* stream = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  int32_t ordinal = 0;
  CUMEM_EXPECT_ERROR(
      cumem_device_ordinal(reinterpret_cast<const cumem_device_t*>(stream), &ordinal),
      CUMEM_ERROR_INVALID_ARGUMENT, "is a cumem_stream_t, not a cumem_device_t");
  cumem_stream_release(stream);
}
