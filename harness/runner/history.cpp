// history: one line per run folder (run.json), or per diagnosis folder (diagnosis.json alone).
#include "harness/runner/history.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "harness/core/atomic_file.h"
#include "harness/core/errors.h"
#include "harness/core/run_record.h"
#include "harness/runner/text_table.h"

namespace fs = std::filesystem;

namespace trainlab {

std::string render_history(const std::string& results_dir) {
  std::error_code ec;
  if (!fs::is_directory(results_dir, ec)) throw InputError(results_dir + ": no such results folder");
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(results_dir, ec)) {
    if (entry.is_directory() &&
        (fs::exists(entry.path() / "run.json") || fs::exists(entry.path() / "diagnosis.json"))) {
      dirs.push_back(entry.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());  // ids start with the UTC time: oldest first
  std::vector<std::vector<std::string>> rows;
  for (const fs::path& dir : dirs) {
    const std::string id = dir.filename().string();
    if (!fs::exists(dir / "run.json")) {
      const nlohmann::json d =
          nlohmann::json::parse(read_file((dir / "diagnosis.json").string()), nullptr, false);
      if (d.is_discarded() || !d.contains("diagnoses") || d["diagnoses"].empty()) {
        rows.push_back({id, "-", "diagnose", "-", "unreadable diagnosis.json"});
        continue;
      }
      rows.push_back({id, d.value("created_utc", "-"), "diagnose", d.value("input", "-"),
                      d["diagnoses"][0]["verdict"].value("headline", "-")});
      continue;
    }
    try {
      const RunRecord r = read_run_record(dir.string());
      std::string headline = "no variant completed";
      double best = -1;
      for (const VariantRecord& v : r.variants) {
        if (!v.ok()) continue;
        const double sps = aggregate(v).samples_per_s;
        if (sps > best) {
          best = sps;
          headline = v.spec.name() + " " + fmt("%.1f", sps) + " samples/s";
        }
      }
      const int failed = static_cast<int>(std::count_if(r.variants.begin(), r.variants.end(),
                                                        [](const VariantRecord& v) { return !v.ok(); }));
      if (failed > 0) headline += " (" + std::to_string(failed) + " failed)";
      rows.push_back({id, r.created_utc, r.kind, r.scenario, headline});
    } catch (const InputError& e) {
      rows.push_back({id, "-", "-", "-", std::string("unreadable: ") + e.what()});
    }
  }
  if (rows.empty()) return "no runs in " + results_dir + "\n";
  return render_text_table({"id", "created (UTC)", "kind", "scenario / input", "headline"}, rows, true);
}

}  // namespace trainlab
