/* A host program that links libcumem, makes a device and a stream, loads a
 * plugin with dlopen and hands it libcumem's function table and the stream
 * (cumem_plugin.h). Usage: plugin_host PLUGIN.so
 * Exit statuses: load_plugin.h (0 when the plugin verified its work, 77
 * where there is no GPU). */
#include "load_plugin.h"

#include <cumem/cumem.h>

#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
    return HOST_BAD_PLUGIN;
  }
  int32_t count = 0;
  const cumem_status_t counted = cumem_device_count(&count);
  if (counted != CUMEM_SUCCESS || count == 0) {
    printf("no CUDA device to run on (%s)\n",
           counted != CUMEM_SUCCESS ? cumem_last_error_message() : "the driver reports none");
    return HOST_SKIPPED;
  }

  int result = HOST_FAILED;
  cumem_device_t* device = NULL;
  cumem_stream_t* stream = NULL;
  cumem_status_t status = cumem_device_get(0, &device);
  if (status == CUMEM_SUCCESS) status = cumem_stream_create(device, NULL, &stream);
  if (status != CUMEM_SUCCESS) {
    fprintf(stderr, "plugin_host: %s: %s\n", cumem_status_string(status),
            cumem_last_error_message());
  } else {
    /* The table of the libcumem this program linked: the plugin calls
     * through it and so uses this very library. */
    const cumem_api_t* api = cumem_get_api(CUMEM_API_TABLE_VERSION);
    result = run_plugin(argv[1], api, stream);
    if (result == HOST_OK && cumem_stream_synchronize(stream) != CUMEM_SUCCESS) {
      fprintf(stderr, "plugin_host: %s\n", cumem_last_error_message());
      result = HOST_FAILED;
    }
  }
  cumem_stream_release(stream);
  cumem_device_release(device);
  printf("%s\n", result == HOST_OK ? "plugin_host: all checks passed" : "plugin_host: FAILED");
  return result;
}
