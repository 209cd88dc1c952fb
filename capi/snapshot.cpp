// Seeing the memory: cumem_memory_history_*, cumem_snapshot_*,
// cumem_resource_statistics_json and cumem_memory_summary.
#include "capi.hpp"

#include "../src/resources/resource.hpp"
#include "../src/snapshot/history.hpp"
#include "../src/snapshot/oom.hpp"
#include "../src/snapshot/snapshot.hpp"
#include "../src/snapshot/statistics.hpp"

using namespace cumem::core;
using namespace cumem::capi;

namespace {

const cumem_memory_history_options_t default_history_options = CUMEM_MEMORY_HISTORY_OPTIONS_INIT;

// Like snprintf: at most capacity - 1 bytes and a NUL; the full length out.
void copy_text(const std::string& text, char* buffer, size_t capacity, size_t* out_length) {
  if (capacity > 0) {
    const size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
    std::memcpy(buffer, text.data(), n);
    buffer[n] = '\0';
  }
  *out_length = text.size();
}

void check_index(uint64_t index, size_t count, const char* what) {
  if (index >= count)
    fail(Status::out_of_range, "index " + std::to_string(index) + " is past the snapshot's " +
                                   std::to_string(count) + " " + what);
}

uint64_t fragmented(const snapshot::Totals& t) { return t.bytes_cached - t.largest_free_block; }

}  // namespace

CUMEM_EXPORT void cumem_memory_history_options_init(cumem_memory_history_options_t* options) {
  if (options) *options = default_history_options;
}

