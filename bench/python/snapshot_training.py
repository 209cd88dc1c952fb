"""A real snapshot of a training loop, on the GPU machine: issue 18's MLP
(bench_train_mlp.py, at its full size) trained with libcumem as PyTorch's
allocator (the caching adaptor: CUMEM_FRAMEWORK_RESOURCE=caching unless set),
with the memory history on and its stacks. Writes, into OUT:
  training.json    libcumem's snapshot of the process (cumem snapshot view)
  training.pickle  the same in PyTorch's format (pytorch.org/memory_viz)
  memory_viz.txt   what PyTorch's own torch.cuda._memory_viz makes of the
                   pickle (segsum, trace), after trace_plot, segment_plot and
                   the flamegraph inputs were made without an error
Usage (repository root, GPU machine):
  CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python:bench/python \\
    /opt/torch/.venv/bin/python3 bench/python/snapshot_training.py OUT [--steps 6]
Then, where Chromium is (the build machine):
  tools/snapshot_picture.py OUT/training.json docs/snapshot-training.png
"""
import argparse
import os
import pickle
import random
import sys

os.environ.setdefault("CUMEM_FRAMEWORK_RESOURCE", "caching")

import cumem  # noqa: E402
import cumem.torch  # noqa: E402


def main():
    p = argparse.ArgumentParser(description="a snapshot of a training loop")
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=6)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cumem.torch.use_libcumem_allocator()
    import torch
    from torch.cuda import _memory_viz
    from bench_train_mlp import Mlp

    cumem.record_memory_history(stacks=True, max_entries=200000)
    model, step = Mlp.build(torch)
    rng = random.Random(7)
    for _ in range(a.steps):
        step(rng.randint(512, 4096))
    torch.cuda.synchronize()
    # Mid-step: the activations of a forward pass are live in the picture.
    x = torch.randn(3000, 2048, device="cuda")
    y = model(x)
    snapshot = cumem.memory_snapshot()
    with open(os.path.join(a.out, "training.json"), "w") as f:
        import json
        json.dump(snapshot, f)
    path = os.path.join(a.out, "training.pickle")
    cumem.dump_pytorch_snapshot(path, snapshot)
    del y

    # PyTorch's own reader of its format.
    with open(path, "rb") as f:
        data = pickle.load(f)
    report = [_memory_viz.segsum(data), _memory_viz.trace(data)[:20000]]
    for make in (_memory_viz.trace_plot, _memory_viz.segment_plot):
        html = make(data)
        assert "MemoryViz.js" in html and len(html) > 1000, make.__name__
    for flame in (_memory_viz.memory, _memory_viz.segments):
        text = flame(data, format_flamegraph=lambda lines: lines)
        assert text.strip(), flame.__name__
    with open(os.path.join(a.out, "memory_viz.txt"), "w") as f:
        f.write("\n".join(report))
    t = snapshot["totals"]
    print(f"ok: {t['segments']} segments, {t['blocks']} blocks, {len(snapshot['events'])} events; "
          f"{t['bytes_in_use'] >> 20} MiB in use of {t['bytes_reserved'] >> 20} MiB reserved; "
          f"torch.cuda._memory_viz read the pickle (segsum, trace, trace_plot, segment_plot, "
          f"memory, segments)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
