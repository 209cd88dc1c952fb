/*
 * libcumem — CUDA memory made simple and fast, behind a stable C ABI.
 *
 * This is the only header a C user or an FFI generator needs. It includes no
 * CUDA header: native CUDA handles (CUstream, CUmemoryPool, CUkernel, ...)
 * cross it as `void*` and device pointers as `void*`.
 *
 * Conventions, valid for every function below unless its comment says
 * otherwise:
 *  - Parameters: pointers named out_* and the out structs (props, stats,
 *    info, attributes of the _get_ calls) are [out]; every other parameter
 *    is [in]. Only these may be NULL ([in][optional]): options structs,
 *    stream arguments, release_fn/user_data of cumem_buffer_wrap, args
 *    of cumem_launch when num_args is 0, and the resource of
 *    cumem_snapshot_take and cumem_resource_statistics_json (NULL: every
 *    live resource).
 *    Three calls also take a NULL pointer with size 0 (an empty range):
 *    cumem_resource_deallocate_raw, cumem_buffer_wrap and
 *    cumem_buffer_wrap_owned.
 *  - Errors every call can give besides those listed with it:
 *    CUMEM_ERROR_INVALID_ARGUMENT (a NULL, released or wrong-type handle, a
 *    NULL out pointer, a bad struct_size: see below), CUMEM_ERROR_NO_DRIVER
 *    (the call needs the CUDA driver and it cannot be loaded), CUMEM_ERROR_DRIVER
 *    (the driver failed; its error name and what was being done are in the
 *    message), CUMEM_ERROR_INTERNAL (a bug: please report the message).
 *  - Every function that can fail returns cumem_status_t. Results come back
 *    through out-parameters placed last; on failure they are left untouched.
 *  - After a failure, cumem_last_error_message() returns a sentence for it
 *    (thread-local): the argument at fault, or the driver error and context.
 *  - A NULL handle or a NULL out-pointer is CUMEM_ERROR_INVALID_ARGUMENT
 *    with a message naming the argument.
 *  - Every object is reference counted: a function that hands out an object
 *    (`[out] cumem_X_t**`) gives the caller one reference, which the caller
 *    gives back with cumem_X_release(). cumem_X_release(NULL) does nothing
 *    and returns CUMEM_SUCCESS. The references the caller holds are counted
 *    apart from those libcumem holds itself (a buffer on its resource, ...):
 *    a release beyond the caller's references is refused, never destroys an
 *    object that libcumem still uses, and returns
 *    CUMEM_ERROR_INVALID_ARGUMENT with a message.
 *    A handle is the object's identity: getters such as
 *    cumem_buffer_resource() return the same pointer value the creator got
 *    (with one more reference), and cumem_device_get() returns one handle per
 *    ordinal.
 *    Objects keep what they depend on alive (a buffer its resource, a
 *    resource and a stream their device, a device its primary context).
 *  - Options structs start with `uint32_t struct_size`; fill them with the
 *    matching `_INIT` macro or `_init()` function. A NULL options pointer
 *    means the defaults. cumem_launch_config_t and the
 *    cumem_pool_attributes_t given to cumem_resource_pool_set_attributes
 *    are read as options are (but must not be NULL). Out structs
 *    (`_properties_t`, `_statistics_t`, `_info_t`, and the `_attributes_t`
 *    of the _get_ calls) also start with struct_size, which the caller sets
 *    before the call. struct_size rules:
 *    - below 4 or above 4096: CUMEM_ERROR_INVALID_ARGUMENT (nothing else of
 *      the struct is read);
 *    - 0 (a struct filled with zeros whose struct_size was never set):
 *      CUMEM_ERROR_INVALID_ARGUMENT with a message saying the struct looks
 *      zero-filled and naming the sizeof and the _init() function to use;
 *    - it must not end inside a field: it must end at a field's end (or
 *      the struct's end); else CUMEM_ERROR_INVALID_ARGUMENT naming the
 *      argument, the size and the field it cuts. A smaller struct (from a
 *      caller built with an older cumem.h) is fine: the library reads or
 *      writes only the whole fields it covers; options past it keep their
 *      defaults, out fields past it are not written;
 *    - options (and the other structs read as options) larger than this
 *      library's struct (from a caller built with a newer cumem.h) are
 *      accepted only if every byte past this library's sizeof is zero (the
 *      options it does not know are left unset); else
 *      CUMEM_ERROR_NOT_SUPPORTED naming both sizes and the library version;
 *    - out structs larger than this library's are fine: the library writes
 *      its fields, never a byte past them, and for every out struct writes
 *      back struct_size = the smaller of the caller's struct_size and its
 *      own sizeof, so fields past that size were not written.
 *    New fields are only ever added at the end, past the struct's previous
 *    sizeof, so these rules stay sound.
 *  - No padding: every byte of every public struct belongs to a named field,
 *    so sizeof is where the last field ends, a field added at the end always
 *    changes sizeof (struct_size tells the versions apart), and FFI
 *    generators see the exact layout. Where alignment would leave a gap, the
 *    struct has a `reserved…` field instead: in structs the library reads
 *    (options), a reserved field must be 0 (else CUMEM_ERROR_INVALID_ARGUMENT
 *    naming it), so a later version can give it a meaning; in out structs the
 *    library writes it as 0.
 *  - Zero means default: in every options struct, and in every struct read
 *    as options except the one below, each field's default is 0 (NULL, false,
 *    the enum value 0), so a struct that is all zero except struct_size =
 *    sizeof(the struct) asks for exactly the defaults: what Rust's Default,
 *    Julia's and ctypes' constructors make once struct_size is set. The
 *    _INIT macros and _init() functions give those same bytes (every _INIT
 *    macro, out structs' too, is zero but for struct_size). Where a
 *    setting's natural encoding would need another default, the field is
 *    named so that 0 is the default (`blocking`, `new_pool`) or says what 0
 *    means (a release threshold of 0 keeps everything). The exception:
 *    cumem_pool_attributes_t given to cumem_resource_pool_set_attributes is
 *    not options but the pool's values, set exactly as given (read them
 *    with cumem_resource_pool_get_attributes first and change what you
 *    mean to change).
 *  - Sizes: in function parameters, the size of one allocation or region
 *    of memory (allocate, free, copy, slice, wrap, an offset into a
 *    buffer, a code image) is size_t, the platform's type, as malloc takes
 *    it; totals, limits, thresholds, capacities and alignments of resources
 *    and devices (limit_bytes, min_bytes_to_keep, keep_bytes, capacity,
 *    alignment, memory info, statistics)
 *    are uint64_t, as they are in the driver. In structs every size, offset
 *    and byte count of memory is uint64_t (one layout on every platform,
 *    no size_t for FFI generators to map); the per-kernel and per-block
 *    limits CUDA reports as int (shared, constant and local memory of a
 *    kernel or block) stay the 32-bit integers the driver gives. size_t
 *    and uint64_t are both 64 bits on every platform libcumem supports
 *    (LP64).
 *  - cumem_location_t is the one struct passed by value: a frozen plain
 *    value type of two 4-byte fields, with no struct_size; it never changes
 *    (a future kind of location that needs more gets a new type).
 *  - Optional stream arguments ([in][optional] cumem_stream_t*): NULL means
 *    the legacy default stream of the device concerned.
 *  - Thread safety: every function may be called from any thread. Devices,
 *    resources, streams, events, programs and kernels allow all calls
 *    concurrently. A buffer allows concurrent calls except cumem_buffer_close
 *    and cumem_buffer_set_deallocation_stream, which must not race with other
 *    calls on the same buffer.
 *  - Functions that need no GPU (versions, status strings, the host resource
 *    and host buffers) work without a CUDA driver.
 *  - Misuse that is detected (CUMEM_ERROR_INVALID_ARGUMENT with a message
 *    naming the argument, nothing changed): a NULL handle; a handle of
 *    another type (a resource passed as a buffer); a handle used, retained
 *    or released after the caller gave back its last reference, and a
 *    release beyond the caller's references. Handles are slots of memory
 *    libcumem never returns to the system, so checking them reads valid
 *    memory. This holds until the slot is reused by a new object of any
 *    type: from then on the stale handle names that new object (when its
 *    type matches, the call acts on it). Misuse that stays undefined: a
 *    pointer that never was a libcumem handle; racing the last release of
 *    a handle with another call on it; a raw allocation freed with a size
 *    other than its own (a size above the resource's largest allocation
 *    is detected everywhere, every wrong size by the aligned adaptor and
 *    the framework entry points, which keep a record of each allocation);
 *    kernel arguments that do not match the kernel.
 *  - The CUDA driver reports some errors as "sticky": after a kernel fault
 *    (illegal address, trap, assert) the device's context is lost, and every
 *    later call that uses it fails with CUMEM_ERROR_DRIVER whose message says
 *    so; releasing objects still works. The process must exit and start
 *    again to use that device.
 *  - fork(): CUDA does not survive it. In a child forked after this process
 *    made its first CUDA call through libcumem, every call that needs the
 *    driver fails with CUMEM_ERROR_NO_DRIVER ("CUDA cannot be used in a
 *    process forked after CUDA was initialised; use exec or fork first"),
 *    and objects inherited from the parent are released without driver
 *    calls. What needs no driver works in such a child: the host resource
 *    and its adaptors, buffers of host memory (copies and fills with a NULL
 *    stream), the host shared resource and its import, IPC descriptors,
 *    allocation handles and cumem_ipc_send / cumem_ipc_receive. A child
 *    forked before the first CUDA call, or one that execs, uses CUDA as any
 *    process does.
 */
#ifndef CUMEM_CUMEM_H
#define CUMEM_CUMEM_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* Version and export                                                        */
/* ------------------------------------------------------------------------ */

/* The major version is the ABI version: the library file is
 * libcumem.so.<MAJOR>.<MINOR>.<PATCH>, its SONAME libcumem.so.<MAJOR>
 * (docs/ABI.md, "Versions and file names"). */
#define CUMEM_VERSION_MAJOR 1
#define CUMEM_VERSION_MINOR 1
#define CUMEM_VERSION_PATCH 0
/** The library's ABI major, equal to CUMEM_VERSION_MAJOR: the SONAME is libcumem.so.N for N = CUMEM_ABI_VERSION. */
#define CUMEM_ABI_VERSION 1
#define CUMEM_MAKE_VERSION(major, minor, patch) \
  ((major) * 10000 + (minor) * 100 + (patch))
#define CUMEM_VERSION_NUMBER \
  CUMEM_MAKE_VERSION(CUMEM_VERSION_MAJOR, CUMEM_VERSION_MINOR, CUMEM_VERSION_PATCH)

/* Default visibility for the library and for its users alike: a user that
 * builds with -fvisibility=hidden or includes this header under
 * `#pragma GCC visibility push(hidden)` still refers to the library's
 * symbols rather than to hidden ones of its own, which would not link. */
#if defined(__GNUC__) || defined(__clang__)
#define CUMEM_API __attribute__((visibility("default")))
#else
#define CUMEM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Returns CUMEM_VERSION_NUMBER of the library loaded at run time. Never fails. */
CUMEM_API uint32_t cumem_version(void);

/** The function table of cumem_get_api; its members are in cumem/cumem_api.h. */
typedef struct cumem_api_t cumem_api_t;
/** Every other function of this header as one table of function pointers,
 *  for plugins and loaders that do not link libcumem (cumem_api_t and its
 *  PFN_ types are in cumem/cumem_api.h). `version` is the table version
 *  the caller was built against (CUMEM_API_TABLE_VERSION there); the
 *  result stays valid while the library is loaded, and the caller reads
 *  only the members of versions up to its own. NULL for version 0 or a
 *  version newer than this library's (cumem_last_error_message says
 *  which it has). Thread-safe; never allocates. */
CUMEM_API const cumem_api_t* cumem_get_api(uint32_t version);

/* ------------------------------------------------------------------------ */
/* Status, booleans, errors                                                  */
/* ------------------------------------------------------------------------ */

/** A 32-bit boolean, safe across every FFI: 0 is false, anything else true. */
typedef uint32_t cumem_bool_t;
#define CUMEM_FALSE 0u
#define CUMEM_TRUE 1u

/** Status codes. Values are fixed once released. */
typedef enum cumem_status_t {
  CUMEM_SUCCESS = 0,
  /** An argument is NULL, out of its range or inconsistent with another. */
  CUMEM_ERROR_INVALID_ARGUMENT = 1,
  /** A resource could not provide the bytes asked for. */
  CUMEM_ERROR_OUT_OF_MEMORY = 2,
  /** The CUDA driver library could not be loaded or initialised. */
  CUMEM_ERROR_NO_DRIVER = 3,
  /** No CUDA device has the ordinal given (or none exists). */
  CUMEM_ERROR_NO_DEVICE = 4,
  /** The driver or device lacks what the call needs (versions in message). */
  CUMEM_ERROR_NOT_SUPPORTED = 5,
  /** The buffer was closed; only release and cumem_buffer_is_closed remain. */
  CUMEM_ERROR_BUFFER_CLOSED = 6,
  /** Two sizes that must be equal are not (whole-buffer copies). */
  CUMEM_ERROR_SIZE_MISMATCH = 7,
  /** An offset/length region does not lie inside its buffer. */
  CUMEM_ERROR_OUT_OF_RANGE = 8,
  /** A buffer, stream or resource belongs to a device the call cannot use. */
  CUMEM_ERROR_WRONG_DEVICE = 9,
  /** The object is not in a state that allows the call (event never
   *  recorded, timing disabled, ...). */
  CUMEM_ERROR_INVALID_STATE = 10,
  /** Any other error from the CUDA driver; the message names it. */
  CUMEM_ERROR_DRIVER = 11,
  /** NVRTC could not be loaded. */
  CUMEM_ERROR_NO_COMPILER = 12,
  /** Source failed to compile; the message carries the compiler's log. */
  CUMEM_ERROR_COMPILATION = 13,
  /** A named thing (kernel, name expression) does not exist. */
  CUMEM_ERROR_NOT_FOUND = 14,
  /** A launch configuration breaks a device or kernel limit (named). */
  CUMEM_ERROR_INVALID_LAUNCH_CONFIG = 15,
  /** A limit of the system other than memory ran out: file descriptors
   *  (RLIMIT_NOFILE or the system's table), memory mappings; the message
   *  names the limit. Freeing some (closing handles) and calling again can
   *  succeed. (Since 1.1.) */
  CUMEM_ERROR_OUT_OF_RESOURCES = 16,
  /** A bug in libcumem: an unexpected exception was caught. */
  CUMEM_ERROR_INTERNAL = 99,
  CUMEM_STATUS_FORCE32 = 0x7FFFFFFF
} cumem_status_t;

/** The code's name, such as "CUMEM_ERROR_OUT_OF_MEMORY"; "CUMEM_STATUS_UNKNOWN"
 *  for a value not listed. Never NULL, never fails, static storage. */
CUMEM_API const char* cumem_status_string(cumem_status_t status);

/** The message of the last failing call on this thread, or "" if none
 *  failed yet. Valid until the next libcumem call on this thread. */
CUMEM_API const char* cumem_last_error_message(void);

/** The CUDA driver version (such as 13000 for 13.0) into *out_version.
 *  CUMEM_ERROR_NO_DRIVER: libcuda.so.1 (or $CUMEM_LIBCUDA) cannot be loaded. */
CUMEM_API cumem_status_t cumem_driver_version(int32_t* out_version);

/* ------------------------------------------------------------------------ */
/* Objects                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct cumem_device_t cumem_device_t;
typedef struct cumem_stream_t cumem_stream_t;
typedef struct cumem_event_t cumem_event_t;
typedef struct cumem_resource_t cumem_resource_t;
typedef struct cumem_buffer_t cumem_buffer_t;
typedef struct cumem_program_t cumem_program_t;
typedef struct cumem_library_t cumem_library_t;
typedef struct cumem_kernel_t cumem_kernel_t;

/** A memory location: a device, the host, or a host NUMA node. */
typedef enum cumem_location_type_t {
  CUMEM_LOCATION_NONE = 0,
  CUMEM_LOCATION_DEVICE = 1,            /**< id is a device ordinal */
  CUMEM_LOCATION_HOST = 2,              /**< id is ignored */
  CUMEM_LOCATION_HOST_NUMA = 3,         /**< id is a host NUMA node */
  CUMEM_LOCATION_HOST_NUMA_CURRENT = 4, /**< the calling thread's node */
  CUMEM_LOCATION_FORCE32 = 0x7FFFFFFF
} cumem_location_type_t;

/** A location, passed by value. Frozen plain value type: two 4-byte fields,
 *  no struct_size, no padding, never to change (a future location that
 *  needs more gets a new type). The zero value is CUMEM_LOCATION_NONE.
 *  One rule wherever a location is taken (managed preferred location,
 *  prefetch, advice, batch copies' hints): a type the call does not take is
 *  CUMEM_ERROR_INVALID_ARGUMENT; a device ordinal that does not exist is
 *  CUMEM_ERROR_NO_DEVICE; a negative host NUMA node, or one the system does
 *  not have (where Linux lists its nodes in
 *  /sys/devices/system/node/online), is CUMEM_ERROR_INVALID_ARGUMENT naming
 *  the nodes it has. */
typedef struct cumem_location_t {
  cumem_location_type_t type;
  int32_t id;
} cumem_location_t;

/** What a buffer's memory is. Host is 0, the default of
 *  cumem_resource_callbacks_t.memory_kind. */
typedef enum cumem_memory_kind_t {
  CUMEM_MEMORY_HOST = 0,    /**< pageable host memory */
  CUMEM_MEMORY_DEVICE = 1,  /**< device memory */
  CUMEM_MEMORY_PINNED = 2,  /**< page-locked host memory (pool, alloc, registered) */
  CUMEM_MEMORY_MANAGED = 3, /**< unified memory */
  CUMEM_MEMORY_KIND_FORCE32 = 0x7FFFFFFF
} cumem_memory_kind_t;

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */
/* ------------------------------------------------------------------------ */

/** Bits of cumem_device_properties_t.ipc_handle_types. */
#define CUMEM_IPC_HANDLE_POSIX_FD 0x1u
#define CUMEM_IPC_HANDLE_FABRIC 0x8u

typedef struct cumem_device_properties_t {
  uint32_t struct_size;
  int32_t ordinal;
  char name[256];                   /**< NUL-terminated */
  uint8_t uuid[16];
  int32_t compute_capability_major;
  int32_t compute_capability_minor;
  uint64_t total_memory;            /**< bytes */
  int32_t multiprocessor_count;
  cumem_bool_t memory_pools_supported;
  uint32_t ipc_handle_types;        /**< CUMEM_IPC_HANDLE_* bits for pools */
  cumem_bool_t managed_memory;
  cumem_bool_t concurrent_managed_access;
  cumem_bool_t virtual_memory_management;
  int32_t host_numa_id;             /**< -1 where the system has no NUMA */
  int32_t pci_domain_id;
  int32_t pci_bus_id;
  int32_t pci_device_id;
  int32_t max_threads_per_block;
  int32_t max_shared_memory_per_block_optin; /**< bytes */
  cumem_bool_t cluster_launch;
  uint32_t reserved0;               /**< written as 0 */
  /** Fabric handles (CUMEM_IPC_HANDLE_FABRIC: memory shared over
   *  multi-node NVLink through an IMEX channel) work on this device: found
   *  out once per device, the first time it is asked, by creating one
   *  granule of device memory with the FABRIC handle type and exporting it
   *  as a fabric handle (cuMemCreate, cuMemExportToShareableHandle), then
   *  releasing it. CUMEM_FALSE when the driver refuses either
   *  (CUDA_ERROR_NOT_PERMITTED: no IMEX channel, as on the H200s tested;
   *  CUDA_ERROR_NOT_SUPPORTED), when the device reports no fabric handles
   *  or no virtual memory management, and when the probe ran out of memory
   *  (that answer is not kept: the next call asks again). libcumem never
   *  makes a memory pool with the FABRIC handle type. (Since 1.1.) */
  cumem_bool_t fabric_export_supported;
  /** The device's memory can be exported as dma-buf file descriptors
   *  (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED; cumem_buffer_get_dmabuf).
   *  (Since 1.1.) */
  cumem_bool_t dma_buf_supported;
} cumem_device_properties_t;

#define CUMEM_DEVICE_PROPERTIES_INIT                                        \
  { (uint32_t)sizeof(cumem_device_properties_t), 0, {0}, {0}, 0, 0, 0u, 0, \
    0u, 0u, 0u, 0u, 0u, 0, 0, 0, 0, 0, 0, 0u, 0u, 0u, 0u }

/** Number of CUDA devices into *out_count (0 when the driver sees none).
 *  CUMEM_ERROR_NO_DRIVER: the driver cannot be loaded; out_count untouched. */
CUMEM_API cumem_status_t cumem_device_count(int32_t* out_count);

/** The device of `ordinal`, with its primary context retained until the last
 *  libcumem object of that device is released. Repeated calls return the
 *  same handle (one more reference each).
 *  CUMEM_ERROR_NO_DEVICE: ordinal < 0 or >= cumem_device_count().
 *  CUMEM_ERROR_NO_DRIVER, CUMEM_ERROR_DRIVER: as their names say. */
CUMEM_API cumem_status_t cumem_device_get(int32_t ordinal,
                                          cumem_device_t** out_device);
/** One more reference to a device the caller holds. Retain and release of
 *  every object type follow the rules at the top: CUMEM_ERROR_INVALID_ARGUMENT
 *  for a handle the caller no longer holds (or another type); release(NULL)
 *  is CUMEM_SUCCESS. The device's primary context is released with the last
 *  reference libcumem or the caller holds. */
CUMEM_API cumem_status_t cumem_device_retain(cumem_device_t* device);
CUMEM_API cumem_status_t cumem_device_release(cumem_device_t* device);

/** [in] device; [out] *out_ordinal. */
CUMEM_API cumem_status_t cumem_device_ordinal(const cumem_device_t* device,
                                              int32_t* out_ordinal);

/** [in] device; [in,out] props: set props->struct_size first (or use
 *  CUMEM_DEVICE_PROPERTIES_INIT); the struct_size rules at the top apply. */
CUMEM_API cumem_status_t cumem_device_get_properties(
    const cumem_device_t* device, cumem_device_properties_t* props);

/** Any CUdevice_attribute by its numeric value, into *out_value.
 *  CUMEM_ERROR_DRIVER: the driver does not know the attribute. */
CUMEM_API cumem_status_t cumem_device_get_attribute(const cumem_device_t* device,
                                                    int32_t attribute,
                                                    int32_t* out_value);

/** Makes the device's primary context current on the calling thread (so
 *  that code using the CUDA runtime or driver directly sees this device). */
CUMEM_API cumem_status_t cumem_device_set_current(const cumem_device_t* device);

/** Waits for all work on the device to finish. The driver refuses this
 *  (CUMEM_ERROR_DRIVER) while any stream of the device is capturing a CUDA
 *  graph, and invalidates that capture: wait for streams instead. */
CUMEM_API cumem_status_t cumem_device_synchronize(const cumem_device_t* device);

/** Free and total device memory in bytes (cuMemGetInfo). */
CUMEM_API cumem_status_t cumem_device_memory_info(const cumem_device_t* device,
                                                  uint64_t* out_free,
                                                  uint64_t* out_total);

/** Whether `device` can access memory of `peer` directly.
 *  A device can never "access" itself as a peer: *out is false then. */
CUMEM_API cumem_status_t cumem_device_can_access_peer(
    const cumem_device_t* device, const cumem_device_t* peer,
    cumem_bool_t* out_can_access);

/** Lets kernels and copies of `device` reach memory allocated with
 *  cuMemAlloc/cuMemHostAlloc-style calls on `peer` (cuCtxEnablePeerAccess).
 *  Enabling twice is fine. For pool memory use
 *  cumem_resource_pool_set_access.
 *  CUMEM_ERROR_INVALID_ARGUMENT: device == peer.
 *  CUMEM_ERROR_NOT_SUPPORTED: the pair cannot access each other. */
CUMEM_API cumem_status_t cumem_device_enable_peer_access(
    const cumem_device_t* device, const cumem_device_t* peer);

/** Stream priorities valid on the device: greatest is the highest priority
 *  and is numerically lowest (e.g. least 0, greatest -5). */
CUMEM_API cumem_status_t cumem_device_stream_priority_range(
    const cumem_device_t* device, int32_t* out_least, int32_t* out_greatest);

/* The device's memory resource (cuda.core's Device.memory_resource, RMM's
 * get_current_device_resource / set_current_device_resource): the resource
 * libcumem uses for the device unless a call is told otherwise. Who uses it:
 * cumem_device_allocate; the framework allocator entry points (cumem_torch_alloc,
 * cumem_cupy_malloc) unless cumem_framework_set_resource or
 * CUMEM_FRAMEWORK_RESOURCE chooses another; the Python package's
 * Device.allocate and its torch and CuPy hook-ups; the memory_ops examples.
 * Until one is set, and again after cumem_device_set_memory_resource(device,
 * NULL), it is the device's default resource: a device resource over the
 * device's default memory pool (what cumem_device_resource_create makes with
 * default options; synchronous cuMemAlloc on devices without memory pools),
 * made on first use and then the same object for the life of the process
 * (it keeps the device's primary context retained from then on). */

/** The device's memory resource (a new reference, which the caller
 *  releases). Makes the default resource on first use. Thread-safe.
 *  [in] device; [out] out_resource.
 *  CUMEM_ERROR_NOT_SUPPORTED or CUMEM_ERROR_DRIVER: the default resource
 *  cannot be made (the driver's error is in the message). */
CUMEM_API cumem_status_t cumem_device_get_memory_resource(const cumem_device_t* device,
                                                          cumem_resource_t** out_resource);
/** Makes `resource` the device's memory resource (retained until replaced);
 *  NULL goes back to the device's default resource (the same object each
 *  time). Buffers allocated before stay with the resource that made them.
 *  Thread-safe; a call racing with cumem_device_get_memory_resource on
 *  another thread gives that thread the old or the new resource.
 *  [in] device; [in][optional] resource.
 *  CUMEM_ERROR_INVALID_ARGUMENT: a resource whose memory the device cannot
 *  access (properties.device_accessible false: the host resource, a host
 *  shared resource, a callback resource of host memory), because the
 *  device's memory resource is handed to kernels (PyTorch's and CuPy's
 *  included); an imported resource (properties.is_imported), which cannot
 *  allocate. CUMEM_ERROR_WRONG_DEVICE: the resource's memory belongs to
 *  another device (properties.device_id is neither -1 nor the device's
 *  ordinal). Nothing changes on failure. */
CUMEM_API cumem_status_t cumem_device_set_memory_resource(const cumem_device_t* device,
                                                          cumem_resource_t* resource);
/** Allocates `size` bytes from the device's memory resource, ordered on
 *  `stream` (cuda.core's Device.allocate): the same as
 *  cumem_resource_allocate on the resource cumem_device_get_memory_resource
 *  returns, with its errors. [in] device; [in][optional] stream; [out]
 *  out_buffer. Thread-safe. */
