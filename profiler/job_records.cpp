// Reading the in-job recorder's proc-*.jsonl files (job_records.h): bounded, validated field by
// field, a bad line skipped and counted.
#include "profiler/job_records.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace trainlab {
namespace {

// A field that does not hold: the line is skipped with this reason.
struct BadLine : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr int64_t kMaxTimeNs = std::numeric_limits<int64_t>::max() / 4;  // ~73 years of ns: any real clock

class Fields {
 public:
  Fields(const json& object, const JobRecordLimits& limits) : j_(object), limits_(limits) {}

  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  // An integer in [low, high]; a float that is whole counts (JSON writers differ).
  std::optional<int64_t> opt_int(const char* key, int64_t low = 0, int64_t high = kMaxTimeNs) const {
    if (!has(key)) return std::nullopt;
    const json& v = j_.at(key);
    int64_t n = 0;
    if (v.is_number_integer() || v.is_number_unsigned()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(high)) bad(key, "out of range");
      n = v.get<int64_t>();
    } else if (v.is_number_float()) {
      const double d = v.get<double>();
      // 2^63 itself would pass `d > (double)INT64_MAX` (the cast rounds up): checked first.
      if (!std::isfinite(d) || d != std::floor(d) || d >= 0x1p63 || d < -0x1p63 || d < static_cast<double>(low) ||
          d > static_cast<double>(high))
        bad(key, "not a whole number in range");
      n = static_cast<int64_t>(d);
    } else {
      bad(key, "not a number");
    }
    if (n < low || n > high) bad(key, "out of range");
    return n;
  }
  int64_t req_int(const char* key, int64_t low = 0, int64_t high = kMaxTimeNs) const {
    const auto n = opt_int(key, low, high);
    if (!n) bad(key, "missing");
    return *n;
  }
  int64_t int_or(const char* key, int64_t fallback, int64_t low = 0, int64_t high = kMaxTimeNs) const {
    return opt_int(key, low, high).value_or(fallback);
  }
  std::optional<bool> opt_bool(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (!j_.at(key).is_boolean()) bad(key, "not true or false");
    return j_.at(key).get<bool>();
  }
  std::string str(const char* key, bool required = false) const {
    if (!has(key)) {
      if (required) bad(key, "missing");
      return "";
    }
    if (!j_.at(key).is_string()) bad(key, "not a string");
    return cut(j_.at(key).get<std::string>());
  }
  std::string cut(std::string s) const {
    if (s.size() > limits_.max_string_chars) s.resize(limits_.max_string_chars);
    return s;
  }
  [[noreturn]] static void bad(const char* key, const char* why) {
    throw BadLine(std::string("\"") + key + "\" " + why);
  }

 private:
  const json& j_;
  const JobRecordLimits& limits_;
};

JobProcessLine process_line(const Fields& f, const json& j) {
  JobProcessLine p;
  p.pid = f.req_int("pid", 1, std::numeric_limits<int32_t>::max());
  p.ppid = f.int_or("ppid", 0, 0, std::numeric_limits<int32_t>::max());
  p.role = f.str("role", true);
  if (p.role.empty()) Fields::bad("role", "empty");  // main, worker, launcher (torchrun's agent), ...
  p.worker_id = f.opt_int("worker_id", 0, 1 << 20);
  p.rank = f.int_or("rank", 0, 0, 1 << 24);
  p.world_size = f.int_or("world_size", 1, 1, 1 << 24);
  p.local_rank = f.int_or("local_rank", 0, 0, 1 << 24);
  if (f.has("argv")) {
    const json& argv = j.at("argv");
    if (!argv.is_array()) Fields::bad("argv", "not a list");
    for (const json& a : argv) {
      if (!a.is_string()) Fields::bad("argv", "holds a non-string");
      if (p.argv.size() < 256) p.argv.push_back(f.cut(a.get<std::string>()));
    }
  }
  p.python = f.str("python");
  p.python_version = f.str("python_version");
  p.torch_version = f.str("torch_version");
  p.device_name = f.str("device_name");
  p.cuda_available = f.opt_bool("cuda_available");
  p.start_ns = f.int_or("start_ns", 0);
  return p;
}

