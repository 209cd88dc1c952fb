//! Kernels: CUDA C++ compiled at run time with NVRTC ([`Program`]), loaded
//! code ([`Library`]), its kernels ([`Kernel`]) and [`launch`] (cuda.core's
//! Program, ObjectCode, Kernel, LaunchConfig and launch).
use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::os::raw::{c_char, c_void};
use std::ptr::{self, NonNull};

use crate::{check, non_null, opt_stream, sys, Buffer, DeviceRepr, Device, Error, Result, Status, Stream};

fn c_string(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error {
        status: Status::INVALID_ARGUMENT,
        message: format!("{what} holds a NUL byte"),
    })
}

/// How to compile (`cumem_program_options_t`); the default is the device's
/// architecture, cubin, no extra options.
#[derive(Clone, Debug, Default)]
pub struct ProgramOptions {
    /// NVRTC's spelling ("sm_90", "compute_90"); None: the device's.
    pub arch: Option<String>,
    /// Extra NVRTC options ("-std=c++17", "-DN=4").
    pub options: Vec<String>,
    /// Templates to instantiate and name (`"scale<float>"`): see
    /// [`Program::lowered_name`].
    pub name_expressions: Vec<String>,
    /// The program's name in the compiler's messages.
    pub name: Option<String>,
    /// PTX (compiled by the driver at load) instead of cubin.
    pub ptx: bool,
}

/// CUDA C++ compiled for one device.
#[derive(Debug)]
pub struct Program {
    raw: NonNull<sys::cumem_program_t>,
}
// SAFETY: programs allow all calls concurrently (header); they never change.
unsafe impl Send for Program {}
unsafe impl Sync for Program {}

impl Program {
    /// Compiles `source` for `device`. A compile error is
    /// `Status::COMPILATION` with the compiler's log in the message;
    /// `Status::NO_COMPILER` when NVRTC cannot be loaded.
    pub fn compile(device: &Device, source: &str, options: &ProgramOptions) -> Result<Program> {
        let src = c_string(source, "the source")?;
        let arch = options.arch.as_deref().map(|a| c_string(a, "arch")).transpose()?;
        let name = options.name.as_deref().map(|n| c_string(n, "name")).transpose()?;
        let opts: Vec<CString> =
            options.options.iter().map(|o| c_string(o, "an option")).collect::<Result<_>>()?;
        let names: Vec<CString> = options
            .name_expressions
            .iter()
            .map(|n| c_string(n, "a name expression"))
            .collect::<Result<_>>()?;
        let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let o = sys::cumem_program_options_t {
            code_type: if options.ptx { sys::CUMEM_CODE_PTX } else { sys::CUMEM_CODE_CUBIN },
            arch: arch.as_ref().map_or(ptr::null(), |a| a.as_ptr()),
            options: if opt_ptrs.is_empty() { ptr::null() } else { opt_ptrs.as_ptr() },
            name_expressions: if name_ptrs.is_empty() { ptr::null() } else { name_ptrs.as_ptr() },
            name: name.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
            num_options: opt_ptrs.len() as u32,
            num_name_expressions: name_ptrs.len() as u32,
            ..Default::default()
        };
        let mut raw = ptr::null_mut();
        // SAFETY: live device; every string and array outlives the call
        // (libcumem copies what it keeps).
        check(unsafe { sys::cumem_program_compile(device.raw.as_ptr(), src.as_ptr(), &o, &mut raw) })?;
        Ok(Program { raw: non_null(raw) })
    }

    /// The compiler's warnings ("" when there were none).
    pub fn log(&self) -> Result<String> {
        let mut p = ptr::null();
        // SAFETY: live handle; the log is borrowed and copied at once.
        check(unsafe { sys::cumem_program_log(self.raw.as_ptr(), &mut p) })?;
        // SAFETY: NUL-terminated, valid while the program lives.
        Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    /// The compiled code (cubin, or PTX with its terminating NUL).
    pub fn code(&self) -> Result<Vec<u8>> {
        let mut p: *const c_void = ptr::null();
        let mut n = 0usize;
        // SAFETY: live handle; the code is borrowed and copied at once.
        check(unsafe { sys::cumem_program_code(self.raw.as_ptr(), &mut p, &mut n) })?;
        // SAFETY: n bytes at p, valid while the program lives.
        Ok(unsafe { std::slice::from_raw_parts(p as *const u8, n) }.to_vec())
    }

    /// The mangled name of a name expression given at compile time
    /// (`Status::NOT_FOUND` for one that was not).
    pub fn lowered_name(&self, name_expression: &str) -> Result<String> {
        let e = c_string(name_expression, "the name expression")?;
        let mut p = ptr::null();
        // SAFETY: live handle; the name is borrowed and copied at once.
        check(unsafe { sys::cumem_program_lowered_name(self.raw.as_ptr(), e.as_ptr(), &mut p) })?;
        // SAFETY: NUL-terminated, valid while the program lives.
        Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    /// The code loaded for the program's device.
    pub fn load(&self) -> Result<Library> {
        let mut raw = ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::cumem_program_load(self.raw.as_ptr(), &mut raw) })?;
        Ok(Library { raw: non_null(raw) })
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::cumem_program_release(self.raw.as_ptr()) };
    }
}

/// Loaded code: kernels come from it by name.
#[derive(Debug)]
pub struct Library {
    raw: NonNull<sys::cumem_library_t>,
}
// SAFETY: libraries allow all calls concurrently (header).
unsafe impl Send for Library {}
unsafe impl Sync for Library {}

