"""The adapter between a model as a library gives it and the step trainlab runs: positional tensors
in (the bundle's inputs in order, then the target where the model computes its own loss), one
tensor out. Shared by bundle_model.py (which traces the adapted module) and aot_compile.py (whose
bundle twin rebuilds the model through the same adapter), so both train the same function.

Settings (recorded in manifest.json as "adapter"):
  call           "positional": forward(*inputs); "keyword": forward(name=tensor, ...) with the
                 --input names (input_ids=, attention_mask=); "dict": forward({name: tensor, ...})
  names          the input names, in the bundle's order
  target_keyword the keyword the target is passed as when the model computes its own loss
                 (--loss model: the target's name, e.g. labels); null otherwise
  output         null: the forward returns one tensor; a key ("logits", "loss") of a dict or
                 Hugging Face ModelOutput; or an index into a tuple/list
  no_cache       pass use_cache=False (a training step has no use for a key/value cache)

With every setting at its plain value (positional, no target, tensor output) adapt() returns the
user's module itself, so its parameter names are the user's.

masks_without_vmap(): the context both scripts trace and export the model in, so that libraries
whose attention masks are built with torch.vmap (transformers 4.x) can be recorded.
"""
import contextlib
import inspect
import sys

import torch
import torch.nn as nn

CALL_STYLES = ("positional", "keyword", "dict")


class AdapterError(Exception):
    """One line for the user: what about the model's forward or output is unsupported."""


def forward_parameters(model):
    """forward's parameters (self excluded), in order."""
    try:
        return list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return []


def signature_text(model):
    try:
        return "%s.forward%s" % (type(model).__name__, inspect.signature(model.forward))
    except (TypeError, ValueError):
        return "%s.forward" % type(model).__name__


