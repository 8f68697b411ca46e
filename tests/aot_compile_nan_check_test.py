"""The compiled variant's exporter (scenarios/export/aot_compile.py) checking its package: a package
whose outputs hold NaN where the exported graph's do not is the compiler's fault, and the exporter
compiles again with one change at a time (ATen's random numbers, Inductor's fallback_random; then
256-bit vector code, cpp.simdlen 256), says which in its report (compiler_workaround), and leaves a
package whose outputs are finite. The fault is made with TRAINLAB_TEST_PACKAGE_NAN=N, which
multiplies the loss by NaN in the first N compiles (as an AVX-512 kernel of recsys' bf16 package gave
NaN on an AMX Xeon): N=1 is mended by fallback_random, N=2 only by simdlen 256. The check runs the
package in a child process; TRAINLAB_TEST_CHECK_CRASH=1 kills that child with SIGSEGV (as the
in-process check killed the exporter on an H200), and the exporter must still deliver its package,
saying it was not checked.

  python aot_compile_nan_check_test.py SOURCE_DIR WORK_DIR [crash]
With "crash", only the crashing check (its own ctest, so the two run side by side).
Exit status 0 when every check holds, 1 otherwise.
"""
import json
import math
import os
import shutil
import subprocess
import sys

# A small recsys (scenarios/recsys.cpp's twin): a transformer layer with dropout, so the graph
# draws random numbers.
KNOBS = {"items": 50, "categories": 5, "user_vocab": 7, "dim": 16, "layers": 1, "heads": 2, "seq_len": 4,
         "dropout": 0.1}
INPUTS = [{"shape": [4, 4], "dtype": "int64"}] * 3 + [{"shape": [4, 2], "dtype": "int64"},
                                                       {"shape": [4, 2], "dtype": "int64"},
                                                       {"shape": [4], "dtype": "int64"}]


def export(source_dir, out, poisoned_compiles, check_crashes=False):
    env = dict(os.environ)
    env["TRAINLAB_TEST_PACKAGE_NAN"] = str(poisoned_compiles)
    if check_crashes:
        env["TRAINLAB_TEST_CHECK_CRASH"] = "1"
    done = subprocess.run([sys.executable, os.path.join(source_dir, "scenarios", "export", "aot_compile.py"),
                           "--scenario", "recsys", "--knobs", json.dumps(KNOBS), "--inputs", json.dumps(INPUTS),
                           "--precision", "fp32", "--cpu-threads", "1", "--out", out],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines = done.stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if lines else {}
    except ValueError:
        report = {}
    return done, report


def package_loss(path):
    """The package's loss on an all-zero batch (valid ids for every embedding), in this process."""
    import torch

    runner = torch._inductor.aoti_load_package(path)
    batch = [torch.zeros(spec["shape"], dtype=torch.int64) for spec in INPUTS]
    outputs = runner.loader.run(batch)
    return float(outputs[0]), all(bool(torch.isfinite(o).all()) for o in outputs if o.is_floating_point())


def run_checks(checks, *runs):
    for name, ok in checks:
        print("%-40s %s" % (name, "ok" if ok else "FAILED"))
    if all(ok for _, ok in checks):
        return 0
    for done in runs:
        print(done.stderr[-3000:])
    return 1


def check_crash(source_dir, work):
    crashed_out = os.path.join(work, "crashed.pt2")
    crashed, crashed_report = export(source_dir, crashed_out, 0, check_crashes=True)
    return run_checks([
        ("check's process crashed: exit status 0", crashed.returncode == 0),
        ("that package is delivered", os.path.exists(crashed_out) and crashed_report.get("fused_kernels", 0) > 0),
        ("stderr says it was not checked", "not checked (the check's process died from SIGSEGV" in crashed.stderr),
    ], crashed)


def main():
    source_dir, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if sys.argv[3:] == ["crash"]:
        return check_crash(source_dir, work)
    first_out, both_out = os.path.join(work, "first.pt2"), os.path.join(work, "both.pt2")
    first, first_report = export(source_dir, first_out, 1)
    both, both_report = export(source_dir, both_out, 2)
    first_said, both_said = first_report.get("compiler_workaround", ""), both_report.get("compiler_workaround", "")
    loss, finite = package_loss(first_out) if os.path.exists(first_out) else (float("nan"), False)
    both_loss, both_finite = package_loss(both_out) if os.path.exists(both_out) else (float("nan"), False)
    print("loss of the packages kept: %.4f (fallback_random), %.4f (simdlen 256)" % (loss, both_loss))
    print(first_said)
    print(both_said)
    return run_checks([
        ("first package NaN: exit status 0", first.returncode == 0),
        ("the report says what was done", "NaN or Inf" in first_said and "fallback_random" in first_said),
        ("fallback_random was enough", "simdlen" not in first_said),
        ("the report names the random ops", any(op in first_said for op in first_report.get("random_ops", ["?"]))),
        ("the package kept has finite outputs", finite and math.isfinite(loss) and loss > 0),
        ("two packages NaN: exit status 0", both.returncode == 0),
        ("the report says both tries", "(fallback_random) still in 1" in both_said and "simdlen 256" in both_said),
        ("that package has finite outputs", both_finite and math.isfinite(both_loss) and both_loss > 0),
    ], first, both)


if __name__ == "__main__":
    sys.exit(main())
