#include "framework.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alloc_conf.hpp"
#include "capture.hpp"
#include "deferred_frees.hpp"
#include "default_resource.hpp"
#include "driver/driver.hpp"
#include "error.hpp"
#include "log.hpp"
#include "native_stream.hpp"
#include "pointer_map.hpp"
#include "resources/caching_resource.hpp"
#include "snapshot/registry.hpp"
#include "spin_lock.hpp"
#include "thread_shard.hpp"
#include "vmm/spec.hpp"

namespace cumem::core::framework {
namespace {

constexpr int kMaxDevices = 64;
// Record shards: a thread that allocates and frees one block over and over
// (a cached pair) always meets the same shard, so two such threads on one
// shard contend at every call; of 16 threads some two do with 256 shards
// about one run in three (the birthday odds), with 1024 about one in nine.
constexpr size_t kShards = 1024;

// Readers of the slots' published choices, one per thread shard (each on
// a cache line of its own), and the framework's hold on the resources its
// allocations came from.
//
// A reader reads a choice under its shard's lock (a thread's own, so
// uncontended), and keeps the chosen resource alive past the lock by a
// count in its shard's holder of that resource, which holds one reference:
// an allocation counts itself there until its free is done, so that no
// allocation touches a reference count (or any other cache line) that
// other threads write. A writer that replaces a choice publishes it, then
// sweeps every reader (sweep_readers): once it has taken and let go of a
// reader's lock, that reader holds the old choice only through counts, and
// a holder of a resource that no slot chooses goes (with its reference)
// when its count reaches zero, at once if it is zero.
// Each on a cache line of its own: its count is written at every
// allocation and free, and the holder arrays of two readers are small
// allocations that may lie side by side (threads that came and went
// leave readers' arrays in one malloc arena).
struct alignas(64) Holder {
  Ref<Resource> reference;  // the resource, held
  size_t live = 0;       // allocations that count on it (until their free is done)
  bool retired = false;  // not chosen at the last sweep: goes when `live` is 0
};
struct alignas(64) Reader {
  SpinLock lock;
  std::vector<Holder> holders;  // a few: one per resource chosen while this shard read
};
Reader* readers() {
  static Reader* r = new Reader[kThreadShards + 1];  // never destroyed, as State
  return r;
}

constexpr uint16_t kNoReader = UINT16_MAX;

// What keeps an allocation's resource alive until its free is done: a
// count in a reader's holder (a published choice), or a reference of its
// own (a resource the caller named, or a choice just made).
class Hold {
 public:
  Hold() = default;
  explicit Hold(Ref<Resource> own) noexcept : resource_(own.get()), own_(std::move(own)) {}
  Hold(Resource* counted, uint16_t reader) noexcept : resource_(counted), reader_(reader) {}
  Hold(Hold&& o) noexcept
      : resource_(std::exchange(o.resource_, nullptr)),
        own_(std::move(o.own_)),
        reader_(std::exchange(o.reader_, kNoReader)) {}
  Hold& operator=(Hold&& o) noexcept {
    if (this != &o) {
      let_go();
      resource_ = std::exchange(o.resource_, nullptr);
      own_ = std::move(o.own_);
      reader_ = std::exchange(o.reader_, kNoReader);
    }
    return *this;
  }
  ~Hold() { let_go(); }

  Resource* get() const noexcept { return resource_; }
  Resource* operator->() const noexcept { return resource_; }

  // Hands what holds the resource to a record (`reader`: the reader whose
  // holder counts it, or kNoReader for a reference the record now owns);
  // this Hold holds nothing after. Taken back by adopt().
  Resource* detach(uint16_t& reader) noexcept {
    reader = std::exchange(reader_, kNoReader);
    if (reader == kNoReader) (void)own_.detach();
    return std::exchange(resource_, nullptr);
  }
  static Hold adopt(Resource* resource, uint16_t reader) noexcept {
    if (reader == kNoReader) return Hold(Ref<Resource>::adopt(resource));
    return Hold(resource, reader);
  }

 private:
  // The count goes down after the allocation's free is done, so a holder
  // that goes with it (its resource retired) lets go of a resource no
  // call uses any more.
  void let_go() noexcept {
    if (reader_ == kNoReader) return;
    Reader& reader = readers()[reader_];
    Ref<Resource> gone;
    {
      std::lock_guard<SpinLock> lock(reader.lock);
      std::vector<Holder>& holders = reader.holders;
      for (size_t i = 0; i < holders.size(); ++i) {
        Holder& h = holders[i];
        if (h.reference.get() != resource_) continue;
        if (--h.live == 0 && h.retired) {
          gone = std::move(h.reference);
          holders[i] = std::move(holders.back());
          holders.pop_back();
        }
        break;
      }
    }
    reader_ = kNoReader;
    resource_ = nullptr;
  }

