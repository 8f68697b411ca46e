// Variant parsing, scenario-independent validation, and JSON mapping.
#include "core/variant.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/errors.h"

namespace trainlab {

std::string to_string(Precision precision) {
  return precision == Precision::kBf16 ? "bf16" : "fp32";
}

std::string to_string(DeviceChoice device) {
  switch (device) {
    case DeviceChoice::kCpu: return "cpu";
    case DeviceChoice::kCuda: return "cuda";
    case DeviceChoice::kAuto: break;
  }
  return "auto";
}

std::string to_string(CommMode mode) { return mode == CommMode::kSerial ? "serial" : "overlap"; }

CommMode parse_comm_mode(const std::string& text) {
  if (text == "overlap") return CommMode::kOverlap;
  if (text == "serial") return CommMode::kSerial;
  throw InputError("invalid --comm-mode '" + text + "' (expected overlap or serial)");
}

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "bf16") return Precision::kBf16;
  throw InputError("invalid precision '" + text + "' (expected fp32 or bf16)");
}

DeviceChoice parse_device(const std::string& text) {
  if (text == "auto") return DeviceChoice::kAuto;
  if (text == "cpu") return DeviceChoice::kCpu;
  if (text == "cuda") return DeviceChoice::kCuda;
  throw InputError("invalid device '" + text + "' (expected auto, cpu or cuda)");
}

bool parse_on_off(const std::string& option, const std::string& text) {
  if (text == "on" || text == "true" || text == "1" || text == "yes") return true;
  if (text == "off" || text == "false" || text == "0" || text == "no") return false;
  throw InputError("invalid value '" + text + "' for " + option + " (expected on or off)");
}

int64_t parse_int(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    throw InputError("invalid value '" + text + "' for " + option + " (expected a whole number)");
  }
  return value;
}

double parse_double(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value)) {
    throw InputError("invalid value '" + text + "' for " + option + " (expected a number)");
  }
  return value;
}

std::string VariantSpec::name() const {
  return to_string(precision) + (compiled ? "+compiled" : "");
}

std::string VariantSpec::loader_label() const {
  std::string label = "workers=" + std::to_string(workers);
  if (workers > 0) label += " prefetch=" + std::to_string(prefetch);
  label += std::string(" pin=") + (pin_memory ? "on" : "off");
  if (workers > 0 && !persistent_workers) label += " restart";
  return label;
}

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InputError(message);
}

}  // namespace

void check_spec(VariantSpec& spec) {
  require(spec.batch_size >= 1 && spec.batch_size < kMaxBatchSize,
          "impossible batch size " + std::to_string(spec.batch_size) + " (must be 1 to " +
              std::to_string(kMaxBatchSize - 1) + ")");
  require(spec.steps >= 1 && spec.steps <= kMaxSteps,
          "invalid --steps " + std::to_string(spec.steps) + " (must be 1 to " +
              std::to_string(kMaxSteps) + ")");
  require(spec.warmup_steps >= 0 && spec.warmup_steps <= kMaxSteps,
          "invalid --warmup " + std::to_string(spec.warmup_steps) + " (must be 0 or more)");
  require(spec.threads >= 0 && spec.threads <= kMaxThreads,
          "invalid --threads " + std::to_string(spec.threads) + " (0 = default, up to " +
              std::to_string(kMaxThreads) + ")");
  require(spec.sync_every_steps >= 0, "invalid --sync-every (must be 0 or more)");
  require(spec.callback_every_steps >= 0, "invalid --callback-every (must be 0 or more)");
  require(spec.grad_norm_every_steps >= 0, "invalid --grad-norm-every (must be 0 or more)");
  require(spec.callback_ms >= 0.0 && spec.callback_ms <= 60'000.0,
          "invalid --callback-ms (must be 0 to 60000)");
  require(spec.workers >= 0 && spec.workers <= kMaxLoaderWorkers,
          "invalid --workers " + std::to_string(spec.workers) + " (must be 0 to " +
              std::to_string(kMaxLoaderWorkers) + ")");
  require(spec.prefetch >= 1 && spec.prefetch <= kMaxPrefetch,
          "invalid --prefetch " + std::to_string(spec.prefetch) + " (must be 1 to " +
              std::to_string(kMaxPrefetch) + ")");
  if (spec.profile) {
    // Default window: 10 steps after the first 5 measured ones, shrunk to fit short runs.
    if (spec.window_start < 0) spec.window_start = spec.steps > 10 ? std::min<int64_t>(5, spec.steps - 10) : 0;
    if (spec.window_steps < 0) spec.window_steps = std::min<int64_t>(10, spec.steps - spec.window_start);
    require(spec.window_steps >= 1 && spec.window_start + spec.window_steps <= spec.steps,
            "impossible --window " + std::to_string(spec.window_start) + ":" + std::to_string(spec.window_steps) +
                " (the window must lie within the " + std::to_string(spec.steps) + " measured steps)");
  }
  require(spec.sample_interval_ms >= 10 && spec.sample_interval_ms <= 60'000,
          "invalid --interval-ms " + std::to_string(spec.sample_interval_ms) + " (must be 10 to 60000)");
  require(spec.nproc >= 1 && spec.nproc <= kMaxLocalRanks,
          "invalid --nproc " + std::to_string(spec.nproc) + " (must be 1 to " + std::to_string(kMaxLocalRanks) + ")");
  require(spec.batch_size % spec.nproc == 0,
          "impossible --nproc " + std::to_string(spec.nproc) + " with batch " + std::to_string(spec.batch_size) +
              " (the global batch must split evenly across the ranks)");
  require(spec.bucket_mb > 0.0 && spec.bucket_mb <= 65536.0, "invalid --bucket-mb (must be above 0 and at most 65536)");
  require(spec.dist_timeout_s >= 1.0 && spec.dist_timeout_s <= 86400.0,
          "invalid --dist-timeout-s (must be 1 to 86400)");
}

