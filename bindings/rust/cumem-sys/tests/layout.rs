//! Layout test: every struct of include/cumem/cumem.h against its Rust twin.
//! A C program compiled with the system's `cc` prints sizeof, alignof and,
//! per field, offsetof and sizeof; the Rust side computes the same with
//! size_of / align_of / offset_of!. The field names (in order) and the list
//! of structs are also read from the header itself, so a field or struct
//! added there and not here fails the test.
use cumem_sys::*;
use std::collections::BTreeMap;
use std::mem::{align_of, offset_of, size_of, MaybeUninit};
use std::path::PathBuf;
use std::process::Command;

fn size_of_pointee<T>(_: *const T) -> usize {
    size_of::<T>()
}

struct Layout {
    name: &'static str,
    fields: Vec<&'static str>,
    /// "key value" lines as the C program prints them.
    values: BTreeMap<String, usize>,
}

/// layout!(c_struct_name: RustType { field_c => field_rust, ... })
macro_rules! layout {
    ($t:ident { $($cf:ident => $rf:ident),* $(,)? }) => {{
        let mut values = BTreeMap::new();
        values.insert(format!("{}.sizeof", stringify!($t)), size_of::<$t>());
        values.insert(format!("{}.alignof", stringify!($t)), align_of::<$t>());
        let u = MaybeUninit::<$t>::uninit();
        let p = u.as_ptr();
        $(
            values.insert(format!("{}.{}.offset", stringify!($t), stringify!($cf)), offset_of!($t, $rf));
            // SAFETY: addr_of! on a field of an uninit value reads nothing.
            values.insert(format!("{}.{}.size", stringify!($t), stringify!($cf)),
                          size_of_pointee(unsafe { std::ptr::addr_of!((*p).$rf) }));
        )*
        Layout { name: stringify!($t), fields: vec![$(stringify!($cf)),*], values }
    }};
}