JobLoaderLine loader_line(const Fields& f, const json& j) {
  JobLoaderLine l;
  l.loader_id = f.req_int("loader_id", 0, 1 << 20);
  l.file = f.str("file");
  l.line = f.int_or("line", 0, 0, 1 << 30);
  l.num_workers = f.int_or("num_workers", 0, 0, 1 << 16);
  l.prefetch_factor = f.opt_int("prefetch_factor", 0, 1 << 20);
  l.batch_size = f.opt_int("batch_size", 0, int64_t{1} << 40);
  l.pin_memory = f.opt_bool("pin_memory").value_or(false);
  l.persistent_workers = f.opt_bool("persistent_workers").value_or(false);
  l.dataset = f.str("dataset");
  l.collate_fn = f.str("collate_fn");
  l.overridden = "{}";
  if (j.contains("overridden") && !j.at("overridden").is_null()) {
    if (!j.at("overridden").is_object()) Fields::bad("overridden", "not an object");
    l.overridden = f.cut(j.at("overridden").dump());
  }
  l.training = f.opt_bool("training");
  return l;
}

JobStepLine step_line(const Fields& f) {
  JobStepLine s;
  s.step = f.req_int("step", 0, int64_t{1} << 40);
  s.start_ns = f.req_int("start_ns");
  s.end_ns = f.req_int("end_ns");
  if (s.end_ns < s.start_ns) Fields::bad("end_ns", "before start_ns");
  const int64_t wall = s.end_ns - s.start_ns;
  s.warmup = f.opt_bool("warmup").value_or(false);
  s.data_wait_ns = f.int_or("data_wait_ns", 0);
  s.data_not_ready_ns = f.int_or("data_not_ready_ns", 0);
  s.data_receive_ns = f.int_or("data_receive_ns", 0);
  s.samples = f.opt_int("samples", 0, int64_t{1} << 40);
  s.forward_ns = f.opt_int("forward_ns");
  s.backward_ns = f.opt_int("backward_ns");
  s.optimizer_ns = f.opt_int("optimizer_ns");
  s.epoch_start_wait_ns = f.opt_int("epoch_start_wait_ns");
  s.cpu_ns = f.int_or("cpu_ns", 0);
  s.rank = f.int_or("rank", 0, 0, 1 << 24);
  // Parts of a step cannot exceed it (1 ms of slack for clocks read at slightly different places).
  const int64_t slack = wall + 1'000'000;
  if (s.data_wait_ns > slack) Fields::bad("data_wait_ns", "longer than the step");
  if (s.data_not_ready_ns > s.data_wait_ns + 1'000'000) Fields::bad("data_not_ready_ns", "longer than data_wait_ns");
  if (s.epoch_start_wait_ns && *s.epoch_start_wait_ns > s.data_wait_ns + 1'000'000) {
    Fields::bad("epoch_start_wait_ns", "longer than data_wait_ns");
  }
  for (const auto& [part, name] : {std::pair{&s.forward_ns, "forward_ns"}, std::pair{&s.backward_ns, "backward_ns"},
                                   std::pair{&s.optimizer_ns, "optimizer_ns"}}) {
    if (*part && **part > slack) Fields::bad(name, "longer than the step");
  }
  return s;
}

JobStagesLine stages_line(const Fields& f, const json& j, const JobRecordLimits& limits) {
  JobStagesLine s;
  s.pid = f.int_or("pid", 0, 0, std::numeric_limits<int32_t>::max());
  s.role = f.str("role");
  s.worker_id = f.opt_int("worker_id", 0, 1 << 20);
  s.loader_id = f.opt_int("loader_id", 0, 1 << 20);
  s.at_ns = f.int_or("at_ns", 0);
  s.busy_wall_ns = f.int_or("busy_wall_ns", 0);
  s.busy_cpu_ns = f.int_or("busy_cpu_ns", 0);
  s.samples = f.int_or("samples", 0);
  s.batches = f.int_or("batches", 0);
  if (f.has("stages")) {
    const json& stages = j.at("stages");
    if (!stages.is_array()) Fields::bad("stages", "not a list");
    for (const json& st : stages) {
      if (!st.is_object()) Fields::bad("stages", "holds a non-object");
      if (static_cast<int64_t>(s.stages.size()) >= limits.max_stages) break;
      const Fields sf(st, limits);
      JobStageTime t;
      t.name = sf.str("name", true);
      t.kind = sf.str("kind");
      if (t.kind.empty()) t.kind = "other";
      t.wall_ns = sf.int_or("wall_ns", 0);
      t.cpu_ns = sf.int_or("cpu_ns", 0);
      t.calls = sf.int_or("calls", 0);
      s.stages.push_back(std::move(t));
    }
  }
  return s;
}

