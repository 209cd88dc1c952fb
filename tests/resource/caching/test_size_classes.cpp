// The caching adaptor's sizes alone (src/resources/caching/size_classes.hpp):
// rounding, the small classes, and the segment a large miss asks for.
#include <gtest/gtest.h>

#include <set>

#include "error.hpp"
#include "resources/caching/size_classes.hpp"

namespace {

using namespace cumem::core::caching;
constexpr uint64_t KiB = uint64_t{1} << 10;
constexpr uint64_t MiB = uint64_t{1} << 20;

TEST(CachingSizes, RoundingIsEightStepsPerPowerOfTwoThenTwoMebibytes) {
  const struct {
    uint64_t size, rounded;
  } cases[] = {{0, 512},           {1, 512},           {512, 512},          {513, 576},
               {1000, 1024},       {1025, 1152},       {4097, 4608},        {128 * KiB, 128 * KiB},
               {128 * KiB + 1, 144 * KiB},             {1 * MiB + 1, 1152 * KiB},
               {16 * MiB, 16 * MiB}, {16 * MiB + 1, 18 * MiB}, {33 * MiB + 1, 34 * MiB},
               {1024 * MiB + 1, 1026 * MiB}};
  for (const auto& c : cases) EXPECT_EQ(round_size(c.size), c.rounded) << "size " << c.size;
}

TEST(CachingSizes, RoundingAddsAtMostAnEighthAndIsIdempotent) {
  for (uint64_t size = 513; size < 64 * MiB; size = size * 9 / 8 + 7) {
    const uint64_t r = round_size(size);
    EXPECT_GE(r, size);
    EXPECT_LE(r - size, std::max<uint64_t>(size / 8, 1)) << "size " << size;
    EXPECT_EQ(round_size(r), r) << "a rounded size rounds to itself";
  }
}

TEST(CachingSizes, ASizeThatCannotBeRoundedIsOutOfMemory) {
  try {
    round_size(UINT64_MAX - 5);
    FAIL() << "no error";
  } catch (const cumem::core::Error& e) {
    EXPECT_EQ(e.status(), cumem::core::Status::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("cannot be rounded up"), std::string::npos) << e.what();
  }
}

TEST(CachingSizes, EverySmallRoundedSizeHasItsOwnClassInOrder) {
  std::set<size_t> seen;
  size_t last = 0;
  for (uint64_t size = 1; size <= kSmallLimit; ++size) {
    const uint64_t r = round_size(size);
    ASSERT_TRUE(is_small(r));
    const size_t c = small_class(r);
    ASSERT_LT(c, kSmallClasses) << "size " << size;
    ASSERT_GE(c, last) << "classes grow with the size";
    last = c;
    seen.insert(c);
  }
  EXPECT_EQ(seen.size(), kSmallClasses) << "every class is used, none twice";
  EXPECT_EQ(small_class(kSmallLimit), kSmallClasses - 1);
  EXPECT_FALSE(is_small(round_size(kSmallLimit + 1)));
}

TEST(CachingSizes, ALargeMissUnderTenMebibytesAsksForATwentyMebibyteSegment) {
  EXPECT_EQ(segment_size(round_size(kSmallLimit + 1)), 20 * MiB);
  EXPECT_EQ(segment_size(round_size(5 * MiB + 1)), 20 * MiB);
  EXPECT_EQ(segment_size(round_size(9 * MiB + 1)), 10 * MiB) << "10 MiB itself is not under";
  EXPECT_EQ(segment_size(round_size(13 * MiB + 1)), 14 * MiB);
}

}  // namespace
