// Whether several ranks' traces or records are one job's (see job_membership.h).
#include "diagnostics/job_membership.h"

#include <algorithm>
#include <ctime>
#include <functional>
#include <map>
#include <utility>

#include "core/json_fields.h"
#include "core/text.h"

namespace trainlab {
namespace {

// The integer at `key` of `object`, or none where it is absent, not an integer or out of range.
template <typename Int>
std::optional<Int> integer_at(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return std::nullopt;
  try {
    return integer_of<Int>(object[key]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string string_at(const nlohmann::json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : "";
}

// "0-3, 5" of [0, 1, 2, 3, 5].
std::string rank_list_words(const nlohmann::json& ranks) {
  std::vector<int64_t> list;
  for (const nlohmann::json& r : ranks) {
    if (!r.is_number_integer()) return "?";
    list.push_back(r.get<int64_t>());
  }
  std::string words;
  for (size_t i = 0; i < list.size();) {
    size_t j = i;
    while (j + 1 < list.size() && list[j + 1] == list[j] + 1) ++j;
    words += (words.empty() ? "" : ", ") + std::to_string(list[i]) + (j > i ? "-" + std::to_string(list[j]) : "");
    i = j + 1;
  }
  return words;
}

// The default process group of Kineto's pg_config ("default_pg", else the group named "0"):
// "cuda:nccl, 8 ranks (0-7)".
std::string default_group_words(const nlohmann::json& info) {
  if (!info.contains("pg_config") || !info["pg_config"].is_array()) return "";
  const nlohmann::json* chosen = nullptr;
  for (const nlohmann::json& g : info["pg_config"]) {
    if (!g.is_object()) continue;
    if (string_at(g, "pg_desc") == "default_pg") {
      chosen = &g;
      break;
    }
    if (chosen == nullptr && string_at(g, "pg_name") == "0") chosen = &g;
  }
  if (chosen == nullptr) return "";
  const nlohmann::json& g = *chosen;
  std::string words = string_at(g, "backend_config");
  if (const auto size = integer_at<int64_t>(g, "pg_size"))
    words += (words.empty() ? "" : ", ") + std::to_string(*size) + " ranks";
  if (g.contains("ranks") && g["ranks"].is_array()) words += " (" + rank_list_words(g["ranks"]) + ")";
  return words;
}

// Up to three labels, then how many more: "a, b, c and 2 more".
std::string labels_words(const std::vector<std::string>& labels) {
  std::string words;
  for (size_t i = 0; i < labels.size() && i < 3; ++i) words += (i == 0 ? "" : ", ") + labels[i];
  if (labels.size() > 3) words += " and " + std::to_string(labels.size() - 3) + " more";
  return words;
}

// The members that say a value, grouped by it in the order first seen: "2 (a, b), 3 (c)"; "" when
// they all say the same (or fewer than two say one).
std::string disagreement(const std::vector<JobMember>& members,
                         const std::function<std::optional<std::string>(const JobMember&)>& value_of) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const JobMember& m : members) {
    const std::optional<std::string> value = value_of(m);
    if (!value) continue;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == *value; });
    if (it == groups.end()) groups.push_back({*value, {m.label}});
    else it->second.push_back(m.label);
  }
  if (groups.size() < 2) return "";
  std::string words;
  for (const auto& [value, labels] : groups) words += (words.empty() ? "" : ", ") + value + " (" + labels_words(labels) + ")";
  return words;
}

std::string utc_words(int64_t epoch_ns) {
  const std::time_t seconds = static_cast<std::time_t>(epoch_ns / 1000000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

std::string member_words(const JobMember& m) {
  return m.rank ? "rank " + std::to_string(*m.rank) + " (" + m.label + ")" : m.label;
}

// "x.json and x.json.gz": one trace, kept plain and gzipped.
bool plain_and_gzipped(const std::vector<std::string>& labels) {
  if (labels.size() != 2) return false;
  const std::string& a = labels[0].size() < labels[1].size() ? labels[0] : labels[1];
  const std::string& b = labels[0].size() < labels[1].size() ? labels[1] : labels[0];
  return b == a + ".gz";
}

// A rank said twice, or past the world size.
void rank_reasons(const std::vector<JobMember>& members, std::vector<std::string>& reasons) {
  std::map<int, std::vector<std::string>> by_rank;
  for (const JobMember& m : members) {
    if (!m.rank) continue;
    if (*m.rank < 0) {
      reasons.push_back(m.label + " says rank " + std::to_string(*m.rank));
    } else if (m.world_size && *m.rank >= *m.world_size) {
      reasons.push_back(m.label + " says rank " + std::to_string(*m.rank) + " of " + std::to_string(*m.world_size));
    }
    by_rank[*m.rank].push_back(m.label);
  }
  for (const auto& [rank, labels] : by_rank) {
    if (labels.size() < 2) continue;
    if (plain_and_gzipped(labels)) {
      reasons.push_back("rank " + std::to_string(rank) + " is there twice, as " + labels[0] + " and " + labels[1] +
                        " (one trace kept plain and gzipped? keep one of them)");
    } else {
      reasons.push_back("rank " + std::to_string(rank) + " is in " + std::to_string(labels.size()) + " of them (" +
                        labels_words(labels) + ")");
    }
  }
}

// Steps that did not run at the same time: the latest to start began after the earliest to end ended.
std::string time_reason(const std::vector<JobMember>& members) {
  const JobMember* latest_start = nullptr;
  const JobMember* earliest_end = nullptr;
  for (const JobMember& m : members) {
    if (!m.steps_start_epoch_ns || !m.steps_end_epoch_ns) continue;
    if (latest_start == nullptr || *m.steps_start_epoch_ns > *latest_start->steps_start_epoch_ns) latest_start = &m;
    if (earliest_end == nullptr || *m.steps_end_epoch_ns < *earliest_end->steps_end_epoch_ns) earliest_end = &m;
  }
  if (latest_start == nullptr || latest_start == earliest_end) return "";
  const int64_t gap_ns = *latest_start->steps_start_epoch_ns - *earliest_end->steps_end_epoch_ns;
  if (gap_ns <= kJobClockSlackNs) return "";
  return format_text("their steps did not run at the same time: %s's began %.1f s after %s's ended (at %s)",
                     member_words(*latest_start).c_str(), static_cast<double>(gap_ns) / 1e9,
                     member_words(*earliest_end).c_str(), utc_words(*earliest_end->steps_end_epoch_ns).c_str());
}

// What the members disagree on about the job itself.
void agreement_reasons(const std::vector<JobMember>& members, std::vector<std::string>& reasons) {
  const auto optional_text = [](const std::string& s) { return s.empty() ? std::nullopt : std::optional(s); };
  if (std::string w = disagreement(members, [](const JobMember& m) {
        return m.world_size ? std::optional(std::to_string(*m.world_size)) : std::nullopt;
      }); !w.empty())
    reasons.push_back("they say different world sizes: " + w);
  if (std::string w = disagreement(members, [&](const JobMember& m) { return optional_text(m.backend); }); !w.empty())
    reasons.push_back("their process groups' backends differ: " + w);
  if (std::string w = disagreement(members, [&](const JobMember& m) { return optional_text(m.default_group); });
      !w.empty())
    reasons.push_back("their default process groups differ: " + w);
  if (std::string w = disagreement(members, [&](const JobMember& m) { return optional_text(m.run); }); !w.empty())
    reasons.push_back("they come from different trainlab runs: " + w);
  if (std::string w = disagreement(members, [](const JobMember& m) {
        return m.clock_base_epoch_ns ? std::optional(utc_words(*m.clock_base_epoch_ns)) : std::nullopt;
      }); !w.empty())
    reasons.push_back("the ranks of one trainlab job agree on one clock base, these on several: " + w);
}

}  // namespace

JobMember job_member_of_trace(const nlohmann::json& metadata, const std::string& label,
                              std::optional<std::pair<int64_t, int64_t>> steps_file_ns, int64_t measured_steps) {
  JobMember m;
  m.label = label;
  m.measured_steps = measured_steps;
  if (!metadata.is_object()) return m;
  if (metadata.contains("distributedInfo") && metadata["distributedInfo"].is_object()) {
    const nlohmann::json& info = metadata["distributedInfo"];
    m.rank = integer_at<int>(info, "rank");
    m.world_size = integer_at<int>(info, "world_size");
    m.backend = string_at(info, "backend");
    m.default_group = default_group_words(info);
  }
  const std::optional<int64_t> base_ns = integer_at<int64_t>(metadata, "baseTimeNanoseconds");
  if (metadata.contains("trainlab") && metadata["trainlab"].is_object()) {
    const nlohmann::json& ours = metadata["trainlab"];
    const std::string scenario = string_at(ours, "scenario");
    if (!scenario.empty()) m.run = scenario + " " + string_at(ours, "variant");
    m.clock_base_epoch_ns = base_ns;
  }
  if (steps_file_ns) {
    // Kineto: times after baseTimeNanoseconds; older Kineto: microseconds since the epoch (after
    // 2001 in ns: 1e18); otherwise the trace's clock has no date.
    constexpr int64_t kEpochLikeNs = 1'000'000'000'000'000'000;
    const auto [start_ns, end_ns] = *steps_file_ns;
    int64_t start_epoch_ns = 0, end_epoch_ns = 0;
    if (base_ns && *base_ns > 0) {
      if (!__builtin_add_overflow(*base_ns, start_ns, &start_epoch_ns) &&
          !__builtin_add_overflow(*base_ns, end_ns, &end_epoch_ns)) {
        m.steps_start_epoch_ns = start_epoch_ns;
        m.steps_end_epoch_ns = end_epoch_ns;
      }
    } else if (start_ns > kEpochLikeNs) {
      m.steps_start_epoch_ns = start_ns;
      m.steps_end_epoch_ns = end_ns;
    }
  }
  return m;
}

std::string why_not_one_job(const std::vector<JobMember>& members, const std::string& what) {
  if (members.size() < 2) return "";
  std::vector<std::string> reasons;
  const auto unsaid = std::count_if(members.begin(), members.end(), [](const JobMember& m) { return !m.rank; });
  if (unsaid == static_cast<std::ptrdiff_t>(members.size())) {
    return "the " + what + " do not say which rank they are (no distributedInfo rank)";
  }
  for (const JobMember& m : members)
    if (!m.rank) reasons.push_back(m.label + " does not say which rank it is");
  const bool all_single = std::all_of(members.begin(), members.end(),
                                      [](const JobMember& m) { return m.world_size && *m.world_size == 1; });
  if (all_single) {
    reasons.push_back("each is a run of one process (world size 1)");
  } else {
    agreement_reasons(members, reasons);
    rank_reasons(members, reasons);
    if (std::string w = time_reason(members); !w.empty()) reasons.push_back(w);
  }
  if (!reasons.empty()) {
    std::string words;
    for (const std::string& r : reasons) words += (words.empty() ? "" : "; ") + r;
    return "these " + what + " are not one job: " + words;
  }
  std::string unmeasured;
  for (const JobMember& m : members)
    if (m.measured_steps == 0) unmeasured += (unmeasured.empty() ? "" : ", ") + member_words(m);
  if (!unmeasured.empty()) return unmeasured + " measured no step (none recorded, or every one warm-up)";
  return "";
}

}  // namespace trainlab
