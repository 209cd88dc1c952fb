#!/usr/bin/env python3
"""Writes a training-shaped trace on two recorded threads to standard
output, in replay_trace.cpp's format: each step's forward pass allocates
activations on thread 1 (blocks of 32 KiB to 24 MiB, scaled by a batch size
new each step), the backward pass allocates gradients on thread 2 and
frees the activations there, the optimizer step frees the gradients on
thread 1; the same steps twice ("run" after each), after a "trim". As
PyTorch's autograd thread does, blocks change threads between allocation
and free, small ones included."""
import random

STEPS, LAYERS = 40, 12
rng = random.Random(26)
batches = [rng.randint(1, 16) for _ in range(STEPS)]
out = []
count = 0


def allocate(size, thread):
    global count
    out.append(f"a {size} {thread}")
    count += 1
    return count - 1


out.append("trim")
weights = [allocate((1 + i % 3) << 20, 1) for i in range(LAYERS)]
for run in (1, 2):
    for b in batches:
        acts = []
        for i in range(LAYERS):
            acts.append(allocate(b * ((i % 4) + 1) * (3 << 19), 1))  # 1.5 MiB .. 24 MiB
            acts.append(allocate((i % 4 + 1) * 8192 * b // 4 + 32768, 1))  # 32 .. 160 KiB
        grads = []
        for i in reversed(range(LAYERS)):
            grads.append(allocate((1 + i % 3) << 20, 2))
            tmp = allocate(b * (1 << 20) + 4096 * i, 2)
            out.append(f"f {acts.pop()} 2")
            out.append(f"f {acts.pop()} 2")
            out.append(f"f {tmp} 2")
        for g in grads:
            out.append(f"f {g} 1")
    out.append("run")
print("# two_threads_trace.py: forward on thread 1, backward on thread 2")
print("\n".join(out))
