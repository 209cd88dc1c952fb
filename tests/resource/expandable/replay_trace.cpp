// Replays a training workload's allocations (traces/*.trace.gz, recorded on
// the H200 by tools/probes/trace_training.py: PyTorch's requests through
// libcumem's expandable cache, the same training twice in one process) on
// the expandable cache (default pages) over the VMM fake driver, and checks
// what issue 18 promises of it: at each run's peak the cache holds no more
// than --max-ratio times the bytes in use, and a later run ends holding at
// most --max-drift (a fraction) more than the first did. Reads the
// uncompressed trace on standard input (replay_trace.py feeds it).
// Options: --page-size BYTES, --verbose (each new peak of a later run),
// --breakdown-at LINE (after that trace line, what each address range
// holds in use and cached, from a snapshot; the run lines name the lines of
// the peaks),
// --lag N (the GPU's work lags N requests behind the host: each request
// queues work on the stream, and what is more than N requests old is done;
// 0, the default: all work is done at once), --max-waits N (at most N
// device waits in all runs: recycles of fragments whose work was not known
// done; with no lag there should be none).
// Prints one line per run: held / in use at the peaks, and in brackets the
// run's additions (held and in use above what they were at the run's
// start, as bench/python/memory_harness.py measures on the GPU); exits 1
// when a promise is broken, 2 on a bad trace or a failed call.
// pytorch_policy_model.py replays the same traces with PyTorch's rules.
//
// Trace lines: "a SIZE [THREAD]" allocates (the k-th "a" is block k),
// "f K [THREAD]" frees block k, "trim" gives every cached block back (the
// benchmark's baseline), "run" ends a training run; "#" lines are comments.
// THREAD is the recorded thread's id: each recorded thread gets a thread of
// its own here, and its requests run on it, one request at a time in the
// trace's order (PyTorch's backward pass allocates on an autograd thread,
// so the cache's per-thread fronts see what they saw on the GPU). Without
// it, a request runs on the main thread.
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cumem/cumem.h"
#include "fake_vmm.hpp"
#include "host_upstream.hpp"

namespace {

constexpr uint64_t GiB = uint64_t{1} << 30;
[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "replay_trace: %s\n", what.c_str());
  std::exit(2);
}

void check(cumem_status_t s, const char* what) {
  if (s != CUMEM_SUCCESS)
    die(std::string(what) + ": " + cumem_status_string(s) + ": " + cumem_last_error_message());
}

struct Block {
  void* ptr = nullptr;
  size_t size = 0;
};

// The recorded threads: call(id, f) runs f on the thread of recorded id
// `id` (made at its first request; id 0: the calling thread) and returns
// when it has run, so that the requests keep the trace's order.
class Threads {
 public:
  ~Threads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    ready_.notify_all();
    for (auto& [id, t] : threads_) t.join();
  }
  void call(uint64_t id, const std::function<void()>& f) {
    if (id == 0) return f();
    if (threads_.find(id) == threads_.end())
      threads_.emplace(id, std::thread([this, id] { serve(id); }));
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = &f;
    turn_ = id;
    ready_.notify_all();
    done_.wait(lock, [&] { return job_ == nullptr; });
  }
  size_t count() const { return threads_.size(); }

 private:
  void serve(uint64_t id) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ready_.wait(lock, [&] { return stop_ || (job_ && turn_ == id); });
      if (stop_) return;
      (*job_)();  // under the lock: one request at a time anyway
      job_ = nullptr;
      done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_, done_;
  const std::function<void()>* job_ = nullptr;
  uint64_t turn_ = 0;
  bool stop_ = false;
  std::map<uint64_t, std::thread> threads_;
};

// The recorded thread of a request line, after its number at `rest` (0
// when the line has none).
uint64_t thread_of(const char* rest) {
  char* end = nullptr;
  const uint64_t id = std::strtoull(rest, &end, 10);
  return end == rest ? 0 : id;
}

