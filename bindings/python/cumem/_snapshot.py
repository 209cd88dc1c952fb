"""Seeing the memory from Python (standard library only): the memory history
(PyTorch's _record_memory_history), snapshots as dicts (libcumem's JSON,
schema "cumem.snapshot" version 1, docs/snapshot-schema.md), the same in
PyTorch's snapshot format (torch.cuda.memory._snapshot(), for
pytorch.org/memory_viz and torch.cuda._memory_viz), statistics as JSON and
the process's summary (torch.cuda.memory_summary())."""
import ctypes
import json
import pickle

from . import _check
from ._lib import lib, status_t

_V = ctypes.c_void_p


class MemoryHistoryOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("stacks", ctypes.c_uint32),
                ("max_entries", ctypes.c_uint64)]


for _name, _args in [
    ("cumem_memory_history_start", [ctypes.POINTER(MemoryHistoryOptions)]),
    ("cumem_memory_history_stop", []),
    ("cumem_snapshot_take", [_V, ctypes.POINTER(_V)]),
    ("cumem_snapshot_release", [_V]),
    ("cumem_snapshot_to_json", [_V, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)]),
    ("cumem_snapshot_write_json", [_V, ctypes.c_char_p]),
    ("cumem_resource_statistics_json", [_V, ctypes.c_char_p, ctypes.c_size_t,
                                        ctypes.POINTER(ctypes.c_size_t)]),
    ("cumem_memory_summary", [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
]:
    _fn = getattr(lib, _name)
    _fn.restype = status_t
    _fn.argtypes = _args


def _handle(resource):
    return None if resource is None else resource.handle


def record_memory_history(enabled=True, stacks=False, max_entries=0):
    """Turns the memory history on (emptied) or, with enabled False or None,
    off. stacks: record each event's native call stack; max_entries: the
    events kept (the newest; 0: 65536)."""
    if enabled is None or enabled is False:
        _check(lib.cumem_memory_history_stop())
        return
    o = MemoryHistoryOptions(ctypes.sizeof(MemoryHistoryOptions), 1 if stacks else 0,
                             int(max_entries))
    _check(lib.cumem_memory_history_start(ctypes.byref(o)))


def _take(resource):
    s = _V()
    _check(lib.cumem_snapshot_take(_handle(resource), ctypes.byref(s)))
    return s


def memory_snapshot(resource=None):
    """A snapshot of `resource` and its upstreams (None: every live resource)
    as a dict of libcumem's JSON."""
    s = _take(resource)
    try:
        text = ctypes.c_char_p()
        n = ctypes.c_size_t()
        _check(lib.cumem_snapshot_to_json(s, ctypes.byref(text), ctypes.byref(n)))
        return json.loads(ctypes.string_at(text, n.value).decode("utf-8"))
    finally:
        lib.cumem_snapshot_release(s)


def dump_snapshot(path, resource=None):
    """Writes a snapshot's JSON to `path` (for `cumem snapshot view`)."""
    s = _take(resource)
    try:
        _check(lib.cumem_snapshot_write_json(s, str(path).encode()))
    finally:
        lib.cumem_snapshot_release(s)


def _text(call):
    n = ctypes.c_size_t()
    _check(call(None, 0, ctypes.byref(n)))
    while True:
        buffer = ctypes.create_string_buffer(n.value + 1)
        _check(call(buffer, len(buffer), ctypes.byref(n)))
        if n.value < len(buffer):
            return buffer.value.decode("utf-8", "replace")


def statistics_json(resource=None):
    """The statistics of `resource` and its upstreams (None: every live
    resource) as a dict (schema "cumem.statistics")."""
    h = _handle(resource)
    return json.loads(_text(lambda b, c, n: lib.cumem_resource_statistics_json(h, b, c, n)))


def memory_summary():
    """The process's memory as text, as torch.cuda.memory_summary()."""
    return _text(lib.cumem_memory_summary)


# PyTorch's snapshot format -------------------------------------------------

def _frames(snapshot):
    """Stack id -> frames as PyTorch writes them (filename, line, name)."""
    out = {}
    for s in snapshot.get("stacks", []):
        frames = []
        for f in s["frames"]:
            name = f["function"] or "0x%x" % f["offset"]
            if f["function"] and f["offset"]:
                name = "%s+0x%x" % (f["function"], f["offset"])
            frames.append({"filename": f["module"] or "??", "line": 0, "name": name})
        out[s["id"]] = frames
    return out


def to_pytorch(snapshot):
    """A libcumem snapshot (the dict of memory_snapshot()) in the format of
    torch.cuda.memory._snapshot(): {"segments": [...], "device_traces":
    [[...], ...]}, which pytorch.org/memory_viz and torch.cuda._memory_viz
    read. Devices keep their ordinals; host memory comes after the last
    device. A segment is a run of mapped blocks (an expandable range or a
    virtual one splits at its unmapped address space); cached blocks are
    "inactive". The trace holds the allocations and frees of the resources
    at the top of each stack, the segments of caching adaptors as they were
    mapped and given back, and, for stacks without a cache (each allocation
    its own segment), a segment_alloc and segment_free around each one."""
    resources = {r["id"]: r for r in snapshot["resources"]}
    upstreams = {r["upstream"] for r in resources.values() if r["upstream"] is not None}
    top = [r for r in resources.values() if r["id"] not in upstreams]
    devices = [r["device"] for r in resources.values() if r["device"] >= 0]
    host_index = (max(devices) + 1) if devices else 0

    def device_of(resource_id):
        d = resources[resource_id]["device"] if resource_id in resources else -1
        return d if d >= 0 else host_index

    frames = _frames(snapshot)
    segments = []
    for seg in snapshot["segments"]:
        run = []

        def flush():
            if not run:
                return
            blocks = []
            for b in run:
                active = b["state"] == "in_use"
                requested = b["requested_size"] if b["requested_size"] is not None else b["size"]
                blocks.append({
                    "address": b["address"], "size": b["size"],
                    "requested_size": requested if active else 0,
                    "state": "active_allocated" if active else "inactive",
                    "frames": frames.get(b["stack"], []) if active else [],
                })
            active = [b for b in blocks if b["state"] == "active_allocated"]
            segments.append({
                "device": device_of(seg["resource"]),
                "address": run[0]["address"],
                "total_size": sum(b["size"] for b in run),
                "allocated_size": sum(b["size"] for b in active),
                "active_size": sum(b["size"] for b in active),
                "requested_size": sum(b["requested_size"] for b in active),
                "stream": seg["stream"],
                "segment_type": "small" if seg["kind"] == "small" else "large",
                "segment_pool_id": (0, 0),
                "is_expandable": seg["kind"] in ("expandable", "virtual_range"),
                "frames": [],
                "blocks": blocks,
            })
            run.clear()

        for b in seg["blocks"]:
            if b["state"] == "unmapped":
                flush()
            else:
                run.append(b)
        flush()

    # Which stacks have a cache (whose segment events are recorded).
    def chain(r):
        while r is not None:
            yield r
            r = resources.get(r["upstream"]) if r["upstream"] is not None else None

    top_ids = {r["id"] for r in top}
    cached = {r["id"] for r in top if any(x["kind"] == "caching" for x in chain(r))}
    traces = [[] for _ in range(host_index + 1)]
    for e in snapshot.get("events", []):
        rid = e["resource"]
        if rid is None or rid not in resources:
            continue
        entry = {"addr": e["address"], "size": e["size"], "stream": e["stream"],
                 "frames": frames.get(e["stack"], []), "time_us": e["time_ns"] // 1000}
        trace = traces[device_of(rid)]
        action = e["action"]
        if action.startswith("segment_"):
            trace.append(dict(entry, action=action))
        elif action == "out_of_memory":
            if rid in top_ids or resources[rid]["kind"] == "caching":
                trace.append(dict(entry, action="oom", device_free=e.get("device_free", 0)))
        elif rid in top_ids and action == "allocate":
            if rid not in cached:
                trace.append(dict(entry, action="segment_alloc"))
            trace.append(dict(entry, action="alloc"))
        elif rid in top_ids and action == "free":
            trace.append(dict(entry, action="free_requested"))
            trace.append(dict(entry, action="free_completed"))
            if rid not in cached:
                trace.append(dict(entry, action="segment_free"))
    return {"segments": segments, "device_traces": traces}


def dump_pytorch_snapshot(path, snapshot=None, resource=None):
    """Writes a snapshot in PyTorch's format (to_pytorch), pickled as
    torch.cuda.memory._dump_snapshot does, for pytorch.org/memory_viz.
    snapshot: a dict of memory_snapshot(), else one is taken of `resource`."""
    data = to_pytorch(snapshot if snapshot is not None else memory_snapshot(resource))
    with open(path, "wb") as f:
        # Protocol 4: what the viewer's own unpickler (MemoryViz.js) reads.
        pickle.dump(data, f, protocol=4)
