"""Exports a built-in scenario's model with its loss as one joint forward+backward graph
(torch.export, then the joint graph: outputs = loss, then one gradient per parameter) and
compiles it ahead of time with Inductor into a .pt2 package that the C++ training loop runs
(harness/train/inductor_step.h). Runs with the PyTorch trainlab was built against.

  python aot_compile.py --scenario mlp --knobs '{"in_features": 256, ...}' \
      --inputs '[{"shape": [64, 256], "dtype": "float32"}, {"shape": [64], "dtype": "int64"}]' \
      --precision fp32 --device cpu --out PATH

  python aot_compile.py --bundle DIR --inputs ... --precision fp32 --device cpu --out PATH

--inputs describes one batch as the C++ loader makes it: the model's inputs, then the targets.
--bundle takes a user's model from a model bundle (scenarios/export/bundle_model.py): its factory,
from the bundle's copy of their file, and their loss. Its joint graph's gradients are checked
against eager autograd on one batch first (dropout off, fp32): an export that gets the backward
wrong is refused rather than trained.
Each scenario's model here is the twin of its C++ definition (scenarios/<name>.cpp): same
modules, same parameter and buffer names, same loss; a parity test checks that the same parameters
give the same loss and gradients on both sides. bf16 runs the model and its loss under autocast
inside the exported forward (an autocast context around torch.export itself is not traced: the
graph would be fp32). Buffers a step mutates (BatchNorm's running statistics) stay constants of
the package, updated in place. PATH is written atomically. The last line of stdout (and the
--report file) is one JSON object: export_s, compile_s, gradients (parameter names in output
order), buffers (the names of the buffers the step updates), random_ops (ops that draw random
numbers, e.g. dropout), fused_kernels, torch, no_gradient, and for a bundle gradient_check.
Parameters the step never reads (unused ones, and all but one name of tied ones, which
torch.export reads under one name) become constants of the package with no gradient (listed in
no_gradient): the joint graph refuses parameters without a gradient.
Exit status 2 with one line on stderr when the scenario has no twin or its export fails.
"""
import argparse
import copy
import importlib.util
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

    def loss(output, inputs, targets):
        return nn.functional.cross_entropy(output, targets)

    return net, loss


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

    def loss(output, inputs, targets):
        return nn.functional.mse_loss(output.float(), targets)

    return net, loss


class EncoderLayer(nn.TransformerEncoderLayer):
    """nn.TransformerEncoderLayer with its attention computed the way LibTorch's C++
    MultiheadAttention does (explicit matmul and softmax, need_weights=True). The default path
    (scaled_dot_product_attention) exported through _export_forward_backward with torch 2.11 gave
    gradients off by 1000x for everything before the first attention (measured against eager
    autograd on the same parameters), while the loss matched."""

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=True)[0]
        return self.dropout1(x)


class RecsysNet(nn.Module):
    """scenarios/recsys.cpp's RecsysModel: item, category and action embeddings plus summed user
    feature embeddings, a learned position, a post-norm TransformerEncoder (ReLU, 4x feed-forward),
    a LayerNorm and the catalogue head on the last position."""

    def __init__(self, items, categories, actions, user_vocab, dim, layers, heads, seq_len, dropout):
        super().__init__()
        self.item_embedding = nn.Embedding(items + 2, dim)  # two ids beyond the catalogue: mask, padding
        self.category_embedding = nn.Embedding(categories, dim)
        self.action_embedding = nn.Embedding(actions, dim)
        self.user_embedding = nn.Embedding(user_vocab, dim)
        self.position = nn.Parameter(torch.randn(seq_len, 1, dim) * 0.02)
        layer = EncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=dropout)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, items)

    def forward(self, item_ids, item_categories, actions, user_features, negatives):
        x = self.item_embedding(item_ids) + self.category_embedding(item_categories) + self.action_embedding(actions)
        user = self.user_embedding(user_features).sum(1)
        x = (x + user.unsqueeze(1)).transpose(0, 1)  # [seq, batch, dim]
        h = self.encoder(x + self.position)
        return self.head(self.norm(h[h.size(0) - 1]))


def recsys_twin(knobs):
    """scenarios/recsys.cpp: next-item cross-entropy plus 0.1 x a pairwise ranking term against the
    sampled negatives (the batch's fifth input; none at augment 0)."""
    net = RecsysNet(int(knobs["items"]), int(knobs["categories"]), RECSYS_ACTIONS, int(knobs["user_vocab"]),
                    int(knobs["dim"]), int(knobs["layers"]), int(knobs["heads"]), int(knobs["seq_len"]),
                    float(knobs["dropout"]))

    def loss(output, inputs, targets):
        value = nn.functional.cross_entropy(output, targets)
        negatives = inputs[4]
        if negatives.size(1) > 0:
            positive = output.gather(1, targets.unsqueeze(1))
            value = value + 0.1 * nn.functional.softplus(output.gather(1, negatives) - positive).mean()
        return value

    return net, loss


