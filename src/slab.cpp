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
static_assert(kNumClasses == sizeof kClasses / sizeof kClasses[0], "this_thread.hpp's count");
constexpr size_t kChunkBytes = 256 * 1024;

struct SizeClass {
  std::mutex mutex;
  FreeSlot* free = nullptr;
};

SizeClass* classes() {
  // Never destroyed: objects may be released from static destructors.
  static SizeClass* c = new SizeClass[kNumClasses];
  return c;
}

static_assert(kClasses[0] == 128 && kClasses[14] == 1024 && kClasses[15] == 2048,
              "class_of's steps (slab.hpp)");

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

// Each thread keeps up to kThreadSlots free slots of each class (in its
// ThisThread block), so that the common allocate/release of one thread takes
// no lock; it trades batches of kBatch with the shared lists, and gives its
// slots back when it exits.
constexpr uint32_t kBatch = 32;

// Moves up to `n` slots from the front of the thread's list of `index` to
// the shared list.
void give_back(ThreadCache& cache, size_t index, uint32_t n) {
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
    ThreadCache& cache = this_thread_state.slab;
    for (size_t i = 0; i < kNumClasses; ++i) give_back(cache, i, cache.count[i]);
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

size_t large_class_of(size_t needed) {
  for (size_t i = 15; i < kNumClasses; ++i)
    if (needed <= kClasses[i]) return i;
  throw std::bad_alloc();
}

// allocate() with no slot in the thread's list: set the cache up, take a
// batch from the shared list (carving a new chunk if it is empty), or use
// the shared list alone while the thread exits.
void* allocate_slow(ThreadCache& mine, size_t index) {
  if (mine.state != 1) {
    if (mine.state == 2) return allocate_shared(index);
    static thread_local Flush flush;  // gives the slots back at thread exit
    (void)&flush;
    mine.state = 1;
  }
  FreeSlot*& head = mine.free[index];
  if (!head) {
    SizeClass& c = classes()[index];
    std::lock_guard<std::mutex> lock(c.mutex);
    if (!c.free) refill(c, index);
    for (uint32_t i = 0; i < kBatch && c.free; ++i) {
      FreeSlot* s = c.free;
      c.free = s->next;
      s->next = head;
      head = s;
      ++mine.count[index];
    }
  }
  FreeSlot* s = head;
  head = s->next;
  --mine.count[index];
  return s;
}

void trim(ThreadCache& mine, size_t index) noexcept { give_back(mine, index, kBatch); }

void deallocate_shared(void* object, size_t index) noexcept {
  FreeSlot* s = static_cast<FreeSlot*>(object);
  SizeClass& c = classes()[index];
  std::lock_guard<std::mutex> lock(c.mutex);
  s->next = c.free;
  c.free = s;
}

}  // namespace cumem::core::slab
