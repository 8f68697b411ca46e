"""trainlab's in-job recorder (issue 54; file format in docs/job_recorder.md). Started by
profiler/job_recorder/sitecustomize.py when $TRAINLAB_JOB_DIR is set. It never imports torch
itself: the parts that need torch (steps, loader, stages) install when the script imports it.
Each part is wrapped: when one fails it writes a warning line naming the part and the job goes on."""
import atexit
import os
import random
import signal
import sys

from . import core

_started = [False]


def activate():
    if _started[0]:
        return
    _started[0] = True
    settings = core.Settings(os.environ)
    proc = core.Process(settings)
    core.SETTINGS = settings
    core.PROC = proc
    if not proc.mp_child:
        proc.write_process_line()  # a spawned child says what it is once it knows (worker or not)
    if settings.capture_error:
        proc.warning("profiler", settings.capture_error)
    if settings.threads_error and not proc.mp_child:
        proc.warning("threads", settings.threads_error)
    _part("fork", lambda: os.register_at_fork(after_in_child=_after_fork))
    _part("signal", _install_sigterm)
    atexit.register(_at_exit)
    if settings.seed is not None:
        _part("seed", lambda: random.seed(int(settings.seed)))
        _part("seed", _watch_random_reseeds)
    _part("import", _watch_imports)


def _part(name, function):
    try:
        if os.environ.get("TRAINLAB_JOB_FAIL_PART") == name:  # the tests' way to break one part
            raise RuntimeError("failure injected by TRAINLAB_JOB_FAIL_PART")
        function()
    except Exception as error:
        core.PROC.warning(name, "%s: %r" % (name, error))


def _after_fork():
    try:
        core.PROC.after_fork_in_child()
    except Exception:
        pass


# -- installs when torch (and numpy, for the seed) are imported ---------------------------------
def _watch_imports():
    import importlib.abc
    import importlib.util

    class Watcher(importlib.abc.MetaPathFinder):
        def __init__(self):
            self.pending = {"torch": _on_torch}
            if core.SETTINGS.seed is not None:
                self.pending["numpy"] = _on_numpy

        def find_spec(self, name, path=None, target=None):
            callback = self.pending.get(name)
            if callback is None:
                return None
            del self.pending[name]
            if not self.pending:
                try:
                    sys.meta_path.remove(self)
                except ValueError:
                    pass
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            loader = spec.loader
            original_exec = loader.exec_module

            def exec_module(module):
                original_exec(module)
                try:
                    loader.exec_module = original_exec
                except Exception:
                    pass
                try:
                    callback(module)
                except Exception as error:
                    core.PROC.warning("import", "installing on import of %s: %r" % (name, error))

            try:
                loader.exec_module = exec_module
            except Exception:
                return spec
            return spec

    for module_name, callback in (("torch", _on_torch), ("numpy", _on_numpy)):
        if module_name in sys.modules:
            callback(sys.modules[module_name])
    sys.meta_path.insert(0, Watcher())


def _watch_random_reseeds():
    from . import seeds
    seeds.wrap(random, "seed", "random.seed")


def _on_numpy(numpy):
    seed = core.SETTINGS.seed
    if seed is None:
        return
    try:
        numpy.random.seed(int(seed) % (2 ** 32))
    except Exception as error:
        core.PROC.warning("seed", "numpy.random.seed: %r" % (error,))
        return
    from . import seeds
    _part("seed", lambda: seeds.wrap(numpy.random, "seed", "numpy.random.seed"))


def _watch_torch_reseeds(torch):
    from . import seeds
    seeds.skip_calls_from(os.path.dirname(os.path.abspath(torch.__file__)))
    seeds.wrap(torch, "manual_seed", "torch.manual_seed")
    seeds.wrap(torch.random, "manual_seed", "torch.manual_seed")


def _on_torch(torch):
    settings = core.SETTINGS
    proc = core.PROC
    if settings.seed is not None:
        _part("seed", lambda: torch.manual_seed(int(settings.seed)))
        _part("seed", lambda: _watch_torch_reseeds(torch))
    try:
        proc.write({"type": "torch", "torch_version": torch.__version__,
                    "cuda_available": bool(torch.cuda.is_available()), "device_name": None})
    except Exception as error:
        proc.warning("torch", "reading torch's version: %r" % (error,))
    if proc.launcher:
        return
    if settings.threads is not None:
        _part("threads", lambda: _keep_threads(torch))
    from . import steps, loader, stages, script_choices
    _part("script_choices", lambda: script_choices.install(torch))
    _part("steps", lambda: steps.install(torch))
    _part("loader", lambda: loader.install(torch))
    if settings.stages:
        _part("stages", stages.install_fetchers)


def _keep_threads(torch):
    from . import threads
    threads.keep(torch, core.SETTINGS.threads)


# -- the end ------------------------------------------------------------------------------------
def _at_exit():
    proc = core.PROC
    if proc is None or proc.pid != os.getpid():
        return
    try:
        if proc.mp_child and not proc.process_line_written and proc.role == "main":
            proc.role = "child"  # a multiprocessing child that was no DataLoader worker
            proc.write_process_line()
        if "trainlab_job_recorder.steps" in sys.modules:
            from . import steps, stages
            steps.at_exit()
            stages.flush_main()
    except Exception as error:
        proc.warning("exit", "%r" % (error,))
    proc.end("exit")


_previous_sigterm = [None]


def _install_sigterm():
    import threading
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:
        return  # the process ignores SIGTERM: so it stays
    _previous_sigterm[0] = previous
    signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum, frame):
    proc = core.PROC
    try:
        if proc.role in ("main", "launcher", "child") and "trainlab_job_recorder.steps" in sys.modules:
            from . import stages
            stages.flush_main()
        proc.end("signal")
    except Exception:
        pass
    previous = _previous_sigterm[0]
    if callable(previous):
        return previous(signum, frame)
    # the default action, as without the recorder: the process ends by SIGTERM
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
