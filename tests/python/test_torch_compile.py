"""torch.compile(mode="reduce-overhead") (CUDA graph trees on private pools,
their live-allocation checks and checkpoints) with libcumem as PyTorch's
complete allocator, for the framework resource named by the first argument:
a small MLP trained 8 steps compiled and eagerly from the same weights,
then inference on two batch sizes (a second graph in the tree); results
equal to eager's."""
import copy
import os
import sys

kind = sys.argv[1] if len(sys.argv) > 1 else "device"
os.environ["CUMEM_FRAMEWORK_RESOURCE"] = kind
os.environ.setdefault("CUMEM_FRAMEWORK_QUIET", "1")

import cumem  # noqa: E402
import cumem.torch  # noqa: E402
from gpu_common import SKIP, require_gpu, run  # noqa: E402

require_gpu()
import torch  # noqa: E402

if not torch.cuda.is_available():
    print("skipped: torch sees no CUDA device")
    raise SystemExit(SKIP)
assert cumem.torch.use_libcumem_allocator(pluggable=False) == "extension"


def test_reduce_overhead_trains_as_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(),
                                torch.nn.Linear(256, 128), torch.nn.LayerNorm(128)).cuda()
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, mode="reduce-overhead")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    eager_opt = torch.optim.SGD(eager.parameters(), lr=0.05)
    for step in range(8):
        x = torch.randn(64, 128, device="cuda", generator=torch.Generator("cuda").manual_seed(step))
        for m, o in ((compiled, opt), (eager, eager_opt)):
            torch.compiler.cudagraph_mark_step_begin()
            o.zero_grad(set_to_none=True)
            m(x).square().mean().backward()
            o.step()
    torch.cuda.synchronize()
    for a, b in zip(model.parameters(), eager.parameters()):
        assert torch.allclose(a, b, atol=1e-4, rtol=1e-4), (a - b).abs().max()
    with torch.no_grad():
        for rows in (64, 32, 64):
            torch.compiler.cudagraph_mark_step_begin()
            x = torch.randn(rows, 128, device="cuda")
            got = compiled(x).clone()
            assert torch.allclose(got, eager(x), atol=1e-4, rtol=1e-4)
    stats = torch.cuda.memory_stats()
    print(f"  allocated {stats['allocated_bytes.all.current'] >> 10} KiB, "
          f"reserved {stats['reserved_bytes.all.current'] >> 20} MiB")


run([test_reduce_overhead_trains_as_eager])
