// Spec file -> child process -> record file, with failures turned into recorded errors.
#include "harness/runner/variant_runner.h"

#include <filesystem>

#include "harness/core/atomic_file.h"
#include "harness/core/errors.h"
#include "harness/runner/child_process.h"

namespace trainlab {
namespace fs = std::filesystem;

VariantRecord run_variant_isolated(const VariantSpec& spec, const VariantRunOptions& options) {
  const fs::path dir = fs::path(options.run_dir) / "variants";
  ensure_writable_dir(dir.string());
  std::string stem = options.file_stem.empty() ? spec.name() : options.file_stem;
  for (char& c : stem) {
    if (c == '+' || c == '/' || c == ' ') c = '_';
  }
  const std::string spec_path = (dir / (stem + ".spec.json")).string();
  const std::string record_path = (dir / (stem + ".json")).string();
  const std::string log_path = (dir / (stem + ".log")).string();
  write_file_atomically(spec_path, nlohmann::json(spec).dump(1) + "\n");
  std::error_code ec;
  fs::remove(record_path, ec);

  const ChildOutcome outcome =
      run_self_as_child({"__variant", "--spec", spec_path, "--out", record_path}, log_path, options.timeout_s);

  if (!outcome.timed_out && fs::exists(record_path)) {
    try {
      return read_variant_record(record_path);
    } catch (const InputError&) {
      // fall through: an unreadable record is reported like a missing one
    }
  }
  VariantRecord failed;
  failed.spec = spec;
  std::string last_words = last_line_of(log_path);
  failed.error = "variant process " + outcome.describe() +
                 (last_words.empty() ? "" : ": " + last_words.substr(0, 300));
  return failed;
}

}  // namespace trainlab