CUMEM_EXPORT cumem_status_t cumem_memory_history_start(const cumem_memory_history_options_t* options) {
  CUMEM_TRY
  const auto o = read_options(options, default_history_options, "options");
  history::Options h;
  if (o.max_entries) h.max_entries = o.max_entries;
  h.stacks = o.stacks != 0;
  history::start(h);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_memory_history_stop(void) {
  CUMEM_TRY
  history::stop();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_snapshot_take(const cumem_resource_t* resource,
                                                cumem_snapshot_t** out_snapshot) {
  CUMEM_TRY
  const Resource* r = optional(resource, "resource");
  out(out_snapshot, "out_snapshot");
  *out_snapshot = to_handle<cumem_snapshot_t>(snapshot::take(r));
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_snapshot_retain(cumem_snapshot_t* snapshot) {
  CUMEM_TRY
  retain_handle(snapshot, "snapshot");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_snapshot_release(cumem_snapshot_t* snapshot) {
  CUMEM_TRY
  release_handle(snapshot, "snapshot");
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_snapshot_get_totals(const cumem_snapshot_t* snapshot,
                                                      cumem_snapshot_totals_t* totals) {
  CUMEM_TRY
  const snapshot::Snapshot& s = object(snapshot, "snapshot");
  check_out_struct(totals, "totals");
  cumem_snapshot_totals_t t = CUMEM_SNAPSHOT_TOTALS_INIT;
  t.resource_count = static_cast<uint32_t>(s.resources.size());
  t.segment_count = s.segments.size();
  t.block_count = s.blocks.size();
  t.event_count = s.events.size();
  t.bytes_reserved = s.totals.bytes_reserved;
  t.bytes_in_use = s.totals.bytes_in_use;
  t.bytes_requested = s.totals.bytes_requested;
  t.bytes_cached = s.totals.bytes_cached;
  t.bytes_unmapped = s.totals.bytes_unmapped;
  t.largest_free_block = s.totals.largest_free_block;
  t.fragmented_bytes = fragmented(s.totals);
  t.events_recorded = s.recorded;
  t.events_dropped = s.dropped;
  t.time_ns = s.time_ns;
  write_out_struct(totals, t);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_snapshot_get_resource(const cumem_snapshot_t* snapshot,
                                                        uint64_t index,
                                                        cumem_snapshot_resource_t* resource) {
  CUMEM_TRY
  const snapshot::Snapshot& s = object(snapshot, "snapshot");
  check_out_struct(resource, "resource");
  check_index(index, s.resources.size(), "resources");
  const snapshot::ResourceEntry& e = s.resources[static_cast<size_t>(index)];
  cumem_snapshot_resource_t r = CUMEM_SNAPSHOT_RESOURCE_INIT;
  r.kind = static_cast<cumem_resource_kind_t>(e.properties.kind);
  r.id = e.id;
  r.upstream_id = e.upstream;
  r.device_id = e.properties.device_id;
  r.name = e.name.c_str();
  r.bytes_in_use = e.statistics.bytes_in_use;
  r.peak_bytes_in_use = e.statistics.peak_bytes_in_use;
  r.live_allocations = e.statistics.live_allocations;
  r.bytes_reserved = e.totals.bytes_reserved;
  r.bytes_cached = e.totals.bytes_cached;
  r.largest_free_block = e.totals.largest_free_block;
  write_out_struct(resource, r);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_snapshot_get_segment(const cumem_snapshot_t* snapshot,
                                                       uint64_t index,
                                                       cumem_snapshot_segment_t* segment) {
  CUMEM_TRY
  const snapshot::Snapshot& s = object(snapshot, "snapshot");
  check_out_struct(segment, "segment");
  check_index(index, s.segments.size(), "segments");
  const snapshot::Segment& g = s.segments[static_cast<size_t>(index)];
  cumem_snapshot_segment_t out_segment = CUMEM_SNAPSHOT_SEGMENT_INIT;
  out_segment.kind = static_cast<cumem_segment_kind_t>(g.kind);
  out_segment.resource_id = g.resource;
  out_segment.address = g.address;
  out_segment.size = g.size;
  out_segment.stream = g.stream;
  out_segment.device_id = g.device;
  out_segment.first_block = g.first_block;
  out_segment.block_count = g.block_count;
  write_out_struct(segment, out_segment);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_snapshot_get_block(const cumem_snapshot_t* snapshot,
                                                     uint64_t index,
                                                     cumem_snapshot_block_t* block) {
  CUMEM_TRY
  const snapshot::Snapshot& s = object(snapshot, "snapshot");
  check_out_struct(block, "block");
  check_index(index, s.blocks.size(), "blocks");
  const snapshot::Block& b = s.blocks[static_cast<size_t>(index)];
  cumem_snapshot_block_t out_block = CUMEM_SNAPSHOT_BLOCK_INIT;
  out_block.state = static_cast<cumem_block_state_t>(b.state);
  out_block.address = b.address;
  out_block.size = b.size;
  out_block.requested_size = b.requested_size;
  out_block.stream = b.stream;
  out_block.segment = b.segment;
  out_block.stack_id = b.stack;
  write_out_struct(block, out_block);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_snapshot_get_event(const cumem_snapshot_t* snapshot,
                                                     uint64_t index, cumem_memory_event_t* event) {
  CUMEM_TRY
  const snapshot::Snapshot& s = object(snapshot, "snapshot");
  check_out_struct(event, "event");
  check_index(index, s.events.size(), "events");
  const history::Event& e = s.events[static_cast<size_t>(index)];
  cumem_memory_event_t out_event = CUMEM_MEMORY_EVENT_INIT;
  out_event.action = static_cast<cumem_memory_action_t>(e.action);
  out_event.time_ns = e.time_ns;
  out_event.address = e.address;
  out_event.size = e.size;
  out_event.stream = e.stream;
  out_event.resource_id = e.resource;
  out_event.detail = e.detail;
  out_event.thread_id = e.thread;
  out_event.stack_id = e.stack;
  write_out_struct(event, out_event);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_snapshot_get_frame(const cumem_snapshot_t* snapshot,
                                                     uint32_t stack_id, uint32_t index,
                                                     cumem_stack_frame_t* frame) {
  CUMEM_TRY
  const snapshot::Snapshot& s = object(snapshot, "snapshot");
  check_out_struct(frame, "frame");
  const snapshot::StackEntry* st = s.stack(stack_id);
  if (!st)
    fail(Status::not_found, "the snapshot has no stack " + std::to_string(stack_id) +
                                (stack_id == 0 ? " (0 means none)" : ""));
  if (index >= st->frames.size())
    fail(Status::out_of_range, "frame " + std::to_string(index) + " is past the " +
                                   std::to_string(st->frames.size()) + " frames of stack " +
                                   std::to_string(stack_id));
  const snapshot::Frame& f = st->frames[index];
  cumem_stack_frame_t out_frame = CUMEM_STACK_FRAME_INIT;
  out_frame.depth = static_cast<uint32_t>(st->frames.size());
  out_frame.address = f.address;
  out_frame.function = f.function.c_str();
  out_frame.module = f.module.c_str();
  out_frame.offset = f.offset;
  write_out_struct(frame, out_frame);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_snapshot_to_json(const cumem_snapshot_t* snapshot,
                                                   const char** out_json, size_t* out_length) {
  CUMEM_TRY
  const snapshot::Snapshot& s = object(snapshot, "snapshot");
  out(out_json, "out_json");
  out(out_length, "out_length");
  const std::string& json = s.json();
  *out_json = json.c_str();
  *out_length = json.size();
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_snapshot_write_json(const cumem_snapshot_t* snapshot,
                                                      const char* path) {
  CUMEM_TRY
  const snapshot::Snapshot& s = object(snapshot, "snapshot");
  if (!path) null_argument("path");
  snapshot::write_file(path, s.json());
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_resource_statistics_json(const cumem_resource_t* resource,
                                                           char* buffer, size_t capacity,
                                                           size_t* out_length) {
  CUMEM_TRY
  const Resource* r = optional(resource, "resource");
  if (!buffer && capacity > 0) null_argument("buffer");
  out(out_length, "out_length");
  copy_text(snapshot::statistics_json(r), buffer, capacity, out_length);
  CUMEM_CATCH
}

CUMEM_EXPORT cumem_status_t cumem_memory_summary(char* buffer, size_t capacity, size_t* out_length) {
  CUMEM_TRY
  if (!buffer && capacity > 0) null_argument("buffer");
  out(out_length, "out_length");
  copy_text(snapshot::memory_summary(), buffer, capacity, out_length);
  CUMEM_CATCH
}
