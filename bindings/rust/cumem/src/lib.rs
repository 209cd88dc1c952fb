//! Safe Rust API over libcumem's C ABI (`cumem-sys`).
//!
//! Owned handles ([`Device`], [`Stream`], [`Resource`], [`Buffer`]) give
//! their reference back on `Drop`; every call checks the status and returns
//! [`Error`] with the status and libcumem's message for it.
//!
//! ```
//! let host = cumem::Resource::host()?;
//! let buffer = host.allocate(16, None)?;
//! buffer.fill(0xab, 1, None)?;
//! let mut out = [0u8; 16];
//! buffer.copy_to_slice(&mut out, None)?;
//! assert_eq!(out, [0xab; 16]);
//! println!("{:?}", host.statistics()?);
//! # Ok::<(), cumem::Error>(())
//! ```
//!
//! Typed buffers: `Resource::alloc::<T>(len, stream)`, `from_slice(&[T])`,
//! `Buffer<T>::copy_from_slice(&[T])` / `copy_to_vec()` for element types
//! that are plain data ([`DeviceRepr`]), as cudarc's `CudaSlice<T>`;
//! kernels: [`Program::compile`], [`Library::get_kernel`], [`launch`];
//! IPC: [`Resource::get_allocation_handle`], [`Buffer::get_ipc_descriptor`],
//! [`ipc_send`] / [`ipc_receive`]; DLPack: [`Buffer::to_dlpack`],
//! [`Buffer::from_dlpack`].
//!
//! # Finding libcumem
//!
//! libcumem is loaded at run time (`dlopen`, by `cumem-sys`'s loader) on
//! the first call, not linked, so that a program depending on this crate
//! runs without `LD_LIBRARY_PATH` and without a build script of its own (an
//! rpath set by a `-sys` crate's build script reaches only that crate's
//! tests, never a dependent's binary), the crates build and document where
//! libcumem is absent, and a missing library is a clear error rather than a
//! program the loader refuses to start. Where it looks, first match wins:
//! `$CUMEM_LIBRARY` (a file; when set, the only one tried); the folder
//! found when cumem-sys was built (`$CUMEM_LIB_DIR`, else `pkg-config`'s,
//! else the libcumem repository's `build/`); `libcumem.so.1` on the dynamic
//! loader's search path (an installed libcumem). [`library_path`] says
//! which file was loaded. When none loads, every call fails with
//! `Status::NOT_SUPPORTED` and a message listing what was tried.
//!
//! Thread safety, from the header (include/cumem/cumem.h, "Thread safety"):
//! "every function may be called from any thread. Devices, resources,
//! streams, events, programs and kernels allow all calls concurrently. A
//! buffer allows concurrent calls except cumem_buffer_close and
//! cumem_buffer_set_deallocation_stream, which must not race with other
//! calls on the same buffer." Hence [`Device`], [`Stream`] and [`Resource`]
//! are `Send + Sync`; [`Buffer`] is `Send + Sync` because its one
//! non-concurrent call here, [`Buffer::close`], takes `&mut self` (and the
//! last release, which must not race either, happens in `Drop`, which owns
//! the value).
use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};

pub use cumem_sys as sys;

mod dlpack;
mod engines;
mod ipc;
mod kernel;
mod typed;
pub use dlpack::DlpackOptions;
pub use engines::{unmap_subscribe, DmaBuf, UnmapEvent, UnmapSubscription};
pub use ipc::{ipc_receive, ipc_send, AllocationHandle, IpcDescriptor};
pub use kernel::{launch, KernelArg, Kernel, LaunchConfig, Library, Program, ProgramOptions};
pub use typed::DeviceRepr;

// ---------------------------------------------------------------------------
// Status and errors
// ---------------------------------------------------------------------------

/// A libcumem status code (`cumem_status_t`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(pub i32);

impl Status {
    pub const SUCCESS: Status = Status(sys::CUMEM_SUCCESS);
    pub const INVALID_ARGUMENT: Status = Status(sys::CUMEM_ERROR_INVALID_ARGUMENT);
    pub const OUT_OF_MEMORY: Status = Status(sys::CUMEM_ERROR_OUT_OF_MEMORY);
    pub const NO_DRIVER: Status = Status(sys::CUMEM_ERROR_NO_DRIVER);
    pub const NO_DEVICE: Status = Status(sys::CUMEM_ERROR_NO_DEVICE);
    pub const NOT_SUPPORTED: Status = Status(sys::CUMEM_ERROR_NOT_SUPPORTED);
    pub const BUFFER_CLOSED: Status = Status(sys::CUMEM_ERROR_BUFFER_CLOSED);
    pub const SIZE_MISMATCH: Status = Status(sys::CUMEM_ERROR_SIZE_MISMATCH);
    pub const OUT_OF_RANGE: Status = Status(sys::CUMEM_ERROR_OUT_OF_RANGE);
    pub const WRONG_DEVICE: Status = Status(sys::CUMEM_ERROR_WRONG_DEVICE);
    pub const INVALID_STATE: Status = Status(sys::CUMEM_ERROR_INVALID_STATE);
    pub const DRIVER: Status = Status(sys::CUMEM_ERROR_DRIVER);
    pub const NO_COMPILER: Status = Status(sys::CUMEM_ERROR_NO_COMPILER);
    pub const COMPILATION: Status = Status(sys::CUMEM_ERROR_COMPILATION);
    pub const NOT_FOUND: Status = Status(sys::CUMEM_ERROR_NOT_FOUND);
    pub const INVALID_LAUNCH_CONFIG: Status = Status(sys::CUMEM_ERROR_INVALID_LAUNCH_CONFIG);
    pub const OUT_OF_RESOURCES: Status = Status(sys::CUMEM_ERROR_OUT_OF_RESOURCES);
    pub const INTERNAL: Status = Status(sys::CUMEM_ERROR_INTERNAL);

    /// The code's name from `cumem_status_string`, e.g.
    /// "CUMEM_ERROR_OUT_OF_MEMORY" ("CUMEM_STATUS_UNKNOWN" for others).
    pub fn name(self) -> &'static str {
        // SAFETY: never NULL, static storage (the header's promise).
        unsafe { CStr::from_ptr(sys::cumem_status_string(self.0)) }
            .to_str()
            .unwrap_or("CUMEM_STATUS_UNKNOWN")
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}
impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: its status and libcumem's message for it
/// (`cumem_last_error_message`, read on the failing thread right after the
/// call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    pub fn status(&self) -> Status {
        self.status
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    fn last(status: sys::cumem_status_t) -> Error {
        // A call the loader could not make (no libcumem, or an older one)
        // says why; else libcumem's own message.
        let message = sys::loader::unavailable_message().unwrap_or_else(last_error_message);
        Error { status: Status(status), message }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}
impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn check(status: sys::cumem_status_t) -> Result<()> {
    if status == sys::CUMEM_SUCCESS {
        Ok(())
    } else {
        Err(Error::last(status))
    }
}

