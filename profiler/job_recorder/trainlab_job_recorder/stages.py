"""Where a DataLoader worker's time goes (and the main process's with num_workers=0): exclusive
wall and thread-CPU time of named stages while a batch is made. The batch fetch is the root; the
Dataset's __getitem__, each transform a torchvision Compose calls, the user's callables and
functions the Dataset calls, file opens, PIL / torchvision.io / pyarrow / numpy reads and decodes,
and the collate_fn are stages nested in it; each stage's own time is its time less its nested
stages'. Handing the batch over (pickling it into shared memory for the result queue, in the
queue's feeder thread) is the handoff stage. Snapshots are written at most every 0.5 s and when
the worker ends. Workers get this through WorkerInit, chained before the script's worker_init_fn,
so forked and spawned workers alike install it."""
import functools
import os
import signal
import sys
import sysconfig
import threading
import time
import types

from . import core

perf_ns = time.perf_counter_ns
thread_ns = time.thread_time_ns
get_ident = threading.get_ident
SNAPSHOT_EVERY_NS = 500_000_000

CURRENT = [None]  # the Recorder of the batch being made, None outside a fetch
WORKER = [None]  # this worker's Recorder
MAIN = {}  # loader_id -> Recorder, in the main process (num_workers=0)
_installed = set()


class Recorder:
    def __init__(self, loader_id, role, worker_id):
        self.loader_id = loader_id
        self.role = role
        self.worker_id = worker_id
        self.thread = None
        self.stack = []
        self.stats = {}  # name -> [kind, wall_ns, cpu_ns, calls]
        self.busy_wall_ns = 0
        self.busy_cpu_ns = 0
        self.samples = 0
        self.batches = 0
        self.handoff = [0, 0, 0]  # wall, cpu, calls (feeder thread)
        self.last_snapshot_ns = 0
        self.residue_name = "fetch (sampler, batching)"
        self.transform_depth = 0  # > 0 inside a transform: its library calls are its own time

    def add(self, name, kind, wall, cpu, calls=1):
        entry = self.stats.get(name)
        if entry is None:
            entry = self.stats[name] = [kind, 0, 0, 0]
        entry[1] += wall
        entry[2] += cpu
        entry[3] += calls

    def snapshot(self):
        self.last_snapshot_ns = perf_ns()
        stages = [{"name": name, "kind": e[0], "wall_ns": e[1], "cpu_ns": e[2], "calls": e[3]}
                  for name, e in list(self.stats.items())]
        handoff = list(self.handoff)
        if handoff[2]:
            stages.append({"name": "handoff (pickle + queue put)", "kind": "handoff",
                           "wall_ns": handoff[0], "cpu_ns": handoff[1], "calls": handoff[2]})
        stages.sort(key=lambda s: -s["wall_ns"])
        core.PROC.write({
            "type": "stages", "pid": os.getpid(), "role": self.role, "worker_id": self.worker_id,
            "loader_id": self.loader_id, "at_ns": time.monotonic_ns(),
            "busy_wall_ns": self.busy_wall_ns + handoff[0], "busy_cpu_ns": self.busy_cpu_ns + handoff[1],
            "samples": self.samples, "batches": self.batches, "stages": stages})


# -- the stage wrapper --------------------------------------------------------------------------
def stage(function, name, kind, library=False):
    """function timed as stage `name` while a batch is being made on this thread. A library's
    read or decode (library=True) called inside a transform (PIL's convert in ColorJitter) is
    that transform's own time, not a stage."""
    if getattr(function, "_trainlab_stage", False):
        return function
    transform = kind == "transform"

    def timed(*args, **kwargs):
        rec = CURRENT[0]
        if rec is None or rec.thread != get_ident() or (library and rec.transform_depth):
            return function(*args, **kwargs)
        frame = [0, 0]
        stack = rec.stack
        stack.append(frame)
        if transform:
            rec.transform_depth += 1
        w0 = perf_ns()
        c0 = thread_ns()
        try:
            return function(*args, **kwargs)
        finally:
            wall = perf_ns() - w0
            cpu = thread_ns() - c0
            try:
                if transform:
                    rec.transform_depth -= 1
                stack.pop()
                parent = stack[-1]
                parent[0] += wall
                parent[1] += cpu
                entry = rec.stats.get(name)
                if entry is None:
                    entry = rec.stats[name] = [kind, 0, 0, 0]
                entry[1] += wall - frame[0]
                entry[2] += cpu - frame[1]
                entry[3] += 1
            except Exception:
                pass  # never into the user's code

    try:
        functools.update_wrapper(timed, function)
    except Exception:
        pass
    timed._trainlab_stage = True
    timed._trainlab_original = function
    return timed


