"""trainlab's compiled variant (Inductor, ahead of time, run from C++) against PyTorch's own
torch.compile on the same model, batch, optimizer and threads, measured side by side in one
invocation: rounds interleave `trainlab run --compiled on` (its run.json's samples/s) with a Python
training loop over torch.compile(model), and the table gives each side's median samples/s and the
ratio per round.

  python bench/compiled_vs_torch_compile.py --trainlab build/trainlab --scenario tinyops \
      [--rounds 3] [--steps 50] [--precision fp32|bf16] [-k NAME=VALUE ...]

Run it with the PyTorch trainlab was built against (the quick start's venv). The model is the
scenario's Python twin from scenarios/export/aot_compile.py (a parity test keeps it equal to the
C++ model); the optimizer mirrors the scenario's C++ make_optimizer. Both sides exclude compile
time from their timed steps.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scenarios", "export"))
import aot_compile  # noqa: E402  (the twins)

# The scenarios' C++ optimizers (make_optimizer in scenarios/<name>.cpp).
OPTIMIZERS = {
    "mlp": lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9),
    "commheavy": lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9),
    "tinyops": lambda params: torch.optim.SGD(params, lr=1e-3),
}


def example_batch(scenario, knobs, batch):
    """One batch as the scenario's in-memory dataset makes it (scenarios/<name>.cpp)."""
    if scenario == "tinyops":
        x = torch.randn(batch, int(knobs["width"]))
        return [x], torch.tanh(x.roll(1, 1))
    return [torch.randn(batch, int(knobs["in_features"]))], torch.randint(0, int(knobs["classes"]), (batch,))


def trainlab_round(args, results):
    """One `trainlab run --compiled on`; returns (samples/s, its resolved spec, intra-op threads)."""
    before = set(glob.glob(os.path.join(results, "*", "run.json")))
    command = [args.trainlab, "run", "--scenario", args.scenario, "--compiled", "on", "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--precision", args.precision, "--sampler", "off", "--results", results]
    for knob in args.knob:
        command += ["-k", knob]
    if args.batch:
        command += ["--batch", str(args.batch)]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit("compiled_vs_torch_compile: trainlab failed: " + done.stderr.strip().splitlines()[-1])
    (path,) = set(glob.glob(os.path.join(results, "*", "run.json"))) - before
    with open(path) as f:
        variant = json.load(f)["variants"][0]
    if variant["compile_info"].get("method") != "inductor-aot":
        sys.exit("compiled_vs_torch_compile: trainlab did not use Inductor: " + str(variant.get("error")))
    return variant["aggregate"]["samples_per_s"], variant["spec"], variant["environment"]["intra_op_threads"]


def torch_compile_round(scenario, spec, threads, steps, warmup, compiled_model=None):
    """torch.compile over the twin (under autocast for bf16, as trainlab exports it): warm-up steps
    (compiling in the first), then timed steps."""
    torch.set_num_threads(threads)
    batch = spec["batch_size"]
    if compiled_model is None:
        torch.manual_seed(spec["seed"])
        net, loss = aot_compile.TWINS[scenario](spec["knobs"])
        model = aot_compile.WithLoss(net, loss, "cpu", spec["precision"] == "bf16").train()
        compiled_model = (model, torch.compile(model), OPTIMIZERS[scenario](model.parameters()))
    model, step_fn, optimizer = compiled_model
    batches = [example_batch(scenario, spec["knobs"], batch) for _ in range(8)]

    def step(i):
        inputs, targets = batches[i % len(batches)]
        (loss,) = step_fn(*inputs, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for i in range(warmup):
        step(i)
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    elapsed = time.perf_counter() - start
    return batch * steps / elapsed, compiled_model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trainlab", required=True, help="the trainlab binary")
    parser.add_argument("--scenario", required=True, choices=sorted(OPTIMIZERS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("-k", "--knob", action="append", default=[])
    args = parser.parse_args()
    if args.rounds < 1 or args.steps < 1 or args.warmup < 1:
        sys.exit("compiled_vs_torch_compile: --rounds, --steps and --warmup must be at least 1")
    results = tempfile.mkdtemp(prefix="trainlab-compile-bench-")
    ours, theirs, compiled_model = [], [], None
    for r in range(args.rounds):
        sps, spec, threads = trainlab_round(args, results)
        ours.append(sps)
        # The first torch.compile round compiles (in its warm-up); later rounds reuse it.
        sps_py, compiled_model = torch_compile_round(args.scenario, spec, threads, args.steps, args.warmup,
                                                     compiled_model)
        theirs.append(sps_py)
        print("round %d: trainlab %.1f samples/s, torch.compile %.1f samples/s, ratio %.3f" %
              (r + 1, sps, sps_py, sps / sps_py), flush=True)
    ratios = [a / b for a, b in zip(ours, theirs)]
    print("\n| scenario | precision | batch | threads | trainlab compiled samples/s (median) | torch.compile samples/s (median) "
          "| ratio (median) | ratio range |")
    print("|---|---|---|---|---|---|---|---|")
    print("| %s | %s | %d | %d | %.1f | %.1f | %.3f | %.3f-%.3f |" %
          (args.scenario, args.precision, spec["batch_size"], threads, statistics.median(ours), statistics.median(theirs),
           statistics.median(ratios), min(ratios), max(ratios)))


if __name__ == "__main__":
    main()
