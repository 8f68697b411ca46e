#!/usr/bin/env bash
# Makes the documentation's pictures from real runs, into docs/images/:
#   lab_table.png    the three-run lab's table and reading (baseline --scenario recsys), as the terminal prints it
#   sweep_chart.png  a small sweep's chart (throughput_vs_workers.svg) on the data-bound recsys preset
#   report_top.png   the top of a profile's report.html on the same preset
# Needs a build (build/, or $TRAINLAB_BUILD_DIR: the trainlab and trainlab-train targets) and a headless
# chromium (Debian: apt-get install chromium). About 3 minutes on 2 cores. The runs' folders and
# their terminal output stay in WORK_DIR (default: a fresh temporary folder), which it prints.
# Usage: bash scripts/make_doc_pictures.sh [WORK_DIR]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${TRAINLAB_BUILD_DIR:-$repo/build}"
trainlab="$build_dir/trainlab"
out="$repo/docs/images"
work="${1:-$(mktemp -d /tmp/trainlab-doc-pictures.XXXXXX)}"
results="$work/results"
# Datasets and compiled packages: generated once into the work folder (or $TRAINLAB_DATA_DIR).
export TRAINLAB_DATA_DIR="${TRAINLAB_DATA_DIR:-$work/datasets}"

die() { echo "make_doc_pictures: $*" >&2; exit 2; }
[ -x "$trainlab" ] && [ -x "$build_dir/trainlab-train" ] ||
  die "no build at $build_dir (build the trainlab and trainlab-train targets, or set TRAINLAB_BUILD_DIR)"
chromium="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
[ -n "$chromium" ] || die "no headless chromium on PATH (Debian: apt-get install chromium)"
mkdir -p "$out" "$results"
echo "==> runs in $work"

# A screenshot of URL at WIDTHxHEIGHT CSS pixels into PNG.
shoot() {
  local url="$1" png="$2" width="$3" height="$4"
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --window-size="$width,$height" --screenshot="$png" "$url" >/dev/null 2>&1 ||
    die "chromium could not take $png"
  [ -s "$png" ] || die "chromium wrote no $png"
  echo "==> $png"
}

# The newest run folder whose name ends in KIND.
newest_run() { ls -d "$results"/*-"$1" 2>/dev/null | sort | tail -1; }

# 1. The lab, as the quick start runs it; its table and reading drawn as the terminal shows them.
echo "==> baseline --scenario recsys"
"$trainlab" baseline --scenario recsys --results "$results" >"$work/lab.txt"
# The table and the reading, wrapped at 110 columns. Left out of the picture (the terminal shows them): the
# per-repetition disturbance notes, the System lines, and the table's rows past its first 9 (the
# first round or three; a busy machine runs up to 20), counted in one line.
awk '/^System /{exit}
     / left out of every figure | kept, measured under load| kept though disturbed/{next}
     /^---/{print; table=1; next}
     table && /^$/{if (rows > 9) printf "... %d more rows: the other rounds, left out of this picture\n", rows - 9; table=0}
     table{rows++; if (rows <= 9) print; next}
     {print}' "$work/lab.txt" >"$work/lab_table.txt"
rows="$(awk '{ n += (length($0) > 110 ? int((length($0) + 109) / 110) : 1) } END { print n }' "$work/lab_table.txt")"
{
  echo '<!doctype html><meta charset="utf-8"><body style="margin:0;background:#1e1e1e">'
  echo '<pre style="margin:0;padding:12px 16px;width:110ch;white-space:pre-wrap;color:#e8e8e8;font:13px/18px DejaVu Sans Mono,monospace">'
  sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' "$work/lab_table.txt"
  echo '</pre></body>'
} >"$work/lab.html"
shoot "file://$work/lab.html" "$out/lab_table.png" 900 "$((rows * 19 + 40))"

# 2. A small sweep (three worker counts, short runs): its chart.
echo "==> sweep --scenario recsys --preset data-bound --workers 0,1,2"
"$trainlab" sweep --scenario recsys --preset data-bound --workers 0,1,2 --steps 20 --results "$results" \
  >"$work/sweep.txt"
sweep="$(newest_run sweep)"
[ -f "$sweep/throughput_vs_workers.svg" ] || die "the sweep wrote no chart in $sweep"
size="$(grep -o 'width="[0-9.]*" height="[0-9.]*"' "$sweep/throughput_vs_workers.svg" | head -1 | tr -dc '0-9 .')"
read -r svg_width svg_height <<<"$size"
shoot "file://$sweep/throughput_vs_workers.svg" "$out/sweep_chart.png" "${svg_width%.*}" "${svg_height%.*}"

# 3. A profile of the same preset: the top of its report.html.
echo "==> profile --scenario recsys --preset data-bound"
"$trainlab" profile --scenario recsys --preset data-bound --results "$results" >"$work/profile.txt" || true
profile="$(newest_run profile)"
[ -f "$profile/report.html" ] || die "the profile wrote no report.html in $profile"
shoot "file://$profile/report.html" "$out/report_top.png" 1100 900

echo "==> done: $(cd "$out" && ls -s --block-size=K lab_table.png sweep_chart.png report_top.png | tr '\n' ' ')"
