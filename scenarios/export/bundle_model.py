"""`trainlab model add`: turns a user's PyTorch model into a model bundle the C++ loop trains.

  python bundle_model.py --source FILE.py:FACTORY [--arg NAME=VALUE ...]
      (--input NAME:DTYPE[D0,D1,...][:LO..HI] ... --target NAME:DTYPE[...][:LO..HI] | --example BATCH.pt)
      --loss cross_entropy|mse|bce_with_logits|l1|smooth_l1|nll|model|FUNCTION_IN_FILE
      [--output KEY|INDEX] [--input-style positional|keyword|dict]
      [--optimizer sgd|adam|adamw] [--lr X] [--name NAME] --out BUNDLE [--force]

The module is called and its output picked through model_adapter.py (keyword or dict inputs; a
tuple, dict or Hugging Face ModelOutput output; --loss model: the model's own loss, the target
passed as the keyword it is named after); model.pt is the adapted module, traced.

The factory is called with the --arg values (Python literals) after torch.manual_seed(--seed); the
module it returns is run once in train mode on an example batch (built from the specs with the
seed, or the dict/tuple saved with torch.save given by --example: its last entry, or the entry
named by --target, is the target), its loss computed and backpropagated. Then the bundle, written
into a temporary folder beside BUNDLE and renamed into place:

  manifest.json  inputs and target (name, dtype, shape with the example's batch as dim 0, range of
                 integer values; mean/std of floating ones), loss, optimizer, parameter count and
                 names, parameters that get no gradient, tied parameter names, buffers, forward+
                 backward FLOPs per sample (torch.utils.flop_counter; null where nothing counts) and
                 the modules it does not count (flops_not_counted: nn.LSTM, ...: the count is partial),
                 how the model is called (adapter: model_adapter.py's settings),
                 torch version, the source file's sha256, the Python it was made with
  model.pt       the module traced in train mode (TorchScript): C++ owns and updates its
                 parameters and buffers; the eager fp32 and bf16 variants run it
  loss.pt        the loss traced as a module: (output, target) -> scalar
  source/FILE.py the user's file, which the Inductor exporter (aot_compile.py --bundle) imports to
                 build the compiled variant's joint forward+backward package

The module's parameters and buffers in model.pt are the factory's initial ones (the checks' runs
are undone). A user error (the file does not import, no such factory, the module fails on the
example, a construct trainlab cannot train, the model's code calling sys.exit or running out of
memory) is one line on stderr naming the user's file and line where there is one, exit status 2;
nothing is left behind. --out must be free or, with --force, a bundle this script wrote: anything
else there (a folder of other files, a file, a device, a symbolic link) is refused, untouched; so is
a bundle holding files trainlab did not write, or the model file named by --source.

The log the C++ side reads: STARTED_LINE first (stderr: this is the bundle writer, torch imported),
WRITTEN_PREFIX + the summary last, once the bundle is in place; a run without both wrote nothing.
"""
import argparse
import ast
import faulthandler
import hashlib
import importlib.util
import json
import math
import os
import re
import shutil
import sys
import tempfile
import traceback
import warnings

STARTED_LINE = "trainlab model add: bundle writer started"
try:
    import torch
    import torch.nn as nn
except ImportError as _no_torch:
    print(STARTED_LINE, file=sys.stderr, flush=True)
    print("trainlab model add: this Python (%s) has no torch (%s): --python must name an interpreter with the torch "
          "trainlab was built with" % (sys.executable, _no_torch), file=sys.stderr)
    sys.exit(2)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # model_adapter.py, beside this file
import model_adapter  # noqa: E402

DTYPES = {"float32": torch.float32, "int64": torch.int64, "int32": torch.int32, "uint8": torch.uint8,
          "bool": torch.bool}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
LOSSES = {
    "cross_entropy": nn.functional.cross_entropy,
    "mse": nn.functional.mse_loss,
    "bce_with_logits": nn.functional.binary_cross_entropy_with_logits,
    "l1": nn.functional.l1_loss,
    "smooth_l1": nn.functional.smooth_l1_loss,
    "nll": nn.functional.nll_loss,
}
OPTIMIZERS = ("sgd", "adam", "adamw")
SPEC_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):([a-z0-9]+)\[([0-9, ]*)\](?::(-?[0-9]+)\.\.(-?[0-9]+))?$")
MAX_SPEC_ELEMENTS = 1 << 31
# Value ranges each integer dtype holds (int64's top is one less: the draw's bound is HI + 1).
DTYPE_RANGES = {"int64": (-(1 << 63), (1 << 63) - 2), "int32": (-(1 << 31), (1 << 31) - 1), "uint8": (0, 255),
                "bool": (0, 1)}
WRITTEN_PREFIX = "trainlab model add: bundle written: "
USER_FILE = None  # the user's file, once imported: the place named in errors its code raises


