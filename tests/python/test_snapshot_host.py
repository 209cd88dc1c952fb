"""Seeing the memory from Python, on the host resource and a caching
adaptor over it (no GPU, no torch): snapshots as dicts of libcumem's JSON,
the history, statistics as JSON, the summary, and PyTorch's snapshot
format, checked as pytorch.org/memory_viz reads it (its unpickler's
opcodes, its walk back through the trace, _memory_viz.segsum's sums).
Run by meson (suite host) with the system python3."""
import io
import json
import os
import pickle
import pickletools
import random
import sys
import tempfile
import unittest

import cumem

MiB = 1 << 20

# The opcodes of MemoryViz.js's unpickler (torch/utils/viz/MemoryViz.js).
VIEWER_OPCODES = {
    "APPENDS", "BINGET", "BININT", "BININT1", "BININT2", "EMPTY_DICT", "EMPTY_LIST", "FRAME",
    "LONG1", "LONG_BINGET", "MARK", "MEMOIZE", "PROTO", "SETITEMS", "SHORT_BINUNICODE", "STOP",
    "TUPLE2", "APPEND", "NEWFALSE", "BINPUT", "BINUNICODE", "EMPTY_TUPLE", "NEWTRUE", "NONE",
    "BINFLOAT", "TUPLE", "TUPLE1", "TUPLE3", "LONG_BINPUT", "LIST", "DICT", "SETITEM"}


def workload(resource, steps=300, seed=5):
    """Random allocations and frees; returns the buffers still alive."""
    rng = random.Random(seed)
    live = []
    for _ in range(steps):
        if live and rng.random() < 0.45:
            live.pop(rng.randrange(len(live))).close()
        else:
            live.append(resource.allocate(rng.choice([300, 4096, 70000, MiB, 3 * MiB, 7 * MiB + 5])))
    return live


def check_viewer_walk(test, data, device):
    """MemoryViz's "Allocator State History": from the segments at the end,
    walk the device's trace back; every block alive at a step must lie in a
    segment alive then (the viewer looks each one up and fails otherwise)."""
    segments = [(s["address"], s["total_size"]) for s in data["segments"] if s["device"] == device]
    blocks = {}
    for s in data["segments"]:
        if s["device"] != device:
            continue
        at = s["address"]
        for b in s["blocks"]:
            test.assertEqual(b["address"], at, "blocks lie end to end")
            if b["state"] == "active_allocated":
                blocks[at] = b["size"]
            at += b["size"]
        test.assertEqual(at, s["address"] + s["total_size"])
    trace = data["device_traces"][device]
    # The viewer folds free_requested + free_completed into one "free".
    events = []
    for e in trace:
        if e["action"] == "free_completed" and events and events[-1]["action"] == "free_requested" \
                and events[-1]["addr"] == e["addr"]:
            events[-1] = dict(events[-1], action="free")
            continue
        events.append(e)

    def inside(addr):
        return any(a <= addr < a + n for a, n in segments)

    for e in reversed(events):
        a = e["action"]
        if a in ("free", "free_completed"):
            blocks[e["addr"]] = e["size"]
        elif a == "alloc":
            blocks.pop(e["addr"], None)
        elif a == "segment_free":
            segments.append((e["addr"], e["size"]))
        elif a == "segment_alloc":
            segments.remove((e["addr"], e["size"]))
        for addr in blocks:
            test.assertTrue(inside(addr), f"block {addr:#x} outside every segment before {a}")


