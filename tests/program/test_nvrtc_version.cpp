// NVRTC loads from the default search list (libnvrtc.so.13, then .so.12)
// when $CUMEM_LIBNVRTC is empty; meson puts the toolkit's lib directory on
// LD_LIBRARY_PATH for this test.
#include "test_util.hpp"

TEST(Nvrtc, LoadsAndReportsItsVersion) {
  int32_t major = -1, minor = -1;
  CUMEM_ASSERT_OK(cumem_nvrtc_version(&major, &minor));
  EXPECT_GE(major, 12);
  EXPECT_GE(minor, 0);
  int32_t again_major = -1, again_minor = -1;
  CUMEM_ASSERT_OK(cumem_nvrtc_version(&again_major, &again_minor));
  EXPECT_EQ(again_major, major);
  EXPECT_EQ(again_minor, minor);
}