CUMEM_API cumem_status_t cumem_device_allocate(const cumem_device_t* device, size_t size,
                                               const cumem_stream_t* stream,
                                               cumem_buffer_t** out_buffer);

/* ------------------------------------------------------------------------ */
/* Streams                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum cumem_priority_mode_t {
  /** Out-of-range priorities are clamped into the device's range. */
  CUMEM_PRIORITY_CLAMP = 0,
  /** Out-of-range priorities are CUMEM_ERROR_INVALID_ARGUMENT. */
  CUMEM_PRIORITY_REJECT = 1,
  CUMEM_PRIORITY_MODE_FORCE32 = 0x7FFFFFFF
} cumem_priority_mode_t;

typedef struct cumem_stream_options_t {
  uint32_t struct_size;
  /** Synchronises with the legacy default stream (CU_STREAM_DEFAULT), as
   *  cudaStreamCreate's streams do. Default false: the stream is
   *  non-blocking (CU_STREAM_NON_BLOCKING). */
  cumem_bool_t blocking;
  /** Default 0 (lowest). Lower numbers are higher priorities. */
  int32_t priority;
  cumem_priority_mode_t priority_mode; /**< Default (0) CUMEM_PRIORITY_CLAMP. */
} cumem_stream_options_t;

#define CUMEM_STREAM_OPTIONS_INIT \
  { (uint32_t)sizeof(cumem_stream_options_t), CUMEM_FALSE, 0, CUMEM_PRIORITY_CLAMP }
CUMEM_API void cumem_stream_options_init(cumem_stream_options_t* options);

/** A new stream on `device`, owned by the handle (destroyed on last release).
 *  [in][optional] options.
 *  CUMEM_ERROR_INVALID_ARGUMENT: priority out of range with
 *  CUMEM_PRIORITY_REJECT (the message gives the valid range), bad
 *  struct_size or priority_mode. */
CUMEM_API cumem_status_t cumem_stream_create(const cumem_device_t* device,
                                             const cumem_stream_options_t* options,
                                             cumem_stream_t** out_stream);

/** Wraps a CUstream created elsewhere; the handle never destroys it, and the
 *  caller keeps it valid while the handle lives. `native_stream` must belong
 *  to `device` (checked where the driver can tell: CUMEM_ERROR_WRONG_DEVICE).
 *  NULL native_stream is CUMEM_ERROR_INVALID_ARGUMENT: use
 *  cumem_stream_legacy_default. */
CUMEM_API cumem_status_t cumem_stream_wrap(const cumem_device_t* device,
                                           void* native_stream,
                                           cumem_stream_t** out_stream);

/** The device's legacy default stream (CU_STREAM_LEGACY). */
CUMEM_API cumem_status_t cumem_stream_legacy_default(const cumem_device_t* device,
                                                     cumem_stream_t** out_stream);
/** The per-thread default stream (CU_STREAM_PER_THREAD). The handle stands
 *  for whichever thread uses it: work queued through it from thread A goes
 *  to A's per-thread stream, from thread B to B's, so one handle shared by
 *  two threads orders nothing between them. */
CUMEM_API cumem_status_t cumem_stream_per_thread_default(
    const cumem_device_t* device, cumem_stream_t** out_stream);

CUMEM_API cumem_status_t cumem_stream_retain(cumem_stream_t* stream);
CUMEM_API cumem_status_t cumem_stream_release(cumem_stream_t* stream);

/** The CUstream, as void*. Borrowed: valid while the handle lives. */
CUMEM_API cumem_status_t cumem_stream_native(const cumem_stream_t* stream,
                                             void** out_native);
/** The stream's device (a new reference). */
CUMEM_API cumem_status_t cumem_stream_device(const cumem_stream_t* stream,
                                             cumem_device_t** out_device);
/** The stream's priority (after clamping). */
CUMEM_API cumem_status_t cumem_stream_priority(const cumem_stream_t* stream,
                                               int32_t* out_priority);
/** Blocks until all work queued on the stream has finished.
 *  CUMEM_ERROR_INVALID_STATE: the stream is capturing a CUDA graph (its
 *  work runs when the graph is launched), or it is the legacy default
 *  stream while a blocking stream of its device captures; asked before
 *  waiting, so the capture stays valid. */
CUMEM_API cumem_status_t cumem_stream_synchronize(const cumem_stream_t* stream);
/** *out_done = whether all queued work has finished (never blocks).
 *  CUMEM_ERROR_INVALID_STATE: as for cumem_stream_synchronize. */
CUMEM_API cumem_status_t cumem_stream_query(const cumem_stream_t* stream,
                                            cumem_bool_t* out_done);
/** How a capture treats unsafe calls from other threads (CUstreamCaptureMode). */
typedef enum cumem_capture_mode_t {
  CUMEM_CAPTURE_MODE_GLOBAL = 0,
  CUMEM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CUMEM_CAPTURE_MODE_RELAXED = 2
} cumem_capture_mode_t;
/** Begins capturing the work queued on `stream` into a CUDA graph
 *  (cuStreamBeginCapture). Begin captures here rather than with the driver
 *  when a caching adaptor may serve the stream: it refuses allocations and
 *  frees on a capturing stream only for captures it knows of. Every other
 *  resource sees any capture (see "CUDA graphs" below).
 *  CUMEM_ERROR_INVALID_ARGUMENT: an unknown mode; the driver's error when
 *  the stream cannot capture (the legacy default stream, or capturing
 *  already). */
CUMEM_API cumem_status_t cumem_stream_begin_capture(const cumem_stream_t* stream,
                                                    cumem_capture_mode_t mode);
/** Ends the capture begun on `stream`: *out_graph = the CUgraph, which the
 *  caller destroys (cuGraphDestroy), or instantiates with
 *  cumem_graph_instantiate. The capture ends even when the driver reports
 *  it invalidated (CUMEM_ERROR_DRIVER; *out_graph NULL).
 *  cumem_stream_end_capture_graph ends it into a cumem_graph_t instead,
 *  which owns the graph. */
CUMEM_API cumem_status_t cumem_stream_end_capture(const cumem_stream_t* stream,
                                                  void** out_graph);
/** Work queued on `stream` after this waits for the last record of `event`
 *  (an event never recorded is complete: the wait is a no-op). */
CUMEM_API cumem_status_t cumem_stream_wait_event(const cumem_stream_t* stream,
                                                 const cumem_event_t* event);
/** Work queued on `stream` after this waits for all work queued on `other`
 *  so far. Both may belong to different devices. */
CUMEM_API cumem_status_t cumem_stream_wait_stream(const cumem_stream_t* stream,
                                                  const cumem_stream_t* other);

/* ------------------------------------------------------------------------ */
/* CUDA graphs: capture status, executable graphs, graph memory             */
/* ------------------------------------------------------------------------ */
/*
 * libcumem asks the driver whether a stream captures, so it sees every
 * capture: begun with cumem_stream_begin_capture, with the driver or the
 * runtime directly, by PyTorch or CuPy, in any mode, and streams joined to
 * a capture through events (they report the capture's id). What each kind
 * does on a stream that is capturing:
 *  - Pools (device, pinned, managed pool resources): an allocation on a
 *    capturing stream becomes a graph allocation node and a free of that
 *    memory on a capturing stream a graph free node (the driver's graph
 *    memory: the graph owns it; its address stays the same over every
 *    launch). Memory allocated outside a capture cannot be freed by a graph:
 *    such a free on a capturing stream is refused by the driver, which also
 *    invalidates the capture (CUMEM_ERROR_DRIVER, whose message says so):
 *    free it on a stream that does not capture. Graph memory may be freed
 *    on a stream that does not capture once the graph ran.
 *  - Synchronous kinds (host, legacy pinned, legacy device, managed without
 *    a pool, host shared): an allocation is made at once, as always (not
 *    captured: the memory is the caller's until freed, and the graph may
 *    use it). A free on a capturing stream is refused with
 *    CUMEM_ERROR_INVALID_STATE before any driver call (nothing freed, the
 *    capture stays valid): there is no work to wait for, and the memory must
 *    outlive the graph. A free with no stream is refused the same way while
 *    a blocking stream (created with options.blocking) of the device
 *    captures, since the legacy default stream cannot be waited for then.
 *  - Adaptors (limit, aligned, tracking, logging) do what their upstream
 *    does; a refused free leaves them as they were (nothing freed, the
 *    allocation still theirs). A callback resource's callbacks get the
 *    capturing stream and decide.
 *  - The graph memory resource (below) allocates only on capturing streams.
 *  - Buffers: cumem_buffer_close follows its resource; a refused close leaves
 *    the buffer open (close it later, or release it). Closing memory that
 *    has no resource (wrapped, registered, imported DLPack tensors) waits
 *    for its stream first, so it is refused on a capturing stream. A last
 *    release whose deallocation stream captures cannot report: the memory
 *    of a synchronous kind then stays allocated (reported in the log at
 *    warning). Copies and fills of pageable host memory on both sides wait
 *    for the stream, so they are refused on a capturing stream.
 *  - Streams and events: cumem_stream_synchronize and cumem_stream_query of
 *    a capturing stream are CUMEM_ERROR_INVALID_STATE (asked first; the
 *    capture stays valid).
 *  - Driver calls that the driver treats as unsafe while any stream
 *    captures in global mode (synchronous allocations and frees, pool
 *    attributes and trims, stream and event synchronisation, instantiating
 *    and destroying graphs) are made in relaxed capture mode
 *    (cuThreadExchangeStreamCaptureMode, as PyTorch's allocator does): they
 *    never invalidate another thread's capture, and work on a thread that
 *    captures itself. The driver still refuses a device-wide wait
 *    (cumem_device_synchronize) while any stream of the device captures.
 * Cost: asking whether a stream captures is no driver call for the legacy
 * default stream (NULL), which cannot capture, and one call otherwise
 * (bench/bench_capture times it).
 */

/** The capture status of a stream (CUstreamCaptureStatus). */
typedef enum cumem_capture_status_t {
  CUMEM_CAPTURE_STATUS_NONE = 0,        /**< not capturing */
  CUMEM_CAPTURE_STATUS_ACTIVE = 1,      /**< capturing */
  /** Capturing, but an error invalidated the capture: it must still be
   *  ended (cumem_stream_end_capture) on the stream that began it. */
  CUMEM_CAPTURE_STATUS_INVALIDATED = 2,
  CUMEM_CAPTURE_STATUS_FORCE32 = 0x7FFFFFFF
} cumem_capture_status_t;

typedef struct cumem_capture_info_t {
  uint32_t struct_size;
  cumem_capture_status_t status;
  /** The capture's id, unique over the process's life for each capture
   *  sequence (streams joined to a capture through events report its
   *  id); 0 unless status is CUMEM_CAPTURE_STATUS_ACTIVE. */
  uint64_t id;
} cumem_capture_info_t;
#define CUMEM_CAPTURE_INFO_INIT \
  { (uint32_t)sizeof(cumem_capture_info_t), CUMEM_CAPTURE_STATUS_NONE, 0u }

/** Whether `stream` ([in][optional]) captures now, whoever began the
 *  capture, and the capture's id (cuStreamGetCaptureInfo). NULL and the
 *  legacy default stream cannot capture: status NONE, without a driver
 *  call. [in,out] info: set info->struct_size first (CUMEM_CAPTURE_INFO_INIT).
 *  Thread-safe.
 *  CUMEM_ERROR_NOT_SUPPORTED: the stream captures and the driver cannot
 *  tell the capture's id (cuStreamGetCaptureInfo needs CUDA 12.3+); a driver
 *  without capture at all reports NONE. */
CUMEM_API cumem_status_t cumem_stream_get_capture_info(const cumem_stream_t* stream,
                                                       cumem_capture_info_t* info);

/** An executable CUDA graph (CUgraphExec) of one device, reference counted
 *  like every object: the last release destroys it (and the CUgraph it
 *  owns); launches still queued finish first. */
typedef struct cumem_graph_t cumem_graph_t;

typedef struct cumem_graph_options_t {
  uint32_t struct_size;
  /** Each launch first frees the memory that the graph's previous launch
   *  allocated and did not free (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
   *  as PyTorch instantiates its graphs. Default false: a graph whose
   *  allocations outlive it cannot be launched again until they are freed
   *  (the launch fails with CUMEM_ERROR_DRIVER). */
  cumem_bool_t auto_free_on_launch;
  /** Kernel nodes keep the stream priority they were captured with
   *  (CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY). Default false. */
  cumem_bool_t use_node_priority;
} cumem_graph_options_t;
#define CUMEM_GRAPH_OPTIONS_INIT \
  { (uint32_t)sizeof(cumem_graph_options_t), CUMEM_FALSE, CUMEM_FALSE }
CUMEM_API void cumem_graph_options_init(cumem_graph_options_t* options);

/** Ends the capture begun on `stream` (with cumem_stream_begin_capture, or
 *  with the driver: any capture begun on that stream) and instantiates the
 *  captured graph for the stream's device: *out_graph owns both the graph
 *  and its executable. [in][optional] options. The capture ends whatever
 *  fails, and on failure nothing is left to destroy. A capture begun in a
 *  mode other than CUMEM_CAPTURE_MODE_RELAXED must be ended on the thread
 *  that began it (the driver's rule). Thread-safe.
 *  CUMEM_ERROR_DRIVER: the capture was invalidated (the message names the
 *  driver's error), the stream was not capturing, or instantiation failed
 *  (a graph that frees memory allocated outside it, ...). */
CUMEM_API cumem_status_t cumem_stream_end_capture_graph(const cumem_stream_t* stream,
                                                        const cumem_graph_options_t* options,
                                                        cumem_graph_t** out_graph);
/** Instantiates `native_graph` (a CUgraph, as void*: from
 *  cumem_stream_end_capture or built with the driver) for `device`. The
 *  CUgraph stays the caller's (the executable does not need it: it may be
 *  destroyed once this returns). [in][optional] options. Thread-safe, but
 *  the driver does not allow the same CUgraph to be used by two threads at
 *  once. CUMEM_ERROR_INVALID_ARGUMENT: native_graph NULL.
 *  CUMEM_ERROR_DRIVER: the driver cannot instantiate it (a graph with
 *  memory nodes already instantiated elsewhere, ...). */
CUMEM_API cumem_status_t cumem_graph_instantiate(const cumem_device_t* device, void* native_graph,
                                                 const cumem_graph_options_t* options,
                                                 cumem_graph_t** out_graph);
CUMEM_API cumem_status_t cumem_graph_retain(cumem_graph_t* graph);
CUMEM_API cumem_status_t cumem_graph_release(cumem_graph_t* graph);
/** Enqueues one run of the graph on `stream` ([in][optional]: NULL is the
 *  legacy default stream of the graph's device). Thread-safe: launches of
 *  one graph from several threads are serialised.
 *  CUMEM_ERROR_WRONG_DEVICE: the stream belongs to another device.
 *  CUMEM_ERROR_DRIVER: the launch failed (a graph whose allocations from
 *  its last launch are still live, without auto_free_on_launch, ...). */
CUMEM_API cumem_status_t cumem_graph_launch(cumem_graph_t* graph, const cumem_stream_t* stream);
/** Uploads the graph's work to the device on `stream` ([in][optional]), so
 *  that its first launch starts sooner. Errors as cumem_graph_launch. */
CUMEM_API cumem_status_t cumem_graph_upload(cumem_graph_t* graph, const cumem_stream_t* stream);
/** The CUgraphExec, as void*. Borrowed: valid while the handle lives. */
CUMEM_API cumem_status_t cumem_graph_native(const cumem_graph_t* graph, void** out_native);
/** The id of the capture the graph was ended from (the id
 *  cumem_stream_get_capture_info reported during it), by which memory
 *  assigned to that capture is told apart; 0 for a graph from
 *  cumem_graph_instantiate, or where the driver cannot tell ids (before
 *  CUDA 12.3). Thread-safe. */
CUMEM_API cumem_status_t cumem_graph_capture_id(const cumem_graph_t* graph, uint64_t* out_id);

/** A graph memory resource of `device` (cuda.core's GraphMemoryResource):
 *  allocations only on a stream that is capturing, each one a graph
 *  allocation node (cuMemAllocAsync under capture), so that the graph owns
 *  the memory and no work outside it can be handed that memory while the
 *  graph may run. Frees are stream-ordered (cuMemFreeAsync): a graph free
 *  node on a capturing stream, or a free of graph memory after the graph
 *  ran on a stream that does not capture. Properties: kind
 *  CUMEM_RESOURCE_GRAPH_MEMORY, device memory, stream-ordered, not a pool.
 *  Its statistics count the allocations made through it. Every graph
 *  memory resource of a device shares the device's graph memory (the
 *  attributes and trim below). Allocating:
 *  CUMEM_ERROR_INVALID_STATE on a stream that does not capture (NULL, the
 *  legacy default stream, never captures) or whose capture was
 *  invalidated; CUMEM_ERROR_WRONG_DEVICE on another device's stream.
 *  Creating: CUMEM_ERROR_NOT_SUPPORTED on a device without memory pools. */
CUMEM_API cumem_status_t cumem_graph_memory_resource_create(const cumem_device_t* device,
                                                            cumem_resource_t** out_resource);

/** The device's graph memory (cuDeviceGetGraphMemAttribute). */
typedef struct cumem_graph_memory_attributes_t {
  uint32_t struct_size;
  uint32_t reserved0;            /**< written as 0 */
  uint64_t reserved_mem_current; /**< bytes the graph allocator holds from the system */
  uint64_t reserved_mem_high;    /**< highest reserved_mem_current since the last reset */
  uint64_t used_mem_current;     /**< bytes that graph allocations hold */
  uint64_t used_mem_high;        /**< highest used_mem_current since the last reset */
} cumem_graph_memory_attributes_t;
#define CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT \
  { (uint32_t)sizeof(cumem_graph_memory_attributes_t), 0u, 0u, 0u, 0u, 0u }

/* The three calls below: CUMEM_ERROR_NOT_SUPPORTED when `resource` is not a
 * graph memory resource. Thread-safe. */

/** The graph memory of the resource's device. [in,out] attributes: set
 *  attributes->struct_size first. */
CUMEM_API cumem_status_t cumem_graph_memory_resource_get_attributes(
    const cumem_resource_t* resource, cumem_graph_memory_attributes_t* attributes);
/** Gives the device's graph memory that no graph holds (executing, queued
 *  or keeping allocations live) back to the system (cuDeviceGraphMemTrim). */
CUMEM_API cumem_status_t cumem_graph_memory_resource_trim(cumem_resource_t* resource);
/** Sets reserved_mem_high and used_mem_high to their current values. */
CUMEM_API cumem_status_t cumem_graph_memory_resource_reset_highs(cumem_resource_t* resource);

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct cumem_event_options_t {
  uint32_t struct_size;
  cumem_bool_t enable_timing; /**< Default false (faster when false). */
  cumem_bool_t blocking_sync; /**< Synchronize sleeps instead of spinning. */
  /** Can be shared with other processes (cumem_event_get_ipc_handle);
   *  needs enable_timing false. Default false. */
  cumem_bool_t interprocess;
} cumem_event_options_t;

#define CUMEM_EVENT_OPTIONS_INIT \
  { (uint32_t)sizeof(cumem_event_options_t), CUMEM_FALSE, CUMEM_FALSE, CUMEM_FALSE }
CUMEM_API void cumem_event_options_init(cumem_event_options_t* options);

/** [in][optional] options. */
CUMEM_API cumem_status_t cumem_event_create(const cumem_device_t* device,
                                            const cumem_event_options_t* options,
                                            cumem_event_t** out_event);
CUMEM_API cumem_status_t cumem_event_retain(cumem_event_t* event);
CUMEM_API cumem_status_t cumem_event_release(cumem_event_t* event);

/** Records the event on `stream` ([in][optional]: NULL is the legacy
 *  default stream of the event's device).
 *  CUMEM_ERROR_WRONG_DEVICE: the stream belongs to another device. */
CUMEM_API cumem_status_t cumem_event_record(const cumem_event_t* event,
                                            const cumem_stream_t* stream);
/** Blocks until the last recorded work has finished (at once if never
 *  recorded). */
CUMEM_API cumem_status_t cumem_event_synchronize(const cumem_event_t* event);
/** *out_done = whether the recorded work has finished. */
CUMEM_API cumem_status_t cumem_event_query(const cumem_event_t* event,
                                           cumem_bool_t* out_done);
/** Milliseconds between two recorded, completed events.
 *  CUMEM_ERROR_INVALID_STATE: either event was created without timing, was
 *  never recorded, or has not completed yet (the message says which). */
CUMEM_API cumem_status_t cumem_event_elapsed_ms(const cumem_event_t* start,
                                                const cumem_event_t* end,
                                                float* out_ms);
/** The CUevent, as void*. Borrowed. */
CUMEM_API cumem_status_t cumem_event_native(const cumem_event_t* event,
                                            void** out_native);

/* ------------------------------------------------------------------------ */
/* Memory resources                                                          */
/* ------------------------------------------------------------------------ */

typedef enum cumem_resource_kind_t {
  CUMEM_RESOURCE_HOST = 1,          /**< pageable host memory, no driver needed */
  CUMEM_RESOURCE_DEVICE = 2,        /**< stream-ordered device cuMemPool */
  CUMEM_RESOURCE_PINNED = 3,        /**< stream-ordered host-located pinned pool */
  CUMEM_RESOURCE_LEGACY_PINNED = 4, /**< cuMemHostAlloc */
  CUMEM_RESOURCE_MANAGED = 5,       /**< unified (managed) memory */
  CUMEM_RESOURCE_LIMIT = 6,         /**< limit adaptor over another resource */
  CUMEM_RESOURCE_LEGACY_DEVICE = 7, /**< cuMemAlloc; shares buffers by legacy IPC */
  CUMEM_RESOURCE_HOST_SHARED = 8,   /**< host memory shareable between processes (memfd) */
  CUMEM_RESOURCE_CACHING = 9,       /**< caching adaptor over another resource */
  CUMEM_RESOURCE_TRACKING = 10,     /**< tracking adaptor (outstanding allocations) */
  CUMEM_RESOURCE_LOGGING = 11,      /**< logging adaptor (a CSV line per operation) */
  CUMEM_RESOURCE_CALLBACK = 12,     /**< made of user callbacks */
  CUMEM_RESOURCE_ALIGNED = 13,      /**< aligned adaptor over another resource */
  CUMEM_RESOURCE_VIRTUAL = 14,      /**< virtual memory: growable buffers (cuMemCreate, cuMemMap) */
  CUMEM_RESOURCE_GRAPH_MEMORY = 15, /**< graph memory: allocations inside captures only */
  CUMEM_RESOURCE_FAILURE_CALLBACK = 16, /**< failure-callback adaptor (a hook on out of memory) */
  CUMEM_RESOURCE_KIND_FORCE32 = 0x7FFFFFFF
} cumem_resource_kind_t;

typedef struct cumem_resource_properties_t {
  uint32_t struct_size;
  cumem_resource_kind_t kind;
  cumem_bool_t device_accessible;
  cumem_bool_t host_accessible;
  int32_t device_id;     /**< -1 where the memory is not tied to a device */
  cumem_bool_t is_stream_ordered; /**< allocation and free follow the stream */
  cumem_bool_t is_pool;  /**< cumem_resource_pool_* calls apply */
  /** Buffers can be shared with other processes
   *  (cumem_buffer_get_ipc_descriptor). */
  cumem_bool_t ipc_enabled;
  /** Imported from another process (cumem_resource_from_allocation_handle):
   *  it opens descriptors but cannot allocate. */
  cumem_bool_t is_imported;
} cumem_resource_properties_t;

#define CUMEM_RESOURCE_PROPERTIES_INIT \
  { (uint32_t)sizeof(cumem_resource_properties_t), (cumem_resource_kind_t)0, 0u, 0u, 0, 0u, 0u, 0u, 0u }

/** Kept by every resource (an adaptor counts what goes through it). Bytes
 *  are the sizes asked for, not what the resource rounds them up to. A
 *  stream-ordered free counts when it is enqueued, not when the stream
 *  reaches it. Each thread counts in counters of its own (no shared atomic
 *  on the common path), so a read is exact whenever no allocation or free
 *  is in flight. Read together: peak_bytes_in_use is never below
 *  bytes_in_use, and every read raises the peak to the bytes in use it
 *  finds. The peak is exact while every allocation and free happens on one
 *  thread; with several threads it is never above the true peak and may
 *  miss it, for each other thread that allocates or frees, by up to 2 MiB
 *  or twice the largest allocation the resource has made, whichever is
 *  more, and at most 256 MiB. Allocations of size 0 (which hold no memory
 *  and give NULL) are not counted. Reading costs a few cache lines (the
 *  counters of the threads that used the resource): poll it freely. */
typedef struct cumem_resource_statistics_t {
  uint32_t struct_size;
  uint32_t reserved0;
  uint64_t bytes_in_use;       /**< bytes allocated and not yet freed */
  uint64_t peak_bytes_in_use;  /**< highest bytes_in_use since creation/reset */
  uint64_t live_allocations;   /**< allocations not yet freed */
  uint64_t total_allocations;  /**< allocations ever made */
} cumem_resource_statistics_t;

#define CUMEM_RESOURCE_STATISTICS_INIT \
  { (uint32_t)sizeof(cumem_resource_statistics_t), 0u, 0u, 0u, 0u, 0u }

typedef struct cumem_host_resource_options_t {
  uint32_t struct_size;
  uint32_t reserved0; /**< must be 0 */
  /** Power of two from sizeof(void*) to 2 MiB (2097152), or 0 (default):
   *  64. */
  uint64_t alignment;
} cumem_host_resource_options_t;
#define CUMEM_HOST_RESOURCE_OPTIONS_INIT \
  { (uint32_t)sizeof(cumem_host_resource_options_t), 0u, 0u }
CUMEM_API void cumem_host_resource_options_init(cumem_host_resource_options_t* o);

/** Options of the device and pinned kinds (the managed kind takes
 *  cumem_managed_resource_options_t). */
typedef struct cumem_pool_options_t {
  uint32_t struct_size;
  /** Create a new pool. Default false: use the device's (pinned kind: the
   *  host location's) default pool, and then max_size and ipc_enabled must
   *  be 0. */
  cumem_bool_t new_pool;
  /** Bytes the pool keeps reserved after frees; each synchronisation
   *  returns memory above it to the system. 0 (default): keep everything
   *  (the driver's threshold is set to UINT64_MAX). To return every unused
   *  byte at each synchronisation (the driver's threshold 0), set
   *  release_all_unused instead. */
  uint64_t release_threshold;
  /** New pools only; 0 = no limit. The most bytes the pool's allocations
   *  may hold at once (their requested sizes, as bytes_in_use counts them):
   *  libcumem refuses an allocation that would pass it with
   *  CUMEM_ERROR_OUT_OF_MEMORY naming max_size, and the statistics do not
   *  change. The driver is given the limit too for what it reserves, which
   *  it rounds up to its own granularity (2 MiB on an H200), so the pool's
   *  reserved memory may pass max_size by less than one granule. */
  uint64_t max_size;
  /** New pools only: allocations can be shared with other processes
   *  through POSIX file descriptors. Default false. */
  cumem_bool_t ipc_enabled;
  /** The pool keeps nothing reserved: every unused byte goes back to the
   *  system at each synchronisation (the driver's release threshold 0).
   *  Default false. release_threshold must then be 0. */
  cumem_bool_t release_all_unused;
  /** Pinned kind: place the pool on host NUMA node host_numa_id (>= 0, a
   *  node the system has: cumem_device_properties_t.host_numa_id is the
   *  device's nearest). Default false: any node (an IPC-enabled pinned pool
   *  takes the device's nearest node), and host_numa_id must be 0. The
   *  device kind refuses it. */
  cumem_bool_t use_host_numa_id;
  int32_t host_numa_id; /**< read only with use_host_numa_id */
} cumem_pool_options_t;
#define CUMEM_POOL_OPTIONS_INIT \
  { (uint32_t)sizeof(cumem_pool_options_t), CUMEM_FALSE, 0u, 0u, CUMEM_FALSE, CUMEM_FALSE, \
    CUMEM_FALSE, 0 }
