"""The torch.profiler side of bench/profiler_vs_torch.cpp: the tinyops model (its Python twin from
scenarios/export/aot_compile.py) trained in eager PyTorch, with torch.profiler (CPU activity only,
no shapes, no stacks, no memory) on every other step through its schedule (wait 1, active 1), so
that a shared machine's drift hits profiled and plain steps alike. Measured as the C++ side
measures trainlab: the median profiled step against the median plain step, over the events one
profiled step recorded. Only the training step is timed, never the profiler's start, stop or
post-processing between steps.

  python torch_profiler_peer.py --width 32 --depth 48 --batch 16 --pairs 30 --warmup 5 \
      --threads 1 --trace-dir DIR [--device cuda]

Prints one JSON object (the last line of stdout): step_ms_plain, step_ms_profiled, overhead_pct,
events_per_step, event_cost_ns, trace_json_bytes, trace_gz_bytes (one profiled step's trace; gzip
at zlib level 6, as trainlab writes its own), threads, torch, device. With --device cuda the model
and its data live on the GPU, torch.profiler records CUDA activity too (CUPTI through Kineto), each
timed step ends in a device synchronize, and kernels_per_step / kernel_us_per_step (medians over
the profiled steps' traces, and kernels_per_step_by_name) are what scripts/device_check.sh sets beside
trainlab's CUPTI capture.
Exit status 2 with one line on stderr for bad arguments.
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import time
import warnings

import torch
from torch.profiler import ProfilerActivity, profile, schedule

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "export"))
from aot_compile import tinyops_twin  # noqa: E402  (the scenario's Python twin)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--depth", type=int, default=48)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--pairs", type=int, default=30, help="plain + profiled step pairs")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up steps, never timed")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0: PyTorch's default)")
    parser.add_argument("--trace-dir", default=".", help="where one profiled step's trace is written (then removed)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where the model and data live")
    args = parser.parse_args()
    if min(args.width, args.depth, args.batch, args.pairs) < 1 or args.warmup < 0 or args.threads < 0:
        parser.exit(2, "torch_profiler_peer: sizes and pairs must be >= 1, warm-up and threads >= 0\n")
    if not os.path.isdir(args.trace_dir):
        parser.exit(2, "torch_profiler_peer: --trace-dir %s is not a folder\n" % args.trace_dir)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.exit(2, "torch_profiler_peer: --device cuda but torch sees no CUDA device\n")
    return args


def main():
    args = parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    net, loss_fn = tinyops_twin({"width": args.width, "depth": args.depth})
    net = net.to(args.device)
    # One update kernel per parameter, as LibTorch's SGD (the C++ side) launches: torch's default on
    # CUDA, foreach, batches them into a few multi-tensor kernels and would count other work.
    optimizer = torch.optim.SGD(net.parameters(), lr=1e-3, foreach=False)
    x = torch.randn(args.batch * 8, args.width).to(args.device)
    y = torch.tanh(x.roll(1, 1))
    on_cuda = args.device == "cuda"

    def train_step(i):
        rows = slice((i % 8) * args.batch, (i % 8 + 1) * args.batch)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(net(x[rows]), [x[rows]], y[rows])
        loss.backward()
        optimizer.step()
        if on_cuda:
            torch.cuda.synchronize()

    for i in range(args.warmup):
        train_step(i)

    trace_path = os.path.join(args.trace_dir, "torch_profiler.%d.pt.trace.json" % os.getpid())
    events_per_cycle, trace, kernels_per_cycle, kernel_us_per_cycle = [], {}, [], []
    kernel_names = {}  # kernel name -> launches over all profiled steps

    def on_trace_ready(prof):
        events_per_cycle.append(len(prof.events()))
        if not trace or on_cuda:
            prof.export_chrome_trace(trace_path)
            with open(trace_path, "rb") as f:
                trace.setdefault("bytes", f.read())
                if on_cuda:
                    f.seek(0)
                    kernels = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
                    kernels_per_cycle.append(len(kernels))
                    kernel_us_per_cycle.append(sum(float(e.get("dur", 0)) for e in kernels))
                    for e in kernels:
                        kernel_names[e.get("name", "")] = kernel_names.get(e.get("name", ""), 0) + 1
            os.remove(trace_path)

    plain_ns, profiled_ns = [], []
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_cuda else [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "profiler won't be using warmup": intended, the steps alternate
        with profile(activities=activities, record_shapes=False, with_stack=False, profile_memory=False,
                     schedule=schedule(wait=1, warmup=0, active=1), on_trace_ready=on_trace_ready) as prof:
            for i in range(2 * args.pairs):
                begin = time.perf_counter_ns()
                train_step(args.warmup + i)
                elapsed = time.perf_counter_ns() - begin
                (profiled_ns if i % 2 == 1 else plain_ns).append(elapsed)
                prof.step()

    # The trace's complete events: what a reader of the file sees per profiled step.
    trace_events = sum(1 for e in json.loads(trace["bytes"])["traceEvents"] if e.get("ph") == "X")
    plain, profiled = statistics.median(plain_ns), statistics.median(profiled_ns)
    events_per_step = statistics.median(events_per_cycle)
    print(json.dumps({
        "step_ms_plain": plain / 1e6,
        "step_ms_profiled": profiled / 1e6,
        "overhead_pct": 100.0 * (profiled / plain - 1.0),
        "events_per_step": events_per_step,
        "event_cost_ns": (profiled - plain) / events_per_step,
        "trace_events": trace_events,
        "trace_json_bytes": len(trace["bytes"]),
        "trace_gz_bytes": len(gzip.compress(trace["bytes"], compresslevel=6)),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "device": args.device,
        "kernels_per_step": statistics.median(kernels_per_cycle) if kernels_per_cycle else 0,
        "kernel_us_per_step": statistics.median(kernel_us_per_cycle) if kernel_us_per_cycle else 0.0,
        "kernels_per_step_by_name": {name: n / len(kernels_per_cycle) for name, n in kernel_names.items()},
    }))


if __name__ == "__main__":
    main()
