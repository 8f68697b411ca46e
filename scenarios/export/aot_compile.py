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
numbers, e.g. dropout), fused_kernels, torch, no_gradient, for a bundle gradient_check, and
compiler_workaround where the first package computed NaN or Inf that the exported graph does not
(compile_checked).
Parameters the step never reads (unused ones, and all but one name of tied ones, which
torch.export reads under one name) become constants of the package with no gradient (listed in
no_gradient): the joint graph refuses parameters without a gradient.
Exit status 2 with one line on stderr when the scenario has no twin or its export fails; 4 when the
bundle's model cannot be imported by this Python (ImportError: the environment, not the model).
"""
import argparse
import copy
import faulthandler
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
    sys.modules[spec.name] = module  # importable by name, as torch.compile's tracer and pickle expect
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

# Gradient error (gradient_errors) an fp32 joint graph may show against eager autograd: summation
# order differs, nothing more (measured at most ~1e-5 on the examples and library models; the SDPA
# export bug of torch 2.11's core decompositions gave ~1e11, a doubled gradient gives ~1).
GRADIENT_CHECK_TOLERANCE = 1e-2
# The share of all gradients' norm below which a gradient's own norm stops being its yardstick:
# a mathematically zero gradient (a bias before BatchNorm) is rounding noise on both sides,
# measured up to 2e-5 of all gradients' norm (an LSTM into Linear+BatchNorm1d, batch 8), so it
# reads 4e-4 here; a doubled gradient is still refused down to 5e-4 of all gradients' norm.
GRADIENT_FLOOR = 0.05

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


def with_bundle_ranges(specs, bundle_dir):
    """The batch specs with the integer ranges of the bundle's manifest (inputs, then the target):
    the gradient check needs a batch like the user's (all-zero ids give identical samples, whose
    BatchNorm statistics are degenerate)."""
    with open(os.path.join(bundle_dir, "manifest.json")) as f:
        manifest = json.load(f)
    described = list(manifest.get("inputs", [])) + [manifest.get("target", {})]
    out = []
    for spec, known in zip(specs, described + [{}] * (len(specs) - len(described))):
        if "range" not in spec and "range" in known and spec.get("dtype") == known.get("dtype"):
            spec = dict(spec, range=known["range"])
        out.append(spec)
    return out


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


def conv_weights_channels_last(model, device, example_args):
    """Gives every Conv2d weight of `model` (a WithLoss) explicit channels-last strides before
    export, on CPU with oneDNN; returns {parameter name as the package keeps it: its strides}, for
    the C++ side to bind its own parameters with the same strides (build.json's
    parameter_strides). A model that cannot take them (a forward that views its weight as if
    contiguous) keeps its own: one eager step on the example batch decides, and leaves no trace.

    Inductor runs a CPU graph's convolutions channels-last, and torch.compile converts each weight
    it is handed. A package's weights are constants whose strides are fixed at export: a
    depthwise weight (one input channel per group) or a 1x1 map in NCHW strides is ambiguous to
    ATen, which then takes oneDNN's NCHW GEMM path. Measured on MobileNetV3-small (torch 2.11):
    its 5x5 depthwise convolutions on 1x1 maps took 1.4 ms each in the package against 0.06 ms
    under torch.compile; with these strides trainlab's compiled step went from 22.7 to 15.0 ms (the
    median step of bench/compiled_vs_torch_compile.py's rounds, 12 before, 10 after)."""
    if device != "cpu" or not torch.backends.mkldnn.is_available():
        return {}
    strides, originals = {}, {}
    for module_name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        if not isinstance(module, nn.Conv2d) or not isinstance(weight, nn.Parameter) or weight.dim() != 4:
            continue
        _, c, h, w = weight.shape
        channels_last = (h * w * c, 1, w * c, c)
        if tuple(weight.stride()) != channels_last:
            restrided = torch.empty_strided(weight.shape, channels_last, dtype=weight.dtype, device=weight.device)
            with torch.no_grad():
                restrided.copy_(weight)
            originals[weight] = weight.data
            weight.data = restrided
        strides[module_name + ".weight"] = list(channels_last)
    if originals:
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        try:
            with torch.random.fork_rng():
                model(*example_args)[0].backward()
        except Exception:  # the model's own code assumes contiguous weights: leave them so
            for weight, data in originals.items():
                weight.data = data
            strides = {}
        finally:
            model.zero_grad(set_to_none=True)
            with torch.no_grad():
                for k, v in model.state_dict().items():
                    v.copy_(state[k])
    return strides