void parse_one(const json& j, JobProcessFile& out, const JobRecordLimits& limits) {
  if (!j.is_object()) throw BadLine("not a JSON object");
  const Fields f(j, limits);
  const std::string type = f.str("type", true);
  if (type == "process") {
    out.process = process_line(f, j);
  } else if (type == "torch") {
    // Written once torch is imported (the process line came before it, torch fields null).
    if (!out.process) throw BadLine("a torch line before the process line");
    const std::string version = f.str("torch_version");
    if (!version.empty()) out.process->torch_version = version;
    if (const auto cuda = f.opt_bool("cuda_available")) out.process->cuda_available = cuda;
    const std::string device = f.str("device_name");
    if (!device.empty()) out.process->device_name = device;
  } else if (type == "loader") {
    if (static_cast<int64_t>(out.loaders.size()) < limits.max_loaders) out.loaders.push_back(loader_line(f, j));
  } else if (type == "loader_role") {
    const int64_t id = f.req_int("loader_id", 0, 1 << 20);
    const auto training = f.opt_bool("training");
    for (JobLoaderLine& l : out.loaders) {
      if (l.loader_id == id) l.training = training;
    }
  } else if (type == "step") {
    JobStepLine s = step_line(f);
    if (static_cast<int64_t>(out.steps.size()) < limits.max_steps) {
      out.steps.push_back(s);
    } else {
      ++out.dropped_steps;
    }
  } else if (type == "stages") {
    JobStagesLine line = stages_line(f, j, limits);
    auto same = std::find_if(out.stages.begin(), out.stages.end(),
                             [&](const JobStagesLine& s) { return s.loader_id == line.loader_id; });
    if (same != out.stages.end()) {
      *same = std::move(line);
    } else if (static_cast<int64_t>(out.stages.size()) < limits.max_loaders) {
      out.stages.push_back(std::move(line));
    }
  } else if (type == "trace") {
    JobTraceLine t;
    t.rank = f.int_or("rank", 0, 0, 1 << 24);
    t.path = f.str("path", true);
    t.first_step = f.int_or("first_step", 0);
    t.steps = f.int_or("steps", 0);
    out.traces.push_back(std::move(t));
  } else if (type == "warning" || type == "override_failed") {
    if (static_cast<int64_t>(out.warnings.size()) < limits.max_messages) {
      const std::string part = f.str("part");
      out.warnings.push_back((type == "override_failed" ? "override failed: " : "") +
                             (part.empty() ? std::string("recorder") : part) + ": " + f.str("message"));
    }
  } else if (type == "compile") {
    const auto seconds = j.contains("seconds") && j.at("seconds").is_number() ? j.at("seconds").get<double>() : 0.0;
    out.overrides.push_back("torch.compile(mode=" + f.str("mode") + ") applied, " + format_text("%.1f s", seconds));
  } else if (type == "decoded_cache") {
    const auto fill_s = j.contains("fill_s") && j.at("fill_s").is_number() ? j.at("fill_s").get<double>() : 0.0;
    out.overrides.push_back("decoded cache of " + std::to_string(f.int_or("samples", 0)) + " samples of " +
                            f.str("dataset") + " applied (filled in " + format_text("%.2f", fill_s) +
                            " s before the loader was built)");
  } else if (type == "autocast") {
    out.overrides.push_back("autocast " + f.str("dtype") + " on " + f.str("device_type") + " applied");
  } else if (type == "threads") {
    // torch.get_num_threads() / get_num_interop_threads(): at least 1; 2^16 is beyond any machine.
    const int64_t intra = f.req_int("intra_op", 1, 1 << 16);
    const int64_t inter = f.req_int("inter_op", 1, 1 << 16);
    out.intra_op_threads = intra;
    out.inter_op_threads = inter;
  } else if (type == "reseed") {
    JobReseed r;
    r.call = f.str("call", true);
    if (r.call.empty()) Fields::bad("call", "empty");
    r.seed = f.opt_int("seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    r.file = f.str("file");
    r.line = f.int_or("line", 0, 0, 1 << 30);
    if (static_cast<int64_t>(out.reseeds.size()) < limits.max_reseeds) out.reseeds.push_back(std::move(r));
  } else if (type == "script_autocast" || type == "script_compile") {
    JobScriptChoiceLine c;
    c.file = f.str("file");
    c.line = f.int_or("line", 0, 0, 1 << 30);
    if (type == "script_autocast") {
      c.kind = "autocast";
      c.detail = "torch.autocast('" + f.str("device_type", true) + "', " + f.str("dtype", true) + ")";
    } else {
      c.kind = "compile";
      const std::string backend = f.str("backend");
      c.detail = "torch.compile(" + f.str("target", true) + ", mode=" + f.str("mode", true) +
                 (backend.empty() || backend == "inductor" ? "" : ", backend=" + backend) + ")";
    }
    if (static_cast<int64_t>(out.script_choices.size()) < limits.max_reseeds) out.script_choices.push_back(std::move(c));
  } else if (type == "no_steps") {
    out.no_steps = f.str("message");
  } else if (type == "end") {
    out.end_reason = f.str("reason");
  }
  // Any other type: a newer recorder's; ignored.
}

}  // namespace

