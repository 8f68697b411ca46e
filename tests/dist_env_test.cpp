// The rendezvous variables: unset or WORLD_SIZE=1 is one process; a full set parses; each missing
// or malformed variable is one InputError naming it. A free port is a real, bindable port.
#include <gtest/gtest.h>

#include <stdlib.h>

#include "core/errors.h"
#include "harness/dist/dist_env.h"

namespace trainlab {
namespace {

using Variables = std::vector<std::pair<std::string, std::string>>;

struct ScopedEnv {
  explicit ScopedEnv(const Variables& vars) {
    clear();
    for (const auto& [k, v] : vars) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() { clear(); }
  static void clear() {
    for (const char* name : {"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                             "GROUP_RANK", "NODE_RANK", "TRAINLAB_STORE_PREFIX", "TRAINLAB_GATHER"})
      ::unsetenv(name);
  }
};

void expect_error_naming(const std::string& variable) {
  try {
    (void)dist_env_from_environment();
    ADD_FAILURE() << "no error for " << variable;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(variable), std::string::npos) << e.what();
  }
}

TEST(DistEnvTest, RanksOnOneMachineShareItsCoresByDefault) {
  EXPECT_EQ(default_threads_per_rank(2, 1), 0);   // one process: LibTorch's own default
  EXPECT_EQ(default_threads_per_rank(2, 2), 1);   // --nproc 2 on 2 cores: 2 x 1, not 2 x 2
  EXPECT_EQ(default_threads_per_rank(16, 3), 5);  // 3 x 5 = 15 <= 16
  EXPECT_EQ(default_threads_per_rank(2, 4), 1);   // more ranks than cores: at least one thread each
  EXPECT_GE(usable_cores(), 1);
  {
    ScopedEnv none(Variables{});
    EXPECT_EQ(local_ranks_from_environment(), 1);
  }
  {
    ScopedEnv nproc(Variables{{"WORLD_SIZE", "2"}});  // trainlab --nproc 2: every rank on this machine
    EXPECT_EQ(local_ranks_from_environment(), 2);
  }
  {
    ScopedEnv nodes({{"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"}});  // torchrun, 2 machines x 4
    EXPECT_EQ(local_ranks_from_environment(), 4);
  }
  ScopedEnv bad(Variables{{"LOCAL_WORLD_SIZE", "zero"}});
  EXPECT_THROW(local_ranks_from_environment(), InputError);
}

TEST(DistEnvTest, SingleProcessWithoutVariables) {
  ScopedEnv env(Variables{});
  const DistEnv d = dist_env_from_environment();
  EXPECT_FALSE(d.distributed());
  EXPECT_EQ(d.rank, 0);
  ScopedEnv one(Variables{{"WORLD_SIZE", "1"}});
  EXPECT_FALSE(dist_env_from_environment().distributed());
}

TEST(DistEnvTest, FullSetParsesAndRoundTripsThroughVariables) {
  ScopedEnv env({{"WORLD_SIZE", "4"}, {"RANK", "3"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29500"}});
  const DistEnv d = dist_env_from_environment();
  EXPECT_TRUE(d.distributed());
  EXPECT_EQ(d.world_size, 4);
  EXPECT_EQ(d.rank, 3);
  EXPECT_EQ(d.local_rank, 1);
  EXPECT_EQ(d.master_addr, "10.0.0.7");
  EXPECT_EQ(d.master_port, 29500);
  ScopedEnv again(d.variables());
  const DistEnv e = dist_env_from_environment();
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_port, 29500);
}

TEST(DistEnvTest, MissingOrMalformedVariablesNameThemselves) {
  { ScopedEnv env({{"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}); expect_error_naming("RANK"); }
  { ScopedEnv env({{"WORLD_SIZE", "2"}, {"RANK", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}); expect_error_naming("RANK"); }
  { ScopedEnv env(Variables{{"WORLD_SIZE", "two"}}); expect_error_naming("WORLD_SIZE"); }
  { ScopedEnv env({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_PORT", "1"}}); expect_error_naming("MASTER_ADDR"); }
  { ScopedEnv env({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}}); expect_error_naming("MASTER_PORT"); }
  { ScopedEnv env({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "h"}}); expect_error_naming("MASTER_PORT"); }
}

// torchrun across machines: the machine's index (GROUP_RANK, else NODE_RANK), the ranks on it, the
// child's store prefix and its part in gathering the records.
TEST(DistEnvTest, AJobAcrossMachinesSaysWhichMachineAndHowManyRanksAreOnIt) {
  {
    ScopedEnv env({{"WORLD_SIZE", "4"}, {"RANK", "3"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                   {"GROUP_RANK", "1"}, {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29500"},
                   {"TRAINLAB_STORE_PREFIX", "trainlab/0/2-fp32"}, {"TRAINLAB_GATHER", "send"}});
    const DistEnv d = dist_env_from_environment();
    EXPECT_EQ(d.node_rank, 1);
    EXPECT_EQ(d.local_world_size, 2);
    EXPECT_TRUE(d.multi_node());
    EXPECT_EQ(d.store_prefix, "trainlab/0/2-fp32");
    EXPECT_EQ(gather_role_from_environment(), GatherRole::kSend);
  }
  {
    ScopedEnv env({{"WORLD_SIZE", "4"}, {"RANK", "0"}, {"NODE_RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"},
                   {"TRAINLAB_GATHER", "receive"}});
    const DistEnv d = dist_env_from_environment();
    EXPECT_EQ(d.node_rank, 0);
    EXPECT_EQ(d.local_world_size, 4);  // no LOCAL_WORLD_SIZE: every rank is on this machine
    EXPECT_FALSE(d.multi_node());
    EXPECT_EQ(d.store_prefix, "trainlab");
    EXPECT_EQ(gather_role_from_environment(), GatherRole::kReceive);
  }
  {
    ScopedEnv env({{"WORLD_SIZE", "4"}, {"RANK", "0"}, {"LOCAL_WORLD_SIZE", "5"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
    expect_error_naming("LOCAL_WORLD_SIZE");  // more ranks on this machine than in the job
  }
  ScopedEnv none(Variables{});
  EXPECT_EQ(gather_role_from_environment(), GatherRole::kNone);
}

// Gloo listens on the address that faces the rendezvous: loopback for loopback.
TEST(DistEnvTest, TheLocalAddressTowardAHostIsTheRoutesSource) {
  EXPECT_EQ(local_address_toward("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(local_address_toward("no-such-host.invalid"), "");
}

TEST(DistEnvTest, FreePortIsInRange) {
  const int port = find_free_port();
  EXPECT_GT(port, 0);
  EXPECT_LE(port, 65535);
}

}  // namespace
}  // namespace trainlab
