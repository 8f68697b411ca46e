// Words for the stages inside a job's data pipeline (loader_stages.h).
#include "diagnostics/loader_stages.h"

#include <algorithm>

#include "core/text.h"

namespace trainlab {

std::string stage_words(const LoaderStageShare& stage) {
  if (stage.kind == "decode") return "decoding (" + stage.name + ")";
  if (stage.kind == "read") return "reading files (" + stage.name + ")";
  if (stage.kind == "collate") return "collating batches (" + stage.name + ")";
  if (stage.kind == "handoff") return "handing batches over (" + stage.name + ")";
  return "in " + stage.name;
}

std::string loader_stages_clause(const LoaderStages& l) {
  if (l.stages.empty()) return "";
  const bool one = l.producers == "the main process" || l.processes <= 1;
  const std::string who = l.producers == "the main process" ? l.producers : "the " + l.producers;
  const bool by_cpu = l.shares_of == "cpu";
  std::string text = format_text("%s %s %.0f %% of %s %s %s", who.c_str(), one ? "spends" : "spend",
                                 l.stages.front().share_pct, one ? "its" : "their", by_cpu ? "CPU time" : "time",
                                 stage_words(l.stages.front()).c_str());
  for (size_t i = 1; i < l.stages.size() && i < 3; ++i) {
    if (l.stages[i].share_pct < 10) break;
    text += format_text(", %.0f %% %s", l.stages[i].share_pct, stage_words(l.stages[i]).c_str());
  }
  if (by_cpu && l.runqueue_wait_pct) {
    text += format_text(" (by CPU time: the job's threads waited for a CPU %.0f %% of the time they wanted one)",
                        *l.runqueue_wait_pct);
  } else if (l.stages.front().cpu_pct < 50 && (l.stages.front().kind == "read" || l.stages.front().kind == "decode")) {
    text += format_text(" (on the CPU %.0f %% of that time: waiting on storage)", l.stages.front().cpu_pct);
  }
  return text;
}

std::string job_loader_action(const Summary& s) {
  if (!s.loader_stages || s.loader_stages->loader_call.empty()) return "";
  const LoaderStages& l = *s.loader_stages;
  const int64_t workers = s.loader_workers.value_or(0);
  const int64_t cores = std::max(1, s.logical_cores);
  std::string change;
  if (l.wait_receive_pct && l.wait_not_ready_pct && *l.wait_receive_pct > *l.wait_not_ready_pct) {
    change = "most of the wait is receiving batches, not waiting for workers: smaller batches of plain tensors "
             "(no Python objects) cost less to hand over" +
             std::string(s.on_gpu && !s.pin_memory.value_or(false) ? "; pin_memory=True" : "");
  } else if (workers < cores) {
    const int64_t more = std::min<int64_t>(cores, std::max<int64_t>(workers * 2, workers + 1));
    change = format_text("DataLoader(num_workers=%lld, persistent_workers=True, ...)", static_cast<long long>(more));
  } else {
    change = "the workers already have a core each: make each sample cheaper";
  }
  std::string text = "Your DataLoader at " + l.loader_call + " (today: " + l.loader_settings + "): " + change + ".";
  if (!l.stages.empty()) {
    const LoaderStageShare& top = l.stages.front();
    std::string what;
    if (top.kind == "decode") {
      what = "decode once and keep decoded (or smaller) samples, or decode on the device (torchvision.io.decode_jpeg "
             "on CUDA)";
    } else if (top.kind == "read") {
      what = top.cpu_pct < 50 ? "the files wait on storage: faster or local storage, larger files read sequentially"
                              : "read fewer, larger files";
    } else if (top.kind == "transform") {
      what = "make " + top.name + " cheaper (smaller inputs, fewer per-sample Python calls) or move it onto the "
             "batch on the device";
    } else if (top.kind == "collate") {
      what = "collate less per batch (" + top.name + ")";
    } else if (top.kind == "handoff") {
      what = "hand over less per batch (plain tensors, smaller dtypes)";
    } else {
      what = "look at " + top.name;
    }
    text += format_text(" The top stage, %s, is %.0f %% of the loader's %s: %s.", top.name.c_str(), top.share_pct,
                        l.shares_of == "cpu" ? "CPU time" : "time", what.c_str());
  }
  return text;
}

}  // namespace trainlab
