// doctor without running anything: which settings a finding's change stands for, and the terminal
// and HTML renderings of a hand-built outcome (trials, the best configuration, what remains).
#include "harness/dist/dist_env.h"
#include "harness/report/doctor_report.h"
#include "harness/runner/doctor.h"

#include <gtest/gtest.h>

namespace trainlab {
namespace {

TEST(DoctorTest, SettingsForEachChangeFollowTheConfiguration) {
  VariantSpec spec;
  spec.workers = 2;
  spec.prefetch = 2;
  spec.precision = Precision::kFp32;
  spec.batch_size = 64;
  spec.nproc = 2;
  spec.comm_mode = CommMode::kSerial;
  spec.bucket_mb = 25.0;
  spec.knobs = {{"cache", 0.0}};
  EXPECT_EQ(settings_for_change("more_workers", spec, false), "workers=4");
  EXPECT_EQ(settings_for_change("more_prefetch", spec, false), "prefetch=4");
  EXPECT_EQ(settings_for_change("pin_memory", spec, false), "");  // no CUDA: does not apply
  EXPECT_EQ(settings_for_change("pin_memory", spec, true), "pin-memory=on");
  EXPECT_EQ(settings_for_change("decoded_cache", spec, false), "cache=1");
  EXPECT_EQ(settings_for_change("bf16", spec, false), "precision=bf16");
  EXPECT_EQ(settings_for_change("larger_batch", spec, false), "batch=128");
  EXPECT_EQ(settings_for_change("overlap_comm", spec, false), "comm-mode=overlap");
  EXPECT_EQ(settings_for_change("bucket_size", spec, false), "bucket-mb=50");
  EXPECT_EQ(settings_for_change("no_such_change", spec, false), "");
  // Oversubscribed ranks: each gets the usable cores divided by the ranks (at least one).
  VariantSpec oversubscribed = spec;
  oversubscribed.threads = 64;
  EXPECT_EQ(settings_for_change("fewer_threads", oversubscribed, false),
            "threads=" + std::to_string(std::max(1, usable_cores() / 2)));
  VariantSpec one_process = oversubscribed;
  one_process.nproc = 1;
  EXPECT_EQ(settings_for_change("fewer_threads", one_process, false), "");
  VariantSpec no_workers = spec;
  no_workers.workers = 0;
  no_workers.knobs.clear();  // a scenario without a decoded cache
  EXPECT_EQ(settings_for_change("more_workers", no_workers, false), "workers=1");
  EXPECT_EQ(settings_for_change("more_prefetch", no_workers, false), "");
  EXPECT_EQ(settings_for_change("decoded_cache", no_workers, false), "");
}

DoctorOutcome sample_outcome() {
  DoctorOutcome o;
  o.out_dir = "/tmp/doc";
  o.configuration = {"--scenario", "recsys", "--preset", "data-bound"};
  o.diagnosis_headline = "data pipeline: 45.9 % of the step";
  o.diagnosis_report = "/tmp/doc/profile/run-1/report.html";
  o.trials = {{"more_workers", "workers=1", "input_bound", 0.5, -19.8, 20.8, "unchanged", "/tmp/doc/trial-more_workers/r"},
              {"decoded_cache", "cache=1", "input_bound", 98.3, 55.0, 141.5, "improved", "/tmp/doc/trial-decoded_cache/r"},
              {"compiled", "compiled=on", "<dispatch>", 0, 0, 0, "failed: child exited 3", ""}};
  o.best_settings = "cache=1";
  o.best_gain_pct = 98.3;
  o.after_headline = "model compute: 90 % of the step";
  o.after_report = "/tmp/doc/after/run-2/report.html";
  o.after_findings = {"moderate: compute is 90 % of the step"};
  o.unaddressed_findings = {"host syncs < every step"};
  return o;
}

TEST(DoctorTest, TerminalReportSaysWhichChangeGaveWhatAndWhatRemains) {
  const std::string text = render_doctor(sample_outcome());
  EXPECT_NE(text.find("decoded_cache      cache=1    +98.3 %"), std::string::npos) << text;
  EXPECT_NE(text.find("Best measured configuration: cache=1 (1.98x samples/s)"), std::string::npos) << text;
  EXPECT_NE(text.find("With it: model compute: 90 % of the step"), std::string::npos) << text;
  EXPECT_NE(text.find("  - moderate: compute is 90 % of the step"), std::string::npos) << text;
  EXPECT_NE(text.find("Findings no trial addressed:\n  - host syncs < every step"), std::string::npos) << text;
  DoctorOutcome nothing = sample_outcome();
  nothing.best_settings.clear();
  nothing.after_headline.clear();
  EXPECT_NE(render_doctor(nothing).find("the one given (no change measurably helped)"), std::string::npos);
}

TEST(DoctorTest, HtmlReportDrawsEachTrialLinksRelativelyAndEscapes) {
  const std::string html = render_doctor_html(sample_outcome());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_NE(html.find("<code>--scenario recsys --preset data-bound</code>"), std::string::npos);
  EXPECT_NE(html.find("href=\"profile/run-1/report.html\""), std::string::npos);  // relative to the folder
  EXPECT_NE(html.find("href=\"after/run-2/report.html\""), std::string::npos);
  EXPECT_NE(html.find("<td class=\"improved\">improved"), std::string::npos);
  EXPECT_NE(html.find("[+55.0, +141.5]"), std::string::npos);
  EXPECT_NE(html.find("<code>cache=1</code>: 1.98x"), std::string::npos);
  EXPECT_NE(html.find("&lt;dispatch&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(html.find("<dispatch>"), std::string::npos);
  EXPECT_NE(html.find("host syncs &lt; every step"), std::string::npos);
  // Two measured trials draw a bar and a whisker each; the failed one only the zero line.
  size_t svgs = 0, rects = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) ++svgs;
  for (size_t at = html.find("<rect"); at != std::string::npos; at = html.find("<rect", at + 1)) ++rects;
  EXPECT_EQ(svgs, 3u);
  EXPECT_EQ(rects, 2u);
}

}  // namespace
}  // namespace trainlab
