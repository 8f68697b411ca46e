#!/usr/bin/env bash
# The prepared device check (issue 36): trainlab's CUDA paths run once, end to end, on a lent GPU
# in one call of at most 8 minutes, with every result written to $OUT. The same steps run here on
# the CPU as a dry run (--device cpu --quick, ctest device_check.dry_run), so the script itself is
# tested before any device time is spent.
#
# What travels (the device has no network and takes at most 64 MiB besides the git working tree):
#   device-carry/bin/   trainlab, trainlab-train and the two test binaries with CUDA tests
#                       (trainlab_inductor_tests, trainlab_profiler_tests), built here (~11 MB)
#   device-carry/lib/   the shared libraries they need that are neither LibTorch/CUDA nor glibc:
#                       libturbojpeg, libzstd, zlib (~1.5 MB), each used only where the device
#                       lacks it; lib/compat/ holds this machine's libstdc++ and libgcc_s, used
#                       only where the device's are older than the binaries need
#   device-carry/MANIFEST.txt  what was copied, from which revision, and the GLIBC the binaries need
# LibTorch, the CUDA runtime, cuBLAS/cuDNN/NCCL and CUPTI come from the device's PyTorch wheel: its
# torch/lib and every nvidia/*/lib folder beside it go on LD_LIBRARY_PATH. The Python side (the
# AOTInductor export in scenarios/export, torch.profiler's peer in bench/) is the working tree's,
# run by the device's Python ($TRAINLAB_PYTHON, else the first python3/python on PATH, or in
# /opt/conda, /opt/*, ~/.venv, that imports torch).
#
#   bash scripts/device_check.sh --prepare device-carry     # here: copy binaries + libraries, print the size
#   bash scripts/device_check.sh                            # on the device: the check into $OUT (carry: ["device-carry"])
#   bash scripts/device_check.sh --device cpu --quick       # here: the dry run, into a temp folder or --out DIR
#
# Options: --device cuda|cpu (default cuda), --quick (tiny sizes), --out DIR (default $OUT, else a
# new temp folder), --carry DIR (default device-carry when it exists, else the build folder
# $TRAINLAB_BUILD_DIR or build/), --budget-s S (all steps together, default 450; a step that would
# start past it is SKIP), --only a,b (step names), --cases x,y (validate only these seeded cases).
# Steps, each with its own time limit, each writing <step>.log and a PASS/FAIL/SKIP line to
# $OUT/summary: cuda_tests, lab_mlp, profile_vs_torch, validate, sweep_pinning, lab_recsys, doctor. At the end $OUT/device_check.json holds the steps,
# their figures and the environment. Exit status: 0 every step passed, 1 a step failed or was
# skipped, 2 a prerequisite is missing (one line naming each) or bad arguments.
set -uo pipefail