class SnapshotPython(unittest.TestCase):
    def tearDown(self):
        cumem.record_memory_history(None)

    def test_snapshot_dict_adds_up(self):
        host = cumem.Resource.host()
        cache = cumem.Resource.caching(host)
        cumem.record_memory_history(stacks=True, max_entries=100000)
        live = workload(cache)
        s = cumem.memory_snapshot(cache)
        self.assertEqual(s["schema"], "cumem.snapshot")
        self.assertEqual(s["version"], 1)
        self.assertEqual(s["scope"], "stack")
        self.assertEqual([r["kind"] for r in s["resources"]], ["caching", "host"])
        caching = s["resources"][0]
        self.assertEqual(caching["caching"]["bytes_reserved"], s["totals"]["bytes_reserved"])
        self.assertEqual(caching["statistics"]["bytes_in_use"], sum(b.size for b in live))
        self.assertEqual(s["totals"]["bytes_requested"], sum(b.size for b in live))
        self.assertTrue(s["history"]["recording"] and s["history"]["stacks"])
        self.assertEqual(len(s["events"]), s["history"]["recorded"])
        stacks = {st["id"]: st["frames"] for st in s["stacks"]}
        blocks = [b for seg in s["segments"] for b in seg["blocks"]]
        self.assertEqual(len(blocks), s["totals"]["blocks"])
        by_address = {b["address"]: b for b in blocks}
        for buffer in live:
            b = by_address[buffer.ptr]
            self.assertEqual(b["state"], "in_use")
            self.assertEqual(b["requested_size"], buffer.size)
            self.assertEqual(stacks[b["stack"]][0]["function"], "cumem_resource_allocate")
        for b in live:
            b.close()

    def test_dump_snapshot_and_statistics(self):
        host = cumem.Resource.host()
        cache = cumem.Resource.caching(host)
        b = cache.allocate(MiB)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.json")
            cumem.dump_snapshot(path, cache)
            with open(path) as f:
                self.assertEqual(json.load(f)["totals"]["bytes_reserved"], 20 * MiB)
        stats = cumem.statistics_json(cache)
        self.assertEqual(stats["schema"], "cumem.statistics")
        self.assertEqual(stats["resources"][0]["caching"]["bytes_reserved"], 20 * MiB)
        self.assertEqual(stats["resources"][1]["kind"], "host")
        everything = cumem.statistics_json()
        self.assertEqual(everything["scope"], "process")
        self.assertIn("caching over host resource", cumem.memory_summary())
        b.close()

    def test_pytorch_format_opens_as_the_viewer_reads_it(self):
        host = cumem.Resource.host()
        cache = cumem.Resource.caching(host)
        cumem.record_memory_history(stacks=True, max_entries=100000)
        live = workload(cache, steps=400, seed=9)
        s = cumem.memory_snapshot(cache)
        data = cumem.to_pytorch(s)
        self.assertEqual(sorted(data), ["device_traces", "segments"])
        self.assertEqual(len(data["device_traces"]), 1, "host memory comes after the devices: 0")
        for seg in data["segments"]:
            for key in ("device", "address", "total_size", "allocated_size", "active_size",
                        "requested_size", "stream", "segment_type", "blocks"):
                self.assertIn(key, seg)
            # _memory_viz.segsum's identity: allocated + internal + external = total.
            allocated = sum(b["requested_size"] for b in seg["blocks"] if b["state"] == "active_allocated")
            internal = sum(b["size"] - b["requested_size"] for b in seg["blocks"]
                           if b["state"] == "active_allocated")
            external = sum(b["size"] for b in seg["blocks"] if b["state"] != "active_allocated")
            self.assertEqual(allocated + internal + external, seg["total_size"])
            for b in seg["blocks"]:
                self.assertIn(b["state"], ("active_allocated", "inactive"))
                if b["state"] == "active_allocated":
                    self.assertTrue(b["frames"], "each block in use has its stack")
                    f = b["frames"][0]
                    self.assertEqual(sorted(f), ["filename", "line", "name"])
        actions = {e["action"] for e in data["device_traces"][0]}
        self.assertTrue({"alloc", "free_requested", "free_completed", "segment_alloc"} <= actions, actions)
        check_viewer_walk(self, data, 0)
        # The live blocks in the segments are the buffers.
        active = {b["address"] for seg in data["segments"] for b in seg["blocks"]
                  if b["state"] == "active_allocated"}
        self.assertEqual(active, {b.ptr for b in live})
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.pickle")
            cumem.dump_pytorch_snapshot(path, s)
            raw = open(path, "rb").read()
            self.assertEqual(pickle.loads(raw), data)
            used = {op.name for op, _, _ in pickletools.genops(raw)}
            self.assertTrue(used <= VIEWER_OPCODES, used - VIEWER_OPCODES)
        for b in live:
            b.close()

    def test_pytorch_format_of_a_stack_without_a_cache(self):
        # Each allocation is its own segment: the trace gets a segment_alloc
        # and segment_free around each one, so the viewer finds its segment.
        host = cumem.Resource.host()
        cumem.record_memory_history()
        live = workload(host, steps=200, seed=2)
        data = cumem.to_pytorch(cumem.memory_snapshot(host))
        self.assertEqual(len(data["segments"]), len(live))
        actions = [e["action"] for e in data["device_traces"][0]]
        self.assertEqual(actions.count("segment_alloc"), actions.count("alloc"))
        check_viewer_walk(self, data, 0)
        for b in live:
            b.close()

    def test_out_of_memory_becomes_an_oom_entry(self):
        host = cumem.Resource.host()
        limited = cumem.Resource.limit(host, MiB)
        cumem.record_memory_history()
        with self.assertRaises(cumem.CumemError) as e:
            limited.allocate(2 * MiB)
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_OUT_OF_MEMORY")
        data = cumem.to_pytorch(cumem.memory_snapshot(limited))
        ooms = [t for t in data["device_traces"][0] if t["action"] == "oom"]
        self.assertEqual(len(ooms), 1)
        self.assertEqual(ooms[0]["size"], 2 * MiB)
        self.assertIn("device_free", ooms[0])

    def test_history_off_and_bad_options(self):
        cumem.record_memory_history(False)
        with self.assertRaises(cumem.CumemError) as e:
            cumem.record_memory_history(max_entries=(1 << 26) + 1)
        self.assertIn("max_entries", e.exception.message)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
