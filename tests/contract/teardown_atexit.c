/* A failing libcumem call from an atexit handler, after this thread's
 * thread-local storage has been torn down (exit() runs thread_local
 * destructors before atexit handlers). The last-error message must still be
 * recorded and readable; the process must exit 0.
 *
 * The handler's second failure has a longer message than the first: with a
 * last-error store that is destroyed at thread exit (a std::string), writing
 * it reallocates and frees the destroyed store's buffer a second time, which
 * glibc aborts on. */
#include <cumem/cumem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(const char* when, cumem_status_t status, const char* fragment) {
  const char* message = cumem_last_error_message();
  printf("%s: %s: %s\n", when, cumem_status_string(status), message);
  if (status != CUMEM_ERROR_INVALID_ARGUMENT || strstr(message, fragment) == NULL) {
    fprintf(stderr, "%s: expected CUMEM_ERROR_INVALID_ARGUMENT and a message with '%s'\n", when,
            fragment);
    return 0;
  }
  return 1;
}

static void at_exit_handler(void) {
  size_t n = 0;
  int ok = check("atexit, same call", cumem_buffer_size(NULL, &n),
                 "cumem_buffer_size: argument 'buffer' must not be NULL");
  cumem_host_resource_options_t options = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  options.alignment = 3;
  cumem_resource_t* resource = NULL;
  ok &= check("atexit, longer message", cumem_host_resource_create(&options, &resource),
              "cumem_host_resource_create");
  fflush(stdout);
  /* _Exit: exit() may not be called again from a handler. */
  if (!ok) _Exit(1);
}

int main(void) {
  size_t n = 0;
  if (cumem_last_error_message()[0] != '\0') {
    fprintf(stderr, "the message must be empty before any failure\n");
    return 1;
  }
  atexit(at_exit_handler);
  if (!check("main", cumem_buffer_size(NULL, &n), "'buffer'")) return 1;
  return 0;
}
