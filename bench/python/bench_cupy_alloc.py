"""A CuPy computation with changing shapes under CuPy's memory pool, CuPy's
cudaMallocAsync pool (MemoryAsyncPool) and libcumem (CFunctionAllocator
over cumem_cupy_malloc): iterations/s and peak memory. One process per
backend. Usage, on the GPU machine, from the repository root:
  CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python \\
    /opt/torch/.venv/bin/python3 bench/python/bench_cupy_alloc.py
"""
import argparse
import json
import os
import subprocess
import sys
import time

BACKENDS = ("cupy-pool", "cupy-async", "libcumem", "libcumem-caching")


def run_one(backend, iters):
    import cupy
    resource = None
    if backend.startswith("libcumem"):
        import cumem
        import cumem.cupy
        resource = cumem.Resource.device(0)
        if backend == "libcumem-caching":
            resource = cumem.Resource.caching(resource)
        cumem.cupy.use_libcumem_allocator(resource)
    elif backend == "cupy-async":
        cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)
    rng = cupy.random.default_rng(0)
    sizes = [int(s) for s in cupy.random.default_rng(1).integers(512, 4097, iters + 5).get()]

    def work(n):
        a = rng.standard_normal((n, 1024), dtype=cupy.float32)
        b = cupy.tanh(a @ (a.T @ a)) * 2.0 + a  # (n, 1024), n new every step
        return float(b.sum())

    for n in sizes[:5]:
        work(n)
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for n in sizes[5:]:
        work(n)
    cupy.cuda.Device().synchronize()
    elapsed = time.perf_counter() - t0
    if backend == "libcumem-caching":
        peak = resource.statistics()["peak_bytes_in_use"]
        reserved = resource.caching_statistics()["bytes_reserved"]
    elif backend == "libcumem":
        peak = resource.statistics()["peak_bytes_in_use"]
        reserved = None
    elif backend == "cupy-pool":
        pool = cupy.get_default_memory_pool()
        peak, reserved = None, pool.total_bytes()  # CuPy keeps no peak
    else:
        peak, reserved = None, None
    return {"backend": backend, "iters_per_s": iters / elapsed, "peak_in_use": peak,
            "reserved_at_end": reserved}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=150)
    ap.add_argument("--backend", choices=BACKENDS)
    args = ap.parse_args()
    if args.backend:
        print(json.dumps(run_one(args.backend, args.iters)))
        return
    gib = 1 << 30
    fmt = lambda v: "n/a" if v is None else f"{v / gib:.2f}"  # noqa: E731
    print("| backend | iterations/s | peak in use (GiB) | reserved at end (GiB) |")
    print("|---|---|---|---|")
    for backend in BACKENDS:
        out = subprocess.run([sys.executable, __file__, "--backend", backend, "--iters",
                              str(args.iters)], env=dict(os.environ), capture_output=True, text=True)
        if out.returncode != 0:
            print(f"| {backend} | failed: {out.stderr.strip().splitlines()[-1:]} | | |")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {backend} | {r['iters_per_s']:.1f} | {fmt(r['peak_in_use'])} | "
              f"{fmt(r['reserved_at_end'])} |")


if __name__ == "__main__":
    main()
