"""Steps of the user's training loop, found without changing its code: a step ends at each
optimizer step (torch.optim's global step hooks) or at each return of the function named by
TRAINLAB_JOB_STEP_FUNCTION. Per step: the wait inside the training DataLoader's iterator (split
into "no batch ready", the time the loop's thread did not run inside it: blocked on the workers'
result queue, on a worker's handover of the batch, or waiting for a CPU; and receiving it, the
thread's own CPU time there: unpickling, rebuilding the tensors), the
trained module's top-level forward time, optimizer time, process CPU time. Also the
torch.profiler capture window over chosen steps, and the clean stop after TRAINLAB_JOB_STEPS.
Backward time is the wall time inside torch.autograd.backward (Tensor.backward calls it)."""
import functools
import os
import time
import weakref

from . import core

monotonic_ns = time.monotonic_ns
process_time_ns = time.process_time_ns
thread_time_ns = time.thread_time_ns

# Time blocked waiting for a batch no worker had ready, summed by the wrappers of the result
# queues (loader.py); __next__ reads the difference around its call.
NOT_READY_NS = [0]


class StepState:
    def __init__(self):
        self.steps_done = 0
        self.measured_ns = 0  # the measured (post warm-up) steps' wall time, for TRAINLAB_JOB_MIN_MEASURED_S
        self.step_start_ns = None
        self.step_cpu_start_ns = 0
        self.data = {}  # loader_id -> [wait_ns, not_ready_ns, batches, samples]
        # loader_id -> the wait for the first batch of a later iterator of that loader (an epoch
        # start: workers that are not persistent start again), this step; reset with data.
        self.epoch_start_wait = {}
        self.iterators = {}  # loader_id -> iterators that gave a batch so far (epochs begun)
        self.forward_ns = 0
        self.forward_calls = 0
        self.forward_by_module = []  # (id(module), ns) until the trained module is known
        self.optimizer_ns = 0
        self.backward_ns = 0
        self.opt_start_ns = {}
        self.primary_optimizer = None  # id of the optimizer whose steps are the loop's steps
        self.training_loader_id = None
        self.trained_module = None  # weakref
        self.trained_module_id = None
        self.top_modules = {}  # id -> weakref of top-level modules called before identification
        self.depth = 0
        self.fw_start_ns = 0
        self.fw_module = None
        self.global_hooks = []
        self.optimizers = []  # weakrefs, from Optimizer.__init__
        self.step_function_mode = False
        self.profiler = None
        self.capture_first_step = None
        self.capture_steps = 0
        self.module_hooks_installed = False


STATE = StepState()
_torch = None


def install(torch):
    """Installs the step hooks. Called once torch is imported."""
    global _torch
    _torch = torch
    import torch.optim.optimizer as optimizer_module
    from torch.utils.data import dataloader

    settings = core.SETTINGS
    STATE.step_function_mode = bool(settings.step_function)
    optimizer_module.register_optimizer_step_pre_hook(_optimizer_pre_hook)
    optimizer_module.register_optimizer_step_post_hook(_optimizer_post_hook)

    original_init = optimizer_module.Optimizer.__init__

    def optimizer_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        try:
            STATE.optimizers.append(weakref.ref(self))
        except Exception:
            pass

    optimizer_init.__wrapped__ = original_init
    optimizer_module.Optimizer.__init__ = optimizer_init

    base_iter = dataloader._BaseDataLoaderIter
    single_iter = dataloader._SingleProcessDataLoaderIter
    original_next = base_iter.__next__

    def __next__(self):
        state = STATE
        t0 = monotonic_ns()
        cpu0 = thread_time_ns()
        not_ready0 = NOT_READY_NS[0]
        if state.step_start_ns is None:
            _begin_first_step(t0)
        batch = None
        try:
            batch = original_next(self)
            return batch
        finally:
            try:
                t1 = monotonic_ns()
                loader_id = getattr(self, "_trainlab_loader_id", None)
                acc = state.data.get(loader_id)
                if acc is None:
                    acc = state.data[loader_id] = [0, 0, 0, 0]
                acc[0] += t1 - t0
                if isinstance(self, single_iter):
                    acc[1] += t1 - t0  # made on demand: no batch was ready
                else:
                    # Receiving a batch costs the loop's thread CPU; the rest of the wall time it did
                    # not run: the queue had no batch, or the worker still handed it over (a tensor's
                    # shared memory passes through the worker's own thread, which waits for the
                    # worker's GIL: on a busy worker that is most of the wait).
                    blocked = (t1 - t0) - (thread_time_ns() - cpu0)
                    acc[1] += min(t1 - t0, max(NOT_READY_NS[0] - not_ready0, blocked))
                if batch is not None:
                    acc[2] += 1
                    n = _leading_dim(batch)
                    if n:
                        acc[3] += n
                    # The iterator's first batch of an epoch: _num_yielded is 1 after it (a persistent
                    # workers' iterator is reset, not made again, at each epoch).
                    if getattr(self, "_num_yielded", None) == 1:
                        begun = state.iterators.get(loader_id, 0) + 1
                        state.iterators[loader_id] = begun
                        if begun > 1:
                            state.epoch_start_wait[loader_id] = t1 - t0
            except Exception:
                pass

    __next__.__wrapped__ = original_next
    base_iter.__next__ = __next__

    original_backward = torch.autograd.backward

    def backward(*args, **kwargs):
        t0 = monotonic_ns()
        if STATE.step_start_ns is None:
            _begin_first_step(t0)  # a forward the global hooks did not see (a module compiled in place)
        try:
            return original_backward(*args, **kwargs)
        finally:
            STATE.backward_ns += monotonic_ns() - t0

    backward.__wrapped__ = original_backward
    backward.__doc__ = original_backward.__doc__
    torch.autograd.backward = backward  # Tensor.backward calls torch.autograd.backward

    nn_module = torch.nn.modules.module
    STATE.global_hooks = [
        nn_module.register_module_forward_pre_hook(unseen_by_compile(_global_forward_pre_hook)),
        nn_module.register_module_forward_hook(unseen_by_compile(_global_forward_hook), always_call=True),
    ]
    if settings.step_function:
        _watch_step_function(settings.step_function)


