// Native call stacks for the memory history: captured with backtrace(3)
// when an event is recorded (raw return addresses only, no symbol lookup),
// interned so that a stack seen a million times is stored once, and turned
// into names at snapshot time with dladdr(3) and the C++ demangler.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace cumem::core::snapshot {

inline constexpr int kMaxFrames = 48;

// The calling thread's return addresses, innermost first; at most `max`.
int capture_stack(void** frames, int max) noexcept;

// Distinct stacks by id (1, 2, ...; 0 means none). Not thread-safe: the
// history holds its lock around it.
class StackTable {
 public:
  // At most this many distinct stacks are kept; later new ones get id 0.
  static constexpr size_t kMaxStacks = size_t{1} << 18;

  uint32_t intern(void* const* frames, int depth);
  const std::vector<void*>& frames(uint32_t id) const { return stacks_[id - 1]; }
  size_t size() const { return stacks_.size(); }
  uint64_t refused() const { return refused_; }
  void clear();

 private:
  std::vector<std::vector<void*>> stacks_;
  std::unordered_multimap<uint64_t, uint32_t> by_hash_;
  uint64_t refused_ = 0;
};

struct Frame {
  uint64_t address = 0;  // the return address
  std::string function;  // demangled; "" when the module exports no symbol there
  std::string module;    // the file of the executable or shared library
  uint64_t offset = 0;   // from the function's start, else from the module's base
};

// Names the frames of a stack, leaving out the innermost ones inside
// libcumem but its entry point (the function the program called). `cache`
// keeps names between calls of one snapshot.
std::vector<Frame> symbolize(const std::vector<void*>& frames,
                             std::unordered_map<void*, Frame>& cache);

}  // namespace cumem::core::snapshot
