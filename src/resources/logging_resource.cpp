// The logging adaptor: one CSV line per operation, to a file, in the format
// a replay reads back:
//   time_ns,thread,operation,ptr,size,stream
// time_ns counts from the resource's creation; thread is a small number per
// thread; operation is allocate, deallocate or allocate_failed; ptr and
// stream are hexadecimal. Lines are buffered and flushed when the resource
// goes.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "../error.hpp"
#include "adaptor.hpp"

namespace cumem::core {
namespace {

unsigned thread_number() {
  static std::atomic<unsigned> next{0};
  static thread_local unsigned n = next.fetch_add(1, std::memory_order_relaxed);
  return n;
}

class LoggingResource final : public Adaptor {
 public:
  LoggingResource(Ref<Resource> upstream, std::FILE* file, std::string path)
      : Adaptor(std::move(upstream), ResourceKind::logging), file_(file), path_(std::move(path)),
        start_(std::chrono::steady_clock::now()) {
    std::fputs("time_ns,thread,operation,ptr,size,stream\n", file_);
  }
  ~LoggingResource() override { std::fclose(file_); }
  std::string describe() const override {
    return "logging to " + path_ + " over " + upstream().describe();
  }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    void* ptr = nullptr;
    try {
      ptr = upstream().allocate_raw(size, stream);
    } catch (...) {
      log("allocate_failed", nullptr, size, stream);
      throw;
    }
    log("allocate", ptr, size, stream);
    return ptr;
  }
  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    upstream().deallocate_raw(ptr, size, stream);
    log("deallocate", ptr, size, stream);
  }

 private:
  void log(const char* operation, void* ptr, size_t size, const Stream* stream) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - start_)
                        .count();
    std::lock_guard<std::mutex> lock(mutex_);
    std::fprintf(file_, "%lld,%u,%s,%p,%zu,%p\n", static_cast<long long>(ns), thread_number(),
                 operation, ptr, size, static_cast<void*>(native_or_legacy(stream)));
  }

  std::mutex mutex_;
  std::FILE* file_;
  std::string path_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

Ref<Resource> create_logging_resource(Ref<Resource> upstream, const char* path) {
  std::string file = path && *path ? path : "";
  if (file.empty()) {
    const char* env = std::getenv("CUMEM_LOG_FILE");
    if (!env || !*env)
      fail(Status::invalid_argument,
           "the logging resource needs a file: pass a path or set CUMEM_LOG_FILE");
    file = env;
  }
  std::FILE* f = std::fopen(file.c_str(), "w");
  if (!f)
    fail(Status::invalid_argument,
         "cannot open the log file '" + file + "' for writing: " + std::strerror(errno));
  try {
    return Ref<Resource>::adopt(new LoggingResource(std::move(upstream), f, file));
  } catch (...) {
    std::fclose(f);
    throw;
  }
}

}  // namespace cumem::core
