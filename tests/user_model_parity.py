"""Parity of the C++ eager loop with PyTorch eager on the user's own model: for each example of
examples/ (dropout off, so both sides compute the same function), `trainlab model add` writes the
bundle, Python saves one batch of data, `trainlab run --model B --data D` trains the fp32 eager
variant on it for STEPS steps, and Python trains the same model (the bundle's initial parameters
and buffers, the optimizer its manifest names) on the same batch for the same steps. Each step's
loss must agree within TOLERANCE (relative): the same ATen kernels run on both sides; the loader
presents the batch's samples in another order each step, which changes only the order of the
loss's mean (well under 1e-5 measured).

Then the saved batch serves twice more: as `model add --example` (the manifest takes its shapes,
its integers' observed range and its floats' mean/std), and as the data of a loader sweep
(`sweep --model B --data D --workers 0,1`), which needs a data source.

  python user_model_parity.py TRAINLAB SOURCE_DIR WORK_DIR
Exit status 0 when every check holds, 1 otherwise; a table per example either way.
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import torch

STEPS = 6
TOLERANCE = 1e-4
EXAMPLES = [
    ("small_cnn", "examples/small_cnn.py:small_cnn",
     ["--arg", "width=8", "--arg", "dropout=0.0", "--input", "images:float32[16,3,16,16]",
      "--target", "labels:int64[16]:0..9", "--optimizer", "sgd", "--lr", "0.05"]),
    ("tiny_lm", "examples/tiny_lm.py:tiny_lm",
     ["--arg", "vocab=200", "--arg", "dim=32", "--arg", "layers=2", "--arg", "heads=2", "--arg", "max_seq=16",
      "--arg", "dropout=0.0", "--input", "tokens:int64[8,16]:0..199", "--target", "next_tokens:int64[8,16]:0..199",
      "--loss", "lm_loss"]),
    ("two_tower", "examples/two_tower.py:two_tower",
     ["--arg", "users=300", "--arg", "items=500", "--arg", "dim=16", "--input", "user_ids:int64[64]:0..299",
      "--input", "user_features:float32[64,8]", "--input", "item_ids:int64[64]:0..499",
      "--input", "item_categories:int64[64]:0..49", "--target", "clicked:int64[64]:0..1", "--loss", "click_loss",
      "--optimizer", "adam", "--lr", "0.01"]),
]


def one_batch(manifest, seed):
    """One batch of the manifest's specs: integers uniform in their range, floats normal."""
    g = torch.Generator().manual_seed(seed)
    batch = {}
    for spec in manifest["inputs"] + [manifest["target"]]:
        if spec["dtype"] == "float32":
            batch[spec["name"]] = torch.randn(spec["shape"], generator=g)
        else:
            lo, hi = spec["range"]
            batch[spec["name"]] = torch.randint(lo, hi + 1, spec["shape"], generator=g)
    return batch


def python_losses(bundle, manifest, batch):
    """The same model trained in PyTorch eager from the bundle's initial state on the batch."""
    source = manifest["source"]
    spec = importlib.util.spec_from_file_location("user_model_" + manifest["name"],
                                                  os.path.join(bundle, "source", source["file"]))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = getattr(module, source["factory"])(**source["args"])
    initial = torch.jit.load(os.path.join(bundle, "model.pt")).state_dict()
    model.load_state_dict(initial)
    model.train()
    from bundle_model import LOSSES  # the loss names `trainlab model add` takes

    loss_fn = LOSSES.get(manifest["loss"]) or getattr(module, manifest["loss"])
    o = manifest["optimizer"]
    if o["name"] == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=o["lr"], momentum=o["momentum"], weight_decay=o["weight_decay"])
    elif o["name"] == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=o["lr"], weight_decay=o["weight_decay"])
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=o["lr"], weight_decay=o["weight_decay"])
    inputs = [batch[s["name"]] for s in manifest["inputs"]]
    target = batch[manifest["target"]["name"]]
    losses = []
    for _ in range(STEPS):
        loss = loss_fn(model(*inputs), target)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return losses


