// Unmap notifications (cumem_unmap_subscribe) on the engines fake driver:
// every place that gives device memory back tells the subscribers first,
// with the exact range where it is known (virtual memory freed, shrunk,
// moved; a cache's upstream allocations; cuMemFree) and the pool where it
// is not (trim, destruction); while the memory is still mapped; and the
// subscription rules (order, unsubscribe from inside, waiting for calls on
// other threads, errors).
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <cumem/cumem.hpp>

#include "engines_fixture.hpp"

namespace {

// What one subscription saw, and whether the memory was still mapped then.
struct Seen {
  std::mutex mutex;
  std::vector<cumem_unmap_event_t> events;
  std::vector<int> still_mapped;  // virtual memory: the fake's access at `address`
  FakeVmm* vmm = nullptr;
};

void record(const cumem_unmap_event_t* e, void* user_data) {
  auto* seen = static_cast<Seen*>(user_data);
  int access = -2;
  if (seen->vmm && e->reason == CUMEM_UNMAP_VIRTUAL)
    access = seen->vmm->access_of(reinterpret_cast<void*>(e->address), 0);
  std::lock_guard<std::mutex> lock(seen->mutex);
  seen->events.push_back(*e);
  seen->still_mapped.push_back(access);
}

class Unmap : public EnginesTest {
 protected:
  void SetUp() override {
    EnginesTest::SetUp();
    seen.vmm = &vmm;
    CUMEM_ASSERT_OK(cumem_unmap_subscribe(record, &seen, &subscription));
    EXPECT_NE(subscription, 0u);
  }
  void TearDown() override {
    if (subscription) {
      EXPECT_EQ(cumem_unmap_unsubscribe(subscription), CUMEM_SUCCESS);
    }
    EnginesTest::TearDown();
  }
  std::vector<cumem_unmap_event_t> take() {
    std::lock_guard<std::mutex> lock(seen.mutex);
    std::vector<cumem_unmap_event_t> out;
    out.swap(seen.events);
    seen.still_mapped.clear();
    return out;
  }
  CUstream native(const cumem_stream_t* s) const {
    void* p = nullptr;
    EXPECT_EQ(cumem_stream_native(s, &p), CUMEM_SUCCESS);
    return static_cast<CUstream>(p);
  }

  Seen seen;
  uint64_t subscription = 0;
};

TEST_F(Unmap, AVirtualBufferFreedIsOneEventWhileStillMapped) {
  cumem_resource_t* vr = virtual_resource(2 * kMiB);
  const uint64_t id = id_of(vr);
  cumem_buffer_t* b = allocate(vr, 7 * kMiB);  // 4 chunks: one event for the run
  const uintptr_t p = address_of(b);
  EXPECT_TRUE(take().empty()) << "allocating unmaps nothing";
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));  // an idle stream: at once
  {
    std::lock_guard<std::mutex> lock(seen.mutex);
    ASSERT_EQ(seen.events.size(), 1u);
    const cumem_unmap_event_t& e = seen.events[0];
    EXPECT_EQ(e.struct_size, sizeof(cumem_unmap_event_t));
    EXPECT_EQ(e.reason, CUMEM_UNMAP_VIRTUAL);
    EXPECT_EQ(e.address, p);
    EXPECT_EQ(e.size, 8 * kMiB) << "every mapped byte, rounded to the chunks";
    EXPECT_EQ(e.resource_id, id);
    EXPECT_EQ(e.device_id, 0);
    EXPECT_EQ(e.reserved0, 0u);
    EXPECT_EQ(seen.still_mapped[0], CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        << "the callback runs before the memory is unmapped";
  }
  EXPECT_EQ(vmm.access_of(reinterpret_cast<void*>(p), 0), -1) << "and it is unmapped after";
  cumem_buffer_release(b);
  cumem_resource_release(vr);
}

TEST_F(Unmap, AFreeOnABusyStreamIsToldWhenItsWorkIsDone) {
  cumem_resource_t* vr = virtual_resource(2 * kMiB);
  cumem_buffer_t* b = allocate(vr, 2 * kMiB);
  const uintptr_t p = address_of(b);
  vmm.busy_stream(native(stream));
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  EXPECT_TRUE(take().empty()) << "still mapped for the stream's work: nothing is told yet";
  vmm.finish_stream(native(stream));
  CUMEM_ASSERT_OK(cumem_virtual_resource_release_pending(vr));
  const auto events = take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].address, p);
  EXPECT_EQ(events[0].size, 2 * kMiB);
  cumem_buffer_release(b);
  cumem_resource_release(vr);
}