class StageCallable:
    """A callable attribute of the user's Dataset (its transform, loader...) timed as a stage;
    other attributes go to the callable itself."""

    def __init__(self, target, name, kind):
        self._trainlab_target = target
        self._trainlab_call = stage(lambda *a, **k: target(*a, **k), name, kind)
        self._trainlab_name = name
        self._trainlab_kind = kind

    def __call__(self, *args, **kwargs):
        return self._trainlab_call(*args, **kwargs)

    def __getattr__(self, attribute):
        return getattr(self.__dict__["_trainlab_target"], attribute)

    def __reduce__(self):
        return (StageCallable, (self._trainlab_target, self._trainlab_name, self._trainlab_kind))


def _kind_from_name(name):
    lowered = name.lower()
    for words, kind in ((("aug", "transform", "crop", "flip", "jitter", "noise", "normal", "resize", "mix"), "transform"),
                        (("decode", "parse", "deserial"), "decode"),
                        (("read", "load", "open", "fetch"), "read")):
        if any(w in lowered for w in words):
            return kind
    return "dataset"


# -- library patches ----------------------------------------------------------------------------
_REPLACED = {}  # id(original) -> wrapper, to swap names the user's modules imported directly


def _patch(owner, attribute, name, kind):
    original = owner.__dict__.get(attribute) if isinstance(owner, type) else getattr(owner, attribute, None)
    if original is None or getattr(original, "_trainlab_stage", False):
        return
    wrapper = stage(original, name, kind, library=True)
    setattr(owner, attribute, wrapper)
    _REPLACED[id(original)] = (original, wrapper)


def install_libraries():
    """Wraps the readers, decoders and transforms of the libraries already imported. Idempotent."""
    import builtins
    if "builtins" not in _installed:
        _installed.add("builtins")
        _patch(builtins, "open", "open", "read")
    pil = sys.modules.get("PIL.Image")
    if pil is not None and "PIL" not in _installed:
        _installed.add("PIL")
        _patch(pil, "open", "PIL.Image.open", "read")
        _patch(pil.Image, "load", "PIL.Image.load", "decode")
        _patch(pil.Image, "convert", "PIL.Image.convert", "decode")
        import PIL.ImageFile as image_file  # PIL imports it at the first open; its load decodes
        _patch(image_file.ImageFile, "load", "PIL.ImageFile.load", "decode")
    tvio = sys.modules.get("torchvision.io")
    if tvio is not None and "torchvision.io" not in _installed:
        _installed.add("torchvision.io")
        for fn in ("decode_jpeg", "decode_png", "decode_image", "decode_webp", "decode_gif",
                   "decode_avif", "decode_heic", "read_image"):
            if hasattr(tvio, fn):
                _patch(tvio, fn, "torchvision.io." + fn, "decode")
        if hasattr(tvio, "read_file"):
            _patch(tvio, "read_file", "torchvision.io.read_file", "read")
    parquet = sys.modules.get("pyarrow.parquet")
    if parquet is not None and "pyarrow" not in _installed:
        _installed.add("pyarrow")
        _patch(parquet, "read_table", "pyarrow.parquet.read_table", "read")
        for method in ("read", "read_row_group", "read_row_groups"):
            _patch(parquet.ParquetFile, method, "pyarrow.parquet.ParquetFile." + method, "read")
        _patch(parquet.ParquetFile, "__init__", "pyarrow.parquet.ParquetFile (open)", "read")
    numpy = sys.modules.get("numpy")
    if numpy is not None and "numpy" not in _installed:
        _installed.add("numpy")
        _patch(numpy, "load", "numpy.load", "read")
    transforms = sys.modules.get("torchvision.transforms.transforms")
    if transforms is not None and "Compose" not in _installed:
        _installed.add("Compose")
        _patch_compose(transforms.Compose)
    container = sys.modules.get("torchvision.transforms.v2._container")
    if container is not None and "Compose.v2" not in _installed:
        _installed.add("Compose.v2")
        _patch_compose_v2(container.Compose)


