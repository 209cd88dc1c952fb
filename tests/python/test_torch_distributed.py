"""torch.distributed with the NCCL backend (one rank) on libcumem as
PyTorch's complete allocator, for the framework resource named by the first
argument ("device" or "caching"): collectives on tensors libcumem holds,
then a MemPool's segments registered with NCCL (ProcessGroupNCCL's
register_mem_pool: ncclCommRegister of each segment the allocator's
snapshot of the pool lists) and an all-reduce on them. NCCL_NVLS_ENABLE=0:
no NVLink multicast."""
import os
import sys
import tempfile

kind = sys.argv[1] if len(sys.argv) > 1 else "device"
os.environ["CUMEM_FRAMEWORK_RESOURCE"] = kind
os.environ.setdefault("CUMEM_FRAMEWORK_QUIET", "1")
os.environ["NCCL_NVLS_ENABLE"] = "0"

import cumem  # noqa: E402
import cumem.torch  # noqa: E402
from gpu_common import SKIP, require_gpu, run  # noqa: E402

require_gpu()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

if not torch.cuda.is_available() or not dist.is_nccl_available():
    print("skipped: torch sees no CUDA device or has no NCCL backend")
    raise SystemExit(SKIP)
assert cumem.torch.use_libcumem_allocator(pluggable=False) == "extension"

store_file = tempfile.NamedTemporaryFile(prefix="cumem-dist-", delete=False)
store_file.close()
dist.init_process_group("nccl", init_method=f"file://{store_file.name}", rank=0, world_size=1,
                        device_id=torch.device("cuda", 0))


def in_use():
    return cumem.framework_resource(0).statistics()["bytes_in_use"]


def test_collectives_on_libcumem_tensors():
    before = in_use()
    x = torch.full((1 << 20,), 2.5, device="cuda")
    assert in_use() >= before + x.numel() * 4, "the tensor is not libcumem's"
    dist.all_reduce(x)
    assert torch.equal(x, torch.full_like(x, 2.5))
    out = torch.empty(1 << 20, device="cuda")
    dist.all_gather_into_tensor(out, x)
    assert torch.equal(out, x)
    dist.reduce_scatter_tensor(out, x * 2)
    assert torch.equal(out, x * 2)
    dist.broadcast(out, src=0)
    work = dist.all_reduce(out, async_op=True)
    work.wait()
    torch.cuda.synchronize()
    assert torch.equal(out, x * 2)
    print(f"  NCCL {torch.cuda.nccl.version()}, {in_use() >> 20} MiB in use in libcumem")


def test_a_mem_pool_registered_with_nccl():
    backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cuda"))
    if not hasattr(backend, "register_mem_pool"):
        print("  skipped here: this PyTorch's ProcessGroupNCCL has no register_mem_pool")
        return
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        t = torch.full((1 << 21,), 1.25, device="cuda")
    segments = [s for s in torch.cuda.memory._snapshot(0)["segments"]
                if tuple(s.get("segment_pool_id", ())) == tuple(pool.id)]
    assert segments, "the pool's segment is not in the snapshot"
    backend.register_mem_pool(pool)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    assert torch.equal(t, torch.full_like(t, 1.25))
    backend.deregister_mem_pool(pool)
    del t
    print(f"  registered {len(segments)} segment(s) of the pool with NCCL")


try:
    run([test_collectives_on_libcumem_tensors, test_a_mem_pool_registered_with_nccl])
finally:
    dist.destroy_process_group()
    if os.path.exists(store_file.name):  # the FileStore removes it at its end
        os.unlink(store_file.name)
