#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/secret.h"
#include "core/error.h"
#include "core/socket.h"

namespace loom {
namespace {

using namespace std::chrono_literals;

// Every variable detectLaunchEnv reads. The fixture clears them all, so the
// test's own environment (say, running under srun) does not leak in, and
// restores them afterwards.
const char* const kVars[] = {"LOOM_RANK",
                             "LOOM_WORLD_SIZE",
                             "LOOM_LOCAL_RANK",
                             "LOOM_LOCAL_SIZE",
                             "LOOM_UNIQUE_ID",
                             "LOOM_JOB_ID",
                             "LOOM_COMM_ID",
                             "LOOM_SECRET",
                             "OMPI_COMM_WORLD_RANK",
                             "OMPI_COMM_WORLD_SIZE",
                             "OMPI_COMM_WORLD_LOCAL_RANK",
                             "OMPI_COMM_WORLD_LOCAL_SIZE",
                             "OMPI_MCA_ess_base_jobid",
                             "OMPI_MCA_orte_ess_jobid",
                             "PMIX_NAMESPACE",
                             "RANK",
                             "WORLD_SIZE",
                             "LOCAL_RANK",
                             "LOCAL_WORLD_SIZE",
                             "MASTER_ADDR",
                             "MASTER_PORT",
                             "TORCHELASTIC_RUN_ID",
                             "SLURM_PROCID",
                             "SLURM_NTASKS",
                             "SLURM_STEP_NUM_TASKS",
                             "SLURM_LOCALID",
                             "SLURM_NTASKS_PER_NODE",
                             "SLURM_STEP_TASKS_PER_NODE",
                             "SLURM_TASKS_PER_NODE",
                             "SLURM_JOB_ID",
                             "SLURM_JOBID",
                             "SLURM_STEP_ID",
                             "SLURM_STEPID",
                             "PMI_RANK",
                             "PMI_SIZE",
                             "PMI_ID",
                             "PMI_KVSNAME",
                             "MPI_LOCALRANKID",
                             "MPI_LOCALNRANKS"};

class LaunchEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVars) {
      if (const char* value = std::getenv(name)) saved_[name] = value;
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : kVars) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }
  static void set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }
  static void expectError(ErrorCode code, const std::string& needle) {
    try {
      detectLaunchEnv();
      ADD_FAILURE() << "accepted; expected an error mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }

 private:
  std::map<std::string, std::string> saved_;
};

// Started without a launcher, a program is one rank of its own world.
TEST_F(LaunchEnvTest, NothingSetIsOneRank) {
  const LaunchEnv env = detectLaunchEnv();
  EXPECT_EQ(env.launcher, "none");
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.worldSize, 1);
  EXPECT_EQ(env.localSize, 1);
  const UniqueId id = resolveUniqueId(env);
  auto alone = Bootstrap::join(id, 0, 1, Deadline::after(5s));
  EXPECT_EQ(alone->allGather("only", Deadline::after(5s)), std::vector<std::string>{"only"});
}

TEST_F(LaunchEnvTest, Loomrun) {
  UniqueId id;
  id.host = "127.0.0.1";
  id.port = 1234;
  id.secret[5] = 9;
  set("LOOM_RANK", "3");
  set("LOOM_WORLD_SIZE", "4");
  set("LOOM_LOCAL_RANK", "1");
  set("LOOM_LOCAL_SIZE", "2");
  set("LOOM_UNIQUE_ID", id.toHex());
  const LaunchEnv env = detectLaunchEnv();
  EXPECT_EQ(env.launcher, "loomrun");
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.worldSize, 4);
  EXPECT_EQ(env.localRank, 1);
  EXPECT_EQ(env.localSize, 2);
  ASSERT_TRUE(env.id.has_value());
  EXPECT_EQ(env.id->port, 1234);
  EXPECT_EQ(env.id->secret, id.secret);
  EXPECT_EQ(resolveUniqueId(env).port, 1234);
}

TEST_F(LaunchEnvTest, LoomrunDefaultsLocalToWorld) {
  set("LOOM_RANK", "2");
  set("LOOM_WORLD_SIZE", "3");
  const LaunchEnv env = detectLaunchEnv();
  EXPECT_EQ(env.localRank, 2);
  EXPECT_EQ(env.localSize, 3);
  EXPECT_FALSE(env.id.has_value());
}

