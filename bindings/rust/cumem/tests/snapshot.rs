//! Snapshots, the memory history, statistics as JSON and the summary, on the
//! host resource and a caching adaptor over it (no GPU needed).
use cumem::{sys, MemoryHistoryOptions, Resource, Snapshot};

const MIB: usize = 1 << 20;

#[test]
fn a_snapshot_of_a_cache_adds_up_and_names_its_stacks() {
    let host = Resource::host().unwrap();
    let cache = Resource::caching(&host).unwrap();
    cumem::memory_history_start(MemoryHistoryOptions { stacks: true, max_entries: 0 }).unwrap();
    let a = cache.allocate(MIB, None).unwrap();
    let b = cache.allocate(3 * MIB, None).unwrap();
    drop(b);
    let s = Snapshot::take(&cache).unwrap();
    cumem::memory_history_stop().unwrap();

    let resources = s.resources().unwrap();
    assert_eq!(resources.len(), 2);
    assert_eq!(resources[0].kind, sys::CUMEM_RESOURCE_CACHING);
    assert!(resources[0].name.starts_with("caching over host resource"), "{}", resources[0].name);
    assert_eq!(resources[0].upstream_id, resources[1].id);
    let t = s.totals().unwrap();
    assert_eq!(t.bytes_reserved, 20 * MIB as u64);
    assert_eq!(t.bytes_in_use, MIB as u64);
    assert_eq!(t.bytes_cached, 19 * MIB as u64);
    let segments = s.segments().unwrap();
    assert_eq!(segments.len(), 1);
    assert_eq!(segments[0].kind, sys::CUMEM_SEGMENT_SEGMENT);
    let blocks = s.blocks().unwrap();
    let in_use: Vec<_> = blocks.iter().filter(|b| b.state == sys::CUMEM_BLOCK_IN_USE).collect();
    assert_eq!(in_use.len(), 1);
    assert_eq!(in_use[0].address, a.ptr().unwrap() as u64);
    assert_eq!(in_use[0].requested_size, MIB as u64);
    let frames = s.frames(in_use[0].stack_id).unwrap();
    assert!(!frames.is_empty());
    assert_eq!(frames[0].function, "cumem_resource_allocate", "the entry point the program called");
    assert!(s.frames(0).unwrap().is_empty());
    let events = s.events().unwrap();
    assert!(events.iter().any(|e| e.action == sys::CUMEM_MEMORY_ACTION_SEGMENT_ALLOC));
    assert!(s.json().unwrap().starts_with("{\"schema\":\"cumem.snapshot\",\"version\":1,"));
    let e = s.write_json("/nonexistent-dir/s.json").unwrap_err();
    assert_eq!(e.status(), cumem::Status::INVALID_ARGUMENT);
    assert!(e.message().contains("cannot write"), "{}", e.message());
    let whole = Snapshot::take_all().unwrap().clone();
    assert!(whole.resources().unwrap().iter().any(|r| r.id == resources[0].id));
}

#[test]
fn statistics_json_and_the_summary() {
    let host = Resource::host().unwrap();
    let cache = Resource::caching(&host).unwrap();
    let _b = cache.allocate(MIB, None).unwrap();
    let json = cache.statistics_json().unwrap();
    assert!(json.starts_with("{\"schema\":\"cumem.statistics\",\"version\":1,"), "{json}");
    assert!(json.contains("\"caching\":{\"bytes_cached\":"), "{json}");
    assert!(cumem::statistics_json().unwrap().contains("\"scope\":\"process\""));
    let summary = cumem::memory_summary().unwrap();
    assert!(summary.starts_with("libcumem memory summary (pid "), "{summary}");
    assert!(summary.contains("caching over host resource"), "{summary}");
}
