"""A training script whose Dataset cannot be pickled (its transform is a lambda), started the way
macOS and Windows start DataLoader workers (multiprocessing's spawn, which pickles the Dataset
into each worker). It trains with num_workers=0, as written; given workers (a sweep point), its
loader fails at its first batch with "Can't pickle local object" (issue 56's "a grid point the
job cannot take").

  python unpicklable_train.py [--steps S]
"""
import argparse
import multiprocessing

import torch


class Squares(torch.utils.data.Dataset):
    def __init__(self):
        self.transform = lambda x: x * x  # a lambda: pickle cannot take it

    def __len__(self):
        return 256

    def __getitem__(self, i):
        return self.transform(torch.full((16,), float(i % 7))), i % 2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    multiprocessing.set_start_method("spawn")
    model = torch.nn.Linear(16, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(Squares(), batch_size=16, num_workers=0)
    step = 0
    while step < args.steps:
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            step += 1
            if step == args.steps:
                break
    print("steps %d" % step)


if __name__ == "__main__":
    main()
