"""A 2-rank DistributedDataParallel script for torchrun (issue 54's test job), Gloo on CPU:
a DistributedSampler over an in-memory dataset, an MLP, SGD. Each rank prints its step count.

  torchrun --nproc-per-node 2 ddp_train.py [--steps S] [--by-hand FILE]

--by-hand FILE is the ground truth for the share of the step the all-reduce takes (issue 54's
DDP test): instead of training once through, rounds of steps alternate with and without
model.no_sync() (no all-reduce), each step timed from zero_grad to optimizer.step on the loop's
own clock; rank 0 writes the medians as JSON, {"sync_ms", "no_sync_ms"}.
"""
import argparse

import torch
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--by-hand", default=None)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = torch.utils.data.TensorDataset(torch.randn(512, 32), torch.randint(0, 4, (512,)))
    sampler = torch.utils.data.distributed.DistributedSampler(data, shuffle=True)
    loader = torch.utils.data.DataLoader(data, batch_size=16, sampler=sampler)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    if args.by_hand:
        by_hand(args.by_hand, rank, loader, model, optimizer)
        dist.destroy_process_group()
        return
    steps = 0
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        steps += 1
        if steps == args.steps:
            break
    print("rank %d steps %d" % (rank, steps))
    dist.destroy_process_group()


def by_hand(report, rank, loader, model, optimizer):
    import contextlib
    import json
    import statistics
    import time
    times = {True: [], False: []}
    for _ in range(8):
        for sync in (True, False):
            for x, y in loader:  # one epoch a round: 16 steps a rank
                t0 = time.perf_counter()
                optimizer.zero_grad()
                with contextlib.nullcontext() if sync else model.no_sync():
                    torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
                times[sync].append(time.perf_counter() - t0)
            dist.barrier()
    if rank == 0:
        with open(report, "w") as f:
            json.dump({"sync_ms": 1e3 * statistics.median(times[True]),
                       "no_sync_ms": 1e3 * statistics.median(times[False])}, f)


if __name__ == "__main__":
    main()
