// Random sequences of buffer operations through the C API, checked against
// a model of what each call must do (on the fake memory driver,
// fake_memory_cuda.cpp, whose device memory is host memory and whose
// streams run each call at once): allocations from a host resource, the
// device's memory resource, a caching adaptor over it, a limit adaptor
// over that and a legacy pinned resource, on the legacy default stream and
// two streams; fills of every width, whole and region copies between any
// two buffers, new copies, slices of buffers and of slices, deallocation
// streams set, closes on any stream, retains and releases in any order.
// Every call must succeed exactly when the model says it may, and fail
// otherwise with one of the statuses the header names for it and a
// message; after each write the written buffer's bytes (every open
// buffer's every 25 steps) are compared with the model's, and each
// resource's statistics with the bytes and allocations the model has open
// in it. A failure names the seed
// and the step (and the calls before it, CUMEM_RANDOM_TRACE=1).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

// The model of one allocation: its bytes (known where a fill or copy wrote
// them), the resource it came from, and whether its memory is still
// allocated (until its buffer is closed, or the test holds no handle of
// its buffer or of a slice of it any more).
struct Allocation {
  size_t size = 0;
  int resource = 0;
  bool open = true;
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> known;  // 1: bytes[k] was written
};

// A handle the test holds (a buffer, or a slice of a buffer or of a slice):
// `offset` and `length` into its allocation; it answers BUFFER_CLOSED once
// it, or any buffer it is a slice of, was closed.
struct Node {
  cumem_buffer_t* handle = nullptr;
  std::shared_ptr<Allocation> allocation;
  std::shared_ptr<Node> parent;  // the buffer this is a slice of
  size_t offset = 0, length = 0;
  bool closed = false;
  int references = 1;  // the test's (retain adds one, release takes one)

  bool usable() const {
    if (!allocation->open) return false;
    for (const Node* n = this; n; n = n->parent.get())
      if (n->closed) return false;
    return true;
  }
};

constexpr uint64_t kLimit = 256 * 1024;  // the limit adaptor's
constexpr int kResources = 5;

