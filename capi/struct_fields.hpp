// The fields of every options struct and out struct of cumem.h, listed once,
// in declaration order. The struct_size rules (capi.hpp: read_options,
// check_out_struct, write_out_struct) are derived from these lists: a
// struct_size must end at a field's end, never inside a field. The
// static_assert in CUMEM_STRUCT_FIELDS proves that each list accounts for
// every byte of its struct and that the struct has no padding (the header's
// rule), so a field added to cumem.h and not here, or a gap, breaks the
// build instead of the rules. The copies of out structs from the core's
// structs of the same member names come from these lists too
// (CUMEM_OUT_STRUCT, copy_fields).
#pragma once

#include <cumem/cumem.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace cumem::capi {

struct Field {
  const char* name;
  size_t offset;
  size_t size;
  size_t align;
  constexpr size_t end() const { return offset + size; }
};

// What the rules need to know about one struct type.
struct StructLayout {
  const char* type_name;
  // What fills the struct for the caller: its _init() function (options)
  // or its _INIT macro (out structs), for the message on a zero-filled one.
  const char* initializer;
  size_t size;  // this library's sizeof
  const Field* fields;
  size_t count;
};

// Specialised below for each struct; a struct with no list does not compile
// with the helpers.
template <class T>
struct Fields;

template <class T>
constexpr StructLayout layout_of() {
  return StructLayout{Fields<T>::type_name, Fields<T>::initializer, sizeof(T), Fields<T>::list,
                      sizeof(Fields<T>::list) / sizeof(Field)};
}

constexpr size_t round_up(size_t n, size_t align) { return (n + align - 1) / align * align; }

// True when the list names every field of T in order and T has no padding:
// it starts with struct_size at 0, each field starts where the previous one
// ends, the last one ends at sizeof(T), and the compiler agrees that every
// byte of T belongs to a member. A field left out of a list leaves a gap.
template <class T>
constexpr bool lists_every_field() {
  const StructLayout l = layout_of<T>();
  if (l.count == 0 || l.fields[0].offset != 0 || l.fields[0].size != sizeof(uint32_t))
    return false;
  size_t end = 0;
  for (size_t i = 0; i < l.count; ++i) {
    if (l.fields[i].offset != end) return false;
    end = l.fields[i].end();
  }
  return end == sizeof(T) && std::has_unique_object_representations_v<T>;
}

// An out struct's value from the core's struct of the same member names:
// `from` into `to`, by the one rule for each sort of field. A bool becomes
// a cumem_bool_t; an enum is cast (the C values are the core's, asserted
// value by value in capi/enums.cpp); an integer goes only into one that
// holds all its values.
template <class To, class From>
void assign(To& to, const From& from) noexcept {
  if constexpr (std::is_same_v<From, bool>) {
    static_assert(std::is_same_v<To, cumem_bool_t>, "a core bool goes into a cumem_bool_t");
    to = from ? CUMEM_TRUE : CUMEM_FALSE;
  } else if constexpr (std::is_enum_v<From>) {
    static_assert(std::is_enum_v<To> && sizeof(To) == 4, "a core enum goes into a C enum");
    to = static_cast<To>(from);
  } else if constexpr (std::is_pointer_v<From>) {
    static_assert(std::is_same_v<To, From>, "a pointer goes into a pointer of its type");
    to = from;
  } else {
    static_assert(std::is_integral_v<From> && std::is_integral_v<To> &&
                      std::is_signed_v<From> == std::is_signed_v<To> && sizeof(To) >= sizeof(From),
                  "an integer goes only into one of its signedness and at least its size");
    to = from;
  }
}

// Specialised by CUMEM_OUT_STRUCT for each out struct that the core fills
// under the same member names.
template <class T>
struct Copied;

// Fills every field of `out` that its list marks `copied` from the member of
// the same name of `in`, the core's struct; capi/ writes the others.
template <class T, class Core>
void copy_fields(T& out, const Core& in) noexcept {
  Copied<T>::copy(out, in);
}

