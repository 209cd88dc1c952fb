"""NCCL with two ranks, one process per GPU (issue "Two GPUs"): all-reduce
(float32, sum) and all-gather of 8 MiB and 256 MiB, on libcumem's buffers
against buffers from ncclMemAlloc, in one run. The buffers, each pair
registered with the communicator:
  - ncclMemAlloc, ncclCommRegister (the reference);
  - libcumem's NCCL-qualified virtual resource (Resource.virtual_memory
    with nccl_qualified=True; chunk_size the buffer's size, as
    docs/engines.md advises for registered buffers), ncclCommRegister;
  - a new pool of libcumem's device resource (Resource.device with
    new_pool=True), ncclCommRegister;
  - where NCCL has windows (ncclCommWindowRegister, NCCL 2.27+): ncclMemAlloc
    and the virtual resource's buffers registered as windows
    (NCCL_WIN_COLL_SYMMETRIC: both ranks use offset 0).
Bandwidth is the algorithm's bytes over the time (the all-reduce's buffer
size, the all-gather's gathered size), GPU time between two events after a
one-float all-reduce that lines the ranks up, the slower rank's time per
repetition, median of REPS after WARMUP. Every method's result is checked:
the all-reduce's sum is 1 + 2 = 3.0 in every float, the all-gather holds 10.0
then 20.0. Prints a table and libcumem's bandwidth over ncclMemAlloc's for
each size (the issue's goal: >= 0.98).

Each rank is a process of its own (multiprocessing, spawn), on the GPU of
its rank; rank 0 makes the ncclUniqueId and passes it to rank 1 through a
pipe. NCCL_NVLS_ENABLE=0 is set before NCCL loads: no NVLink multicast,
ever. NCCL is loaded with ctypes from $CUMEM_LIBNCCL, else the nvidia-nccl
package's lib/libnccl.so.2, else torch's lib/libnccl.so.2 (both found
without importing them), else libnccl.so.2 from the loader's path.

Usage, from the repository root on a machine with two GPUs (nvidia-h200-x2):
  CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python \\
    /opt/torch/.venv/bin/python3 bench/python/bench_nccl_two_ranks.py
Exits 77 with fewer than two GPUs or without NCCL, 1 when a result is wrong
or a call fails."""
import ctypes
import importlib.util
import multiprocessing
import os
import statistics
import struct
import sys
import time
import traceback

os.environ["NCCL_NVLS_ENABLE"] = "0"  # before any NCCL loads, here and in the ranks

SKIP = 77
RANKS = 2
MiB = 1 << 20
SIZES = (8 * MiB, 256 * MiB)
WARMUP = 3
REPS = 20
GOAL = 0.98

ncclFloat32 = 7
ncclSum = 0
NCCL_WIN_COLL_SYMMETRIC = 0x01
WINDOWS_SINCE = 22700  # NCCL 2.27.0, as ncclGetVersion codes it
# Each libcumem kind against the ncclMemAlloc kind registered the same way.
REFERENCE = {"libcumem virtual, registered": "ncclMemAlloc, registered",
             "libcumem pool, registered": "ncclMemAlloc, registered",
             "libcumem virtual, window": "ncclMemAlloc, window"}


# ---- NCCL through ctypes ---------------------------------------------------

class ncclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def nccl_candidates():
    """Where libnccl.so.2 is looked for, in order."""
    out = []
    named = os.environ.get("CUMEM_LIBNCCL")
    if named:
        out.append(named)
    for package, sub in (("nvidia.nccl", "lib"), ("torch", "lib")):
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        for d in (spec.submodule_search_locations or []) if spec else []:
            out.append(os.path.join(d, sub, "libnccl.so.2"))
    out.append("libnccl.so.2")
    return out


def load_nccl():
    """(the library, its path), or raises OSError saying where it looked."""
    tried = []
    for path in nccl_candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        declare(lib, path)
        return lib, path
    raise OSError("no NCCL: looked in " + "; ".join(tried) +
                  " (set CUMEM_LIBNCCL to a libnccl.so.2, or install nvidia-nccl)")


