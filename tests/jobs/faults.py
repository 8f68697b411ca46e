"""Training scripts that misbehave, one per --mode, for issue 54's fault tests:

  exit_nonzero    two steps, then exit status 3
  no_step         imports torch, runs a forward, never steps an optimizer
  hang            one step, then sleeps forever
  daemonize       forks a child that outlives the parent (writes CHILD_FILE after 1 s), one step
  ignore_sigterm  ignores SIGTERM, steps until killed
  big_output      prints about 4 MB to stdout, two steps
  worker_exit     a DataLoader worker ends itself (os._exit) at its 3rd sample
  custom_loop     no optimizer: a hand-written update in train_step(), --steps calls
  random          prints random, numpy and torch draws (for TRAINLAB_JOB_SEED)

  python faults.py MODE [--steps S] [--child-file PATH]
"""
import argparse
import os
import signal
import sys
import time

import torch


def one_step(model, optimizer):
    optimizer.zero_grad()
    model(torch.randn(8, 16)).sum().backward()
    optimizer.step()


class ExitingDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        info = torch.utils.data.get_worker_info()
        self.calls = getattr(self, "calls", 0) + 1
        if info is not None and self.calls == 3:
            os._exit(7)
        return torch.randn(16)


def train_step(model, x):
    """custom_loop's step: a hand-written SGD update, no torch.optim."""
    model.zero_grad()
    model(x).pow(2).mean().backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.01 * p.grad


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--child-file", default=None)
    args = parser.parse_args()
    if args.mode == "random":
        import random
        import numpy
        print("random %.6f numpy %.6f torch %.6f" % (random.random(), numpy.random.random(), torch.rand(1).item()))
        return
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    mode = args.mode
    if mode == "exit_nonzero":
        one_step(model, optimizer)
        one_step(model, optimizer)
        print("failing now")
        sys.exit(3)
    elif mode == "no_step":
        with torch.no_grad():
            print("output %s" % (tuple(model(torch.randn(2, 16)).shape),))
    elif mode == "hang":
        one_step(model, optimizer)
        print("hanging", flush=True)
        while True:
            time.sleep(1)
    elif mode == "daemonize":
        one_step(model, optimizer)
        if os.fork() == 0:
            os.setsid()
            time.sleep(1)
            with open(args.child_file, "w") as f:
                f.write("child %d\n" % os.getpid())
            os._exit(0)
        print("parent done")
    elif mode == "ignore_sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        one_step(model, optimizer)
        print("ignoring SIGTERM", flush=True)
        while True:
            one_step(model, optimizer)
            time.sleep(0.05)
    elif mode == "big_output":
        for i in range(40000):
            print("line %06d %s" % (i, "x" * 90))
        one_step(model, optimizer)
        one_step(model, optimizer)
    elif mode == "worker_exit":
        loader = torch.utils.data.DataLoader(ExitingDataset(), batch_size=4, num_workers=2)
        for batch in loader:
            optimizer.zero_grad()
            model(batch).sum().backward()
            optimizer.step()
    elif mode == "custom_loop":
        for _ in range(args.steps):
            train_step(model, torch.randn(8, 16))
        print("custom steps %d" % args.steps)
    else:
        print("unknown mode %s" % mode, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
