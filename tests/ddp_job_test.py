"""Job-level diagnosis of real DDP traces (issue 34): torchrun starts N Gloo ranks of a small DDP MLP,
each traced by torch.profiler; one rank can be slowed on purpose with extra matmuls in its step.
`trainlab diagnose` of the folder must give one job verdict, in the terminal, diagnosis.json and the
report (which links every rank's trace): with a slowed rank, rank imbalance that names that rank,
its model compute, and the other ranks' waiting. With `buckets`, a wider model whose gradients go in
several small DDP buckets: Gloo's worker threads all-reduce the first buckets while backward goes on,
and each rank's communication must come out split into a part overlapped with compute and the
exposed rest.

    python tests/ddp_job_test.py TRAINLAB RANKS SLOW_RANK|none [buckets]  # the test (ctest runs it)
    python tests/ddp_job_test.py --traces OUT RANKS SLOW_RANK|none [buckets]  # only the traces
    torchrun ... tests/ddp_job_test.py --worker OUT SLOW_RANK [buckets]  # one rank (the above start these)
"""
import json
import os
import subprocess
import sys
import tempfile

WIDTH = 384
BATCH = 64
SLOW_EXTRA_MATMULS = 160  # the slowed rank's extra work a step: several times a rank's own work
# `buckets`: six 1024-wide layers (4 MiB of gradients each) in 2 MiB buckets, so the last layers'
# all-reduces run while backward computes the first ones.
BUCKETS_WIDTH, BUCKETS_LAYERS, BUCKET_CAP_MB = 1024, 6, 2


def worker(out_dir, slow_rank, buckets):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.set_num_threads(1)  # ranks share this machine's few cores
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    width = BUCKETS_WIDTH if buckets else WIDTH
    layers = []
    for _ in range(BUCKETS_LAYERS if buckets else 2):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = DDP(nn.Sequential(*layers, nn.Linear(width, 1)),
                bucket_cap_mb=BUCKET_CAP_MB if buckets else 25)  # 25: DDP's default
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, width)
    y = torch.randn(BATCH, 1)
    extra = torch.randn(width, width)

    def step():
        if rank == slow_rank:
            z = x
            for _ in range(SLOW_EXTRA_MATMULS):
                z = torch.tanh(z @ extra)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()

    active = 10 if buckets else 20  # the wider model's step is ~20 times longer
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=2, warmup=2, active=active)) as prof:
        for _ in range(4 + active):
            step()
            prof.step()
    prof.export_chrome_trace(os.path.join(out_dir, "rank%d.pt.trace.json" % rank))
    dist.barrier()
    dist.destroy_process_group()


def make_traces(traces, ranks, slow_rank, buckets):
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    subprocess.run([torchrun, "--standalone", "--nproc-per-node", str(ranks), os.path.abspath(__file__),
                    "--worker", traces, str(slow_rank)] + (["buckets"] if buckets else []), check=True, timeout=300)


def check_overlap_split(document, stdout, html):
    # Every rank's all-reduce time is split: a good part under backward's compute, the rest exposed
    # (its share of the step). Measured here: 40.9 and 42.4 % of the step overlapped, 23.1 and 23.2 %
    # exposed; a trace that counted it all as exposed would read 64 and 66 % communication.
    for d in document["diagnoses"]:
        comm = d["summary"]["communication"]
        rank = d["summary"].get("rank")
        assert comm["overlapped_pct"] is not None and comm["overlapped_pct"] > 10, (rank, comm)
        assert abs(comm["exposed_pct"] + comm["overlapped_pct"] - comm["total_pct"]) < 0.01, (rank, comm)
        assert abs(d["summary"]["shares_pct"]["communication"] - comm["exposed_pct"]) < 0.01, (rank, comm)
    # The waits at the collectives are split too, and each rank's waits, though DDP launches several
    # buckets' all-reduces at once, are counted once: never more than the rank's step.
    for r in document["job"]["per_rank"]:
        assert r["collective_wait_exposed_ms"] is not None, r
        assert 0 <= r["collective_wait_exposed_ms"] <= r["collective_wait_ms"] + 1e-9, r
        assert r["collective_wait_ms"] < r["step_p50_ms"] * 1.5, r
    assert "overlapped with compute" in stdout, stdout
    assert "Overlapped with compute" in html, "the report's data-parallel section has no overlapped share"