  Resource* resource_ = nullptr;
  Ref<Resource> own_;
  uint16_t reader_ = kNoReader;
};

// The resource choice of one device: the one set_resource gave, else the
// default (the configuration's resource, src/alloc_conf.hpp), cached with
// the configuration's generation and, when it is made over the device's
// memory resource, that resource and its version.
//
// What get_resource would return is also published for readers that do
// not take the slot's lock (every allocation asks): `chosen` and the conditions under which
// it is still the choice, under a sequence count that is odd while the
// lock holder changes them (a reader that sees it change asks under the
// lock). Readers read it under their reader's lock (above); the slot's
// reference keeps `chosen` alive until a writer that replaced it has swept
// the readers (sweep_readers), so a reader that read it meets it alive.
struct Slot {
  std::mutex mutex;
  Ref<Resource> resource;
  Ref<Resource> fallback;
  Ref<Resource> fallback_upstream;  // the device's memory resource under it, if used
  uint64_t fallback_version = 0;
  uint64_t fallback_generation = 0;

  std::atomic<uint64_t> sequence{0};
  std::atomic<Resource*> chosen{nullptr};
  std::atomic<bool> chosen_is_set{false};         // set_resource's: holds whatever changes
  std::atomic<bool> chosen_tracks_version{false};  // made over the device's memory resource
  std::atomic<uint64_t> chosen_version{0};
  std::atomic<uint64_t> chosen_generation{0};

  // Under `mutex`, after every change of resource or fallback (and before
  // the references they replaced are let go, after sweep_readers()).
  void publish() noexcept {
    const uint64_t n = sequence.load(std::memory_order_relaxed);
    sequence.store(n + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    Resource* r = resource ? resource.get() : fallback.get();
    chosen.store(r, std::memory_order_relaxed);
    chosen_is_set.store(static_cast<bool>(resource), std::memory_order_relaxed);
    chosen_tracks_version.store(static_cast<bool>(fallback_upstream), std::memory_order_relaxed);
    chosen_version.store(fallback_version, std::memory_order_relaxed);
    chosen_generation.store(fallback_generation, std::memory_order_relaxed);
    sequence.store(n + 2, std::memory_order_seq_cst);
  }

  // The published choice, if it is still the choice for `version` and
  // `generation`; null means: ask under the lock. The caller holds a
  // reader's lock, which keeps the result alive until it lets go.
  Resource* chosen_now(uint64_t version, uint64_t generation) const noexcept {
    const uint64_t before = sequence.load(std::memory_order_acquire);
    if (before & 1) return nullptr;
    Resource* r = chosen.load(std::memory_order_relaxed);
    const bool is_set = chosen_is_set.load(std::memory_order_relaxed);
    const bool tracks = chosen_tracks_version.load(std::memory_order_relaxed);
    const uint64_t v = chosen_version.load(std::memory_order_relaxed);
    const uint64_t g = chosen_generation.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (!r || sequence.load(std::memory_order_relaxed) != before) return nullptr;
    if (!is_set && (g != generation || (tracks && v != version))) return nullptr;
    return r;
  }
};

// What the framework keeps of an allocation until its free: trivially
// copied in and out of its shard (no reference count moves with it); what
// it holds is let go by let_go() once the free is done.
// - `resource` is held as Hold holds it: counted in reader `reader`'s
//   holder, or by a reference of the record's own (kNoReader).
// - The allocation's stream: `stream`, retained, holds a stream libcumem
//   created, so that it outlives the allocation made on it (the free may
//   be ordered after its work), and the per-thread default stream; a
//   framework's own stream is `foreign`, its CUstream, and
//   `foreign_device` its device (a Device lives as long as the process),
//   found again in the freeing thread's cache of wrappers without asking
//   the driver (no reference count per allocation). Both null: the legacy
//   default stream.
struct Record {
  Resource* resource = nullptr;
  uint16_t reader = kNoReader;
  bool captured = false;  // allocated on a capturing stream (graph memory)
  size_t size = 0;
  Stream* stream = nullptr;
  CUstream foreign = nullptr;
  const Device* foreign_device = nullptr;

