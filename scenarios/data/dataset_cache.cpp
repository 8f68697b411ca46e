// Generate-once dataset folders: parameter hash in the name, a lock file against concurrent
// generators, a temporary folder renamed into place, the manifest written last.
#include "scenarios/data/dataset_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/bounded_json.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "scenarios/data/host_batch.h"
#include "core/units.h"
#include "core/hash.h"

namespace trainlab {
namespace fs = std::filesystem;
namespace {

// An exclusive flock held for the object's lifetime.
class FolderLock {
 public:
  explicit FolderLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)) {
    if (fd_ < 0) throw InputError("cannot lock " + path + ": " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const std::string why = std::strerror(errno);
        ::close(fd_);
        throw InputError("cannot lock " + path + ": " + why);
      }
    }
  }
  ~FolderLock() { ::close(fd_); }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_;
};

// "" when the folder's manifest matches these parameters, else why the folder cannot be used.
std::string manifest_mismatch(const std::string& dir, const std::string& kind, int format_version,
                              const nlohmann::json& params) {
  std::error_code ec;
  const std::string path = dir + "/manifest.json";
  if (!fs::exists(dir, ec)) return "no dataset for these parameters yet";
  if (!fs::exists(path, ec)) return "the folder there has no manifest.json (an unfinished generation)";
  try {
    const nlohmann::json manifest = parse_bounded_json(read_file(path), path);
    if (manifest.is_discarded()) return "its manifest.json is unreadable (not valid JSON)";
    const bool same = manifest.at("kind") == kind && manifest.at("format_version") == format_version &&
                      manifest.at("params") == params;
    return same ? "" : "its manifest.json names other parameters";
  } catch (const std::exception& e) {
    std::string why = e.what();
    return "its manifest.json is unreadable (" + why.substr(0, why.find('\n')).substr(0, 200) + ")";
  }
}

// Temporary folders or files `<prefix>*` in `dir` left by generators that died: removed while
// the caller holds the lock (a live generator holds it while its temporary exists).
void remove_stale_temporaries(const std::string& dir, const std::string& prefix) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) remove_tree(entry.path().string());
  }
}

}  // namespace

std::string default_data_root() {
  const char* env = std::getenv("TRAINLAB_DATA_DIR");
  return (env != nullptr && *env != '\0') ? std::string(env) : std::string("results/datasets");
}

PreparedDataset prepare_dataset(const std::string& data_root, const std::string& kind, int format_version,
                                const nlohmann::json& params,
                                const std::function<void(const std::string& tmp_dir)>& generate) {
  ensure_writable_dir(data_root);
  const std::string identity = kind + "/" + std::to_string(format_version) + "/" + params.dump();
  PreparedDataset prepared;
  prepared.dir = data_root + "/" + kind + "-" + hex16(fnv1a(identity));
  if (manifest_mismatch(prepared.dir, kind, format_version, params).empty()) return prepared;

  FolderLock lock(prepared.dir + ".lock");
  prepared.generated_because = manifest_mismatch(prepared.dir, kind, format_version, params);
  if (prepared.generated_because.empty()) return prepared;  // built meanwhile
  remove_stale_temporaries(data_root, fs::path(prepared.dir).filename().string() + ".tmp-");
  if (prepared.generated_because.rfind("no dataset", 0) != 0) {
    std::cerr << "trainlab: dataset " << prepared.dir << ": " << prepared.generated_because << "; generating it again\n";
  }

  const int64_t start_ns = monotonic_ns();
  const std::string tmp_dir = prepared.dir + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  remove_tree(tmp_dir);
  fs::create_directories(tmp_dir, ec);
  if (ec) throw InputError("cannot create " + tmp_dir + ": " + ec.message());
  try {
    generate(tmp_dir);
    nlohmann::json manifest = {{"kind", kind}, {"format_version", format_version}, {"params", params}};
    write_file_atomically(tmp_dir + "/manifest.json", manifest.dump(2) + "\n");
    std::string remove_error;  // a folder without a matching manifest is incomplete or stale
    if (!remove_tree(prepared.dir, &remove_error)) throw InputError(remove_error);
    fs::rename(tmp_dir, prepared.dir);
  } catch (...) {
    remove_tree(tmp_dir);
    throw;
  }
  prepared.generated = true;
  prepared.generate_s = ns_to_s(monotonic_ns() - start_ns);
  return prepared;
}

std::string prepare_derived_file(const std::string& dataset_dir, const std::string& name,
                                 const std::function<void(const std::string& tmp_path)>& build) {
  const std::string path = dataset_dir + "/" + name;
  std::error_code ec;
  if (fs::exists(path, ec)) return path;
  FolderLock lock(dataset_dir + "/." + name + ".lock");
  if (fs::exists(path, ec)) return path;
  remove_stale_temporaries(dataset_dir, "." + name + ".tmp-");
  const std::string tmp_path = dataset_dir + "/." + name + ".tmp-" + std::to_string(::getpid());
  try {
    build(tmp_path);
    fs::rename(tmp_path, path);
  } catch (...) {
    fs::remove(tmp_path, ec);
    throw;
  }
  return path;
}

}  // namespace trainlab
