// Tests of the HTML report: verdict, findings and evidence in the output, escaping of data strings,
// "—" for unknown figures, the histogram's bars and counts, the system table's formatting, no external
// references, the atomic write. DISABLED_WriteSample writes a realistic report for a visual check:
//   trainlab_report_tests --gtest_also_run_disabled_tests --gtest_filter='*WriteSample*'
// (to $TRAINLAB_REPORT_SAMPLE, default /tmp/report_sample.html).
#include "harness/report/diagnosis_html.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainlab {
namespace {

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

// The <tr> row that holds `marker`.
std::string row_with(const std::string& html, const std::string& marker) {
  const size_t at = html.find(marker);
  if (at == std::string::npos) return "";
  const size_t begin = html.rfind("<tr", at);
  const size_t end = html.find("</tr>", at);
  return html.substr(begin, end - begin);
}

// The text of each <td class="num"> cell of a row, in order.
std::vector<std::string> num_cells(const std::string& row) {
  std::vector<std::string> cells;
  const std::regex cell(R"(<td class="num">([^<]*)</td>)");
  for (std::sregex_iterator it(row.begin(), row.end(), cell), end; it != end; ++it) cells.push_back((*it)[1]);
  return cells;
}

// A data-bound recsys-like run: data wait 38 %, compute 50 %, other 12 %, 40 steps with 2 outliers.
struct Sample {
  Summary summary;
  std::vector<Finding> findings;
  Verdict verdict;
  std::vector<std::pair<std::string, Summary>> ranks;
  ReportInput input;
  // The input, pointing at this sample's summary, findings and verdict (wherever the sample now lives).
  const ReportInput& bound() {
    input.summary = &summary;
    input.findings = &findings;
    input.verdict = &verdict;
    return input;
  }
};

Sample make_sample() {
  Sample x;
  Summary& s = x.summary;
  s.source = "trainlab";
  s.label = "fp32";
  s.scenario = "recsys";
  s.device = "cpu";
  s.compute_dtype = "fp32";
  for (int i = 0; i < 40; ++i) {
    double ms = 42.0 + 2.5 * std::sin(0.9 * i) + 0.8 * std::cos(2.3 * i);
    if (i == 17) ms = 96.4;
    if (i == 31) ms = 112.8;
    s.step_ms.push_back(ms);
    s.step_numbers.push_back(5 + i);
  }
  std::vector<double> sorted = s.step_ms;
  std::sort(sorted.begin(), sorted.end());
  s.step.count = 40;
  s.step.min = sorted.front();
  s.step.max = sorted.back();
  s.step.p50 = 0.5 * (sorted[19] + sorted[20]);
  s.step.p95 = sorted[37];
  s.step.p99 = sorted[39];
  double sum = 0;
  for (double v : s.step_ms) sum += v;
  s.step.mean = sum / 40;
  double var = 0;
  for (double v : s.step_ms) var += (v - s.step.mean) * (v - s.step.mean);
  s.step.stddev = std::sqrt(var / 40);
  s.batch_size = 512;
  s.samples_per_s = 512.0 * 1000.0 / s.step.mean;
  s.shares = {38.0, 0.0, 50.0, 0.0, 0.0, 12.0};
  s.device_busy_pct = 50.0;
  s.ops_per_step = 212;
  s.op_us = Distribution{};
  s.host_syncs_per_step = 1;
  const std::vector<std::pair<std::string, int64_t>> ops = {
      {"aten::embedding_bag", 412'000'000},
      {"aten::_embedding_bag_backward", 301'000'000},
      {"aten::addmm", 188'000'000},
      {"Optimizer.step#Adam.step", 120'500'000},
      {"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 96'000'000},
      {"aten::mm", 71'200'000},
      {"aten::add<float>", 33'000'000},
      {"aten::binary_cross_entropy_with_logits", 21'700'000},
      {"aten::index_select & gather", 12'400'000},
      {"aten::copy_", 8'800'000}};
  for (const auto& [name, ns] : ops)
    s.top_ops.push_back({name, 40 * (1 + static_cast<int64_t>(name.size() % 5)), ns});
  s.fp32_op_share_pct = 100.0;
  s.gemm_ops = 120;
  s.gemm_unaligned_ops = 40;
  s.unaligned_gemm_examples = {"aten::addmm [512,13]x[13,512]"};
  s.memory_mib = std::vector<double>(40, 1510.0);
  s.memory_growth_pct = 0.4;
  s.peak_memory_bytes = static_cast<int64_t>(1.62 * 1024 * 1024 * 1024);
  s.system["cpu.total_pct"] = {60, 12.0, 93.5, 96.0, 97.9, 98.6, 88.1, 10.2};
  s.system["cpu.iowait_pct"] = {60, 0.0, 0.5, 3.1, 4.0, 4.2, 0.9, 1.1};
  s.system["cpu.process_pct"] = {60, 20.0, 150.0, 185.0, 190.0, 192.0, 160.0, 30.0};
  s.system["cpu.core0_pct"] = {60, 10.0, 95.0, 99.0, 100.0, 100.0, 90.0, 12.0};
  s.system["cpu.core1_pct"] = {60, 8.0, 92.0, 98.0, 99.5, 100.0, 86.0, 13.0};
  s.system["mem.rss_bytes"] = {60, 2.1e8, 1.55e9, 1.61e9, 1.62e9, 1.62e9, 1.4e9, 3e8};
  s.system["disk.read_bytes_per_s"] = {60, 0, 1.2e7, 4.8e7, 6.1e7, 6.3e7, 1.4e7, 1.3e7};
  s.system["net.rx_bytes_per_s"] = {60, 0, 2e3, 9e3, 1.2e4, 1.3e4, 3e3, 2e3};
  s.logical_cores = 2;
  s.loader_workers = 2;
  s.loader_prefetch = 2;
  s.pin_memory = false;
  s.data_busy_ms = 61.0;
  s.world_size = 2;
  s.rank = 0;
  s.comm_total_pct = 9.5;
  s.rank_step_p50_ms = {42.1, 45.6};
  s.rank_spread_pct = 8.3;
  s.init_ms = 3210;
  s.loop_ms = 1.93e3;
  s.losses = {0.693, 0.512};

  const auto finding = [](std::string id, std::string title, Severity sev, Suspect suspect,
                          std::vector<Evidence> evidence, std::string rec, int64_t fired, int64_t points,
                          double saving) {
    Finding f;
    f.rule_id = std::move(id);
    f.title = std::move(title);
    f.severity = sev;
    f.suspect = suspect;
    f.evidence = std::move(evidence);
    f.recommendation = std::move(rec);
    f.times_fired = fired;
    f.data_points = points;
    f.saving_pct = saving;
    return f;
  };
  x.findings = {
      finding("input_bound", "The loop waits on input for 38.0 % of the step time", Severity::kHigh,
              Suspect::kDataPipeline, {{"data_wait_pct", 38.0, 20.0, "pct"}},
              "Raise the loader workers (2 -> 4) or make decode cheaper.", 37, 40, 38.0),
      finding("low_device_utilisation", "Compute keeps the CPU busy for only 50.0 % of the step",
              Severity::kModerate, Suspect::kDataPipeline, {{"device_busy_pct", 50.0, 70.0, "pct"}},
              "Feed the model faster: see input_bound.", 40, 40, 0),
      finding("step_outliers", "2 steps beyond mean + 3σ (96.4 ms, 113 ms)", Severity::kInfo, Suspect::kNone,
              {{"outlier_steps", 2, 3, "sigma"}, {"step_max_ms", 112.8, 70.2, "ms"}},
              "Look at what runs at steps 22 and 36 (checkpointing, logging, GC).", 2, 40, 4.1),
      finding("loader_settings", "Batches are copied from pageable memory", Severity::kModerate,
              Suspect::kDataPipeline, {{"pin_memory", 0, 1, ""}}, "Turn pinned memory on.", 1, 1, 0),
      finding("rank_imbalance", "Rank 1 is 8.3 % slower than rank 0", Severity::kModerate,
              Suspect::kCommunication, {{"rank_spread_pct", 8.3, 5.0, "pct"}},
              "Balance the shards or check rank 1's host.", 1, 2, 3.2)};

  Verdict& v = x.verdict;
  v.primary = Suspect::kDataPipeline;
  v.confidence = "high";
  v.headline = "data pipeline: 38.0 % of the step; up to 1.61x if removed";
  v.attribution = {{Suspect::kModelCompute, 50.0},
                   {Suspect::kDataPipeline, 38.0},
                   {Suspect::kCommunication, 0.0},
                   {Suspect::kFrameworkOverhead, 0.0},
                   {Suspect::kNone, 12.0}};
  v.actions = {{"input_bound", "Raise the loader workers (2 -> 4) or make decode cheaper.", "more_workers",
                38.0, 100.0 / 62.0},
               {"step_outliers", "Look at what runs at steps 22 and 36 (checkpointing, logging, GC).", "",
                4.1, 100.0 / 95.9},
               {"rank_imbalance", "Balance the shards or check rank 1's host.", "", 3.2, 100.0 / 96.8}};

  for (int r = 0; r < 2; ++r) {
    Summary rs = s;
    rs.rank = r;
    for (double& ms : rs.step_ms) ms *= (r == 0 ? 1.0 : 1.083);
    rs.step.p50 = s.rank_step_p50_ms[r];
    rs.step.p95 = s.step.p95 * (r == 0 ? 1.0 : 1.083);
    rs.samples_per_s = 256.0 * 1000.0 / (s.step.mean * (r == 0 ? 1.0 : 1.083));
    rs.shares.communication_pct = r == 0 ? 4.1 : 1.2;
    x.ranks.emplace_back("rank " + std::to_string(r), rs);
  }

  ReportInput& in = x.input;
  in.title = "recsys · fp32 — trainlab diagnosis";
  in.created_utc = "2025-01-14T09:12:44Z";
  ReportTimeline cpu{"cpu.total_pct", "pct", {}};
  ReportTimeline rss{"mem.rss_bytes", "bytes", {}};
  for (int i = 0; i <= 60; ++i) {
    const double t = 0.1 * i;
    const bool loop = t >= 3.3 && t <= 5.3;
    cpu.points.emplace_back(t, loop ? 94 + 3 * std::sin(3.0 * t) : (t < 3.3 ? 45 + 15 * std::sin(t) : 20));
    rss.points.emplace_back(t, (t < 3.3 ? 2.1e8 + 3.9e8 * t : 1.49e9 + 6e7 * std::min(1.0, (t - 3.3) / 2)));
  }
  in.timelines = {cpu, rss};
  double t = 3.35;
  for (double ms : x.summary.step_ms) {
    t += ms / 1000.0;
    in.step_marks.emplace_back(t, ms);
  }
  in.environment = {{"cpu", "AMD EPYC 7B13"},
                    {"cores", "2"},
                    {"threads", "2"},
                    {"BLAS", "MKL"},
                    {"LibTorch", "2.5.1+cu124"},
                    {"CUDA", "12.4 (no device)"},
                    {"device", "cpu"},
                    {"git revision", "41f7320"}};
  in.ranks = x.ranks;
  in.finalise_ms = 410;
  return x;
}

TEST(ReportHtml, VerdictHeadlineAndPrimarySuspect) {
  Sample x = make_sample();
  const std::string html = render_report_html(x.bound());
  EXPECT_NE(html.find("data pipeline: 38.0 % of the step; up to 1.61x if removed"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"primary\">Data pipeline"), std::string::npos);
  EXPECT_NE(html.find("confidence: high"), std::string::npos);
  EXPECT_EQ(html.find("INCONCLUSIVE"), std::string::npos);
  EXPECT_EQ(html.find("Why: "), std::string::npos);  // no policy text given: none shown
  x.verdict.policy = "compute is 50.0 % of the step, under the 70 % low-utilisation line";
  x.verdict.confidence_reasons = {"3 steps only (under 5)"};
  x.verdict.secondary = {"communication 12.0 % of the step (up to 1.14x if removed)"};
  const std::string explained = render_report_html(x.bound());
  EXPECT_NE(explained.find("Why: compute is 50.0 % of the step, under the 70 % low-utilisation line."),
            std::string::npos);
  EXPECT_NE(explained.find("<li>confidence: 3 steps only (under 5)</li>"), std::string::npos);
  EXPECT_NE(explained.find("<li>secondary: communication 12.0 % of the step"), std::string::npos);
  // The attribution bar: one segment per non-zero share (compute, data, other).
  EXPECT_EQ(count_of(html, "<rect class=\"seg\""), 3u);
  // The ranked actions, largest saving first, with their speed-ups.
  const size_t first = html.find("<code>input_bound</code></td><td><code>more_workers</code>");
  ASSERT_NE(first, std::string::npos);
  EXPECT_LT(first, html.find("<code>step_outliers</code></td><td>"));
  EXPECT_NE(html.find("1.61×"), std::string::npos);
}

TEST(ReportHtml, NamesItsTracesAndHowToOpenThem) {
  Sample x = make_sample();
  EXPECT_EQ(render_report_html(x.bound()).find("TraceAnalysis("), std::string::npos);  // no trace: nothing said
  x.input.traces = {"traces/fp32/rank0.pt.trace.json.gz"};
  const std::string html = render_report_html(x.bound());
  EXPECT_NE(html.find("<a href=\"traces/fp32/rank0.pt.trace.json.gz\">"), std::string::npos);
  EXPECT_NE(html.find("Perfetto"), std::string::npos);
  EXPECT_NE(html.find("chrome://tracing"), std::string::npos);
  EXPECT_NE(html.find("TraceAnalysis(trace_dir=\"traces/fp32\")"), std::string::npos);  // the ranks' folder
  EXPECT_NE(html.find("tensorboard --logdir traces<"), std::string::npos);  // the variants' parent folder
}

TEST(ReportHtml, InconclusiveShowsReasons) {
  Sample x = make_sample();
  x.verdict.inconclusive = true;
  x.verdict.confidence = "none";
  x.verdict.inconclusive_reasons = {"only 4 measured steps (at least 10 needed)",
                                    "12 profiler records were lost"};
  x.verdict.headline = "inconclusive: only 4 measured steps (at least 10 needed)";
  const std::string html = render_report_html(x.bound());
  EXPECT_NE(html.find("INCONCLUSIVE"), std::string::npos);
  EXPECT_NE(html.find("<li>only 4 measured steps (at least 10 needed)</li>"), std::string::npos);
  EXPECT_NE(html.find("<li>12 profiler records were lost</li>"), std::string::npos);
  EXPECT_EQ(html.find("Primary suspect"), std::string::npos);
}

TEST(ReportHtml, EveryFindingWithItsEvidence) {
  Sample x = make_sample();
  const std::string html = render_report_html(x.bound());
  for (const Finding& f : x.findings) {
    EXPECT_NE(html.find("<td><code>" + f.rule_id + "</code></td>"), std::string::npos) << f.rule_id;
  }
  // metric = value vs threshold, each in its unit.
  EXPECT_NE(
      html.find(
          "<code>data_wait_pct</code> = <b>38.0 %</b></span> <span class=\"muted nw\">vs 20.0 %</span>"),
      std::string::npos);
  EXPECT_NE(
      html.find("<code>step_max_ms</code> = <b>113 ms</b></span> <span class=\"muted nw\">vs 70.2 ms</span>"),
      std::string::npos);
  EXPECT_NE(html.find("<code>outlier_steps</code> = <b>2 σ</b>"), std::string::npos);
  EXPECT_NE(html.find("<code>rank_spread_pct</code> = <b>8.3 %</b>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">37 / 40</td>"), std::string::npos);
  EXPECT_NE(html.find("sev sev-high"), std::string::npos);
  // The σ in a title and "->" in a recommendation survive escaping.
  EXPECT_NE(html.find("2 steps beyond mean + 3σ"), std::string::npos);
  EXPECT_NE(html.find("(2 -&gt; 4)"), std::string::npos);
}

TEST(ReportHtml, EscapesStringsFromData) {
  Sample x = make_sample();
  x.summary.label = "<script>alert(1)</script>";
  x.input.environment["git revision"] = "a\"b'c";
  const std::string html = render_report_html(x.bound());
  EXPECT_NE(html.find("<code>aten::add&lt;float&gt;</code>"), std::string::npos);
  EXPECT_EQ(html.find("aten::add<float>"), std::string::npos);
  EXPECT_NE(html.find("<code>aten::index_select &amp; gather</code>"), std::string::npos);
  EXPECT_NE(html.find("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("a&quot;b&#39;c"), std::string::npos);
}

TEST(ReportHtml, UnknownFiguresShowADash) {
  Summary s;
  s.source = "kineto";
  s.label = "trace.json";
  s.step_ms = {10, 11, 12};
  const ReportInput in{"t", "", &s, nullptr, nullptr, {}, {}, nlohmann::json::object(), {}, std::nullopt};
  const std::string html = render_report_html(in);
  for (const char* label :
       {"Initialisation", "Training loop", "Finalisation", "Samples/s", "Batch size", "Peak memory",
        "Memory growth", "Ops per step", "Loader workers", "Prefetch depth", "Pinned memory",
        "Producer time per batch", "Logical cores", "Scenario"}) {
    EXPECT_NE(html.find(std::string("<th>") + label + "</th><td class=\"num\">—</td>"), std::string::npos)
        << label;
  }
  EXPECT_EQ(html.find("<th>Initialisation</th><td class=\"num\">0"), std::string::npos);
  EXPECT_NE(html.find("no device activity (CPU run)"), std::string::npos);
  EXPECT_NE(html.find("— (no system metrics were sampled)"), std::string::npos);
  EXPECT_NE(html.find("— (no ops recorded)"), std::string::npos);
  EXPECT_NE(html.find("— (the rules were not run)"), std::string::npos);
  EXPECT_NE(html.find("— (no verdict)"), std::string::npos);
  EXPECT_EQ(html.find("id=\"parallel\""), std::string::npos);  // single process: no data-parallel section
}

TEST(ReportHtml, HistogramBarsAndTallestCount) {
  Summary s;
  // 20 steps over 10..15.2 ms (20 bins of 0.26 ms: 12 in the first, 4 in the sixth, 1 in the sixteenth,
  // 3 in the last) and one outlier (40 ms > mean + 3 sigma = 31.8 ms) in a bar of its own.
  for (int i = 0; i < 12; ++i) s.step_ms.push_back(10.0);
  for (int i = 0; i < 4; ++i) s.step_ms.push_back(11.5);
  s.step_ms.push_back(14.0);
  for (int i = 0; i < 3; ++i) s.step_ms.push_back(15.2);
  s.step_ms.push_back(40.0);
  const ReportInput in{"t", "", &s, nullptr, nullptr, {}, {}, {}, {}, std::nullopt};
  const std::string html = render_report_html(in);
  EXPECT_EQ(count_of(html, "class=\"hist-bar"), 21u);
  std::vector<int> counts;
  const std::regex bar(R"re(class="hist-bar[^"]*" data-count="(\d+)")re");
  for (std::sregex_iterator it(html.begin(), html.end(), bar), end; it != end; ++it) {
    counts.push_back(std::stoi((*it)[1]));
  }
  ASSERT_EQ(counts.size(), 21u);
  EXPECT_EQ(counts[0], 12);
  EXPECT_EQ(counts[5], 4);
  EXPECT_EQ(counts[15], 1);
  EXPECT_EQ(counts[19], 3);
  EXPECT_EQ(counts[20], 1);  // the outliers' bar
  EXPECT_EQ(*std::max_element(counts.begin(), counts.end()), 12);
  // The tallest bar's label, and one label per non-empty bar.
  EXPECT_NE(html.find("class=\"bar-count\">12</text>"), std::string::npos);
  EXPECT_EQ(count_of(html, "class=\"bar-count\""), 5u);
  EXPECT_EQ(count_of(html, "class=\"hist-bar outlier\" data-count=\"1\""), 1u);
  EXPECT_NE(html.find("&gt; 31.8 ms</text>"), std::string::npos);
  EXPECT_NE(html.find("#21 (40.0 ms)"), std::string::npos);

  Summary few;
  few.step_ms = {5, 6, 7, 8, 9};
  const ReportInput in_few{"t", "", &few, nullptr, nullptr, {}, {}, {}, {}, std::nullopt};
  const std::string few_html = render_report_html(in_few);
  EXPECT_EQ(count_of(few_html, "class=\"hist-bar"), 5u);
  EXPECT_EQ(count_of(few_html, "hist-bar outlier"), 0u);
}

TEST(ReportHtml, NoExternalReferences) {
  Sample x = make_sample();
  const std::string html = render_report_html(x.bound());
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<style>"), std::string::npos);
}

TEST(ReportHtml, SystemTableFormatsUnits) {
  Sample x = make_sample();
  const std::string html = render_report_html(x.bound());
  // Columns: samples, max, p99, p95, p50, min.
  const std::vector<std::string> cpu = num_cells(row_with(html, "<code>cpu.total_pct</code>"));
  ASSERT_EQ(cpu.size(), 6u);
  EXPECT_EQ(cpu[0], "60");
  EXPECT_EQ(cpu[3], "96.0 %");
  EXPECT_EQ(cpu[1], "98.6 %");
  const std::vector<std::string> rss = num_cells(row_with(html, "<code>mem.rss_bytes</code>"));
  ASSERT_EQ(rss.size(), 6u);
  EXPECT_EQ(rss[3], "1.50 GiB");   // 1.61e9 bytes
  EXPECT_EQ(rss[5], "200.3 MiB");  // 2.1e8 bytes
  const std::vector<std::string> disk = num_cells(row_with(html, "<code>disk.read_bytes_per_s</code>"));
  ASSERT_EQ(disk.size(), 6u);
  EXPECT_EQ(disk[3], "45.8 MiB/s");  // 4.8e7 bytes/s
  // Per-core rows go into their own collapsed table.
  EXPECT_NE(html.find("Per-core CPU (2 cores)"), std::string::npos);
}

TEST(ReportHtml, TimelineStepsAndRanks) {
  Sample x = make_sample();
  const std::string html = render_report_html(x.bound());
  EXPECT_NE(html.find(">cpu.total_pct (%)</text>"), std::string::npos);
  EXPECT_NE(html.find(">mem.rss_bytes (GiB)</text>"), std::string::npos);
  EXPECT_NE(html.find("step duration (ms), each step at its end time"), std::string::npos);
  EXPECT_NE(html.find("time from run start (s)"), std::string::npos);
  // Steps over time: the two outliers drawn as such.
  EXPECT_EQ(count_of(html, "<circle class=\"dot outlier\""), 4u);  // steps chart + timeline strip
  // Data parallel: both ranks, the slowest marked.
  EXPECT_NE(html.find("id=\"parallel\""), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"slowest\"><td>rank 1</td>"), std::string::npos);
  EXPECT_NE(html.find("+8.3 %"), std::string::npos);
  // Phase breakdown.
  EXPECT_NE(html.find(">Data wait</text>"), std::string::npos);
  EXPECT_NE(html.find(">12.0 %</text>"), std::string::npos);
}

TEST(ReportHtml, NonFiniteStepTimesDoNotBreakTheCharts) {
  Summary s;
  s.step_ms = {10, 11, std::nan(""), 12, std::numeric_limits<double>::infinity(), 13};
  const ReportInput in{"t", "", &s, nullptr, nullptr, {}, {}, {}, {}, std::nullopt};
  const std::string html = render_report_html(in);
  EXPECT_EQ(count_of(html, "class=\"hist-bar"), 4u);  // one bin per finite step
  EXPECT_EQ(html.find("nan,"), std::string::npos);
  EXPECT_EQ(html.find("\"nan\""), std::string::npos);
}

TEST(ReportHtml, RequiresASummary) {
  ReportInput in;
  EXPECT_THROW(render_report_html(in), std::invalid_argument);
}

TEST(ReportHtml, WritesAtomically) {
  Sample x = make_sample();
  char dir_template[] = "/tmp/trainlab_report_test.XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string path = dir + "/report.html";
  write_report_html(path, x.bound());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), render_report_html(x.bound()));
  EXPECT_NE(::access((path + ".tmp").c_str(), F_OK), 0);
  const std::string bad = dir + "/missing/report.html";
  try {
    write_report_html(bad, x.bound());
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

// The sample as a GPU run: kernels with long templated names, precision and device activity, a GPU
// timeline, an inconclusive verdict.
Sample make_gpu_sample() {
  Sample x = make_sample();
  Summary& s = x.summary;
  s.on_gpu = true;
  s.device = "NVIDIA H100 80GB HBM3";
  s.compute_dtype = "bf16";
  s.kernels_per_step = 388;
  s.short_kernel_pct = 61.5;
  s.top_kernels = {
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
       4000, 210'000'000},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", 1200, 180'000'000},
      {"void at::native::(anonymous namespace)::embedding_backward_feature_kernel<c10::BFloat16, float, "
       "long>",
       400, 95'000'000},
      {"Memcpy HtoD (Pageable -> Device)", 80, 61'000'000}};
  s.kernel_precision_ns = {{"bf16", 700'000'000}, {"fp32", 210'000'000}, {"other", 50'000'000}};
  s.device_activity_ns = {
      {"kernel", 950'000'000}, {"memcpy", 120'000'000}, {"memset", 3'000'000}, {"sync", 40'000'000}};
  s.system["gpu0.util_pct"] = {60, 0, 41, 77, 80, 81, 40, 22};
  s.system["gpu0.mem_used_bytes"] = {60, 5e8, 2.2e10, 2.3e10, 2.3e10, 2.3e10, 2e10, 5e9};
  s.achieved_flops_per_s = 1.9e14;
  s.peak_flops_per_s = 7.4e14;
  ReportTimeline util{"gpu0.util_pct", "pct", {}};
  ReportTimeline mem{"gpu0.mem_used_bytes", "", {}};
  for (int i = 0; i <= 60; ++i) {
    const double t = 0.1 * i;
    const bool loop = t >= 3.3 && t <= 5.3;
    util.points.emplace_back(t, loop ? 40 + 35 * std::sin(7.0 * t) * std::sin(7.0 * t) : 0);
    mem.points.emplace_back(t, t < 3.3 ? 5e8 : 2.3e10);
  }
  x.input.timelines.push_back(util);
  x.input.timelines.push_back(mem);
  x.verdict.inconclusive = true;
  x.verdict.confidence = "none";
  x.verdict.inconclusive_reasons = {
      "1204 profiler records were lost: the shares may be wrong",
      "step times too noisy: median absolute deviation 18.2 % of the median (limit "
      "15.0 %)"};
  x.verdict.headline = "inconclusive: 1204 profiler records were lost: the shares may be wrong";
  s.dropped_events = 1204;
  s.notes = {"CUPTI activity buffer overflowed twice"};
  x.input.title = "recsys · bf16 (GPU) — trainlab diagnosis";
  return x;
}

TEST(ReportHtml, GpuRunShowsKernelsAndDeviceActivity) {
  Sample x = make_gpu_sample();
  const std::string html = render_report_html(x.bound());
  EXPECT_NE(html.find("CUDAFunctor_add&lt;float&gt;"), std::string::npos);
  EXPECT_NE(html.find("Memcpy HtoD (Pageable -&gt; Device)"), std::string::npos);
  EXPECT_EQ(html.find("no device activity (CPU run)"), std::string::npos);
  // Precision: bf16 700 ms of 960 ms.
  EXPECT_NE(html.find("<td>bf16</td><td class=\"num\">700 ms</td><td class=\"num\">72.9 %</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>memcpy</td><td class=\"num\">120 ms</td>"), std::string::npos);
  EXPECT_NE(html.find(">gpu0.mem_used_bytes (GiB)</text>"), std::string::npos);
  EXPECT_NE(html.find("190.00 TFLOP/s of 740.00 TFLOP/s (25.7 %)"), std::string::npos);
  EXPECT_NE(html.find("1204 profiler records were dropped"), std::string::npos);
  EXPECT_NE(html.find("INCONCLUSIVE"), std::string::npos);
}

TEST(ReportHtml, DISABLED_WriteSample) {
  Sample x = make_sample();
  const char* env = std::getenv("TRAINLAB_REPORT_SAMPLE");
  const std::string path = env != nullptr ? env : "/tmp/report_sample.html";
  write_report_html(path, x.bound());
  std::printf("wrote %s\n", path.c_str());
  Sample gpu = make_gpu_sample();
  const std::string gpu_path = path.substr(0, path.rfind(".html")) + "_gpu.html";
  write_report_html(gpu_path, gpu.bound());
  std::printf("wrote %s\n", gpu_path.c_str());
}

}  // namespace
}  // namespace trainlab
