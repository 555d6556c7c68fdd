#include <gtest/gtest.h>
#include <unistd.h>

#include "topology/host_summary.h"

namespace loom {
namespace {

// hwloc's count of hardware threads must agree with the kernel's.
TEST(HostSummary, MatchesTheKernelsCpuCount) {
  const HostSummary s = detectHostSummary();
  EXPECT_EQ(s.processingUnits, sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_GE(s.cores, 1);
  EXPECT_LE(s.cores, s.processingUnits);
  EXPECT_GE(s.numaNodes, 1);
  EXPECT_GE(s.packages, 1);
  EXPECT_NE(s.toString().find("core"), std::string::npos);
}

}  // namespace
}  // namespace loom