class UserError(Exception):
    """One line for the user; exit status 2."""


def fail(message):
    print("trainlab model add: " + " ".join(str(message).split())[:800], file=sys.stderr)
    sys.exit(2)


# ---- specs and the example batch ------------------------------------------------------------

def parse_spec(text, option):
    """NAME:DTYPE[D0,...][:LO..HI] -> {name, dtype, shape, range}."""
    m = SPEC_RE.match(text.strip())
    if not m:
        raise UserError("%s '%s': expected NAME:DTYPE[D0,D1,...] with an optional :LO..HI range, e.g. "
                        "x:float32[32,3,224,224] or y:int64[32]:0..999" % (option, text))
    name, dtype, dims, lo, hi = m.groups()
    if dtype not in DTYPES:
        raise UserError("%s '%s': dtype %s is not one of %s" % (option, text, dtype, ", ".join(DTYPES)))
    shape = [int(d) for d in dims.replace(" ", "").split(",") if d != ""]
    if not shape or any(d <= 0 for d in shape):
        raise UserError("%s '%s': the shape needs the batch as its first dimension and no zero sizes" % (option, text))
    elements = 1
    for d in shape:
        elements *= d
    if elements > MAX_SPEC_ELEMENTS:
        raise UserError("%s '%s': %d elements is more than one example batch should hold" % (option, text, elements))
    spec = {"name": name, "dtype": dtype, "shape": shape}
    if lo is not None:
        lo, hi = int(lo), int(hi)
        if DTYPES[dtype].is_floating_point:
            raise UserError("%s '%s': a value range is for integer inputs" % (option, text))
        if hi < lo:
            raise UserError("%s '%s': the range %d..%d is empty" % (option, text, lo, hi))
        low, high = DTYPE_RANGES[dtype]
        if lo < low or hi > high:
            raise UserError("%s '%s': the range %d..%d does not fit %s (%d..%d)" % (option, text, lo, hi, dtype,
                                                                                 low, high))
        spec["range"] = [lo, hi]
    elif not DTYPES[dtype].is_floating_point:
        if dtype == "bool":
            spec["range"] = [0, 1]
        else:
            raise UserError("%s '%s': an integer input needs its value range (e.g. %s:%s[%s]:0..999): its "
                            "values index embeddings or classes" % (option, text, name, dtype, dims))
    return spec


def synthesize(spec, generator):
    """One tensor of the spec: integers uniform in the range, floats normal (mean/std when known)."""
    dtype = DTYPES[spec["dtype"]]
    if dtype.is_floating_point:
        t = torch.randn(spec["shape"], generator=generator)
        return t * spec.get("std", 1.0) + spec.get("mean", 0.0)
    lo, hi = spec["range"]
    return torch.randint(lo, hi + 1, spec["shape"], generator=generator).to(dtype)


def describe_tensor(name, t):
    """The spec of a saved example tensor: its shape, dtype and value range (integers) or mean/std."""
    if t.dtype not in DTYPE_NAMES:
        raise UserError("example entry '%s' has dtype %s; trainlab takes %s" % (name, t.dtype, ", ".join(DTYPES)))
    if t.dim() == 0:
        raise UserError("example entry '%s' is a scalar: every entry needs the batch as its first dimension" % name)
    spec = {"name": name, "dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape)}
    if t.dtype.is_floating_point:
        spec["mean"] = float(t.float().mean())
        spec["std"] = float(t.float().std()) if t.numel() > 1 else 1.0
    else:
        spec["range"] = [int(t.min()), int(t.max())]
    return spec


def load_example(path, target_name):
    """A torch.save'd dict (inputs in order, the target last or named) or tuple/list (target last)."""
    try:
        data = torch.load(path, weights_only=True)
    except FileNotFoundError:
        raise UserError("--example %s: no such file" % path)
    except Exception as e:
        raise UserError("--example %s: not a batch torch.load can read (%s: %s)" % (path, type(e).__name__, e))
    if isinstance(data, dict):
        items = [(str(k), v) for k, v in data.items()]
    elif isinstance(data, (list, tuple)):
        items = [("input%d" % i, v) for i, v in enumerate(data[:-1])] + [("target", data[-1])] if data else []
    else:
        raise UserError("--example %s holds a %s; expected a dict or tuple of tensors" % (path, type(data).__name__))
    if len(items) < 2 or not all(isinstance(v, torch.Tensor) for _, v in items):
        raise UserError("--example %s: expected at least one input tensor and a target tensor" % path)
    if target_name:
        names = [k for k, _ in items]
        if target_name not in names:
            raise UserError("--example %s has no entry '%s' (entries: %s)" % (path, target_name, ", ".join(names)))
        items = [kv for kv in items if kv[0] != target_name] + [kv for kv in items if kv[0] == target_name]
    specs = [describe_tensor(k, v) for k, v in items]
    return specs, [v for _, v in items]


# ---- the user's code ------------------------------------------------------------------------

def user_location(error, user_file):
    """'FILE:LINE' of the innermost frame in the user's file (or the syntax error's place)."""
    if isinstance(error, SyntaxError) and error.filename:
        return "%s:%s" % (os.path.basename(error.filename), error.lineno)
    where = None
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename) == user_file:
            where = "%s:%d" % (os.path.basename(frame.filename), frame.lineno)
    return where


