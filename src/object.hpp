// Intrusive reference counting for every object handed out through the C
// ABI. A C handle is the core object's address. Objects live in type-stable
// slab slots (src/slab.hpp) whose header carries the object's type tag, so
// capi/ can tell a live handle from a released one or one of another type
// without reading freed memory.
//
// One 64-bit atomic word per object holds both counts: the core's own
// references (Ref<T>) plus one for all user handles together while any is
// out, in its low half; the user's handles in its high half. A user release
// can only give back a handle the user holds: a surplus release is refused
// instead of destroying an object that a buffer or a stream still uses. The
// user's last release and the drop of the reference the handles share are
// one compare-and-swap of the word. Counting is never virtual; the only
// virtual calls are the user-handle hook of the objects that ask for it
// (Resource) and last_reference_gone() (Device keeps its object and lets
// its primary context go).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "slab.hpp"

namespace cumem::core {

enum class Tag : uint32_t {
  dead = 0,
  device = 0x43444556,   // "CDEV"
  stream = 0x43535452,   // "CSTR"
  event = 0x43455654,    // "CEVT"
  resource = 0x43525352, // "CRSR"
  buffer = 0x43425546,   // "CBUF"
  program = 0x43505247,  // "CPRG"
  library = 0x434c4942,  // "CLIB"
  kernel = 0x434b524e,   // "CKRN"
  allocation_handle = 0x43414c48,  // "CALH"
  virtual_ipc_handle = 0x43564948, // "CVIH"
  graph = 0x43475248,              // "CGRH"
  snapshot = 0x43534e50,           // "CSNP"
};

class Object {
 public:
  explicit Object(Tag tag) noexcept : Object(tag, 1) {}
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  static void* operator new(size_t size) { return slab::allocate(size); }
  static void operator delete(void* p) noexcept { slab::deallocate(p); }
  // Objects aligned to a cache line (per-thread counters) fit slab slots.
  static void* operator new(size_t size, std::align_val_t alignment) {
    static_assert(slab::kAlignment >= 64, "slots start on a cache line");
    if (static_cast<size_t>(alignment) > slab::kAlignment) throw std::bad_alloc();
    return slab::allocate(size);
  }
  static void operator delete(void* p, std::align_val_t) noexcept { slab::deallocate(p); }
  // `new (this_thread()) T(...)`: for a caller that has the thread's block
  // at hand (one TLS lookup for the slot and what the constructor takes).
  static void* operator new(size_t size, ThisThread& t) { return slab::allocate(t, size); }
  static void operator delete(void* p, ThisThread& t) noexcept { slab::deallocate(t, p); }

  // The tag of the slot at `p` (Tag::dead once the object was destroyed).
  static Tag tag_at(const void* p) noexcept {
    return static_cast<Tag>(slab::header_of(p)->tag.load(std::memory_order_acquire));
  }

  // Core references. Not virtual: Resource hides them with its per-thread
  // credit (resource_refs.cpp), which keeps the shared count right whichever
  // of the two a reference is taken or given back with.
  void retain() const noexcept { counts_.fetch_add(kRef, std::memory_order_relaxed); }
  void release() const noexcept { drop_refs(1); }

  // A core reference to an object that may be dying (found through a
  // registry that does not own it); false once its last reference is gone.
  bool try_retain() const noexcept {
    uint64_t n = counts_.load(std::memory_order_relaxed);
    while (n & kRefMask)
      if (counts_.compare_exchange_weak(n, n + kRef, std::memory_order_acq_rel,
                                        std::memory_order_relaxed))
        return true;
    return false;
  }

