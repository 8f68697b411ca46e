// Whether several ranks' traces (or records) are the ranks of one job, before any job verdict is
// drawn from them. The ranks of one job agree on what the job is: its world size, the backend and
// members of its default process group, trainlab's scenario and variant and its agreed clock base
// (trainlab's own traces), and they step together, so their steps run at the same time on the
// wall clock. And each says a different rank, within the world size, with steps measured. A folder
// reused by two runs, a trace copied in from another job, a rank kept twice (plain and gzipped), a
// record whose steps are all warm-up: each is named, and no job verdict (and no cross-rank finding)
// is drawn from them. Kineto's trace_id is not compared: each process draws its own. Host names
// are not either: the ranks of a job may run on several machines. No LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainlab {

// What one rank's trace or record says about the job it belongs to.
struct JobMember {
  std::string label;                   // the file it comes from
  std::optional<int> rank;             // the rank it says it is (none: it does not say)
  std::optional<int> world_size;       // the job's size it says (none: it does not say)
  std::string backend;                 // its process group's backend ("" where not said)
  std::string default_group;           // its default process group in words ("" where not said)
  std::string run;                     // trainlab's traces: "scenario variant" ("" otherwise)
  std::optional<int64_t> clock_base_epoch_ns;  // trainlab's traces: the clock base its job's ranks agreed
  // Its measured steps on the wall clock (nanoseconds since the epoch), where the trace has a clock
  // that says so (Kineto's baseTimeNanoseconds plus the event times, or epoch times).
  std::optional<int64_t> steps_start_epoch_ns, steps_end_epoch_ns;
  int64_t measured_steps = -1;         // -1: not known
};

// Clocks of several machines differ: steps this far apart still count as run together.
inline constexpr int64_t kJobClockSlackNs = 1'000'000'000;

// A trace's member from its top-level metadata (distributedInfo, baseTimeNanoseconds, "trainlab")
// and the span of its steps on the file's own clock (the times as written, in ns; none without
// steps). Fields of the wrong type count as not said.
JobMember job_member_of_trace(const nlohmann::json& metadata, const std::string& label,
                              std::optional<std::pair<int64_t, int64_t>> steps_file_ns, int64_t measured_steps);

// Why `members` cannot give one job verdict, as one sentence: "these <what> are not one job: ..."
// when they disagree, or a rank is there twice or past the world size; else why no verdict can be
// drawn from them ("the <what> do not say which rank they are", "rank 1 (...) measured no step");
// "" when they can give one. `what`: "traces", "rank records".
std::string why_not_one_job(const std::vector<JobMember>& members, const std::string& what);

}  // namespace trainlab
