"""trainlab's in-job recorder hook (issue 54): Python imports this `sitecustomize` at start-up because
trainlab puts its folder first on PYTHONPATH for the job. It starts the recorder only when
$TRAINLAB_JOB_DIR is set, then runs the user's own `sitecustomize` (the next one on sys.path), once.
Nothing here may raise into the user's process."""
import os
import sys


def _chain_users_sitecustomize():
    """Runs the next `sitecustomize` on sys.path after this folder, exactly once per process."""
    if getattr(sys, "_trainlab_sitecustomize_chained", False):
        return
    sys._trainlab_sitecustomize_chained = True
    try:
        import importlib.machinery
        import importlib.util
        here = os.path.dirname(os.path.abspath(__file__))
        entries = [p for p in sys.path if os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", entries)
        if spec is None or spec.origin is None or os.path.abspath(spec.origin) == os.path.abspath(__file__):
            return
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module  # the user's module is the one that stays imported
        spec.loader.exec_module(module)
    except Exception as error:  # as Python's site does for a failing sitecustomize: say so, go on
        sys.stderr.write("Error in the user's sitecustomize (run by trainlab's recorder): %r\n" % (error,))


if os.environ.get("TRAINLAB_JOB_DIR"):
    try:
        import trainlab_job_recorder
        trainlab_job_recorder.activate()
    except Exception as error:
        sys.stderr.write("trainlab: the in-job recorder could not start: %r\n" % (error,))
_chain_users_sitecustomize()
