"""Issue 18's MLP under every PyTorch allocator (memory_harness.py): 6 blocks
of Linear 2048->8192, GELU, Linear 8192->2048, LayerNorm, trained with
AdamW, a new number of rows (512..4096) every step. Prints device memory
taken at the peak against the peak in use, steps/s, and where two runs in
one process end. Usage (GPU machine, repository root):
  CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python:bench/python \\
    /opt/torch/.venv/bin/python3 bench/python/bench_train_mlp.py [--steps 30]
"""
import random

import memory_harness


class Mlp:
    name = "MLP 2048-8192 x 6, 512-4096 rows"

    @staticmethod
    def build(torch, small=False):
        width, hidden = (256, 1024) if small else (2048, 8192)
        layers = []
        for _ in range(6):
            layers += [torch.nn.Linear(width, hidden), torch.nn.GELU(),
                       torch.nn.Linear(hidden, width), torch.nn.LayerNorm(width)]
        model = torch.nn.Sequential(*layers).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step(rows):
            x = torch.randn(rows, width, device="cuda")
            opt.zero_grad(set_to_none=True)
            loss = model(x).float().pow(2).mean()
            loss.backward()
            opt.step()

        return model, step

    @staticmethod
    def shapes(n, seed, smallest=False):
        if smallest:
            return [512] * n
        rng = random.Random(seed)
        return [rng.randint(512, 4096) for _ in range(n)]


if __name__ == "__main__":
    memory_harness.training_main(Mlp, __file__, default_steps=40)
