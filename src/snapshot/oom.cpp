#include "oom.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "../error.hpp"
#include "../log.hpp"
#include "snapshot.hpp"

namespace cumem::core::snapshot {

void write_file(const std::string& path, const std::string& text) {
  if (path.empty()) fail(Status::invalid_argument, "the snapshot's path is empty");
  const std::string temporary = path + ".tmp" + std::to_string(getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail(Status::invalid_argument,
         "cannot write '" + path + "': " + std::strerror(errno) + " (creating " + temporary + ")");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(temporary.c_str());
      fail(Status::invalid_argument, "cannot write '" + path + "': " + std::strerror(e));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(temporary.c_str());
    fail(Status::invalid_argument, "cannot write '" + path + "': " + std::strerror(e));
  }
}

namespace {

const std::string& oom_path() {
  static const std::string* path = [] {
    const char* v = std::getenv("CUMEM_OOM_SNAPSHOT");
    return new std::string(v ? v : "");
  }();
  return *path;
}

std::string expand(const std::string& pattern, uint64_t n) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char c = pattern[i + 1];
      if (c == 'p' || c == 'n' || c == '%') {
        out += c == 'p' ? std::to_string(getpid()) : c == 'n' ? std::to_string(n) : "%";
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

thread_local bool writing = false;

}  // namespace

std::string on_out_of_memory() noexcept {
  const std::string& pattern = oom_path();
  if (pattern.empty() || writing) return "";
  static std::atomic<uint64_t> count{0};
  static std::mutex mutex;  // one writer at a time: the file is whole
  writing = true;
  std::string path;
  try {
    path = expand(pattern, count.fetch_add(1, std::memory_order_relaxed) + 1);
    std::lock_guard<std::mutex> lock(mutex);
    const Ref<Snapshot> s = take(nullptr);
    write_file(path, s->json());
    if (log::enabled(log::Level::warning))
      log::write(log::Level::warning, "out of memory: a memory snapshot was written to " + path);
  } catch (const std::exception& e) {
    log::write(log::Level::warning, std::string("out of memory: no snapshot was written to $CUMEM_OOM_SNAPSHOT (") +
                                        pattern + "): " + e.what());
    path.clear();
  } catch (...) {
    path.clear();
  }
  writing = false;
  return path;
}

}  // namespace cumem::core::snapshot
