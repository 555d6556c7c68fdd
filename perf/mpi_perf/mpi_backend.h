// perf::Backend over MPI collectives, so mpi_perf prints the same table as loom_perf.
#ifndef LOOM_PERF_MPI_PERF_MPI_BACKEND_H_
#define LOOM_PERF_MPI_PERF_MPI_BACKEND_H_

// Only the C API is used; skipping the deprecated C++ bindings avoids their warnings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "../common/backend.h"

namespace perf {

class MpiBackend : public Backend {
 public:
  MpiBackend();
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  std::string describe() const override;
  std::string unsupported(Coll c, PerfType t, PerfOp op) const override;
  bool hasInPlace(Coll) const override { return true; }
  Layout layout(Coll c, bool inPlace, char* send, char* recv, size_t count, size_t typeBytes,
                int root) const override;
  void run(const Call& call) override;
  void barrier() override;
  double combineTime(double seconds, AvgMode mode) override;
  int64_t sumOverRanks(int64_t value) override;

 private:
  int rank_ = 0;
  int nranks_ = 1;
};

}  // namespace perf

#endif  // LOOM_PERF_MPI_PERF_MPI_BACKEND_H_
