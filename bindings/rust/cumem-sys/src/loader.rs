//! libcumem loaded at run time (`dlopen`), as the plugin hosts of
//! `examples/plugin/` load it, rather than linked.
//!
//! Why: a program that depends on these crates then starts without
//! `LD_LIBRARY_PATH` and without a build script of its own (an rpath set by
//! a build script reaches only that crate's own tests and examples, never a
//! dependent's binary); the crates build where libcumem is absent (docs.rs,
//! `cargo package`, a CI machine without a GPU stack); and a missing or
//! older libcumem is a clear error at the first call rather than the
//! loader refusing to start the program. cudarc finds `libcuda` the same
//! way.
//!
//! Where libcumem is looked for, first match wins:
//! 1. `$CUMEM_LIBRARY`, a file path: when set, the only file tried;
//! 2. `libcumem.so.1` in the folder the build script found at build time
//!    (`$CUMEM_LIB_DIR`, else `pkg-config`'s, else the repository's
//!    `build/`), when it is there;
//! 3. `libcumem.so.1` through the dynamic loader's search path
//!    (`LD_LIBRARY_PATH`, the system's folders): an installed libcumem.
//!
//! The file must export `cumem_get_api@LIBCUMEM_1` (else it is not
//! libcumem). Each function is looked up by name on its first call and
//! kept. When the library cannot be loaded, or lacks a function (a
//! libcumem older than these declarations), the call does not reach it:
//! status functions return `CUMEM_ERROR_NOT_SUPPORTED` and
//! [`unavailable_message`] says why (and `cumem_last_error_message()` does
//! too when no libcumem could be loaded); `cumem_version()` returns 0,
//! pointer functions NULL, `_init` functions leave their struct as it is.
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

#[link(name = "dl")]
extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlvsym(handle: *mut c_void, symbol: *const c_char, version: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
    fn dladdr(address: *const c_void, info: *mut DlInfo) -> c_int;
}

#[repr(C)]
struct DlInfo {
    dli_fname: *const c_char,
    dli_fbase: *mut c_void,
    dli_sname: *const c_char,
    dli_saddr: *mut c_void,
}

const RTLD_NOW: c_int = 2;
const RTLD_LOCAL: c_int = 0;
const SONAME: &str = "libcumem.so.1";

/// The folder the build script found libcumem in ("" when none).
const BUILD_LIB_DIR: &str = env!("CUMEM_SYS_LIB_DIR");

struct Library {
    handle: *mut c_void,
    path: String,
}
// SAFETY: a dlopen handle may be used from any thread.
unsafe impl Send for Library {}
unsafe impl Sync for Library {}

static LIBRARY: OnceLock<Result<Library, CString>> = OnceLock::new();

