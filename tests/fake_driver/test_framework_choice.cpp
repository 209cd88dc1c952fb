// The framework entry points' hold on the resources they allocate from
// (src/framework.cpp: readers, holders, sweeps), on the fake memory driver:
// a resource that is no longer chosen lives exactly until the last of its
// allocations is freed, whichever threads allocated and freed, and
// allocations made while other threads change the choice go back to the
// resource that made them.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace {

// A callback resource of malloc'd memory (said to be device-accessible)
// that knows what it handed out and whether it was destroyed.
struct Tracked {
  std::mutex mutex;
  std::set<void*> live;
  std::atomic<int> allocations{0};
  std::atomic<int> frees{0};
  std::atomic<int> foreign_frees{0};  // frees of memory it did not hand out
  std::atomic<bool> destroyed{false};
  cumem_resource_t* resource = nullptr;

  Tracked() {
    cumem_resource_callbacks_t c = CUMEM_RESOURCE_CALLBACKS_INIT;
    c.device_accessible = CUMEM_TRUE;
    c.user_data = this;
    c.allocate = [](size_t size, void*, void* user, void** out) -> int32_t {
      auto* t = static_cast<Tracked*>(user);
      *out = std::aligned_alloc(256, (size + 255) / 256 * 256);
      if (!*out) return 1;
      std::lock_guard<std::mutex> lock(t->mutex);
      t->live.insert(*out);
      ++t->allocations;
      return 0;
    };
    c.deallocate = [](void* ptr, size_t, void*, void* user) {
      auto* t = static_cast<Tracked*>(user);
      {
        std::lock_guard<std::mutex> lock(t->mutex);
        if (t->live.erase(ptr) == 0) {
          ++t->foreign_frees;
          return;
        }
        ++t->frees;
      }
      std::free(ptr);
    };
    c.destroy = [](void* user) { static_cast<Tracked*>(user)->destroyed = true; };
    EXPECT_EQ(cumem_callback_resource_create(nullptr, &c, &resource), CUMEM_SUCCESS)
        << cumem_last_error_message();
  }
  // The test's own handle: after this, only the framework keeps it.
  void let_go() {
    cumem_resource_release(resource);
  }
};

void* torch_alloc(size_t size) {
  void* p = cumem_torch_alloc(size, 0, nullptr);
  EXPECT_NE(p, nullptr) << cumem_last_error_message();
  return p;
}

class FrameworkChoice : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(cumem_framework_set_resource(0, nullptr), CUMEM_SUCCESS); }
};

TEST_F(FrameworkChoice, AReplacedChoiceGoesWithItsLastAllocationOnAnyThread) {
  Tracked a, b;
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, a.resource));
  a.let_go();
  void* on_main = torch_alloc(1000);
  void* on_other = nullptr;
  std::thread([&] { on_other = torch_alloc(3000); }).join();
  ASSERT_NE(on_other, nullptr);
  EXPECT_EQ(a.allocations, 2);

  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, b.resource));
  b.let_go();
  EXPECT_FALSE(a.destroyed) << "two of its allocations are live";
  void* from_b = torch_alloc(500);
  EXPECT_EQ(b.allocations, 1);
  EXPECT_EQ(a.allocations, 2);

  cumem_torch_free(on_main, 1000, 0, nullptr);
  EXPECT_EQ(a.frees, 1);
  EXPECT_FALSE(a.destroyed) << "one of its allocations is live";
  // The last one, freed on a thread that never allocated from it.
  std::thread([&] { cumem_torch_free(on_other, 3000, 0, nullptr); }).join();
  EXPECT_EQ(a.frees, 2);
  EXPECT_TRUE(a.destroyed) << "its last allocation went";

  // Chosen again after being replaced: the framework's hold comes back.
  cumem_torch_free(from_b, 500, 0, nullptr);
  EXPECT_FALSE(b.destroyed) << "still chosen";
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  EXPECT_TRUE(b.destroyed) << "neither chosen nor holding an allocation";
  EXPECT_EQ(a.foreign_frees + b.foreign_frees, 0);
}

