// Run with CUMEM_LIBNVRTC pointing at a missing file: NVRTC cannot be
// loaded, and every call that needs it fails with CUMEM_ERROR_NO_COMPILER
// and a message naming the path. The NoNvrtc tests need no GPU; the
// NoNvrtcGpu ones compile for device 0 (and skip without one).
#include <cstdlib>
#include <string>

#include "gpu_fixture.hpp"

namespace {
const char* missing_path() {
  const char* p = std::getenv("CUMEM_LIBNVRTC");
  return p ? p : "";
}
}  // namespace

TEST(NoNvrtc, EnvironmentPointsAtAMissingLibrary) {
  ASSERT_NE(std::string(missing_path()), "") << "run this test with CUMEM_LIBNVRTC set";
}

TEST(NoNvrtc, VersionFailsNamingThePath) {
  int32_t major = 77, minor = 78;
  CUMEM_EXPECT_ERROR(cumem_nvrtc_version(&major, &minor), CUMEM_ERROR_NO_COMPILER,
                     missing_path());
  EXPECT_EQ(major, 77) << "out-parameters must stay untouched on failure";
  EXPECT_EQ(minor, 78);
  EXPECT_NE(std::string(cumem_last_error_message()).find("CUMEM_LIBNVRTC"), std::string::npos)
      << cumem_last_error_message();
}

TEST(NoNvrtc, EveryLaterCallFailsTheSameWay) {
  int32_t major = 0, minor = 0;
  for (int i = 0; i < 2; ++i)
    CUMEM_EXPECT_ERROR(cumem_nvrtc_version(&major, &minor), CUMEM_ERROR_NO_COMPILER,
                       missing_path());
}

TEST(NoNvrtc, NullOutPointersAreInvalidArguments) {
  int32_t value = 0;
  CUMEM_EXPECT_ERROR(cumem_nvrtc_version(nullptr, &value), CUMEM_ERROR_INVALID_ARGUMENT,
                     "out_major");
  CUMEM_EXPECT_ERROR(cumem_nvrtc_version(&value, nullptr), CUMEM_ERROR_INVALID_ARGUMENT,
                     "out_minor");
}

class NoNvrtcGpu : public GpuTest {};

TEST_F(NoNvrtcGpu, CompileFailsWithNoCompiler) {
  cumem_program_t* program = reinterpret_cast<cumem_program_t*>(0x1);
  CUMEM_EXPECT_ERROR(
      cumem_program_compile(device, "extern \"C\" __global__ void k() {}", nullptr, &program),
      CUMEM_ERROR_NO_COMPILER, missing_path());
  EXPECT_EQ(program, reinterpret_cast<cumem_program_t*>(0x1));
}
