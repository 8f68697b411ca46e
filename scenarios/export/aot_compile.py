"""Exports a built-in scenario's model with its loss as one joint forward+backward graph
(torch.export, then the joint graph: outputs = loss, then one gradient per parameter) and
compiles it ahead of time with Inductor into a .pt2 package that the C++ training loop runs
(harness/train/inductor_step.h). Runs with the PyTorch trainlab was built against.

  python aot_compile.py --scenario mlp --knobs '{"in_features": 256, ...}' --batch 64 \
      --precision fp32 --device cpu --out PATH

Each scenario's model here is the twin of its C++ definition (scenarios/<name>.cpp): same
modules, same parameter names, same loss; a parity test checks that the same parameters give the
same loss and gradients on both sides. PATH is written atomically. The last line of stdout (and
the --report file) is one JSON object: export_s, compile_s, gradients (parameter names in output
order), fused_kernels.
Exit status 2 with one line on stderr when the scenario has no twin or its export fails.
"""
import argparse
import json
import os
import sys
import tempfile
import time
import zipfile

import torch
import torch.nn as nn


def mlp_twin(knobs):
    """scenarios/mlp.cpp (mlp and commheavy): Linear+ReLU layers, then a Linear to the classes."""
    in_features, hidden = int(knobs["in_features"]), int(knobs["hidden"])
    classes, layers = int(knobs["classes"]), int(knobs["layers"])
    modules, width = [], in_features
    for _ in range(layers):
        modules += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    modules.append(nn.Linear(width, classes))
    net = nn.Sequential(*modules)

    def example(batch):
        return [torch.randn(batch, in_features)], torch.randint(0, classes, (batch,))

    def loss(output, inputs, targets):
        return nn.functional.cross_entropy(output, targets)

    return net, example, loss


class TinyBlock(nn.Module):
    """scenarios/tinyops.cpp's TinyBlock: x + gelu(norm(linear(x)))."""

    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return x + nn.functional.gelu(self.norm(self.linear(x)))


def tinyops_twin(knobs):
    """scenarios/tinyops.cpp: a deep stack of tiny residual blocks, MSE against tanh(x rolled)."""
    width, depth = int(knobs["width"]), int(knobs["depth"])
    net = nn.Sequential(*[TinyBlock(width) for _ in range(depth)])

    def example(batch):
        return [torch.randn(batch, width)], torch.randn(batch, width)

    def loss(output, inputs, targets):
        return nn.functional.mse_loss(output.float(), targets)

    return net, example, loss


TWINS = {"mlp": mlp_twin, "commheavy": mlp_twin, "tinyops": tinyops_twin}


class WithLoss(nn.Module):
    """The model and its loss in one forward: (inputs..., targets) -> (loss,). The model's
    parameters are under `net.`, so the package's constants are `net_<C++ name with _ for .>`."""

    def __init__(self, net, loss):
        super().__init__()
        self.net = net
        self.loss_fn = loss

    def forward(self, *args):
        inputs, targets = list(args[:-1]), args[-1]
        return (self.loss_fn(self.net(*inputs), inputs, targets),)


def fail(message):
    print("aot_compile: " + message.replace("\n", " ")[:500], file=sys.stderr)
    sys.exit(2)


def fused_kernels(package_path):
    """Kernels Inductor generated (cpp_fused_* on a CPU, triton_* on a GPU) in the package's code."""
    names = set()
    with zipfile.ZipFile(package_path) as z:
        for name in z.namelist():
            if not name.endswith((".cpp", ".wrapper.cpp", ".py")):
                continue
            text = z.read(name).decode("utf-8", "replace")
            for prefix in ("cpp_fused_", "triton_"):
                start = 0
                while True:
                    i = text.find(prefix, start)
                    if i < 0:
                        break
                    j = i
                    while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                        j += 1
                    names.add(text[i:j])
                    start = j
    return len(names)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--knobs", required=True, help="the resolved knobs, a JSON object")
    parser.add_argument("--batch", type=int, required=True, help="the batch each step runs (per rank)")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", required=True)
    parser.add_argument("--report", help="also write the JSON line to this file (atomically)")
    args = parser.parse_args()
    if args.scenario not in TWINS:
        fail("no Python twin of scenario '%s' to export (twins: %s)" % (args.scenario, ", ".join(sorted(TWINS))))
    torch.manual_seed(0)
    net, example, loss = TWINS[args.scenario](json.loads(args.knobs))
    model = WithLoss(net, loss).to(args.device).train()
    inputs, targets = example(args.batch)
    example_args = tuple(t.to(args.device) for t in inputs) + (targets.to(args.device),)
    start = time.perf_counter()
    try:
        from torch.export.experimental import _export_forward_backward

        with torch.autocast(device_type=torch.device(args.device).type, dtype=torch.bfloat16,
                            enabled=args.precision == "bf16"):
            exported = torch.export.export(model, example_args)
        joint = _export_forward_backward(exported)
    except Exception as e:  # the export's own words are the reason the record keeps
        fail("export failed: %s: %s" % (type(e).__name__, e))
    export_s = time.perf_counter() - start
    gradients = [s.target for s in joint.graph_signature.output_specs if s.kind.name == "GRADIENT_TO_PARAMETER"]
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".aot-", suffix=".pt2", dir=out_dir)
    os.close(fd)
    # Inductor inlines 1-D tensors of at most 8 elements (a small bias) into its kernels as
    # literals; the C++ side binds its own parameters and updates them in place, so every
    # parameter must stay a constant buffer.
    from torch._inductor.graph import GraphLowering

    GraphLowering.can_inline_constant = staticmethod(lambda t: False)
    start = time.perf_counter()
    try:
        torch._inductor.aoti_compile_and_package(joint, package_path=tmp)
    except Exception as e:
        os.unlink(tmp)
        fail("Inductor compile failed: %s: %s" % (type(e).__name__, e))
    compile_s = time.perf_counter() - start
    kernels = fused_kernels(tmp)
    os.replace(tmp, args.out)
    report = json.dumps({"export_s": export_s, "compile_s": compile_s, "gradients": gradients,
                         "fused_kernels": kernels, "torch": torch.__version__})
    if args.report:
        with open(args.report + ".tmp", "w") as f:
            f.write(report + "\n")
        os.replace(args.report + ".tmp", args.report)
    print(report)


if __name__ == "__main__":
    main()