#define CUMEM_FIELD(member) \
  Field { #member, offsetof(S, member), sizeof(S::member), alignof(decltype(S::member)) }

// CUMEM_STRUCT_FIELDS(T, "its initializer", CUMEM_FIELD(a), CUMEM_FIELD(b), ...)
#define CUMEM_STRUCT_FIELDS(T, init, ...)                                      \
  template <>                                                                  \
  struct Fields<T> {                                                           \
    using S = T;                                                               \
    static constexpr const char* type_name = #T;                               \
    static constexpr const char* initializer = init;                           \
    static constexpr Field list[] = {__VA_ARGS__};                             \
  };                                                                           \
  static_assert(lists_every_field<T>(),                                        \
                "capi/struct_fields.hpp: the field list of " #T " must name "  \
                "every member of " #T " in order, and " #T " must have no "    \
                "padding (add a reserved field)");

// CUMEM_OUT_STRUCT(T, "its initializer", LIST): LIST(copied, own) names
// every field of T once, in order: `copied` for a field that copy_fields()
// takes from the core's member of the same name, `own` for the others
// (struct_size, reserved fields, fields whose value capi/ makes). From it
// come T's field list and its copy.
#define CUMEM_FIELD_ITEM(member) CUMEM_FIELD(member),
#define CUMEM_COPY_ITEM(member) assign(out.member, in.member);
#define CUMEM_SKIP_ITEM(member)
#define CUMEM_OUT_STRUCT(T, init, LIST)                                        \
  CUMEM_STRUCT_FIELDS(T, init, LIST(CUMEM_FIELD_ITEM, CUMEM_FIELD_ITEM))       \
  template <>                                                                  \
  struct Copied<T> {                                                           \
    template <class Core>                                                      \
    static void copy(T& out, const Core& in) noexcept {                        \
      LIST(CUMEM_COPY_ITEM, CUMEM_SKIP_ITEM)                                   \
    }                                                                          \
  };

// Options (read by the library).

CUMEM_STRUCT_FIELDS(cumem_stream_options_t, "cumem_stream_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(blocking), CUMEM_FIELD(priority),
  CUMEM_FIELD(priority_mode))

CUMEM_STRUCT_FIELDS(cumem_event_options_t, "cumem_event_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(enable_timing), CUMEM_FIELD(blocking_sync),
  CUMEM_FIELD(interprocess))

CUMEM_STRUCT_FIELDS(cumem_host_resource_options_t, "cumem_host_resource_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(reserved0), CUMEM_FIELD(alignment))

CUMEM_STRUCT_FIELDS(cumem_pool_options_t, "cumem_pool_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(new_pool), CUMEM_FIELD(release_threshold),
  CUMEM_FIELD(max_size), CUMEM_FIELD(ipc_enabled), CUMEM_FIELD(release_all_unused),
  CUMEM_FIELD(use_host_numa_id), CUMEM_FIELD(host_numa_id))

CUMEM_STRUCT_FIELDS(cumem_managed_resource_options_t, "cumem_managed_resource_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(preferred_location), CUMEM_FIELD(disable_pool))

CUMEM_STRUCT_FIELDS(cumem_program_options_t, "cumem_program_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(code_type), CUMEM_FIELD(arch), CUMEM_FIELD(options),
  CUMEM_FIELD(name_expressions), CUMEM_FIELD(name), CUMEM_FIELD(num_options),
  CUMEM_FIELD(num_name_expressions))

CUMEM_STRUCT_FIELDS(cumem_launch_config_t, "cumem_launch_config_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(grid), CUMEM_FIELD(block),
  CUMEM_FIELD(shared_memory_bytes), CUMEM_FIELD(cluster))

CUMEM_STRUCT_FIELDS(cumem_dlpack_options_t, "cumem_dlpack_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(dtype_code), CUMEM_FIELD(dtype_bits),
  CUMEM_FIELD(dtype_lanes), CUMEM_FIELD(ndim), CUMEM_FIELD(reserved0), CUMEM_FIELD(shape),
  CUMEM_FIELD(strides), CUMEM_FIELD(byte_offset), CUMEM_FIELD(device_type),
  CUMEM_FIELD(read_only))

CUMEM_STRUCT_FIELDS(cumem_virtual_resource_options_t, "cumem_virtual_resource_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(location), CUMEM_FIELD(granularity),
  CUMEM_FIELD(handle_types), CUMEM_FIELD(gpu_direct_rdma), CUMEM_FIELD(address_hint),
  CUMEM_FIELD(alignment), CUMEM_FIELD(chunk_size), CUMEM_FIELD(reserve_size),
  CUMEM_FIELD(peers), CUMEM_FIELD(peer_count), CUMEM_FIELD(peers_read_only),
  CUMEM_FIELD(nccl_qualified), CUMEM_FIELD(reserved0))

// Read by cumem_resource_pool_set_attributes, written by _get_attributes
// (from core::PoolAttributes).
#define CUMEM_POOL_ATTRIBUTES_FIELDS(copied, own)                                         \
  own(struct_size) copied(reuse_follow_event_dependencies) copied(reuse_allow_opportunistic) \
  copied(reuse_allow_internal_dependencies) copied(release_threshold)                    \
  copied(reserved_mem_current) copied(reserved_mem_high) copied(used_mem_current)        \
  copied(used_mem_high)
CUMEM_OUT_STRUCT(cumem_pool_attributes_t,
                 "cumem_resource_pool_get_attributes() or CUMEM_POOL_ATTRIBUTES_INIT",
                 CUMEM_POOL_ATTRIBUTES_FIELDS)

// Out structs (written by the library).

// From core::DeviceProperties; the name, the UUID and the fabric probe are
// capi/device.cpp's own.
#define CUMEM_DEVICE_PROPERTIES_FIELDS(copied, own)                                         \
  own(struct_size) copied(ordinal) own(name) own(uuid) copied(compute_capability_major)     \
  copied(compute_capability_minor) copied(total_memory) copied(multiprocessor_count)       \
  copied(memory_pools_supported) copied(ipc_handle_types) copied(managed_memory)           \
  copied(concurrent_managed_access) copied(virtual_memory_management) copied(host_numa_id) \
  copied(pci_domain_id) copied(pci_bus_id) copied(pci_device_id)                           \
  copied(max_threads_per_block) copied(max_shared_memory_per_block_optin)                  \
  copied(cluster_launch) own(reserved0) own(fabric_export_supported)                       \
  copied(dma_buf_supported)
CUMEM_OUT_STRUCT(cumem_device_properties_t, "CUMEM_DEVICE_PROPERTIES_INIT",
                 CUMEM_DEVICE_PROPERTIES_FIELDS)

// From core::ResourceProperties, whose stream_ordered is C's is_stream_ordered.
#define CUMEM_RESOURCE_PROPERTIES_FIELDS(copied, own)                                  \
  own(struct_size) copied(kind) copied(device_accessible) copied(host_accessible)      \
  copied(device_id) own(is_stream_ordered) copied(is_pool) copied(ipc_enabled)         \
  copied(is_imported)
CUMEM_OUT_STRUCT(cumem_resource_properties_t, "CUMEM_RESOURCE_PROPERTIES_INIT",
                 CUMEM_RESOURCE_PROPERTIES_FIELDS)

CUMEM_STRUCT_FIELDS(cumem_resource_callbacks_t, "CUMEM_RESOURCE_CALLBACKS_INIT",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(memory_kind), CUMEM_FIELD(allocate),
  CUMEM_FIELD(deallocate), CUMEM_FIELD(destroy), CUMEM_FIELD(user_data),
  CUMEM_FIELD(device_accessible), CUMEM_FIELD(host_accessible), CUMEM_FIELD(stream_ordered),
  CUMEM_FIELD(reserved0))

// From core::CachingStatistics.
#define CUMEM_CACHING_STATISTICS_FIELDS(copied, own)                                   \
  own(struct_size) own(reserved0) copied(bytes_cached) copied(bytes_reserved)          \
  copied(peak_bytes_reserved) copied(hits) copied(misses) copied(stream_reuses)        \
  copied(oom_retries) copied(pages_mapped) copied(pages_unmapped) copied(capture_pools) \
  copied(capture_pool_bytes) copied(recycles) copied(recycle_waits)
CUMEM_OUT_STRUCT(cumem_caching_statistics_t, "CUMEM_CACHING_STATISTICS_INIT",
                 CUMEM_CACHING_STATISTICS_FIELDS)

CUMEM_STRUCT_FIELDS(cumem_caching_resource_options_t, "cumem_caching_resource_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(expandable), CUMEM_FIELD(page_size),
  CUMEM_FIELD(libcumem_captures_only), CUMEM_FIELD(handle_types))

// From core::ResourceStatistics.
#define CUMEM_RESOURCE_STATISTICS_FIELDS(copied, own)                         \
  own(struct_size) own(reserved0) copied(bytes_in_use) copied(peak_bytes_in_use) \
  copied(live_allocations) copied(total_allocations)
CUMEM_OUT_STRUCT(cumem_resource_statistics_t, "CUMEM_RESOURCE_STATISTICS_INIT",
                 CUMEM_RESOURCE_STATISTICS_FIELDS)

// From core::BufferInfo.
#define CUMEM_BUFFER_INFO_FIELDS(copied, own)                                        \
  own(struct_size) copied(device_id) copied(ptr) copied(size) copied(memory_kind)    \
  copied(device_accessible) copied(host_accessible) copied(is_slice) copied(owns_memory) \
  own(reserved0)
CUMEM_OUT_STRUCT(cumem_buffer_info_t, "CUMEM_BUFFER_INFO_INIT", CUMEM_BUFFER_INFO_FIELDS)

// From core::KernelAttributes.
#define CUMEM_KERNEL_ATTRIBUTES_FIELDS(copied, own)                                     \
  own(struct_size) copied(max_threads_per_block) copied(shared_size_bytes)              \
  copied(const_size_bytes) copied(local_size_bytes) copied(num_regs) copied(ptx_version) \
  copied(binary_version) copied(max_dynamic_shared_size_bytes)
CUMEM_OUT_STRUCT(cumem_kernel_attributes_t, "CUMEM_KERNEL_ATTRIBUTES_INIT",
                 CUMEM_KERNEL_ATTRIBUTES_FIELDS)

// From core::VirtualStatistics.
#define CUMEM_VIRTUAL_STATISTICS_FIELDS(copied, own)                                  \
  own(struct_size) own(reserved0) copied(granularity) copied(chunk_size)              \
  copied(bytes_mapped) copied(bytes_reserved) copied(bytes_pending)                   \
  copied(grows_in_place) copied(grows_moved) copied(shrinks) copied(chunks_created)   \
  copied(chunks_released)
CUMEM_OUT_STRUCT(cumem_virtual_statistics_t, "CUMEM_VIRTUAL_STATISTICS_INIT",
                 CUMEM_VIRTUAL_STATISTICS_FIELDS)

// CUDA graphs (capi/graph.cpp, capi/stream.cpp). From core::CaptureInfo.
#define CUMEM_CAPTURE_INFO_FIELDS(copied, own) own(struct_size) copied(status) copied(id)
CUMEM_OUT_STRUCT(cumem_capture_info_t, "CUMEM_CAPTURE_INFO_INIT", CUMEM_CAPTURE_INFO_FIELDS)

CUMEM_STRUCT_FIELDS(cumem_graph_options_t, "cumem_graph_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(auto_free_on_launch), CUMEM_FIELD(use_node_priority))

// From core::GraphMemoryAttributes.
#define CUMEM_GRAPH_MEMORY_ATTRIBUTES_FIELDS(copied, own)                                  \
  own(struct_size) own(reserved0) copied(reserved_mem_current) copied(reserved_mem_high) \
  copied(used_mem_current) copied(used_mem_high)
CUMEM_OUT_STRUCT(cumem_graph_memory_attributes_t, "CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT",
                 CUMEM_GRAPH_MEMORY_ATTRIBUTES_FIELDS)

// Batches, and the failure-callback adaptor.
CUMEM_STRUCT_FIELDS(cumem_copy_options_t, "cumem_copy_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(src_access_order), CUMEM_FIELD(src_location_hint),
  CUMEM_FIELD(dst_location_hint), CUMEM_FIELD(overlap_mode))

// From core::BatchStatistics.
#define CUMEM_BATCH_STATISTICS_FIELDS(copied, own)                                       \
  own(struct_size) copied(driver_copy_batch) copied(driver_prefetch_batch)               \
  copied(driver_discard_batch) copied(copy_batches) copied(copy_batches_looped)          \
  copied(copies) copied(copies_looped) copied(prefetch_batches)                          \
  copied(prefetch_batches_looped) copied(prefetches) copied(discard_batches)             \
  copied(discards) copied(copy_batches_by_kernel) copied(copies_by_kernel)
CUMEM_OUT_STRUCT(cumem_batch_statistics_t, "CUMEM_BATCH_STATISTICS_INIT",
                 CUMEM_BATCH_STATISTICS_FIELDS)

CUMEM_STRUCT_FIELDS(cumem_failure_callback_t, "cumem_failure_callback_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(max_retries), CUMEM_FIELD(callback),
  CUMEM_FIELD(destroy), CUMEM_FIELD(user_data))

CUMEM_STRUCT_FIELDS(cumem_failure_info_t, "CUMEM_FAILURE_INFO_INIT",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(attempt), CUMEM_FIELD(size), CUMEM_FIELD(stream),
  CUMEM_FIELD(statistics), CUMEM_FIELD(message))

// Seeing the memory (capi/snapshot.cpp).
CUMEM_STRUCT_FIELDS(cumem_memory_history_options_t, "cumem_memory_history_options_init()",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(stacks), CUMEM_FIELD(max_entries))

CUMEM_STRUCT_FIELDS(cumem_snapshot_totals_t, "CUMEM_SNAPSHOT_TOTALS_INIT",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(resource_count), CUMEM_FIELD(segment_count),
  CUMEM_FIELD(block_count), CUMEM_FIELD(event_count), CUMEM_FIELD(bytes_reserved),
  CUMEM_FIELD(bytes_in_use), CUMEM_FIELD(bytes_requested), CUMEM_FIELD(bytes_cached),
  CUMEM_FIELD(bytes_unmapped), CUMEM_FIELD(largest_free_block), CUMEM_FIELD(fragmented_bytes),
  CUMEM_FIELD(events_recorded), CUMEM_FIELD(events_dropped), CUMEM_FIELD(time_ns))

CUMEM_STRUCT_FIELDS(cumem_snapshot_resource_t, "CUMEM_SNAPSHOT_RESOURCE_INIT",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(kind), CUMEM_FIELD(id), CUMEM_FIELD(upstream_id),
  CUMEM_FIELD(device_id), CUMEM_FIELD(reserved0), CUMEM_FIELD(name), CUMEM_FIELD(bytes_in_use),
  CUMEM_FIELD(peak_bytes_in_use), CUMEM_FIELD(live_allocations), CUMEM_FIELD(bytes_reserved),
  CUMEM_FIELD(bytes_cached), CUMEM_FIELD(largest_free_block))

CUMEM_STRUCT_FIELDS(cumem_snapshot_segment_t, "CUMEM_SNAPSHOT_SEGMENT_INIT",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(kind), CUMEM_FIELD(resource_id), CUMEM_FIELD(address),
  CUMEM_FIELD(size), CUMEM_FIELD(stream), CUMEM_FIELD(device_id), CUMEM_FIELD(reserved0),
  CUMEM_FIELD(first_block), CUMEM_FIELD(block_count))

CUMEM_STRUCT_FIELDS(cumem_snapshot_block_t, "CUMEM_SNAPSHOT_BLOCK_INIT",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(state), CUMEM_FIELD(address), CUMEM_FIELD(size),
  CUMEM_FIELD(requested_size), CUMEM_FIELD(stream), CUMEM_FIELD(segment), CUMEM_FIELD(stack_id),
  CUMEM_FIELD(reserved0))

CUMEM_STRUCT_FIELDS(cumem_memory_event_t, "CUMEM_MEMORY_EVENT_INIT",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(action), CUMEM_FIELD(time_ns), CUMEM_FIELD(address),
  CUMEM_FIELD(size), CUMEM_FIELD(stream), CUMEM_FIELD(resource_id), CUMEM_FIELD(detail),
  CUMEM_FIELD(thread_id), CUMEM_FIELD(stack_id))

CUMEM_STRUCT_FIELDS(cumem_stack_frame_t, "CUMEM_STACK_FRAME_INIT",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(depth), CUMEM_FIELD(address), CUMEM_FIELD(function),
  CUMEM_FIELD(module), CUMEM_FIELD(offset))

// From core::DmaBuf.
#define CUMEM_DMABUF_FIELDS(copied, own)                                                   \
  own(struct_size) copied(fd) copied(offset) copied(length) copied(address) copied(device_id) \
  copied(whole_allocation)
CUMEM_OUT_STRUCT(cumem_dmabuf_t, "CUMEM_DMABUF_INIT", CUMEM_DMABUF_FIELDS)

CUMEM_STRUCT_FIELDS(cumem_unmap_event_t, "CUMEM_UNMAP_EVENT_INIT",
  CUMEM_FIELD(struct_size), CUMEM_FIELD(reason), CUMEM_FIELD(address), CUMEM_FIELD(size),
  CUMEM_FIELD(resource_id), CUMEM_FIELD(device_id), CUMEM_FIELD(reserved0))

#undef CUMEM_POOL_ATTRIBUTES_FIELDS
#undef CUMEM_DEVICE_PROPERTIES_FIELDS
#undef CUMEM_RESOURCE_PROPERTIES_FIELDS
#undef CUMEM_CACHING_STATISTICS_FIELDS
#undef CUMEM_RESOURCE_STATISTICS_FIELDS
#undef CUMEM_BUFFER_INFO_FIELDS
#undef CUMEM_KERNEL_ATTRIBUTES_FIELDS
#undef CUMEM_VIRTUAL_STATISTICS_FIELDS
#undef CUMEM_CAPTURE_INFO_FIELDS
#undef CUMEM_GRAPH_MEMORY_ATTRIBUTES_FIELDS
#undef CUMEM_BATCH_STATISTICS_FIELDS
#undef CUMEM_DMABUF_FIELDS
#undef CUMEM_OUT_STRUCT
#undef CUMEM_SKIP_ITEM
#undef CUMEM_COPY_ITEM
#undef CUMEM_FIELD_ITEM
#undef CUMEM_STRUCT_FIELDS
#undef CUMEM_FIELD

// Where `size` bytes of a struct end, in terms of its fields.
struct Coverage {
  size_t end = 0;             // end of the last field lying wholly within `size`
  const Field* cut = nullptr; // the field `size` ends inside of, if any
};

// Never throws: write_out_struct uses it after the work is done.
constexpr Coverage coverage(const StructLayout& l, size_t size) noexcept {
  Coverage c;
  for (size_t i = 0; i < l.count; ++i) {
    const Field& f = l.fields[i];
    if (f.end() <= size) {
      c.end = f.end();
    } else {
      if (f.offset < size) c.cut = &f;
      break;  // this field and all later ones lie past `size`
    }
  }
  return c;
}

}  // namespace cumem::capi
