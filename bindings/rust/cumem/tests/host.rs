//! Host-only tests: they pass on a machine without a GPU or CUDA driver.
//! Tests that need a device skip (saying why) when the driver reports none,
//! after checking that the error is the expected one.
use cumem::{Buffer, Device, MemoryKind, Resource, Statistics, Status, Stream};

/// The device 0 when there is one, else None after checking that the
/// reason is no driver or no device (any other error fails the test).
fn gpu_or_skip(test: &str) -> Option<Device> {
    match Device::count() {
        Ok(n) if n > 0 => Some(Device::get(0).expect("device 0")),
        Ok(_) => {
            eprintln!("{test}: skipped, the driver reports no CUDA device");
            None
        }
        Err(e) => {
            assert_eq!(e.status(), Status::NO_DRIVER, "{e}");
            eprintln!("{test}: skipped, {e}");
            None
        }
    }
}

#[test]
fn version_matches_the_header() {
    assert_eq!(cumem::version(), cumem::sys::CUMEM_VERSION_NUMBER);
    assert_eq!(cumem::version(), 10100);
}

#[test]
fn log_level_round_trip() {
    let before = cumem::log_level().unwrap();
    cumem::set_log_level(cumem::sys::CUMEM_LOG_LEVEL_DEBUG).unwrap();
    assert_eq!(cumem::log_level().unwrap(), cumem::sys::CUMEM_LOG_LEVEL_DEBUG);
    let e = cumem::set_log_level(9).unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
    cumem::set_log_level(before).unwrap();
}

#[test]
fn status_strings() {
    assert_eq!(Status::SUCCESS.name(), "CUMEM_SUCCESS");
    assert_eq!(Status::OUT_OF_MEMORY.name(), "CUMEM_ERROR_OUT_OF_MEMORY");
    assert_eq!(Status::NO_DRIVER.name(), "CUMEM_ERROR_NO_DRIVER");
    assert_eq!(Status::BUFFER_CLOSED.name(), "CUMEM_ERROR_BUFFER_CLOSED");
    assert_eq!(Status::SIZE_MISMATCH.name(), "CUMEM_ERROR_SIZE_MISMATCH");
    assert_eq!(Status::INTERNAL.name(), "CUMEM_ERROR_INTERNAL");
    assert_eq!(Status(12345).name(), "CUMEM_STATUS_UNKNOWN");
    assert_eq!(format!("{:?}", Status::OUT_OF_RANGE), "CUMEM_ERROR_OUT_OF_RANGE(8)");
}

/// This machine (and CI's) has no CUDA driver: device calls fail with
/// NO_DRIVER and a message naming libcuda. On a GPU machine the count works.
#[test]
fn no_driver_error_path() {
    match Device::count() {
        Ok(n) => {
            assert!(n >= 0);
            eprintln!("no_driver_error_path: a driver is present ({n} devices), nothing to check");
        }
        Err(e) => {
            assert_eq!(e.status(), Status::NO_DRIVER);
            assert!(e.message().contains("libcuda"), "message: {}", e.message());
            assert_eq!(e.to_string(), format!("CUMEM_ERROR_NO_DRIVER: {}", e.message()));
            let d = Device::get(0).unwrap_err();
            assert_eq!(d.status(), Status::NO_DRIVER);
            assert!(d.message().contains("libcuda"), "message: {}", d.message());
            assert_eq!(cumem::driver_version().unwrap_err().status(), Status::NO_DRIVER);
        }
    }
}

#[test]
fn host_resource_allocate_fill_copy_and_info() {
    let host = Resource::host().unwrap();
    assert_eq!(host.kind().unwrap(), cumem::sys::CUMEM_RESOURCE_HOST);
    let buffer = host.allocate(4096, None).unwrap();
    assert_eq!(buffer.size().unwrap(), 4096);
    let info = buffer.info().unwrap();
    assert_eq!(info.size, 4096);
    assert_eq!(info.device_id, -1);
    assert_eq!(info.memory_kind, MemoryKind::Host);
    assert!(info.host_accessible && !info.device_accessible);
    assert!(!info.is_slice && info.owns_memory);
    assert_eq!(info.ptr, buffer.ptr().unwrap());
    assert!(!info.ptr.is_null());
    assert_eq!(info.ptr as usize % 64, 0, "default alignment 64");

    buffer.fill(0x5a, 1, None).unwrap();
    let mut out = vec![0u8; 4096];
    buffer.copy_to_slice(&mut out, None).unwrap();
    assert!(out.iter().all(|&b| b == 0x5a));

    buffer.fill(0xdead_beef, 4, None).unwrap();
    buffer.copy_to_slice(&mut out, None).unwrap();
    assert_eq!(&out[..8], &[0xef, 0xbe, 0xad, 0xde, 0xef, 0xbe, 0xad, 0xde]);

    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    buffer.copy_from_slice(&data, None).unwrap();
    let mut back = vec![0u8; 4096];
    buffer.copy_to_slice(&mut back, None).unwrap();
    assert_eq!(back, data);

    // Buffer to buffer.
    let other = host.allocate(4096, None).unwrap();
    buffer.copy_to(&other, None).unwrap();
    let mut back2 = vec![0u8; 4096];
    other.copy_to_slice(&mut back2, None).unwrap();
    assert_eq!(back2, data);
}

