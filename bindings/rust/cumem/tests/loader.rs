//! The run-time loader: a libcumem that cannot be loaded is a clear error at
//! the first call, not a program that does not start. The case runs in a
//! child (this test binary again, with CUMEM_LIBRARY naming no file): the
//! library is loaded once per process.
use std::process::Command;

#[test]
fn a_missing_library_is_a_clear_error() {
    if std::env::var_os("CUMEM_LOADER_CHILD").is_some() {
        let e = cumem::Resource::host().unwrap_err();
        assert_eq!(e.status(), cumem::Status::NOT_SUPPORTED);
        assert!(e.message().contains("libcumem could not be loaded"), "{e}");
        assert!(e.message().contains("/nonexistent/libcumem.so.1"), "{e}");
        assert!(e.message().contains("CUMEM_LIBRARY"), "{e}");
        assert_eq!(cumem::version(), 0);
        assert!(cumem::library_path().is_err());
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_missing_library_is_a_clear_error", "--nocapture"])
        .env("CUMEM_LOADER_CHILD", "1")
        .env("CUMEM_LIBRARY", "/nonexistent/libcumem.so.1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

#[test]
fn cumem_library_overrides_the_library_found_at_build_time() {
    if std::env::var_os("CUMEM_LOADER_CHILD").is_some() {
        return; // the other case's child
    }
    let path = cumem::library_path().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_prints_the_library", "--nocapture"])
        .env("CUMEM_LOADER_PRINT", "1")
        .env("CUMEM_LIBRARY", &path)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("loaded {path}")));
}

#[test]
fn child_prints_the_library() {
    if std::env::var_os("CUMEM_LOADER_PRINT").is_some() {
        println!("loaded {}", cumem::library_path().unwrap());
    }
}