CUMEM_API void cumem_pool_options_init(cumem_pool_options_t* options);

typedef struct cumem_managed_resource_options_t {
  uint32_t struct_size;
  /** Where the memory prefers to live: CUMEM_LOCATION_NONE (default),
   *  _DEVICE, _HOST or _HOST_NUMA. */
  cumem_location_t preferred_location;
  /** Allocate with cuMemAllocManaged even where the driver has a managed
   *  cuMemPool. Default false: use the managed pool where the driver has one
   *  (CUDA 13+), else cuMemAllocManaged. */
  cumem_bool_t disable_pool;
} cumem_managed_resource_options_t;
#define CUMEM_MANAGED_RESOURCE_OPTIONS_INIT \
  { (uint32_t)sizeof(cumem_managed_resource_options_t), { CUMEM_LOCATION_NONE, 0 }, CUMEM_FALSE }
CUMEM_API void cumem_managed_resource_options_init(
    cumem_managed_resource_options_t* options);

/** Aligned pageable host memory (aligned_alloc). Works with no driver.
 *  Stream arguments on its buffers are honoured when given: the call waits
 *  for the stream before touching the memory; with no stream nothing is
 *  waited for (the host resource has no device).
 *  CUMEM_ERROR_INVALID_ARGUMENT: alignment neither 0 nor a power of two
 *  from 8 to 2 MiB, reserved0 not 0. */
CUMEM_API cumem_status_t cumem_host_resource_create(
    const cumem_host_resource_options_t* options, cumem_resource_t** out_resource);

/** Stream-ordered device memory from a cuMemPool of `device`: its default
 *  pool (release threshold raised as the options say) or a new pool.
 *  Devices without memory pools fall back to synchronous cuMemAlloc (then
 *  is_pool is false and frees wait for the stream).
 *  CUMEM_ERROR_INVALID_ARGUMENT: max_size or ipc_enabled with the default
 *  pool (new_pool false), release_all_unused with a release_threshold,
 *  use_host_numa_id (the device kind has no host node), host_numa_id not 0.
 *  CUMEM_ERROR_NOT_SUPPORTED: ipc_enabled where the device cannot export
 *  POSIX file descriptors. */
CUMEM_API cumem_status_t cumem_device_resource_create(
    const cumem_device_t* device, const cumem_pool_options_t* options,
    cumem_resource_t** out_resource);

/** Stream-ordered pinned host memory from a host-located cuMemPool,
 *  accessible from `device` (which also orders frees). [in][optional] options
 *  (use_host_numa_id and host_numa_id pick a node).
 *  CUMEM_ERROR_INVALID_ARGUMENT: as for cumem_device_resource_create, but
 *  use_host_numa_id is allowed, with host_numa_id >= 0 and a node the
 *  system has (the message names the nodes it has).
 *  CUMEM_ERROR_NOT_SUPPORTED: the driver has no host pools (before CUDA
 *  12.6) or IPC was asked of a non-NUMA pool. */
CUMEM_API cumem_status_t cumem_pinned_resource_create(
    const cumem_device_t* device, const cumem_pool_options_t* options,
    cumem_resource_t** out_resource);

/** Device memory from cuMemAlloc, synchronous (frees wait for the stream).
 *  Its buffers share with other processes through legacy IPC
 *  (cuIpcGetMemHandle): cumem_buffer_get_ipc_descriptor. */
CUMEM_API cumem_status_t cumem_legacy_device_resource_create(const cumem_device_t* device,
                                                             cumem_resource_t** out_resource);

/** Host memory that other processes can map: one shared memory file
 *  (memfd) of `capacity` bytes, from which buffers are carved (256-byte
 *  aligned, first fit). Needs no driver. Share it with
 *  cumem_resource_get_allocation_handle and its buffers with
 *  cumem_buffer_get_ipc_descriptor. The file is sealed against shrinking
 *  and growing (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), so no peer can
 *  change its size under another's mapping; an import refuses a file that
 *  is not sealed so. CUMEM_ERROR_INVALID_ARGUMENT: capacity 0;
 *  CUMEM_ERROR_OUT_OF_MEMORY: the file cannot be made that large;
 *  CUMEM_ERROR_OUT_OF_RESOURCES: the process has no file descriptor left
 *  (the message names RLIMIT_NOFILE); CUMEM_ERROR_NOT_SUPPORTED: the kernel
 *  lacks memfd_create or sealing. */
CUMEM_API cumem_status_t cumem_host_shared_resource_create(uint64_t capacity,
                                                           cumem_resource_t** out_resource);

/** Pinned host memory from cuMemHostAlloc (portable, mapped), synchronous.
 *  Freeing on a stream first waits for that stream. `device` gives the
 *  context; the memory is usable from every device. */
CUMEM_API cumem_status_t cumem_legacy_pinned_resource_create(
    const cumem_device_t* device, cumem_resource_t** out_resource);

/** Unified memory for `device`, with a preferred location (validated as
 *  every location is: CUMEM_ERROR_NO_DEVICE for a device ordinal that does
 *  not exist, CUMEM_ERROR_INVALID_ARGUMENT for another type).
 *  Allocations larger than the device's free memory are refused with
 *  CUMEM_ERROR_OUT_OF_MEMORY (oversubscribing managed memory can stall the
 *  GPU). CUMEM_ERROR_NOT_SUPPORTED: the device has no managed memory. */
CUMEM_API cumem_status_t cumem_managed_resource_create(
    const cumem_device_t* device, const cumem_managed_resource_options_t* options,
    cumem_resource_t** out_resource);

/** The limit adaptor: memory from `upstream` (kept alive), at most
 *  `limit_bytes` of it in use at once through this resource. An allocation
 *  that would pass the limit fails with CUMEM_ERROR_OUT_OF_MEMORY naming
 *  the limit, before the upstream is asked. Properties are the upstream's
 *  but kind CUMEM_RESOURCE_LIMIT, is_pool and ipc_enabled false; statistics
 *  count what goes through the adaptor (the upstream counts it too).
 *  CUMEM_ERROR_INVALID_ARGUMENT: limit_bytes 0. */
CUMEM_API cumem_status_t cumem_limit_resource_create(cumem_resource_t* upstream,
                                                     uint64_t limit_bytes,
                                                     cumem_resource_t** out_resource);

/** The aligned adaptor: memory from `upstream` (kept alive), every
 *  non-empty allocation starting at a multiple of `alignment`, a power of
 *  two from 1 to 1 GiB (1073741824). An upstream allocation that is
 *  aligned already is handed out as it is; once the upstream has handed out
 *  one that is not, every allocation asks the upstream for alignment - 1
 *  more bytes and hands out the aligned address inside it (the upstream's
 *  statistics count those bytes; the adaptor's count the sizes asked for).
 *  Properties are the upstream's but kind CUMEM_RESOURCE_ALIGNED, is_pool
 *  and ipc_enabled false. The adaptor records every allocation: a free
 *  with another size than the allocation's, or of an address it did not
 *  hand out, is CUMEM_ERROR_INVALID_ARGUMENT and frees nothing.
 *  CUMEM_ERROR_INVALID_ARGUMENT: alignment 0, not a power of two, or above
 *  1 GiB. */
CUMEM_API cumem_status_t cumem_aligned_resource_create(cumem_resource_t* upstream,
                                                       uint64_t alignment,
                                                       cumem_resource_t** out_resource);

/** The caching adaptor: freed blocks stay cached and are handed out again
 *  without asking `upstream` (kept alive), which makes an allocate/free pair
 *  a few tens of nanoseconds instead of the driver's microsecond.
 *  - Sizes are rounded up (to 512 B at least; 8 steps per power of two up
 *    to 16 MiB, so at most 12.5% more; multiples of 2 MiB above). The
 *    statistics count the sizes asked for; cumem_caching_statistics_t
 *    counts the rounded bytes the cache holds.
 *  - A block freed on a stream is handed out again at once on that stream.
 *    On another stream it is handed out after that stream is made to wait
 *    (cuStreamWaitEvent) for an event recorded then on the freeing stream:
 *    work queued on the freeing stream before the free always finishes
 *    before the block's next user starts. Over an upstream that frees
 *    synchronously, a free first waits as the upstream would, and the block
 *    is then reusable on any stream. A cached block holds a reference to
 *    the stream it was freed on until it is reused or given back (a wrapped
 *    stream's CUstream must stay valid that long).
 *  - Blocks are cached per thread (each live thread has a cache of its own;
 *    beyond 64 threads alive at once they share one), so an allocate/free
 *    pair takes no shared lock; a block freed by one thread is reused by
 *    that thread, or by others once it holds over 64 MiB of small blocks (or given
 *    back by cumem_caching_resource_release_cached).
 *  - When the upstream is out of memory, every cached block is given back
 *    (after waiting for the device), a pool upstream is trimmed, and the
 *    allocation is tried once more; the error then gives the size, the
 *    bytes in use, cached and reserved.
 *  - Cached memory is given back when the resource is released, or with
 *    cumem_caching_resource_release_cached.
 *  Stream capture: memory a CUDA graph captured belongs to the graph (its
 *  replays write it long after the capture). On a stream that captures,
 *  whoever began the capture (libcumem, the runtime, PyTorch, CuPy; any
 *  mode; streams joined through events too), allocations come from the
 *  capture's private pool: upstream memory of its own, allocated outside
 *  the capture (on a stream of the adaptor's, waited for, in relaxed
 *  capture mode), never a block eager work used. Blocks freed inside the
 *  capture go back to that pool and are reused inside it on the stream
 *  that freed them; blocks the capture allocated stay in the pool after
 *  the capture too, freed or not, until
 *  cumem_caching_resource_release_capture_pool says the graph is gone. A
 *  block allocated outside the capture and freed on a capturing stream is
 *  refused, CUMEM_ERROR_INVALID_STATE (free it after the capture; the
 *  framework entry points hold such frees themselves); a capture that was
 *  invalidated is refused too. Seeing every capture costs one driver call
 *  (cuStreamGetCaptureInfo) per allocation and per free on a stream other
 *  than the legacy default stream; cumem_caching_resource_options_t's
 *  libcumem_captures_only restricts it to captures begun with
 *  cumem_stream_begin_capture, at no cost while none is underway.
 *  - Blocks above 128 KiB are pieces of upstream allocations (20 MiB ones
 *    for requests under 10 MiB, when the upstream has room; else of the
 *    rounded size): the smallest free piece that fits is split to the
 *    rounded size, and freed pieces merge with free neighbours freed on the
 *    same stream; an upstream allocation goes back (on release_cached) once
 *    it is free whole. A thread keeps its last 8 freed large blocks (up to
 *    64 MiB) for itself until a large miss gathers every thread's; a
 *    thread's cache holds up to 64 MiB of small blocks; blocks beyond go to
 *    a cache all threads share. */
CUMEM_API cumem_status_t cumem_caching_resource_create(cumem_resource_t* upstream,
                                                       cumem_resource_t** out_resource);

/** What the caching adaptor holds (rounded bytes) and how it served. */
typedef struct cumem_caching_statistics_t {
  uint32_t struct_size;
  uint32_t reserved0;
  uint64_t bytes_cached;        /**< cached, ready to be handed out */
  uint64_t bytes_reserved;      /**< held from the upstream: in use + cached */
  uint64_t peak_bytes_reserved; /**< highest bytes_reserved */
  uint64_t hits;                /**< allocations served from the cache */
  uint64_t misses;              /**< allocations that went to the upstream */
  uint64_t stream_reuses;       /**< hits on a block freed on another stream */
  uint64_t oom_retries;         /**< upstream out of memory, cache given back, retried */
  /** Expandable caches: pages ever mapped, and ever unmapped (of either
   *  page size: see cumem_caching_resource_options_t.page_size); 0 for the
   *  others. Since 1.1. */
  uint64_t pages_mapped;
  uint64_t pages_unmapped;
  /** Private pools of CUDA graph captures (see
   *  cumem_caching_resource_release_capture_pool), and the upstream memory
   *  they hold (counted in bytes_reserved too). Since 1.1. */
  uint64_t capture_pools;
  uint64_t capture_pool_bytes;
  /** Expandable caches: the times free fragments' whole pages were
   *  unmapped before new pages were mapped (so that the cache holds no more
   *  than it did), and of those the times the device was waited for first
   *  (fragments whose last work was not known done). Since 1.1. */
  uint64_t recycles;
  uint64_t recycle_waits;
} cumem_caching_statistics_t;
#define CUMEM_CACHING_STATISTICS_INIT \
  { (uint32_t)sizeof(cumem_caching_statistics_t), 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u }

/** CUMEM_ERROR_NOT_SUPPORTED: the resource is not a caching adaptor. */
CUMEM_API cumem_status_t cumem_caching_resource_get_statistics(
    const cumem_resource_t* resource, cumem_caching_statistics_t* stats);
/** Gives every cached block back to the upstream, after waiting for the
 *  device's queued work. CUMEM_ERROR_NOT_SUPPORTED: not a caching adaptor. */
CUMEM_API cumem_status_t cumem_caching_resource_release_cached(cumem_resource_t* resource);
/** Gives cached blocks back to the upstream until at most `keep_bytes`
 *  stay cached (after waiting for the device's queued work), then trims a
 *  pool upstream (cumem_resource_pool_trim to 0) so that the memory goes
 *  back to the system. Large blocks go first (upstream allocations free
 *  whole, largest first), then small blocks, largest first. Pieces of an
 *  upstream allocation partly in use cannot be given back, so more than
 *  `keep_bytes` may stay cached: the statistics say how much.
 *  CUMEM_ERROR_NOT_SUPPORTED: not a caching adaptor. */
CUMEM_API cumem_status_t cumem_caching_resource_trim(cumem_resource_t* resource,
                                                     uint64_t keep_bytes);
/** The CUDA graph(s) of capture `capture_id` are gone (destroyed, never to
 *  be launched again): the capture's private pool gives its memory back to
 *  the upstream, what is free now at once (after waiting for the device's
 *  queued work) and the rest as its blocks are freed. Call it after the
 *  capture ended and its graphs' launches finished, while no other stream
 *  of the device captures (the wait for the device would break that
 *  capture). The id is the capture's (cumem_stream_get_capture_info while
 *  it captured, or cumem_graph_capture_id of the graph it made). Releasing
 *  twice is fine. Thread-safe.
 *  CUMEM_ERROR_NOT_SUPPORTED: not a caching adaptor.
 *  CUMEM_ERROR_NOT_FOUND: the adaptor allocated nothing under that capture
 *  (or its released pool is empty and gone). */
CUMEM_API cumem_status_t cumem_caching_resource_release_capture_pool(cumem_resource_t* resource,
                                                                     uint64_t capture_id);

/** Options of the caching adaptor (cumem_caching_resource_create_with_options;
 *  zero-filled, or NULL, is what cumem_caching_resource_create makes). */
typedef struct cumem_caching_resource_options_t {
  uint32_t struct_size;
  /** Expandable segments (PyTorch's expandable_segments:True): blocks above
   *  128 KiB are pieces of an address range the cache reserves for each
   *  stream on the upstream's device (enough for the device's memory and an
   *  eighth more; another when one fills up), rounded up to 512 B only.
   *  Physical memory is mapped into a stream's range in pages (page_size)
   *  when no free piece can serve a request, at the lowest address
   *  where a free piece and new pages together fit it, so a block freed at
   *  one size serves any other size and the cache holds about what it hands
   *  out (plus less than a page per stream). Pages are unmapped, after
   *  waiting for the device's queued work, when the cache gives memory back:
   *  cumem_caching_resource_trim, _release_cached, an allocation that runs
   *  out of memory, the resource's release. Mapping a page takes driver
   *  calls on the host (0.06-0.4 ms a page on an H200, the more while
   *  kernels run): the first allocations that grow a range are slower than
   *  a pool's; cached pairs are as fast as without. Small blocks (up to
   *  128 KiB) are pieces of ranges of their own, mapped in the smaller
   *  pages, cached by size class, and merged back into their pages when
   *  the cache gives memory back. The upstream serves only CUDA graphs'
   *  private pools, so an adaptor under the cache (a limit) does not see
   *  the blocks: put a limit above the cache instead. The upstream's memory must be device
   *  memory (CUMEM_MEMORY_DEVICE) on a device with virtual memory
   *  management. The memory is accessible from the upstream's device, and
   *  from peers given access (cumem_resource_set_peer_access); its blocks
   *  are shared with other processes only with handle_types (below), as
   *  virtual IPC handles. Default false. */
  cumem_bool_t expandable;
  /** With expandable: the bytes mapped at a time. 0 (default): 8 MiB
   *  pages for blocks of 16 MiB or more and 2 MiB pages for the others, each
   *  size in ranges of its own (both raised to multiples of the device's
   *  virtual-memory granularity, 2 MiB on an H200). Else every page is
   *  page_size bytes, a multiple of the granularity. Each page costs the
   *  same driver calls whatever its size (about 0.4 ms to map while the GPU
   *  computes, on an H200), so larger pages map a large block faster; smaller
   *  ones leave less mapped beyond what is in use, and fewer bytes stranded
   *  in the fragments between blocks (before mapping new pages, the cache
   *  unmaps the whole pages of free pieces too small for the block, after a
   *  wait for the device). Must be 0 without expandable. */
  uint64_t page_size;
  /** Which CUDA graph captures the adaptor sees (see "Stream capture" at
   *  cumem_caching_resource_create). CUMEM_FALSE (default): every capture,
   *  whoever began it (the runtime, PyTorch, CuPy, a library), at one
   *  driver call (cuStreamGetCaptureInfo) per allocation and per free on a
   *  stream other than the legacy default stream. CUMEM_TRUE: only
   *  captures begun with cumem_stream_begin_capture, and no driver call
   *  while none is underway; a capture begun elsewhere is then not seen,
   *  and blocks it takes or frees are handed out again under the graph's
   *  replays: only for programs that capture through libcumem alone. */
  cumem_bool_t libcumem_captures_only;
  /** With expandable: CUMEM_IPC_HANDLE_POSIX_FD makes the pages shareable,
   *  so that a block can be sent to another process as the pages that hold
   *  it (cumem_buffer_get_virtual_ipc_handle,
   *  cumem_resource_get_virtual_ipc_handle_native; the importer maps them
   *  with cumem_buffer_from_virtual_ipc_handle). 0 (default): nothing is shareable.
   *  Other bits, or any without expandable: CUMEM_ERROR_INVALID_ARGUMENT; a
   *  device without POSIX fd handles: CUMEM_ERROR_NOT_SUPPORTED. */
  uint32_t handle_types;
} cumem_caching_resource_options_t;
#define CUMEM_CACHING_RESOURCE_OPTIONS_INIT \
  { (uint32_t)sizeof(cumem_caching_resource_options_t), CUMEM_FALSE, 0u, CUMEM_FALSE, 0u }
CUMEM_API void cumem_caching_resource_options_init(cumem_caching_resource_options_t* options);

/** The caching adaptor over `upstream` (kept alive) with options; NULL
 *  options are the defaults, the adaptor of cumem_caching_resource_create.
 *  Everything said there holds, and expandable changes the large blocks as
 *  its field says.
 *  [in] upstream; [in][optional] options; [out] out_resource.
 *  Thread safety: any thread; the resource allows every call concurrently.
 *  CUMEM_ERROR_INVALID_ARGUMENT: upstream or out_resource NULL, a bad
 *  struct_size, page_size without expandable, or a page_size that is not a
 *  multiple of the device's granularity (the message names it).
 *  CUMEM_ERROR_NOT_SUPPORTED: expandable over an upstream whose memory is
 *  not device memory, or on a device (or driver) without virtual memory
 *  management. The driver's error when reading the granularity fails. */
CUMEM_API cumem_status_t cumem_caching_resource_create_with_options(
    cumem_resource_t* upstream, const cumem_caching_resource_options_t* options,
    cumem_resource_t** out_resource);

/** The tracking adaptor: records every outstanding allocation of `upstream`
 *  (kept alive) with its size and stream, and with capture_backtraces its
 *  call stack (backtrace(3); costly: for debugging). A free of a pointer it
 *  did not hand out, or with another size, is refused
 *  (CUMEM_ERROR_INVALID_ARGUMENT, nothing freed). When the resource is
 *  released with allocations outstanding, the report goes to stderr. */
CUMEM_API cumem_status_t cumem_tracking_resource_create(cumem_resource_t* upstream,
                                                        cumem_bool_t capture_backtraces,
                                                        cumem_resource_t** out_resource);
/** The report of outstanding allocations, as text: like snprintf, writes at
 *  most capacity - 1 characters and a NUL into `buffer` ([out][optional]:
 *  NULL with capacity 0) and sets *out_length to the report's full length.
 *  CUMEM_ERROR_NOT_SUPPORTED: not a tracking adaptor. */
CUMEM_API cumem_status_t cumem_tracking_resource_report(const cumem_resource_t* resource,
                                                        char* buffer, size_t capacity,
                                                        size_t* out_length);
/** How many allocations are outstanding and their bytes. */
CUMEM_API cumem_status_t cumem_tracking_resource_outstanding(const cumem_resource_t* resource,
                                                             uint64_t* out_count,
                                                             uint64_t* out_bytes);

/** The logging adaptor: one CSV line per operation on `upstream`,
 *  `time_ns,thread,operation,ptr,size,stream` (operation: allocate,
 *  deallocate or allocate_failed; ptr and stream in hexadecimal), after a
 *  header line, into the file `path` ([in][optional]: NULL or "" means the
 *  file named by $CUMEM_LOG_FILE), which is truncated first. Lines are
 *  buffered and flushed when the resource goes.
 *  CUMEM_ERROR_INVALID_ARGUMENT: no path and no $CUMEM_LOG_FILE, or the
 *  file cannot be opened (the message says why). */
CUMEM_API cumem_status_t cumem_logging_resource_create(cumem_resource_t* upstream,
                                                       const char* path,
                                                       cumem_resource_t** out_resource);

/** User callbacks of a callback resource. They run on the thread that
 *  allocates, frees or releases; they must not unwind (throw, longjmp,
 *  panic) through libcumem; they may call libcumem, except on the resource
 *  they serve. `stream` is the native CUstream (NULL: the legacy default
 *  stream). allocate returns 0 with *out_ptr set, or anything else for out
 *  of memory. */
typedef int32_t (*cumem_allocate_fn)(size_t size, void* stream, void* user_data, void** out_ptr);
/** Gives back `ptr` (`size` bytes, from the allocate callback), ordered on
 *  `stream`; the rules above apply. */
typedef void (*cumem_deallocate_fn)(void* ptr, size_t size, void* stream, void* user_data);
/** Called once, when the resource's last reference goes. */
typedef void (*cumem_destroy_fn)(void* user_data);

typedef struct cumem_resource_callbacks_t {
  uint32_t struct_size;
  /** What the memory is. Default (0) CUMEM_MEMORY_HOST. */
  cumem_memory_kind_t memory_kind;
  cumem_allocate_fn allocate;       /**< required */
  cumem_deallocate_fn deallocate;   /**< required */
  cumem_destroy_fn destroy;         /**< optional */
  void* user_data;
  /** Accessibility: the memory kind's own (host: the host; device: the
   *  device; pinned and managed: both), and also the device or the host
   *  where these say so (host memory a device can reach, device memory the
   *  host can reach). Default false: the kind's own only. */
  cumem_bool_t device_accessible;
  cumem_bool_t host_accessible;
  /** Frees are ordered on their stream (else the callback frees at once). */
  cumem_bool_t stream_ordered;
  uint32_t reserved0; /**< must be 0 */
} cumem_resource_callbacks_t;
#define CUMEM_RESOURCE_CALLBACKS_INIT                                               \
  { (uint32_t)sizeof(cumem_resource_callbacks_t), CUMEM_MEMORY_HOST, NULL, NULL, NULL, \
    NULL, CUMEM_FALSE, CUMEM_FALSE, CUMEM_FALSE, 0u }

/** A resource made of user callbacks, so that allocators of other languages
 *  serve libcumem buffers. `device` ([in][optional]) is the memory's device
 *  (kept alive), NULL for memory not tied to one. libcumem keeps the
 *  statistics. CUMEM_ERROR_INVALID_ARGUMENT: allocate or deallocate NULL, an
 *  unknown memory kind, reserved0 not 0. */
CUMEM_API cumem_status_t cumem_callback_resource_create(const cumem_device_t* device,
                                                        const cumem_resource_callbacks_t* callbacks,
                                                        cumem_resource_t** out_resource);

CUMEM_API cumem_status_t cumem_resource_retain(cumem_resource_t* resource);
CUMEM_API cumem_status_t cumem_resource_release(cumem_resource_t* resource);

/** Allocates `size` bytes ordered on `stream` ([in][optional]) as a buffer.
 *  size 0 gives a valid, empty buffer with a NULL pointer (not counted in
 *  the resource's statistics: it holds no memory).
 *  CUMEM_ERROR_OUT_OF_MEMORY: the message has the size, the resource and its
 *  bytes in use (and reserved, for pools). */
CUMEM_API cumem_status_t cumem_resource_allocate(cumem_resource_t* resource,
                                                 size_t size,
                                                 const cumem_stream_t* stream,
                                                 cumem_buffer_t** out_buffer);

/** The raw pair, for hot paths and other allocators: no buffer object.
 *  The pointer must go back through cumem_resource_deallocate_raw with the
 *  same size, while the caller still holds a reference to the resource (a
 *  raw pointer does not keep its resource alive, unlike a buffer).
 *  size 0 gives NULL and is not counted in the statistics (nor is its
 *  free, NULL with size 0); every other allocation and free is. */
CUMEM_API cumem_status_t cumem_resource_allocate_raw(cumem_resource_t* resource,
                                                     size_t size,
                                                     const cumem_stream_t* stream,
                                                     void** out_ptr);