void parse_window(const std::string& text, int64_t* start, int64_t* count) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw InputError("invalid --window '" + text + "' (expected START:COUNT, e.g. 10:20)");
  *start = parse_int("--window start", text.substr(0, colon));
  *count = parse_int("--window count", text.substr(colon + 1));
  require(*start >= 0 && *count >= 1, "invalid --window '" + text + "' (START >= 0, COUNT >= 1)");
}

void apply_setting(VariantSpec& spec, const std::string& key, const std::string& value) {
  if (key == "precision") {
    spec.precision = parse_precision(value);
  } else if (key == "compiled") {
    spec.compiled = parse_on_off("compiled", value);
  } else if (key == "batch") {
    spec.batch_size = parse_int("batch", value);
    require(spec.batch_size >= 1 && spec.batch_size < kMaxBatchSize,
            "impossible batch size " + value);
  } else if (key == "threads") {
    spec.threads = static_cast<int>(parse_int("threads", value));
  } else if (key == "steps") {
    spec.steps = parse_int("steps", value);
  } else if (key == "warmup") {
    spec.warmup_steps = parse_int("warmup", value);
  } else if (key == "max-loop-s") {
    char* end = nullptr;
    spec.max_loop_s = std::strtod(value.c_str(), &end);
    require(end != value.c_str() && *end == '\0' && std::isfinite(spec.max_loop_s) && spec.max_loop_s >= 0 &&
                spec.max_loop_s <= 86400,
            "invalid max-loop-s " + value + " (seconds, 0 to 86400)");
  } else if (key == "seed") {
    const int64_t seed = parse_int("seed", value);
    require(seed >= 0, "invalid seed " + value + " (must be 0 or more)");
    spec.seed = static_cast<uint64_t>(seed);
  } else if (key == "sync-every") {
    spec.sync_every_steps = parse_int("sync-every", value);
  } else if (key == "callback-every") {
    spec.callback_every_steps = parse_int("callback-every", value);
  } else if (key == "callback-ms") {
    spec.callback_ms = parse_double("callback-ms", value);
  } else if (key == "keep-loss-graphs") {
    spec.keep_loss_graphs = parse_on_off("keep-loss-graphs", value);
  } else if (key == "grad-norm-every") {
    spec.grad_norm_every_steps = parse_int("grad-norm-every", value);
  } else if (key == "device") {
    spec.device = parse_device(value);
  } else if (key == "workers") {
    const int64_t workers = parse_int("workers", value);
    require(workers >= 0 && workers <= kMaxLoaderWorkers,
            "invalid workers " + value + " (must be 0 to " + std::to_string(kMaxLoaderWorkers) + ")");
    spec.workers = static_cast<int>(workers);
  } else if (key == "prefetch") {
    const int64_t prefetch = parse_int("prefetch", value);
    require(prefetch >= 1 && prefetch <= kMaxPrefetch,
            "invalid prefetch " + value + " (must be 1 to " + std::to_string(kMaxPrefetch) + ")");
    spec.prefetch = static_cast<int>(prefetch);
  } else if (key == "persistent-workers") {
    spec.persistent_workers = parse_on_off("persistent-workers", value);
  } else if (key == "sampler") {
    spec.system_sampler = parse_on_off("sampler", value);
  } else if (key == "pin-memory") {
    spec.pin_memory = parse_on_off("pin-memory", value);
  } else if (key == "nproc") {
    spec.nproc = static_cast<int>(parse_int("nproc", value));
  } else if (key == "comm-mode") {
    spec.comm_mode = parse_comm_mode(value);
  } else if (key == "bucket-mb") {
    spec.bucket_mb = parse_double("bucket-mb", value);
  } else if (!key.empty()) {
    spec.knobs[key] = parse_double(key, value);  // checked against the scenario in resolve() (scenarios/registry.h)
  } else {
    throw InputError("empty setting name");
  }
}

