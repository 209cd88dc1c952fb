/* A host program that does not link libcumem: it loads libcumem.so.1 itself
 * with dlopen (the file $CUMEM_LIBRARY names, else libcumem.so.1 through
 * the loader's search path), takes cumem_get_api of the version node
 * LIBCUMEM_1, and then works as plugin_host does, through the table only:
 * a device, a stream, the plugin. Where libcumem is absent it says so and
 * exits with HOST_NO_LIBRARY (3); where the file is not a usable libcumem,
 * with HOST_UNUSABLE_LIBRARY (4). Usage: plugin_self_loading PLUGIN.so */
#define _GNU_SOURCE /* dlvsym */
#include "load_plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef const cumem_api_t* (*get_api_fn)(uint32_t version);

/* cumem_get_api of the node LIBCUMEM_1 where the C library can ask for a
 * version (glibc's dlvsym), else whichever cumem_get_api the file has. */
static void* find_get_api(void* library) {
#if defined(__GLIBC__)
  return dlvsym(library, "cumem_get_api", "LIBCUMEM_1");
#else
  return dlsym(library, "cumem_get_api");
#endif
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
    return HOST_BAD_PLUGIN;
  }
  const char* env = getenv("CUMEM_LIBRARY");
  const char* path = env != NULL && env[0] != '\0' ? env : "libcumem.so.1";
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr,
            "plugin_self_loading: libcumem is not available: cannot load %s (%s). Install "
            "libcumem or set CUMEM_LIBRARY to the path of libcumem.so.1.\n",
            path, dlerror());
    return HOST_NO_LIBRARY;
  }
  void* symbol = find_get_api(library);
  if (symbol == NULL) {
    fprintf(stderr, "plugin_self_loading: %s is not a usable libcumem: no cumem_get_api@LIBCUMEM_1 "
            "(%s)\n", path, dlerror());
    dlclose(library);
    return HOST_UNUSABLE_LIBRARY;
  }
  get_api_fn get_api;
  memcpy(&get_api, &symbol, sizeof get_api);
  const cumem_api_t* api = get_api(CUMEM_PLUGIN_TABLE_VERSION);
  if (api == NULL) {
    fprintf(stderr, "plugin_self_loading: %s has no function table version %u\n", path,
            (unsigned)CUMEM_PLUGIN_TABLE_VERSION);
    dlclose(library);
    return HOST_UNUSABLE_LIBRARY;
  }
  printf("loaded %s: libcumem %u, function table version %u\n", path,
         (unsigned)api->cumem_version(), (unsigned)api->version);

  int32_t count = 0;
  const cumem_status_t counted = api->cumem_device_count(&count);
  if (counted != CUMEM_SUCCESS || count == 0) {
    printf("no CUDA device to run on (%s)\n",
           counted != CUMEM_SUCCESS ? api->cumem_last_error_message() : "the driver reports none");
    dlclose(library);
    return HOST_SKIPPED;
  }
  int result = HOST_FAILED;
  cumem_device_t* device = NULL;
  cumem_stream_t* stream = NULL;
  cumem_status_t status = api->cumem_device_get(0, &device);
  if (status == CUMEM_SUCCESS) status = api->cumem_stream_create(device, NULL, &stream);
  if (status != CUMEM_SUCCESS) {
    fprintf(stderr, "plugin_self_loading: %s: %s\n", api->cumem_status_string(status),
            api->cumem_last_error_message());
  } else {
    result = run_plugin(argv[1], api, stream);
  }
  api->cumem_stream_release(stream);
  api->cumem_device_release(device);
  /* libcumem stays loaded until exit: its own threads and atexit work may
   * still refer to it. */
  printf("%s\n", result == HOST_OK ? "plugin_self_loading: all checks passed"
                                   : "plugin_self_loading: FAILED");
  return result;
}