/// The message of the last failing call on this thread ("" if none).
pub fn last_error_message() -> String {
    // SAFETY: never NULL; valid until the next libcumem call on this thread,
    // and copied at once.
    unsafe { CStr::from_ptr(sys::cumem_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// `CUMEM_MAKE_VERSION` of the library loaded at run time (10000 * major +
/// 100 * minor + patch).
pub fn version() -> u32 {
    // SAFETY: no arguments, never fails.
    unsafe { sys::cumem_version() }
}

/// Messages at `level` (`sys::CUMEM_LOG_LEVEL_*`) and more severe are
/// delivered to the log (stderr, or the callback set with
/// `sys::cumem_set_log_callback`).
pub fn set_log_level(level: sys::cumem_log_level_t) -> Result<()> {
    // SAFETY: plain value; an unknown level is refused by the library.
    check(unsafe { sys::cumem_set_log_level(level) })
}

/// The level set with `set_log_level` (or `CUMEM_LOG_LEVEL`).
pub fn log_level() -> Result<sys::cumem_log_level_t> {
    let mut level = 0;
    // SAFETY: valid out pointer.
    check(unsafe { sys::cumem_get_log_level(&mut level) })?;
    Ok(level)
}

/// The file libcumem was loaded from (loading it if needed), or why it could
/// not be: `Status::NOT_SUPPORTED` with the paths tried (see cumem-sys's
/// loader: `$CUMEM_LIBRARY`, the folder found at build time, the loader's
/// search path).
pub fn library_path() -> Result<String> {
    sys::loader::library_path().map(str::to_string).map_err(|e| Error {
        status: Status::NOT_SUPPORTED,
        message: e.to_string_lossy().into_owned(),
    })
}

/// Configures the resource the framework entry points (PyTorch, CuPy,
/// Numba hook-ups) make for each device that has none set: the text
/// `$CUMEM_ALLOC_CONF` takes, e.g. `"kind:caching,expandable:true,limit:40GiB"`
/// ("" is the defaults). A refused text is `Status::INVALID_ARGUMENT`
/// naming the key; nothing changes then.
pub fn framework_configure(configuration: &str) -> Result<()> {
    let c = std::ffi::CString::new(configuration).map_err(|_| Error {
        status: Status::INVALID_ARGUMENT,
        message: "the configuration holds a NUL byte".into(),
    })?;
    // SAFETY: a NUL-terminated string.
    check(unsafe { sys::cumem_framework_configure(c.as_ptr()) })
}

/// The CUDA driver's version (e.g. 13000 for 13.0).
pub fn driver_version() -> Result<i32> {
    let mut v = 0;
    // SAFETY: valid out pointer.
    check(unsafe { sys::cumem_driver_version(&mut v) })?;
    Ok(v)
}

fn opt_stream(stream: Option<&Stream>) -> *const sys::cumem_stream_t {
    stream.map_or(ptr::null(), |s| s.raw.as_ptr() as *const _)
}

fn non_null<T>(p: *mut T) -> NonNull<T> {
    NonNull::new(p).expect("libcumem returned success with a NULL handle")
}

// ---------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------

/// A CUDA device (one reference to libcumem's handle for its ordinal).
#[derive(Debug)]
pub struct Device {
    raw: NonNull<sys::cumem_device_t>,
}
// SAFETY: devices allow all calls concurrently from any thread (header).
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

/// What `cumem_device_get_properties` reports, in Rust types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProperties {
    pub ordinal: i32,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub total_memory: u64,
    pub multiprocessor_count: i32,
    pub memory_pools_supported: bool,
    pub managed_memory: bool,
    /// Fabric handles work here (the fabric probe: one granule created and
    /// exported with the FABRIC type).
    pub fabric_export_supported: bool,
    /// The device's memory exports as dma-bufs (`Buffer::get_dmabuf`).
    pub dma_buf_supported: bool,
}

impl Device {
    /// Number of CUDA devices; `Status::NO_DRIVER` when libcuda cannot be
    /// loaded.
    pub fn count() -> Result<i32> {
        let mut n = 0;
        // SAFETY: valid out pointer.
        check(unsafe { sys::cumem_device_count(&mut n) })?;
        Ok(n)
    }

    /// The device of `ordinal`.
    pub fn get(ordinal: i32) -> Result<Device> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid out pointer; on success we own one reference.
        check(unsafe { sys::cumem_device_get(ordinal, &mut raw) })?;
        Ok(Device { raw: non_null(raw) })
    }

    pub fn ordinal(&self) -> Result<i32> {
        let mut o = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::cumem_device_ordinal(self.raw.as_ptr(), &mut o) })?;
        Ok(o)
    }

    pub fn properties(&self) -> Result<DeviceProperties> {
        let mut p = sys::cumem_device_properties_t::default();
        // SAFETY: live handle; struct_size set by Default.
        check(unsafe { sys::cumem_device_get_properties(self.raw.as_ptr(), &mut p) })?;
        // SAFETY: the name is NUL-terminated within its 256 bytes (header).
        let name = unsafe { CStr::from_ptr(p.name.as_ptr()) }.to_string_lossy().into_owned();
        Ok(DeviceProperties {
            ordinal: p.ordinal,
            name,
            compute_capability: (p.compute_capability_major, p.compute_capability_minor),
            total_memory: p.total_memory,
            multiprocessor_count: p.multiprocessor_count,
            memory_pools_supported: p.memory_pools_supported != 0,
            managed_memory: p.managed_memory != 0,
            fabric_export_supported: p.fabric_export_supported != 0,
            dma_buf_supported: p.dma_buf_supported != 0,
        })
    }

    /// Waits for all work on the device.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { sys::cumem_device_synchronize(self.raw.as_ptr()) })
    }

    /// The raw handle, borrowed (for calls this crate does not wrap).
    pub fn as_raw(&self) -> *mut sys::cumem_device_t {
        self.raw.as_ptr()
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: we own one reference. Releasing a reference we hold cannot
        // fail (header: only a release beyond the caller's references does).
        unsafe { sys::cumem_device_release(self.raw.as_ptr()) };
    }
}

// ---------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------

/// A stream of a device, created by libcumem and destroyed with its last
/// reference.
#[derive(Debug)]
pub struct Stream {
    raw: NonNull<sys::cumem_stream_t>,
}
// SAFETY: streams allow all calls concurrently from any thread (header).
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    /// A new non-blocking stream on `device` (the default options).
    pub fn new(device: &Device) -> Result<Stream> {
        let mut raw = ptr::null_mut();
        // SAFETY: live device; NULL options mean the defaults.
        check(unsafe { sys::cumem_stream_create(device.raw.as_ptr(), ptr::null(), &mut raw) })?;
        Ok(Stream { raw: non_null(raw) })
    }

    /// Blocks until all work queued on the stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { sys::cumem_stream_synchronize(self.raw.as_ptr()) })
    }

    pub fn as_raw(&self) -> *mut sys::cumem_stream_t {
        self.raw.as_ptr()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::cumem_stream_release(self.raw.as_ptr()) };
    }
}

// ---------------------------------------------------------------------------
// Resources
// ---------------------------------------------------------------------------

/// A memory resource: buffers are allocated from it.
#[derive(Debug)]
pub struct Resource {
    raw: NonNull<sys::cumem_resource_t>,
}
// SAFETY: resources allow all calls concurrently from any thread (header).
unsafe impl Send for Resource {}
unsafe impl Sync for Resource {}

/// `cumem_resource_statistics_t` without its header fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statistics {
    pub bytes_in_use: u64,
    pub peak_bytes_in_use: u64,
    pub live_allocations: u64,
    pub total_allocations: u64,
}

/// What a resource is (`cumem_resource_kind_t`), as the raw value.
pub type ResourceKind = sys::cumem_resource_kind_t;

impl Resource {
    fn make(f: impl FnOnce(*mut *mut sys::cumem_resource_t) -> sys::cumem_status_t) -> Result<Resource> {
        let mut raw = ptr::null_mut();
        check(f(&mut raw))?;
        Ok(Resource { raw: non_null(raw) })
    }

    /// Pageable host memory, 64-byte aligned; needs no driver.
    pub fn host() -> Result<Resource> {
        // SAFETY: NULL options mean the defaults.
        Self::make(|out| unsafe { sys::cumem_host_resource_create(ptr::null(), out) })
    }

    /// Pageable host memory with `alignment` (a power of two, 8 to 2 MiB;
    /// 0 is the default, 64).
    pub fn host_aligned(alignment: usize) -> Result<Resource> {
        let options =
            sys::cumem_host_resource_options_t { alignment: alignment as u64, ..Default::default() };
        // SAFETY: options initialised as CUMEM_HOST_RESOURCE_OPTIONS_INIT.
        Self::make(|out| unsafe { sys::cumem_host_resource_create(&options, out) })
    }

    /// Stream-ordered device memory from the device's default pool.
    pub fn device(device: &Device) -> Result<Resource> {
        // SAFETY: live device; NULL options mean the defaults.
        Self::make(|out| unsafe { sys::cumem_device_resource_create(device.raw.as_ptr(), ptr::null(), out) })
    }

    /// Stream-ordered pinned host memory from a host-located pool.
    pub fn pinned(device: &Device) -> Result<Resource> {
        // SAFETY: live device; NULL options mean the defaults.
        Self::make(|out| unsafe { sys::cumem_pinned_resource_create(device.raw.as_ptr(), ptr::null(), out) })
    }

    /// Pinned host memory from cuMemHostAlloc (portable, mapped).
    pub fn legacy_pinned(device: &Device) -> Result<Resource> {
        // SAFETY: live device.
        Self::make(|out| unsafe { sys::cumem_legacy_pinned_resource_create(device.raw.as_ptr(), out) })
    }

    /// Unified (managed) memory for `device`.
    pub fn managed(device: &Device) -> Result<Resource> {
        // SAFETY: live device; NULL options mean the defaults.
        Self::make(|out| unsafe { sys::cumem_managed_resource_create(device.raw.as_ptr(), ptr::null(), out) })
    }

    /// The caching adaptor over `upstream` (which it keeps alive).
    pub fn caching(upstream: &Resource) -> Result<Resource> {
        // SAFETY: live upstream; libcumem takes its own reference.
        Self::make(|out| unsafe { sys::cumem_caching_resource_create(upstream.raw.as_ptr(), out) })
    }

    /// The aligned adaptor: every allocation starts at a multiple of
    /// `alignment` (a power of two up to 1 GiB).
    pub fn aligned(upstream: &Resource, alignment: u64) -> Result<Resource> {
        // SAFETY: live upstream; libcumem takes its own reference.
        Self::make(|out| unsafe { sys::cumem_aligned_resource_create(upstream.raw.as_ptr(), alignment, out) })
    }

    /// A caching adaptor gives cached blocks back to its upstream until at
    /// most `keep_bytes` stay cached (an expandable one unmaps their
    /// pages), then asks the upstream to trim what it holds unused.
    pub fn trim_cache(&self, keep_bytes: u64) -> Result<()> {
        // SAFETY: live resource.
        check(unsafe { sys::cumem_caching_resource_trim(self.raw.as_ptr(), keep_bytes) })
    }