# The whole script is one function, read in full before it runs: editing the file while a check
# runs cannot change the rest of that check.
main() {

die_usage() { echo "device_check: $*" >&2; exit 2; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
device="cuda"; quick=0; out="${OUT:-}"; carry=""; budget_s=450; only=""; prepare=""; cases_only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prepare) [ $# -ge 2 ] || die_usage "--prepare needs a folder"; prepare="$2"; shift 2 ;;
    --device) [ $# -ge 2 ] || die_usage "--device needs cuda or cpu"; device="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --out) [ $# -ge 2 ] || die_usage "--out needs a folder"; out="$2"; shift 2 ;;
    --carry) [ $# -ge 2 ] || die_usage "--carry needs a folder"; carry="$2"; shift 2 ;;
    --budget-s) [ $# -ge 2 ] || die_usage "--budget-s needs seconds"; budget_s="$2"; shift 2 ;;
    --only) [ $# -ge 2 ] || die_usage "--only needs step names"; only="$2"; shift 2 ;;
    --cases) [ $# -ge 2 ] || die_usage "--cases needs seeded case names"; cases_only="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die_usage "unknown argument '$1' (see --help)" ;;
  esac
done
case "$device" in cuda|cpu) ;; *) die_usage "--device must be cuda or cpu, not '$device'" ;; esac
all_steps=",cuda_tests,lab_mlp,profile_vs_torch,validate,sweep_pinning,lab_recsys,job,doctor,"
for name in ${only//,/ }; do
  [[ "$all_steps" == *",$name,"* ]] || die_usage "unknown step '$name' in --only (steps: ${all_steps:1:-1})"
done
[[ "$budget_s" =~ ^[0-9]+$ ]] && [ "$budget_s" -ge 30 ] || die_usage "--budget-s must be a whole number of seconds >= 30"

build_dir="${TRAINLAB_BUILD_DIR:-$repo/build}"

# ---------------------------------------------------------------------------------------------
# --prepare DIR: binaries and the libraries the device lacks, into one folder to carry.
# ---------------------------------------------------------------------------------------------
carried_binaries=(trainlab trainlab-train tests/trainlab_inductor_tests tests/trainlab_profiler_tests)

# A library the device's wheel or its C library provide: never carried.
provided_on_device() {
  case "$1" in
    */site-packages/*|*/dist-packages/*|*/cuda*/lib*/*) return 0 ;;  # LibTorch, CUDA, CUPTI: the wheel
  esac
  case "$(basename "$1")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libutil.so*|ld-linux*|linux-vdso*) return 0 ;;
    libcuda.so*|libnvidia-ml.so*) return 0 ;;  # the driver's
  esac
  return 1
}

prepare_carry() {
  local dest="$1" bin lib name
  for bin in "${carried_binaries[@]}"; do
    [ -x "$build_dir/$bin" ] || { echo "device_check: $build_dir/$bin is missing: build it first (cmake --build build --target $(basename "$bin"))" >&2; exit 2; }
  done
  rm -rf "$dest" && mkdir -p "$dest/bin" "$dest/lib/compat" || exit 2
  for bin in "${carried_binaries[@]}"; do cp "$build_dir/$bin" "$dest/bin/"; done
  for lib in $(for bin in "${carried_binaries[@]}"; do ldd "$build_dir/$bin"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u); do
    provided_on_device "$lib" && continue
    name="$(basename "$lib")"
    case "$name" in
      libstdc++.so*|libgcc_s.so*) cp -L "$lib" "$dest/lib/compat/$name" ;;  # only where the device's are older
      *) cp -L "$lib" "$dest/lib/$name" ;;
    esac
  done
  {
    echo "trainlab device carry: $(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet 2>/dev/null || echo -dirty), $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "needs at most: $(for bin in "$dest"/bin/*; do objdump -T "$bin" 2>/dev/null; done | grep -o 'GLIBC_2\.[0-9]*' | sort -uV | tail -1),"\
         "$(for bin in "$dest"/bin/*; do objdump -T "$bin" 2>/dev/null; done | grep -o 'GLIBCXX_3\.4\.[0-9]*' | sort -uV | tail -1)"
    (cd "$dest" && find bin lib -type f | sort | while read -r f; do printf '%10d  %s\n' "$(stat -c %s "$f")" "$f"; done)
  } > "$dest/MANIFEST.txt"
  local bytes; bytes="$(du -sb "$dest" | cut -f1)"
  echo "device_check: carry in $dest: $(( (bytes + 524288) / 1048576 )) MiB ($bytes bytes; the limit is 64 MiB)"
  [ "$bytes" -le $((64 * 1048576)) ] || { echo "device_check: the carry is over 64 MiB" >&2; exit 1; }
}

if [ -n "$prepare" ]; then prepare_carry "$prepare"; exit 0; fi

# ---------------------------------------------------------------------------------------------
# Prerequisites: where the binaries are, the device's Python and its wheel's libraries.
# ---------------------------------------------------------------------------------------------
# On the device the carry is found where the run tool puts it; a dry run uses the build unless told.
if [ -z "$carry" ] && [ "$device" = cuda ] && [ -d "$repo/device-carry/bin" ]; then carry="$repo/device-carry"; fi
if [ -n "$carry" ]; then
  bin_dir="$carry/bin"; tests_dir="$carry/bin"
else
  bin_dir="$build_dir"; tests_dir="$build_dir/tests"
fi
tl="$bin_dir/trainlab"

find_python() {
  local candidate
  if [ -n "${TRAINLAB_PYTHON:-}" ]; then echo "$TRAINLAB_PYTHON"; return; fi
  # PATH first, then where images usually keep an environment with the wheel.
  for candidate in python3 python /opt/conda/bin/python3 /opt/*/bin/python3 /opt/*/venv/bin/python3 \
                   "$HOME"/.venv/bin/python3 "$HOME"/venv/bin/python3 /usr/local/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import torch' >/dev/null 2>&1; then
      command -v "$candidate"; return
    fi
  done
}

work="$(mktemp -d "${TMPDIR:-/tmp}/device-check-work.XXXXXX")" || die_usage "cannot create a temp folder"
trap 'rm -rf "$work"' EXIT

# Only the carried libraries the device lacks go on the path (through links in $work/lib), so that
# the device's own zlib or libstdc++, where they are there and new enough, serve every process.
use_carried_libraries() {
  local bins=("$bin_dir"/*) name
  mkdir -p "$work/lib"
  for name in $(ldd "${bins[@]}" 2>/dev/null | awk '/not found/ {print $1}' | sort -u); do
    [ -e "$carry/lib/$name" ] && ln -sf "$carry/lib/$name" "$work/lib/$name"
  done
  if ldd "${bins[@]}" 2>&1 | grep -q "version .GLIBCXX.* not found\|version .GCC.* not found"; then
    ln -sf "$carry"/lib/compat/* "$work/lib/"  # the device's libstdc++ is older than the build's
  fi
  export LD_LIBRARY_PATH="$work/lib:$LD_LIBRARY_PATH"
}

missing=()
[ -x "$tl" ] && [ -x "$bin_dir/trainlab-train" ] || missing+=("trainlab binaries in $bin_dir (carry device-carry, made by --prepare)")
py="$(find_python)"
torch_lib=""
if [ -z "$py" ]; then
  missing+=("a Python with torch (set TRAINLAB_PYTHON)")
else
  torch_lib="$("$py" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)" ||
    missing+=("torch in $py")
fi
if [ -n "$torch_lib" ]; then
  site="$(dirname "$(dirname "$torch_lib")")"
  wheel_libs="$torch_lib"
  for d in "$site"/nvidia/*/lib "$site"/nvidia/*/*/lib; do [ -d "$d" ] && wheel_libs="$wheel_libs:$d"; done
  export LD_LIBRARY_PATH="$wheel_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [ -z "$carry" ] || use_carried_libraries
fi
if [ -x "$bin_dir/trainlab-train" ] && command -v ldd >/dev/null 2>&1; then
  unresolved="$(ldd "$bin_dir/trainlab-train" 2>&1 | awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')"
  [ -z "$unresolved" ] || missing+=("libraries for trainlab-train: ${unresolved% }")
fi
if [ "$device" = cuda ] && [ -n "$py" ] && [ -n "$torch_lib" ]; then
  "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1 ||
    missing+=("a CUDA device that torch sees (torch.cuda.is_available() is False)")
fi
command -v timeout >/dev/null 2>&1 || missing+=("timeout (coreutils)")
command -v ldd >/dev/null 2>&1 || missing+=("ldd (libc-bin)")
if [ ${#missing[@]} -gt 0 ]; then
  printf -v joined '%s; ' "${missing[@]}"
  echo "device_check: missing: ${joined%; }" >&2
  exit 2
fi

if [ -z "$out" ]; then out="$(mktemp -d "${TMPDIR:-/tmp}/device-check.XXXXXX")"; fi
mkdir -p "$out" || die_usage "cannot create --out $out"
out="$(cd "$out" && pwd)"
rm -f "$out"/*.log "$out/summary" "$out/cupti_vs_torch.json" "$out/device_check.json" "$out/records.tar.gz"  # a previous check's
export TRAINLAB_PYTHON="$py"
export TRAINLAB_EXPORT_SCRIPT="$repo/scenarios/export/aot_compile.py"
# The datasets and compiled packages: a given TRAINLAB_DATA_DIR is kept (CI reuses its cache).
export TRAINLAB_DATA_DIR="${TRAINLAB_DATA_DIR:-$work/datasets}"
: > "$out/summary"
start_s=$SECONDS
# The binaries as a path in the repository where they are in it: the summary is kept in bench/.
echo "device_check: device $device$([ $quick = 1 ] && echo ' (quick)'), binaries ${bin_dir#"$repo"/}, python $py, results $out" | tee -a "$out/summary"
if ! command -v "${CXX:-c++}" >/dev/null 2>&1 && ! command -v g++ >/dev/null 2>&1; then
  echo "note: no C++ compiler on PATH: AOTInductor cannot build the compiled variant's package (the labs will say not measured)" | tee -a "$out/summary"
fi

# ---------------------------------------------------------------------------------------------
# Steps. Each runs under its own limit (cut to what the budget has left), writes <name>.log, then
# a check reads what it wrote; one line per step in $out/summary and a record for the JSON.
# ---------------------------------------------------------------------------------------------
records="$work/steps.jsonl"; : > "$records"

wanted() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

# record NAME STATUS WALL_S DETAIL
record() {
  printf '%-17s %-4s %4ds  %s\n' "$1" "$2" "$3" "$4" | tee -a "$out/summary"
  "$py" -c 'import json, sys; print(json.dumps({"step": sys.argv[1], "status": sys.argv[2], "wall_s": int(sys.argv[3]), "detail": sys.argv[4]}))' \
    "$1" "$2" "$3" "$4" >> "$records"
}

# step NAME LIMIT_S CHECK_FUNCTION COMMAND...: the command's output to NAME.log; then CHECK_FUNCTION
# (reads the files, prints one detail line, returns non-zero on failure).
step() {
  local name="$1" limit="$2" check="$3"; shift 3
  wanted "$name" || return 0
  local left=$((budget_s - (SECONDS - start_s)))
  if [ "$left" -lt 20 ]; then record "$name" SKIP 0 "not started: the budget of ${budget_s}s is spent"; return 0; fi
  [ "$limit" -le "$left" ] || limit="$left"
  local begin=$SECONDS rc detail
  # A function of this script runs in a bash child (exported below), so that timeout can end it.
  if [ "$(type -t "$1")" = function ]; then set -- bash -c '"$@"' step "$@"; fi
  timeout -k 10 "$limit" "$@" > "$out/$name.log" 2>&1; rc=$?
  local wall=$((SECONDS - begin))
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    record "$name" FAIL "$wall" "timed out after ${limit}s: $(tail -1 "$out/$name.log" | cut -c1-160)"; return 0
  fi
  if detail="$("$check" "$name" "$rc" 2>&1)"; then record "$name" PASS "$wall" "$detail"
  else record "$name" FAIL "$wall" "$(echo "$detail" | tail -1)"; fi
}

# The only run folder under a step's results folder.
run_dir() { find "$work/results/$1" -mindepth 1 -maxdepth 1 -type d ! -name datasets | head -1; }

# A small Python check over the step's files: CHECK NAME RC PYTHON_CODE (argv: run dir, device, rc).
pycheck() {
  local name="$1" rc="$2" code="$3"
  "$py" - "$(run_dir "$name")" "$device" "$rc" "$out/$name.log" <<EOF
import json, os, sys
run, device, rc, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def fail(msg):
    print(msg); sys.exit(1)
def load(path):
    with open(path) as f:
        return json.load(f)
$code
EOF
}

check_tests() {
  local name="$1" rc="$2"
  [ "$rc" -eq 0 ] || { echo "exit $rc: $(grep -E '^\[  FAILED  \]' "$out/$name.log" | head -3 | tr '\n' ' ')"; return 1; }
  local passed skipped
  passed="$(grep -c '^\[       OK \]' "$out/$name.log")"; skipped="$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$out/$name.log")"  # not gtest's closing list
  if [ "$device" = cuda ] && grep -q '^\[  SKIPPED \] InductorStepTest.OnCuda' "$out/$name.log"; then
    echo "the CUDA-graph test skipped on a CUDA device: $(grep -A1 'OnCuda' "$out/$name.log" | head -2 | tr '\n' ' ')"; return 1
  fi
  echo "$passed passed, $skipped skipped"
}

run_cuda_tests() {
  # The tests that need a CUDA device (they skip without one) and CUPTI's record conversion.
  "$tests_dir/trainlab_profiler_tests" --gtest_filter='Cupti*' && \
  "$tests_dir/trainlab_inductor_tests" --gtest_filter='*Cuda*'
}

check_lab() {
  pycheck "$1" "$2" '
if rc != 0: fail("exit %d" % rc)
r = load(os.path.join(run, "run.json"))
variants = {}
for v in r["variants"]:
    variants.setdefault(v["name"], []).append(v)
bad = [n for n, vs in variants.items() for v in vs if v.get("error")]
compiled = [n for n in variants if n.endswith("+compiled")]
if not compiled: fail("no compiled variant in %s" % sorted(variants))
info = variants[compiled[0]][0].get("compile_info") or {}
if bad: fail("variants that failed: %s (%s)" % (sorted(set(bad)), (next(v for v in variants[bad[0]] if v.get("error"))["error"])[:120]))
if info.get("method") != "inductor-aot": fail("compiled by %s, not the AOTInductor package" % info.get("method"))
if device == "cuda" and any(str(v.get("device") or "").startswith("cpu") for vs in variants.values() for v in vs):
    fail("a variant ran on the CPU")
reading = [line for line in r.get("reading", []) if "->" in line]
print("variants %s; compiled: %d fused kernels, cuda graph %s; %s" % (
    ", ".join("%s x%d" % (n, len(vs)) for n, vs in variants.items()), info.get("fusion_groups", 0),
    info.get("cuda_graph", "?"), " | ".join(x.strip() for x in reading)[:400]))
'
}

check_profile_vs_torch() {
  local name="$1" rc="$2"
  [ "$rc" -eq 0 ] || { tail -1 "$out/$name.log"; return 1; }
  pycheck "$name" 0 '
c = load(os.path.join(os.path.dirname(log), "cupti_vs_torch.json"))
ours, theirs = c["trainlab"], c["torch_profiler"]
if device == "cuda" and not (ours["kernels_per_step"] > 0 and theirs["kernels_per_step"] > 0):
    fail("no kernels captured: trainlab %s, torch.profiler %s per step" % (ours["kernels_per_step"], theirs["kernels_per_step"]))
fmt = lambda x, f: (f % x) if isinstance(x, (int, float)) else "n/a"
print("kernels/step %s vs %s, kernel us/step %s vs %s, window overhead %s %% vs %s %% (trainlab vs torch.profiler); "
      "trainlab copies/step %s, memsets/step %s" % (
    fmt(ours["kernels_per_step"], "%.0f"), fmt(theirs["kernels_per_step"], "%.0f"),
    fmt(ours["kernel_us_per_step"], "%.1f"), fmt(theirs["kernel_us_per_step"], "%.1f"),
    fmt(ours["overhead_pct"], "%+.1f"), fmt(theirs["overhead_pct"], "%+.1f"),
    fmt(ours.get("memcpy_per_step"), "%.1f"), fmt(ours.get("memset_per_step"), "%.1f")))
'
}

run_profile_vs_torch() {
  # tinyops at batch 16 (many small kernels) with the same steps on both sides: trainlab's window
  # of $window_steps steps against torch.profiler on every other of 2 x $pairs steps.
  # --grad-norm-every 0: trainlab's own gradient-norm reads are work the peer's loop does not do (on an
  # H200 they were the only kernels torch.profiler did not also see: 19 of 742 per step).
  "$tl" profile --scenario tinyops --device "$device" --threads 1 $sizes_tinyops --steps "$steps" --warmup 3 --grad-norm-every 0 \
      --window "3:$window_steps" --results "$work/results/$1" || return $?
  "$py" "$repo/bench/torch_profiler_peer.py" --device "$device" --threads 1 $peer_sizes --batch 16 --pairs "$window_steps" \
      --warmup 3 --trace-dir "$work" > "$work/peer.json" || return $?
  "$py" "$repo/bench/cupti_vs_torch.py" --run "$(run_dir "$1")" --peer "$work/peer.json" --out "$out/cupti_vs_torch.json"
}

check_validate() {
  pycheck "$1" "$2" '
v = load(os.path.join(run, "validate.json"))
cases = v.get("cases", [])
wrong = [c for c in cases if not c.get("correct")]
print("%d of %d correct: %s" % (len(cases) - len(wrong), len(cases), ", ".join("%s %s->%s" % (
    c["name"], c.get("expected", c.get("expect", "?")), c.get("named", c.get("verdict", "?"))) for c in cases)))
if rc != 0 or wrong or not cases: sys.exit(1)
'
}

run_validate() {
  local cases="$repo/configs/seeded_cases_cuda.json"
  if [ "$device" = cpu ]; then  # the same cases file with the device swapped
    sed 's/"--device", "cuda"/"--device", "cpu"/' "$cases" > "$work/seeded_cases_cpu.json"; cases="$work/seeded_cases_cpu.json"
  fi
  "$tl" validate --cases "$cases" $validate_only --results "$work/results/$1"
}

check_sweep() {
  pycheck "$1" "$2" '
if rc != 0: fail("exit %d" % rc)
r = load(os.path.join(run, "run.json"))
rows = []
for v in r["variants"]:
    if v.get("error"): fail("%s failed: %s" % (v["name"], v["error"][:120]))
    s = v["spec"]
    a = v.get("aggregate") or {}
    h2d_pct = (a.get("phase_pct") or {}).get("host_to_device")
    h2d = "" if h2d_pct is None else ", host-to-device %.2f %% (%.3f ms)" % (h2d_pct, h2d_pct / 100 * a.get("step_ms_mean", 0))
    rows.append("workers %s pin %s: %.1f samples/s%s" % (s["workers"], "on" if s["pin_memory"] else "off",
                                                          a.get("samples_per_s", 0), h2d))
if len(rows) < 2: fail("only %d sweep points" % len(rows))
print("; ".join(rows))
'
}

check_doctor() {
  pycheck "$1" "$2" '
if rc != 0: fail("exit %d" % rc)
d = load(os.path.join(run, "doctor.json"))
trials = d.get("trials", [])
diagnosis = d.get("diagnosis") or {}
def interval(t):
    i = t.get("interval") or []
    return " [%+.1f, %+.1f]" % tuple(i) if len(i) == 2 and None not in i else ""
print("diagnosis %s (%s); trials: %s; best: %s %+.1f %%" % (
    diagnosis.get("primary", "?"), diagnosis.get("confidence", "?"),
    ", ".join("%s %s %+.1f %%%s" % (t.get("settings", "?"), t.get("verdict", "?"), t.get("gain_pct") or 0, interval(t)) for t in trials),
    d.get("best_settings") or "as given", d.get("best_gain_pct") or 0))
if not trials: fail("no trial ran")
if any(t.get("verdict") in ("failed", "interrupted") for t in trials): fail("a trial did not complete")
'
}

# The user's own job (issue 54): a small training script profiled unmodified through the in-job
# recorder; on CUDA its kernels must be in the job's trace (the recorder's torch.profiler window).
check_job() {
  pycheck "$1" "$2" '
if rc != 0: fail("exit %d: %s" % (rc, open(log).read().strip().splitlines()[-1:]))
r = load(os.path.join(run, "run.json"))
v = r["variants"][0]
job = v.get("job") or {}
if job.get("ended") != "steps reached": fail("the job ended: %s" % job.get("ended"))
trace = os.path.join(run, (v.get("profile") or {}).get("trace") or "")
if not os.path.isfile(trace): fail("no trace in the job folder")
events = load(trace).get("traceEvents", [])
kernels = sum(1 for e in events if e.get("cat") == "kernel")
if device == "cuda" and kernels == 0: fail("no CUDA kernel in the job trace (%d events)" % len(events))
d = load(os.path.join(run, "diagnosis.json"))["diagnoses"][0]
print("job %s on %s: %d steps, %d kernels in the trace; verdict: %s" % (
    job.get("torch_version"), v.get("device"), len(v.get("steps", [])), kernels, d["verdict"]["headline"][:200]))
'
}

# Sizes: the device's (seconds per step matter little on a GPU) and the dry run's (a loaded 2-core CPU).
if [ "$device" = cuda ] && [ $quick = 0 ]; then
  # Four rounds a lab: with 2 a GPU's 4x bf16 gain read [-39 %, +2492 %]; the lab's own choice (3,
  # then up to 8 while a gain holds its line) took the mlp lab to 8 rounds, 153 s on an H200, and
  # the whole check past its budget. Four: about 420 s for all steps there, estimated from the two
  # runs' step times (not yet run on a device).
  steps=30; repeat_args=(--repeat 4); window_steps=10
  lab_mlp_args=(--batch 2048 -k hidden=4096 -k layers=4)
  lab_recsys_args=(--preset data-bound)
  sizes_tinyops=""; peer_sizes=""
  validate_only=""
  sweep_args=(--scenario recsys --preset data-bound --workers 0,2 --pin-memory off,on --steps 30)
  doctor_args=(--scenario recsys --preset data-bound --steps 30 --repeat 2 --max-changes 2)
else
  steps=6; repeat_args=(--repeat 2); window_steps=3
  lab_mlp_args=(--batch 16 -k in_features=32 -k hidden=64 -k layers=1 -k classes=10 --threads 1)
  lab_recsys_args=(--preset data-bound -k samples=256 --batch 16 --threads 1)
  sizes_tinyops="-k depth=8"; peer_sizes="--depth 8"
  validate_only="--only data-recsys-cuda"
  pin="off,on"; [ "$device" = cpu ] && pin="off"  # pinned memory is CUDA's; on a CPU it is refused
  sweep_args=(--scenario recsys --preset data-bound -k samples=256 --batch 16 --threads 1 --workers 0,2 --pin-memory "$pin" --steps 6)
  doctor_args=(--scenario recsys --preset data-bound -k samples=256 --batch 16 --threads 1 --steps 6 --repeat 2 --max-changes 1)
fi
[ -z "$cases_only" ] || validate_only="--only $cases_only"
mkdir -p "$work/results"
export tl tests_dir device work repo py sizes_tinyops peer_sizes steps window_steps validate_only out
export -f run_dir run_cuda_tests run_profile_vs_torch run_validate

step cuda_tests 120 check_tests run_cuda_tests
step lab_mlp 200 check_lab "$tl" baseline --scenario mlp --device "$device" "${lab_mlp_args[@]}" --steps "$steps" --warmup 3 \
  "${repeat_args[@]}" --results "$work/results/lab_mlp"
step profile_vs_torch 90 check_profile_vs_torch run_profile_vs_torch profile_vs_torch
step validate 120 check_validate run_validate validate
step sweep_pinning 90 check_sweep "$tl" sweep --device "$device" "${sweep_args[@]}" --warmup 3 --results "$work/results/sweep_pinning"
step lab_recsys 200 check_lab "$tl" baseline --scenario recsys --device "$device" "${lab_recsys_args[@]}" --steps "$steps" \
  --warmup 3 "${repeat_args[@]}" --results "$work/results/lab_recsys"
step job 120 check_job env TRAINLAB_JOB_RECORDER_DIR="${TRAINLAB_JOB_RECORDER_DIR:-$repo/profiler/job_recorder}" "$tl" profile --steps 12 --warmup 2 --capture 6:3 --results "$work/results/job" \
  -- "$py" "$repo/tests/fixtures/job_scripts/small_train.py" --device "$device" --steps 1000
step doctor 150 check_doctor "$tl" doctor --device "$device" "${doctor_args[@]}" --warmup 3 --results "$work/results/doctor"

# Keep the small records (run.json, diagnosis.json, validate.json, doctor.json; no traces or datasets).
(cd "$work/results" && find . -name '*.json' -size -2M ! -path '*/datasets/*' ! -path '*/traces/*' -print0 |
   tar --null -czf "$out/records.tar.gz" -T - 2>/dev/null)

"$py" - "$records" "$out/device_check.json" "$device" "$quick" "$tl" "$repo" "$((SECONDS - start_s))" <<'EOF'
import datetime, json, os, subprocess, sys
records, dest, device, quick, tl, repo, wall = sys.argv[1:8]
steps = [json.loads(line) for line in open(records)]
def output(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
summary = {
    "schema_version": 1,
    "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "device": device, "quick": quick == "1", "wall_s": int(wall),
    "passed": bool(steps) and all(s["status"] == "PASS" for s in steps),
    "steps": steps,
    "trainlab_version": output([tl, "--version"]).splitlines(),
    "gpu": output(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]),
    "torch": output([sys.executable, "-c", "import torch; print(torch.__version__, torch.version.cuda)"]),
}
cupti = os.path.join(os.path.dirname(dest), "cupti_vs_torch.json")
if os.path.exists(cupti):
    summary["cupti_vs_torch"] = json.load(open(cupti))
with open(dest, "w") as f:
    json.dump(summary, f, indent=1)
EOF

failed="$(grep -cE '^[a-z_]+ +(FAIL|SKIP) ' "$out/summary")"
echo "device_check: $([ "$failed" = 0 ] && echo PASS || echo "FAIL ($failed steps)") in $((SECONDS - start_s))s; results in $out" | tee -a "$out/summary"
[ "$failed" = 0 ]
}

main "$@"; exit $?  # on one line: bash has read it whole before main runs
