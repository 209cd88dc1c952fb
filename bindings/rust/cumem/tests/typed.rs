//! Typed buffers (Buffer<T>), DLPack and the framework configuration on
//! the host resource: no GPU, no driver.
use cumem::{Buffer, DlpackOptions, Resource, Status};

#[test]
fn typed_buffers_copy_whole_slices_in_and_out() {
    let host = Resource::host().unwrap();
    let values: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    let b = host.from_slice(&values, None).unwrap();
    assert_eq!(b.len().unwrap(), 1000);
    assert_eq!(b.size().unwrap(), 4000);
    assert_eq!(b.copy_to_vec(None).unwrap(), values);
    let z: Buffer<u64> = host.alloc_zeros(16, None).unwrap();
    assert_eq!(z.copy_to_vec(None).unwrap(), vec![0u64; 16]);
    z.copy_from_slice(&[7u64; 16], None).unwrap();
    assert_eq!(z.copy_to_vec(None).unwrap(), vec![7u64; 16]);
    // A slice of the wrong length is refused, nothing copied.
    let e = z.copy_from_slice(&[1u64; 15], None).unwrap_err();
    assert_eq!(e.status(), Status::SIZE_MISMATCH, "{e}");
    assert_eq!(z.copy_to_vec(None).unwrap(), vec![7u64; 16]);
    assert_eq!(host.statistics().unwrap().bytes_in_use, 4000 + 128);
}

#[test]
fn views_casts_and_bytes() {
    let host = Resource::host().unwrap();
    let b = host.from_slice(&[1i32, 2, 3, 4, 5, 6], None).unwrap();
    let middle = b.slice(2, 3).unwrap();
    assert_eq!(middle.copy_to_vec(None).unwrap(), vec![3, 4, 5]);
    assert_eq!(b.slice(5, 2).unwrap_err().status(), Status::OUT_OF_RANGE);
    assert_eq!(b.as_bytes().size().unwrap(), 24);
    let bytes = b.as_bytes().copy_to_vec(None).unwrap();
    assert_eq!(&bytes[..4], &1i32.to_ne_bytes());
    let pairs: Buffer<[i32; 2]> = host.from_slice(&[1i32, 2, 3, 4, 5, 6], None).unwrap().cast().unwrap();
    assert_eq!(pairs.copy_to_vec(None).unwrap(), vec![[1, 2], [3, 4], [5, 6]]);
    let odd: Buffer<u8> = host.alloc(7, None).unwrap();
    let e = odd.cast::<u32>().unwrap_err();
    assert_eq!(e.status(), Status::SIZE_MISMATCH);
    assert!(e.message().contains("7 bytes are not a whole number of u32"), "{e}");
    let empty: Buffer<f64> = host.alloc(0, None).unwrap();
    assert!(empty.is_empty().unwrap());
    assert!(empty.copy_to_vec(None).unwrap().is_empty());
}

#[test]
fn dlpack_round_trip_on_host_memory() {
    let host = Resource::host().unwrap();
    let b = host.from_slice(&[1.0f32, 2.0, 3.0, 4.0], None).unwrap();
    let t = b.to_dlpack(&DlpackOptions::of(2, 32, &[2, 2])).unwrap();
    // SAFETY: a tensor libcumem just made, owned here; ownership moves on.
    let back = unsafe { Buffer::from_dlpack(t, false) }.unwrap();
    assert_eq!(back.ptr().unwrap(), b.ptr().unwrap());
    assert_eq!(back.size().unwrap(), 16);
    let e = b.to_dlpack(&DlpackOptions::of(2, 64, &[4])).unwrap_err();
    assert_eq!(e.status(), Status::OUT_OF_RANGE, "{e}");
    drop(b);
    assert_eq!(host.statistics().unwrap().live_allocations, 1, "the tensor keeps the memory");
    drop(back);
    assert_eq!(host.statistics().unwrap().live_allocations, 0, "the deleter ran");
}

#[test]
fn the_framework_configuration_is_checked() {
    cumem::framework_configure("kind:caching,limit:1GiB").unwrap();
    let e = cumem::framework_configure("kind:pool").unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
    assert!(e.message().contains("kind:pool is not a kind"), "{e}");
    cumem::framework_configure("").unwrap();
}

#[test]
fn the_library_was_found_without_ld_library_path() {
    let path = cumem::library_path().unwrap();
    assert!(path.ends_with("libcumem.so.1"), "{path}");
    assert!(cumem::version() >= 10100);
}
