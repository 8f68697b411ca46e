"""The recorder's process state and its one output file: the settings read from the environment,
proc-<pid>.jsonl (one JSON object a line, each written by one os.write on an O_APPEND descriptor,
so a killed job keeps every line written and a signal handler can write without a lock), the
process line, warnings, the end line, and the process's role (main, DataLoader worker, forked
child, launcher) across fork."""
import json
import os
import platform
import sys
import time


class Settings:
    """What the runner asked for, from the TRAINLAB_JOB_* variables (docs/job_recorder.md)."""

    def __init__(self, env):
        self.job_dir = env.get("TRAINLAB_JOB_DIR", "")
        self.steps = _int(env.get("TRAINLAB_JOB_STEPS"), 0)
        self.warmup = _int(env.get("TRAINLAB_JOB_WARMUP"), 0)
        # The comparing commands (trainlab baseline/sweep/doctor -- COMMAND): past STEPS, the loop goes
        # on until its measured steps have lasted this long (a single process only: ranks must stop
        # at the same step), at most MAX_STEPS steps in all.
        self.min_measured_s = _float(env.get("TRAINLAB_JOB_MIN_MEASURED_S"), 0.0)
        self.max_steps = _int(env.get("TRAINLAB_JOB_MAX_STEPS"), 0)
        self.capture = None  # (first step, count)
        capture = env.get("TRAINLAB_JOB_CAPTURE", "off").strip()
        self.capture_error = None
        if capture and capture != "off":
            try:
                first, count = (int(part) for part in capture.split(":"))
                if first < 0 or count < 1:
                    raise ValueError
                self.capture = (first, count)
            except ValueError:
                self.capture_error = "TRAINLAB_JOB_CAPTURE=%r is not start:count; no capture" % capture
        self.stages = env.get("TRAINLAB_JOB_STAGES", "on").strip().lower() not in ("off", "0", "false", "no")
        self.step_function = env.get("TRAINLAB_JOB_STEP_FUNCTION", "").strip() or None
        self.seed = env.get("TRAINLAB_JOB_SEED", "").strip() or None
        self.loader = env.get("TRAINLAB_JOB_LOADER", "").strip() or None
        self.autocast = env.get("TRAINLAB_JOB_AUTOCAST", "off").strip().lower() or "off"
        self.compile = env.get("TRAINLAB_JOB_COMPILE", "off").strip() or "off"
        self.threads = None  # TRAINLAB_JOB_THREADS: torch's intra-op threads kept at this count
        self.threads_error = None
        threads = env.get("TRAINLAB_JOB_THREADS", "").strip()
        if threads:
            try:
                self.threads = int(threads)
                if self.threads < 1:
                    raise ValueError
            except ValueError:
                self.threads = None
                self.threads_error = "TRAINLAB_JOB_THREADS=%r is not a thread count >= 1; left out" % threads


def _float(text, default):
    try:
        value = float(text) if text not in (None, "") else default
        return value if value >= 0 and value == value else default
    except ValueError:
        return default


def _int(text, default):
    try:
        return max(0, int(text)) if text not in (None, "") else default
    except ValueError:
        return default