TEST_F(LaunchEnvTest, OpenMpi) {
  set("OMPI_COMM_WORLD_RANK", "5");
  set("OMPI_COMM_WORLD_SIZE", "8");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  set("OMPI_COMM_WORLD_LOCAL_SIZE", "4");
  set("OMPI_MCA_ess_base_jobid", "12345");
  const LaunchEnv env = detectLaunchEnv();
  EXPECT_EQ(env.launcher, "openmpi");
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.worldSize, 8);
  EXPECT_EQ(env.localRank, 1);
  EXPECT_EQ(env.localSize, 4);
  EXPECT_EQ(env.jobKey, "12345");
}

TEST_F(LaunchEnvTest, Torchrun) {
  set("RANK", "1");
  set("WORLD_SIZE", "2");
  set("LOCAL_RANK", "1");
  set("LOCAL_WORLD_SIZE", "2");
  set("MASTER_ADDR", "127.0.0.1");
  set("MASTER_PORT", "29500");
  set("TORCHELASTIC_RUN_ID", "run7");
  const LaunchEnv env = detectLaunchEnv();
  EXPECT_EQ(env.launcher, "torchrun");
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.masterHost, "127.0.0.1");
  EXPECT_EQ(env.masterPort, 29500);
  EXPECT_EQ(env.jobKey, "run7");
  // Rank 1 only derives the id: MASTER_PORT + 1, nothing started.
  const UniqueId id = resolveUniqueId(env);
  EXPECT_EQ(id.host, "127.0.0.1");
  EXPECT_EQ(id.port, 29501);
}

TEST_F(LaunchEnvTest, Slurm) {
  set("SLURM_PROCID", "6");
  set("SLURM_NTASKS", "8");
  set("SLURM_LOCALID", "2");
  set("SLURM_TASKS_PER_NODE", "4(x2)");
  set("SLURM_JOB_ID", "777");
  set("SLURM_STEP_ID", "3");
  const LaunchEnv env = detectLaunchEnv();
  EXPECT_EQ(env.launcher, "slurm");
  EXPECT_EQ(env.rank, 6);
  EXPECT_EQ(env.worldSize, 8);
  EXPECT_EQ(env.localRank, 2);
  EXPECT_EQ(env.localSize, 4);
  EXPECT_EQ(env.jobKey, "slurm.777.3");
}

TEST_F(LaunchEnvTest, Pmi) {
  set("PMI_RANK", "0");
  set("PMI_SIZE", "2");
  set("PMI_ID", "0");  // per process under some PMI launchers: no job key
  const LaunchEnv anonymous = detectLaunchEnv();
  EXPECT_EQ(anonymous.launcher, "pmi");
  EXPECT_EQ(anonymous.worldSize, 2);
  EXPECT_FALSE(anonymous.jobKeyShared);
  set("PMI_KVSNAME", "kvs_9");
  const LaunchEnv env = detectLaunchEnv();
  EXPECT_EQ(env.jobKey, "kvs_9");
  EXPECT_TRUE(env.jobKeyShared);
}

TEST_F(LaunchEnvTest, PriorityLoomrunOverMpiOverSlurm) {
  set("SLURM_PROCID", "0");
  set("SLURM_NTASKS", "1");
  set("OMPI_COMM_WORLD_RANK", "0");
  set("OMPI_COMM_WORLD_SIZE", "1");
  EXPECT_EQ(detectLaunchEnv().launcher, "openmpi");
  set("LOOM_RANK", "0");
  set("LOOM_WORLD_SIZE", "1");
  EXPECT_EQ(detectLaunchEnv().launcher, "loomrun");
}