def unseen_by_compile(hook):
    """The hook as torch.compile sees it: nothing. A module hook runs inside a compiled region
    (the submodules of a compiled forward, a module compiled in place by Module.compile), where
    torch.compile would trace it: its clock calls would break the user's graph at every module.
    torch.compiler.is_compiling() is True while tracing, so the traced hook is empty; eagerly it
    runs as it is."""
    is_compiling = getattr(getattr(_torch, "compiler", None), "is_compiling", None)
    if is_compiling is None:
        return hook

    @functools.wraps(hook)
    def hook_outside_compile(*args):
        if is_compiling():
            return None
        return hook(*args)

    return hook_outside_compile


def note_compiled_module(module):
    """A module compiled in place (Module.compile): the global hooks, inside its compiled call, do
    not see it, so it is offered here as a top-level module the optimizer may train."""
    try:
        STATE.top_modules.setdefault(id(module), weakref.ref(module))
    except Exception:
        pass


def around_call(module, before, after):
    """Runs before(module) and after(module) around each call of the module, eagerly: forward
    hooks, or, for a module compiled in place (Module.compile), around its compiled call, since its
    hooks run inside the compiled region and torch.compile would trace them."""
    compiled_call = getattr(module, "_compiled_call_impl", None)
    if compiled_call is None:
        module.register_forward_pre_hook(lambda mod, args: before(mod), prepend=True)
        module.register_forward_hook(lambda mod, args, output: after(mod), always_call=True)
        return

    @functools.wraps(compiled_call)
    def call(*args, **kwargs):
        before(module)
        try:
            return compiled_call(*args, **kwargs)
        finally:
            after(module)

    module._compiled_call_impl = call


def _leading_dim(batch):
    tensor_type = _torch.Tensor
    for _ in range(4):
        if isinstance(batch, tensor_type):
            return int(batch.shape[0]) if batch.dim() > 0 else None
        if isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        elif isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        else:
            return None
    return None


def _begin_first_step(now_ns):
    STATE.step_start_ns = now_ns
    STATE.step_cpu_start_ns = process_time_ns()
    proc = core.PROC
    if core.SETTINGS.threads is not None and proc.mp_child and proc.role in ("main", "child"):
        try:  # a spawned process that trains (torch.multiprocessing.spawn): no DataLoader worker
            from . import threads
            threads.keep(_torch, core.SETTINGS.threads, spawned_trainer=True)
        except Exception as error:
            proc.warning("threads", "threads: %r" % (error,))
    _capture_at_step_start(0)


