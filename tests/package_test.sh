#!/usr/bin/env bash
# The profiler as an installed CMake package: installs the "profiler" component of a trainlab build
# into a scratch prefix, builds profiler/examples/embed_loop against it with find_package(trainlab)
# (no harness), runs it, and checks its trace with Python's json module: one ProfilerStep# span per
# window step, the loop's own annotations inside them, LibTorch ops, system-metric counters.
#   package_test.sh BUILD_DIR SOURCE_DIR TORCH_DIR
set -euo pipefail
build_dir=$1 source_dir=$2 torch_dir=$3
work=$build_dir/package-test
rm -rf "$work/prefix" "$work/trace.json.gz"
cmake --install "$build_dir" --component profiler --prefix "$work/prefix" > /dev/null
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$source_dir/profiler/examples/embed_loop" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DTorch_DIR="$torch_dir" "${launcher[@]}" > "$work/configure.log" 2>&1 \
  || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$work/build/embed_loop" "$work/trace.json.gz" 12 3 5 | tee "$work/run.log"
python3 - "$work/trace.json.gz" <<'PY'
import collections, gzip, json, sys
trace = json.load(gzip.open(sys.argv[1]))
events = trace["traceEvents"]
steps = sorted(e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#"))
assert steps == ["ProfilerStep#%d" % i for i in range(3, 8)], steps
names = collections.Counter(e["name"] for e in events if e.get("cat") == "user_annotation")
for part in ("load_batch", "forward", "backward", "optimizer"):
    assert names[part] == 5, (part, names)
ops = [e for e in events if e.get("cat") == "cpu_op"]
assert any(e["name"] == "aten::addmm" for e in ops), "no aten::addmm among %d ops" % len(ops)
counters = {e["name"] for e in events if e.get("ph") == "C"}
assert any(n.startswith("mem.rss_bytes") for n in counters), counters
print("package test: %d steps, %d annotations, %d ops, %d counter tracks" % (len(steps), sum(names.values()), len(ops), len(counters)))
PY
