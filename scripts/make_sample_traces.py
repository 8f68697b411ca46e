#!/usr/bin/env python3
"""Writes three PyTorch profiler (Kineto) traces of small CPU training loops, each with one known
bottleneck, for `trainlab diagnose` to name (tests/e2e_diagnose_test.cpp checks it):

  dataloader.pt.trace.json.gz  a Dataset whose __getitem__ sleeps: the loop waits on the DataLoader
  compute.pt.trace.json.gz     a wide MLP on a large batch, data already in memory: compute-bound
  tinyops.pt.trace.json.gz     ~4700 elementwise ops on tiny tensors per step: framework overhead

Usage: make_sample_traces.py OUT_DIR   (run with the Python whose torch the build installed)
"""
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule

STEPS = 12  # wait 1, warm-up 1, active 10


class SlowDataset(torch.utils.data.Dataset):
    """Samples that take 1.5 ms each to 'decode': a batch of 16 costs ~24 ms on the loop's thread."""

    def __len__(self):
        return 100000

    def __getitem__(self, index):
        time.sleep(0.0015)
        return torch.randn(64), index % 10


def train(loop_name, model, next_batch, out_dir):
    torch.manual_seed(0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=STEPS - 2)) as prof:
        for _ in range(STEPS):
            inputs, targets = next_batch()
            loss = loss_fn(model(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            prof.step()
    path = os.path.join(out_dir, loop_name + ".pt.trace.json.gz")
    prof.export_chrome_trace(path)
    return path


class TinyOps(torch.nn.Module):
    """Many small elementwise ops on a 16x8 activation: per-op dispatch cost dominates."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 10)
        self.scales = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(8)) for _ in range(150)])

    def forward(self, x):
        for scale in self.scales:
            x = torch.tanh(x * scale + 0.1) - 0.05
        return self.linear(x)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)

    loader = iter(torch.utils.data.DataLoader(SlowDataset(), batch_size=16, num_workers=0))
    mlp_small = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    print(train("dataloader", mlp_small, lambda: next(loader), out_dir))

    wide = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048),
                               torch.nn.ReLU(), torch.nn.Linear(2048, 10))
    x_big, y_big = torch.randn(256, 1024), torch.randint(0, 10, (256,))
    print(train("compute", wide, lambda: (x_big, y_big), out_dir))

    x_tiny, y_tiny = torch.randn(16, 8), torch.randint(0, 10, (16,))
    print(train("tinyops", TinyOps(), lambda: (x_tiny, y_tiny), out_dir))


if __name__ == "__main__":
    main()
