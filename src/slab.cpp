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

// Each thread keeps up to kThreadSlots free slots of each class, so that the
// common allocate/release of one thread takes no lock; it trades batches of
// kBatch with the shared lists, and gives its slots back when it exits.
constexpr uint32_t kThreadSlots = 64;
constexpr uint32_t kBatch = 32;

struct ThreadCache {
  FreeSlot* free[kNumClasses];
  uint32_t count[kNumClasses];
  int state;  // 0: unused; 1: in use; 2: the thread is exiting (shared lists only)
};
thread_local ThreadCache cache;  // zero-initialized: no constructor, no destructor

// Moves up to `n` slots from the front of the thread's list of `index` to
// the shared list.
void give_back(size_t index, uint32_t n) {
  FreeSlot*& head = cache.free[index];
  if (!head || n == 0) return;
  FreeSlot* first = head;
  FreeSlot* last = head;
  uint32_t moved = 1;
  while (moved < n && last->next) {
    last = last->next;
    ++moved;
  }
  head = last->next;
  cache.count[index] -= moved;
  SizeClass& c = classes()[index];
  std::lock_guard<std::mutex> lock(c.mutex);
  last->next = c.free;
  c.free = first;
}

struct Flush {
  ~Flush() {
    for (size_t i = 0; i < kNumClasses; ++i) give_back(i, cache.count[i]);
    cache.state = 2;
  }
};

void* allocate_shared(size_t index) {
  SizeClass& c = classes()[index];
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.free) refill(c, index);
  FreeSlot* s = c.free;
  c.free = s->next;
  return s;
}

}  // namespace

void* allocate(size_t size) {
  const size_t index = class_of(size);
  if (__builtin_expect(cache.state != 1, 0)) {
    if (cache.state == 2) return allocate_shared(index);
    static thread_local Flush flush;  // gives the slots back at thread exit
    (void)&flush;
    cache.state = 1;
  }
  FreeSlot*& head = cache.free[index];
  if (!head) {
    // A batch from the shared list (carving a new chunk if it is empty).
    SizeClass& c = classes()[index];
    std::lock_guard<std::mutex> lock(c.mutex);
    if (!c.free) refill(c, index);
    for (uint32_t i = 0; i < kBatch && c.free; ++i) {
      FreeSlot* s = c.free;
      c.free = s->next;
      s->next = head;
      head = s;
      ++cache.count[index];
    }
  }
  FreeSlot* s = head;
  head = s->next;
  --cache.count[index];
  return s;
}

void deallocate(void* object) noexcept {
  if (!object) return;
  Header* h = header_of(object);
  h->tag.store(0, std::memory_order_release);
  const size_t index = h->size_class;
  FreeSlot* s = static_cast<FreeSlot*>(object);
  if (cache.state != 1) {  // not set up, or exiting: straight to the shared list
    SizeClass& c = classes()[index];
    std::lock_guard<std::mutex> lock(c.mutex);
    s->next = c.free;
    c.free = s;
    return;
  }
  s->next = cache.free[index];
  cache.free[index] = s;
  if (++cache.count[index] > kThreadSlots) give_back(index, kBatch);
}

}  // namespace cumem::core::slab
