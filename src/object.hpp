// Intrusive reference counting for every object handed out through the C
// ABI. A C handle is the core object's address; the type tag lets capi/
// reject a handle of the wrong type (or one already destroyed, while its
// memory is still mapped) with an error instead of undefined behaviour.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

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
};

class Object {
 public:
  explicit Object(Tag tag) : tag_(tag) {}
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  Tag tag() const noexcept { return tag_; }
  // Virtual only for Device, whose count also governs its primary context.
  virtual void retain() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  virtual void release() const noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 protected:
  virtual ~Object() { tag_ = Tag::dead; }

 private:
  mutable std::atomic<uint32_t> refs_{1};
  Tag tag_;
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
