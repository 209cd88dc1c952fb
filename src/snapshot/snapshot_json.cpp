// The snapshot as JSON: schema "cumem.snapshot", version 1
// (docs/snapshot-schema.md says what each field means).
#include "../error.hpp"
#include "json.hpp"
#include "names.hpp"
#include "snapshot.hpp"
#include "statistics.hpp"

// The library's version, from meson.build (the header's version macros).
#ifndef CUMEM_VERSION_TEXT
#define CUMEM_VERSION_TEXT "unknown"
#endif

namespace cumem::core::snapshot {

const char* kind_name(ResourceKind kind) noexcept {
  switch (kind) {
    case ResourceKind::host: return "host";
    case ResourceKind::device: return "device";
    case ResourceKind::pinned: return "pinned";
    case ResourceKind::legacy_pinned: return "legacy_pinned";
    case ResourceKind::managed: return "managed";
    case ResourceKind::limit: return "limit";
    case ResourceKind::legacy_device: return "legacy_device";
    case ResourceKind::host_shared: return "host_shared";
    case ResourceKind::caching: return "caching";
    case ResourceKind::tracking: return "tracking";
    case ResourceKind::logging: return "logging";
    case ResourceKind::callback: return "callback";
    case ResourceKind::aligned: return "aligned";
    case ResourceKind::virtual_memory: return "virtual";
    case ResourceKind::graph_memory: return "graph_memory";
    case ResourceKind::failure_callback: return "failure_callback";
  }
  return "unknown";
}

const char* segment_kind_name(SegmentKind kind) noexcept {
  switch (kind) {
    case SegmentKind::segment: return "segment";
    case SegmentKind::small: return "small";
    case SegmentKind::expandable: return "expandable";
    case SegmentKind::virtual_range: return "virtual_range";
    case SegmentKind::allocation: return "allocation";
  }
  return "unknown";
}

const char* block_state_name(BlockState state) noexcept {
  switch (state) {
    case BlockState::in_use: return "in_use";
    case BlockState::cached: return "cached";
    case BlockState::unmapped: return "unmapped";
  }
  return "unknown";
}

namespace {

void write_totals(Json& j, const Totals& t) {
  j.begin_object()
      .field("segments", t.segments)
      .field("blocks", t.blocks)
      .field("bytes_reserved", t.bytes_reserved)
      .field("bytes_in_use", t.bytes_in_use)
      .field("bytes_requested", t.bytes_requested)
      .field("bytes_cached", t.bytes_cached)
      .field("bytes_unmapped", t.bytes_unmapped)
      .field("largest_free_block", t.largest_free_block)
      .field("fragmentation", t.fragmentation)
      .end_object();
}

void optional_id(Json& j, const char* key, uint64_t id) {
  j.key(key);
  if (id) j.value(id);
  else j.null();
}

}  // namespace

void write_resource(Json& j, const ResourceEntry& e, bool with_totals) {
  j.begin_object().field("id", e.id).field("kind", kind_name(e.properties.kind));
  j.field("name", e.name).field("device", e.properties.device_id);
  j.field("memory", memory_kind_name(e.properties.memory_kind));
  optional_id(j, "upstream", e.upstream);
  j.field("stream_ordered", e.properties.stream_ordered).field("is_pool", e.properties.is_pool);
  j.key("statistics").begin_object()
      .field("bytes_in_use", e.statistics.bytes_in_use)
      .field("peak_bytes_in_use", e.statistics.peak_bytes_in_use)
      .field("live_allocations", e.statistics.live_allocations)
      .field("total_allocations", e.statistics.total_allocations)
      .end_object();
  if (e.caching) {
    const CachingStatistics& c = *e.caching;
    j.key("caching").begin_object()
        .field("bytes_cached", c.bytes_cached)
        .field("bytes_reserved", c.bytes_reserved)
        .field("peak_bytes_reserved", c.peak_bytes_reserved)
        .field("hits", c.hits)
        .field("misses", c.misses)
        .field("stream_reuses", c.stream_reuses)
        .field("oom_retries", c.oom_retries)
        .field("pages_mapped", c.pages_mapped)
        .field("pages_unmapped", c.pages_unmapped)
        .field("recycles", c.recycles)
        .field("recycle_waits", c.recycle_waits)
        .end_object();
  }
  if (e.pool) {
    const PoolAttributes& p = *e.pool;
    j.key("pool").begin_object()
        .field("release_threshold", p.release_threshold)
        .field("reserved_mem_current", p.reserved_mem_current)
        .field("reserved_mem_high", p.reserved_mem_high)
        .field("used_mem_current", p.used_mem_current)
        .field("used_mem_high", p.used_mem_high)
        .field("reuse_follow_event_dependencies", p.reuse_follow_event_dependencies)
        .field("reuse_allow_opportunistic", p.reuse_allow_opportunistic)
        .field("reuse_allow_internal_dependencies", p.reuse_allow_internal_dependencies)
        .end_object();
  }
  if (e.virtual_statistics) {
    const VirtualStatistics& v = *e.virtual_statistics;
    j.key("virtual").begin_object()
        .field("granularity", v.granularity)
        .field("chunk_size", v.chunk_size)
        .field("bytes_mapped", v.bytes_mapped)
        .field("bytes_reserved", v.bytes_reserved)
        .field("bytes_pending", v.bytes_pending)
        .field("grows_in_place", v.grows_in_place)
        .field("grows_moved", v.grows_moved)
        .field("shrinks", v.shrinks)
        .field("chunks_created", v.chunks_created)
        .field("chunks_released", v.chunks_released)
        .end_object();
  }
  if (e.tracking) {
    j.key("tracking").begin_object()
        .field("outstanding", e.tracking->first)
        .field("bytes", e.tracking->second)
        .end_object();
  }
  if (!e.error.empty()) j.field("error", e.error);
  if (with_totals) {
    j.key("totals");
    write_totals(j, e.totals);
  }
  j.end_object();
}

namespace {

void write_event(Json& j, const history::Event& e) {
  j.begin_object().field("action", history::action_name(e.action)).field("time_ns", e.time_ns);
  optional_id(j, "resource", e.resource);
  j.field("address", e.address).field("size", e.size).field("stream", e.stream);
  j.field("thread", e.thread);
  optional_id(j, "stack", e.stack);
  switch (e.action) {
    case history::Action::out_of_memory: j.field("device_free", e.detail); break;
    case history::Action::trim: j.field("keep_bytes", e.detail); break;
    case history::Action::capture_begin: j.field("mode", e.detail); break;
    default: break;
  }
  j.end_object();
}

}  // namespace

std::string to_json(const Snapshot& s) {
  Json j;
  j.begin_object()
      .field("schema", "cumem.snapshot")
      .field("version", 1)
      .field("library_version", CUMEM_VERSION_TEXT)
      .field("time_ns", s.time_ns)
      .field("pid", s.pid)
      .field("scope", s.whole_process ? "process" : "stack");
  j.key("history").begin_object()
      .field("recording", s.recording)
      .field("stacks", s.recording_stacks)
      .field("max_entries", s.max_entries)
      .field("recorded", s.recorded)
      .field("dropped", s.dropped)
      .end_object();
  j.key("totals");
  write_totals(j, s.totals);
  j.key("resources").begin_array();
  for (const ResourceEntry& e : s.resources) write_resource(j, e, true);
  j.end_array();
  j.key("segments").begin_array();
  for (const Segment& seg : s.segments) {
    j.begin_object()
        .field("resource", seg.resource)
        .field("kind", segment_kind_name(seg.kind))
        .field("address", seg.address)
        .field("size", seg.size)
        .field("stream", seg.stream)
        .field("device", seg.device);
    j.key("blocks").begin_array();
    for (size_t i = seg.first_block; i < seg.first_block + seg.block_count; ++i) {
      const Block& b = s.blocks[i];
      j.begin_object()
          .field("address", b.address)
          .field("size", b.size)
          .field("state", block_state_name(b.state));
      j.key("requested_size");
      if (b.requested_size) j.value(b.requested_size);
      else j.null();
      j.field("stream", b.stream);
      optional_id(j, "stack", b.stack);
      j.end_object();
    }
    j.end_array().end_object();
  }
  j.end_array();
  j.key("events").begin_array();
  for (const history::Event& e : s.events) write_event(j, e);
  j.end_array();
  j.key("stacks").begin_array();
  for (const StackEntry& st : s.stacks) {
    j.begin_object().field("id", st.id).key("frames").begin_array();
    for (const Frame& f : st.frames)
      j.begin_object()
          .field("address", f.address)
          .field("function", f.function)
          .field("module", f.module)
          .field("offset", f.offset)
          .end_object();
    j.end_array().end_object();
  }
  j.end_array();
  j.end_object();
  return j.take();
}

}  // namespace cumem::core::snapshot
