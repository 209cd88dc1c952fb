// Run with CUMEM_LIBCUDA pointing at a missing file: every call that needs
// the driver fails with CUMEM_ERROR_NO_DRIVER and a message naming the path;
// what needs no driver keeps working.
#include <cstdlib>
#include <string>

#include "test_util.hpp"

namespace {
const char* missing_path() {
  const char* p = std::getenv("CUMEM_LIBCUDA");
  return p ? p : "";
}
}  // namespace

TEST(NoDriver, EnvironmentPointsAtAMissingLibrary) {
  ASSERT_NE(std::string(missing_path()), "") << "run this test with CUMEM_LIBCUDA set";
}

TEST(NoDriver, DeviceCountFailsNamingThePath) {
  int32_t count = 77;
  CUMEM_EXPECT_ERROR(cumem_device_count(&count), CUMEM_ERROR_NO_DRIVER, missing_path());
  EXPECT_EQ(count, 77) << "out-parameter must stay untouched on failure";
  EXPECT_NE(std::string(cumem_last_error_message()).find("CUMEM_LIBCUDA"), std::string::npos);
}

TEST(NoDriver, EveryDriverCallFailsTheSameWay) {
  int32_t version = 5;
  CUMEM_EXPECT_ERROR(cumem_driver_version(&version), CUMEM_ERROR_NO_DRIVER, missing_path());
  EXPECT_EQ(version, 5);
  cumem_device_t* dev = nullptr;
  CUMEM_EXPECT_ERROR(cumem_device_get(0, &dev), CUMEM_ERROR_NO_DRIVER, missing_path());
  EXPECT_EQ(dev, nullptr);
}

TEST(NoDriver, DriverFreeFunctionsStillWork) {
  EXPECT_EQ(cumem_version(), static_cast<uint32_t>(CUMEM_VERSION_NUMBER));
  EXPECT_STREQ(cumem_status_string(CUMEM_ERROR_NO_DRIVER), "CUMEM_ERROR_NO_DRIVER");
}
