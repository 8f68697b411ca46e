"""The user's model as the libraries give it, in the user's environment (issue 32).

  python ecosystem_test.py forms     TRAINLAB SOURCE_DIR WORK_DIR
  python ecosystem_test.py libraries TRAINLAB SOURCE_DIR WORK_DIR
  python ecosystem_test.py transformers4 TRAINLAB SOURCE_DIR WORK_DIR

forms (trainlab's own Python, torch only): the adapter's input and output forms (one dict, a tuple
with --output, keywords in another order than forward's), a forward that cannot take the inputs,
activation checkpointing and a custom autograd.Function, a missing module, and an interpreter
without torch: each added and trained, or refused with one line and exit status 2.

libraries: a side venv the way a user makes one (this Python's torch shared through a .pth file,
torchvision at the release matching it, timm and transformers from PyPI), then `model add
--python` (no wrapper, no weights: random initialisation from configs) and a short eager run for a
torchvision CNN with BatchNorm, a Hugging Face causal LM and encoder (attention mask, the model's
own loss from labels), a timm vision transformer and a hand-written LSTM; the CNN also runs its
compiled variant (Inductor, convolution weights channels last). Exits 77 (skipped) with one line
when pip cannot reach PyPI.

transformers4: the same for GPT-2 and BERT with transformers' last 4.x release (attention masks
built with torch.vmap), GPT-2 also compiled.
"""
import json
import os
import subprocess
import sys
import sysconfig

SKIPPED = 77
STEPS = ["--steps", "3", "--warmup", "1", "--sampler", "off", "--max-loop-s", "2"]


def run(cmd, env=None, timeout=600):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    return result.returncode, result.stdout, result.stderr


def check(condition, what, *details):
    if not condition:
        print("FAIL: %s\n%s" % (what, "\n".join(str(d) for d in details)), file=sys.stderr)
        sys.exit(1)
    print("ok: %s" % what)


def model_add(trainlab, source, out, extra, python=None):
    cmd = [trainlab, "model", "add", source, "--out", out, "--force", "--no-package"] + extra
    if python:
        cmd += ["--python", python]
    return run(cmd)


def expect_refused(result, message_part, what):
    rc, out, err = result
    lines = [line for line in err.splitlines() if line.strip()]
    check(rc == 2 and len(lines) == 1 and message_part in lines[0], what + ": one line, exit 2", rc, out, err)


def expect_added(result, out_dir, what):
    rc, out, err = result
    check(rc == 0 and os.path.isfile(os.path.join(out_dir, "manifest.json")), what + ": added", rc, out, err)
    with open(os.path.join(out_dir, "manifest.json")) as f:
        return json.load(f)


def train_briefly(trainlab, bundle, results, python=None, extra=()):
    """A few steps of the bundle (eager unless `extra` says otherwise); the run record's variant."""
    cmd = [trainlab, "run", "--model", bundle, "--results", results] + STEPS + list(extra)
    if python:
        cmd += ["--python", python]
    rc, out, err = run(cmd)
    check(rc == 0, "%s: trained" % os.path.basename(bundle), rc, out, err)
    runs = sorted(os.listdir(results))
    with open(os.path.join(results, runs[-1], "run.json")) as f:
        record = json.load(f)
    variant = record["variants"][0]
    losses = [s["loss"] for s in variant["steps"] if isinstance(s["loss"], (int, float))]
    samples_per_s = variant["aggregate"]["samples_per_s"]
    check(variant["error"] is None and samples_per_s > 0 and losses and all(abs(x) < 1e6 for x in losses),
          "%s: %.1f samples/s, losses %s" % (os.path.basename(bundle), samples_per_s,
                                               ", ".join("%.4g" % x for x in losses[:3])),
          json.dumps(variant)[:2000])
    return variant


def line_of(path, text):
    with open(path) as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


