// The lab reading on both sides of each threshold, and the compiled-in thresholds file.
#include "diagnostics/baseline_reading.h"

#include <gtest/gtest.h>

namespace trainlab {
namespace {

LabVariantFigures ok(double sps, double data_wait_pct = 1) { return {true, sps, data_wait_pct}; }

bool mentions(const LabReading& r, const std::string& text) {
  for (const std::string& line : r.lines) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(ThresholdsTest, DefaultsCarryValuesAndSources) {
  const Thresholds& t = Thresholds::defaults();
  EXPECT_EQ(t.value("lab.precision_gain_pct"), 20);
  EXPECT_EQ(t.value("input_bound.high_pct"), 20);
  EXPECT_EQ(t.value("input_bound.moderate_pct"), 5);
  for (const auto& [key, threshold] : t.all()) EXPECT_FALSE(threshold.source.empty()) << key;
  EXPECT_THROW(t.at("no.such"), std::out_of_range);
}

TEST(ThresholdsTest, ParseRejectsMalformed) {
  EXPECT_THROW(Thresholds::parse("{"), std::invalid_argument);
  EXPECT_THROW(Thresholds::parse(R"({"schema_version": 2, "thresholds": {}})"), std::invalid_argument);
  EXPECT_THROW(Thresholds::parse(R"({"schema_version": 1, "thresholds": {"a": {"value": 1}}})"),
               std::invalid_argument);  // no source
}

TEST(ThresholdsTest, APartialFileOverridesOnlyItsKeys) {
  const Thresholds user = Thresholds::parse(
      R"({"schema_version": 1, "thresholds": {"input_bound.high_pct": {"value": 30, "source": "ours"}}})");
  const Thresholds merged = user.overriding(Thresholds::defaults());
  EXPECT_EQ(merged.value("input_bound.high_pct"), 30);
  EXPECT_EQ(merged.at("input_bound.high_pct").source, "ours");
  EXPECT_EQ(merged.value("input_bound.moderate_pct"), 5);  // the default stays
  EXPECT_EQ(merged.all().size(), Thresholds::defaults().all().size());
}

TEST(BaselineReadingTest, SmallPrecisionGainSaysNotPrecision) {
  const LabReading r = read_baseline_lab(ok(100), ok(115), ok(117), Thresholds::defaults());
  ASSERT_TRUE(r.precision_gain_pct);
  EXPECT_NEAR(*r.precision_gain_pct, 15.0, 1e-9);
  EXPECT_TRUE(mentions(r, "not precision"));
  EXPECT_TRUE(mentions(r, "already fused"));
  EXPECT_FALSE(mentions(r, "room in both"));
}

TEST(BaselineReadingTest, LargeGainsSayRoomInBoth) {
  const LabReading r = read_baseline_lab(ok(100), ok(125), ok(140), Thresholds::defaults());
  EXPECT_NEAR(*r.precision_gain_pct, 25.0, 1e-9);
  EXPECT_NEAR(*r.compile_gain_pct, 12.0, 1e-9);
  EXPECT_TRUE(mentions(r, "model compute"));
  EXPECT_TRUE(mentions(r, "pay off"));
  EXPECT_TRUE(mentions(r, "room in both"));
}

TEST(BaselineReadingTest, SlowerCompiledIsCalledSlower) {
  const LabReading r = read_baseline_lab(ok(100), ok(140), ok(100), Thresholds::defaults());
  EXPECT_NEAR(*r.compile_gain_pct, -100.0 * 40 / 140, 1e-9);
  EXPECT_TRUE(mentions(r, "made the step slower"));
  EXPECT_FALSE(mentions(r, "already fused"));
}

TEST(BaselineReadingTest, DataWaitBands) {
  EXPECT_TRUE(mentions(read_baseline_lab(ok(100, 25), ok(101), ok(101), Thresholds::defaults()), "input-bound; fix"));
  EXPECT_TRUE(mentions(read_baseline_lab(ok(100, 19.9), ok(101), ok(101), Thresholds::defaults()), "moderately"));
  EXPECT_TRUE(mentions(read_baseline_lab(ok(100, 4.9), ok(101), ok(101), Thresholds::defaults()), "keeps up"));
}

TEST(BaselineReadingTest, SmallPrecisionGainWithDataWaitNamesTheDataPipeline) {
  const auto t = Thresholds::defaults();
  EXPECT_TRUE(mentions(read_baseline_lab(ok(100, 15), ok(110, 30), ok(110, 30), t), "the data pipeline, not precision"));
  // A large gain, or a loader that keeps up under bf16, says nothing of the kind.
  EXPECT_FALSE(mentions(read_baseline_lab(ok(100, 15), ok(150, 30), ok(150, 30), t), "the data pipeline, not precision"));
  EXPECT_FALSE(mentions(read_baseline_lab(ok(100, 15), ok(110, 10), ok(110, 10), t), "the data pipeline, not precision"));
}

TEST(BaselineReadingTest, FailedVariantGivesNoReading) {
  const LabReading r = read_baseline_lab(ok(100), LabVariantFigures{}, ok(100), Thresholds::defaults());
  EXPECT_FALSE(r.precision_gain_pct);
  EXPECT_FALSE(r.compile_gain_pct);
  EXPECT_TRUE(mentions(r, "no reading"));
}

}  // namespace
}  // namespace trainlab
