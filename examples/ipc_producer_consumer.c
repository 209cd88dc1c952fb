/* cuda.core's IPC model with libcumem's C API: a producer process shares a
 * buffer of an IPC-enabled device pool with a consumer process, which checks
 * it, writes a reply, and orders that reply before the producer's read with
 * an interprocess event. Exits non-zero on any error or mismatch, and with 77
 * (what test harnesses read as "skipped") where there is no GPU.
 *
 * One program, two roles: the producer forks the consumer BEFORE any libcumem
 * call that touches the driver (cumem_device_count does), because a child
 * must not inherit an initialised CUDA driver. They talk over one Unix
 * stream socket:
 *   consumer -> producer  1 byte: 'R' (ready: it has a device) or 'S' (skip)
 *   producer -> consumer  cumem_ipc_send: the pool's allocation handle (its
 *                         file descriptor travels as SCM_RIGHTS) and the
 *                         buffer's descriptor
 *   producer -> consumer  the 64 bytes of the event's handle, written as is
 *   consumer -> producer  1 byte 'D': the reply is queued, the event recorded
 * The producer frees its buffer only after the consumer has exited. */
#define _POSIX_C_SOURCE 200809L /* socketpair, fork, waitpid under -std=c11 */

#include <cumem/cumem.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define BYTES (1u << 20)
#define REQUEST 0xc0ffee01u /* the producer's pattern, one 32-bit word repeated */
#define REPLY 0x5eed0002u   /* the consumer's reply */

static const char* role = "producer"; /* "consumer" in the child */

/* On failure: print the role, the call, the status and the library's
 * message, and go to the cleanup at the end of the function. */
#define CHECK(call)                                                                 \
  do {                                                                              \
    cumem_status_t status_ = (call);                                                \
    if (status_ != CUMEM_SUCCESS) {                                                 \
      fprintf(stderr, "%s: %s failed: %s: %s\n", role, #call,                       \
              cumem_status_string(status_), cumem_last_error_message());            \
      goto cleanup;                                                                 \
    }                                                                               \
  } while (0)

/* Sends all n bytes; 0 on success. MSG_NOSIGNAL: a closed peer is EPIPE,
 * not a SIGPIPE that kills the process. */
static int send_all(int socket, const void* data, size_t n) {
  const char* p = data;
  while (n > 0) {
    const ssize_t sent = send(socket, p, n, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0) {
      fprintf(stderr, "%s: send: %s\n", role, strerror(errno));
      return -1;
    }
    p += sent;
    n -= (size_t)sent;
  }
  return 0;
}

/* Receives exactly n bytes; 0 on success. */
static int receive_all(int socket, void* data, size_t n) {
  char* p = data;
  while (n > 0) {
    const ssize_t got = read(socket, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      fprintf(stderr, "%s: read: %s\n", role,
              got == 0 ? "the other process closed the connection" : strerror(errno));
      return -1;
    }
    p += got;
    n -= (size_t)got;
  }
  return 0;
}

/* Whether a driver and a device are there; prints why not. */
static int have_device(void) {
  int32_t count = 0;
  const cumem_status_t s = cumem_device_count(&count);
  if (s == CUMEM_SUCCESS && count > 0) return 1;
  printf("%s: no CUDA device to run on (%s)\n", role,
         s != CUMEM_SUCCESS ? cumem_last_error_message() : "the driver reports none");
  return 0;
}

/* Copies `buffer` to a zeroed host buffer (so a copy that did not happen
 * cannot pass), checks that every word is `value` and prints the check.
 * Returns 0 when all match. */
