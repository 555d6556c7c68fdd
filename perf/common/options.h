// nccl-tests' command-line flags (the subset both binaries share), turned into a
// RunConfig. Include from one translation unit per binary: CLI11 is heavy.
#ifndef LOOM_PERF_COMMON_OPTIONS_H_
#define LOOM_PERF_COMMON_OPTIONS_H_

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "runner.h"
#include "sizes.h"

namespace perf {

struct PerfOptions {
  std::string collective;
  std::string minBytes = "8";
  std::string maxBytes = "32M";
  double stepFactor = 2.0;
  std::string stepBytes = "0";
  int iters = 20;
  int warmup = 5;
  int check = 1;
  std::string op = "sum";
  std::string dtype = "float";
  int root = 0;
  int average = 1;
  std::string csv;
  // Taken so that scripts written for nccl-tests run unchanged; see makeRunConfig.
  int gpusPerThread = 1;
  int aggregated = 1;
  int parallelInit = 0;
  int graphLaunches = 0;
  int reportCpuTime = 0;
  int localRegister = 0;
  int timeoutSeconds = 0;
};

inline void addCommonFlags(CLI::App& app, PerfOptions& o) {
  app.add_option("-b,--minbytes", o.minBytes, "smallest size, suffix K/M/G allowed")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", o.maxBytes, "largest size, suffix K/M/G allowed")
      ->capture_default_str();
  app.add_option("-f,--stepfactor", o.stepFactor, "multiply the size by this each step")
      ->capture_default_str();
  app.add_option("-i,--stepbytes", o.stepBytes, "add this many bytes each step (replaces -f)");
  app.add_option("-n,--iters", o.iters, "timed iterations per size")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations before timing")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("-c,--check", o.check, "check results: 1 yes, 0 no")
      ->capture_default_str()
      ->check(CLI::Range(0, 1));
  app.add_option("-o,--op", o.op, "sum|prod|min|max|avg|all")->capture_default_str();
  app.add_option("-d,--datatype", o.dtype,
                 "int8|uint8|int32|uint32|int64|uint64|half|float|double|bfloat16|all")
      ->capture_default_str();
  app.add_option("-r,--root", o.root, "root rank of rooted collectives")->capture_default_str();
  app.add_option("-a,--average", o.average,
                 "reported time: 0 rank 0's, 1 mean over ranks, 2 min, 3 max")
      ->capture_default_str()
      ->check(CLI::Range(0, 3));
  app.add_option("--csv", o.csv, "also write size,time_us,algbw,busbw,wrong rows to FILE");
  // nccl-tests' other flags: honoured where they mean something here, else
  // taken and explained in the table's header (makeRunConfig).
  app.add_option("-g,--ngpus", o.gpusPerThread, "devices per thread: 1 (one rank per thread)")
      ->capture_default_str();
  app.add_option("-m,--agg_iters", o.aggregated, "operations aggregated per iteration (taken: 1)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("-p,--parallel_init", o.parallelInit,
                 "taken; ranks always initialise in parallel");
  app.add_option("-G,--cudagraph", o.graphLaunches, "CUDA graph launches (taken: not measured)");
  app.add_option("-C,--report_cputime", o.reportCpuTime, "taken; times are wall-clock");
  app.add_option("-R,--local_register", o.localRegister,
                 "1: host buffers from the library's allocator, registered (loom_perf: "
                 "loomMemAlloc + loomCommRegister; mpi_perf: plain buffers)");
  app.add_option("-T,--timeout", o.timeoutSeconds,
                 "seconds before a stuck operation fails (sets LOOM_TIMEOUT unless set)")
      ->check(CLI::NonNegativeNumber);
}

/// Throws std::invalid_argument with a message naming the bad value.
inline RunConfig makeRunConfig(const PerfOptions& o, const std::string& program) {
  RunConfig cfg;
  cfg.program = program;
  cfg.coll = parseColl(o.collective);
  cfg.types = parseTypes(o.dtype);
  cfg.ops = parseOps(o.op);
  const uint64_t step = parseBytes(o.stepBytes);
  cfg.sizes = sizeSweep(parseBytes(o.minBytes), parseBytes(o.maxBytes), o.stepFactor, step);
  cfg.iters = o.iters;
  cfg.warmup = o.warmup;
  cfg.check = o.check != 0;
  cfg.root = o.root;
  cfg.avgMode = static_cast<AvgMode>(o.average);
  cfg.csvPath = o.csv;
  char buf[256];
  if (step > 0) {
    std::snprintf(buf, sizeof buf, "minBytes %s maxBytes %s step: %s(bytes)", o.minBytes.c_str(),
                  o.maxBytes.c_str(), o.stepBytes.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "minBytes %s maxBytes %s step: %g(factor)", o.minBytes.c_str(),
                  o.maxBytes.c_str(), o.stepFactor);
  }
  if (o.gpusPerThread != 1) {
    throw std::invalid_argument(
        "-g " + std::to_string(o.gpusPerThread) +
        ": each rank drives one device and runs on its own thread or process; for " +
        std::to_string(o.gpusPerThread) + " ranks in this process use -t " +
        std::to_string(o.gpusPerThread) + " (or start " + std::to_string(o.gpusPerThread) +
        " processes with a launcher)");
  }
  if (o.aggregated > 1) {
    cfg.notes.push_back("-m " + std::to_string(o.aggregated) +
                        ": each operation is timed on its own (not aggregated)");
  }
  if (o.graphLaunches > 0) {
    cfg.notes.push_back("-G " + std::to_string(o.graphLaunches) +
                        ": CUDA graph launches are not measured; calls are timed directly");
  }
  if (o.reportCpuTime != 0) cfg.notes.push_back("-C: times are wall-clock, not CPU time");
  cfg.registerBuffers = o.localRegister != 0;
  cfg.settings = std::string(buf) + " warmup iters: " + std::to_string(o.warmup) +
                 " iters: " + std::to_string(o.iters) + " validation: " + std::to_string(o.check) +
                 " datatype: " + o.dtype + " op: " + o.op;
  return cfg;
}

}  // namespace perf

#endif  // LOOM_PERF_COMMON_OPTIONS_H_