JobProcessFile parse_job_lines(std::string_view text, const std::string& file_name, const JobRecordLimits& limits) {
  JobProcessFile out;
  out.file = file_name;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    const bool last = end == std::string_view::npos;
    if (last) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::string why;
    if (static_cast<int64_t>(line.size()) > limits.max_line_bytes) {
      why = "a line of " + std::to_string(line.size()) + " bytes";
    } else {
      const json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) {
        // The last line of a killed process may be cut short: still counted, said as such.
        why = last ? "not JSON (the last line, cut short?)" : "not JSON";
      } else {
        try {
          parse_one(j, out, limits);
        } catch (const BadLine& e) {
          why = e.what();
        } catch (const json::exception& e) {
          why = e.what();
        }
      }
    }
    if (!why.empty()) {
      ++out.malformed_lines;
      if (out.malformed_examples.size() < 3) out.malformed_examples.push_back(why);
    }
  }
  return out;
}

JobRecords read_job_records(const std::string& dir, const JobRecordLimits& limits) {
  JobRecords records;
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("proc-", 0) != 0 || name.size() < 12 || name.substr(name.size() - 6) != ".jsonl") continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    files.push_back(it->path());
  }
  if (ec) records.problems.push_back(dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  if (static_cast<int64_t>(files.size()) > limits.max_files) {
    records.problems.push_back(std::to_string(files.size() - limits.max_files) + " proc-*.jsonl files past " +
                               std::to_string(limits.max_files) + " left out");
    files.resize(limits.max_files);
  }
  for (const fs::path& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      records.problems.push_back(path.filename().string() + ": cannot be opened");
      continue;
    }
    std::string text;
    std::error_code size_ec;
    const auto on_disk = fs::file_size(path, size_ec);
    const int64_t want = size_ec ? limits.max_file_bytes + 1
                                 : std::min<int64_t>(static_cast<int64_t>(on_disk), limits.max_file_bytes + 1);
    text.resize(static_cast<size_t>(want));
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    bool truncated = false;
    if (static_cast<int64_t>(text.size()) > limits.max_file_bytes) {
      truncated = true;
      text.resize(static_cast<size_t>(limits.max_file_bytes));
      const size_t last_newline = text.rfind('\n');
      text.resize(last_newline == std::string::npos ? 0 : last_newline + 1);
    }
    JobProcessFile file = parse_job_lines(text, path.filename().string(), limits);
    file.truncated = truncated;
    if (truncated) records.problems.push_back(file.file + ": longer than " + std::to_string(limits.max_file_bytes) +
                                              " bytes; the rest was not read");
    records.malformed_lines += file.malformed_lines;
    records.files.push_back(std::move(file));
  }
  return records;
}

}  // namespace trainlab
