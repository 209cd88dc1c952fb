// Intrusive reference counting for every object handed out through the C
// ABI. A C handle is the core object's address. Objects live in type-stable
// slab slots (src/slab.hpp) whose header carries the object's type tag, so
// capi/ can tell a live handle from a released one or one of another type
// without reading freed memory.
//
// Two counts: `refs` counts the core's own references (Ref<T>) plus one for
// all user handles together while any is out; `user_refs` counts the user's
// handles. A user release can only give back a handle the user holds: a
// surplus release is refused instead of destroying an object that a buffer
// or a stream still uses.
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
  explicit Object(Tag tag) noexcept {
    slab::header_of(this)->tag.store(static_cast<uint32_t>(tag), std::memory_order_release);
  }
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

  // The tag of the slot at `p` (Tag::dead once the object was destroyed).
  static Tag tag_at(const void* p) noexcept {
    return static_cast<Tag>(slab::header_of(p)->tag.load(std::memory_order_acquire));
  }

  // Core references. Virtual only for Device, whose count also governs its
  // primary context.
  virtual void retain() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  virtual void release() const noexcept { drop_refs(1); }

  // A core reference to an object that may be dying (found through a
  // registry that does not own it); false once its last reference is gone.
  bool try_retain() const noexcept {
    uint32_t n = refs_.load(std::memory_order_relaxed);
    while (n != 0)
      if (refs_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel)) return true;
    return false;
  }

  // User handles (the C ABI's retain/release).
  bool user_live() const noexcept { return user_refs_.load(std::memory_order_acquire) != 0; }
  // Turns one core reference the caller holds into one user handle.
  void hand_out() const noexcept {
    uint32_t n = user_refs_.load(std::memory_order_relaxed);
    for (;;) {
      if (n == 0) {
        // The caller's reference becomes the one all user handles share.
        if (user_refs_.compare_exchange_weak(n, 1, std::memory_order_acq_rel)) {
          user_handles_live(true);
          return;
        }
      } else if (user_refs_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel)) {
        release();  // the shared user reference already exists
        return;
      }
    }
  }
  // hand_out() for an object no other thread can reach yet (made by the
  // caller and never handed out or registered): its first user handle
  // without a compare-and-swap, one atomic operation less per new buffer.
  void hand_out_new() const noexcept {
    user_refs_.store(1, std::memory_order_relaxed);
    user_handles_live(true);
  }
  // False when the user holds no handle to give more of.
  bool user_retain() const noexcept {
    uint32_t n = user_refs_.load(std::memory_order_relaxed);
    while (n != 0)
      if (user_refs_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel)) return true;
    return false;
  }
  // False when the user holds no handle (a surplus release); nothing changes.
  bool user_release() const noexcept {
    uint32_t n = user_refs_.load(std::memory_order_relaxed);
    while (n != 0) {
      if (user_refs_.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel)) {
        if (n == 1) {  // the last user handle: drop the shared reference
          user_handles_live(false);
          release();
        }
        return true;
      }
    }
    return false;
  }

 protected:
  virtual ~Object() = default;
  // Called when the user's handles go from none to one, and from one to
  // none (before the reference they share is dropped). Resource counts its
  // references per thread while the user holds handles (resource_refs.cpp).
  virtual void user_handles_live(bool live) const noexcept { (void)live; }
  // Core references by the batch, for counts kept apart (Resource).
  void add_refs(uint32_t n) const noexcept { refs_.fetch_add(n, std::memory_order_relaxed); }
  // Destroys the object when these were the last references.
  void drop_refs(uint32_t n) const noexcept {
    if (refs_.fetch_sub(n, std::memory_order_acq_rel) == n) {
      slab::header_of(this)->tag.store(0, std::memory_order_release);
      delete this;
    }
  }

 private:
  mutable std::atomic<uint32_t> refs_{1};
  mutable std::atomic<uint32_t> user_refs_{0};
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