/** Frees `ptr` (from allocate_raw of this resource, with its size) ordered
 *  on `stream`. ptr NULL with size 0 is fine. Synchronous kinds (host,
 *  legacy pinned, cuMemAllocManaged, cuMemAlloc) wait first: for `stream`,
 *  or with NULL for the legacy default stream of the resource's device.
 *  CUMEM_ERROR_INVALID_STATE: a synchronous kind asked to free on a stream
 *  that is capturing a CUDA graph (see "CUDA graphs"; nothing is freed).
 *  CUMEM_ERROR_INVALID_ARGUMENT: ptr NULL with size > 0, or a size above
 *  the largest allocation the resource ever made (nothing is freed; any
 *  other wrong size is undefined). */
CUMEM_API cumem_status_t cumem_resource_deallocate_raw(cumem_resource_t* resource,
                                                       void* ptr, size_t size,
                                                       const cumem_stream_t* stream);

CUMEM_API cumem_status_t cumem_resource_get_properties(
    const cumem_resource_t* resource, cumem_resource_properties_t* props);
CUMEM_API cumem_status_t cumem_resource_get_statistics(
    const cumem_resource_t* resource, cumem_resource_statistics_t* stats);
/** Sets peak_bytes_in_use to the current bytes_in_use (allocations that
 *  race with it may raise it again at once). */
CUMEM_API cumem_status_t cumem_resource_reset_peak(cumem_resource_t* resource);

/** Attributes of the cuMemPool behind a pool resource. Not an options
 *  struct: cumem_resource_pool_set_attributes sets the values it holds
 *  exactly as given, so a zero-filled one turns every reuse flag off and
 *  sets the threshold 0 (the one exception to "zero means default"). */
typedef struct cumem_pool_attributes_t {
  uint32_t struct_size;
  cumem_bool_t reuse_follow_event_dependencies;
  cumem_bool_t reuse_allow_opportunistic;
  cumem_bool_t reuse_allow_internal_dependencies;
  uint64_t release_threshold;
  uint64_t reserved_mem_current;
  uint64_t reserved_mem_high;
  uint64_t used_mem_current;
  uint64_t used_mem_high;
} cumem_pool_attributes_t;
#define CUMEM_POOL_ATTRIBUTES_INIT \
  { (uint32_t)sizeof(cumem_pool_attributes_t), 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u }

/* Every cumem_resource_pool_* call: CUMEM_ERROR_NOT_SUPPORTED when the
 * resource is not pool-backed (properties.is_pool false). */

CUMEM_API cumem_status_t cumem_resource_pool_get_attributes(
    const cumem_resource_t* resource, cumem_pool_attributes_t* attributes);
/** Sets the three reuse flags and the release threshold from `attributes`
 *  (the other fields are ignored). */
CUMEM_API cumem_status_t cumem_resource_pool_set_attributes(
    cumem_resource_t* resource, const cumem_pool_attributes_t* attributes);
/** Resets reserved_mem_high and used_mem_high to their current values. */
CUMEM_API cumem_status_t cumem_resource_pool_reset_highs(cumem_resource_t* resource);
/** Returns unused reserved memory to the system, keeping at least
 *  `min_bytes_to_keep` reserved (cuMemPoolTrimTo). The driver releases
 *  whole blocks, so more may stay reserved than asked (after freeing four
 *  8 MiB buffers, a trim to 4 MiB can keep all 32 MiB); trimming to 0
 *  releases every unused block. Memory whose frees are still pending on a
 *  stream is not unused yet: synchronise first. */
CUMEM_API cumem_status_t cumem_resource_pool_trim(cumem_resource_t* resource,
                                                  uint64_t min_bytes_to_keep);
/** Grants (read_write true) or revokes `peer`'s access to the pool's memory.
 *  CUMEM_ERROR_INVALID_ARGUMENT: revoking the pool's own device.
 *  CUMEM_ERROR_NOT_SUPPORTED: the devices cannot access each other. */
CUMEM_API cumem_status_t cumem_resource_pool_set_access(cumem_resource_t* resource,
                                                        const cumem_device_t* peer,
                                                        cumem_bool_t read_write);
/** *out_read_write = whether `peer` can read and write the pool's memory. */
CUMEM_API cumem_status_t cumem_resource_pool_get_access(
    const cumem_resource_t* resource, const cumem_device_t* peer,
    cumem_bool_t* out_read_write);
/** Grants (read_write true) or revokes `peer`'s read-write access to the
 *  memory `resource` hands out, present and future, whatever the resource
 *  is: a pool (as cumem_resource_pool_set_access), a virtual-memory
 *  resource (as cumem_virtual_resource_set_access), an adaptor (its
 *  upstream's memory; an expandable caching adaptor also maps every page of
 *  its ranges, now and later, with that access). What a framework calls
 *  when it enables peer access between devices (PyTorch's
 *  enablePeerAccess): memory that is not cuMemAlloc'd is not reached by
 *  cumem_device_enable_peer_access alone. All or nothing. Thread-safe:
 *  allocations and frees may run meanwhile (the memory they hand out then
 *  has the old access or the new).
 *  CUMEM_ERROR_INVALID_ARGUMENT: revoking the resource's own device; a NULL
 *  or released resource or peer.
 *  CUMEM_ERROR_NOT_SUPPORTED: the devices cannot access each other, or the
 *  resource's memory has no access to set (host, managed or callback
 *  memory; the message names the resource). */
CUMEM_API cumem_status_t cumem_resource_set_peer_access(cumem_resource_t* resource,
                                                        const cumem_device_t* peer,
                                                        cumem_bool_t read_write);
/** *out_read_write = whether `peer` can read and write all the memory
 *  `resource` hands out (true for the resource's own device). Errors as
 *  cumem_resource_set_peer_access, and CUMEM_ERROR_INVALID_ARGUMENT for a
 *  NULL out_read_write. Thread-safe. */
CUMEM_API cumem_status_t cumem_resource_get_peer_access(const cumem_resource_t* resource,
                                                        const cumem_device_t* peer,
                                                        cumem_bool_t* out_read_write);
/** The CUmemoryPool, as void*. Borrowed. */
CUMEM_API cumem_status_t cumem_resource_pool_native(const cumem_resource_t* resource,
                                                    void** out_pool);

/* The failure-callback adaptor (RMM's failure_callback_resource_adaptor):
 * when its upstream refuses an allocation for lack of memory, it calls a
 * user function, which may free memory (drop caches, trim a pool, release
 * buffers it keeps) and ask for the allocation to be tried again. */

/** What a failure callback asks for. */
typedef enum cumem_failure_action_t {
  /** Give up: the allocation fails with CUMEM_ERROR_OUT_OF_MEMORY. */
  CUMEM_FAILURE_FAIL = 0,
  /** Ask the upstream again (at most max_retries times per allocation). */
  CUMEM_FAILURE_RETRY = 1,
  CUMEM_FAILURE_ACTION_FORCE32 = 0x7FFFFFFF
} cumem_failure_action_t;

/** What the failure callback is told, valid during the call only. Written
 *  by libcumem: struct_size is the size of the struct it filled (a caller
 *  built with a newer cumem.h reads no field past it). */
typedef struct cumem_failure_info_t {
  uint32_t struct_size;
  /** 1 for the upstream's first refusal of this allocation, 2 after one
   *  retry was refused too, ...; at most max_retries (the callback is
   *  called at most max_retries times per allocation). */
  uint32_t attempt;
  /** Bytes asked for. */
  uint64_t size;
  /** The allocation's native CUstream (NULL: the legacy default stream). */
  void* stream;
  /** The adaptor's statistics at the time of the call (what went through
   *  it: its bytes in use, peak, live and total allocations). */
  const cumem_resource_statistics_t* statistics;
  /** The upstream's out-of-memory message, NUL-terminated. */
  const char* message;
} cumem_failure_info_t;
#define CUMEM_FAILURE_INFO_INIT \
  { (uint32_t)sizeof(cumem_failure_info_t), 0u, 0u, NULL, NULL, NULL }

/** The user's function: called on the allocating thread each time the
 *  upstream refuses an allocation for lack of memory (other failures are
 *  passed on untouched). It may free memory, including memory of this
 *  adaptor and of its upstream, and read any statistics; an allocation it
 *  makes from this adaptor that runs out of memory fails at once, without
 *  a nested callback. It may run on several threads at once. It must
 *  return normally (no C++ exception, Rust panic or longjmp through
 *  libcumem). A return value other than the two actions counts as
 *  CUMEM_FAILURE_FAIL. */
typedef cumem_failure_action_t (*cumem_failure_callback_fn)(const cumem_failure_info_t* info,
                                                            void* user_data);

/** The most max_retries the adaptor takes. */
#define CUMEM_FAILURE_CALLBACK_MAX_RETRIES 1024u
/** The retries one allocation gets when max_retries is 0. */
#define CUMEM_FAILURE_CALLBACK_DEFAULT_RETRIES 16u

/** The callback of a failure-callback adaptor, read as options are. */
typedef struct cumem_failure_callback_t {
  uint32_t struct_size;
  /** The most retries one allocation gets, 1 to
   *  CUMEM_FAILURE_CALLBACK_MAX_RETRIES; 0 (default):
   *  CUMEM_FAILURE_CALLBACK_DEFAULT_RETRIES. This bounds a callback that
   *  keeps asking for retries: after max_retries refused retries the
   *  allocation fails without calling it again. */
  uint32_t max_retries;
  cumem_failure_callback_fn callback; /**< required */
  /** [optional] Called once with user_data when the adaptor's last
   *  reference goes (so that bindings can free what user_data holds). */
  cumem_destroy_fn destroy;
  /** Passed to callback and destroy, untouched. */
  void* user_data;
} cumem_failure_callback_t;
#define CUMEM_FAILURE_CALLBACK_INIT \
  { (uint32_t)sizeof(cumem_failure_callback_t), 0u, NULL, NULL, NULL }
CUMEM_API void cumem_failure_callback_init(cumem_failure_callback_t* callback);

/** The failure-callback adaptor over `upstream` (kept alive). An
 *  allocation goes to the upstream; when the upstream refuses it with
 *  CUMEM_ERROR_OUT_OF_MEMORY, callback->callback is called with the size,
 *  the stream, the adaptor's statistics and the upstream's message:
 *  CUMEM_FAILURE_RETRY asks the upstream again, CUMEM_FAILURE_FAIL (or any
 *  other value) makes the allocation fail with CUMEM_ERROR_OUT_OF_MEMORY,
 *  whose message says how many times the callback was called. A refused
 *  retry calls the callback again, up to max_retries retries per
 *  allocation; the allocation then fails without a further call. Frees go
 *  to the upstream at once. Properties are the upstream's but kind
 *  CUMEM_RESOURCE_FAILURE_CALLBACK, is_pool and ipc_enabled false;
 *  statistics count what goes through the adaptor. Thread-safe, as every
 *  resource is. [in] upstream; [in] callback (copied); [out] out_resource.
 *  CUMEM_ERROR_INVALID_ARGUMENT: callback->callback NULL, max_retries above
 *  CUMEM_FAILURE_CALLBACK_MAX_RETRIES, a bad struct_size. On failure the
 *  destroy function is not called. */
CUMEM_API cumem_status_t cumem_failure_callback_resource_create(
    cumem_resource_t* upstream, const cumem_failure_callback_t* callback,
    cumem_resource_t** out_resource);

/* ------------------------------------------------------------------------ */
/* Buffers                                                                   */
/* ------------------------------------------------------------------------ */


typedef struct cumem_buffer_info_t {
  uint32_t struct_size;
  int32_t device_id;           /**< -1 for memory not tied to a device */
  void* ptr;
  uint64_t size;
  cumem_memory_kind_t memory_kind;
  cumem_bool_t device_accessible;
  cumem_bool_t host_accessible;
  cumem_bool_t is_slice;       /**< a view into another buffer */
  cumem_bool_t owns_memory;    /**< closing frees the memory */
  uint32_t reserved0;          /**< written as 0 */
} cumem_buffer_info_t;
#define CUMEM_BUFFER_INFO_INIT \
  { (uint32_t)sizeof(cumem_buffer_info_t), 0, NULL, 0u, CUMEM_MEMORY_HOST, 0u, 0u, 0u, 0u, 0u }

/* Every cumem_buffer_* call below except retain, release and is_closed:
 * CUMEM_ERROR_BUFFER_CLOSED once the buffer (or, for a slice, its parent)
 * was closed. */

CUMEM_API cumem_status_t cumem_buffer_retain(cumem_buffer_t* buffer);
/** Drops a reference; the last one closes the buffer (if still open) on its
 *  deallocation stream. Errors of that close are not reported: close
 *  explicitly to see them. */
CUMEM_API cumem_status_t cumem_buffer_release(cumem_buffer_t* buffer);

/** The start of the memory (NULL for size 0). */
CUMEM_API cumem_status_t cumem_buffer_ptr(const cumem_buffer_t* buffer, void** out_ptr);
CUMEM_API cumem_status_t cumem_buffer_size(const cumem_buffer_t* buffer,
                                           size_t* out_size);
/** The resource the memory came from (a new reference), or *out = NULL for
 *  buffers that wrap memory not owned by a resource. */
CUMEM_API cumem_status_t cumem_buffer_resource(const cumem_buffer_t* buffer,
                                               cumem_resource_t** out_resource);
/** Device ordinal of the memory, -1 when not tied to a device. */
CUMEM_API cumem_status_t cumem_buffer_device_id(const cumem_buffer_t* buffer,
                                                int32_t* out_device_id);
CUMEM_API cumem_status_t cumem_buffer_get_info(const cumem_buffer_t* buffer,
                                               cumem_buffer_info_t* info);
/** Works on closed buffers too. */
CUMEM_API cumem_status_t cumem_buffer_is_closed(const cumem_buffer_t* buffer,
                                                cumem_bool_t* out_closed);

/** The stream that frees the buffer when it is closed with no stream or
 *  released. Default: the stream it was allocated on (NULL there: the legacy
 *  default stream); none for wrapped and registered memory, which is then
 *  released at once. Retains `stream` ([in][optional]: NULL resets to none,
 *  which for resource memory means the legacy default stream). */
CUMEM_API cumem_status_t cumem_buffer_set_deallocation_stream(
    cumem_buffer_t* buffer, const cumem_stream_t* stream);

/** Frees the memory ordered on `stream` ([in][optional]: NULL means the
 *  deallocation stream). Work queued before on that stream may still use
 *  the memory; work queued on other streams must be ordered before it by the
 *  caller. Resources that free synchronously (host, legacy pinned, managed
 *  without pool, registered and wrapped memory) first wait for that stream;
 *  wrapped memory then runs its release callback on the calling thread.
 *  Closing a slice frees nothing. The handle stays valid until released.
 *  CUMEM_ERROR_BUFFER_CLOSED: closed already. CUMEM_ERROR_INVALID_STATE: a
 *  DLPack tensor of the buffer (or of a slice of it) is still alive
 *  (cumem_buffer_to_dlpack); release the buffer instead; or the free must
 *  wait for a stream that is capturing a CUDA graph (see "CUDA graphs").
 *  A close that fails frees nothing and leaves the buffer open. */
CUMEM_API cumem_status_t cumem_buffer_close(cumem_buffer_t* buffer,
                                            const cumem_stream_t* stream);

/** Copies all of `src` into `dst`, ordered on `stream`.
 *  CUMEM_ERROR_SIZE_MISMATCH: the sizes differ. */
CUMEM_API cumem_status_t cumem_buffer_copy_to(const cumem_buffer_t* src,
                                              cumem_buffer_t* dst,
                                              const cumem_stream_t* stream);
/** Copies all of `src` into `dst` (same as copy_to with the roles named from
 *  the destination). CUMEM_ERROR_SIZE_MISMATCH: the sizes differ. */
CUMEM_API cumem_status_t cumem_buffer_copy_from(cumem_buffer_t* dst,
                                                const cumem_buffer_t* src,
                                                const cumem_stream_t* stream);
/** Copies `length` bytes from src+src_offset to dst+dst_offset.
 *  CUMEM_ERROR_OUT_OF_RANGE: a region overruns its buffer (or the offsets
 *  overflow). length 0 does nothing. Overlapping regions of one buffer are
 *  CUMEM_ERROR_INVALID_ARGUMENT. */
CUMEM_API cumem_status_t cumem_buffer_copy_region(cumem_buffer_t* dst,
                                                  size_t dst_offset,
                                                  const cumem_buffer_t* src,
                                                  size_t src_offset, size_t length,
                                                  const cumem_stream_t* stream);
/** Fills the buffer with `value` repeated, each `width` bytes (1, 2 or 4;
 *  the low bytes of value in host byte order).
 *  CUMEM_ERROR_INVALID_ARGUMENT: width not 1, 2 or 4, value does not fit in
 *  width bytes, or (device-accessible memory) the address is not aligned to
 *  width. CUMEM_ERROR_SIZE_MISMATCH: size not a multiple of width.
 *  CUMEM_ERROR_WRONG_DEVICE: device memory filled on another device's
 *  stream. */
CUMEM_API cumem_status_t cumem_buffer_fill(cumem_buffer_t* buffer, uint32_t value,
                                           uint32_t width,
                                           const cumem_stream_t* stream);
/** A view of [offset, offset+length) that keeps `buffer` alive and answers
 *  CUMEM_ERROR_BUFFER_CLOSED once `buffer` is closed.
 *  CUMEM_ERROR_OUT_OF_RANGE: the region overruns the buffer. */
CUMEM_API cumem_status_t cumem_buffer_slice(cumem_buffer_t* buffer, size_t offset,
                                            size_t length,
                                            cumem_buffer_t** out_slice);

/** Called exactly once, when a wrapped buffer's memory is done with: on the
 *  thread whose cumem_buffer_close (after waiting for the stream it was
 *  given) or last cumem_buffer_release ends the buffer, which may be any
 *  thread holding a reference. It must not unwind (no C++ exception or
 *  Rust panic) through libcumem; it may call libcumem, except on that
 *  buffer. */
typedef void (*cumem_release_fn)(void* ptr, size_t size, void* user_data);

/** Takes ownership of [ptr, ptr+size), which cumem_resource_allocate_raw of
 *  `resource` returned with this size: closing frees it through the resource
 *  (the statistics, which counted the raw allocation, then drop it).
 *  ptr NULL is only allowed with size 0; ptr + size must not wrap past the
 *  end of the address space (CUMEM_ERROR_INVALID_ARGUMENT). */
CUMEM_API cumem_status_t cumem_buffer_wrap_owned(cumem_resource_t* resource,
                                                 void* ptr, size_t size,
                                                 cumem_buffer_t** out_buffer);
/** Wraps memory libcumem does not own. Closing or the last release calls
 *  `release_fn(ptr, size, user_data)` once, if it is not NULL, on the thread
 *  that closes or drops the last reference; it may call libcumem (but not
 *  release this buffer). When this call fails, release_fn is never called.
 *  Device and accessibility come from the driver's pointer attributes (plain
 *  host memory when there is no driver or the driver does not know ptr).
 *  CUMEM_ERROR_INVALID_ARGUMENT: ptr NULL with size > 0, or ptr + size
 *  wraps past the end of the address space. */
CUMEM_API cumem_status_t cumem_buffer_wrap(void* ptr, size_t size,
                                           cumem_release_fn release_fn,
                                           void* user_data,
                                           cumem_buffer_t** out_buffer);
/** Page-locks existing host memory (cuMemHostRegister, portable and mapped)
 *  as a buffer; closing unregisters it (the memory itself stays the
 *  caller's). `device` gives the context.
 *  CUMEM_ERROR_INVALID_ARGUMENT: ptr NULL or size 0. */
CUMEM_API cumem_status_t cumem_buffer_register_host(const cumem_device_t* device,
                                                    void* ptr, size_t size,
                                                    cumem_buffer_t** out_buffer);

/* Managed-memory operations. CUMEM_ERROR_INVALID_ARGUMENT for a buffer whose
 * memory kind is not CUMEM_MEMORY_MANAGED. */

typedef enum cumem_advice_t {
  CUMEM_ADVICE_SET_READ_MOSTLY = 1,
  CUMEM_ADVICE_UNSET_READ_MOSTLY = 2,
  CUMEM_ADVICE_SET_PREFERRED_LOCATION = 3,
  CUMEM_ADVICE_UNSET_PREFERRED_LOCATION = 4,
  CUMEM_ADVICE_SET_ACCESSED_BY = 5,
  CUMEM_ADVICE_UNSET_ACCESSED_BY = 6,
  CUMEM_ADVICE_FORCE32 = 0x7FFFFFFF
} cumem_advice_t;

/** Migrates the buffer's pages to `location`, ordered on `stream`: a device,
 *  the host, a host NUMA node (CUMEM_LOCATION_HOST_NUMA) or the calling
 *  thread's node (CUMEM_LOCATION_HOST_NUMA_CURRENT). A host NUMA node the
 *  system does not have is CUMEM_ERROR_INVALID_ARGUMENT naming the nodes it
 *  has. */
CUMEM_API cumem_status_t cumem_buffer_prefetch(cumem_buffer_t* buffer,
                                               cumem_location_t location,
                                               const cumem_stream_t* stream);
/** Gives the driver a usage hint for the buffer's pages (cuMemAdvise). The
 *  driver ignores the location of the read-mostly advices and of
 *  CUMEM_ADVICE_UNSET_PREFERRED_LOCATION (none may be given; one given must
 *  still be valid). CUMEM_ADVICE_SET_PREFERRED_LOCATION takes a device, the
 *  host, a host NUMA node or the calling thread's node
 *  (CUMEM_LOCATION_HOST_NUMA_CURRENT); the accessed-by
 *  advices a device or the host (the driver's rule). Any other location,
 *  or none where one is needed, is CUMEM_ERROR_INVALID_ARGUMENT, and so is
 *  a host NUMA node the system does not have.
 *  CUMEM_ERROR_NOT_SUPPORTED: memory from the managed pool on drivers that
 *  do not advise it (CUDA 13.0); use a managed resource with disable_pool true. */
CUMEM_API cumem_status_t cumem_buffer_advise(cumem_buffer_t* buffer,
                                             cumem_advice_t advice,
                                             cumem_location_t location);
/** Tells the driver the contents are no longer needed (cuMemDiscardBatchAsync,
 *  CUDA 13+): pages may be dropped instead of migrated; reading them before
 *  a write or a prefetch gives indeterminate values. The same as
 *  cumem_discard_batch with one buffer (the legacy default stream works
 *  too, see there).
 *  CUMEM_ERROR_NOT_SUPPORTED: the driver is older than 13.0. */
CUMEM_API cumem_status_t cumem_buffer_discard(cumem_buffer_t* buffer,
                                              const cumem_stream_t* stream);
/** Discards the buffer's contents and prefetches its pages to `location`
 *  (cuMemDiscardAndPrefetchBatchAsync, CUDA 13+; cuda.core's
 *  ManagedBuffer.discard_prefetch): what cumem_buffer_discard followed by
 *  cumem_buffer_prefetch does, in one step that migrates no data. The same
 *  as cumem_discard_prefetch_batch with one buffer. Locations as for
 *  cumem_buffer_prefetch. CUMEM_ERROR_NOT_SUPPORTED: the driver is older
 *  than 13.0. */
CUMEM_API cumem_status_t cumem_buffer_discard_prefetch(cumem_buffer_t* buffer,
                                                       cumem_location_t location,
                                                       const cumem_stream_t* stream);
/** Where the buffer's pages were last asked to go (cuda.core's
 *  ManagedBuffer.last_prefetch_location; the driver's
 *  CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION): the location of the last
 *  prefetch (single, batched, or with a discard) that covered every page of
 *  the buffer, into *out_location: CUMEM_LOCATION_DEVICE with the ordinal,
 *  CUMEM_LOCATION_HOST, or CUMEM_LOCATION_HOST_NUMA with the node (drivers
 *  before 13.0 report every host node as CUMEM_LOCATION_HOST). It is
 *  CUMEM_LOCATION_NONE (id 0) when some page was never prefetched, or when
 *  the pages were last prefetched to different places (a prefetch of a
 *  slice moves only the slice's pages). It says what was asked, not where
 *  the pages are: it does not tell whether that prefetch has run, nor
 *  follow pages that faults or the driver moved since. Queries the driver
 *  (cuMemRangeGetAttribute) each time; a prefetch queued on a stream may
 *  show only once the stream reaches it. An empty buffer gives NONE.
 *  [in] buffer; [out] out_location.
 *  CUMEM_ERROR_NOT_SUPPORTED: memory from the managed pool on a driver that
 *  cannot query it (as for cumem_buffer_advise). */
CUMEM_API cumem_status_t cumem_buffer_get_last_prefetch_location(
    const cumem_buffer_t* buffer, cumem_location_t* out_location);
/** A new copy of `src` (cuda.core's copy_to with no destination): a buffer
 *  of src's size allocated from src's own resource, ordered on `stream`,
 *  into which src is copied on `stream` (as cumem_buffer_copy_to). The
 *  new buffer's deallocation stream is `stream` (its allocation stream).
 *  [in] src; [in][optional] stream; [out] out_buffer (a new buffer the
 *  caller releases). An empty src gives an empty buffer.
 *  CUMEM_ERROR_INVALID_ARGUMENT: src has no resource (wrapped, registered
 *  or DLPack memory): give a destination to cumem_buffer_copy_to instead.
 *  CUMEM_ERROR_NOT_SUPPORTED: src's resource cannot allocate (an imported
 *  one). The resource's allocation errors (CUMEM_ERROR_OUT_OF_MEMORY, ...)
 *  and the copy's; when the copy fails, the new buffer is freed again. */
CUMEM_API cumem_status_t cumem_buffer_copy_to_new(const cumem_buffer_t* src,
                                                  const cumem_stream_t* stream,
                                                  cumem_buffer_t** out_buffer);

