"""The in-job recorder's own cost per call, measured in one process (issue 54): what each timed
stage, each DataLoader __next__ and each optimizer step costs with the recorder against without
it, on trivial work so that the difference is the recorder's bookkeeping. Then, given a recorded
job folder (TRAINLAB_JOB_DIR of a run with stages), that job's calls per batch times these costs
against its measured busy time per batch: the recorder's share of the worker's time, and of the
step. A machine shared with other work makes end-to-end A/B runs (bench/job_overhead.py) too
noisy to resolve a 2 % effect; these per-call figures are not.

  python bench/job_recorder_costs.py [JOB_DIR]
"""
import glob
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def per_call_ns(function, calls=20000, repeats=7):
    """Median over repeats of the wall time per call, ns."""
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            function()
        samples.append((time.perf_counter_ns() - t0) / calls)
    return statistics.median(samples)


def main():
    job_dir = sys.argv[1] if len(sys.argv) > 1 else None
    os.environ["TRAINLAB_JOB_DIR"] = tempfile.mkdtemp(prefix="trainlab-recorder-costs-")
    sys.path.insert(0, os.path.join(ROOT, "profiler", "job_recorder"))
    import trainlab_job_recorder
    trainlab_job_recorder.activate()
    import torch
    from trainlab_job_recorder import stages

    def nothing(x=None):
        return x

    timed = stages.stage(nothing, "nothing", "dataset")
    plain_ns = per_call_ns(nothing)
    inactive_ns = per_call_ns(timed)
    rec = stages.Recorder(0, "main", None)
    rec.thread = stages.get_ident()
    rec.stack = [[0, 0]]
    stages.CURRENT[0] = rec
    active_ns = per_call_ns(timed)
    stages.CURRENT[0] = None
    stage_ns = active_ns - plain_ns

    data = torch.utils.data.TensorDataset(torch.zeros(4096, 1))
    from torch.utils.data import dataloader
    wrapped_next = dataloader._BaseDataLoaderIter.__next__
    original_next = wrapped_next.__wrapped__

    def next_cost(function):
        it = iter(torch.utils.data.DataLoader(data, batch_size=1))
        t0 = time.perf_counter_ns()
        for _ in range(4000):
            function(it)
        return (time.perf_counter_ns() - t0) / 4000

    next_ns = statistics.median(next_cost(wrapped_next) - next_cost(original_next) for _ in range(7))

    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    with_hooks = per_call_ns(optimizer.step, calls=2000)
    import torch.optim.optimizer as optimizer_module
    pre, post = optimizer_module._global_optimizer_pre_hooks, optimizer_module._global_optimizer_post_hooks
    hooks = dict(pre), dict(post)
    pre.clear()
    post.clear()
    without_hooks = per_call_ns(optimizer.step, calls=2000)
    pre.update(hooks[0])
    post.update(hooks[1])
    step_ns = with_hooks - without_hooks  # the hooks; the step line is written once a step too

    print("recorder cost per call (median of 7, ns):")
    print("  timed stage, outside a batch (pass-through): %8.0f" % (inactive_ns - plain_ns))
    print("  timed stage, inside a batch:                 %8.0f" % stage_ns)
    print("  DataLoader __next__:                         %8.0f" % next_ns)
    print("  optimizer step (hooks + step line):          %8.0f" % step_ns)
    if not job_dir:
        return
    steps_lines, worker_calls, worker_batches, worker_busy = [], 0, 0, 0
    for path in glob.glob(os.path.join(job_dir, "proc-*.jsonl")):
        with open(path) as f:
            records = [json.loads(line) for line in f if line.strip()]
        steps_lines += [r for r in records if r["type"] == "step"]
        snapshots = [r for r in records if r["type"] == "stages"]
        if snapshots:
            last = snapshots[-1]
            worker_calls += sum(s["calls"] for s in last["stages"])
            worker_batches += last["batches"]
            worker_busy += last["busy_wall_ns"]
    if not steps_lines or not worker_batches:
        print("no steps or stages in %s" % job_dir)
        return
    step_wall = statistics.median(s["end_ns"] - s["start_ns"] for s in steps_lines)
    calls_per_batch = worker_calls / worker_batches
    busy_per_batch = worker_busy / worker_batches
    stage_cost = calls_per_batch * stage_ns
    print("job %s: %.0f timed calls a batch, busy %.2f ms a batch, step %.2f ms (median)"
          % (job_dir, calls_per_batch, busy_per_batch / 1e6, step_wall / 1e6))
    print("  stages: %.1f us a batch = %.2f %% of the worker's busy time" % (stage_cost / 1e3, 100.0 * stage_cost / busy_per_batch))
    print("  steps:  %.1f us a step (one __next__, one optimizer step) = %.3f %% of the step"
          % ((next_ns + step_ns) / 1e3, 100.0 * (next_ns + step_ns) / step_wall))


if __name__ == "__main__":
    main()
