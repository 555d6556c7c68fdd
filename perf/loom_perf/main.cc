// loom_perf: nccl-tests-style bandwidth tables for Loom's collectives.
//   loomrun -n 4 loom_perf allreduce -b 8 -e 256M -f 2     (one process per rank)
//   loom_perf allgather -t 4 -e 64M                          (4 ranks as threads)
//   loom_perf --memcpy                                       (memcpy ceiling)
//   loom_perf --pingpong                                     (core-to-core round trip)
// Installed also under nccl-tests' names (all_reduce_perf, ...), which imply
// the collective: `mpirun -np 8 all_reduce_perf -b 8 -e 8G -f 2 -g 1` runs as is.
#include <loom/loom.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "../common/options.h"
#include "compress_flag.h"
#include "device_memory.h"
#include "loom_backend.h"
#include "memcpy_bw.h"
#include "pingpong.h"
#include "tools/stack_dump/stack_dump.h"

namespace {

// A launcher loomCommInitFromEnv understands has set one of these.
bool underLauncher() {
  for (const char* name :
       {"LOOM_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"}) {
    if (std::getenv(name)) return true;
  }
  return false;
}

/// The collective nccl-tests' program `name` (a path's last part) runs, or "".
std::string collectiveOfProgram(const char* path) {
  const char* slash = std::strrchr(path, '/');
  const std::string name = slash != nullptr ? slash + 1 : path;
  static constexpr const char* kNames[][2] = {{"all_reduce_perf", "allreduce"},
                                              {"all_gather_perf", "allgather"},
                                              {"reduce_scatter_perf", "reducescatter"},
                                              {"broadcast_perf", "broadcast"},
                                              {"reduce_perf", "reduce"},
                                              {"alltoall_perf", "alltoall"},
                                              {"sendrecv_perf", "sendrecv"},
                                              {"gather_perf", "gather"},
                                              {"scatter_perf", "scatter"}};
  for (const auto& [program, collective] : kNames) {
    if (name == program) return collective;
  }
  return "";
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "loom_perf: %s\n", message.c_str());
  std::fflush(stdout);
  // _Exit: other rank threads may still be blocked inside the library; normal exit
  // would run destructors under them.
  std::_Exit(1);
}

std::string initError(loomResult_t r, const char* what) {
  return std::string(what) + " failed: " + loomGetErrorString(r) + ": " + loomGetLastError(nullptr);
}

// Runs the benchmark on each rank thread of this process; returns the wrong count.
int64_t runThreads(const perf::RunConfig& cfg, int threads) {
  std::vector<loomComm_t> comms(threads);
  if (loomResult_t r = loomCommInitAll(comms.data(), threads, nullptr); r != loomSuccess) {
    die(initError(r, "loomCommInitAll"));
  }
  std::vector<int64_t> wrong(threads, 0);
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(threads));
  const std::string launch = "1 process x " + std::to_string(threads) + " threads";
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      try {
        perf::LoomBackend backend(comms[t], launch);
        wrong[t] = perf::runBenchmark(backend, cfg);
      } catch (const std::exception& e) {
        die(e.what());
      }
    });
  }
  for (std::thread& w : workers) w.join();
  for (loomComm_t c : comms) loomCommDestroy(c);
  return wrong[0];
}

int64_t runProcess(const perf::RunConfig& cfg) {
  loomComm_t comm = nullptr;
  if (loomResult_t r = loomCommInitFromEnv(&comm); r != loomSuccess) {
    die(initError(r, "loomCommInitFromEnv"));
  }
  int64_t wrong = 0;
  try {
    perf::LoomBackend backend(comm, "one process per rank");
    wrong = perf::runBenchmark(backend, cfg);
  } catch (const std::exception& e) {
    die(e.what());
  }
  loomCommDestroy(comm);
  return wrong;
}

}  // namespace

