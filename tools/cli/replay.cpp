// cumem replay FILE.csv [-r STACK]...: a logging adaptor's CSV replayed
// against resource stacks, one after another, in the log's order on one
// thread (RMM's replay benchmark as a tool): the time each takes, its peak
// in use and peak reserved, and the worst fragmentation seen.
#include <unistd.h>

#include <cumem/cumem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "../../src/snapshot/json.hpp"
#include "cli.hpp"

namespace cumem_cli {

const char* const kReplayUsage =
    "usage: cumem replay FILE.csv [-r STACK]... [--device N] [--json] [--no-progress]\n"
    "\n"
    "Replays the allocations and frees of a logging adaptor's CSV (the lines\n"
    "time_ns,thread,operation,ptr,size,stream of cumem_logging_resource_create) in\n"
    "their order, on one thread, against each STACK in turn, and prints for each the\n"
    "time it took, the peak in use, the peak reserved (what the stack took from the\n"
    "resource at its bottom), the overhead (reserved over in use at the peaks) and the\n"
    "worst fragmentation seen (the free bytes outside the largest free block, over\n"
    "all free bytes; sampled 100 times along the replay, outside the timing).\n"
    "\n"
    "  -r, --resource STACK  a resource, or adaptors over one, top first, joined by ':':\n"
    "                          host, device, pinned, managed, legacy_device  (a resource)\n"
    "                          caching:STACK, expandable:STACK (device memory),\n"
    "                          limit=BYTES:STACK (at most BYTES in use; K, M, G: KiB, MiB, GiB)\n"
    "                        given several times, each is replayed; default: host and\n"
    "                        caching:host without a GPU, device and caching:device with one\n"
    "  --device N            the device of the device kinds (default 0)\n"
    "  --json                one JSON object instead of the table\n"
    "  --no-progress         no progress bar (it is shown on long replays only when\n"
    "                        stderr is a terminal)\n"
    "\n"
    "Streams of the log map to streams of the replay (the legacy and per-thread default\n"
    "streams to those, any other to a new stream) for device memory, and to none for\n"
    "host memory. An allocation the stack cannot serve is counted, its free skipped,\n"
    "and the exit status is 3.\n";

namespace {

using cumem::core::snapshot::Json;

enum class Op { allocate, deallocate };
struct Line {
  Op op;
  uint64_t ptr;
  uint64_t size;
  uint64_t stream;
};

struct Trace {
  std::vector<Line> lines;
  uint64_t allocations = 0, frees = 0, failed_in_log = 0, peak_in_use = 0;
};

uint64_t parse_pointer(const std::string& field, size_t line) {
  if (field == "(nil)" || field == "0" || field == "0x0") return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(field.c_str(), &end, 16);
  if (end == field.c_str() || *end != '\0')
    throw Failure("line " + std::to_string(line) + ": '" + field + "' is not a pointer");
  return v;
}

Trace read_trace(const std::string& path) {
  const std::string text = read_file(path);
  Trace t;
  size_t at = 0, number = 0;
  std::unordered_map<uint64_t, uint64_t> live;
  uint64_t in_use = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string row = text.substr(at, end - at);
    at = end + 1;
    ++number;
    if (!row.empty() && row.back() == '\r') row.pop_back();
    if (row.empty()) continue;
    if (number == 1) {
      if (row != "time_ns,thread,operation,ptr,size,stream")
        throw Failure("'" + path + "' is not a logging adaptor's CSV: its first line is not "
                      "time_ns,thread,operation,ptr,size,stream");
      continue;
    }
    std::vector<std::string> f;
    size_t start = 0;
    for (size_t i = 0; i <= row.size(); ++i)
      if (i == row.size() || row[i] == ',') {
        f.push_back(row.substr(start, i - start));
        start = i + 1;
      }
    if (f.size() != 6)
      throw Failure("line " + std::to_string(number) + " has " + std::to_string(f.size()) +
                    " fields, not 6");
    char* end_size = nullptr;
    const uint64_t size = std::strtoull(f[4].c_str(), &end_size, 10);
    if (f[4].empty() || *end_size != '\0')
      throw Failure("line " + std::to_string(number) + ": '" + f[4] + "' is not a size");
    Line l{Op::allocate, parse_pointer(f[3], number), size, parse_pointer(f[5], number)};
    if (f[2] == "allocate") {
      ++t.allocations;
      live[l.ptr] = size;
      in_use += size;
      t.peak_in_use = std::max(t.peak_in_use, in_use);
    } else if (f[2] == "deallocate") {
      l.op = Op::deallocate;
      ++t.frees;
      auto it = live.find(l.ptr);
      if (it != live.end()) {
        in_use -= it->second;
        live.erase(it);
      }
    } else if (f[2] == "allocate_failed") {
      ++t.failed_in_log;  // it failed when it was logged: not replayed
      continue;
    } else {
      throw Failure("line " + std::to_string(number) + ": unknown operation '" + f[2] + "'");
    }
    t.lines.push_back(l);
  }
  return t;
}

// A stack of resources made from its spec, released in order (top first).
struct Stack {
  std::string spec;
  std::vector<cumem_resource_t*> layers;  // top first
  cumem_device_t* device = nullptr;
  bool device_memory = false;
  std::map<uint64_t, cumem_stream_t*> streams;
  ~Stack() {
    for (auto& [value, s] : streams) cumem_stream_release(s);
    for (cumem_resource_t* r : layers) cumem_resource_release(r);
    cumem_device_release(device);
  }
  cumem_resource_t* top() const { return layers.front(); }
  cumem_resource_t* bottom() const { return layers.back(); }
};

[[noreturn]] void cumem_failed(const std::string& doing) {
  throw Failure(doing + ": " + cumem_last_error_message());
}

cumem_device_t* device_of(Stack& s, int ordinal) {
  if (!s.device && cumem_device_get(ordinal, &s.device) != CUMEM_SUCCESS)
    cumem_failed("stack '" + s.spec + "' needs device " + std::to_string(ordinal));
  return s.device;
}

// "64M", "1G", "4096": bytes, with K, M, G for KiB, MiB, GiB.
uint64_t parse_bytes(const std::string& text, const std::string& spec) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  uint64_t scale = 1;
  if (end && *end) {
    const std::string unit = end;
    if (unit == "K") scale = uint64_t{1} << 10;
    else if (unit == "M") scale = uint64_t{1} << 20;
    else if (unit == "G") scale = uint64_t{1} << 30;
    else scale = 0;
  }
  if (text.empty() || end == text.c_str() || scale == 0)
    throw UsageError("'limit=" + text + "' in stack '" + spec + "' is not a byte count (such as 64M)");
  return v * scale;
}

