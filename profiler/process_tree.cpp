// The processes of a tree, found through /proc (process_tree.h).
#include "profiler/process_tree.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace trainlab {

int64_t parent_pid_in_stat(std::string_view text) {
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return -1;
  std::istringstream rest{std::string(text.substr(close + 1))};
  std::string state;
  int64_t ppid = -1;
  if (!(rest >> state >> ppid)) return -1;
  return ppid;
}

std::vector<int> descendants_of(int root, const std::string& proc_root) {
  std::multimap<int64_t, int> children;  // parent -> child
  if (DIR* dir = ::opendir(proc_root.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      char* end = nullptr;
      const long pid = std::strtol(entry->d_name, &end, 10);
      if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
      std::ifstream stat(proc_root + "/" + entry->d_name + "/stat");
      std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
      const int64_t ppid = parent_pid_in_stat(text);
      if (ppid > 0) children.emplace(ppid, static_cast<int>(pid));
    }
    ::closedir(dir);
  }
  std::vector<int> out;
  std::vector<int> frontier{root};
  while (!frontier.empty()) {
    std::vector<int> next;
    for (int parent : frontier) {
      const auto [first, last] = children.equal_range(parent);
      for (auto it = first; it != last; ++it) {
        if (out.size() > 100000) return out;  // a cycle cannot happen in /proc; a bound all the same
        out.push_back(it->second);
        next.push_back(it->second);
      }
    }
    frontier = std::move(next);
  }
  return out;
}

std::string process_comm(int pid, const std::string& proc_root) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

}  // namespace trainlab