    /// The graph(s) of capture `capture_id` are gone: a caching adaptor's
    /// private pool of that capture gives its memory back.
    pub fn release_capture_pool(&self, capture_id: u64) -> Result<()> {
        // SAFETY: live resource.
        check(unsafe { sys::cumem_caching_resource_release_capture_pool(self.raw.as_ptr(), capture_id) })
    }

    /// The caching adaptor over `upstream` with options
    /// (cumem_caching_resource_create_with_options), e.g. expandable
    /// segments: `cumem_caching_resource_options_t { expandable: CUMEM_TRUE,
    /// ..Default::default() }` (device memory only).
    pub fn caching_with_options(
        upstream: &Resource,
        options: &sys::cumem_caching_resource_options_t,
    ) -> Result<Resource> {
        // SAFETY: live upstream and options; libcumem takes its own reference.
        Self::make(|out| unsafe {
            sys::cumem_caching_resource_create_with_options(upstream.raw.as_ptr(), options, out)
        })
    }

    /// A caching adaptor's own counters (rounded bytes, hits, pages mapped).
    pub fn caching_statistics(&self) -> Result<sys::cumem_caching_statistics_t> {
        let mut s = sys::cumem_caching_statistics_t::default();
        // SAFETY: live resource, valid out struct with its struct_size set.
        check(unsafe { sys::cumem_caching_resource_get_statistics(self.raw.as_ptr(), &mut s) })?;
        Ok(s)
    }

    /// The limit adaptor: at most `limit_bytes` in use through it.
    pub fn limit(upstream: &Resource, limit_bytes: u64) -> Result<Resource> {
        // SAFETY: live upstream; libcumem takes its own reference.
        Self::make(|out| unsafe { sys::cumem_limit_resource_create(upstream.raw.as_ptr(), limit_bytes, out) })
    }

    /// Allocates `size` bytes ordered on `stream` (None: the legacy default
    /// stream; the host resource waits for nothing then).
    pub fn allocate(&self, size: usize, stream: Option<&Stream>) -> Result<Buffer> {
        let mut raw = ptr::null_mut();
        // SAFETY: live resource, optional live stream, valid out pointer.
        check(unsafe { sys::cumem_resource_allocate(self.raw.as_ptr(), size, opt_stream(stream), &mut raw) })?;
        Ok(Buffer::adopt(non_null(raw)))
    }

    pub fn statistics(&self) -> Result<Statistics> {
        let mut s = sys::cumem_resource_statistics_t::default();
        // SAFETY: live resource; struct_size set by Default.
        check(unsafe { sys::cumem_resource_get_statistics(self.raw.as_ptr(), &mut s) })?;
        Ok(Statistics {
            bytes_in_use: s.bytes_in_use,
            peak_bytes_in_use: s.peak_bytes_in_use,
            live_allocations: s.live_allocations,
            total_allocations: s.total_allocations,
        })
    }

    /// Sets the peak to the bytes in use now.
    pub fn reset_peak(&self) -> Result<()> {
        // SAFETY: live resource (concurrent calls allowed).
        check(unsafe { sys::cumem_resource_reset_peak(self.raw.as_ptr()) })
    }

    /// The resource's kind (`sys::CUMEM_RESOURCE_*`).
    pub fn kind(&self) -> Result<ResourceKind> {
        let mut p = sys::cumem_resource_properties_t::default();
        // SAFETY: live resource; struct_size set by Default.
        check(unsafe { sys::cumem_resource_get_properties(self.raw.as_ptr(), &mut p) })?;
        Ok(p.kind)
    }

    pub fn as_raw(&self) -> *mut sys::cumem_resource_t {
        self.raw.as_ptr()
    }
}

impl Drop for Resource {
    fn drop(&mut self) {
        // SAFETY: we own one reference; buffers keep their resource alive
        // themselves.
        unsafe { sys::cumem_resource_release(self.raw.as_ptr()) };
    }
}

// ---------------------------------------------------------------------------
// Buffers
// ---------------------------------------------------------------------------

/// Memory allocated from a resource, seen as elements of `T` (bytes by
/// default; [`DeviceRepr`] types: see typed.rs, `Buffer<f32>` with
/// `copy_from_slice(&[f32])` and `copy_to_vec()`, as cudarc's
/// `CudaSlice<T>`). Its contents are only reached through libcumem (copies,
/// fills, kernels), never as a Rust slice, so `&Buffer` never aliases Rust
/// memory. `repr(transparent)`: a `Buffer<T>` is one handle, whatever `T`
/// (so `as_bytes` is a view of the same buffer).
#[derive(Debug)]
#[repr(transparent)]
pub struct Buffer<T = u8> {
    raw: NonNull<sys::cumem_buffer_t>,
    _elements: std::marker::PhantomData<fn() -> T>,
}
// SAFETY: see the crate's thread-safety note: every call taking `&self` may
// run concurrently; close takes `&mut self` and the last release is in Drop.
unsafe impl<T> Send for Buffer<T> {}
unsafe impl<T> Sync for Buffer<T> {}

/// What a buffer's memory is (`cumem_memory_kind_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryKind {
    Host,
    Device,
    Pinned,
    Managed,
    Other(i32),
}

impl From<sys::cumem_memory_kind_t> for MemoryKind {
    fn from(v: sys::cumem_memory_kind_t) -> Self {
        match v {
            sys::CUMEM_MEMORY_HOST => MemoryKind::Host,
            sys::CUMEM_MEMORY_DEVICE => MemoryKind::Device,
            sys::CUMEM_MEMORY_PINNED => MemoryKind::Pinned,
            sys::CUMEM_MEMORY_MANAGED => MemoryKind::Managed,
            other => MemoryKind::Other(other),
        }
    }
}

/// `cumem_buffer_info_t` in Rust types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferInfo {
    /// -1 for memory not tied to a device.
    pub device_id: i32,
    pub ptr: *mut c_void,
    pub size: u64,
    pub memory_kind: MemoryKind,
    pub device_accessible: bool,
    pub host_accessible: bool,
    pub is_slice: bool,
    pub owns_memory: bool,
}

/// A borrowed host slice wrapped as a libcumem buffer for one copy.
struct Wrapped(NonNull<sys::cumem_buffer_t>);

impl Wrapped {
    fn new(ptr: *mut u8, len: usize) -> Result<Wrapped> {
        let ptr = if len == 0 { ptr::null_mut() } else { ptr as *mut c_void };
        let mut raw = ptr::null_mut();
        // SAFETY: [ptr, ptr+len) is a live slice for the life of Wrapped;
        // no release callback (the memory stays the slice owner's).
        check(unsafe { sys::cumem_buffer_wrap(ptr, len, None, ptr::null_mut(), &mut raw) })?;
        Ok(Wrapped(non_null(raw)))
    }
}

impl Drop for Wrapped {
    fn drop(&mut self) {
        // SAFETY: we own the only reference; wrapped memory is released at
        // once (no deallocation stream, no callback).
        unsafe { sys::cumem_buffer_release(self.0.as_ptr()) };
    }
}

impl<T> Buffer<T> {
    /// Takes over one reference to `raw` (a buffer libcumem just handed out).
    fn adopt(raw: NonNull<sys::cumem_buffer_t>) -> Buffer<T> {
        Buffer { raw, _elements: std::marker::PhantomData }
    }