class RandomBuffers : public ::testing::Test {
 protected:
  void SetUp() override {
    CUMEM_ASSERT_OK(cumem_device_get(0, &device_));
    CUMEM_ASSERT_OK(cumem_host_resource_create(nullptr, &resources_[0]));
    CUMEM_ASSERT_OK(cumem_device_get_memory_resource(device_, &resources_[1]));
    CUMEM_ASSERT_OK(cumem_caching_resource_create(resources_[1], &resources_[2]));
    CUMEM_ASSERT_OK(cumem_limit_resource_create(resources_[2], kLimit, &resources_[3]));
    CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device_, &resources_[4]));
    for (cumem_stream_t*& s : streams_) CUMEM_ASSERT_OK(cumem_stream_create(device_, nullptr, &s));
  }
  void TearDown() override {
    for (cumem_stream_t* s : streams_) EXPECT_EQ(cumem_stream_release(s), CUMEM_SUCCESS);
    for (int r = kResources - 1; r >= 0; --r) EXPECT_EQ(cumem_resource_release(resources_[r]), CUMEM_SUCCESS);
    EXPECT_EQ(cumem_device_release(device_), CUMEM_SUCCESS);
  }

  // One run of `steps` random operations from `seed`, then every handle
  // released: the resources end with nothing in use.
  void run(uint32_t seed, int steps) {
    rng_.seed(seed);
    seed_ = seed;
    trace_.clear();
    for (step_ = 0; step_ < steps && !HasFatalFailure(); ++step_) {
      one_operation();
      if (step_ % 25 == 24) check_contents();  // every buffer, now and then
      if (::testing::Test::HasFailure()) {
        ADD_FAILURE() << where();
        return;
      }
    }
    check_contents();
    while (!nodes_.empty()) release(nodes_.size() - 1);
    check_statistics();
    if (::testing::Test::HasFailure()) ADD_FAILURE() << where() << " (the final releases)";
  }

 private:
  std::string where() const {
    std::ostringstream out;
    out << "seed " << seed_ << ", step " << step_;
    if (std::getenv("CUMEM_RANDOM_TRACE")) out << "; the calls:\n" << trace_;
    else out << " (CUMEM_RANDOM_TRACE=1 lists the calls)";
    return out.str();
  }
  void note(const std::string& call) { trace_ += call + "\n"; }

  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool chance(int percent) { return static_cast<int>(pick(100)) < percent; }
  const cumem_stream_t* any_stream() {
    const size_t i = pick(3);
    return i == 0 ? nullptr : streams_[i - 1];
  }
  size_t any_size() {
    switch (pick(6)) {
      case 0: return 0;
      case 1: return 1 + pick(16);
      case 2: return 1 + pick(4096);
      case 3: return 4096 * (1 + pick(16));
      case 4: return 65536 + pick(65536);
      default: return 1 + pick(300);
    }
  }

  // The call's status must be success exactly when `allowed` is empty, and
  // otherwise one of `allowed`, with a message.
  bool expect_status(cumem_status_t got, const std::set<cumem_status_t>& allowed,
                     const std::string& call) {
    note(call + " -> " + std::to_string(got));
    if (allowed.empty()) {
      EXPECT_EQ(got, CUMEM_SUCCESS) << call << ": " << cumem_last_error_message();
      return got == CUMEM_SUCCESS;
    }
    std::string expected;
    for (cumem_status_t a : allowed) expected += " " + std::to_string(a);
    EXPECT_TRUE(allowed.count(got)) << call << " gave status " << got << ", not one of"
                                    << expected << " (" << cumem_last_error_message() << ")";
    if (got != CUMEM_SUCCESS) {
      EXPECT_STRNE(cumem_last_error_message(), "") << call;
    }
    return false;
  }

  void one_operation() {
    const size_t op = pick(100);
    if (nodes_.empty() || op < 22) return allocate();
    const size_t i = pick(nodes_.size());
    if (op < 34) return fill(i);
    if (op < 50) return copy_region(i, pick(nodes_.size()));
    if (op < 54) return copy_whole(i, pick(nodes_.size()));
    if (op < 58) return copy_to_new(i);
    if (op < 66) return slice(i);
    if (op < 72) return close(i);
    if (op < 75) return set_deallocation_stream(i);
    if (op < 80) return retain(i);
    if (op < 94) return release(i);
    check_statistics();
  }

  void allocate() {
    const int r = static_cast<int>(pick(kResources));
    const size_t size = any_size();
    const cumem_stream_t* stream = any_stream();
    cumem_buffer_t* b = nullptr;
    const cumem_status_t s = cumem_resource_allocate(resources_[r], size, stream, &b);
    const std::string call = "allocate(resource " + std::to_string(r) + ", " +
                             std::to_string(size) + ")";
    // The limit adaptor refuses what would take its bytes in use past the
    // limit.
    std::set<cumem_status_t> errors;
    if (r == 3 && open_bytes(3) + size > kLimit) errors.insert(CUMEM_ERROR_OUT_OF_MEMORY);
    if (!expect_status(s, errors, call)) return;
    add_buffer(b, r, size);
    check_statistics();
  }

  // A new buffer of `size` bytes from resource `r` in the model (contents
  // unknown), at the end of the table.
  Node& add_buffer(cumem_buffer_t* b, int r, size_t size) {
    auto a = std::make_shared<Allocation>();
    a->size = size;
    a->resource = r;
    a->bytes.assign(size, 0);
    a->known.assign(size, 0);
    auto n = std::make_shared<Node>();
    n->handle = b;
    n->allocation = a;
    n->length = size;
    nodes_.push_back(n);
    return *n;
  }

  void copy_to_new(size_t i) {
    const std::shared_ptr<Node> src = nodes_[i];
    const int r = src->allocation->resource;  // a slice's is its buffer's
    std::set<cumem_status_t> errors;
    if (!src->usable()) errors.insert(CUMEM_ERROR_BUFFER_CLOSED);
    else if (r == 3 && open_bytes(3) + src->length > kLimit) errors.insert(CUMEM_ERROR_OUT_OF_MEMORY);
    cumem_buffer_t* out = nullptr;
    const cumem_status_t s = cumem_buffer_copy_to_new(src->handle, any_stream(), &out);
    if (!expect_status(s, errors, "copy_to_new(#" + std::to_string(i) + ")")) return;
    Node& n = add_buffer(out, r, src->length);
    copy_model(n, 0, *src, 0, src->length);
    check_statistics();
  }

  void set_deallocation_stream(size_t i) {
    Node& n = *nodes_[i];
    std::set<cumem_status_t> errors;
    if (!n.usable()) errors.insert(CUMEM_ERROR_BUFFER_CLOSED);
    expect_status(cumem_buffer_set_deallocation_stream(n.handle, any_stream()), errors,
                  "set_deallocation_stream(#" + std::to_string(i) + ")");
  }

  void fill(size_t i) {
    Node& n = *nodes_[i];
    static const uint32_t widths[] = {1, 2, 4, 3};
    const uint32_t width = widths[pick(4)];
    uint32_t value = static_cast<uint32_t>(rng_());
    if (chance(85)) value &= width == 1 ? 0xFFu : width == 2 ? 0xFFFFu : 0xFFFFFFFFu;
    const cumem_stream_t* stream = any_stream();
    std::set<cumem_status_t> errors;
    if (!n.usable()) {
      errors.insert(CUMEM_ERROR_BUFFER_CLOSED);
    } else {
      if (width == 3) errors.insert(CUMEM_ERROR_INVALID_ARGUMENT);
      if (width < 4 && (value >> (8 * width)) != 0) errors.insert(CUMEM_ERROR_INVALID_ARGUMENT);
      if (width != 3 && n.length % width != 0) errors.insert(CUMEM_ERROR_SIZE_MISMATCH);
      // (An empty buffer is filled at once: its address is not looked at.)
      if (width != 3 && n.length > 0 && device_accessible(n) && address(n) % width != 0)
        errors.insert(CUMEM_ERROR_INVALID_ARGUMENT);
    }
    const cumem_status_t s = cumem_buffer_fill(n.handle, value, width, stream);
    if (!expect_status(s, errors,
                       "fill(#" + std::to_string(i) + " of resource " +
                           std::to_string(n.allocation->resource) + " at offset " +
                           std::to_string(n.offset) + ", " + std::to_string(value) + ", width " +
                           std::to_string(width) + ")"))
      return;
    Allocation& a = *n.allocation;
    for (size_t k = 0; k < n.length; ++k) {
      a.bytes[n.offset + k] = static_cast<uint8_t>(value >> (8 * (k % width)));
      a.known[n.offset + k] = 1;
    }
    check_contents(&a);
  }

  // Whether the regions [d, d+len) of `dst` and [s, s+len) of `src` share
  // bytes of one allocation.
  static bool overlap(const Node& dst, size_t d, const Node& src, size_t s, size_t len) {
    if (dst.allocation != src.allocation || len == 0) return false;
    const size_t a = dst.offset + d, b = src.offset + s;
    return a < b + len && b < a + len;
  }

  void copy_region(size_t di, size_t si) {
    Node& dst = *nodes_[di];
    Node& src = *nodes_[si];
    const size_t len = chance(10) ? 0 : 1 + pick(std::max<size_t>(1, std::min(dst.length, src.length)));
    size_t d = pick(dst.length + 1), s = pick(src.length + 1);
    if (chance(80)) {  // mostly in range
      d = dst.length >= len ? pick(dst.length - len + 1) : d;
      s = src.length >= len ? pick(src.length - len + 1) : s;
    }
    std::set<cumem_status_t> errors;
    if (!dst.usable() || !src.usable()) {
      errors.insert(CUMEM_ERROR_BUFFER_CLOSED);
    } else if (d + len > dst.length || s + len > src.length) {
      errors.insert(CUMEM_ERROR_OUT_OF_RANGE);
    } else if (overlap(dst, d, src, s, len)) {
      // One memory under both regions (one buffer, or a buffer and a slice
      // of it, or two slices).
      errors.insert(CUMEM_ERROR_INVALID_ARGUMENT);
    }
    const cumem_status_t st =
        cumem_buffer_copy_region(dst.handle, d, src.handle, s, len, any_stream());
    if (!expect_status(st, errors,
                       "copy_region(#" + std::to_string(di) + "+" + std::to_string(d) + ", #" +
                           std::to_string(si) + "+" + std::to_string(s) + ", " +
                           std::to_string(len) + ")"))
      return;
    copy_model(dst, d, src, s, len);
  }

  void copy_whole(size_t di, size_t si) {
    Node& dst = *nodes_[di];
    Node& src = *nodes_[si];
    std::set<cumem_status_t> errors;
    if (!dst.usable() || !src.usable()) {
      errors.insert(CUMEM_ERROR_BUFFER_CLOSED);
    } else if (dst.length != src.length) {
      errors.insert(CUMEM_ERROR_SIZE_MISMATCH);
    } else if (overlap(dst, 0, src, 0, dst.length)) {
      errors.insert(CUMEM_ERROR_INVALID_ARGUMENT);
    }
    const bool to = chance(50);
    const cumem_status_t st = to ? cumem_buffer_copy_to(src.handle, dst.handle, any_stream())
                                 : cumem_buffer_copy_from(dst.handle, src.handle, any_stream());
    if (!expect_status(st, errors,
                       std::string(to ? "copy_to" : "copy_from") + "(#" + std::to_string(di) +
                           " <- #" + std::to_string(si) + ")"))
      return;
    copy_model(dst, 0, src, 0, dst.length);
  }

  void copy_model(Node& dst, size_t d, const Node& src, size_t s, size_t len) {
    const Allocation& from = *src.allocation;
    Allocation& to = *dst.allocation;
    const std::vector<uint8_t> bytes(from.bytes.begin() + src.offset + s,
                                     from.bytes.begin() + src.offset + s + len);
    const std::vector<uint8_t> known(from.known.begin() + src.offset + s,
                                     from.known.begin() + src.offset + s + len);
    for (size_t k = 0; k < len; ++k) {
      to.bytes[dst.offset + d + k] = bytes[k];
      to.known[dst.offset + d + k] = known[k];
    }
    check_contents(&to);
  }

  void slice(size_t i) {
    const std::shared_ptr<Node> parent = nodes_[i];
    size_t offset = pick(parent->length + 1);
    size_t length = pick(parent->length - offset + 1);
    if (chance(10)) length += 1 + pick(8);  // past the end
    std::set<cumem_status_t> errors;
    if (!parent->usable()) errors.insert(CUMEM_ERROR_BUFFER_CLOSED);
    else if (offset + length > parent->length) errors.insert(CUMEM_ERROR_OUT_OF_RANGE);
    cumem_buffer_t* out = nullptr;
    const cumem_status_t s = cumem_buffer_slice(parent->handle, offset, length, &out);
    if (!expect_status(s, errors,
                       "slice(#" + std::to_string(i) + ", " + std::to_string(offset) + ", " +
                           std::to_string(length) + ")"))
      return;
    auto n = std::make_shared<Node>();
    n->handle = out;
    n->allocation = parent->allocation;
    n->parent = parent;
    n->offset = parent->offset + offset;
    n->length = length;
    nodes_.push_back(n);
    size_t size = 7;
    CUMEM_ASSERT_OK(cumem_buffer_size(out, &size));
    EXPECT_EQ(size, length);
    if (length > 0) {
      EXPECT_EQ(address(*n), address(*parent) + offset);
    }
  }

  void close(size_t i) {
    Node& n = *nodes_[i];
    std::set<cumem_status_t> errors;
    if (!n.usable()) errors.insert(CUMEM_ERROR_BUFFER_CLOSED);
    const cumem_status_t s = cumem_buffer_close(n.handle, any_stream());
    if (!expect_status(s, errors, "close(#" + std::to_string(i) + ")")) return;
    n.closed = true;
    if (!n.parent) n.allocation->open = false;  // a slice's close frees nothing
    cumem_bool_t closed = CUMEM_FALSE;
    CUMEM_ASSERT_OK(cumem_buffer_is_closed(n.handle, &closed));
    EXPECT_TRUE(closed);
    check_statistics();
  }

  void retain(size_t i) {
    expect_status(cumem_buffer_retain(nodes_[i]->handle), {},
                  "retain(#" + std::to_string(i) + ")");
    ++nodes_[i]->references;
  }

  void release(size_t i) {
    const std::shared_ptr<Node> n = nodes_[i];
    if (!expect_status(cumem_buffer_release(n->handle), {}, "release(#" + std::to_string(i) + ")"))
      return;
    if (--n->references > 0) return;
    nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(i));
    // The last handle of the memory gone: the buffer closes itself.
    if (std::none_of(nodes_.begin(), nodes_.end(),
                     [&](const auto& m) { return m->allocation == n->allocation; }))
      n->allocation->open = false;
    check_statistics();
  }

  static uintptr_t address(const Node& n) {
    void* p = nullptr;
    EXPECT_EQ(cumem_buffer_ptr(n.handle, &p), CUMEM_SUCCESS) << cumem_last_error_message();
    return reinterpret_cast<uintptr_t>(p);
  }
  static bool device_accessible(const Node& n) {
    cumem_buffer_info_t info = CUMEM_BUFFER_INFO_INIT;
    EXPECT_EQ(cumem_buffer_get_info(n.handle, &info), CUMEM_SUCCESS) << cumem_last_error_message();
    return info.device_accessible;
  }

  // Every open buffer (or only `only`'s, the one just written) holds the
  // model's known bytes (the fake's device memory is host memory, read in
  // place once the streams are done).
  void check_contents(const Allocation* only = nullptr) {
    EXPECT_EQ(cumem_device_synchronize(device_), CUMEM_SUCCESS) << cumem_last_error_message();
    for (cumem_stream_t* s : streams_) EXPECT_EQ(cumem_stream_synchronize(s), CUMEM_SUCCESS);
    std::set<const Allocation*> seen;
    for (const auto& n : nodes_) {
      if (n->parent || !n->usable() || n->length == 0 || (only && n->allocation.get() != only) ||
          !seen.insert(n->allocation.get()).second)
        continue;
      const auto* p = reinterpret_cast<const uint8_t*>(address(*n));
      const Allocation& a = *n->allocation;
      for (size_t k = 0; k < a.size; ++k)
        if (a.known[k] && p[k] != a.bytes[k]) {
          ADD_FAILURE() << "byte " << k << " of a " << a.size << "-byte buffer of resource "
                        << a.resource << " is " << int(p[k]) << ", not " << int(a.bytes[k]);
          return;
        }
    }
  }

  // The model's open bytes and allocations of resource `r` (the caching
  // adaptor counts what the limit adaptor over it hands out too).
  uint64_t open_bytes(int r) const {
    uint64_t bytes = 0;
    for (const Allocation* a : open_allocations(r)) bytes += a->size;
    return bytes;
  }
  // (An open allocation has a handle the test holds: its memory is freed
  // when the last one goes.)
  std::set<const Allocation*> open_allocations(int r) const {
    std::set<const Allocation*> out;
    for (const auto& n : nodes_) {
      const Allocation* a = n->allocation.get();
      if (a->open && a->size > 0 && (a->resource == r || (r == 2 && a->resource == 3)))
        out.insert(a);
    }
    return out;
  }

  // Resources 0, 2, 3 and 4 count exactly what the model has open (the
  // device's resource also holds what the cache keeps).
  void check_statistics() {
    for (int r : {0, 2, 3, 4}) {
      const cumem_resource_statistics_t s = statistics_of(resources_[r]);
      EXPECT_EQ(s.bytes_in_use, open_bytes(r)) << "resource " << r;
      EXPECT_EQ(s.live_allocations, open_allocations(r).size()) << "resource " << r;
    }
  }

  std::mt19937 rng_;
  uint32_t seed_ = 0;
  int step_ = 0;
  std::string trace_;
  cumem_device_t* device_ = nullptr;
  cumem_resource_t* resources_[kResources] = {};
  cumem_stream_t* streams_[2] = {};
  std::vector<std::shared_ptr<Node>> nodes_;
};

TEST_F(RandomBuffers, EveryCallDoesWhatTheModelSays) {
  for (uint32_t seed = 1; seed <= 200 && !HasFailure(); ++seed) run(seed, 300);
}

}  // namespace
