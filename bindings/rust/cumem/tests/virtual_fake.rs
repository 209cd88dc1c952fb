//! Virtual memory through the safe crate on libcumem's VMM fake driver
//! (tests/fake_driver/fake_vmm.cpp, whose memory is host memory), found in
//! the build folder next to CUMEM_LIB_DIR's library; skipped, saying why,
//! when it is not there. A binary of its own: the fake must be named before
//! libcumem first loads a driver.
use cumem::{Access, Buffer, Device, Resource, Stream, VirtualIpcHandle, VirtualOptions};
use std::path::PathBuf;
use std::sync::Once;

const GRANULE: usize = 64 << 10;

fn fake_or_skip(test: &str) -> bool {
    static SET: Once = Once::new();
    let dir = std::env::var("CUMEM_LIB_DIR").unwrap_or_default();
    let fake = PathBuf::from(dir).join("tests/fake_driver/libfake_cuda_vmm.so");
    if !fake.exists() {
        eprintln!("{test}: skipped, no VMM fake driver at {}", fake.display());
        return false;
    }
    SET.call_once(|| {
        std::env::set_var("CUMEM_LIBCUDA", &fake);
        std::env::set_var("FAKE_CUDA_DEVICE_COUNT", "2");
    });
    true
}

fn options() -> VirtualOptions {
    VirtualOptions {
        granularity: cumem::sys::CUMEM_GRANULARITY_MINIMUM,
        chunk_size: GRANULE as u64,
        handle_types: cumem::sys::CUMEM_IPC_HANDLE_POSIX_FD,
        ..Default::default()
    }
}

#[test]
fn buffers_grow_shrink_and_keep_their_contents() {
    if !fake_or_skip("buffers_grow_shrink_and_keep_their_contents") {
        return;
    }
    let device = Device::get(0).unwrap();
    let s = Stream::new(&device).unwrap();
    let r = Resource::virtual_memory(&device, &options()).unwrap();
    assert_eq!(r.kind().unwrap(), cumem::sys::CUMEM_RESOURCE_VIRTUAL);
    let mut b = r.allocate(3 * GRANULE, Some(&s)).unwrap();
    b.copy_from_slice(&vec![0x5au8; 3 * GRANULE], Some(&s)).unwrap();
    b.resize(10 * GRANULE, Some(&s)).unwrap();
    assert_eq!(b.size().unwrap(), 10 * GRANULE);
    let mut back = vec![0u8; 10 * GRANULE];
    b.copy_to_slice(&mut back, Some(&s)).unwrap();
    assert!(back[..3 * GRANULE].iter().all(|&x| x == 0x5a));
    b.resize(GRANULE, None).unwrap();
    let s = r.virtual_statistics().unwrap();
    assert_eq!(s.bytes_mapped, GRANULE as u64);
    assert_eq!(s.shrinks, 1);
    let e = b.resize(0, None).unwrap_err();
    assert_eq!(e.status(), cumem::Status::INVALID_ARGUMENT);
    b.close(None).unwrap();
    r.release_pending().unwrap();
    let s = r.virtual_statistics().unwrap();
    assert_eq!(s.chunks_created, s.chunks_released);
}

#[test]
fn peers_and_ipc_handles() {
    if !fake_or_skip("peers_and_ipc_handles") {
        return;
    }
    let device = Device::get(0).unwrap();
    let peer = Device::get(1).unwrap();
    let r = Resource::virtual_memory(&device, &VirtualOptions { peers: vec![1], peers_read_only: true, ..options() })
        .unwrap();
    assert_eq!(r.virtual_get_access(&peer).unwrap(), Access::Read);
    r.virtual_set_access(&peer, Access::ReadWrite).unwrap();
    assert_eq!(r.virtual_get_access(&peer).unwrap(), Access::ReadWrite);
    let b = r.allocate(2 * GRANULE, None).unwrap();
    b.fill(0x77, 1, None).unwrap();
    let h = b.get_virtual_ipc_handle().unwrap();
    assert_eq!(h.fds().unwrap().len(), 2);
    let fds: Vec<i32> = h.fds().unwrap().iter().map(|&fd| unsafe { libc_dup(fd) }).collect();
    let again = VirtualIpcHandle::from_fds(&h.descriptor().unwrap(), &fds).unwrap();
    let imported = Buffer::from_virtual_ipc_handle(&device, &again, None).unwrap();
    let s = Stream::new(&device).unwrap();
    let mut back = vec![0u8; 2 * GRANULE];
    imported.copy_to_slice(&mut back, Some(&s)).unwrap();
    assert!(back.iter().all(|&x| x == 0x77));
}

extern "C" {
    #[link_name = "dup"]
    fn libc_dup(fd: i32) -> i32;
}
