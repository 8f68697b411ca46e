"""A 2-rank DistributedDataParallel script for torchrun (issue 54's test job), Gloo on CPU:
a DistributedSampler over an in-memory dataset, an MLP, SGD. Each rank prints its step count.

  torchrun --nproc-per-node 2 ddp_train.py [--steps S]
"""
import argparse

import torch
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
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


if __name__ == "__main__":
    main()
