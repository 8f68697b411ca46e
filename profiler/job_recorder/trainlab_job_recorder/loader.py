"""The user's DataLoaders: each construction recorded (the user's file and line, the settings in
effect), TRAINLAB_JOB_LOADER's settings put in at the construction of the training loader, and
each iterator tagged with its loader's id, its result queue timed for "no batch ready", its
workers given the recorder's worker start (worker_init_fn chained)."""
import inspect
import json
import os
import sys
import time

from . import core
from . import steps

_LOADER_KEYS = ("num_workers", "prefetch_factor", "pin_memory", "persistent_workers")
_WHAT_IF_KEYS = ("decoded_cache",)  # not a DataLoader argument: the doctor's bound on the Dataset's cost
_next_loader_id = [0]
_override = [None]  # parsed TRAINLAB_JOB_LOADER, or None


def install(torch):
    from torch.utils.data import dataloader

    settings = core.SETTINGS
    if settings.loader:
        _override[0] = _parse_override(settings.loader)
    loader_class = dataloader.DataLoader
    original_init = loader_class.__init__
    signature = inspect.signature(original_init)
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    recorder_dir = os.path.dirname(os.path.abspath(__file__))

    def __init__(self, *args, **kwargs):
        if getattr(self, "_trainlab_loader_id", None) is not None:  # a subclass's second call
            return original_init(self, *args, **kwargs)
        site = None
        overridden = {}
        try:
            site = _call_site(torch_dir, recorder_dir)
            if _override[0]:
                args, kwargs, overridden = _apply_override(signature, self, args, kwargs, site)
        except Exception as error:
            core.PROC.warning("loader", "reading the DataLoader call failed: %r" % (error,))
        original_init(self, *args, **kwargs)
        try:
            _record(self, site, overridden)
        except Exception as error:
            core.PROC.warning("loader", "recording the DataLoader failed: %r" % (error,))

    __init__.__wrapped__ = original_init
    __init__.__signature__ = signature
    loader_class.__init__ = __init__

    original_get_iterator = loader_class._get_iterator

    def _get_iterator(self):
        proc = core.PROC
        proc.forking_workers = self.num_workers > 0
        try:
            iterator = original_get_iterator(self)
        finally:
            proc.forking_workers = False
        try:
            _tag_iterator(self, iterator)
        except Exception as error:
            proc.warning("loader", "tagging the DataLoader iterator failed: %r" % (error,))
        return iterator

    _get_iterator.__wrapped__ = original_get_iterator
    loader_class._get_iterator = _get_iterator


def _parse_override(text):
    try:
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
    except ValueError as error:
        core.PROC.write({"type": "override_failed", "part": "loader",
                         "message": "TRAINLAB_JOB_LOADER is not a JSON object (%s)" % error})
        return None
    unknown = sorted(set(value) - set(_LOADER_KEYS) - set(_WHAT_IF_KEYS) - {"at"})
    if unknown:
        core.PROC.warning("loader", "TRAINLAB_JOB_LOADER: unknown keys %s left out" % ", ".join(unknown))
    return value


def _call_site(torch_dir, recorder_dir):
    return core.user_call_site(sys._getframe(2), (torch_dir, recorder_dir))


def _shuffles(arguments):
    if arguments.get("shuffle"):
        return True
    from torch.utils.data import RandomSampler
    samplers = [arguments.get("sampler"), getattr(arguments.get("batch_sampler"), "sampler", None)]
    for sampler in samplers:
        if isinstance(sampler, RandomSampler) or getattr(sampler, "shuffle", False) is True:
            return True
    return False


def _apply_override(signature, loader, args, kwargs, site):
    """Puts TRAINLAB_JOB_LOADER's settings into this construction when it is the training loader:
    the one at "at" (file:line) when given, else any loader that shuffles and the process's first
    loader. Returns (args, kwargs, {key: the script's own value})."""
    override = _override[0]
    try:
        bound = signature.bind(loader, *args, **kwargs)
    except TypeError:
        return args, kwargs, {}  # the script's own call is wrong: let DataLoader say so
    arguments = bound.arguments
    at = override.get("at")
    if at:
        file, _, line = str(at).rpartition(":")
        if not site or site[0] is None or str(site[1]) != line or not (
                os.path.abspath(site[0]) == os.path.abspath(file) or os.path.basename(site[0]) == os.path.basename(file)):
            return args, kwargs, {}
    elif not (_shuffles(arguments) or _next_loader_id[0] == 0):
        return args, kwargs, {}

    def current(key):
        if key in arguments:
            return arguments[key]
        return signature.parameters[key].default

    wanted = {k: override[k] for k in _LOADER_KEYS if k in override}
    workers = int(wanted.get("num_workers", current("num_workers")) or 0)
    overridden = {}
    for key, value in wanted.items():
        if workers == 0 and key == "prefetch_factor" and value is not None:
            core.PROC.warning("loader", "TRAINLAB_JOB_LOADER: prefetch_factor needs num_workers > 0; left out")
            continue
        if workers == 0 and key == "persistent_workers" and value:
            core.PROC.warning("loader", "TRAINLAB_JOB_LOADER: persistent_workers needs num_workers > 0; left out")
            continue
        if current(key) != value:
            overridden[key] = current(key)
            arguments[key] = value
    if override.get("decoded_cache"):
        cached = _decoded_cache(current("dataset"), override["decoded_cache"])
        if cached is not None:
            overridden["dataset"] = core.qualified_name(type(current("dataset")))
            arguments["dataset"] = cached
    if workers == 0:  # the script's own worker-only settings would now be refused
        if current("prefetch_factor") is not None:
            overridden.setdefault("prefetch_factor", current("prefetch_factor"))
            arguments["prefetch_factor"] = None
        if current("persistent_workers"):
            overridden.setdefault("persistent_workers", current("persistent_workers"))
            arguments["persistent_workers"] = False
    return bound.args[1:], bound.kwargs, overridden