TEST_F(FrameworkChoice, AResourceChosenAgainKeepsItsAllocations) {
  Tracked a, b;
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, a.resource));
  void* first = torch_alloc(256);
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, b.resource));
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, a.resource));  // again, before the free
  a.let_go();
  b.let_go();
  EXPECT_TRUE(b.destroyed) << "b made nothing and is not chosen";
  void* second = torch_alloc(256);
  cumem_torch_free(first, 256, 0, nullptr);
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  EXPECT_FALSE(a.destroyed) << "`second` is live";
  cumem_torch_free(second, 256, 0, nullptr);
  EXPECT_TRUE(a.destroyed);
  EXPECT_EQ(a.allocations, 2);
  EXPECT_EQ(a.frees, 2);
}

// Threads allocate and free (some frees on another thread than the
// allocation's) while the main thread keeps changing the choice: every
// free reaches the resource that made the memory, and each resource goes
// once its last allocation is freed and it is no longer chosen.
TEST_F(FrameworkChoice, ChoicesChangeWhileThreadsAllocate) {
  constexpr int kThreads = 6;
  constexpr int kResources = 4;
  Tracked tracked[kResources];
  std::atomic<bool> stop{false};
  std::mutex handed_mutex;
  std::vector<std::pair<void*, size_t>> handed;  // allocations passed to other threads
  std::atomic<int> failures{0};
  std::atomic<int> pairs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<void*, size_t>> mine;
      while (!stop.load()) {
        const size_t size = 256 * (1 + rng() % 16);
        void* p = cumem_torch_alloc(size, 0, nullptr);
        if (!p) {
          ++failures;
          continue;
        }
        mine.emplace_back(p, size);
        ++pairs;
        if (mine.size() > 8) {
          const size_t i = rng() % mine.size();
          auto victim = mine[i];
          mine[i] = mine.back();
          mine.pop_back();
          if (rng() % 4 == 0) {
            std::lock_guard<std::mutex> lock(handed_mutex);
            handed.push_back(victim);
            continue;
          }
          cumem_torch_free(victim.first, victim.second, 0, nullptr);
        }
        std::pair<void*, size_t> other{nullptr, 0};
        {
          std::lock_guard<std::mutex> lock(handed_mutex);
          if (!handed.empty()) {
            other = handed.back();
            handed.pop_back();
          }
        }
        if (other.first) cumem_torch_free(other.first, other.second, 0, nullptr);
      }
      for (auto& [p, size] : mine) cumem_torch_free(p, size, 0, nullptr);
    });
  // At least 400 changes, and enough allocations between them.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int round = 0; round < 400 || (pairs < 200000 && std::chrono::steady_clock::now() < give_up);
       ++round) {
    const int k = round % (kResources + 1);
    ASSERT_EQ(cumem_framework_set_resource(0, k == kResources ? nullptr : tracked[k].resource),
              CUMEM_SUCCESS)
        << cumem_last_error_message();
    std::this_thread::yield();
  }
  stop = true;
  for (auto& t : threads) t.join();
  for (auto& [p, size] : handed) cumem_torch_free(p, size, 0, nullptr);
  EXPECT_EQ(failures, 0);
  CUMEM_ASSERT_OK(cumem_framework_set_resource(0, nullptr));
  int made = 0;
  for (Tracked& r : tracked) {
    EXPECT_FALSE(r.destroyed) << "the test still holds it";
    r.let_go();
    EXPECT_TRUE(r.destroyed) << "every allocation was freed and none is chosen";
    EXPECT_EQ(r.allocations, r.frees);
    EXPECT_EQ(r.foreign_frees, 0);
    EXPECT_TRUE(r.live.empty());
    made += r.allocations;
  }
  EXPECT_GT(made, 10000) << "the threads allocated too little from the tracked resources";
}

}  // namespace