def main():
    trainlab, ranks, slow = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    buckets = sys.argv[4:] == ["buckets"]
    slow_rank = -1 if slow == "none" else int(slow)
    with tempfile.TemporaryDirectory() as tmp:
        traces = os.path.join(tmp, "traces")
        os.makedirs(traces)
        make_traces(traces, ranks, slow_rank, buckets)
        out = os.path.join(tmp, "diagnosis")
        run = subprocess.run([trainlab, "diagnose", traces, "--out", out], capture_output=True, text=True,
                             timeout=300)
        print(run.stdout)
        assert run.returncode == 0, run.stderr
        with open(os.path.join(out, "diagnosis.json")) as f:
            document = json.load(f)
        job = document["job"]
        print(json.dumps({k: v for k, v in job.items() if k != "per_rank"}, indent=1))
        assert job["ranks"] == ranks, job["ranks"]
        assert len(job["per_rank"]) == ranks
        assert [r["rank"] for r in job["per_rank"]] == list(range(ranks))
        with open(os.path.join(out, "report.html")) as f:
            html = f.read()
        for r in range(ranks):
            assert "rank%d.pt.trace.json" % r in html, "the report does not link rank %d's trace" % r
        assert "Job of %d ranks" % ranks in run.stdout
        if buckets:
            check_overlap_split(document, run.stdout, html)
        if slow_rank >= 0:
            assert job["imbalanced"], job["headline"]
            assert job["straggler_rank"] == slow_rank, job
            assert job["straggler_cause"] == "model compute", job
            assert "rank %d is the straggler" % slow_rank in job["headline"], job["headline"]
            # Each other rank waits for the slowed one, which waits for nobody. (How much of a fast
            # rank's exposed communication is waiting depends on the machine: beside another busy
            # process the exchange itself slows, and 7 of 26 ms were waiting on one rank.)
            for r in job["per_rank"]:
                if r["rank"] == slow_rank:
                    assert r["waiting_ms"] == 0, r
                else:
                    assert r["waiting_ms"] > 0, r
            assert job["waiting_pct"] > 5, job["waiting_pct"]
            # Collective by collective (DDP's gloo:all_reduce runs on every rank): the slowed rank
            # is the last to arrive at most of them.
            assert job["collectives_matched"] >= 10, job
            assert job["last_in_rank"] == slow_rank and job["last_in_pct"] > 50, job
            # Each wait is split by the rank's own work under it (the loop thread's ops while Gloo's
            # worker waits): a fast rank waits with some of it exposed, never more than the wait.
            for r in job["per_rank"]:
                if r["rank"] != slow_rank:
                    assert 0 < r["collective_wait_exposed_ms"] <= r["collective_wait_ms"] + 1e-9, r
            assert "with none of their own work under it" in job["headline"], job["headline"]
        else:
            # Ranks doing the same work on a shared machine still differ, step by step, by how the
            # cores were shared: the job verdict then names the slower rank with its interval, or
            # says the ranks are balanced. Either way it is one verdict with every rank in it.
            if job["imbalanced"]:
                assert "rank %d is the straggler" % job["straggler_rank"] in job["headline"], job["headline"]
                assert job["spread_low_pct"] > 10 and job["steps_paired"] >= 10, job
            else:
                assert "balanced" in job["headline"] or job["at_line"], job["headline"]
            assert job["confidence"] in ("high", "medium", "low"), job
    print("ok")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), sys.argv[4:] == ["buckets"])
    elif len(sys.argv) >= 2 and sys.argv[1] == "--traces":
        make_traces(sys.argv[2], int(sys.argv[3]), -1 if sys.argv[4] == "none" else int(sys.argv[4]),
                    sys.argv[5:] == ["buckets"])
    else:
        main()