def forms(trainlab, source_dir, work):
    forms_py = os.path.join(source_dir, "tests", "data", "ecosystem", "forms.py")
    x, z, y = "x:float32[4,8]", "z:float32[4,6]", "y:int64[4]:0..3"

    out = os.path.join(work, "dict_input")
    manifest = expect_added(model_add(trainlab, forms_py + ":dict_input", out, ["--input", x, "--input", z,
                                                                               "--target", y]), out, "one dict in")
    check(manifest["adapter"]["call"] == "dict", "a forward of one argument gets the inputs as one dict",
          manifest["adapter"])
    train_briefly(trainlab, out, os.path.join(work, "dict_input_results"))
    # The exporter's twin of a bundle is importable by its module name: torch.save(model) (pickle)
    # and torch.compile's tracer look classes up there.
    rc, stdout, err = run([sys.executable, "-c", "import pickle, sys; sys.path.insert(0, sys.argv[1]); "
                           "import aot_compile; net, loss = aot_compile.bundle_twin(sys.argv[2]); "
                           "print(type(pickle.loads(pickle.dumps(net))).__name__)",
                           os.path.join(source_dir, "scenarios", "export"), out])
    check(rc == 0 and stdout.split()[-1:] == ["ModelAdapter"], "the bundle's model pickles by its module's name",
          rc, stdout, err)

    out = os.path.join(work, "keyword_order")
    manifest = expect_added(model_add(trainlab, forms_py + ":keyword_order", out, ["--input", z, "--input", x,
                                                                                  "--target", y]), out, "keywords")
    check(manifest["adapter"]["call"] == "keyword" and manifest["adapter"]["names"] == ["z", "x"],
          "inputs named after forward's parameters, in another order, are passed as keywords", manifest["adapter"])
    train_briefly(trainlab, out, os.path.join(work, "keyword_order_results"))

    out = os.path.join(work, "tuple_output")
    expect_refused(model_add(trainlab, forms_py + ":tuple_output", out, ["--input", x, "--target", y]),
                   "the model returns a tuple of 2 (tensor[4, 16], tensor[4, 4]): choose the output to train with "
                   "--output INDEX", "a tuple of two tensors without --output")
    manifest = expect_added(model_add(trainlab, forms_py + ":tuple_output", out, ["--input", x, "--target", y,
                                                                                 "--output", "1"]), out, "--output 1")
    check(manifest["adapter"]["output"] == 1 and manifest["output_shape"] == [4, 4],
          "--output 1 trains the tuple's second tensor", manifest["adapter"], manifest["output_shape"])
    train_briefly(trainlab, out, os.path.join(work, "tuple_output_results"))

    expect_refused(model_add(trainlab, forms_py + ":list_input", os.path.join(work, "list_input"),
                             ["--input", x, "--target", y]),
                   "unsupported: ListInput.forward(xs, *, scale) cannot take the inputs x as positional arguments",
                   "a forward that cannot take the inputs")
    expect_refused(model_add(trainlab, forms_py + ":checkpointed", os.path.join(work, "checkpointed"),
                             ["--input", x, "--target", y]),
                   "unsupported: forms.py:%d: torch.utils.checkpoint (activation checkpointing)" %
                   line_of(forms_py, "torch.utils.checkpoint.checkpoint("),
                   "activation checkpointing")
    expect_refused(model_add(trainlab, forms_py + ":custom_function", os.path.join(work, "custom_function"),
                             ["--input", x, "--target", y]),
                   "unsupported: forms.py:%d: a custom torch.autograd.Function (Clamp)" %
                   line_of(forms_py, "class Clamp("), "a custom autograd.Function")
    for name in ("list_input", "checkpointed", "custom_function"):
        check(not os.path.exists(os.path.join(work, name)), "%s: nothing left behind" % name)

    # A module this Python lacks: named, with how to make it importable.
    missing = os.path.join(work, "missing.py")
    with open(missing, "w") as f:
        f.write("import trainlab_no_such_library\n\ndef make():\n    pass\n")
    expect_refused(model_add(trainlab, missing + ":make", os.path.join(work, "missing"), ["--input", x, "--target", y]),
                   "No module named 'trainlab_no_such_library'; make 'trainlab_no_such_library' importable: install it "
                   "into this Python (%s), or give --python the interpreter where the model imports" %
                   os.environ.get("TRAINLAB_PYTHON", sys.executable), "a missing module")

    # An interpreter without torch: one line, before any model code runs.
    bare = os.path.join(work, "bare-venv")
    if not os.path.isdir(bare):
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", bare], check=True)
    bare_python = os.path.join(bare, "bin", "python")
    expect_refused(model_add(trainlab, forms_py + ":dict_input", os.path.join(work, "bare"),
                             ["--input", x, "--target", y], python=bare_python),
                   "--python %s has no torch (No module named 'torch'): trainlab needs a Python with torch" %
                   bare_python, "--python without torch")
    env = dict(os.environ, TRAINLAB_PYTHON=bare_python)
    rc, out, err = run([trainlab, "model", "add", forms_py + ":dict_input", "--out", os.path.join(work, "bare"),
                        "--input", x, "--target", y, "--no-package"], env=env)
    expect_refused((rc, out, err), "$TRAINLAB_PYTHON %s has no torch" % bare_python, "$TRAINLAB_PYTHON without torch")
    rc, out, err = run([trainlab, "run", "--model", os.path.join(work, "dict_input"), "--python", bare_python,
                        "--results", os.path.join(work, "bare_results")] + STEPS)
    expect_refused((rc, out, err), "has no torch", "run --python without torch")