void make_layers(Stack& s, const std::string& spec, int ordinal) {
  const size_t colon = spec.find(':');
  const std::string head = spec.substr(0, colon);
  cumem_resource_t* r = nullptr;
  if (colon != std::string::npos) {
    const std::string rest = spec.substr(colon + 1);
    if (head.rfind("limit=", 0) == 0) {
      const uint64_t bytes = parse_bytes(head.substr(6), s.spec);
      make_layers(s, rest, ordinal);
      if (cumem_limit_resource_create(s.layers.front(), bytes, &r) != CUMEM_SUCCESS)
        cumem_failed("making " + head + " over '" + rest + "'");
      s.layers.insert(s.layers.begin(), r);
      return;
    }
    if (head != "caching" && head != "expandable")
      throw UsageError("'" + head + "' in stack '" + s.spec +
                       "' is not an adaptor (caching, expandable, limit=BYTES)");
    make_layers(s, rest, ordinal);
    cumem_caching_resource_options_t o = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
    o.expandable = head == "expandable" ? CUMEM_TRUE : CUMEM_FALSE;
    if (cumem_caching_resource_create_with_options(s.layers.front(), &o, &r) != CUMEM_SUCCESS)
      cumem_failed("making " + head + " over '" + rest + "'");
    s.layers.insert(s.layers.begin(), r);
    return;
  }
  cumem_status_t st;
  if (head == "host") {
    st = cumem_host_resource_create(nullptr, &r);
  } else if (head == "device") {
    st = cumem_device_resource_create(device_of(s, ordinal), nullptr, &r);
    s.device_memory = true;
  } else if (head == "pinned") {
    st = cumem_pinned_resource_create(device_of(s, ordinal), nullptr, &r);
    s.device_memory = true;  // stream-ordered: streams matter
  } else if (head == "managed") {
    st = cumem_managed_resource_create(device_of(s, ordinal), nullptr, &r);
    s.device_memory = true;
  } else if (head == "legacy_device") {
    st = cumem_legacy_device_resource_create(device_of(s, ordinal), &r);
    s.device_memory = true;
  } else {
    throw UsageError("'" + head + "' in stack '" + s.spec +
                     "' is not a resource (host, device, pinned, managed, legacy_device)");
  }
  if (st != CUMEM_SUCCESS) cumem_failed("making '" + head + "' for stack '" + s.spec + "'");
  s.layers.insert(s.layers.begin(), r);
}

