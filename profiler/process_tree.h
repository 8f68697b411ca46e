// The processes of a tree, found through /proc: every process whose parent chain (PPid) leads to
// a root. Used by the system sampler (per-process metrics of a job) and by the job runner (to end
// every descendant, daemonised ones included, which reparent to a child subreaper). No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainlab {

// The parent pid in the text of /proc/<pid>/stat (fields read after the last ')'); -1 when the
// text does not parse.
int64_t parent_pid_in_stat(std::string_view text);

// The descendants of `root` (not root itself) alive now, parents before children. A process that
// ends while /proc is read is simply not listed.
std::vector<int> descendants_of(int root, const std::string& proc_root = "/proc");

// The command name of a process (/proc/<pid>/comm without its newline), "" when unreadable.
std::string process_comm(int pid, const std::string& proc_root = "/proc");

}  // namespace trainlab