_transform_names = {}


def _transform_name(transform):
    key = type(transform)
    name = _transform_names.get(key)
    if name is not None:
        return name
    if isinstance(transform, (types.FunctionType, types.MethodType, functools.partial)):
        target = transform.func if isinstance(transform, functools.partial) else transform
        return core.qualified_name(target)  # not cached: functions share one type
    module = getattr(key, "__module__", "") or ""
    if module.startswith("torchvision."):
        name = key.__name__
        if name == "Lambda":
            return "Lambda(%s)" % core.qualified_name(transform.lambd)
    else:
        name = core.qualified_name(key)
    _transform_names[key] = name
    return name


def _patch_compose(compose_class):
    original_call = compose_class.__call__

    def __call__(self, img):
        rec = CURRENT[0]
        if rec is None or rec.thread != get_ident():
            return original_call(self, img)
        stack = rec.stack
        for t in self.transforms:
            name = _transform_name(t)
            frame = [0, 0]
            stack.append(frame)
            rec.transform_depth += 1
            w0 = perf_ns()
            c0 = thread_ns()
            try:
                img = t(img)
            finally:
                wall = perf_ns() - w0
                cpu = thread_ns() - c0
                try:
                    rec.transform_depth -= 1
                    stack.pop()
                    parent = stack[-1]
                    parent[0] += wall
                    parent[1] += cpu
                    rec.add(name, "transform", wall - frame[0], cpu - frame[1])
                except Exception:
                    pass
        return img

    __call__.__wrapped__ = original_call
    compose_class.__call__ = __call__


def _patch_compose_v2(compose_class):
    """torchvision.transforms.v2.Compose.forward, each transform timed as in v1's Compose."""
    original_forward = compose_class.forward

    def forward(self, *inputs):
        rec = CURRENT[0]
        if rec is None or rec.thread != get_ident():
            return original_forward(self, *inputs)
        needs_unpacking = len(inputs) > 1
        stack = rec.stack
        outputs = None
        for transform in self.transforms:
            name = _transform_name(transform)
            frame = [0, 0]
            stack.append(frame)
            rec.transform_depth += 1
            w0 = perf_ns()
            c0 = thread_ns()
            try:
                outputs = transform(*inputs)
            finally:
                wall = perf_ns() - w0
                cpu = thread_ns() - c0
                try:
                    rec.transform_depth -= 1
                    stack.pop()
                    parent = stack[-1]
                    parent[0] += wall
                    parent[1] += cpu
                    rec.add(name, "transform", wall - frame[0], cpu - frame[1])
                except Exception:
                    pass
            inputs = outputs if needs_unpacking else (outputs,)
        return outputs

    forward.__wrapped__ = original_forward
    compose_class.forward = forward


# -- the fetch (the root of a batch) and the collate_fn -----------------------------------------
def install_fetchers():
    """Times each batch fetch as the root of its stages and wraps each fetcher's collate_fn."""
    if "fetch" in _installed:
        return
    _installed.add("fetch")
    from torch.utils.data._utils import fetch as fetch_module

    original_init = fetch_module._BaseDatasetFetcher.__init__

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        if collate_fn is not None and not getattr(collate_fn, "_trainlab_stage", False):
            try:
                collate_fn = stage(collate_fn, core.qualified_name(collate_fn), "collate")
            except Exception:
                pass
        original_init(self, dataset, auto_collation, collate_fn, drop_last)

    fetch_module._BaseDatasetFetcher.__init__ = __init__
    for cls in (fetch_module._MapDatasetFetcher, fetch_module._IterableDatasetFetcher):
        _patch_fetch(cls)


