"""Reads a trainlab trace folder with PyTorch's own tools and checks what they see (run by
scripts/check_trace_compat.sh, in a side environment: these tools are cross-checks, never
dependencies of trainlab).

  python trace_compat_check.py TRACE_DIR DIAGNOSIS_JSON

TRACE_DIR holds one variant's rank traces (rankN.pt.trace.json.gz); DIAGNOSIS_JSON is what
`trainlab diagnose TRACE_DIR` wrote for the same traces. Checks:
  - Holistic Trace Analysis loads every rank (one per file) and its temporal breakdown has a
    row per rank with compute time above zero (on the CPU: trainlab's CPU compute lane);
  - the TensorBoard profiler plugin loads every rank as a worker, and its DataLoader share of
    the step is trainlab's data-wait share within 1 point, rank by rank.
Prints what it measured; exit status 1 when a check fails.
"""
import glob
import json
import logging
import os
import sys
import tempfile

logging.disable(logging.WARNING)


def hta_check(trace_dir, expected_ranks):
    from hta.trace_analysis import TraceAnalysis

    analysis = TraceAnalysis(trace_dir=trace_dir)
    ranks = sorted(analysis.t.get_ranks())
    breakdown = analysis.get_temporal_breakdown(visualize=False)
    print("HTA: ranks %s; temporal breakdown:" % ranks)
    print(breakdown.to_string(index=False))
    failures = []
    if ranks != expected_ranks:
        failures.append("HTA loaded ranks %s, expected %s" % (ranks, expected_ranks))
    if len(breakdown) != len(expected_ranks):
        failures.append("HTA temporal breakdown has %d rows for %d ranks" % (len(breakdown), len(expected_ranks)))
    elif not (breakdown["compute_time(us)"] > 0).all():
        failures.append("HTA temporal breakdown shows no compute time on some rank")
    return failures


def tensorboard_shares(trace_dir):
    from torch_tb_profiler import io
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.event_parser import ProfileRole
    from torch_tb_profiler.profiler.loader import RunLoader

    cache_dir = tempfile.mkdtemp(prefix="tb-cache-")
    run = RunLoader(os.path.basename(trace_dir), trace_dir, io.Cache(cache_dir)).load()
    workers = sorted(run.workers)
    shares = {}
    for path in sorted(glob.glob(os.path.join(trace_dir, "*.pt.trace.json*"))):
        worker = os.path.basename(path).split(".pt.trace.json")[0]
        data = RunProfileData.parse(worker, None, path, cache_dir)
        costs = data.avg_costs.costs
        shares[worker] = 100.0 * costs[ProfileRole.DataLoader] / costs[ProfileRole.Total]
    return workers, shares


def trainlab_data_wait_shares(diagnosis_path):
    with open(diagnosis_path) as f:
        diagnosis = json.load(f)
    shares = {}
    for d in diagnosis["diagnoses"]:
        summary = d["summary"]
        shares["rank%d" % summary.get("rank", 0)] = summary["shares_pct"]["data_wait"]
    return shares


def main():
    if len(sys.argv) != 3:
        print("usage: trace_compat_check.py TRACE_DIR DIAGNOSIS_JSON", file=sys.stderr)
        return 2
    trace_dir, diagnosis_path = sys.argv[1], sys.argv[2]
    traces = sorted(glob.glob(os.path.join(trace_dir, "rank*.pt.trace.json*")))
    expected_ranks = sorted(int(os.path.basename(t)[4:].split(".")[0]) for t in traces)
    failures = hta_check(trace_dir, expected_ranks)

    workers, tb = tensorboard_shares(trace_dir)
    ours = trainlab_data_wait_shares(diagnosis_path)
    print("TensorBoard plugin: workers %s" % workers)
    workers = [w for w in workers if w != "All"]  # "All": the plugin's distributed view over the ranks
    if workers != ["rank%d" % r for r in expected_ranks]:
        failures.append("TensorBoard plugin loaded workers %s" % workers)
    for worker in sorted(tb):
        mine = ours.get(worker)
        print("  %s: DataLoader %.2f %% of the step (TensorBoard), data wait %s %% (trainlab)"
              % (worker, tb[worker], "?" if mine is None else "%.2f" % mine))
        if mine is None or abs(tb[worker] - mine) > 1.0:
            failures.append("%s: TensorBoard's DataLoader share %.2f %% is not trainlab's data wait %s %% within 1 point"
                            % (worker, tb[worker], mine))
    for failure in failures:
        print("FAIL: " + failure)
    print("trace compatibility: %s" % ("FAILED" if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