def export_joint(model, example_args):
    """torch.export, parameters the graph does not read made constants, then the joint graph,
    decomposed with Inductor's own table (what torch.compile's AOTAutograd lowers with).
    torch.export's _export_forward_backward decomposes with the core ATen table instead, whose
    attention backward is wrong under torch 2.11: scaled_dot_product_attention gave gradients
    ~1e11 off (a timm ViT) or failed ("Cannot view a tensor with shape [4, 64, 64] and strides
    (64, 256, 1) as (256, 64)", GPT-2); with Inductor's table both match eager autograd (~1e-6)."""
    import torch._inductor.lowering  # noqa: F401  (some of the table's decompositions, max_pool2d's, read it)
    from torch._inductor.decomposition import select_decomp_table
    from torch.export.experimental import (_copy_graph_module_and_signature, _decompose_exported_program,
                                           _remove_detach_pass)

    import model_adapter
    with model_adapter.masks_without_vmap():
        exported = torch.export.export(model, example_args)
    unread = parameters_to_constants(exported)
    joint = _decompose_exported_program(exported, cia_to_decomp={}, python_decomp_table=select_decomp_table(),
                                        joint_loss_index=0, decompose_custom_triton_ops=False)
    graph_module, signature = _copy_graph_module_and_signature(joint)
    _remove_detach_pass(graph_module, signature)
    joint = joint._update(graph_module, signature)
    corrupt_gradient_for_test(joint)
    return joint, unread


def corrupt_gradient_for_test(joint):
    """Test-only: with TRAINLAB_TEST_CORRUPT_GRADIENT=1 in the environment, the joint graph's first
    parameter gradient is doubled (a graph edit before its output), so tests can show that a
    backward that is really wrong is refused by the gradient check. Never set outside tests."""
    if os.environ.get("TRAINLAB_TEST_CORRUPT_GRADIENT") != "1":
        return
    output = next(n for n in joint.graph.nodes if n.op == "output")
    values = list(output.args[0])
    for i, spec in enumerate(joint.graph_signature.output_specs):
        if spec.kind.name == "GRADIENT_TO_PARAMETER":
            with joint.graph.inserting_before(output):
                doubled = joint.graph.call_function(torch.ops.aten.mul.Tensor, (values[i], 2.0))
            doubled.meta = dict(values[i].meta)
            values[i] = doubled
            output.args = (tuple(values),)
            joint.graph_module.recompile()
            return


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


def dropout_off(net):
    """Switches every dropout in `net` off, in place, and returns how many it changed: nn.Dropout*
    (and modules named Dropout* that keep their rate in `p`), MultiheadAttention's attention
    dropout, the dropout between stacked nn.RNN/LSTM/GRU layers, and stochastic depth (timm's
    DropPath and torchvision's StochasticDepth)."""
    changed = 0
    for m in net.modules():
        name = type(m).__name__
        if (isinstance(m, nn.modules.dropout._DropoutNd) or name.startswith("Dropout")) and getattr(m, "p", 0):
            m.p, changed = 0.0, changed + 1
        if isinstance(m, (nn.MultiheadAttention, nn.RNNBase)) and m.dropout:
            m.dropout, changed = 0.0, changed + 1
        if name in ("DropPath", "StochasticDepth"):
            for attr in ("drop_prob", "p"):
                if getattr(m, attr, 0):
                    setattr(m, attr, 0.0)
                    changed += 1
    return changed


def gradient_errors(joint_grads, eager_grads):
    """Each gradient's error, sound for zero and tiny gradients: the norm of its difference from
    eager autograd's over (its own eager norm + GRADIENT_FLOOR x the norm of all eager gradients
    together). A gradient that is mathematically zero (a bias before BatchNorm) is rounding noise
    on both sides and reads well under the tolerance; a wrong one reads near 1 or more unless it is
    itself under ~GRADIENT_FLOOR x tolerance of the whole. {name: error}."""
    total = torch.sqrt(sum(g.double().pow(2).sum() for g in eager_grads.values())).item()
    errors = {}
    for name, g in joint_grads.items():
        eager = eager_grads[name]
        scale = max(eager.double().norm().item() + GRADIENT_FLOOR * total, 1e-30)
        errors[name] = (g.double() - eager.double()).norm().item() / scale
    return errors


