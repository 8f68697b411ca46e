"""TRAINLAB_JOB_THREADS=N: torch's intra-op threads kept at N in the job's main and child
processes (how the lab leaves cores to other processes): torch.set_num_threads(N) at torch's
import (a multiprocessing-spawned process: at its first step), and the script's own later torch.set_num_threads calls keep N (a warning line says what
the script asked for, the first MAX_WARNINGS times). DataLoader workers are left alone: torch
sets 1 thread in each itself, and a call from torch's own files always goes through."""
import os
import sys

from . import core

MAX_WARNINGS = 4


def keep(torch, count, spawned_trainer=False):
    """spawned_trainer: a multiprocessing-spawned process (torch.multiprocessing.spawn's ranks)
    at its first step, so no DataLoader worker; at torch's import such a process is left alone,
    as it may be one."""
    proc = core.PROC
    if proc.role not in ("main", "child") or (proc.mp_child and not spawned_trainer):
        return  # a spawned process may be a DataLoader worker: torch sets its threads
    original = torch.set_num_threads
    if getattr(original, "_trainlab_threads", False):
        return
    original(count)
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    skip = (torch_dir + os.sep, core.RECORDER_DIR + os.sep)
    warned = [0]

    def set_num_threads(requested):
        caller = sys._getframe(1)
        if core.PROC.role not in ("main", "child") or \
                os.path.abspath(caller.f_code.co_filename).startswith(skip):
            return original(requested)
        try:
            asked = int(requested)
        except (TypeError, ValueError):
            return original(requested)  # let torch refuse it as it would
        if asked < 1:
            return original(requested)
        original(count)
        if asked != count and warned[0] < MAX_WARNINGS:
            warned[0] += 1
            try:
                file, line = core.path_as_given(caller.f_code.co_filename), caller.f_lineno
                core.PROC.warning("threads", "the script sets %d threads (%s:%d); kept at %d (TRAINLAB_JOB_THREADS)"
                                  % (asked, file, line, count))
            except Exception:
                pass
        return None

    set_num_threads.__doc__ = original.__doc__
    set_num_threads.__wrapped__ = original
    set_num_threads._trainlab_threads = True
    torch.set_num_threads = set_num_threads