fn last_dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string.
    let e = unsafe { dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-NULL, NUL-terminated (above).
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

fn open(path: &str) -> Result<Library, String> {
    let c = CString::new(path).map_err(|_| format!("{path}: the path holds a NUL byte"))?;
    // SAFETY: a NUL-terminated path; RTLD_LOCAL keeps libcumem's symbols to us.
    let handle = unsafe { dlopen(c.as_ptr(), RTLD_NOW | RTLD_LOCAL) };
    if handle.is_null() {
        return Err(format!("{path}: {}", last_dl_error()));
    }
    // SAFETY: a live handle and NUL-terminated names.
    let api = unsafe { dlvsym(handle, c"cumem_get_api".as_ptr(), c"LIBCUMEM_1".as_ptr()) };
    if api.is_null() {
        return Err(format!("{path}: not libcumem (no cumem_get_api@LIBCUMEM_1)"));
    }
    // The file the loader chose (a bare name was searched for).
    let mut info = DlInfo {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: an address inside the loaded library and a valid out struct.
    let found = unsafe { dladdr(api, &mut info) } != 0 && !info.dli_fname.is_null();
    let path = if found {
        // SAFETY: dladdr gives a NUL-terminated name, valid while loaded.
        unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned()
    } else {
        path.to_string()
    };
    Ok(Library { handle, path })
}

fn load() -> Result<Library, CString> {
    let mut tried = Vec::new();
    let candidates: Vec<String> = match std::env::var("CUMEM_LIBRARY") {
        Ok(p) if !p.is_empty() => vec![p],
        _ => {
            let mut c = Vec::new();
            if !BUILD_LIB_DIR.is_empty() {
                let p = Path::new(BUILD_LIB_DIR).join(SONAME);
                if p.exists() {
                    c.push(p.to_string_lossy().into_owned());
                }
            }
            c.push(SONAME.into());
            c
        }
    };
    for path in &candidates {
        match open(path) {
            Ok(lib) => return Ok(lib),
            Err(e) => tried.push(e),
        }
    }
    let message = format!(
        "libcumem could not be loaded ({}); set CUMEM_LIBRARY to the path of libcumem.so.1, or \
         install libcumem where the dynamic loader finds it",
        tried.join("; ")
    );
    Err(CString::new(message.replace('\0', " ")).unwrap_or_default())
}

fn library() -> &'static Result<Library, CString> {
    LIBRARY.get_or_init(load)
}

/// The path libcumem was loaded from, loading it if needed; or why it
/// could not be loaded.
pub fn library_path() -> Result<&'static str, &'static CStr> {
    match library() {
        Ok(lib) => Ok(lib.path.as_str()),
        Err(e) => Err(e.as_c_str()),
    }
}

thread_local! {
    static UNAVAILABLE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Why the last call on this thread that could not reach libcumem did not
/// (taken: a second call gives None until another such call).
pub fn unavailable_message() -> Option<String> {
    UNAVAILABLE.with(|m| m.borrow_mut().take())
}

/// One function of libcumem, looked up on its first call.
#[doc(hidden)]
pub struct Symbol {
    name: &'static str, // NUL-terminated
    address: AtomicPtr<c_void>,
}

impl Symbol {
    pub const fn new(name: &'static str) -> Symbol {
        Symbol { name, address: AtomicPtr::new(std::ptr::null_mut()) }
    }

    #[inline]
    pub fn address(&self) -> Option<*mut c_void> {
        let a = self.address.load(Ordering::Acquire);
        if !a.is_null() {
            return Some(a);
        }
        self.resolve()
    }

    #[cold]
    fn resolve(&self) -> Option<*mut c_void> {
        let lib = library().as_ref().ok()?;
        // SAFETY: a live handle and a NUL-terminated name.
        let a = unsafe { dlsym(lib.handle, self.name.as_ptr() as *const c_char) };
        if a.is_null() {
            return None;
        }
        self.address.store(a, Ordering::Release);
        Some(a)
    }
}

/// What a call returns when it cannot reach libcumem.
#[doc(hidden)]
pub trait Unavailable {
    fn unavailable() -> Self;
}

impl Unavailable for i32 {
    // cumem_status_t
    fn unavailable() -> i32 {
        crate::CUMEM_ERROR_NOT_SUPPORTED
    }
}
impl Unavailable for u32 {
    // cumem_version: no library
    fn unavailable() -> u32 {
        0
    }
}
impl Unavailable for () {
    fn unavailable() {}
}
impl<T> Unavailable for *mut T {
    fn unavailable() -> *mut T {
        std::ptr::null_mut()
    }
}
impl Unavailable for *const c_char {
    // cumem_last_error_message, cumem_status_string: the loader's message
    fn unavailable() -> *const c_char {
        match library() {
            Err(e) => e.as_ptr(),
            Ok(_) => c"this libcumem lacks the function (it is older than cumem-sys)".as_ptr(),
        }
    }
}
impl Unavailable for *const c_void {
    fn unavailable() -> *const c_void {
        std::ptr::null()
    }
}

#[doc(hidden)]
#[cold]
pub fn unavailable<R: Unavailable>(name: &str) -> R {
    let why = match library() {
        Err(e) => e.to_string_lossy().into_owned(),
        Ok(lib) => format!(
            "{name} is not in {} (a libcumem older than these bindings, which need {}.{}); \
             install a newer libcumem or set CUMEM_LIBRARY",
            lib.path,
            crate::CUMEM_VERSION_MAJOR,
            crate::CUMEM_VERSION_MINOR
        ),
    };
    UNAVAILABLE.with(|m| *m.borrow_mut() = Some(format!("{name}: {why}")));
    R::unavailable()
}

/// Declares libcumem's functions as Rust functions of the same name and
/// signature that call it through the loader.
macro_rules! functions {
    ($($(#[$attr:meta])* pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;)*) => {$(
        $(#[$attr])*
        ///
        /// # Safety
        /// As the C function: the arguments must be what cumem.h says.
        #[inline]
        #[allow(clippy::too_many_arguments)] // the C signature
        pub unsafe fn $name($($arg: $ty),*) $(-> $ret)? {
            static SYMBOL: $crate::loader::Symbol =
                $crate::loader::Symbol::new(concat!(stringify!($name), "\0"));
            match SYMBOL.address() {
                Some(address) => {
                    // The symbol of this name in libcumem has this C signature
                    // (cumem.h, checked against it by tests/layout.rs).
                    let f: unsafe extern "C" fn($($ty),*) $(-> $ret)? = core::mem::transmute(address);
                    f($($arg),*)
                }
                None => $crate::loader::unavailable(stringify!($name)),
            }
        }
    )*};
}
pub(crate) use functions;