def declare(lib, path):
    """The C signatures of the calls used (nccl.h); OSError where one is missing."""
    V, P, I, S = ctypes.c_void_p, ctypes.POINTER, ctypes.c_int, ctypes.c_size_t
    R = ctypes.c_int  # ncclResult_t
    for name, res, args in (
        ("ncclGetVersion", R, [P(I)]),
        ("ncclGetUniqueId", R, [P(ncclUniqueId)]),
        ("ncclCommInitRank", R, [P(V), I, ncclUniqueId, I]),
        ("ncclCommCuDevice", R, [V, P(I)]),
        ("ncclCommFinalize", R, [V]),
        ("ncclCommDestroy", R, [V]),
        ("ncclGetErrorString", ctypes.c_char_p, [R]),
        ("ncclGetLastError", ctypes.c_char_p, [V]),
        # ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream)
        ("ncclAllReduce", R, [V, V, S, I, I, V, V]),
        # ncclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream)
        ("ncclAllGather", R, [V, V, S, I, V, V]),
        ("ncclCommRegister", R, [V, V, S, P(V)]),
        ("ncclCommDeregister", R, [V, V]),
        ("ncclMemAlloc", R, [P(V), S]),
        ("ncclMemFree", R, [V]),
    ):
        if not hasattr(lib, name):
            raise OSError(f"{path} has no {name} (ncclCommRegister and ncclMemAlloc need NCCL 2.19+)")
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    if hasattr(lib, "ncclCommWindowRegister") and hasattr(lib, "ncclCommWindowDeregister"):
        lib.ncclCommWindowRegister.restype = R
        lib.ncclCommWindowRegister.argtypes = [V, V, S, P(V), I]
        lib.ncclCommWindowDeregister.restype = R
        lib.ncclCommWindowDeregister.argtypes = [V, V]


def nccl_version(lib):
    v = ctypes.c_int()
    lib.ncclGetVersion(ctypes.byref(v))
    return v.value


def has_windows(lib):
    return hasattr(lib, "ncclCommWindowRegister") and nccl_version(lib) >= WINDOWS_SINCE


class Nccl:
    def __init__(self, lib):
        self.lib = lib
        self.comm = ctypes.c_void_p()

    def check(self, result, what):
        if result != 0:
            detail = self.lib.ncclGetErrorString(result).decode(errors="replace")
            last = self.lib.ncclGetLastError(self.comm).decode(errors="replace") if self.comm else ""
            raise RuntimeError(f"{what}: NCCL error {result} ({detail}){': ' + last if last else ''}")


def float_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def first_difference(got, want):
    """The byte offset where two equal-length byte strings first differ."""
    step = MiB
    if len(got) != len(want):
        return 0
    for start in range(0, len(want), step):
        if got[start:start + step] != want[start:start + step]:
            for i in range(start, min(start + step, len(want)), 4):
                if got[i:i + 4] != want[i:i + 4]:
                    return i
    return -1


# ---- One rank ----------------------------------------------------------------

class Kind:
    """A pair of buffers (send, recv) of one size and how they were registered."""

    def __init__(self, name):
        self.name = name
        self.send = self.recv = None      # cumem.Buffer (ncclMemAlloc's wrapped)
        self.raw = []                     # ncclMemAlloc pointers, freed at the end
        self.resource = None
        self.handles = []                 # ncclCommRegister handles
        self.windows = []                 # ncclCommWindowRegister windows


def make_kind(name, nccl, size, stream, rank, cumem):
    """Allocates the pair; registration is separate (it must agree across ranks)."""
    k = Kind(name)
    if name.startswith("ncclMemAlloc"):
        pair = []
        for _ in range(2):
            p = ctypes.c_void_p()
            nccl.check(nccl.lib.ncclMemAlloc(ctypes.byref(p), size), f"ncclMemAlloc({size})")
            k.raw.append(p.value)
            pair.append(cumem.Buffer.wrap(p.value, size))
        k.send, k.recv = pair
    elif name.startswith("libcumem virtual"):
        k.resource = cumem.Resource.virtual_memory(rank, nccl_qualified=True, chunk_size=size)
        k.send, k.recv = k.resource.allocate(size, stream), k.resource.allocate(size, stream)
    else:
        k.resource = cumem.Resource.device(rank, new_pool=True)
        k.send, k.recv = k.resource.allocate(size, stream), k.resource.allocate(size, stream)
    stream.synchronize()
    return k


def register(k, nccl, size):
    """Registers both buffers; returns "" or why it could not."""
    try:
        for b in (k.send, k.recv):
            if k.name.endswith("window"):
                w = ctypes.c_void_p()
                nccl.check(nccl.lib.ncclCommWindowRegister(nccl.comm, b.ptr, size, ctypes.byref(w),
                                                           NCCL_WIN_COLL_SYMMETRIC),
                           f"ncclCommWindowRegister of {k.name}")
                k.windows.append(w.value)
            else:
                h = ctypes.c_void_p()
                nccl.check(nccl.lib.ncclCommRegister(nccl.comm, b.ptr, size, ctypes.byref(h)),
                           f"ncclCommRegister of {k.name}")
                k.handles.append(h.value)
        return ""
    except RuntimeError as e:
        return str(e)