    pub fn ptr(&self) -> Result<*mut c_void> {
        let mut p = ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::cumem_buffer_ptr(self.raw.as_ptr(), &mut p) })?;
        Ok(p)
    }

    pub fn size(&self) -> Result<usize> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::cumem_buffer_size(self.raw.as_ptr(), &mut n) })?;
        Ok(n)
    }

    pub fn info(&self) -> Result<BufferInfo> {
        let mut i = sys::cumem_buffer_info_t::default();
        // SAFETY: live handle; struct_size set by Default.
        check(unsafe { sys::cumem_buffer_get_info(self.raw.as_ptr(), &mut i) })?;
        Ok(BufferInfo {
            device_id: i.device_id,
            ptr: i.ptr,
            size: i.size,
            memory_kind: i.memory_kind.into(),
            device_accessible: i.device_accessible != 0,
            host_accessible: i.host_accessible != 0,
            is_slice: i.is_slice != 0,
            owns_memory: i.owns_memory != 0,
        })
    }

    pub fn is_closed(&self) -> Result<bool> {
        let mut c = 0;
        // SAFETY: live handle (works on closed buffers too).
        check(unsafe { sys::cumem_buffer_is_closed(self.raw.as_ptr(), &mut c) })?;
        Ok(c != 0)
    }

    /// Fills the buffer with `value` repeated, each `width` bytes (1, 2 or
    /// 4), ordered on `stream`.
    pub fn fill(&self, value: u32, width: u32, stream: Option<&Stream>) -> Result<()> {
        // SAFETY: live handle; concurrent calls are allowed (header).
        check(unsafe { sys::cumem_buffer_fill(self.raw.as_ptr(), value, width, opt_stream(stream)) })
    }

    /// Copies all of `self` into `dst` (sizes must be equal:
    /// `Status::SIZE_MISMATCH`), ordered on `stream`.
    pub fn copy_to(&self, dst: &Buffer<T>, stream: Option<&Stream>) -> Result<()> {
        // SAFETY: live handles; concurrent calls are allowed (header).
        check(unsafe { sys::cumem_buffer_copy_to(self.raw.as_ptr(), dst.raw.as_ptr(), opt_stream(stream)) })
    }

    /// Copies `src` into the buffer (sizes must be equal:
    /// `Status::SIZE_MISMATCH`) on `stream`, and waits for the copy before
    /// returning (the slice is only borrowed). With `stream` None only
    /// memory that no device accesses (host resource) can be copied, since
    /// there is no stream to wait for: else `Status::INVALID_ARGUMENT`.
    pub fn copy_from_slice(&self, src: &[T], stream: Option<&Stream>) -> Result<()>
    where
        T: DeviceRepr,
    {
        self.require_stream_for_device_memory(stream, "copy_from_slice")?;
        let wrapped = Wrapped::new(src.as_ptr() as *mut u8, std::mem::size_of_val(src))?;
        // SAFETY: live handles; libcumem only reads the wrapped source.
        check(unsafe { sys::cumem_buffer_copy_from(self.raw.as_ptr(), wrapped.0.as_ptr(), opt_stream(stream)) })?;
        if let Some(s) = stream {
            s.synchronize()?;
        }
        Ok(())
    }

    /// Copies the buffer into `dst` (sizes must be equal:
    /// `Status::SIZE_MISMATCH`) on `stream`, and waits for the copy before
    /// returning. `stream` None: as for [`Buffer::copy_from_slice`].
    pub fn copy_to_slice(&self, dst: &mut [T], stream: Option<&Stream>) -> Result<()>
    where
        T: DeviceRepr,
    {
        self.copy_into(dst.as_mut_ptr() as *mut u8, std::mem::size_of_val(dst), stream, "copy_to_slice")
    }

    /// Copies the buffer into `bytes` bytes at `dst` (host memory writable
    /// for the call, initialised or not) and waits for the copy.
    fn copy_into(&self, dst: *mut u8, bytes: usize, stream: Option<&Stream>, what: &str) -> Result<()> {
        self.require_stream_for_device_memory(stream, what)?;
        let wrapped = Wrapped::new(dst, bytes)?;
        // SAFETY: live handles; `dst` is borrowed mutably until we return,
        // after the copy has finished.
        check(unsafe { sys::cumem_buffer_copy_to(self.raw.as_ptr(), wrapped.0.as_ptr(), opt_stream(stream)) })?;
        if let Some(s) = stream {
            s.synchronize()?;
        }
        Ok(())
    }

    fn require_stream_for_device_memory(&self, stream: Option<&Stream>, what: &str) -> Result<()> {
        if stream.is_none() && self.info()?.device_accessible {
            return Err(Error {
                status: Status::INVALID_ARGUMENT,
                message: format!(
                    "Buffer::{what}: device-accessible memory needs a stream to wait for \
                     (the host slice is only borrowed for the call)"
                ),
            });
        }
        Ok(())
    }

    /// Frees the memory ordered on `stream` (None: the buffer's
    /// deallocation stream). The handle stays valid: later calls but
    /// `is_closed` give `Status::BUFFER_CLOSED`, and a second close too.
    pub fn close(&mut self, stream: Option<&Stream>) -> Result<()> {
        // SAFETY: live handle; `&mut self` keeps any other call on this
        // buffer from racing with the close (the header's rule).
        check(unsafe { sys::cumem_buffer_close(self.raw.as_ptr(), opt_stream(stream)) })
    }

    pub fn as_raw(&self) -> *mut sys::cumem_buffer_t {
        self.raw.as_ptr()
    }
}

impl<T> Drop for Buffer<T> {
    fn drop(&mut self) {
        // SAFETY: we own one reference; the last one closes the buffer on its
        // deallocation stream (close explicitly to see errors).
        unsafe { sys::cumem_buffer_release(self.raw.as_ptr()) };
    }
}

// ---------------------------------------------------------------------------
// Virtual memory (cumem.h "Virtual memory"): buffers that grow and shrink
// ---------------------------------------------------------------------------

/// Options of a virtual memory resource, in `cumem_virtual_resource_options_t`'s
/// terms (cuda.core's `VirtualMemoryResourceOptions`); `Default` is every
/// default: device memory at the recommended granularity, no IPC, 20 MiB chunks.
#[derive(Clone, Debug)]
pub struct VirtualOptions {
    /// `CUMEM_LOCATION_NONE` (the resource's device), `_DEVICE`, `_HOST` or `_HOST_NUMA`.
    pub location: sys::cumem_location_t,
    pub granularity: sys::cumem_granularity_t,
    /// `CUMEM_IPC_HANDLE_POSIX_FD` and/or `CUMEM_IPC_HANDLE_FABRIC` (after its probe).
    pub handle_types: u32,
    pub gpu_direct_rdma: bool,
    pub address_hint: u64,
    pub alignment: u64,
    pub chunk_size: u64,
    pub reserve_size: u64,
    /// Device ordinals given access besides the resource's own.
    pub peers: Vec<i32>,
    pub peers_read_only: bool,
    /// What NCCL's qualified allocator has and the device allows: POSIX fd
    /// handles, FABRIC after its probe, GPUDirect RDMA (`nccl_qualified`).
    pub nccl_qualified: bool,
}

impl Default for VirtualOptions {
    fn default() -> Self {
        VirtualOptions {
            location: sys::cumem_location_t { type_: sys::CUMEM_LOCATION_NONE, id: 0 },
            granularity: sys::CUMEM_GRANULARITY_RECOMMENDED,
            handle_types: 0,
            gpu_direct_rdma: false,
            address_hint: 0,
            alignment: 0,
            chunk_size: 0,
            reserve_size: 0,
            peers: Vec::new(),
            peers_read_only: false,
            nccl_qualified: false,
        }
    }
}

/// A device's access to virtual memory (`cumem_access_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    None,
    Read,
    ReadWrite,
}

impl Access {
    fn raw(self) -> sys::cumem_access_t {
        match self {
            Access::None => sys::CUMEM_ACCESS_NONE,
            Access::Read => sys::CUMEM_ACCESS_READ,
            Access::ReadWrite => sys::CUMEM_ACCESS_READ_WRITE,
        }
    }
}

/// `cumem_virtual_statistics_t` without its header fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VirtualStatistics {
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

impl Resource {
    /// A virtual memory resource for `device` (cuda.core's `VirtualMemoryResource`).
    pub fn virtual_memory(device: &Device, options: &VirtualOptions) -> Result<Resource> {
        let o = sys::cumem_virtual_resource_options_t {
            location: options.location,
            granularity: options.granularity,
            handle_types: options.handle_types,
            gpu_direct_rdma: options.gpu_direct_rdma as u32,
            address_hint: options.address_hint,
            alignment: options.alignment,
            chunk_size: options.chunk_size,
            reserve_size: options.reserve_size,
            peers: if options.peers.is_empty() { ptr::null() } else { options.peers.as_ptr() },
            peer_count: options.peers.len() as u32,
            peers_read_only: options.peers_read_only as u32,
            nccl_qualified: options.nccl_qualified as u32,
            ..Default::default()
        };
        // SAFETY: live device; the options and the peers outlive the call
        // (libcumem copies them).
        Self::make(|out| unsafe { sys::cumem_virtual_resource_create(device.raw.as_ptr(), &o, out) })
    }

    /// `peer`'s access to every buffer of a virtual resource, present and future.
    pub fn virtual_set_access(&self, peer: &Device, access: Access) -> Result<()> {
        // SAFETY: live resource and device.
        check(unsafe { sys::cumem_virtual_resource_set_access(self.raw.as_ptr(), peer.raw.as_ptr(), access.raw()) })
    }

    pub fn virtual_get_access(&self, peer: &Device) -> Result<Access> {
        let mut a = sys::CUMEM_ACCESS_NONE;
        // SAFETY: live resource and device, valid out pointer.
        check(unsafe { sys::cumem_virtual_resource_get_access(self.raw.as_ptr(), peer.raw.as_ptr(), &mut a) })?;
        Ok(match a {
            sys::CUMEM_ACCESS_READ => Access::Read,
            sys::CUMEM_ACCESS_READ_WRITE => Access::ReadWrite,
            _ => Access::None,
        })
    }

    pub fn virtual_statistics(&self) -> Result<VirtualStatistics> {
        let mut s = sys::cumem_virtual_statistics_t::default();
        // SAFETY: live resource; struct_size set by Default.
        check(unsafe { sys::cumem_virtual_resource_get_statistics(self.raw.as_ptr(), &mut s) })?;
        Ok(VirtualStatistics {
            granularity: s.granularity,
            chunk_size: s.chunk_size,
            bytes_mapped: s.bytes_mapped,
            bytes_reserved: s.bytes_reserved,
            bytes_pending: s.bytes_pending,
            grows_in_place: s.grows_in_place,
            grows_moved: s.grows_moved,
            shrinks: s.shrinks,
            chunks_created: s.chunks_created,
            chunks_released: s.chunks_released,
        })
    }