def check_gradients(net, loss, device, example_args):
    """The joint graph's gradients against eager autograd's on one batch, all dropout off, fp32:
    ((max error, its parameter, gradients compared), None, export_joint's (joint graph, unread
    parameters), whether that graph is the given model's: no dropout was switched off) or (None, the reason it was skipped, ...) when the step
    draws random numbers that no module switch turns off."""
    net = copy.deepcopy(net)
    switched = dropout_off(net)
    model = WithLoss(net, loss, device, False).to(device).train()
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    exported = export_joint(model, example_args)
    joint = exported[0]
    random = random_ops_of(joint)
    if random:
        return None, "the step draws random numbers outside dropout (%s)" % ", ".join(random), exported, False
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
    eager = {name: named[name].grad for name in joint_grads if named[name].grad is not None}
    if not eager:
        return None, "no parameter got a gradient from eager autograd on the batch", exported, switched == 0
    errors = gradient_errors({k: v for k, v in joint_grads.items() if k in eager}, eager)
    worst_name = max(errors, key=errors.get)
    return (errors[worst_name], worst_name, len(errors)), None, exported, switched == 0


def random_ops_of(joint):
    """Ops of the graph that draw random numbers (dropout)."""
    return sorted({str(n.target) for n in joint.graph.nodes if n.op == "call_function" and
                   any(k in str(n.target) for k in ("dropout", "rand", "bernoulli", "normal", "uniform"))})


REFUSAL_LOG = []  # the --log path, once parsed: where fail() and refuse() keep the full message


# The exit status when the Python environment failed, not the model (a module the model imports is
# missing here): the C++ side does not remember it as the model's refusal (harness/train/inductor_step.cpp).
ENVIRONMENT_EXIT = 4


def fail(message, status=2):
    """One line on stderr (also the whole of the --log file, when given), exit status 2 (status)."""
    line = "aot_compile: " + message.replace("\n", " ")
    if REFUSAL_LOG:
        try:
            write_log(REFUSAL_LOG[0], line + "\n")
        except OSError:
            pass  # a full disk: the line on stderr still says it
    print(line[:2000], file=sys.stderr)
    sys.exit(status)


def write_log(path, text):
    """text written to path through a private temporary name renamed over it (as trainlab's atomic
    writer, core/atomic_file.h): a link or FIFO planted at the name is replaced, never followed."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def refuse(what, error):
    """Exit 2 with one line saying what failed, at which op and where in the model's code when the
    error tells, and the compiler's first error line; the full message and traceback go to `log`."""
    import traceback

    full = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    line = "%s: %s" % (what, fault_of(error, full))
    if REFUSAL_LOG:
        write_log(REFUSAL_LOG[0], "aot_compile: " + line + "\n\n" + full)
        line += " (full message: %s)" % REFUSAL_LOG.pop()  # fail() keeps the log as it is
    fail(line)


def fault_of(error, full):
    """The part of an export or compile error a user can act on: the ATen op named in it, the
    deepest frame of the model's own code (outside torch) it came from, the first `error:` line of
    a C++ compiler's output, and the message's first line."""
    import re
    import traceback

    message = str(error).strip()
    parts = []
    ops = re.findall(r"aten\.[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?", full)
    if ops:
        parts.append("op %s" % ops[-1])
    torch_dir = os.path.dirname(torch.__file__)
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not f.filename.startswith((torch_dir, "<")) and os.path.abspath(f.filename) != os.path.abspath(__file__)]
    if frames:
        parts.append("in %s:%d (%s)" % (os.path.basename(frames[-1].filename), frames[-1].lineno, frames[-1].name))
    compiler_error = next((l.strip() for l in message.splitlines() if "error:" in l), None)
    first = compiler_error or next((l.strip() for l in message.splitlines() if l.strip()), "")
    head = type(error).__name__ + ": " + first[:300]
    return head + (" [" + ", ".join(parts) + "]" if parts else "")


class CheckNotRun(Exception):
    """The package's check could not run to its count (its process died, failed or hung)."""


CHECK_TIMEOUT_S = 600


