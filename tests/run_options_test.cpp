// The run options table: every option reads its own text back, the spec's JSON is the table's,
// and a resolved spec rebuilt from spec_arguments() through the CLI is the same spec.
#include "core/run_options.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "harness/cli/variant_options.h"
#include "scenarios/model_bundle.h"
#include "scenarios/registry.h"

namespace trainlab {
namespace {

// The spec the run command's CLI builds from `args` (what a doctor child receives).
VariantSpec spec_from_arguments(const std::vector<std::string>& args) {
  CLI::App app;
  VariantOptions parsed;
  add_variant_options(&app, parsed, CommandKind::kRun);
  std::vector<const char*> argv = {"trainlab"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return build_spec(parsed);
}

TEST(RunOptionsTest, NamesAreUniqueAndEachShowsWhatItApplies) {
  std::set<std::string> names;
  VariantSpec spec;
  spec.scenario = "mlp";
  spec.batch_size = 64;  // resolved: 0 is no batch size
  for (const RunOption& o : run_options()) {
    EXPECT_TRUE(names.insert(o.name).second) << o.name;
    EXPECT_FALSE(o.help.empty()) << o.name;
    EXPECT_FALSE(o.value_name.empty()) << o.name;
    const std::string shown = o.show(spec);
    if (shown.empty()) continue;  // data-dir and window unset
    VariantSpec again = spec;
    o.apply(again, shown);
    EXPECT_EQ(o.show(again), shown) << o.name;
  }
  EXPECT_EQ(find_run_option("sync-every")->show(spec), "10");
  EXPECT_EQ(find_run_option("nope"), nullptr);
}

TEST(RunOptionsTest, SettingsAndTheirErrorsNameTheOption) {
  VariantSpec spec;
  apply_setting(spec, "window", "3:4");
  EXPECT_TRUE(spec.profile);  // a window is a capture
  EXPECT_EQ(spec.window_start, 3);
  EXPECT_EQ(spec.window_steps, 4);
  apply_setting(spec, "trace-format", "json");
  EXPECT_FALSE(spec.trace_gzip);
  apply_setting(spec, "bucket-mb", "12.5");
  EXPECT_EQ(spec.bucket_mb, 12.5);
  apply_setting(spec, "hidden", "64");  // not an option: a scenario knob
  EXPECT_EQ(spec.knobs.at("hidden"), 64);
  try {
    apply_setting(spec, "workers", "99999999999");
    FAIL() << "an int field took 99999999999";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--workers"), std::string::npos) << e.what();
  }
  EXPECT_THROW(apply_setting(spec, "comm-mode", "sideways"), InputError);
  EXPECT_THROW(apply_setting(spec, "max-loop-s", "-1"), InputError);
  // The op sample: a fraction in (0, 1], in the spec's JSON only when it samples.
  EXPECT_FALSE(nlohmann::json(spec).contains("op_sample"));
  apply_setting(spec, "op-sample", "0.25");
  EXPECT_EQ(nlohmann::json(spec).at("op_sample"), 0.25);
  EXPECT_EQ(nlohmann::json(spec).get<VariantSpec>().op_sample, 0.25);
  for (const char* bad : {"0", "-0.5", "1.5", "nan", "x"}) {
    EXPECT_THROW(apply_setting(spec, "op-sample", bad), InputError) << bad;
  }
}

// Ranges live in the table only: check_spec walks it, so a spec that never went through apply (read
// from run.json) is refused with the same line as the flag, and a default spec is inside every range.
TEST(RunOptionsTest, CheckSpecRefusesWhatTheTableRefusesWhateverTheWayIn) {
  VariantSpec defaults;
  defaults.batch_size = 32;
  size_t ranged = 0;
  for (const RunOption& option : run_options()) {
    if (!option.check_range) continue;
    ++ranged;
    EXPECT_NO_THROW(option.check_range(defaults)) << option.name;
  }
  EXPECT_GE(ranged, 15u);  // batch, workers, prefetch, threads, steps, warmup, the loop budgets, ...
  for (const auto& [name, bad] : std::vector<std::pair<std::string, std::string>>{
           {"prefetch", "0"}, {"workers", "257"}, {"threads", "5000"}, {"dist-timeout-s", "0.5"}, {"op-sample", "0"}}) {
    std::string flag_error;
    try {
      find_run_option(name)->apply(defaults, bad);
    } catch (const InputError& e) {
      flag_error = e.what();
    }
    ASSERT_FALSE(flag_error.empty()) << name;
    nlohmann::json j;
    to_json(j, defaults);
    j[name == "dist-timeout-s" ? "dist_timeout_s" : name == "op-sample" ? "op_sample" : name] = std::stod(bad);
    VariantSpec read = j.get<VariantSpec>();
    std::string spec_error;
    try {
      check_spec(read);
    } catch (const InputError& e) {
      spec_error = e.what();
    }
    EXPECT_EQ(spec_error, flag_error) << name;
  }
}

TEST(RunOptionsTest, TheSpecJsonHoldsEveryOptionsKeysAndReadsBack) {
  VariantSpec spec;
  spec.scenario = "mlp";
  spec.batch_size = 32;
  spec.workers = 2;
  spec.comm_mode = CommMode::kSerial;
  spec.trace_gzip = false;
  spec.knobs = {{"hidden", 64}};
  const nlohmann::json j = spec;
  for (const char* key : {"name", "scenario", "precision", "compiled", "batch_size", "threads", "steps", "warmup_steps",
                          "max_loop_s", "seed", "sync_every_steps", "callback_every_steps", "callback_ms",
                          "keep_loss_graphs", "grad_norm_every_steps", "device", "workers", "prefetch",
                          "persistent_workers", "pin_memory", "data_dir", "system_sampler", "profile", "window_start",
                          "window_steps", "sample_interval_ms", "record_shapes", "trace_gzip", "nproc", "comm_mode",
                          "bucket_mb", "dist_timeout_s", "knobs"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.size(), 33u);  // nothing else
  const VariantSpec back = j.get<VariantSpec>();
  EXPECT_EQ(nlohmann::json(back), j);
  // min_loop_s only where set (records made before it write back as they were).
  spec.min_loop_s = 1.5;
  const nlohmann::json with_floor = spec;
  EXPECT_EQ(with_floor.size(), 34u);
  EXPECT_DOUBLE_EQ(with_floor.at("min_loop_s").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(with_floor.get<VariantSpec>().min_loop_s, 1.5);
}

TEST(RunOptionsTest, AResolvedSpecRebuiltFromItsArgumentsIsTheSameSpec) {
  VariantOptions given;
  given.scenario = "recsys";
  given.preset = "data-bound";
  given.given["workers"] = "2";
  given.given["precision"] = "bf16";
  given.given["steps"] = "12";
  given.given["max-loop-s"] = "2.5";
  given.given["comm-mode"] = "serial";
  given.flags["record-shapes"] = true;
  const VariantSpec spec = build_spec(given);

  EXPECT_EQ(nlohmann::json(spec_from_arguments(spec_arguments(spec))), nlohmann::json(spec));
}

// A model bundle as --model sees it: the manifest names the scenario and the default batch; the
// spec keeps the bundle's absolute folder (its JSON key only then), and rebuilds from --model.
TEST(RunOptionsTest, AModelBundleIsTheScenarioAndRebuildsFromItsArguments) {
  const std::string dir = ::testing::TempDir() + "/trainlab_bundle_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir + "/manifest.json")
        << R"({"format": 1, "name": "my_net", "source": {"file": "net.py", "factory": "make"},
              "inputs": [{"name": "x", "dtype": "float32", "shape": [24, 8]}],
              "target": {"name": "y", "dtype": "int64", "shape": [24], "range": [0, 3]},
              "batch_size": 24, "loss": "cross_entropy", "optimizer": {"name": "sgd", "lr": 0.1, "momentum": 0.9},
              "parameters": 36, "flops_per_sample": 216.0})";
    std::ofstream(dir + "/model.pt") << "x";
    std::ofstream(dir + "/loss.pt") << "x";
  }
  VariantOptions given;
  given.given["model"] = dir;
  given.given["steps"] = "7";
  const VariantSpec spec = build_spec(given);
  EXPECT_EQ(spec.scenario, "my_net");
  EXPECT_EQ(spec.batch_size, 24);
  EXPECT_EQ(spec.model, std::filesystem::path(dir).lexically_normal().string());
  EXPECT_EQ(nlohmann::json(spec).at("model"), spec.model);
  EXPECT_FALSE(nlohmann::json(VariantSpec{}).contains("model"));  // built-in records read unchanged
  const ModelBundle bundle = load_model_bundle(dir);
  EXPECT_EQ(bundle.optimizer, "sgd");
  EXPECT_EQ(bundle.momentum, 0.9);
  EXPECT_EQ(bundle.target.high, 3);
  EXPECT_EQ(bundle.flops_per_sample, 216.0);

  const std::vector<std::string> args = spec_arguments(spec);
  ASSERT_GE(args.size(), 2u);
  EXPECT_EQ(args[0], "--model");
  EXPECT_EQ(nlohmann::json(spec_from_arguments(args)), nlohmann::json(spec));

  given.scenario = "mlp";
  EXPECT_THROW(build_spec(given), InputError);  // --scenario and --model exclude each other
  VariantOptions knob;
  knob.given["model"] = dir;
  knob.knobs = {"hidden=3"};
  EXPECT_THROW(build_spec(knob), InputError);  // a bundle has no knobs
  std::filesystem::remove(dir + "/manifest.json");
  EXPECT_THROW(load_model_bundle(dir), InputError);
}

}  // namespace
}  // namespace trainlab