TEST_F(Unmap, AShrinkTellsTheChunksItGivesBackAndAMoveTheOldAddresses) {
  cumem_resource_t* vr = virtual_resource(2 * kMiB);
  cumem_buffer_t* b = allocate(vr, 8 * kMiB);
  const uintptr_t p = address_of(b);
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 3 * kMiB, stream));
  auto events = take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].address, p + 4 * kMiB) << "chunks wholly past the new end";
  EXPECT_EQ(events[0].size, 4 * kMiB);
  // Grown past its reservation with the addresses after it refused: it
  // moves, and the old addresses go.
  vmm.refuse_hints(true);
  CUMEM_ASSERT_OK(cumem_buffer_resize(b, 64 * kMiB, stream));
  const uintptr_t moved = address_of(b);
  events = take();
  if (moved == p) {
    EXPECT_TRUE(events.empty()) << "grown in place: nothing stopped being valid";
  } else {
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].address, p);
    EXPECT_EQ(events[0].size, 4 * kMiB) << "the chunks mapped at the old addresses";
  }
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  events = take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].address, moved);
  EXPECT_EQ(events[0].size, 64 * kMiB);
  cumem_buffer_release(b);
  cumem_resource_release(vr);
}

TEST_F(Unmap, ACacheToldOfTheSegmentsItGivesBackAndThePoolOfItsTrim) {
  cumem_resource_t* pool = device_pool();
  const uint64_t pool_id = id_of(pool);
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(pool, &cache));
  const uint64_t cache_id = id_of(cache);
  cumem_buffer_t* big = allocate(cache, 3 * kMiB);
  cumem_buffer_t* small = allocate(cache, 1000);
  const uintptr_t big_at = address_of(big), small_at = address_of(small);
  CUMEM_ASSERT_OK(cumem_buffer_close(big, stream));
  CUMEM_ASSERT_OK(cumem_buffer_close(small, stream));
  EXPECT_TRUE(take().empty()) << "cached blocks are still the cache's";
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  auto events = take();
  ASSERT_EQ(events.size(), 2u);
  bool segment = false, block = false;
  for (const cumem_unmap_event_t& e : events) {
    EXPECT_EQ(e.reason, CUMEM_UNMAP_CACHE_RELEASE);
    EXPECT_EQ(e.resource_id, cache_id);
    EXPECT_EQ(e.device_id, 0);
    if (e.address == big_at && e.size == (size_t{20} << 20)) segment = true;
    if (e.address == small_at && e.size == 1024) block = true;
  }
  EXPECT_TRUE(segment) << "the 20 MiB segment of the large block";
  EXPECT_TRUE(block) << "the small block's own allocation";
  // A trim reaches the pool, which says it trims (the range unknown).
  cumem_buffer_t* again = allocate(cache, 3 * kMiB);
  CUMEM_ASSERT_OK(cumem_buffer_close(again, stream));
  const uint64_t trims = fake.counts().pool_trims;
  CUMEM_ASSERT_OK(cumem_caching_resource_trim(cache, 0));
  EXPECT_EQ(fake.counts().pool_trims, trims + 1);
  events = take();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].reason, CUMEM_UNMAP_CACHE_RELEASE);
  EXPECT_EQ(events[1].reason, CUMEM_UNMAP_POOL_TRIM);
  EXPECT_EQ(events[1].resource_id, pool_id);
  EXPECT_EQ(events[1].address, 0u);
  EXPECT_EQ(events[1].size, 0u);
  cumem_buffer_release(again);
  cumem_buffer_release(big);
  cumem_buffer_release(small);
  // Destroyed with blocks cached: they go back, told.
  cumem_buffer_t* last = allocate(cache, 3 * kMiB);
  CUMEM_ASSERT_OK(cumem_buffer_close(last, stream));
  cumem_buffer_release(last);
  take();
  cumem_resource_release(cache);
  events = take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, CUMEM_UNMAP_CACHE_RELEASE);
  cumem_resource_release(pool);
  EXPECT_TRUE(take().empty()) << "the default pool is not destroyed with its resource";
}

TEST_F(Unmap, PoolsAreToldAtTrimAndAtTheirDestruction) {
  cumem_resource_t* mine = device_pool(true);
  const uint64_t id = id_of(mine);
  CUMEM_ASSERT_OK(cumem_resource_pool_trim(mine, 0));
  auto events = take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, CUMEM_UNMAP_POOL_TRIM);
  EXPECT_EQ(events[0].resource_id, id);
  const uint64_t destroyed = fake.counts().pools_destroyed;
  cumem_resource_release(mine);
  EXPECT_EQ(fake.counts().pools_destroyed, destroyed + 1);
  events = take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, CUMEM_UNMAP_POOL_DESTROY);
  EXPECT_EQ(events[0].resource_id, id);
  EXPECT_EQ(events[0].device_id, 0);
  // A pool's own frees are not unmaps (the pool keeps the memory).
  cumem_resource_t* pool = device_pool();
  cumem_buffer_t* b = allocate(pool, kMiB);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  cumem_buffer_release(b);
  EXPECT_TRUE(take().empty());
  cumem_resource_release(pool);
}

