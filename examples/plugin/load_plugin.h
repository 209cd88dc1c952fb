/* Loading a plugin (cumem_plugin.h) and running it: what both host programs
 * of this folder share. */
#ifndef CUMEM_EXAMPLES_LOAD_PLUGIN_H
#define CUMEM_EXAMPLES_LOAD_PLUGIN_H

#include "cumem_plugin.h"

/* Exit statuses of the host programs. */
enum {
  HOST_OK = 0,
  HOST_FAILED = 1,            /* a libcumem call or the plugin's check failed */
  HOST_BAD_PLUGIN = 2,        /* usage, or the plugin cannot be loaded */
  HOST_NO_LIBRARY = 3,        /* (self-loading host) libcumem cannot be loaded */
  HOST_UNUSABLE_LIBRARY = 4,  /* (self-loading host) no cumem_get_api, or no table we need */
  HOST_SKIPPED = 77           /* no GPU to run on (test harnesses read it as skipped) */
};

/* dlopen()s `path` with RTLD_NOW | RTLD_LOCAL, runs its entry point with
 * `api` and `stream`, prints its report, and dlclose()s it. Returns
 * HOST_OK, HOST_FAILED (the plugin reported a failure) or HOST_BAD_PLUGIN
 * (the file cannot be loaded or has no entry point; dlerror's text is
 * printed). */
int run_plugin(const char* path, const cumem_api_t* api, cumem_stream_t* stream);

#endif /* CUMEM_EXAMPLES_LOAD_PLUGIN_H */