def _patch_fetch(cls):
    original_fetch = cls.fetch
    iterable = cls.__name__.startswith("_Iterable")

    def fetch(self, possibly_batched_index):
        rec = WORKER[0]
        if rec is None:
            rec = MAIN.get(getattr(self, "_trainlab_loader_id", None))
        if rec is None or CURRENT[0] is not None:
            return original_fetch(self, possibly_batched_index)
        root = [0, 0]
        rec.thread = get_ident()
        rec.stack = [root]
        CURRENT[0] = rec
        w0 = perf_ns()
        c0 = thread_ns()
        try:
            return original_fetch(self, possibly_batched_index)
        finally:
            CURRENT[0] = None
            end = perf_ns()
            wall = end - w0
            cpu = thread_ns() - c0
            _account_fetch(self, rec, iterable, possibly_batched_index, root, end, wall, cpu)

    fetch.__wrapped__ = original_fetch
    cls.fetch = fetch


def _account_fetch(self, rec, iterable, possibly_batched_index, root, end, wall, cpu):
    """The fetch's time into its recorder: busy time, the residue not under a named stage, and
    a snapshot when the last is 0.5 s old. Never raises."""
    try:
        rec.busy_wall_ns += wall
        rec.busy_cpu_ns += cpu
        if iterable:
            rec.residue_name = "%s.__iter__ (own code)" % type(self.dataset).__name__
            rec.add(rec.residue_name, "dataset", wall - root[0], cpu - root[1])
        else:
            rec.add(rec.residue_name, "other", wall - root[0], cpu - root[1])
        rec.batches += 1
        try:
            rec.samples += len(possibly_batched_index) if self.auto_collation else 1
        except TypeError:
            rec.samples += 1
        if end - rec.last_snapshot_ns >= SNAPSHOT_EVERY_NS:
            rec.snapshot()
    except Exception:
        pass


# -- the user's Dataset -------------------------------------------------------------------------
def _is_user_code(function):
    code = getattr(function, "__code__", None)
    if code is None:
        return False
    path = os.path.abspath(code.co_filename)
    if "site-packages" in path or "dist-packages" in path or path.startswith(_STDLIB) or path.startswith(_HERE):
        return False
    return not code.co_filename.startswith("<")


_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def attach_dataset(dataset, depth=0):
    """Stages in the Dataset: its class's __getitem__ (own code), its callable attributes, the
    user's functions its __getitem__ calls by name, the libraries' names its module imported."""
    if dataset is None or depth > 3:
        return
    cls = type(dataset)
    for method in ("__getitem__", "__getitems__"):
        function = getattr(cls, method, None)
        if function is None or getattr(function, "_trainlab_stage", False):
            continue
        module = getattr(function, "__module__", "") or ""
        if module == "torch.utils.data.dataset" and cls.__module__ != "torch.utils.data.dataset":
            continue  # the base class's NotImplementedError
        setattr(cls, method, stage(function, "%s.%s (own code)" % (cls.__name__, method), "dataset"))
        _wrap_called_functions(function)
        _swap_library_names(getattr(function, "__globals__", None))
    try:
        attributes = vars(dataset)
    except TypeError:
        attributes = {}
    for key, value in list(attributes.items()):
        if key in ("dataset", "datasets"):
            continue
        _wrap_attribute(dataset, key, value)
    inner = attributes.get("dataset")
    if inner is not None:
        attach_dataset(inner, depth + 1)
    for inner in attributes.get("datasets", None) or []:
        attach_dataset(inner, depth + 1)


def _wrap_attribute(dataset, key, value):
    if isinstance(value, (StageCallable, type, types.ModuleType, str, bytes)) or not callable(value):
        return
    if getattr(value, "_trainlab_stage", False):
        return
    if type(value).__name__ == "Compose":
        return  # the Compose patch names each transform in it
    typename = type(value).__module__ or ""
    if isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
        name = core.qualified_name(value.func if isinstance(value, functools.partial) else value)
    elif typename.startswith("torch") and not typename.startswith("torchvision"):
        return  # a module or tensor method: not a stage of its own
    elif typename == "builtins":
        return
    else:
        name = _transform_name(value)
    kind = "transform" if ("transform" in key or "aug" in key) else _kind_from_name(key + " " + name)
    try:
        dataset.__dict__[key] = StageCallable(value, name, kind)
    except Exception:
        pass