TEST_F(Unmap, ALegacyDeviceFreeIsTheExactAllocation) {
  cumem_resource_t* legacy = nullptr;
  CUMEM_ASSERT_OK(cumem_legacy_device_resource_create(device, &legacy));
  cumem_buffer_t* b = allocate(legacy, 5000);
  const uintptr_t p = address_of(b);
  cumem_buffer_release(b);
  const auto events = take();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, CUMEM_UNMAP_FREE);
  EXPECT_EQ(events[0].address, p);
  EXPECT_EQ(events[0].size, 5000u);
  EXPECT_EQ(events[0].resource_id, id_of(legacy));
  cumem_resource_release(legacy);
}

TEST_F(Unmap, AnExpandableCachesPagesAreToldWhenUnmapped) {
  cumem_resource_t* pool = device_pool();
  cumem_caching_resource_options_t co = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  co.expandable = CUMEM_TRUE;
  co.page_size = 2 * kMiB;
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create_with_options(pool, &co, &cache));
  const uint64_t id = id_of(cache);
  cumem_buffer_t* b = allocate(cache, 3 * kMiB);
  const uintptr_t p = address_of(b);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  cumem_buffer_release(b);
  EXPECT_TRUE(take().empty());
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  const auto events = take();
  ASSERT_FALSE(events.empty());
  uint64_t told = 0;
  for (const cumem_unmap_event_t& e : events) {
    EXPECT_EQ(e.reason, CUMEM_UNMAP_VIRTUAL);
    EXPECT_EQ(e.resource_id, id) << "the cache's pages";
    told += e.size;
  }
  EXPECT_EQ(events[0].address, p);
  EXPECT_EQ(told, 4 * kMiB) << "the two pages";
  cumem_resource_release(cache);
  cumem_resource_release(pool);
}

TEST_F(Unmap, HostMemoryOfACacheIsNotTold) {
  cumem_host_resource_options_t ho = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  cumem_resource_t* host = nullptr;
  CUMEM_ASSERT_OK(cumem_host_resource_create(&ho, &host));
  cumem_resource_t* cache = nullptr;
  CUMEM_ASSERT_OK(cumem_caching_resource_create(host, &cache));
  cumem_buffer_t* b = allocate(cache, 3 * kMiB);
  cumem_buffer_release(b);
  CUMEM_ASSERT_OK(cumem_caching_resource_release_cached(cache));
  EXPECT_TRUE(take().empty()) << "pageable host memory is no device range";
  cumem_resource_release(cache);
  cumem_resource_release(host);
}

// ---- Subscriptions ----

struct Order {
  std::vector<int> calls;
};
void first(const cumem_unmap_event_t*, void* u) { static_cast<Order*>(u)->calls.push_back(1); }
void second(const cumem_unmap_event_t*, void* u) { static_cast<Order*>(u)->calls.push_back(2); }

TEST_F(Unmap, SubscribersAreCalledInOrderOncePerSubscriptionUntilTheyUnsubscribe) {
  Order order;
  uint64_t a = 0, b = 0, c = 0;
  CUMEM_ASSERT_OK(cumem_unmap_subscribe(first, &order, &a));
  CUMEM_ASSERT_OK(cumem_unmap_subscribe(second, &order, &b));
  CUMEM_ASSERT_OK(cumem_unmap_subscribe(first, &order, &c));  // the same pair again
  EXPECT_TRUE(a != b && b != c && a != c);
  cumem_resource_t* mine = device_pool(true);
  CUMEM_ASSERT_OK(cumem_resource_pool_trim(mine, 0));
  EXPECT_EQ(order.calls, (std::vector<int>{1, 2, 1}));
  CUMEM_ASSERT_OK(cumem_unmap_unsubscribe(b));
  order.calls.clear();
  CUMEM_ASSERT_OK(cumem_resource_pool_trim(mine, 0));
  EXPECT_EQ(order.calls, (std::vector<int>{1, 1}));
  CUMEM_ASSERT_OK(cumem_unmap_unsubscribe(a));
  CUMEM_ASSERT_OK(cumem_unmap_unsubscribe(c));
  order.calls.clear();
  CUMEM_ASSERT_OK(cumem_resource_pool_trim(mine, 0));
  EXPECT_TRUE(order.calls.empty());
  CUMEM_EXPECT_ERROR(cumem_unmap_unsubscribe(b), CUMEM_ERROR_NOT_FOUND, "no unmap subscription");
  CUMEM_EXPECT_ERROR(cumem_unmap_unsubscribe(0), CUMEM_ERROR_NOT_FOUND, "no unmap subscription 0");
  cumem_resource_release(mine);
}

