// The capture pools alone (src/resources/caching/capture_pools.hpp): a pool
// per capture id, the record of which pool handed out each block in use,
// and the totals the adaptor reports.
#include <gtest/gtest.h>

#include "error.hpp"
#include "resources/caching/capture_pools.hpp"

namespace {

using namespace cumem::core::caching;
char* at(int n) { return reinterpret_cast<char*>(static_cast<uintptr_t>(n + 1) << 24); }

TEST(CachingCapturePools, APoolPerCaptureAndItsBlocksInUse) {
  CapturePools pools;
  EXPECT_EQ(pools.find(5), nullptr);
  PrivatePool& a = pools.pool(5);
  EXPECT_EQ(&pools.pool(5), &a) << "one pool per capture id";
  PrivatePool& b = pools.pool(9);
  EXPECT_EQ(pools.pool_count(), 2u);
  pools.handed_out(a, at(0), 512);
  pools.handed_out(a, at(1), 4096);
  pools.handed_out(b, at(2), 1024);
  EXPECT_EQ(pools.live(), 3u);
  EXPECT_EQ(pools.owner(at(1)), &a);
  EXPECT_EQ(pools.owner(at(2)), &b);
  EXPECT_EQ(pools.owner(at(3)), nullptr) << "ordinary memory has no pool";
  EXPECT_EQ(a.in_use, 4608u);
  EXPECT_EQ(pools.returned(a, at(1)), 4096u);
  EXPECT_EQ(a.in_use, 512u);
  EXPECT_EQ(pools.owner(at(1)), nullptr) << "a returned block is no longer in use";
  EXPECT_EQ(pools.live(), 2u);
}

TEST(CachingCapturePools, MisuseIsAnInternalErrorNotACorruption) {
  CapturePools pools;
  PrivatePool& a = pools.pool(1);
  PrivatePool& b = pools.pool(2);
  pools.handed_out(a, at(0), 512);
  EXPECT_THROW(pools.handed_out(b, at(0), 512), cumem::core::Error) << "a block in use twice";
  EXPECT_THROW(pools.returned(b, at(0)), cumem::core::Error) << "returned to another pool";
  EXPECT_THROW(pools.returned(a, at(5)), cumem::core::Error) << "never handed out";
  EXPECT_EQ(pools.owner(at(0)), &a);
}

TEST(CachingCapturePools, TotalsAddUpEveryPool) {
  CapturePools pools;
  PrivatePool& a = pools.pool(1);
  PrivatePool& b = pools.pool(2);
  a.reserved = 20 << 20;
  b.reserved = 1 << 20;
  a.large.add(at(0), 20 << 20, 4 << 20, 3);  // 16 MiB of the segment stay free
  a.small.push(Block{at(4), 512, 3});
  a.small_free = 512;
  EXPECT_EQ(pools.reserved(), (21u << 20));
  EXPECT_EQ(pools.free_bytes(), (16u << 20) + 512);
  pools.erase(2);
  EXPECT_EQ(pools.pool_count(), 1u);
  EXPECT_EQ(pools.find(2), nullptr);
}

}  // namespace
