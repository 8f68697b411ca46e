#!/usr/bin/env bash
# A torchrun job across machines, made of two network namespaces on this machine: each a "node"
# with its own address (veth pair), its own hostname (a UTS namespace) and its own results folder,
# rendezvousing through c10d at node A. Traffic stays inside the namespaces.
#   1. 2 nodes x 2 ranks `profile`: rank 0's folder holds all four ranks' records and traces (those
#      of node B gathered through the rendezvous store), each with its host, and one job verdict.
#   2. node B's link delayed 20 ms each way (netem where the kernel has it, else tests/delay_link.py):
#      the job names communication and its exposed communication grows.
#   3. node B's ranks killed (kill) or frozen with SIGSTOP (stall) mid-run: node A's ranks end within
#      --dist-timeout-s + 5 s and what finished is recorded.
#   4. trainlab's own --nproc 2 on each node (NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT): one
#      merged run of 4 ranks on node A, as under torchrun.
#   5. node B pointed at an address nobody answers: it fails within --dist-timeout-s + 5 s with one
#      line naming that address.
# Skips (exit 77, one line) where namespaces cannot be made (not root, no ip/unshare, no CAP_NET_ADMIN).
# usage: multinode_netns_test.sh TRAINLAB TORCHRUN [case...]
#   (cases: gather slow kill stall nproc unreachable; default all)
set -uo pipefail
trainlab=$(realpath "$1")
torchrun=$2
shift 2
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(gather slow kill stall nproc unreachable)

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "namespaces need root"
for tool in ip unshare tc; do command -v $tool >/dev/null || skip "no $tool (iproute2, util-linux)"; done
[ -x "$torchrun" ] || skip "no torchrun at $torchrun"

