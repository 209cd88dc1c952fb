"""libcumem as PyTorch's complete allocator (the extension, _cumem_torch.so)
for the framework resource named by the first argument ("device" or
"caching"): statistics in PyTorch's shape equal to libcumem's, empty_cache,
recordStream, caching_allocator_alloc, the memory fraction and out of
memory (message and observers), CUDA graphs on private pools (a graph
with an intermediate freed inside, replayed against eager results;
make_graphed_callables training against eager training; pools shared by
two graphs), MemPool, the memory history and snapshot read by PyTorch's own
torch.cuda._memory_viz, cuDNN's benchmark mode (cacheInfo), and the clear
error of CUDA IPC."""
import faulthandler
import gc
import os
import pickle
import sys
import tempfile

kind = sys.argv[1] if len(sys.argv) > 1 else "device"
os.environ["CUMEM_FRAMEWORK_RESOURCE"] = kind  # before libcumem makes the resource
os.environ.setdefault("CUMEM_FRAMEWORK_QUIET", "1")

import cumem  # noqa: E402
import cumem.torch  # noqa: E402
from gpu_common import SKIP, require_gpu, run  # noqa: E402

require_gpu()
import torch  # noqa: E402

if not torch.cuda.is_available():
    print("skipped: torch sees no CUDA device")
    raise SystemExit(SKIP)
# Where torch is importable the build makes the extension: missing is a failure.
assert cumem.torch.use_libcumem_allocator(pluggable=False) == "extension"
assert cumem.torch.is_complete_allocator()

MiB = 1 << 20
faulthandler.enable()


def pool_segments(pool):
    try:
        return torch.cuda.memory_snapshot(mempool_id=pool)
    except TypeError:  # an older torch.cuda.memory_snapshot without the pool
        return torch._C._cuda_memorySnapshot(pool)["segments"]


def settle():
    gc.collect()
    torch.cuda.synchronize()


def test_statistics_are_libcumems():
    settle()
    tensors = [torch.empty(n * 1000 + 7, dtype=torch.uint8, device="cuda") for n in range(1, 40)]
    settle()
    s = torch.cuda.memory_stats()
    r = cumem.framework_resource(0).statistics()
    # Blocks are the requests rounded up to 512 bytes, as PyTorch's.
    assert s["allocated_bytes.all.current"] == r["bytes_in_use"], (s["allocated_bytes.all.current"], r)
    assert s["allocation.all.current"] == r["live_allocations"], (s["allocation.all.current"], r)
    assert s["requested_bytes.all.current"] == sum(t.numel() for t in tensors)
    assert torch.cuda.memory_allocated() == r["bytes_in_use"]
    assert torch.cuda.max_memory_allocated() >= torch.cuda.memory_allocated()
    assert torch.cuda.memory_reserved() >= torch.cuda.memory_allocated() > 0
    assert s["segment.all.current"] > 0
    summary = torch.cuda.memory_summary()
    assert "Allocated memory" in summary, summary[:500]
    peak = torch.cuda.max_memory_allocated()
    del tensors
    settle()
    assert torch.cuda.memory_allocated() == cumem.framework_resource(0).statistics()["bytes_in_use"]
    assert torch.cuda.max_memory_allocated() == peak
    torch.cuda.reset_peak_memory_stats()
    assert torch.cuda.max_memory_allocated() == torch.cuda.memory_allocated()
    torch.cuda.reset_accumulated_memory_stats()
    assert torch.cuda.memory_stats()["allocation.all.allocated"] == 0


def test_empty_cache_gives_memory_back():
    settle()
    x = [torch.empty(8 * MiB, dtype=torch.uint8, device="cuda") for _ in range(8)]
    settle()
    del x
    settle()
    before = torch.cuda.memory_reserved()
    torch.cuda.empty_cache()
    after = torch.cuda.memory_reserved()
    print(f"  reserved {before >> 20} MiB -> {after >> 20} MiB after empty_cache")
    assert after <= before
    if kind in ("caching", "expandable"):
        assert after < before, (before, after)


