// Variant parsing and validation: accepted values, defaults from the scenario, bad values.
#include "core/variant.h"
#include "scenarios/registry.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "scenarios/scenario_info.h"

namespace trainlab {
namespace {

ScenarioInfo test_scenario() {
  return ScenarioInfo{"toy", "a toy", 32, {{"width", 16, 1, 1024, true, "w"}, {"ratio", 0.5, 0, 1, false, "r"}}};
}

TEST(VariantTest, ParsesPrecisionDeviceAndOnOff) {
  EXPECT_EQ(parse_precision("fp32"), Precision::kFp32);
  EXPECT_EQ(parse_precision("bf16"), Precision::kBf16);
  EXPECT_THROW(parse_precision("fp8"), InputError);
  EXPECT_EQ(parse_device("cuda"), DeviceChoice::kCuda);
  EXPECT_THROW(parse_device("tpu"), InputError);
  EXPECT_TRUE(parse_on_off("--compiled", "on"));
  EXPECT_FALSE(parse_on_off("--compiled", "off"));
  EXPECT_THROW(parse_on_off("--compiled", "maybe"), InputError);
}

TEST(VariantTest, NamesFollowPrecisionAndCompiled) {
  VariantSpec spec;
  EXPECT_EQ(spec.name(), "fp32");
  spec.precision = Precision::kBf16;
  spec.compiled = true;
  EXPECT_EQ(spec.name(), "bf16+compiled");
}

TEST(VariantTest, ResolveFillsScenarioDefaults) {
  VariantSpec spec;
  spec.knobs["width"] = 64;
  resolve(spec, test_scenario());
  EXPECT_EQ(spec.scenario, "toy");
  EXPECT_EQ(spec.batch_size, 32);
  EXPECT_EQ(spec.knobs.at("width"), 64);    // given value kept
  EXPECT_EQ(spec.knobs.at("ratio"), 0.5);   // default filled in
}

TEST(VariantTest, ResolveRejectsImpossibleValues) {
  const ScenarioInfo info = test_scenario();
  auto resolve_with = [&](auto mutate) {
    VariantSpec spec;
    mutate(spec);
    resolve(spec, info);
  };
  EXPECT_THROW(resolve_with([](VariantSpec& s) { s.batch_size = -4; }), InputError);
  EXPECT_THROW(resolve_with([](VariantSpec& s) { s.batch_size = kMaxBatchSize; }), InputError);
  EXPECT_THROW(resolve_with([](VariantSpec& s) { s.steps = 0; }), InputError);
  EXPECT_THROW(resolve_with([](VariantSpec& s) { s.warmup_steps = -1; }), InputError);
  EXPECT_THROW(resolve_with([](VariantSpec& s) { s.threads = -2; }), InputError);
  EXPECT_THROW(resolve_with([](VariantSpec& s) { s.callback_ms = -1; }), InputError);
  EXPECT_THROW(resolve_with([](VariantSpec& s) { s.knobs["depth"] = 3; }), InputError);   // unknown
  EXPECT_THROW(resolve_with([](VariantSpec& s) { s.knobs["width"] = 4096; }), InputError);  // range
  EXPECT_THROW(resolve_with([](VariantSpec& s) { s.knobs["width"] = 2.5; }), InputError);   // integer
  EXPECT_NO_THROW(resolve_with([](VariantSpec& s) { s.knobs["ratio"] = 0.25; }));
}

TEST(VariantTest, ApplySettingParsesEachKeyAndRejectsGarbage) {
  VariantSpec spec;
  apply_setting(spec, "batch", "128");
  apply_setting(spec, "precision", "bf16");
  apply_setting(spec, "compiled", "on");
  apply_setting(spec, "sync-every", "1");
  apply_setting(spec, "callback-ms", "2.5");
  apply_setting(spec, "width", "8");
  EXPECT_EQ(spec.batch_size, 128);
  EXPECT_EQ(spec.precision, Precision::kBf16);
  EXPECT_TRUE(spec.compiled);
  EXPECT_EQ(spec.sync_every_steps, 1);
  EXPECT_DOUBLE_EQ(spec.callback_ms, 2.5);
  EXPECT_EQ(spec.knobs.at("width"), 8);
  EXPECT_THROW(apply_setting(spec, "batch", "12abc"), InputError);
  EXPECT_THROW(apply_setting(spec, "batch", "0"), InputError);
  EXPECT_THROW(apply_setting(spec, "seed", "-3"), InputError);
  EXPECT_THROW(apply_setting(spec, "callback-ms", "nan"), InputError);
}

TEST(VariantTest, JsonRoundTrip) {
  VariantSpec spec;
  spec.scenario = "toy";
  spec.precision = Precision::kBf16;
  spec.batch_size = 7;
  spec.seed = 99;
  spec.knobs = {{"width", 3}};
  const nlohmann::json j = spec;
  const VariantSpec back = j.get<VariantSpec>();
  EXPECT_EQ(nlohmann::json(back), j);
  EXPECT_EQ(back.seed, 99u);
}

}  // namespace
}  // namespace trainlab
