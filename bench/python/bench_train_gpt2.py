"""Issue 18's GPT-2 under every PyTorch allocator (memory_harness.py): a
GPT-2-small-sized transformer built from transformers' GPT2Config with
random weights (nothing is downloaded), trained with AdamW on random tokens,
a new batch (1..16) x sequence (32..512) every step. Prints device memory
taken at the peak against the peak in use, steps/s, and where two runs in
one process end. Usage (GPU machine, repository root):
  CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python:bench/python \\
    /opt/torch/.venv/bin/python3 bench/python/bench_train_gpt2.py [--steps 20]
"""
import random

import memory_harness


class Gpt2:
    name = "GPT-2 small, batch 1-16 x seq 32-512"

    @staticmethod
    def build(torch, small=False):
        from transformers import GPT2Config, GPT2LMHeadModel
        config = GPT2Config(n_layer=2, n_embd=256, n_head=4) if small else GPT2Config()
        config.use_cache = False
        model = GPT2LMHeadModel(config).cuda()
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        vocab = config.vocab_size

        def step(shape):
            batch, seq = shape
            ids = torch.randint(0, vocab, (batch, seq), device="cuda")
            opt.zero_grad(set_to_none=True)
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()

        return model, step

    @staticmethod
    def shapes(n, seed, smallest=False):
        if smallest:
            return [(1, 32)] * n
        rng = random.Random(seed)
        return [(rng.randint(1, 16), rng.randint(32, 512)) for _ in range(n)]


if __name__ == "__main__":
    memory_harness.training_main(Gpt2, __file__, default_steps=25)
