#include "slab.hpp"

#include <cstdlib>
#include <mutex>
#include <new>

namespace cumem::core::slab {
namespace {

// Slot sizes (the 64-byte header included): 64-byte steps to 1 KiB, then
// powers of two. Every size is a multiple of kAlignment.
constexpr size_t kClasses[] = {128,  192,  256,  320,   384,   448,   512,   576,  640,
                               704,  768,  832,  896,   960,   1024,  2048,  4096, 8192,
                               16384, 32768, 65536};
constexpr size_t kNumClasses = sizeof kClasses / sizeof kClasses[0];
constexpr size_t kChunkBytes = 256 * 1024;

// A free slot keeps its next-pointer right after its header, where the
// object was; the header (and its free tag) stays intact.
struct FreeSlot {
  FreeSlot* next;
};

struct SizeClass {
  std::mutex mutex;
  FreeSlot* free = nullptr;
};

SizeClass* classes() {
  // Never destroyed: objects may be released from static destructors.
  static SizeClass* c = new SizeClass[kNumClasses];
  return c;
}

size_t class_of(size_t size) {
  const size_t needed = size + sizeof(Header);
  for (size_t i = 0; i < kNumClasses; ++i)
    if (needed <= kClasses[i]) return i;
  throw std::bad_alloc();
}

// Carves a new chunk into slots of class `index` and links them, under the
// class's lock.
void refill(SizeClass& c, size_t index) {
  const size_t slot = kClasses[index];
  const size_t count = kChunkBytes >= slot ? kChunkBytes / slot : 1;
  char* chunk = static_cast<char*>(std::aligned_alloc(kAlignment, slot * count));
  if (!chunk) throw std::bad_alloc();
  for (size_t i = count; i-- > 0;) {
    char* base = chunk + i * slot;
    Header* h = new (base) Header;
    h->size_class = static_cast<uint32_t>(index);
    FreeSlot* s = reinterpret_cast<FreeSlot*>(base + sizeof(Header));
    s->next = c.free;
    c.free = s;
  }
}

}  // namespace

void* allocate(size_t size) {
  const size_t index = class_of(size);
  SizeClass& c = classes()[index];
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.free) refill(c, index);
  FreeSlot* s = c.free;
  c.free = s->next;
  return s;
}

void deallocate(void* object) noexcept {
  if (!object) return;
  Header* h = header_of(object);
  h->tag.store(0, std::memory_order_release);
  SizeClass& c = classes()[h->size_class];
  std::lock_guard<std::mutex> lock(c.mutex);
  FreeSlot* s = static_cast<FreeSlot*>(object);
  s->next = c.free;
  c.free = s;
}

}  // namespace cumem::core::slab
