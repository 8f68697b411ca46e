// On-disk datasets generated once from their parameters: each lives in
// <data_root>/<kind>-<16 hex digits of the parameters' hash>/ with a manifest.json holding the
// parameters. Generation writes into a temporary folder that is renamed into place when complete,
// under an exclusive lock, so concurrent runs never see or build half a dataset; changed
// parameters give a new folder (the old one is left for its own parameters).
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace trainlab {

// Default data root: $TRAINLAB_DATA_DIR, else "results/datasets".
std::string default_data_root();

struct PreparedDataset {
  std::string dir;
  bool generated = false;  // false: reused from an earlier run
  double generate_s = 0;   // wall time spent generating, when generated
  std::string generated_because;  // when generated: none yet, or why the one there was not used
};

// Returns the dataset folder for these parameters, calling generate(tmp_dir) to fill a temporary
// folder first if none exists yet. generate may throw; the temporary folder is then removed.
// The manifest gets {"kind", "format_version", "params"} and is written last. Under the lock,
// temporary folders left by generators that died (`<dir>.tmp-PID`) are removed first; a folder
// whose manifest is unreadable is generated again and the record says why.
PreparedDataset prepare_dataset(const std::string& data_root, const std::string& kind, int format_version,
                                const nlohmann::json& params,
                                const std::function<void(const std::string& tmp_dir)>& generate);

// An optional derived file inside a dataset folder (e.g. the decoded cache): built by
// build(tmp_path) under the same lock if missing, then renamed to dir/name. Returns its path.
std::string prepare_derived_file(const std::string& dataset_dir, const std::string& name,
                                 const std::function<void(const std::string& tmp_path)>& build);

}  // namespace trainlab