static int check_words(const char* what, const cumem_buffer_t* buffer,
                       const cumem_stream_t* stream, uint32_t value) {
  int failed = 1;
  cumem_resource_t* host_mr = NULL;
  cumem_buffer_t* host = NULL;
  void* ptr = NULL;
  const uint32_t* words = NULL;
  size_t i = 0;
  CHECK(cumem_host_resource_create(NULL, &host_mr));
  CHECK(cumem_resource_allocate(host_mr, BYTES, NULL, &host));
  CHECK(cumem_buffer_fill(host, 0, 1, NULL));
  CHECK(cumem_buffer_copy_to(buffer, host, stream)); /* also checks that the sizes match */
  CHECK(cumem_stream_synchronize(stream));
  CHECK(cumem_buffer_ptr(host, &ptr));
  words = ptr;
  while (i < BYTES / 4 && words[i] == value) ++i;
  if (i < BYTES / 4) {
    printf("%s: %s: MISMATCH at word %zu: 0x%08x, expected 0x%08x\n", role, what, i,
           (unsigned)words[i], (unsigned)value);
  } else {
    printf("%s: %s: OK (%u words of 0x%08x)\n", role, what, BYTES / 4, (unsigned)value);
    failed = 0;
  }
cleanup:
  cumem_buffer_release(host);
  cumem_resource_release(host_mr);
  return failed;
}

static int consumer(int socket) {
  int failed = 1;
  cumem_allocation_handle_t* handle = NULL;
  cumem_ipc_descriptor_t descriptor;
  uint32_t count = 0;
  cumem_ipc_event_handle_t event_handle;
  cumem_device_t* device = NULL;
  cumem_stream_t* stream = NULL;
  cumem_resource_t* pool = NULL;
  cumem_buffer_t* shared = NULL;
  cumem_event_t* event = NULL;

  if (!have_device()) {
    /* The producer skips too; it may have gone already (no device there
     * either), so a failure to tell it is not reported. */
    (void)send(socket, "S", 1, MSG_NOSIGNAL);
    return 77;
  }
  if (send_all(socket, "R", 1) != 0) return 1;
  CHECK(cumem_ipc_receive(socket, &handle, &descriptor, 1, &count));
  if (handle == NULL || count != 1) {
    fprintf(stderr, "consumer: expected a handle and 1 descriptor, got %s and %u\n",
            handle ? "a handle" : "no handle", (unsigned)count);
    goto cleanup;
  }
  if (receive_all(socket, event_handle.bytes, sizeof event_handle.bytes) != 0) goto cleanup;

  CHECK(cumem_device_get(0, &device));
  CHECK(cumem_stream_create(device, NULL, &stream));
  CHECK(cumem_resource_from_allocation_handle(device, handle, &pool));
  CHECK(cumem_buffer_from_ipc_descriptor(pool, &descriptor, stream, &shared));
  if (check_words("the producer's pattern", shared, stream, REQUEST) != 0) goto cleanup;

  /* The reply, then the producer's event recorded after it on this stream:
   * the producer's stream waits on that event before reading. */
  CHECK(cumem_buffer_fill(shared, REPLY, 4, stream));
  CHECK(cumem_event_from_ipc_handle(device, &event_handle, &event));
  CHECK(cumem_event_record(event, stream));
  if (send_all(socket, "D", 1) != 0) goto cleanup;
  CHECK(cumem_buffer_close(shared, stream)); /* unmaps here; never frees the producer's memory */
  /* Finish this process's queued work before it exits. */
  CHECK(cumem_stream_synchronize(stream));
  printf("consumer: reply written, event recorded\n");
  failed = 0;

cleanup:
  cumem_event_release(event);
  cumem_buffer_release(shared);
  cumem_resource_release(pool);
  cumem_allocation_handle_release(handle);
  cumem_stream_release(stream);
  cumem_device_release(device);
  return failed;
}

/* Waits for the consumer; its exit code, or -1 if it did not exit normally. */
static int wait_consumer(pid_t pid) {
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited == pid && WIFEXITED(status)) return WEXITSTATUS(status);
  fprintf(stderr, "producer: the consumer did not exit normally (%s)\n",
          waited != pid ? strerror(errno) : "a signal ended it");
  return -1;
}

