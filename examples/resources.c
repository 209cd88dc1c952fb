/* Allocates from every resource kind, copies a pattern through all of them
 * (host -> device -> pinned pool -> legacy pinned -> managed -> host), checks
 * it arrived intact, and prints each resource's statistics. */
#include <cumem/cumem.h>

#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                               \
  do {                                                                            \
    cumem_status_t s_ = (call);                                                   \
    if (s_ != CUMEM_SUCCESS) {                                                    \
      fprintf(stderr, "%s failed: %s: %s\n", #call, cumem_status_string(s_),       \
              cumem_last_error_message());                                        \
      return s_ == CUMEM_ERROR_NO_DRIVER || s_ == CUMEM_ERROR_NO_DEVICE ? 77 : 1; \
    }                                                                             \
  } while (0)

enum { KINDS = 5, SIZE = 1 << 20 };

int main(void) {
  static const char* names[KINDS] = {"host", "device", "pinned", "legacy pinned", "managed"};
  cumem_device_t* dev = NULL;
  cumem_stream_t* stream = NULL;
  cumem_resource_t* res[KINDS] = {NULL};
  cumem_buffer_t* buf[KINDS] = {NULL};
  cumem_managed_resource_options_t managed = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
  unsigned char* first;
  unsigned char* last;
  int k, i, bad = 0;

  CHECK(cumem_device_get(0, &dev));
  CHECK(cumem_stream_create(dev, NULL, &stream));
  managed.preferred_location.type = CUMEM_LOCATION_DEVICE;
  managed.preferred_location.id = 0;
  CHECK(cumem_host_resource_create(NULL, &res[0]));
  CHECK(cumem_device_resource_create(dev, NULL, &res[1]));
  CHECK(cumem_pinned_resource_create(dev, NULL, &res[2]));
  CHECK(cumem_legacy_pinned_resource_create(dev, &res[3]));
  CHECK(cumem_managed_resource_create(dev, &managed, &res[4]));
  for (k = 0; k < KINDS; ++k) CHECK(cumem_resource_allocate(res[k], SIZE, stream, &buf[k]));

  CHECK(cumem_buffer_ptr(buf[0], (void**)&first));
  for (i = 0; i < SIZE; ++i) first[i] = (unsigned char)(i * 31 + 7);
  for (k = 1; k < KINDS; ++k) CHECK(cumem_buffer_copy_to(buf[k - 1], buf[k], stream));
  CHECK(cumem_stream_synchronize(stream));
  CHECK(cumem_buffer_ptr(buf[KINDS - 1], (void**)&last)); /* managed: readable on the host */
  for (i = 0; i < SIZE; ++i) bad += last[i] != (unsigned char)(i * 31 + 7);
  printf("copied %d bytes host -> device -> pinned -> legacy pinned -> managed: %s\n", SIZE,
         bad ? "MISMATCH" : "OK");

  for (k = 0; k < KINDS; ++k) {
    cumem_resource_statistics_t st = CUMEM_RESOURCE_STATISTICS_INIT;
    cumem_resource_properties_t p = CUMEM_RESOURCE_PROPERTIES_INIT;
    CHECK(cumem_resource_get_properties(res[k], &p));
    CHECK(cumem_resource_get_statistics(res[k], &st));
    printf("%-14s pool:%s device:%s host:%s  in use %llu B, peak %llu B, live %llu, total %llu\n",
           names[k], p.is_pool ? "yes" : "no ", p.device_accessible ? "yes" : "no ",
           p.host_accessible ? "yes" : "no ", (unsigned long long)st.bytes_in_use,
           (unsigned long long)st.peak_bytes_in_use, (unsigned long long)st.live_allocations,
           (unsigned long long)st.total_allocations);
  }
  for (k = 0; k < KINDS; ++k) {
    CHECK(cumem_buffer_close(buf[k], stream));
    cumem_buffer_release(buf[k]);
    cumem_resource_release(res[k]);
  }
  CHECK(cumem_stream_synchronize(stream));
  cumem_stream_release(stream);
  cumem_device_release(dev);
  return bad ? 1 : 0;
}