void to_json(nlohmann::json& j, const VariantSpec& spec) {
  j = nlohmann::json{{"name", spec.name()},
                     {"scenario", spec.scenario},
                     {"precision", to_string(spec.precision)},
                     {"compiled", spec.compiled},
                     {"batch_size", spec.batch_size},
                     {"threads", spec.threads},
                     {"steps", spec.steps},
                     {"warmup_steps", spec.warmup_steps},
                     {"max_loop_s", spec.max_loop_s},
                     {"seed", spec.seed},
                     {"sync_every_steps", spec.sync_every_steps},
                     {"callback_every_steps", spec.callback_every_steps},
                     {"callback_ms", spec.callback_ms},
                     {"keep_loss_graphs", spec.keep_loss_graphs},
                     {"grad_norm_every_steps", spec.grad_norm_every_steps},
                     {"device", to_string(spec.device)},
                     {"workers", spec.workers},
                     {"prefetch", spec.prefetch},
                     {"persistent_workers", spec.persistent_workers},
                     {"pin_memory", spec.pin_memory},
                     {"data_dir", spec.data_dir},
                     {"system_sampler", spec.system_sampler},
                     {"profile", spec.profile},
                     {"window_start", spec.window_start},
                     {"window_steps", spec.window_steps},
                     {"sample_interval_ms", spec.sample_interval_ms},
                     {"record_shapes", spec.record_shapes},
                     {"trace_gzip", spec.trace_gzip},
                     {"nproc", spec.nproc},
                     {"comm_mode", to_string(spec.comm_mode)},
                     {"bucket_mb", spec.bucket_mb},
                     {"dist_timeout_s", spec.dist_timeout_s},
                     {"knobs", spec.knobs}};
}

void from_json(const nlohmann::json& j, VariantSpec& spec) {
  spec.scenario = j.at("scenario").get<std::string>();
  spec.precision = parse_precision(j.at("precision").get<std::string>());
  spec.compiled = j.at("compiled").get<bool>();
  spec.batch_size = j.at("batch_size").get<int64_t>();
  spec.threads = j.at("threads").get<int>();
  spec.steps = j.at("steps").get<int64_t>();
  spec.warmup_steps = j.at("warmup_steps").get<int64_t>();
  spec.max_loop_s = j.value("max_loop_s", 0.0);
  spec.seed = j.at("seed").get<uint64_t>();
  spec.sync_every_steps = j.at("sync_every_steps").get<int64_t>();
  spec.callback_every_steps = j.at("callback_every_steps").get<int64_t>();
  spec.callback_ms = j.at("callback_ms").get<double>();
  spec.keep_loss_graphs = j.value("keep_loss_graphs", false);
  spec.grad_norm_every_steps = j.value("grad_norm_every_steps", int64_t{10});
  spec.device = parse_device(j.at("device").get<std::string>());
  spec.workers = j.value("workers", 0);
  spec.prefetch = j.value("prefetch", 2);
  spec.persistent_workers = j.value("persistent_workers", true);
  spec.pin_memory = j.value("pin_memory", false);
  spec.data_dir = j.value("data_dir", std::string());
  spec.system_sampler = j.value("system_sampler", true);
  spec.profile = j.value("profile", false);
  spec.window_start = j.value("window_start", int64_t{-1});
  spec.window_steps = j.value("window_steps", int64_t{-1});
  spec.sample_interval_ms = j.value("sample_interval_ms", int64_t{500});
  spec.record_shapes = j.value("record_shapes", false);
  spec.trace_gzip = j.value("trace_gzip", true);
  spec.nproc = j.value("nproc", 1);
  spec.comm_mode = parse_comm_mode(j.value("comm_mode", std::string("overlap")));
  spec.bucket_mb = j.value("bucket_mb", 25.0);
  spec.dist_timeout_s = j.value("dist_timeout_s", 60.0);
  spec.knobs = j.at("knobs").get<std::map<std::string, double>>();
}

}  // namespace trainlab
