//! Finds libcumem: $CUMEM_LIB_DIR, else `pkg-config --libs-only-L cumem`,
//! else the repository's `build/` folder (bindings/rust/../../build, what
//! tools/build.sh makes). Links `cumem` and emits an rpath so tests and
//! examples run without LD_LIBRARY_PATH; the folder is passed on to
//! dependents as DEP_CUMEM_LIB_DIR (the `links = "cumem"` key).
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn has_library(dir: &Path) -> bool {
    dir.join("libcumem.so").exists() || dir.join("libcumem.so.1").exists()
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
                "CUMEM_LIB_DIR={} holds no libcumem.so (build it with tools/build.sh)",
                d.display()
            );
        }
        Some(d)
    } else if let Some(found) = from_pkg_config() {
        found
    } else if has_library(&repo_build) {
        Some(repo_build)
    } else {
        panic!(
            "libcumem not found: set CUMEM_LIB_DIR to the folder of libcumem.so, install it \
             where pkg-config finds it (cumem.pc), or run tools/build.sh at the repository \
             root (looked in {})",
            repo_build.display()
        );
    };

    if let Some(dir) = dir {
        let dir = dir.canonicalize().unwrap_or(dir);
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        println!("cargo:lib_dir={}", dir.display());
    }
    println!("cargo:rustc-link-lib=dylib=cumem");
}
