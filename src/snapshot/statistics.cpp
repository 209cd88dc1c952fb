#include "statistics.hpp"

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "../error.hpp"
#include "../resources/adaptor.hpp"
#include "../resources/tracking_resource.hpp"
#include "names.hpp"
#include "registry.hpp"

namespace cumem::core::snapshot {

ResourceEntry describe_resource(const Resource& r) {
  ResourceEntry e;
  e.id = r.id();
  if (const auto* a = dynamic_cast<const Adaptor*>(&r)) e.upstream = a->upstream().id();
  e.name = r.describe();
  e.properties = r.properties();
  e.statistics = r.statistics();
  try {
    if (const auto* c = dynamic_cast<const Caching*>(&r)) e.caching = c->caching_statistics();
    if (const auto* p = dynamic_cast<const PoolResource*>(&r)) e.pool = p->pool_get_attributes();
    if (const auto* v = dynamic_cast<const VirtualResource*>(&r))
      e.virtual_statistics = v->virtual_statistics();
    if (const auto* t = dynamic_cast<const Tracking*>(&r)) {
      uint64_t count = 0, bytes = 0;
      t->outstanding(count, bytes);
      e.tracking = std::make_pair(count, bytes);
    }
  } catch (const std::exception& x) {
    e.error = x.what();
  }
  return e;
}

namespace {

std::vector<Ref<Resource>> stack_or_all(const Resource* root) {
  std::vector<Ref<Resource>> out;
  if (!root) return live_resources();
  for (const Resource* r = root; r;) {
    out.push_back(Ref<Resource>::share(const_cast<Resource*>(r)));
    const auto* a = dynamic_cast<const Adaptor*>(r);
    r = a ? &a->upstream() : nullptr;
  }
  return out;
}

std::string bytes_text(uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(text, sizeof text, "%.2f %s", value, units[unit]);
  return text;
}

}  // namespace

std::string statistics_json(const Resource* root) {
  Json j;
  j.begin_object().field("schema", "cumem.statistics").field("version", 1);
  j.field("scope", root ? "stack" : "process");
  j.key("resources").begin_array();
  for (const auto& r : stack_or_all(root)) write_resource(j, describe_resource(*r), false);
  j.end_array().end_object();
  return j.take();
}

std::string memory_summary() {
  std::vector<ResourceEntry> entries;
  for (const auto& r : live_resources()) entries.push_back(describe_resource(*r));
  std::unordered_map<uint64_t, const ResourceEntry*> by_id;
  std::unordered_set<uint64_t> upstreams;
  for (const ResourceEntry& e : entries) {
    by_id[e.id] = &e;
    if (e.upstream) upstreams.insert(e.upstream);
  }
  uint64_t in_use = 0, reserved = 0;
  for (const ResourceEntry& e : entries) {
    // What the bottom of each stack holds: the memory taken from the system.
    if (e.upstream) continue;
    in_use += e.statistics.bytes_in_use;
    reserved += e.pool ? e.pool->reserved_mem_current : e.statistics.bytes_in_use;
  }
  std::string out = "libcumem memory summary (pid " + std::to_string(getpid()) + "): " +
                    std::to_string(entries.size()) + " live resource(s); at the bottom of the " +
                    "stacks " + bytes_text(in_use) + " in use, " + bytes_text(reserved) +
                    " reserved\n";
  out += std::string("memory history: ") + (history::on() ? "on" : "off") + "\n";
  std::unordered_set<uint64_t> shown;
  std::function<void(const ResourceEntry&, int)> show = [&](const ResourceEntry& e, int depth) {
    const std::string indent(static_cast<size_t>(2 + 4 * depth), ' ');
    std::string line = indent + "#" + std::to_string(e.id) + " " + e.name + " [" +
                       kind_name(e.properties.kind) + ", " + memory_kind_name(e.properties.memory_kind);
    if (e.properties.device_id >= 0) line += ", device " + std::to_string(e.properties.device_id);
    line += "]";
    if (shown.count(e.id)) {
      out += line + " (above)\n";
      return;
    }
    shown.insert(e.id);
    out += line + "\n";
    const ResourceStatistics& s = e.statistics;
    out += indent + "    in use " + bytes_text(s.bytes_in_use) + " (peak " +
           bytes_text(s.peak_bytes_in_use) + ") in " + std::to_string(s.live_allocations) +
           " allocation(s), " + std::to_string(s.total_allocations) + " made\n";
    if (e.caching) {
      const CachingStatistics& c = *e.caching;
      out += indent + "    reserved " + bytes_text(c.bytes_reserved) + " (peak " +
             bytes_text(c.peak_bytes_reserved) + "), cached " + bytes_text(c.bytes_cached) +
             "; hits " + std::to_string(c.hits) + ", misses " + std::to_string(c.misses) +
             ", stream reuses " + std::to_string(c.stream_reuses) + ", out-of-memory retries " +
             std::to_string(c.oom_retries);
      if (c.pages_mapped) out += ", pages mapped " + std::to_string(c.pages_mapped) +
                                 ", unmapped " + std::to_string(c.pages_unmapped) +
                                 ", recycles " + std::to_string(c.recycles) + " (" +
                                 std::to_string(c.recycle_waits) + " after a wait)";
      out += "\n";
    }
    if (e.pool) {
      const PoolAttributes& p = *e.pool;
      out += indent + "    pool: reserved " + bytes_text(p.reserved_mem_current) + " (high " +
             bytes_text(p.reserved_mem_high) + "), used " + bytes_text(p.used_mem_current) +
             " (high " + bytes_text(p.used_mem_high) + "), release threshold " +
             (p.release_threshold == UINT64_MAX ? std::string("none (keeps all)")
                                                : bytes_text(p.release_threshold)) +
             "\n";
    }
    if (e.virtual_statistics) {
      const VirtualStatistics& v = *e.virtual_statistics;
      out += indent + "    virtual: mapped " + bytes_text(v.bytes_mapped) + ", reserved " +
             bytes_text(v.bytes_reserved) + ", pending " + bytes_text(v.bytes_pending) +
             ", chunks live " + std::to_string(v.chunks_created - v.chunks_released) + "\n";
    }
    if (e.tracking)
      out += indent + "    tracking: " + std::to_string(e.tracking->first) + " outstanding, " +
             bytes_text(e.tracking->second) + "\n";
    if (!e.error.empty()) out += indent + "    (could not read all: " + e.error + ")\n";
    if (e.upstream) {
      const auto it = by_id.find(e.upstream);
      if (it != by_id.end()) show(*it->second, depth + 1);
    }
  };
  for (const ResourceEntry& e : entries)
    if (!upstreams.count(e.id)) show(e, 0);
  // Upstreams whose adaptors are gone meanwhile (or cycles, which cannot be).
  for (const ResourceEntry& e : entries)
    if (!shown.count(e.id)) show(e, 0);
  return out;
}

}  // namespace cumem::core::snapshot
