// A rank program for hang-report and revoke tests: every rank runs
// all-reduces; the rank named by --stall-rank stops after --stall-at of them
// and sleeps, as a rank stuck in user code would. The others must fail with
// loomRemoteError once LOOM_TIMEOUT passes. With --revoke, that rank revokes
// the communicator --revoke-after milliseconds later (default 300) instead, and the others must
// fail with loomRevoked long before LOOM_TIMEOUT. Each prints its error message and how long the
// failed call took on one line, prefixed "hang_probe rank R:", for the calling script to check.
//
//   hang_probe --stall-rank R --stall-at K [--revoke [--revoke-after MS]]
//   (world from the environment)
#include <loom/loom.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int intArg(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

bool flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return true;
  }
  return false;
}

// The revoking rank: revokes, and its own next call must be refused.
int revokeLater(loomComm_t comm, int rank, int afterMs) {
  usleep(static_cast<useconds_t>(afterMs) * 1000);  // the others are waiting by now
  if (loomCommRevoke(comm) != loomSuccess) return 1;
  float x = 1.0f;
  const loomResult_t rc = loomAllReduce(&x, &x, 1, loomFloat32, loomSum, comm, nullptr);
  std::printf("hang_probe rank %d: revoked; the next call returned %s\n", rank,
              loomGetErrorString(rc));
  std::fflush(stdout);
  sleep(1);  // the rendezvous may run in this process: stay while the others hear of it
  loomCommDestroy(comm);
  return rc == loomRevoked ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int stallRank = intArg(argc, argv, "--stall-rank", -1);
  const int stallAt = intArg(argc, argv, "--stall-at", 3);
  const bool revoke = flag(argc, argv, "--revoke");
  const int revokeAfterMs = intArg(argc, argv, "--revoke-after", 300);
  loomComm_t comm = nullptr;
  if (loomCommInitFromEnv(&comm) != loomSuccess) {
    std::fprintf(stderr, "hang_probe: init failed: %s\n", loomGetLastError(nullptr));
    return 2;
  }
  int rank = 0;
  int nranks = 0;
  loomCommUserRank(comm, &rank);
  loomCommCount(comm, &nranks);
  constexpr size_t kCount = 4099;
  std::vector<float> data(kCount);
  for (int iter = 0;; ++iter) {
    if (rank == stallRank && iter == stallAt && revoke) {
      return revokeLater(comm, rank, revokeAfterMs);
    }
    if (rank == stallRank && iter == stallAt) {
      std::printf("hang_probe rank %d: stalling before all-reduce #%d\n", rank, iter);
      std::fflush(stdout);
      sleep(120);  // the test kills it long before
      return 3;
    }
    for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<float>(rank + iter);
    const auto start = std::chrono::steady_clock::now();
    const loomResult_t rc =
        loomAllReduce(data.data(), data.data(), kCount, loomFloat32, loomSum, comm, nullptr);
    if (rc != loomSuccess) {
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      std::printf("hang_probe rank %d: all-reduce #%d failed after %.0f ms (%s): %s\n", rank, iter,
                  ms, loomGetErrorString(rc), loomGetLastError(comm));
      std::fflush(stdout);
      // The other waiters time out within milliseconds of this one and ask
      // the rendezvous what everyone is doing; stay connected while they do.
      sleep(1);
      loomCommAbort(comm);
      return rc == (revoke ? loomRevoked : loomRemoteError) ? 0 : 1;
    }
    const float expect = static_cast<float>(nranks * iter + nranks * (nranks - 1) / 2);
    if (data[kCount - 1] != expect) {
      std::printf("hang_probe rank %d: all-reduce #%d gave %g, expected %g\n", rank, iter,
                  data[kCount - 1], expect);
      return 1;
    }
    if (iter > stallAt + 5) {
      std::printf("hang_probe rank %d: no failure although rank %d stalled\n", rank, stallRank);
      return 1;
    }
  }
}
