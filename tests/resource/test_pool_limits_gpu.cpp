// Pool limits mean what the header says: max_size caps the bytes in use
// exactly (the driver alone rounds it up), and trim keeps at least what it
// is asked to keep.
#include "gpu_fixture.hpp"

namespace {

class PoolLimits : public GpuTest {
 protected:
  cumem_resource_t* pool(uint64_t max_size) {
    cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
    o.new_pool = CUMEM_TRUE;
    o.max_size = max_size;
    cumem_resource_t* r = nullptr;
    EXPECT_EQ(cumem_device_resource_create(device, &o, &r), CUMEM_SUCCESS)
        << cumem_last_error_message();
    return r;
  }
  static cumem_resource_statistics_t stats(cumem_resource_t* r) {
    cumem_resource_statistics_t s = CUMEM_RESOURCE_STATISTICS_INIT;
    EXPECT_EQ(cumem_resource_get_statistics(r, &s), CUMEM_SUCCESS);
    return s;
  }
  static cumem_pool_attributes_t attributes(cumem_resource_t* r) {
    cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
    EXPECT_EQ(cumem_resource_pool_get_attributes(r, &a), CUMEM_SUCCESS);
    return a;
  }
};

TEST_F(PoolLimits, MaxSizeRefusesWhatTheDriverWouldRoundUp) {
  // The driver alone serves 4 MiB from a pool whose max_size is 2 MiB.
  cumem_resource_t* r = pool(2u << 20);
  ASSERT_NE(r, nullptr);
  void* p = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(r, 4u << 20, nullptr, &p),
                     CUMEM_ERROR_OUT_OF_MEMORY, "max_size of 2097152 bytes");
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(stats(r).total_allocations, 0u);
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 2u << 20, nullptr, &p));  // exactly max_size
  void* q = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(r, 1, nullptr, &q), CUMEM_ERROR_OUT_OF_MEMORY,
                     "allows 0 bytes more");
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(r, p, 2u << 20, nullptr));
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 1u << 20, nullptr, &q));  // recovers
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(r, q, 1u << 20, nullptr));
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  EXPECT_EQ(stats(r).bytes_in_use, 0u);
  cumem_resource_release(r);

  // 2 MiB + 8 MiB from a 4 MiB pool: the second is refused.
  r = pool(4u << 20);
  ASSERT_NE(r, nullptr);
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 2u << 20, nullptr, &p));
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(r, 8u << 20, nullptr, &q),
                     CUMEM_ERROR_OUT_OF_MEMORY, "max_size");
  EXPECT_EQ(stats(r).bytes_in_use, 2u << 20);
  EXPECT_EQ(stats(r).live_allocations, 1u);
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(r, p, 2u << 20, nullptr));
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  cumem_resource_release(r);
}

TEST_F(PoolLimits, TrimKeepsAtLeastWhatItIsAskedToKeep) {
  cumem_resource_t* r = pool(0);
  ASSERT_NE(r, nullptr);
  void* p[4] = {};
  for (void*& x : p) CUMEM_ASSERT_OK(cumem_resource_allocate_raw(r, 8u << 20, nullptr, &x));
  for (void* x : p) CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(r, x, 8u << 20, nullptr));
  CUMEM_ASSERT_OK(cumem_device_synchronize(device));
  const uint64_t reserved = attributes(r).reserved_mem_current;
  EXPECT_GE(reserved, 32u << 20);
  CUMEM_ASSERT_OK(cumem_resource_pool_trim(r, 4u << 20));
  const uint64_t after = attributes(r).reserved_mem_current;
  EXPECT_GE(after, 4u << 20) << "trim keeps at least min_bytes_to_keep";
  EXPECT_LE(after, reserved);
  CUMEM_ASSERT_OK(cumem_resource_pool_trim(r, 0));
  EXPECT_EQ(attributes(r).reserved_mem_current, 0u) << "trim to 0 releases every unused block";
  cumem_resource_release(r);
}

}  // namespace