def side_venv(work, name="ecosystem-venv", packages=None, probe="import torchvision, timm, transformers"):
    """The user's venv: this Python's torch shared by a .pth file, the libraries from PyPI at the
    releases that match it (by default torchvision, timm and transformers). None when PyPI cannot
    be reached."""
    import torch

    venv = os.path.join(work, name)
    python = os.path.join(venv, "bin", "python")
    if os.path.isfile(python) and run([python, "-c", probe])[0] == 0:
        return python
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    venv_site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])[1].strip()
    with open(os.path.join(venv_site, "trainlab_torch.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    if packages is None:
        major, minor = (int(p) for p in torch.__version__.split(".")[:2])
        torchvision = "torchvision==0.%d.*" % (minor + 15) if major == 2 else "torchvision"  # 2.11 <-> 0.26
        packages = [torchvision, "timm", "transformers"]
    rc, out, err = run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check"] + packages, timeout=900)
    if rc != 0:
        print("skipped: pip could not install %s from PyPI (%s)" %
              (", ".join(packages), (err.strip().splitlines() or ["exit status %d" % rc])[-1]))
        return None
    return python


def libraries(trainlab, source_dir, work):
    python = side_venv(work)
    if python is None:
        sys.exit(SKIPPED)
    models = os.path.join(source_dir, "tests", "data", "ecosystem", "models.py")
    image, classes = "x:float32[4,3,32,32]", "y:int64[4]:0..9"
    ids, mask = "input_ids:int64[4,16]:0..127", "attention_mask:int64[4,16]:0..1"
    cases = [
        ("mobilenet", ["--input", image, "--target", classes]),
        ("gpt2", ["--input", ids, "--target", "labels:int64[4,16]:0..127", "--loss", "model"]),
        ("bert", ["--input", ids, "--input", mask, "--target", "labels:int64[4]:0..2", "--loss", "model"]),
        ("vit", ["--input", image, "--target", classes]),
        ("lstm", ["--input", "tokens:int64[4,16]:0..99", "--target", "y:int64[4]:0..4"]),
    ]
    # trainlab's own Python lacks the libraries: the module is named, with the way out.
    expect_refused(model_add(trainlab, models + ":mobilenet", os.path.join(work, "no-torchvision"), cases[0][1]),
                   "No module named 'torchvision'; make 'torchvision' importable", "torchvision missing")
    for name, options in cases:
        out = os.path.join(work, name)
        manifest = expect_added(model_add(trainlab, models + ":" + name, out, options, python=python), out, name)
        if name in ("gpt2", "bert"):
            check(manifest["loss"] == "model" and manifest["adapter"]["output"] == "loss" and
                  manifest["adapter"]["target_keyword"] == "labels" and manifest["output_shape"] == [],
                  "%s: the model's own loss from labels=, out of its ModelOutput" % name, manifest["adapter"])
        if name == "lstm":
            check(manifest["flops_not_counted"] == ["nn.LSTM"], "lstm: FLOPs not counted for nn.LSTM",
                  manifest.get("flops_not_counted"))
        else:
            check(manifest["flops_not_counted"] == [] and manifest["flops_per_sample"] > 0,
                  "%s: FLOPs counted" % name, manifest.get("flops_not_counted"))
        variant = train_briefly(trainlab, out, os.path.join(work, name + "_results"), python=python)
        if name == "lstm":
            check(variant["flops_not_counted"] == ["nn.LSTM"], "lstm: the run records the partial count",
                  variant.get("flops_not_counted"))
        if name == "mobilenet":
            compiled_through_inductor(trainlab, out, os.path.join(work, name + "_compiled"), python)


def transformers4(trainlab, source_dir, work):
    """transformers' last 4.x release, which many environments still hold: its attention masks are
    built with torch.vmap, which neither TorchScript's trace nor torch.export recorded under torch
    2.11 (GPT-2 failed model add with "unordered_map::at", its compiled variant with a
    SpecViolationError). GPT-2 and BERT are added, trained briefly, and GPT-2's compiled variant is
    built through Inductor with gradients that match eager autograd."""
    python = side_venv(work, "transformers4-venv", ["transformers<5"], "import transformers")
    if python is None:
        sys.exit(SKIPPED)
    version = run([python, "-c", "import transformers; print(transformers.__version__)"])[1].strip()
    check(version.startswith("4."), "the venv holds transformers 4.x", version)
    models = os.path.join(source_dir, "tests", "data", "ecosystem", "models.py")
    ids, mask = "input_ids:int64[4,16]:0..127", "attention_mask:int64[4,16]:0..1"
    cases = [
        ("gpt2", ["--input", ids, "--target", "labels:int64[4,16]:0..127", "--loss", "model"]),
        ("bert", ["--input", ids, "--input", mask, "--target", "labels:int64[4]:0..2", "--loss", "model"]),
    ]
    for name, options in cases:
        out = os.path.join(work, name)
        expect_added(model_add(trainlab, models + ":" + name, out, options, python=python), out,
                     "%s (transformers %s)" % (name, version))
        train_briefly(trainlab, out, os.path.join(work, name + "_results"), python=python)
    variant = train_briefly(trainlab, os.path.join(work, "gpt2"), os.path.join(work, "gpt2_compiled"), python=python,
                            extra=["--compiled", "on", "--threads", "1"])
    info = variant["compile_info"]
    check(info.get("method") == "inductor-aot" and info.get("fusion_groups", 0) > 0,
          "gpt2 (transformers %s): compiled through Inductor (%s kernels)" % (version, info.get("fusion_groups")),
          info)


def compiled_through_inductor(trainlab, bundle, results, python):
    """The compiled variant of a torchvision CNN: built by Inductor, its convolution weights bound
    channels last (aot_compile.py conv_weights_channels_last), gradients checked against eager."""
    # At a fixed thread count: a first repetition disturbed by other tests would have the run lower
    # LibTorch's default threads and build a second package for the new count.
    variant = train_briefly(trainlab, bundle, results, python=python, extra=["--compiled", "on", "--threads", "1"])
    info = variant["compile_info"]
    check(info.get("method") == "inductor-aot" and info.get("fusion_groups", 0) > 0,
          "mobilenet: compiled through Inductor (%s kernels)" % info.get("fusion_groups"), info)
    builds = [os.path.join(bundle, d, "build.json") for d in os.listdir(bundle)
              if d.startswith("inductor-") and os.path.isfile(os.path.join(bundle, d, "build.json"))]
    check(len(builds) == 1, "mobilenet: one package built", builds)
    with open(builds[0]) as f:
        build = json.load(f)
    strides = build.get("parameter_strides", {})
    check(len(strides) == 52 and all(s[1] == 1 for s in strides.values()),
          "mobilenet: its 52 convolution weights exported channels last", sorted(strides)[:3])
    check(build["gradient_check"].get("max_rel_err", 1.0) <= 1e-2,
          "mobilenet: the package's gradients match eager autograd's", build["gradient_check"])


def main():
    mode, trainlab, source_dir, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    {"forms": forms, "libraries": libraries, "transformers4": transformers4}[mode](trainlab, source_dir, work)


if __name__ == "__main__":
    main()
