// The conformance suite (conformance.hpp) over every GPU resource kind, on
// device 0; each test skips, saying why, where there is no driver or device.
// One line per kind; an adaptor over a GPU kind is one line too, made by
// adaptor() (resource_kinds.hpp).
#include "conformance.hpp"

namespace {

const ResourceKind gpu_kinds[] = {
    device_pool_kind("device_default_pool", /*new_pool=*/false),
    device_pool_kind("device_new_pool", /*new_pool=*/true),
    pinned_pool_kind("pinned_pool"),
    legacy_pinned_kind("legacy_pinned"),
    managed_kind("managed_pool", /*use_pool=*/true),
    managed_kind("managed_no_pool", /*use_pool=*/false),
    limit_kind("limit_over_device_pool", device_pool_kind("pool", false), uint64_t{1} << 30),
    caching_kind("caching_over_device_pool", device_pool_kind("pool", false)),
    caching_kind("caching_over_pinned_pool", pinned_pool_kind("pinned")),
    caching_kind("caching_over_legacy_pinned", legacy_pinned_kind("legacy")),
    tracking_kind("tracking_over_device_pool", device_pool_kind("pool", false)),
    aligned_kind("aligned_65536_over_device_pool", device_pool_kind("pool", false), 65536),
    virtual_kind("virtual_device"),
    caching_kind("caching_over_virtual", virtual_kind("virtual")),
    expandable_caching_kind("caching_expandable_over_device_pool", device_pool_kind("pool", false)),
    failure_callback_kind("failure_callback_over_device_pool", device_pool_kind("pool", false)),
};

INSTANTIATE_TEST_SUITE_P(Gpu, ResourceConformance, ::testing::ValuesIn(gpu_kinds), kind_name);
INSTANTIATE_TEST_SUITE_P(Gpu, ResourceStreamOrder, ::testing::ValuesIn(gpu_kinds), kind_name);

}  // namespace