#[test]
fn host_resource_statistics() {
    let host = Resource::host().unwrap();
    assert_eq!(host.statistics().unwrap(), Statistics::default());
    let a = host.allocate(1000, None).unwrap();
    let b = host.allocate(24, None).unwrap();
    assert_eq!(
        host.statistics().unwrap(),
        Statistics { bytes_in_use: 1024, peak_bytes_in_use: 1024, live_allocations: 2, total_allocations: 2 }
    );
    drop(a);
    let s = host.statistics().unwrap();
    assert_eq!((s.bytes_in_use, s.peak_bytes_in_use, s.live_allocations, s.total_allocations), (24, 1024, 1, 2));
    host.reset_peak().unwrap();
    assert_eq!(host.statistics().unwrap().peak_bytes_in_use, 24);
    let mut b = b;
    b.close(None).unwrap();
    assert_eq!(host.statistics().unwrap().live_allocations, 0);
    drop(b);
    // The buffer keeps its resource alive after the Resource handle goes.
    let kept: Buffer = host.allocate(8, None).unwrap();
    drop(host);
    kept.fill(1, 1, None).unwrap();
}

#[test]
fn adaptors_over_the_host_resource() {
    let host = Resource::host().unwrap();
    let limited = Resource::limit(&host, 100).unwrap();
    assert_eq!(limited.kind().unwrap(), cumem::sys::CUMEM_RESOURCE_LIMIT);
    let _ok = limited.allocate(60, None).unwrap();
    let e = limited.allocate(60, None).unwrap_err();
    assert_eq!(e.status(), Status::OUT_OF_MEMORY);
    assert!(e.message().contains("100"), "message names the limit: {}", e.message());
    assert_eq!(host.statistics().unwrap().bytes_in_use, 60);

    let caching = Resource::caching(&host).unwrap();
    assert_eq!(caching.kind().unwrap(), cumem::sys::CUMEM_RESOURCE_CACHING);
    let b = caching.allocate(256, None).unwrap();
    b.copy_from_slice(&[3u8; 256], None).unwrap();
    let mut out = [0u8; 256];
    b.copy_to_slice(&mut out, None).unwrap();
    assert_eq!(out, [3u8; 256]);
    assert_eq!(caching.statistics().unwrap().live_allocations, 1);
    drop(b);
    caching.trim_cache(0).unwrap();
    let e = host.trim_cache(0).unwrap_err();
    assert_eq!(e.status(), Status::NOT_SUPPORTED);

    let aligned = Resource::aligned(&host, 1 << 16).unwrap();
    assert_eq!(aligned.kind().unwrap(), cumem::sys::CUMEM_RESOURCE_ALIGNED);
    let a = aligned.allocate(100, None).unwrap();
    assert_eq!(a.ptr().unwrap() as usize % (1 << 16), 0);
    let e = Resource::aligned(&host, 3).unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
}