fn layouts() -> Vec<Layout> {
    vec![
        layout!(cumem_location_t { type => type_, id => id }),
        layout!(cumem_device_properties_t {
            struct_size => struct_size, ordinal => ordinal, name => name, uuid => uuid,
            compute_capability_major => compute_capability_major,
            compute_capability_minor => compute_capability_minor,
            total_memory => total_memory, multiprocessor_count => multiprocessor_count,
            memory_pools_supported => memory_pools_supported, ipc_handle_types => ipc_handle_types,
            managed_memory => managed_memory, concurrent_managed_access => concurrent_managed_access,
            virtual_memory_management => virtual_memory_management, host_numa_id => host_numa_id,
            pci_domain_id => pci_domain_id, pci_bus_id => pci_bus_id, pci_device_id => pci_device_id,
            max_threads_per_block => max_threads_per_block,
            max_shared_memory_per_block_optin => max_shared_memory_per_block_optin,
            cluster_launch => cluster_launch, reserved0 => reserved0,
            fabric_export_supported => fabric_export_supported,
            dma_buf_supported => dma_buf_supported,
        }),
        layout!(cumem_stream_options_t {
            struct_size => struct_size, blocking => blocking, priority => priority,
            priority_mode => priority_mode,
        }),
        layout!(cumem_event_options_t {
            struct_size => struct_size, enable_timing => enable_timing,
            blocking_sync => blocking_sync, interprocess => interprocess,
        }),
        layout!(cumem_resource_properties_t {
            struct_size => struct_size, kind => kind, device_accessible => device_accessible,
            host_accessible => host_accessible, device_id => device_id,
            is_stream_ordered => is_stream_ordered, is_pool => is_pool,
            ipc_enabled => ipc_enabled, is_imported => is_imported,
        }),
        layout!(cumem_resource_statistics_t {
            struct_size => struct_size, reserved0 => reserved0, bytes_in_use => bytes_in_use,
            peak_bytes_in_use => peak_bytes_in_use, live_allocations => live_allocations,
            total_allocations => total_allocations,
        }),
        layout!(cumem_host_resource_options_t {
            struct_size => struct_size, reserved0 => reserved0, alignment => alignment,
        }),
        layout!(cumem_pool_options_t {
            struct_size => struct_size, new_pool => new_pool,
            release_threshold => release_threshold, max_size => max_size,
            ipc_enabled => ipc_enabled, release_all_unused => release_all_unused,
            use_host_numa_id => use_host_numa_id, host_numa_id => host_numa_id,
        }),
        layout!(cumem_managed_resource_options_t {
            struct_size => struct_size, preferred_location => preferred_location, disable_pool => disable_pool,
        }),
        layout!(cumem_caching_statistics_t {
            struct_size => struct_size, reserved0 => reserved0, bytes_cached => bytes_cached,
            bytes_reserved => bytes_reserved, peak_bytes_reserved => peak_bytes_reserved,
            hits => hits, misses => misses, stream_reuses => stream_reuses,
            oom_retries => oom_retries, pages_mapped => pages_mapped,
            pages_unmapped => pages_unmapped, capture_pools => capture_pools,
            capture_pool_bytes => capture_pool_bytes, recycles => recycles,
            recycle_waits => recycle_waits,
        }),
        layout!(cumem_caching_resource_options_t {
            struct_size => struct_size, expandable => expandable, page_size => page_size,
            libcumem_captures_only => libcumem_captures_only, handle_types => handle_types,
        }),
        layout!(cumem_resource_callbacks_t {
            struct_size => struct_size, memory_kind => memory_kind, allocate => allocate,
            deallocate => deallocate, destroy => destroy, user_data => user_data,
            device_accessible => device_accessible, host_accessible => host_accessible,
            stream_ordered => stream_ordered, reserved0 => reserved0,
        }),
        layout!(cumem_pool_attributes_t {
            struct_size => struct_size,
            reuse_follow_event_dependencies => reuse_follow_event_dependencies,
            reuse_allow_opportunistic => reuse_allow_opportunistic,
            reuse_allow_internal_dependencies => reuse_allow_internal_dependencies,
            release_threshold => release_threshold, reserved_mem_current => reserved_mem_current,
            reserved_mem_high => reserved_mem_high, used_mem_current => used_mem_current,
            used_mem_high => used_mem_high,
        }),
        layout!(cumem_buffer_info_t {
            struct_size => struct_size, device_id => device_id, ptr => ptr, size => size,
            memory_kind => memory_kind, device_accessible => device_accessible,
            host_accessible => host_accessible, is_slice => is_slice, owns_memory => owns_memory,
            reserved0 => reserved0,
        }),
        layout!(cumem_dlpack_options_t {
            struct_size => struct_size, dtype_code => dtype_code, dtype_bits => dtype_bits,
            dtype_lanes => dtype_lanes, ndim => ndim, reserved0 => reserved0, shape => shape,
            strides => strides, byte_offset => byte_offset, device_type => device_type,
            read_only => read_only,
        }),
        layout!(cumem_ipc_descriptor_t { bytes => bytes }),
        layout!(cumem_ipc_event_handle_t { bytes => bytes }),
        layout!(cumem_program_options_t {
            struct_size => struct_size, code_type => code_type, arch => arch, options => options,
            name_expressions => name_expressions, name => name, num_options => num_options,
            num_name_expressions => num_name_expressions,
        }),
        layout!(cumem_kernel_attributes_t {
            struct_size => struct_size, max_threads_per_block => max_threads_per_block,
            shared_size_bytes => shared_size_bytes, const_size_bytes => const_size_bytes,
            local_size_bytes => local_size_bytes, num_regs => num_regs,
            ptx_version => ptx_version, binary_version => binary_version,
            max_dynamic_shared_size_bytes => max_dynamic_shared_size_bytes,
        }),
        layout!(cumem_capture_info_t { struct_size => struct_size, status => status, id => id }),
        layout!(cumem_graph_options_t {
            struct_size => struct_size, auto_free_on_launch => auto_free_on_launch,
            use_node_priority => use_node_priority,
        }),
        layout!(cumem_graph_memory_attributes_t {
            struct_size => struct_size, reserved0 => reserved0,
            reserved_mem_current => reserved_mem_current, reserved_mem_high => reserved_mem_high,
            used_mem_current => used_mem_current, used_mem_high => used_mem_high,
        }),
        layout!(cumem_launch_config_t {
            struct_size => struct_size, grid => grid, block => block,
            shared_memory_bytes => shared_memory_bytes, cluster => cluster,
        }),
        // Virtual memory.
        layout!(cumem_virtual_resource_options_t {
            struct_size => struct_size, location => location, granularity => granularity,
            handle_types => handle_types, gpu_direct_rdma => gpu_direct_rdma,
            address_hint => address_hint, alignment => alignment, chunk_size => chunk_size,
            reserve_size => reserve_size, peers => peers, peer_count => peer_count,
            peers_read_only => peers_read_only, nccl_qualified => nccl_qualified,
            reserved0 => reserved0,
        }),
        layout!(cumem_virtual_statistics_t {
            struct_size => struct_size, reserved0 => reserved0, granularity => granularity,
            chunk_size => chunk_size, bytes_mapped => bytes_mapped, bytes_reserved => bytes_reserved,
            bytes_pending => bytes_pending, grows_in_place => grows_in_place,
            grows_moved => grows_moved, shrinks => shrinks, chunks_created => chunks_created,
            chunks_released => chunks_released,
        }),
        // Communication engines.
        layout!(cumem_dmabuf_t {
            struct_size => struct_size, fd => fd, offset => offset, length => length,
            address => address, device_id => device_id, whole_allocation => whole_allocation,
        }),
        layout!(cumem_unmap_event_t {
            struct_size => struct_size, reason => reason, address => address, size => size,
            resource_id => resource_id, device_id => device_id, reserved0 => reserved0,
        }),
        layout!(cumem_memory_history_options_t {
            struct_size => struct_size, stacks => stacks, max_entries => max_entries,
        }),
        layout!(cumem_snapshot_totals_t {
            struct_size => struct_size, resource_count => resource_count,
            segment_count => segment_count, block_count => block_count, event_count => event_count,
            bytes_reserved => bytes_reserved, bytes_in_use => bytes_in_use,
            bytes_requested => bytes_requested, bytes_cached => bytes_cached,
            bytes_unmapped => bytes_unmapped, largest_free_block => largest_free_block,
            fragmented_bytes => fragmented_bytes, events_recorded => events_recorded,
            events_dropped => events_dropped, time_ns => time_ns,
        }),
        layout!(cumem_snapshot_resource_t {
            struct_size => struct_size, kind => kind, id => id, upstream_id => upstream_id,
            device_id => device_id, reserved0 => reserved0, name => name,
            bytes_in_use => bytes_in_use, peak_bytes_in_use => peak_bytes_in_use,
            live_allocations => live_allocations, bytes_reserved => bytes_reserved,
            bytes_cached => bytes_cached, largest_free_block => largest_free_block,
        }),
        layout!(cumem_snapshot_segment_t {
            struct_size => struct_size, kind => kind, resource_id => resource_id, address => address,
            size => size, stream => stream, device_id => device_id, reserved0 => reserved0,
            first_block => first_block, block_count => block_count,
        }),
        layout!(cumem_snapshot_block_t {
            struct_size => struct_size, state => state, address => address, size => size,
            requested_size => requested_size, stream => stream, segment => segment,
            stack_id => stack_id, reserved0 => reserved0,
        }),
        layout!(cumem_memory_event_t {
            struct_size => struct_size, action => action, time_ns => time_ns, address => address,
            size => size, stream => stream, resource_id => resource_id, detail => detail,
            thread_id => thread_id, stack_id => stack_id,
        }),
        layout!(cumem_stack_frame_t {
            struct_size => struct_size, depth => depth, address => address, function => function,
            module => module, offset => offset,
        }),
        layout!(cumem_copy_options_t {
            struct_size => struct_size, src_access_order => src_access_order,
            src_location_hint => src_location_hint, dst_location_hint => dst_location_hint,
            overlap_mode => overlap_mode,
        }),
        layout!(cumem_batch_statistics_t {
            struct_size => struct_size, driver_copy_batch => driver_copy_batch,
            driver_prefetch_batch => driver_prefetch_batch,
            driver_discard_batch => driver_discard_batch, copy_batches => copy_batches,
            copy_batches_looped => copy_batches_looped, copies => copies,
            copies_looped => copies_looped, prefetch_batches => prefetch_batches,
            prefetch_batches_looped => prefetch_batches_looped, prefetches => prefetches,
            discard_batches => discard_batches, discards => discards,
            copy_batches_by_kernel => copy_batches_by_kernel, copies_by_kernel => copies_by_kernel,
        }),
        layout!(cumem_failure_info_t {
            struct_size => struct_size, attempt => attempt, size => size, stream => stream,
            statistics => statistics, message => message,
        }),
        layout!(cumem_failure_callback_t {
            struct_size => struct_size, max_retries => max_retries, callback => callback,
            destroy => destroy, user_data => user_data,
        }),
    ]
}