cumem_stream_t* stream_for(Stack& s, uint64_t logged) {
  if (!s.device_memory || logged == 0 || logged == 1) return nullptr;  // the legacy default stream
  auto it = s.streams.find(logged);
  if (it != s.streams.end()) return it->second;
  cumem_stream_t* st = nullptr;
  const cumem_status_t status = logged == 2 ? cumem_stream_per_thread_default(s.device, &st)
                                            : cumem_stream_create(s.device, nullptr, &st);
  if (status != CUMEM_SUCCESS) cumem_failed("making a stream for the log's stream " + std::to_string(logged));
  s.streams.emplace(logged, st);
  return st;
}

struct Result {
  std::string spec;
  uint64_t time_ns = 0, peak_in_use = 0, peak_reserved = 0, failed = 0, unmatched = 0;
  double max_fragmentation = 0;
  uint64_t fragmented_bytes = 0;  // at the worst sample
};

// Free bytes outside the largest free block, over all free bytes, now.
double fragmentation(cumem_resource_t* top, uint64_t* fragmented) {
  cumem_snapshot_t* s = nullptr;
  if (cumem_snapshot_take(top, &s) != CUMEM_SUCCESS) cumem_failed("taking a snapshot");
  cumem_snapshot_totals_t t = CUMEM_SNAPSHOT_TOTALS_INIT;
  const cumem_status_t st = cumem_snapshot_get_totals(s, &t);
  cumem_snapshot_release(s);
  if (st != CUMEM_SUCCESS) cumem_failed("reading a snapshot");
  *fragmented = t.fragmented_bytes;
  return t.bytes_cached ? static_cast<double>(t.fragmented_bytes) / static_cast<double>(t.bytes_cached) : 0.0;
}

