"""CUDA IPC of tensors through torch.multiprocessing on libcumem's complete
allocator (issue "A complete PyTorch allocator"): a CUDA tensor the parent
made, sent to a child process through a queue (PyTorch's shareIpcHandle and
getIpcDevPtr, libcumem's pages shared as POSIX fds), read there, written
there, and the child's writes read back in the parent; a view with a storage
offset; a small tensor (a block of the cache's small blocks' pages, sent as
its one page) the same way; a tensor of a private
pool (torch.cuda.MemPool) refused with a clear error when pickled, never a
crash.

With CUMEM_TEST_IPC_FORM=pool, the framework resource is a pool of its own
with IPC enabled instead, so that tensors go as the pool's handle and the
block's export (the pool form, CUMEMTP1) rather than as pages (CUMEMTI1);
each tensor's handle is checked to be of the form chosen.

Both processes install libcumem's allocator before their first CUDA tensor:
this module's top level runs in the parent and, with the "spawn" start
method, in the child before the queue's tensors are unpickled."""
import os
import sys

os.environ.setdefault("CUMEM_FRAMEWORK_QUIET", "1")
import cumem  # noqa: E402
import cumem.torch  # noqa: E402

POOL_FORM = os.environ.get("CUMEM_TEST_IPC_FORM") == "pool"
if POOL_FORM:
    cumem.set_framework_resource(0, cumem.Resource.device(0, new_pool=True, ipc_enabled=True))
FORM = b"CUMEMTP1" if POOL_FORM else b"CUMEMTI1"

assert cumem.torch.use_libcumem_allocator(pluggable=False) == "extension"
import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

N = 1 << 20  # 4 MiB of float32: a large block, on the shareable pages


def child(inbox, outbox):
    try:
        t = inbox.get(timeout=120)
        view = inbox.get(timeout=120)
        small = inbox.get(timeout=120)
        expected = torch.arange(N, dtype=torch.float32, device="cuda")
        report = {"equal": bool(torch.equal(t, expected)),
                  "view": bool(torch.equal(view, expected[1000:3000])),
                  "view_offset": view.storage_offset(),
                  "small": bool(torch.equal(small, torch.arange(16, dtype=torch.float32,
                                                                device="cuda")))}
        t.mul_(2)  # seen by the parent: one memory
        small.add_(100)
        torch.cuda.synchronize()
        outbox.put(("ok", report))
        assert inbox.get(timeout=120) == "done"
        del t, view, small
    except Exception as e:  # reported to the parent, which fails the test
        outbox.put(("error", f"{type(e).__name__}: {e}"))


def main():
    from gpu_common import require_gpu
    require_gpu()
    failures = []
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=child, args=(inbox, outbox))
    proc.start()
    t = torch.arange(N, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    small = torch.arange(16, dtype=torch.float32, device="cuda")  # 64 bytes: a small block
    torch.cuda.synchronize()
    for name, tensor in (("large", t), ("small", small)):
        handle = tensor.untyped_storage()._share_cuda_()[1]
        if not handle.startswith(FORM):
            failures.append(f"the {name} tensor's handle is not of the {FORM.decode()} form: "
                            f"{handle[:8]!r}")
    inbox.put(t)
    inbox.put(t[1000:3000])
    inbox.put(small)
    status, report = outbox.get(timeout=300)
    if status != "ok":
        failures.append(f"the child failed: {report}")
    else:
        if not report["equal"]:
            failures.append("the child read other bytes than the parent wrote")
        if not report["view"] or report["view_offset"] != 1000:
            failures.append(f"the view arrived wrong: {report}")
        torch.cuda.synchronize()
        doubled = torch.arange(N, dtype=torch.float32, device="cuda") * 2
        if not torch.equal(t, doubled):
            failures.append("the parent does not see the child's writes")
        if not report["small"]:
            failures.append("the child read other bytes of the small tensor")
        if not torch.equal(small, torch.arange(16, dtype=torch.float32, device="cuda") + 100):
            failures.append("the parent does not see the child's writes to the small tensor")
    inbox.put("done")
    proc.join(timeout=120)
    if proc.exitcode != 0:
        failures.append(f"the child exited with {proc.exitcode}")

    print(f"sent {N * 4 >> 20} MiB, a view and 64 bytes as {FORM.decode()}; child: {status} "
          f"{report}")

    # A tensor of a private pool: refused by name when pickled, the process unharmed.
    from multiprocessing.reduction import ForkingPickler
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        pooled = torch.ones(1 << 20, device="cuda")
    try:
        ForkingPickler.dumps(pooled)
        failures.append("a tensor of a private pool was shared")
    except RuntimeError as e:
        message = str(e)
        print(f"private pool's tensor refused: {message.splitlines()[0][:200]}")
        if "private pool" not in message:
            failures.append(f"the refusal does not say why: {message}")
    if not torch.equal(pooled, torch.ones(1 << 20, device="cuda")):
        failures.append("the pool's tensor changed")
    del pooled
    del t
    torch.cuda.ipc_collect()
    for f in failures:
        print("FAIL", f)
    print(f"{'ok' if not failures else 'FAIL'} test_torch_ipc")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
