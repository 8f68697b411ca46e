#!/usr/bin/env bash
# Installs what is missing, builds trainlab, then runs the three-run lab ("lab") or the test
# suite and a short fuzz pass ("test"). For a fresh Debian 12 machine, run as root; safe to run again (idempotent).
#   Debian packages: compiler, CMake, Ninja, ccache, CLI11, nlohmann/json, GoogleTest, Benchmark,
#   zstd and libjpeg-turbo (the on-disk datasets), zlib (gzipped traces).
#   PyTorch (pinned) from PyPI into a virtual environment outside the repository; its bundled
#   LibTorch is what trainlab builds against (torch.utils.cmake_prefix_path).
set -euo pipefail

mode="${1:-lab}"
case "$mode" in lab|test|build) ;; *) echo "usage: $0 [lab|test|build]" >&2; exit 2 ;; esac

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TRAINLAB_VENV:-/opt/trainlab/venv}"
build_dir="${TRAINLAB_BUILD_DIR:-$repo/build}"
torch_version="2.11.0"

say() { printf '==> %s\n' "$*"; }

# 1. Debian packages.
packages=(build-essential cmake ninja-build ccache git python3 python3-venv python3-pip
          libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
          libzstd-dev libturbojpeg0-dev pkg-config zlib1g-dev libgloo-dev)
source "$repo/scripts/debian_packages.sh"
install_missing_debian_packages "${packages[@]}"

# 2. PyTorch wheel (LibTorch inside) in a virtual environment.
if ! "$venv/bin/python" -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$torch_version' else 1)" 2>/dev/null; then
  say "installing torch==$torch_version into $venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --progress-bar off "torch==$torch_version"
fi
torch_prefix="$("$venv/bin/python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)"

# The wheel is a CUDA build: its CMake config needs a CUDA toolkit (nvcc, headers, cudart) even
# where nothing CUDA runs. A system toolkit (nvcc on PATH, or /usr/local/cuda) is used when there is
# one; otherwise the toolkit's parts come from PyPI into the same environment, at the CUDA version
# the wheel was built with (cuda-toolkit[...]==the version torch depends on), and a folder of links
# lays them out the way CMake's CUDA modules look for a toolkit (unversioned library names).
cuda_args=()
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
if ! command -v nvcc >/dev/null 2>&1; then
  cuda_toolkit="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("cuda-toolkit"))')"
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  cuda_root="$site/nvidia/cu${cuda_toolkit%%.*}"
  if [ ! -x "$cuda_root/bin/nvcc" ] || [ ! -d "$cuda_root/nvvm" ]; then
    say "no CUDA toolkit here: installing its compiler and headers from PyPI (cuda-toolkit $cuda_toolkit) into $venv"
    "$venv/bin/pip" install -q --progress-bar off "cuda-toolkit[nvcc,nvvm,crt,cudart,cupti,nvtx,cccl]==$cuda_toolkit"
  fi
  toolkit="$venv/cuda-toolkit"
  rm -rf "$toolkit" && mkdir -p "$toolkit/bin" "$toolkit/lib64"
  ln -s "$cuda_root/include" "$toolkit/include"
  ln -s "$cuda_root/nvvm" "$toolkit/nvvm"
  for f in "$cuda_root"/bin/*; do ln -s "$f" "$toolkit/bin/"; done
  for f in "$cuda_root"/lib/*; do
    name="$(basename "$f")"
    ln -sf "$f" "$toolkit/lib64/$name"
    case "$name" in *.so.*) ln -sf "$f" "$toolkit/lib64/${name%%.so.*}.so" ;; esac
  done
  cuda_args=(-DCUDAToolkit_ROOT="$toolkit" -DCUDA_TOOLKIT_ROOT_DIR="$toolkit" -DCMAKE_CUDA_COMPILER="$toolkit/bin/nvcc")
  say "CUDA toolkit from PyPI: $toolkit (CUDA code compiles; it runs only where a GPU and driver are)"
fi

# 3. Build (ccache + a precompiled LibTorch header keep rebuilds short).
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
# Paths inside the checkout hashed as relative ones: clones in other folders share the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$repo}"
say "configuring and building in $build_dir"
cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" \
  "${cuda_args[@]}" >"$build_dir.configure.log" 2>&1 || { cat "$build_dir.configure.log" >&2; exit 1; }
# The lab needs the two programs only; the tests need everything.
targets=()
[ "$mode" = lab ] && targets=(--target trainlab trainlab-train)
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"

# 4. Run.
cd "$repo"
case "$mode" in
  lab)  say "three-run baseline lab on the default scenario"; exec "$build_dir/trainlab" baseline --scenario recsys ;;
  test)
    say "tests"
    ctest_status=0
    ctest --test-dir "$build_dir" --output-on-failure -j 2 || ctest_status=$?
    if [ "$ctest_status" -ne 0 ]; then
      # The failed tests' own last lines again, last: a long log's middle is where a reader cut it.
      log="$build_dir/Testing/Temporary/LastTest.log"
      say "failed tests, the last lines each printed (all of it: $log)"
      while IFS=: read -r _ name; do
        echo "--- $name"
        out=$(awk -v t="$name" '$0 ~ ("Testing: " t "$") {on=1; next} on && $0 ~ ("^\"" t "\" end time") {on=0} on' "$log" |
          grep -v -E '^(-+|Test time = .*|Test (Passed|Failed)\.?|<end of output>)$' | cut -c1-400)
        # The check that failed (gtest's "file:line: Failure" and the next lines, a FAIL: line, a
        # traceback), then the output's end.
        printf '%s\n' "$out" | grep -m 3 -A 2 -E '(: Failure$|^FAIL: |^Traceback)' || true
        echo "  [...]"
        printf '%s\n' "$out" | tail -n 8
      done < "$build_dir/Testing/Temporary/LastTestsFailed.log"
      exit "$ctest_status"
    fi
    # A short fuzz pass over the readers of untrusted input (ASan+UBSan, clang; the long one and
    # the sanitizer runs of the unit tests: scripts/check_hardening.sh).
    say "fuzz targets, 10 s each"
    exec bash "$repo/scripts/check_hardening.sh" 10 fuzz ;;
  build) ;;
esac
