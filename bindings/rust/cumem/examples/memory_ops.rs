//! The seed's memory_ops flow (examples/memory_ops.c, cuda.core's example)
//! in safe Rust, as far as it goes without kernels: a stream, a device
//! resource (the default pool) and a legacy pinned resource, a device and a
//! pinned buffer, fills and copies between them and host slices, each
//! checked. Exits 1 on any error or mismatch, and 77 (what test harnesses
//! read as "skipped") where there is no GPU to run on.
use cumem::{Device, Resource, Stream};
use std::process::ExitCode;

const N: usize = 1024;

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

fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_ne_bytes()).collect()
}

fn to_floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect()
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
    // The device's memory resource: its default pool unless the program chose another.
    let device_mr = device.memory_resource()?;
    let pinned_mr = Resource::legacy_pinned(device)?;
    let bytes = N * std::mem::size_of::<f32>();
    let mut device_buffer = device_mr.allocate(bytes, Some(&stream))?;
    let mut pinned_buffer = pinned_mr.allocate(bytes, Some(&stream))?;
    let mut ok = true;
    let mut out = vec![0u8; bytes];

    // Host data -> pinned -> device, read back.
    let original = random_floats(2024, N);
    pinned_buffer.copy_from_slice(&to_bytes(&original), Some(&stream))?;
    pinned_buffer.copy_to(&device_buffer, Some(&stream))?;
    device_buffer.copy_to_slice(&mut out, Some(&stream))?;
    ok &= compare("device buffer after copy from pinned", &to_floats(&out), &original);

    // Fill the device buffer with 1.0f (0x3f800000, 4-byte pattern).
    device_buffer.fill(1.0f32.to_bits(), 4, Some(&stream))?;
    device_buffer.copy_to_slice(&mut out, Some(&stream))?;
    ok &= compare("device buffer after fill 1.0", &to_floats(&out), &[1.0; N]);

    // Device -> pinned: the pinned buffer now holds the device results.
    pinned_buffer.fill(0, 1, Some(&stream))?;
    device_buffer.copy_to(&pinned_buffer, Some(&stream))?;
    pinned_buffer.copy_to_slice(&mut out, Some(&stream))?;
    ok &= compare("pinned after copy from device", &to_floats(&out), &[1.0; N]);

    // Pinned (fresh data) -> a new device buffer, read back.
    let second = random_floats(7, N);
    pinned_buffer.copy_from_slice(&to_bytes(&second), Some(&stream))?;
    let mut new_device_buffer = device_mr.allocate(bytes, Some(&stream))?;
    new_device_buffer.copy_from_slice(&vec![0u8; bytes], Some(&stream))?;
    pinned_buffer.copy_to(&new_device_buffer, Some(&stream))?;
    new_device_buffer.copy_to_slice(&mut out, Some(&stream))?;
    ok &= compare("new device buffer after copy from pinned", &to_floats(&out), &second);

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