  CUstream native() const noexcept {
    return stream ? stream->native() : foreign ? foreign : CU_STREAM_LEGACY;
  }
};

// Lets go of what `record` holds: after its free is done (or handed on).
void let_go(const Record& record) noexcept {
  { Hold gone = Hold::adopt(record.resource, record.reader); }
  if (record.stream) (void)Ref<Stream>::adopt(record.stream);
}

// Records by address, in shards of their own lock and cache line, each a
// flat map (no allocation per insert or erase), 64 KiB in all (kShards);
// the lock is held for a few instructions.
struct alignas(64) Shard {
  SpinLock lock;
  PointerMap<Record> records;
};

// Never destroyed: frameworks free memory during interpreter and static
// teardown, after this library's static destructors would have run.
struct State {
  Slot slots[kMaxDevices];
  Shard shards[kShards];
};
State& state() {
  static State* s = new State;
  return *s;
}

// After a choice was replaced (published), before the reference it held
// is let go: takes and lets go of every reader's lock, so that a reader
// that read the old choice has counted it in a holder, and marks each
// holder of a resource that no slot chooses now to go when its count is
// zero, letting go at once of those whose count is. Without a slot's lock
// held; never under a reader's lock.
void sweep_readers() {
  std::vector<Resource*> chosen;
  for (const Slot& slot : state().slots)
    if (Resource* r = slot.chosen.load(std::memory_order_acquire)) chosen.push_back(r);
  std::vector<Ref<Resource>> gone;
  Reader* all = readers();
  for (size_t i = 0; i <= kThreadShards; ++i) {
    std::lock_guard<SpinLock> lock(all[i].lock);
    std::vector<Holder>& holders = all[i].holders;
    for (size_t k = 0; k < holders.size();) {
      Holder& h = holders[k];
      if (std::find(chosen.begin(), chosen.end(), h.reference.get()) == chosen.end())
        h.retired = true;
      if (h.retired && h.live == 0) {
        gone.push_back(std::move(h.reference));
        holders[k] = std::move(holders.back());
        holders.pop_back();
      } else {
        ++k;
      }
    }
  }
  // `gone` lets go here, outside every lock.
}

// What a published choice must still match: the version of the device's
// memory resource and the configuration's generation.
struct ChoiceKey {
  uint64_t version = 0;
  uint64_t generation = 0;
};

// The published choice of a device (its `slot`), counted in the calling
// thread's reader: no reference count is touched unless this thread's
// reader holds no holder of it yet. Null: nothing is published for `key`
// (the caller asks get_resource).
Hold hold_published(Slot& slot, ChoiceKey key) {
  const size_t index = thread_shard().index;
  Reader& reader = readers()[index];
  std::lock_guard<SpinLock> lock(reader.lock);
  Resource* r = slot.chosen_now(key.version, key.generation);
  if (!r) return Hold{};
  Holder* holder = nullptr;
  for (Holder& h : reader.holders)
    if (h.reference.get() == r) {
      holder = &h;
      break;
    }
  if (!holder) {
    // Alive: its slot lets go of it only after sweeping this reader.
    reader.holders.push_back(Holder{Ref<Resource>::share(r), 0, false});
    holder = &reader.holders.back();
  }
  holder->retired = false;  // chosen now: a later change sweeps this reader again
  ++holder->live;
  return Hold(r, static_cast<uint16_t>(index));
}

Shard& shard_of(void* ptr) {
  // Allocations are at least 256-byte aligned; mix the bits above that.
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr) >> 8;
  return state().shards[(p ^ (p >> 8) ^ (p >> 17)) % kShards];
}

void check_device(int device) {
  if (device < 0 || device >= kMaxDevices)
    fail(Status::no_device, "device " + std::to_string(device) + " is out of range (0.." +
                                std::to_string(kMaxDevices - 1) + ")");
  (void)Device::get(device);  // throws no_device (or no_driver) for a bad ordinal
}

// The configuration: read from the environment at the first choice
// (CUMEM_ALLOC_CONF, CUMEM_FRAMEWORK_RESOURCE), replaced by configure().
// A bad environment is kept as its message, refused at every choice until
// configure() replaces it. The generation changes with each configure(), so
// that a slot sees with one atomic load that its default is still current.
struct Configuration {
  std::mutex mutex;
  bool loaded = false;
  std::shared_ptr<const AllocConf> conf;
  std::string error;
  std::atomic<uint64_t> generation{1};
};
Configuration& configuration() {
  static Configuration* c = new Configuration;  // never destroyed, as State
  return *c;
}

// `device`'s ChoiceKey now (no_device for a bad ordinal), read before the
// device's resource is: a change in between makes the next call look
// again, never keeps a stale choice.
ChoiceKey choice_key(int device) {
  if (device < 0 || device >= kMaxDevices) check_device(device);
  return {device_memory_resource_version(device),
          configuration().generation.load(std::memory_order_acquire)};
}

std::shared_ptr<const AllocConf> current_conf(uint64_t& generation) {
  Configuration& c = configuration();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.loaded) {
    try {
      c.conf = std::make_shared<const AllocConf>(alloc_conf_from_environment(
          std::getenv("CUMEM_ALLOC_CONF"), std::getenv("CUMEM_FRAMEWORK_RESOURCE")));
    } catch (const Error& e) {
      c.error = e.what();
    }
    c.loaded = true;
  }
  generation = c.generation.load(std::memory_order_relaxed);
  if (!c.conf) fail(Status::invalid_argument, c.error);
  return c.conf;
}

// An expandable cache over `upstream` whose pages are made with the POSIX
// fd handle type where the device has it (as PyTorch's expandable
// segments), so that its blocks can be shared with other processes
// (torch.multiprocessing); else one without.
Ref<Resource> create_shareable_pages_cache(const Ref<Resource>& upstream, CachingOptions caching) {
  caching.handle_types = vmm::kHandlePosixFd;
  try {
    return create_caching_resource(upstream, caching);
  } catch (const Error& e) {
    if (e.status() != Status::not_supported) throw;
    if (log::enabled(log::Level::info))
      log::write(log::Level::info, "the framework's expandable cache over " + upstream->describe() +
                                       " cannot share its pages: " + e.what());
  }
  caching.handle_types = 0;
  return create_caching_resource(upstream, caching);
}

// The default for `device` as `conf` says, over `upstream` (the device's
// memory resource, when the configuration uses it).
Ref<Resource> make_default(const AllocConf& conf, int device, Ref<Resource> upstream) {
  Ref<Resource> r = std::move(upstream);
  if (conf.managed) {
    r = create_managed_resource(Device::get(device), Location{}, true);
  } else if (conf.own_pool) {
    // A pool of the framework's own (RMM's CudaAsyncMemoryResource with a
    // release threshold), so that the device's default pool, which others
    // share, keeps its attributes.
    PoolOptions pool;
    pool.use_default_pool = false;
    pool.release_threshold = conf.release_threshold;
    r = create_device_resource(Device::get(device), pool);
  }
  if (conf.automatic) {
    // Nothing chosen: the expandable cache, where the device maps virtual
    // memory (it holds about what it hands out and reuses blocks of any
    // size); else the memory itself.
    CachingOptions caching;
    caching.expandable = true;
    try {
      r = create_shareable_pages_cache(r, caching);
    } catch (const Error& e) {
      if (e.status() != Status::not_supported) throw;
      if (log::enabled(log::Level::info))
        log::write(log::Level::info, "the framework resource of device " +
                                         std::to_string(device) + " is " + r->describe() +
                                         ", not the expandable cache: " + e.what());
    }
  } else if (conf.kind == AllocConf::Kind::caching) {
    CachingOptions caching;
    caching.expandable = conf.expandable;
    caching.page_size = conf.page_size;
    r = conf.expandable ? create_shareable_pages_cache(r, caching)
                        : create_caching_resource(std::move(r), caching);
  }
  // Above the cache: it caps what the framework's allocations hold, and an
  // expandable cache's large blocks never reach an adaptor beneath it.
  if (conf.limit) r = create_limit_resource(std::move(r), conf.limit);
  if (log::enabled(log::Level::info))
    log::write(log::Level::info, "the framework resource of device " + std::to_string(device) +
                                     " is made as configured: " +
                                     (conf.text().empty() ? "the defaults" : conf.text()) +
                                     " (" + r->describe() + ")");
  return r;
}


// The capture state of the free's stream, asked once: whether the free
// must wait, and, for the resource, which capture's pool a block goes back
// to (`has_id`: as capture_question says). A framework's own stream
// remembered from the allocation (`remembered`) may be gone: a driver
// error on the question then says it does not capture.
CaptureInfo free_capture(const Stream* s, bool remembered, bool& has_id) {
  try {
    return capture_question(s, has_id);
  } catch (const Error& e) {
    if (!remembered || !s || !s->foreign() || e.status() != Status::driver) throw;
    has_id = true;
    return {};
  }
}

std::string pointer_text(void* ptr) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", ptr);
  return buf;
}

}  // namespace