def test_record_stream_keeps_the_block_until_the_stream_is_done():
    settle()
    side = torch.cuda.Stream()
    x = torch.ones(4 * MiB, device="cuda")
    ptr = x.data_ptr()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # the side stream is busy with x
        y = x * 3
    x.record_stream(side)
    del x
    # Not reused while the side stream may still read it.
    z = torch.empty(4 * MiB, device="cuda")
    assert z.data_ptr() != ptr or side.query(), "a block under recordStream was handed out again"
    side.synchronize()
    assert torch.equal(y, torch.full_like(y, 3.0))
    del y, z
    settle()
    assert torch.cuda.memory_allocated() == cumem.framework_resource(0).statistics()["bytes_in_use"]


def test_caching_allocator_alloc_and_delete():
    p = torch.cuda.caching_allocator_alloc(3 * MiB)
    assert p
    torch.cuda.caching_allocator_delete(p)
    try:
        torch.cuda.caching_allocator_delete(p)
    except RuntimeError as e:
        assert "libcumem" in str(e) and "freed already" in str(e), e
    else:
        raise AssertionError("a double free was accepted")


def test_memory_fraction_and_out_of_memory():
    settle()
    global observer
    seen = []

    def observer(*args):
        seen.append(args)

    torch._C._cuda_attach_out_of_memory_observer(observer)
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(0.01)
    try:
        torch.empty(int(total * 0.02), dtype=torch.uint8, device="cuda")
    except torch.cuda.OutOfMemoryError as e:
        text = str(e)
        assert "libcumem" in text and "memory fraction" in text, text[:800]
    else:
        raise AssertionError("the memory fraction did not refuse 2% of the device")
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    assert seen and seen[-1][0] == 0, seen
    assert torch.cuda.memory_stats()["num_ooms"] >= 1
    small = torch.empty(MiB, device="cuda")  # works again
    del small


def graph_with_an_intermediate_freed_inside():
    n = 1 << 16
    static_x = torch.randn(n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            ((static_x * 2).sin() + 1).sum()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        tmp = static_x * 2
        tmp2 = tmp.sin()
        del tmp
        static_y = tmp2 + 1
        del tmp2
    for i in range(10):
        static_x.copy_(torch.randn(n, device="cuda", generator=torch.Generator("cuda").manual_seed(i)))
        eager = [torch.full((n,), float(i), device="cuda") for _ in range(3)]
        graph.replay()
        expected = (static_x * 2).sin() + 1
        torch.cuda.synchronize()
        assert torch.equal(static_y, expected), f"replay {i}: the graph's output differs"
        for e in eager:
            assert torch.equal(e, torch.full((n,), float(i), device="cuda")), "an eager tensor was overwritten"
    return graph, static_y


def test_graph_private_pool():
    settle()
    in_use = torch.cuda.memory_allocated()
    graph, out = graph_with_an_intermediate_freed_inside()
    pool = graph.pool()
    segments = pool_segments(pool)
    owners = {tuple(s["segment_pool_id"]) for s in segments}
    assert owners == {tuple(pool)}, owners
    assert torch.cuda.memory_allocated() > in_use
    del out, graph
    settle()
    torch.cuda.empty_cache()
    assert torch.cuda.memory_allocated() == in_use, (torch.cuda.memory_allocated(), in_use)


def test_two_graphs_share_a_pool():
    settle()
    pool = torch.cuda.graph_pool_handle()
    x = torch.randn(1 << 15, device="cuda")
    g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        (x + 1) * 2
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g1, pool=pool):
        y1 = (x + 1) * 2
    with torch.cuda.graph(g2, pool=pool):
        y2 = y1.cos()
    for _ in range(3):
        x.normal_()
        g1.replay()
        g2.replay()
        torch.cuda.synchronize()
        assert torch.equal(y2, ((x + 1) * 2).cos())
    del g1, g2, y1, y2
    settle()


def test_make_graphed_callables_trains_as_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).cuda()
    import copy
    eager_model = copy.deepcopy(model)
    x = torch.randn(32, 64, device="cuda")
    graphed = torch.cuda.make_graphed_callables(model, (x,))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    eager_opt = torch.optim.SGD(eager_model.parameters(), lr=0.1)
    for step in range(10):
        data = torch.randn(32, 64, device="cuda", generator=torch.Generator("cuda").manual_seed(step))
        for m, o in ((graphed, opt), (eager_model, eager_opt)):
            o.zero_grad(set_to_none=True)
            m(data).square().mean().backward()
            o.step()
    torch.cuda.synchronize()
    for a, b in zip(model.parameters(), eager_model.parameters()):
        assert torch.allclose(a, b, atol=1e-5), (a - b).abs().max()


