"""torch.distributed DDP training with two ranks (one process per GPU, the
NCCL backend) on libcumem as PyTorch's complete allocator, against the same
training on PyTorch's native allocator (issue "Two GPUs"): the losses of
every step equal, and the device memory each rank takes no more than the
native allocator's. The framework resource is the first argument ("device",
"caching" or "expandable"). Skips on a machine with fewer than two GPUs.
NCCL_NVLS_ENABLE=0: no NVLink multicast.

Each (allocator, rank) runs in a process of its own (PyTorch chooses its
allocator before its first CUDA use): this script, with --worker."""
import json
import os
import subprocess
import sys
import tempfile

STEPS = 12
WIDTH = 2048


def worker(allocator, kind, rank, world, store, out):
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    if allocator == "libcumem":
        os.environ["CUMEM_FRAMEWORK_RESOURCE"] = kind
        os.environ.setdefault("CUMEM_FRAMEWORK_QUIET", "1")
        import cumem.torch
        assert cumem.torch.use_libcumem_allocator(pluggable=False) == "extension"
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.cuda.set_device(rank)
    torch.use_deterministic_algorithms(True)
    dist.init_process_group("nccl", init_method=f"file://{store}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    torch.manual_seed(0)  # the same weights on both ranks and for both allocators
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.GELU(),
                                torch.nn.Linear(4 * WIDTH, WIDTH), torch.nn.LayerNorm(WIDTH)).cuda()
    ddp = DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(100 + rank)  # each rank its own batches
    torch.cuda.synchronize()
    baseline = torch.cuda.mem_get_info(rank)[0]
    lowest = baseline
    losses = []
    for step in range(STEPS):
        rows = 256 * (1 + step % 4)  # shapes that change, as a real loader's tails do
        x = torch.randn(rows, WIDTH, generator=data).cuda()
        y = torch.randn(rows, WIDTH, generator=data).cuda()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        lowest = min(lowest, torch.cuda.mem_get_info(rank)[0])
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        losses.append(reduced.item() / world)
        lowest = min(lowest, torch.cuda.mem_get_info(rank)[0])
    torch.cuda.synchronize()
    dist.destroy_process_group()
    with open(out, "w") as f:
        json.dump({"losses": losses, "taken": baseline - lowest}, f)


def train(allocator, kind, world):
    """Both ranks of one training; returns each rank's result."""
    with tempfile.TemporaryDirectory(prefix="cumem-ddp-") as d:
        store = os.path.join(d, "store")
        outs = [os.path.join(d, f"rank{r}.json") for r in range(world)]
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", allocator, kind, str(r),
                                   str(world), store, outs[r]])
                 for r in range(world)]
        codes = [p.wait(timeout=300) for p in procs]
        assert codes == [0] * world, f"{allocator}: the ranks exited with {codes}"
        results = []
        for o in outs:
            with open(o) as f:
                results.append(json.load(f))
        return results


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "expandable"
    import cumem
    from gpu_common import SKIP, require_gpu
    require_gpu()
    count = cumem.device_count()
    if count < 2:
        print(f"skipped: DDP with two ranks needs two GPUs; this machine has {count}")
        sys.exit(SKIP)
    native = train("native", kind, 2)
    ours = train("libcumem", kind, 2)
    failures = 0
    for rank in range(2):
        n, o = native[rank], ours[rank]
        if n["losses"] != o["losses"]:
            worst = max(abs(a - b) for a, b in zip(n["losses"], o["losses"]))
            print(f"FAIL rank {rank}: the losses differ (at most {worst:.3g}): "
                  f"native {n['losses']}, libcumem {o['losses']}")
            failures += 1
        if o["taken"] > n["taken"]:
            print(f"FAIL rank {rank}: libcumem took {o['taken'] >> 20} MiB of device memory, "
                  f"the native allocator {n['taken'] >> 20} MiB")
            failures += 1
        print(f"rank {rank}: {STEPS} steps, losses equal: {n['losses'] == o['losses']}, "
              f"taken {o['taken'] >> 20} MiB (native {n['taken'] >> 20} MiB)")
    print(f"{'ok' if not failures else 'FAIL'} test_ddp_two_ranks_{kind}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6],
               sys.argv[7])
    else:
        main()
