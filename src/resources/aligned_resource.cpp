// The aligned adaptor: every allocation starts at a multiple of
// `alignment`. An upstream allocation that is aligned already is handed out
// as it is; once the upstream has given one that is not, every allocation
// asks for alignment - 1 more bytes and hands out the aligned address
// inside. Every allocation is recorded (where the upstream's starts, its
// size, the size asked for), so that a free with another size than the
// allocation's is refused whether or not it was padded.
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

  // The upstream's allocation that holds the aligned one.
  DmaBufRanges dmabuf_ranges(void* ptr, size_t size, uintptr_t first,
                             size_t bytes) const override {
    Record record{};
    {
      Records& r = records_of(ptr);
      std::lock_guard<std::mutex> lock(r.mutex);
      const auto it = r.map.find(ptr);
      if (it == r.map.end() || it->second.size != size)
        fail(Status::invalid_argument, "the aligned adaptor did not hand out this buffer's "
                                       "memory (or it was freed already)");
      record = it->second;
    }
    return dmabuf_ranges_of(upstream(), record.original, record.upstream_size, first, bytes);
  }

 protected:
  void* do_allocate(size_t size, const Stream* stream) override {
    void* original = nullptr;
    size_t upstream_size = size;
    if (!pad_.load(std::memory_order_relaxed)) {
      original = upstream().allocate_raw(size, stream);
      if (!aligned(original)) {
        upstream().deallocate_raw(original, size, stream);
        original = nullptr;
        pad_.store(true, std::memory_order_relaxed);
      }
    }
    if (!original) {
      if (size > SIZE_MAX - (alignment_ - 1))
        fail(Status::out_of_memory, describe_bytes(size) + " and " +
                                        describe_bytes(alignment_ - 1) +
                                        " to align them do not fit in a size_t");
      upstream_size = size + static_cast<size_t>(alignment_ - 1);
      original = upstream().allocate_raw(upstream_size, stream);
    }
    const uintptr_t start = reinterpret_cast<uintptr_t>(original);
    void* ptr = reinterpret_cast<void*>((start + alignment_ - 1) & ~(alignment_ - 1));
    try {
      Records& r = records_of(ptr);
      std::lock_guard<std::mutex> lock(r.mutex);
      r.map.emplace(ptr, Record{original, upstream_size, size});
    } catch (...) {
      upstream().deallocate_raw(original, upstream_size, stream);
      throw;
    }
    return ptr;
  }

  void do_deallocate(void* ptr, size_t size, const Stream* stream) override {
    Record record{};
    {
      Records& r = records_of(ptr);
      std::lock_guard<std::mutex> lock(r.mutex);
      const auto it = r.map.find(ptr);
      if (it == r.map.end())
        fail(Status::invalid_argument,
             "the aligned adaptor did not hand out this address (or it was freed already); "
             "nothing was freed");
      if (it->second.size != size)
        fail(Status::invalid_argument, "the aligned adaptor handed out this address with " +
                                           std::to_string(it->second.size) + " bytes, not " +
                                           std::to_string(size) + "; nothing was freed");
      record = it->second;
      r.map.erase(it);
    }
    try {
      upstream().deallocate_raw(record.original, record.upstream_size, stream);
    } catch (...) {
      // Not freed: the allocation stays, and can be freed again.
      Records& r = records_of(ptr);
      std::lock_guard<std::mutex> lock(r.mutex);
      r.map.emplace(ptr, record);
      throw;
    }
  }

 private:
  struct Record {
    void* original;        // where the upstream's allocation starts
    size_t upstream_size;  // its size
    size_t size;           // the size asked for
  };
  struct alignas(64) Records {
    std::mutex mutex;
    std::unordered_map<void*, Record> map;
  };
  bool aligned(void* ptr) const {
    return (reinterpret_cast<uintptr_t>(ptr) & (alignment_ - 1)) == 0;
  }
  Records& records_of(void* ptr) const {
    const uint64_t h = (reinterpret_cast<uintptr_t>(ptr) >> 4) * 0x9E3779B97F4A7C15ull;
    return records_[h >> 60];
  }

  const uint64_t alignment_;
  std::atomic<bool> pad_{false};  // the upstream has handed out a misaligned address
  mutable std::array<Records, 16> records_;
};

}  // namespace

Ref<Resource> create_aligned_resource(Ref<Resource> upstream, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > kMaxAlignment)
    fail(Status::invalid_argument, "alignment " + std::to_string(alignment) +
                                       " is not a power of two from 1 to 1 GiB (1073741824)");
  return Ref<Resource>::adopt(new AlignedResource(std::move(upstream), alignment));
}

}  // namespace cumem::core