    /// Waits for the work pending frees and resizes wait for, then releases them.
    pub fn release_pending(&self) -> Result<()> {
        // SAFETY: live resource.
        check(unsafe { sys::cumem_virtual_resource_release_pending(self.raw.as_ptr()) })
    }
}

impl<T> Buffer<T> {
    /// Resizes a buffer of a virtual resource to `new_size` bytes, contents
    /// kept (cuda.core's `modify_allocation`); `ptr()` may change. Ordered
    /// on `stream` (None: the deallocation stream).
    pub fn resize(&mut self, new_size: usize, stream: Option<&Stream>) -> Result<()> {
        // SAFETY: live handle; `&mut self` keeps other calls on this buffer
        // from racing with the resize (the header's rule).
        check(unsafe { sys::cumem_buffer_resize(self.raw.as_ptr(), new_size, opt_stream(stream)) })
    }

    /// This virtual buffer's chunks as file descriptors, for another process.
    pub fn get_virtual_ipc_handle(&self) -> Result<VirtualIpcHandle> {
        let mut raw = ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::cumem_buffer_get_virtual_ipc_handle(self.raw.as_ptr(), &mut raw) })?;
        Ok(VirtualIpcHandle { raw: non_null(raw) })
    }
}

impl Buffer {
    /// Maps another process's virtual buffer on `device`.
    pub fn from_virtual_ipc_handle(device: &Device, handle: &VirtualIpcHandle, stream: Option<&Stream>) -> Result<Buffer> {
        let mut raw = ptr::null_mut();
        // SAFETY: live device and handle, optional live stream.
        check(unsafe {
            sys::cumem_buffer_from_virtual_ipc_handle(device.raw.as_ptr(), handle.raw.as_ptr(), opt_stream(stream), &mut raw)
        })?;
        Ok(Buffer::adopt(non_null(raw)))
    }
}

/// A virtual buffer's chunks as file descriptors (owned, closed on `Drop`)
/// and the descriptor that lists them.
#[derive(Debug)]
pub struct VirtualIpcHandle {
    raw: NonNull<sys::cumem_virtual_ipc_handle_t>,
}
// SAFETY: the handle is immutable once made; every call only reads it.
unsafe impl Send for VirtualIpcHandle {}
unsafe impl Sync for VirtualIpcHandle {}

impl VirtualIpcHandle {
    /// Rebuilds a handle from a descriptor's bytes and its chunks' fds, in
    /// order. On success the handle owns the fds; on error the caller still does.
    pub fn from_fds(descriptor: &[u8], fds: &[i32]) -> Result<VirtualIpcHandle> {
        let mut raw = ptr::null_mut();
        // SAFETY: the slices are valid for their lengths during the call.
        check(unsafe {
            sys::cumem_virtual_ipc_handle_from_fds(descriptor.as_ptr(), descriptor.len(), fds.as_ptr(), fds.len() as u32, &mut raw)
        })?;
        Ok(VirtualIpcHandle { raw: non_null(raw) })
    }

    /// The chunks' file descriptors, borrowed: valid while the handle lives.
    pub fn fds(&self) -> Result<Vec<i32>> {
        let mut n = 0u32;
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::cumem_virtual_ipc_handle_fd_count(self.raw.as_ptr(), &mut n) })?;
        (0..n)
            .map(|i| {
                let mut fd = -1;
                check(unsafe { sys::cumem_virtual_ipc_handle_fd(self.raw.as_ptr(), i, &mut fd) })?;
                Ok(fd)
            })
            .collect()
    }

    /// The descriptor's bytes.
    pub fn descriptor(&self) -> Result<Vec<u8>> {
        let mut n = 0usize;
        // SAFETY: live handle; NULL with capacity 0 asks for the length.
        check(unsafe { sys::cumem_virtual_ipc_handle_descriptor(self.raw.as_ptr(), ptr::null_mut(), 0, &mut n) })?;
        let mut bytes = vec![0u8; n];
        // SAFETY: `bytes` has room for n bytes.
        check(unsafe { sys::cumem_virtual_ipc_handle_descriptor(self.raw.as_ptr(), bytes.as_mut_ptr(), n, &mut n) })?;
        Ok(bytes)
    }

    /// Sends the handle over a connected Unix domain socket (its fd).
    pub fn send(&self, socket: i32) -> Result<()> {
        // SAFETY: live handle; the socket is the caller's.
        check(unsafe { sys::cumem_ipc_send_virtual(socket, self.raw.as_ptr()) })
    }

    /// Receives a handle sent by `send`.
    pub fn receive(socket: i32) -> Result<VirtualIpcHandle> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid out pointer; the socket is the caller's.
        check(unsafe { sys::cumem_ipc_receive_virtual(socket, &mut raw) })?;
        Ok(VirtualIpcHandle { raw: non_null(raw) })
    }
}

impl Drop for VirtualIpcHandle {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::cumem_virtual_ipc_handle_release(self.raw.as_ptr()) };
    }
}

// ---------------------------------------------------------------------------
// CUDA graphs: capture status, executable graphs, graph memory
// ---------------------------------------------------------------------------

/// Whether a stream captures (`cumem_capture_status_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureStatus {
    None,
    Active,
    /// Capturing, but an error invalidated the capture (it must still be ended).
    Invalidated,
}

/// A stream's capture: its status and the capture's id (unique per capture
/// sequence in the process; 0 unless active).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CaptureInfo {
    pub status: CaptureStatus,
    pub id: u64,
}

/// How a captured graph is instantiated (`cumem_graph_options_t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GraphOptions {
    /// Each launch first frees what the previous launch allocated and kept.
    pub auto_free_on_launch: bool,
    /// Kernel nodes keep the priority they were captured with.
    pub use_node_priority: bool,
}

impl GraphOptions {
    fn to_sys(self) -> sys::cumem_graph_options_t {
        sys::cumem_graph_options_t {
            auto_free_on_launch: self.auto_free_on_launch as u32,
            use_node_priority: self.use_node_priority as u32,
            ..Default::default()
        }
    }
}

impl Stream {
    /// Captures the work queued from now into a CUDA graph
    /// (`sys::CUMEM_CAPTURE_MODE_*`).
    pub fn begin_capture(&self, mode: sys::cumem_capture_mode_t) -> Result<()> {
        // SAFETY: live handle; the library checks the mode.
        check(unsafe { sys::cumem_stream_begin_capture(self.raw.as_ptr(), mode) })
    }

    /// Whether the stream captures now, whoever began the capture.
    pub fn capture_info(&self) -> Result<CaptureInfo> {
        let mut info = sys::cumem_capture_info_t::default();
        // SAFETY: live handle; struct_size set by Default.
        check(unsafe { sys::cumem_stream_get_capture_info(self.raw.as_ptr(), &mut info) })?;
        let status = match info.status {
            sys::CUMEM_CAPTURE_STATUS_ACTIVE => CaptureStatus::Active,
            sys::CUMEM_CAPTURE_STATUS_INVALIDATED => CaptureStatus::Invalidated,
            _ => CaptureStatus::None,
        };
        Ok(CaptureInfo { status, id: info.id })
    }

    /// Ends the capture on this stream into an executable graph.
    pub fn end_capture_graph(&self, options: GraphOptions) -> Result<Graph> {
        let o = options.to_sys();
        let mut raw = ptr::null_mut();
        // SAFETY: live handle, initialised options, valid out pointer.
        check(unsafe { sys::cumem_stream_end_capture_graph(self.raw.as_ptr(), &o, &mut raw) })?;
        Ok(Graph { raw: non_null(raw) })
    }
}

/// An executable CUDA graph, destroyed with its last reference.
#[derive(Debug)]
pub struct Graph {
    raw: NonNull<sys::cumem_graph_t>,
}
// SAFETY: graphs allow all calls concurrently (launches are serialised).
unsafe impl Send for Graph {}
unsafe impl Sync for Graph {}

impl Graph {
    /// Instantiates a CUgraph for `device`; the CUgraph stays the caller's.
    ///
    /// # Safety
    /// `native_graph` must be a live CUgraph.
    pub unsafe fn instantiate(device: &Device, native_graph: *mut c_void, options: GraphOptions) -> Result<Graph> {
        let o = options.to_sys();
        let mut raw = ptr::null_mut();
        check(sys::cumem_graph_instantiate(device.raw.as_ptr(), native_graph, &o, &mut raw))?;
        Ok(Graph { raw: non_null(raw) })
    }

