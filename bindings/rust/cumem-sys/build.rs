//! Finds libcumem for the loader (src/loader.rs) to try at run time: the
//! folder of `$CUMEM_LIB_DIR`, else `pkg-config --libs-only-L cumem`'s,
//! else the repository's `build/` (bindings/rust/../../build, what
//! tools/build.sh makes). Nothing is linked: libcumem is loaded with dlopen
//! when first called, so the crate builds where libcumem is absent (the
//! folder is then "" and the loader uses $CUMEM_LIBRARY or the loader's
//! search path). The folder is also given to dependents as
//! DEP_CUMEM_LIB_DIR (the `links = "cumem"` key).
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn has_library(dir: &Path) -> bool {
    dir.join("libcumem.so.1").exists()
}

/// Some(Some(dir)): pkg-config names a folder; Some(None): pkg-config knows
/// cumem and it is in a default folder; None: pkg-config does not know it.
fn from_pkg_config() -> Option<Option<PathBuf>> {
    let out = Command::new("pkg-config")
        .args(["--libs-only-L", "cumem"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.split_whitespace()
            .filter_map(|w| w.strip_prefix("-L"))
            .map(PathBuf::from)
            .find(|d| has_library(d)),
    )
}

fn main() {
    println!("cargo:rerun-if-env-changed=CUMEM_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let repo_build = manifest.join("../../../build");

    let dir: Option<PathBuf> = if let Some(d) = env::var_os("CUMEM_LIB_DIR") {
        let d = PathBuf::from(d);
        if !has_library(&d) {
            panic!(
                "CUMEM_LIB_DIR={} holds no libcumem.so.1 (build it with tools/build.sh, or unset \
                 CUMEM_LIB_DIR: libcumem is loaded at run time)",
                d.display()
            );
        }
        Some(d)
    } else if let Some(Some(found)) = from_pkg_config() {
        Some(found)
    } else if has_library(&repo_build) {
        Some(repo_build)
    } else {
        None // found at run time ($CUMEM_LIBRARY, the loader's search path)
    };
    let dir = dir.map(|d| d.canonicalize().unwrap_or(d));
    let text = dir.as_ref().map(|d| d.display().to_string()).unwrap_or_default();
    println!("cargo:rustc-env=CUMEM_SYS_LIB_DIR={text}");
    println!("cargo:lib_dir={text}");
}
