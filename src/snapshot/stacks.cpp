#include "stacks.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdlib>
#include <cstring>

namespace cumem::core::snapshot {

int capture_stack(void** frames, int max) noexcept {
  // The first call of backtrace() may load libgcc_s (and allocate): done
  // once before any event asks, by History::start.
  const int n = backtrace(frames, max);
  return n < 0 ? 0 : n;
}

namespace {

uint64_t hash_of(void* const* frames, int depth) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the addresses
  for (int i = 0; i < depth; ++i) {
    h ^= reinterpret_cast<uintptr_t>(frames[i]);
    h *= 1099511628211ull;
  }
  return h;
}

std::string demangle(const char* name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string s = out;
  std::free(out);
  return s;
}

// The module libcumem itself is in (its frames are left out but one).
const void* own_module_base() {
  static const void* base = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&own_module_base), &info) == 0) return static_cast<void*>(nullptr);
    return info.dli_fbase;
  }();
  return base;
}

Frame name_frame(void* address) {
  Frame f;
  f.address = reinterpret_cast<uintptr_t>(address);
  Dl_info info{};
  if (dladdr(address, &info) == 0) return f;
  if (info.dli_fname) f.module = info.dli_fname;
  if (info.dli_sname && info.dli_saddr) {
    f.function = demangle(info.dli_sname);
    f.offset = f.address - reinterpret_cast<uintptr_t>(info.dli_saddr);
  } else {
    // A symbol the module does not export (static, hidden, or an
    // executable linked without -rdynamic): its offset in the module, for
    // addr2line -e module (offset - 1).
    f.offset = f.address - reinterpret_cast<uintptr_t>(info.dli_fbase);
  }
  return f;
}

}  // namespace

uint32_t StackTable::intern(void* const* frames, int depth) {
  if (depth <= 0) return 0;
  const uint64_t h = hash_of(frames, depth);
  const auto range = by_hash_.equal_range(h);
  for (auto it = range.first; it != range.second; ++it) {
    const std::vector<void*>& s = stacks_[it->second - 1];
    if (s.size() == static_cast<size_t>(depth) &&
        std::memcmp(s.data(), frames, sizeof(void*) * static_cast<size_t>(depth)) == 0)
      return it->second;
  }
  if (stacks_.size() >= kMaxStacks) {
    ++refused_;
    return 0;
  }
  stacks_.emplace_back(frames, frames + depth);
  const auto id = static_cast<uint32_t>(stacks_.size());
  by_hash_.emplace(h, id);
  return id;
}

void StackTable::clear() {
  stacks_.clear();
  by_hash_.clear();
  refused_ = 0;
}

std::vector<Frame> symbolize(const std::vector<void*>& frames,
                             std::unordered_map<void*, Frame>& cache) {
  std::vector<Frame> named;
  named.reserve(frames.size());
  for (void* address : frames) {
    auto it = cache.find(address);
    if (it == cache.end()) it = cache.emplace(address, name_frame(address)).first;
    named.push_back(it->second);
  }
  // The innermost frames are libcumem's own bookkeeping (the history, the
  // resource's allocate_raw, ...): keep only the outermost of them, the
  // libcumem function the program called.
  // Frames of another module may come first (a sanitizer's interceptor of
  // backtrace itself, under AddressSanitizer): those go too.
  const void* base = own_module_base();
  auto in_own = [&](size_t i) {
    Dl_info info{};
    return base && dladdr(reinterpret_cast<void*>(named[i].address), &info) != 0 &&
           info.dli_fbase == base;
  };
  size_t first = 0;
  while (first < named.size() && !in_own(first)) ++first;
  if (first == named.size()) return named;  // none of libcumem's: kept whole
  size_t own = first;
  while (own < named.size() && in_own(own)) ++own;
  named.erase(named.begin(), named.begin() + static_cast<ptrdiff_t>(own - 1));
  return named;
}

}  // namespace cumem::core::snapshot