    /// Enqueues one run on `stream` (None: the legacy default stream).
    pub fn launch(&self, stream: Option<&Stream>) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { sys::cumem_graph_launch(self.raw.as_ptr(), opt_stream(stream)) })
    }

    pub fn upload(&self, stream: Option<&Stream>) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { sys::cumem_graph_upload(self.raw.as_ptr(), opt_stream(stream)) })
    }

    /// The CUgraphExec, valid while this graph lives.
    pub fn native(&self) -> Result<*mut c_void> {
        let mut p = ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::cumem_graph_native(self.raw.as_ptr(), &mut p) })?;
        Ok(p)
    }

    /// The id of the capture it came from (0: instantiated from a CUgraph).
    pub fn capture_id(&self) -> Result<u64> {
        let mut id = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::cumem_graph_capture_id(self.raw.as_ptr(), &mut id) })?;
        Ok(id)
    }

    pub fn as_raw(&self) -> *mut sys::cumem_graph_t {
        self.raw.as_ptr()
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::cumem_graph_release(self.raw.as_ptr()) };
    }
}

/// The device's graph memory (`cumem_graph_memory_attributes_t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GraphMemoryAttributes {
    pub reserved_mem_current: u64,
    pub reserved_mem_high: u64,
    pub used_mem_current: u64,
    pub used_mem_high: u64,
}

impl Resource {
    /// The graph memory resource of `device` (cuda.core's
    /// GraphMemoryResource): allocations on capturing streams only.
    pub fn graph_memory(device: &Device) -> Result<Resource> {
        // SAFETY: live device.
        Self::make(|out| unsafe { sys::cumem_graph_memory_resource_create(device.raw.as_ptr(), out) })
    }

    /// Graph memory resources only: the device's graph memory.
    pub fn graph_memory_attributes(&self) -> Result<GraphMemoryAttributes> {
        let mut a = sys::cumem_graph_memory_attributes_t::default();
        // SAFETY: live resource; struct_size set by Default.
        check(unsafe { sys::cumem_graph_memory_resource_get_attributes(self.raw.as_ptr(), &mut a) })?;
        Ok(GraphMemoryAttributes {
            reserved_mem_current: a.reserved_mem_current,
            reserved_mem_high: a.reserved_mem_high,
            used_mem_current: a.used_mem_current,
            used_mem_high: a.used_mem_high,
        })
    }

    /// Graph memory resources only: gives unused graph memory back.
    pub fn graph_memory_trim(&self) -> Result<()> {
        // SAFETY: live resource.
        check(unsafe { sys::cumem_graph_memory_resource_trim(self.raw.as_ptr()) })
    }

    /// Graph memory resources only: the highs back to the current values.
    pub fn graph_memory_reset_highs(&self) -> Result<()> {
        // SAFETY: live resource.
        check(unsafe { sys::cumem_graph_memory_resource_reset_highs(self.raw.as_ptr()) })
    }
}

// ---------------------------------------------------------------------------
// Copies at scale: locations, batches, the device's memory resource, the
// failure-callback adaptor (cuda.core 1.3's copy_batch, prefetch_batch, ...)
// ---------------------------------------------------------------------------

/// A memory location (`cumem_location_t`; cuda.core's `Device` and `Host`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// No location (a hint not given; a range never prefetched).
    None,
    Device(i32),
    Host,
    HostNuma(i32),
    /// The host NUMA node of the calling thread.
    HostNumaCurrent,
}

impl Location {
    fn to_sys(self) -> sys::cumem_location_t {
        let (type_, id) = match self {
            Location::None => (sys::CUMEM_LOCATION_NONE, 0),
            Location::Device(d) => (sys::CUMEM_LOCATION_DEVICE, d),
            Location::Host => (sys::CUMEM_LOCATION_HOST, 0),
            Location::HostNuma(n) => (sys::CUMEM_LOCATION_HOST_NUMA, n),
            Location::HostNumaCurrent => (sys::CUMEM_LOCATION_HOST_NUMA_CURRENT, 0),
        };
        sys::cumem_location_t { type_, id }
    }
    fn from_sys(l: sys::cumem_location_t) -> Location {
        match l.type_ {
            sys::CUMEM_LOCATION_DEVICE => Location::Device(l.id),
            sys::CUMEM_LOCATION_HOST => Location::Host,
            sys::CUMEM_LOCATION_HOST_NUMA => Location::HostNuma(l.id),
            sys::CUMEM_LOCATION_HOST_NUMA_CURRENT => Location::HostNumaCurrent,
            _ => Location::None,
        }
    }
}

/// Where the driver reads a batch copy's source (cuda.core's MemcpySrcAccessOrder).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SrcAccessOrder {
    #[default]
    Stream,
    DuringApiCall,
    Any,
}

/// A batch copy's overlap hint (cuda.core's MemcpyOverlapMode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OverlapMode {
    #[default]
    Default,
    PreferOverlapWithCompute,
}

/// Options of one batch copy (cuda.core's CopyOptions); `Default` is stream
/// order with no hints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyOptions {
    pub src_access_order: SrcAccessOrder,
    pub src_location_hint: Location,
    pub dst_location_hint: Location,
    pub overlap_mode: OverlapMode,
}

impl Default for CopyOptions {
    fn default() -> Self {
        CopyOptions {
            src_access_order: SrcAccessOrder::Stream,
            src_location_hint: Location::None,
            dst_location_hint: Location::None,
            overlap_mode: OverlapMode::Default,
        }
    }
}

impl CopyOptions {
    fn to_sys(self) -> sys::cumem_copy_options_t {
        sys::cumem_copy_options_t {
            src_access_order: match self.src_access_order {
                SrcAccessOrder::Stream => sys::CUMEM_COPY_SRC_ACCESS_ORDER_STREAM,
                SrcAccessOrder::DuringApiCall => sys::CUMEM_COPY_SRC_ACCESS_ORDER_DURING_API_CALL,
                SrcAccessOrder::Any => sys::CUMEM_COPY_SRC_ACCESS_ORDER_ANY,
            },
            src_location_hint: self.src_location_hint.to_sys(),
            dst_location_hint: self.dst_location_hint.to_sys(),
            overlap_mode: match self.overlap_mode {
                OverlapMode::Default => sys::CUMEM_COPY_OVERLAP_DEFAULT,
                OverlapMode::PreferOverlapWithCompute => sys::CUMEM_COPY_OVERLAP_PREFER_COMPUTE,
            },
            ..Default::default()
        }
    }
}

/// One copy of a batch over buffers: `size` bytes from `src` at
/// `src_offset` to `dst` at `dst_offset`.
#[derive(Clone, Copy, Debug)]
pub struct BatchCopy<'a> {
    pub dst: &'a Buffer,
    pub dst_offset: usize,
    pub src: &'a Buffer,
    pub src_offset: usize,
    pub size: usize,
}

/// One copy of a batch over raw pointers.
#[derive(Clone, Copy, Debug)]
pub struct PointerCopy {
    pub dst: *mut c_void,
    pub src: *const c_void,
    pub size: usize,
}

fn sys_options(options: &[CopyOptions]) -> Vec<sys::cumem_copy_options_t> {
    options.iter().map(|o| o.to_sys()).collect()
}

fn options_ptr(o: &[sys::cumem_copy_options_t]) -> *const sys::cumem_copy_options_t {
    if o.is_empty() { ptr::null() } else { o.as_ptr() }
}

