//! The seed's memory_ops flow (examples/memory_ops.c, cuda.core's example)
//! in safe Rust: a kernel compiled at run time, typed device and legacy
//! pinned buffers (`Buffer<f32>`), a launch over both, copies between them
//! and host vectors, every value checked. Exits 1 on any error or mismatch,
//! and 77 (what test harnesses read as "skipped") where there is no GPU.
use cumem::{launch, Buffer, Device, LaunchConfig, Program, ProgramOptions, Resource, Stream};
use std::process::ExitCode;

const N: usize = 1024;

const SOURCE: &str = r#"
extern "C" __global__ void memory_ops(float* device_data, float* pinned_data, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) {
    device_data[i] += 1.0f;
    pinned_data[i] *= 3.0f;
  }
}"#;

/// Deterministic pseudo-random floats in [0, 1) (no external crates).
fn random_floats(seed: u32, n: usize) -> Vec<f32> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 8) as f32 / (1u32 << 24) as f32
        })
        .collect()
}

/// Prints the check; true when all values match.
fn compare(what: &str, got: &[f32], expected: &[f32]) -> bool {
    match got.iter().zip(expected).position(|(g, e)| g != e) {
        Some(i) => {
            println!("{what}: MISMATCH at {i}: {}, expected {}", got[i], expected[i]);
            false
        }
        None => {
            println!("{what}: OK ({} values)", got.len());
            true
        }
    }
}

fn run(device: &Device) -> cumem::Result<bool> {
    let props = device.properties()?;
    println!("device 0: {} (compute capability {}.{})", props.name, props.compute_capability.0,
             props.compute_capability.1);
    let stream = Stream::new(device)?;
    let kernel = Program::compile(device, SOURCE, &ProgramOptions::default())?.load()?.get_kernel("memory_ops")?;
    // The device's memory resource: its default pool unless the program chose another.
    let device_mr = device.memory_resource()?;
    let pinned_mr = Resource::legacy_pinned(device)?;
    let mut ok = true;

    let original_device = random_floats(2024, N);
    let original_pinned = random_floats(7, N);
    let mut device_buffer: Buffer<f32> = device_mr.from_slice(&original_device, Some(&stream))?;
    let mut pinned_buffer: Buffer<f32> = pinned_mr.from_slice(&original_pinned, Some(&stream))?;

    let n = N as u64;
    // SAFETY: memory_ops(float*, float*, unsigned long long), N elements each.
    unsafe {
        launch(&kernel, Some(&stream), &LaunchConfig::for_elements(N as u32, 256),
               &[(&device_buffer).into(), (&pinned_buffer).into(), (&n).into()])?;
    }
    let plus_one: Vec<f32> = original_device.iter().map(|x| x + 1.0).collect();
    let times_three: Vec<f32> = original_pinned.iter().map(|x| x * 3.0).collect();
    ok &= compare("device_data[i] == original + 1", &device_buffer.copy_to_vec(Some(&stream))?, &plus_one);
    ok &= compare("pinned_data[i] == original * 3", &pinned_buffer.copy_to_vec(Some(&stream))?, &times_three);

    // Device -> pinned: the pinned buffer now holds the device results.
    device_buffer.copy_to(&pinned_buffer, Some(&stream))?;
    ok &= compare("pinned after copy from device", &pinned_buffer.copy_to_vec(Some(&stream))?, &plus_one);

    // Pinned -> a new device buffer.
    let mut new_device_buffer: Buffer<f32> = device_mr.alloc_zeros(N, Some(&stream))?;
    pinned_buffer.copy_to(&new_device_buffer, Some(&stream))?;
    ok &= compare("new device buffer after copy from pinned",
                  &new_device_buffer.copy_to_vec(Some(&stream))?, &plus_one);

    let stats = device_mr.statistics()?;
    println!("device resource: {} bytes in use in {} buffers, peak {}", stats.bytes_in_use,
             stats.live_allocations, stats.peak_bytes_in_use);
    new_device_buffer.close(Some(&stream))?;
    pinned_buffer.close(Some(&stream))?;
    device_buffer.close(Some(&stream))?;
    stream.synchronize()?;
    let after = device_mr.statistics()?;
    ok &= after.bytes_in_use == 0;
    Ok(ok)
}

fn main() -> ExitCode {
    match Device::count() {
        Ok(n) if n > 0 => {}
        Ok(_) => {
            println!("no CUDA device to run on (the driver reports none)");
            return ExitCode::from(77);
        }
        Err(e) => {
            println!("no CUDA device to run on ({e})");
            return ExitCode::from(77);
        }
    }
    let result = Device::get(0).and_then(|device| run(&device));
    match result {
        Ok(true) => {
            println!("memory_ops: all checks passed");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            println!("memory_ops: FAILED");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("memory_ops: {e}");
            ExitCode::FAILURE
        }
    }
}
