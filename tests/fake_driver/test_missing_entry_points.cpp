// libcumem on a driver that lacks entry points: run with $CUMEM_LIBCUDA
// naming the fake driver of this folder (fake_cuda.cpp), a CUDA 13.0 driver
// with one device that serves a minimal working set and lacks, among others,
// cuDevicePrimaryCtxRelease, cuStreamDestroy, cuEventDestroy,
// cuDeviceGetDefaultMemPool and cuMemPoolCreate. What the driver has works;
// what it lacks is CUMEM_ERROR_NOT_SUPPORTED naming the function and the
// driver version; releasing objects whose cleanup call is missing neither
// crashes nor fails.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "test_util.hpp"

namespace {

bool message_has(const std::string& fragment) {
  return std::string(cumem_last_error_message()).find(fragment) != std::string::npos;
}

class FakeDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("CUMEM_LIBCUDA");
    ASSERT_NE(path, nullptr) << "run with CUMEM_LIBCUDA naming the fake driver";
    ASSERT_NE(std::string(path).find("fake"), std::string::npos) << path;
    CUMEM_ASSERT_OK(cumem_device_get(0, &device));
  }
  void TearDown() override {
    cumem_device_release(device);  // cuDevicePrimaryCtxRelease is missing
  }
  cumem_device_t* device = nullptr;
};

TEST(FakeDriverLoad, IsTheFakeWithOneDevice) {
  int32_t version = 0;
  CUMEM_ASSERT_OK(cumem_driver_version(&version));
  EXPECT_EQ(version, 13000);
  int32_t count = 0;
  CUMEM_ASSERT_OK(cumem_device_count(&count));
  EXPECT_EQ(count, 1);
  cumem_device_t* missing = nullptr;
  CUMEM_EXPECT_ERROR(cumem_device_get(1, &missing), CUMEM_ERROR_NO_DEVICE, "no CUDA device 1");
}

TEST_F(FakeDriver, DeviceWorksAndIsOneHandlePerOrdinal) {
  int32_t ordinal = -1;
  CUMEM_ASSERT_OK(cumem_device_ordinal(device, &ordinal));
  EXPECT_EQ(ordinal, 0);
  int32_t pools = 0;
  CUMEM_ASSERT_OK(cumem_device_get_attribute(
      device, 115 /* CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED */, &pools));
  EXPECT_EQ(pools, 1);
  cumem_device_t* again = nullptr;
  CUMEM_ASSERT_OK(cumem_device_get(0, &again));
  EXPECT_EQ(again, device);
  cumem_device_release(again);
}

TEST_F(FakeDriver, StreamCreateWorksAndReleaseWithoutStreamDestroyDoesNotCrash) {
  cumem_stream_t* stream = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  cumem_stream_release(stream);  // cuStreamDestroy is missing: quietly skipped
}

TEST_F(FakeDriver, EventCreateWorksAndReleaseWithoutEventDestroyDoesNotCrash) {
  cumem_event_t* event = nullptr;
  CUMEM_ASSERT_OK(cumem_event_create(device, nullptr, &event));
  cumem_event_release(event);  // cuEventDestroy is missing: quietly skipped
}

TEST_F(FakeDriver, DeviceResourceNamesTheMissingFunctionAndDriverVersion) {
  cumem_resource_t* resource = nullptr;
  CUMEM_EXPECT_ERROR(cumem_device_resource_create(device, nullptr, &resource),
                     CUMEM_ERROR_NOT_SUPPORTED, "cuDeviceGetDefaultMemPool");
  EXPECT_TRUE(message_has("the installed CUDA 13.0 driver does not provide")) << cumem_last_error_message();
  EXPECT_EQ(resource, nullptr) << "out-parameter must stay untouched on failure";

  cumem_pool_options_t options = CUMEM_POOL_OPTIONS_INIT;
  options.new_pool = CUMEM_TRUE;  // a new pool: cuMemPoolCreate
  CUMEM_EXPECT_ERROR(cumem_device_resource_create(device, &options, &resource),
                     CUMEM_ERROR_NOT_SUPPORTED, "cuMemPoolCreate");
  EXPECT_TRUE(message_has("CUDA 13.0")) << cumem_last_error_message();
  EXPECT_EQ(resource, nullptr);
}

TEST_F(FakeDriver, DevicePropertiesNameTheMissingFunctionAndWriteNothing) {
  cumem_device_properties_t props;
  std::memset(&props, 0xEE, sizeof props);
  props.struct_size = sizeof props;
  CUMEM_EXPECT_ERROR(cumem_device_get_properties(device, &props), CUMEM_ERROR_NOT_SUPPORTED,
                     "cuDeviceGetUuid");
  EXPECT_EQ(props.ordinal, static_cast<int32_t>(0xEEEEEEEE));
}

