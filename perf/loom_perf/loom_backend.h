// perf::Backend over Loom's C API: one object per rank (per thread in -t mode).
#ifndef LOOM_PERF_LOOM_PERF_LOOM_BACKEND_H_
#define LOOM_PERF_LOOM_PERF_LOOM_BACKEND_H_

#include <loom/loom.h>

#include <map>

#include "../common/backend.h"

namespace perf {

class LoomBackend : public Backend {
 public:
  /// `launch` says how the ranks were started, for the header.
  LoomBackend(loomComm_t comm, std::string launch);
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  std::string describe() const override;
  std::string unsupported(Coll, PerfType, PerfOp) const override { return {}; }
  bool hasInPlace(Coll c) const override { return loomHasInPlace(c); }
  Layout layout(Coll c, bool inPlace, char* send, char* recv, size_t count, size_t typeBytes,
                int root) const override {
    return loomLayout(c, inPlace, send, recv, count, typeBytes, rank_, root);
  }
  void run(const Call& call) override;
  void barrier() override;
  double combineTime(double seconds, AvgMode mode) override;
  int64_t sumOverRanks(int64_t value) override;
  int64_t bytesSentSoFar() override;
  void useStream(void* stream) override { stream_ = stream; }
  char* allocRegistered(size_t bytes) override;
  void freeRegistered(char* buffer) override;

 private:
  void check(loomResult_t result, const char* what) const;

  loomComm_t comm_;
  std::string launch_;
  int rank_ = 0;
  int nranks_ = 1;
  void* stream_ = nullptr;  // for the calls under test; the harness's own calls use none
  std::map<char*, void*> registrations_;  // allocRegistered's buffers and their handles
};

}  // namespace perf

#endif  // LOOM_PERF_LOOM_PERF_LOOM_BACKEND_H_
