"""What the script itself chooses that trainlab's lab also changes: its own torch.autocast blocks
and its own torch.compile calls (torch.compile, nn.Module.compile). At torch's import these are
wrapped so that a call from outside torch and the recorder (the user's code, or a library the
script uses, e.g. a trainer) writes one line naming what it did and the file and line that did it:
{"type":"script_autocast"} when an enabled autocast is entered, {"type":"script_compile"} when
something is compiled. Each place is written once, at most MAX_LINES places a kind. The calls run
unchanged; in DataLoader workers nothing is written."""
import functools
import os
import sys

from . import core

MAX_LINES = 8
_seen = set()
_written = {"autocast": 0, "compile": 0}
_skip_dirs = [core.RECORDER_DIR]


def install(torch):
    skip = os.path.dirname(os.path.abspath(torch.__file__))
    if skip not in _skip_dirs:
        _skip_dirs.append(skip)
    _wrap_autocast(torch)
    _wrap_compile(torch)


def _outside(path):
    path = os.path.abspath(path)
    return not path.startswith(tuple(d + os.sep for d in _skip_dirs))


def _writable(kind):
    proc = core.PROC
    return proc is not None and proc.role in ("main", "child") and _written[kind] < MAX_LINES


def _write(kind, key, record):
    if key in _seen:
        return
    _seen.add(key)
    _written[kind] += 1
    core.PROC.write(record)


# -- torch.autocast -----------------------------------------------------------------------------
def _wrap_autocast(torch):
    cls = torch.amp.autocast_mode.autocast
    original = cls.__enter__
    if getattr(original, "_trainlab_script_choice", False):
        return

    @functools.wraps(original)
    def __enter__(self):
        result = original(self)
        if _written["autocast"] < MAX_LINES:
            try:
                _record_autocast(self, sys._getframe(1))
            except Exception:
                pass
        return result

    __enter__._trainlab_script_choice = True
    cls.__enter__ = __enter__


def _autocast_caller(frame):
    """The file and line that entered the block: a `with torch.autocast(...)` line, or the function
    an @torch.autocast(...) decorator wraps. None for torch's own blocks and the recorder's."""
    # torch.cpu.amp.autocast / torch.cuda.amp.autocast (deprecated) enter through their own __enter__.
    while frame is not None and frame.f_code.co_name == "__enter__" and not _outside(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    if frame.f_code.co_name == "decorate_autocast" and not _outside(frame.f_code.co_filename):
        func = frame.f_locals.get("func")
        code = getattr(func, "__code__", None)
        if code is None or not _outside(code.co_filename):
            return None
        return code.co_filename, code.co_firstlineno
    if not _outside(frame.f_code.co_filename):
        return None
    return frame.f_code.co_filename, frame.f_lineno


def _record_autocast(context, caller):
    if not getattr(context, "_enabled", False) or not _writable("autocast"):
        return
    where = _autocast_caller(caller)
    if where is None:
        return
    dtype = str(getattr(context, "fast_dtype", "")).replace("torch.", "")
    device_type = str(getattr(context, "device", ""))
    _write("autocast", ("autocast",) + where + (dtype, device_type),
           {"type": "script_autocast", "dtype": dtype, "device_type": device_type,
            "file": core.path_as_given(where[0]), "line": where[1]})


# -- torch.compile and nn.Module.compile --------------------------------------------------------
def _wrap_compile(torch):
    original = getattr(torch, "compile", None)
    if original is not None and not getattr(original, "_trainlab_script_choice", False):
        @functools.wraps(original)
        def compile(*args, **kwargs):
            try:
                _record_compile(torch, args[0] if args else kwargs.get("model"), kwargs, sys._getframe(1))
            except Exception:
                pass
            return original(*args, **kwargs)

        compile._trainlab_script_choice = True
        torch.compile = compile
    module_cls = torch.nn.Module
    original_method = getattr(module_cls, "compile", None)
    if original_method is not None and not getattr(original_method, "_trainlab_script_choice", False):
        @functools.wraps(original_method)
        def module_compile(self, *args, **kwargs):
            try:
                _record_compile(torch, self, kwargs, sys._getframe(1), method=True)
            except Exception:
                pass
            result = original_method(self, *args, **kwargs)
            from . import steps
            steps.note_compiled_module(self)
            return result

        module_compile._trainlab_script_choice = True
        module_cls.compile = module_compile


def _target_words(torch, target, method):
    if target is None:
        return "a function (decorator)"
    if isinstance(target, torch.nn.Module):
        return "module %s%s" % (type(target).__name__, " (Module.compile)" if method else "")
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__name__
    return "function %s" % name


def _record_compile(torch, target, kwargs, caller, method=False):
    if not _writable("compile") or caller is None or not _outside(caller.f_code.co_filename):
        return
    mode = kwargs.get("mode") or "default"
    backend = kwargs.get("backend", "inductor")
    backend = backend if isinstance(backend, str) else getattr(backend, "__name__", type(backend).__name__)
    where = (caller.f_code.co_filename, caller.f_lineno)
    _write("compile", ("compile",) + where,
           {"type": "script_compile", "target": _target_words(torch, target, method), "mode": str(mode),
            "backend": str(backend), "file": core.path_as_given(where[0]), "line": where[1]})