// One run's numbers: the peak of what the cache holds (mapped pages plus
// the upstream's small blocks) and of the bytes in use, and what it holds
// at the end.
// `recycles`: allocations that unmapped fragments' pages; `waits`: of
// those, the ones that waited for the device first (cumem_caching_statistics_t's
// recycles and recycle_waits);
// `pages_mapped`: pages the run's allocations mapped; `pages_unmapped`:
// pages the run unmapped (its recycles, and the loans its frees gave back).
struct Run {
  uint64_t peak_held = 0, peak_in_use = 0, end_held = 0;
  // At the run's start (the trim, or the end of the run before): the
  // benchmark's ratio on the GPU counts only what the run added to these
  // (bench/python/memory_harness.py: taken and peak in use since the start).
  uint64_t start_held = 0, start_in_use = 0;
  uint64_t end_pages = 0, end_small = 0;  // end_held: mapped pages + the upstream's small blocks
  uint64_t recycles = 0, waits = 0, pages_mapped = 0;
  uint64_t start_unmapped = 0, pages_unmapped = 0;  // the cache's count at the start; the run's
  size_t peak_line = 0, peak_in_use_line = 0;  // the trace lines that took them to their peaks
};

cumem_caching_statistics_t statistics(const cumem_resource_t* cache) {
  cumem_caching_statistics_t s = CUMEM_CACHING_STATISTICS_INIT;
  check(cumem_caching_resource_get_statistics(cache, &s), "the cache's statistics");
  return s;
}

// What the cache holds, from a snapshot (--breakdown-at LINE): per address
// range, the bytes in use and cached, and the cached bytes by size.
void breakdown(const cumem_resource_t* cache, size_t line) {
  cumem_snapshot_t* snap = nullptr;
  check(cumem_snapshot_take(cache, &snap), "cumem_snapshot_take");
  cumem_snapshot_totals_t t = CUMEM_SNAPSHOT_TOTALS_INIT;
  check(cumem_snapshot_get_totals(snap, &t), "the snapshot's totals");
  std::printf("line %zu: reserved %.1f MiB, in use %.1f MiB, cached %.1f MiB\n", line,
              double(t.bytes_reserved) / (1 << 20), double(t.bytes_in_use) / (1 << 20),
              double(t.bytes_cached) / (1 << 20));
  const uint64_t MiB = 1 << 20;
  uint64_t small_use = 0, small_cached = 0;
  for (uint64_t i = 0; i < t.segment_count; ++i) {
    cumem_snapshot_segment_t seg = CUMEM_SNAPSHOT_SEGMENT_INIT;
    check(cumem_snapshot_get_segment(snap, i, &seg), "a segment");
    if (seg.kind != CUMEM_SEGMENT_EXPANDABLE && seg.kind != CUMEM_SEGMENT_SMALL) continue;
    uint64_t use = 0, cached = 0, n_cached = 0, by[5] = {}, nby[5] = {};
    for (uint64_t k = seg.first_block; k < seg.first_block + seg.block_count; ++k) {
      cumem_snapshot_block_t b = CUMEM_SNAPSHOT_BLOCK_INIT;
      check(cumem_snapshot_get_block(snap, k, &b), "a block");
      if (b.state == CUMEM_BLOCK_IN_USE) use += b.size;
      if (b.state == CUMEM_BLOCK_CACHED) {
        cached += b.size;
        ++n_cached;
        const int c = b.size <= 128 << 10 ? 0 : b.size <= MiB ? 1 : b.size < 2 * MiB ? 2 : b.size < 16 * MiB ? 3 : 4;
        by[c] += b.size;
        ++nby[c];
      }
    }
    if (seg.kind == CUMEM_SEGMENT_SMALL) {
      small_use += use;
      small_cached += cached;
      continue;
    }
    std::printf("  range %llx: in use %.1f MiB, cached %.1f MiB in %llu (<=128K %.1f/%llu, <=1M "
                "%.1f/%llu, <2M %.1f/%llu, <16M %.1f/%llu, >=16M %.1f/%llu)\n",
                static_cast<unsigned long long>(seg.address), double(use) / MiB, double(cached) / MiB,
                static_cast<unsigned long long>(n_cached), double(by[0]) / MiB,
                static_cast<unsigned long long>(nby[0]), double(by[1]) / MiB,
                static_cast<unsigned long long>(nby[1]), double(by[2]) / MiB,
                static_cast<unsigned long long>(nby[2]), double(by[3]) / MiB,
                static_cast<unsigned long long>(nby[3]), double(by[4]) / MiB,
                static_cast<unsigned long long>(nby[4]));
  }
  std::printf("  small blocks (the upstream's): in use %.1f MiB, cached %.1f MiB\n",
              double(small_use) / MiB, double(small_cached) / MiB);
  cumem_snapshot_release(snap);
}

}  // namespace