/* ------------------------------------------------------------------------ */
/* Batches: many copies, prefetches or discards in one call                  */
/* ------------------------------------------------------------------------ */
/*
 * cuda.core's copy_batch, prefetch_batch, discard_batch and
 * discard_prefetch_batch. One call submits many operations to one stream:
 * the batch as a whole runs in stream order (after the work queued on the
 * stream before it, before the work queued after it), and the operations of
 * a batch run in no particular order among themselves, which is why a
 * batch must not hold dependent operations (checked, see below). The driver
 * takes a batch in one call (cuMemcpyBatchAsync from CUDA 12.8,
 * cuMemPrefetchBatchAsync, cuMemDiscardBatchAsync and
 * cuMemDiscardAndPrefetchBatchAsync from CUDA 13.0), which costs the host
 * far less than one call per operation and never synchronises the device.
 *
 * Where the driver lacks the batch call, copies and prefetches give the same
 * result by one cuMemcpyAsync or cuMemPrefetchAsync per operation (a loop),
 * and cumem_batch_get_statistics says which way batches went; discards have
 * no single-operation form, so they need CUDA 13.0 (else
 * CUMEM_ERROR_NOT_SUPPORTED). Copies also go by the loop on a stream that
 * is capturing a graph (the driver has no graph form of the batch call; the
 * loop's copies are captured as memcpy nodes).
 *
 * Batches of small copies are done by the GPU's SMs instead, as CUB's
 * cub::DeviceMemcpy::Batched does: one kernel launch takes up to 1,637
 * copies, their descriptors passed as the launch's parameters, and costs
 * the host a fraction of what the driver's batch call costs (on CUDA 13
 * that grows with the copies as a loop of cuMemcpyAsync does). A
 * cumem_copy_batch goes this way when it has at least 2 non-empty copies
 * (host-to-host ones aside), each of at most 64 KiB (above that a copy
 * costs the copy engine more time than its submission costs the host),
 * whose sides the stream's device can load and store: device memory of
 * that device, managed memory, pinned memory of a libcumem resource of
 * that device (foreign pinned memory, wrapped or registered, is left to the
 * driver); with no source read during the call
 * (CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL) and no copy asking for
 * CUMEM_COPY_OVERLAP_PREFER_COMPUTE. Such copies run in stream order as a
 * kernel of the stream, so they compete for SMs and memory bandwidth with
 * the kernels running beside them; CUMEM_COPY_OVERLAP_PREFER_COMPUTE on any
 * copy of a batch keeps it on the copy engines (the way to opt out). A
 * capturing stream captures the launch as kernel nodes, which keep the
 * descriptors. The kernels are PTX of CUDA 13.0, loaded once per device on
 * its first such batch; where the driver cannot load or run them (a driver
 * older than 13.0), batches go the driver's way for the rest of the
 * process. cumem_copy_batch_raw never takes this path (libcumem cannot tell
 * what its pointers point to). cumem_batch_get_statistics counts these
 * batches (copy_batches_by_kernel, copies_by_kernel).
 *
 * The driver refuses the legacy default stream for batch calls; libcumem
 * accepts it (a NULL stream, as everywhere): the batch is then queued on
 * the per-thread default stream between two event waits, so that it runs
 * exactly where a call on the legacy default stream would (after the work
 * queued before it on the legacy stream and on every blocking stream, and
 * before what is queued after it there).
 *
 * Validation, before anything is queued (a failing call queues nothing,
 * unless the driver itself fails part-way, which the message says): every
 * array a call requires must be non-NULL when count > 0 (count 0 does
 * nothing; the arrays marked optional may be NULL); every buffer must be a
 * live handle (its index is named, such as 'dsts[3]') and open
 * (CUMEM_ERROR_BUFFER_CLOSED naming the index); every
 * region must lie inside its buffer (CUMEM_ERROR_OUT_OF_RANGE naming the
 * index); and no operation may depend on another of the same batch: a
 * destination region may not overlap any source or destination region of
 * the batch (its own source included), and managed ranges of one batch may
 * not overlap each other (CUMEM_ERROR_INVALID_ARGUMENT naming both
 * indices). Sources may overlap each other. Empty regions are allowed and
 * copy nothing.
 */

/** Where the driver reads a batch copy's source (CUmemcpySrcAccessOrder;
 *  cuda.core's MemcpySrcAccessOrder). The destination is always written in
 *  stream order. */
typedef enum cumem_copy_src_access_order_t {
  /** In stream order: the work queued before may still write the source
   *  (the default; what every other copy does). */
  CUMEM_COPY_SRC_ACCESS_ORDER_STREAM = 0,
  /** Out of stream order, and finished when the call returns: the source
   *  may be reused or freed at once (ephemeral sources such as stack
   *  memory). No work queued before may still write it. libcumem's loop
   *  waits for the stream before returning to keep that promise. */
  CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL = 1,
  /** Out of stream order, possibly after the call returns: the source must
   *  stay unchanged until the copy is done in stream order, and no work
   *  queued before may still write it (host memory allocated outside
   *  CUDA). */
  CUMEM_COPY_SRC_ACCESS_ORDER_ANY = 2,
  CUMEM_COPY_SRC_ACCESS_ORDER_FORCE32 = 0x7FFFFFFF
} cumem_copy_src_access_order_t;

/** A batch copy's overlap hint (CUmemcpyFlags; cuda.core's MemcpyOverlapMode). */
typedef enum cumem_copy_overlap_mode_t {
  CUMEM_COPY_OVERLAP_DEFAULT = 0, /**< the driver's own scheduling (default) */
  /** Prefer overlapping the copy with compute work on the SMs
   *  (CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE); a hint the driver may
   *  ignore (discrete GPUs do). A batch with such a copy stays on the copy
   *  engines: libcumem's SM copies of small batches (see the section's
   *  notes) would compete with that compute. */
  CUMEM_COPY_OVERLAP_PREFER_COMPUTE = 1,
  CUMEM_COPY_OVERLAP_MODE_FORCE32 = 0x7FFFFFFF
} cumem_copy_overlap_mode_t;

/** Options of batch copies (CUmemcpyAttributes; cuda.core's CopyOptions).
 *  Zero means the defaults: stream-ordered source, no hints, default
 *  overlap. */
typedef struct cumem_copy_options_t {
  uint32_t struct_size;
  /** Default (0): CUMEM_COPY_SRC_ACCESS_ORDER_STREAM. */
  cumem_copy_src_access_order_t src_access_order;
  /** Where the source is best read from: CUMEM_LOCATION_NONE (default: no
   *  hint), a device, the host, a host NUMA node or the calling thread's
   *  node. A hint for managed memory on devices with concurrent managed
   *  access, and for pageable memory a device can access; ignored for
   *  other memory. It moves no page. */
  cumem_location_t src_location_hint;
  /** The same for the destination. */
  cumem_location_t dst_location_hint;
  /** Default (0): CUMEM_COPY_OVERLAP_DEFAULT. */
  cumem_copy_overlap_mode_t overlap_mode;
} cumem_copy_options_t;
#define CUMEM_COPY_OPTIONS_INIT                                                      \
  { (uint32_t)sizeof(cumem_copy_options_t), CUMEM_COPY_SRC_ACCESS_ORDER_STREAM,       \
    { CUMEM_LOCATION_NONE, 0 }, { CUMEM_LOCATION_NONE, 0 }, CUMEM_COPY_OVERLAP_DEFAULT }
CUMEM_API void cumem_copy_options_init(cumem_copy_options_t* options);

/** Copies `count` regions in one batch ordered on `stream` (cuda.core's
 *  copy_batch): copy i takes sizes[i] bytes from srcs[i] at src_offsets[i]
 *  to dsts[i] at dst_offsets[i].
 *  [in][optional] stream (NULL: the legacy default stream of the first
 *  buffer's device that has one; see the section's notes); [in] dsts,
 *  srcs: count buffer handles each (a buffer may appear in several copies);
 *  [in][optional] dst_offsets, src_offsets: count offsets each (NULL: all
 *  0); [in][optional] sizes: count byte counts (NULL: whole buffers: copy i
 *  takes all of srcs[i] past its offset, and dsts[i] past its offset must be
 *  exactly that long, else CUMEM_ERROR_SIZE_MISMATCH naming i);
 *  [in][optional] options: NULL (defaults for every copy), or an array of
 *  num_options structs: 1 (one for every copy) or count (one per copy).
 *  Every struct of the array has the same struct_size, which is also the
 *  array's stride, and follows the struct_size rules (an older caller's
 *  smaller struct works).
 *  Copies between pageable host buffers are done by the host (memcpy after
 *  waiting for the stream), as cumem_buffer_copy_to does; a batch of small
 *  copies goes to libcumem's copy kernels (SM copies; see the section's
 *  notes for which); every other copy goes to the driver. Errors besides the section's: CUMEM_ERROR_INVALID_ARGUMENT
 *  for num_options other than 0 (with options NULL), 1 or count, struct_size
 *  differing between the structs, an unknown src_access_order or
 *  overlap_mode, a hint of an unknown location type or a host NUMA node the
 *  system does not have, CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL on a
 *  stream that is capturing; CUMEM_ERROR_NO_DEVICE: a hint names a device
 *  that does not exist; CUMEM_ERROR_OUT_OF_RANGE: offsets or sizes that
 *  overflow. Thread-safe. */
CUMEM_API cumem_status_t cumem_copy_batch(const cumem_stream_t* stream, size_t count,
                                          cumem_buffer_t* const* dsts, const size_t* dst_offsets,
                                          const cumem_buffer_t* const* srcs,
                                          const size_t* src_offsets, const size_t* sizes,
                                          const cumem_copy_options_t* options,
                                          size_t num_options);
/** The same over raw pointers (device, pinned, managed or pageable host
 *  memory, any mix), for memory that is not in buffers: copy i takes
 *  sizes[i] bytes from srcs[i] + src_offsets[i] to dsts[i] + dst_offsets[i].
 *  [in] sizes: required; [in][optional] dst_offsets, src_offsets (NULL: all
 *  0); the rest as for cumem_copy_batch, whose checks apply to the pointer
 *  ranges: a NULL pointer with a non-zero size, or a range that wraps past
 *  the end of the address space, is CUMEM_ERROR_INVALID_ARGUMENT naming i,
 *  and ranges must not depend on each other. libcumem cannot tell what the
 *  pointers point to (asking the driver would cost what the batch saves):
 *  the driver checks them, and an invalid pointer is its error
 *  (CUMEM_ERROR_DRIVER with CUDA_ERROR_INVALID_VALUE). NULL stream: the
 *  legacy default stream of device 0. */
CUMEM_API cumem_status_t cumem_copy_batch_raw(const cumem_stream_t* stream, size_t count,
                                              void* const* dsts, const size_t* dst_offsets,
                                              const void* const* srcs, const size_t* src_offsets,
                                              const size_t* sizes,
                                              const cumem_copy_options_t* options,
                                              size_t num_options);

/** Prefetches `count` managed buffers in one batch ordered on `stream`
 *  (cuda.core's prefetch_batch): buffers[i]'s pages go to locations[i]
 *  (num_locations == count) or all to locations[0] (num_locations == 1).
 *  Locations as for cumem_buffer_prefetch. Empty buffers are skipped.
 *  [in][optional] stream (NULL: the legacy default stream of the first
 *  buffer's device); [in] buffers; [in] locations.
 *  CUMEM_ERROR_INVALID_ARGUMENT: a buffer that is not managed memory
 *  (named by index), num_locations neither 1 nor count, a location a
 *  prefetch cannot go to, buffers whose memory overlaps (the section's
 *  rule; slices of one buffer that do not overlap are fine);
 *  CUMEM_ERROR_NO_DEVICE: a device location that does not exist. */
CUMEM_API cumem_status_t cumem_prefetch_batch(const cumem_stream_t* stream, size_t count,
                                              cumem_buffer_t* const* buffers,
                                              const cumem_location_t* locations,
                                              size_t num_locations);
/** Discards the contents of `count` managed buffers in one batch ordered on
 *  `stream` (cuda.core's discard_batch; see cumem_buffer_discard).
 *  CUMEM_ERROR_NOT_SUPPORTED: the driver is older than 13.0 (there is no
 *  loop for discards). CUMEM_ERROR_INVALID_ARGUMENT: as for
 *  cumem_prefetch_batch. */
CUMEM_API cumem_status_t cumem_discard_batch(const cumem_stream_t* stream, size_t count,
                                             cumem_buffer_t* const* buffers);
/** Discards the contents of `count` managed buffers and prefetches their
 *  pages (cuda.core's discard_prefetch_batch; see
 *  cumem_buffer_discard_prefetch), locations as for cumem_prefetch_batch.
 *  CUMEM_ERROR_NOT_SUPPORTED: the driver is older than 13.0. */
CUMEM_API cumem_status_t cumem_discard_prefetch_batch(const cumem_stream_t* stream, size_t count,
                                                      cumem_buffer_t* const* buffers,
                                                      const cumem_location_t* locations,
                                                      size_t num_locations);

/** How batches went since the process started (every batch call of
 *  libcumem, from every thread), and what the driver offers. A read while
 *  batches run on other threads sees each counter at some moment of it. */
typedef struct cumem_batch_statistics_t {
  uint32_t struct_size;
  /** The driver has cuMemcpyBatchAsync (CUDA 12.8+); else every copy batch
   *  goes by the loop. False without a driver. */
  cumem_bool_t driver_copy_batch;
  /** The driver has cuMemPrefetchBatchAsync (CUDA 13.0+). */
  cumem_bool_t driver_prefetch_batch;
  /** The driver has cuMemDiscardBatchAsync and
   *  cuMemDiscardAndPrefetchBatchAsync (CUDA 13.0+). */
  cumem_bool_t driver_discard_batch;
  uint64_t copy_batches;        /**< copy batch calls that queued work */
  uint64_t copy_batches_looped; /**< of those, done by one driver call per copy */
  uint64_t copies;              /**< copies in those batches (empty ones not counted) */
  uint64_t copies_looped;       /**< of those, copied by the loop */
  uint64_t prefetch_batches;        /**< prefetch batch calls that queued work */
  uint64_t prefetch_batches_looped; /**< of those, done by one cuMemPrefetchAsync each */
  uint64_t prefetches;              /**< buffers those batches prefetched */
  uint64_t discard_batches;     /**< discard and discard-and-prefetch batch calls that queued work */
  uint64_t discards;            /**< buffers those batches discarded */
  /** Of copy_batches, those done by libcumem's copy kernels on the SMs
   *  (small copies; see the section's notes). */
  uint64_t copy_batches_by_kernel;
  uint64_t copies_by_kernel;    /**< copies those batches made */
} cumem_batch_statistics_t;
#define CUMEM_BATCH_STATISTICS_INIT                                                      \
  { (uint32_t)sizeof(cumem_batch_statistics_t), 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, \
    0u, 0u, 0u, 0u }

/** The batch statistics into *stats (set stats->struct_size first). Works
 *  without a driver (the driver_ fields are then false). Thread-safe. */
CUMEM_API cumem_status_t cumem_batch_get_statistics(cumem_batch_statistics_t* stats);

/* ------------------------------------------------------------------------ */
/* DLPack: buffers as tensors of other libraries, and tensors as buffers     */
/* ------------------------------------------------------------------------ */
/*
 * The tensor structs are those of DLPack 1.1, in <cumem/dlpack.h> (include
 * it to read their fields; this header only names them).
 *
 * Export (cumem_buffer_to_dlpack / _to_dlpack_legacy): the tensor views the
 * buffer's memory and holds a reference to the buffer, so the memory stays
 * valid until the tensor's deleter runs, whatever the caller releases. The
 * deleter may run on any thread and must run exactly once (DLPack's rule);
 * it never fails. While any tensor of a buffer (or of a slice of it) is
 * alive, cumem_buffer_close of that buffer is refused with
 * CUMEM_ERROR_INVALID_STATE (the memory would be freed under the tensor);
 * releasing the buffer's handles is fine.
 * The tensor's data pointer is the first element (buffer pointer plus
 * options.byte_offset) and its byte_offset is 0, as PyTorch and NumPy
 * export. Device, by the buffer's memory kind: host -> kDLCPU (id 0),
 * device -> kDLCUDA, pinned -> kDLCUDAHost, managed -> kDLCUDAManaged (the
 * buffer's device id, or 0 where it has none); options.device_type can
 * present memory another valid way (pinned as kDLCPU; managed as kDLCPU or
 * kDLCUDA).
 *
 * Import (cumem_buffer_from_dlpack / _from_dlpack_legacy): the tensor's
 * memory becomes a buffer that does not own it (owns_memory true, no
 * resource); closing or releasing the buffer's last reference calls the
 * tensor's deleter once, on that thread. On ANY failure the deleter is not
 * called and the caller still owns the tensor. Accepted: DLPack major
 * version 1 (versioned form); devices kDLCPU, kDLCUDA, kDLCUDAHost and
 * kDLCUDAManaged (for the CUDA kinds the driver must know the pointer, and
 * agree with the kind and device id); a compact row-major layout (strides
 * NULL, or equal to those of a compact layout, where dimensions of size 1
 * may have any stride, and tensors with no elements any strides); any
 * dtype of DLDataTypeCode with bits and lanes non-zero (sub-byte types
 * packed, or one byte each with DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
 * at most CUMEM_DLPACK_MAX_NDIM dimensions. The buffer starts at
 * data + byte_offset and holds exactly the tensor's bytes.
 */

struct DLManagedTensorVersioned;
struct DLManagedTensor;

/** The most dimensions libcumem exports or imports. */
#define CUMEM_DLPACK_MAX_NDIM 64

typedef struct cumem_dlpack_options_t {
  uint32_t struct_size;
  /** Element type (DLDataType: code, bits, lanes). bits 0 (the default,
   *  and a zero-filled struct) means bytes: uint8, 8 bits, 1 lane. Export
   *  needs bits * lanes to be a multiple of 8. */
  uint8_t dtype_code;
  uint8_t dtype_bits;
  uint16_t dtype_lanes;
  /** Dimensions in `shape` (and `strides`). With shape NULL it must be 0 or
   *  1, and the tensor is 1-D over the whole buffer after byte_offset,
   *  which must then hold a whole number of elements. With shape set, 0 is
   *  a scalar (one element). */
  int32_t ndim;
  uint32_t reserved0; /**< must be 0 */
  /** [in][optional] ndim sizes, each >= 0; copied by the call. */
  const int64_t* shape;
  /** [in][optional] ndim strides in elements, any sign; NULL: compact
   *  row-major. Copied by the call. */
  const int64_t* strides;
  /** Bytes from the buffer's start to the first element. Default 0. */
  uint64_t byte_offset;
  /** 0 (default): the device follows the memory kind (see above); else a
   *  DLDeviceType to present the memory as: kDLCPU for host-accessible
   *  memory (host, pinned, managed), kDLCUDA for device and managed memory
   *  (not pinned: a consumer copies kDLCUDA memory as device memory, which
   *  the runtime refuses for host memory), kDLCUDAHost for pinned,
   *  kDLCUDAManaged for managed. Any other choice is
   *  CUMEM_ERROR_INVALID_ARGUMENT. */
  int32_t device_type;
  /** Sets DLPACK_FLAG_BITMASK_READ_ONLY (versioned tensors only). */
  cumem_bool_t read_only;
} cumem_dlpack_options_t;
#define CUMEM_DLPACK_OPTIONS_INIT \
  { (uint32_t)sizeof(cumem_dlpack_options_t), 0u, 0u, 0u, 0, 0u, NULL, NULL, 0u, 0, CUMEM_FALSE }
CUMEM_API void cumem_dlpack_options_init(cumem_dlpack_options_t* options);

/** Exports the buffer as a DLPack 1.1 versioned tensor (see above), which
 *  the caller owns: call its deleter exactly once (or hand it to a library
 *  that will). [in][optional] options (NULL: 1-D uint8 over the buffer).
 *  The export orders nothing: DLPack makes the producer answer for the data
 *  being ready for the consumer. Before a CUDA consumer reads, make its
 *  stream wait for the work queued on the buffer (cumem_stream_wait_stream);
 *  before a CPU consumer (kDLCPU: host-accessible pinned or managed memory
 *  read on the host) reads, wait for that work to finish
 *  (cumem_stream_synchronize of the streams it was queued on, or
 *  cumem_device_synchronize). The Python package's __dlpack__ does both
 *  (for a CPU consumer it synchronises the buffer's device, or every device
 *  for pinned memory).
 *  The elements the shape and strides reach must lie inside the buffer.
 *  CUMEM_ERROR_BUFFER_CLOSED: the buffer (or its parent) was closed.
 *  CUMEM_ERROR_INVALID_ARGUMENT: a bad dtype (bits 0 with lanes set, an
 *  unknown code, a size not whole bytes), ndim negative or above
 *  CUMEM_DLPACK_MAX_NDIM, a negative size, shape NULL with ndim > 1, a
 *  buffer that is not a whole number of elements (default shape), element
 *  counts or offsets that overflow, a device_type the memory cannot be
 *  presented as, reserved0 not 0.
 *  CUMEM_ERROR_OUT_OF_RANGE: an element the layout reaches lies before the
 *  buffer's start or past its end (the message gives both extents). */
CUMEM_API cumem_status_t cumem_buffer_to_dlpack(cumem_buffer_t* buffer,
                                                const cumem_dlpack_options_t* options,
                                                struct DLManagedTensorVersioned** out_tensor);
/** The same as a legacy (DLPack 0.x, unversioned) DLManagedTensor, for
 *  consumers that do not know the versioned form.
 *  CUMEM_ERROR_INVALID_ARGUMENT: options.read_only (a legacy tensor cannot
 *  say it), besides the errors of cumem_buffer_to_dlpack. */
CUMEM_API cumem_status_t cumem_buffer_to_dlpack_legacy(cumem_buffer_t* buffer,
                                                       const cumem_dlpack_options_t* options,
                                                       struct DLManagedTensor** out_tensor);

/** Imports a versioned DLPack tensor as a buffer (see above): on success the
 *  buffer owns the tensor and calls its deleter once when closed or last
 *  released; on failure the caller still owns it (its deleter was not
 *  called). Read-only tensors (DLPACK_FLAG_BITMASK_READ_ONLY): libcumem
 *  buffers have no read-only mode, so they are refused unless
 *  allow_read_only is true, by which the caller promises never to write
 *  through the buffer (copies into it, fills, kernels).
 *  CUMEM_ERROR_NOT_SUPPORTED: a major version other than 1, a device type
 *  other than the four above, a read-only tensor without allow_read_only.
 *  CUMEM_ERROR_INVALID_ARGUMENT: ndim negative or above
 *  CUMEM_DLPACK_MAX_NDIM, shape NULL with ndim > 0, a negative size, a
 *  layout that is not compact row-major (the message names the dimension
 *  and both strides), bits or lanes 0, an unknown dtype code, a byte count
 *  that overflows, data NULL with bytes to view, a range that wraps past
 *  the end of the address space, a negative device id, CUDA memory the
 *  driver does not know or knows as another kind or device.
 *  CUMEM_ERROR_NO_DRIVER: a CUDA device type and no driver. */
CUMEM_API cumem_status_t cumem_buffer_from_dlpack(struct DLManagedTensorVersioned* tensor,
                                                  cumem_bool_t allow_read_only,
                                                  cumem_buffer_t** out_buffer);
/** The same for a legacy DLManagedTensor (it has no version and no flags). */
CUMEM_API cumem_status_t cumem_buffer_from_dlpack_legacy(struct DLManagedTensor* tensor,
                                                         cumem_buffer_t** out_buffer);

/* ------------------------------------------------------------------------ */
/* Native streams, and libcumem as PyTorch's and CuPy's allocator            */
/* ------------------------------------------------------------------------ */

/** The raw pair of cumem_resource_allocate_raw / _deallocate_raw with a
 *  native CUstream (as void*) instead of a cumem_stream_t, for allocators
 *  of other libraries that hold only native streams: nothing is created
 *  per call. NULL and CU_STREAM_LEGACY (0x1) mean the legacy default
 *  stream, CU_STREAM_PER_THREAD (0x2) the calling thread's default stream
 *  (of the resource's device). Each thread keeps a small cache of
 *  non-owning stream objects by CUstream value (the first use of a stream
 *  on a thread checks that it belongs to the resource's device:
 *  CUMEM_ERROR_WRONG_DEVICE); libcumem never destroys the CUstream, which
 *  must stay valid while it is used (and, for a caching adaptor, while a
 *  block freed on it is cached). For a resource with no device (host), a
 *  stream other than NULL/legacy needs a driver that can tell a stream's
 *  device (CUDA 12.8+, else CUMEM_ERROR_NOT_SUPPORTED). Errors and
 *  statistics as cumem_resource_allocate_raw / _deallocate_raw. */
CUMEM_API cumem_status_t cumem_resource_allocate_native(cumem_resource_t* resource, size_t size,
                                                        void* native_stream, void** out_ptr);
CUMEM_API cumem_status_t cumem_resource_deallocate_native(cumem_resource_t* resource,
                                                          void* ptr, size_t size,
                                                          void* native_stream);

/*
 * Framework allocator entry points: functions with exactly the signatures
 * PyTorch's torch.cuda.memory.CUDAPluggableAllocator(path, "cumem_torch_alloc",
 * "cumem_torch_free") and CuPy's cupy.cuda.memory.CFunctionAllocator(param,
 * cumem_cupy_malloc, cumem_cupy_free, owner) call.
 *
 * The resource: for each device ordinal, the one given to
 * cumem_framework_set_resource; until one is given (or after it is given
 * NULL), the one the configuration describes (made on first use): the
 * environment variable CUMEM_ALLOC_CONF (read once, at the first choice),
 * or the text last given to cumem_framework_configure; the keys are listed
 * there. With nothing configured (no key but limit), the expandable cache
 * (a caching adaptor with expandable segments, the default pages) over the
 * device's memory resource, where the device has virtual memory
 * management; elsewhere that memory resource itself. The older
 * CUMEM_FRAMEWORK_RESOURCE is CUMEM_ALLOC_CONF's kind in one word:
 * "device" for the device's memory
 * resource (cumem_device_get_memory_resource: the device's default-pool
 * device resource unless cumem_device_set_memory_resource changed it),
 * looked up at each allocation so that it follows that setting; "caching"
 * for a caching adaptor over the device's memory resource, made on first
 * use and then the same object until the device's memory resource changes
 * (a new adaptor is made over the new one; the old keeps serving the frees
 * of its allocations); "expandable" the same with expandable segments
 * (cumem_caching_resource_options_t.expandable: what PyTorch's
 * expandable_segments:True is to its allocator; the default page size).
 * CuPy's `param` may also name a resource directly (a cumem_resource_t*;
 * NULL: the per-device one).
 *
 * Every allocation is remembered (pointer -> resource, size, stream) until
 * it is freed, so that: a free goes to the resource that allocated even if
 * another resource was set meanwhile; CuPy's free needs no size; and a free
 * on another stream than the allocation's is safe: the freeing stream first
 * waits (an event) for the work queued so far on the allocating stream, so
 * the memory is not reused before either stream's work on it is done (if
 * the allocating stream was destroyed meanwhile, the device is
 * synchronised instead).
 * Streams: PyTorch's are used as given; CuPy's calls carry no stream, so
 * they allocate and free on the legacy default stream, which orders them
 * with CuPy's default (null) stream and with every blocking stream
 * (cupy.cuda.Stream() is blocking by default); work on non-blocking streams
 * must be synchronised by the user before its arrays are freed.
 * Stream capture (see "CUDA graphs"): an allocation on a capturing stream
 * is the capture's (graph memory from a pool); memory allocated outside any
 * capture and freed on a capturing stream (a tensor going out of scope
 * during torch.cuda.graph) cannot be freed by a graph, so that free is held
 * and done on the same stream at the first entry-point call after the
 * stream stopped capturing (the CUstream must stay valid until then). The
 * legacy default stream cannot capture and costs no question; another
 * stream costs one driver call at the allocation and one at the free.
 * CuPy's calls carry no stream, so cumem_cupy_malloc cannot know a
 * capture: for CuPy's graph capture, allocate with the stream (the Python
 * package's cumem.cupy.use_libcumem_allocator(follow_streams=True) does,
 * through cumem_torch_alloc and cumem_cupy_free).
 * Statistics: those of the resource (cumem_framework_get_resource, then
 * cumem_resource_get_statistics).
 * Errors: these four calls cannot return a status; a failure leaves its
 * message in cumem_last_error_message() of the calling thread, the alloc
 * calls return NULL and the free calls do nothing (memory they could not
 * free stays allocated and counted), and the message is also written to
 * stderr, prefixed "libcumem: ", since the framework will not show it
 * (set CUMEM_FRAMEWORK_QUIET=1 to silence that). Size 0 gives NULL
 * without failing; freeing NULL does nothing. Thread safety: any thread.
 */

