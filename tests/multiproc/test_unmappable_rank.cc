// A rank that cannot allocate shared buffers (here: memfd_create refused by a
// seccomp filter, as a container's profile may do) still joins: creation
// cannot map its probe buffer, so registered buffers change nothing for the
// communicator, and large calls run through the arena with the right results.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "harness.h"

namespace loomtest {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#endif

/// From here on this process's memfd_create fails with EPERM; every other
/// system call is allowed. False if the kernel refused the filter.
bool refuseMemfd() {
  sock_filter program[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog filter{static_cast<unsigned short>(std::size(program)), program};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) == 0;
}

constexpr size_t kCount = size_t{1} << 18;  // 1 MiB of floats: single-copy size

/// Four out-of-place sums of rank-distinct integers; "" or what went wrong.
std::string sumAndCheck(int rank, float* in, float* out, loomComm_t comm) {
  for (int call = 0; call < 4; ++call) {
    for (size_t i = 0; i < kCount; ++i) in[i] = static_cast<float>((i + call) % 89 + 1000 * rank);
    const loomResult_t rc = loomAllReduce(in, out, kCount, loomFloat32, loomSum, comm, nullptr);
    if (rc != loomSuccess) return std::string("all-reduce: ") + loomGetLastError(comm);
    for (size_t i = 0; i < kCount; ++i) {
      const auto expected = static_cast<float>(2 * ((i + call) % 89) + 1000);
      if (out[i] != expected)
        return "call " + std::to_string(call) + ": wrong sum at " + std::to_string(i);
    }
  }
  return "";
}

TEST(UnmappableRank, JoinsAndRegisteredBuffersChangeNothing) {
  ScopedEnv env({{"LOOM_TIMEOUT", "20"}});
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess);
  const pid_t child = fork();
  if (child == 0) {
    // Rank 1: no shared buffers at all, its own allocations refused too.
    if (!refuseMemfd()) _exit(90);
    void* refused = nullptr;
    if (loomMemAlloc(&refused, 4096) != loomSystemError || refused != nullptr) _exit(91);
    loomComm_t comm = nullptr;
    if (loomCommInitRank(&comm, 2, id, 1) != loomSuccess) _exit(92);
    std::vector<float> in(kCount), out(kCount);
    const std::string problem = sumAndCheck(1, in.data(), out.data(), comm);
    if (!problem.empty()) fprintf(stderr, "rank 1: %s\n", problem.c_str());
    loomCommDestroy(comm);
    _exit(problem.empty() ? 0 : 93);
  }
  ASSERT_GT(child, 0);
  // Rank 0: its buffers shared and registered, which the peer cannot map.
  loomComm_t comm = nullptr;
  ASSERT_EQ(loomCommInitRank(&comm, 2, id, 0), loomSuccess) << loomGetLastError(nullptr);
  void* shared = nullptr;
  ASSERT_EQ(loomMemAlloc(&shared, 2 * kCount * sizeof(float)), loomSuccess);
  void* handle = nullptr;
  ASSERT_EQ(loomCommRegister(comm, shared, 2 * kCount * sizeof(float), &handle), loomSuccess);
  auto* in = static_cast<float*>(shared);
  EXPECT_EQ(sumAndCheck(0, in, in + kCount, comm), "");
  EXPECT_EQ(loomCommDeregister(comm, handle), loomSuccess);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  EXPECT_EQ(loomMemFree(shared), loomSuccess);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "90: no seccomp filter, 91: loomMemAlloc not refused, "
                                       "92: init failed, 93: wrong sum";
}

}  // namespace
}  // namespace loomtest
