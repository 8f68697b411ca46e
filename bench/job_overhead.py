"""What the in-job recorder adds to a training step (issue 54's cost goal: < 2 % outside the
capture window with steps only, < 5 % with stage attribution), measured in one invocation: one of
the test jobs (tests/jobs/) run plain, with the recorder's steps only (TRAINLAB_JOB_STAGES=off)
and with steps + stages, in alternating rounds so drift hits each alike. The step time is the
script's own timing of its loop (--report: loop seconds / steps), so start-up is left out.
Prints per variant the median step time and, per round paired with that round's plain run, the
added time per step as a ratio (median [min, max] over the rounds).

  python bench/job_overhead.py --python VENV_PYTHON [--job image|parquet] [--workers N]
         [--steps S] [--rounds R] [--work DIR]

VENV_PYTHON: an interpreter with torch, torchvision and pyarrow (tests/job_recorder_test.py
makes one under its work folder: job-recorder-venv/bin/python).
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOBS = os.path.join(ROOT, "tests", "jobs")
RECORDER = os.path.join(ROOT, "profiler", "job_recorder")
VARIANTS = (("plain", None), ("steps", "off"), ("steps+stages", "on"))


def job_command(args, work, report):
    if args.job == "image":
        data = os.path.join(work, "images")
        return [args.python, os.path.join(JOBS, "image_folder_train.py"), data, "--make-data", "48",
                "--workers", str(args.workers), "--steps", str(args.steps), "--report", report]
    data = os.path.join(work, "rows.parquet")
    return [args.python, os.path.join(JOBS, "parquet_train.py"), data, "--make-data", "1024",
            "--workers", str(args.workers), "--steps", str(args.steps), "--report", report]


def one_run(args, work, stages):
    report = os.path.join(work, "report.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINLAB_JOB")}
    env.pop("PYTHONPATH", None)
    if stages is not None:
        job_dir = os.path.join(work, "job")
        shutil.rmtree(job_dir, ignore_errors=True)
        os.makedirs(job_dir)
        env.update({"PYTHONPATH": RECORDER, "TRAINLAB_JOB_DIR": job_dir, "TRAINLAB_JOB_STAGES": stages})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(job_command(args, work, report), env=env, capture_output=True, text=True, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit("the job failed (%s): %s" % (stages, result.stderr[-2000:]))
    with open(report) as f:
        own = json.load(f)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)  # the whole tree, start-up too
    return own["elapsed_s"] / own["steps"], cpu_s / own["steps"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True)
    parser.add_argument("--job", choices=("image", "parquet"), default="image")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="trainlab-job-overhead-")
    os.makedirs(work, exist_ok=True)
    one_run(args, work, None)  # makes the data, warms the page cache
    step_s = {name: [] for name, _ in VARIANTS}
    cpu_s = {name: [] for name, _ in VARIANTS}
    for round_index in range(args.rounds):
        order = VARIANTS if round_index % 2 == 0 else tuple(reversed(VARIANTS))
        for name, stages in order:
            wall, cpu = one_run(args, work, stages)
            step_s[name].append(wall)
            cpu_s[name].append(cpu)
    plain, plain_cpu = step_s["plain"], cpu_s["plain"]
    print("job %s, %d workers, %d steps a run, %d rounds (step time: the script's own loop timing; "
          "CPU: the whole process tree's, start-up included, per step)" % (args.job, args.workers, args.steps, args.rounds))
    print("%-14s %13s %18s %28s %16s %24s" % ("variant", "step ms (med)", "added ms (med)", "added / plain step [min, max]",
                                              "CPU ms/step", "added CPU / plain step"))
    for name, _ in VARIANTS:
        values = step_s[name]
        line = "%-14s %13.3f" % (name, 1e3 * statistics.median(values))
        if name != "plain":
            added = [v - p for v, p in zip(values, plain)]
            ratios = [100.0 * (v / p - 1.0) for v, p in zip(values, plain)]
            line += " %18.3f %13.1f %% [%.1f, %.1f]" % (1e3 * statistics.median(added), statistics.median(ratios),
                                                       min(ratios), max(ratios))
        else:
            line += " %18s %28s" % ("", "")
        line += " %16.3f" % (1e3 * statistics.median(cpu_s[name]))
        if name != "plain":
            cpu_ratios = [100.0 * (c - p) / w for c, p, w in zip(cpu_s[name], plain_cpu, plain)]
            line += " %16.1f %% [%.1f, %.1f]" % (statistics.median(cpu_ratios), min(cpu_ratios), max(cpu_ratios))
        print(line)


if __name__ == "__main__":
    main()
