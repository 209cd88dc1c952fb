"""PyTorch's CUDA graphs with libcumem as its allocator (CUDAPluggableAllocator
through cumem_torch_alloc/free), for the framework resource named by the
first argument ("device" or "caching"): torch.cuda.graph with an
intermediate freed inside the capture, replayed 30 times with eager
allocations of the same sizes between replays, both checked against eager
results; torch.cuda.make_graphed_callables of a small MLP trained 20 steps
against the same MLP trained eagerly."""
import copy
import os
import sys

kind = sys.argv[1] if len(sys.argv) > 1 else "device"
os.environ["CUMEM_FRAMEWORK_RESOURCE"] = kind  # before libcumem makes the resource
os.environ.setdefault("CUMEM_FRAMEWORK_QUIET", "0")

import cumem  # noqa: E402
import cumem.torch  # noqa: E402
from gpu_common import SKIP, require_capture_safe, require_gpu, run  # noqa: E402

require_gpu()
require_capture_safe(kind)
cumem.torch.use_libcumem_allocator(pluggable=True)  # CUDAPluggableAllocator; before torch's first CUDA allocation

import torch  # noqa: E402

if not torch.cuda.is_available():
    print("skipped: torch sees no CUDA device")
    raise SystemExit(SKIP)

N = 1 << 16  # 256 KiB of float32


def graph_with_an_intermediate_freed_inside():
    torch.manual_seed(0)
    static_x = torch.randn(N, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up outside the capture, as PyTorch asks
        for _ in range(3):
            ((static_x * 2).sin() + 1).sum()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        tmp = static_x * 2
        tmp2 = tmp.sin()
        del tmp  # freed inside the capture
        static_y = tmp2 + 1
        del tmp2
        static_sum = static_y.sum()
    stats_before = cumem.framework_resource(0).statistics()
    for i in range(30):
        static_x.copy_(torch.randn(N, device="cuda", generator=torch.Generator("cuda").manual_seed(i)))
        # Eager allocations of the graph's sizes, alive across the replay.
        eager = [torch.full((N,), float(i), device="cuda") for _ in range(3)]
        graph.replay()
        expected = (static_x * 2).sin() + 1
        torch.cuda.synchronize()
        assert torch.equal(static_y, expected), f"replay {i}: the graph's output differs"
        assert torch.allclose(static_sum, expected.sum()), f"replay {i}: the sum differs"
        for k, e in enumerate(eager):
            assert bool((e == float(i)).all()), f"replay {i}: eager tensor {k} was overwritten"
        del eager
    del graph, static_y, static_sum
    torch.cuda.synchronize()
    after = cumem.framework_resource(0).statistics()
    print(f"torch.cuda.graph: 30 replays equal to eager; libcumem {stats_before} -> {after}")


def make_graphed_callables_trains_as_eager():
    torch.manual_seed(0)
    eager_model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                      torch.nn.Linear(128, 10)).cuda()
    graphed_model = copy.deepcopy(eager_model)
    sample = torch.randn(32, 64, device="cuda")
    graphed = torch.cuda.make_graphed_callables(graphed_model, (sample,))
    opt_eager = torch.optim.SGD(eager_model.parameters(), lr=0.1)
    opt_graphed = torch.optim.SGD(graphed_model.parameters(), lr=0.1)
    xs = [torch.randn(32, 64, device="cuda") for _ in range(20)]
    ys = [torch.randint(0, 10, (32,), device="cuda") for _ in range(20)]
    losses = []
    for step in range(20):
        pair = []
        for model, opt in ((eager_model, opt_eager), (graphed, opt_graphed)):
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(xs[step]), ys[step])
            loss.backward()
            opt.step()
            pair.append(loss.item())
        losses.append(pair)
        # Equal but for the order of floating-point sums (cuBLAS may pick
        # another algorithm under capture): PyTorch's own test tolerances.
        assert abs(pair[0] - pair[1]) <= 1e-4 * max(1.0, abs(pair[0])), (step, pair)
    for p, q in zip(eager_model.parameters(), graphed_model.parameters()):
        assert torch.allclose(p, q, rtol=1e-4, atol=1e-5), "the trained weights differ"
    assert losses[-1][0] < losses[0][0], losses
    print(f"make_graphed_callables: 20 steps equal to eager, loss {losses[0][0]:.4f} -> "
          f"{losses[-1][0]:.4f}")


run([graph_with_an_intermediate_freed_inside, make_graphed_callables_trains_as_eager])