tag=tl$$  # names unique to this run: tests may run side by side
nsA=${tag}a nsB=${tag}b vethA=${tag}va vethB=${tag}vb
net=10.$((200 + $$ % 50)).$(( ($$ / 50) % 250 )).
addrA=${net}1 addrB=${net}2
work=$(mktemp -d "${TMPDIR:-/tmp}/trainlab-multinode-XXXXXX")
cleanup() {
  pkill -KILL -f -- "--rdzv-id $tag" 2>/dev/null
  pkill -f -- "delay_link.py .* $tag\$" 2>/dev/null
  ip netns del "$nsA" 2>/dev/null
  ip netns del "$nsB" 2>/dev/null
  [ -n "${KEEP_WORK:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$nsA" 2>/dev/null || skip "cannot make a network namespace here"
ip netns add "$nsB" || skip "cannot make a second network namespace"
ip link add "$vethA" type veth peer name "$vethB" || skip "cannot make a veth pair"
ip link set "$vethA" netns "$nsA" && ip link set "$vethB" netns "$nsB" || exit 1
ip -n "$nsA" addr add "$addrA/24" dev "$vethA" && ip -n "$nsB" addr add "$addrB/24" dev "$vethB" || exit 1
for ns in "$nsA" "$nsB"; do ip -n "$ns" link set lo up; done
ip -n "$nsA" link set "$vethA" up && ip -n "$nsB" link set "$vethB" up || exit 1

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# node NAME NS ADDR IS_HOST RESULTS RUN_ID trainlab-args...: one node's torchrun (2 ranks), in the foreground.
node() {
  local name=$1 ns=$2 addr=$3 is_host=$4 results=$5 run_id=$6
  shift 6
  ip netns exec "$ns" unshare --uts bash -c 'hostname "$0" && exec "$@"' "$name" \
    "$torchrun" --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "$addrA:29400" \
    --rdzv-id "$tag-$run_id" --rdzv-conf "is_host=$is_host" --local-addr "$addr" --max-restarts 0 \
    --no-python "$trainlab" "$@" --results "$results"
}

# job RUN_ID trainlab-args...: both nodes; waits for both; node A's output in $work/RUN_ID.a.log.
job() {
  local run_id=$1
  shift
  node node-b "$nsB" "$addrB" 0 "$work/$run_id.b" "$run_id" "$@" >"$work/$run_id.b.log" 2>&1 &
  local b=$!
  node node-a "$nsA" "$addrA" 1 "$work/$run_id.a" "$run_id" "$@" >"$work/$run_id.a.log" 2>&1
  local a=$?
  wait $b
  return $a
}

python=$(dirname "$torchrun")/python
# A compute-heavy MLP with small gradients: on a free link compute leads the step.
model=(--scenario mlp --batch 4096 --set hidden=512 --steps 16 --window 3:10 --dist-timeout-s 30)

job_figures() {  # RUN_FOLDER -> "suspect exposed_pct hosts records traces"
  "$python" - "$1" <<'EOF'
import glob, json, os, sys
run = sys.argv[1]
record = json.load(open(os.path.join(run, "run.json")))
ranks = record["variants"][0]["distributed"]["ranks"]
job = json.load(open(os.path.join(run, "diagnosis.json"))).get("job") or {}
exposed = job.get("wire_pct", 0) + job.get("waiting_pct", 0)  # the job's exposed communication, % of the step
print(job.get("primary", "none"), round(exposed, 1), ",".join(sorted({r.get("host", "") for r in ranks})),
      len(glob.glob(os.path.join(run, "variants", "fp32.rank*.json"))),
      len(glob.glob(os.path.join(run, "traces", "fp32", "rank*.pt.trace.json*"))),
      sum(1 for r in ranks if r["ok"]))
EOF
}

free_exposed=""
for case in "${cases[@]}"; do
  case $case in
  gather)
    job gather profile "${model[@]}" || fail "gather: node A's torchrun failed: $(tail -3 "$work/gather.a.log")"
    run=$(ls -d "$work"/gather.a/*/ 2>/dev/null | head -1)
    [ -n "$run" ] || { fail "gather: no run folder on node A"; cat "$work/gather.a.log"; continue; }
    read -r suspect exposed hosts records traces ok <<<"$(job_figures "$run")"
    echo "gather: job suspect $suspect, exposed communication $exposed % of the step, hosts $hosts, $records records, $traces traces, $ok ranks ok"
    [ "$records" = 4 ] || fail "gather: $records rank records in rank 0's folder, expected 4"
    [ "$traces" = 4 ] || fail "gather: $traces rank traces in rank 0's folder, expected 4"
    [ "$ok" = 4 ] || fail "gather: $ok ranks ok, expected 4"
    [ "$hosts" = "node-a,node-b" ] || fail "gather: hosts '$hosts', expected node-a,node-b"
    grep -q "Job of 4 ranks" "$work/gather.a.log" || fail "gather: no job verdict printed on node A"
    # Node B's ranks leave the report to rank 0: nothing but torch's and torchrun's warnings there.
    # Among them, on a loaded machine: node B's agent still reading node A's store when node A's
    # agent, its host, has left (torchrun's exit-barrier race, pytorch/pytorch#69520), a TCPStore
    # warning with its C++ stack frames, once the job is done.
    unexpected=$(grep -v '^W\|Warning\|warn\|numpy\|conversion_method\|socket.cpp\|^\*' "$work/gather.b.log" |
      grep -v '^$\|TCPStore.cpp\|^Exception raised from\|^frame #\|^<omitting python frames>')
    [ -z "$unexpected" ] || fail "gather: node B printed: $(head -5 <<<"$unexpected")"
    ls "$work"/gather.b/*/variants/fp32.rank2.json >/dev/null 2>&1 || fail "gather: node B kept no copy of rank 2's record"
    free_exposed=$exposed
    ;;
  slow)
    # Delay node B's link 20 ms each way: netem where the kernel has it, else the same delay from a
    # userspace link (tests/delay_link.py: a TUN device in each namespace, packets held 20 ms).
    link_pid=""
    if ip netns exec "$nsB" tc qdisc add dev "$vethB" root netem delay 20ms 2>/dev/null &&
       ip netns exec "$nsA" tc qdisc add dev "$vethA" root netem delay 20ms 2>/dev/null; then
      how="netem delay 20 ms each way"
    else
      ip netns exec "$nsB" tc qdisc del dev "$vethB" root 2>/dev/null
      "$python" "$(dirname "$0")/delay_link.py" "$nsA" "$addrA" "$nsB" "$addrB" 20 "$tag" >"$work/link.log" 2>&1 &
      link_pid=$!
      for _ in $(seq 1 50); do grep -q ready "$work/link.log" && break; sleep 0.1; done
      grep -q ready "$work/link.log" || { fail "slow: the delay link did not start: $(cat "$work/link.log")"; continue; }
      how="delay 20 ms each way through a userspace link (this kernel has no netem)"
    fi
    job slow profile "${model[@]}" || fail "slow: node A's torchrun failed: $(tail -3 "$work/slow.a.log")"
    if [ -n "$link_pid" ]; then kill "$link_pid"; wait "$link_pid"; else
      ip netns exec "$nsB" tc qdisc del dev "$vethB" root
      ip netns exec "$nsA" tc qdisc del dev "$vethA" root
    fi
    run=$(ls -d "$work"/slow.a/*/ 2>/dev/null | head -1)
    [ -n "$run" ] || { fail "slow: no run folder on node A"; continue; }
    read -r suspect exposed hosts records traces ok <<<"$(job_figures "$run")"
    echo "slow ($how): job suspect $suspect, exposed communication $exposed % of the step (free link: ${free_exposed:-not run})"
    [ "$suspect" = communication ] || fail "slow: the job names '$suspect', expected communication"
    if [ -n "$free_exposed" ]; then
      "$python" -c "import sys; sys.exit(0 if $exposed >= $free_exposed + 10 else 1)" ||
        fail "slow: exposed communication $exposed % is not 10 points above the free link's $free_exposed %"
    fi
    grep -A6 "Job of 4 ranks" "$work/slow.a.log"
    ;;
  kill | stall)
    # Node B's ranks die (kill: the kernel resets their connections) or freeze (stall: SIGSTOP,
    # nothing answers and nothing closes) after the rendezvous; node A's ranks must end within
    # --dist-timeout-s + 5 s and what finished is recorded.
    signal=KILL
    [ "$case" = stall ] && signal=STOP
    (job "$case" run --scenario mlp --batch 512 --set hidden=512 --steps 400 --dist-timeout-s 20) &
    jobpid=$!
    for _ in $(seq 1 120); do  # until node B's training children run
      pgrep -f -- "__variant" >/dev/null && [ -n "$(ls "$work/$case".b/*/variants/*.log 2>/dev/null)" ] && break
      sleep 0.5
    done
    sleep 3
    stopped_at=$(date +%s)
    # node B's processes: every process in node B's network namespace
    for pid in $(ip netns pids "$nsB"); do kill -$signal "$pid" 2>/dev/null; done
    # node A's torchrun, alone (node B's half of the job waits on frozen ranks)
    while pgrep -f -- "--rdzv-id $tag-$case .*--results $work/$case.a" >/dev/null; do sleep 0.5; done
    ended=$(( $(date +%s) - stopped_at ))
    for pid in $(ip netns pids "$nsB"); do kill -KILL "$pid" 2>/dev/null; done
    wait $jobpid
    echo "$case: node A ended ${ended} s after node B's ranks got SIG$signal (--dist-timeout-s 20)"
    [ "$ended" -le 25 ] || fail "$case: node A took ${ended} s to end, more than --dist-timeout-s + 5"
    run=$(ls -d "$work/$case".a/*/ 2>/dev/null | head -1)
    if [ -z "$run" ]; then fail "$case: no run folder on node A"; continue; fi
    n=$(ls "$run"/variants/fp32.rank0.json "$run"/variants/fp32.rank1.json 2>/dev/null | wc -l)
    [ "$n" = 2 ] || fail "$case: node A's ranks left $n records, expected 2"
    grep -q '"error"' "$run/run.json" || fail "$case: run.json does not record the failure"
    grep -o '"error": "[^"]*"' "$run/run.json" | head -2
    ;;
  nproc)
    # trainlab's own ranks, two per node, with the usual variables instead of a launcher.
    vars="NNODES=2 MASTER_ADDR=$addrA MASTER_PORT=29411"
    ip netns exec "$nsB" unshare --uts bash -c 'hostname node-b && exec env "$@"' _ $vars NODE_RANK=1 \
      "$trainlab" profile "${model[@]}" --nproc 2 --results "$work/nproc.b" >"$work/nproc.b.log" 2>&1 &
    b=$!
    ip netns exec "$nsA" unshare --uts bash -c 'hostname node-a && exec env "$@"' _ $vars NODE_RANK=0 \
      "$trainlab" profile "${model[@]}" --nproc 2 --results "$work/nproc.a" >"$work/nproc.a.log" 2>&1 ||
      fail "nproc: node A failed: $(tail -3 "$work/nproc.a.log")"
    wait $b || fail "nproc: node B failed: $(tail -3 "$work/nproc.b.log")"
    run=$(ls -d "$work"/nproc.a/*/ 2>/dev/null | head -1)
    [ -n "$run" ] || { fail "nproc: no run folder on node A"; continue; }
    read -r suspect exposed hosts records traces ok <<<"$(job_figures "$run")"
    echo "nproc: job suspect $suspect, exposed communication $exposed % of the step, hosts $hosts, $records records, $traces traces, $ok ranks ok"
    [ "$records" = 4 ] && [ "$traces" = 4 ] && [ "$ok" = 4 ] || fail "nproc: expected 4 records, traces and ranks ok"
    [ "$hosts" = "node-a,node-b" ] || fail "nproc: hosts '$hosts', expected node-a,node-b"
    grep -q "Job of 4 ranks" "$work/nproc.a.log" || fail "nproc: no job verdict printed on node A"
    ;;
  unreachable)
    start=$(date +%s)
    ip netns exec "$nsB" env NNODES=2 NODE_RANK=1 MASTER_ADDR=${net}9 MASTER_PORT=29411 \
      "$trainlab" run --scenario mlp --steps 4 --nproc 2 --dist-timeout-s 8 --results "$work/unreach.b" \
      >"$work/unreach.b.log" 2>&1
    status=$?
    took=$(( $(date +%s) - start ))
    echo "unreachable: node B ended with status $status after ${took} s (--dist-timeout-s 8): $(grep -m1 -o "rendezvous[^;]*${net}9[^ ]*" "$work/unreach.b.log")"
    [ "$status" != 0 ] || fail "unreachable: node B succeeded"
    [ "$took" -le 25 ] || fail "unreachable: node B took ${took} s (start-up, then --dist-timeout-s 8 + 5)"
    grep -q "${net}9:29411" "$work/unreach.b.log" || fail "unreachable: no line names ${net}9:29411: $(tail -5 "$work/unreach.b.log")"
    ;;
  *) echo "unknown case $case"; exit 2 ;;
  esac
done
[ $failures = 0 ] && echo "PASS" || { echo "$failures failure(s)"; exit 1; }