int main(int argc, char** argv) {
  double max_ratio = 1.05, max_drift = 0;
  bool verbose = false;
  uint64_t page_size = 0, lag = 0, max_waits = UINT64_MAX;
  size_t breakdown_at = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--max-ratio") == 0 && i + 1 < argc) max_ratio = std::atof(argv[++i]);
    else if (std::strcmp(argv[i], "--max-drift") == 0 && i + 1 < argc) max_drift = std::atof(argv[++i]);
    else if (std::strcmp(argv[i], "--verbose") == 0) verbose = true;
    else if (std::strcmp(argv[i], "--breakdown-at") == 0 && i + 1 < argc) breakdown_at = std::strtoull(argv[++i], nullptr, 0);
    else if (std::strcmp(argv[i], "--max-waits") == 0 && i + 1 < argc) max_waits = std::strtoull(argv[++i], nullptr, 0);
    else if (std::strcmp(argv[i], "--lag") == 0 && i + 1 < argc) lag = std::strtoull(argv[++i], nullptr, 0);
    else if (std::strcmp(argv[i], "--page-size") == 0 && i + 1 < argc) page_size = std::strtoull(argv[++i], nullptr, 0);
  }
  FakeVmm fake;
  if (!fake.missing().empty()) die(fake.missing());
  fake.set_memory(140 * GiB);  // an H200's; nothing is touched, the fake maps on demand
  cumem_device_t* device = nullptr;
  check(cumem_device_get(0, &device), "cumem_device_get");
  cumem_resource_t* upstream = nullptr;
  check(host_upstream_create(device, &upstream), "the upstream (a callback resource)");
  cumem_caching_resource_options_t o = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  o.expandable = CUMEM_TRUE;
  o.page_size = page_size;
  cumem_resource_t* cache = nullptr;
  check(cumem_caching_resource_create_with_options(upstream, &o, &cache), "the expandable cache");
  // PyTorch's default stream: every request of the traces is on it.
  cumem_stream_t* stream = nullptr;

  std::vector<Block> blocks;
  std::vector<Run> runs(1);
  Threads threads;
  uint64_t in_use = 0;
  auto held = [&] { return fake.counts().live_bytes + static_cast<uint64_t>(upstream_bytes.load()); };
  std::string line;
  size_t number = 0;
  while (std::getline(std::cin, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    if (lag > 0 && (line[0] == 'a' || line[0] == 'f')) {
      fake.busy_stream(CU_STREAM_LEGACY);  // the request's kernels
      fake.finish_stream_behind(CU_STREAM_LEGACY, lag);
    }
    Run& run = runs.back();
    if (number == breakdown_at + 1 && breakdown_at != 0) breakdown(cache, breakdown_at);
    if (line[0] == 'a') {
      Block b;
      char* rest = nullptr;
      b.size = std::strtoull(line.c_str() + 2, &rest, 10);
      const cumem_caching_statistics_t before = statistics(cache);
      threads.call(thread_of(rest), [&] {
        check(cumem_resource_allocate_raw(cache, b.size, stream, &b.ptr), "an allocation");
      });
      const cumem_caching_statistics_t after = statistics(cache);
      run.recycles += after.recycles - before.recycles;
      run.waits += after.recycle_waits - before.recycle_waits;
      run.pages_mapped += after.pages_mapped - before.pages_mapped;
      blocks.push_back(b);
      in_use += b.size;
      if (in_use > run.peak_in_use) {
        run.peak_in_use = in_use;
        run.peak_in_use_line = number;
      }
      const uint64_t h = held();
      if (h > run.peak_held) {
        if (verbose && runs.size() > 1) {
          const cumem_caching_statistics_t cs = statistics(cache);
          std::printf("run %zu line %zu: %zu bytes took the peak to %.3f GiB; %.3f GiB in use, "
                      "%.3f GiB cached\n", runs.size(), number, b.size, double(h) / GiB,
                      double(in_use) / GiB, double(cs.bytes_cached) / GiB);
        }
        run.peak_held = h;
        run.peak_line = number;
      }
    } else if (line[0] == 'f') {
      char* rest = nullptr;
      const size_t k = std::strtoull(line.c_str() + 2, &rest, 10);
      if (k >= blocks.size() || !blocks[k].ptr) die("line " + std::to_string(number) + ": no block " + std::to_string(k));
      threads.call(thread_of(rest), [&] {
        check(cumem_resource_deallocate_raw(cache, blocks[k].ptr, blocks[k].size, stream), "a free");
      });
      in_use -= blocks[k].size;
      blocks[k].ptr = nullptr;
    } else if (line == "trim") {
      check(cumem_caching_resource_trim(cache, 0), "cumem_caching_resource_trim");
      runs.back() = Run{};
      runs.back().peak_in_use = runs.back().start_in_use = in_use;
      runs.back().peak_held = runs.back().start_held = held();
      runs.back().start_unmapped = statistics(cache).pages_unmapped;
    } else if (line == "run") {
      run.end_held = held();
      run.end_pages = fake.counts().live_bytes;
      run.end_small = static_cast<uint64_t>(upstream_bytes.load());
      const uint64_t unmapped = statistics(cache).pages_unmapped;
      run.pages_unmapped = unmapped - run.start_unmapped;
      runs.emplace_back();
      runs.back().peak_in_use = runs.back().start_in_use = in_use;
      runs.back().peak_held = runs.back().start_held = held();
      runs.back().start_unmapped = unmapped;
    } else {
      die("line " + std::to_string(number) + ": cannot read \"" + line + "\"");
    }
  }
  runs.pop_back();  // the one after the last "run"
  if (runs.empty()) die("the trace has no run");
  int broken = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    const double ratio = static_cast<double>(r.peak_held) / static_cast<double>(r.peak_in_use);
    // The ratio the GPU benchmark reads: what the run added to both.
    const double added = r.peak_in_use > r.start_in_use
                             ? double(r.peak_held - r.start_held) / double(r.peak_in_use - r.start_in_use)
                             : 0;
    std::printf("run %zu: peak held %.3f GiB, peak in use %.3f GiB, held / in use %.4f (the run's "
                "additions %.4f), end %.3f GiB (pages %.3f, small blocks %.3f); %llu pages mapped, "
                "%llu unmapped, %llu recycles (%llu waits); peaks at lines %zu (held), %zu (in use)\n",
                i + 1, double(r.peak_held) / GiB, double(r.peak_in_use) / GiB, ratio, added,
                double(r.end_held) / GiB, double(r.end_pages) / GiB, double(r.end_small) / GiB,
                static_cast<unsigned long long>(r.pages_mapped),
                static_cast<unsigned long long>(r.pages_unmapped),
                static_cast<unsigned long long>(r.recycles),
                static_cast<unsigned long long>(r.waits), r.peak_line, r.peak_in_use_line);
    if (ratio > max_ratio) {
      std::printf("  BROKEN: holds more than %.3f times the bytes in use\n", max_ratio);
      broken = 1;
    }
    const double drift = double(r.end_held) / double(runs[0].end_held) - 1;
    if (i > 0 && drift > max_drift) {
      std::printf("  BROKEN: ends %.3f GiB (%.2f %%) above run 1, more than %.2f %% (the same "
                  "training, the same process)\n",
                  double(r.end_held - runs[0].end_held) / GiB, 100 * drift, 100 * max_drift);
      broken = 1;
    }
  }
  const cumem_caching_statistics_t s = statistics(cache);
  if (s.recycle_waits > max_waits) {
    std::printf("  BROKEN: %llu device waits before recycles, more than %llu\n",
                static_cast<unsigned long long>(s.recycle_waits),
                static_cast<unsigned long long>(max_waits));
    broken = 1;
  }
  std::printf("pages mapped %llu, unmapped %llu; requests on %zu recorded thread%s\n",
              static_cast<unsigned long long>(s.pages_mapped),
              static_cast<unsigned long long>(s.pages_unmapped), threads.count(),
              threads.count() == 1 ? "" : "s");
  for (Block& b : blocks)
    if (b.ptr) check(cumem_resource_deallocate_raw(cache, b.ptr, b.size, stream), "a free at the end");
  cumem_resource_release(cache);
  cumem_resource_release(upstream);
  cumem_device_release(device);
  return broken;
}