impl Library {
    /// Precompiled cubin, PTX (NUL-terminated) or fatbin for `device`.
    pub fn load_data(device: &Device, image: &[u8]) -> Result<Library> {
        let mut raw = ptr::null_mut();
        // SAFETY: live device; the image is read during the call.
        check(unsafe {
            sys::cumem_library_load_data(device.raw.as_ptr(), image.as_ptr() as *const c_void, image.len(), &mut raw)
        })?;
        Ok(Library { raw: non_null(raw) })
    }

    /// The kernel `name` (its lowered name for templates), or
    /// `Status::NOT_FOUND`.
    pub fn get_kernel(&self, name: &str) -> Result<Kernel> {
        let n = c_string(name, "the kernel's name")?;
        let mut raw = ptr::null_mut();
        // SAFETY: live handle, NUL-terminated name, valid out pointer.
        check(unsafe { sys::cumem_library_get_kernel(self.raw.as_ptr(), n.as_ptr(), &mut raw) })?;
        Ok(Kernel { raw: non_null(raw) })
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: we own one reference (kernels keep their library alive).
        unsafe { sys::cumem_library_release(self.raw.as_ptr()) };
    }
}

/// A kernel of a loaded library.
#[derive(Debug)]
pub struct Kernel {
    raw: NonNull<sys::cumem_kernel_t>,
}
// SAFETY: kernels allow all calls concurrently (header).
unsafe impl Send for Kernel {}
unsafe impl Sync for Kernel {}

impl Kernel {
    /// Registers, shared and local memory, limits (`cumem_kernel_attributes_t`).
    pub fn attributes(&self) -> Result<sys::cumem_kernel_attributes_t> {
        let mut a = sys::cumem_kernel_attributes_t::default();
        // SAFETY: live handle; struct_size set by Default.
        check(unsafe { sys::cumem_kernel_get_attributes(self.raw.as_ptr(), &mut a) })?;
        Ok(a)
    }

    /// The CUkernel.
    pub fn native(&self) -> Result<*mut c_void> {
        let mut p = ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::cumem_kernel_native(self.raw.as_ptr(), &mut p) })?;
        Ok(p)
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { sys::cumem_kernel_release(self.raw.as_ptr()) };
    }
}

/// Grid, block and dynamic shared memory of a launch (a 0 dimension counts
/// as 1, as in cumem.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_memory_bytes: u32,
}

impl LaunchConfig {
    /// A one-dimensional launch: `grid` blocks of `block` threads.
    pub fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig { grid: [grid, 1, 1], block: [block, 1, 1], shared_memory_bytes: 0 }
    }

    /// Enough blocks of `block` threads for `n` threads.
    pub fn for_elements(n: u32, block: u32) -> LaunchConfig {
        LaunchConfig::linear(n.div_ceil(block.max(1)), block)
    }
}

/// One kernel argument: a buffer (its device pointer is passed) or a value
/// of the parameter's C type. Made with `KernelArg::from(&buffer)` or
/// `(&value).into()`; see [`launch`].
pub struct KernelArg<'a> {
    kind: ArgKind,
    _borrow: PhantomData<&'a ()>,
}

enum ArgKind {
    Pointer(*mut c_void),     // the device pointer itself is the value
    Value(*const c_void),     // the address of the value
}

impl<'a, T> From<&'a Buffer<T>> for KernelArg<'a> {
    fn from(b: &'a Buffer<T>) -> KernelArg<'a> {
        // A closed buffer passes NULL; launching a kernel on it is the
        // caller's error, as any use of freed memory.
        let p = b.ptr().unwrap_or(ptr::null_mut());
        KernelArg { kind: ArgKind::Pointer(p), _borrow: PhantomData }
    }
}

impl<'a, T: DeviceRepr> From<&'a T> for KernelArg<'a> {
    fn from(v: &'a T) -> KernelArg<'a> {
        KernelArg { kind: ArgKind::Value(v as *const T as *const c_void), _borrow: PhantomData }
    }
}

/// Launches `kernel` on `stream` (None: the legacy default stream) with
/// `config` and `args` in the kernel's parameter order:
///
/// ```no_run
/// # use cumem::*;
/// # fn run(k: &Kernel, s: &Stream, x: &Buffer<f32>) -> cumem::Result<()> {
/// let n: u64 = 1024;
/// let a: f32 = 3.0;
/// unsafe { launch(k, Some(s), &LaunchConfig::for_elements(1024, 256), &[x.into(), (&n).into(), (&a).into()])? };
/// # Ok(()) }
/// ```
///
/// # Safety
/// Each argument must have the type of the kernel's parameter at its place
/// (a buffer for a pointer parameter, a value of the same C type for the
/// others) and the kernel must stay within the memory it is given: nothing
/// can check either (as with cuLaunchKernel).
pub unsafe fn launch(kernel: &Kernel, stream: Option<&Stream>, config: &LaunchConfig, args: &[KernelArg<'_>]) -> Result<()> {
    // The device pointers live here for the call; args point at them or at
    // the caller's values.
    let pointers: Vec<*mut c_void> = args
        .iter()
        .map(|a| match a.kind {
            ArgKind::Pointer(p) => p,
            ArgKind::Value(_) => ptr::null_mut(),
        })
        .collect();
    let mut values: Vec<*mut c_void> = args
        .iter()
        .zip(&pointers)
        .map(|(a, p)| match a.kind {
            ArgKind::Pointer(_) => p as *const *mut c_void as *mut c_void,
            ArgKind::Value(v) => v as *mut c_void,
        })
        .collect();
    let c = sys::cumem_launch_config_t {
        grid: config.grid,
        block: config.block,
        shared_memory_bytes: config.shared_memory_bytes,
        ..Default::default()
    };
    let args_ptr = if values.is_empty() { ptr::null_mut() } else { values.as_mut_ptr() };
    check(sys::cumem_launch(kernel.raw.as_ptr(), opt_stream(stream), &c, args_ptr, values.len() as u32))
}