def _record(loader, site, overridden):
    loader_id = _next_loader_id[0]
    _next_loader_id[0] += 1
    loader._trainlab_loader_id = loader_id
    dataset = loader.dataset
    proc = core.PROC
    proc.write({
        "type": "loader", "loader_id": loader_id, "file": site[0] if site else None,
        "line": site[1] if site else None, "num_workers": loader.num_workers,
        "prefetch_factor": loader.prefetch_factor, "pin_memory": bool(loader.pin_memory),
        "persistent_workers": bool(loader.persistent_workers), "batch_size": loader.batch_size,
        "dataset": core.qualified_name(type(dataset)), "collate_fn": core.qualified_name(loader.collate_fn),
        "overridden": overridden, "training": None})
    if loader.num_workers > 0:
        from . import stages
        loader.worker_init_fn = stages.WorkerInit(loader.worker_init_fn, loader_id, core.SETTINGS.stages)


def _tag_iterator(loader, iterator):
    loader_id = getattr(loader, "_trainlab_loader_id", None)
    iterator._trainlab_loader_id = loader_id
    if loader.num_workers == 0:
        if core.SETTINGS.stages:
            from . import stages
            stages.attach_main(iterator, loader_id, loader.dataset)
        return
    queue = getattr(iterator, "_data_queue", None)
    if queue is None or getattr(queue, "_trainlab_timed", False):
        return
    not_ready = steps.NOT_READY_NS
    clock = time.monotonic_ns
    if hasattr(queue, "_poll"):  # multiprocessing queue: the wait is in poll, unpickling after it
        original_poll = queue._poll

        def _poll(*args):
            t0 = clock()
            try:
                return original_poll(*args)
            finally:
                not_ready[0] += clock() - t0

        queue._poll = _poll
    elif hasattr(queue, "get"):  # queue.Queue fed by the pin-memory thread
        original_get = queue.get

        def get(*args, **kwargs):
            t0 = clock()
            try:
                return original_get(*args, **kwargs)
            finally:
                not_ready[0] += clock() - t0

        queue.get = get
    queue._trainlab_timed = True


class DecodedCache(object):
    """The what-if of a decoded cache: N samples of the user's Dataset read (decoded, transformed)
    once, before the loader exists, and served again for every index (index i gets sample i mod N).
    What the steps then pay for data is the loader's own cost (workers, collation, transfer): a
    bound on what caching the Dataset's work could buy, since it also freezes the random transforms
    of the cached samples. A map-style Dataset (len and indexing) of the inner one's length;
    attributes it lacks are the inner Dataset's (e.g. .classes)."""

    def __init__(self, inner, samples, length):
        self.inner = inner
        self.samples = samples
        self.length = length

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        return self.samples[int(index) % len(self.samples)]

    def __getattr__(self, name):
        if name.startswith("__") or name in ("inner", "samples", "length"):
            raise AttributeError(name)
        return getattr(self.__dict__["inner"], name)


def _decoded_cache(dataset, wanted):
    """The DecodedCache of `wanted` samples of `dataset` spread over its indices, and a
    decoded_cache line; None, with an override_failed line (part decoded_cache), where the Dataset
    cannot be indexed or a sample cannot be read."""
    proc = core.PROC

    def failed(message):
        proc.write({"type": "override_failed", "part": "decoded_cache", "message": message})
        return None

    try:
        wanted = int(wanted)
    except (TypeError, ValueError):
        return failed("decoded_cache is not a number of samples: %r" % (wanted,))
    from torch.utils.data import IterableDataset
    if isinstance(dataset, IterableDataset) or not hasattr(dataset, "__getitem__"):
        return failed("the Dataset (%s) is iterable: there is no index to serve cached samples by"
                      % core.qualified_name(type(dataset)))
    try:
        length = len(dataset)
    except TypeError:
        return failed("the Dataset (%s) has no len()" % core.qualified_name(type(dataset)))
    if length <= 0:
        return failed("the Dataset is empty")
    count = max(1, min(wanted, length))
    start = time.perf_counter()
    samples = []
    for k in range(count):
        index = k * length // count
        try:
            samples.append(dataset[index])
        except Exception as error:
            return failed("reading sample %d of the Dataset failed: %r" % (index, error))
    proc.write({"type": "decoded_cache", "samples": count, "dataset_length": length,
                "fill_s": round(time.perf_counter() - start, 4),
                "dataset": core.qualified_name(type(dataset))})
    return DecodedCache(dataset, samples, length)
