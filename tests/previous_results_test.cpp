// Results written by the previous version (before the record's side-cars were typed) still open:
// every run.json in tests/fixtures/results_previous was written by trainlab at c7f8a40 (a lab, an
// A/B run, a sweep and a two-rank data-parallel run, all real) and reads back into the typed
// record and out again as the same JSON; compare and history read them as that version did.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/run_record.h"
#include "diagnostics/diagnosis.h"
#include "harness/runner/compare.h"
#include "harness/report/history_report.h"
#include "harness/runner/history.h"

namespace trainlab {
namespace {

namespace fs = std::filesystem;
const fs::path kPrevious = fs::path(TRAINLAB_FIXTURES_DIR) / "results_previous";

nlohmann::json parse(const fs::path& path) { return nlohmann::json::parse(read_file(path.string())); }

TEST(PreviousResultsTest, EveryRunRecordReadsIntoTheTypedRecordAndWritesTheSameJson) {
  int records = 0;
  for (const auto& entry : fs::directory_iterator(kPrevious)) {
    const fs::path path = entry.path() / "run.json";
    if (!fs::exists(path)) continue;
    const nlohmann::json written = parse(path);
    const RunRecord record = read_run_record(entry.path().string());
    EXPECT_EQ(to_json(record), written) << path;
    ++records;
  }
  EXPECT_EQ(records, 4);
}

TEST(PreviousResultsTest, TheSideCarsAreReadIntoTheirFields) {
  const RunRecord dp = read_run_record((kPrevious / "20261124-014025-mlp-run").string());
  const VariantRecord& merged = dp.variants.at(0);
  EXPECT_EQ(merged.world_size, 2);
  EXPECT_EQ(merged.distributed.backend, "gloo");
  EXPECT_GT(merged.distributed.gradient_bytes, 0);
  ASSERT_EQ(merged.distributed.ranks.size(), 2u);
  EXPECT_TRUE(merged.distributed.ranks[1].ok);
  EXPECT_GT(merged.distributed.ranks[1].busy_ms_mean, 0);
  ASSERT_TRUE(merged.distributed.busy_spread_pct.has_value());
  EXPECT_EQ(merged.final_parameters.hash.size(), 16u);
  EXPECT_FALSE(merged.final_parameters.tensors.empty());
  ASSERT_TRUE(merged.loader.has_value());
  ASSERT_TRUE(merged.loader->counts.has_value());
  EXPECT_GT(merged.loader->counts->batches_built, 0);
  EXPECT_NE(merged.dataset.source.find("in memory"), std::string::npos);

  const RunRecord lab = read_run_record((kPrevious / "20261124-014008-mlp-baseline").string());
  ASSERT_TRUE(lab.details.bf16_probe.has_value());
  EXPECT_EQ(lab.details.bf16_probe->device, "cpu");
  EXPECT_EQ(lab.details.bf16_probe->fp32_ns.size(), lab.details.bf16_probe->bf16_ns.size());

  const RunRecord sweep = read_run_record((kPrevious / "20261124-014018-vision-sweep").string());
  ASSERT_TRUE(sweep.details.sweep.has_value());
  EXPECT_EQ(sweep.details.sweep->chart, "throughput_vs_workers.svg");
  ASSERT_TRUE(sweep.details.sweep->recommendation.has_value());
  EXPECT_FALSE(sweep.variants.at(0).dataset.dir.empty());  // an on-disk dataset
}

TEST(PreviousResultsTest, ItsDiagnosisReadsAsVersionOne) {
  const DiagnosisFile d = read_diagnosis_file((kPrevious / "20261124-014008-mlp-baseline/diagnosis.json").string());
  EXPECT_EQ(d.schema_version, 1);
  ASSERT_EQ(d.diagnoses.size(), 2u);  // fp32 and fp32+compiled
  EXPECT_EQ(d.diagnoses[0].label, "fp32");
  EXPECT_FALSE(d.diagnoses[0].headline.empty());
  EXPECT_FALSE(d.diagnoses[0].actions.empty());
  EXPECT_FALSE(d.diagnoses[0].inconclusive);
  EXPECT_EQ(d.diagnoses[0].primary, "model_compute");
}

TEST(PreviousResultsTest, CompareAndHistoryOpenThem) {
  const RunRecord ab = read_run_record((kPrevious / "20261124-014015-mlp-ab").string());
  EXPECT_EQ(ab.details.ab_changes, "workers=1");
  const CompareOutcome o = compare_ab(ab, CompareOptions{});
  EXPECT_EQ(o.after_label, "B (workers=1)");
  EXPECT_FALSE(o.rows.empty());

  // The headlines the previous version printed for this folder (its own `trainlab history`), now
  // in the JSON; the table, within 100 columns, shows the same figures.
  const std::vector<HistoryEntry> entries = read_history(kPrevious.string());
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].headline, "fp32+compiled 74277.7 samples/s");
  EXPECT_EQ(entries[1].headline, "A 94934.0 -> B 57349.2 samples/s (median of 2 repetitions), B: workers=1");
  EXPECT_EQ(entries[2].headline, "workers=0 pin=off batch=64 422.4 samples/s");
  EXPECT_EQ(entries[3].headline, "fp32 16407.6 samples/s");
  const std::string table = render_history_text(kPrevious.string(), entries);
  // The ranks x intra-op threads column: the previous version's 2-rank run kept LibTorch's 2 threads
  // per rank on 2 cores (oversubscribed), which the table now shows.
  for (const char* line : {"20261124-014008-mlp-baseline  baseline  fp32+compiled            1x2    74277.7  model compute (low)",
                           "20261124-014015-mlp-ab        ab        B: workers=1             1x2    57349.2  B/A 0.60x",
                           "20261124-014018-vision-sweep  sweep     workers=0 pin..          1x2      422.4  -",
                           "20261124-014025-mlp-run       run       fp32                     2x2    16407.6  -"}) {
    EXPECT_NE(table.find(line), std::string::npos) << line << "\nin\n" << table;
  }
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), 100u) << line;
}

}  // namespace
}  // namespace trainlab
