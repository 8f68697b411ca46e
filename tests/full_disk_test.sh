#!/usr/bin/env bash
# A full disk (issue 53): on a small tmpfs filled to a few KiB, each command is one line on stderr
# ("trainlab: error: ... No space left on device"), exit status 2, never 3, never a training child
# aborted by an uncaught exception (SIGABRT, "variant process killed by signal 6"); what was
# measured stays where it fits. Cases: diagnose writing report.html after diagnosis.json (exit 3
# before), a run whose child's record does not fit (the child aborted), the same with --nproc 2,
# a profile whose last files do not fit. Mounting needs root: exit 77 (ctest: skipped) without.
#   full_disk_test.sh TRAINLAB_BINARY
set -u
trainlab="$1"
work="$(mktemp -d "${TMPDIR:-/tmp}/trainlab-full-disk.XXXXXX")"
disk="$work/disk"
mkdir -p "$disk"
cleanup() { umount "$disk" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
if ! mount -t tmpfs -o size=64m tmpfs "$disk" 2>/dev/null; then
  echo "full_disk_test: cannot mount a tmpfs here (not root, or no mount namespace): skipped"
  exit 77
fi
export TRAINLAB_DATA_DIR="$work/datasets"
# A small mlp (about 0.5 KB of record a step), and no re-runs or waits for a quiet machine: the runs
# take seconds beside other jobs, and their records' sizes are what is filled against.
python3 - "$(dirname "$0")/../configs/thresholds.json" "$work/quick.json" <<'EOF'
import json, sys
document = json.load(open(sys.argv[1]))
for name in ("lab.disturbance_reruns_per_variant", "lab.thread_lowerings_max", "lab.quiet_wait_s",
             "lab.start_load_sample_s", "lab.min_measured_s"):
    document["thresholds"][name]["value"] = 0
json.dump(document, open(sys.argv[2], "w"))
EOF
small=(--scenario mlp --batch 8 -k hidden=64 -k in_features=32 -k classes=10 --sampler off --thresholds "$work/quick.json")
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The tmpfs filled so that `free_kib` KiB are left (tmpfs counts 4 KiB pages).
fill_leaving() {
  rm -f "$disk/filler"
  local avail
  avail=$(df -k --output=avail "$disk" | tail -1 | tr -d ' ')
  dd if=/dev/zero of="$disk/filler" bs=1024 count=$((avail - $1)) status=none 2>/dev/null
}
kib() { echo $(( ($1 + 4095) / 4096 * 4 )); }   # bytes -> KiB in whole pages
tree_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += int(($1 + 4095) / 4096) * 4096 } END { print s + 0 }'; }

# expect_full_disk NAME STATUS STDERR_FILE: exit 2, one "trainlab: error:" line naming the full disk.
expect_full_disk() {
  local name="$1" status="$2" err="$3"
  [ "$status" -eq 2 ] || fail "$name: exit status $status, expected 2 ($(tail -3 "$err" | tr '\n' '|'))"
  local lines
  lines=$(grep -c '^trainlab: error: ' "$err")
  [ "$lines" -eq 1 ] || fail "$name: $lines 'trainlab: error:' lines on stderr, expected 1 ($(tr '\n' '|' < "$err" | head -c 600))"
  grep -q 'No space left on device' "$err" || fail "$name: stderr does not name the full disk ($(tr '\n' '|' < "$err" | head -c 600))"
  if grep -q -e 'terminate called' -e 'signal 6' -e 'internal error' "$err"; then
    fail "$name: an abort or internal error ($(tr '\n' '|' < "$err" | head -c 600))"
  fi
  echo "$name: exit $status: $(grep '^trainlab: error: ' "$err" | head -1)"
}

# ---- diagnose: diagnosis.json fits, report.html does not ----------------------------------------
python3 - "$work/t.json" <<'EOF'
import json, sys
events = []
for step in range(3):
    ts = 1000 + step * 1000
    events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step, "pid": 1, "tid": 1, "ts": ts, "dur": 900})
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts + 100, "dur": 600})
json.dump({"deviceProperties": [{"name": "cpu"}], "traceEvents": events}, open(sys.argv[1], "w"))
EOF
"$trainlab" diagnose "$work/t.json" --out "$work/ref" >/dev/null 2>&1 || fail "diagnose: the reference run failed"
diag=$(stat -c %s "$work/ref/diagnosis.json")
html=$(stat -c %s "$work/ref/report.html")
mkdir -p "$disk/out"
fill_leaving $(( $(kib "$diag") + 4 ))
"$trainlab" diagnose "$work/t.json" --out "$disk/out" >"$work/diagnose.out" 2>"$work/diagnose.err"
expect_full_disk "diagnose (report.html of $html bytes)" $? "$work/diagnose.err"
[ -s "$disk/out/diagnosis.json" ] || fail "diagnose: diagnosis.json (it fits) was not kept"
ls -a "$disk/out" | grep -q 'tmp' && fail "diagnose: a temporary file left in the output folder: $(ls -a "$disk/out")"
rm -rf "$disk/out"

# ---- run: the training child's record does not fit ------------------------------------------------
# Filled to half a record: the run folder's first files (a small run.json, the spec) fit, the
# child's record does not, the short one that says why does.
run_case() {  # NAME EXTRA_ARGS...
  local name="$1"
  shift
  rm -rf "$work/ref-results" "$disk/results"
  "$trainlab" run "${small[@]}" --steps 300 --warmup 2 --results "$work/ref-results" "$@" \
    >/dev/null 2>"$work/ref.err" || { fail "$name: the reference run failed: $(tail -2 "$work/ref.err")"; return; }
  local record
  record=$(find "$work"/ref-results/*/variants -name '*.json' ! -name '*spec*' -printf '%s\n' | sort -n | tail -1)
  fill_leaving $(( $(kib $(( record / 2 ))) + 16 ))
  "$trainlab" run "${small[@]}" --steps 300 --warmup 2 --results "$disk/results" "$@" >"$work/run.out" 2>"$work/run.err"
  expect_full_disk "$name (a record of $record bytes)" $? "$work/run.err"
}
run_case "run"
run_case "run --nproc 2" --nproc 2

# ---- profile: the last files (the diagnosis, report.html) do not fit ------------------------------
rm -rf "$work/ref-profile" "$disk/results"
"$trainlab" profile "${small[@]}" --steps 12 --warmup 2 --results "$work/ref-profile" >/dev/null 2>"$work/ref.err" \
  || fail "profile: the reference run failed: $(tail -2 "$work/ref.err")"
profile_dir=$(ls -d "$work"/ref-profile/*/ | head -1)
profile_html=$(stat -c %s "$profile_dir/report.html" 2>/dev/null || echo 0)
fill_leaving $(( ( $(tree_bytes "$profile_dir") - $(kib "$profile_html") * 1024 / 2 ) / 1024 ))
"$trainlab" profile "${small[@]}" --steps 12 --warmup 2 --results "$disk/results" >"$work/profile.out" 2>"$work/profile.err"
expect_full_disk "profile (report.html of $profile_html bytes)" $? "$work/profile.err"

[ "$failures" -eq 0 ] || { echo "full_disk_test: $failures failed"; exit 1; }
echo "full_disk_test: all cases exit 2 with one line"