/** Sets the resource the framework entry points use for `device`
 *  (retained until replaced; NULL goes back to the default above, which
 *  without CUMEM_FRAMEWORK_RESOURCE is the device's memory resource: the
 *  same object each time). Allocations made before stay with the resource
 *  that made them. [in] device; [in][optional] resource. Nothing changes
 *  on failure.
 *  CUMEM_ERROR_NO_DEVICE: device negative or not below the device count
 *  (or CUMEM_ERROR_NO_DRIVER).
 *  CUMEM_ERROR_INVALID_ARGUMENT: a resource whose memory the device cannot
 *  access (properties.device_accessible false: the host resource, a host
 *  shared resource, a callback resource of host memory), because PyTorch
 *  and CuPy hand the pointers to kernels; an imported resource
 *  (properties.is_imported), which cannot allocate. Pinned and managed
 *  resources are accepted (the device can access their memory).
 *  CUMEM_ERROR_WRONG_DEVICE: the resource's memory belongs to another
 *  device (properties.device_id is neither -1 nor `device`). */
CUMEM_API cumem_status_t cumem_framework_set_resource(int32_t device,
                                                      cumem_resource_t* resource);
/** The resource the entry points use for `device` now (a new reference),
 *  making the default one if none is made yet: asked twice with nothing
 *  set in between, it gives the same resource.
 *  CUMEM_ERROR_NO_DEVICE: as for cumem_framework_set_resource.
 *  CUMEM_ERROR_INVALID_ARGUMENT: CUMEM_FRAMEWORK_RESOURCE names no kind, or
 *  CUMEM_ALLOC_CONF is refused (see cumem_framework_configure below).
 *  The default resource's own errors when it cannot be made as configured
 *  (CUMEM_ERROR_NOT_SUPPORTED: release_threshold on a device without memory
 *  pools, expandable without virtual memory management, ...). */
CUMEM_API cumem_status_t cumem_framework_get_resource(int32_t device,
                                                      cumem_resource_t** out_resource);
/** PyTorch: `size` bytes on `device`, ordered on the cudaStream_t `stream`. */
CUMEM_API void* cumem_torch_alloc(size_t size, int device, void* stream);
/** PyTorch: frees `ptr` (of `size` bytes, from cumem_torch_alloc) on `stream`. */
CUMEM_API void cumem_torch_free(void* ptr, size_t size, int device, void* stream);
/** CuPy: `size` bytes on `device_id`, from the resource `param` names (NULL:
 *  the device's framework resource). */
CUMEM_API void* cumem_cupy_malloc(void* param, size_t size, int device_id);
/** CuPy: frees `ptr` from cumem_cupy_malloc. */
CUMEM_API void cumem_cupy_free(void* param, void* ptr, int device_id);

/* The configuration of the framework entry points' default resource (since
 * 1.1): one line of `key:value` items separated by commas, as PyTorch's
 * PYTORCH_CUDA_ALLOC_CONF is, read from the environment variable
 * CUMEM_ALLOC_CONF at the first choice of a resource, or given to
 * cumem_framework_configure (which replaces it), e.g.
 * "kind:caching,expandable:true,limit:40GiB". Spaces around keys and values
 * and empty items are ignored; "" (or the variable unset) is the defaults.
 * Sizes are a whole number of bytes with an optional unit, in any case: B,
 * KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000).
 * Booleans are true, false, 1 or 0, in any case. The keys:
 *  - kind: device | caching. device: the memory itself (below); caching: a
 *    caching adaptor over it (cumem_caching_resource_create). Unset, and
 *    no key but limit given: the expandable cache where the device has
 *    virtual memory management, else device (every other key makes the
 *    choice the caller's: kind:device for the device resource itself).
 *  - expandable: boolean, default false; needs kind:caching: the caching
 *    adaptor's expandable segments
 *    (cumem_caching_resource_options_t.expandable, PyTorch's
 *    expandable_segments:True).
 *  - page_size: size, default 0 (8 MiB pages for blocks of 16 MiB or more,
 *    2 MiB for the others); needs expandable:true: the expandable segments'
 *    page (cumem_caching_resource_options_t.page_size).
 *  - limit: size, default 0 (none): a limit adaptor on top of everything
 *    (cumem_limit_resource_create), so that the framework's allocations
 *    together hold at most this many bytes (their requested sizes);
 *    beyond it an allocation fails as out of memory.
 *  - release_threshold: size, default unset: the memory is a new device
 *    memory pool of the framework's own (cumem_device_resource_create with
 *    new_pool), with this release threshold (bytes the pool keeps reserved
 *    after a synchronisation; 0 keeps none), instead of the device's memory
 *    resource, whose default pool others share.
 *  - managed: boolean, default false: the memory is unified memory
 *    (cumem_managed_resource_create with the default options) instead of
 *    the device's memory resource.
 * The memory, without release_threshold or managed, is the device's memory
 * resource (cumem_device_get_memory_resource), followed as it changes. Refused
 * (CUMEM_ERROR_INVALID_ARGUMENT naming the key): an unknown key, an item
 * without a value, a key given twice, a value of the wrong form,
 * expandable without kind:caching, page_size without expandable:true,
 * managed:true with release_threshold or with expandable:true. A bad
 * CUMEM_ALLOC_CONF makes every choice fail with that message (the entry
 * points return NULL; cumem_framework_get_resource returns the status)
 * until cumem_framework_configure replaces it. CUMEM_FRAMEWORK_RESOURCE
 * keeps working: set together with CUMEM_ALLOC_CONF, the two must agree on
 * kind and expandable. What the configuration cannot make (an expandable
 * cache on a device without virtual memory management, a pool on a device
 * without memory pools) fails at the choice with the resource's own error. */

/** Replaces the configuration of the framework entry points' default
 *  resource (the text CUMEM_ALLOC_CONF takes, above; "" is the defaults,
 *  whatever the environment says) for every device. Each device's default
 *  is made anew as configured at its next choice (cumem_framework_get_resource
 *  or an allocation); allocations made before are freed by the resources
 *  that made them, and resources given to cumem_framework_set_resource stay
 *  in use. Parsing needs no driver: what the text asks for is made, and
 *  can fail, at the choice. [in] configuration: NUL-terminated.
 *  Thread-safe; an allocation racing with it on another thread uses the
 *  old or the new configuration. Nothing changes on failure.
 *  CUMEM_ERROR_INVALID_ARGUMENT: configuration NULL, or text refused as
 *  the list above says (the message names the key and the value). */
CUMEM_API cumem_status_t cumem_framework_configure(const char* configuration);

/* ------------------------------------------------------------------------ */
/* IPC: pools and buffers shared between processes                           */
/* ------------------------------------------------------------------------ */
/*
 * The model is cuda.core's. A process that owns an IPC-enabled resource (a
 * device or pinned pool made with ipc_enabled, or a host shared resource)
 * exports it once as an allocation handle: a POSIX file descriptor plus a
 * pool descriptor. It sends both to another process (cumem_ipc_send, or any
 * channel that can carry a file descriptor), which imports the resource
 * (cumem_resource_from_allocation_handle). Each buffer is then shared by its
 * buffer descriptor, plain bytes that may travel over any channel, and
 * opened in the importing process (cumem_buffer_from_ipc_descriptor).
 * Buffers of a legacy device resource share by descriptor alone
 * (cuIpcGetMemHandle), with no allocation handle.
 *
 * Descriptors are CUMEM_IPC_DESCRIPTOR_SIZE bytes: a magic, a format
 * version, the kind of memory, its size and offset, the exporting device's
 * UUID, a random id of the exported pool, the driver's export data and a
 * CRC-32. Every field is validated on the way in: a truncated, corrupted,
 * foreign-version, wrong-pool or wrong-device descriptor, or one whose size
 * passes the memory the driver maps, is refused with
 * CUMEM_ERROR_INVALID_ARGUMENT naming the check that failed.
 *
 * Trust: a peer that can send you descriptors can name memory of pools you
 * imported from it (or from others who shared with you) and nothing else:
 * the driver maps only memory exported from an IPC-enabled pool, and
 * libcumem never reads or writes through a descriptor. It can send you
 * garbage, which is refused, and it can free its memory early, after which
 * your mapping may read stale data (the driver keeps the physical pages of
 * an imported pool alive while it is mapped). It cannot make libcumem crash.
 */

#define CUMEM_IPC_DESCRIPTOR_SIZE 160
/** A pool's or a buffer's descriptor: plain bytes, safe to copy and send. */
typedef struct cumem_ipc_descriptor_t {
  uint8_t bytes[CUMEM_IPC_DESCRIPTOR_SIZE];
} cumem_ipc_descriptor_t;

/** An exported pool: a file descriptor (owned) and the pool's descriptor. */
typedef struct cumem_allocation_handle_t cumem_allocation_handle_t;

/** Exports an IPC-enabled resource (properties.ipc_enabled: a device or
 *  pinned pool made with ipc_enabled, or a host shared resource; an
 *  imported resource may be exported again). A limit, tracking, logging or
 *  failure-callback adaptor exports the resource beneath it, a caching
 *  adaptor its upstream (whose buffers a plain cache's small blocks are). The handle
 *  owns a new file descriptor (close-on-exec).
 *  CUMEM_ERROR_NOT_SUPPORTED: the resource cannot be shared this way (the
 *  message says which resources can). CUMEM_ERROR_OUT_OF_RESOURCES: the
 *  process has no file descriptor left. */
CUMEM_API cumem_status_t cumem_resource_get_allocation_handle(
    const cumem_resource_t* resource, cumem_allocation_handle_t** out_handle);
CUMEM_API cumem_status_t cumem_allocation_handle_retain(cumem_allocation_handle_t* handle);
CUMEM_API cumem_status_t cumem_allocation_handle_release(cumem_allocation_handle_t* handle);
/** The handle's file descriptor, borrowed: valid while the handle lives;
 *  do not close it. */
CUMEM_API cumem_status_t cumem_allocation_handle_fd(const cumem_allocation_handle_t* handle,
                                                    int32_t* out_fd);
/** A duplicate of the handle's file descriptor (close-on-exec), which the
 *  caller owns and closes. CUMEM_ERROR_OUT_OF_RESOURCES: the process has no
 *  file descriptor left. */
CUMEM_API cumem_status_t cumem_allocation_handle_dup_fd(
    const cumem_allocation_handle_t* handle, int32_t* out_fd);
/** The pool's descriptor, to send along with the file descriptor. */
CUMEM_API cumem_status_t cumem_allocation_handle_descriptor(
    const cumem_allocation_handle_t* handle, cumem_ipc_descriptor_t* out_descriptor);
/** Rebuilds a handle from a pool descriptor and a file descriptor received
 *  with it. On success the handle owns `fd`; on failure the caller still
 *  does. CUMEM_ERROR_INVALID_ARGUMENT: the descriptor is not a valid pool
 *  descriptor (the message names the check), or fd < 0. */
CUMEM_API cumem_status_t cumem_allocation_handle_from_fd(
    const cumem_ipc_descriptor_t* pool_descriptor, int32_t fd,
    cumem_allocation_handle_t** out_handle);
/** Rebuilds a handle from a pool descriptor and the number `remote_fd` of
 *  the file descriptor in process `pid`, taken with pidfd_getfd (Linux
 *  5.6+; needs permission to ptrace `pid`). `pid` is the exporter's pid in
 *  this process's PID namespace; the descriptor holds the pid the exporter
 *  has in its own, and a process whose /proc status file (NSpid) says it is
 *  not that one is refused before any fd is taken. Between containers
 *  (PID namespaces that do not see each other) send the handle with
 *  cumem_ipc_send instead.
 *  CUMEM_ERROR_NOT_SUPPORTED: the kernel lacks pidfd_getfd or permission is
 *  refused (the message says which). CUMEM_ERROR_INVALID_ARGUMENT: no such
 *  process in this PID namespace, a process that is not the exporter, no
 *  such file descriptor, or a bad descriptor (the messages name PID
 *  namespaces where they can be the cause).
 *  CUMEM_ERROR_OUT_OF_RESOURCES: this process has no file descriptor left. */
CUMEM_API cumem_status_t cumem_allocation_handle_from_pid(
    const cumem_ipc_descriptor_t* pool_descriptor, int32_t pid, int32_t remote_fd,
    cumem_allocation_handle_t** out_handle);

/** Imports the resource behind an allocation handle: an imported resource
 *  (properties.is_imported) that opens buffer descriptors of that pool but
 *  cannot allocate (CUMEM_ERROR_NOT_SUPPORTED). A host shared file must be
 *  sealed against shrinking and growing, as cumem_host_shared_resource_create
 *  makes it (else CUMEM_ERROR_INVALID_ARGUMENT: "not a shared file
 *  sealed ..."). `device` ([in][optional]):
 *  for device memory the device the pool lives on (its UUID must match:
 *  else CUMEM_ERROR_WRONG_DEVICE); for pinned memory the device whose
 *  context maps it; NULL for a host shared resource. Importing the same
 *  pool again in one process gives the same resource (one more reference).
 *  The handle may be released afterwards. */
CUMEM_API cumem_status_t cumem_resource_from_allocation_handle(
    const cumem_device_t* device, const cumem_allocation_handle_t* handle,
    cumem_resource_t** out_resource);

/** The buffer's descriptor: for buffers of IPC-enabled pools, host shared
 *  resources and legacy device resources, and for buffers opened from a
 *  descriptor (which gives the same descriptor again, so a third process
 *  can open it). CUMEM_ERROR_NOT_SUPPORTED: the buffer's resource cannot
 *  share (the message says why), or it is a slice of pool memory (share
 *  the whole buffer). The pool need not be exported first: libcumem
 *  exports it once itself if needed. */
CUMEM_API cumem_status_t cumem_buffer_get_ipc_descriptor(const cumem_buffer_t* buffer,
                                                         cumem_ipc_descriptor_t* out_descriptor);
/** The descriptor of a native allocation (cumem_resource_allocate_native)
 *  of `resource` at `ptr`, shared as `size` bytes (0: all of it where the
 *  resource knows the size): for IPC-enabled pools (size: the
 *  allocation's), and for the small blocks (128 KiB or less) of a caching
 *  adaptor over one, which are that pool's allocations (an expandable
 *  cache's blocks share as virtual IPC handles instead). Through a limit, tracking, logging or failure-callback
 *  adaptor the resource beneath answers; cumem_resource_get_allocation_handle
 *  does the same, and exports the pool beneath a caching adaptor.
 *  CUMEM_ERROR_NOT_SUPPORTED: the resource cannot share it (the message says
 *  why: not a small block, an upstream without IPC).
 *  CUMEM_ERROR_INVALID_ARGUMENT: `size` larger than the block. */
CUMEM_API cumem_status_t cumem_resource_get_ipc_descriptor_native(
    const cumem_resource_t* resource, const void* ptr, size_t size,
    cumem_ipc_descriptor_t* out_descriptor);
/** Opens a buffer descriptor of another process. `resource` is the
 *  resource imported from the descriptor's pool (pool and host shared
 *  descriptors), or a legacy device resource of the descriptor's device
 *  (legacy descriptors). The mapping is ordered on `stream`
 *  ([in][optional]). Opening one descriptor twice is safe (one mapping,
 *  counted). Closing the buffer unmaps it here, never frees the exporter's
 *  memory; the exporter must not free the memory while others use it (order
 *  it with an IPC event).
 *  Descriptors of pools (device, pinned, host shared) carry a tag made with
 *  the pool's key (which only the pool's own descriptor, sent with its file
 *  descriptor, carries): the tag is checked before any field reaches the
 *  driver, so a descriptor changed in any field, its CRC recomputed or
 *  not, is refused. Legacy descriptors carry none (the driver checks its
 *  own IPC handle).
 *  CUMEM_ERROR_INVALID_ARGUMENT: a bad descriptor (the check is named), a
 *  descriptor of another pool than `resource`'s, a tag that does not match
 *  the pool's key ("authentication tag does not match"), or a size beyond
 *  the range the driver mapped. CUMEM_ERROR_WRONG_DEVICE: a device
 *  descriptor from another device than the resource's. */
CUMEM_API cumem_status_t cumem_buffer_from_ipc_descriptor(
    cumem_resource_t* resource, const cumem_ipc_descriptor_t* descriptor,
    const cumem_stream_t* stream, cumem_buffer_t** out_buffer);

/** Sends one message over a connected Unix domain socket: the handle's file
 *  descriptor (SCM_RIGHTS) and pool descriptor when `handle` is not NULL,
 *  then `count` descriptors (at most 1024 in all, the pool's counted;
 *  NULL only with count 0).
 *  Blocks until all is sent. CUMEM_ERROR_INVALID_STATE: the peer closed the
 *  connection. */
CUMEM_API cumem_status_t cumem_ipc_send(int32_t socket, const cumem_allocation_handle_t* handle,
                                        const cumem_ipc_descriptor_t* descriptors,
                                        uint32_t count);
/** Receives one message sent by cumem_ipc_send: *out_handle gets the
 *  allocation handle if one was sent (else NULL; out_handle may be NULL only
 *  when none is expected, and one that arrives anyway is closed and
 *  refused), and up to `capacity` descriptors into `descriptors`
 *  (*out_count of them). Every file descriptor received and not handed out
 *  is closed. CUMEM_ERROR_INVALID_STATE: the peer closed the connection;
 *  CUMEM_ERROR_INVALID_ARGUMENT: a malformed message, or more descriptors
 *  than `capacity` (that message is read whole and dropped, its file
 *  descriptor closed, so the next message can still be received).
 *  CUMEM_ERROR_OUT_OF_RESOURCES: the message carries a file descriptor and
 *  this process has none left to receive it into; the message is left
 *  unread, so that it can be received once a file descriptor is closed. */
CUMEM_API cumem_status_t cumem_ipc_receive(int32_t socket, cumem_allocation_handle_t** out_handle,
                                           cumem_ipc_descriptor_t* descriptors,
                                           uint32_t capacity, uint32_t* out_count);

/** An interprocess event's handle: the driver's bytes. */
typedef struct cumem_ipc_event_handle_t {
  uint8_t bytes[64];
} cumem_ipc_event_handle_t;
/** The handle of an event created with options.interprocess.
 *  CUMEM_ERROR_INVALID_STATE: the event is not interprocess. */
CUMEM_API cumem_status_t cumem_event_get_ipc_handle(const cumem_event_t* event,
                                                    cumem_ipc_event_handle_t* out_handle);
/** Opens another process's interprocess event on `device`. Recording it
 *  here and waiting on it there (or the other way) orders work between
 *  the processes. CUMEM_ERROR_INVALID_ARGUMENT (or the driver's error): the
 *  bytes are not an event handle the driver can open. */
CUMEM_API cumem_status_t cumem_event_from_ipc_handle(const cumem_device_t* device,
                                                     const cumem_ipc_event_handle_t* handle,
                                                     cumem_event_t** out_event);

/* ------------------------------------------------------------------------ */
/* Programs, libraries, kernels, launch                                      */
/* ------------------------------------------------------------------------ */

typedef enum cumem_code_type_t {
  CUMEM_CODE_CUBIN = 0, /**< machine code for one architecture (default) */
  CUMEM_CODE_PTX = 1,   /**< PTX, compiled by the driver at load */
  CUMEM_CODE_TYPE_FORCE32 = 0x7FFFFFFF
} cumem_code_type_t;

typedef struct cumem_program_options_t {
  uint32_t struct_size;
  cumem_code_type_t code_type; /**< Default (0) CUMEM_CODE_CUBIN. */
  /** Target architecture as NVRTC spells it ("sm_90", "compute_90"); NULL
   *  picks the device's. */
  const char* arch;
  /** Extra NVRTC options ("-std=c++17", "-DN=4", ...), num_options long. */
  const char* const* options;
  /** Expressions to instantiate and name ("my_kernel<float>"), see
   *  cumem_program_lowered_name; num_name_expressions long. */
  const char* const* name_expressions;
  /** Program name in the compiler's messages. NULL: "cumem_program.cu". */
  const char* name;
  uint32_t num_options;
  uint32_t num_name_expressions;
} cumem_program_options_t;
#define CUMEM_PROGRAM_OPTIONS_INIT \
  { (uint32_t)sizeof(cumem_program_options_t), CUMEM_CODE_CUBIN, NULL, NULL, NULL, NULL, 0u, 0u }
CUMEM_API void cumem_program_options_init(cumem_program_options_t* options);

/** The version of NVRTC, loading it if it is not loaded yet (as
 *  cumem_program_compile does), e.g. 13 and 0. Needs no CUDA driver or
 *  device, so it also tells whether compiling can work at all.
 *  [out] out_major, [out] out_minor.
 *  CUMEM_ERROR_NO_COMPILER: NVRTC cannot be loaded (every path tried, and
 *  why each failed, in the message). */
CUMEM_API cumem_status_t cumem_nvrtc_version(int32_t* out_major, int32_t* out_minor);

/** Compiles CUDA C++ `source` (NUL-terminated) with NVRTC for `device`.
 *  NVRTC is loaded on first use: the file $CUMEM_LIBNVRTC names if set;
 *  else libnvrtc.so.13, then libnvrtc.so.12 through the loader's search
 *  path, then in the lib64 folders of $CUDA_HOME, $CUDA_PATH and the toolkit
 *  libcumem was built against.
 *  CUMEM_ERROR_NO_COMPILER: NVRTC cannot be loaded (paths in the message).
 *  CUMEM_ERROR_COMPILATION: the source does not compile; the message holds
 *  the compiler's log.
 *  CUMEM_ERROR_NOT_SUPPORTED: this NVRTC cannot target the device.
 *  CUMEM_ERROR_INVALID_ARGUMENT: an option NVRTC rejects, an unknown arch,
 *  or a compute_XY arch with CUMEM_CODE_CUBIN. */
CUMEM_API cumem_status_t cumem_program_compile(const cumem_device_t* device,
                                               const char* source,
                                               const cumem_program_options_t* options,
                                               cumem_program_t** out_program);
CUMEM_API cumem_status_t cumem_program_retain(cumem_program_t* program);
CUMEM_API cumem_status_t cumem_program_release(cumem_program_t* program);
/** The compiler's log (warnings), NUL-terminated, possibly "". Borrowed. */
CUMEM_API cumem_status_t cumem_program_log(const cumem_program_t* program,
                                           const char** out_log);
/** The compiled code (cubin or PTX as asked). Borrowed. For PTX, *out_size
 *  counts the terminating NUL. */
CUMEM_API cumem_status_t cumem_program_code(const cumem_program_t* program,
                                            const void** out_code,
                                            size_t* out_size);
/** The mangled name of a name expression given at compile time. Borrowed.
 *  CUMEM_ERROR_NOT_FOUND: the expression was not given. */
CUMEM_API cumem_status_t cumem_program_lowered_name(const cumem_program_t* program,
                                                    const char* name_expression,
                                                    const char** out_name);
/** Loads the compiled code (cuLibraryLoadData) for the program's device. */
CUMEM_API cumem_status_t cumem_program_load(const cumem_program_t* program,
                                            cumem_library_t** out_library);

/** Loads precompiled cubin, PTX (NUL-terminated) or fatbin bytes of `size`
 *  bytes, checking that the driver can use them before returning.
 *  CUMEM_ERROR_INVALID_ARGUMENT: size 0, or an image that is neither ELF nor
 *  fatbin and has no NUL within `size` (it cannot be PTX).
 *  CUMEM_ERROR_DRIVER (or the status of the driver's error, such as
 *  CUMEM_ERROR_OUT_OF_MEMORY): the driver rejects the image. */
CUMEM_API cumem_status_t cumem_library_load_data(const cumem_device_t* device,
                                                 const void* image, size_t size,
                                                 cumem_library_t** out_library);
CUMEM_API cumem_status_t cumem_library_retain(cumem_library_t* library);
CUMEM_API cumem_status_t cumem_library_release(cumem_library_t* library);
/** A kernel by its (lowered) name. CUMEM_ERROR_NOT_FOUND: no such kernel. */
CUMEM_API cumem_status_t cumem_library_get_kernel(const cumem_library_t* library,
                                                  const char* name,
                                                  cumem_kernel_t** out_kernel);

CUMEM_API cumem_status_t cumem_kernel_retain(cumem_kernel_t* kernel);
CUMEM_API cumem_status_t cumem_kernel_release(cumem_kernel_t* kernel);

typedef struct cumem_kernel_attributes_t {
  uint32_t struct_size;
  int32_t max_threads_per_block;
  int32_t shared_size_bytes;          /**< static shared memory */
  int32_t const_size_bytes;
  int32_t local_size_bytes;           /**< per thread */
  int32_t num_regs;                   /**< per thread */
  int32_t ptx_version;                /**< such as 90 */
  int32_t binary_version;             /**< such as 90 */
  int32_t max_dynamic_shared_size_bytes;
} cumem_kernel_attributes_t;
#define CUMEM_KERNEL_ATTRIBUTES_INIT \
  { (uint32_t)sizeof(cumem_kernel_attributes_t), 0, 0, 0, 0, 0, 0, 0, 0 }

/** The kernel's attributes on the library's device. */
CUMEM_API cumem_status_t cumem_kernel_get_attributes(const cumem_kernel_t* kernel,
                                                     cumem_kernel_attributes_t* attributes);
/** The CUkernel, as void*. Borrowed. */
CUMEM_API cumem_status_t cumem_kernel_native(const cumem_kernel_t* kernel,
                                             void** out_native);

typedef struct cumem_launch_config_t {
  uint32_t struct_size;
  /** Blocks per grid, x y z; a 0 (the default) counts as 1, so {256}
   *  is 256 x 1 x 1. */
  uint32_t grid[3];
  /** Threads per block, x y z; a 0 (the default) counts as 1. */
  uint32_t block[3];
  uint32_t shared_memory_bytes; /**< dynamic shared memory per block; default 0 */
  /** Thread-block cluster shape; {0,0,0} (default) launches no clusters;
   *  else every dimension must be >= 1. */
  uint32_t cluster[3];
} cumem_launch_config_t;
#define CUMEM_LAUNCH_CONFIG_INIT \
  { (uint32_t)sizeof(cumem_launch_config_t), {0u, 0u, 0u}, {0u, 0u, 0u}, 0u, {0u, 0u, 0u} }
CUMEM_API void cumem_launch_config_init(cumem_launch_config_t* config);

/** Launches `kernel` on `stream` ([in][optional]) with `config` ([in],
 *  required: it carries the grid and block). `args` holds num_args
 *  pointers, each to one argument's value, in the kernel's parameter order
 *  (as cuLaunchKernel takes them; a wrong count is undefined behaviour, as
 *  there). Dynamic shared memory above the kernel's current allowance but
 *  within the device's opt-in limit raises the kernel's allowance for good
 *  (max_dynamic_shared_size_bytes shows it).
 *  CUMEM_ERROR_INVALID_LAUNCH_CONFIG: threads per block
 *  above the kernel's maximum, dynamic shared memory above what the kernel
 *  may use, a cluster shape on a device without clusters or not dividing
 *  the grid (the message names the limit).
 *  CUMEM_ERROR_WRONG_DEVICE: the stream belongs to another device than the
 *  kernel's library. CUMEM_ERROR_INVALID_ARGUMENT: args NULL with
 *  num_args > 0. */
