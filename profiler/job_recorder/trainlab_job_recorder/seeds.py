"""TRAINLAB_JOB_SEED: the recorder seeds the process (random at start-up, numpy and torch at their
import), then watches for the script reseeding after it: random.seed, numpy.random.seed and
torch.manual_seed are wrapped so that a call from the user's code (not from torch or the
recorder, not in a DataLoader worker) writes a reseed line naming the call, its seed and the
user's file and line, for the first MAX_RESEED_LINES calls. The call itself runs unchanged."""
import functools
import operator
import os
import sys

from . import core

MAX_RESEED_LINES = 8
_written = [0]
_skip_dirs = [core.RECORDER_DIR]  # torch's folder is added at torch's import


def skip_calls_from(folder):
    if folder not in _skip_dirs:
        _skip_dirs.append(folder)


def wrap(owner, attribute, call):
    """Replaces owner.attribute (a seeding function) by a wrapper that calls it as it is, then
    records the call when it came from the user's code."""
    original = getattr(owner, attribute, None)
    if original is None or getattr(original, "_trainlab_reseed", False):
        return
    try:
        wrapped = functools.wraps(original)
    except Exception:
        wrapped = lambda f: f  # noqa: E731

    @wrapped
    def seed(*args, **kwargs):
        result = original(*args, **kwargs)
        if _written[0] < MAX_RESEED_LINES:
            try:
                _record(call, args, kwargs, sys._getframe(1))
            except Exception:
                pass
        return result

    seed._trainlab_reseed = True
    setattr(owner, attribute, seed)


def _record(call, args, kwargs, caller):
    proc = core.PROC
    if proc is None or proc.role not in ("main", "child"):
        return
    path = os.path.abspath(caller.f_code.co_filename)
    if path.startswith(tuple(d + os.sep for d in _skip_dirs)):
        return  # torch's own seeding (a DataLoader worker's), or the recorder's: not the script's
    _written[0] += 1
    value = args[0] if args else next(iter(kwargs.values()), None)
    proc.write({"type": "reseed", "call": call, "seed": _int64(value), "file": core.path_as_given(caller.f_code.co_filename), "line": caller.f_lineno})


def _int64(value):
    """The seed as an integer when it is one that fits in 64 bits, else None (random.seed takes
    strings and None, numpy.random.seed arrays, torch.manual_seed values up to 2^64 - 1)."""
    if value is None or isinstance(value, float):
        return None
    try:
        number = operator.index(value)
    except TypeError:
        return None
    return number if -(2 ** 63) <= number < 2 ** 63 else None
