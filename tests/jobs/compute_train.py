"""A compute-bound training script (issue 54's test job): an MLP trained by SGD on random batches,
made in the loop, or with --loader made up front into a TensorDataset and fed through a shuffling
DataLoader (the loader is then not what bounds the job). Prints its step count, last loss and the
dtype of the model's output at the first step (bfloat16 when trainlab's lab puts the forward under
autocast).

  python compute_train.py [--steps S] [--width W] [--depth D] [--batch-size B] [--threads N]
         [--loader [--workers K]] [--break autocast|compile] [--own-autocast] [--seed-from-clock]

--break puts in the model a part that cannot take one of the lab's variants, as a hand-written
fused op often cannot: `autocast`, a layer that accepts float32 input only (it raises under
torch.autocast); `compile`, an op registered with torch.library.custom_op without a fake
(meta) implementation (torch.compile raises at its first call; it runs eagerly).
--own-autocast runs the forward and the loss under the script's own torch.autocast("cpu",
torch.bfloat16), as a script that already took bf16 does; --seed-from-clock seeds torch from the
clock instead of 0, as a script that wants a new slice each run does.
"""
import argparse
import contextlib
import time

import torch


class Float32OnlyScale(torch.nn.Module):
    """A hand-written fused layer with a float32 kernel only."""

    def forward(self, x):
        if x.dtype != torch.float32:
            raise TypeError("Float32OnlyScale: the fused kernel takes float32 only, got %s" % x.dtype)
        return x * 0.5


@torch.library.custom_op("compute_train::fused_scale", mutates_args=())
def fused_scale(x: torch.Tensor) -> torch.Tensor:
    return x * 0.5  # no register_fake: torch.compile cannot trace it


fused_scale.register_autograd(lambda ctx, grad: grad * 0.5)


class FusedScale(torch.nn.Module):
    def forward(self, x):
        return fused_scale(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--depth", type=int, default=2, help="hidden Linear + ReLU layers (more compute per sample)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--loader", action="store_true", help="batches from a DataLoader over a TensorDataset")
    parser.add_argument("--workers", type=int, default=0, help="the DataLoader's num_workers (with --loader)")
    parser.add_argument("--break", dest="breaks", choices=("autocast", "compile"), default=None)
    parser.add_argument("--own-autocast", action="store_true", help="the forward and loss under torch.autocast(bf16)")
    parser.add_argument("--seed-from-clock", action="store_true", help="torch.manual_seed from the clock, not 0")
    args = parser.parse_args()
    if args.seed_from_clock:
        torch.manual_seed(time.time_ns() % (2 ** 31))
    else:
        torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    w = args.width
    layers = [torch.nn.Linear(w, w), torch.nn.ReLU()]
    if args.breaks == "autocast":
        layers.append(Float32OnlyScale())
    elif args.breaks == "compile":
        layers.append(FusedScale())
    for _ in range(args.depth - 1):
        layers += [torch.nn.Linear(w, w), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(w, 10))
    model = torch.nn.Sequential(*layers)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    if args.loader:
        samples = min(args.steps, 64) * args.batch_size  # one epoch of up to 64 batches, then again
        dataset = torch.utils.data.TensorDataset(torch.randn(samples, w), torch.randint(0, 10, (samples,)))
        loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    loss = None
    step = 0
    while step < args.steps:
        if args.loader:
            batches = iter(loader)
        while step < args.steps:
            if args.loader:
                try:
                    x, y = next(batches)
                except StopIteration:
                    break
            else:
                x = torch.randn(args.batch_size, w)
                y = torch.randint(0, 10, (args.batch_size,))
            optimizer.zero_grad()
            precision = torch.autocast("cpu", dtype=torch.bfloat16) if args.own_autocast else contextlib.nullcontext()
            with precision:
                out = model(x)
                loss = torch.nn.functional.cross_entropy(out.float(), y)
            if step == 0:
                print("output dtype %s" % str(out.dtype).replace("torch.", ""))
            loss.backward()
            optimizer.step()
            step += 1
    print("steps %d" % args.steps)
    print("loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
