"""trainlab's compiled variant (Inductor, ahead of time, run from C++) against PyTorch's own
torch.compile on the same model, batch, optimizer and threads, measured side by side in one
invocation: rounds interleave `trainlab run --compiled on` (its run.json's median step and samples/s)
with a Python training loop over torch.compile(model) timed step by step, alternating which side
goes first (ABBA, so a machine drifting over the run favours neither). The table gives each side's
median step time, the ratios per round of the median steps (robust to a neighbour's burst) and of
the samples/s over all timed steps, and each side's compile time.

  python bench/compiled_vs_torch_compile.py --trainlab build/trainlab --scenario tinyops \
      [--rounds 3] [--steps 50] [--precision fp32|bf16] [-k NAME=VALUE ...]
  python bench/compiled_vs_torch_compile.py --trainlab build/trainlab --model models/a --model models/b ...

Run it with the PyTorch trainlab was built against (the quick start's venv; for bundles of library
models, the Python where the model imports, also given to trainlab as $TRAINLAB_PYTHON). A
scenario's model is its Python twin from scenarios/export/aot_compile.py (a parity test keeps it
equal to the C++ model), its optimizer mirrors the scenario's C++ make_optimizer; a bundle's model
is the one its package is exported from (aot_compile.bundle_twin), its optimizer the manifest's,
its batches synthesized from the manifest's shapes and ranges. Both sides exclude compile time from
their timed steps; trainlab's compile time is its package's export + compile (kept in the bundle,
so later rounds reuse it), torch.compile's is its first step's time less a compiled step's.

A round measured under load is measured again, as the lab does (harness/runner/lab.cpp): trainlab's
side is disturbed where its run.json says so (disturbed, disturbed_kept), the Python side where
other processes took more of the CPU over its timed steps than the lab's limit
(lab.disturbed_other_cpu_pct in configs/thresholds.json; /proc/stat busy time less this process's
own). A disturbed round is run again up to lab.disturbance_reruns_per_variant times; one still
disturbed is left out of the headline ratios, and the table says how many rounds it rests on (none
left: no headline, exit status 1)."""
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


# A bundle's optimizer (scenarios/user_model.cpp make_optimizer, from the manifest). trainlab runs
# Adam/AdamW as ATen's fused kernel (scenarios/fused_adam.h), so this side does too (fused=True):
# the table compares the compiled steps, not two implementations of one optimizer.
BUNDLE_OPTIMIZERS = {
    "sgd": lambda params, o: torch.optim.SGD(params, lr=o["lr"], momentum=o.get("momentum", 0.9),
                                             weight_decay=o.get("weight_decay", 0.0)),
    "adam": lambda params, o: torch.optim.Adam(params, lr=o["lr"], weight_decay=o.get("weight_decay", 0.0),
                                               fused=True),
    "adamw": lambda params, o: torch.optim.AdamW(params, lr=o["lr"], weight_decay=o.get("weight_decay", 0.01),
                                                 fused=True),
}


def lab_thresholds():
    """The lab's disturbance limits (configs/thresholds.json): other processes' CPU share past which
    a measurement is disturbed, and how many times a disturbed one is measured again."""
    with open(os.path.join(HERE, "..", "configs", "thresholds.json")) as f:
        thresholds = json.load(f)["thresholds"]
    return (float(thresholds["lab.disturbed_other_cpu_pct"]["value"]),
            int(thresholds["lab.disturbance_reruns_per_variant"]["value"]))


def machine_busy_s():
    """Seconds of CPU the whole machine spent busy (/proc/stat: all but idle and iowait), and this
    process's own (user + system, all its threads); None where /proc/stat cannot be read."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)
    own = os.times()
    return busy / ticks, own.user + own.system


def other_cpu_pct(before, after, wall_s):
    """Other processes' share of the machine's CPU between two machine_busy_s() readings."""
    if before is None or after is None or wall_s <= 0:
        return None
    others_s = (after[0] - before[0]) - (after[1] - before[1])
    return max(0.0, 100.0 * others_s / (wall_s * (os.cpu_count() or 1)))


def read_manifest(bundle):
    with open(os.path.join(bundle, "manifest.json")) as f:
        return json.load(f)


def example_batch(scenario, knobs, batch, bundle=None):
    """One batch as the scenario's in-memory dataset makes it (scenarios/<name>.cpp), or from a
    bundle's manifest (its shapes, batch first)."""
    if bundle is not None:
        manifest = read_manifest(bundle)
        specs = [dict(spec, shape=[batch] + list(spec["shape"][1:])) for spec in manifest["inputs"] + [manifest["target"]]]
        tensors = aot_compile.example_batch(specs, "cpu")
        if manifest["loss"] == "model":  # the model takes its target too, as a keyword (model_bundle.cpp target_is_input)
            return tensors, tensors[-1]
        return tensors[:-1], tensors[-1]
    if scenario == "tinyops":
        x = torch.randn(batch, int(knobs["width"]))
        return [x], torch.tanh(x.roll(1, 1))
    return [torch.randn(batch, int(knobs["in_features"]))], torch.randint(0, int(knobs["classes"]), (batch,))