void progress(const std::string& spec, size_t done, size_t total, int& shown) {
  const int percent = static_cast<int>(done * 100 / (total ? total : 1));
  if (percent == shown) return;
  shown = percent;
  char bar[41];
  const int filled = percent * 40 / 100;
  for (int i = 0; i < 40; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[40] = '\0';
  std::fprintf(stderr, "\r%-20.20s [%s] %3d%% %zu/%zu", spec.c_str(), bar, percent, done, total);
  std::fflush(stderr);
}

Result replay(const Trace& trace, Stack& s, bool show_progress) {
  Result r;
  r.spec = s.spec;
  cumem_resource_reset_peak(s.top());
  cumem_resource_reset_peak(s.bottom());
  cumem_resource_pool_reset_highs(s.bottom());  // a pool's reserved_mem_high (others: not a pool)
  std::unordered_map<uint64_t, std::pair<void*, uint64_t>> live;
  std::unordered_map<uint64_t, bool> failed;
  const size_t total = trace.lines.size();
  const size_t every = std::max<size_t>(1, total / 100);
  int shown = -1;
  std::chrono::nanoseconds timed{0};
  for (size_t i = 0; i < total;) {
    const size_t until = std::min(total, i + every);
    const auto start = std::chrono::steady_clock::now();
    for (; i < until; ++i) {
      const Line& l = trace.lines[i];
      cumem_stream_t* stream = stream_for(s, l.stream);
      if (l.op == Op::allocate) {
        void* p = nullptr;
        const cumem_status_t st = cumem_resource_allocate_raw(s.top(), l.size, stream, &p);
        if (st == CUMEM_ERROR_OUT_OF_MEMORY) {
          ++r.failed;
          failed[l.ptr] = true;
          continue;
        }
        if (st != CUMEM_SUCCESS) cumem_failed("allocating " + std::to_string(l.size) + " bytes");
        live[l.ptr] = {p, l.size};
      } else {
        auto it = live.find(l.ptr);
        if (it == live.end()) {
          if (!failed.erase(l.ptr)) ++r.unmatched;  // allocated before the log began
          continue;
        }
        if (cumem_resource_deallocate_raw(s.top(), it->second.first, it->second.second, stream) !=
            CUMEM_SUCCESS)
          cumem_failed("freeing " + std::to_string(it->second.second) + " bytes");
        live.erase(it);
      }
    }
    timed += std::chrono::steady_clock::now() - start;
    uint64_t fragmented = 0;
    const double f = fragmentation(s.top(), &fragmented);
    if (f > r.max_fragmentation) {
      r.max_fragmentation = f;
      r.fragmented_bytes = fragmented;
    }
    if (show_progress) progress(s.spec, i, total, shown);
  }
  if (show_progress) std::fprintf(stderr, "\r%78s\r", "");
  r.time_ns = static_cast<uint64_t>(timed.count());
  cumem_resource_statistics_t top = CUMEM_RESOURCE_STATISTICS_INIT;
  if (cumem_resource_get_statistics(s.top(), &top) != CUMEM_SUCCESS) cumem_failed("reading statistics");
  r.peak_in_use = top.peak_bytes_in_use;
  // What the stack took: a cache's reserve, else a pool's, else what its
  // bottom resource handed out.
  cumem_caching_statistics_t c = CUMEM_CACHING_STATISTICS_INIT;
  cumem_pool_attributes_t a = CUMEM_POOL_ATTRIBUTES_INIT;
  cumem_resource_statistics_t bottom = CUMEM_RESOURCE_STATISTICS_INIT;
  if (cumem_caching_resource_get_statistics(s.top(), &c) == CUMEM_SUCCESS)
    r.peak_reserved = c.peak_bytes_reserved;
  else if (cumem_resource_pool_get_attributes(s.bottom(), &a) == CUMEM_SUCCESS)
    r.peak_reserved = a.reserved_mem_high;
  else if (cumem_resource_get_statistics(s.bottom(), &bottom) == CUMEM_SUCCESS)
    r.peak_reserved = bottom.peak_bytes_in_use;
  // Whatever the trace never freed goes back, so the next stack starts clean.
  for (const auto& [logged, a2] : live)
    cumem_resource_deallocate_raw(s.top(), a2.first, a2.second, nullptr);
  return r;
}

std::string percent(double v) {
  char t[32];
  std::snprintf(t, sizeof t, "%.1f%%", v * 100);
  return t;
}

}  // namespace