class Process:
    """This process's identity and output file. After a fork the child gets its own file."""

    def __init__(self, settings):
        self.settings = settings
        self.pid = os.getpid()
        self.fd = None
        self.role = "main"
        self.worker_id = None
        self.loader_id = None
        self.process_line_written = False
        self.ended = False
        self.rank = _int(os.environ.get("RANK"), 0)
        self.world_size = _int(os.environ.get("WORLD_SIZE"), 1) or 1
        self.local_rank = _int(os.environ.get("LOCAL_RANK"), 0)
        argv = list(getattr(sys, "orig_argv", sys.argv))
        self.argv = argv
        self.mp_child = "--multiprocessing-fork" in argv  # spawned by multiprocessing (e.g. a spawned worker)
        self.launcher = _is_launcher(argv)
        # A Python process started by a recorded one (a subprocess, e.g. torch.compile's workers)
        # is a "child"; torchrun's ranks, started by the launcher, are mains.
        parent = os.environ.get("TRAINLAB_JOB_PARENT")
        if self.launcher:
            self.role = "launcher"
            os.environ["TRAINLAB_JOB_PARENT"] = "launcher"
        elif not self.mp_child:
            if parent and parent != "launcher":
                self.role = "child"
            os.environ["TRAINLAB_JOB_PARENT"] = str(self.pid)
        self.forking_workers = False  # set in the parent while DataLoader workers are forked
        self.pending = []
        self.start_ns = time.monotonic_ns()

    # -- output ---------------------------------------------------------------------------------
    def _open(self):
        path = os.path.join(self.settings.job_dir, "proc-%d.jsonl" % self.pid)
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)

    def write(self, record):
        """Appends one line. Never raises."""
        try:
            if self.pid != os.getpid():  # a forked child that the fork hook did not see
                self.after_fork_in_child()
            if not self.process_line_written and record.get("type") != "process":
                if self.mp_child and self.role in ("main", "worker"):
                    self.pending.append(record)  # a spawned child: kept until it says what it is
                    return
                self.write_process_line()
            if self.fd is None:
                self._open()
            line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
            os.write(self.fd, line.encode("utf-8", "replace"))
        except Exception:
            pass

    def write_process_line(self):
        if self.process_line_written:
            return
        self.process_line_written = True
        pending, self.pending = self.pending, []
        torch = sys.modules.get("torch")
        self.write({
            "type": "process", "pid": self.pid, "ppid": os.getppid(), "role": self.role,
            "worker_id": self.worker_id, "loader_id": self.loader_id, "rank": self.rank,
            "world_size": self.world_size, "local_rank": self.local_rank, "argv": self.argv,
            "python": sys.executable, "python_version": platform.python_version(),
            "torch_version": getattr(torch, "__version__", None) if torch else None,
            "cuda_available": None, "device_name": None, "start_ns": self.start_ns})
        for record in pending:
            self.write(record)

    def warning(self, part, message):
        self.write({"type": "warning", "part": part, "message": str(message)[:2000]})

    def end(self, reason):
        if self.ended or self.pid != os.getpid():
            return
        self.ended = True
        self.write({"type": "end", "reason": reason, "at_ns": time.monotonic_ns()})

    # -- fork -----------------------------------------------------------------------------------
    def after_fork_in_child(self):
        """A forked child writes its own file: a DataLoader worker once its worker init runs
        (worker.py writes the process line there), any other fork at once as role "child"."""
        parent = self.pid
        self.pid = os.getpid()
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
        self.fd = None
        self.ended = False
        self.process_line_written = False
        self.forked_from = parent
        self.start_ns = time.monotonic_ns()
        self.pending = []
        if self.forking_workers:
            self.role = "worker"  # its process line waits for the worker id
            self.forking_workers = False
        else:
            self.role = "child"
            self.write_process_line()


def _is_launcher(argv):
    """torchrun's agent (or torch.distributed.launch): it starts the ranks and trains nothing."""
    names = [os.path.basename(a) for a in argv[:3]]
    if "torchrun" in names:
        return True
    for i, arg in enumerate(argv[:-1]):
        if arg == "-m" and argv[i + 1] in ("torch.distributed.run", "torch.distributed.launch"):
            return True
    return False


def path_as_given(path):
    """A source path as the command gave it: the script's own path as in argv (relative when it
    was), a path under the working folder relative to it, else as it is."""
    try:
        script = sys.argv[0] if sys.argv else ""
        if script and os.path.abspath(script) == os.path.abspath(path):
            return script
        cwd = os.getcwd()
        if os.path.abspath(path).startswith(cwd + os.sep):
            return os.path.relpath(path, cwd)
    except Exception:
        pass
    return path


def user_call_site(frame, skip_dirs):
    """(file, line) of the first frame from `frame` outwards whose file lies in none of skip_dirs
    (absolute folders: torch's, the recorder's), the file as path_as_given gives it; (None, None)
    when there is none."""
    prefixes = tuple(d.rstrip(os.sep) + os.sep for d in skip_dirs)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(prefixes):
            return (path_as_given(frame.f_code.co_filename), frame.f_lineno)
        frame = frame.f_back
    return (None, None)


RECORDER_DIR = os.path.dirname(os.path.abspath(__file__))


def qualified_name(obj):
    """module.qualname of a function, class or the class of an instance; the module left out
    for __main__ (the user's script)."""
    target = obj
    if not hasattr(obj, "__qualname__"):
        target = type(obj)
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(obj).__name__
    if module in ("", "__main__", "builtins"):
        return name
    return module + "." + name
