/* Loading a plugin and running it (load_plugin.h). */
#include "load_plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int run_plugin(const char* path, const cumem_api_t* api, cumem_stream_t* stream) {
  /* RTLD_LOCAL: the plugin's symbols stay its own, and it cannot pick up
   * libcumem's from the global scope (it must not need them). */
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    fprintf(stderr, "cannot load the plugin: %s\n", dlerror());
    return HOST_BAD_PLUGIN;
  }
  void* symbol = dlsym(handle, CUMEM_PLUGIN_ENTRY_NAME);
  if (symbol == NULL) {
    fprintf(stderr, "%s has no entry point %s: %s\n", path, CUMEM_PLUGIN_ENTRY_NAME, dlerror());
    dlclose(handle);
    return HOST_BAD_PLUGIN;
  }
  cumem_plugin_run_fn run;
  memcpy(&run, &symbol, sizeof run); /* object to function pointer, as POSIX allows */

  cumem_plugin_report_t report;
  memset(&report, 0, sizeof report);
  report.struct_size = sizeof report;
  const int32_t failed = run(api, stream, &report);
  printf("plugin %s: %s\n", path, report.message);
  if (failed && report.status != CUMEM_SUCCESS) {
    printf("plugin status: %s\n", api->cumem_status_string(report.status));
  }
  dlclose(handle);
  return failed ? HOST_FAILED : HOST_OK;
}
