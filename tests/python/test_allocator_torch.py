"""A small PyTorch MLP trains with libcumem as its allocator; libcumem's
statistics show PyTorch's allocations."""
import os

import cumem
import cumem.torch
from gpu_common import SKIP, require_gpu

require_gpu()
os.environ.setdefault("CUMEM_FRAMEWORK_QUIET", "0")
cumem.torch.use_libcumem_allocator(pluggable=True)  # CUDAPluggableAllocator; before torch's first CUDA allocation

import torch  # noqa: E402

if not torch.cuda.is_available():
    print("skipped: torch sees no CUDA device")
    raise SystemExit(SKIP)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(512, 64, device="cuda")
y = torch.randint(0, 10, (512,), device="cuda")
losses = []
for step in range(20):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
torch.cuda.synchronize()
stats = cumem.framework_resource(0).statistics()
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; libcumem: {stats}")
assert losses[-1] < losses[0], losses
assert stats["total_allocations"] >= 20, stats
assert stats["live_allocations"] > 0 and stats["bytes_in_use"] > 0, stats
assert stats["peak_bytes_in_use"] >= stats["bytes_in_use"], stats
# Freeing everything gives the memory back through libcumem.
in_use = stats["bytes_in_use"]
del model, opt, x, y, loss
import gc  # noqa: E402
gc.collect()
torch.cuda.synchronize()
after = cumem.framework_resource(0).statistics()
print(f"after freeing the model: {after}")
assert after["bytes_in_use"] < in_use, (in_use, after)
print("1 passed, 0 failed")