// Only CLI11's option setup can throw out of main: a programming error, found at once.
int main(int argc, char** argv) {      // NOLINT(bugprone-exception-escape)
  loom::debug::dumpStacksOnSigquit();  // kill -QUIT prints every thread's stack
  CLI::App app{"loom_perf: nccl-tests-style tables for Loom collectives"};
  perf::PerfOptions options;
  int threads = 0;
  int blocking = 0;
  int cycles = 1;
  bool memcpyMode = false;
  std::string compress = "none";
  app.add_option("collective", options.collective,
                 "allreduce|allgather|reducescatter|broadcast|reduce|alltoall|sendrecv|gather|"
                 "scatter");
  perf::addCommonFlags(app, options);
  app.add_option("-t,--nthreads", threads,
                 "ranks as threads of this process (loomCommInitAll); default: one rank per "
                 "process under a launcher, else 1 thread")
      ->check(CLI::Range(1, 1024));
  app.add_option("-z,--blocking", blocking,
                 "accepted for nccl-tests compatibility; host calls "
                 "always block");
  app.add_option("-N,--run_cycles", cycles, "accepted for nccl-tests compatibility; ignored");
  app.add_option("--compress", compress,
                 "none|int8|int8:block=B|topk:R: compress all-reduce and reduce-scatter on "
                 "float data (results are lossy, so -c is turned off)")
      ->capture_default_str();
  app.add_flag("--memcpy", memcpyMode, "measure single-thread memcpy GB/s (64 MiB) and exit");
  bool pingPongMode = false;
  app.add_flag("--pingpong", pingPongMode,
               "measure the cache-line round trip between two processes (us) and exit");
  bool deviceBuffers = false;
  app.add_flag("--device", deviceBuffers,
               "run on CUDA device buffers (device 0; filled and checked through host copies)");
  CLI11_PARSE(app, argc, argv);

  if (memcpyMode) return perf::runMemcpyBandwidth();
  if (pingPongMode) return perf::runPingPong();
  if (const std::string implied = collectiveOfProgram(argv[0]); !implied.empty()) {
    if (!options.collective.empty() && options.collective != implied) {
      std::fprintf(stderr, "loom_perf: %s runs %s, not %s\n", argv[0], implied.c_str(),
                   options.collective.c_str());
      return 2;
    }
    options.collective = implied;
  }
  if (options.timeoutSeconds > 0) {
    // -T as in nccl-tests; an explicit LOOM_TIMEOUT wins.
    setenv("LOOM_TIMEOUT", std::to_string(options.timeoutSeconds).c_str(), 0);
  }
  if (std::string why = perf::checkCompressFlag(compress); !why.empty()) {
    std::fprintf(stderr, "loom_perf: %s\n", why.c_str());
    return 2;
  }
  if (compress != "none") {
    // Every rank parses the same flag, so every rank sets the same variable.
    setenv("LOOM_COMPRESS", compress.c_str(), 1);
  }
  if (options.collective.empty()) {
    std::fprintf(stderr, "loom_perf: name a collective (or --memcpy); see --help\n");
    return 2;
  }
  perf::RunConfig cfg;
  try {
    cfg = perf::makeRunConfig(options, "loom_perf");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom_perf: %s\n", e.what());
    return 2;
  }
  if (deviceBuffers) {
    // Threads as ranks share this process's hardware queues per device (8
    // unless set); more than half that many would keep Loom's kernel path
    // off (docs/cuda.md). Set before the first CUDA call, which reads it.
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", /*overwrite=*/0);
    std::string why;
    cfg.device = perf::cudaDeviceMemory(&why);
    if (cfg.device == nullptr) {
      std::fprintf(stderr, "loom_perf: --device: %s\n", why.c_str());
      return 2;
    }
    cfg.settings += "  buffers: device";
  }
  if (compress != "none" && cfg.check) {
    std::printf("# --compress %s: results are lossy, value check (-c) turned off\n",
                compress.c_str());
    cfg.check = false;
  }
  if (threads > 0 && underLauncher()) {
    std::fprintf(stderr,
                 "loom_perf: -t runs all ranks in this process; it cannot be combined "
                 "with a launcher (loomrun, mpirun, ...)\n");
    return 2;
  }
  const int64_t wrong = (threads > 0 || !underLauncher())
                            ? runThreads(cfg, threads > 0 ? threads : 1)
                            : runProcess(cfg);
  return wrong == 0 ? 0 : 1;
}
