"""Ground truth for the recorder's stage shares (issue 54's tests): the same pipeline as
image_folder_train.py or parquet_train.py, each stage timed by hand around its own call
(perf_counter_ns for wall, thread_time_ns for CPU), in one process without the recorder.
Prints one JSON object: {"stages": {name: {"wall_ns", "cpu_ns"}}, "total_wall_ns", "total_cpu_ns"}
with names as the recorder gives them ("read", "decode" for the image file's groups).

  python stages_by_hand.py image DATA_DIR [SAMPLES]
  python stages_by_hand.py parquet FILE [SAMPLES]
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


class Clock:
    def __init__(self):
        self.stages = {}

    def time(self, name, function, *args):
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        result = function(*args)
        entry = self.stages.setdefault(name, {"wall_ns": 0, "cpu_ns": 0})
        entry["wall_ns"] += time.perf_counter_ns() - w0
        entry["cpu_ns"] += time.thread_time_ns() - c0
        return result


def image(data_dir, samples):
    import torch
    import torchvision
    from PIL import Image
    from torch.utils.data import default_collate
    import image_folder_train
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dataset = torchvision.datasets.ImageFolder(data_dir)
    pipeline = image_folder_train.make_pipeline()
    clock = Clock()

    def read(path):
        f = open(path, "rb")
        return f, Image.open(f)

    batch = []
    for i in range(samples):
        path, label = dataset.samples[i % len(dataset.samples)]
        f, img = clock.time("read", read, path)
        img = clock.time("decode", img.convert, "RGB")
        f.close()
        for t in pipeline.transforms:
            img = clock.time(type(t).__name__, t, img)
        batch.append((img, label))
        if len(batch) == 8:
            collated = clock.time("collate", default_collate, batch)
            clock.time("handoff", handoff, collated)
            batch = []
    return clock


def handoff(batch):
    """What a worker does to hand a batch over: pickle it for the result queue (tensors into
    shared memory), as multiprocessing's queue feeder thread does."""
    import torch.multiprocessing  # noqa: F401  (registers the tensor reductions)
    from multiprocessing.reduction import ForkingPickler
    return ForkingPickler.dumps(batch)


def parquet(path, samples):
    """ParquetRows.__getitem__'s lines, each timed: the reads (the file's open, its row group),
    the rest of __getitem__ (its own code), augment; then collate and the handoff."""
    import torch
    from torch.utils.data import default_collate
    import parquet_train
    torch.manual_seed(0)
    torch.set_num_threads(1)
    import pyarrow.parquet as pq
    dataset = parquet_train.ParquetRows(path)
    clock = Clock()
    file = clock.time("read", pq.ParquetFile, path)
    batch = []
    for i in range(samples):
        index = (i * 7919) % dataset.rows
        group_rows = clock.time("own", lambda: file.metadata.row_group(0).num_rows)
        table = clock.time("read", file.read_row_group, index // group_rows)
        row = clock.time("own", lambda: table.slice(index % group_rows, 1).to_pylist()[0])
        features = clock.time("augment", parquet_train.augment, row["features"])
        item = clock.time("own", lambda: (torch.tensor(features, dtype=torch.float32), row["label"]))
        batch.append(item)
        if len(batch) == 16:
            collated = clock.time("collate", default_collate, batch)
            clock.time("handoff", handoff, collated)
            batch = []
    return clock


def main():
    kind, source = sys.argv[1], sys.argv[2]
    samples = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    clock = {"image": image, "parquet": parquet}[kind](source, samples)
    print(json.dumps({"stages": clock.stages,
                      "total_wall_ns": sum(s["wall_ns"] for s in clock.stages.values()),
                      "total_cpu_ns": sum(s["cpu_ns"] for s in clock.stages.values())}))


if __name__ == "__main__":
    main()
