/* The plugin loads, with RTLD_NOW | RTLD_LOCAL, into a process where no
 * libcumem is loaded (this program does not link it), and libcumem is still
 * not loaded afterwards: the plugin has no undefined libcumem symbol and no
 * DT_NEEDED entry on it. Its entry point then refuses bad input with a
 * message instead of crashing. Usage: plugin_load_without_libcumem PLUGIN.so */
#include "cumem_plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(int ok, const char* what) {
  printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

static int libcumem_loaded(void) {
  void* handle = dlopen("libcumem.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle != NULL) dlclose(handle);
  return handle != NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
    return 2;
  }
  expect(!libcumem_loaded(), "libcumem is not loaded before the plugin");
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == NULL) printf("dlopen: %s\n", dlerror());
  expect(plugin != NULL, "the plugin loads with RTLD_NOW | RTLD_LOCAL (all its symbols resolve)");
  if (plugin == NULL) return 1;
  expect(!libcumem_loaded(), "libcumem is not loaded after the plugin (no DT_NEEDED on it)");

  void* symbol = dlsym(plugin, CUMEM_PLUGIN_ENTRY_NAME);
  expect(symbol != NULL, "the plugin exports " CUMEM_PLUGIN_ENTRY_NAME);
  if (symbol == NULL) return 1;
  cumem_plugin_run_fn run;
  memcpy(&run, &symbol, sizeof run);

  cumem_plugin_report_t report;
  memset(&report, 0, sizeof report);
  report.struct_size = sizeof report;
  expect(run(NULL, NULL, &report) == 1 && strstr(report.message, "api table is NULL") != NULL,
         "a NULL table is refused with a message");
  printf("      %s\n", report.message);

  /* A table of version 0 (no libcumem gives one: its header alone is
   * enough to make it); the plugin must not call through it. */
  cumem_api_t old_table;
  memset(&old_table, 0, sizeof old_table);
  old_table.size = sizeof old_table;
  memset(&report, 0, sizeof report);
  report.struct_size = sizeof report;
  expect(run(&old_table, NULL, &report) == 1 && strstr(report.message, "version 0") != NULL,
         "a table older than the plugin needs is refused, naming both versions");
  printf("      %s\n", report.message);

  cumem_api_t table = old_table;
  table.version = CUMEM_API_TABLE_VERSION;
  memset(&report, 0, sizeof report);
  report.struct_size = sizeof report;
  expect(run(&table, NULL, &report) == 1 && strstr(report.message, "stream is NULL") != NULL,
         "a NULL stream is refused with a message");
  printf("      %s\n", report.message);

  expect(run(&table, NULL, NULL) == 1, "a NULL report is refused");
  memset(&report, 0, sizeof report);
  report.struct_size = 8;
  expect(run(&table, NULL, &report) == 1 && report.message[0] == '\0',
         "a report smaller than the plugin's is refused, and not written");

  dlclose(plugin);
  expect(!libcumem_loaded(), "libcumem is still not loaded");
  printf("%s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