int replay_main(const Args& args) {
  std::string path;
  std::vector<std::string> specs;
  int ordinal = 0;
  bool json = false, no_progress = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-r" || a == "--resource") {
      if (i + 1 >= args.size()) throw UsageError(a + " needs a stack (host, caching:host, ...)");
      specs.push_back(args[++i]);
    } else if (a == "--device") {
      if (i + 1 >= args.size()) throw UsageError("--device needs an ordinal");
      char* end = nullptr;
      const long v = std::strtol(args[++i].c_str(), &end, 10);
      if (*end != '\0' || v < 0) throw UsageError("--device " + args[i] + " is not an ordinal");
      ordinal = static_cast<int>(v);
    } else if (a == "--json") {
      json = true;
    } else if (a == "--no-progress") {
      no_progress = true;
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown option '" + a + "'");
    } else if (path.empty()) {
      path = a;
    } else {
      throw UsageError("one CSV at a time ('" + path + "' and '" + a + "')");
    }
  }
  if (path.empty()) throw UsageError("which CSV? (a logging adaptor's log)");
  const Trace trace = read_trace(path);
  if (specs.empty()) {
    int32_t count = 0;
    const bool gpu = cumem_device_count(&count) == CUMEM_SUCCESS && count > 0;
    specs = gpu ? std::vector<std::string>{"device", "caching:device"}
                : std::vector<std::string>{"host", "caching:host"};
  }
  std::vector<std::unique_ptr<Stack>> stacks;
  for (const std::string& spec : specs) {
    auto s = std::make_unique<Stack>();
    s->spec = spec;
    make_layers(*s, spec, ordinal);
    stacks.push_back(std::move(s));
  }
  const bool show = !no_progress && !json && isatty(STDERR_FILENO) && trace.lines.size() >= 10000;
  std::vector<Result> results;
  for (auto& s : stacks) results.push_back(replay(trace, *s, show));
  bool any_failed = false;
  for (const Result& r : results) any_failed |= r.failed > 0;

  if (json) {
    Json j;
    j.begin_object().field("schema", "cumem.replay").field("version", 1).field("file", path);
    j.field("operations", static_cast<uint64_t>(trace.lines.size()))
        .field("allocations", trace.allocations)
        .field("frees", trace.frees)
        .field("failed_in_log", trace.failed_in_log)
        .field("trace_peak_in_use", trace.peak_in_use);
    j.key("stacks").begin_array();
    for (const Result& r : results) {
      j.begin_object()
          .field("stack", r.spec)
          .field("time_ns", r.time_ns)
          .field("ns_per_operation", trace.lines.empty() ? 0.0
                                                         : static_cast<double>(r.time_ns) /
                                                               static_cast<double>(trace.lines.size()))
          .field("peak_in_use", r.peak_in_use)
          .field("peak_reserved", r.peak_reserved)
          .field("max_fragmentation", r.max_fragmentation)
          .field("fragmented_bytes", r.fragmented_bytes)
          .field("failed_allocations", r.failed)
          .field("unmatched_frees", r.unmatched)
          .end_object();
    }
    j.end_array().end_object();
    std::printf("%s\n", j.text().c_str());
    return any_failed ? kOutOfMemory : kOk;
  }
  std::printf("replay of %s: %zu operations (%llu allocations, %llu frees), %s at most in use\n",
              path.c_str(), trace.lines.size(), static_cast<unsigned long long>(trace.allocations),
              static_cast<unsigned long long>(trace.frees), human_bytes(trace.peak_in_use).c_str());
  if (trace.failed_in_log)
    std::printf("(%llu allocations had failed when logged: not replayed)\n",
                static_cast<unsigned long long>(trace.failed_in_log));
  std::printf("%-22s %12s %9s %13s %13s %9s %14s %7s\n", "stack", "time", "ns/op", "peak in use",
              "peak reserved", "overhead", "fragmentation", "failed");
  for (const Result& r : results) {
    char time[32];
    std::snprintf(time, sizeof time, "%.3f ms", static_cast<double>(r.time_ns) / 1e6);
    const double per_op = trace.lines.empty() ? 0.0 : static_cast<double>(r.time_ns) / static_cast<double>(trace.lines.size());
    const double overhead = r.peak_in_use ? static_cast<double>(r.peak_reserved) / static_cast<double>(r.peak_in_use) - 1.0 : 0.0;
    std::printf("%-22s %12s %9.1f %13s %13s %9s %14s %7llu\n", r.spec.c_str(), time, per_op,
                human_bytes(r.peak_in_use).c_str(), human_bytes(r.peak_reserved).c_str(),
                percent(overhead).c_str(), percent(r.max_fragmentation).c_str(),
                static_cast<unsigned long long>(r.failed));
  }
  if (any_failed)
    std::printf("some allocations ran out of memory: their frees were skipped\n");
  return any_failed ? kOutOfMemory : kOk;
}

}  // namespace cumem_cli