def user_error(error, user_file, doing):
    where = user_location(error, user_file)
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    hint = ""
    if isinstance(error, ModuleNotFoundError) and error.name:
        hint = ("; make '%s' importable: install it into this Python (%s), or give --python the interpreter where "
                "the model imports" % (error.name.split(".")[0], sys.executable))
    return UserError("%s%s: %s%s%s" % (where + ": " if where else "", doing, type(error).__name__,
                                       ": " + message if message else "", hint))


def import_user_file(path):
    global USER_FILE
    user_file = os.path.abspath(path)
    if not os.path.isfile(user_file):
        raise UserError("%s: no such file" % path)
    USER_FILE = user_file
    sys.path.insert(0, os.path.dirname(user_file))  # its own imports of sibling files
    spec = importlib.util.spec_from_file_location("trainlab_user_model", user_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # importable by name, as torch.compile's tracer and pickle expect
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # SystemExit from the user's file is theirs too
        raise user_error(e, user_file, "importing %s failed" % os.path.basename(path))
    return module, user_file


def parse_args_values(pairs):
    kwargs = {}
    for text in pairs:
        name, eq, value = text.partition("=")
        if not eq or not name.isidentifier():
            raise UserError("--arg '%s': expected NAME=VALUE (a Python literal, e.g. width=64)" % text)
        try:
            kwargs[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            kwargs[name] = value  # a bare word is a string
    return kwargs


def build_model(module, user_file, factory_name, kwargs, seed):
    factory = getattr(module, factory_name, None)
    if factory is None or not callable(factory):
        names = sorted(n for n, v in vars(module).items()
                       if callable(v) and not n.startswith("_") and getattr(v, "__module__", "") == module.__name__)
        raise UserError("%s has no factory '%s' (it defines: %s)" % (os.path.basename(user_file), factory_name,
                                                                    ", ".join(names) or "nothing callable"))
    torch.manual_seed(seed)
    try:
        model = factory(**kwargs)
    except Exception as e:
        raise user_error(e, user_file, "%s(%s) failed" % (factory_name, ", ".join("%s=%r" % kv for kv in kwargs.items())))
    if not isinstance(model, nn.Module):
        raise UserError("%s() returned a %s, not a torch.nn.Module" % (factory_name, type(model).__name__))
    return model


def resolve_loss(name, module, user_file):
    if name == "model":
        return model_adapter.model_loss
    if name in LOSSES:
        return LOSSES[name]
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise UserError("--loss %s: neither a built-in loss (%s), model (the model's own) nor a function in %s" %
                        (name, ", ".join(LOSSES), os.path.basename(user_file)))
    return fn


def unsupported_constructs(model):
    """One line naming the first construct the C++ loop cannot train, or None."""
    for name, m in model.named_modules():
        if isinstance(m, (nn.Embedding, nn.EmbeddingBag)) and m.sparse:
            return ("%s is an %s(sparse=True): sparse gradients are not supported (use sparse=False)" %
                    (name or "the model", type(m).__name__))
        if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or getattr(m, "_backward_pre_hooks", None):
            return "%s has Python hooks: TorchScript drops them, so C++ would train a different model" % (name or "the model")
    for name, p in model.named_parameters():
        if p.dtype != torch.float32:
            return "parameter %s is %s: trainlab trains float32 parameters (bf16 is a variant)" % (name, p.dtype)
        if p.is_sparse or p.layout != torch.strided:
            return "parameter %s is not a dense tensor" % name
    for name, b in model.named_buffers():
        if b.layout != torch.strided:
            return "buffer %s is not a dense tensor" % name
    return None


CHECKPOINT_CALLS = []  # where the model called torch.utils.checkpoint ("FILE.py:LINE" or "")


def watch_checkpointing():
    """Replaces torch.utils.checkpoint's checkpoint and checkpoint_sequential (before the user's file
    imports them) with versions that note their caller, then checkpoint as asked: the step's
    recomputation is Python the C++ loop cannot run, and a non-reentrant checkpoint leaves no trace
    in the autograd graph to find it by."""
    import torch.utils.checkpoint as checkpointing

    def noting(original):
        def checkpoint(*args, **kwargs):
            where = ""
            for frame in reversed(traceback.extract_stack()[:-1]):
                if USER_FILE and os.path.abspath(frame.filename) == USER_FILE:
                    where = "%s:%d" % (os.path.basename(frame.filename), frame.lineno)
                    break
            CHECKPOINT_CALLS.append(where)
            return original(*args, **kwargs)
        return checkpoint

    checkpointing.checkpoint = noting(checkpointing.checkpoint)
    checkpointing.checkpoint_sequential = noting(checkpointing.checkpoint_sequential)


def class_line(path, name, fallback):
    """The line of `class NAME` in the file (fallback: the line given)."""
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if re.match(r"\s*class\s+%s\b" % re.escape(name), line):
                    return number
    except OSError:
        pass
    return fallback


def python_autograd_construct(loss):
    """One line naming the first construct of the step the C++ loop cannot run: torch.utils.checkpoint
    (its recomputation is Python), or a custom torch.autograd.Function in the step's graph (its
    backward is Python); None when there is none."""
    if CHECKPOINT_CALLS:
        where = next((w for w in CHECKPOINT_CALLS if w), "")
        return ("unsupported: %storch.utils.checkpoint (activation checkpointing): its recomputation runs in Python, "
                "which the C++ loop cannot; measure the model without it (e.g. gradient checkpointing off)" %
                (where + ": " if where else ""))
    seen, stack = set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        function = getattr(node, "_forward_cls", None)  # a Python Function's backward node
        if function is not None:
            where = ""
            code = getattr(function.forward, "__code__", None)
            if code:
                where = "%s:%d: " % (os.path.basename(code.co_filename), class_line(code.co_filename, function.__name__,
                                                                                      code.co_firstlineno))
            return ("unsupported: %sa custom torch.autograd.Function (%s): its backward is Python, which the C++ loop "
                    "cannot run; write its forward with torch operations so autograd derives the backward" %
                    (where, function.__name__))
        stack.extend(next_node for next_node, _ in node.next_functions)
    return None


def snapshot(model):
    return {k: v.detach().clone() for k, v in model.state_dict(keep_vars=True).items()}


def restore(model, state):
    with torch.no_grad():
        for k, v in model.state_dict(keep_vars=True).items():
            v.copy_(state[k])


class LossModule(nn.Module):
    """The loss as a module for tracing: (output, target) -> scalar."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, output, target):
        return self.fn(output, target)


def optimizer_settings(name, lr):
    """The optimizer both sides build (torch.optim and torch::optim agree on these defaults)."""
    settings = {"name": name, "lr": lr, "weight_decay": 0.01 if name == "adamw" else 0.0}
    if name == "sgd":
        settings["momentum"] = 0.9
    return settings


# Modules whose FLOPs torch.utils.flop_counter does not count: their fused ATen ops (aten::lstm,
# aten::gru, aten::rnn_tanh, ...) have no FLOP formula, so a model holding one gets a partial count.
UNCOUNTED_MODULES = (nn.LSTM, nn.GRU, nn.RNN, nn.LSTMCell, nn.GRUCell, nn.RNNCell)


def flops_not_counted(model):
    """The module types of the model whose FLOPs the counter leaves out ("nn.LSTM"), in order."""
    names = []
    for m in model.modules():
        if isinstance(m, UNCOUNTED_MODULES) and "nn." + type(m).__name__ not in names:
            names.append("nn." + type(m).__name__)
    return names


def flops_per_sample(model, loss_fn, inputs, target, batch):
    """Forward+backward FLOPs of one example step over the batch (matmuls and convolutions, as
    torch.utils.flop_counter counts them); None where nothing counts."""
    try:
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
        with counter:
            loss_fn(model(*inputs), target).backward()
        total = counter.get_total_flops()
        return float(total) / batch if total > 0 else None
    except Exception:
        return None


def save_traced(traced, path, user_file, what):
    """traced.save, where a construct the trace kept but TorchScript cannot serialize (a Python
    autograd.Function, another Python call) is the user's: unsupported, with its place."""
    try:
        traced.save(path)
    except RuntimeError as e:
        text = str(e).strip()
        # The trace's stack in the message: "/dir/FILE.py(LINE): function".
        places = re.findall(re.escape(user_file) + r"\((\d+)\)", text)
        where = "%s:%s: " % (os.path.basename(user_file), places[0]) if places else ""
        cause = text.splitlines()[0].split(".")[0] if text else type(e).__name__
        raise UserError("unsupported: %sTorchScript cannot save the traced %s: %s" % (where, what, cause))


def refuse_non_finite(loss, output, batch_words):
    """A loss that is NaN or infinite is the model's output (or its loss), not a construct the trace
    missed: said so, with how much of the output is not a number."""
    if bool(torch.isfinite(loss.detach()).all()):
        return
    said = ""
    if isinstance(output, torch.Tensor) and output.is_floating_point():
        bad = int((~torch.isfinite(output.detach())).sum())
        if bad:
            nan = int(torch.isnan(output.detach()).sum())
            said = ": the model's output is %s in %d of its %d values" % (
                "NaN" if nan == bad else "NaN or infinite" if nan else "infinite", bad, output.numel())
    raise UserError("the loss on %s is %s%s (a model that computes NaN cannot be trained: its initialisation, "
                    "a division or log of zero, the inputs' ranges?)" % (batch_words, float(loss.detach()), said))


# ---- where the bundle goes ------------------------------------------------------------------

def is_written_bundle(path):
    """A real folder holding a manifest.json this script wrote (its format, name, torch and inputs)."""
    manifest = os.path.join(path, "manifest.json")
    if os.path.islink(path) or not os.path.isdir(path) or os.path.islink(manifest) or not os.path.isfile(manifest):
        return False
    try:
        with open(manifest) as f:
            m = json.load(f)
    except (OSError, ValueError):
        return False
    return (isinstance(m, dict) and type(m.get("format")) is int and m["format"] == 1 and
            isinstance(m.get("name"), str) and isinstance(m.get("torch"), str) and isinstance(m.get("inputs"), list))


def what_is_at(path):
    import stat
    mode = os.lstat(path).st_mode
    if stat.S_ISDIR(mode):
        return "a folder that is not a model bundle (no manifest.json trainlab model add wrote)"
    for test, name in ((stat.S_ISREG, "a file"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a folder"


# What trainlab writes in a bundle folder: model add's files (BUNDLE_FILES, source/ with the user's
# file), package.log (the package model add builds), and what runs with --model BUNDLE keep there:
# compiled/ (refusals, harness/train/inductor_step.cpp) and the Inductor packages, "inductor-..."
# (their folders, .lock and .tmp-PID, scenarios/data/dataset_cache.cpp). --force replaces these and
# nothing else: a bundle folder holding anything more is refused, named.
BUNDLE_FILES = ("manifest.json", "model.pt", "loss.pt", "package.log")
BUNDLE_FOLDERS = ("compiled",)
PACKAGE_PREFIX = "inductor-"
OLD_PREFIX = ".trainlab-old-"  # the replaced files, set aside inside the bundle until the new ones are in


def bundle_source_file(out):
    """The user's file name manifest.json records (source/NAME), or None."""
    try:
        with open(os.path.join(out, "manifest.json")) as f:
            name = json.load(f).get("source", {}).get("file")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and name and "/" not in name else None


def entry_is(path, kind):
    import stat
    mode = os.lstat(path).st_mode
    return stat.S_ISREG(mode) if kind == "file" else stat.S_ISDIR(mode)


def owned_entries(out):
    """(names trainlab wrote at the top of the bundle folder, the first other entry as a path relative
    to out, or None)."""
    owned, foreign = [], None
    source_file = bundle_source_file(out)
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        if name in BUNDLE_FILES:
            mine = entry_is(path, "file")
        elif name in BUNDLE_FOLDERS or name.startswith(OLD_PREFIX):
            mine = entry_is(path, "folder")
        elif name.startswith(PACKAGE_PREFIX):
            mine = True  # a package folder, its lock file or an interrupted build's temporary folder
        elif name == "source" and entry_is(path, "folder"):
            inside = [n for n in sorted(os.listdir(path)) if n not in (source_file, "__pycache__")]
            mine = not inside
            if inside and foreign is None:
                foreign = os.path.join(name, inside[0])
        else:
            mine = False
        if mine:
            owned.append(name)
        elif foreign is None:
            foreign = name
    return owned, foreign


def destination_problem(out, shown, force, user_file=None):
    """Why the bundle may not be written at out (None: it may). --force replaces a bundle's own files
    (owned_entries), nothing else; never the user's file named on the command line."""
    if os.path.islink(out):
        return "--out %s is a symbolic link: give the bundle folder itself (a link is not replaced)" % shown
    if not os.path.lexists(out):
        return None
    if is_written_bundle(out):
        if not force:
            return "--out %s is a model bundle already (--force replaces it)" % shown
        real_out = os.path.realpath(out)
        if user_file and os.path.realpath(user_file).startswith(real_out + os.sep):
            return ("--out %s holds the model file %s named on the command line: --force would replace the folder "
                    "it is in; give a model file outside the bundle; nothing was touched" % (shown, user_file))
        try:
            foreign = owned_entries(out)[1]
        except OSError as e:
            return "--out %s: cannot list it: %s; nothing was touched" % (shown, e.strerror or e)
        if foreign is not None:
            return ("--out %s holds %s, which trainlab did not write: --force replaces only a bundle's own files "
                    "(move it out, or choose another --out); nothing was touched" %
                    (shown, os.path.join(shown, foreign)))
        return None
    return ("--out %s is %s: %s; nothing was touched" %
            (shown, what_is_at(out), "--force replaces only a model bundle" if force else "choose another --out"))


def place_bundle(tmp, out, shown, force, user_file):
    """The written folder renamed to out; over an old bundle, its own files set aside (inside it),
    the new ones moved in (manifest.json last), then the old ones removed; nothing else is touched."""
    problem = destination_problem(out, shown, force, user_file)  # again: time has passed since the first look
    if problem:
        raise UserError(problem)
    if not os.path.lexists(out):
        os.rename(tmp, out)
        return
    old = tempfile.mkdtemp(prefix=OLD_PREFIX, dir=out)
    moved_aside, moved_in = [], []
    try:
        for name in owned_entries(out)[0]:
            if os.path.join(out, name) != old:
                os.rename(os.path.join(out, name), os.path.join(old, name))
                moved_aside.append(name)
        for name in sorted(os.listdir(tmp), key=lambda n: n == "manifest.json"):
            os.rename(os.path.join(tmp, name), os.path.join(out, name))
            moved_in.append(name)
    except OSError:
        for name in reversed(moved_in):  # put the old bundle back as it was
            os.rename(os.path.join(out, name), os.path.join(tmp, name))
        for name in reversed(moved_aside):
            os.rename(os.path.join(old, name), os.path.join(out, name))
        os.rmdir(old)
        raise
    os.rmdir(tmp)
    shutil.rmtree(old, ignore_errors=True)


# ---- the command ----------------------------------------------------------------------------

class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are this script's one line, exit 2."""

    def error(self, message):
        fail("the bundle writer's arguments: " + message)


def user_code_error(error):
    """One line for what the model's code raised past the guarded places (None: not the model's)."""
    where = user_location(error, USER_FILE) if USER_FILE else None
    at = where + ": " if where else ""
    if isinstance(error, SystemExit):
        return "%sthe model's code called sys.exit(%r) before the bundle was written" % (at, error.code)
    if isinstance(error, KeyboardInterrupt):
        return "%sKeyboardInterrupt (raised by the model's code, or SIGINT from outside) before the bundle was " \
               "written" % at
    if isinstance(error, MemoryError):
        return ("%sout of memory (MemoryError) building or running the model: a smaller batch or model (--input, "
                "--arg) may fit" % at)
    if where:
        return str(user_error(error, USER_FILE, "the model's code failed"))
    return None


def main():
    faulthandler.enable()  # a crash in native code (the model's or torch's) leaves its Python stack in the log
    print(STARTED_LINE, file=sys.stderr, flush=True)
    parser = ArgumentParser(description="Writes a model bundle from FILE.py:FACTORY")
    parser.add_argument("--source", required=True, help="FILE.py:FACTORY")
    parser.add_argument("--arg", action="append", default=[], help="NAME=VALUE passed to the factory")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--target")
    parser.add_argument("--example")
    parser.add_argument("--loss", default="cross_entropy")
    parser.add_argument("--optimizer", default="adamw", choices=OPTIMIZERS)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--name")
    parser.add_argument("--output")
    parser.add_argument("--input-style", choices=model_adapter.CALL_STYLES)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--out", required=True)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter this runs under, as trainlab named it (kept in the manifest)")
    args = parser.parse_args()
    try:
        write_bundle(args)
    except UserError as e:
        fail(e)
    except BaseException as e:  # the model's code: sys.exit, KeyboardInterrupt, MemoryError, its exceptions
        message = user_code_error(e)
        if message is None:
            raise  # this script's own fault: the traceback, exit 1 (an internal error)
        fail(message)


def write_bundle(args):
    path, colon, factory_name = args.source.rpartition(":")
    if not colon or not path.endswith(".py") or not factory_name.isidentifier():
        raise UserError("'%s': expected FILE.py:FACTORY (a function returning the nn.Module)" % args.source)
    if not (args.lr > 0):
        raise UserError("--lr %s: the learning rate must be positive" % args.lr)
    out = os.path.abspath(args.out)
    problem = destination_problem(out, args.out, args.force, path)
    if problem:
        raise UserError(problem)
    name = args.name or factory_name
    if not re.match(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$", name):
        raise UserError("--name '%s': letters, digits, '_', '-' and '.' only" % name)

    # The batch: specs, or a saved example.
    if args.example:
        if args.input:
            raise UserError("--example and --input exclude each other")
        specs, example = load_example(args.example, args.target)
    else:
        if not args.input or not args.target:
            raise UserError("describe the batch: --input NAME:DTYPE[...] (one per model input) and --target, "
                            "or --example BATCH.pt")
        specs = [parse_spec(t, "--input") for t in args.input] + [parse_spec(args.target, "--target")]
        generator = torch.Generator().manual_seed(args.seed)
        example = [synthesize(s, generator) for s in specs]
    names = [s["name"] for s in specs]
    if len(set(names)) != len(names):
        raise UserError("two batch entries are both named '%s'" % next(n for n in names if names.count(n) > 1))
    batch = specs[0]["shape"][0]
    for s in specs:
        if s["shape"][0] != batch:
            raise UserError("'%s' has %d as its first dimension, '%s' %d: every input and the target need the "
                            "batch first" % (s["name"], s["shape"][0], specs[0]["name"], batch))
    inputs, target = example[:-1], example[-1]

    watch_checkpointing()
    module, user_file = import_user_file(path)
    kwargs = parse_args_values(args.arg)
    raw_model = build_model(module, user_file, factory_name, kwargs, args.seed)
    loss_model = args.loss == "model"
    loss_fn = resolve_loss(args.loss, module, user_file)
    construct = unsupported_constructs(raw_model)
    if construct:
        raise UserError("unsupported: " + construct)
    raw_model.train()

    def model_args(batch):
        """The adapted model's positional tensors: the inputs, and the target where the model
        computes its own loss."""
        return list(batch[:-1]) + ([batch[-1]] if loss_model else [])

    # How forward takes the inputs and which of its outputs is trained (model_adapter.py).
    try:
        settings = model_adapter.plan_call(raw_model, [s["name"] for s in specs[:-1]], specs[-1]["name"], loss_model,
                                           args.input_style)
    except model_adapter.AdapterError as e:
        raise UserError(str(e))
    initial_raw = snapshot(raw_model)

    # One step on the example, as the C++ loop will run it.
    try:
        raw_output = model_adapter.call_model(raw_model, settings, model_args(example))
    except Exception as e:
        hint = ""
        if settings["call"] != "dict" and len(model_adapter.forward_parameters(raw_model)) == 1:
            hint = " (if forward takes one dict of tensors, give --input-style dict)"
        raise user_error(e, user_file, "the model failed on the example batch (%s%s)%s" % (
            ", ".join("%s %s%s" % (s["name"], s["dtype"], s["shape"]) for s in specs[:-1]),
            ", the target as %s=" % specs[-1]["name"] if loss_model else "", hint))
    try:
        settings["output"] = model_adapter.choose_output(raw_output, args.output, loss_model)
    except model_adapter.AdapterError as e:
        raise UserError(str(e))
    output = model_adapter.select_output(raw_output, settings["output"])
    model = model_adapter.adapt(raw_model, settings)
    initial = {k: initial_raw[k[len("model."):] if model is not raw_model else k]
               for k in model.state_dict(keep_vars=True)}
    try:
        loss = loss_fn(output, target)
    except Exception as e:
        raise user_error(e, user_file, "the loss '%s' failed on the model's output %s and the target %s%s" %
                         (args.loss, list(output.shape), specs[-1]["dtype"], specs[-1]["shape"]))
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
        raise UserError("the loss '%s' must return a scalar tensor that depends on the parameters" % args.loss)
    refuse_non_finite(loss, output, "the example batch")
    construct = python_autograd_construct(loss)
    loss.backward()  # first: an error the model's own backward raises is the user's line
    if construct:
        raise UserError(construct)
    no_gradient = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
    model.zero_grad(set_to_none=True)
    flops = flops_per_sample(model, loss_fn, model_args(example), target, batch)
    uncounted = flops_not_counted(model)
    model.zero_grad(set_to_none=True)
    restore(model, initial)

    # The traced module and loss. Tracer warnings raised in the user's file are constructs a trace
    # freezes (a Python branch on a tensor's value): refused, with their place.
    with warnings.catch_warnings(record=True) as caught, model_adapter.masks_without_vmap():
        warnings.simplefilter("always", torch.jit.TracerWarning)
        try:
            traced = torch.jit.trace(model, tuple(model_args(example)), check_trace=False)
            traced_loss = torch.jit.trace(LossModule(loss_fn), (output.detach().requires_grad_(), target),
                                          check_trace=False)
        except Exception as e:
            raise user_error(e, user_file, "TorchScript could not trace the model")
    trace_warnings = []
    for w in caught:
        if not issubclass(w.category, torch.jit.TracerWarning):
            continue
        where = "%s:%d" % (os.path.basename(w.filename), w.lineno)
        text = str(w.message).split(".")[0]
        # A Python branch on a tensor's value is frozen at the example's branch: refused. Other
        # conversions (a size turned into a float) are usually shape arithmetic: kept as warnings.
        if os.path.abspath(w.filename) == user_file and "Python boolean" in text:
            raise UserError("unsupported: %s: %s (data-dependent control flow: the trace would always take the "
                            "example's branch)" % (where, text))
        if "%s: %s" % (where, text) not in trace_warnings:
            trace_warnings.append("%s: %s" % (where, text))
    restore(model, initial)
    # The trace must be the model: the same loss with the same random draws, on the example and
    # on a second batch (a branch the trace froze shows there).
    check_batches = [example]
    if not args.example:
        generator = torch.Generator().manual_seed(args.seed + 1)
        check_batches.append([synthesize(s, generator) for s in specs])
    for check in check_batches:
        try:
            torch.manual_seed(args.seed)
            eager_loss = loss_fn(model(*model_args(check)), check[-1]).item()
            restore(model, initial)
            torch.manual_seed(args.seed)
            traced_loss_value = traced_loss(traced(*model_args(check)), check[-1]).item()
            restore(model, initial)
        except Exception as e:
            raise user_error(e, user_file, "checking the trace against the model on a second batch failed")
        if not math.isfinite(eager_loss):
            with torch.no_grad():
                refuse_non_finite(torch.tensor(eager_loss), model(*model_args(check)), "a second batch")
            restore(model, initial)
        if not abs(eager_loss - traced_loss_value) <= 1e-4 * max(1.0, abs(eager_loss)):
            raise UserError("unsupported: the traced model gives loss %.6g, the model %.6g on the same batch: its "
                            "forward depends on something a trace cannot follow (Python state, data-dependent "
                            "control flow)" % (traced_loss_value, eager_loss))

    parameters = list(model.named_parameters())
    all_names = [n for n, _ in model.named_parameters(remove_duplicate=False)]
    first_name = {}
    for n, p in model.named_parameters(remove_duplicate=False):
        first_name.setdefault(id(p), n)
    tied = {n: first_name[id(p)] for n, p in model.named_parameters(remove_duplicate=False) if first_name[id(p)] != n}
    with open(user_file, "rb") as f:
        source_bytes = f.read()
    manifest = {
        "format": 1,
        "name": name,
        "source": {"file": os.path.basename(user_file), "dir": os.path.dirname(user_file),
                   "factory": factory_name, "args": kwargs,
                   "sha256": hashlib.sha256(source_bytes).hexdigest()},
        "seed": args.seed,
        "inputs": specs[:-1],
        "target": specs[-1],
        "batch_size": batch,
        "loss": args.loss,
        "adapter": settings,
        "optimizer": optimizer_settings(args.optimizer, args.lr),
        "parameters": sum(p.numel() for _, p in parameters),
        "parameter_tensors": len(parameters),
        "no_gradient": no_gradient,
        "frozen": frozen,
        "tied": tied,
        "buffers": [n for n, _ in model.named_buffers()],
        "flops_per_sample": flops,
        "flops_not_counted": uncounted,
        "output_shape": list(output.shape),
        "trace_warnings": trace_warnings,
        "torch": torch.__version__,
        "python": os.path.abspath(args.python) if os.sep in args.python else args.python,  # its runs use it
    }
    if len(all_names) != len(parameters) + len(tied):
        raise UserError("internal: parameter names do not add up")

    parent = os.path.dirname(out)
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="." + os.path.basename(out) + ".tmp-", dir=parent)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's 0700 would become the bundle's: a folder follows the umask
    except OSError as e:
        raise UserError("cannot write the bundle at %s: %s" % (args.out, e.strerror or e))
    try:
        save_traced(traced, os.path.join(tmp, "model.pt"), user_file, "model")
        save_traced(traced_loss, os.path.join(tmp, "loss.pt"), user_file, "loss")
        os.makedirs(os.path.join(tmp, "source"))
        with open(os.path.join(tmp, "source", os.path.basename(user_file)), "wb") as f:
            f.write(source_bytes)
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
        place_bundle(tmp, out, args.out, args.force, user_file)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise UserError("cannot write the bundle at %s: %s" % (args.out, e.strerror or e))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for w in trace_warnings:
        if w.startswith(os.path.basename(user_file) + ":"):
            print("trainlab model add: warning: the trace assumed a fixed value at " + w, file=sys.stderr)
    summary = "%s: %d parameters in %d tensors, %s per sample (forward+backward)" % (
        name, manifest["parameters"], len(parameters),
        "%.3g MFLOP" % (flops / 1e6) if flops else "FLOPs not countable")
    if uncounted and flops:
        summary += " (partial: FLOPs not counted for: %s)" % ", ".join(uncounted)
    if settings["output"] is not None:
        summary += "; trains output %s" % (repr(settings["output"]) if isinstance(settings["output"], int)
                                          else "'%s'" % settings["output"])
    if settings["call"] != "positional":
        summary += "; inputs passed %s" % model_adapter.style_words(settings["call"])
    if tied:
        summary += "; tied: " + ", ".join("%s = %s" % kv for kv in tied.items())
    if no_gradient:
        summary += "; no gradient: " + ", ".join(no_gradient)
    print(WRITTEN_PREFIX + summary, flush=True)


if __name__ == "__main__":
    main()
