"""Dynamic-shape training loop under three PyTorch allocators: PyTorch's
caching allocator, its cudaMallocAsync backend, and libcumem
(CUDAPluggableAllocator over cumem_torch_alloc) with the device resource
(the driver pool) and with the caching adaptor over it
(CUMEM_FRAMEWORK_RESOURCE=caching; its own peak reserved), and the same two
through the extension (_cumem_torch.so, PyTorch's own statistics). A 6-layer MLP, a new batch
size (512..4096 rows) every step, 150 steps; steps/s and peak reserved.

Each backend runs in a process of its own (the allocator is chosen before
PyTorch's first CUDA use). Usage, from the repository root on the GPU machine:
  CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python \\
    /opt/torch/.venv/bin/python3 bench/python/bench_torch_alloc.py
Options: --steps N, --width W, --backend NAME (one backend, in this process).
"""
import argparse
import json
import os
import subprocess
import sys
import time

BACKENDS = ("pytorch-cache", "cudaMallocAsync", "libcumem", "libcumem-caching",
            "libcumem-extension", "libcumem-extension-caching")


def run_one(backend, steps, width):
    if backend.startswith("libcumem"):
        import cumem
        import cumem.torch
        # "libcumem" and "libcumem-caching": CUDAPluggableAllocator; the
        # "-extension" ones: the complete allocator (_cumem_torch.so).
        cumem.torch.use_libcumem_allocator(pluggable="extension" not in backend)
    import torch
    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 10)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(1)
    sizes = torch.randint(512, 4097, (steps + 5,), generator=gen).tolist()
    peak_in_use = 0

    def step(rows):
        x = torch.randn(rows, width, device="cuda")
        y = torch.randint(0, 10, (rows,), device="cuda")
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for rows in sizes[:5]:  # warm-up
        step(rows)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for rows in sizes[5:]:
        step(rows)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    result = {"backend": backend, "steps_per_s": steps / elapsed}
    if backend.startswith("libcumem-extension"):
        result["peak_reserved"] = torch.cuda.max_memory_reserved()
        result["peak_in_use"] = torch.cuda.max_memory_allocated()
    elif backend == "libcumem-caching":
        import cumem
        r = cumem.framework_resource(0)
        result["peak_in_use"] = r.statistics()["peak_bytes_in_use"]
        result["peak_reserved"] = r.caching_statistics()["peak_bytes_reserved"]
    elif backend == "libcumem":
        import cumem
        r = cumem.framework_resource(0)
        s = r.statistics()
        peak_in_use = s["peak_bytes_in_use"]
        props = r.properties()
        reserved = None
        if props.get("is_pool"):
            # The default pool's high-water mark of reserved memory.
            import ctypes
            from cumem._lib import lib

            class PoolAttrs(ctypes.Structure):
                _fields_ = [("struct_size", ctypes.c_uint32)] + [
                    (n, ctypes.c_uint32) for n in ("a", "b", "c")] + [
                    (n, ctypes.c_uint64) for n in ("release_threshold", "reserved_current",
                                                   "reserved_high", "used_current", "used_high")]
            a = PoolAttrs(ctypes.sizeof(PoolAttrs))
            lib.cumem_resource_pool_get_attributes.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            if lib.cumem_resource_pool_get_attributes(r.handle, ctypes.byref(a)) == 0:
                reserved = a.reserved_high
        result["peak_reserved"] = reserved
        result["peak_in_use"] = peak_in_use
    else:
        result["peak_reserved"] = torch.cuda.max_memory_reserved()
        result["peak_in_use"] = torch.cuda.max_memory_allocated()
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--backend", choices=BACKENDS)
    args = ap.parse_args()
    if args.backend:
        print(json.dumps(run_one(args.backend, args.steps, args.width)))
        return
    rows = []
    for backend in BACKENDS:
        env = dict(os.environ)
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        if backend == "cudaMallocAsync":
            env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
        env["CUMEM_FRAMEWORK_RESOURCE"] = "caching" if backend.endswith("caching") else "device"
        out = subprocess.run([sys.executable, __file__, "--backend", backend, "--steps",
                              str(args.steps), "--width", str(args.width)],
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{backend}: failed\n{out.stderr[-2000:]}")
            continue
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    gib = 1 << 30
    print(f"| backend | steps/s | peak reserved (GiB) | peak in use (GiB) |")
    print(f"|---|---|---|---|")
    for r in rows:
        res = "n/a" if r["peak_reserved"] is None else f"{r['peak_reserved'] / gib:.2f}"
        print(f"| {r['backend']} | {r['steps_per_s']:.1f} | {res} | {r['peak_in_use'] / gib:.2f} |")


if __name__ == "__main__":
    main()