TEST_F(Unmap, BadArguments) {
  uint64_t id = 5;
  CUMEM_EXPECT_ERROR(cumem_unmap_subscribe(nullptr, nullptr, &id), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'callback'");
  CUMEM_EXPECT_ERROR(cumem_unmap_subscribe(first, nullptr, nullptr),
                     CUMEM_ERROR_INVALID_ARGUMENT, "'out_subscription'");
  EXPECT_EQ(id, 5u);
}

struct Inside {
  uint64_t self = 0;
  int calls = 0;
  cumem_status_t unsubscribed = CUMEM_ERROR_INTERNAL;
  cumem_status_t subscribed = CUMEM_SUCCESS;
};
void leaves(const cumem_unmap_event_t*, void* u) {
  auto* in = static_cast<Inside*>(u);
  ++in->calls;
  uint64_t other = 0;
  in->subscribed = cumem_unmap_subscribe(first, nullptr, &other);
  in->unsubscribed = cumem_unmap_unsubscribe(in->self);
}

TEST_F(Unmap, ACallbackMayUnsubscribeItselfButNotSubscribe) {
  Inside in;
  CUMEM_ASSERT_OK(cumem_unmap_subscribe(leaves, &in, &in.self));
  cumem_resource_t* mine = device_pool(true);
  CUMEM_ASSERT_OK(cumem_resource_pool_trim(mine, 0));
  EXPECT_EQ(in.calls, 1);
  EXPECT_EQ(in.unsubscribed, CUMEM_SUCCESS) << "no deadlock, and it is gone";
  EXPECT_EQ(in.subscribed, CUMEM_ERROR_INVALID_STATE);
  CUMEM_ASSERT_OK(cumem_resource_pool_trim(mine, 0));
  EXPECT_EQ(in.calls, 1) << "never called again";
  cumem_resource_release(mine);
}

struct Slow {
  std::atomic<bool> entered{false}, left{false};
};
void slow(const cumem_unmap_event_t*, void* u) {
  auto* s = static_cast<Slow*>(u);
  s->entered = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  s->left = true;
}

TEST_F(Unmap, UnsubscribeWaitsForACallRunningOnAnotherThread) {
  Slow s;
  uint64_t id = 0;
  CUMEM_ASSERT_OK(cumem_unmap_subscribe(slow, &s, &id));
  cumem_resource_t* mine = device_pool(true);
  std::thread t([&] { EXPECT_EQ(cumem_resource_pool_trim(mine, 0), CUMEM_SUCCESS); });
  while (!s.entered) std::this_thread::yield();
  CUMEM_ASSERT_OK(cumem_unmap_unsubscribe(id));
  EXPECT_TRUE(s.left) << "unsubscribe returned while the callback still ran";
  t.join();
  cumem_resource_release(mine);
}

void throws(const cumem_unmap_event_t*, void*) { throw std::runtime_error("a bad callback"); }

TEST_F(Unmap, ACallbackThatThrowsDoesNotStopTheFreeOrTheOthers) {
  uint64_t id = 0;
  CUMEM_ASSERT_OK(cumem_unmap_subscribe(throws, nullptr, &id));
  cumem_resource_t* vr = virtual_resource(2 * kMiB);
  cumem_buffer_t* b = allocate(vr, 2 * kMiB);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, stream));
  EXPECT_EQ(take().size(), 1u) << "the subscription before it was told";
  EXPECT_EQ(vmm.counts().live_mappings, 0u) << "and the memory went";
  CUMEM_ASSERT_OK(cumem_unmap_unsubscribe(id));
  cumem_buffer_release(b);
  cumem_resource_release(vr);
}

TEST_F(Unmap, TheFacadeSubscriptionEndsWithItsOwner) {
  std::vector<cumem_unmap_event_t> got;
  cumem_resource_t* mine = device_pool(true);
  {
    cumem::UnmapSubscription sub(
        [&](const cumem_unmap_event_t& e) { got.push_back(e); });
    EXPECT_NE(sub.id(), 0u);
    CUMEM_ASSERT_OK(cumem_resource_pool_trim(mine, 0));
    EXPECT_EQ(got.size(), 1u);
    cumem::UnmapSubscription moved = std::move(sub);
    CUMEM_ASSERT_OK(cumem_resource_pool_trim(mine, 0));
    EXPECT_EQ(got.size(), 2u) << "moved, still subscribed once";
  }
  CUMEM_ASSERT_OK(cumem_resource_pool_trim(mine, 0));
  EXPECT_EQ(got.size(), 2u) << "destroyed: unsubscribed";
  cumem_resource_release(mine);
}

}  // namespace