fn include_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../include")
}

/// Removes /* */ and // comments.
fn strip_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = &rest[i + 2..];
        let j = rest.find("*/").expect("unterminated comment");
        rest = &rest[j + 2..];
    }
    out.push_str(rest);
    out.lines().map(|l| l.split("//").next().unwrap()).collect::<Vec<_>>().join("\n")
}

/// (struct name, field names in order) of every `typedef struct X { ... } X;`.
fn header_structs() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(include_dir().join("cumem/cumem.h")).unwrap();
    let text = strip_comments(&text);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("typedef struct ") {
        rest = &rest[i + "typedef struct ".len()..];
        let name_end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap();
        let name = rest[..name_end].to_string();
        let after = rest[name_end..].trim_start();
        if !after.starts_with('{') {
            continue; // an opaque handle
        }
        let body_end = after.find('}').unwrap();
        let body = &after[1..body_end];
        let fields = body
            .split(';')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| {
                let d = d.split('[').next().unwrap().trim_end();
                let start = d.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |k| k + 1);
                d[start..].to_string()
            })
            .collect();
        out.push((name, fields));
    }
    out
}

fn c_values(layouts: &[Layout]) -> BTreeMap<String, usize> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let src = dir.join("cumem_layout.c");
    let exe = dir.join("cumem_layout");
    let mut c = String::from(
        "#include <cumem/cumem.h>\n#include <stdio.h>\n#include <stdalign.h>\n\
         #define P(key, v) printf(\"%s %zu\\n\", key, (size_t)(v))\nint main(void) {\n",
    );
    for l in layouts {
        let t = l.name;
        c += &format!("  P(\"{t}.sizeof\", sizeof({t}));\n  P(\"{t}.alignof\", alignof({t}));\n");
        for f in &l.fields {
            c += &format!(
                "  P(\"{t}.{f}.offset\", offsetof({t}, {f}));\n  P(\"{t}.{f}.size\", sizeof((({t}*)0)->{f}));\n"
            );
        }
    }
    c += "  return 0;\n}\n";
    std::fs::write(&src, c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(include_dir())
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(status.success(), "{cc} failed on {}", src.display());
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

#[test]
fn every_header_struct_has_a_rust_twin_with_the_same_fields() {
    let ours = layouts();
    let header = header_structs();
    assert!(header.len() >= 19, "header parse found only {} structs", header.len());
    for (name, fields) in &header {
        let l = ours
            .iter()
            .find(|l| l.name == name)
            .unwrap_or_else(|| panic!("{name} of cumem.h has no layout check (and maybe no Rust struct)"));
        let ours: Vec<String> = l.fields.iter().map(|s| s.to_string()).collect();
        assert_eq!(&ours, fields, "fields of {name}: Rust side vs header");
    }
    assert_eq!(ours.len(), header.len(), "Rust checks structs the header does not have");
}

#[test]
fn sizes_alignments_and_offsets_match_the_c_compiler() {
    let ours = layouts();
    let c = c_values(&ours);
    let mut checked = 0;
    for l in &ours {
        for (key, rust) in &l.values {
            let cv = c.get(key).unwrap_or_else(|| panic!("C printed no {key}"));
            assert_eq!(rust, cv, "{key}: Rust {rust}, C {cv}");
            checked += 1;
        }
    }
    assert_eq!(checked, c.len());
}

/// The bytes of a struct (every public struct is free of padding).
fn bytes_of<T>(t: &T) -> Vec<u8> {
    // SAFETY: T is a plain #[repr(C)] struct with no padding, so every byte
    // is initialised.
    unsafe { std::slice::from_raw_parts((t as *const T).cast::<u8>(), size_of::<T>()).to_vec() }
}

/// All zero but struct_size: what "zero means default" says the defaults are.
fn zero_filled<T>() -> Vec<u8> {
    let mut v = vec![0u8; size_of::<T>()];
    v[..4].copy_from_slice(&(size_of::<T>() as u32).to_ne_bytes());
    v
}

/// The struct an _init() function fills, over memory that held garbage.
fn from_init<T>(init: unsafe fn(*mut T)) -> Vec<u8> {
    let mut m = MaybeUninit::<T>::uninit();
    // SAFETY: a valid pointer to writable memory of T's size; init fills
    // every field, and T has no padding.
    unsafe {
        std::ptr::write_bytes(m.as_mut_ptr().cast::<u8>(), 0xA5, size_of::<T>());
        init(m.as_mut_ptr());
        bytes_of(&m.assume_init())
    }
}

#[test]
fn defaults_init_functions_and_zero_filled_structs_are_the_same_bytes() {
    macro_rules! same {
        ($t:ty) => {
            assert_eq!(bytes_of(&<$t>::default()), zero_filled::<$t>(), "{}::default()", stringify!($t));
        };
        ($t:ty, $init:ident) => {
            same!($t);
            assert_eq!(from_init($init), zero_filled::<$t>(), "{}", stringify!($init));
        };
    }
    same!(cumem_stream_options_t, cumem_stream_options_init);
    same!(cumem_event_options_t, cumem_event_options_init);
    same!(cumem_host_resource_options_t, cumem_host_resource_options_init);
    same!(cumem_pool_options_t, cumem_pool_options_init);
    same!(cumem_managed_resource_options_t, cumem_managed_resource_options_init);
    same!(cumem_program_options_t, cumem_program_options_init);
    same!(cumem_launch_config_t, cumem_launch_config_init);
    same!(cumem_dlpack_options_t, cumem_dlpack_options_init);
    same!(cumem_resource_callbacks_t);
    same!(cumem_pool_attributes_t);
    same!(cumem_device_properties_t);
    same!(cumem_resource_properties_t);
    same!(cumem_resource_statistics_t);
    same!(cumem_caching_statistics_t);
    same!(cumem_caching_resource_options_t, cumem_caching_resource_options_init);
    same!(cumem_buffer_info_t);
    same!(cumem_kernel_attributes_t);
    same!(cumem_virtual_resource_options_t, cumem_virtual_resource_options_init);
    same!(cumem_virtual_statistics_t);
    same!(cumem_graph_options_t, cumem_graph_options_init);
    same!(cumem_capture_info_t);
    same!(cumem_graph_memory_attributes_t);
    same!(cumem_copy_options_t, cumem_copy_options_init);
    same!(cumem_failure_callback_t, cumem_failure_callback_init);
    same!(cumem_batch_statistics_t);
    same!(cumem_failure_info_t);
    same!(cumem_memory_history_options_t, cumem_memory_history_options_init);
    same!(cumem_snapshot_totals_t);
    same!(cumem_snapshot_resource_t);
    same!(cumem_snapshot_segment_t);
    same!(cumem_snapshot_block_t);
    same!(cumem_memory_event_t);
    same!(cumem_stack_frame_t);
    same!(cumem_dmabuf_t);
    same!(cumem_unmap_event_t);
}

#[test]
fn version_links_and_matches_the_header() {
    // SAFETY: no arguments, never fails.
    assert_eq!(unsafe { cumem_version() }, CUMEM_VERSION_NUMBER);
}

/// Every function of the C ABI (capi/api_table.txt, the one list of exported
/// names) is declared here, nothing else is, and each has as many
/// parameters as its PFN_ type in cumem_api.h.
#[test]
fn every_function_is_declared_with_its_parameter_count() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let table = std::fs::read_to_string(root.join("capi/api_table.txt")).expect("capi/api_table.txt");
    let names: Vec<&str> = table
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            match (w.next(), w.next()) {
                (Some(v), Some(n)) if v.chars().all(|c| c.is_ascii_digit()) => Some(n),
                _ => None,
            }
        })
        .collect();
    let api = std::fs::read_to_string(root.join("include/cumem/cumem_api.h")).expect("cumem_api.h");
    let source = std::fs::read_to_string(root.join("bindings/rust/cumem-sys/src/lib.rs")).unwrap();
    let declared: Vec<String> = source
        .split("pub fn ")
        .skip(1)
        .map(|s| s.split('(').next().unwrap().trim().to_string())
        .filter(|n| n.starts_with("cumem_"))
        .collect();
    for n in &names {
        assert!(declared.iter().any(|d| d == n), "{n} (capi/api_table.txt) is not declared in cumem-sys");
    }
    for d in &declared {
        assert!(names.contains(&d.as_str()), "{d} is declared in cumem-sys but is not in capi/api_table.txt");
    }
    let count_params = |list: &str| {
        let list = list.trim();
        if list.is_empty() || list == "void" {
            0
        } else {
            list.split(',').filter(|p| !p.trim().is_empty()).count()
        }
    };
    for n in &names {
        let pfn = format!("(*PFN_{n})(");
        let c = api.split(&pfn).nth(1).unwrap_or_else(|| panic!("no PFN_{n} in cumem_api.h"));
        let c_params = count_params(c.split(");").next().unwrap());
        let r = source.split(&format!("pub fn {n}(")).nth(1).unwrap();
        let r_params = count_params(&r[..r.find(')').unwrap()]);
        assert_eq!(r_params, c_params, "{n}: {r_params} parameters in cumem-sys, {c_params} in cumem.h");
    }
}
