"""Makes the small torch.profiler traces of tests/advice_test.cpp (issue 34, "actions that know what
is in place"): one CPU trace per case where something is already done and must not be proposed
again. Run with the project's venv from the repository root:
    /opt/trainlab/venv/bin/python tests/data/advice/make_traces.py [case ...]
Writes tests/data/advice/<case>.pt.trace.json.gz (3 profiled steps each, kept small).
Cases:
  compiled      torch.compile'd MLP with one graph break in forward: 2 compiled regions per step
                (backend aot_eager, so no C++ compiler is needed; the trace names are the same:
                "Torch-Compiled Region", "CompiledFunction").
  ddp_overlap   2-rank Gloo DDP (rank 0 traced): DDP launches its all-reduces from gradient hooks
                during backward (overlap already on), with 1 KiB buckets: many tiny all-reduces.
  loader_workers  a data-bound loop whose DataLoader already has 2 worker processes.
  model_syncs   a model whose forward calls .item() (like Hugging Face models' data-dependent
                checks), traced with stacks so the module is named.
  data_starved  num_workers=0 over a Dataset stored in shards of 32 samples whose first sample opens
                the shard from slow storage (40 ms, a sleep): every 4th batch waits in the DataLoader
                (periodic slow steps that are data wait); 16 profiled steps.
  transform_syncs  num_workers=0 and a Dataset whose per-sample transforms read random parameters with
                .item() (as torchvision's RandomResizedCrop and RandomHorizontalFlip do): dozens of
                .item() calls per step inside the DataLoader span, one loss.item() in the loop.
  cold_start    a torch.compile'd model (backend aot_eager) profiled from its very first iteration:
                iteration 0 holds the compilation, the five after it are the steady state.
"""
import gzip
import os
import shutil
import sys
import tempfile
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 5  # wait 1, warmup 1, active 3


def write_gz(prof, name):
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        out = os.path.join(HERE, name + ".pt.trace.json.gz")
        with open(raw, "rb") as src, gzip.open(out, "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
    print(out, os.path.getsize(out), "bytes")


def run_steps(step_fn, name, with_stack=False):
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3),
                 with_stack=with_stack) as prof:
        for _ in range(STEPS):
            step_fn()
            prof.step()
    write_gz(prof, name)


def mlp(width=256, depth=4):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers)


def sgd_steps(model, x, warmup):
    """The step function of a plain training loop (SGD, lr 0.01, on the mean square of model(x)),
    run `warmup` times first (outside the trace)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()

    for _ in range(warmup):
        step()
    return step


class Broken(nn.Module):
    """Two halves with a graph break between them (a print, as user code often has)."""

    def __init__(self):
        super().__init__()
        self.a = mlp()
        self.b = mlp()

    def forward(self, x):
        x = self.a(x)
        torch._dynamo.graph_break()
        return self.b(x)


def compiled():
    torch.manual_seed(0)
    model = torch.compile(Broken(), backend="aot_eager")
    step = sgd_steps(model, torch.randn(64, 256), warmup=3)  # compiles outside the trace
    run_steps(step, "compiled")


def ddp_rank(rank, world, port):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    # Many small layers and 1 KiB buckets: DDP launches an all-reduce per few layers, from its
    # gradient hooks while backward runs.
    model = DDP(mlp(width=32, depth=24), bucket_cap_mb=0.001)
    step = sgd_steps(model, torch.randn(16, 32), warmup=3)
    if rank == 0:
        run_steps(step, "ddp_overlap")
    else:
        for _ in range(STEPS):
            step()
    dist.barrier()
    dist.destroy_process_group()


def ddp_overlap():
    import torch.multiprocessing as mp

    mp.spawn(ddp_rank, args=(2, 29533), nprocs=2, join=True)


class SlowSet(torch.utils.data.Dataset):
    """Each sample costs 4 ms of CPU work (a stand-in for decoding and augmentation)."""

    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        end = time.perf_counter() + 0.004
        while time.perf_counter() < end:
            pass
        return torch.randn(64), torch.tensor(i % 10)


def loader_workers():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = torch.utils.data.DataLoader(SlowSet(), batch_size=8, num_workers=2, prefetch_factor=2,
                                         persistent_workers=True)
    model = nn.Linear(64, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    it = iter(loader)
    next(it)  # workers started outside the trace

    def step():
        x, y = next(it)
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    run_steps(step, "loader_workers")


class Gate(nn.Module):
    """Checks its input with .item() in forward, as many Hugging Face models do (e.g. a padding or
    overflow check): a host read inside the model's own graph."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(128, 128)

    def forward(self, x):
        if (x.abs().max() > 1e4).item():
            x = x.clamp(-1e4, 1e4)
        return torch.relu(self.lin(x))


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Gate() for _ in range(8))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def model_syncs():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    step = sgd_steps(Gated(), torch.randn(32, 128), warmup=2)
    run_steps(step, "model_syncs", with_stack=True)