def main():
    trainlab, source_dir, work = sys.argv[1:4]
    sys.path.insert(0, os.path.join(source_dir, "scenarios", "export"))  # bundle_model.LOSSES
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    torch.set_num_threads(1)
    failed = False
    for name, source, args in EXAMPLES:
        bundle = os.path.join(work, name)
        subprocess.run([trainlab, "model", "add", os.path.join(source_dir, source), *args, "--out", bundle, "--no-package"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(bundle, "manifest.json")) as f:
            manifest = json.load(f)
        batch = one_batch(manifest, seed=7)
        data = os.path.join(work, name + ".pt")
        torch.save(batch, data)
        results = os.path.join(work, name + "-results")
        subprocess.run([trainlab, "run", "--model", bundle, "--data", data, "--steps", str(STEPS), "--warmup", "0",
                        "--threads", "1", "--results", results], check=True, stdout=subprocess.DEVNULL)
        run_dir = os.path.join(results, os.listdir(results)[0])
        with open(os.path.join(run_dir, "run.json")) as f:
            run = json.load(f)
        cpp = [step["loss"] for step in run["variants"][0]["steps"]][:STEPS]
        py = python_losses(bundle, manifest, batch)
        worst = max(abs(c - p) / max(1e-12, abs(p)) for c, p in zip(cpp, py))
        ok = len(cpp) == STEPS and worst <= TOLERANCE
        failed = failed or not ok
        print("%-10s %s  worst relative difference %.2e (tolerance %.0e)" % (name, "ok  " if ok else "FAIL", worst, TOLERANCE))
        for i, (c, p) in enumerate(zip(cpp, py)):
            print("    step %d  C++ %.8f  Python %.8f" % (i, c, p))
    failed = check_example_and_loader_sweep(trainlab, source_dir, work) or failed
    sys.exit(1 if failed else 0)


def check_example_and_loader_sweep(trainlab, source_dir, work):
    """The two-tower batch saved above: a bundle from it (--example), then a loader sweep on it."""
    data = os.path.join(work, "two_tower.pt")
    batch = torch.load(data)
    bundle = os.path.join(work, "two_tower_from_example")
    subprocess.run([trainlab, "model", "add", os.path.join(source_dir, "examples/two_tower.py:two_tower"), "--arg",
                    "users=300", "--arg", "items=500", "--arg", "dim=16", "--example", data, "--target", "clicked",
                    "--loss", "click_loss", "--out", bundle, "--no-package"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    names = [s["name"] for s in manifest["inputs"]]
    ids = manifest["inputs"][0]
    features = manifest["inputs"][1]
    problems = []
    if names != ["user_ids", "user_features", "item_ids", "item_categories"] or manifest["target"]["name"] != "clicked":
        problems.append("names %s / %s" % (names, manifest["target"]["name"]))
    if ids["range"] != [int(batch["user_ids"].min()), int(batch["user_ids"].max())]:
        problems.append("user_ids range %s" % ids["range"])
    if abs(features["mean"] - float(batch["user_features"].mean())) > 1e-6:
        problems.append("user_features mean %s" % features["mean"])
    if manifest["batch_size"] != 64:
        problems.append("batch %s" % manifest["batch_size"])
    swept = os.path.join(work, "sweep-results")
    sweep = subprocess.run([trainlab, "sweep", "--model", bundle, "--data", data, "--workers", "0,1", "--steps", "2",
                            "--warmup", "1", "--results", swept], stdout=subprocess.DEVNULL)
    if sweep.returncode != 0:
        problems.append("loader sweep exit status %d" % sweep.returncode)
    else:
        with open(os.path.join(swept, os.listdir(swept)[0], "run.json")) as f:
            workers = sorted(v["spec"]["workers"] for v in json.load(f)["variants"])
        if workers != [0, 1]:
            problems.append("loader sweep ran workers %s" % workers)
    print("--example and loader sweep: %s" % ("ok" if not problems else "FAIL: " + "; ".join(problems)))
    return bool(problems)


if __name__ == "__main__":
    main()