# -- forward time of the trained module ---------------------------------------------------------
def _global_forward_pre_hook(module, args):
    state = STATE
    state.depth += 1
    if state.depth != 1:
        return None
    try:
        if state.step_start_ns is None:
            _begin_first_step(monotonic_ns())
        key = id(module)
        if key not in state.top_modules:
            state.top_modules[key] = weakref.ref(module)
            if state.trained_module is None and state.optimizers and _trains(module):
                _identify_trained_module(module, in_forward=True)
        state.fw_module = key
        state.fw_start_ns = monotonic_ns()
    except Exception:
        pass
    return None


def _global_forward_hook(module, args, output):
    state = STATE
    try:
        if state.depth == 1 and id(module) == state.fw_module:
            state.forward_by_module.append((state.fw_module, monotonic_ns() - state.fw_start_ns))
    except Exception:
        pass
    state.depth = max(0, state.depth - 1)
    return None


def _optimizer_param_ids(optimizer):
    ids = getattr(optimizer, "_trainlab_param_ids", None)
    if ids is None:
        ids = {id(p) for group in optimizer.param_groups for p in group["params"]}
        try:
            optimizer._trainlab_param_ids = ids
        except Exception:
            pass
    return ids


def _trains(module, optimizers=None):
    """True when an optimizer holds this module's parameters."""
    first = next(iter(module.parameters()), None)
    if first is None:
        return False
    for ref in optimizers or STATE.optimizers:
        opt = ref() if isinstance(ref, weakref.ref) else ref
        if opt is not None and id(first) in _optimizer_param_ids(opt):
            return True
    return False


def _identify_trained_module(module, in_forward=False):
    """The module whose parameters the optimizer trains: its own hooks time its forward from now
    on (the global hooks go), and the autocast / compile overrides apply to it."""
    state = STATE
    state.trained_module = weakref.ref(module)
    state.trained_module_id = id(module)
    try:
        from . import overrides
        overrides.apply_to_trained_module(module, in_forward)
    except Exception as error:
        core.PROC.warning("overrides", "could not apply to the trained module: %r" % (error,))


def _identify_busiest_module(state):
    totals = {}
    for key, ns in state.forward_by_module:
        totals[key] = totals.get(key, 0) + ns
    for key in sorted(totals, key=totals.get, reverse=True):
        ref = state.top_modules.get(key)
        module = ref() if ref else None
        if module is not None and next(iter(module.parameters()), None) is not None:
            _identify_trained_module(module)
            return


def _switch_to_module_hooks():
    state = STATE
    if state.module_hooks_installed:
        return
    state.module_hooks_installed = True
    for handle in state.global_hooks:
        handle.remove()
    state.global_hooks = []
    state.depth = 0
    module = state.trained_module() if state.trained_module else None
    if module is None:
        return
    depth = [0, 0]

    def pre(mod):
        depth[0] += 1
        if depth[0] == 1:
            depth[1] = monotonic_ns()

    def post(mod):
        if depth[0] == 1:
            state.forward_ns += monotonic_ns() - depth[1]
            state.forward_calls += 1
        depth[0] = max(0, depth[0] - 1)

    around_call(module, unseen_by_compile(pre), unseen_by_compile(post))


# -- step boundaries ----------------------------------------------------------------------------
def _optimizer_pre_hook(optimizer, args, kwargs):
    try:
        now = monotonic_ns()
        if STATE.step_start_ns is None:
            _begin_first_step(now)
        STATE.opt_start_ns[id(optimizer)] = now
    except Exception:
        pass
    return None


def _optimizer_post_hook(optimizer, args, kwargs):
    state = STATE
    stop = False
    try:
        now = monotonic_ns()
        state.optimizer_ns += now - state.opt_start_ns.pop(id(optimizer), now)
        if state.primary_optimizer is None:
            state.primary_optimizer = id(optimizer)
            if state.trained_module is None:
                for ref in list(state.top_modules.values()):
                    module = ref()
                    if module is not None and _trains(module, [optimizer]):
                        _identify_trained_module(module)
                        break
        if state.step_function_mode or id(optimizer) != state.primary_optimizer:
            return None
        stop = _end_step(now)
    except Exception as error:
        core.PROC.warning("steps", "step bookkeeping failed: %r" % (error,))
    if stop:
        raise SystemExit(0)
    return None