CUMEM_API cumem_status_t cumem_launch(const cumem_kernel_t* kernel,
                                      const cumem_stream_t* stream,
                                      const cumem_launch_config_t* config,
                                      void** args, uint32_t num_args);

/* ------------------------------------------------------------------------ */
/* Logging                                                                   */
/* ------------------------------------------------------------------------ */

/** How much libcumem says. A message is delivered when its level is at most
 *  the level set (cumem_set_log_level). Messages:
 *  - ERROR: a failure nobody else can report (the framework allocator entry
 *    points, which return no status; see CUMEM_FRAMEWORK_QUIET);
 *  - WARNING: something went wrong and was ignored: a tracking resource
 *    released with allocations outstanding (the report), a driver or other
 *    failure while destroying an object or freeing memory where no status
 *    can be returned, an unknown CUMEM_LOG_LEVEL value;
 *  - INFO: what libcumem found or did on its own: the CUDA driver loaded (or
 *    not), NVTX ranges on because a profiling tool is attached, a caching
 *    adaptor giving its cached blocks back to serve a request its upstream
 *    refused;
 *  - DEBUG: every failing call, with the message cumem_last_error_message()
 *    returns and the status name, so that an integrator sees them all.
 *  CUMEM_LOG_LEVEL_OFF is a level to set only: no message has it. */
typedef enum cumem_log_level_t {
  CUMEM_LOG_LEVEL_OFF = 0,
  CUMEM_LOG_LEVEL_ERROR = 1,
  CUMEM_LOG_LEVEL_WARNING = 2,
  CUMEM_LOG_LEVEL_INFO = 3,
  CUMEM_LOG_LEVEL_DEBUG = 4,
  CUMEM_LOG_LEVEL_FORCE32 = 0x7FFFFFFF
} cumem_log_level_t;

/** Receives one message: its level (never OFF), the text (NUL-terminated
 *  UTF-8, without a trailing newline; it may span lines, as a leak report
 *  does), and the user_data given with the callback.
 *  - It is called on the thread that produced the message (the one doing
 *    the work: a caller's thread, or one whose exit or destructor frees
 *    memory), possibly on several threads at once: it must be thread-safe.
 *  - `message` is valid only during the call: copy what you keep.
 *  - It must return normally: no C++ exception, Rust panic or longjmp may
 *    leave it (libcumem calls it from noexcept code; an exception ends the
 *    process).
 *  - It must not call cumem_set_log_callback or cumem_set_log_level, and
 *    should not call libcumem functions on the object the message is about
 *    (a message may come from inside a call that holds that object's lock,
 *    as a caching resource's); other libcumem calls are fine. Messages
 *    that libcumem produces on this thread while the callback runs are
 *    dropped, never delivered recursively. */
typedef void (*cumem_log_callback_t)(cumem_log_level_t level, const char* message,
                                     void* user_data);

/** Sends libcumem's messages to `callback` ([in][optional]) with
 *  `user_data` ([in][optional], passed through untouched), from now on.
 *  NULL restores the default sink: one line per message on stderr,
 *  "libcumem: <level>: <message>" (level "error", "warning", "info" or
 *  "debug"). Thread-safe, also while other threads produce messages: the
 *  callback and its user_data are replaced together (a message goes either
 *  to the old pair or to the new one, never to a mix). A message being
 *  delivered on another thread when this call returns may still reach the
 *  previous callback: keep what its user_data points to alive (or make the
 *  change before starting threads). libcumem keeps a record of four pointers
 *  for each distinct (callback, user_data) pair set, for the life of the
 *  process. CUMEM_ERROR_OUT_OF_MEMORY: no host memory for the record
 *  (nothing changed). */
CUMEM_API cumem_status_t cumem_set_log_callback(cumem_log_callback_t callback, void* user_data);

/** Sets the level: messages at `level` and more important ones are
 *  delivered. Default: CUMEM_LOG_LEVEL_WARNING, or the environment variable
 *  CUMEM_LOG_LEVEL (off, error, warning, info or debug, case-insensitive),
 *  read once, the first time libcumem checks the level (its first message,
 *  or the first cumem_get_log_level / cumem_set_log_level call); an unknown
 *  value is reported once at WARNING and ignored. This call overrides the
 *  variable. Thread-safe; takes effect for messages produced after it.
 *  CUMEM_ERROR_INVALID_ARGUMENT: `level` is not one of the
 *  CUMEM_LOG_LEVEL_ values (nothing changed). */
CUMEM_API cumem_status_t cumem_set_log_level(cumem_log_level_t level);

/** The level in force (see cumem_set_log_level). Thread-safe. */
CUMEM_API cumem_status_t cumem_get_log_level(cumem_log_level_t* out_level);

/* Profiling: a library built with NVTX (the default; the meson option
 * `nvtx`) marks each call of cumem_resource_allocate, _allocate_raw,
 * _deallocate_raw, _allocate_native, _deallocate_native, cumem_buffer_close,
 * _copy_to, _copy_from, _copy_region, _fill, cumem_copy_batch, _batch_raw,
 * cumem_torch_alloc, _free and
 * cumem_cupy_malloc, _free with one NVTX range named after the function, in
 * the NVTX domain "libcumem", on the calling thread. Whether a tool is
 * attached (NVTX_INJECTION64_PATH set, as Nsight Systems does) is decided at
 * the first such call; without one no NVTX function is ever called. */

/* ------------------------------------------------------------------------ */
/* Virtual memory: buffers that grow and shrink, shared chunk by chunk       */
/* ------------------------------------------------------------------------ */
/*
 * The virtual resource is cuda.core's VirtualMemoryResource, built on the
 * driver's virtual memory management (cuMemAddressReserve, cuMemCreate,
 * cuMemMap, cuMemSetAccess). Each allocation reserves a range of address
 * space and maps physical memory over its size rounded up to the
 * granularity (2 MiB on an H200), in chunks of options.chunk_size.
 *
 * - Address space: a buffer reserves twice its rounded size (or
 *   options.reserve_size, when larger), so it can grow to that size in
 *   place. Address space costs no memory and is plentiful (2^47 bytes or
 *   more per process).
 * - Growing (cumem_buffer_resize to a larger size; cuda.core's
 *   modify_allocation): new chunks are mapped after the old ones; the
 *   address stays while the reserved range allows, or while the driver can
 *   reserve the addresses right after it; else the buffer moves to a new
 *   range of twice the new size, where the same chunks are mapped (no copy:
 *   the contents stay, and so does every device's access), and its address
 *   changes. The old addresses stay mapped until the work queued on the
 *   resize's stream is done, so queued work that uses them still finishes
 *   correctly; work queued after the resize must use the new address
 *   (cumem_buffer_ptr). Contents past the old size are undefined.
 * - Shrinking gives back every chunk that lies wholly past the new rounded
 *   size (so memory goes back in steps of chunk_size); the address stays.
 * - Freeing (cumem_buffer_close, cumem_resource_deallocate_raw) and the
 *   chunks and old addresses given back by a resize are unmapped and
 *   released after the work queued on the given stream: at once when the
 *   stream has no work queued, else once an event recorded on it has
 *   completed. The resource checks its events at each of its calls
 *   (allocate, free, resize, access), so memory freed on a busy stream goes
 *   back at the next call after that work ends, or at
 *   cumem_virtual_resource_release_pending; an allocation or growth that
 *   runs out of memory first waits for the pending releases and tries
 *   again. (Not a host function: CUDA forbids the driver calls that unmap
 *   inside one.) A release ordered on a stream that is capturing a graph is
 *   refused (CUMEM_ERROR_INVALID_ARGUMENT).
 * - Allocation is synchronous: the memory is usable on every stream when
 *   the call returns; the stream argument only becomes the buffer's
 *   deallocation stream.
 * - Access: the resource's device and options.peers get access to every
 *   buffer, present and future (cumem_virtual_resource_set_access changes a
 *   peer's), and each chunk mapped later gets the same. Host-located memory
 *   is also made accessible to the host where the driver allows it
 *   (properties.host_accessible says whether it did).
 * - Ownership: every reservation, physical chunk and mapping is released
 *   once and only once whatever sequence of allocate, resize and free
 *   happens, including failures half-way (each call is all or nothing).
 * - Properties: kind CUMEM_RESOURCE_VIRTUAL; memory kind device (device
 *   location) or pinned (host locations); is_stream_ordered true; is_pool
 *   false; ipc_enabled when handle_types includes CUMEM_IPC_HANDLE_POSIX_FD.
 *   Statistics count the sizes asked for (a resize moves bytes_in_use by
 *   the difference); cumem_virtual_statistics_t counts what is mapped.
 *
 * Names (cuda.core -> libcumem): VirtualMemoryResource ->
 * cumem_virtual_resource_create; VirtualMemoryResourceOptions.location_type
 * -> location; .granularity -> granularity; .handle_type -> handle_types;
 * .gpu_direct_rdma -> gpu_direct_rdma; .addr_hint -> address_hint;
 * .addr_align -> alignment; .peers -> peers; .peer_access "r" ->
 * peers_read_only; modify_allocation(buffer, new_size) ->
 * cumem_buffer_resize(buffer, new_size, stream).
 */

/** Which granularity the driver is asked for (cuMemGetAllocationGranularity). */
typedef enum cumem_granularity_t {
  CUMEM_GRANULARITY_RECOMMENDED = 0, /**< the driver's recommended, for speed (default) */
  CUMEM_GRANULARITY_MINIMUM = 1,     /**< the driver's minimum */
  CUMEM_GRANULARITY_FORCE32 = 0x7FFFFFFF
} cumem_granularity_t;

/** A device's access to virtual memory (the driver's CU_MEM_ACCESS_FLAGS_PROT_*). */
typedef enum cumem_access_t {
  CUMEM_ACCESS_NONE = 0,       /**< no access */
  CUMEM_ACCESS_READ = 1,       /**< read only */
  CUMEM_ACCESS_READ_WRITE = 3, /**< read and write */
  CUMEM_ACCESS_FORCE32 = 0x7FFFFFFF
} cumem_access_t;

typedef struct cumem_virtual_resource_options_t {
  uint32_t struct_size;
  /** Where the physical memory lives: CUMEM_LOCATION_NONE (default): on
   *  the resource's device; _DEVICE (id must be the resource's device);
   *  _HOST; _HOST_NUMA (id >= 0). Host memory is pinned memory the device
   *  reaches. */
  cumem_location_t location;
  cumem_granularity_t granularity; /**< default CUMEM_GRANULARITY_RECOMMENDED */
  /** CUMEM_IPC_HANDLE_POSIX_FD to share buffers with other processes
   *  (cumem_buffer_get_virtual_ipc_handle), and/or CUMEM_IPC_HANDLE_FABRIC,
   *  which is used only after creating and releasing one granule with it
   *  succeeded (it needs an IMEX channel). Default 0: no sharing. */
  uint32_t handle_types;
  cumem_bool_t gpu_direct_rdma; /**< GPUDirect RDMA capable chunks; default false */
  /** Where the first buffer's addresses should start (a hint: the driver
   *  may place them elsewhere); a multiple of the granularity. Default 0:
   *  anywhere. */
  uint64_t address_hint;
  /** Every buffer's address is a multiple of this power of two. Default 0:
   *  the granularity (larger values are kept, smaller raised to it). */
  uint64_t alignment;
  /** Bytes of the physical chunks buffers are mapped in, rounded up to the
   *  granularity; a shrink gives memory back in these steps, and mapping
   *  costs per chunk. Default 0: 20 MiB. */
  uint64_t chunk_size;
  /** Address space each buffer reserves at least (rounded up to the
   *  granularity), so that it can grow that far in place. Default 0: twice
   *  the buffer's rounded size. */
  uint64_t reserve_size;
  /** Devices given access to every buffer besides the resource's own
   *  (peer_count of them; NULL only with peer_count 0). Default none. */
  const int32_t* peers;
  uint32_t peer_count;
  /** The peers get read access only. Default false: read and write. */
  cumem_bool_t peers_read_only;
  /** Memory NCCL's user guide calls a qualified allocator's (for
   *  ncclCommRegister and ncclCommWindowRegister), with what this device
   *  allows added to handle_types and gpu_direct_rdma: POSIX fd handles
   *  where the device exports them, FABRIC only where its one-granule
   *  probe succeeds (else left out, not refused: the H200s here have no
   *  IMEX channel), GPUDirect RDMA where the device supports it with
   *  virtual memory. What the caller asked for in handle_types and
   *  gpu_direct_rdma is still required. Default false. */
  cumem_bool_t nccl_qualified;
  uint32_t reserved0; /**< must be 0 */
} cumem_virtual_resource_options_t;
#define CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT                                            \
  { (uint32_t)sizeof(cumem_virtual_resource_options_t), { CUMEM_LOCATION_NONE, 0 },    \
    CUMEM_GRANULARITY_RECOMMENDED, 0u, CUMEM_FALSE, 0u, 0u, 0u, 0u, NULL, 0u, CUMEM_FALSE, \
    CUMEM_FALSE, 0u }
CUMEM_API void cumem_virtual_resource_options_init(cumem_virtual_resource_options_t* options);

/** A virtual memory resource for `device` (kept alive), as the section
 *  above describes. [in][optional] options.
 *  CUMEM_ERROR_INVALID_ARGUMENT: a location other than NONE, DEVICE, HOST
 *  or HOST_NUMA, a DEVICE location naming another device, a negative host
 *  NUMA node, unknown handle_types bits, alignment not 0 or a power of
 *  two, address_hint not a multiple of the granularity, peers NULL with
 *  peer_count > 0.
 *  CUMEM_ERROR_NO_DEVICE: a peer ordinal that does not exist.
 *  CUMEM_ERROR_NOT_SUPPORTED: the device lacks virtual memory management,
 *  the location, a handle type or GPUDirect RDMA with virtual memory (the
 *  message names what); FABRIC was asked for and its one-granule probe
 *  failed (the message has the driver's error); a peer cannot access the
 *  device's memory. */
CUMEM_API cumem_status_t cumem_virtual_resource_create(
    const cumem_device_t* device, const cumem_virtual_resource_options_t* options,
    cumem_resource_t** out_resource);

/** Resizes `buffer` to `new_size` bytes (cuda.core's modify_allocation), as
 *  the section above describes: its contents are kept up to the smaller of
 *  the two sizes; its address (cumem_buffer_ptr) changes only when it had
 *  to move. Ordered on `stream` ([in][optional]: NULL means the buffer's
 *  deallocation stream): old addresses and chunks given back stay mapped
 *  until the work queued there before the call is done. An empty buffer
 *  (size 0) gets a new allocation. All or nothing: on failure the buffer
 *  is as it was (size, address, contents, every device's access; only the
 *  address space it reserves may stay extended).
 *  Thread safety: must not race with other calls on the same buffer (as
 *  cumem_buffer_close).
 *  CUMEM_ERROR_NOT_SUPPORTED: the buffer is not a whole buffer of a
 *  virtual resource (a slice, another resource's, one through an adaptor,
 *  or one mapped from another process). CUMEM_ERROR_INVALID_STATE: a slice
 *  or a DLPack tensor of the buffer is alive (it would keep the old address
 *  or size). CUMEM_ERROR_INVALID_ARGUMENT: new_size 0 (close the buffer
 *  instead), or the resize must release memory (a shrink, a move) ordered
 *  on a stream that is capturing a graph. CUMEM_ERROR_OUT_OF_MEMORY: the
 *  new size is more than the location has, or cannot be mapped (after
 *  waiting for pending releases); the message has both sizes. */
CUMEM_API cumem_status_t cumem_buffer_resize(cumem_buffer_t* buffer, size_t new_size,
                                             const cumem_stream_t* stream);

/** Sets `peer`'s access to every buffer of the virtual resource, present
 *  and future (CUMEM_ACCESS_NONE revokes it). All or nothing: when the
 *  driver refuses it for one buffer, the others get their previous access
 *  back. Buffers whose release is pending keep the access they had.
 *  CUMEM_ERROR_NOT_SUPPORTED: not a virtual resource, or `peer` cannot
 *  access the memory (no peer path). CUMEM_ERROR_INVALID_ARGUMENT: taking
 *  read-write access from the resource's own device, or an access value
 *  not listed. */
CUMEM_API cumem_status_t cumem_virtual_resource_set_access(cumem_resource_t* resource,
                                                           const cumem_device_t* peer,
                                                           cumem_access_t access);
/** *out_access = `peer`'s access to the virtual resource's buffers.
 *  CUMEM_ERROR_NOT_SUPPORTED: not a virtual resource. */
CUMEM_API cumem_status_t cumem_virtual_resource_get_access(const cumem_resource_t* resource,
                                                           const cumem_device_t* peer,
                                                           cumem_access_t* out_access);

/** What a virtual resource maps, and how its buffers grew. */
typedef struct cumem_virtual_statistics_t {
  uint32_t struct_size;
  uint32_t reserved0;       /**< written as 0 */
  uint64_t granularity;     /**< bytes; every mapped size is a multiple */
  uint64_t chunk_size;      /**< bytes of the chunks buffers are mapped in */
  uint64_t bytes_mapped;    /**< physical memory held: live buffers' and pending releases' */
  uint64_t bytes_reserved;  /**< address space reserved by the live buffers */
  uint64_t bytes_pending;   /**< physical memory released once its stream's work is done */
  uint64_t grows_in_place;  /**< resizes that grew at the same address */
  uint64_t grows_moved;     /**< resizes that moved the buffer to a new range */
  uint64_t shrinks;         /**< resizes that gave chunks back */
  uint64_t chunks_created;  /**< physical chunks (driver handles) ever made or imported */
  uint64_t chunks_released; /**< of those, released: the live ones are the difference */
} cumem_virtual_statistics_t;
#define CUMEM_VIRTUAL_STATISTICS_INIT \
  { (uint32_t)sizeof(cumem_virtual_statistics_t), 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u }

/** CUMEM_ERROR_NOT_SUPPORTED: not a virtual resource. */
CUMEM_API cumem_status_t cumem_virtual_resource_get_statistics(
    const cumem_resource_t* resource, cumem_virtual_statistics_t* stats);
/** Waits for the work that every pending release waits for (the streams'
 *  work queued before those frees and resizes), then unmaps and releases
 *  that memory. CUMEM_ERROR_NOT_SUPPORTED: not a virtual resource. */
CUMEM_API cumem_status_t cumem_virtual_resource_release_pending(cumem_resource_t* resource);

/*
 * IPC of a virtual buffer. The buffer's resource must have the POSIX fd
 * handle type. The exporter makes a virtual IPC handle of the buffer: one
 * POSIX file descriptor per chunk (cuMemExportToShareableHandle, owned by
 * the handle) and a descriptor that lists the chunks (their offsets and
 * sizes), the buffer's size, its location, the exporting device's UUID and
 * process id, with a CRC-32. It travels with cumem_ipc_send_virtual (or any
 * channel that carries file descriptors: take the descriptor's bytes and the
 * fds, and rebuild the handle with cumem_virtual_ipc_handle_from_fds); the
 * importer maps the chunks into one range of its own
 * (cumem_buffer_from_virtual_ipc_handle).
 *
 * Validation, as for pool descriptors: every field is checked as if the
 * CRC were absent (magic, version, length, the chunk list contiguous from
 * offset 0 and summing to the mapped size, sizes at the granularity, the
 * buffer's size within it, reserved bytes zero), then against the driver:
 * each fd must import as a chunk (cuMemImportFromShareableHandle), whose
 * location the driver reports must be the descriptor's, on the importing
 * device (for device memory its UUID must be the descriptor's), and map at
 * its offset with its size. A forged or mismatched descriptor is refused
 * with CUMEM_ERROR_INVALID_ARGUMENT (or CUMEM_ERROR_WRONG_DEVICE) naming the
 * check, never a crash; whatever was imported or mapped is given back.
 * Closing the imported buffer unmaps it in the importer; the exporter's
 * memory lives until every process has unmapped it and the exporter freed
 * it. Order the two sides' work with an IPC event.
 */

/** A virtual buffer's chunks as file descriptors, and their descriptor. */
typedef struct cumem_virtual_ipc_handle_t cumem_virtual_ipc_handle_t;

/** Exports the memory of `buffer` (a whole buffer of a virtual resource
 *  made with CUMEM_IPC_HANDLE_POSIX_FD, or a block of an expandable
 *  caching adaptor made with that handle type) as a new handle owning one
 *  close-on-exec file descriptor per chunk (per page of the cache: the
 *  pages that hold the block, which also hold its neighbours' bytes; the
 *  descriptor's offset says where the block begins, and the importer's
 *  buffer is the block alone).
 *  CUMEM_ERROR_NOT_SUPPORTED: not such a buffer (the message says why: a
 *  cache that is not expandable, a cache without the handle type), or a
 *  slice. CUMEM_ERROR_INVALID_ARGUMENT: an empty buffer. */
CUMEM_API cumem_status_t cumem_buffer_get_virtual_ipc_handle(
    const cumem_buffer_t* buffer, cumem_virtual_ipc_handle_t** out_handle);
/** The same for a native allocation (cumem_resource_allocate_native) of
 *  `resource` at `ptr`, shared as `size` bytes: the allocation's size for
 *  a virtual resource; at most the block's for an expandable cache (0: the
 *  whole block, which may be rounded up from what was asked).
 *  CUMEM_ERROR_INVALID_ARGUMENT: no allocation of the resource starts at
 *  `ptr`, or `size` does not fit it. CUMEM_ERROR_NOT_SUPPORTED: as above,
 *  or a resource of another kind (an adaptor above the cache too: pass
 *  the cache itself). */
CUMEM_API cumem_status_t cumem_resource_get_virtual_ipc_handle_native(
    const cumem_resource_t* resource, const void* ptr, size_t size,
    cumem_virtual_ipc_handle_t** out_handle);
CUMEM_API cumem_status_t cumem_virtual_ipc_handle_retain(cumem_virtual_ipc_handle_t* handle);
CUMEM_API cumem_status_t cumem_virtual_ipc_handle_release(cumem_virtual_ipc_handle_t* handle);
/** The number of file descriptors (one per chunk), at least 1. */
CUMEM_API cumem_status_t cumem_virtual_ipc_handle_fd_count(
    const cumem_virtual_ipc_handle_t* handle, uint32_t* out_count);
/** The file descriptor of chunk `index` (in the descriptor's order),
 *  borrowed: valid while the handle lives; do not close it.
 *  CUMEM_ERROR_OUT_OF_RANGE: index >= the count. */
CUMEM_API cumem_status_t cumem_virtual_ipc_handle_fd(const cumem_virtual_ipc_handle_t* handle,
                                                     uint32_t index, int32_t* out_fd);
/** The descriptor's bytes: like snprintf, writes min(capacity, length)
 *  bytes into `bytes` ([out][optional]: NULL with capacity 0) and sets
 *  *out_length to the descriptor's full length (100 + 16 per chunk). */
CUMEM_API cumem_status_t cumem_virtual_ipc_handle_descriptor(
    const cumem_virtual_ipc_handle_t* handle, uint8_t* bytes, size_t capacity,
    size_t* out_length);
/** Rebuilds a handle from a descriptor's `length` bytes and the `count`
 *  file descriptors that came with it, in the descriptor's order. On
 *  success the handle owns the fds; on failure the caller still does.
 *  CUMEM_ERROR_INVALID_ARGUMENT: the descriptor is not valid (the message
 *  names the check), `count` is not its chunk count, or an fd is not open. */
CUMEM_API cumem_status_t cumem_virtual_ipc_handle_from_fds(
    const uint8_t* descriptor, size_t length, const int32_t* fds, uint32_t count,
    cumem_virtual_ipc_handle_t** out_handle);
/** Rebuilds a handle from a descriptor and the numbers `remote_fds` of its
 *  `count` file descriptors in process `pid` (the exporter, which keeps its
 *  handle alive meanwhile), each taken with pidfd_getfd (Linux 5.6+; needs
 *  permission to ptrace `pid`), as cumem_allocation_handle_from_pid takes
 *  a pool's: a process that is not the descriptor's exporter is refused
 *  before any fd is taken. The new fds are the handle's; on failure none
 *  is kept. Errors: those of cumem_virtual_ipc_handle_from_fds and of
 *  cumem_allocation_handle_from_pid. */
CUMEM_API cumem_status_t cumem_virtual_ipc_handle_from_pid(
    const uint8_t* descriptor, size_t length, int32_t pid, const int32_t* remote_fds,
    uint32_t count, cumem_virtual_ipc_handle_t** out_handle);
/** Sends the handle over a connected Unix domain socket (SOCK_STREAM or
 *  SOCK_SEQPACKET), in the messages of cumem_ipc_send: the first carries
 *  the descriptor (in 160-byte pieces) and the first fd, each next one
 *  another fd. Blocks until all is sent; one sender per socket at a time.
 *  CUMEM_ERROR_INVALID_STATE: the peer closed the connection. */
CUMEM_API cumem_status_t cumem_ipc_send_virtual(int32_t socket,
                                                const cumem_virtual_ipc_handle_t* handle);
/** Receives a handle sent by cumem_ipc_send_virtual. Every file descriptor
 *  received and not handed out is closed. CUMEM_ERROR_INVALID_STATE: the
 *  peer closed the connection; CUMEM_ERROR_INVALID_ARGUMENT: a malformed
 *  message or descriptor (after which the connection is out of step:
 *  close it). */
CUMEM_API cumem_status_t cumem_ipc_receive_virtual(int32_t socket,
                                                   cumem_virtual_ipc_handle_t** out_handle);
/** Maps the memory of another process's virtual buffer into this process,
 *  on `device` (which gets read-write access), as a buffer of the
 *  descriptor's size whose resource is a new imported virtual resource
 *  (properties.is_imported; it cannot allocate). The stream
 *  ([in][optional]) becomes the buffer's deallocation stream. Closing the
 *  buffer unmaps it here. The handle may be released afterwards.
 *  CUMEM_ERROR_INVALID_ARGUMENT: a descriptor or fd the driver refuses (see
 *  above). CUMEM_ERROR_WRONG_DEVICE: device memory of another device than
 *  `device`. */
CUMEM_API cumem_status_t cumem_buffer_from_virtual_ipc_handle(
    const cumem_device_t* device, const cumem_virtual_ipc_handle_t* handle,
    const cumem_stream_t* stream, cumem_buffer_t** out_buffer);

/* ------------------------------------------------------------------------ */
/* Communication engines: dma-buf export, unmap notifications                */
/* ------------------------------------------------------------------------ */

