"""A compute-bound training script without a DataLoader (issue 54's test job): random batches
made in the loop, an MLP, SGD. Prints its step count, last loss and the dtype of the model's
output at the first step (bfloat16 when trainlab's lab puts the forward under autocast).

  python compute_train.py [--steps S] [--width W] [--batch-size B]
"""
import argparse

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    w = args.width
    model = torch.nn.Sequential(torch.nn.Linear(w, w), torch.nn.ReLU(), torch.nn.Linear(w, w),
                                torch.nn.ReLU(), torch.nn.Linear(w, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss = None
    for step in range(args.steps):
        x = torch.randn(args.batch_size, w)
        y = torch.randint(0, 10, (args.batch_size,))
        optimizer.zero_grad()
        out = model(x)
        if step == 0:
            print("output dtype %s" % str(out.dtype).replace("torch.", ""))
        loss = torch.nn.functional.cross_entropy(out.float(), y)
        loss.backward()
        optimizer.step()
    print("steps %d" % args.steps)
    print("loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
