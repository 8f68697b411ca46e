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
    for (const char* name : {"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) ::unsetenv(name);
    for (const auto& [k, v] : vars) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const char* name : {"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) ::unsetenv(name);
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

TEST(DistEnvTest, FreePortIsInRange) {
  const int port = find_free_port();
  EXPECT_GT(port, 0);
  EXPECT_LE(port, 65535);
}

}  // namespace
}  // namespace trainlab
