// Streams and events on a real GPU.
#include <string>
#include <vector>

#include "gpu_fixture.hpp"

namespace {

class StreamEventTest : public GpuTest {
 protected:
  cumem_stream_t* make_stream(const cumem_stream_options_t* o = nullptr) {
    cumem_stream_t* s = nullptr;
    EXPECT_EQ(cumem_stream_create(device, o, &s), CUMEM_SUCCESS) << cumem_last_error_message();
    return s;
  }
};

TEST_F(StreamEventTest, CreateQuerySynchronize) {
  cumem_stream_t* s = make_stream();
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(s, &native));
  EXPECT_NE(native, nullptr);
  cumem_device_t* d = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_device(s, &d));
  EXPECT_EQ(d, device);
  cumem_device_release(d);
  CUMEM_ASSERT_OK(cumem_stream_synchronize(s));
  cumem_bool_t done = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_stream_query(s, &done));
  EXPECT_EQ(done, CUMEM_TRUE);
  cumem_stream_release(s);
}

TEST_F(StreamEventTest, PriorityIsClampedOrRejected) {
  int32_t least = 0, greatest = 0;
  CUMEM_ASSERT_OK(cumem_device_stream_priority_range(device, &least, &greatest));
  cumem_stream_options_t o = CUMEM_STREAM_OPTIONS_INIT;
  o.priority = greatest - 100;
  cumem_stream_t* s = make_stream(&o);
  int32_t p = 0;
  CUMEM_ASSERT_OK(cumem_stream_priority(s, &p));
  EXPECT_EQ(p, greatest);
  cumem_stream_release(s);

  o.priority = greatest;
  s = make_stream(&o);
  CUMEM_ASSERT_OK(cumem_stream_priority(s, &p));
  EXPECT_EQ(p, greatest);
  cumem_stream_release(s);

  o.priority_mode = CUMEM_PRIORITY_REJECT;
  o.priority = least + 1;
  cumem_stream_t* none = nullptr;
  CUMEM_EXPECT_ERROR(cumem_stream_create(device, &o, &none), CUMEM_ERROR_INVALID_ARGUMENT,
                     std::to_string(greatest) + " (highest) to " + std::to_string(least));
  EXPECT_EQ(none, nullptr);
  o.priority_mode = static_cast<cumem_priority_mode_t>(7);
  CUMEM_EXPECT_ERROR(cumem_stream_create(device, &o, &none), CUMEM_ERROR_INVALID_ARGUMENT,
                     "priority_mode");
}

TEST_F(StreamEventTest, WrapDoesNotOwn) {
  cumem_stream_t* owner = make_stream();
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(owner, &native));
  cumem_stream_t* wrapped = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_wrap(device, native, &wrapped));
  void* again = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(wrapped, &again));
  EXPECT_EQ(again, native);
  cumem_stream_release(wrapped);
  // The foreign stream is still alive and usable.
  CUMEM_ASSERT_OK(cumem_stream_synchronize(owner));
  cumem_stream_release(owner);
  CUMEM_EXPECT_ERROR(cumem_stream_wrap(device, nullptr, &wrapped), CUMEM_ERROR_INVALID_ARGUMENT,
                     "native_stream");
}

TEST_F(StreamEventTest, DefaultStreams) {
  cumem_stream_t* legacy = nullptr;
  cumem_stream_t* per_thread = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_legacy_default(device, &legacy));
  CUMEM_ASSERT_OK(cumem_stream_per_thread_default(device, &per_thread));
  void* a = nullptr;
  void* b = nullptr;
  CUMEM_ASSERT_OK(cumem_stream_native(legacy, &a));
  CUMEM_ASSERT_OK(cumem_stream_native(per_thread, &b));
  EXPECT_EQ(a, reinterpret_cast<void*>(0x1));  // CU_STREAM_LEGACY
  EXPECT_EQ(b, reinterpret_cast<void*>(0x2));  // CU_STREAM_PER_THREAD
  CUMEM_ASSERT_OK(cumem_stream_synchronize(legacy));
  CUMEM_ASSERT_OK(cumem_stream_synchronize(per_thread));
  cumem_stream_release(legacy);
  cumem_stream_release(per_thread);
}

TEST_F(StreamEventTest, EventsTimeWork) {
  cumem_stream_t* s = make_stream();
  cumem_event_options_t o = CUMEM_EVENT_OPTIONS_INIT;
  o.enable_timing = CUMEM_TRUE;
  cumem_event_t* start = nullptr;
  cumem_event_t* end = nullptr;
  CUMEM_ASSERT_OK(cumem_event_create(device, &o, &start));
  CUMEM_ASSERT_OK(cumem_event_create(device, &o, &end));
  cumem_resource_t* r = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &r));
  cumem_buffer_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(r, 256u << 20, s, &b));
  CUMEM_ASSERT_OK(cumem_event_record(start, s));
  for (int i = 0; i < 4; ++i) CUMEM_ASSERT_OK(cumem_buffer_fill(b, static_cast<uint32_t>(i), 4, s));
  CUMEM_ASSERT_OK(cumem_event_record(end, s));
  CUMEM_ASSERT_OK(cumem_event_synchronize(end));
  cumem_bool_t done = CUMEM_FALSE;
  CUMEM_ASSERT_OK(cumem_event_query(end, &done));
  EXPECT_EQ(done, CUMEM_TRUE);
  float ms = -1.0f;
  CUMEM_ASSERT_OK(cumem_event_elapsed_ms(start, end, &ms));
  EXPECT_GT(ms, 0.0f);
  EXPECT_LT(ms, 10000.0f);
  void* native = nullptr;
  CUMEM_ASSERT_OK(cumem_event_native(start, &native));
  EXPECT_NE(native, nullptr);
  CUMEM_ASSERT_OK(cumem_buffer_close(b, s));
  cumem_buffer_release(b);
  cumem_resource_release(r);
  cumem_event_release(start);
  cumem_event_release(end);
  cumem_stream_release(s);
}

