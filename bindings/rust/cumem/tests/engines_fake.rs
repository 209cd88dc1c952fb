//! dma-buf export and unmap notifications through the safe crate on
//! libcumem's engines fake driver (tests/fake_driver/fake_engines.cpp:
//! memory pools, cuMemAlloc and cuMemGetHandleForAddressRange over host
//! memory), found in the build folder next to CUMEM_LIB_DIR's library;
//! skipped, saying why, when it is not there. A binary of its own: the fake
//! must be named before libcumem first loads a driver.
use cumem::{unmap_subscribe, Device, Resource, VirtualOptions};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Once};

const MIB: usize = 1 << 20;

fn fake_or_skip(test: &str) -> bool {
    static SET: Once = Once::new();
    let dir = std::env::var("CUMEM_LIB_DIR").unwrap_or_default();
    let fake = PathBuf::from(dir).join("tests/fake_driver/libfake_cuda_engines.so");
    if !fake.exists() {
        eprintln!("{test}: skipped, no engines fake driver at {}", fake.display());
        return false;
    }
    SET.call_once(|| std::env::set_var("CUMEM_LIBCUDA", &fake));
    true
}

#[test]
fn a_cached_block_exports_its_segment_and_frees_are_told() {
    if !fake_or_skip("a_cached_block_exports_its_segment_and_frees_are_told") {
        return;
    }
    let device = Device::get(0).unwrap();
    let p = device.properties().unwrap();
    assert!(p.dma_buf_supported);
    assert!(!p.fabric_export_supported, "no IMEX channel in the fake");
    let pool = Resource::device(&device).unwrap();
    let cache = Resource::caching(&pool).unwrap();
    let _a = cache.allocate(3 * MIB, None).unwrap();
    let b = cache.allocate(3 * MIB, None).unwrap();
    let d = b.get_dmabuf(0).unwrap();
    assert!(d.fd.as_raw_fd() >= 0);
    assert_eq!(d.address + d.offset, b.ptr().unwrap() as u64);
    assert!(d.offset > 0, "the block lies inside its segment");
    assert_eq!(d.length, 20 * MIB as u64);
    assert!(d.whole_allocation);
    let e = b.get_dmabuf(8).unwrap_err();
    assert_eq!(e.status(), cumem::Status::INVALID_ARGUMENT);

    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let sub = unmap_subscribe(move |e| log.lock().unwrap().push(*e)).unwrap();
    assert_ne!(sub.id(), 0);
    let vr = Resource::virtual_memory(&device, &VirtualOptions { chunk_size: 2 * MIB as u64, ..Default::default() })
        .unwrap();
    let mut v = vr.allocate(4 * MIB, None).unwrap();
    let at = v.ptr().unwrap() as u64;
    v.close(None).unwrap();
    {
        let events = seen.lock().unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].reason, cumem::sys::CUMEM_UNMAP_VIRTUAL);
        assert_eq!(events[0].address, at);
        assert_eq!(events[0].size, 4 * MIB as u64);
    }
    drop(sub);
    let mut w = vr.allocate(2 * MIB, None).unwrap();
    w.close(None).unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1, "unsubscribed when dropped");
}