/*
 * What NCCL, UCX, NIXL, libfabric and MPI need from an allocator to move
 * its memory over an RDMA network: a dma-buf file descriptor of the memory
 * (to register with the NIC: ibv_reg_dmabuf_mr(pd, offset, length, iova,
 * fd, access), fi_mr_regattr with FI_HMEM_CUDA and a dmabuf), the buffer's
 * offset in it, and a notice when memory they registered stops being valid,
 * so that their registration caches drop it. docs/engines.md pairs libcumem
 * with each engine; whether fabric (multi-node NVLink) export works is
 * cumem_device_properties_t.fabric_export_supported.
 */

/* Bits of the flags of cumem_buffer_get_dmabuf. */
/** The dma-buf is mapped through the PCIe BAR1 aperture
 *  (CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE; where the platform cannot,
 *  the driver refuses: CUMEM_ERROR_NOT_SUPPORTED or CUMEM_ERROR_DRIVER). */
#define CUMEM_DMABUF_MAPPING_PCIE 0x1u

/** A buffer's memory as a dma-buf (cumem_buffer_get_dmabuf). */
typedef struct cumem_dmabuf_t {
  uint32_t struct_size;
  int32_t fd;          /**< the dma-buf file descriptor (close-on-exec), the caller's to close() */
  uint64_t offset;     /**< the buffer's first byte, in bytes from the start of the fd's range */
  uint64_t length;     /**< bytes in the fd's range: a multiple of the host page size */
  uint64_t address;    /**< device address of the range's first byte (the buffer is at address + offset) */
  int32_t device_id;   /**< the device whose memory it is */
  /** CUMEM_TRUE: the range is the whole backing allocation (rounded out to
   *  host pages); CUMEM_FALSE: only the virtual-memory chunks that hold the
   *  buffer, because the driver refused the whole range. */
  cumem_bool_t whole_allocation;
} cumem_dmabuf_t;
#define CUMEM_DMABUF_INIT { (uint32_t)sizeof(cumem_dmabuf_t), 0, 0u, 0u, 0u, 0, 0u }

/** Exports the device memory behind `buffer` as a new dma-buf file
 *  descriptor (cuMemGetHandleForAddressRange with
 *  CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD), for registration with an RDMA NIC.
 *  What is exported is the backing allocation that holds the buffer,
 *  rounded out to whole host pages (the driver takes only page-aligned
 *  ranges), and *dmabuf says where the buffer lies in it:
 *   - a device pool's or a legacy device resource's buffer: the driver's
 *     allocation (cuMemGetAddressRange); an allocation smaller than a page
 *     shares its pages with neighbouring bytes of the same driver memory;
 *   - a virtual resource's buffer: its whole mapped range (every chunk:
 *     one device, one set of properties, as the driver requires; the
 *     driver's own cuMemGetAddressRange would give one chunk of it). When
 *     the driver refuses the whole range, the chunks that hold the buffer
 *     alone are exported instead (whole_allocation is then CUMEM_FALSE);
 *   - a caching adaptor's block: the upstream allocation (segment) that
 *     holds it, as the upstream exports it (offset = the block's address -
 *     the range's start: a block is never exported as if at offset 0); an
 *     expandable cache's block: the pages that hold it;
 *   - other adaptors (limit, aligned, tracking, logging, failure
 *     callback): as their upstream's buffer;
 *   - a slice: its root buffer's allocation, the offset the slice's.
 *  The fd is the caller's: close() it when done (after deregistering the
 *  memory region). It refers to the memory as mapped when it was exported:
 *  after a buffer of a virtual resource was resized, export it again; the
 *  unmap notifications below say when a range stops being valid. Each call
 *  makes a new fd; none is kept by libcumem.
 *  [in] buffer; [in] flags: 0 or CUMEM_DMABUF_MAPPING_PCIE; [out] dmabuf:
 *  set dmabuf->struct_size (CUMEM_DMABUF_INIT) first; it must cover the
 *  whole struct (it hands out the fd). Thread-safe; may run concurrently
 *  with other calls on the buffer except close.
 *  CUMEM_ERROR_INVALID_ARGUMENT: unknown bits in flags; an empty buffer; a
 *  dmabuf struct smaller than cumem_dmabuf_t.
 *  CUMEM_ERROR_NOT_SUPPORTED (the message says which and what to do):
 *  host, pinned (pool, cuMemHostAlloc, registered, host-located virtual)
 *  and managed memory; wrapped memory (cumem_buffer_wrap: no resource
 *  knows its allocation); memory imported from another process; a kind
 *  that does not know its driver allocations (callback, graph memory);
 *  a device without CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED; a driver before
 *  CUDA 11.7 (no cuMemGetHandleForAddressRange); the driver refusing the
 *  export with CUDA_ERROR_NOT_SUPPORTED.
 *  CUMEM_ERROR_DRIVER: the driver refused the range otherwise (its error,
 *  the range and the allocation are in the message).
 *  CUMEM_ERROR_BUFFER_CLOSED: the buffer was closed. */
CUMEM_API cumem_status_t cumem_buffer_get_dmabuf(const cumem_buffer_t* buffer, uint32_t flags,
                                                 cumem_dmabuf_t* dmabuf);

/** Why a range stopped being valid (cumem_unmap_event_t.reason). */
typedef enum cumem_unmap_reason_t {
  /** Virtual memory is unmapped (cuMemUnmap): a virtual resource's buffer
   *  freed (once its stream's work is done), the chunks a shrink gives
   *  back, the old addresses of a buffer that moved as it grew, an
   *  expandable cache's pages given back. Exact range. */
  CUMEM_UNMAP_VIRTUAL = 1,
  /** A caching adaptor gives a block's upstream allocation back (release,
   *  trim, out of memory, destruction): blocks that were handed out of
   *  [address, address + size) are no longer the cache's. Exact range. */
  CUMEM_UNMAP_CACHE_RELEASE = 2,
  /** A legacy device resource frees a cuMemAlloc allocation. Exact range. */
  CUMEM_UNMAP_FREE = 3,
  /** A memory pool gives unused memory back to the system
   *  (cumem_resource_pool_trim, or a trim through an adaptor): the driver
   *  does not say which addresses, so address and size are 0: any memory
   *  of this pool that is not allocated now may be unmapped. */
  CUMEM_UNMAP_POOL_TRIM = 4,
  /** A memory pool that a resource made (new_pool) is destroyed with the
   *  resource: address and size are 0, every address of the pool. */
  CUMEM_UNMAP_POOL_DESTROY = 5,
  CUMEM_UNMAP_REASON_FORCE32 = 0x7FFFFFFF
} cumem_unmap_reason_t;

/** One notification. Read fields only up to struct_size (a newer library
 *  may send a larger struct). */
typedef struct cumem_unmap_event_t {
  uint32_t struct_size;        /**< the size the library filled */
  cumem_unmap_reason_t reason; /**< why the range stopped being valid */
  uint64_t address;            /**< first byte of the range; 0 with size 0: not known (pools) */
  uint64_t size;               /**< bytes */
  uint64_t resource_id;        /**< the resource's number (cumem_snapshot_resource_t.id) */
  int32_t device_id;           /**< the memory's device; -1: host memory (host-located virtual) */
  uint32_t reserved0;          /**< 0 */
} cumem_unmap_event_t;
#define CUMEM_UNMAP_EVENT_INIT \
  { (uint32_t)sizeof(cumem_unmap_event_t), (cumem_unmap_reason_t)0, 0u, 0u, 0u, 0, 0u }

/** Receives one notification, with the user_data given to
 *  cumem_unmap_subscribe. It is called:
 *   - before the memory is given back: the range is still mapped (for
 *     CUMEM_UNMAP_POOL_TRIM and _POOL_DESTROY, the pool's memory is) while
 *     the callback runs, so a registration cache can deregister it first;
 *     once the callback returns, libcumem unmaps or frees it;
 *   - on the thread that gives the memory back, inside the libcumem call
 *     that does (for a virtual resource's stream-ordered frees, possibly a
 *     later call on that resource, or the one that destroys it), while
 *     libcumem may hold that resource's internal lock; possibly on several
 *     threads at once: it must be thread-safe;
 *   - for every subscription, in the order they were made.
 *  `event` is valid only during the call. The callback must return
 *  normally (no C++ exception, Rust panic or longjmp; an exception is
 *  caught and logged), and must not call libcumem functions other than
 *  cumem_unmap_unsubscribe, cumem_status_string and
 *  cumem_last_error_message: a call that takes the lock libcumem holds
 *  would deadlock. Queue the work instead (deregistering memory regions,
 *  ibv_dereg_mr, close() of a dma-buf fd are fine to do in it: they call
 *  no libcumem function). */
typedef void (*cumem_unmap_callback_t)(const cumem_unmap_event_t* event, void* user_data);

/** Subscribes `callback` with `user_data` ([in][optional], passed through
 *  untouched) to the notifications of every resource of the process, from
 *  now on, until cumem_unmap_unsubscribe. The same pair may be subscribed
 *  more than once (it is then called once per subscription).
 *  *out_subscription gets the subscription's number (never 0). Needs no
 *  driver. Thread-safe. With no subscription the notifications cost one
 *  relaxed atomic load where memory is given back.
 *  CUMEM_ERROR_INVALID_ARGUMENT: callback is NULL. CUMEM_ERROR_INVALID_STATE:
 *  called from inside a callback. */
CUMEM_API cumem_status_t cumem_unmap_subscribe(cumem_unmap_callback_t callback, void* user_data,
                                               uint64_t* out_subscription);

/** Ends a subscription. When it returns, the callback is not running for
 *  this subscription on any thread and will not be called again, so its
 *  user_data may be freed; except when called from inside a callback
 *  (its own or another's), where it returns at once and calls of the
 *  subscription already running on other threads finish on their own.
 *  Thread-safe. CUMEM_ERROR_NOT_FOUND: no such subscription (never made,
 *  or ended already). */
CUMEM_API cumem_status_t cumem_unmap_unsubscribe(uint64_t subscription);

/* ------------------------------------------------------------------------ */
/* Seeing the memory: history, snapshots, statistics as JSON, a summary     */
/* ------------------------------------------------------------------------ */

/*
 * PyTorch's memory snapshot for every resource: cumem_snapshot_take gives
 * the segments a resource stack holds (the caching adaptor's upstream
 * allocations and expandable ranges, a virtual resource's ranges, and,
 * while the history is on, each allocation of a pool or of the host
 * resource), the blocks in each (in use, cached, unmapped; their stream,
 * size and requested size, the stack that allocated them) and the totals.
 * With the memory history on (cumem_memory_history_start), every resource
 * also records its allocations and frees, the caching adaptor its segments
 * (upstream allocations, pages mapped and unmapped) and trims, every
 * resource its out-of-memory failures, and libcumem's captures their begin
 * and end, in one bounded ring with times, threads, streams and, when
 * asked, each call's native stack; a snapshot carries those events. The
 * snapshot's JSON (schema "cumem.snapshot", version 1: docs/snapshot-schema.md)
 * is what `cumem snapshot view` turns into a page, and what the Python
 * package converts to PyTorch's format for pytorch.org/memory_viz.
 *
 * With $CUMEM_OOM_SNAPSHOT set to a path, every call that fails with
 * CUMEM_ERROR_OUT_OF_MEMORY first writes a snapshot of the whole process
 * there ("%p" in the path becomes the process id, "%n" the failure's
 * number), and its message ends with "; a memory snapshot was written to
 * PATH". Turn the history on to have the events that led there.
 *
 * Cost: with the history off (the default), one relaxed load and a branch
 * per allocate and free; on, one lock per event; with stacks, also one
 * backtrace(3) per call (the README's "Seeing the memory" has the numbers).
 */

/** What a history event records (PyTorch's trace actions, in its order). */
typedef enum cumem_memory_action_t {
  CUMEM_MEMORY_ACTION_ALLOCATE = 1,      /**< a resource handed out `size` bytes at `address` */
  CUMEM_MEMORY_ACTION_FREE = 2,          /**< and took them back (the free was asked for) */
  CUMEM_MEMORY_ACTION_SEGMENT_ALLOC = 3, /**< the caching adaptor took a segment from its upstream */
  CUMEM_MEMORY_ACTION_SEGMENT_FREE = 4,  /**< and gave it back */
  CUMEM_MEMORY_ACTION_SEGMENT_MAP = 5,   /**< the expandable cache mapped pages at `address` */
  CUMEM_MEMORY_ACTION_SEGMENT_UNMAP = 6, /**< and unmapped them */
  CUMEM_MEMORY_ACTION_OUT_OF_MEMORY = 7, /**< an allocation of `size` failed; detail: the device's free bytes */
  CUMEM_MEMORY_ACTION_TRIM = 8,          /**< memory given back on request (`size` bytes); detail: the bytes asked to keep */
  CUMEM_MEMORY_ACTION_CAPTURE_BEGIN = 9, /**< a capture begun through libcumem on `stream`; detail: its CUstreamCaptureMode */
  CUMEM_MEMORY_ACTION_CAPTURE_END = 10,  /**< and ended */
  CUMEM_MEMORY_ACTION_FORCE32 = 0x7FFFFFFF
} cumem_memory_action_t;

/** What a snapshot segment is. */
typedef enum cumem_segment_kind_t {
  CUMEM_SEGMENT_SEGMENT = 1,       /**< an upstream allocation of a caching adaptor, split into blocks */
  CUMEM_SEGMENT_SMALL = 2,         /**< an upstream allocation holding one small block (<= 128 KiB) of a caching adaptor */
  CUMEM_SEGMENT_EXPANDABLE = 3,    /**< an address range of an expandable cache: pages mapped on demand */
  CUMEM_SEGMENT_VIRTUAL_RANGE = 4, /**< one allocation of a virtual resource: its reserved range */
  CUMEM_SEGMENT_ALLOCATION = 5,    /**< one allocation of a resource that keeps no segments (a pool, the host resource, ...), known from the history or a tracking adaptor */
  CUMEM_SEGMENT_KIND_FORCE32 = 0x7FFFFFFF
} cumem_segment_kind_t;

/** A snapshot block's state. */
typedef enum cumem_block_state_t {
  CUMEM_BLOCK_IN_USE = 1,   /**< handed out */
  CUMEM_BLOCK_CACHED = 2,   /**< free in a cache, ready to be handed out again */
  CUMEM_BLOCK_UNMAPPED = 3, /**< reserved address space with no memory behind it */
  CUMEM_BLOCK_STATE_FORCE32 = 0x7FFFFFFF
} cumem_block_state_t;

typedef struct cumem_memory_history_options_t {
  uint32_t struct_size;
  /** Record each event's native call stack (backtrace(3), named with
   *  dladdr(3) when a snapshot is taken: exported functions by name, the
   *  others as module + offset for addr2line). Default false. */
  cumem_bool_t stacks;
  /** Events kept: the newest, in a ring. 0 (default): 65536; at most
   *  67108864 (2^26). Each takes 64 bytes; stacks are stored once each. */
  uint64_t max_entries;
} cumem_memory_history_options_t;
#define CUMEM_MEMORY_HISTORY_OPTIONS_INIT \
  { (uint32_t)sizeof(cumem_memory_history_options_t), CUMEM_FALSE, 0u }
CUMEM_API void cumem_memory_history_options_init(cumem_memory_history_options_t* options);

/** Turns the memory history on for the whole process (PyTorch's
 *  _record_memory_history), emptied: a second start begins a new history
 *  with its options. Only allocations made from now on get their requested
 *  size and stack in snapshots.
 *  [in][optional] options.
 *  Thread safety: any thread; events of calls running meanwhile may or may
 *  not be recorded.
 *  CUMEM_ERROR_INVALID_ARGUMENT: a bad struct_size, or max_entries above
 *  2^26. CUMEM_ERROR_OUT_OF_MEMORY: no host memory for the ring (the
 *  history is as it was). */
CUMEM_API cumem_status_t cumem_memory_history_start(const cumem_memory_history_options_t* options);
/** Turns the memory history off. Its events stay for snapshots until the
 *  next start; the requested sizes and stacks of live allocations are
 *  forgotten (their frees would go unseen). Never fails; stopping a
 *  history that is off does nothing. Thread safety: any thread. */
CUMEM_API cumem_status_t cumem_memory_history_stop(void);

/** An immutable snapshot of memory (reference counted). */
typedef struct cumem_snapshot_t cumem_snapshot_t;

/** A snapshot of `resource` and its upstreams (the whole stack below it),
 *  or, with `resource` NULL, of every live resource of the process; with
 *  the history's events (those of these resources, and the captures').
 *  Each resource is asked under its own locks, so what one resource says
 *  adds up; resources are asked one after another. A resource that fails
 *  to answer (a driver error reading a pool's attributes) is listed with
 *  its statistics and the error's message (in the JSON), without segments.
 *  [in][optional] resource; [out] out_snapshot.
 *  Thread safety: any thread; the resources may be used meanwhile (a
 *  caching adaptor's threads wait for it while it is read).
 *  CUMEM_ERROR_OUT_OF_MEMORY: no host memory for the snapshot. */
CUMEM_API cumem_status_t cumem_snapshot_take(const cumem_resource_t* resource,
                                             cumem_snapshot_t** out_snapshot);
CUMEM_API cumem_status_t cumem_snapshot_retain(cumem_snapshot_t* snapshot);
CUMEM_API cumem_status_t cumem_snapshot_release(cumem_snapshot_t* snapshot);

/** A snapshot's sums. */
typedef struct cumem_snapshot_totals_t {
  uint32_t struct_size;
  uint32_t resource_count;
  uint64_t segment_count;
  uint64_t block_count;
  uint64_t event_count;
  uint64_t bytes_reserved;     /**< in segments, with memory behind it (unmapped space not counted) */
  uint64_t bytes_in_use;       /**< in blocks handed out (their rounded sizes) */
  uint64_t bytes_requested;    /**< of those, what was asked for (the rounded size where not known) */
  uint64_t bytes_cached;       /**< in blocks free in a cache */
  uint64_t bytes_unmapped;     /**< address space with nothing mapped */
  uint64_t largest_free_block; /**< the largest cached block */
  uint64_t fragmented_bytes;   /**< bytes_cached - largest_free_block: free memory outside the largest free block */
  uint64_t events_recorded;    /**< events the history recorded since it started */
  uint64_t events_dropped;     /**< of those, overwritten before the snapshot (the ring is full) */
  uint64_t time_ns;            /**< when it was taken, since the Unix epoch */
} cumem_snapshot_totals_t;
#define CUMEM_SNAPSHOT_TOTALS_INIT \
  { (uint32_t)sizeof(cumem_snapshot_totals_t), 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u }
CUMEM_API cumem_status_t cumem_snapshot_get_totals(const cumem_snapshot_t* snapshot,
                                                   cumem_snapshot_totals_t* totals);

/** A resource of a snapshot. */
typedef struct cumem_snapshot_resource_t {
  uint32_t struct_size;
  cumem_resource_kind_t kind;
  uint64_t id;          /**< the resource's number in this process (1, 2, ... in creation order) */
  uint64_t upstream_id; /**< the id of its upstream (an adaptor's); 0: none */
  int32_t device_id;    /**< -1: host memory */
  uint32_t reserved0;   /**< written as 0 */
  const char* name;     /**< "caching over pool of device 0", ...; valid while the snapshot lives */
  uint64_t bytes_in_use;      /**< the resource's statistics when taken */
  uint64_t peak_bytes_in_use;
  uint64_t live_allocations;
  uint64_t bytes_reserved;    /**< its segments' sums, as in cumem_snapshot_totals_t */
  uint64_t bytes_cached;
  uint64_t largest_free_block;
} cumem_snapshot_resource_t;
#define CUMEM_SNAPSHOT_RESOURCE_INIT \
  { (uint32_t)sizeof(cumem_snapshot_resource_t), (cumem_resource_kind_t)0, 0u, 0u, 0, 0u, NULL, \
    0u, 0u, 0u, 0u, 0u, 0u }
/** The resource at `index` (0 .. resource_count - 1: the stack from the
 *  resource taken down, or every live resource oldest first).
 *  CUMEM_ERROR_OUT_OF_RANGE: index >= resource_count. */
CUMEM_API cumem_status_t cumem_snapshot_get_resource(const cumem_snapshot_t* snapshot,
                                                     uint64_t index,
                                                     cumem_snapshot_resource_t* resource);

/** A segment of a snapshot: memory a resource holds, its blocks laid end
 *  to end over it (blocks first_block .. first_block + block_count - 1). */
typedef struct cumem_snapshot_segment_t {
  uint32_t struct_size;
  cumem_segment_kind_t kind;
  uint64_t resource_id;
  uint64_t address;
  uint64_t size;
  uint64_t stream;    /**< expandable: the CUstream its pages are mapped for; else 0 */
  int32_t device_id;  /**< -1: host memory */
  uint32_t reserved0; /**< written as 0 */
  uint64_t first_block;
  uint64_t block_count;
} cumem_snapshot_segment_t;
#define CUMEM_SNAPSHOT_SEGMENT_INIT \
  { (uint32_t)sizeof(cumem_snapshot_segment_t), (cumem_segment_kind_t)0, 0u, 0u, 0u, 0u, 0, 0u, 0u, 0u }
/** The segment at `index` (0 .. segment_count - 1, by resource, then by
 *  address). CUMEM_ERROR_OUT_OF_RANGE: index >= segment_count. */
CUMEM_API cumem_status_t cumem_snapshot_get_segment(const cumem_snapshot_t* snapshot,
                                                    uint64_t index,
                                                    cumem_snapshot_segment_t* segment);

/** A block of a snapshot segment. */
typedef struct cumem_snapshot_block_t {
  uint32_t struct_size;
  cumem_block_state_t state;
  uint64_t address;
  uint64_t size;           /**< as held (rounded) */
  uint64_t requested_size; /**< as asked for; 0: not known (allocated while the history was off) */
  uint64_t stream;         /**< in use: the CUstream it was allocated on (if known); cached: the one
                                it was freed on; 1: the legacy default stream; 0: none */
  uint64_t segment;        /**< the index of its segment */
  uint32_t stack_id;       /**< in use: the stack that allocated it (cumem_snapshot_get_frame); 0: none */
  uint32_t reserved0;      /**< written as 0 */
} cumem_snapshot_block_t;
#define CUMEM_SNAPSHOT_BLOCK_INIT \
  { (uint32_t)sizeof(cumem_snapshot_block_t), (cumem_block_state_t)0, 0u, 0u, 0u, 0u, 0u, 0u, 0u }
/** The block at `index` (0 .. block_count - 1, segment after segment).
 *  CUMEM_ERROR_OUT_OF_RANGE: index >= block_count. */
CUMEM_API cumem_status_t cumem_snapshot_get_block(const cumem_snapshot_t* snapshot, uint64_t index,
                                                  cumem_snapshot_block_t* block);

/** A history event of a snapshot. */
typedef struct cumem_memory_event_t {
  uint32_t struct_size;
  cumem_memory_action_t action;
  uint64_t time_ns;     /**< since the Unix epoch */
  uint64_t address;     /**< 0 for out of memory, trims and captures */
  uint64_t size;
  uint64_t stream;      /**< the CUstream (1: the legacy default stream); 0: none */
  uint64_t resource_id; /**< 0 for captures */
  uint64_t detail;      /**< per action (cumem_memory_action_t says) */
  uint32_t thread_id;   /**< the OS thread id (gettid) */
  uint32_t stack_id;    /**< 0: none */
} cumem_memory_event_t;
#define CUMEM_MEMORY_EVENT_INIT \
  { (uint32_t)sizeof(cumem_memory_event_t), (cumem_memory_action_t)0, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u }
/** The event at `index` (0 .. event_count - 1, oldest first).
 *  CUMEM_ERROR_OUT_OF_RANGE: index >= event_count. */
CUMEM_API cumem_status_t cumem_snapshot_get_event(const cumem_snapshot_t* snapshot, uint64_t index,
                                                  cumem_memory_event_t* event);

/** A frame of a recorded stack, innermost first (the first is the libcumem
 *  function the program called). */
typedef struct cumem_stack_frame_t {
  uint32_t struct_size;
  uint32_t depth;       /**< the number of frames of this stack */
  uint64_t address;     /**< the return address */
  const char* function; /**< demangled; "" where the module exports no symbol; valid while the snapshot lives */
  const char* module;   /**< the executable's or shared library's file; valid while the snapshot lives */
  uint64_t offset;      /**< from the function's start, else (no name) from the module's base */
} cumem_stack_frame_t;
#define CUMEM_STACK_FRAME_INIT \
  { (uint32_t)sizeof(cumem_stack_frame_t), 0u, 0u, NULL, NULL, 0u }
/** Frame `index` of the stack `stack_id` (a block's or an event's).
 *  CUMEM_ERROR_NOT_FOUND: the snapshot has no stack of that id (0 is none).
 *  CUMEM_ERROR_OUT_OF_RANGE: index >= the stack's depth. */
CUMEM_API cumem_status_t cumem_snapshot_get_frame(const cumem_snapshot_t* snapshot,
                                                  uint32_t stack_id, uint32_t index,
                                                  cumem_stack_frame_t* frame);

/** The snapshot as JSON (UTF-8, schema "cumem.snapshot" version 1), made on
 *  the first call and kept: *out_json points to `*out_length` bytes and a
 *  NUL, valid while the snapshot lives.
 *  CUMEM_ERROR_OUT_OF_MEMORY: no host memory for the text. */
CUMEM_API cumem_status_t cumem_snapshot_to_json(const cumem_snapshot_t* snapshot,
                                                const char** out_json, size_t* out_length);
/** Writes the snapshot's JSON to the file `path` (replaced whole: through
 *  a temporary file renamed over it). CUMEM_ERROR_INVALID_ARGUMENT: path
 *  NULL or "", or the file cannot be written (the message says why). */
CUMEM_API cumem_status_t cumem_snapshot_write_json(const cumem_snapshot_t* snapshot,
                                                   const char* path);

/** The statistics of `resource` and its upstreams (top first), or with
 *  `resource` NULL of every live resource, as JSON (schema
 *  "cumem.statistics" version 1): each resource's id, kind, name, device,
 *  upstream and statistics, and those of its kind (a caching adaptor's
 *  cumem_caching_statistics_t, a pool's cumem_pool_attributes_t, a virtual
 *  resource's cumem_virtual_statistics_t, a tracking adaptor's outstanding
 *  count). Like snprintf: writes at most capacity - 1 bytes and a NUL into
 *  `buffer` ([out][optional]: NULL with capacity 0) and sets *out_length
 *  to the text's full length.
 *  [in][optional] resource. Thread safety: any thread.
 *  CUMEM_ERROR_INVALID_ARGUMENT: buffer NULL with capacity above 0. */
CUMEM_API cumem_status_t cumem_resource_statistics_json(const cumem_resource_t* resource,
                                                        char* buffer, size_t capacity,
                                                        size_t* out_length);
/** A summary of the process's memory in text, as torch.cuda.memory_summary():
 *  every live resource, adaptors above their upstreams, each with its
 *  statistics and those of its kind. Like snprintf, as
 *  cumem_resource_statistics_json. Thread safety: any thread.
 *  CUMEM_ERROR_INVALID_ARGUMENT: buffer NULL with capacity above 0. */
CUMEM_API cumem_status_t cumem_memory_summary(char* buffer, size_t capacity, size_t* out_length);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CUMEM_CUMEM_H */
