// src/pointer_map.hpp: the flat map of the framework entry points' and the
// PyTorch extension's records, checked against std::unordered_map.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "pointer_map.hpp"

namespace {

void* at(uintptr_t address) { return reinterpret_cast<void*>(address); }

TEST(PointerMap, FindsWhatWasInsertedAndNothingElse) {
  cumem::PointerMap<int> map;
  EXPECT_TRUE(map.find(at(0x1000)) == map.end());
  EXPECT_TRUE(map.find(nullptr) == map.end());
  EXPECT_TRUE(map.emplace(at(0x1000), 7).second);
  EXPECT_FALSE(map.emplace(at(0x1000), 8).second);  // present: kept as it was
  ASSERT_TRUE(map.find(at(0x1000)) != map.end());
  EXPECT_EQ(map.find(at(0x1000))->second, 7);
  EXPECT_TRUE(map.find(at(0x1100)) == map.end());
  map.erase(map.find(at(0x1000)));
  EXPECT_TRUE(map.find(at(0x1000)) == map.end());
  EXPECT_EQ(map.size(), 0u);
}

TEST(PointerMap, ErasedValuesAreReleased) {
  cumem::PointerMap<std::shared_ptr<int>> map;
  auto value = std::make_shared<int>(1);
  map.emplace(at(0x2000), value);
  EXPECT_EQ(value.use_count(), 2);
  map.erase(map.find(at(0x2000)));
  EXPECT_EQ(value.use_count(), 1);
}

// Random inserts and erases of 256-byte-aligned addresses packed close
// together (long probe runs that wrap around the array) and spread apart,
// through several growths, each step checked against the standard map.
TEST(PointerMap, AgreesWithUnorderedMapUnderRandomInsertsAndErases) {
  for (uintptr_t stride : {uintptr_t{256}, uintptr_t{512} << 20}) {
    cumem::PointerMap<uint64_t> map;
    std::unordered_map<void*, uint64_t> expected;
    std::vector<void*> live;
    std::mt19937_64 rng(stride);
    for (int step = 0; step < 200000; ++step) {
      const bool insert = live.empty() || rng() % 100 < (step < 100000 ? 60 : 40);
      if (insert) {
        void* p = at(0x7f0000000000 + (rng() % 50000) * stride);
        const uint64_t v = rng();
        const bool inserted = map.emplace(p, v).second;
        ASSERT_EQ(inserted, expected.emplace(p, v).second);
        if (inserted) live.push_back(p);
      } else {
        const size_t k = rng() % live.size();
        void* p = live[k];
        live[k] = live.back();
        live.pop_back();
        auto it = map.find(p);
        ASSERT_TRUE(it != map.end());
        ASSERT_EQ(it->second, expected.at(p));
        map.erase(it);
        expected.erase(p);
        ASSERT_TRUE(map.find(p) == map.end());
      }
      ASSERT_EQ(map.size(), expected.size());
      if (step % 20000 == 0)
        for (const auto& [p, v] : expected) {
          auto it = map.find(p);
          ASSERT_TRUE(it != map.end());
          ASSERT_EQ(it->second, v);
        }
    }
    size_t seen = 0;
    for (const auto& [p, v] : map) {
      ASSERT_EQ(expected.at(p), v);
      ++seen;
    }
    EXPECT_EQ(seen, expected.size());
  }
}

}  // namespace