def conv(channels_in, channels_out, kernel, stride):
    return nn.Conv2d(channels_in, channels_out, kernel, stride=stride, padding=kernel // 2, bias=False)


class ResidualBlock(nn.Module):
    """scenarios/vision.cpp's ResidualBlock: two 3x3 convolutions with batch norm, a projection
    shortcut when the shape changes."""

    def __init__(self, channels_in, channels_out, stride):
        super().__init__()
        self.conv1 = conv(channels_in, channels_out, 3, stride)
        self.bn1 = nn.BatchNorm2d(channels_out)
        self.conv2 = conv(channels_out, channels_out, 3, 1)
        self.bn2 = nn.BatchNorm2d(channels_out)
        self.shortcut = None
        if stride != 1 or channels_in != channels_out:
            self.shortcut = nn.Sequential(conv(channels_in, channels_out, 1, stride), nn.BatchNorm2d(channels_out))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class SmallResNet(nn.Module):
    """scenarios/vision.cpp's SmallResNet: stem (stride 2), three stages, global pool, classifier."""

    def __init__(self, width, classes):
        super().__init__()
        self.stem = conv(3, width, 3, 2)
        self.stem_bn = nn.BatchNorm2d(width)
        self.stage1 = ResidualBlock(width, width, 1)
        self.stage2 = ResidualBlock(width, 2 * width, 2)
        self.stage3 = ResidualBlock(2 * width, 4 * width, 2)
        self.head = nn.Linear(4 * width, classes)

    def forward(self, images):
        x = torch.relu(self.stem_bn(self.stem(images)))
        x = self.stage3(self.stage2(self.stage1(x)))
        return self.head(x.mean((2, 3)))


def vision_twin(knobs):
    """scenarios/vision.cpp: the small ResNet, cross-entropy on the labels."""
    net = SmallResNet(int(knobs["width"]), int(knobs["classes"]))

    def loss(output, inputs, targets):
        return nn.functional.cross_entropy(output, targets)

    return net, loss


def bundle_twin(bundle_dir):
    """A user's model from a model bundle: their factory with the bundle's arguments and seed (the
    C++ side binds its own parameters, so only the structure matters), wrapped by the adapter the
    bundle was traced through (model_adapter.py: how forward takes the inputs, which output is
    trained), and their loss (--loss model: the adapted model returns the model's own loss, its
    target the last input)."""
    with open(os.path.join(bundle_dir, "manifest.json")) as f:
        manifest = json.load(f)
    source = manifest["source"]
    user_file = os.path.join(bundle_dir, "source", source["file"])
    sys.path[:0] = [os.path.dirname(user_file), source.get("dir", "")]  # the file's own sibling imports
    spec = importlib.util.spec_from_file_location("trainlab_user_model", user_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(int(manifest.get("seed", 0)))
    # The loss table and the adapter `trainlab model add` used, beside this file.
    from bundle_model import LOSSES
    import model_adapter

    net = model_adapter.adapt(getattr(module, source["factory"])(**source.get("args", {})), manifest.get("adapter"))
    if manifest["loss"] == "model":
        user_loss = model_adapter.model_loss
    else:
        user_loss = LOSSES.get(manifest["loss"]) or getattr(module, manifest["loss"])

    def loss(output, inputs, targets):
        return user_loss(output, targets)

    return net, loss


RECSYS_ACTIONS = 4  # scenarios/data/recsys_data.h: RecsysDataSpec::actions (view, click, cart, buy; not a knob)

# Relative gradient error (norm of the difference over the eager gradient's norm) an fp32 joint
# graph may show against eager autograd: summation order differs, nothing more (measured well
# under 1e-5 on the examples; the SDPA export bug of torch 2.11 gave ~1e3).
GRADIENT_CHECK_TOLERANCE = 1e-3

TWINS = {"mlp": mlp_twin, "commheavy": mlp_twin, "tinyops": tinyops_twin, "recsys": recsys_twin,
         "vision": vision_twin}
DTYPES = {"float32": torch.float32, "int64": torch.int64, "int32": torch.int32, "uint8": torch.uint8,
          "bool": torch.bool}


class WithLoss(nn.Module):
    """The model and its loss in one forward: (inputs..., targets) -> (loss,), under autocast for
    bf16 as the C++ loop runs both. The model's parameters are under `net.`, so the package's
    constants are `net_<C++ name with _ for .>`."""

    def __init__(self, net, loss, device_type, bf16):
        super().__init__()
        self.net = net
        self.loss_fn = loss
        self.device_type = device_type
        self.bf16 = bf16

    def forward(self, *args):
        inputs, targets = list(args[:-1]), args[-1]
        with torch.autocast(device_type=self.device_type, dtype=torch.bfloat16, enabled=self.bf16):
            return (self.loss_fn(self.net(*inputs), inputs, targets),)


def example_batch(specs, device):
    """One batch of the described shapes and dtypes: integer tensors are zeros (valid ids for
    every embedding and class; the low end of their range when the spec gives one), floating ones
    random. Only the shapes matter to the export; the gradient check uses the values."""
    tensors = []
    for spec in specs:
        dtype = DTYPES.get(spec["dtype"])
        if dtype is None:
            fail("unsupported input dtype '%s'" % spec["dtype"])
        shape = [int(d) for d in spec["shape"]]
        if dtype.is_floating_point:
            tensors.append(torch.randn(shape, device=device))
        elif "range" in spec:
            lo, hi = int(spec["range"][0]), int(spec["range"][1])
            tensors.append(torch.randint(lo, hi + 1, shape, device=device).to(dtype))
        else:
            tensors.append(torch.zeros(shape, dtype=dtype, device=device))
    return tensors


def parameters_to_constants(exported):
    """Turns parameters the graph never reads into buffers of the program (in place) and returns
    their names: unused parameters, and the names of a tied parameter that export does not use
    (it reads one name for all of them). The joint graph refuses parameters without a gradient."""
    from torch.export.graph_signature import InputKind, InputSpec

    placeholders = {n.name: n for n in exported.graph.nodes if n.op == "placeholder"}
    unread, specs = [], []
    for spec in exported.graph_signature.input_specs:
        node = placeholders.get(spec.arg.name)
        if spec.kind == InputKind.PARAMETER and node is not None and len(node.users) == 0:
            unread.append(spec.target)
            specs.append(InputSpec(InputKind.BUFFER, spec.arg, spec.target, True))
            exported._state_dict[spec.target] = exported.state_dict[spec.target].detach()
            value = node.meta.get("val")
            if value is not None and getattr(value, "fake_mode", None) is not None:
                with value.fake_mode:
                    node.meta["val"] = value.detach()
        else:
            specs.append(spec)
    exported.graph_signature.input_specs[:] = specs
    return unread


def export_joint(model, example_args):
    """torch.export, parameters the graph does not read made constants, then the joint graph."""
    from torch.export.experimental import _export_forward_backward

    exported = torch.export.export(model, example_args)
    unread = parameters_to_constants(exported)
    return _export_forward_backward(exported), unread


def run_joint(joint, example_args):
    """Runs the (uncompiled) joint graph: {output target or kind: tensor}, gradients by parameter."""
    state = dict(joint.state_dict)
    state.update(getattr(joint, "constants", {}) or {})
    user = iter(example_args)
    flat = []
    for spec in joint.graph_signature.input_specs:
        flat.append(next(user) if spec.kind.name == "USER_INPUT" else state[spec.target])
    outputs = joint.graph_module(*flat)
    grads, loss = {}, None
    for spec, value in zip(joint.graph_signature.output_specs, outputs):
        if spec.kind.name == "GRADIENT_TO_PARAMETER":
            grads[spec.target] = value
        elif spec.kind.name == "LOSS_OUTPUT":
            loss = value
    return loss, grads


def check_gradients(net, loss, device, example_args):
    """The joint graph's gradients against eager autograd's on one batch, dropout off, fp32:
    (max relative error, its parameter, gradients compared), or None with the reason when the step
    draws random numbers that no module switch turns off."""
    net = copy.deepcopy(net)
    for m in net.modules():
        if isinstance(m, nn.Dropout) or type(m).__name__.startswith("Dropout"):
            m.p = 0.0
        if isinstance(m, nn.MultiheadAttention):
            m.dropout = 0.0
    model = WithLoss(net, loss, device, False).to(device).train()
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    joint, _ = export_joint(model, example_args)
    random = sorted({str(n.target) for n in joint.graph.nodes if n.op == "call_function" and
                     any(k in str(n.target) for k in ("dropout", "rand", "bernoulli", "normal", "uniform"))})
    if random:
        return None, "the step draws random numbers outside nn.Dropout (%s)" % ", ".join(random)
    with torch.no_grad():
        for k, v in model.state_dict().items():
            v.copy_(state[k])
    joint_loss, joint_grads = run_joint(joint, example_args)
    with torch.no_grad():
        for k, v in model.state_dict().items():
            v.copy_(state[k])
    model.zero_grad(set_to_none=True)
    model(*example_args)[0].backward()
    named = dict(model.named_parameters(remove_duplicate=False))  # export may read a tied parameter by any name
    worst, worst_name, compared = 0.0, "", 0
    for name, g in joint_grads.items():
        eager = named[name].grad
        if eager is None:
            continue
        compared += 1
        err = ((g - eager).norm() / eager.norm().clamp_min(1e-12)).item()
        if err > worst:
            worst, worst_name = err, name
    if compared == 0:
        return None, "no parameter got a gradient from eager autograd on the batch"
    return (worst, worst_name, compared), None


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
    parser.add_argument("--scenario")
    parser.add_argument("--bundle", help="a model bundle folder (trainlab model add) instead of a scenario")
    parser.add_argument("--knobs", default="{}", help="the resolved knobs, a JSON object")
    parser.add_argument("--inputs", required=True,
                        help="one batch: a JSON list of {shape, dtype}, the model's inputs then the targets")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", required=True)
    parser.add_argument("--report", help="also write the JSON line to this file (atomically)")
    args = parser.parse_args()
    if args.bundle is None and args.scenario not in TWINS:
        fail("no Python twin of scenario '%s' to export (twins: %s)" % (args.scenario, ", ".join(sorted(TWINS))))
    torch.manual_seed(0)
    try:
        specs = json.loads(args.inputs)
        if args.bundle is not None:
            net, loss = bundle_twin(args.bundle)
        else:
            net, loss = TWINS[args.scenario](json.loads(args.knobs))
    except (ValueError, KeyError, TypeError) as e:
        fail("bad --knobs or --inputs: %s: %s" % (type(e).__name__, e))
    except Exception as e:  # the user's file, in a bundle
        fail("building the bundle's model failed: %s: %s" % (type(e).__name__, e))
    if not isinstance(specs, list) or len(specs) < 2:
        fail("--inputs must list the model's inputs and then the targets")
    model = WithLoss(net, loss, torch.device(args.device).type, args.precision == "bf16").to(args.device).train()
    example_args = tuple(example_batch(specs, args.device))
    gradient_check = None
    if args.bundle is not None:
        try:
            result, skipped = check_gradients(net, loss, torch.device(args.device).type, example_args)
        except Exception as e:
            fail("export failed: %s: %s" % (type(e).__name__, e))
        if skipped:
            gradient_check = {"skipped": skipped}
        else:
            gradient_check = {"max_rel_err": result[0], "worst": result[1], "compared": result[2]}
            if result[0] > GRADIENT_CHECK_TOLERANCE:
                fail("torch.export's joint graph gets this model's backward wrong: the gradient of %s differs from "
                     "eager autograd's by %.3g of its norm (more than %g)" % (result[1], result[0], GRADIENT_CHECK_TOLERANCE))
    start = time.perf_counter()
    try:
        joint, unread = export_joint(model, example_args)
    except Exception as e:  # the export's own words are the reason the record keeps
        fail("export failed: %s: %s" % (type(e).__name__, e))
    export_s = time.perf_counter() - start
    gradients = [s.target for s in joint.graph_signature.output_specs if s.kind.name == "GRADIENT_TO_PARAMETER"]
    buffers = [s.target for s in joint.graph_signature.output_specs if s.kind.name == "BUFFER_MUTATION"]
    # Ops that draw random numbers (dropout): a CUDA graph replay would repeat their draws.
    random_ops = sorted({str(n.target) for n in joint.graph.nodes if n.op == "call_function" and
                         any(k in str(n.target) for k in ("dropout", "rand", "bernoulli", "normal", "uniform"))})
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
    report = {"export_s": export_s, "compile_s": compile_s, "gradients": gradients, "no_gradient": unread,
              "buffers": buffers, "random_ops": random_ops, "fused_kernels": kernels, "torch": torch.__version__}
    if gradient_check is not None:
        report["gradient_check"] = gradient_check
    report = json.dumps(report)
    if args.report:
        with open(args.report + ".tmp", "w") as f:
            f.write(report + "\n")
        os.replace(args.report + ".tmp", args.report)
    print(report)


if __name__ == "__main__":
    main()
