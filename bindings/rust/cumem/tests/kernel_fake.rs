//! Kernels through the safe crate: programs compiled with NVRTC (the CUDA
//! toolkit's, found through $CUDA_HOME or /usr/local/cuda) for the fake
//! memory driver's device (tests/fake_driver/fake_memory_cuda.cpp, compute
//! capability 9.0), with options, name expressions, lowered names, PTX and
//! the compiler's errors; typed device buffers on the fake. Launching needs
//! a GPU (examples/memory_ops.rs). Skips, saying why, where the fake driver
//! or NVRTC is missing. A binary of its own: the fake must be named before
//! libcumem first loads a driver.
use cumem::{Buffer, Device, Program, ProgramOptions, Resource, Status, Stream};
use std::path::PathBuf;
use std::sync::Once;

fn fake_device_or_skip(test: &str) -> Option<Device> {
    static SET: Once = Once::new();
    let dir = std::env::var_os("CUMEM_LIB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../build"));
    let fake = dir.join("tests/fake_driver/libfake_memory_cuda.so");
    if !fake.exists() {
        eprintln!("{test}: skipped, no fake memory driver at {}", fake.display());
        return None;
    }
    SET.call_once(|| {
        std::env::set_var("CUMEM_LIBCUDA", &fake);
        let cuda = std::env::var("CUDA_HOME").unwrap_or_else(|_| "/usr/local/cuda".into());
        let nvrtc = PathBuf::from(cuda).join("lib64/libnvrtc.so.13");
        if nvrtc.exists() && std::env::var_os("CUMEM_LIBNVRTC").is_none() {
            std::env::set_var("CUMEM_LIBNVRTC", nvrtc);
        }
    });
    Some(Device::get(0).expect("the fake's device 0"))
}

const SOURCE: &str = r#"
template <typename T> __global__ void scale(T* x, T a, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a * FACTOR;
}"#;

#[test]
fn programs_with_options() {
    let Some(device) = fake_device_or_skip("programs_with_options") else { return };
    let options = ProgramOptions {
        options: vec!["-DFACTOR=2".into(), "-std=c++17".into()],
        name_expressions: vec!["scale<float>".into()],
        name: Some("scale.cu".into()),
        ..Default::default()
    };
    let p = match Program::compile(&device, SOURCE, &options) {
        Err(e) if e.status() == Status::NO_COMPILER => {
            eprintln!("programs_with_options: skipped, NVRTC cannot be loaded: {e}");
            return;
        }
        other => other.unwrap(),
    };
    let lowered = p.lowered_name("scale<float>").unwrap();
    assert!(lowered.starts_with("_Z") && lowered.contains("scale"), "{lowered}");
    assert_eq!(&p.code().unwrap()[..4], b"\x7fELF", "cubin by default");
    assert_eq!(p.lowered_name("scale<int>").unwrap_err().status(), Status::NOT_FOUND);
    let ptx = Program::compile(
        &device,
        SOURCE,
        &ProgramOptions {
            options: vec!["-DFACTOR=1".into()],
            name_expressions: vec!["scale<double>".into()],
            ptx: true,
            arch: Some("compute_80".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let code = ptx.code().unwrap();
    assert!(code.windows(8).any(|w| w == b".version") && code.ends_with(&[0]));
    let e = Program::compile(&device, "__global__ void k(int* x) { *x = FACTOR; }", &ProgramOptions::default())
        .unwrap_err();
    assert_eq!(e.status(), Status::COMPILATION);
    assert!(e.message().contains("FACTOR"), "{e}");
    let e = Program::compile(&device, "x", &ProgramOptions { options: vec!["a\0b".into()], ..Default::default() })
        .unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
}

#[test]
fn typed_device_buffers_on_a_stream() {
    let Some(device) = fake_device_or_skip("typed_device_buffers_on_a_stream") else { return };
    let stream = Stream::new(&device).unwrap();
    let mr = device.memory_resource().unwrap();
    let values: Vec<u32> = (0..4096).collect();
    let b: Buffer<u32> = mr.from_slice(&values, Some(&stream)).unwrap();
    assert_eq!(b.copy_to_vec(Some(&stream)).unwrap(), values);
    let twice = b.copy_to_new(Some(&stream)).unwrap();
    assert_eq!(twice.len().unwrap(), 4096);
    assert_eq!(twice.copy_to_vec(Some(&stream)).unwrap(), values);
    // Device memory needs a stream to wait for before the slice is given back.
    let e = b.copy_to_vec(None).unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
    let host = Resource::host().unwrap();
    let staged: Buffer<u32> = host.alloc(4096, None).unwrap();
    b.copy_to(&staged, Some(&stream)).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(staged.copy_to_vec(None).unwrap()[4095], 4095);
}