/// `cumem_copy_batch` (cuda.core's copy_batch): every copy in one call
/// ordered on `stream`. `options`: empty (defaults), one for every copy, or
/// one per copy. Every copy is checked before anything is queued.
pub fn copy_batch(stream: Option<&Stream>, copies: &[BatchCopy<'_>], options: &[CopyOptions]) -> Result<()> {
    let dsts: Vec<*mut sys::cumem_buffer_t> = copies.iter().map(|c| c.dst.raw.as_ptr()).collect();
    let srcs: Vec<*const sys::cumem_buffer_t> = copies.iter().map(|c| c.src.raw.as_ptr() as *const _).collect();
    let dst_offsets: Vec<usize> = copies.iter().map(|c| c.dst_offset).collect();
    let src_offsets: Vec<usize> = copies.iter().map(|c| c.src_offset).collect();
    let sizes: Vec<usize> = copies.iter().map(|c| c.size).collect();
    let o = sys_options(options);
    // SAFETY: live buffers (borrowed for the call); every array holds
    // copies.len() entries; options as the header reads them.
    check(unsafe {
        sys::cumem_copy_batch(opt_stream(stream), copies.len(), dsts.as_ptr(), dst_offsets.as_ptr(),
                              srcs.as_ptr(), src_offsets.as_ptr(), sizes.as_ptr(), options_ptr(&o), o.len())
    })
}

/// `cumem_copy_batch_raw`: the same over raw pointers.
///
/// # Safety
/// Every range must be memory the copies may read or write (device, pinned,
/// managed or host memory that stays valid until the copies are done).
pub unsafe fn copy_batch_raw(stream: Option<&Stream>, copies: &[PointerCopy], options: &[CopyOptions]) -> Result<()> {
    let dsts: Vec<*mut c_void> = copies.iter().map(|c| c.dst).collect();
    let srcs: Vec<*const c_void> = copies.iter().map(|c| c.src).collect();
    let sizes: Vec<usize> = copies.iter().map(|c| c.size).collect();
    let o = sys_options(options);
    check(sys::cumem_copy_batch_raw(opt_stream(stream), copies.len(), dsts.as_ptr(), ptr::null(),
                                    srcs.as_ptr(), ptr::null(), sizes.as_ptr(), options_ptr(&o), o.len()))
}

fn buffer_handles(buffers: &[&Buffer]) -> Vec<*mut sys::cumem_buffer_t> {
    buffers.iter().map(|b| b.raw.as_ptr()).collect()
}

/// Prefetches managed buffers in one batch (cuda.core's prefetch_batch):
/// `locations` one for every buffer, or one each.
pub fn prefetch_batch(stream: Option<&Stream>, buffers: &[&Buffer], locations: &[Location]) -> Result<()> {
    let b = buffer_handles(buffers);
    let l: Vec<sys::cumem_location_t> = locations.iter().map(|l| l.to_sys()).collect();
    // SAFETY: live buffers; arrays of their stated lengths.
    check(unsafe { sys::cumem_prefetch_batch(opt_stream(stream), b.len(), b.as_ptr(), l.as_ptr(), l.len()) })
}

/// Discards the contents of managed buffers in one batch (CUDA 13+).
pub fn discard_batch(stream: Option<&Stream>, buffers: &[&Buffer]) -> Result<()> {
    let b = buffer_handles(buffers);
    // SAFETY: live buffers.
    check(unsafe { sys::cumem_discard_batch(opt_stream(stream), b.len(), b.as_ptr()) })
}

/// Discards managed buffers and prefetches their pages (CUDA 13+).
pub fn discard_prefetch_batch(stream: Option<&Stream>, buffers: &[&Buffer], locations: &[Location]) -> Result<()> {
    let b = buffer_handles(buffers);
    let l: Vec<sys::cumem_location_t> = locations.iter().map(|l| l.to_sys()).collect();
    // SAFETY: live buffers; arrays of their stated lengths.
    check(unsafe {
        sys::cumem_discard_prefetch_batch(opt_stream(stream), b.len(), b.as_ptr(), l.as_ptr(), l.len())
    })
}

/// How batches went in this process (`cumem_batch_get_statistics`).
pub fn batch_statistics() -> Result<sys::cumem_batch_statistics_t> {
    let mut s = sys::cumem_batch_statistics_t::default();
    // SAFETY: struct_size set by Default.
    check(unsafe { sys::cumem_batch_get_statistics(&mut s) })?;
    Ok(s)
}

impl Device {
    /// The device's memory resource (cuda.core's Device.memory_resource):
    /// its default-pool resource until set.
    pub fn memory_resource(&self) -> Result<Resource> {
        // SAFETY: live device; on success we own one reference.
        Resource::make(|out| unsafe { sys::cumem_device_get_memory_resource(self.raw.as_ptr(), out) })
    }

    /// Sets the device's memory resource; None goes back to the default
    /// (the same object as before).
    pub fn set_memory_resource(&self, resource: Option<&Resource>) -> Result<()> {
        let r = resource.map_or(ptr::null_mut(), |r| r.raw.as_ptr());
        // SAFETY: live handles; libcumem takes its own reference.
        check(unsafe { sys::cumem_device_set_memory_resource(self.raw.as_ptr(), r) })
    }

    /// `size` bytes from the device's memory resource (cuda.core's Device.allocate).
    pub fn allocate(&self, size: usize, stream: Option<&Stream>) -> Result<Buffer> {
        let mut raw = ptr::null_mut();
        // SAFETY: live device, optional live stream, valid out pointer.
        check(unsafe { sys::cumem_device_allocate(self.raw.as_ptr(), size, opt_stream(stream), &mut raw) })?;
        Ok(Buffer::adopt(non_null(raw)))
    }
}

impl<T> Buffer<T> {
    /// cuda.core's copy_to with no destination: a new buffer from this
    /// buffer's resource, holding a copy made on `stream`.
    pub fn copy_to_new(&self, stream: Option<&Stream>) -> Result<Buffer<T>> {
        let mut raw = ptr::null_mut();
        // SAFETY: live handle, optional live stream, valid out pointer.
        check(unsafe { sys::cumem_buffer_copy_to_new(self.raw.as_ptr(), opt_stream(stream), &mut raw) })?;
        Ok(Buffer::adopt(non_null(raw)))
    }

    /// Managed memory: migrates the pages to `location` on `stream`.
    pub fn prefetch(&self, location: Location, stream: Option<&Stream>) -> Result<()> {
        // SAFETY: live handle; concurrent calls are allowed (header).
        check(unsafe { sys::cumem_buffer_prefetch(self.raw.as_ptr(), location.to_sys(), opt_stream(stream)) })
    }

    /// Managed memory: drops the contents (CUDA 13+).
    pub fn discard(&self, stream: Option<&Stream>) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { sys::cumem_buffer_discard(self.raw.as_ptr(), opt_stream(stream)) })
    }

    /// Managed memory: drops the contents and prefetches the pages to
    /// `location` in one step (CUDA 13+).
    pub fn discard_prefetch(&self, location: Location, stream: Option<&Stream>) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe {
            sys::cumem_buffer_discard_prefetch(self.raw.as_ptr(), location.to_sys(), opt_stream(stream))
        })
    }

    /// Where the pages were last asked to go; `Location::None` when some
    /// never were or they went to different places.
    pub fn last_prefetch_location(&self) -> Result<Location> {
        let mut l = sys::cumem_location_t::default();
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::cumem_buffer_get_last_prefetch_location(self.raw.as_ptr(), &mut l) })?;
        Ok(Location::from_sys(l))
    }
}

/// What a failure callback is told about a refused allocation.
#[derive(Clone, Debug)]
pub struct FailureInfo {
    /// 1 for the first refusal of this allocation, 2 after one refused retry, ...
    pub attempt: u32,
    pub size: u64,
    /// The native CUstream (null: the legacy default stream).
    pub stream: *mut c_void,
    /// The adaptor's statistics at the time.
    pub statistics: Statistics,
    pub message: String,
}

type FailureFn = Box<dyn Fn(&FailureInfo) -> bool + Send + Sync>;

unsafe extern "C" fn failure_trampoline(
    info: *const sys::cumem_failure_info_t,
    user_data: *mut c_void,
) -> sys::cumem_failure_action_t {
    // SAFETY: user_data is the FailureFn boxed by Resource::failure_callback,
    // alive until failure_destroy; info is valid during the call.
    let (f, i) = unsafe { (&*(user_data as *const FailureFn), &*info) };
    // SAFETY: the statistics and message pointers are valid during the call.
    let (s, message) = unsafe { (&*i.statistics, CStr::from_ptr(i.message).to_string_lossy().into_owned()) };
    let info = FailureInfo {
        attempt: i.attempt,
        size: i.size,
        stream: i.stream,
        statistics: Statistics {
            bytes_in_use: s.bytes_in_use,
            peak_bytes_in_use: s.peak_bytes_in_use,
            live_allocations: s.live_allocations,
            total_allocations: s.total_allocations,
        },
        message,
    };
    // A panic must not unwind into libcumem: it counts as giving up.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&info))) {
        Ok(true) => sys::CUMEM_FAILURE_RETRY,
        _ => sys::CUMEM_FAILURE_FAIL,
    }
}

unsafe extern "C" fn failure_destroy(user_data: *mut c_void) {
    // SAFETY: called once, with the box made by Resource::failure_callback.
    drop(unsafe { Box::from_raw(user_data as *mut FailureFn) });
}

impl Resource {
    /// The failure-callback adaptor over `upstream` (RMM's
    /// failure_callback_resource_adaptor): when the upstream is out of
    /// memory, `retry(info)` is called, which may free memory and return
    /// true to try again (at most `max_retries` times per allocation; 0: the
    /// default, 16). It may run on several threads at once; a panic in it
    /// counts as giving up.
    pub fn failure_callback<F>(upstream: &Resource, max_retries: u32, retry: F) -> Result<Resource>
    where
        F: Fn(&FailureInfo) -> bool + Send + Sync + 'static,
    {
        let boxed: *mut FailureFn = Box::into_raw(Box::new(Box::new(retry)));
        let c = sys::cumem_failure_callback_t {
            max_retries,
            callback: Some(failure_trampoline),
            destroy: Some(failure_destroy),
            user_data: boxed as *mut c_void,
            ..Default::default()
        };
        // SAFETY: live upstream; c as the header reads it.
        let made = Resource::make(|out| unsafe { sys::cumem_failure_callback_resource_create(upstream.raw.as_ptr(), &c, out) });
        if made.is_err() {
            // No adaptor was made: destroy never runs, so the box is ours.
            // SAFETY: made by Box::into_raw above, not handed to libcumem.
            drop(unsafe { Box::from_raw(boxed) });
        }
        made
    }
}

// ---------------------------------------------------------------------------
// Seeing the memory: the memory history, snapshots, statistics as JSON, the
// summary (cumem.h, "Seeing the memory")
// ---------------------------------------------------------------------------

