#!/usr/bin/env bash
# Sanitizer builds and fuzzing of the torch-free modules (the readers of untrusted input, the
# loader, the event recorder, the sampler), with clang from Debian:
#   1. ASan+UBSan: the torch-free unit tests (ctest -L unit) and the libFuzzer targets, in build-asan/;
#   2. TSan: the threaded parts' tests (loader, data, profiler core, the data-parallel gradient
#      schedule that the hooks and the backend's completions drive) in build-tsan/;
#   3. each fuzz target (tests/fuzz) for SECONDS seconds (default 20) from the seed corpus;
#   4. "million" (not in the default set): each fuzz target for 10^6 inputs, UBSan only, in build-fuzz/.
# Any sanitizer report, failed test or fuzz crash fails the script (exit 1); crashing inputs are
# left in build-asan/fuzz-findings/ (build-fuzz/ for "million").
# Usage: scripts/check_hardening.sh [SECONDS] [asan|tsan|fuzz|million ...]
# The LibTorch parts (training loop, the tensors and collectives of data parallel) are not in these
# builds: LibTorch itself is not instrumented, so ASan/TSan there report its internals, not trainlab's.
set -euo pipefail

seconds="${1:-20}"
shift || true
stages=("$@")
[ "${#stages[@]}" -gt 0 ] || stages=(asan tsan fuzz)
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { printf '==> %s\n' "$*"; }

packages=(clang libclang-rt-14-dev cmake ninja-build ccache pkg-config libcli11-dev nlohmann-json3-dev
          libgtest-dev libgmock-dev libzstd-dev libturbojpeg0-dev zlib1g-dev)
source "$repo/scripts/debian_packages.sh"
install_missing_debian_packages "${packages[@]}"

configure() {  # build folder, sanitizers, extra cmake options...
  local dir="$1" sanitize="$2"
  shift 2
  CC=clang CXX=clang++ cmake -S "$repo" -B "$repo/$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTRAINLAB_WITH_TORCH=OFF -DTRAINLAB_BUILD_BENCH=OFF -DTRAINLAB_SANITIZE="$sanitize" "$@" \
    >"$repo/$dir.configure.log" 2>&1 || { cat "$repo/$dir.configure.log" >&2; exit 1; }
}

# The four fuzz targets in build folder $1 with sanitizers $2, each run under the libFuzzer limit $3
# (-max_total_time=S or -runs=N) from the seed corpus, the default thresholds and the test fixtures.
# Always through the build (incremental): a target left from an older checkout would fuzz old code.
# A crash fails the script; its input is left in $1/fuzz-findings/.
fuzz_targets() {
  local dir="$1" sanitize="$2" limit="$3"
  local targets=(trace_import thresholds records settings)
  configure "$dir" "$sanitize" -DTRAINLAB_FUZZ=ON
  cmake --build "$repo/$dir" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"
  local work="$repo/$dir/fuzz-corpus" findings="$repo/$dir/fuzz-findings"
  mkdir -p "$findings"
  for target in "${targets[@]}"; do
    mkdir -p "$work/$target"
    cp -n "$repo/tests/fuzz/corpus/$target/"* "$work/$target/" 2>/dev/null || true
  done
  cp -n "$repo/configs/thresholds.json" "$work/thresholds/" 2>/dev/null || true
  local n=0
  while IFS= read -r -d '' record; do
    cp -n "$record" "$work/records/fixture-$n.json"
    n=$((n + 1))
  done < <(find "$repo/tests/fixtures" -name '*.json' -print0 | sort -z)
  local failed=0
  for target in "${targets[@]}"; do
    local log="$repo/$dir/fuzz_$target.log" status=0 start
    start=$(date +%s)
    "$repo/$dir/tests/fuzz/fuzz_$target" "$limit" -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$findings/$target-" "$work/$target" >"$log" 2>&1 || status=$?
    local execs
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
    if [ "$status" -ne 0 ]; then
      failed=1
      echo "fuzz_$target: FAILED after ${execs:-?} runs (exit $status); input in $findings, log $log" >&2
      grep -m 3 -E 'ERROR|runtime error|terminate' "$log" >&2 || true
    else
      echo "fuzz_$target: ${execs:-?} runs in $(( $(date +%s) - start )) s, 0 crashes (corpus $(ls "$work/$target" | wc -l) inputs)"
    fi
  done
  [ "$failed" -eq 0 ] || exit 1
}

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

for stage in "${stages[@]}"; do
  case "$stage" in
    asan)
      say "ASan+UBSan: torch-free unit tests (build-asan)"
      configure build-asan address,undefined -DTRAINLAB_FUZZ=ON
      cmake --build "$repo/build-asan" -j "$(nproc)"
      ctest --test-dir "$repo/build-asan" -L unit --output-on-failure -j "$(nproc)"
      ;;
    tsan)
      say "TSan: loader, data, profiler-core and gradient-schedule tests (build-tsan)"
      configure build-tsan thread
      cmake --build "$repo/build-tsan" -j "$(nproc)" --target trainlab_loader_tests trainlab_data_tests \
        trainlab_profiler_tests trainlab_dist_tests
      ctest --test-dir "$repo/build-tsan" --output-on-failure -j "$(nproc)" -E NOT_BUILT  # only the four built
      ;;
    fuzz)
      fuzz_targets build-asan address,undefined -max_total_time="$seconds"
      ;;
    million)
      # The long pass: each target until 10^6 inputs (UBSan only: ASan's shadow memory makes the
      # trace and record targets ~5x slower; the asan and fuzz stages cover ASan).
      say "fuzz targets, 10^6 runs each (UBSan, build-fuzz)"
      fuzz_targets build-fuzz undefined -runs=1000000
      ;;
    *) echo "usage: $0 [SECONDS] [asan|tsan|fuzz|million ...]" >&2; exit 2 ;;
  esac
done
say "hardening checks passed: ${stages[*]}"