#[test]
fn errors_carry_the_exact_status_and_a_message() {
    let host = Resource::host().unwrap();
    let buffer = host.allocate(64, None).unwrap();

    let e = buffer.copy_from_slice(&[0u8; 63], None).unwrap_err();
    assert_eq!(e.status(), Status::SIZE_MISMATCH);
    assert!(!e.message().is_empty());
    let e = buffer.copy_to_slice(&mut [0u8; 65], None).unwrap_err();
    assert_eq!(e.status(), Status::SIZE_MISMATCH);
    let small = host.allocate(32, None).unwrap();
    assert_eq!(buffer.copy_to(&small, None).unwrap_err().status(), Status::SIZE_MISMATCH);

    let e = buffer.fill(1, 3, None).unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
    assert!(e.message().contains("width"), "message: {}", e.message());
    assert_eq!(buffer.fill(0x100, 1, None).unwrap_err().status(), Status::INVALID_ARGUMENT);
    let odd = host.allocate(3, None).unwrap();
    assert_eq!(odd.fill(0, 2, None).unwrap_err().status(), Status::SIZE_MISMATCH);

    let e = Resource::host_aligned(3).unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
    assert!(e.message().contains("alignment"), "message: {}", e.message());
    let aligned = Resource::host_aligned(4096).unwrap();
    assert_eq!(aligned.allocate(10, None).unwrap().ptr().unwrap() as usize % 4096, 0);

    assert_eq!(Resource::limit(&host, 0).unwrap_err().status(), Status::INVALID_ARGUMENT);
}

#[test]
fn use_after_close_is_buffer_closed() {
    let host = Resource::host().unwrap();
    let mut buffer = host.allocate(16, None).unwrap();
    assert!(!buffer.is_closed().unwrap());
    buffer.close(None).unwrap();
    assert!(buffer.is_closed().unwrap());
    assert_eq!(host.statistics().unwrap().bytes_in_use, 0);
    for e in [
        buffer.fill(0, 1, None).unwrap_err(),
        buffer.copy_from_slice(&[0u8; 16], None).unwrap_err(),
        buffer.copy_to_slice(&mut [0u8; 16], None).unwrap_err(),
        buffer.size().unwrap_err(),
        buffer.info().unwrap_err(),
        buffer.close(None).unwrap_err(),
    ] {
        assert_eq!(e.status(), Status::BUFFER_CLOSED, "{e}");
        assert!(!e.message().is_empty());
    }
}

#[test]
fn empty_buffers() {
    let host = Resource::host().unwrap();
    let empty = host.allocate(0, None).unwrap();
    assert_eq!(empty.size().unwrap(), 0);
    assert!(empty.ptr().unwrap().is_null());
    empty.copy_from_slice(&[], None).unwrap();
    empty.copy_to_slice(&mut [], None).unwrap();
}

#[test]
fn handles_are_send_and_sync_and_work_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Device>();
    assert_send_sync::<Stream>();
    assert_send_sync::<Resource>();
    assert_send_sync::<Buffer>();
    let host = Resource::host().unwrap();
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let host = &host;
            s.spawn(move || {
                for _ in 0..100 {
                    let b = host.allocate(128, None).unwrap();
                    b.fill(t as u32, 1, None).unwrap();
                    let mut out = [0u8; 128];
                    b.copy_to_slice(&mut out, None).unwrap();
                    assert!(out.iter().all(|&x| x == t));
                }
            });
        }
    });
    let s = host.statistics().unwrap();
    assert_eq!((s.live_allocations, s.total_allocations), (0, 400));
}

#[test]
fn device_memory_round_trip_or_skip() {
    let Some(device) = gpu_or_skip("device_memory_round_trip_or_skip") else { return };
    let props = device.properties().unwrap();
    assert_eq!(props.ordinal, 0);
    assert!(!props.name.is_empty());
    let stream = Stream::new(&device).unwrap();
    let mr = Resource::device(&device).unwrap();
    let b = mr.allocate(1 << 20, Some(&stream)).unwrap();
    assert_eq!(b.info().unwrap().memory_kind, MemoryKind::Device);
    let data: Vec<u8> = (0..1u32 << 20).map(|i| i as u8).collect();
    b.copy_from_slice(&data, Some(&stream)).unwrap();
    let mut back = vec![0u8; 1 << 20];
    b.copy_to_slice(&mut back, Some(&stream)).unwrap();
    assert_eq!(back, data);
    // Without a stream there is nothing to wait for: refused.
    let e = b.copy_to_slice(&mut back, None).unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
}

/// The caching adaptor's options (table version 2): the defaults are the
/// plain cache; expandable segments need device memory.
#[test]
fn caching_with_options() {
    let host = Resource::host().unwrap();
    let plain = Resource::caching_with_options(&host, &Default::default()).unwrap();
    drop(plain.allocate(1000, None).unwrap());
    let s = plain.caching_statistics().unwrap();
    assert_eq!(s.bytes_cached, 1024);
    assert_eq!(s.pages_mapped, 0);
    let expandable = cumem::sys::cumem_caching_resource_options_t {
        expandable: cumem::sys::CUMEM_TRUE,
        ..Default::default()
    };
    let e = Resource::caching_with_options(&host, &expandable).unwrap_err();
    assert_eq!(e.status(), Status::NOT_SUPPORTED);
    assert!(e.message().contains("device memory"), "{}", e.message());
    let e = host.caching_statistics().unwrap_err();
    assert_eq!(e.status(), Status::NOT_SUPPORTED);
}

