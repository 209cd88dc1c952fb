/* A libcumem plugin (see cumem_plugin.h): on the host's stream it allocates
 * a device buffer and a pinned staging buffer, fills the device buffer with
 * a pattern, copies it back and checks it, then writes values from the
 * host, copies them into half the device buffer and checks the whole
 * buffer again. It calls libcumem only through the table it is given and
 * never links it. */
#include "cumem_plugin.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define VALUES (1u << 16) /* 256 KiB of uint32_t */
#define PATTERN 0xC0FFEE42u

static void say(cumem_plugin_report_t* report, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(report->message, sizeof report->message, format, args);
  va_end(args);
}

/* On failure: record the call, its status and libcumem's message, and go to
 * the cleanup. */
#define CALL(expr)                                                                          \
  do {                                                                                      \
    const cumem_status_t status_ = (expr);                                                  \
    if (status_ != CUMEM_SUCCESS) {                                                         \
      report->status = status_;                                                             \
      say(report, "%s failed: %s: %s", #expr, api->cumem_status_string(status_),            \
          api->cumem_last_error_message());                                                 \
      goto cleanup;                                                                         \
    }                                                                                       \
  } while (0)

/* The first index where values[i] != expected(i), or VALUES when none. */
static uint32_t first_mismatch(const uint32_t* values, uint32_t half_written) {
  for (uint32_t i = 0; i < VALUES; ++i) {
    const uint32_t expected = i < half_written ? i * 2654435761u : PATTERN;
    if (values[i] != expected) return i;
  }
  return VALUES;
}

CUMEM_PLUGIN_EXPORT int32_t cumem_plugin_run(const cumem_api_t* api, cumem_stream_t* stream,
                                             cumem_plugin_report_t* report) {
  if (report == NULL || report->struct_size < sizeof(cumem_plugin_report_t)) {
    return 1; /* nowhere to say why: the host broke the contract */
  }
  report->status = CUMEM_SUCCESS;
  report->bytes_verified = 0;
  report->message[0] = '\0';
  if (api == NULL) {
    say(report, "fill_copy_plugin: the api table is NULL");
    return 1;
  }
  if (api->version < CUMEM_PLUGIN_TABLE_VERSION) {
    say(report, "fill_copy_plugin: the api table has version %u; this plugin needs %u or newer",
        (unsigned)api->version, (unsigned)CUMEM_PLUGIN_TABLE_VERSION);
    return 1;
  }
  if (stream == NULL) {
    say(report, "fill_copy_plugin: the stream is NULL; the host must give one");
    return 1;
  }

  int32_t result = 1;
  const size_t bytes = VALUES * sizeof(uint32_t);
  cumem_device_t* device = NULL;
  cumem_resource_t* device_mr = NULL;
  cumem_resource_t* pinned_mr = NULL;
  cumem_buffer_t* device_buffer = NULL;
  cumem_buffer_t* staging = NULL;
  void* staging_ptr = NULL;

  CALL(api->cumem_stream_device(stream, &device));
  CALL(api->cumem_device_resource_create(device, NULL, &device_mr));
  CALL(api->cumem_legacy_pinned_resource_create(device, &pinned_mr));
  CALL(api->cumem_resource_allocate(device_mr, bytes, stream, &device_buffer));
  CALL(api->cumem_resource_allocate(pinned_mr, bytes, stream, &staging));
  CALL(api->cumem_buffer_ptr(staging, &staging_ptr));
  uint32_t* host = staging_ptr;

  /* 1. The pattern, filled on the device, read back through the staging buffer. */
  CALL(api->cumem_buffer_fill(device_buffer, PATTERN, 4, stream));
  CALL(api->cumem_buffer_fill(staging, 0, 4, stream));
  CALL(api->cumem_buffer_copy_to(device_buffer, staging, stream));
  CALL(api->cumem_stream_synchronize(stream));
  uint32_t bad = first_mismatch(host, 0);
  if (bad != VALUES) {
    say(report, "fill_copy_plugin: after the fill, value %u is 0x%08x, expected 0x%08x", bad,
        host[bad], PATTERN);
    goto cleanup;
  }
  report->bytes_verified += bytes;

  /* 2. Values written on the host, copied into the first half of the
   *    device buffer; the second half keeps the pattern. */
  for (uint32_t i = 0; i < VALUES / 2; ++i) host[i] = i * 2654435761u;
  CALL(api->cumem_buffer_copy_region(device_buffer, 0, staging, 0, bytes / 2, stream));
  CALL(api->cumem_buffer_fill(staging, 0, 4, stream));
  CALL(api->cumem_buffer_copy_to(device_buffer, staging, stream));
  CALL(api->cumem_stream_synchronize(stream));
  bad = first_mismatch(host, VALUES / 2);
  if (bad != VALUES) {
    say(report, "fill_copy_plugin: after the region copy, value %u is 0x%08x, expected 0x%08x",
        bad, host[bad], bad < VALUES / 2 ? bad * 2654435761u : PATTERN);
    goto cleanup;
  }
  report->bytes_verified += bytes;

  CALL(api->cumem_buffer_close(staging, stream));
  CALL(api->cumem_buffer_close(device_buffer, stream));
  CALL(api->cumem_stream_synchronize(stream));
  say(report, "fill_copy_plugin: filled, copied and verified %u bytes twice on the host's stream "
      "(libcumem %u through table version %u)", (unsigned)bytes, (unsigned)api->cumem_version(),
      (unsigned)api->version);
  result = 0;

cleanup:
  api->cumem_buffer_release(staging);
  api->cumem_buffer_release(device_buffer);
  api->cumem_resource_release(pinned_mr);
  api->cumem_resource_release(device_mr);
  api->cumem_device_release(device);
  return result;
}
