/*
 * The contract between a host program and a libcumem plugin: a shared
 * object that a host loads with dlopen and that uses libcumem only through
 * the function table the host hands it (cumem_get_api), as SQLite's
 * loadable extensions use sqlite3_api. The plugin includes the libcumem
 * headers (for the types and the table) but never links libcumem: it has no
 * DT_NEEDED entry on libcumem.so.1 and no undefined cumem_* symbol, so it
 * uses whichever libcumem the host loaded (linked, dlopen'ed with
 * RTLD_LOCAL, or one of two copies side by side) and loads in a process
 * that has no libcumem at all.
 *
 * Writing a plugin:
 *  1. Include <cumem/cumem_api.h> (it includes cumem.h) and this header.
 *  2. Export one function named CUMEM_PLUGIN_ENTRY_NAME with the type
 *     cumem_plugin_run_fn (build with -fvisibility=hidden and mark only it
 *     CUMEM_PLUGIN_EXPORT).
 *  3. Call libcumem only through the table, e.g.
 *     api->cumem_resource_allocate(resource, size, stream, &buffer), after
 *     checking that api->version is at least the table version whose
 *     members you use (CUMEM_PLUGIN_TABLE_VERSION here). Never call
 *     cumem_resource_allocate() and the others directly: each would be an
 *     undefined symbol, which the checks of tests/plugin/ refuse.
 *  4. Use the host's stream for all work, so that it is ordered with the
 *     host's own work; release every object you created before returning.
 *  5. Fill the report and return 0 on success, 1 on failure.
 */
#ifndef CUMEM_EXAMPLES_PLUGIN_H
#define CUMEM_EXAMPLES_PLUGIN_H

#include <cumem/cumem_api.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The name the host looks up with dlsym. */
#define CUMEM_PLUGIN_ENTRY_NAME "cumem_plugin_run"

/** The function table version this example's plugins need (they call only
 *  members of version 1). */
#define CUMEM_PLUGIN_TABLE_VERSION 1u

#if defined(__GNUC__) || defined(__clang__)
#define CUMEM_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define CUMEM_PLUGIN_EXPORT
#endif

#define CUMEM_PLUGIN_MESSAGE_SIZE 512

/** What a plugin tells its host. The host sets struct_size to
 *  sizeof(cumem_plugin_report_t) and zeroes the rest; the plugin refuses a
 *  smaller struct (returns 1 without writing to it). */
typedef struct cumem_plugin_report_t {
  uint32_t struct_size;
  /** CUMEM_SUCCESS, or the status of the libcumem call that failed
   *  (CUMEM_SUCCESS also when every call worked but the data was wrong). */
  cumem_status_t status;
  /** Bytes the plugin read back and found as expected. */
  uint64_t bytes_verified;
  /** A sentence: what was done, or what failed and libcumem's message. */
  char message[CUMEM_PLUGIN_MESSAGE_SIZE];
} cumem_plugin_report_t;

/** The entry point. `api` ([in]) is the host's table, `stream` ([in]) a
 *  stream of the host's on which all the plugin's work is ordered (it stays
 *  the host's: the plugin neither retains nor releases it), `report`
 *  ([out]) as above. Returns 0 when the plugin did its work and verified
 *  it, 1 otherwise (report->message says why). A NULL api, a table older
 *  than CUMEM_PLUGIN_TABLE_VERSION, a NULL stream or a bad report are
 *  refused with 1 and a message (in the report where there is one). */
typedef int32_t (*cumem_plugin_run_fn)(const cumem_api_t* api, cumem_stream_t* stream,
                                       cumem_plugin_report_t* report);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CUMEM_EXAMPLES_PLUGIN_H */