void set_resource(int device, Ref<Resource> resource) {
  check_device(device);
  if (resource) check_resource_for_device(*resource, device, "a framework resource");
  Slot& slot = state().slots[device];
  Ref<Resource> old;
  {
    std::lock_guard<std::mutex> lock(slot.mutex);
    old = std::move(slot.resource);
    slot.resource = std::move(resource);
    slot.publish();
  }
  // `old` is let go here, outside the lock, once every reader that may have
  // read it counts it in a holder; its allocations keep it alive.
  sweep_readers();
}

Ref<Resource> get_resource(int device) {
  const ChoiceKey key = choice_key(device);
  Slot& slot = state().slots[device];
  {
    Reader& reader = readers()[thread_shard().index];
    std::lock_guard<SpinLock> lock(reader.lock);
    if (Resource* chosen = slot.chosen_now(key.version, key.generation))
      return Ref<Resource>::share(chosen);  // alive while this reader's lock is held
  }
  Ref<Resource> kept, kept_upstream;
  uint64_t kept_generation = 0;
  {
    std::lock_guard<std::mutex> lock(slot.mutex);
    if (slot.resource) return slot.resource;
    if (slot.fallback && slot.fallback_generation == key.generation &&
        (!slot.fallback_upstream || slot.fallback_version == key.version))
      return slot.fallback;
    kept = slot.fallback;
    kept_upstream = slot.fallback_upstream;
    kept_generation = slot.fallback_generation;
  }
  check_device(device);
  uint64_t conf_generation = 0;
  const std::shared_ptr<const AllocConf> conf = current_conf(conf_generation);
  Ref<Resource> upstream;
  if (conf->uses_device_memory_resource()) upstream = device_memory_resource(*Device::get(device));
  // The device's memory resource changed back to the one the default was
  // made over (set, then reset to the same default): that default stays.
  Ref<Resource> made = kept && kept_generation == conf_generation && kept_upstream &&
                               kept_upstream.get() == upstream.get()
                           ? kept
                           : make_default(*conf, device, upstream);
  snapshot::publish(*made);  // listed in snapshots of the process
  Ref<Resource> replaced;
  {
    std::lock_guard<std::mutex> lock(slot.mutex);
    if (slot.resource) return slot.resource;  // set meanwhile
    // Another thread made one for the same choice first: theirs stays.
    if (slot.fallback && slot.fallback_generation == conf_generation &&
        (!slot.fallback_upstream || slot.fallback_version == key.version))
      return slot.fallback;
    replaced = std::move(slot.fallback);
    slot.fallback = made;
    slot.fallback_upstream = std::move(upstream);
    slot.fallback_version = key.version;
    slot.fallback_generation = conf_generation;
    slot.publish();
  }
  sweep_readers();  // before `replaced` (and `kept`) let go of the old default
  return made;
}

