#!/usr/bin/env bash
# Checks that PyTorch's own trace tools read a 2-rank trainlab profile whole: Holistic Trace
# Analysis (every rank; with GPU kernels, a temporal breakdown and a comm/comp overlap per rank) and
# the TensorBoard profiler plugin (every rank; its DataLoader share = trainlab's data-wait share within
# 1 point and, on a CPU trace, no kernel time and its CPU Exec share = trainlab's compute share within
# 1.5 points): scripts/trace_compat_check.py. Then torch.profiler traces of three Gloo DDP jobs under
# torchrun (tests/ddp_job_test.py: 2 ranks with small buckets, 2 ranks with one bucket, 4 ranks with
# rank 2 slowed): each rank's exposed communication in trainlab's diagnosis against the plugin's
# computation/communication overview, within 5 points. The tools go into a side virtual
# environment (they are cross-checks, never trainlab's dependencies); trainlab must be built
# (scripts/quickstart.sh build).
#   bash scripts/check_trace_compat.sh [RESULTS_DIR]
# Environment: TRAINLAB_BUILD_DIR (default build), TRAINLAB_COMPAT_VENV (default /tmp/trainlab-compat-venv),
# TRAINLAB_VENV (the torch install whose torchrun starts the DDP jobs; default /opt/trainlab/venv).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${TRAINLAB_BUILD_DIR:-$repo/build}"
side_venv="${TRAINLAB_COMPAT_VENV:-/tmp/trainlab-compat-venv}"
torch_venv="${TRAINLAB_VENV:-/opt/trainlab/venv}"
results="${1:-$(mktemp -d /tmp/trainlab-compat.XXXXXX)}"
mkdir -p "$results"
say() { printf '==> %s\n' "$*"; }

[ -x "$build_dir/trainlab" ] || { echo "trainlab: no $build_dir/trainlab: run scripts/quickstart.sh build first" >&2; exit 2; }

if ! "$side_venv/bin/python" -c "import hta, torch_tb_profiler" 2>/dev/null; then
  say "installing Holistic Trace Analysis and the TensorBoard profiler plugin into $side_venv"
  python3 -m venv "$side_venv"
  "$side_venv/bin/pip" install -q --progress-bar off "holistictraceanalysis==0.5.0" "torch-tb-profiler==0.4.3"
fi

# A data-bound loop over two ranks, so the data-wait share being compared is not a rounding error.
say "2-rank profile (recsys, data-bound preset) into $results"
"$build_dir/trainlab" profile --scenario recsys --preset data-bound --nproc 2 --steps 30 --window 5:20 \
  --results "$results" >"$results/profile.log" 2>&1 || { cat "$results/profile.log" >&2; exit 1; }
run_dir="$(ls -d "$results"/*-recsys-profile | head -n 1)"
trace_dir="$run_dir/traces/fp32"
ls "$trace_dir"

# trainlab's own reading of the same traces (the shares the tools are compared with).
"$build_dir/trainlab" diagnose "$trace_dir" --results "$results" >"$results/diagnose.log" 2>&1 \
  || { cat "$results/diagnose.log" >&2; exit 1; }
diagnosis="$(ls -d "$results"/*-fp32-diagnose | head -n 1)/diagnosis.json"

say "reading $trace_dir with HTA and the TensorBoard plugin"
"$side_venv/bin/python" "$repo/scripts/trace_compat_check.py" "$trace_dir" "$diagnosis"

# Gloo DDP jobs traced by torch.profiler: exposed communication rank by rank.
for job in "2 none buckets" "2 none" "4 2"; do
  name="ddp-${job// /-}"
  mkdir -p "$results/$name/traces"
  say "torch.profiler traces of a Gloo DDP job ($job) into $results/$name"
  # shellcheck disable=SC2086  # the job's words are the test's arguments
  "$torch_venv/bin/python" "$repo/tests/ddp_job_test.py" --traces "$results/$name/traces" $job \
    >"$results/$name/torchrun.log" 2>&1 || { cat "$results/$name/torchrun.log" >&2; exit 1; }
  "$build_dir/trainlab" diagnose "$results/$name/traces" --out "$results/$name/diagnosis" \
    >"$results/$name/diagnose.log" 2>&1 || { cat "$results/$name/diagnose.log" >&2; exit 1; }
  "$side_venv/bin/python" "$repo/scripts/trace_compat_check.py" --communication "$results/$name/traces" \
    "$results/$name/diagnosis/diagnosis.json"
done
