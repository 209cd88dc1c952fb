//! Raw FFI declarations of libcumem's C ABI, written by hand from
//! `include/cumem/cumem.h` (which stays the reference: every comment there
//! applies here). The structs have exactly the header's layout, checked by
//! `tests/layout.rs` against the C compiler's `sizeof`/`offsetof`.
//!
//! Conventions of the translation: C enums are `i32` typedefs with their
//! values as constants (a C enum may carry values Rust enums cannot);
//! `size_t` is `usize`; `cumem_bool_t` is `u32`; opaque handles are
//! zero-sized `#[repr(C)]` structs used only behind pointers; function
//! pointers are `Option<unsafe extern "C" fn ...>` (NULL is `None`).
//! The `_INIT` macros of the header are the `Default` impls of the options
//! and out structs here (struct_size set, the header's defaults).
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_void};

pub mod loader;
use core::marker::{PhantomData, PhantomPinned};
use core::mem::size_of;

// ---------------------------------------------------------------------------
// Version, status, booleans
// ---------------------------------------------------------------------------

pub const CUMEM_VERSION_MAJOR: u32 = 1;
pub const CUMEM_VERSION_MINOR: u32 = 1;
pub const CUMEM_VERSION_PATCH: u32 = 0;
pub const CUMEM_ABI_VERSION: u32 = 1;
pub const fn cumem_make_version(major: u32, minor: u32, patch: u32) -> u32 {
    major * 10000 + minor * 100 + patch
}
pub const CUMEM_VERSION_NUMBER: u32 =
    cumem_make_version(CUMEM_VERSION_MAJOR, CUMEM_VERSION_MINOR, CUMEM_VERSION_PATCH);

pub type cumem_bool_t = u32;
pub const CUMEM_FALSE: cumem_bool_t = 0;
pub const CUMEM_TRUE: cumem_bool_t = 1;

pub type cumem_status_t = i32;
pub const CUMEM_SUCCESS: cumem_status_t = 0;
pub const CUMEM_ERROR_INVALID_ARGUMENT: cumem_status_t = 1;
pub const CUMEM_ERROR_OUT_OF_MEMORY: cumem_status_t = 2;
pub const CUMEM_ERROR_NO_DRIVER: cumem_status_t = 3;
pub const CUMEM_ERROR_NO_DEVICE: cumem_status_t = 4;
pub const CUMEM_ERROR_NOT_SUPPORTED: cumem_status_t = 5;
pub const CUMEM_ERROR_BUFFER_CLOSED: cumem_status_t = 6;
pub const CUMEM_ERROR_SIZE_MISMATCH: cumem_status_t = 7;
pub const CUMEM_ERROR_OUT_OF_RANGE: cumem_status_t = 8;
pub const CUMEM_ERROR_WRONG_DEVICE: cumem_status_t = 9;
pub const CUMEM_ERROR_INVALID_STATE: cumem_status_t = 10;
pub const CUMEM_ERROR_DRIVER: cumem_status_t = 11;
pub const CUMEM_ERROR_NO_COMPILER: cumem_status_t = 12;
pub const CUMEM_ERROR_COMPILATION: cumem_status_t = 13;
pub const CUMEM_ERROR_NOT_FOUND: cumem_status_t = 14;
pub const CUMEM_ERROR_INVALID_LAUNCH_CONFIG: cumem_status_t = 15;
pub const CUMEM_ERROR_OUT_OF_RESOURCES: cumem_status_t = 16;
pub const CUMEM_ERROR_INTERNAL: cumem_status_t = 99;

// ---------------------------------------------------------------------------
// Opaque handles
// ---------------------------------------------------------------------------

