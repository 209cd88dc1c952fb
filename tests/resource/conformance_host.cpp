// The conformance suite (conformance.hpp) over every resource kind that
// needs no GPU. One line per kind; an adaptor over a host kind is one line
// too, made by adaptor() (resource_kinds.hpp).
#include "conformance.hpp"

namespace {

const ResourceKind host_kinds[] = {
    host_kind("host"),                      // default options (NULL)
    host_kind("host_aligned_4096", 4096),
    limit_kind("limit_over_host", host_kind("host"), uint64_t{1} << 30),
    caching_kind("caching_over_host", host_kind("host")),
    caching_kind("caching_over_limit", limit_kind("limit", host_kind("host"), uint64_t{1} << 30)),
    tracking_kind("tracking_over_host", host_kind("host")),
    logging_kind("logging_over_host", host_kind("host")),
    callback_kind("callback_aligned_alloc"),
    aligned_kind("aligned_8_over_host", host_kind("host"), 8),               // as the upstream gives
    aligned_kind("aligned_8192_over_host", host_kind("host"), 8192),         // padded
    caching_kind("caching_over_aligned", aligned_kind("aligned", host_kind("host"), 4096)),
    failure_callback_kind("failure_callback_over_host", host_kind("host")),
};

INSTANTIATE_TEST_SUITE_P(Host, ResourceConformance, ::testing::ValuesIn(host_kinds), kind_name);

}  // namespace

// Stream order needs a device: conformance_gpu.cpp instantiates it.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ResourceStreamOrder);

// The factory shape every later adaptor line relies on: adaptor() makes a
// fresh upstream with the upstream kind's factory, hands it to `create`, and
// drops its own reference, so the adaptor alone keeps the upstream alive.
TEST(ResourceKinds, AdaptorWrapsAFreshUpstreamAndKeepsItsExpectations) {
  cumem_resource_t* seen = nullptr;
  const ResourceKind upstream = host_kind("host", 4096);
  const ResourceKind k = adaptor("retain_over_host", upstream,
                                 [&](cumem_resource_t* up, cumem_resource_t** out) {
                                   seen = up;
                                   *out = up;  // an "adaptor" that is its upstream
                                   return cumem_resource_retain(up);
                                 });
  EXPECT_EQ(k.name, "retain_over_host");
  EXPECT_EQ(k.alignment, 4096u);
  EXPECT_EQ(k.kind, CUMEM_RESOURCE_HOST);
  cumem_resource_t* r = k.make(nullptr);
  ASSERT_NE(r, nullptr) << cumem_last_error_message();
  EXPECT_EQ(r, seen);
  // The factory's reference is gone: the caller's is the only one left, so
  // the resource still works (and leak checkers see it freed below).
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 64, nullptr, &b));
  cumem_buffer_release(b);
  cumem_resource_release(r);

  const ResourceKind failing = adaptor("failing", upstream, [](cumem_resource_t*, cumem_resource_t**) {
    return cumem_resource_get_statistics(nullptr, nullptr);  // any failure
  });
  EXPECT_EQ(failing.make(nullptr), nullptr);
  EXPECT_NE(std::string(cumem_last_error_message()).find("cumem_resource_get_statistics"),
            std::string::npos)
      << "the failure's message is kept: " << cumem_last_error_message();
}