void configure(std::string_view text) {
  auto conf = std::make_shared<const AllocConf>(parse_alloc_conf(text, ""));
  Configuration& c = configuration();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.conf = std::move(conf);
  c.error.clear();
  c.loaded = true;
  c.generation.fetch_add(1, std::memory_order_acq_rel);
}

void* allocate(int device, size_t size, CUstream stream, Resource* resource) {
  if (size == 0) return nullptr;
  run_deferred_frees();  // frees a capture held back, once it ended
  Hold r;
  if (resource) {
    r = Hold(Ref<Resource>::share(resource));
  } else {
    r = hold_published(state().slots[device], choice_key(device));
    if (!r.get()) r = Hold(get_resource(device));  // made (or changed) now
  }
  const BorrowedStream s(r->device(), stream);
  // Asked once (no driver call on the legacy default stream, which cannot
  // capture); the resource's own question about the stream is answered
  // from it.
  bool has_id = false;
  const CaptureInfo capture = capture_question(s.get(), has_id);
  void* ptr = nullptr;
  {
    const KnownCapture known(s.get(), capture, has_id);
    ptr = r->allocate_raw(size, s.get());
  }
  try {
    Record record;
    record.size = size;
    record.stream = const_cast<Stream*>(s.held().get());
    if (!s.held() && s.get()) {
      record.foreign = s.get()->native();
      record.foreign_device = &s.get()->device();
    }
    record.captured = capture.capturing();
    Shard& shard = shard_of(ptr);
    std::lock_guard<SpinLock> lock(shard.lock);
    const auto [it, inserted] = shard.records.emplace(ptr, record);
    if (!inserted)
      fail(Status::internal, "the resource handed out " + pointer_text(ptr) +
                                 ", which is still allocated by the framework entry points");
    // Kept now: what holds the resource and the stream goes to the record.
    it->second.resource = r.detach(it->second.reader);
    if (record.stream) (void)Ref<Stream>(s.held()).detach();
  } catch (...) {
    const KnownCapture known(s.get(), capture, has_id);
    r->deallocate_raw(ptr, size, s.get());
    throw;
  }
  return ptr;
}

