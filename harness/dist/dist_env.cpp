// Environment variables -> DistEnv, with one clear error per bad value; a free port via bind(0);
// the cores this process may use and how many threads each local rank gets by default.
#include "harness/dist/dist_env.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/errors.h"

namespace trainlab {
namespace {

const char* get(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

int int_variable(const char* name, int min_value, int max_value) {
  const char* text = get(name);
  if (text == nullptr) throw InputError(std::string("data parallel: ") + name + " is not set");
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min_value || value > max_value) {
    throw InputError(std::string("data parallel: ") + name + "='" + text + "' is not a whole number in [" +
                     std::to_string(min_value) + ", " + std::to_string(max_value) + "]");
  }
  return static_cast<int>(value);
}

// MASTER_ADDR and MASTER_PORT, both required; `context` begins the error line of a missing address.
void read_master(const std::string& context, std::string* addr, int* port) {
  const char* text = get("MASTER_ADDR");
  if (text == nullptr) throw InputError(context + ": MASTER_ADDR is not set");
  *addr = text;
  *port = int_variable("MASTER_PORT", 1, 65535);
}

// A group of processes from its size and rank variables (size 1 to 4096, rank below the size) and,
// with more than one member, its master: false, and nothing past the size read, where there is no
// group to join (the size unset, or 1). `context` begins the error line of a missing address.
bool read_group(const char* size_name, const char* rank_name, const std::string& context, int* size, int* rank,
                std::string* addr, int* port) {
  if (get(size_name) == nullptr) return false;
  *size = int_variable(size_name, 1, 4096);
  if (*size == 1) return false;
  *rank = int_variable(rank_name, 0, *size - 1);
  read_master(context, addr, port);
  return true;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> DistEnv::variables() const {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world_size)},
          {"LOCAL_RANK", std::to_string(local_rank)},
          {"MASTER_ADDR", master_addr},
          {"MASTER_PORT", std::to_string(master_port)}};
}

DistEnv dist_env_from_environment() {
  DistEnv env;
  if (!read_group("WORLD_SIZE", "RANK", "data parallel", &env.world_size, &env.rank, &env.master_addr,
                  &env.master_port)) {
    return env;
  }
  env.local_world_size = get("LOCAL_WORLD_SIZE") != nullptr ? int_variable("LOCAL_WORLD_SIZE", 1, env.world_size)
                                                            : env.world_size;
  env.local_rank = get("LOCAL_RANK") != nullptr ? int_variable("LOCAL_RANK", 0, 4095) : env.rank % env.local_world_size;
  // Without a launcher's word, machines hold LOCAL_WORLD_SIZE consecutive ranks each (torchrun's
  // and the usual launchers' numbering).
  env.node_rank = env.rank / env.local_world_size;
  for (const char* name : {"GROUP_RANK", "NODE_RANK"}) {
    if (get(name) != nullptr) {
      env.node_rank = int_variable(name, 0, 4095);
      break;
    }
  }
  if (const char* prefix = get("TRAINLAB_STORE_PREFIX")) env.store_prefix = prefix;
  return env;
}

NodesOfJob nodes_of_job_from_environment() {
  NodesOfJob nodes;
  read_group("NNODES", "NODE_RANK", "data parallel across machines (NNODES)", &nodes.nnodes, &nodes.node_rank,
             &nodes.master_addr, &nodes.master_port);
  return nodes;
}

GatherRole gather_role_from_environment() {
  const char* role = get(kGatherVariable);
  if (role != nullptr && std::string(role) == "send") return GatherRole::kSend;
  if (role != nullptr && std::string(role) == "receive") return GatherRole::kReceive;
  return GatherRole::kNone;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

int physical_cores_usable() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) == 0) return usable_cores();
  std::set<std::pair<std::string, std::string>> cores;  // (package id, core id)
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    const std::string topology = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream package_file(topology + "physical_package_id"), core_file(topology + "core_id");
    std::string package, core;
    if (!(package_file >> package) || !(core_file >> core)) return usable_cores();
    cores.insert({package, core});
  }
  return cores.empty() ? usable_cores() : static_cast<int>(cores.size());
}

int local_ranks_from_environment() {
  for (const char* name : {"LOCAL_WORLD_SIZE", "WORLD_SIZE"}) {
    if (get(name) != nullptr) return int_variable(name, 1, 4096);
  }
  return 1;
}

int default_threads_per_rank(int cores, int local_ranks) {
  if (local_ranks <= 1) return 0;
  return std::max(1, cores / local_ranks);
}

void check_master_addr(const std::string& master_addr, double timeout_s) {
  // getaddrinfo has no timeout of its own: it runs on a thread that is left behind if it hangs.
  auto answer = std::make_shared<std::promise<std::string>>();
  std::future<std::string> result = answer->get_future();
  std::thread([answer, master_addr] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int status = ::getaddrinfo(master_addr.c_str(), nullptr, &hints, &found);
    if (found != nullptr) ::freeaddrinfo(found);
    answer->set_value(status == 0 ? "" : ::gai_strerror(status));
  }).detach();
  if (result.wait_for(std::chrono::duration<double>(timeout_s)) != std::future_status::ready) {
    throw InputError("data parallel: name resolution of MASTER_ADDR='" + master_addr + "' gave no answer within " +
                     std::to_string(static_cast<int>(timeout_s)) + " s");
  }
  const std::string error = result.get();
  if (!error.empty()) {
    throw InputError("data parallel: MASTER_ADDR='" + master_addr + "' does not resolve (name resolution: " + error + ")");
  }
}

std::string local_address_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || found == nullptr) return "";
  std::string address;
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in local{};
  socklen_t len = sizeof local;
  // A datagram socket's connect sends nothing: it only asks the kernel for the route.
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text) != nullptr) address = text;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  return address;
}

int find_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("no free local port: " + why);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace trainlab
