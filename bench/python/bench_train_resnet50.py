"""Issue 18's ResNet-50 under every PyTorch allocator (memory_harness.py):
torchvision's resnet50 with random weights (nothing is downloaded), trained
with SGD on random 224x224 images, a new batch (8..64) every step. Prints
device memory taken at the peak against the peak in use, steps/s, and where
two runs in one process end. Usage (GPU machine, repository root):
  CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python:bench/python \\
    /opt/torch/.venv/bin/python3 bench/python/bench_train_resnet50.py [--steps 20]
"""
import random

import memory_harness


class ResNet50:
    name = "ResNet-50, batch 8-64"

    @staticmethod
    def build(torch, small=False):
        import torchvision
        model = torchvision.models.resnet50(weights=None).cuda()
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step(batch):
            x = torch.randn(batch, 3, 224, 224, device="cuda")
            y = torch.randint(0, 1000, (batch,), device="cuda")
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

        return model, step

    @staticmethod
    def shapes(n, seed, smallest=False):
        if smallest:
            return [2] * n
        rng = random.Random(seed)
        return [rng.randint(8, 64) for _ in range(n)]


if __name__ == "__main__":
    memory_harness.training_main(ResNet50, __file__, default_steps=25)
