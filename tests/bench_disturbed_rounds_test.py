"""bench/compiled_vs_torch_compile.py with its two sides replaced by recorded rounds (no trainlab
run, no compile): a round either side of which was measured under load is measured again, at most
the lab's re-runs (lab.disturbance_reruns_per_variant), and one still disturbed is left out of the
headline ratios, which the table says; with no clean round there is no headline (exit status 1).
Issue 53: the bench printed its headline from rounds every run.json of which was marked disturbed.

  python tests/bench_disturbed_rounds_test.py SOURCE_DIR
"""
import contextlib
import io
import json
import os
import sys

source_dir = sys.argv[1]
sys.path.insert(0, os.path.join(source_dir, "bench"))
import compiled_vs_torch_compile as bench  # noqa: E402

with open(os.path.join(source_dir, "configs", "thresholds.json")) as f:
    thresholds = json.load(f)["thresholds"]
limit_pct = float(thresholds["lab.disturbed_other_cpu_pct"]["value"])
max_reruns = int(thresholds["lab.disturbance_reruns_per_variant"]["value"])
assert max_reruns >= 2, "the script below spends two re-runs"

SPEC = {"batch_size": 32, "seed": 1, "knobs": {}, "precision": "fp32"}
LOADED = "another process took 55 % of the CPU"


def play(trainlab_rounds, python_rounds):
    """The bench's two sides replaced by these recordings, in order: trainlab's (median step ms,
    disturbed text) and torch.compile's (median step ms, other processes' CPU %)."""
    trainlab_rounds, python_rounds = list(trainlab_rounds), list(python_rounds)

    def trainlab_round(args, results):
        ms, disturbed = trainlab_rounds.pop(0)
        return 32 * 1e3 / ms, ms, SPEC, 2, 1.5, disturbed

    def torch_compile_round(scenario, spec, threads, steps, warmup, compiled_model=None, bundle=None):
        ms, others = python_rounds.pop(0)
        return 32 * 1e3 / ms, ms, "model", 0.5, others

    bench.trainlab_round, bench.torch_compile_round = trainlab_round, torch_compile_round
    return trainlab_rounds, python_rounds


class Args:
    model_bundle = None
    scenario = "tinyops"
    rounds = 3
    steps = 10
    warmup = 1


failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL: " + what)


# Round 2 is disturbed on trainlab's side, then on torch.compile's, then on trainlab's again: two
# re-runs spent, it is left out. Its steps (100 ms against 10) would have moved every figure.
left_t, left_p = play([(10.0, ""), (100.0, LOADED), (10.0, ""), (100.0, LOADED), (10.0, "")],
                      [(12.0, 0.0), (12.0, 0.0), (120.0, limit_pct + 30), (12.0, 0.0), (12.0, 0.0)])
out = io.StringIO()
with contextlib.redirect_stdout(out):
    row = bench.compare(Args(), "/nonexistent")
printed = out.getvalue()
print(printed)
check(not left_t and not left_p, "every recorded round was played (%d, %d left)" % (len(left_t), len(left_p)))
check(row["reruns"] == 2, "two re-runs: %r" % row["reruns"])
check([n for n, _ in row["disturbed_rounds"]] == [2], "round 2 left out: %r" % row["disturbed_rounds"])
check(row["step_ratios"] == [1.2, 1.2], "the ratios of the clean rounds only: %r" % row["step_ratios"])
check(row["trainlab_ms"] == 10.0 and row["torch_compile_ms"] == 12.0,
      "medians of the clean rounds: %r %r" % (row["trainlab_ms"], row["torch_compile_ms"]))
check("measured again" in printed and "left out" in printed, "the rounds say what was done with them")
check("torch.compile: another process took %.0f %%" % (limit_pct + 30) in printed,
      "the Python side's disturbance is named")

# Every round disturbed past the re-runs: no headline, exit status 1, the table says so.
play([(10.0, LOADED)] * 5, [(12.0, 0.0)] * 5)
sys.argv = ["compiled_vs_torch_compile.py", "--trainlab", "/nonexistent/trainlab", "--scenario", "tinyops",
            "--rounds", "3"]
out = io.StringIO()
exit_message = None
with contextlib.redirect_stdout(out):
    try:
        bench.main()
    except SystemExit as e:
        exit_message = str(e.code)
printed = out.getvalue()
print(printed)
check(exit_message is not None and "no undisturbed round" in exit_message, "no headline: %r" % exit_message)
check("every round disturbed" in printed and "3 of 3" in printed, "the table says every round was left out")

if failures:
    sys.exit("bench_disturbed_rounds_test: %d failed" % len(failures))
print("bench_disturbed_rounds_test: ok")
