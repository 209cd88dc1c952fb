//! CUDA graphs through the safe crate, on the repository's fake capturing
//! driver (tests/fake_driver/fake_capture_driver.cpp, host memory for
//! device memory): this test binary points libcumem at it ($CUMEM_LIBCUDA)
//! before its first call, and skips where the fake was not built.
use cumem::{CaptureStatus, Device, GraphOptions, Resource, Status, Stream};
use std::path::PathBuf;
use std::sync::Once;

fn fake_driver_or_skip(test: &str) -> Option<Device> {
    static SET: Once = Once::new();
    let dir = std::env::var_os("CUMEM_LIB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../build"));
    let fake = dir.join("tests/fake_driver/libfake_capture_cuda.so");
    if !fake.exists() {
        eprintln!("{test}: skipped, no fake capturing driver at {}", fake.display());
        return None;
    }
    // Before libcumem loads a driver (once for the process).
    SET.call_once(|| std::env::set_var("CUMEM_LIBCUDA", &fake));
    Some(Device::get(0).expect("the fake's device 0"))
}

#[test]
fn capture_info_graphs_and_graph_memory() {
    let Some(device) = fake_driver_or_skip("capture_info_graphs_and_graph_memory") else { return };
    let stream = Stream::new(&device).unwrap();
    assert_eq!(stream.capture_info().unwrap().status, CaptureStatus::None);
    let graph_memory = Resource::graph_memory(&device).unwrap();
    assert_eq!(graph_memory.kind().unwrap(), cumem::sys::CUMEM_RESOURCE_GRAPH_MEMORY);
    let e = graph_memory.allocate(64, Some(&stream)).unwrap_err();
    assert_eq!(e.status(), Status::INVALID_STATE, "{e}");

    let pool = Resource::device(&device).unwrap();
    let out = pool.allocate(256, Some(&stream)).unwrap();
    stream.begin_capture(cumem::sys::CUMEM_CAPTURE_MODE_THREAD_LOCAL).unwrap();
    let info = stream.capture_info().unwrap();
    assert_eq!(info.status, CaptureStatus::Active);
    assert_ne!(info.id, 0);
    let mut scratch = graph_memory.allocate(256, Some(&stream)).unwrap();
    assert_eq!(graph_memory.graph_memory_attributes().unwrap().used_mem_current, 256);
    scratch.fill(0x3C, 1, Some(&stream)).unwrap();
    scratch.copy_to(&out, Some(&stream)).unwrap();
    scratch.close(Some(&stream)).unwrap();
    let graph = stream.end_capture_graph(GraphOptions { auto_free_on_launch: true, ..Default::default() }).unwrap();
    assert!(!graph.native().unwrap().is_null());
    assert_eq!(graph.capture_id().unwrap(), info.id);
    out.fill(0, 1, Some(&stream)).unwrap();
    graph.upload(Some(&stream)).unwrap();
    graph.launch(Some(&stream)).unwrap();
    let mut bytes = vec![0u8; 256];
    out.copy_to_slice(&mut bytes, Some(&stream)).unwrap();
    assert!(bytes.iter().all(|&b| b == 0x3C));
    graph_memory.graph_memory_reset_highs().unwrap();
    graph_memory.graph_memory_trim().unwrap();
    assert_eq!(graph_memory.graph_memory_attributes().unwrap().used_mem_high, 0);
    let e = pool.graph_memory_attributes().unwrap_err();
    assert_eq!(e.status(), Status::NOT_SUPPORTED, "{e}");
}