def test_mem_pool():
    settle()
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        x = torch.empty(2 * MiB, device="cuda")
    y = torch.empty(2 * MiB, device="cuda")
    segments = pool_segments(pool.id)
    addresses = [s["address"] for s in segments]
    assert x.data_ptr() in addresses and y.data_ptr() not in addresses, (addresses, x.data_ptr())
    assert pool.use_count() >= 1
    ptr = x.data_ptr()
    del x
    with torch.cuda.use_mem_pool(pool):
        again = torch.empty(2 * MiB, device="cuda")
    assert again.data_ptr() == ptr, "the pool's freed block was not reused inside the pool"
    del again, y, pool
    settle()


def test_history_and_snapshot_open_in_memory_viz():
    settle()
    torch.cuda.memory._record_memory_history(max_entries=10000)
    try:
        keep = [torch.empty(k * 64 * 1024, dtype=torch.uint8, device="cuda") for k in range(1, 20)]
        tmp = torch.empty(5 * MiB, device="cuda")
        del tmp
        snap = torch.cuda.memory._snapshot()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "snapshot.pickle")
            torch.cuda.memory._dump_snapshot(path)
            with open(path, "rb") as f:
                data = pickle.load(f)
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    actions = [e["action"] for e in snap["device_traces"][0]]
    assert "alloc" in actions and "free_requested" in actions and "free_completed" in actions, actions[:20]
    live = {k.data_ptr() for k in keep}
    blocks = [b for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
    found = [b for b in blocks if b["address"] in live] if blocks and "address" in blocks[0] else blocks
    assert len(found) >= len(live), (len(found), len(live))
    assert any(b.get("frames") for b in found), "no stack recorded for the live blocks"
    from torch.cuda import _memory_viz
    assert _memory_viz.segsum(data).strip()
    assert _memory_viz.trace(data).strip()
    html = _memory_viz.trace_plot(data)
    assert "MemoryViz.js" in html
    del keep


def test_cudnn_benchmark_uses_cache_info():
    torch.backends.cudnn.benchmark = True
    try:
        conv = torch.nn.Conv2d(16, 32, 3, padding=1).cuda()
        x = torch.randn(8, 16, 64, 64, device="cuda")
        y = conv(x)
        torch.cuda.synchronize()
        ref = torch.nn.functional.conv2d(x.cpu(), conv.weight.cpu(), conv.bias.cpu(), padding=1)
        assert torch.allclose(y.cpu(), ref, atol=1e-3)
    finally:
        torch.backends.cudnn.benchmark = False


def test_cuda_ipc_shares_the_expandable_caches_blocks():
    """A storage's IPC handle (what torch.multiprocessing sends; test_torch_ipc.py
    sends them to another process): on the expandable cache libcumem's, the
    pages that hold a block, large or small; refused by name on the other
    framework resources, whose memory does not share."""
    small = torch.ones(1024, device="cuda")
    large = torch.ones(1 << 20, device="cuda")
    if kind == "expandable":
        assert large.untyped_storage()._share_cuda_()[1].startswith(b"CUMEMTI1")
        assert small.untyped_storage()._share_cuda_()[1].startswith(b"CUMEMTI1")
        return
    for x in (small, large):
        try:
            x.untyped_storage()._share_cuda_()
        except RuntimeError as e:
            assert "libcumem" in str(e) and "virtual IPC handle" in str(e), e
        else:
            raise AssertionError(f"a storage of {x.numel() * 4} bytes was shared on {kind}")


run([test_statistics_are_libcumems, test_empty_cache_gives_memory_back,
     test_record_stream_keeps_the_block_until_the_stream_is_done,
     test_caching_allocator_alloc_and_delete, test_memory_fraction_and_out_of_memory,
     test_graph_private_pool, test_two_graphs_share_a_pool,
     test_make_graphed_callables_trains_as_eager, test_mem_pool,
     test_history_and_snapshot_open_in_memory_viz, test_cudnn_benchmark_uses_cache_info,
     test_cuda_ipc_shares_the_expandable_caches_blocks])
