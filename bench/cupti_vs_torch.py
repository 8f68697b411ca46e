"""trainlab's profile window (CUPTI on CUDA) beside torch.profiler on the same model, batch and
steps: reads the run folder of `trainlab profile --scenario tinyops` (run.json and its trace) and
the JSON line bench/torch_profiler_peer.py printed for the tinyops twin, and sets side by side the
kernels per step, the kernel time per step (us) and the window's overhead (profiled step against
plain step, %). scripts/device_check.sh runs it; it reads files only (no torch import).

  python cupti_vs_torch.py --run results/<run-id> --peer peer.json [--out cupti_vs_torch.json]

Prints a small table and writes the same figures as JSON to --out. Exit status 2 with one line on
stderr when an input is missing or unreadable.
"""
import argparse
import gzip
import json
import os
import sys
import tempfile


def fail(message):
    sys.stderr.write("cupti_vs_torch: %s\n" % message)
    sys.exit(2)


def read_json(path):
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        fail("%s: %s" % (path, error))


def last_json_line(path):
    try:
        with open(path) as f:
            lines = [line for line in f.read().splitlines() if line.startswith("{")]
    except OSError as error:
        fail("%s: %s" % (path, error))
    if not lines:
        fail("%s: no JSON line from torch_profiler_peer.py" % path)
    return json.loads(lines[-1])


def trainlab_side(run_dir):
    """Kernels and kernel time per window step from the first variant's trace, and its overhead."""
    record = read_json(os.path.join(run_dir, "run.json"))
    variants = record.get("variants") or fail("%s/run.json: no variants" % run_dir)
    profile = variants[0].get("profile") or fail("%s/run.json: the variant has no profile window" % run_dir)
    trace = profile.get("trace", "")
    if trace and not os.path.isabs(trace) and not os.path.exists(trace):
        trace = os.path.join(run_dir, trace)
    if not trace or not os.path.exists(trace):
        fail("%s: the profile's trace '%s' is missing" % (run_dir, profile.get("trace", "")))
    events = read_json(trace).get("traceEvents", [])
    complete = [e for e in events if e.get("ph") == "X"]
    device = str(variants[0].get("device") or variants[0].get("spec", {}).get("device", ""))
    # A CPU run has no kernels (traces from before 2026-11-27 wrote their CPU compute lane as kernels).
    kernels = [] if device.startswith("cpu") else [e for e in complete if e.get("cat") == "kernel"]
    steps = sum(1 for e in complete if str(e.get("name", "")).startswith("ProfilerStep#")) or \
        int(profile.get("window_steps", 0)) or 1
    by_name = {}
    for e in kernels:
        by_name[e.get("name", "")] = by_name.get(e.get("name", ""), 0) + 1
    return {
        "window_steps": steps,
        "kernels_per_step_by_name": {name: n / steps for name, n in by_name.items()},
        "kernels_per_step": len(kernels) / steps,
        "kernel_us_per_step": sum(float(e.get("dur", 0)) for e in kernels) / steps,
        "memcpy_per_step": sum(1 for e in complete if e.get("cat") == "gpu_memcpy") / steps,
        "memset_per_step": sum(1 for e in complete if e.get("cat") == "gpu_memset") / steps,
        "overhead_pct": profile.get("window_overhead_pct"),
        "step_ms_in_window": profile.get("step_ms_in_window"),
        "step_ms_outside_window": profile.get("step_ms_outside_window"),
        "events_per_step": profile.get("events_per_step"),
        "device": device,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="the run folder of trainlab profile")
    parser.add_argument("--peer", required=True, help="the output of torch_profiler_peer.py (its last JSON line)")
    parser.add_argument("--out", default="", help="where the comparison is written as JSON")
    args = parser.parse_args()
    ours, theirs = trainlab_side(args.run), last_json_line(args.peer)
    rows = [("kernels per step", "kernels_per_step", "%.0f"), ("kernel time per step (us)", "kernel_us_per_step", "%.1f"),
            ("window overhead (%)", "overhead_pct", "%+.1f")]
    print("%-28s %14s %16s" % ("", "trainlab", "torch.profiler"))
    for label, key, form in rows:
        cells = [form % side[key] if isinstance(side.get(key), (int, float)) else "n/a" for side in (ours, theirs)]
        print("%-28s %14s %16s" % (label, cells[0], cells[1]))
    result = {"trainlab": ours, "torch_profiler": theirs}
    if theirs.get("kernels_per_step"):
        result["kernel_count_ratio"] = ours["kernels_per_step"] / theirs["kernels_per_step"]
    if theirs.get("kernel_us_per_step"):
        result["kernel_time_ratio"] = ours["kernel_us_per_step"] / theirs["kernel_us_per_step"]
    # Where the counts differ, by kernel name: the same workload gives the same launches, so a
    # difference names either a profiler's gap or work that only one side's loop does.
    ours_by_name, theirs_by_name = ours.pop("kernels_per_step_by_name", {}), theirs.pop("kernels_per_step_by_name", {})
    if ours_by_name or theirs_by_name:
        names = set(ours_by_name) | set(theirs_by_name)
        diffs = sorted(((ours_by_name.get(n, 0.0) - theirs_by_name.get(n, 0.0), n) for n in names),
                       key=lambda d: -abs(d[0]))
        result["kernel_names"] = {"trainlab_only": sorted(set(ours_by_name) - set(theirs_by_name))[:20],
                                  "torch_profiler_only": sorted(set(theirs_by_name) - set(ours_by_name))[:20],
                                  "largest_count_differences": [
                                      {"name": n[:160], "trainlab_per_step": ours_by_name.get(n, 0.0),
                                       "torch_profiler_per_step": theirs_by_name.get(n, 0.0)}
                                      for d, n in diffs[:12] if abs(d) > 1e-9]}
        print("kernel names: %d trainlab only, %d torch.profiler only; largest per-step differences:" % (
            len(set(ours_by_name) - set(theirs_by_name)), len(set(theirs_by_name) - set(ours_by_name))))
        for d, n in diffs[:6]:
            if abs(d) > 1e-9:
                print("  %+8.1f  %s" % (d, n[:110]))
    if args.out:  # through a private temporary name renamed over it, as trainlab writes its files
        out_dir = os.path.dirname(os.path.abspath(args.out))
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(args.out) + ".tmp-", dir=out_dir)
        with os.fdopen(fd, "w") as f:
            json.dump(result, f, indent=1)
        os.chmod(tmp, 0o644)
        os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
