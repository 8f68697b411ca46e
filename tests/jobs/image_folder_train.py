"""A data-bound image training script, as a user writes one (issue 54's test job): JPEG files
read through torchvision.datasets.ImageFolder, torchvision transforms, a small CNN, SGD.

  python image_folder_train.py DATA_DIR [--make-data N] [--workers 0|2] [--steps S]
         [--start-method fork|spawn] [--transforms v1|v2] [--threads N] [--prefetch K]
         [--persistent] [--pin-memory] [--report FILE]

--make-data N writes N noisy JPEGs per class (2 classes) into DATA_DIR first when it has none.
--threads (default 1) is torch.set_num_threads; --prefetch, --persistent and --pin-memory are the
DataLoader's prefetch_factor, persistent_workers and pin_memory (default: DataLoader's defaults).
Prints its step count and last loss (deterministic: the script seeds itself); --report writes the
script's own timing as JSON: seconds spent in next() on the DataLoader iterator (loader_wait_s; its
thread's CPU time there, loader_cpu_s), and samples_per_s
over the steps after the first 2 (null with 2 steps or fewer).
"""
import argparse
import json
import os
import time

import torch
import torchvision
from torchvision import transforms


def make_data(root, per_class, size=224):
    from PIL import Image
    generator = torch.Generator().manual_seed(1)
    for label in ("cat", "dog"):
        folder = os.path.join(root, label)
        os.makedirs(folder, exist_ok=True)
        for i in range(per_class):
            pixels = torch.randint(0, 256, (size, size, 3), generator=generator, dtype=torch.uint8)
            Image.frombytes("RGB", (size, size), bytes(pixels.flatten().tolist())).save(
                os.path.join(folder, "%s_%03d.jpg" % (label, i)), quality=90)


def make_pipeline(version="v1"):
    if version == "v2":
        from torchvision.transforms import v2
        return v2.Compose([
            v2.RandomResizedCrop(96),
            v2.ColorJitter(0.4, 0.4, 0.4, 0.1),
            v2.ToImage(),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ])
    return transforms.Compose([
        transforms.RandomResizedCrop(96),
        transforms.ColorJitter(0.4, 0.4, 0.4, 0.1),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(8, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1))
        self.head = torch.nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--make-data", type=int, default=0)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--start-method", default=None, help="the workers' start: fork (Linux's default) or spawn")
    parser.add_argument("--transforms", choices=("v1", "v2"), default="v1", help="torchvision.transforms or .v2")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--prefetch", type=int, default=None, help="the DataLoader's prefetch_factor")
    parser.add_argument("--persistent", action="store_true", help="the DataLoader's persistent_workers")
    parser.add_argument("--pin-memory", action="store_true", help="the DataLoader's pin_memory")
    parser.add_argument("--report", default=None)
    args = parser.parse_args()
    if args.make_data and not os.path.isdir(os.path.join(args.data, "cat")):
        make_data(args.data, args.make_data)
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    dataset = torchvision.datasets.ImageFolder(args.data, transform=make_pipeline(args.transforms))
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.workers, multiprocessing_context=args.start_method,
                                         prefetch_factor=args.prefetch, persistent_workers=args.persistent,
                                         pin_memory=args.pin_memory)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    steps, loader_wait_s, loader_cpu_s, loss = 0, 0.0, 0.0, None
    timed_from, timed_samples = None, 0  # from the end of the first 2 steps on
    start = time.perf_counter()
    while steps < args.steps:
        batches = iter(loader)
        while steps < args.steps:
            t0, cpu0 = time.perf_counter(), time.thread_time()
            try:
                images, labels = next(batches)
            except StopIteration:
                break
            loader_wait_s += time.perf_counter() - t0
            loader_cpu_s += time.thread_time() - cpu0
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            steps += 1
            if timed_from is not None:
                timed_samples += labels.shape[0]
            elif steps == 2:
                timed_from = time.perf_counter()
    end = time.perf_counter()
    elapsed_s = end - start
    samples_per_s = timed_samples / (end - timed_from) if timed_samples else None
    print("steps %d" % steps)
    print("loss %.5f" % loss.item())
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"steps": steps, "loader_wait_s": loader_wait_s, "loader_cpu_s": loader_cpu_s, "elapsed_s": elapsed_s,
                       "samples_per_s": samples_per_s}, f)


if __name__ == "__main__":
    main()
