// Every enum that crosses the C boundary by a cast (static_cast between a
// cumem_*_t and a core enum, or the driver's), asserted here value by value:
// a value added to, moved in or left out of either side breaks the build.
// Enums that capi/ maps by name instead (priority mode, failure action,
// code type, granularity, access) need no assertion.
#include <cuda.h>

#include <cumem/cumem.h>

#include "../src/batch.hpp"
#include "../src/buffer.hpp"
#include "../src/capture.hpp"
#include "../src/location.hpp"
#include "../src/log.hpp"
#include "../src/memory_kind.hpp"
#include "../src/resources/resource.hpp"
#include "../src/snapshot/history.hpp"
#include "../src/snapshot/snapshot.hpp"
#include "../src/status.hpp"
#include "../src/unmap_events.hpp"

namespace core = cumem::core;

#define CUMEM_SAME_VALUE(c, core_value) \
  static_assert(static_cast<long long>(c) == static_cast<long long>(core_value), #c);

// cumem_status_t <-> core::Status (capi/status.cpp)
static_assert(sizeof(cumem_status_t) == 4, "cumem_status_t must be 32 bits");
CUMEM_SAME_VALUE(CUMEM_SUCCESS, core::Status::success)
CUMEM_SAME_VALUE(CUMEM_ERROR_INVALID_ARGUMENT, core::Status::invalid_argument)
CUMEM_SAME_VALUE(CUMEM_ERROR_OUT_OF_MEMORY, core::Status::out_of_memory)
CUMEM_SAME_VALUE(CUMEM_ERROR_NO_DRIVER, core::Status::no_driver)
CUMEM_SAME_VALUE(CUMEM_ERROR_NO_DEVICE, core::Status::no_device)
CUMEM_SAME_VALUE(CUMEM_ERROR_NOT_SUPPORTED, core::Status::not_supported)
CUMEM_SAME_VALUE(CUMEM_ERROR_BUFFER_CLOSED, core::Status::buffer_closed)
CUMEM_SAME_VALUE(CUMEM_ERROR_SIZE_MISMATCH, core::Status::size_mismatch)
CUMEM_SAME_VALUE(CUMEM_ERROR_OUT_OF_RANGE, core::Status::out_of_range)
CUMEM_SAME_VALUE(CUMEM_ERROR_WRONG_DEVICE, core::Status::wrong_device)
CUMEM_SAME_VALUE(CUMEM_ERROR_INVALID_STATE, core::Status::invalid_state)
CUMEM_SAME_VALUE(CUMEM_ERROR_DRIVER, core::Status::driver)
CUMEM_SAME_VALUE(CUMEM_ERROR_NO_COMPILER, core::Status::no_compiler)
CUMEM_SAME_VALUE(CUMEM_ERROR_COMPILATION, core::Status::compilation)
CUMEM_SAME_VALUE(CUMEM_ERROR_NOT_FOUND, core::Status::not_found)
CUMEM_SAME_VALUE(CUMEM_ERROR_INVALID_LAUNCH_CONFIG, core::Status::invalid_launch_config)
CUMEM_SAME_VALUE(CUMEM_ERROR_OUT_OF_RESOURCES, core::Status::out_of_resources)
CUMEM_SAME_VALUE(CUMEM_ERROR_INTERNAL, core::Status::internal)

// cumem_memory_kind_t <-> core::MemoryKind (capi/buffer.cpp, capi/resource.cpp)
CUMEM_SAME_VALUE(CUMEM_MEMORY_HOST, core::MemoryKind::host)
CUMEM_SAME_VALUE(CUMEM_MEMORY_DEVICE, core::MemoryKind::device)
CUMEM_SAME_VALUE(CUMEM_MEMORY_PINNED, core::MemoryKind::pinned)
CUMEM_SAME_VALUE(CUMEM_MEMORY_MANAGED, core::MemoryKind::managed)

// cumem_resource_kind_t <- core::ResourceKind (capi/resource.cpp, capi/snapshot.cpp)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_HOST, core::ResourceKind::host)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_DEVICE, core::ResourceKind::device)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_PINNED, core::ResourceKind::pinned)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_LEGACY_PINNED, core::ResourceKind::legacy_pinned)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_MANAGED, core::ResourceKind::managed)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_LIMIT, core::ResourceKind::limit)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_LEGACY_DEVICE, core::ResourceKind::legacy_device)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_HOST_SHARED, core::ResourceKind::host_shared)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_CACHING, core::ResourceKind::caching)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_TRACKING, core::ResourceKind::tracking)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_LOGGING, core::ResourceKind::logging)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_CALLBACK, core::ResourceKind::callback)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_ALIGNED, core::ResourceKind::aligned)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_VIRTUAL, core::ResourceKind::virtual_memory)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_GRAPH_MEMORY, core::ResourceKind::graph_memory)
CUMEM_SAME_VALUE(CUMEM_RESOURCE_FAILURE_CALLBACK, core::ResourceKind::failure_callback)

// cumem_location_type_t <-> core::LocationType (capi/buffer.cpp, batch.cpp,
// resource.cpp, virtual.cpp)
CUMEM_SAME_VALUE(CUMEM_LOCATION_NONE, core::LocationType::none)
CUMEM_SAME_VALUE(CUMEM_LOCATION_DEVICE, core::LocationType::device)
CUMEM_SAME_VALUE(CUMEM_LOCATION_HOST, core::LocationType::host)
CUMEM_SAME_VALUE(CUMEM_LOCATION_HOST_NUMA, core::LocationType::host_numa)
CUMEM_SAME_VALUE(CUMEM_LOCATION_HOST_NUMA_CURRENT, core::LocationType::host_numa_current)

// cumem_advice_t -> core::Advice (capi/buffer.cpp)
CUMEM_SAME_VALUE(CUMEM_ADVICE_SET_READ_MOSTLY, core::Advice::set_read_mostly)
CUMEM_SAME_VALUE(CUMEM_ADVICE_UNSET_READ_MOSTLY, core::Advice::unset_read_mostly)
CUMEM_SAME_VALUE(CUMEM_ADVICE_SET_PREFERRED_LOCATION, core::Advice::set_preferred_location)
CUMEM_SAME_VALUE(CUMEM_ADVICE_UNSET_PREFERRED_LOCATION, core::Advice::unset_preferred_location)
CUMEM_SAME_VALUE(CUMEM_ADVICE_SET_ACCESSED_BY, core::Advice::set_accessed_by)
CUMEM_SAME_VALUE(CUMEM_ADVICE_UNSET_ACCESSED_BY, core::Advice::unset_accessed_by)

// cumem_copy_src_access_order_t and cumem_copy_overlap_mode_t -> the
// core's (capi/batch.cpp)
CUMEM_SAME_VALUE(CUMEM_COPY_SRC_ACCESS_ORDER_STREAM, core::SrcAccessOrder::stream)
CUMEM_SAME_VALUE(CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL, core::SrcAccessOrder::during_api_call)
CUMEM_SAME_VALUE(CUMEM_COPY_SRC_ACCESS_ORDER_ANY, core::SrcAccessOrder::any)
CUMEM_SAME_VALUE(CUMEM_COPY_OVERLAP_DEFAULT, core::OverlapMode::normal)
CUMEM_SAME_VALUE(CUMEM_COPY_OVERLAP_PREFER_COMPUTE, core::OverlapMode::prefer_compute)

// cumem_capture_status_t <- core::CaptureStatus (capi/stream.cpp)
CUMEM_SAME_VALUE(CUMEM_CAPTURE_STATUS_NONE, core::CaptureStatus::none)
CUMEM_SAME_VALUE(CUMEM_CAPTURE_STATUS_ACTIVE, core::CaptureStatus::active)
CUMEM_SAME_VALUE(CUMEM_CAPTURE_STATUS_INVALIDATED, core::CaptureStatus::invalidated)

// cumem_capture_mode_t -> the driver's CUstreamCaptureMode (capi/stream.cpp)
CUMEM_SAME_VALUE(CUMEM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_GLOBAL)
CUMEM_SAME_VALUE(CUMEM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
CUMEM_SAME_VALUE(CUMEM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_RELAXED)

// cumem_log_level_t <-> core::log::Level (capi/log.cpp)
CUMEM_SAME_VALUE(CUMEM_LOG_LEVEL_OFF, core::log::Level::off)
CUMEM_SAME_VALUE(CUMEM_LOG_LEVEL_ERROR, core::log::Level::error)
CUMEM_SAME_VALUE(CUMEM_LOG_LEVEL_WARNING, core::log::Level::warning)
CUMEM_SAME_VALUE(CUMEM_LOG_LEVEL_INFO, core::log::Level::info)
CUMEM_SAME_VALUE(CUMEM_LOG_LEVEL_DEBUG, core::log::Level::debug)

// cumem_unmap_reason_t <- core::unmap::Reason (capi/engines.cpp)
CUMEM_SAME_VALUE(CUMEM_UNMAP_VIRTUAL, core::unmap::Reason::virtual_unmap)
CUMEM_SAME_VALUE(CUMEM_UNMAP_CACHE_RELEASE, core::unmap::Reason::cache_release)
CUMEM_SAME_VALUE(CUMEM_UNMAP_FREE, core::unmap::Reason::free)
CUMEM_SAME_VALUE(CUMEM_UNMAP_POOL_TRIM, core::unmap::Reason::pool_trim)
CUMEM_SAME_VALUE(CUMEM_UNMAP_POOL_DESTROY, core::unmap::Reason::pool_destroy)

// cumem_memory_action_t, cumem_segment_kind_t, cumem_block_state_t <- the
// history's and the snapshot's (capi/snapshot.cpp)
CUMEM_SAME_VALUE(CUMEM_MEMORY_ACTION_ALLOCATE, core::history::Action::allocate)
CUMEM_SAME_VALUE(CUMEM_MEMORY_ACTION_FREE, core::history::Action::free)
CUMEM_SAME_VALUE(CUMEM_MEMORY_ACTION_SEGMENT_ALLOC, core::history::Action::segment_alloc)
CUMEM_SAME_VALUE(CUMEM_MEMORY_ACTION_SEGMENT_FREE, core::history::Action::segment_free)
CUMEM_SAME_VALUE(CUMEM_MEMORY_ACTION_SEGMENT_MAP, core::history::Action::segment_map)
CUMEM_SAME_VALUE(CUMEM_MEMORY_ACTION_SEGMENT_UNMAP, core::history::Action::segment_unmap)
CUMEM_SAME_VALUE(CUMEM_MEMORY_ACTION_OUT_OF_MEMORY, core::history::Action::out_of_memory)
CUMEM_SAME_VALUE(CUMEM_MEMORY_ACTION_TRIM, core::history::Action::trim)
CUMEM_SAME_VALUE(CUMEM_MEMORY_ACTION_CAPTURE_BEGIN, core::history::Action::capture_begin)
CUMEM_SAME_VALUE(CUMEM_MEMORY_ACTION_CAPTURE_END, core::history::Action::capture_end)
CUMEM_SAME_VALUE(CUMEM_SEGMENT_SEGMENT, core::snapshot::SegmentKind::segment)
CUMEM_SAME_VALUE(CUMEM_SEGMENT_SMALL, core::snapshot::SegmentKind::small)
CUMEM_SAME_VALUE(CUMEM_SEGMENT_EXPANDABLE, core::snapshot::SegmentKind::expandable)
CUMEM_SAME_VALUE(CUMEM_SEGMENT_VIRTUAL_RANGE, core::snapshot::SegmentKind::virtual_range)
CUMEM_SAME_VALUE(CUMEM_SEGMENT_ALLOCATION, core::snapshot::SegmentKind::allocation)
CUMEM_SAME_VALUE(CUMEM_BLOCK_IN_USE, core::snapshot::BlockState::in_use)
CUMEM_SAME_VALUE(CUMEM_BLOCK_CACHED, core::snapshot::BlockState::cached)
CUMEM_SAME_VALUE(CUMEM_BLOCK_UNMAPPED, core::snapshot::BlockState::unmapped)

#undef CUMEM_SAME_VALUE
