// The limit adaptor over the host resource (no GPU needed).
#include "test_util.hpp"

namespace {

TEST(Limit, RefusesPastTheLimitAndRecovers) {
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  cumem_resource_t* limit = nullptr;
  CUMEM_ASSERT_OK(cumem_limit_resource_create(host, 1000, &limit));
  cumem_buffer_t* a = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(limit, 600, nullptr, &a));
  cumem_buffer_t* b = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate(limit, 500, nullptr, &b), CUMEM_ERROR_OUT_OF_MEMORY,
                     "limit of 1000 bytes allows 400 bytes more");
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(statistics_of(limit).bytes_in_use, 600u);
  EXPECT_EQ(statistics_of(host).bytes_in_use, 600u);  // the upstream counts it too
  CUMEM_ASSERT_OK(cumem_resource_allocate(limit, 400, nullptr, &b));  // exactly at the limit
  CUMEM_ASSERT_OK(cumem_buffer_close(a, nullptr));
  cumem_buffer_t* c = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(limit, 600, nullptr, &c));
  EXPECT_EQ(statistics_of(limit).bytes_in_use, 1000u);
  cumem_buffer_release(a);
  cumem_buffer_release(b);
  cumem_buffer_release(c);
  EXPECT_EQ(statistics_of(limit).bytes_in_use, 0u);
  EXPECT_EQ(statistics_of(host).bytes_in_use, 0u);
  cumem_resource_release(limit);
  cumem_resource_release(host);
}

TEST(Limit, DescribesTheUpstreamMemoryAndKeepsItAlive) {
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  cumem_resource_t* limit = nullptr;
  CUMEM_ASSERT_OK(cumem_limit_resource_create(host, 1 << 20, &limit));
  EXPECT_EQ(cumem_resource_release(host), CUMEM_SUCCESS);  // the adaptor holds it
  cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
  CUMEM_ASSERT_OK(cumem_resource_get_properties(limit, &p));
  EXPECT_EQ(p.kind, CUMEM_RESOURCE_LIMIT);
  EXPECT_EQ(p.host_accessible, CUMEM_TRUE);
  EXPECT_EQ(p.device_accessible, CUMEM_FALSE);
  EXPECT_EQ(p.is_pool, CUMEM_FALSE);
  EXPECT_EQ(p.device_id, -1);
  void* raw = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate_raw(limit, 4096, nullptr, &raw));
  static_cast<char*>(raw)[4095] = 1;
  CUMEM_ASSERT_OK(cumem_resource_deallocate_raw(limit, raw, 4096, nullptr));
  // A limit owns no pool.
  cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
  CUMEM_EXPECT_ERROR(cumem_resource_pool_get_attributes(limit, &a), CUMEM_ERROR_NOT_SUPPORTED,
                     "limit of");
  cumem_resource_release(limit);
}

TEST(Limit, BadArguments) {
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &host));
  cumem_resource_t* limit = nullptr;
  CUMEM_EXPECT_ERROR(cumem_limit_resource_create(host, 0, &limit), CUMEM_ERROR_INVALID_ARGUMENT,
                     "limit of 0");
  CUMEM_EXPECT_ERROR(cumem_limit_resource_create(nullptr, 10, &limit),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'upstream'");
  CUMEM_EXPECT_ERROR(cumem_limit_resource_create(host, 10, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'out_resource'");
  EXPECT_EQ(limit, nullptr);
  cumem_resource_release(host);
}

}  // namespace