/// Options of the memory history (`cumem_memory_history_options_t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryHistoryOptions {
    /// Record each event's native call stack.
    pub stacks: bool,
    /// The events kept (the newest); 0: 65536.
    pub max_entries: u64,
}

/// Turns the memory history on for the whole process, emptied
/// (PyTorch's `_record_memory_history`).
pub fn memory_history_start(options: MemoryHistoryOptions) -> Result<()> {
    let o = sys::cumem_memory_history_options_t {
        stacks: options.stacks as u32,
        max_entries: options.max_entries,
        ..Default::default()
    };
    // SAFETY: o initialised as CUMEM_MEMORY_HISTORY_OPTIONS_INIT.
    check(unsafe { sys::cumem_memory_history_start(&o) })
}

/// Turns the memory history off; its events stay for snapshots.
pub fn memory_history_stop() -> Result<()> {
    // SAFETY: no arguments.
    check(unsafe { sys::cumem_memory_history_stop() })
}

/// A resource of a snapshot (`cumem_snapshot_resource_t`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotResource {
    /// `sys::CUMEM_RESOURCE_*`.
    pub kind: i32,
    pub id: u64,
    /// 0: none.
    pub upstream_id: u64,
    /// -1: host memory.
    pub device_id: i32,
    pub name: String,
    pub bytes_in_use: u64,
    pub peak_bytes_in_use: u64,
    pub live_allocations: u64,
    pub bytes_reserved: u64,
    pub bytes_cached: u64,
    pub largest_free_block: u64,
}

/// A stack frame, innermost first (`cumem_stack_frame_t`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackFrame {
    pub address: u64,
    /// "" where the module exports no symbol there.
    pub function: String,
    pub module: String,
    pub offset: u64,
}

/// A snapshot of memory: of a resource and its upstreams, or of the whole
/// process (`cumem_snapshot_t`). Segments, blocks and events are the C
/// structs (`sys::cumem_snapshot_segment_t`, ...).
pub struct Snapshot {
    raw: NonNull<sys::cumem_snapshot_t>,
}
// SAFETY: a snapshot is immutable.
unsafe impl Send for Snapshot {}
unsafe impl Sync for Snapshot {}

fn owned_text(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string the snapshot keeps alive; copied at once.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A text written like snprintf, asked for until it fits.
fn snprintf_text(f: impl Fn(*mut std::os::raw::c_char, usize, &mut usize) -> sys::cumem_status_t) -> Result<String> {
    let mut n = 0usize;
    check(f(ptr::null_mut(), 0, &mut n))?;
    loop {
        let mut buffer = vec![0u8; n + 1];
        let capacity = buffer.len();
        check(f(buffer.as_mut_ptr().cast(), capacity, &mut n))?;
        if n < capacity {
            buffer.truncate(n);
            return Ok(String::from_utf8_lossy(&buffer).into_owned());
        }
    }
}

impl Snapshot {
    fn take_raw(resource: *const sys::cumem_resource_t) -> Result<Snapshot> {
        let mut raw = ptr::null_mut();
        // SAFETY: a live resource or NULL (every live resource); valid out pointer.
        check(unsafe { sys::cumem_snapshot_take(resource, &mut raw) })?;
        Ok(Snapshot { raw: non_null(raw) })
    }
    /// `resource` and its upstreams.
    pub fn take(resource: &Resource) -> Result<Snapshot> {
        Self::take_raw(resource.raw.as_ptr())
    }
    /// Every live resource of the process.
    pub fn take_all() -> Result<Snapshot> {
        Self::take_raw(ptr::null())
    }

    pub fn totals(&self) -> Result<sys::cumem_snapshot_totals_t> {
        let mut t = sys::cumem_snapshot_totals_t::default();
        // SAFETY: live snapshot; struct_size set by Default.
        check(unsafe { sys::cumem_snapshot_get_totals(self.raw.as_ptr(), &mut t) })?;
        Ok(t)
    }

    fn list<T: Default>(
        &self,
        count: u64,
        get: unsafe fn(*const sys::cumem_snapshot_t, u64, *mut T) -> sys::cumem_status_t,
    ) -> Result<Vec<T>> {
        let mut out = Vec::with_capacity(count as usize);
        for i in 0..count {
            let mut item = T::default();
            // SAFETY: live snapshot, index in range, struct_size set by Default.
            check(unsafe { get(self.raw.as_ptr(), i, &mut item) })?;
            out.push(item);
        }
        Ok(out)
    }

    pub fn resources(&self) -> Result<Vec<SnapshotResource>> {
        let raw = self.list(self.totals()?.resource_count as u64, sys::cumem_snapshot_get_resource)?;
        Ok(raw
            .into_iter()
            .map(|r| SnapshotResource {
                kind: r.kind,
                id: r.id,
                upstream_id: r.upstream_id,
                device_id: r.device_id,
                name: owned_text(r.name),
                bytes_in_use: r.bytes_in_use,
                peak_bytes_in_use: r.peak_bytes_in_use,
                live_allocations: r.live_allocations,
                bytes_reserved: r.bytes_reserved,
                bytes_cached: r.bytes_cached,
                largest_free_block: r.largest_free_block,
            })
            .collect())
    }
    /// By resource, then by address.
    pub fn segments(&self) -> Result<Vec<sys::cumem_snapshot_segment_t>> {
        self.list(self.totals()?.segment_count, sys::cumem_snapshot_get_segment)
    }
    /// Segment after segment, each by address.
    pub fn blocks(&self) -> Result<Vec<sys::cumem_snapshot_block_t>> {
        self.list(self.totals()?.block_count, sys::cumem_snapshot_get_block)
    }
    /// Oldest first.
    pub fn events(&self) -> Result<Vec<sys::cumem_memory_event_t>> {
        self.list(self.totals()?.event_count, sys::cumem_snapshot_get_event)
    }
    /// The frames of a block's or an event's stack; none for 0.
    pub fn frames(&self, stack_id: u32) -> Result<Vec<StackFrame>> {
        let mut out = Vec::new();
        if stack_id == 0 {
            return Ok(out);
        }
        let mut depth = 1;
        let mut i = 0;
        while i < depth {
            let mut f = sys::cumem_stack_frame_t::default();
            // SAFETY: live snapshot; struct_size set by Default.
            check(unsafe { sys::cumem_snapshot_get_frame(self.raw.as_ptr(), stack_id, i, &mut f) })?;
            depth = f.depth;
            out.push(StackFrame {
                address: f.address,
                function: owned_text(f.function),
                module: owned_text(f.module),
                offset: f.offset,
            });
            i += 1;
        }
        Ok(out)
    }
    /// The JSON (schema "cumem.snapshot" version 1).
    pub fn json(&self) -> Result<&str> {
        let mut text = ptr::null();
        let mut n = 0usize;
        // SAFETY: live snapshot, valid out pointers.
        check(unsafe { sys::cumem_snapshot_to_json(self.raw.as_ptr(), &mut text, &mut n) })?;
        // SAFETY: n bytes of UTF-8 the snapshot keeps while it lives (as long as &self).
        let bytes = unsafe { std::slice::from_raw_parts(text.cast::<u8>(), n) };
        Ok(std::str::from_utf8(bytes).expect("libcumem's JSON is UTF-8"))
    }
    pub fn write_json(&self, path: &str) -> Result<()> {
        let p = std::ffi::CString::new(path).map_err(|_| Error {
            status: Status::INVALID_ARGUMENT,
            message: "Snapshot::write_json: the path holds a NUL byte".to_string(),
        })?;
        // SAFETY: live snapshot, NUL-terminated path.
        check(unsafe { sys::cumem_snapshot_write_json(self.raw.as_ptr(), p.as_ptr()) })
    }
}

impl Clone for Snapshot {
    fn clone(&self) -> Self {
        // SAFETY: live snapshot; the new reference is the clone's.
        check(unsafe { sys::cumem_snapshot_retain(self.raw.as_ptr()) }).expect("retain of a live snapshot");
        Snapshot { raw: self.raw }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::cumem_snapshot_release(self.raw.as_ptr()) };
    }
}

impl Resource {
    /// This resource's statistics and its upstreams', as JSON (schema
    /// "cumem.statistics").
    pub fn statistics_json(&self) -> Result<String> {
        // SAFETY: live resource; the buffer and its capacity come from snprintf_text.
        snprintf_text(|b, c, n| unsafe { sys::cumem_resource_statistics_json(self.raw.as_ptr(), b, c, n) })
    }
}

/// Every live resource's statistics as JSON.
pub fn statistics_json() -> Result<String> {
    // SAFETY: NULL: every live resource; the buffer comes from snprintf_text.
    snprintf_text(|b, c, n| unsafe { sys::cumem_resource_statistics_json(ptr::null(), b, c, n) })
}

/// The process's memory in text, as `torch.cuda.memory_summary()`.
pub fn memory_summary() -> Result<String> {
    // SAFETY: the buffer and its capacity come from snprintf_text.
    snprintf_text(|b, c, n| unsafe { sys::cumem_memory_summary(b, c, n) })
}
