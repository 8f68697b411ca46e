"""Ground truth for the recorder's stage shares (issue 54's tests): the same pipeline as
image_folder_train.py or parquet_train.py in a separate run without the recorder, each stage
timed by hand around its own call (perf_counter_ns for wall, thread_time_ns for CPU) inside the
Dataset, the collate_fn and a hand-made handoff (pickling the batch as the result queue does),
run through a DataLoader with the same number of workers while the main process trains the same
model, so that the stages run under the same conditions as in the recorded job.
Prints one JSON object: {"stages": {name: {"wall_ns", "cpu_ns"}}, "total_wall_ns", "total_cpu_ns"}
with the groups the test compares ("read", "decode" for the image file; "own" for the rest of
ParquetRows.__getitem__).

  python stages_by_hand.py image DATA_DIR SAMPLES WORKERS
  python stages_by_hand.py parquet FILE SAMPLES WORKERS
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch.utils.data import default_collate  # noqa: E402

IMAGE_STAGES = ["read", "decode", "RandomResizedCrop", "ColorJitter", "ToTensor", "Normalize"]
PARQUET_STAGES = ["read", "own", "augment"]


class Clock:
    def __init__(self, names):
        self.index = {name: i for i, name in enumerate(names)}
        self.times = torch.zeros(len(names), 2, dtype=torch.int64)

    def time(self, name, function, *args):
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        result = function(*args)
        row = self.times[self.index[name]]
        row[0] += time.perf_counter_ns() - w0
        row[1] += time.thread_time_ns() - c0
        return result


class HandTimedImages(torch.utils.data.Dataset):
    """ImageFolder's __getitem__ (pil_loader, then the Compose) with each part timed."""

    def __init__(self, root):
        import torchvision
        import image_folder_train
        self.samples = torchvision.datasets.ImageFolder(root).samples
        self.pipeline = image_folder_train.make_pipeline()

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        from PIL import Image
        clock = Clock(IMAGE_STAGES)
        path, label = self.samples[index]

        def read():
            f = open(path, "rb")
            return f, Image.open(f)

        f, img = clock.time("read", read)
        img = clock.time("decode", img.convert, "RGB")
        f.close()
        for t in self.pipeline.transforms:
            img = clock.time(type(t).__name__, t, img)
        return img, label, clock.times


class HandTimedRows(torch.utils.data.Dataset):
    """ParquetRows.__getitem__'s lines, each timed: the reads, the rest (its own code), augment."""

    def __init__(self, path):
        import parquet_train
        self.rows_dataset = parquet_train.ParquetRows(path)
        self.augment = parquet_train.augment
        self.file = None

    def __len__(self):
        return len(self.rows_dataset)

    def __getitem__(self, index):
        import pyarrow.parquet as pq
        clock = Clock(PARQUET_STAGES)
        if self.file is None:
            self.file = clock.time("read", pq.ParquetFile, self.rows_dataset.path)
        group_rows = clock.time("own", lambda: self.file.metadata.row_group(0).num_rows)
        table = clock.time("read", self.file.read_row_group, index // group_rows)
        row = clock.time("own", lambda: table.slice(index % group_rows, 1).to_pylist()[0])
        features = clock.time("augment", self.augment, row["features"])
        item = clock.time("own", lambda: torch.tensor(features, dtype=torch.float32))
        return item, row["label"], clock.times


def timed_collate(batch):
    """default_collate, then the handoff a worker's result queue does (pickling the batch, its
    tensors into shared memory), both timed; their times ride along as two more rows."""
    import torch.multiprocessing  # noqa: F401  (registers the tensor reductions)
    from multiprocessing.reduction import ForkingPickler
    w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    out = default_collate(batch)
    collate = [time.perf_counter_ns() - w0, time.thread_time_ns() - c0]
    w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    ForkingPickler.dumps((out[0], out[1]))
    handoff = [time.perf_counter_ns() - w0, time.thread_time_ns() - c0]
    times = out[2].sum(0)
    return out[0], out[1], torch.cat([times, torch.tensor([collate, handoff], dtype=torch.int64)])


def main():
    kind, source, samples, workers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if kind == "image":
        import image_folder_train
        dataset, names, batch_size = HandTimedImages(source), IMAGE_STAGES, 8
        model = image_folder_train.SmallCNN()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        import parquet_train
        dataset, names, batch_size = HandTimedRows(source), PARQUET_STAGES, 16
        model = torch.nn.Sequential(torch.nn.Linear(parquet_train.FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=workers,
                                         collate_fn=timed_collate)
    names = names + ["collate", "handoff"]
    totals = torch.zeros(len(names), 2, dtype=torch.int64)
    seen = 0
    while seen < samples:
        for x, y, times in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()  # the job's training beside its loader
            optimizer.step()
            totals += times
            seen += len(y)
            if seen >= samples:
                break
    stages = {name: {"wall_ns": int(totals[i, 0]), "cpu_ns": int(totals[i, 1])} for i, name in enumerate(names)}
    print(json.dumps({"stages": stages, "total_wall_ns": int(totals[:, 0].sum()),
                      "total_cpu_ns": int(totals[:, 1].sum())}))


if __name__ == "__main__":
    main()
