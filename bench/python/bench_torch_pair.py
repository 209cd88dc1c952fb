"""What one PyTorch allocation costs from Python: `torch.empty` of a 64 KiB
tensor and its `del`, in a loop, under each allocator (issue "A complete
PyTorch allocator": the extension should beat PyTorch's own cache here).
Backends: PyTorch's caching allocator (plain and with expandable segments),
its cudaMallocAsync backend, libcumem through CUDAPluggableAllocator
(cumem_torch_alloc/free) and through the extension (_cumem_torch.so), each
over the device resource, the caching adaptor and the expandable cache (the
framework default). Each backend runs in a process of its own; the best of 5 runs of
200,000 pairs, in ns per pair. Beside it, the allocator's own share:
`torch.cuda.caching_allocator_alloc` + `caching_allocator_delete` of the
same size on the current stream (the allocator's raw_alloc_with_stream and
raw_delete, without a tensor or a storage around them). Usage, from the repository root on the GPU
machine:
  CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python \\
    CUMEM_TORCH_EXTENSION=build/bindings/python/torch_extension/_cumem_torch.so \\
    /opt/torch/.venv/bin/python3 bench/python/bench_torch_pair.py
Options: --pairs N, --bytes B, --backend NAME (one backend, in this process)."""
import argparse
import json
import os
import subprocess
import sys
import time

BACKENDS = ("pytorch-cache", "pytorch-expandable", "cudaMallocAsync", "pluggable-device",
            "pluggable-caching", "pluggable-expandable", "extension-device", "extension-caching",
            "extension-expandable")


def run_one(backend, pairs, nbytes):
    if backend.startswith(("pluggable", "extension")):
        import cumem.torch
        got = cumem.torch.use_libcumem_allocator(pluggable=backend.startswith("pluggable"))
        if backend.startswith("extension") and got != "extension":
            raise SystemExit("the extension is not installed")
    import torch
    torch.cuda.init()
    n = nbytes // 4
    for _ in range(1000):  # warm-up: the first blocks, the streams
        x = torch.empty(n, device="cuda")
        del x
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(pairs):
            x = torch.empty(n, device="cuda")
            del x
        best = min(best, (time.perf_counter_ns() - t0) / pairs)
    stream = torch.cuda.current_stream().cuda_stream
    alloc, delete = torch.cuda.caching_allocator_alloc, torch.cuda.caching_allocator_delete
    best_raw = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(pairs):
            delete(alloc(nbytes, None, stream))
        best_raw = min(best_raw, (time.perf_counter_ns() - t0) / pairs)
    torch.cuda.synchronize()
    return {"backend": backend, "ns_per_pair": best, "ns_per_raw_pair": best_raw}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=200_000)
    ap.add_argument("--bytes", type=int, default=64 << 10)
    ap.add_argument("--backend", choices=BACKENDS)
    a = ap.parse_args()
    if a.backend:
        print(json.dumps(run_one(a.backend, a.pairs, a.bytes)))
        return
    print(f"| backend | ns per torch.empty({a.bytes} B) + del | ns per caching_allocator_alloc + delete |")
    print("|---|---|---|")
    for backend in BACKENDS:
        env = dict(os.environ)
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        if backend == "cudaMallocAsync":
            env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
        if backend == "pytorch-expandable":
            env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        # The libcumem backends name their framework resource; *-expandable
        # is the default one (nothing configured).
        env.pop("CUMEM_ALLOC_CONF", None)
        env.pop("CUMEM_FRAMEWORK_RESOURCE", None)
        if backend.startswith(("pluggable", "extension")):
            env["CUMEM_FRAMEWORK_RESOURCE"] = backend.rsplit("-", 1)[1]
        out = subprocess.run([sys.executable, __file__, "--backend", backend, "--pairs",
                              str(a.pairs), "--bytes", str(a.bytes)],
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"| {backend} | failed: {out.stderr.strip().splitlines()[-1:]} |")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {backend} | {r['ns_per_pair']:.0f} | {r['ns_per_raw_pair']:.0f} |")


if __name__ == "__main__":
    main()