# The check's child: loads the package, runs it once on the saved batch, prints the count and leaves
# without tearing down (os._exit), so that nothing of the package outlives the count.
CHECK_CHILD = r"""
import faulthandler, os, signal, sys
faulthandler.enable()
import torch
package, batch, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
if threads > 0:
    torch.set_num_threads(threads)
if os.environ.get("TRAINLAB_TEST_CHECK_CRASH") == "1":  # test-only: the check's process dies
    os.kill(os.getpid(), signal.SIGSEGV)
args = torch.load(batch)
outputs = torch._inductor.aoti_load_package(package).loader.run(list(args))
bad = sum(1 for o in outputs if torch.is_tensor(o) and o.is_floating_point() and not torch.isfinite(o).all())
print("non-finite outputs: %d" % bad, flush=True)
os._exit(0)
"""


def non_finite_outputs(package_path, example_args, cpu_threads=0):
    """Runs the package once on the example batch: the number of its outputs (loss, gradients,
    updated buffers) holding NaN or Inf. It runs in a child process, so that whatever the package
    does to the process that loads it (a crash, threads, memory) stays out of the exporter: on an
    H200 the in-process check killed the exporter (compile_checked). A child that dies, fails or
    hangs raises CheckNotRun with its end."""
    import signal
    import subprocess

    fd, batch = tempfile.mkstemp(prefix=".check-", suffix=".pt", dir=os.path.dirname(os.path.abspath(package_path)))
    os.close(fd)
    try:
        torch.save([a.detach() for a in example_args], batch)
        try:
            done = subprocess.run([sys.executable, "-c", CHECK_CHILD, package_path, batch, str(cpu_threads)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=CHECK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise CheckNotRun("its run took over %d s" % CHECK_TIMEOUT_S)
    finally:
        os.unlink(batch)
    for line in done.stdout.splitlines():
        if line.startswith("non-finite outputs: "):
            return int(line.split(": ", 1)[1])
    if done.returncode < 0:
        try:
            how = "died from %s" % signal.Signals(-done.returncode).name
        except ValueError:
            how = "died from signal %d" % -done.returncode
    else:
        how = "ended with exit status %d" % done.returncode
    said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    # A crash's innermost Python frame (faulthandler's first line under "most recent call first").
    frames = [i + 1 for i, line in enumerate(said[:-1]) if line.endswith("(most recent call first):")]
    where = said[frames[0]] if frames else (said[-1] if said else "")
    raise CheckNotRun(how + (": " + where[:300] if where else ""))


COMPILES_FOR_TEST = [0]  # compiles so far, for TRAINLAB_TEST_PACKAGE_NAN


def poison_for_test(joint):
    """Test-only: with TRAINLAB_TEST_PACKAGE_NAN=N in the environment, the first N compiles get the
    loss multiplied by NaN before the graph's output (a graph edit undone after the compile), so
    tests can make the first package, or the first workaround's too, compute NaN that the exported
    graph does not. Returns the function that undoes the edit. Never set outside tests."""
    COMPILES_FOR_TEST[0] += 1
    if COMPILES_FOR_TEST[0] > int(os.environ.get("TRAINLAB_TEST_PACKAGE_NAN", "0") or 0):
        return lambda: None
    output = next(n for n in joint.graph.nodes if n.op == "output")
    original = output.args
    values = list(output.args[0])
    with joint.graph.inserting_before(output):
        poisoned = joint.graph.call_function(torch.ops.aten.mul.Tensor, (values[0], float("nan")))
    poisoned.meta = dict(values[0].meta)
    values[0] = poisoned
    output.args = (tuple(values),)
    joint.graph_module.recompile()

    def undo():
        output.args = original
        joint.graph.erase_node(poisoned)
        joint.graph_module.recompile()

    return undo


def compile_once(joint, package_path):
    undo = poison_for_test(joint)
    try:
        torch._inductor.aoti_compile_and_package(joint, package_path=package_path)
    except Exception as e:
        os.unlink(package_path)
        refuse("Inductor compile failed", e)
    finally:
        undo()


def compile_checked(joint, model, example_args, random_ops, device_type, package_path, cpu_threads=0):
    """Compiles the joint graph into package_path and runs the package once on the example batch.
    Where its outputs hold NaN or Inf and the exported graph's (run eagerly, on the same batch) do
    not, the compiled code is at fault, not the model. It then compiles again with one change at a
    time, keeping the first whose outputs are finite, and says which; with none it refuses:
    - ATen's random numbers (Inductor's fallback_random), where the graph draws any: set before
      exporting again, since the export decomposes dropout by it; it changes how the kernels around
      the random ops fuse;
    - on a CPU, 256-bit vector code (Inductor's cpp.simdlen 256) instead of AVX-512.
    Measured on an Intel Xeon with AMX (torch 2.11, 2 threads): recsys' bf16 package gave a NaN loss
    and NaN gradients on every batch, its eager joint graph a loss of 10.1 (torch.compile of the same
    model: 10.09, finite). The first non-finite buffer came from the kernel that adds the key bias
    and transposes the keys through AVX-512's bf16 32x32 transpose: 9600 of its 262144 values from
    finite bf16 input. Compiled with fallback_random (which fuses that kernel otherwise), for AVX2
    (cpp.simdlen 256), or without dropout, the loss was 10.1.
    On a GPU the package is not checked. On an H200 (torch 2.11, CUDA 13) the check in the
    exporter's own process killed it with SIGSEGV after each of its three compiles (the CUDA test's
    model, mlp in bf16 and fp32); with the check in a child process the CUDA test that builds one
    package did not end within 120 s (it had passed in 81 s before the check), and no more device
    time was left to find out why. Unchecked, the same packages had run in the C++ loop without
    fault. There the lab's own reading stands guard: a compiled variant whose loss is NaN from its
    first step beside a finite eager run is called wrong code, not a speed.
    Returns (the joint graph compiled, what was done: "" when the first package is sound, was not
    checked, or the model itself gives non-finite values on this batch)."""
    import torch._inductor.config as inductor_config

    if device_type != "cpu":
        compile_once(joint, package_path)
        return joint, ""

    def check():
        """The package's non-finite outputs; None where the check could not run."""
        try:
            return non_finite_outputs(package_path, example_args, cpu_threads)
        except CheckNotRun as e:  # the package is kept: the C++ side reports its own error, if any
            print("aot_compile: the package's outputs were not checked (the check's process %s)" % e, file=sys.stderr)
            return None

    def still_in(count):
        return "still in %d" % count if count is not None else "not checked (the check could not run)"

    def export_again(what_failed):
        """The joint graph exported again, after a setting changed; where that fails, the package
        goes and the variant is refused, saying what failed."""
        try:
            return export_joint(model, example_args)[0]
        except Exception as e:
            os.unlink(package_path)
            refuse(what_failed, e)

    compile_once(joint, package_path)
    bad = check()
    if not bad:  # finite, or not checked
        return joint, ""
    loss, grads = run_joint(joint, example_args)
    eager_finite = bool(torch.isfinite(loss).all()) and all(bool(torch.isfinite(g).all()) for g in grads.values())
    if not eager_finite:
        return joint, ""  # the model's own NaN on this batch: the training loop reports it as such
    fault = ("Inductor's package gave NaN or Inf in %d of its outputs on one batch where the exported graph, "
             "run eagerly, gave finite values" % bad)
    tried = []
    if random_ops:
        inductor_config.fallback_random = True
        joint = export_again("export with ATen's random numbers failed (after the first package gave NaN)")
        compile_once(joint, package_path)
        still_bad = check()
        if still_bad == 0:
            return joint, (fault + "; exported and compiled again with ATen's random numbers (Inductor "
                           "fallback_random, for " + ", ".join(random_ops) + "), whose outputs are finite")
        inductor_config.fallback_random = False
        joint = export_again("export failed (again, after ATen's random numbers did not mend the package)")
        tried.append("with ATen's random numbers (fallback_random) " + still_in(still_bad))
    inductor_config.cpp.simdlen = 256  # a CPU package here: GPU packages returned unchecked above
    compile_once(joint, package_path)
    still_bad = check()
    if still_bad == 0:
        done = fault + ("" if not tried else " (and " + "; ".join(tried) + ")")
        return joint, done + "; compiled again with 256-bit vector code (Inductor cpp.simdlen 256, not AVX-512), " \
                             "whose outputs are finite"
    tried.append("with 256-bit vector code (cpp.simdlen 256) " + still_in(still_bad))
    os.unlink(package_path)
    fail(fault + (", and again " + "; ".join(tried) if tried else "") +
         ": the compiled code is wrong on this machine, so the compiled run would measure a broken model")


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
    parser.add_argument("--log", help="a refusal's full message (the exporter's or compiler's, with its traceback) "
                                      "goes to this file")
    parser.add_argument("--cpu-threads", type=int, default=0,
                        help="CPU: the threads the step will run at; Inductor writes the count into its kernels "
                             "(omp parallel num_threads(N)), so the package is built for it")
    args = parser.parse_args()
    faulthandler.enable()  # a crash in the compiler leaves its Python stack in the log, not only a signal
    if args.cpu_threads > 0:
        import torch._inductor.config as inductor_config
        torch.set_num_threads(args.cpu_threads)
        inductor_config.cpp.threads = args.cpu_threads
    if args.log:
        REFUSAL_LOG.append(args.log)
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
    except ImportError as e:  # ModuleNotFoundError too: this Python lacks what the model imports
        fail("building the bundle's model failed: %s: %s" % (type(e).__name__, e), ENVIRONMENT_EXIT)
    except Exception as e:  # the user's file, in a bundle
        fail("building the bundle's model failed: %s: %s" % (type(e).__name__, e))
    if not isinstance(specs, list) or len(specs) < 2:
        fail("--inputs must list the model's inputs and then the targets")
    if args.bundle is not None:
        specs = with_bundle_ranges(specs, args.bundle)
    model = WithLoss(net, loss, torch.device(args.device).type, args.precision == "bf16").to(args.device).train()
    example_args = tuple(example_batch(specs, args.device))
    parameter_strides = conv_weights_channels_last(model, torch.device(args.device).type, example_args)
    gradient_check, exported, export_s = None, None, 0.0
    if args.bundle is not None:
        start = time.perf_counter()
        try:
            result, skipped, checked, same_model = check_gradients(net, loss, torch.device(args.device).type,
                                                                   example_args)
        except Exception as e:
            refuse("export failed", e)
        if skipped:
            gradient_check = {"skipped": skipped}
        else:
            gradient_check = {"max_rel_err": result[0], "worst": result[1], "compared": result[2]}
            if result[0] > GRADIENT_CHECK_TOLERANCE:
                fail("the exported joint graph gets this model's backward wrong: the gradient of %s differs from "
                     "eager autograd's by %.3g (more than %g; error over its norm + %g x all gradients' norm)" %
                     (result[1], result[0], GRADIENT_CHECK_TOLERANCE, GRADIENT_FLOOR))
        if same_model and args.precision == "fp32":  # the checked graph is the one to compile
            exported, export_s = checked, time.perf_counter() - start
    if exported is None:
        start = time.perf_counter()
        try:
            exported = export_joint(model, example_args)
        except Exception as e:  # the export's own words are the reason the record keeps
            refuse("export failed", e)
        export_s = time.perf_counter() - start
    joint, unread = exported
    gradients = [s.target for s in joint.graph_signature.output_specs if s.kind.name == "GRADIENT_TO_PARAMETER"]
    buffers = [s.target for s in joint.graph_signature.output_specs if s.kind.name == "BUFFER_MUTATION"]
    # Ops that draw random numbers (dropout): a CUDA graph replay would repeat their draws.
    random_ops = random_ops_of(joint)
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
    joint, workaround = compile_checked(joint, model, example_args, random_ops, torch.device(args.device).type, tmp,
                                        args.cpu_threads)
    compile_s = time.perf_counter() - start
    if workaround:  # exported again: the lists of the graph compiled
        gradients = [s.target for s in joint.graph_signature.output_specs if s.kind.name == "GRADIENT_TO_PARAMETER"]
        buffers = [s.target for s in joint.graph_signature.output_specs if s.kind.name == "BUFFER_MUTATION"]
    kernels = fused_kernels(tmp)
    os.replace(tmp, args.out)
    report = {"export_s": export_s, "compile_s": compile_s, "gradients": gradients, "no_gradient": unread,
              "buffers": buffers, "random_ops": random_ops, "fused_kernels": kernels, "torch": torch.__version__}
    if gradient_check is not None:
        report["gradient_check"] = gradient_check
    if workaround:
        report["compiler_workaround"] = workaround
    if parameter_strides:
        report["parameter_strides"] = parameter_strides
    report = json.dumps(report)
    if args.report:
        write_log(args.report, report + "\n")
    print(report)


if __name__ == "__main__":
    main()