def _wrap_called_functions(function):
    """The user's own module-level functions that this function calls by name, as stages."""
    code = getattr(function, "__code__", None)
    namespace = getattr(function, "__globals__", None)
    if code is None or namespace is None:
        return
    for name in code.co_names:
        value = namespace.get(name)
        if isinstance(value, types.FunctionType) and not getattr(value, "_trainlab_stage", False) \
                and _is_user_code(value):
            namespace[name] = stage(value, core.qualified_name(value), _kind_from_name(name))


def _swap_library_names(namespace):
    """Names the user's module bound to a wrapped library function (from PIL.Image import open)."""
    if not namespace:
        return
    for name, value in list(namespace.items()):
        entry = _REPLACED.get(id(value))
        if entry is not None and entry[0] is value:
            namespace[name] = entry[1]


# -- where the recording starts -----------------------------------------------------------------
def attach_main(iterator, loader_id, dataset):
    """num_workers=0: the main process makes the batches; its stages are recorded the same way."""
    if loader_id is None:
        return
    try:
        install_fetchers()
        install_libraries()
        if loader_id not in MAIN:
            MAIN[loader_id] = Recorder(loader_id, "main", None)
            attach_dataset(dataset)
        fetcher = getattr(iterator, "_dataset_fetcher", None)
        if fetcher is not None:
            fetcher._trainlab_loader_id = loader_id
    except Exception as error:
        core.PROC.warning("stages", "stage attribution in the main process failed: %r" % (error,))


def flush_main():
    for rec in list(MAIN.values()):
        if rec.batches:
            try:
                rec.snapshot()
            except Exception:
                pass


class WorkerInit:
    """Chained before the script's worker_init_fn: the worker's process line, its stage
    attribution, its last snapshot and end line. Picklable, for spawned workers."""

    def __init__(self, user_init_fn, loader_id, stages_on):
        self.user_init_fn = user_init_fn
        self.loader_id = loader_id
        self.stages_on = stages_on

    def __call__(self, worker_id):
        try:
            _start_worker(worker_id, self.loader_id, self.stages_on)
        except Exception as error:
            if core.PROC is not None:
                core.PROC.warning("stages", "the worker's recorder did not start: %r" % (error,))
        if self.user_init_fn is not None:
            return self.user_init_fn(worker_id)
        return None


def _start_worker(worker_id, loader_id, stages_on):
    proc = core.PROC
    if proc is None:
        return  # a spawned worker whose environment has no TRAINLAB_JOB_DIR
    if proc.pid != os.getpid():
        proc.after_fork_in_child()
    proc.role = "worker"
    proc.worker_id = worker_id
    proc.loader_id = loader_id
    MAIN.clear()
    proc.write_process_line()
    sys.setprofile(None)  # a step-function watcher inherited through fork is the main loop's
    import multiprocessing.util
    multiprocessing.util.Finalize(None, _worker_exit, exitpriority=100)
    try:
        signal.signal(signal.SIGTERM, _worker_sigterm)
    except (ValueError, OSError):
        pass
    if not stages_on:
        return
    rec = Recorder(loader_id, "worker", worker_id)
    install_fetchers()
    install_libraries()
    import torch.utils.data
    info = torch.utils.data.get_worker_info()
    attach_dataset(info.dataset if info is not None else None)
    _time_handoff(rec)
    WORKER[0] = rec


def _time_handoff(rec):
    """The result queue pickles each batch (tensors moved into shared memory) in its feeder
    thread through multiprocessing.queues._ForkingPickler; that dumps is the handoff."""
    import multiprocessing.queues as queues
    original = queues._ForkingPickler
    if getattr(original, "_trainlab_timed", False):
        return
    dumps = original.dumps

    class TimedPickler(original):
        _trainlab_timed = True

        @classmethod
        def dumps(cls, obj, protocol=None):
            w0 = perf_ns()
            c0 = thread_ns()
            try:
                return dumps(obj, protocol)
            finally:
                handoff = rec.handoff
                handoff[0] += perf_ns() - w0
                handoff[1] += thread_ns() - c0
                handoff[2] += 1

    queues._ForkingPickler = TimedPickler


def _worker_exit(reason="exit"):
    rec = WORKER[0]
    if rec is not None:
        try:
            rec.snapshot()
        except Exception:
            pass
    core.PROC.end(reason)


def _worker_sigterm(signum, frame):
    _worker_exit("signal")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