def _end_step(now):
    """Writes the step line; returns True when TRAINLAB_JOB_STEPS is reached."""
    state = STATE
    proc = core.PROC
    settings = core.SETTINGS
    step = state.steps_done
    if state.training_loader_id is None and state.data:
        best = max(state.data.items(), key=lambda kv: kv[1][2])
        if best[1][2] > 0 and best[0] is not None:
            state.training_loader_id = best[0]
            proc.write({"type": "loader_role", "loader_id": best[0], "training": True})
    acc = state.data.get(state.training_loader_id) if state.training_loader_id is not None else None
    if acc is None:
        acc = [0, 0, 0, 0]
    if state.trained_module is None and state.forward_by_module and not state.optimizers:
        _identify_busiest_module(state)  # a step function without optimizer: the model it runs
    if not state.module_hooks_installed:
        forward = None
        if state.trained_module_id is not None:
            forward = sum(ns for key, ns in state.forward_by_module if key == state.trained_module_id)
    else:
        forward = state.forward_ns if (state.forward_calls or state.trained_module is not None) else None
    start = state.step_start_ns if state.step_start_ns is not None else now
    line = {
        "type": "step", "step": step, "start_ns": start, "end_ns": now,
        "warmup": step < settings.warmup, "data_wait_ns": acc[0], "data_not_ready_ns": acc[1],
        "data_receive_ns": acc[0] - acc[1], "batches": acc[2], "samples": acc[3] or None,
        "forward_ns": forward, "backward_ns": state.backward_ns, "optimizer_ns": state.optimizer_ns,
        "cpu_ns": process_time_ns() - state.step_cpu_start_ns, "rank": proc.rank}
    epoch_start = state.epoch_start_wait.get(state.training_loader_id) if state.training_loader_id is not None else None
    if epoch_start is not None:
        line["epoch_start_wait_ns"] = epoch_start
    proc.write(line)
    if step == 0:
        _device_line()
        _threads_line()
    state.steps_done = step + 1
    state.data = {}
    state.epoch_start_wait = {}
    state.forward_ns = 0
    state.forward_calls = 0
    state.forward_by_module = []
    state.optimizer_ns = 0
    state.backward_ns = 0
    if not state.module_hooks_installed and (state.trained_module is not None or step >= 2):
        _switch_to_module_hooks()
    _capture_at_step_end(step)
    state.step_start_ns = monotonic_ns()
    state.step_cpu_start_ns = process_time_ns()
    if step >= settings.warmup:
        state.measured_ns += now - start
    if settings.steps and state.steps_done >= settings.steps and _measured_long_enough(state, settings, proc):
        finish_capture("steps_reached")
        from . import stages
        stages.flush_main()
        proc.end("steps_reached")
        return True
    _capture_at_step_start(state.steps_done)
    return False


def _measured_long_enough(state, settings, proc):
    if settings.min_measured_s <= 0 or proc.world_size > 1:
        return True
    if settings.max_steps and state.steps_done >= settings.max_steps:
        return True
    return state.measured_ns >= settings.min_measured_s * 1e9


def _device_line():
    """The device the script trains on, once it has initialised CUDA itself (the recorder never
    initialises it)."""
    torch = _torch
    name = None
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            name = torch.cuda.get_device_name(torch.cuda.current_device())
    except Exception:
        pass
    core.PROC.write({"type": "torch", "torch_version": torch.__version__,
                     "cuda_available": bool(torch.cuda.is_available()), "device_name": name})


def _threads_line():
    """torch's intra-op and inter-op thread counts as the training process runs them, at the end
    of its first step (after the script's own torch.set_num_threads, if any)."""
    torch = _torch
    try:
        core.PROC.write({"type": "threads", "intra_op": int(torch.get_num_threads()),
                         "inter_op": int(torch.get_num_interop_threads()), "at_ns": monotonic_ns()})
    except Exception as error:
        core.PROC.warning("steps", "reading torch's thread counts: %r" % (error,))


