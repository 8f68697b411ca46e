"""A data-bound tabular training script (issue 54's test job): rows read from a parquet file
through pyarrow in the Dataset's __getitem__, a Python augmentation function, an MLP, Adam.

  python parquet_train.py FILE.parquet [--make-data ROWS] [--workers N] [--steps S] [--report FILE]

--report writes the script's own timing as JSON: seconds spent in next() on the DataLoader iterator
(loader_wait_s) and its thread's CPU time there (loader_cpu_s).
"""
import argparse
import json
import os
import random
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

FEATURES = 64


def make_data(path, rows):
    rng = np.random.default_rng(3)
    features = rng.standard_normal((rows, FEATURES)).astype(np.float32)
    table = pa.table({"features": pa.array(list(features), type=pa.list_(pa.float32())),
                      "label": pa.array(rng.integers(0, 4, rows), type=pa.int64())})
    pq.write_table(table, path, row_group_size=32)


def augment(values):
    """Random scaling, jitter and dropout of features, written in plain Python as users do."""
    scale = random.uniform(0.9, 1.1)
    out = []
    for v in values:
        for _ in range(24):  # a few rounds of jitter per feature
            v = v * scale + random.gauss(0.0, 0.01)
        out.append(0.0 if random.random() < 0.05 else v)
    return out


class ParquetRows(torch.utils.data.Dataset):
    def __init__(self, path):
        self.path = path
        self.rows = pq.ParquetFile(path).metadata.num_rows
        self.file = None

    def __len__(self):
        return self.rows

    def __getitem__(self, index):
        if self.file is None:  # opened in each worker
            self.file = pq.ParquetFile(self.path)
        group_rows = self.file.metadata.row_group(0).num_rows
        table = self.file.read_row_group(index // group_rows)
        row = table.slice(index % group_rows, 1).to_pylist()[0]
        features = augment(row["features"])
        return torch.tensor(features, dtype=torch.float32), row["label"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--make-data", type=int, default=0)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--report", default=None)
    args = parser.parse_args()
    if args.make_data and not os.path.exists(args.file):
        make_data(args.file, args.make_data)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = torch.utils.data.DataLoader(ParquetRows(args.file), batch_size=args.batch_size,
                                         shuffle=True, num_workers=args.workers)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    steps, loader_wait_s, loader_cpu_s, loss = 0, 0.0, 0.0, None
    start = time.perf_counter()
    while steps < args.steps:
        batches = iter(loader)
        while steps < args.steps:
            t0, cpu0 = time.perf_counter(), time.thread_time()
            try:
                features, labels = next(batches)
            except StopIteration:
                break
            loader_wait_s += time.perf_counter() - t0
            loader_cpu_s += time.thread_time() - cpu0
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(features), labels)
            loss.backward()
            optimizer.step()
            steps += 1
    elapsed_s = time.perf_counter() - start
    print("steps %d" % steps)
    print("loss %.5f" % loss.item())
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"steps": steps, "loader_wait_s": loader_wait_s, "loader_cpu_s": loader_cpu_s, "elapsed_s": elapsed_s}, f)


if __name__ == "__main__":
    main()
