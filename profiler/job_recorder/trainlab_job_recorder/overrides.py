"""What issue 57's lab changes inside the job, applied to the module the optimizer trains: its
forward under torch.autocast (TRAINLAB_JOB_AUTOCAST) and through torch.compile
(TRAINLAB_JOB_COMPILE). Each either takes effect (an autocast / compile line) or is recorded as
override_failed and the job runs without it; neither raises into the script."""
import time

from . import core, steps

_DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16"}
_applied = set()


def apply_to_trained_module(module, in_forward=False):
    """in_forward: called from a forward pre-hook of this module's call, whose own hooks are
    already chosen: autocast is entered at once for it (the forward hook added here leaves it)."""
    settings = core.SETTINGS
    if settings.autocast not in ("off", "") and "autocast" not in _applied:
        _applied.add("autocast")
        _autocast(module, settings.autocast, in_forward)
    if settings.compile not in ("off", "") and "compile" not in _applied:
        _applied.add("compile")
        _compile(module, settings.compile)


def _failed(part, message):
    core.PROC.write({"type": "override_failed", "part": part, "message": str(message)[:2000]})


def _autocast(module, requested, in_forward):
    import torch
    dtype_name = _DTYPES.get(requested.lower())
    if dtype_name is None:
        _failed("autocast", "TRAINLAB_JOB_AUTOCAST=%s is not bf16, fp16 or off" % requested)
        return
    first = next(iter(module.parameters()), None)
    device_type = first.device.type if first is not None else "cpu"
    dtype = getattr(torch, dtype_name)
    try:
        if not torch.amp.autocast_mode.is_autocast_available(device_type):
            raise RuntimeError("autocast is not available on %s" % device_type)
        torch.autocast(device_type, dtype=dtype)  # refuses a dtype the device cannot autocast to
    except Exception as error:
        _failed("autocast", "torch.autocast(%r, %s): %s" % (device_type, dtype_name, error))
        return
    contexts = []

    def enter(mod):
        context = torch.autocast(device_type, dtype=dtype)
        context.__enter__()
        contexts.append(context)

    def leave(mod):
        if contexts:
            contexts.pop().__exit__(None, None, None)

    # Entered and left eagerly, outside any compiled region (a module compiled in place gets it
    # around its compiled call): a traced __enter__ would leave nothing to __exit__.
    steps.around_call(module, steps.unseen_by_compile(enter), steps.unseen_by_compile(leave))
    if in_forward:
        enter(module)
    core.PROC.write({"type": "autocast", "dtype": dtype_name, "device_type": device_type})


def _error_text(error):
    """TYPE: the first line of the message, with torch.compile's "Explanation:" line when it has
    one (the first line alone is often generic: "RuntimeError when making fake tensor call")."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = "%s: %s" % (type(error).__name__, lines[0] if lines else "")
    explanation = next((line for line in lines[1:6] if line.startswith("Explanation:")), None)
    if explanation:
        text += " (%s)" % explanation[len("Explanation:"):].strip()
    return text


def _compile(module, mode):
    import torch
    if type(module).__name__ == "OptimizedModule":
        _failed("compile", "the script already compiles this module (torch.compile)")
        return
    if getattr(module, "_compiled_call_impl", None) is not None:
        _failed("compile", "the script already compiles this module (Module.compile)")
        return
    try:
        eager_forward = module.forward
        compiled = torch.compile(eager_forward, mode=None if mode == "default" else mode)
    except Exception as error:
        _failed("compile", "torch.compile(mode=%r): %s" % (mode, error))
        return
    state = {"first": True}

    def forward(*args, **kwargs):
        if state.get("failed"):
            return eager_forward(*args, **kwargs)
        t0 = time.monotonic()
        try:
            result = compiled(*args, **kwargs)
        except Exception as error:
            state["failed"] = True
            try:
                del module.forward
            except AttributeError:
                pass
            _failed("compile", "torch.compile(mode=%r) failed at %s: %s" %
                    (mode, "the first call" if state["first"] else "a later call", _error_text(error)))
            return eager_forward(*args, **kwargs)
        if state["first"]:
            state["first"] = False
            core.PROC.write({"type": "compile", "seconds": round(time.monotonic() - t0, 6), "mode": mode})
        return result

    module.forward = forward