macro_rules! opaque {
    ($($name:ident),* $(,)?) => {$(
        /// Opaque handle: only ever used behind a pointer.
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}
opaque!(
    cumem_device_t,
    cumem_stream_t,
    cumem_event_t,
    cumem_resource_t,
    cumem_buffer_t,
    cumem_program_t,
    cumem_library_t,
    cumem_kernel_t,
    cumem_allocation_handle_t,
    cumem_graph_t,
    DLManagedTensorVersioned,
    DLManagedTensor,
);

// ---------------------------------------------------------------------------
// Enums
// ---------------------------------------------------------------------------

pub type cumem_location_type_t = i32;
pub const CUMEM_LOCATION_NONE: cumem_location_type_t = 0;
pub const CUMEM_LOCATION_DEVICE: cumem_location_type_t = 1;
pub const CUMEM_LOCATION_HOST: cumem_location_type_t = 2;
pub const CUMEM_LOCATION_HOST_NUMA: cumem_location_type_t = 3;
pub const CUMEM_LOCATION_HOST_NUMA_CURRENT: cumem_location_type_t = 4;

pub type cumem_memory_kind_t = i32;
pub const CUMEM_MEMORY_HOST: cumem_memory_kind_t = 0;
pub const CUMEM_MEMORY_DEVICE: cumem_memory_kind_t = 1;
pub const CUMEM_MEMORY_PINNED: cumem_memory_kind_t = 2;
pub const CUMEM_MEMORY_MANAGED: cumem_memory_kind_t = 3;

pub const CUMEM_IPC_HANDLE_POSIX_FD: u32 = 0x1;
pub const CUMEM_IPC_HANDLE_FABRIC: u32 = 0x8;

pub type cumem_priority_mode_t = i32;
pub const CUMEM_PRIORITY_CLAMP: cumem_priority_mode_t = 0;
pub const CUMEM_PRIORITY_REJECT: cumem_priority_mode_t = 1;

pub type cumem_capture_mode_t = i32;
pub const CUMEM_CAPTURE_MODE_GLOBAL: cumem_capture_mode_t = 0;
pub const CUMEM_CAPTURE_MODE_THREAD_LOCAL: cumem_capture_mode_t = 1;
pub const CUMEM_CAPTURE_MODE_RELAXED: cumem_capture_mode_t = 2;

pub type cumem_resource_kind_t = i32;
pub const CUMEM_RESOURCE_HOST: cumem_resource_kind_t = 1;
pub const CUMEM_RESOURCE_DEVICE: cumem_resource_kind_t = 2;
pub const CUMEM_RESOURCE_PINNED: cumem_resource_kind_t = 3;
pub const CUMEM_RESOURCE_LEGACY_PINNED: cumem_resource_kind_t = 4;
pub const CUMEM_RESOURCE_MANAGED: cumem_resource_kind_t = 5;
pub const CUMEM_RESOURCE_LIMIT: cumem_resource_kind_t = 6;
pub const CUMEM_RESOURCE_LEGACY_DEVICE: cumem_resource_kind_t = 7;
pub const CUMEM_RESOURCE_HOST_SHARED: cumem_resource_kind_t = 8;
pub const CUMEM_RESOURCE_CACHING: cumem_resource_kind_t = 9;
pub const CUMEM_RESOURCE_TRACKING: cumem_resource_kind_t = 10;
pub const CUMEM_RESOURCE_LOGGING: cumem_resource_kind_t = 11;
pub const CUMEM_RESOURCE_CALLBACK: cumem_resource_kind_t = 12;
pub const CUMEM_RESOURCE_ALIGNED: cumem_resource_kind_t = 13;
pub const CUMEM_RESOURCE_GRAPH_MEMORY: cumem_resource_kind_t = 15;
pub const CUMEM_RESOURCE_FAILURE_CALLBACK: cumem_resource_kind_t = 16;

pub type cumem_advice_t = i32;
pub const CUMEM_ADVICE_SET_READ_MOSTLY: cumem_advice_t = 1;
pub const CUMEM_ADVICE_UNSET_READ_MOSTLY: cumem_advice_t = 2;
pub const CUMEM_ADVICE_SET_PREFERRED_LOCATION: cumem_advice_t = 3;
pub const CUMEM_ADVICE_UNSET_PREFERRED_LOCATION: cumem_advice_t = 4;
pub const CUMEM_ADVICE_SET_ACCESSED_BY: cumem_advice_t = 5;
pub const CUMEM_ADVICE_UNSET_ACCESSED_BY: cumem_advice_t = 6;

pub type cumem_code_type_t = i32;
pub const CUMEM_CODE_CUBIN: cumem_code_type_t = 0;
pub const CUMEM_CODE_PTX: cumem_code_type_t = 1;

pub type cumem_log_level_t = i32;
pub const CUMEM_LOG_LEVEL_OFF: cumem_log_level_t = 0;
pub const CUMEM_LOG_LEVEL_ERROR: cumem_log_level_t = 1;
pub const CUMEM_LOG_LEVEL_WARNING: cumem_log_level_t = 2;
pub const CUMEM_LOG_LEVEL_INFO: cumem_log_level_t = 3;
pub const CUMEM_LOG_LEVEL_DEBUG: cumem_log_level_t = 4;

pub const CUMEM_DLPACK_MAX_NDIM: u32 = 64;
pub const CUMEM_IPC_DESCRIPTOR_SIZE: usize = 160;

// ---------------------------------------------------------------------------
// Structs (layout checked by tests/layout.rs)
// ---------------------------------------------------------------------------

const fn struct_size<T>() -> u32 {
    size_of::<T>() as u32
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct cumem_location_t {
    pub type_: cumem_location_type_t,
    pub id: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_device_properties_t {
    pub struct_size: u32,
    pub ordinal: i32,
    pub name: [c_char; 256],
    pub uuid: [u8; 16],
    pub compute_capability_major: i32,
    pub compute_capability_minor: i32,
    pub total_memory: u64,
    pub multiprocessor_count: i32,
    pub memory_pools_supported: cumem_bool_t,
    pub ipc_handle_types: u32,
    pub managed_memory: cumem_bool_t,
    pub concurrent_managed_access: cumem_bool_t,
    pub virtual_memory_management: cumem_bool_t,
    pub host_numa_id: i32,
    pub pci_domain_id: i32,
    pub pci_bus_id: i32,
    pub pci_device_id: i32,
    pub max_threads_per_block: i32,
    pub max_shared_memory_per_block_optin: i32,
    pub cluster_launch: cumem_bool_t,
    /// Written as 0.
    pub reserved0: u32,
    /// Fabric handles work here (a one-granule cuMemCreate with FABRIC and
    /// its export succeeded; asked once per device). Since 1.1.
    pub fabric_export_supported: cumem_bool_t,
    /// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (cumem_buffer_get_dmabuf). Since 1.1.
    pub dma_buf_supported: cumem_bool_t,
}
impl Default for cumem_device_properties_t {
    /// CUMEM_DEVICE_PROPERTIES_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            ordinal: 0,
            name: [0; 256],
            uuid: [0; 16],
            compute_capability_major: 0,
            compute_capability_minor: 0,
            total_memory: 0,
            multiprocessor_count: 0,
            memory_pools_supported: 0,
            ipc_handle_types: 0,
            managed_memory: 0,
            concurrent_managed_access: 0,
            virtual_memory_management: 0,
            host_numa_id: 0,
            pci_domain_id: 0,
            pci_bus_id: 0,
            pci_device_id: 0,
            max_threads_per_block: 0,
            max_shared_memory_per_block_optin: 0,
            cluster_launch: 0,
            reserved0: 0,
            fabric_export_supported: 0,
            dma_buf_supported: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_stream_options_t {
    pub struct_size: u32,
    /// Synchronises with the legacy default stream; default false (non-blocking).
    pub blocking: cumem_bool_t,
    pub priority: i32,
    pub priority_mode: cumem_priority_mode_t,
}
impl Default for cumem_stream_options_t {
    /// CUMEM_STREAM_OPTIONS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            blocking: CUMEM_FALSE,
            priority: 0,
            priority_mode: CUMEM_PRIORITY_CLAMP,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_event_options_t {
    pub struct_size: u32,
    pub enable_timing: cumem_bool_t,
    pub blocking_sync: cumem_bool_t,
    pub interprocess: cumem_bool_t,
}
impl Default for cumem_event_options_t {
    /// CUMEM_EVENT_OPTIONS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            enable_timing: CUMEM_FALSE,
            blocking_sync: CUMEM_FALSE,
            interprocess: CUMEM_FALSE,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_resource_properties_t {
    pub struct_size: u32,
    pub kind: cumem_resource_kind_t,
    pub device_accessible: cumem_bool_t,
    pub host_accessible: cumem_bool_t,
    pub device_id: i32,
    pub is_stream_ordered: cumem_bool_t,
    pub is_pool: cumem_bool_t,
    pub ipc_enabled: cumem_bool_t,
    pub is_imported: cumem_bool_t,
}
impl Default for cumem_resource_properties_t {
    /// CUMEM_RESOURCE_PROPERTIES_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            kind: 0,
            device_accessible: 0,
            host_accessible: 0,
            device_id: 0,
            is_stream_ordered: 0,
            is_pool: 0,
            ipc_enabled: 0,
            is_imported: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_resource_statistics_t {
    pub struct_size: u32,
    pub reserved0: u32,
    pub bytes_in_use: u64,
    pub peak_bytes_in_use: u64,
    pub live_allocations: u64,
    pub total_allocations: u64,
}
impl Default for cumem_resource_statistics_t {
    /// CUMEM_RESOURCE_STATISTICS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            reserved0: 0,
            bytes_in_use: 0,
            peak_bytes_in_use: 0,
            live_allocations: 0,
            total_allocations: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_host_resource_options_t {
    pub struct_size: u32,
    /// Must be 0.
    pub reserved0: u32,
    /// 0: the default, 64.
    pub alignment: u64,
}
impl Default for cumem_host_resource_options_t {
    /// CUMEM_HOST_RESOURCE_OPTIONS_INIT.
    fn default() -> Self {
        Self { struct_size: struct_size::<Self>(), reserved0: 0, alignment: 0 }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_pool_options_t {
    pub struct_size: u32,
    /// Create a new pool; default false: the default pool.
    pub new_pool: cumem_bool_t,
    /// 0: the default, keep everything.
    pub release_threshold: u64,
    pub max_size: u64,
    pub ipc_enabled: cumem_bool_t,
    /// Keep nothing reserved (the driver's threshold 0).
    pub release_all_unused: cumem_bool_t,
    /// Pinned kind: place the pool on host_numa_id; default false: any node.
    pub use_host_numa_id: cumem_bool_t,
    pub host_numa_id: i32,
}
impl Default for cumem_pool_options_t {
    /// CUMEM_POOL_OPTIONS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            new_pool: CUMEM_FALSE,
            release_threshold: 0,
            max_size: 0,
            ipc_enabled: CUMEM_FALSE,
            release_all_unused: CUMEM_FALSE,
            use_host_numa_id: CUMEM_FALSE,
            host_numa_id: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_managed_resource_options_t {
    pub struct_size: u32,
    pub preferred_location: cumem_location_t,
    /// cuMemAllocManaged even where a managed pool exists; default false.
    pub disable_pool: cumem_bool_t,
}
impl Default for cumem_managed_resource_options_t {
    /// CUMEM_MANAGED_RESOURCE_OPTIONS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            preferred_location: cumem_location_t { type_: CUMEM_LOCATION_NONE, id: 0 },
            disable_pool: CUMEM_FALSE,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_caching_statistics_t {
    pub struct_size: u32,
    pub reserved0: u32,
    pub bytes_cached: u64,
    pub bytes_reserved: u64,
    pub peak_bytes_reserved: u64,
    pub hits: u64,
    pub misses: u64,
    pub stream_reuses: u64,
    pub oom_retries: u64,
    /// Expandable caches: pages ever mapped (since 1.1).
    pub pages_mapped: u64,
    /// Expandable caches: pages ever unmapped (since 1.1).
    pub pages_unmapped: u64,
    /// Private pools of CUDA graph captures (since 1.1).
    pub capture_pools: u64,
    /// Upstream memory those pools hold (since 1.1).
    pub capture_pool_bytes: u64,
    /// Expandable caches: times fragments' pages were unmapped before new
    /// pages were mapped (since 1.1).
    pub recycles: u64,
    /// Expandable caches: of those, times the device was waited for first
    /// (since 1.1).
    pub recycle_waits: u64,
}
impl Default for cumem_caching_statistics_t {
    /// CUMEM_CACHING_STATISTICS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            reserved0: 0,
            bytes_cached: 0,
            bytes_reserved: 0,
            peak_bytes_reserved: 0,
            hits: 0,
            misses: 0,
            stream_reuses: 0,
            oom_retries: 0,
            pages_mapped: 0,
            pages_unmapped: 0,
            capture_pools: 0,
            capture_pool_bytes: 0,
            recycles: 0,
            recycle_waits: 0,
        }
    }
}

/// Options of the caching adaptor (table version 2).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_caching_resource_options_t {
    pub struct_size: u32,
    /// Expandable segments (device memory only); default false.
    pub expandable: cumem_bool_t,
    /// With expandable: bytes mapped at a time; 0: 8 MiB pages for blocks of
    /// 16 MiB or more, 2 MiB for the others.
    pub page_size: u64,
    /// See only captures begun through libcumem (no driver call per call).
    pub libcumem_captures_only: cumem_bool_t,
    /// With expandable: CUMEM_IPC_HANDLE_POSIX_FD makes large blocks shareable.
    pub handle_types: u32,
}
impl Default for cumem_caching_resource_options_t {
    /// CUMEM_CACHING_RESOURCE_OPTIONS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            expandable: CUMEM_FALSE,
            page_size: 0,
            libcumem_captures_only: CUMEM_FALSE,
            handle_types: 0,
        }
    }
}

pub type cumem_allocate_fn = Option<
    unsafe extern "C" fn(size: usize, stream: *mut c_void, user_data: *mut c_void, out_ptr: *mut *mut c_void) -> i32,
>;
pub type cumem_deallocate_fn =
    Option<unsafe extern "C" fn(ptr: *mut c_void, size: usize, stream: *mut c_void, user_data: *mut c_void)>;
pub type cumem_destroy_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;
pub type cumem_release_fn = Option<unsafe extern "C" fn(ptr: *mut c_void, size: usize, user_data: *mut c_void)>;
/// The log callback: runs on the thread that produced the message, must not
/// unwind; `message` is valid only during the call.
pub type cumem_log_callback_t =
    Option<unsafe extern "C" fn(level: cumem_log_level_t, message: *const c_char, user_data: *mut c_void)>;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_resource_callbacks_t {
    pub struct_size: u32,
    pub memory_kind: cumem_memory_kind_t,
    pub allocate: cumem_allocate_fn,
    pub deallocate: cumem_deallocate_fn,
    pub destroy: cumem_destroy_fn,
    pub user_data: *mut c_void,
    pub device_accessible: cumem_bool_t,
    pub host_accessible: cumem_bool_t,
    pub stream_ordered: cumem_bool_t,
    pub reserved0: u32,
}
impl Default for cumem_resource_callbacks_t {
    /// CUMEM_RESOURCE_CALLBACKS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            memory_kind: CUMEM_MEMORY_HOST,
            allocate: None,
            deallocate: None,
            destroy: None,
            user_data: core::ptr::null_mut(),
            device_accessible: CUMEM_FALSE,
            host_accessible: CUMEM_FALSE,
            stream_ordered: CUMEM_FALSE,
            reserved0: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_pool_attributes_t {
    pub struct_size: u32,
    pub reuse_follow_event_dependencies: cumem_bool_t,
    pub reuse_allow_opportunistic: cumem_bool_t,
    pub reuse_allow_internal_dependencies: cumem_bool_t,
    pub release_threshold: u64,
    pub reserved_mem_current: u64,
    pub reserved_mem_high: u64,
    pub used_mem_current: u64,
    pub used_mem_high: u64,
}
impl Default for cumem_pool_attributes_t {
    /// CUMEM_POOL_ATTRIBUTES_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            reuse_follow_event_dependencies: 0,
            reuse_allow_opportunistic: 0,
            reuse_allow_internal_dependencies: 0,
            release_threshold: 0,
            reserved_mem_current: 0,
            reserved_mem_high: 0,
            used_mem_current: 0,
            used_mem_high: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_buffer_info_t {
    pub struct_size: u32,
    pub device_id: i32,
    pub ptr: *mut c_void,
    pub size: u64,
    pub memory_kind: cumem_memory_kind_t,
    pub device_accessible: cumem_bool_t,
    pub host_accessible: cumem_bool_t,
    pub is_slice: cumem_bool_t,
    pub owns_memory: cumem_bool_t,
    /// Written as 0.
    pub reserved0: u32,
}
impl Default for cumem_buffer_info_t {
    /// CUMEM_BUFFER_INFO_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            device_id: 0,
            ptr: core::ptr::null_mut(),
            size: 0,
            memory_kind: CUMEM_MEMORY_HOST,
            device_accessible: 0,
            host_accessible: 0,
            is_slice: 0,
            owns_memory: 0,
            reserved0: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_dlpack_options_t {
    pub struct_size: u32,
    pub dtype_code: u8,
    pub dtype_bits: u8,
    pub dtype_lanes: u16,
    pub ndim: i32,
    pub reserved0: u32,
    pub shape: *const i64,
    pub strides: *const i64,
    pub byte_offset: u64,
    pub device_type: i32,
    pub read_only: cumem_bool_t,
}
impl Default for cumem_dlpack_options_t {
    /// CUMEM_DLPACK_OPTIONS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            dtype_code: 0,
            dtype_bits: 0,
            dtype_lanes: 0,
            ndim: 0,
            reserved0: 0,
            shape: core::ptr::null(),
            strides: core::ptr::null(),
            byte_offset: 0,
            device_type: 0,
            read_only: CUMEM_FALSE,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct cumem_ipc_descriptor_t {
    pub bytes: [u8; CUMEM_IPC_DESCRIPTOR_SIZE],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct cumem_ipc_event_handle_t {
    pub bytes: [u8; 64],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_program_options_t {
    pub struct_size: u32,
    pub code_type: cumem_code_type_t,
    pub arch: *const c_char,
    pub options: *const *const c_char,
    pub name_expressions: *const *const c_char,
    pub name: *const c_char,
    pub num_options: u32,
    pub num_name_expressions: u32,
}
impl Default for cumem_program_options_t {
    /// CUMEM_PROGRAM_OPTIONS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            code_type: CUMEM_CODE_CUBIN,
            arch: core::ptr::null(),
            options: core::ptr::null(),
            name_expressions: core::ptr::null(),
            name: core::ptr::null(),
            num_options: 0,
            num_name_expressions: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_kernel_attributes_t {
    pub struct_size: u32,
    pub max_threads_per_block: i32,
    pub shared_size_bytes: i32,
    pub const_size_bytes: i32,
    pub local_size_bytes: i32,
    pub num_regs: i32,
    pub ptx_version: i32,
    pub binary_version: i32,
    pub max_dynamic_shared_size_bytes: i32,
}
impl Default for cumem_kernel_attributes_t {
    /// CUMEM_KERNEL_ATTRIBUTES_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            max_threads_per_block: 0,
            shared_size_bytes: 0,
            const_size_bytes: 0,
            local_size_bytes: 0,
            num_regs: 0,
            ptx_version: 0,
            binary_version: 0,
            max_dynamic_shared_size_bytes: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_launch_config_t {
    pub struct_size: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_memory_bytes: u32,
    pub cluster: [u32; 3],
}
impl Default for cumem_launch_config_t {
    /// CUMEM_LAUNCH_CONFIG_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            grid: [0, 0, 0],
            block: [0, 0, 0],
            shared_memory_bytes: 0,
            cluster: [0, 0, 0],
        }
    }
}

// ---------------------------------------------------------------------------
// Functions
// ---------------------------------------------------------------------------

loader::functions! {
    // Version, status, errors
    pub fn cumem_version() -> u32;
    pub fn cumem_status_string(status: cumem_status_t) -> *const c_char;
    pub fn cumem_last_error_message() -> *const c_char;
    pub fn cumem_driver_version(out_version: *mut i32) -> cumem_status_t;

    // Devices
    pub fn cumem_device_count(out_count: *mut i32) -> cumem_status_t;
    pub fn cumem_device_get(ordinal: i32, out_device: *mut *mut cumem_device_t) -> cumem_status_t;
    pub fn cumem_device_retain(device: *mut cumem_device_t) -> cumem_status_t;
    pub fn cumem_device_release(device: *mut cumem_device_t) -> cumem_status_t;
    pub fn cumem_device_ordinal(device: *const cumem_device_t, out_ordinal: *mut i32) -> cumem_status_t;
    pub fn cumem_device_get_properties(
        device: *const cumem_device_t,
        props: *mut cumem_device_properties_t,
    ) -> cumem_status_t;
    pub fn cumem_device_get_attribute(
        device: *const cumem_device_t,
        attribute: i32,
        out_value: *mut i32,
    ) -> cumem_status_t;
    pub fn cumem_device_set_current(device: *const cumem_device_t) -> cumem_status_t;
    pub fn cumem_device_synchronize(device: *const cumem_device_t) -> cumem_status_t;
    pub fn cumem_device_memory_info(
        device: *const cumem_device_t,
        out_free: *mut u64,
        out_total: *mut u64,
    ) -> cumem_status_t;
    pub fn cumem_device_can_access_peer(
        device: *const cumem_device_t,
        peer: *const cumem_device_t,
        out_can_access: *mut cumem_bool_t,
    ) -> cumem_status_t;
    pub fn cumem_device_enable_peer_access(
        device: *const cumem_device_t,
        peer: *const cumem_device_t,
    ) -> cumem_status_t;
    pub fn cumem_device_stream_priority_range(
        device: *const cumem_device_t,
        out_least: *mut i32,
        out_greatest: *mut i32,
    ) -> cumem_status_t;

    // Streams
    pub fn cumem_stream_options_init(options: *mut cumem_stream_options_t);
    pub fn cumem_stream_create(
        device: *const cumem_device_t,
        options: *const cumem_stream_options_t,
        out_stream: *mut *mut cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_stream_wrap(
        device: *const cumem_device_t,
        native_stream: *mut c_void,
        out_stream: *mut *mut cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_stream_legacy_default(
        device: *const cumem_device_t,
        out_stream: *mut *mut cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_stream_per_thread_default(
        device: *const cumem_device_t,
        out_stream: *mut *mut cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_stream_retain(stream: *mut cumem_stream_t) -> cumem_status_t;
    pub fn cumem_stream_release(stream: *mut cumem_stream_t) -> cumem_status_t;
    pub fn cumem_stream_native(stream: *const cumem_stream_t, out_native: *mut *mut c_void) -> cumem_status_t;
    pub fn cumem_stream_device(
        stream: *const cumem_stream_t,
        out_device: *mut *mut cumem_device_t,
    ) -> cumem_status_t;
    pub fn cumem_stream_priority(stream: *const cumem_stream_t, out_priority: *mut i32) -> cumem_status_t;
    pub fn cumem_stream_synchronize(stream: *const cumem_stream_t) -> cumem_status_t;
    pub fn cumem_stream_query(stream: *const cumem_stream_t, out_done: *mut cumem_bool_t) -> cumem_status_t;
    pub fn cumem_stream_wait_event(stream: *const cumem_stream_t, event: *const cumem_event_t) -> cumem_status_t;
    pub fn cumem_stream_wait_stream(stream: *const cumem_stream_t, other: *const cumem_stream_t) -> cumem_status_t;

    // Events
    pub fn cumem_event_options_init(options: *mut cumem_event_options_t);
    pub fn cumem_event_create(
        device: *const cumem_device_t,
        options: *const cumem_event_options_t,
        out_event: *mut *mut cumem_event_t,
    ) -> cumem_status_t;
    pub fn cumem_event_retain(event: *mut cumem_event_t) -> cumem_status_t;
    pub fn cumem_event_release(event: *mut cumem_event_t) -> cumem_status_t;
    pub fn cumem_event_record(event: *const cumem_event_t, stream: *const cumem_stream_t) -> cumem_status_t;
    pub fn cumem_event_synchronize(event: *const cumem_event_t) -> cumem_status_t;
    pub fn cumem_event_query(event: *const cumem_event_t, out_done: *mut cumem_bool_t) -> cumem_status_t;
    pub fn cumem_event_elapsed_ms(
        start: *const cumem_event_t,
        end: *const cumem_event_t,
        out_ms: *mut f32,
    ) -> cumem_status_t;
    pub fn cumem_event_native(event: *const cumem_event_t, out_native: *mut *mut c_void) -> cumem_status_t;

    // Resources
    pub fn cumem_host_resource_options_init(o: *mut cumem_host_resource_options_t);
    pub fn cumem_pool_options_init(options: *mut cumem_pool_options_t);
    pub fn cumem_managed_resource_options_init(options: *mut cumem_managed_resource_options_t);
    pub fn cumem_host_resource_create(
        options: *const cumem_host_resource_options_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_device_resource_create(
        device: *const cumem_device_t,
        options: *const cumem_pool_options_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_pinned_resource_create(
        device: *const cumem_device_t,
        options: *const cumem_pool_options_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_legacy_device_resource_create(
        device: *const cumem_device_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_host_shared_resource_create(
        capacity: u64,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_legacy_pinned_resource_create(
        device: *const cumem_device_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_managed_resource_create(
        device: *const cumem_device_t,
        options: *const cumem_managed_resource_options_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_limit_resource_create(
        upstream: *mut cumem_resource_t,
        limit_bytes: u64,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_caching_resource_create(
        upstream: *mut cumem_resource_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_caching_resource_get_statistics(
        resource: *const cumem_resource_t,
        stats: *mut cumem_caching_statistics_t,
    ) -> cumem_status_t;
    pub fn cumem_caching_resource_release_cached(resource: *mut cumem_resource_t) -> cumem_status_t;
    pub fn cumem_caching_resource_trim(resource: *mut cumem_resource_t, keep_bytes: u64) -> cumem_status_t;
    pub fn cumem_caching_resource_release_capture_pool(
        resource: *mut cumem_resource_t,
        capture_id: u64,
    ) -> cumem_status_t;
    pub fn cumem_caching_resource_options_init(options: *mut cumem_caching_resource_options_t);
    pub fn cumem_caching_resource_create_with_options(
        upstream: *mut cumem_resource_t,
        options: *const cumem_caching_resource_options_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_aligned_resource_create(
        upstream: *mut cumem_resource_t,
        alignment: u64,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_tracking_resource_create(
        upstream: *mut cumem_resource_t,
        capture_backtraces: cumem_bool_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_tracking_resource_report(
        resource: *const cumem_resource_t,
        buffer: *mut c_char,
        capacity: usize,
        out_length: *mut usize,
    ) -> cumem_status_t;
    pub fn cumem_tracking_resource_outstanding(
        resource: *const cumem_resource_t,
        out_count: *mut u64,
        out_bytes: *mut u64,
    ) -> cumem_status_t;
    pub fn cumem_logging_resource_create(
        upstream: *mut cumem_resource_t,
        path: *const c_char,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_callback_resource_create(
        device: *const cumem_device_t,
        callbacks: *const cumem_resource_callbacks_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_retain(resource: *mut cumem_resource_t) -> cumem_status_t;
    pub fn cumem_resource_release(resource: *mut cumem_resource_t) -> cumem_status_t;
    pub fn cumem_resource_allocate(
        resource: *mut cumem_resource_t,
        size: usize,
        stream: *const cumem_stream_t,
        out_buffer: *mut *mut cumem_buffer_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_allocate_raw(
        resource: *mut cumem_resource_t,
        size: usize,
        stream: *const cumem_stream_t,
        out_ptr: *mut *mut c_void,
    ) -> cumem_status_t;
    pub fn cumem_resource_deallocate_raw(
        resource: *mut cumem_resource_t,
        ptr: *mut c_void,
        size: usize,
        stream: *const cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_get_properties(
        resource: *const cumem_resource_t,
        props: *mut cumem_resource_properties_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_get_statistics(
        resource: *const cumem_resource_t,
        stats: *mut cumem_resource_statistics_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_reset_peak(resource: *mut cumem_resource_t) -> cumem_status_t;
    pub fn cumem_resource_pool_get_attributes(
        resource: *const cumem_resource_t,
        attributes: *mut cumem_pool_attributes_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_pool_set_attributes(
        resource: *mut cumem_resource_t,
        attributes: *const cumem_pool_attributes_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_pool_reset_highs(resource: *mut cumem_resource_t) -> cumem_status_t;
    pub fn cumem_resource_pool_trim(resource: *mut cumem_resource_t, min_bytes_to_keep: u64) -> cumem_status_t;
    pub fn cumem_resource_pool_native(resource: *const cumem_resource_t, out_pool: *mut *mut c_void) -> cumem_status_t;

    // Buffers
    pub fn cumem_buffer_retain(buffer: *mut cumem_buffer_t) -> cumem_status_t;
    pub fn cumem_buffer_release(buffer: *mut cumem_buffer_t) -> cumem_status_t;
    pub fn cumem_buffer_ptr(buffer: *const cumem_buffer_t, out_ptr: *mut *mut c_void) -> cumem_status_t;
    pub fn cumem_buffer_size(buffer: *const cumem_buffer_t, out_size: *mut usize) -> cumem_status_t;
    pub fn cumem_buffer_resource(
        buffer: *const cumem_buffer_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_device_id(buffer: *const cumem_buffer_t, out_device_id: *mut i32) -> cumem_status_t;
    pub fn cumem_buffer_get_info(buffer: *const cumem_buffer_t, info: *mut cumem_buffer_info_t) -> cumem_status_t;
    pub fn cumem_buffer_is_closed(buffer: *const cumem_buffer_t, out_closed: *mut cumem_bool_t) -> cumem_status_t;
    pub fn cumem_buffer_set_deallocation_stream(
        buffer: *mut cumem_buffer_t,
        stream: *const cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_close(buffer: *mut cumem_buffer_t, stream: *const cumem_stream_t) -> cumem_status_t;
    pub fn cumem_buffer_copy_to(
        src: *const cumem_buffer_t,
        dst: *mut cumem_buffer_t,
        stream: *const cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_copy_from(
        dst: *mut cumem_buffer_t,
        src: *const cumem_buffer_t,
        stream: *const cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_copy_region(
        dst: *mut cumem_buffer_t,
        dst_offset: usize,
        src: *const cumem_buffer_t,
        src_offset: usize,
        length: usize,
        stream: *const cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_fill(
        buffer: *mut cumem_buffer_t,
        value: u32,
        width: u32,
        stream: *const cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_slice(
        buffer: *mut cumem_buffer_t,
        offset: usize,
        length: usize,
        out_slice: *mut *mut cumem_buffer_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_wrap_owned(
        resource: *mut cumem_resource_t,
        ptr: *mut c_void,
        size: usize,
        out_buffer: *mut *mut cumem_buffer_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_wrap(
        ptr: *mut c_void,
        size: usize,
        release_fn: cumem_release_fn,
        user_data: *mut c_void,
        out_buffer: *mut *mut cumem_buffer_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_register_host(
        device: *const cumem_device_t,
        ptr: *mut c_void,
        size: usize,
        out_buffer: *mut *mut cumem_buffer_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_prefetch(
        buffer: *mut cumem_buffer_t,
        location: cumem_location_t,
        stream: *const cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_advise(
        buffer: *mut cumem_buffer_t,
        advice: cumem_advice_t,
        location: cumem_location_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_discard(buffer: *mut cumem_buffer_t, stream: *const cumem_stream_t) -> cumem_status_t;

    // DLPack
    pub fn cumem_dlpack_options_init(options: *mut cumem_dlpack_options_t);
    pub fn cumem_buffer_to_dlpack(
        buffer: *mut cumem_buffer_t,
        options: *const cumem_dlpack_options_t,
        out_tensor: *mut *mut DLManagedTensorVersioned,
    ) -> cumem_status_t;
    pub fn cumem_buffer_from_dlpack(
        tensor: *mut DLManagedTensorVersioned,
        allow_read_only: cumem_bool_t,
        out_buffer: *mut *mut cumem_buffer_t,
    ) -> cumem_status_t;

    // Programs, libraries, kernels, launch
    pub fn cumem_program_options_init(options: *mut cumem_program_options_t);
    pub fn cumem_nvrtc_version(out_major: *mut i32, out_minor: *mut i32) -> cumem_status_t;
    pub fn cumem_program_compile(
        device: *const cumem_device_t,
        source: *const c_char,
        options: *const cumem_program_options_t,
        out_program: *mut *mut cumem_program_t,
    ) -> cumem_status_t;
    pub fn cumem_program_retain(program: *mut cumem_program_t) -> cumem_status_t;
    pub fn cumem_program_release(program: *mut cumem_program_t) -> cumem_status_t;
    pub fn cumem_program_log(program: *const cumem_program_t, out_log: *mut *const c_char) -> cumem_status_t;
    pub fn cumem_program_load(
        program: *const cumem_program_t,
        out_library: *mut *mut cumem_library_t,
    ) -> cumem_status_t;
    pub fn cumem_library_load_data(
        device: *const cumem_device_t,
        image: *const c_void,
        size: usize,
        out_library: *mut *mut cumem_library_t,
    ) -> cumem_status_t;
    pub fn cumem_library_retain(library: *mut cumem_library_t) -> cumem_status_t;
    pub fn cumem_library_release(library: *mut cumem_library_t) -> cumem_status_t;
    pub fn cumem_library_get_kernel(
        library: *const cumem_library_t,
        name: *const c_char,
        out_kernel: *mut *mut cumem_kernel_t,
    ) -> cumem_status_t;
    pub fn cumem_kernel_retain(kernel: *mut cumem_kernel_t) -> cumem_status_t;
    pub fn cumem_kernel_release(kernel: *mut cumem_kernel_t) -> cumem_status_t;
    pub fn cumem_kernel_get_attributes(
        kernel: *const cumem_kernel_t,
        attributes: *mut cumem_kernel_attributes_t,
    ) -> cumem_status_t;
    pub fn cumem_launch_config_init(config: *mut cumem_launch_config_t);
    pub fn cumem_launch(
        kernel: *const cumem_kernel_t,
        stream: *const cumem_stream_t,
        config: *const cumem_launch_config_t,
        args: *mut *mut c_void,
        num_args: u32,
    ) -> cumem_status_t;
}

// Framework allocator entry points (PyTorch's and CuPy's signatures; `int`
// parameters as in the header).
loader::functions! {
    pub fn cumem_framework_set_resource(device: i32, resource: *mut cumem_resource_t) -> cumem_status_t;
    pub fn cumem_framework_get_resource(device: i32, out_resource: *mut *mut cumem_resource_t) -> cumem_status_t;
    pub fn cumem_torch_alloc(size: usize, device: c_int, stream: *mut c_void) -> *mut c_void;
    pub fn cumem_torch_free(ptr: *mut c_void, size: usize, device: c_int, stream: *mut c_void);
    pub fn cumem_cupy_malloc(param: *mut c_void, size: usize, device_id: c_int) -> *mut c_void;
    pub fn cumem_cupy_free(param: *mut c_void, ptr: *mut c_void, device_id: c_int);
}

// The log (messages to the host program's own log; levels).
loader::functions! {
    pub fn cumem_set_log_callback(callback: cumem_log_callback_t, user_data: *mut c_void) -> cumem_status_t;
    pub fn cumem_set_log_level(level: cumem_log_level_t) -> cumem_status_t;
    pub fn cumem_get_log_level(out_level: *mut cumem_log_level_t) -> cumem_status_t;
}

// ---------------------------------------------------------------------------
// Virtual memory (cumem.h "Virtual memory"): growable buffers, their IPC
// ---------------------------------------------------------------------------

pub const CUMEM_RESOURCE_VIRTUAL: cumem_resource_kind_t = 14;

pub type cumem_granularity_t = i32;
pub const CUMEM_GRANULARITY_RECOMMENDED: cumem_granularity_t = 0;
pub const CUMEM_GRANULARITY_MINIMUM: cumem_granularity_t = 1;

pub type cumem_access_t = i32;
pub const CUMEM_ACCESS_NONE: cumem_access_t = 0;
pub const CUMEM_ACCESS_READ: cumem_access_t = 1;
pub const CUMEM_ACCESS_READ_WRITE: cumem_access_t = 3;

opaque!(cumem_virtual_ipc_handle_t);

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_virtual_resource_options_t {
    pub struct_size: u32,
    pub location: cumem_location_t,
    pub granularity: cumem_granularity_t,
    pub handle_types: u32,
    pub gpu_direct_rdma: cumem_bool_t,
    pub address_hint: u64,
    pub alignment: u64,
    pub chunk_size: u64,
    pub reserve_size: u64,
    pub peers: *const i32,
    pub peer_count: u32,
    pub peers_read_only: cumem_bool_t,
    pub nccl_qualified: cumem_bool_t,
    pub reserved0: u32,
}
impl Default for cumem_virtual_resource_options_t {
    /// CUMEM_VIRTUAL_RESOURCE_OPTIONS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            location: cumem_location_t { type_: CUMEM_LOCATION_NONE, id: 0 },
            granularity: CUMEM_GRANULARITY_RECOMMENDED,
            handle_types: 0,
            gpu_direct_rdma: CUMEM_FALSE,
            address_hint: 0,
            alignment: 0,
            chunk_size: 0,
            reserve_size: 0,
            peers: core::ptr::null(),
            peer_count: 0,
            peers_read_only: CUMEM_FALSE,
            nccl_qualified: CUMEM_FALSE,
            reserved0: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_virtual_statistics_t {
    pub struct_size: u32,
    pub reserved0: u32,
    pub granularity: u64,
    pub chunk_size: u64,
    pub bytes_mapped: u64,
    pub bytes_reserved: u64,
    pub bytes_pending: u64,
    pub grows_in_place: u64,
    pub grows_moved: u64,
    pub shrinks: u64,
    pub chunks_created: u64,
    pub chunks_released: u64,
}
impl Default for cumem_virtual_statistics_t {
    /// CUMEM_VIRTUAL_STATISTICS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            reserved0: 0,
            granularity: 0,
            chunk_size: 0,
            bytes_mapped: 0,
            bytes_reserved: 0,
            bytes_pending: 0,
            grows_in_place: 0,
            grows_moved: 0,
            shrinks: 0,
            chunks_created: 0,
            chunks_released: 0,
        }
    }
}

loader::functions! {
    pub fn cumem_virtual_resource_options_init(options: *mut cumem_virtual_resource_options_t);
    pub fn cumem_virtual_resource_create(
        device: *const cumem_device_t,
        options: *const cumem_virtual_resource_options_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_resize(
        buffer: *mut cumem_buffer_t,
        new_size: usize,
        stream: *const cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_virtual_resource_set_access(
        resource: *mut cumem_resource_t,
        peer: *const cumem_device_t,
        access: cumem_access_t,
    ) -> cumem_status_t;
    pub fn cumem_virtual_resource_get_access(
        resource: *const cumem_resource_t,
        peer: *const cumem_device_t,
        out_access: *mut cumem_access_t,
    ) -> cumem_status_t;
    pub fn cumem_virtual_resource_get_statistics(
        resource: *const cumem_resource_t,
        stats: *mut cumem_virtual_statistics_t,
    ) -> cumem_status_t;
    pub fn cumem_virtual_resource_release_pending(resource: *mut cumem_resource_t) -> cumem_status_t;
    pub fn cumem_buffer_get_virtual_ipc_handle(
        buffer: *const cumem_buffer_t,
        out_handle: *mut *mut cumem_virtual_ipc_handle_t,
    ) -> cumem_status_t;
    pub fn cumem_virtual_ipc_handle_retain(handle: *mut cumem_virtual_ipc_handle_t) -> cumem_status_t;
    pub fn cumem_virtual_ipc_handle_release(handle: *mut cumem_virtual_ipc_handle_t) -> cumem_status_t;
    pub fn cumem_virtual_ipc_handle_fd_count(
        handle: *const cumem_virtual_ipc_handle_t,
        out_count: *mut u32,
    ) -> cumem_status_t;
    pub fn cumem_virtual_ipc_handle_fd(
        handle: *const cumem_virtual_ipc_handle_t,
        index: u32,
        out_fd: *mut i32,
    ) -> cumem_status_t;
    pub fn cumem_virtual_ipc_handle_descriptor(
        handle: *const cumem_virtual_ipc_handle_t,
        bytes: *mut u8,
        capacity: usize,
        out_length: *mut usize,
    ) -> cumem_status_t;
    pub fn cumem_virtual_ipc_handle_from_fds(
        descriptor: *const u8,
        length: usize,
        fds: *const i32,
        count: u32,
        out_handle: *mut *mut cumem_virtual_ipc_handle_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_get_virtual_ipc_handle_native(
        resource: *const cumem_resource_t,
        ptr: *const c_void,
        size: usize,
        out_handle: *mut *mut cumem_virtual_ipc_handle_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_get_ipc_descriptor_native(
        resource: *const cumem_resource_t,
        ptr: *const c_void,
        size: usize,
        out_descriptor: *mut cumem_ipc_descriptor_t,
    ) -> cumem_status_t;
    pub fn cumem_virtual_ipc_handle_from_pid(
        descriptor: *const u8,
        length: usize,
        pid: i32,
        remote_fds: *const i32,
        count: u32,
        out_handle: *mut *mut cumem_virtual_ipc_handle_t,
    ) -> cumem_status_t;
    pub fn cumem_ipc_send_virtual(socket: i32, handle: *const cumem_virtual_ipc_handle_t) -> cumem_status_t;
    pub fn cumem_ipc_receive_virtual(
        socket: i32,
        out_handle: *mut *mut cumem_virtual_ipc_handle_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_from_virtual_ipc_handle(
        device: *const cumem_device_t,
        handle: *const cumem_virtual_ipc_handle_t,
        stream: *const cumem_stream_t,
        out_buffer: *mut *mut cumem_buffer_t,
    ) -> cumem_status_t;
}

// ---------------------------------------------------------------------------
// CUDA graphs: capture status, executable graphs, graph memory
// ---------------------------------------------------------------------------

pub type cumem_capture_status_t = i32;
pub const CUMEM_CAPTURE_STATUS_NONE: cumem_capture_status_t = 0;
pub const CUMEM_CAPTURE_STATUS_ACTIVE: cumem_capture_status_t = 1;
pub const CUMEM_CAPTURE_STATUS_INVALIDATED: cumem_capture_status_t = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_capture_info_t {
    pub struct_size: u32,
    pub status: cumem_capture_status_t,
    pub id: u64,
}
impl Default for cumem_capture_info_t {
    /// CUMEM_CAPTURE_INFO_INIT.
    fn default() -> Self {
        Self { struct_size: struct_size::<Self>(), status: CUMEM_CAPTURE_STATUS_NONE, id: 0 }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_graph_options_t {
    pub struct_size: u32,
    pub auto_free_on_launch: cumem_bool_t,
    pub use_node_priority: cumem_bool_t,
}
impl Default for cumem_graph_options_t {
    /// CUMEM_GRAPH_OPTIONS_INIT.
    fn default() -> Self {
        Self { struct_size: struct_size::<Self>(), auto_free_on_launch: CUMEM_FALSE, use_node_priority: CUMEM_FALSE }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_graph_memory_attributes_t {
    pub struct_size: u32,
    pub reserved0: u32,
    pub reserved_mem_current: u64,
    pub reserved_mem_high: u64,
    pub used_mem_current: u64,
    pub used_mem_high: u64,
}
impl Default for cumem_graph_memory_attributes_t {
    /// CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            reserved0: 0,
            reserved_mem_current: 0,
            reserved_mem_high: 0,
            used_mem_current: 0,
            used_mem_high: 0,
        }
    }
}

loader::functions! {
    pub fn cumem_stream_begin_capture(stream: *const cumem_stream_t, mode: cumem_capture_mode_t) -> cumem_status_t;
    pub fn cumem_stream_end_capture(stream: *const cumem_stream_t, out_graph: *mut *mut c_void) -> cumem_status_t;
    pub fn cumem_stream_get_capture_info(
        stream: *const cumem_stream_t,
        info: *mut cumem_capture_info_t,
    ) -> cumem_status_t;
    pub fn cumem_graph_options_init(options: *mut cumem_graph_options_t);
    pub fn cumem_stream_end_capture_graph(
        stream: *const cumem_stream_t,
        options: *const cumem_graph_options_t,
        out_graph: *mut *mut cumem_graph_t,
    ) -> cumem_status_t;
    pub fn cumem_graph_instantiate(
        device: *const cumem_device_t,
        native_graph: *mut c_void,
        options: *const cumem_graph_options_t,
        out_graph: *mut *mut cumem_graph_t,
    ) -> cumem_status_t;
    pub fn cumem_graph_retain(graph: *mut cumem_graph_t) -> cumem_status_t;
    pub fn cumem_graph_release(graph: *mut cumem_graph_t) -> cumem_status_t;
    pub fn cumem_graph_launch(graph: *mut cumem_graph_t, stream: *const cumem_stream_t) -> cumem_status_t;
    pub fn cumem_graph_upload(graph: *mut cumem_graph_t, stream: *const cumem_stream_t) -> cumem_status_t;
    pub fn cumem_graph_native(graph: *const cumem_graph_t, out_native: *mut *mut c_void) -> cumem_status_t;
    pub fn cumem_graph_capture_id(graph: *const cumem_graph_t, out_id: *mut u64) -> cumem_status_t;
    pub fn cumem_graph_memory_resource_create(
        device: *const cumem_device_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_graph_memory_resource_get_attributes(
        resource: *const cumem_resource_t,
        attributes: *mut cumem_graph_memory_attributes_t,
    ) -> cumem_status_t;
    pub fn cumem_graph_memory_resource_trim(resource: *mut cumem_resource_t) -> cumem_status_t;
    pub fn cumem_graph_memory_resource_reset_highs(resource: *mut cumem_resource_t) -> cumem_status_t;
}

// ---------------------------------------------------------------------------
// Copies at scale: batches, the device's memory resource, the failure-callback
// adaptor (table version 2)
// ---------------------------------------------------------------------------

pub type cumem_copy_src_access_order_t = i32;
pub const CUMEM_COPY_SRC_ACCESS_ORDER_STREAM: cumem_copy_src_access_order_t = 0;
pub const CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL: cumem_copy_src_access_order_t = 1;
pub const CUMEM_COPY_SRC_ACCESS_ORDER_ANY: cumem_copy_src_access_order_t = 2;

pub type cumem_copy_overlap_mode_t = i32;
pub const CUMEM_COPY_OVERLAP_DEFAULT: cumem_copy_overlap_mode_t = 0;
pub const CUMEM_COPY_OVERLAP_PREFER_COMPUTE: cumem_copy_overlap_mode_t = 1;

pub type cumem_failure_action_t = i32;
pub const CUMEM_FAILURE_FAIL: cumem_failure_action_t = 0;
pub const CUMEM_FAILURE_RETRY: cumem_failure_action_t = 1;
pub const CUMEM_FAILURE_CALLBACK_MAX_RETRIES: u32 = 1024;
pub const CUMEM_FAILURE_CALLBACK_DEFAULT_RETRIES: u32 = 16;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct cumem_copy_options_t {
    pub struct_size: u32,
    pub src_access_order: cumem_copy_src_access_order_t,
    pub src_location_hint: cumem_location_t,
    pub dst_location_hint: cumem_location_t,
    pub overlap_mode: cumem_copy_overlap_mode_t,
}
impl Default for cumem_copy_options_t {
    /// CUMEM_COPY_OPTIONS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            src_access_order: CUMEM_COPY_SRC_ACCESS_ORDER_STREAM,
            src_location_hint: cumem_location_t { type_: CUMEM_LOCATION_NONE, id: 0 },
            dst_location_hint: cumem_location_t { type_: CUMEM_LOCATION_NONE, id: 0 },
            overlap_mode: CUMEM_COPY_OVERLAP_DEFAULT,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_batch_statistics_t {
    pub struct_size: u32,
    pub driver_copy_batch: cumem_bool_t,
    pub driver_prefetch_batch: cumem_bool_t,
    pub driver_discard_batch: cumem_bool_t,
    pub copy_batches: u64,
    pub copy_batches_looped: u64,
    pub copies: u64,
    pub copies_looped: u64,
    pub prefetch_batches: u64,
    pub prefetch_batches_looped: u64,
    pub prefetches: u64,
    pub discard_batches: u64,
    pub discards: u64,
    pub copy_batches_by_kernel: u64,
    pub copies_by_kernel: u64,
}
impl Default for cumem_batch_statistics_t {
    /// CUMEM_BATCH_STATISTICS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            driver_copy_batch: 0,
            driver_prefetch_batch: 0,
            driver_discard_batch: 0,
            copy_batches: 0,
            copy_batches_looped: 0,
            copies: 0,
            copies_looped: 0,
            prefetch_batches: 0,
            prefetch_batches_looped: 0,
            prefetches: 0,
            discard_batches: 0,
            discards: 0,
            copy_batches_by_kernel: 0,
            copies_by_kernel: 0,
        }
    }
}

/// What a failure callback is told (valid during the call only).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_failure_info_t {
    pub struct_size: u32,
    pub attempt: u32,
    pub size: u64,
    pub stream: *mut c_void,
    pub statistics: *const cumem_resource_statistics_t,
    pub message: *const c_char,
}
impl Default for cumem_failure_info_t {
    /// CUMEM_FAILURE_INFO_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            attempt: 0,
            size: 0,
            stream: core::ptr::null_mut(),
            statistics: core::ptr::null(),
            message: core::ptr::null(),
        }
    }
}

/// Called on the allocating thread when the upstream is out of memory; must
/// not unwind.
pub type cumem_failure_callback_fn = Option<
    unsafe extern "C" fn(info: *const cumem_failure_info_t, user_data: *mut c_void) -> cumem_failure_action_t,
>;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_failure_callback_t {
    pub struct_size: u32,
    /// 0: CUMEM_FAILURE_CALLBACK_DEFAULT_RETRIES.
    pub max_retries: u32,
    pub callback: cumem_failure_callback_fn,
    pub destroy: cumem_destroy_fn,
    pub user_data: *mut c_void,
}
impl Default for cumem_failure_callback_t {
    /// CUMEM_FAILURE_CALLBACK_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            max_retries: 0,
            callback: None,
            destroy: None,
            user_data: core::ptr::null_mut(),
        }
    }
}

loader::functions! {
    pub fn cumem_device_get_memory_resource(
        device: *const cumem_device_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_device_set_memory_resource(
        device: *const cumem_device_t,
        resource: *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_device_allocate(
        device: *const cumem_device_t,
        size: usize,
        stream: *const cumem_stream_t,
        out_buffer: *mut *mut cumem_buffer_t,
    ) -> cumem_status_t;
    pub fn cumem_failure_callback_init(callback: *mut cumem_failure_callback_t);
    pub fn cumem_failure_callback_resource_create(
        upstream: *mut cumem_resource_t,
        callback: *const cumem_failure_callback_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_discard_prefetch(
        buffer: *mut cumem_buffer_t,
        location: cumem_location_t,
        stream: *const cumem_stream_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_get_last_prefetch_location(
        buffer: *const cumem_buffer_t,
        out_location: *mut cumem_location_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_copy_to_new(
        src: *const cumem_buffer_t,
        stream: *const cumem_stream_t,
        out_buffer: *mut *mut cumem_buffer_t,
    ) -> cumem_status_t;
    pub fn cumem_copy_options_init(options: *mut cumem_copy_options_t);
    pub fn cumem_copy_batch(
        stream: *const cumem_stream_t,
        count: usize,
        dsts: *const *mut cumem_buffer_t,
        dst_offsets: *const usize,
        srcs: *const *const cumem_buffer_t,
        src_offsets: *const usize,
        sizes: *const usize,
        options: *const cumem_copy_options_t,
        num_options: usize,
    ) -> cumem_status_t;
    pub fn cumem_copy_batch_raw(
        stream: *const cumem_stream_t,
        count: usize,
        dsts: *const *mut c_void,
        dst_offsets: *const usize,
        srcs: *const *const c_void,
        src_offsets: *const usize,
        sizes: *const usize,
        options: *const cumem_copy_options_t,
        num_options: usize,
    ) -> cumem_status_t;
    pub fn cumem_prefetch_batch(
        stream: *const cumem_stream_t,
        count: usize,
        buffers: *const *mut cumem_buffer_t,
        locations: *const cumem_location_t,
        num_locations: usize,
    ) -> cumem_status_t;
    pub fn cumem_discard_batch(
        stream: *const cumem_stream_t,
        count: usize,
        buffers: *const *mut cumem_buffer_t,
    ) -> cumem_status_t;
    pub fn cumem_discard_prefetch_batch(
        stream: *const cumem_stream_t,
        count: usize,
        buffers: *const *mut cumem_buffer_t,
        locations: *const cumem_location_t,
        num_locations: usize,
    ) -> cumem_status_t;
    pub fn cumem_batch_get_statistics(stats: *mut cumem_batch_statistics_t) -> cumem_status_t;
}

// ---------------------------------------------------------------------------
// Seeing the memory: the memory history, snapshots, statistics as JSON, the
// summary (cumem.h, "Seeing the memory")
// ---------------------------------------------------------------------------

opaque!(cumem_snapshot_t);

pub type cumem_memory_action_t = i32;
pub const CUMEM_MEMORY_ACTION_ALLOCATE: cumem_memory_action_t = 1;
pub const CUMEM_MEMORY_ACTION_FREE: cumem_memory_action_t = 2;
pub const CUMEM_MEMORY_ACTION_SEGMENT_ALLOC: cumem_memory_action_t = 3;
pub const CUMEM_MEMORY_ACTION_SEGMENT_FREE: cumem_memory_action_t = 4;
pub const CUMEM_MEMORY_ACTION_SEGMENT_MAP: cumem_memory_action_t = 5;
pub const CUMEM_MEMORY_ACTION_SEGMENT_UNMAP: cumem_memory_action_t = 6;
pub const CUMEM_MEMORY_ACTION_OUT_OF_MEMORY: cumem_memory_action_t = 7;
pub const CUMEM_MEMORY_ACTION_TRIM: cumem_memory_action_t = 8;
pub const CUMEM_MEMORY_ACTION_CAPTURE_BEGIN: cumem_memory_action_t = 9;
pub const CUMEM_MEMORY_ACTION_CAPTURE_END: cumem_memory_action_t = 10;

pub type cumem_segment_kind_t = i32;
pub const CUMEM_SEGMENT_SEGMENT: cumem_segment_kind_t = 1;
pub const CUMEM_SEGMENT_SMALL: cumem_segment_kind_t = 2;
pub const CUMEM_SEGMENT_EXPANDABLE: cumem_segment_kind_t = 3;
pub const CUMEM_SEGMENT_VIRTUAL_RANGE: cumem_segment_kind_t = 4;
pub const CUMEM_SEGMENT_ALLOCATION: cumem_segment_kind_t = 5;

pub type cumem_block_state_t = i32;
pub const CUMEM_BLOCK_IN_USE: cumem_block_state_t = 1;
pub const CUMEM_BLOCK_CACHED: cumem_block_state_t = 2;
pub const CUMEM_BLOCK_UNMAPPED: cumem_block_state_t = 3;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_memory_history_options_t {
    pub struct_size: u32,
    pub stacks: cumem_bool_t,
    pub max_entries: u64,
}
impl Default for cumem_memory_history_options_t {
    /// CUMEM_MEMORY_HISTORY_OPTIONS_INIT: no stacks, 65536 events.
    fn default() -> Self {
        Self { struct_size: struct_size::<Self>(), stacks: CUMEM_FALSE, max_entries: 0 }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_snapshot_totals_t {
    pub struct_size: u32,
    pub resource_count: u32,
    pub segment_count: u64,
    pub block_count: u64,
    pub event_count: u64,
    pub bytes_reserved: u64,
    pub bytes_in_use: u64,
    pub bytes_requested: u64,
    pub bytes_cached: u64,
    pub bytes_unmapped: u64,
    pub largest_free_block: u64,
    pub fragmented_bytes: u64,
    pub events_recorded: u64,
    pub events_dropped: u64,
    pub time_ns: u64,
}
impl Default for cumem_snapshot_totals_t {
    /// CUMEM_SNAPSHOT_TOTALS_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            resource_count: 0,
            segment_count: 0,
            block_count: 0,
            event_count: 0,
            bytes_reserved: 0,
            bytes_in_use: 0,
            bytes_requested: 0,
            bytes_cached: 0,
            bytes_unmapped: 0,
            largest_free_block: 0,
            fragmented_bytes: 0,
            events_recorded: 0,
            events_dropped: 0,
            time_ns: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_snapshot_resource_t {
    pub struct_size: u32,
    pub kind: cumem_resource_kind_t,
    pub id: u64,
    pub upstream_id: u64,
    pub device_id: i32,
    pub reserved0: u32,
    /// Valid while the snapshot lives.
    pub name: *const c_char,
    pub bytes_in_use: u64,
    pub peak_bytes_in_use: u64,
    pub live_allocations: u64,
    pub bytes_reserved: u64,
    pub bytes_cached: u64,
    pub largest_free_block: u64,
}
impl Default for cumem_snapshot_resource_t {
    /// CUMEM_SNAPSHOT_RESOURCE_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            kind: 0,
            id: 0,
            upstream_id: 0,
            device_id: 0,
            reserved0: 0,
            name: core::ptr::null(),
            bytes_in_use: 0,
            peak_bytes_in_use: 0,
            live_allocations: 0,
            bytes_reserved: 0,
            bytes_cached: 0,
            largest_free_block: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_snapshot_segment_t {
    pub struct_size: u32,
    pub kind: cumem_segment_kind_t,
    pub resource_id: u64,
    pub address: u64,
    pub size: u64,
    pub stream: u64,
    pub device_id: i32,
    pub reserved0: u32,
    pub first_block: u64,
    pub block_count: u64,
}
impl Default for cumem_snapshot_segment_t {
    /// CUMEM_SNAPSHOT_SEGMENT_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            kind: 0,
            resource_id: 0,
            address: 0,
            size: 0,
            stream: 0,
            device_id: 0,
            reserved0: 0,
            first_block: 0,
            block_count: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_snapshot_block_t {
    pub struct_size: u32,
    pub state: cumem_block_state_t,
    pub address: u64,
    pub size: u64,
    pub requested_size: u64,
    pub stream: u64,
    pub segment: u64,
    pub stack_id: u32,
    pub reserved0: u32,
}
impl Default for cumem_snapshot_block_t {
    /// CUMEM_SNAPSHOT_BLOCK_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            state: 0,
            address: 0,
            size: 0,
            requested_size: 0,
            stream: 0,
            segment: 0,
            stack_id: 0,
            reserved0: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_memory_event_t {
    pub struct_size: u32,
    pub action: cumem_memory_action_t,
    pub time_ns: u64,
    pub address: u64,
    pub size: u64,
    pub stream: u64,
    pub resource_id: u64,
    pub detail: u64,
    pub thread_id: u32,
    pub stack_id: u32,
}
impl Default for cumem_memory_event_t {
    /// CUMEM_MEMORY_EVENT_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            action: 0,
            time_ns: 0,
            address: 0,
            size: 0,
            stream: 0,
            resource_id: 0,
            detail: 0,
            thread_id: 0,
            stack_id: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_stack_frame_t {
    pub struct_size: u32,
    pub depth: u32,
    pub address: u64,
    /// Valid while the snapshot lives.
    pub function: *const c_char,
    /// Valid while the snapshot lives.
    pub module: *const c_char,
    pub offset: u64,
}
impl Default for cumem_stack_frame_t {
    /// CUMEM_STACK_FRAME_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            depth: 0,
            address: 0,
            function: core::ptr::null(),
            module: core::ptr::null(),
            offset: 0,
        }
    }
}

loader::functions! {
    pub fn cumem_memory_history_options_init(options: *mut cumem_memory_history_options_t);
    pub fn cumem_memory_history_start(options: *const cumem_memory_history_options_t) -> cumem_status_t;
    pub fn cumem_memory_history_stop() -> cumem_status_t;
    pub fn cumem_snapshot_take(
        resource: *const cumem_resource_t,
        out_snapshot: *mut *mut cumem_snapshot_t,
    ) -> cumem_status_t;
    pub fn cumem_snapshot_retain(snapshot: *mut cumem_snapshot_t) -> cumem_status_t;
    pub fn cumem_snapshot_release(snapshot: *mut cumem_snapshot_t) -> cumem_status_t;
    pub fn cumem_snapshot_get_totals(
        snapshot: *const cumem_snapshot_t,
        totals: *mut cumem_snapshot_totals_t,
    ) -> cumem_status_t;
    pub fn cumem_snapshot_get_resource(
        snapshot: *const cumem_snapshot_t,
        index: u64,
        resource: *mut cumem_snapshot_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_snapshot_get_segment(
        snapshot: *const cumem_snapshot_t,
        index: u64,
        segment: *mut cumem_snapshot_segment_t,
    ) -> cumem_status_t;
    pub fn cumem_snapshot_get_block(
        snapshot: *const cumem_snapshot_t,
        index: u64,
        block: *mut cumem_snapshot_block_t,
    ) -> cumem_status_t;
    pub fn cumem_snapshot_get_event(
        snapshot: *const cumem_snapshot_t,
        index: u64,
        event: *mut cumem_memory_event_t,
    ) -> cumem_status_t;
    pub fn cumem_snapshot_get_frame(
        snapshot: *const cumem_snapshot_t,
        stack_id: u32,
        index: u32,
        frame: *mut cumem_stack_frame_t,
    ) -> cumem_status_t;
    pub fn cumem_snapshot_to_json(
        snapshot: *const cumem_snapshot_t,
        out_json: *mut *const c_char,
        out_length: *mut usize,
    ) -> cumem_status_t;
    pub fn cumem_snapshot_write_json(snapshot: *const cumem_snapshot_t, path: *const c_char) -> cumem_status_t;
    pub fn cumem_resource_statistics_json(
        resource: *const cumem_resource_t,
        buffer: *mut c_char,
        capacity: usize,
        out_length: *mut usize,
    ) -> cumem_status_t;
    pub fn cumem_memory_summary(buffer: *mut c_char, capacity: usize, out_length: *mut usize) -> cumem_status_t;
}

// ---------------------------------------------------------------------------
// IPC (cumem.h "IPC"), legacy DLPack, native-stream raw allocation, pool
// access, program code and names, the kernel's CUkernel, the framework
// configuration
// ---------------------------------------------------------------------------

loader::functions! {
    pub fn cumem_resource_get_allocation_handle(
        resource: *const cumem_resource_t,
        out_handle: *mut *mut cumem_allocation_handle_t,
    ) -> cumem_status_t;
    pub fn cumem_allocation_handle_retain(handle: *mut cumem_allocation_handle_t) -> cumem_status_t;
    pub fn cumem_allocation_handle_release(handle: *mut cumem_allocation_handle_t) -> cumem_status_t;
    pub fn cumem_allocation_handle_fd(handle: *const cumem_allocation_handle_t, out_fd: *mut i32) -> cumem_status_t;
    pub fn cumem_allocation_handle_dup_fd(handle: *const cumem_allocation_handle_t, out_fd: *mut i32) -> cumem_status_t;
    pub fn cumem_allocation_handle_descriptor(
        handle: *const cumem_allocation_handle_t,
        out_descriptor: *mut cumem_ipc_descriptor_t,
    ) -> cumem_status_t;
    pub fn cumem_allocation_handle_from_fd(
        pool_descriptor: *const cumem_ipc_descriptor_t,
        fd: i32,
        out_handle: *mut *mut cumem_allocation_handle_t,
    ) -> cumem_status_t;
    pub fn cumem_allocation_handle_from_pid(
        pool_descriptor: *const cumem_ipc_descriptor_t,
        pid: i32,
        remote_fd: i32,
        out_handle: *mut *mut cumem_allocation_handle_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_from_allocation_handle(
        device: *const cumem_device_t,
        handle: *const cumem_allocation_handle_t,
        out_resource: *mut *mut cumem_resource_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_get_ipc_descriptor(
        buffer: *const cumem_buffer_t,
        out_descriptor: *mut cumem_ipc_descriptor_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_from_ipc_descriptor(
        resource: *mut cumem_resource_t,
        descriptor: *const cumem_ipc_descriptor_t,
        stream: *const cumem_stream_t,
        out_buffer: *mut *mut cumem_buffer_t,
    ) -> cumem_status_t;
    pub fn cumem_ipc_send(
        socket: i32,
        handle: *const cumem_allocation_handle_t,
        descriptors: *const cumem_ipc_descriptor_t,
        count: u32,
    ) -> cumem_status_t;
    pub fn cumem_ipc_receive(
        socket: i32,
        out_handle: *mut *mut cumem_allocation_handle_t,
        descriptors: *mut cumem_ipc_descriptor_t,
        capacity: u32,
        out_count: *mut u32,
    ) -> cumem_status_t;
    pub fn cumem_event_get_ipc_handle(
        event: *const cumem_event_t,
        out_handle: *mut cumem_ipc_event_handle_t,
    ) -> cumem_status_t;
    pub fn cumem_event_from_ipc_handle(
        device: *const cumem_device_t,
        handle: *const cumem_ipc_event_handle_t,
        out_event: *mut *mut cumem_event_t,
    ) -> cumem_status_t;
    pub fn cumem_buffer_to_dlpack_legacy(
        buffer: *mut cumem_buffer_t,
        options: *const cumem_dlpack_options_t,
        out_tensor: *mut *mut DLManagedTensor,
    ) -> cumem_status_t;
    pub fn cumem_buffer_from_dlpack_legacy(
        tensor: *mut DLManagedTensor,
        out_buffer: *mut *mut cumem_buffer_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_allocate_native(
        resource: *mut cumem_resource_t,
        size: usize,
        native_stream: *mut c_void,
        out_ptr: *mut *mut c_void,
    ) -> cumem_status_t;
    pub fn cumem_resource_deallocate_native(
        resource: *mut cumem_resource_t,
        ptr: *mut c_void,
        size: usize,
        native_stream: *mut c_void,
    ) -> cumem_status_t;
    pub fn cumem_resource_pool_set_access(
        resource: *mut cumem_resource_t,
        peer: *const cumem_device_t,
        read_write: cumem_bool_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_pool_get_access(
        resource: *const cumem_resource_t,
        peer: *const cumem_device_t,
        out_read_write: *mut cumem_bool_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_set_peer_access(
        resource: *mut cumem_resource_t,
        peer: *const cumem_device_t,
        read_write: cumem_bool_t,
    ) -> cumem_status_t;
    pub fn cumem_resource_get_peer_access(
        resource: *const cumem_resource_t,
        peer: *const cumem_device_t,
        out_read_write: *mut cumem_bool_t,
    ) -> cumem_status_t;
    pub fn cumem_program_code(
        program: *const cumem_program_t,
        out_code: *mut *const c_void,
        out_size: *mut usize,
    ) -> cumem_status_t;
    pub fn cumem_program_lowered_name(
        program: *const cumem_program_t,
        name_expression: *const c_char,
        out_name: *mut *const c_char,
    ) -> cumem_status_t;
    pub fn cumem_kernel_native(kernel: *const cumem_kernel_t, out_native: *mut *mut c_void) -> cumem_status_t;
    pub fn cumem_framework_configure(configuration: *const c_char) -> cumem_status_t;
}

// ---------------------------------------------------------------------------
// Communication engines: dma-buf export, unmap notifications
// ---------------------------------------------------------------------------

/// Flag of cumem_buffer_get_dmabuf: map the dma-buf through PCIe BAR1.
pub const CUMEM_DMABUF_MAPPING_PCIE: u32 = 0x1;

/// A buffer's memory as a dma-buf; `fd` is the caller's to close.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_dmabuf_t {
    pub struct_size: u32,
    pub fd: i32,
    /// The buffer's first byte, from the start of the fd's range.
    pub offset: u64,
    /// Bytes in the fd's range, a multiple of the host page size.
    pub length: u64,
    /// Device address of the range's first byte.
    pub address: u64,
    pub device_id: i32,
    /// The whole backing allocation (else only the chunks holding the buffer).
    pub whole_allocation: cumem_bool_t,
}
impl Default for cumem_dmabuf_t {
    /// CUMEM_DMABUF_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            fd: 0,
            offset: 0,
            length: 0,
            address: 0,
            device_id: 0,
            whole_allocation: 0,
        }
    }
}

pub type cumem_unmap_reason_t = i32;
pub const CUMEM_UNMAP_VIRTUAL: cumem_unmap_reason_t = 1;
pub const CUMEM_UNMAP_CACHE_RELEASE: cumem_unmap_reason_t = 2;
pub const CUMEM_UNMAP_FREE: cumem_unmap_reason_t = 3;
pub const CUMEM_UNMAP_POOL_TRIM: cumem_unmap_reason_t = 4;
pub const CUMEM_UNMAP_POOL_DESTROY: cumem_unmap_reason_t = 5;

/// One unmap notification; read fields only up to `struct_size`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cumem_unmap_event_t {
    pub struct_size: u32,
    pub reason: cumem_unmap_reason_t,
    /// 0 with size 0: the range is not known (a pool's trim or destruction).
    pub address: u64,
    pub size: u64,
    pub resource_id: u64,
    pub device_id: i32,
    pub reserved0: u32,
}
impl Default for cumem_unmap_event_t {
    /// CUMEM_UNMAP_EVENT_INIT.
    fn default() -> Self {
        Self {
            struct_size: struct_size::<Self>(),
            reason: 0,
            address: 0,
            size: 0,
            resource_id: 0,
            device_id: 0,
            reserved0: 0,
        }
    }
}

/// The unmap callback: runs before the memory is given back, on the thread
/// that gives it back, possibly under a resource's lock; it must not unwind
/// and must call no libcumem function but cumem_unmap_unsubscribe,
/// cumem_status_string and cumem_last_error_message.
pub type cumem_unmap_callback_t =
    Option<unsafe extern "C" fn(event: *const cumem_unmap_event_t, user_data: *mut c_void)>;

loader::functions! {
    pub fn cumem_buffer_get_dmabuf(
        buffer: *const cumem_buffer_t,
        flags: u32,
        dmabuf: *mut cumem_dmabuf_t,
    ) -> cumem_status_t;
    pub fn cumem_unmap_subscribe(
        callback: cumem_unmap_callback_t,
        user_data: *mut c_void,
        out_subscription: *mut u64,
    ) -> cumem_status_t;
    pub fn cumem_unmap_unsubscribe(subscription: u64) -> cumem_status_t;
}
