#!/usr/bin/env python3
"""Feeds a trace to replay_trace on its standard input: a gzip-compressed
trace file, or what a Python script that writes one prints.
Usage: replay_trace.py REPLAY_TRACE TRACE.gz|SCRIPT.py [--under-model MODEL.py] [ARGS...]

With --under-model, MODEL.py (pytorch_policy_model.py) replays the same
trace with PyTorch's expandable segments' rules first, and the replay's
--max-ratio becomes the lower of the one given and the model's highest
held / in use: the cache must hold no more than PyTorch would."""
import gzip
import re
import subprocess
import sys

replay, source, args = sys.argv[1], sys.argv[2], sys.argv[3:]
if source.endswith(".py"):
    data = subprocess.run([sys.executable, source], capture_output=True, check=True).stdout
else:
    with gzip.open(source, "rb") as trace:
        data = trace.read()

if "--under-model" in args:
    i = args.index("--under-model")
    model = args[i + 1]
    del args[i : i + 2]
    out = subprocess.run([sys.executable, model, source], capture_output=True, text=True,
                         check=True).stdout
    ratios = [float(r) for r in re.findall(r"held / in use ([0-9.]+)", out)]
    if not ratios:
        sys.exit("replay_trace.py: the model printed no held / in use:\n" + out)
    limit = max(ratios)
    if "--max-ratio" in args:
        j = args.index("--max-ratio")
        limit = min(limit, float(args[j + 1]))
        del args[j : j + 2]
    print(f"replay_trace.py: at most {limit:.4f} held / in use (PyTorch's rules: {max(ratios):.4f})")
    args += ["--max-ratio", repr(limit)]

sys.exit(subprocess.run([replay, *args], input=data).returncode)
