// The aligned adaptor: every allocation starts at a multiple of
// `alignment`. An upstream allocation that is aligned already is handed out
// as it is; once the upstream has given one that is not, every allocation
// asks for alignment - 1 more bytes and hands out the aligned address
// inside, remembering where the upstream's allocation starts.
#include <array>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "../error.hpp"
#include "adaptor.hpp"

namespace cumem::core {
namespace {

constexpr uint64_t kMaxAlignment = uint64_t{1} << 30;

class AlignedResource final : public Adaptor {
 public:
  AlignedResource(Ref<Resource> upstream, uint64_t alignment)
      : Adaptor(std::move(upstream), ResourceKind::aligned), alignment_(alignment) {}
  std::string describe() const override {
    return std::to_string(alignment_) + "-byte alignment over " + upstream().describe();
  }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    if (!pad_.load(std::memory_order_relaxed)) {
      void* ptr = upstream().allocate_raw(size, stream);
      if (aligned(ptr)) return ptr;
      upstream().deallocate_raw(ptr, size, stream);
      pad_.store(true, std::memory_order_relaxed);
    }
    if (size > SIZE_MAX - (alignment_ - 1))
      fail(Status::out_of_memory, describe_bytes(size) + " and " + describe_bytes(alignment_ - 1) +
                                      " to align them do not fit in a size_t");
    const size_t padded = size + static_cast<size_t>(alignment_ - 1);
    void* original = upstream().allocate_raw(padded, stream);
    const uintptr_t start = reinterpret_cast<uintptr_t>(original);
    void* ptr = reinterpret_cast<void*>((start + alignment_ - 1) & ~(alignment_ - 1));
    try {
      Records& r = records_of(ptr);
      std::lock_guard<std::mutex> lock(r.mutex);
      r.map.emplace(ptr, Padding{original, padded});
    } catch (...) {
      upstream().deallocate_raw(original, padded, stream);
      throw;
    }
    return ptr;
  }

  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    Padding padding{ptr, size};
    bool padded = false;
    Records& r = records_of(ptr);
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      const auto it = r.map.find(ptr);
      if (it != r.map.end()) {
        padding = it->second;
        if (padding.size - (alignment_ - 1) != size)
          fail(Status::invalid_argument,
               "the aligned adaptor handed out this address with " +
                   std::to_string(padding.size - (alignment_ - 1)) + " bytes, not " +
                   std::to_string(size) + "; nothing was freed");
        r.map.erase(it);
        padded = true;
      }
    }
    try {
      upstream().deallocate_raw(padding.original, padding.size, stream);
    } catch (...) {
      // Not freed (a synchronous upstream refuses a capturing stream, ...):
      // the record stays, so that a later free finds the padding again.
      if (padded) {
        std::lock_guard<std::mutex> lock(r.mutex);
        r.map.emplace(ptr, padding);
      }
      throw;
    }
  }

 private:
  struct Padding {
    void* original;  // where the upstream's allocation starts
    size_t size;     // its size
  };
  struct alignas(64) Records {
    std::mutex mutex;
    std::unordered_map<void*, Padding> map;
  };
  bool aligned(void* ptr) const {
    return (reinterpret_cast<uintptr_t>(ptr) & (alignment_ - 1)) == 0;
  }
  Records& records_of(void* ptr) {
    const uint64_t h = (reinterpret_cast<uintptr_t>(ptr) >> 4) * 0x9E3779B97F4A7C15ull;
    return records_[h >> 60];
  }

  const uint64_t alignment_;
  std::atomic<bool> pad_{false};  // the upstream has handed out a misaligned address
  std::array<Records, 16> records_;
};

}  // namespace

Ref<Resource> create_aligned_resource(Ref<Resource> upstream, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > kMaxAlignment)
    fail(Status::invalid_argument, "alignment " + std::to_string(alignment) +
                                       " is not a power of two from 1 to 1 GiB (1073741824)");
  return Ref<Resource>::adopt(new AlignedResource(std::move(upstream), alignment));
}

}  // namespace cumem::core