def _named(params):
    return {p.name: p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def plan_call(model, input_names, target_name, loss_model, style=None):
    """The call settings (no output yet) for these inputs, or AdapterError naming what forward
    cannot take. style None chooses: keyword when every input is named after one of forward's
    parameters (in another order than forward's, or not all of the first ones), dict when forward
    takes one argument and there are several inputs, else positional."""
    params = forward_parameters(model)
    named = _named(params)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    takes_var_positional = any(p.kind == p.VAR_POSITIONAL for p in params)
    takes_var_keyword = any(p.kind == p.VAR_KEYWORD for p in params)
    if style is None:
        if [p.name for p in positional[:len(input_names)]] == list(input_names):
            style = "positional"  # named as forward's parameters, in their order: passed plainly
        elif all(n in named for n in input_names):
            style = "keyword"
        elif len(input_names) > 1 and len(positional) == 1 and not takes_var_positional:
            style = "dict"
        else:
            style = "positional"
    settings = {"call": style, "names": list(input_names), "target_keyword": None, "output": None,
                "no_cache": "use_cache" in named}
    if loss_model:
        if target_name not in named and not takes_var_keyword and style != "dict":
            raise AdapterError("--loss model passes the target as the keyword '%s', which %s does not take: name "
                               "the target after the argument the model computes its loss from (e.g. --target "
                               "labels:...)" % (target_name, signature_text(model)))
        settings["target_keyword"] = target_name
    # Whether forward can be called so: its signature bound to placeholders.
    args, kwargs = _arguments(settings, [object()] * len(input_names), object() if loss_model else None)
    try:
        inspect.signature(model.forward).bind(*args, **kwargs)
    except TypeError as e:
        raise AdapterError("unsupported: %s cannot take the inputs %s %s (%s); name each --input after forward's "
                           "parameters to pass them as keywords, or give them in forward's order" %
                           (signature_text(model), ", ".join(input_names), style_words(style), e))
    except ValueError:
        pass  # no signature to check: the call itself will say
    return settings


def style_words(style):
    return {"positional": "as positional arguments", "keyword": "as keywords",
            "dict": "as one dict"}[style]


def _arguments(settings, inputs, target):
    """(args, kwargs) of the model's call."""
    names = settings["names"]
    kwargs = {}
    if settings["call"] == "positional":
        args = list(inputs)
    elif settings["call"] == "keyword":
        args, kwargs = [], dict(zip(names, inputs))
    else:
        batch = dict(zip(names, inputs))
        if target is not None:
            batch[settings["target_keyword"]] = target
        return [batch], ({"use_cache": False} if settings.get("no_cache") else {})
    if target is not None:
        kwargs[settings["target_keyword"]] = target
    if settings.get("no_cache"):
        kwargs["use_cache"] = False
    return args, kwargs


def call_model(model, settings, tensors):
    """The model's own output for the adapter's positional tensors."""
    if settings.get("target_keyword"):
        inputs, target = tensors[:-1], tensors[-1]
    else:
        inputs, target = tensors, None
    args, kwargs = _arguments(settings, inputs, target)
    return model(*args, **kwargs)


def describe_output(output):
    """'a tuple of 3 (tensor[4, 10], None, tuple)' and the like, for messages."""
    def one(v):
        return "tensor%s" % list(v.shape) if isinstance(v, torch.Tensor) else type(v).__name__
    if isinstance(output, dict):
        return "a %s with %s" % (type(output).__name__, ", ".join("%s: %s" % (k, one(v)) for k, v in output.items()))
    if isinstance(output, (tuple, list)):
        return "a %s of %d (%s)" % (type(output).__name__, len(output), ", ".join(one(v) for v in output))
    return "a %s" % type(output).__name__


def choose_output(output, choice, loss_model):
    """The output setting for the model's raw output: choice is --output (a key, or an index
    given as digits) or None for the default: the one tensor; 'loss' with --loss model; 'logits'
    when the output has it (Hugging Face's convention)."""
    if isinstance(output, torch.Tensor):
        if choice is not None:
            raise AdapterError("--output %s: the model returns one tensor; --output picks from a tuple or dict output"
                               % choice)
        return None
    if isinstance(output, dict):
        if choice is None:
            tensors = [k for k, v in output.items() if isinstance(v, torch.Tensor)]
            if loss_model:
                choice = "loss"
            elif len(tensors) == 1:
                choice = tensors[0]
            elif "logits" in output:
                choice = "logits"
            else:
                raise AdapterError("the model returns %s: choose the output to train with --output KEY" %
                                   describe_output(output))
        if choice not in output:
            raise AdapterError("--output %s: the model returns %s%s" % (
                choice, describe_output(output),
                " (no loss: does the model take the target as '%s'?)" % choice if choice == "loss" else ""))
        _check_tensor(output[choice], choice, output)
        return choice
    if isinstance(output, (tuple, list)):
        if choice is None:
            tensors = [i for i, v in enumerate(output) if isinstance(v, torch.Tensor)]
            if len(tensors) != 1:
                raise AdapterError("the model returns %s: choose the output to train with --output INDEX" %
                                   describe_output(output))
            index = tensors[0]
        else:
            if not choice.lstrip("-").isdigit():
                raise AdapterError("--output %s: the model returns %s; give an index" % (choice, describe_output(output)))
            index = int(choice)
            if not -len(output) <= index < len(output):
                raise AdapterError("--output %s: the model returns %s" % (choice, describe_output(output)))
        _check_tensor(output[index], index, output)
        return index
    raise AdapterError("unsupported: the model returns %s; trainlab trains a tensor, a tuple, a dict or a "
                       "ModelOutput" % describe_output(output))


def _check_tensor(value, choice, output):
    if not isinstance(value, torch.Tensor):
        raise AdapterError("--output %s: that entry is a %s, not a tensor (the model returns %s)" %
                           (choice, type(value).__name__, describe_output(output)))


def select_output(output, setting):
    if setting is None:
        return output
    return output[setting]


def is_plain(settings):
    return (not settings or settings["call"] == "positional" and not settings.get("target_keyword") and
            settings.get("output") is None and not settings.get("no_cache"))


class ModelAdapter(nn.Module):
    """The user's module as (tensors...) -> tensor; its parameters are under `model.`."""

    def __init__(self, model, settings):
        super().__init__()
        self.model = model
        self.settings = dict(settings)

    def forward(self, *tensors):
        return select_output(call_model(self.model, self.settings, tensors), self.settings["output"])


def adapt(model, settings):
    """The module trainlab traces and exports: the user's own where nothing needs adapting."""
    return model if is_plain(settings) else ModelAdapter(model, settings)


class ModelLoss(nn.Module):
    """--loss model: the adapted model already returns the loss; (output, target) -> output."""

    def forward(self, output, target):
        return output.sum()


def model_loss(output, target):
    return output.sum()


def broadcast_for_bhqkv(mask_function, bh_indices=True):
    """transformers' _vmap_for_bhqkv without vmap: the mask function called once on index tensors
    shaped to broadcast against each other ([B,1,1,1], [1,H,1,1], [1,1,Q,1], [1,1,1,K]; [Q,1], [1,K]
    without the batch and head indices), its result expanded to the shape vmap gives. The mask
    functions are elementwise comparisons and tensor indexing, which broadcast."""
    def expanded(batch_idx, head_idx, q_idx, kv_idx):
        if not bh_indices:
            return mask_function(batch_idx, head_idx, q_idx[:, None], kv_idx[None, :]).expand(
                q_idx.shape[0], kv_idx.shape[0])
        return mask_function(batch_idx[:, None, None, None], head_idx[None, :, None, None],
                             q_idx[None, None, :, None], kv_idx[None, None, None, :]).expand(
            batch_idx.shape[0], head_idx.shape[0], q_idx.shape[0], kv_idx.shape[0])
    return expanded


@contextlib.contextmanager
def masks_without_vmap():
    """transformers 4.5x builds its attention masks with torch.vmap (masking_utils._vmap_for_bhqkv, under
    sdpa_mask and eager_mask) and TransformGetItemToIndex, which neither torch.jit.trace nor
    torch.export records under torch 2.11: GPT-2 from transformers 4.57 failed the trace with
    "RuntimeError: unordered_map::at" and the export with "SpecViolationError: Node.meta
    function_const_func_spec0 is missing val field". While the bundle writer traces and the exporter
    exports, the masks are built by broadcasting instead (broadcast_for_bhqkv: the same boolean mask,
    as later transformers build it without vmap). Nothing changes where transformers is not imported
    or has no such function; the trace's check against the model and the compiled variant's gradient
    check run after it as always."""
    masks = sys.modules.get("transformers.masking_utils")
    vmapped = getattr(masks, "_vmap_for_bhqkv", None)
    if vmapped is None:
        yield
        return
    # Its indexing of a tensor by index tensors goes through a custom autograd function with a vmap
    # rule (TransformGetItemToIndex), which the trace cannot record either; broadcast indices index
    # plainly.
    get_item = getattr(masks, "TransformGetItemToIndex", None)
    masks._vmap_for_bhqkv = broadcast_for_bhqkv
    if get_item is not None:
        masks.TransformGetItemToIndex = contextlib.nullcontext
    try:
        yield
    finally:
        masks._vmap_for_bhqkv = vmapped
        if get_item is not None:
            masks.TransformGetItemToIndex = get_item