# -- a named step function ----------------------------------------------------------------------
def _watch_step_function(spec):
    """Replaces module:qualname by a wrapper at its first call: until then a profile function
    (sys.setprofile, main thread) looks for that call; the first call itself is timed from its
    call to its return event, then the profile function goes."""
    import sys
    module_name, _, qualname = spec.partition(":")
    if not module_name or not qualname:
        core.PROC.warning("steps", "TRAINLAB_JOB_STEP_FUNCTION=%r is not module:qualname" % spec)
        return
    parts = qualname.split(".")

    def try_wrap():
        module = sys.modules.get(module_name)
        if module is None:
            return False
        owner = module
        for part in parts[:-1]:
            owner = getattr(owner, part, None)
            if owner is None:
                return False
        function = owner.__dict__.get(parts[-1]) if isinstance(owner, type) else getattr(owner, parts[-1], None)
        if function is None or not callable(function):
            return False
        if getattr(function, "_trainlab_step_function", False):
            return True
        setattr(owner, parts[-1], _step_function_wrapper(function))
        return True

    if try_wrap():
        return
    first = {}

    def profile(frame, event, arg):
        # Until the function can be wrapped (a nested function never can) each of its calls is a step.
        if core.PROC.role == "worker":
            sys.setprofile(None)
            return
        if event == "call" and first.get("frame") is None:
            code = frame.f_code
            if code.co_name == parts[-1] and code.co_qualname == qualname and \
                    frame.f_globals.get("__name__") == module_name:
                first["frame"] = frame
                if STATE.step_start_ns is None:
                    _begin_first_step(monotonic_ns())
                try:
                    first["wrapped"] = try_wrap()
                except Exception as error:
                    core.PROC.warning("steps", "cannot wrap the step function: %r" % (error,))
        elif event == "return" and first.get("frame") is frame:
            first["frame"] = None
            if first.get("wrapped"):
                sys.setprofile(None)
            if _end_step(monotonic_ns()):
                sys.setprofile(None)
                raise SystemExit(0)

    sys.setprofile(profile)


def _step_function_wrapper(function):
    import functools

    @functools.wraps(function)
    def step_function(*args, **kwargs):
        state = STATE
        if state.step_start_ns is None:
            try:
                _begin_first_step(monotonic_ns())
            except Exception:
                pass
        try:
            return function(*args, **kwargs)
        finally:
            stop = False
            try:
                stop = _end_step(monotonic_ns())
            except Exception as error:
                core.PROC.warning("steps", "step bookkeeping failed: %r" % (error,))
            if stop:
                raise SystemExit(0)

    step_function._trainlab_step_function = True
    return step_function


# -- capture window -----------------------------------------------------------------------------
def _capture_at_step_start(step):
    capture = core.SETTINGS.capture
    if capture is None or STATE.profiler is not None or step != capture[0]:
        return
    try:
        torch = _torch
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        profiler = torch.profiler.profile(activities=activities, record_shapes=True, with_stack=False)
        profiler.step_num = step  # ProfilerStep#<step>, the recorder's own step numbers
        profiler.record_steps = True  # step markers (torch sets it only with a schedule)
        profiler.start()
        STATE.profiler = profiler
        STATE.capture_first_step = step
        STATE.capture_steps = 0
    except Exception as error:
        STATE.profiler = None
        core.PROC.warning("profiler", "torch.profiler could not start: %r" % (error,))


def _capture_at_step_end(step):
    profiler = STATE.profiler
    if profiler is None:
        return
    STATE.capture_steps += 1
    if STATE.capture_steps >= core.SETTINGS.capture[1]:
        finish_capture("window")
        return
    try:
        profiler.step()
    except Exception as error:
        core.PROC.warning("profiler", "torch.profiler step failed: %r" % (error,))


def finish_capture(why):
    profiler = STATE.profiler
    if profiler is None:
        return
    STATE.profiler = None
    proc = core.PROC
    try:
        profiler.stop()
        name = "trace.rank%d.json" % proc.rank
        path = os.path.join(core.SETTINGS.job_dir, name)
        temporary = path + ".tmp%d" % os.getpid()
        profiler.export_chrome_trace(temporary)
        os.replace(temporary, path)
        proc.write({"type": "trace", "rank": proc.rank, "path": name,
                    "first_step": STATE.capture_first_step, "steps": STATE.capture_steps})
    except Exception as error:
        proc.warning("profiler", "the capture window's trace could not be written: %r" % (error,))


def at_exit():
    """The end of the main loop process: the window's trace if still open, no_steps if none."""
    finish_capture("exit")
    proc = core.PROC
    if proc.role != "main" or proc.mp_child or _torch is None:
        return
    if STATE.steps_done == 0:
        function = core.SETTINGS.step_function
        if function:
            message = "the step function %s was never called" % function
        else:
            message = ("the script made no optimizer step (torch.optim optimizer.step()); "
                       "name the function that makes one step with TRAINLAB_JOB_STEP_FUNCTION=module:qualname")
        proc.write({"type": "no_steps", "message": message})
