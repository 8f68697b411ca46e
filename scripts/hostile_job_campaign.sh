#!/usr/bin/env bash
# A hostile-input campaign on `trainlab profile -- COMMAND` (the user's own job): scripts that fail,
# hang, fork, daemonize, ignore SIGTERM, print megabytes, exit from a DataLoader worker, fill the
# disk, write garbage where the recorder writes, and bad options. For each case it checks what must
# never happen: exit status 3 (internal error) or a crash signal, a hang (an outer limit of 180 s),
# a process of the case still running after trainlab returned, no run.json where trainlab said it
# kept the record. Prints one line per case and the counts.
#   bash scripts/hostile_job_campaign.sh [BUILD_DIR] [PYTHON]
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build}"
python="${2:-${TRAINLAB_PYTHON:-/opt/trainlab/venv/bin/python}}"
trainlab="$build/trainlab"
faults="$repo/tests/jobs/faults.py"
work="$(mktemp -d "${TMPDIR:-/tmp}/trainlab-campaign-XXXXXX")"
cases=0 bad=0

# The processes whose environment carries this case's mark (the job's tree inherits it).
marked() { grep -l "TRAINLAB_CAMPAIGN_MARK=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | grep -v "^$$\$" || true; }

# case NAME EXPECTED_STATUSES... -- ARGS...  (ARGS: what follows `trainlab`)
run_case() {
  local name="$1"; shift
  local expected=()
  while [ "$1" != "--" ]; do expected+=("$1"); shift; done
  shift
  cases=$((cases + 1))
  local out="$work/$name" mark="mark-$name-$$"
  mkdir -p "$out"
  local start status
  start=$(date +%s)
  TRAINLAB_CAMPAIGN_MARK="$mark" timeout -s KILL 180 "$trainlab" "$@" >"$out/stdout" 2>"$out/stderr" </dev/null
  status=$?
  local took=$(( $(date +%s) - start ))
  sleep 1  # the tree's last exits
  local left
  left="$(marked "$mark" | tr '\n' ' ')"
  local problems=()
  [ "$status" -eq 137 ] && problems+=("hung (killed after 180 s)")
  [ "$status" -eq 3 ] && problems+=("exit 3")
  [ "$status" -gt 128 ] && [ "$status" -ne 137 ] && [ "$status" -ne 130 ] && [ "$status" -ne 143 ] && problems+=("signal exit $status")
  local ok_status=0
  for e in "${expected[@]}"; do [ "$status" -eq "$e" ] && ok_status=1; done
  [ "$ok_status" -eq 1 ] || problems+=("exit $status, expected ${expected[*]}")
  [ -n "$left" ] && problems+=("left running: $left")
  # A record trainlab says it kept must be there.
  local kept
  kept="$(grep -o "the record is kept in [^ ]*" "$out/stderr" | head -1 | sed 's/the record is kept in //')"
  if [ -n "$kept" ] && [ ! -f "$kept/run.json" ]; then problems+=("said the record is kept in $kept, but no run.json there"); fi
  if [ -n "$left" ]; then kill -9 $left 2>/dev/null || true; fi
  if [ "${#problems[@]}" -eq 0 ]; then
    printf 'ok    %-28s exit %-3s %3ss  %s\n' "$name" "$status" "$took" "$(tail -n 1 "$out/stderr" | cut -c1-110)"
  else
    bad=$((bad + 1))
    printf 'FAIL  %-28s exit %-3s %3ss  %s\n' "$name" "$status" "$took" "$(IFS=';'; echo "${problems[*]}")"
    tail -n 3 "$out/stderr" | sed 's/^/      /'
  fi
}

res() { echo "--results $work/$1-results"; }

# The job's own faults (tests/jobs/faults.py).
run_case exit_nonzero 1 -- profile $(res exit_nonzero) -- "$python" "$faults" exit_nonzero
run_case no_step 1 -- profile $(res no_step) -- "$python" "$faults" no_step
run_case hang_timeout 1 -- profile $(res hang) --timeout 15 -- "$python" "$faults" hang
run_case daemonize 0 1 -- profile $(res daemonize) --steps 3 -- "$python" "$faults" daemonize --child-file "$work/child-file"
run_case ignore_sigterm 0 1 -- profile $(res ignore) --steps 5 --timeout 20 -- "$python" "$faults" ignore_sigterm
run_case ignore_sigterm_timeout 1 -- profile $(res ignore2) --timeout 10 -- "$python" "$faults" ignore_sigterm
run_case big_output 0 -- profile $(res big) -- "$python" "$faults" big_output
run_case worker_exit 1 -- profile $(res worker) --timeout 60 -- "$python" "$faults" worker_exit
run_case custom_loop_no_hint 1 -- profile $(res custom) -- "$python" "$faults" custom_loop --steps 4
run_case custom_loop_step_fn 0 -- profile $(res custom2) --step-function __main__:train_step -- "$python" "$faults" custom_loop --steps 6
# A shell that starts a background Python and returns at once.
run_case background_and_exit 0 1 -- profile $(res bg) --timeout 20 -- bash -c "\"$python\" -c 'import time; time.sleep(60)' & exit 0"
# setsid daemon from a shell, outliving it.
run_case setsid_daemon 0 1 -- profile $(res setsid) --timeout 20 -- bash -c "setsid \"$python\" -c 'import time; time.sleep(60)' >/dev/null 2>&1 < /dev/null & sleep 1; exit 0"
# Garbage where the recorder writes: huge and malformed lines in TRAINLAB_JOB_DIR.
run_case garbage_records 0 1 -- profile $(res garbage) --timeout 30 -- "$python" -c "
import os
d = os.environ['TRAINLAB_JOB_DIR']
with open(os.path.join(d, 'proc-1.jsonl'), 'w') as f:
    f.write('{\"type\":\"step\",\"step\":-5,\"start_ns\":9e99}\n' + 'x' * 5000000 + '\n[[[[[[[[[[' * 10000 + '\n{\"type\":\"process\",\"pid\":\"a\"}\n')
with open(os.path.join(d, 'proc-2.jsonl'), 'wb') as f:
    f.write(os.urandom(200000))
"
# The user's own sitecustomize raises.
mkdir -p "$work/usersite"
echo 'raise RuntimeError("the user site is broken")' >"$work/usersite/sitecustomize.py"
run_case user_sitecustomize_raises 0 1 -- profile $(res usersite) --steps 3 --timeout 60 -- env PYTHONPATH="$work/usersite" "$python" "$faults" exit_nonzero
# Bad input: one line, exit 2.
run_case not_found 2 -- profile $(res nf) -- no-such-command-here --flag
run_case not_executable 2 -- profile $(res nx) -- "$repo/README.md"
run_case empty_command 2 -- profile $(res empty) --
run_case negative_steps 2 -- profile $(res neg) --steps -1 -- "$python" "$faults" exit_nonzero
run_case bad_capture 2 -- profile $(res cap) --capture 5 -- "$python" "$faults" exit_nonzero
run_case bad_timeout 2 -- profile $(res to) --timeout abc -- "$python" "$faults" exit_nonzero
run_case results_is_a_file 2 -- profile --results "$repo/README.md" -- "$python" "$faults" exit_nonzero
ln -s "$work/nowhere/at/all" "$work/dangling"
run_case results_dangling_link 2 -- profile --results "$work/dangling" -- "$python" "$faults" exit_nonzero
# The comparing commands on a job (issues 56, 57): every run of the job is a run like the above.
run_case lab_exit_nonzero 0 1 -- baseline $(res lab_exit) --repeat 1 -- "$python" "$faults" exit_nonzero
run_case lab_hang_timeout 0 1 -- baseline $(res lab_hang) --repeat 1 --timeout-s 8 -- "$python" "$faults" hang
run_case lab_daemonize 0 1 -- baseline $(res lab_daemon) --repeat 1 --steps 2 -- "$python" "$faults" daemonize --child-file "$work/child-file2"
run_case lab_big_output 0 1 -- baseline $(res lab_big) --repeat 1 -- "$python" "$faults" big_output
run_case lab_bad_option 2 -- baseline $(res lab_bad) --workers 2 -- "$python" "$faults" exit_nonzero
run_case sweep_exit_nonzero 1 2 -- sweep $(res sweep_exit) -- "$python" "$faults" exit_nonzero
run_case sweep_worker_exit 0 1 2 -- sweep $(res sweep_worker) --repeat 1 --timeout-s 60 -- "$python" "$faults" worker_exit
run_case sweep_ignore_sigterm 0 1 2 -- sweep $(res sweep_ignore) --repeat 1 --timeout-s 10 -- "$python" "$faults" ignore_sigterm
run_case sweep_bad_grid 2 -- sweep $(res sweep_grid) --workers -1 -- "$python" "$faults" exit_nonzero
run_case sweep_nothing_after 2 -- sweep $(res sweep_empty) --
run_case doctor_exit_nonzero 1 -- doctor $(res doctor_exit) -- "$python" "$faults" exit_nonzero
run_case doctor_hang_timeout 1 -- doctor $(res doctor_hang) --timeout-s 8 -- "$python" "$faults" hang
# A full disk under the results folder (a small tmpfs; skipped where mount is not allowed).
mkdir -p "$work/small"
if mount -t tmpfs -o size=24k tmpfs "$work/small" 2>/dev/null; then
  run_case full_disk 1 2 -- profile --results "$work/small/r" --steps 4 -- "$python" "$faults" big_output
  umount "$work/small"
fi
# SIGTERM and SIGINT to trainlab while the job runs.
for sig in TERM INT; do
  cases=$((cases + 1))
  mark="mark-sig$sig-$$"
  TRAINLAB_CAMPAIGN_MARK="$mark" "$trainlab" profile --results "$work/sig$sig" -- "$python" "$faults" ignore_sigterm \
    >"$work/sig$sig.out" 2>"$work/sig$sig.err" </dev/null &
  pid=$!
  sleep 8
  kill -s "$sig" "$pid"
  waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 60 ]; do sleep 1; waited=$((waited + 1)); done
  if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
  wait "$pid"; status=$?
  sleep 1
  left="$(marked "$mark" | tr '\n' ' ')"
  if [ "$waited" -ge 60 ] || [ -n "$left" ] || [ "$status" -eq 3 ]; then
    bad=$((bad + 1)); echo "FAIL  SIG$sig to trainlab: exit $status after ${waited}s; left: $left"
    [ -n "$left" ] && kill -9 $left 2>/dev/null
  else
    echo "ok    SIG$sig to trainlab             exit $status ${waited}s after the signal; run.json kept: $(find "$work/sig$sig" -name run.json | wc -l)"
  fi
done

echo "campaign: $cases cases, $bad with a problem (work folder $work)"
[ "$bad" -eq 0 ]
