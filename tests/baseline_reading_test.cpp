// The lab reading on both sides of each threshold, and the compiled-in thresholds file.
#include "diagnostics/baseline_reading.h"

#include <gtest/gtest.h>

namespace trainlab {
namespace {

// Three repetitions around a geometric mean of `sps`: +-spread_pct, as interleaved runs vary.
LabVariantFigures reps(double sps, double data_wait_pct = 1, double spread_pct = 2) {
  LabVariantFigures f;
  f.ok = true;
  for (double k : {-1.0, 0.0, 1.0}) {
    f.samples_per_s.push_back(sps * (1.0 + k * spread_pct / 100.0));
    f.data_wait_pct.push_back(data_wait_pct);
  }
  return f;
}

// One repetition (no interval).
LabVariantFigures once(double sps, double data_wait_pct = 1) {
  LabVariantFigures f;
  f.ok = true;
  f.samples_per_s = {sps};
  f.data_wait_pct = {data_wait_pct};
  return f;
}

LabVariantFigures compiled_with(LabVariantFigures f, int64_t fused_groups, double ops_per_step) {
  f.compile_method = "torchscript-trace";
  f.fused_groups = fused_groups;
  f.ops_per_step = ops_per_step;
  return f;
}

int lines_mentioning(const LabReading& r, const std::string& text) {
  int n = 0;
  for (const std::string& line : r.lines) n += line.find(text) != std::string::npos ? 1 : 0;
  return n;
}

bool mentions(const LabReading& r, const std::string& text) {
  for (const std::string& line : r.lines) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(ThresholdsTest, DefaultsCarryValuesAndSources) {
  const Thresholds& t = Thresholds::defaults();
  EXPECT_EQ(t.value(threshold::lab::precision_gain_pct), 20);
  EXPECT_EQ(t.value(threshold::input_bound::high_pct), 20);
  EXPECT_EQ(t.value(threshold::input_bound::moderate_pct), 5);
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
  EXPECT_EQ(merged.value(threshold::input_bound::high_pct), 30);
  EXPECT_EQ(merged.at("input_bound.high_pct").source, "ours");
  EXPECT_EQ(merged.value(threshold::input_bound::moderate_pct), 5);  // the default stays
  EXPECT_EQ(merged.all().size(), Thresholds::defaults().all().size());
}

TEST(BaselineReadingTest, AGainWhoseIntervalIsUnderTheLineSaysNotPrecision) {
  const LabReading r = read_baseline_lab(reps(100), reps(110), compiled_with(reps(111), 3, 400),
                                         Thresholds::defaults());
  ASSERT_TRUE(r.precision_gain);
  EXPECT_TRUE(r.precision_gain->has_interval);
  EXPECT_NEAR(r.precision_gain->gain_pct, 10.0, 1e-9);  // ratio of geometric means
  EXPECT_LT(r.precision_gain->low_pct, 10.0);
  EXPECT_GT(r.precision_gain->high_pct, 10.0);
  EXPECT_LT(r.precision_gain->high_pct, 20.0);
  EXPECT_EQ(r.precision_gain->against_line, "below");
  EXPECT_TRUE(mentions(r, "precision is not what bounds the step"));
  EXPECT_NE(r.conclusion.find("not precision"), std::string::npos) << r.conclusion;
  EXPECT_EQ(r.lines.back(), r.conclusion);
}

TEST(BaselineReadingTest, AGainWhoseIntervalClearsTheLineSaysPrecisionMatters) {
  const LabReading r = read_baseline_lab(reps(100), reps(140), reps(170), Thresholds::defaults());
  EXPECT_EQ(r.precision_gain->against_line, "above");
  EXPECT_GE(r.precision_gain->low_pct, 20.0);
  EXPECT_EQ(r.compile_gain->against_line, "above");
  EXPECT_NE(r.conclusion.find("model compute bounds this run"), std::string::npos) << r.conclusion;
}

TEST(BaselineReadingTest, AnIntervalHoldingTheLineSaysAtTheLine) {
  // +20 % on the point with +-10 % repetitions: the interval holds +20 %.
  const LabReading r = read_baseline_lab(reps(100, 1, 10), reps(120, 1, 10), reps(120), Thresholds::defaults());
  EXPECT_EQ(r.precision_gain->against_line, "at the line");
  EXPECT_TRUE(mentions(r, "at the line"));
  EXPECT_NE(r.conclusion.find("undecided"), std::string::npos) << r.conclusion;
  EXPECT_EQ(r.conclusion.find("model compute bounds"), std::string::npos);
}

TEST(BaselineReadingTest, OneRepetitionHasNoIntervalAndSaysSo) {
  const LabReading r = read_baseline_lab(once(100), once(125), once(126), Thresholds::defaults());
  EXPECT_FALSE(r.precision_gain->has_interval);
  EXPECT_NEAR(r.precision_gain->gain_pct, 25.0, 1e-9);
  EXPECT_EQ(r.precision_gain->against_line, "above?");
  EXPECT_TRUE(mentions(r, "no interval"));
  EXPECT_NE(r.conclusion.find("tentative"), std::string::npos) << r.conclusion;
}

TEST(BaselineReadingTest, CompiledThatFusedNothingSaysNothingAboutFusion) {
  const LabReading r = read_baseline_lab(reps(100), reps(140), compiled_with(reps(141), 0, 5935),
                                         Thresholds::defaults());
  LabVariantFigures bf16 = reps(140);
  bf16.ops_per_step = 5501;
  const LabReading with_ops = read_baseline_lab(reps(100), bf16, compiled_with(reps(141), 0, 5935),
                                                Thresholds::defaults());
  EXPECT_TRUE(mentions(r, "fused nothing (0 fusion groups)"));
  EXPECT_FALSE(mentions(r, "already fused"));
  EXPECT_TRUE(mentions(with_ops, "host ops per step 5501 -> 5935"));
  EXPECT_EQ(r.compile_gain->against_line, "below");
}

TEST(BaselineReadingTest, InductorsKernelsAreNamedAndAnUnavailableCompilerIsNotAGain) {
  LabVariantFigures inductor = compiled_with(reps(400), 6, 1116);
  inductor.compile_method = "inductor-aot";
  const LabReading r = read_baseline_lab(reps(100), reps(100), inductor, Thresholds::defaults());
  EXPECT_TRUE(mentions(r, "compiling (inductor-aot) generated 6 fused kernels"));
  LabVariantFigures unavailable;  // the variant failed as "unavailable": no figures, a reason
  unavailable.unavailable = "the compiled variant needs the Python side";
  const LabReading u = read_baseline_lab(reps(100), reps(140), unavailable, Thresholds::defaults());
  EXPECT_FALSE(u.compile_gain.has_value());
  EXPECT_TRUE(mentions(u, "bf16 -> compiled: compiling could not be measured: the compiled variant needs the Python side."));
  EXPECT_FALSE(mentions(u, "no reading"));
}

// A compiled run whose loss is NaN from its first step beside a finite bf16 run computes the wrong
// thing: its speed is not read as a compile gain (an AVX-512 kernel of Inductor's package on an AMX Xeon). Where
// the base is not finite either, the model itself is at fault and the gain is read as usual.
TEST(BaselineReadingTest, ACompiledRunThatComputesNaNFromItsFirstStepIsNotAGain) {
  LabVariantFigures inductor = compiled_with(reps(130), 30, 1315);
  inductor.compile_method = "inductor-aot";
  inductor.loss_not_finite_from_start = true;
  const LabReading r = read_baseline_lab(reps(100), reps(110), inductor, Thresholds::defaults());
  EXPECT_FALSE(r.compile_gain.has_value());
  EXPECT_TRUE(mentions(r, "bf16 -> compiled: not read: the compiled run's loss was NaN or Inf from its first step "
                          "while bf16's stays finite"));
  LabVariantFigures bf16 = reps(110);
  bf16.loss_not_finite_from_start = true;
  const LabReading both = read_baseline_lab(reps(100), bf16, inductor, Thresholds::defaults());
  ASSERT_TRUE(both.compile_gain.has_value());
  EXPECT_NEAR(both.compile_gain->gain_pct, 100.0 * (130.0 / 110.0 - 1.0), 0.5);
  EXPECT_FALSE(mentions(both, "not read"));
}

// bf16 refused by the exporter or Inductor where fp32 compiled: the compiled run is fp32+compiled,
// so its gain is read against fp32 (130 over 100), not against bf16 (130 over 140), and the
// refusal is said.
TEST(BaselineReadingTest, ABf16CompileRefusalReadsTheFp32CompiledRunAgainstFp32) {
  LabVariantFigures fp32_compiled = compiled_with(reps(130), 3, 80);
  fp32_compiled.compile_method = "inductor-aot";
  const LabReading r = read_baseline_lab(reps(100), reps(140), fp32_compiled, Thresholds::defaults(), nullptr,
                                         "export failed: NotImplementedError [in net.py:12 (forward)]");
  ASSERT_TRUE(r.precision_gain && r.compile_gain);
  EXPECT_NEAR(r.precision_gain->gain_pct, 40.0, 1e-9);  // fp32 -> bf16 still read
  EXPECT_NEAR(r.compile_gain->gain_pct, 30.0, 1e-9);
  EXPECT_TRUE(mentions(r, "bf16 could not be compiled (export failed: NotImplementedError [in net.py:12 (forward)]): "
                          "the compiled run is fp32+compiled, read against fp32."));
  EXPECT_TRUE(mentions(r, "fp32 -> compiled +30.0 %"));
  EXPECT_FALSE(mentions(r, "bf16 -> compiled"));
  // Without a refusal the same figures are bf16 -> compiled: -7.1 %.
  const LabReading plain = read_baseline_lab(reps(100), reps(140), fp32_compiled, Thresholds::defaults());
  EXPECT_NEAR(plain.compile_gain->gain_pct, -100.0 * 10 / 140, 1e-9);
}

TEST(BaselineReadingTest, SlowerCompiledIsCalledSlower) {
  const LabReading r = read_baseline_lab(reps(100), reps(140), compiled_with(reps(100), 2, 300),
                                         Thresholds::defaults());
  EXPECT_NEAR(r.compile_gain->gain_pct, -100.0 * 40 / 140, 1e-9);
  EXPECT_LT(r.compile_gain->high_pct, 0.0);
  EXPECT_TRUE(mentions(r, "and slower"));
}

TEST(BaselineReadingTest, DataWaitAndAPrecisionGainGiveOneReadingNotTwo) {
  // The issue's lab: bf16 +20 % and 17 % data wait read as both "bound by model compute" and
  // "moderately input-bound". Now one conclusion carries both figures.
  const LabReading r = read_baseline_lab(reps(100, 17), reps(140, 20), reps(140, 20), Thresholds::defaults());
  EXPECT_EQ(lines_mentioning(r, "Reading:"), 1);
  EXPECT_NE(r.conclusion.find("model compute bounds this run"), std::string::npos) << r.conclusion;
  EXPECT_NE(r.conclusion.find("secondary"), std::string::npos) << r.conclusion;
  EXPECT_EQ(lines_mentioning(r, "input-bound"), 0);
}

TEST(BaselineReadingTest, HighDataWaitNamesTheDataPipelineWhateverPrecisionDid) {
  const auto t = Thresholds::defaults();
  const LabReading small_gain = read_baseline_lab(reps(100, 45), reps(104, 50), reps(104, 50), t);
  EXPECT_NE(small_gain.conclusion.find("the data pipeline bounds this run"), std::string::npos);
  const LabReading big_gain = read_baseline_lab(reps(100, 25), reps(140, 35), reps(140, 35), t);
  EXPECT_NE(big_gain.conclusion.find("the data pipeline bounds this run"), std::string::npos);
  EXPECT_NE(big_gain.conclusion.find("compute is the other large part"), std::string::npos);
  // bf16's faster compute left the step waiting on data: the pipeline, not precision.
  const LabReading moved = read_baseline_lab(reps(100, 15), reps(104, 30), reps(104, 30), t);
  EXPECT_NE(moved.conclusion.find("only left the step waiting on data"), std::string::npos) << moved.conclusion;
}

TEST(BaselineReadingTest, Bf16SlowerThanFp32SaysNothingAboutWhatBoundsTheStep) {
  // Emulated bf16 (an AVX2-only CPU): mlp measured 1783 -> 14 samples/s. Not "not precision".
  const LabReading r = read_baseline_lab(reps(1783), reps(14), reps(15), Thresholds::defaults());
  EXPECT_LT(r.precision_gain->high_pct, 0.0);
  EXPECT_TRUE(mentions(r, "bf16 is slower than fp32 on this machine"));
  EXPECT_NE(r.conclusion.find("no precision reading"), std::string::npos) << r.conclusion;
  EXPECT_EQ(r.conclusion.find("not precision"), std::string::npos) << r.conclusion;
}

TEST(BaselineReadingTest, FailedVariantGivesNoReading) {
  const LabReading r = read_baseline_lab(reps(100), LabVariantFigures{}, reps(100), Thresholds::defaults());
  EXPECT_FALSE(r.precision_gain);
  EXPECT_FALSE(r.compile_gain);
  EXPECT_TRUE(mentions(r, "no reading"));
}

TEST(Bf16ProbeTest, AnEmulatedBf16GemmIsLeftOutWithItsInterval) {
  // ns per call: bf16 20-30x slower than fp32 (the AVX2-only EPYC's figure), seven pairs.
  const std::vector<double> fp32_ns = {700, 710, 690, 720, 705, 695, 715};
  const std::vector<double> bf16_ns = {20000, 24000, 18000, 22000, 21000, 19000, 23000};
  const Bf16Probe probe = read_bf16_probe(fp32_ns, bf16_ns, "avx512_bf16 no", -80);
  ASSERT_TRUE(probe.measured);
  EXPECT_EQ(probe.pairs, 7);
  EXPECT_TRUE(probe.gemm_gain.has_interval);
  EXPECT_NEAR(probe.gemm_gain.gain_pct, -96.2, 0.1);  // the fastest samples: 690 ns against 18,000-19,000
  EXPECT_LT(probe.gemm_gain.high_pct, -80);
  EXPECT_TRUE(probe.bf16_left_out);
}

TEST(Bf16ProbeTest, ANativeOrNoisyProbeKeepsTheBf16Runs) {
  const std::vector<double> fp32_ns = {700, 710, 690, 720};
  EXPECT_FALSE(read_bf16_probe(fp32_ns, {400, 420, 390, 410}, "", -80).bf16_left_out);  // bf16 faster
  // Around 5x slower with a wide spread: the interval reaches over the line, so the runs stay.
  const Bf16Probe noisy = read_bf16_probe(fp32_ns, {2000, 6000, 3000, 5000}, "", -80);
  EXPECT_GT(noisy.gemm_gain.high_pct, -80);
  EXPECT_FALSE(noisy.bf16_left_out);
  EXPECT_FALSE(read_bf16_probe({700}, {20000}, "", -80).measured);  // one pair: no interval, no decision
  EXPECT_FALSE(read_bf16_probe(fp32_ns, {1, 2}, "", -80).measured);  // unpaired
}

TEST(BaselineReadingTest, WithBf16LeftOutThePrecisionLineIsTheProbeAndCompilingStartsFromFp32) {
  const Bf16Probe probe = read_bf16_probe({700, 710, 690, 720}, {20000, 24000, 18000, 22000}, "avx512_bf16 no", -80);
  ASSERT_TRUE(probe.bf16_left_out);
  const LabReading r = read_baseline_lab(reps(100), LabVariantFigures{}, compiled_with(reps(130), 4, 200),
                                         Thresholds::defaults(), &probe);
  ASSERT_TRUE(r.precision_gain && r.compile_gain);
  EXPECT_NEAR(r.precision_gain->gain_pct, probe.gemm_gain.gain_pct, 1e-9);
  EXPECT_TRUE(mentions(r, "fp32 -> bf16 not run"));
  EXPECT_TRUE(mentions(r, "avx512_bf16 no"));
  EXPECT_NEAR(r.compile_gain->gain_pct, 30.0, 1e-9);  // fp32 -> fp32+compiled
  EXPECT_TRUE(mentions(r, "fp32 -> compiled +30.0 %"));
  EXPECT_EQ(r.compile_gain->against_line, "above");
  EXPECT_NE(r.conclusion.find("this CPU emulates bf16"), std::string::npos) << r.conclusion;
  EXPECT_EQ(r.lines.back(), r.conclusion);
}

LabVariantFigures with_compute(LabVariantFigures f, double compute_pct, double step_ms = 10) {
  f.compute_pct.assign(f.samples_per_s.size(), compute_pct);
  f.step_ms.assign(f.samples_per_s.size(), step_ms);
  return f;
}

// The issue's CPU: bf16 GEMMs measured 0.73x fp32 (avx512_bf16 present), resnet18 99 % compute.
TEST(BaselineReadingTest, AProbeSlowerBf16AndAComputeBoundStepSayPrecisionCannotHelp) {
  const Bf16Probe probe =
      read_bf16_probe({100, 102, 98, 101}, {137, 140, 134, 138}, "avx512_bf16 yes, amx_bf16 no", -80);
  ASSERT_TRUE(probe.measured);
  ASSERT_FALSE(probe.bf16_left_out);
  ASSERT_LT(probe.gemm_gain.high_pct, 0);
  const LabReading r = read_baseline_lab(with_compute(reps(100), 99), reps(80), compiled_with(reps(81), 3, 400),
                                         Thresholds::defaults(), &probe);
  EXPECT_TRUE(mentions(r, "precision cannot help here")) << r.lines.front();
  EXPECT_TRUE(mentions(r, "bf16 GEMMs 0.73x fp32 on this CPU, compute 99 % of the fp32 step")) << r.lines.front();
  EXPECT_NE(r.conclusion.find("model compute is 99 % of the fp32 step"), std::string::npos) << r.conclusion;
  EXPECT_NE(r.conclusion.find("precision cannot help here"), std::string::npos) << r.conclusion;
  EXPECT_FALSE(mentions(r, "waits on something else"));
  EXPECT_FALSE(mentions(r, "emulat"));  // the probe found a bf16 unit
}

// The probe slower, yet the step clearly faster in bf16: the reading says the gain lies outside the
// GEMMs instead of "precision cannot help".
TEST(BaselineReadingTest, AGainThatTheProbeCannotExplainIsNotDenied) {
  const Bf16Probe probe = read_bf16_probe({100, 102, 98, 101}, {137, 140, 134, 138}, "avx512_bf16 yes", -80);
  const LabReading r = read_baseline_lab(with_compute(reps(100), 60), reps(130), compiled_with(reps(131), 3, 400),
                                         Thresholds::defaults(), &probe);
  EXPECT_TRUE(mentions(r, "faster than the probe's GEMMs allow")) << r.lines.front();
  EXPECT_NE(r.conclusion.find("bf16 gained +30.0 % although the probe measured its GEMMs 0.73x fp32"),
            std::string::npos)
      << r.conclusion;
  EXPECT_EQ(r.conclusion.find("cannot help"), std::string::npos) << r.conclusion;
}

// Before the change: "the step waits on something else" at compute 80 % whenever bf16 gained under
// the 20 % line, probe or none.
TEST(BaselineReadingTest, ComputeAtSeventyPercentOrMoreNeverWaitsOnSomethingElse) {
  const LabReading r = read_baseline_lab(with_compute(reps(100), 80), reps(105), compiled_with(reps(106), 3, 400),
                                         Thresholds::defaults());
  EXPECT_EQ(r.precision_gain->against_line, "below");
  EXPECT_FALSE(mentions(r, "waits on something else")) << r.conclusion;
  EXPECT_NE(r.conclusion.find("model compute is 80.0 % of the fp32 step"), std::string::npos) << r.conclusion;
  // Under 70 % the seeds' reading stands.
  const LabReading low = read_baseline_lab(with_compute(reps(100), 40), reps(105), compiled_with(reps(106), 3, 400),
                                           Thresholds::defaults());
  EXPECT_NE(low.conclusion.find("waits on something else"), std::string::npos) << low.conclusion;
}

// Probe 1.8x, compute 90 %: at most 1 / (0.1 + 0.9 / 1.8) - 1 = +66.7 %; measured +5 %.
TEST(BaselineReadingTest, AFastProbeAndASmallGainSayFarLessThanTheHardwareCouldGive) {
  const Bf16Probe probe = read_bf16_probe({180, 180, 180}, {100, 100, 100}, "avx512_bf16 yes, amx_bf16 yes", -80);
  ASSERT_NEAR(probe.gemm_gain.gain_pct, 80.0, 1e-9);
  LabVariantFigures fp32 = with_compute(reps(100, 1), 90);
  fp32.ops_per_step = 250;
  const LabReading r =
      read_baseline_lab(fp32, reps(105), compiled_with(reps(106), 3, 400), Thresholds::defaults(), &probe);
  EXPECT_TRUE(mentions(r, "bf16 could give at most +66.7 % here (probe: bf16 GEMMs 1.80x fp32 on this CPU, "
                          "compute 90 % of the fp32 step); measured +5.0 %"))
      << r.lines.front();
  EXPECT_TRUE(mentions(r, "far less than the hardware could give"));
  EXPECT_NE(r.conclusion.find("What else bounds it: compute outside the GEMMs the probe measured"), std::string::npos)
      << r.conclusion;
  EXPECT_NE(r.conclusion.find("host dispatch of 250 ops per step"), std::string::npos) << r.conclusion;
  EXPECT_FALSE(mentions(r, "waits on something else"));
  // Measured near the bound: compute bounds the run, and the 20 % line plays no part.
  const LabReading got = read_baseline_lab(fp32, reps(160), compiled_with(reps(161), 3, 400),
                                           Thresholds::defaults(), &probe);
  EXPECT_NE(got.conclusion.find("model compute bounds this run: bf16 gained +60.0 % of at most +66.7 %"),
            std::string::npos)
      << got.conclusion;
}

// An interval holding half the bound (+33.3 %) cannot tell: the reading says so, the lab's rounds
// go on ("at the line"), and compute at 90 % still never "waits on something else".
TEST(BaselineReadingTest, AnIntervalHoldingHalfTheBoundIsUndecidedAndAsksForMoreRounds) {
  const Bf16Probe probe = read_bf16_probe({180, 180, 180}, {100, 100, 100}, "avx512_bf16 yes", -80);
  LabVariantFigures fp32 = with_compute(reps(100), 90), bf16 = reps(100);
  fp32.samples_per_s = {100, 100, 100};
  bf16.samples_per_s = {105, 160, 300};
  const LabReading r = read_baseline_lab(fp32, bf16, compiled_with(reps(300), 3, 400), Thresholds::defaults(), &probe);
  EXPECT_EQ(r.precision_gain->against_line, "at the line");
  EXPECT_TRUE(mentions(r, "the interval holds half of that, so 3 repetitions cannot tell")) << r.lines.front();
  EXPECT_NE(r.conclusion.find("model compute is 90 % of the fp32 step"), std::string::npos) << r.conclusion;
  EXPECT_NE(r.conclusion.find("cannot tell yet"), std::string::npos) << r.conclusion;
  EXPECT_FALSE(mentions(r, "waits on something else"));
}

// Compiling: 400 -> 100 ops at 5 us each is 1.5 ms of a 10 ms bf16 step, 15 %: at most +17.6 %.
TEST(BaselineReadingTest, TheCompileLineBoundsWhatFusingCanRemove) {
  const LabReading r = read_baseline_lab(reps(100), with_compute(compiled_with(reps(110), 0, 400), 90, 10),
                                         compiled_with(reps(115), 12, 100), Thresholds::defaults());
  EXPECT_TRUE(mentions(r, "fusing could remove at most the dispatch of 300 ops per step (15.0 % of the step at 5 us "
                          "each: at most +17.6 %); measured +4.5 %"))
      << r.lines[1];
  const LabReading more = read_baseline_lab(reps(100), with_compute(compiled_with(reps(110), 0, 400), 90, 10),
                                            compiled_with(reps(165), 12, 100), Thresholds::defaults());
  EXPECT_TRUE(mentions(more, "more than dispatch alone")) << more.lines[1];
}

// The probe left bf16 out on a CPU with a bf16 unit: say what it measured, not "emulates".
TEST(BaselineReadingTest, ALeftOutBf16WithABf16UnitIsNotCalledEmulated) {
  const Bf16Probe probe = read_bf16_probe({700, 710, 690, 720}, {20000, 24000, 18000, 22000}, "avx512_bf16 yes", -80);
  ASSERT_TRUE(probe.bf16_left_out);
  const LabReading r = read_baseline_lab(reps(100), LabVariantFigures{}, compiled_with(reps(130), 4, 200),
                                         Thresholds::defaults(), &probe);
  EXPECT_FALSE(mentions(r, "emulates")) << r.lines.front() << "\n" << r.conclusion;
  EXPECT_TRUE(mentions(r, "despite the CPU's bf16 unit"));
}

// One disturbed round among three interleaved ones: the gain stays near the two steady rounds.
TEST(BaselineReadingTest, OneDisturbedRoundDoesNotWidenTheGainAHundredfold) {
  LabVariantFigures fp32 = reps(100), bf16 = reps(100);
  bf16.samples_per_s = {110, 111, 20};  // round 3 of bf16 ran beside another process
  fp32.samples_per_s = {100, 100, 100};
  const LabReading r = read_baseline_lab(fp32, bf16, compiled_with(reps(112), 3, 400), Thresholds::defaults());
  ASSERT_TRUE(r.precision_gain && r.precision_gain->has_interval);
  EXPECT_NEAR(r.precision_gain->gain_pct, 10.0, 1e-9);  // the median round
  EXPECT_LT(r.precision_gain->high_pct - r.precision_gain->low_pct, 30.0);
}

// Another process slowed 8 of the 15 bf16 samples and 5 of the fp32 ones, paired as they were taken:
// the probe reads the fastest samples, so the hardware's 1.82x stands (paired as taken, the median
// pair held a slowed bf16 sample and read bf16 slower than fp32).
TEST(BaselineReadingTest, TheProbeReadsTheFastestSamplesSoANeighboursBurstDoesNotDecide) {
  std::vector<double> fp32(15, 100.0), bf16(15, 55.0);
  for (int k : {1, 4, 7, 10, 13}) fp32[k] = 300;
  for (int k : {0, 2, 3, 5, 6, 8, 9, 11}) bf16[k] = 200;
  const Bf16Probe probe = read_bf16_probe(fp32, bf16, "avx512_bf16 yes", -80);
  ASSERT_TRUE(probe.measured);
  EXPECT_NEAR(probe.gemm_gain.gain_pct, 100.0 * (100.0 / 55.0 - 1.0), 1e-6);
  EXPECT_EQ(probe.pairs, 15);
}

}  // namespace
}  // namespace trainlab
