// The names of the core's enums in JSON, summaries and the viewer.
#pragma once

#include "../resources/resource.hpp"
#include "snapshot.hpp"

namespace cumem::core::snapshot {

const char* kind_name(ResourceKind kind) noexcept;
const char* segment_kind_name(SegmentKind kind) noexcept;
const char* block_state_name(BlockState state) noexcept;

}  // namespace cumem::core::snapshot