def release(k, nccl):
    for h in k.handles:
        nccl.check(nccl.lib.ncclCommDeregister(nccl.comm, h), f"ncclCommDeregister of {k.name}")
    for w in k.windows:
        nccl.check(nccl.lib.ncclCommWindowDeregister(nccl.comm, w),
                   f"ncclCommWindowDeregister of {k.name}")
    for b in (k.send, k.recv):
        if b is not None:
            b.release()
    for p in k.raw:
        nccl.check(nccl.lib.ncclMemFree(p), f"ncclMemFree of {k.name}")
    if k.resource is not None:
        k.resource.release()


def rank_main(rank, peer, report):
    """One rank: its results (or its error) go to `report`."""
    try:
        report.send(run_rank(rank, peer))
    except Exception:  # noqa: BLE001 - the parent prints it
        report.send({"error": f"rank {rank}:\n{traceback.format_exc()}"})
        sys.exit(1)


def run_rank(rank, peer):
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    import cumem
    lib, _ = load_nccl()
    nccl = Nccl(lib)
    device = cumem.Device(rank)
    device.set_current()  # NCCL's device is the current one (cudaGetDevice)
    uid = ncclUniqueId()
    if rank == 0:
        nccl.check(lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        peer.send_bytes(ctypes.string_at(ctypes.addressof(uid), ctypes.sizeof(uid)))
    else:
        ctypes.memmove(ctypes.byref(uid), peer.recv_bytes(), ctypes.sizeof(uid))
    nccl.check(lib.ncclCommInitRank(ctypes.byref(nccl.comm), RANKS, uid, rank), "ncclCommInitRank")
    cu = ctypes.c_int(-1)
    nccl.check(lib.ncclCommCuDevice(nccl.comm, ctypes.byref(cu)), "ncclCommCuDevice")
    if cu.value != rank:
        raise RuntimeError(f"rank {rank}'s communicator is on device {cu.value}, not {rank}: "
                           "the current device was not the rank's when ncclCommInitRank ran")
    stream = cumem.Stream(device)
    native = ctypes.c_void_p(stream.native)
    e0 = device.create_event(enable_timing=True)
    e1 = device.create_event(enable_timing=True)
    line_up = cumem.Resource.device(rank).allocate(4, stream)
    line_up.fill(0, 4, stream)  # its sums stay 0

    def barrier():
        nccl.check(lib.ncclAllReduce(line_up.ptr, line_up.ptr, 1, ncclFloat32, ncclSum, nccl.comm,
                                     native), "the lining-up all-reduce")

    names = ["ncclMemAlloc, registered", "libcumem virtual, registered", "libcumem pool, registered"]
    if has_windows(lib):
        names += ["ncclMemAlloc, window", "libcumem virtual, window"]
    times = {}     # "collective|size|kind" -> [ms per repetition]
    refused = {}   # kind -> why, at the first size it was refused
    wrong = []
    for size in SIZES:
        kinds = []
        for name in names:
            if name in refused:
                continue
            k = make_kind(name, nccl, size, stream, rank, cumem)
            why = register(k, nccl, size)
            # Both ranks use a kind only if both registered it (mixing
            # registered and unregistered buffers across ranks is undefined).
            peer.send(why)
            theirs = peer.recv()
            if why or theirs:
                refused[name] = why or f"refused on the other rank: {theirs}"
                release(k, nccl)
                continue
            kinds.append(k)
        count = size // 4
        for collective, value, want in (
            ("all_reduce", float(rank + 1), struct.pack("<f", 3.0) * count),
            ("all_gather", 10.0 * (rank + 1),
             struct.pack("<f", 10.0) * (count // 2) + struct.pack("<f", 20.0) * (count // 2)),
        ):
            for k in kinds:
                k.send.fill(float_bits(value), 4, stream)
                k.recv.fill(0, 4, stream)
            stream.synchronize()

            def run(k):
                if collective == "all_reduce":
                    r = lib.ncclAllReduce(k.send.ptr, k.recv.ptr, count, ncclFloat32, ncclSum,
                                          nccl.comm, native)
                else:  # each rank sends half the size; recv gathers both halves
                    r = lib.ncclAllGather(k.send.ptr, k.recv.ptr, count // RANKS, ncclFloat32,
                                          nccl.comm, native)
                nccl.check(r, f"{collective} of {size >> 20} MiB on {k.name}")

            for rep in range(WARMUP + REPS):
                for k in kinds:  # interleaved, so that drift touches every kind alike
                    barrier()
                    e0.record(stream)
                    run(k)
                    e1.record(stream)
                    e1.synchronize()
                    if rep >= WARMUP:
                        times.setdefault(f"{collective}|{size}|{k.name}", []).append(e0.elapsed_ms(e1))
            for k in kinds:
                got = k.recv.read(stream=stream)
                if got != want:
                    at = first_difference(got, want)
                    found = struct.unpack("<f", got[at:at + 4])[0]
                    expected = struct.unpack("<f", want[at:at + 4])[0]
                    wrong.append(f"rank {rank}: {collective} of {size >> 20} MiB on {k.name}: "
                                 f"float {at // 4} is {found}, not {expected}")
        for k in kinds:
            release(k, nccl)
    line_up.release()
    stream.synchronize()
    nccl.check(lib.ncclCommFinalize(nccl.comm), "ncclCommFinalize")
    nccl.check(lib.ncclCommDestroy(nccl.comm), "ncclCommDestroy")
    return {"times": times, "refused": refused, "wrong": wrong, "names": names}


# ---- The parent ----------------------------------------------------------------

def run_ranks():
    """Both ranks; their results, or exits 1 with what failed."""
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: no CUDA state inherited
    a, b = ctx.Pipe()  # rank 0 <-> rank 1: the unique id, who registered what
    reports = [ctx.Pipe(duplex=False) for _ in range(RANKS)]
    procs = [ctx.Process(target=rank_main, args=(r, a if r == 0 else b, reports[r][1]))
             for r in range(RANKS)]
    for p in procs:
        p.start()
    results = [None] * RANKS
    deadline = time.monotonic() + 900
    while any(r is None for r in results) and time.monotonic() < deadline:
        for r in range(RANKS):
            if results[r] is None and reports[r][0].poll(0.5):
                results[r] = reports[r][0].recv()
                if "error" in results[r]:  # the other rank may wait in a collective forever
                    for p in procs:
                        p.terminate()
                    print(results[r]["error"], file=sys.stderr)
                    sys.exit(1)
        dead = [r for r in range(RANKS) if results[r] is None and not procs[r].is_alive()
                and not reports[r][0].poll(0)]
        if dead:
            for p in procs:
                p.terminate()
            print(f"rank {dead[0]} exited with {procs[dead[0]].exitcode} without a report",
                  file=sys.stderr)
            sys.exit(1)
    for p in procs:
        if any(r is None for r in results):
            p.terminate()
        p.join(30)
    if any(r is None for r in results):
        print("the ranks did not finish within 900 s", file=sys.stderr)
        sys.exit(1)
    return results


def main():
    try:
        import cumem
    except ImportError as e:
        print(f"bench_nccl_two_ranks: cannot import cumem ({e}); run with "
              "PYTHONPATH=bindings/python CUMEM_LIBRARY=build/libcumem.so.1")
        sys.exit(1)
    try:
        count = cumem.device_count()
    except cumem.CumemError as e:
        print(f"skipped: no GPU ({e})")
        sys.exit(SKIP)
    if count < RANKS:
        print(f"skipped: NCCL with two ranks needs two GPUs; this machine has {count}")
        sys.exit(SKIP)
    try:
        lib, path = load_nccl()
    except OSError as e:
        print(f"skipped: {e}")
        sys.exit(SKIP)
    version = nccl_version(lib)
    print(f"NCCL {version} from {path}; NCCL_NVLS_ENABLE=0; {RANKS} ranks on devices 0 and 1; "
          f"windows: {'yes' if has_windows(lib) else 'no (NCCL before 2.27)'}")
    results = run_ranks()
    names = results[0]["names"]
    failures = 0
    for r in results:
        for line in r["wrong"]:
            print(f"WRONG {line}")
            failures += 1
    for name, why in sorted(results[0]["refused"].items()):
        print(f"not measured: {name}: {why}")
    print(f"\nalgorithm bandwidth (bytes / time), GB/s: the slower rank per repetition, median of "
          f"{REPS}; ratio: libcumem / ncclMemAlloc (goal >= {GOAL})")
    print(f"{'collective':<11} {'size':>8}  {'buffers':<30} {'GB/s':>8}  {'ratio':>6}")
    ratios = []
    for collective in ("all_reduce", "all_gather"):
        for size in SIZES:
            bandwidth = {}
            for name in names:
                key = f"{collective}|{size}|{name}"
                if key not in results[0]["times"]:
                    continue
                slower = [max(t) for t in zip(*(r["times"][key] for r in results))]
                bandwidth[name] = size / (statistics.median(slower) * 1e-3) / 1e9
            for name, gbps in bandwidth.items():
                reference = REFERENCE.get(name)
                ratio = ""
                if reference in bandwidth:
                    q = gbps / bandwidth[reference]
                    ratios.append(q)
                    ratio = f"{q:6.3f}" + ("" if q >= GOAL else "  (below the goal)")
                print(f"{collective:<11} {size >> 20:>4} MiB  {name:<30} {gbps:8.1f}  {ratio}")
    if ratios:
        print(f"\nlibcumem / ncclMemAlloc: lowest {min(ratios):.3f}, "
              f"{sum(q >= GOAL for q in ratios)} of {len(ratios)} at or above {GOAL}")
    print("results: " + ("every sum and gather as expected" if not failures
                         else f"{failures} WRONG"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