// Pool options whose fields contradict each other are refused before any
// driver work, naming the fields (zero means default: the flags say what a
// non-zero value means).
TEST_F(FakeDriver, PoolOptionContradictionsAreRefusedByName) {
  cumem_resource_t* r = nullptr;
  cumem_pool_options_t o = CUMEM_POOL_OPTIONS_INIT;
  o.release_all_unused = CUMEM_TRUE;
  o.release_threshold = 4096;
  CUMEM_EXPECT_ERROR(cumem_device_resource_create(device, &o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "options->release_all_unused is set and options->release_threshold is 4096");
  o = CUMEM_POOL_OPTIONS_INIT;
  o.use_host_numa_id = CUMEM_TRUE;
  CUMEM_EXPECT_ERROR(cumem_device_resource_create(device, &o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "options->use_host_numa_id is set, but device memory has no host NUMA node");
  o = CUMEM_POOL_OPTIONS_INIT;
  o.host_numa_id = 1;
  CUMEM_EXPECT_ERROR(cumem_device_resource_create(device, &o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "options->host_numa_id is 1 but options->use_host_numa_id is false");
  CUMEM_EXPECT_ERROR(cumem_pinned_resource_create(device, &o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "options->host_numa_id is 1 but options->use_host_numa_id is false");
  o.use_host_numa_id = CUMEM_TRUE;
  o.host_numa_id = -1;
  CUMEM_EXPECT_ERROR(cumem_pinned_resource_create(device, &o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "options->host_numa_id -1 is negative");
  // A zero-filled struct whose struct_size was never set.
  std::memset(&o, 0, sizeof o);
  CUMEM_EXPECT_ERROR(cumem_device_resource_create(device, &o, &r), CUMEM_ERROR_INVALID_ARGUMENT,
                     "the struct looks zero-filled");
  EXPECT_TRUE(message_has("cumem_pool_options_init()")) << cumem_last_error_message();
  EXPECT_EQ(r, nullptr);
}

// The struct_size rules on options of calls that need a device (here the
// fake one): checked before any driver work.
TEST_F(FakeDriver, StreamAndEventOptionsFollowTheStructSizeRules) {
  cumem_stream_t* stream = nullptr;
  cumem_stream_options_t s = CUMEM_STREAM_OPTIONS_INIT;
  s.struct_size = 10;  // ends inside priority (8..11)
  CUMEM_EXPECT_ERROR(cumem_stream_create(device, &s, &stream), CUMEM_ERROR_INVALID_ARGUMENT,
                     "'priority'");
  EXPECT_EQ(stream, nullptr);

  struct {
    cumem_event_options_t known;
    uint32_t newer_option;
  } e = {CUMEM_EVENT_OPTIONS_INIT, 1};
  e.known.struct_size = sizeof e;
  cumem_event_t* event = nullptr;
  CUMEM_EXPECT_ERROR(cumem_event_create(device, &e.known, &event), CUMEM_ERROR_NOT_SUPPORTED,
                     "larger than this library's " + std::to_string(sizeof(cumem_event_options_t)));
  EXPECT_EQ(event, nullptr);
  e.newer_option = 0;
  CUMEM_ASSERT_OK(cumem_event_create(device, &e.known, &event));
  cumem_event_release(event);
}

// A driver without the capture calls (this fake has none of them): no
// stream can capture there, so the capture queries answer "none" without
// failing and every call that waits or frees works as before; what graphs
// need is CUMEM_ERROR_NOT_SUPPORTED naming it.
TEST_F(FakeDriver, WithoutCaptureCallsNothingCapturesAndGraphsNameWhatIsMissing) {
  cumem_stream_t* stream = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  cumem_capture_info_t info = CUMEM_CAPTURE_INFO_INIT;
  info.id = 5;
  CUMEM_ASSERT_OK(cumem_stream_get_capture_info(stream, &info));
  EXPECT_EQ(info.status, CUMEM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(info.id, 0u);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  CUMEM_EXPECT_ERROR(cumem_stream_begin_capture(stream, CUMEM_CAPTURE_MODE_GLOBAL),
                     CUMEM_ERROR_NOT_SUPPORTED, "cuStreamBeginCapture");
  int dummy_graph = 0;
  cumem_graph_t* graph = nullptr;
  CUMEM_EXPECT_ERROR(cumem_graph_instantiate(device, &dummy_graph, nullptr, &graph),
                     CUMEM_ERROR_NOT_SUPPORTED, "cuGraphInstantiateWithFlags");
  EXPECT_EQ(graph, nullptr);
  // The graph memory resource is made (the device has pools) but cannot
  // allocate (nothing captures) nor report its memory.
  cumem_resource_t* gm = nullptr;
  CUMEM_ASSERT_OK(cumem_graph_memory_resource_create(device, &gm));
  void* p = nullptr;
  CUMEM_EXPECT_ERROR(cumem_resource_allocate_raw(gm, 64, stream, &p), CUMEM_ERROR_INVALID_STATE,
                     "is not capturing");
  cumem_graph_memory_attributes_t a = CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT;
  CUMEM_EXPECT_ERROR(cumem_graph_memory_resource_get_attributes(gm, &a), CUMEM_ERROR_NOT_SUPPORTED,
                     "cuDeviceGetGraphMemAttribute");
  CUMEM_EXPECT_ERROR(cumem_graph_memory_resource_trim(gm), CUMEM_ERROR_NOT_SUPPORTED,
                     "cuDeviceGraphMemTrim");
  cumem_resource_release(gm);
  cumem_stream_release(stream);
}

// Objects still alive at exit: the process must still end cleanly (the
// driver's cleanup calls are missing, and no destructor may call them).
TEST_F(FakeDriver, ObjectsLeftAliveAtExit) {
  cumem_stream_t* stream = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  cumem_event_t* event = nullptr;
  CUMEM_ASSERT_OK(cumem_event_create(device, nullptr, &event));
  // Released from an atexit handler, after main returned.
  static cumem_stream_t* leftover_stream = stream;
  static cumem_event_t* leftover_event = event;
  std::atexit([] {
    cumem_event_release(leftover_event);
    cumem_stream_release(leftover_stream);
  });
}

}  // namespace