TEST_F(LaunchEnvTest, BadValuesAreRejectedByName) {
  set("LOOM_RANK", "4");
  set("LOOM_WORLD_SIZE", "4");
  expectError(ErrorCode::InvalidArgument, "LOOM_RANK");
  set("LOOM_RANK", "x");
  expectError(ErrorCode::InvalidArgument, "LOOM_RANK");
  set("LOOM_RANK", "0");
  set("LOOM_WORLD_SIZE", "0");
  expectError(ErrorCode::InvalidArgument, "LOOM_WORLD_SIZE");
  unsetenv("LOOM_WORLD_SIZE");
  expectError(ErrorCode::InvalidArgument, "LOOM_WORLD_SIZE");
  set("LOOM_WORLD_SIZE", "2");
  set("LOOM_LOCAL_SIZE", "3");
  expectError(ErrorCode::InvalidArgument, "LOOM_LOCAL_SIZE");
  unsetenv("LOOM_LOCAL_SIZE");
  set("LOOM_UNIQUE_ID", "abcd");
  expectError(ErrorCode::InvalidArgument, "LOOM_UNIQUE_ID");
  unsetenv("LOOM_UNIQUE_ID");
  set("LOOM_COMM_ID", "127.0.0.1");
  expectError(ErrorCode::InvalidArgument, "LOOM_COMM_ID");
  set("LOOM_COMM_ID", "127.0.0.1:70000");
  expectError(ErrorCode::InvalidArgument, "LOOM_COMM_ID");
}

TEST_F(LaunchEnvTest, CommIdOverridesAndRanksRendezvous) {
  // Two ranks of one "job": rank 0 serves at LOOM_COMM_ID, rank 1 derives the
  // same id, and both join the real server.
  Socket probe = listenTcp("127.0.0.1", 0);
  const uint16_t port = SocketAddress::local(probe.fd()).port();
  probe.reset();
  set("LOOM_COMM_ID", fmt::format("127.0.0.1:{}", port));
  set("LOOM_SECRET", "s3cret");
  set("PMI_SIZE", "2");
  set("PMI_RANK", "1");
  const LaunchEnv env1 = detectLaunchEnv();
  const UniqueId id1 = resolveUniqueId(env1);
  EXPECT_EQ(id1.port, port);
  set("PMI_RANK", "0");
  const LaunchEnv env0 = detectLaunchEnv();
  const UniqueId id0 = resolveUniqueId(env0);
  EXPECT_EQ(id0.host, id1.host);
  EXPECT_EQ(id0.secret, id1.secret);
  std::unique_ptr<Bootstrap> b1;
  std::thread t([&] { b1 = Bootstrap::join(id1, 1, 2, Deadline::after(5s)); });
  auto b0 = Bootstrap::join(id0, 0, 2, Deadline::after(5s));
  t.join();
  ASSERT_NE(b1, nullptr);
  std::thread t1([&] { b1->barrier(Deadline::after(5s)); });
  EXPECT_EQ(b0->allGather("zero", Deadline::after(5s))[0], "zero");
  t1.join();
}

TEST_F(LaunchEnvTest, JobKeyDerivesPortWithoutCommId) {
  set("OMPI_COMM_WORLD_RANK", "1");
  set("OMPI_COMM_WORLD_SIZE", "2");
  set("OMPI_MCA_ess_base_jobid", "job-a");
  const UniqueId a = resolveUniqueId(detectLaunchEnv());
  EXPECT_GE(a.port, 20000);
  EXPECT_LT(a.port, 40000);
  EXPECT_EQ(a.host, "127.0.0.1");
  set("OMPI_MCA_ess_base_jobid", "job-b");
  const UniqueId b = resolveUniqueId(detectLaunchEnv());
  EXPECT_NE(a.secret, b.secret);
  EXPECT_NE(a.job, b.job);
}

TEST_F(LaunchEnvTest, JobTagComesOnlyFromAJobWideKey) {
  // Ranks started by hand around LOOM_COMM_ID have per-process job keys: the
  // job tag must then come from what they share, or they could never meet.
  set("LOOM_COMM_ID", "127.0.0.1:45678");
  set("LOOM_SECRET", "0123456789abcdef0123456789abcdef");
  set("LOOM_WORLD_SIZE", "2");
  set("LOOM_RANK", "1");
  const LaunchEnv byHand = detectLaunchEnv();
  EXPECT_FALSE(byHand.jobKeyShared);
  EXPECT_EQ(resolveUniqueId(byHand).job, derivedJob("rendezvous 127.0.0.1:45678"));
  set("LOOM_JOB_ID", "job-7");
  const LaunchEnv named = detectLaunchEnv();
  EXPECT_TRUE(named.jobKeyShared);
  EXPECT_EQ(resolveUniqueId(named).job, derivedJob("job-7"));
}

}  // namespace
}  // namespace loom
