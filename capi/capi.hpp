// Shared machinery of the extern "C" entry points: handle <-> object
// mapping, argument checks, options and out-struct copying, and the
// CUMEM_TRY / CUMEM_CATCH pair that turns every exception into a status and
// the thread-local message.
#pragma once

#define CUMEM_BUILDING_LIBRARY 1
#include <cumem/cumem.h>

#include <cstring>
#include <new>
#include <string>
#include <type_traits>

#include "../src/error.hpp"
#include "../src/object.hpp"
#include "struct_fields.hpp"

namespace cumem::core {
class Device;
class Stream;
class Event;
class Resource;
class Buffer;
class Program;
class Library;
class Kernel;
class AllocationHandle;
class VirtualIpcHandle;
class Graph;
namespace snapshot {
class Snapshot;
}
}  // namespace cumem::core

namespace cumem::capi {
using namespace cumem::core;


template <class Handle> struct Traits;
#define CUMEM_CAPI_TRAITS(handle, type, tag_name)   \
  template <> struct Traits<handle> {              \
    using Object = type;                           \
    static constexpr Tag tag = Tag::tag_name;      \
    static constexpr const char* name = #handle;   \
  };
CUMEM_CAPI_TRAITS(cumem_device_t, Device, device)
CUMEM_CAPI_TRAITS(cumem_stream_t, Stream, stream)
CUMEM_CAPI_TRAITS(cumem_event_t, Event, event)
CUMEM_CAPI_TRAITS(cumem_resource_t, Resource, resource)
CUMEM_CAPI_TRAITS(cumem_buffer_t, Buffer, buffer)
CUMEM_CAPI_TRAITS(cumem_program_t, Program, program)
CUMEM_CAPI_TRAITS(cumem_library_t, Library, library)
CUMEM_CAPI_TRAITS(cumem_kernel_t, Kernel, kernel)
CUMEM_CAPI_TRAITS(cumem_allocation_handle_t, AllocationHandle, allocation_handle)
CUMEM_CAPI_TRAITS(cumem_virtual_ipc_handle_t, VirtualIpcHandle, virtual_ipc_handle)
CUMEM_CAPI_TRAITS(cumem_graph_t, Graph, graph)
CUMEM_CAPI_TRAITS(cumem_snapshot_t, snapshot::Snapshot, snapshot)
#undef CUMEM_CAPI_TRAITS

[[noreturn]] inline void null_argument(const char* name) {
  fail(Status::invalid_argument, std::string("argument '") + name + "' must not be NULL");
}

// Throws invalid_argument for a handle whose slot does not hold an object of
// `expected`'s type: released (and destroyed), or another kind of object.
[[noreturn]] void bad_handle(const char* name, const char* expected, Tag found);
// The failures of object(), retain_handle() and release_handle() for a
// handle whose user holds no reference (handle.cpp: out of line, so that
// the checks themselves inline).
[[noreturn]] void released_handle(const char* name, const char* type);
[[noreturn]] void surplus_retain(const char* name, const char* type);
[[noreturn]] void surplus_release(const char* name, const char* type);

// The core object behind a non-NULL handle, checked: the slot's tag must be
// the handle type's (handles are slab slots: reading the tag of a released
// object is safe). Does not check that the user still holds it.
template <class Handle>
auto* slot_object(Handle* handle, const char* name) {
  using H = std::remove_const_t<Handle>;
  using T = typename Traits<H>::Object;
  if (!handle) null_argument(name);
  const Tag tag = Object::tag_at(handle);
  if (tag != Traits<H>::tag) bad_handle(name, Traits<H>::name, tag);
  return reinterpret_cast<std::conditional_t<std::is_const_v<Handle>, const T*, T*>>(handle);
}

// The object behind a handle that must not be NULL and that the user holds.
template <class Handle>
auto& object(Handle* handle, const char* name) {
  auto* obj = slot_object(handle, name);
  if (!obj->user_live()) released_handle(name, Traits<std::remove_const_t<Handle>>::name);
  return *obj;
}

// The object behind an optional handle, or nullptr.
template <class Handle>
auto* optional(Handle* handle, const char* name) {
  using H = std::remove_const_t<Handle>;
  using T = typename Traits<H>::Object;
  using P = std::conditional_t<std::is_const_v<Handle>, const T*, T*>;
  return handle ? &object(handle, name) : static_cast<P>(nullptr);
}

// A new core reference to the object behind a handle that must not be NULL.
template <class Handle>
auto ref(Handle* handle, const char* name) {
  using T = typename Traits<std::remove_const_t<Handle>>::Object;
  return Ref<T>::share(const_cast<T*>(&object(handle, name)));
}

// Hands `obj` (one core reference, consumed) to the user as a handle;
// New: an object made by the call that hands it out, which no other thread
// can reach yet (Object::hand_out_new: no compare-and-swap).
template <class Handle, bool New = false, class T>
Handle* to_handle(Ref<T> obj) {
  T* p = obj.detach();
  if (!p) return nullptr;
  if constexpr (New)
    p->hand_out_new();
  else
    p->hand_out();
  return reinterpret_cast<Handle*>(const_cast<std::remove_const_t<T>*>(p));
}
template <class Handle, class T>
Handle* to_new_handle(Ref<T> obj) {
  return to_handle<Handle, true>(std::move(obj));
}
// One more user handle to an object the core holds.
template <class Handle, class T>
Handle* share_handle(const T& obj) {
  obj.retain();
  obj.hand_out();
  return reinterpret_cast<Handle*>(const_cast<T*>(&obj));
}

// cumem_X_retain: one more handle, refused when the user holds none.
template <class Handle>
void retain_handle(Handle* handle, const char* name) {
  auto* obj = slot_object(handle, name);
  if (!obj->user_retain()) surplus_retain(name, Traits<std::remove_const_t<Handle>>::name);
}

// cumem_X_release: NULL is fine; a surplus release is refused and reported.
template <class Handle>
void release_handle(Handle* handle, const char* name) {
  if (!handle) return;
  auto* obj = slot_object(handle, name);
  if (!obj->user_release()) surplus_release(name, Traits<std::remove_const_t<Handle>>::name);
}

template <class T>
T* out(T* ptr, const char* name) {
  if (!ptr) null_argument(name);
  return ptr;
}

// struct_size rules, shared by options (read by the library) and out
// structs (written by it); the fields come from struct_fields.hpp.
// Every struct starts with its 4-byte struct_size, and none will come near
// 4096 bytes: a larger value is an uninitialised struct, and reading that
// far could fault.
inline constexpr uint32_t min_struct_size = sizeof(uint32_t);
inline constexpr uint32_t max_struct_size = 4096;

enum class Direction { in, out };

inline std::string version_text() {
  return std::to_string(CUMEM_VERSION_MAJOR) + "." + std::to_string(CUMEM_VERSION_MINOR) + "." +
         std::to_string(CUMEM_VERSION_PATCH);
}

// Checks the caller's struct at `user`, whose struct_size is `size`, and
// returns how many leading bytes the library reads or writes: the end of
// the last field lying wholly within both `size` and this library's struct.
//  - `size` 0 (a zero-filled struct), below 4 or above 4096: INVALID_ARGUMENT,
//    nothing else read;
//  - `size` ending inside a field: INVALID_ARGUMENT naming the field (an end
//    at a field's end is an older caller's smaller struct, which is fine;
//    no public struct has padding, struct_fields.hpp checks it);
//  - options only: a struct larger than ours (a newer caller's) is accepted
//    only if every byte past our sizeof is zero, i.e. it sets no option we
//    do not know; else NOT_SUPPORTED. Out structs may be larger: we write
//    our part and say so in struct_size.
inline size_t check_struct_size(const void* user, uint32_t size, const StructLayout& layout,
                                const char* name, Direction direction) {
  // The common case, a caller built with this header: nothing to check.
  if (size == layout.size) return layout.size;
  // Messages are built only on the way to a failure.
  const auto argument = [&] {
    return std::string("argument '") + name + "' (" + layout.type_name + ") has struct_size " +
           std::to_string(size);
  };
  const char* fix = direction == Direction::in
                        ? "fill it with its _INIT macro or _init() function"
                        : "set it to sizeof the struct (or use its _INIT macro)";
  // What FFI constructors (Rust's Default, ctypes, Julia) make before the
  // caller sets struct_size: say so rather than only "too small".
  if (size == 0)
    fail(Status::invalid_argument,
         argument() + ": the struct looks zero-filled (struct_size was never set); set struct_size "
                    "to sizeof(" + layout.type_name + ") (" + std::to_string(layout.size) +
             " bytes in this libcumem) or fill it with " + layout.initializer +
             " (every other field may stay 0: zero means the default)");
  if (size < min_struct_size)
    fail(Status::invalid_argument, argument() + ", below the 4 bytes of struct_size itself; " + fix);
  if (size > max_struct_size)
    fail(Status::invalid_argument, argument() + ", above " + std::to_string(max_struct_size) +
                                       ", more than any version of the struct will need (is it "
                                       "initialised?); " + fix);
  const Coverage c = coverage(layout, size);
  if (c.cut)
    fail(Status::invalid_argument,
         argument() + ", which ends inside its field '" + c.cut->name + "' (bytes " +
             std::to_string(c.cut->offset) + ".." + std::to_string(c.cut->end() - 1) +
             "); struct_size must end at a field's end: " + fix);
  if (direction == Direction::in && size > layout.size) {
    const auto* bytes = static_cast<const unsigned char*>(user);
    for (size_t i = layout.size; i < size; ++i) {
      if (bytes[i] == 0) continue;
      fail(Status::not_supported,
           argument() + ", larger than this library's " + std::to_string(layout.size) +
               ", and its bytes " + std::to_string(layout.size) + ".." +
               std::to_string(size - 1) + " are not all zero (byte " + std::to_string(i) +
               " is " + std::to_string(bytes[i]) +
               "): it sets options this libcumem (version " + version_text() +
               ") does not know; use a libcumem at least as new as the cumem.h the caller "
               "was built with, or leave those options zero");
    }
  }
  return c.end;
}

// Reads a caller's options struct over `defaults` (NULL: the defaults):
// only the whole fields its struct_size covers, so an older caller's
// smaller struct keeps our defaults for the fields it does not know.
template <class Options>
Options read_options(const Options* user, Options defaults, const char* name) {
  if (!user) return defaults;
  const size_t covered =
      check_struct_size(user, user->struct_size, layout_of<Options>(), name, Direction::in);
  std::memcpy(&defaults, user, covered);
  defaults.struct_size = static_cast<uint32_t>(sizeof(Options));
  return defaults;
}

// Checks an out struct's struct_size before any work is done, so that a
// bad one fails the call with nothing written.
template <class Out>
void check_out_struct(const Out* out_struct, const char* name) {
  if (!out_struct) null_argument(name);
  check_struct_size(out_struct, out_struct->struct_size, layout_of<Out>(), name, Direction::out);
}

// Writes a filled struct into the caller's (checked by check_out_struct):
// only the whole fields the caller's struct_size covers, nothing past them,
// then struct_size = min(caller's, ours), which tells a caller built with
// a newer, larger struct that the fields past our size were not written.
template <class Out>
void write_out_struct(Out* out_struct, const Out& value) noexcept {
  const uint32_t size = out_struct->struct_size;
  const uint32_t written = size < sizeof(Out) ? size : static_cast<uint32_t>(sizeof(Out));
  std::memcpy(static_cast<void*>(out_struct), &value, coverage(layout_of<Out>(), size).end);
  out_struct->struct_size = written;
}

inline cumem_bool_t to_bool(bool b) { return b ? CUMEM_TRUE : CUMEM_FALSE; }

// A reserved field of a struct the library reads must be 0, so that a later
// version can give it a meaning.
inline void check_reserved(uint32_t value, const char* name) {
  if (value != 0)
    fail(Status::invalid_argument, std::string(name) + " is " + std::to_string(value) +
                                       "; reserved fields must be 0");
}

// Records the failure for cumem_last_error_message and returns its status.
cumem_status_t record_failure(const char* function, Status status, const char* message) noexcept;
cumem_status_t record_unknown_failure(const char* function) noexcept;

}  // namespace cumem::capi

#define CUMEM_EXPORT extern "C" CUMEM_API

#define CUMEM_TRY try {
#define CUMEM_CATCH                                                                       \
  return CUMEM_SUCCESS;                                                                   \
  }                                                                                       \
  catch (const ::cumem::core::Error& e) {                                                       \
    return ::cumem::capi::record_failure(__func__, e.status(), e.what());                 \
  }                                                                                       \
  catch (const std::bad_alloc&) {                                                         \
    return ::cumem::capi::record_failure(__func__, ::cumem::core::Status::out_of_memory,        \
                                         "out of host memory for libcumem's bookkeeping"); \
  }                                                                                       \
  catch (...) {                                                                           \
    return ::cumem::capi::record_unknown_failure(__func__);                               \
  }