void deallocate(void* ptr, size_t size, CUstream stream, bool stream_given) {
  if (!ptr) return;
  run_deferred_frees();
  Shard& shard = shard_of(ptr);
  Record record;
  {
    std::lock_guard<SpinLock> lock(shard.lock);
    auto it = shard.records.find(ptr);
    if (it == shard.records.end())
      fail(Status::invalid_argument,
           "pointer " + pointer_text(ptr) +
               " was not allocated by libcumem's framework entry points, or was freed already");
    if (size != SIZE_MAX && size != it->second.size)
      fail(Status::invalid_argument, "pointer " + pointer_text(ptr) + " was allocated with " +
                                         std::to_string(it->second.size) +
                                         " bytes, not the " + std::to_string(size) +
                                         " given to free it (nothing was freed)");
    record = it->second;  // what it holds is let go below, once the free is done
    shard.records.erase(it);
  }
  try {
    // The free's stream: the allocation's (PyTorch frees on the stream it
    // allocated on, CuPy names none), else the one named, found once.
    // Streams are found on the device the allocation's was (a resource
    // of no device, host memory the device maps, has none to give).
    const Device* on = record.foreign ? record.foreign_device : record.resource->device();
    const CUstream allocated_on = record.native();
    const CUstream freed_on = !stream_given ? allocated_on : stream ? stream : CU_STREAM_LEGACY;
    const bool in_record = record.stream && freed_on == allocated_on;
    const BorrowedStream found(on, in_record ? nullptr : freed_on);
    const Stream* s = in_record ? record.stream : found.get();
    bool has_id = false;
    const CaptureInfo capture = free_capture(s, !stream_given, has_id);
    // The allocation's stream, where the free is on another or waits: the
    // record's, the free's own, or found (a reference: a later lookup may
    // replace a borrowed entry).
    const auto allocation_stream = [&]() -> Ref<Stream> {
      if (record.stream) return Ref<Stream>::share(record.stream);
      if (freed_on == allocated_on) return found.reference();
      return native_stream(on, allocated_on);
    };
    // Memory from outside any capture, freed on a capturing stream: a graph
    // cannot free it, so the free waits until the capture ends.
    if (!record.captured && capture.capturing()) {
      Ref<Stream> free_stream = Ref<Stream>::share(const_cast<Stream*>(s));
      defer_free({Ref<Resource>::share(record.resource), ptr, record.size, allocation_stream(),
                  std::move(free_stream)});
      let_go(record);  // the deferred free holds its own
      return;
    }
    if (freed_on != allocated_on) {
      const Device* device = s ? &s->device() : on;
      // The record keeps a stream libcumem created alive, so the event can
      // be recorded on it (should that fail anyway, the device is waited
      // for); a framework's own stream may be gone, so then the device is.
      if (device) {
        const Ref<Stream> earlier = allocation_stream();
        order_after_remembered(*device, earlier.get(), freed_on,
                               "ordering a free after the allocating stream's work");
      }
    }
    // The resource's own capture question is answered from `capture`.
    const KnownCapture known(s, capture, has_id);
    if (stream_given) {
      record.resource->deallocate_raw(ptr, record.size, s);
    } else {
      RememberedStreamScope remembered;  // CuPy's free names no stream
      record.resource->deallocate_raw(ptr, record.size, s);
    }
  } catch (...) {
    // Not freed: keep the record so that the memory can still be freed.
    std::lock_guard<SpinLock> lock(shard.lock);
    shard.records.emplace(ptr, record);
    throw;
  }
  let_go(record);
}

}  // namespace cumem::core::framework
