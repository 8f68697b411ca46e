"""The compiled variant's exporter (scenarios/export/aot_compile.py) checking its package: a package
whose outputs hold NaN where the exported graph's do not is the compiler's fault, and the exporter
exports and compiles again with ATen's random numbers (Inductor's fallback_random), says so in its
report (compiler_workaround), and leaves a package whose outputs are finite. The fault is made with
TRAINLAB_TEST_FUSED_RANDOM_NAN=1, which multiplies the loss by NaN in a graph compiled with
Inductor's own random numbers only (as its fused dropout gave NaN on an AMX Xeon); without it the
same model compiles once, with no workaround.

  python aot_compile_nan_check_test.py SOURCE_DIR WORK_DIR
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


def export(source_dir, out, fault):
    env = dict(os.environ)
    env.pop("TRAINLAB_TEST_FUSED_RANDOM_NAN", None)
    if fault:
        env["TRAINLAB_TEST_FUSED_RANDOM_NAN"] = "1"
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


def main():
    source_dir, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    faulty_out, plain_out = os.path.join(work, "faulty.pt2"), os.path.join(work, "plain.pt2")
    faulty, faulty_report = export(source_dir, faulty_out, fault=True)
    plain, plain_report = export(source_dir, plain_out, fault=False)
    workaround = faulty_report.get("compiler_workaround", "")
    loss, finite = package_loss(faulty_out) if os.path.exists(faulty_out) else (float("nan"), False)
    plain_loss, plain_finite = package_loss(plain_out) if os.path.exists(plain_out) else (float("nan"), False)
    checks = [
        ("faulty first package: exit status 0", faulty.returncode == 0),
        ("the report says what was done", "fallback_random" in workaround and "NaN or Inf" in workaround),
        ("the report names the random ops", any(op in workaround for op in faulty_report.get("random_ops", ["?"]))),
        ("the package kept has finite outputs", finite and math.isfinite(loss) and loss > 0),
        ("a sound package: exit status 0", plain.returncode == 0),
        ("a sound package: no workaround", "compiler_workaround" not in plain_report and bool(plain_report)),
        ("a sound package: finite outputs", plain_finite and math.isfinite(plain_loss) and plain_loss > 0),
    ]
    for name, ok in checks:
        print("%-40s %s" % (name, "ok" if ok else "FAILED"))
    print("loss with the workaround %.4f, without the fault %.4f" % (loss, plain_loss))
    if not all(ok for _, ok in checks):
        print(faulty.stderr[-3000:])
        print(plain.stderr[-3000:])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