// Copies at scale, where no GPU is needed.
#[test]
fn copy_batch_over_host_buffers() {
    let host = Resource::host().unwrap();
    let a = host.allocate(64, None).unwrap();
    let b = host.allocate(64, None).unwrap();
    let c = host.allocate(128, None).unwrap();
    a.copy_from_slice(&(0u8..64).collect::<Vec<_>>(), None).unwrap();
    let before = cumem::batch_statistics().unwrap();
    cumem::copy_batch(
        None,
        &[
            cumem::BatchCopy { dst: &b, dst_offset: 0, src: &a, src_offset: 0, size: 64 },
            cumem::BatchCopy { dst: &c, dst_offset: 100, src: &a, src_offset: 36, size: 28 },
        ],
        &[cumem::CopyOptions::default()],
    )
    .unwrap();
    let mut out = [0u8; 64];
    b.copy_to_slice(&mut out, None).unwrap();
    assert_eq!(out.to_vec(), (0u8..64).collect::<Vec<_>>());
    let mut wide = [0u8; 128];
    c.copy_to_slice(&mut wide, None).unwrap();
    assert_eq!(wide[100..128].to_vec(), (36u8..64).collect::<Vec<_>>());
    let after = cumem::batch_statistics().unwrap();
    assert_eq!(after.copy_batches, before.copy_batches + 1);
    // Dependent copies are refused before anything is queued.
    let e = cumem::copy_batch(
        None,
        &[
            cumem::BatchCopy { dst: &b, dst_offset: 0, src: &a, src_offset: 0, size: 8 },
            cumem::BatchCopy { dst: &a, dst_offset: 0, src: &b, src_offset: 32, size: 8 },
        ],
        &[],
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT, "{e}");
    let hinted = cumem::CopyOptions {
        dst_location_hint: cumem::Location::HostNuma(4096),
        ..Default::default()
    };
    let e = cumem::copy_batch(
        None,
        &[cumem::BatchCopy { dst: &b, dst_offset: 0, src: &a, src_offset: 0, size: 8 }],
        &[hinted],
    )
    .unwrap_err();
    assert!(e.message().contains("host NUMA node 4096"), "{e}");
}

#[test]
fn copy_to_new_allocates_from_the_buffers_resource() {
    let host = Resource::host().unwrap();
    let a = host.allocate(10, None).unwrap();
    a.fill(0x3c, 1, None).unwrap();
    let copy = a.copy_to_new(None).unwrap();
    let mut out = [0u8; 10];
    copy.copy_to_slice(&mut out, None).unwrap();
    assert_eq!(out, [0x3c; 10]);
    assert_eq!(host.statistics().unwrap().live_allocations, 2);
}

#[test]
fn failure_callback_frees_and_retries() {
    use std::sync::{Arc, Mutex};
    let limited = Resource::limit(&Resource::host().unwrap(), 4096).unwrap();
    let held: Arc<Mutex<Option<Buffer>>> = Arc::new(Mutex::new(Some(limited.allocate(3000, None).unwrap())));
    let seen: Arc<Mutex<Vec<u64>>> = Arc::new(Mutex::new(Vec::new()));
    let (h, s) = (held.clone(), seen.clone());
    let r = Resource::failure_callback(&limited, 0, move |info| {
        s.lock().unwrap().push(info.size);
        h.lock().unwrap().take().is_some() // dropping the buffer frees it
    })
    .unwrap();
    assert_eq!(r.kind().unwrap(), cumem::sys::CUMEM_RESOURCE_FAILURE_CALLBACK);
    let b = r.allocate(2000, None).unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![2000]);
    let e = r.allocate(3000, None).unwrap_err();
    assert_eq!(e.status(), Status::OUT_OF_MEMORY);
    assert!(e.message().contains("gave up"), "{e}");
    drop(b);
    // A panicking callback gives up; it does not unwind into libcumem.
    let p = Resource::failure_callback(&limited, 2, |_| panic!("no")).unwrap();
    assert_eq!(p.allocate(5000, None).unwrap_err().status(), Status::OUT_OF_MEMORY);
    let e = Resource::failure_callback(&limited, 5000, |_| true).unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
}
