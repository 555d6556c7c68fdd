// mpi_perf: the loom_perf table for Open MPI's collectives, as a baseline.
//   mpirun -np 4 mpi_perf allreduce -b 8 -e 256M -f 2
#include <cstdio>
#include <exception>

#include "../common/options.h"
#include "mpi_backend.h"

// Only CLI11's option setup can throw out of main: a programming error, found at once.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{"mpi_perf: nccl-tests-style table for MPI collectives"};
  perf::PerfOptions options;
  app.add_option("collective", options.collective,
                 "allreduce|allgather|reducescatter|broadcast|reduce|alltoall")
      ->required();
  perf::addCommonFlags(app, options);
  CLI11_PARSE(app, argc, argv);

  perf::RunConfig cfg;
  try {
    cfg = perf::makeRunConfig(options, "mpi_perf");
    if (options.timeoutSeconds > 0) cfg.notes.push_back("-T: MPI calls have no timeout");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_perf: %s\n", e.what());
    return 2;
  }

  MPI_Init(&argc, &argv);
  int64_t wrong = 0;
  try {
    perf::MpiBackend backend;
    wrong = perf::runBenchmark(backend, cfg);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_perf: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