def trainlab_round(args, results):
    """One `trainlab run --compiled on`; returns (samples/s, median step ms, its resolved spec,
    intra-op threads, compile s)."""
    before = set(glob.glob(os.path.join(results, "*", "run.json")))
    source = ["--model", args.model_bundle] if args.model_bundle else ["--scenario", args.scenario]
    command = [args.trainlab, "run"] + source + ["--compiled", "on", "--steps", str(args.steps),
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
        variants = json.load(f)["variants"]
    # The repetition that counts (one the run measured again after a disturbance is left out there).
    counted = [v for v in variants if not v.get("error") and not v.get("disturbed") and not v.get("superseded")]
    variant = counted[0] if counted else variants[-1]
    if variant["compile_info"].get("method") != "inductor-aot":
        sys.exit("compiled_vs_torch_compile: trainlab did not use Inductor: " + str(variant.get("error")))
    disturbed = variant.get("disturbed_kept") or variant.get("disturbed") or ""
    return (variant["aggregate"]["samples_per_s"], variant["aggregate"]["step_ms_p50"], variant["spec"],
            variant["environment"]["intra_op_threads"],
            variant["compile_info"].get("compile_s", 0.0), disturbed)


def build_compiled(scenario, spec, bundle):
    """(model, torch.compile(model), its optimizer): the scenario's twin or the bundle's model."""
    torch.manual_seed(spec["seed"])
    if bundle is not None:
        net, loss = aot_compile.bundle_twin(bundle)  # registers the user's module: torch.compile imports it
        optimizer_spec = read_manifest(bundle)["optimizer"]
        make_optimizer = lambda params: BUNDLE_OPTIMIZERS[optimizer_spec["name"]](params, optimizer_spec)
    else:
        net, loss = aot_compile.TWINS[scenario](spec["knobs"])
        make_optimizer = OPTIMIZERS[scenario]
    model = aot_compile.WithLoss(net, loss, "cpu", spec["precision"] == "bf16").train()
    return model, torch.compile(model), make_optimizer(model.parameters())


def torch_compile_round(scenario, spec, threads, steps, warmup, compiled_model=None, bundle=None):
    """torch.compile over the twin (under autocast for bf16, as trainlab exports it): warm-up steps
    (compiling in the first), then timed steps, each timed on its own. Returns (samples/s, median
    step ms, the compiled model, the first warm-up step's seconds when this round compiled)."""
    torch.set_num_threads(threads)
    batch = spec["batch_size"]
    first_step_s = None
    if compiled_model is None:
        compiled_model = build_compiled(scenario, spec, bundle)
    model, step_fn, optimizer = compiled_model
    batches = [example_batch(scenario, spec["knobs"], batch, bundle) for _ in range(8)]

    def step(i):
        inputs, targets = batches[i % len(batches)]
        (loss,) = step_fn(*inputs, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for i in range(warmup):
        start = time.perf_counter()
        step(i)
        if i == 0:
            first_step_s = time.perf_counter() - start
    step_s = []
    busy_before, timed_start = machine_busy_s(), time.perf_counter()
    for i in range(steps):
        start = time.perf_counter()
        step(i)
        step_s.append(time.perf_counter() - start)
    others_pct = other_cpu_pct(busy_before, machine_busy_s(), time.perf_counter() - timed_start)
    return batch * steps / sum(step_s), 1e3 * statistics.median(step_s), compiled_model, first_step_s, others_pct


def compare(args, results):
    """The rounds for one scenario or bundle: a table row (dict). Odd rounds run trainlab first,
    even rounds torch.compile first; the first torch.compile round compiles in its warm-up. A round
    either side of which was disturbed is run again (at most the lab's re-runs for the whole
    comparison); one still disturbed is kept apart, out of the ratios."""
    limit_pct, max_reruns = lab_thresholds()
    ours, theirs, compiled_model, torch_compile_s = [], [], None, None
    disturbed_rounds = []  # (round, why)
    reruns = 0
    name = os.path.basename(os.path.normpath(args.model_bundle)) if args.model_bundle else args.scenario
    spec = threads = trainlab_compile_s = None
    r = 0
    while r < args.rounds:
        sides, why = {}, []
        for side in (("trainlab", "python") if r % 2 == 0 or spec is None else ("python", "trainlab")):
            if side == "trainlab":
                sps, p50_ms, spec, threads, compile_s, disturbed = trainlab_round(args, results)
                if trainlab_compile_s is None:  # the first round builds the package; later ones find it
                    trainlab_compile_s = compile_s
                sides["trainlab"] = (sps, p50_ms)
                if disturbed:
                    why.append("trainlab: " + disturbed)
            else:
                sps_py, p50_py_ms, compiled_model, first_step_s, others_pct = torch_compile_round(
                    args.scenario, spec, threads, args.steps, args.warmup, compiled_model, args.model_bundle)
                if torch_compile_s is None:  # the first round compiles; later rounds reuse the compiled model
                    torch_compile_s = first_step_s - 1e-3 * p50_py_ms
                sides["python"] = (sps_py, p50_py_ms)
                if others_pct is not None and others_pct > limit_pct:
                    why.append("torch.compile: another process took %.0f %% of the CPU" % others_pct)
        a, b = sides["trainlab"], sides["python"]
        line = ("%s round %d: median step trainlab %.2f ms, torch.compile %.2f ms (ratio %.3f); samples/s %.1f vs %.1f "
                "(ratio %.3f)" % (name, r + 1, a[1], b[1], b[1] / a[1], a[0], b[0], a[0] / b[0]))
        if why and reruns < max_reruns:
            reruns += 1
            print(line + " -- disturbed (%s): measured again" % "; ".join(why), flush=True)
            continue
        if why:
            disturbed_rounds.append((r + 1, "; ".join(why)))
            print(line + " -- disturbed (%s), re-runs spent: left out" % "; ".join(why), flush=True)
        else:
            ours.append(a)
            theirs.append(b)
            print(line, flush=True)
        r += 1
    step_ratios = [b[1] / a[1] for a, b in zip(ours, theirs)]
    throughput_ratios = [a[0] / b[0] for a, b in zip(ours, theirs)]
    return {"name": name, "batch": spec["batch_size"], "threads": threads, "trainlab_compile_s": trainlab_compile_s,
            "torch_compile_s": torch_compile_s,
            "trainlab_ms": statistics.median(a[1] for a in ours) if ours else None,
            "torch_compile_ms": statistics.median(b[1] for b in theirs) if theirs else None,
            "step_ratios": step_ratios, "throughput_ratios": throughput_ratios,
            "disturbed_rounds": disturbed_rounds, "reruns": reruns}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trainlab", required=True, help="the trainlab binary")
    parser.add_argument("--scenario", choices=sorted(OPTIMIZERS))
    parser.add_argument("--model", action="append", default=[], help="a model bundle (trainlab model add); repeatable")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("-k", "--knob", action="append", default=[])
    args = parser.parse_args()
    if args.rounds < 1 or args.steps < 1 or args.warmup < 1:
        sys.exit("compiled_vs_torch_compile: --rounds, --steps and --warmup must be at least 1")
    if (args.scenario is None) == (not args.model):
        sys.exit("compiled_vs_torch_compile: give --scenario or one or more --model bundles")
    results = tempfile.mkdtemp(prefix="trainlab-compile-bench-")
    rows = []
    for bundle in args.model or [None]:
        args.model_bundle = bundle
        rows.append(compare(args, results))
    # ratios above 1: trainlab's compiled step is faster. "step": torch.compile's median step over
    # trainlab's, per round; "samples/s": trainlab's over torch.compile's, all timed steps of a round.
    # Rounds left out (disturbed past the re-runs) are counted in their own column; a row with no
    # clean round has no ratios.
    print("\n| model | precision | batch | threads | trainlab compile s | torch.compile compile s "
          "| trainlab median step ms | torch.compile median step ms | step ratio (median, range) "
          "| rounds trainlab faster | samples/s ratio (median, range) | rounds left out (disturbed) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    clean_rows = 0
    for row in rows:
        steps, throughput = row["step_ratios"], row["throughput_ratios"]
        left_out = "%d of %d (%d re-run)" % (len(row["disturbed_rounds"]), args.rounds, row["reruns"])
        compile_s = "%.1f" % row["torch_compile_s"] if row["torch_compile_s"] is not None else "-"
        if not steps:
            print("| %s | %s | %d | %d | %.1f | %s | - | - | - (every round disturbed) | - | - | %s |" %
                  (row["name"], args.precision, row["batch"], row["threads"], row["trainlab_compile_s"], compile_s,
                   left_out))
            continue
        clean_rows += 1
        print("| %s | %s | %d | %d | %.1f | %s | %.2f | %.2f | %.3f (%.3f-%.3f) | %d of %d | %.3f (%.3f-%.3f) | %s |" %
              (row["name"], args.precision, row["batch"], row["threads"], row["trainlab_compile_s"], compile_s,
               row["trainlab_ms"], row["torch_compile_ms"], statistics.median(steps), min(steps), max(steps),
               sum(1 for r in steps if r > 1.0), len(steps), statistics.median(throughput), min(throughput),
               max(throughput), left_out))
    for row in rows:
        for number, why in row["disturbed_rounds"]:
            print("%s round %d left out: %s" % (row["name"], number, why))
    if clean_rows < len(rows):
        sys.exit("compiled_vs_torch_compile: no undisturbed round for %d of %d models: no headline for them; "
                 "run again on a quieter machine" % (len(rows) - clean_rows, len(rows)))

if __name__ == "__main__":
    main()