TEST_F(StreamEventTest, ElapsedNeedsTimingAndRecords) {
  cumem_event_options_t timed = CUMEM_EVENT_OPTIONS_INIT;
  timed.enable_timing = CUMEM_TRUE;
  cumem_event_t* plain = nullptr;
  cumem_event_t* a = nullptr;
  cumem_event_t* b = nullptr;
  CUMEM_ASSERT_OK(cumem_event_create(device, nullptr, &plain));
  CUMEM_ASSERT_OK(cumem_event_create(device, &timed, &a));
  CUMEM_ASSERT_OK(cumem_event_create(device, &timed, &b));
  float ms = 123.0f;
  CUMEM_EXPECT_ERROR(cumem_event_elapsed_ms(a, b, &ms), CUMEM_ERROR_INVALID_STATE, "never recorded");
  CUMEM_ASSERT_OK(cumem_event_record(a, nullptr));
  CUMEM_ASSERT_OK(cumem_event_record(plain, nullptr));
  CUMEM_EXPECT_ERROR(cumem_event_elapsed_ms(a, plain, &ms), CUMEM_ERROR_INVALID_STATE, "without timing");
  CUMEM_EXPECT_ERROR(cumem_event_elapsed_ms(a, b, &ms), CUMEM_ERROR_INVALID_STATE, "end event was never recorded");
  EXPECT_EQ(ms, 123.0f);
  // Synchronizing or querying an event never recorded is fine.
  CUMEM_ASSERT_OK(cumem_event_synchronize(b));
  cumem_event_options_t blocking = CUMEM_EVENT_OPTIONS_INIT;
  blocking.blocking_sync = CUMEM_TRUE;
  cumem_event_t* c = nullptr;
  CUMEM_ASSERT_OK(cumem_event_create(device, &blocking, &c));
  CUMEM_ASSERT_OK(cumem_event_record(c, nullptr));
  CUMEM_ASSERT_OK(cumem_event_synchronize(c));
  cumem_event_release(c);
  cumem_event_release(plain);
  cumem_event_release(a);
  cumem_event_release(b);
}

TEST_F(StreamEventTest, WaitOrdersStreams) {
  cumem_stream_t* producer = make_stream();
  cumem_stream_t* consumer = make_stream();
  cumem_resource_t* dev_res = nullptr;
  cumem_resource_t* pinned = nullptr;
  CUMEM_ASSERT_OK(cumem_device_resource_create(device, nullptr, &dev_res));
  CUMEM_ASSERT_OK(cumem_legacy_pinned_resource_create(device, &pinned));
  const size_t size = 64u << 20;
  cumem_buffer_t* d = nullptr;
  cumem_buffer_t* h = nullptr;
  CUMEM_ASSERT_OK(cumem_resource_allocate(dev_res, size, producer, &d));
  CUMEM_ASSERT_OK(cumem_resource_allocate(pinned, size, nullptr, &h));
  for (int round = 0; round < 2; ++round) {
    const uint32_t value = 0x01010101u * static_cast<uint32_t>(round + 7);
    // Many fills on the producer, then the consumer reads after a wait.
    for (int i = 0; i < 8; ++i) CUMEM_ASSERT_OK(cumem_buffer_fill(d, value - 1, 4, producer));
    CUMEM_ASSERT_OK(cumem_buffer_fill(d, value, 4, producer));
    if (round == 0) {
      cumem_event_t* e = nullptr;
      CUMEM_ASSERT_OK(cumem_event_create(device, nullptr, &e));
      CUMEM_ASSERT_OK(cumem_event_record(e, producer));
      CUMEM_ASSERT_OK(cumem_stream_wait_event(consumer, e));
      cumem_event_release(e);
    } else {
      CUMEM_ASSERT_OK(cumem_stream_wait_stream(consumer, producer));
    }
    CUMEM_ASSERT_OK(cumem_buffer_copy_to(d, h, consumer));
    CUMEM_ASSERT_OK(cumem_stream_synchronize(consumer));
    void* p = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_ptr(h, &p));
    const uint32_t* words = static_cast<const uint32_t*>(p);
    size_t wrong = 0;
    for (size_t i = 0; i < size / 4; ++i) wrong += words[i] != value;
    EXPECT_EQ(wrong, 0u) << "round " << round;
  }
  CUMEM_ASSERT_OK(cumem_stream_synchronize(producer));
  cumem_buffer_release(d);
  cumem_buffer_release(h);
  cumem_resource_release(dev_res);
  cumem_resource_release(pinned);
  cumem_stream_release(producer);
  cumem_stream_release(consumer);
}

}  // namespace