static int producer(int socket, pid_t child) {
  int failed = 1;
  int consumer_code = -1;
  char byte = 0;
  cumem_device_t* device = NULL;
  cumem_stream_t* stream = NULL;
  cumem_resource_t* pool = NULL;
  cumem_buffer_t* shared = NULL;
  cumem_event_t* event = NULL;
  cumem_allocation_handle_t* handle = NULL;
  cumem_ipc_descriptor_t descriptor;
  cumem_ipc_event_handle_t event_handle;
  cumem_pool_options_t pool_options = CUMEM_POOL_OPTIONS_INIT;
  cumem_event_options_t event_options = CUMEM_EVENT_OPTIONS_INIT;

  if (!have_device()) {
    failed = 77;
    goto cleanup;
  }
  if (receive_all(socket, &byte, 1) != 0) goto cleanup;
  if (byte == 'S') {
    printf("producer: the consumer found no CUDA device; skipping\n");
    failed = 77;
    goto cleanup;
  }
  if (byte != 'R') {
    fprintf(stderr, "producer: byte %d from the consumer, expected 'R' or 'S'\n", byte);
    goto cleanup;
  }

  CHECK(cumem_device_get(0, &device));
  CHECK(cumem_stream_create(device, NULL, &stream));
  pool_options.new_pool = CUMEM_TRUE; /* only a new pool can be IPC-enabled */
  pool_options.ipc_enabled = CUMEM_TRUE;
  CHECK(cumem_device_resource_create(device, &pool_options, &pool));
  CHECK(cumem_resource_allocate(pool, BYTES, stream, &shared));
  CHECK(cumem_buffer_fill(shared, REQUEST, 4, stream));
  CHECK(cumem_stream_synchronize(stream)); /* the pattern is there before the consumer looks */
  event_options.enable_timing = CUMEM_FALSE; /* interprocess events cannot time */
  event_options.interprocess = CUMEM_TRUE;
  CHECK(cumem_event_create(device, &event_options, &event));
  CHECK(cumem_event_get_ipc_handle(event, &event_handle));

  CHECK(cumem_resource_get_allocation_handle(pool, &handle));
  CHECK(cumem_buffer_get_ipc_descriptor(shared, &descriptor));
  CHECK(cumem_ipc_send(socket, handle, &descriptor, 1));
  if (send_all(socket, event_handle.bytes, sizeof event_handle.bytes) != 0) goto cleanup;
  printf("producer: sent the pool, the buffer's descriptor and the event's handle\n");

  if (receive_all(socket, &byte, 1) != 0 || byte != 'D') {
    fprintf(stderr, "producer: the consumer stopped before it was done\n");
    goto cleanup;
  }
  CHECK(cumem_stream_wait_event(stream, event)); /* the read below runs after the reply */
  failed = check_words("the consumer's reply", shared, stream, REPLY);

cleanup:
  /* The consumer goes first (closing the socket ends its wait, if any), so
   * that the shared memory is freed only when no one maps it any more. */
  close(socket);
  consumer_code = wait_consumer(child);
  if (failed != 77 && consumer_code != 0) {
    fprintf(stderr, "producer: the consumer exited with %d\n", consumer_code);
    failed = 1;
  }
  if (shared != NULL && cumem_buffer_close(shared, stream) != CUMEM_SUCCESS) {
    fprintf(stderr, "producer: closing the buffer: %s\n", cumem_last_error_message());
    failed = 1;
  }
  if (stream != NULL && cumem_stream_synchronize(stream) != CUMEM_SUCCESS) failed = 1;
  if (failed != 77)
    printf("%s\n", failed ? "ipc_producer_consumer: FAILED"
                          : "ipc_producer_consumer: all checks passed");
  cumem_allocation_handle_release(handle);
  cumem_event_release(event);
  cumem_buffer_release(shared);
  cumem_resource_release(pool);
  cumem_stream_release(stream);
  cumem_device_release(device);
  return failed;
}

int main(void) {
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) != 0) {
    fprintf(stderr, "socketpair: %s\n", strerror(errno));
    return 1;
  }
  fflush(stdout); /* nothing buffered is printed twice */
  const pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "fork: %s\n", strerror(errno));
    return 1;
  }
  if (pid == 0) {
    role = "consumer";
    close(sockets[0]);
    const int code = consumer(sockets[1]);
    close(sockets[1]);
    return code;
  }
  close(sockets[1]);
  return producer(sockets[0], pid);
}