class ShardedSet(torch.utils.data.Dataset):
    """Samples stored in shards of 32 (WebDataset, TFRecord or HDF5 style): the first sample of a shard
    opens and reads it from slow storage (40 ms, a sleep), the others come from the open shard."""

    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        if i % 32 == 0:
            time.sleep(0.040)
        return torch.randn(256), torch.tensor(i % 10)


def data_starved():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = torch.utils.data.DataLoader(ShardedSet(), batch_size=8, num_workers=0)
    model = mlp(width=256, depth=4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    it = iter(loader)

    def step():
        x, y = next(it)
        opt.zero_grad(set_to_none=True)
        for _ in range(2):
            model(x).square().mean().backward()
        opt.step()

    # 2 + 16 steps: a shard every 4 batches, four of them in the window
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=16)) as prof:
        for _ in range(18):
            step()
            prof.step()
    write_gz(prof, "data_starved")


class RandomCropSet(torch.utils.data.Dataset):
    """Per-sample transforms that draw their random parameters as torchvision's do:
    RandomResizedCrop.get_params reads torch.empty(1).uniform_(...).item() and torch.randint(...).item()
    up to ten times, RandomHorizontalFlip torch.rand(1).item(); then a crop and a normalisation."""

    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        img = torch.rand(3, 96, 96)
        for _ in range(3):  # get_params' attempts
            scale = torch.empty(1).uniform_(0.08, 1.0).item()
            ratio = torch.empty(1).uniform_(0.75, 1.33).item()
            top = torch.randint(0, 32, size=(1,)).item()
            left = torch.randint(0, 32, size=(1,)).item()
        crop = img[:, top:top + 64, left:left + 64]
        if torch.rand(1).item() < 0.5:
            crop = crop.flip(-1)
        crop = (crop - 0.5) / 0.25
        return crop.reshape(-1)[:1024] * scale * ratio, torch.tensor(i % 10)


def transform_syncs():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = torch.utils.data.DataLoader(RandomCropSet(), batch_size=16, num_workers=0)
    model = nn.Sequential(nn.Linear(1024, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    it = iter(loader)

    def step():
        x, y = next(it)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss.item()  # the loop's one read of the loss

    run_steps(step, "transform_syncs")


def cold_start():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.compile(mlp(width=256, depth=4), backend="aot_eager")
    x = torch.randn(64, 256)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=0, active=6, repeat=1)) as prof:
        for _ in range(6):  # from the very first iteration: iteration 0 compiles
            step()
            prof.step()
    write_gz(prof, "cold_start")


CASES = {"compiled": compiled, "ddp_overlap": ddp_overlap, "loader_workers": loader_workers,
         "model_syncs": model_syncs, "data_starved": data_starved, "transform_syncs": transform_syncs,
         "cold_start": cold_start}

if __name__ == "__main__":
    for case in sys.argv[1:] or list(CASES):
        CASES[case]()