  // User handles (the C ABI's retain/release).
  bool user_live() const noexcept {
    return (counts_.load(std::memory_order_acquire) & kUserMask) != 0;
  }
  // Turns one core reference the caller holds into one user handle.
  void hand_out() const noexcept {
    uint64_t n = counts_.load(std::memory_order_relaxed);
    for (;;) {
      if (!(n & kUserMask)) {
        // The caller's reference becomes the one all user handles share.
        if (counts_.compare_exchange_weak(n, n + kUser, std::memory_order_acq_rel,
                                          std::memory_order_relaxed)) {
          if (n & kUserHook) user_handles_live(true);
          return;
        }
        // The shared user reference already exists: the caller's goes with
        // the same compare-and-swap (it cannot be the last: that one stays).
      } else if (counts_.compare_exchange_weak(n, n + kUser - kRef, std::memory_order_acq_rel,
                                               std::memory_order_relaxed)) {
        return;
      }
    }
  }
  // hand_out() for an object no other thread can reach yet (made by the
  // caller and never handed out or registered): its first user handle is a
  // plain load and store, no atomic read-modify-write.
  void hand_out_new() const noexcept {
    const uint64_t n = counts_.load(std::memory_order_relaxed);
    counts_.store(n + kUser, std::memory_order_relaxed);
    if (n & kUserHook) user_handles_live(true);
  }
  // False when the user holds no handle to give more of.
  bool user_retain() const noexcept {
    uint64_t n = counts_.load(std::memory_order_relaxed);
    while (n & kUserMask)
      if (counts_.compare_exchange_weak(n, n + kUser, std::memory_order_acq_rel,
                                        std::memory_order_relaxed))
        return true;
    return false;
  }
  // False when the user holds no handle (a surplus release); nothing changes.
  // The last handle of an object without the user-handle hook takes the
  // reference the handles share with it, in the same compare-and-swap.
  bool user_release() const noexcept {
    uint64_t n = counts_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t users = n & kUserMask;
      if (users == 0) return false;
      if (users != kUser || (n & kUserHook)) {
        if (counts_.compare_exchange_weak(n, n - kUser, std::memory_order_acq_rel,
                                          std::memory_order_relaxed))
          break;
      } else if (counts_.compare_exchange_weak(n, n - kUser - kRef, std::memory_order_acq_rel,
                                               std::memory_order_relaxed)) {
        if ((n & kRefMask) == kRef) last_reference_gone();
        return true;
      }
    }
    if ((n & kUserMask) == kUser) {  // the hook's object's last user handle
      user_handles_live(false);
      drop_refs(1);  // the reference the handles shared
    }
    return true;
  }

 protected:
  // A Device starts with no reference (Device::get takes the first).
  Object(Tag tag, uint32_t refs) noexcept : counts_(refs) {
    slab::header_of(this)->tag.store(static_cast<uint32_t>(tag), std::memory_order_release);
  }
  virtual ~Object() = default;
  // The object's user handles call user_handles_live(). For a constructor,
  // before the object is shared.
  void want_user_hook() noexcept {
    counts_.store(counts_.load(std::memory_order_relaxed) | kUserHook, std::memory_order_relaxed);
  }
  // Called, for objects that want it, when the user's handles go from none
  // to one, and from one to none (before the reference they share is
  // dropped). Resource counts its references per thread while the user
  // holds handles (resource_refs.cpp).
  virtual void user_handles_live(bool live) const noexcept { (void)live; }
  // The last reference is gone: the object is destroyed. Device overrides
  // it (devices live for the process; the primary context is let go).
  virtual void last_reference_gone() const noexcept {
    slab::header_of(this)->tag.store(0, std::memory_order_release);
    delete this;
  }
  // Core references by the batch, for counts kept apart (Resource).
  void add_refs(uint32_t n) const noexcept { counts_.fetch_add(n, std::memory_order_relaxed); }
  // The core references now (Device, under its own lock).
  uint32_t core_refs() const noexcept {
    return static_cast<uint32_t>(counts_.load(std::memory_order_acquire) & kRefMask);
  }
  // Destroys the object when these were the last references.
  void drop_refs(uint32_t n) const noexcept {
    if ((counts_.fetch_sub(n, std::memory_order_acq_rel) & kRefMask) == n) last_reference_gone();
  }

 private:
  // The word: core references in bits 0-31, user handles in bits 32-62,
  // and the user-handle hook's mark in bit 63 (set once, at construction).
  static constexpr uint64_t kRef = 1;
  static constexpr uint64_t kRefMask = 0xffffffffu;
  static constexpr uint64_t kUser = uint64_t{1} << 32;
  static constexpr uint64_t kUserHook = uint64_t{1} << 63;
  static constexpr uint64_t kUserMask = ~kRefMask & ~kUserHook;

  mutable std::atomic<uint64_t> counts_;
};

// Owning pointer to a reference-counted object (an object that has
// retain()/release(), a new object starting with one reference).
template <class T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}
  // Takes over one reference the caller already holds.
  static Ref adopt(T* p) {
    Ref r;
    r.p_ = p;
    return r;
  }
  // Adds a reference of its own.
  static Ref share(T* p) {
    if (p) p->retain();
    return adopt(p);
  }
  Ref(const Ref& o) : p_(o.p_) {
    if (p_) p_->retain();
  }
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <class U>
  Ref(Ref<U>&& o) noexcept : p_(o.detach()) {}
  Ref& operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Ref() {
    if (p_) p_->release();
  }

  T* get() const noexcept { return p_; }
  T* operator->() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  // Gives up ownership of the reference without releasing it.
  T* detach() noexcept { return std::exchange(p_, nullptr); }

 private:
  T* p_ = nullptr;
};

template <class T, class... Args>
Ref<T> make_ref(Args&&... args) {
  return Ref<T>::adopt(new T(std::forward<Args>(args)...));
}

}  // namespace cumem::core
