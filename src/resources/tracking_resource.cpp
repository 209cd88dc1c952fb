// The tracking adaptor: every outstanding allocation with its size, stream
// and (optionally) the call stack that made it; a report on demand, and one
// in the log (at warning) when the resource goes with allocations still outstanding.
#include <execinfo.h>

#include <atomic>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "../error.hpp"
#include "../log.hpp"
#include "../snapshot/snapshot.hpp"
#include "adaptor.hpp"
#include "snapshottable.hpp"
#include "tracking_resource.hpp"

namespace cumem::core {
namespace {

constexpr int kMaxFrames = 24;

class TrackingResource final : public Adaptor, public Tracking, public Snapshottable {
 public:
  TrackingResource(Ref<Resource> upstream, bool backtraces)
      : Adaptor(std::move(upstream), ResourceKind::tracking), backtraces_(backtraces) {}
  ~TrackingResource() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (live_.empty() || !log::enabled(log::Level::warning)) return;
    try {
      std::string r = report_locked();
      while (!r.empty() && r.back() == '\n') r.pop_back();
      log::write(log::Level::warning,
                 describe() + " released with allocations outstanding:\n" + r);
    } catch (...) {  // no memory for the report: say at least that much
      log::write(log::Level::warning, "a tracking resource was released with allocations outstanding");
    }
  }
  std::string describe() const override { return "tracking over " + upstream().describe(); }

  std::string report() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return report_locked();
  }
  void outstanding(uint64_t& count, uint64_t& bytes) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    count = live_.size();
    bytes = 0;
    for (const auto& [ptr, a] : live_) bytes += a.size;
  }

  // Snapshottable: each outstanding allocation with its stack, for the
  // block at its address (the memory is the upstream's).
  void snapshot(snapshot::Builder& out) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t bytes = 0;
    for (const auto& [ptr, a] : live_) {
      bytes += a.size;
      out.add_allocation(reinterpret_cast<uintptr_t>(ptr), a.size,
                         reinterpret_cast<uintptr_t>(a.stream), a.frames);
    }
    out.entry().tracking = std::make_pair(static_cast<uint64_t>(live_.size()), bytes);
  }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    Allocation a;
    a.size = size;
    a.stream = native_or_legacy(stream);
    a.serial = next_serial_++;
    if (backtraces_) {
      void* frames[kMaxFrames];
      const int n = backtrace(frames, kMaxFrames);
      a.frames.assign(frames + 1, frames + n);  // without this frame
    }
    void* ptr = upstream().allocate_raw(size, stream);
    std::lock_guard<std::mutex> lock(mutex_);
    live_[ptr] = std::move(a);
    return ptr;
  }
  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = live_.find(ptr);
      if (it == live_.end())
        fail(Status::invalid_argument, "the pointer was not allocated from " + describe() +
                                           " or was freed already (nothing was freed)");
      if (it->second.size != size)
        fail(Status::invalid_argument,
             "the pointer was allocated with " + std::to_string(it->second.size) +
                 " bytes, not " + std::to_string(size) + " (nothing was freed)");
    }
    upstream().deallocate_raw(ptr, size, stream);
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(ptr);
  }

 private:
  struct Allocation {
    size_t size = 0;
    CUstream stream = nullptr;
    uint64_t serial = 0;
    std::vector<void*> frames;
  };

  std::string report_locked() const {
    uint64_t bytes = 0;
    for (const auto& [ptr, a] : live_) bytes += a.size;
    std::string out = std::to_string(live_.size()) + " allocation(s) outstanding, " +
                      describe_bytes(bytes) + "\n";
    for (const auto& [ptr, a] : live_) {
      char line[160];
      std::snprintf(line, sizeof line, "  #%llu %p: %zu bytes on stream %p\n",
                    static_cast<unsigned long long>(a.serial), ptr, a.size,
                    static_cast<void*>(a.stream));
      out += line;
      if (a.frames.empty()) continue;
      char** names = backtrace_symbols(a.frames.data(), static_cast<int>(a.frames.size()));
      for (size_t i = 0; names && i < a.frames.size(); ++i) out += std::string("      ") + names[i] + "\n";
      std::free(names);
    }
    return out;
  }

  const bool backtraces_;
  mutable std::mutex mutex_;
  std::map<void*, Allocation> live_;
  std::atomic<uint64_t> next_serial_{1};
};

}  // namespace

Ref<Resource> create_tracking_resource(Ref<Resource> upstream, bool backtraces) {
  return Ref<Resource>::adopt(new TrackingResource(std::move(upstream), backtraces));
}

}  // namespace cumem::core
