//! The rpath to libcumem for this crate's tests and examples: cumem-sys
//! found the folder and passes it as DEP_CUMEM_LIB_DIR (empty when the
//! library is in a default folder).
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_CUMEM_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_CUMEM_LIB_DIR") {
        if !dir.is_empty() {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
