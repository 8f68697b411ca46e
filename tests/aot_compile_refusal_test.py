"""The compiled variant's exporter (scenarios/export/aot_compile.py) refusing a bundle whose model
torch.export cannot trace: a custom op registered without a fake (meta) implementation. The refusal
is one line on stderr, exit status 2, naming the op and the line of the model's code that called it,
and the full message with its traceback goes to the --log file.

  python aot_compile_refusal_test.py SOURCE_DIR WORK_DIR
Exit status 0 when every check holds, 1 otherwise.
"""
import json
import os
import shutil
import subprocess
import sys

MODEL = '''import torch
import torch.nn as nn


@torch.library.custom_op("trainlab_test::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        return scale(self.linear(x))


def make():
    return Scaled()
'''


def write_bundle(work):
    """The part of a bundle the exporter reads: the manifest and the copy of the user's file."""
    bundle = os.path.join(work, "bundle")
    os.makedirs(os.path.join(bundle, "source"))
    with open(os.path.join(bundle, "source", "model.py"), "w") as f:
        f.write(MODEL)
    manifest = {"source": {"file": "model.py", "dir": "", "factory": "make", "args": {}}, "seed": 1,
                "loss": "mse", "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 4]}],
                "target": {"name": "y", "dtype": "float32", "shape": [2, 3]}}
    with open(os.path.join(bundle, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    return bundle


def main():
    source_dir, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    bundle = write_bundle(work)
    log = os.path.join(bundle, "compiled", "fp32.log")
    inputs = json.dumps([{"shape": [2, 4], "dtype": "float32"}, {"shape": [2, 3], "dtype": "float32"}])
    done = subprocess.run([sys.executable, os.path.join(source_dir, "scenarios", "export", "aot_compile.py"),
                           "--bundle", bundle, "--inputs", inputs, "--out", os.path.join(work, "model.pt2"),
                           "--log", log], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said = [line for line in done.stderr.splitlines() if line.startswith("aot_compile:")]
    checks = [
        ("exit status 2", done.returncode == 2),
        ("one refusal line", len(said) == 1),
        ("the line names the op", bool(said) and "trainlab_test::scale" in said[0]),
        ("the line names the model's line", bool(said) and "model.py:" in said[0]),
        ("the line points at the log", bool(said) and log in said[0]),
        ("the log keeps the traceback", os.path.exists(log) and "Traceback" in open(log).read()),
        ("no package", not os.path.exists(os.path.join(work, "model.pt2"))),
    ]
    for name, ok in checks:
        print("%-36s %s" % (name, "ok" if ok else "FAILED"))
    if not all(ok for _, ok in checks):
        print(done.stderr[-3000:])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
