// The benchmark loop shared by loom_perf and mpi_perf: for each type, op and size,
// check once, warm up, time `iters` calls, combine times across ranks, print a row.
#ifndef LOOM_PERF_COMMON_RUNNER_H_
#define LOOM_PERF_COMMON_RUNNER_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "check.h"
#include "table.h"

namespace perf {

/// Device memory for benchmarks on device buffers (loom_perf --device): the
/// collective runs on device buffers; inputs are filled and outputs checked
/// in host copies of the same layout.
struct DeviceMemory {
  void* (*alloc)(size_t bytes) = nullptr;  ///< throws on failure
  void (*release)(void* ptr) = nullptr;
  /// Copies on `stream` and waits for it: ordered with the rank's calls, and
  /// never waiting for another rank's stream (whose work may be waiting for
  /// this rank's next call).
  void (*copy)(void* dst, const void* src, size_t bytes, bool toDevice, void* stream) = nullptr;
  void (*synchronize)(void* stream) = nullptr;  ///< waits for `stream` before a timer reads
  void* (*createStream)() = nullptr;            ///< one per rank; throws on failure
  void (*destroyStream)(void* stream) = nullptr;
};

struct RunConfig {
  std::string program;
  Coll coll = Coll::AllReduce;
  std::vector<PerfType> types;
  std::vector<PerfOp> ops;
  std::vector<uint64_t> sizes;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  int root = 0;
  AvgMode avgMode = AvgMode::Mean;
  std::string csvPath;
  std::string settings;                  // flags summary for the header
  std::vector<std::string> notes;        // nccl-tests flags taken but not honoured, and why
  const DeviceMemory* device = nullptr;  // null: host buffers
  /// -R: host buffers from the library's allocator, registered with it.
  bool registerBuffers = false;
};

namespace detail {

using Buffer = std::unique_ptr<char, std::function<void(char*)>>;

// Page-aligned and touched once here, so first-touch page faults never land in a
// timed loop. From the library's allocator and registered where `registered`
// and the library has one.
inline Buffer allocTouched(Backend& be, uint64_t bytes, bool registered, bool* own = nullptr) {
  const uint64_t rounded = std::max<uint64_t>((bytes + 4095) / 4096 * 4096, 4096);
  Buffer b(nullptr, [](char* p) { std::free(p); });
  char* library = registered ? be.allocRegistered(rounded) : nullptr;
  if (own != nullptr) *own = library != nullptr;
  if (library != nullptr) {
    b = Buffer(library, [&be](char* p) { be.freeRegistered(p); });
  } else {
    b.reset(static_cast<char*>(std::aligned_alloc(4096, rounded)));
  }
  if (!b) throw std::runtime_error("out of memory allocating " + std::to_string(bytes) + " B");
  std::memset(b.get(), 0, rounded);
  return b;
}

inline const char* avgModeName(AvgMode m) {
  switch (m) {
    case AvgMode::RankZero:
      return "rank 0";
    case AvgMode::Mean:
      return "mean over ranks";
    case AvgMode::Min:
      return "min over ranks";
    case AvgMode::Max:
      return "max over ranks";
  }
  return "?";
}

}  // namespace detail

/// Runs the sweep on this rank; returns the wrong-element total (same on every rank).
inline int64_t runBenchmark(Backend& be, const RunConfig& cfg) {
  const int rank = be.rank();
  const int n = be.nranks();
  const bool printer = rank == 0;
  const int root = collRooted(cfg.coll) ? cfg.root : -1;
  if (collRooted(cfg.coll) && (cfg.root < 0 || cfg.root >= n)) {
    throw std::runtime_error("root " + std::to_string(cfg.root) + " is not a rank of " +
                             std::to_string(n));
  }
  if (printer) {
    std::printf("# %s %s: %s\n", cfg.program.c_str(), collName(cfg.coll), be.describe().c_str());
    std::printf("# nranks %d  %s  time: %s\n", n, cfg.settings.c_str(),
                detail::avgModeName(cfg.avgMode));
    for (const std::string& note : cfg.notes) std::printf("# note: %s\n", note.c_str());
    printTableHeader();
  }
  CsvWriter csv(printer ? cfg.csvPath : std::string());

  uint64_t maxBytes = 0;
  for (uint64_t s : cfg.sizes) maxBytes = std::max(maxBytes, s);
  // Every layout fits in size bytes per buffer (see inputElems/outputElems).
  bool libraryBuffers = false;
  detail::Buffer send = detail::allocTouched(be, maxBytes, cfg.registerBuffers, &libraryBuffers);
  detail::Buffer recv = detail::allocTouched(be, maxBytes, cfg.registerBuffers);
  if (printer && cfg.registerBuffers) {
    std::printf("# buffers: %s\n", libraryBuffers
                                       ? "from the library's allocator, registered (-R)"
                                       : "plain (-R: this library has no allocator of its own)");
  }
  // With --device the calls use device buffers laid out like the host ones.
  const DeviceMemory* dev = cfg.device;
  using DevicePtr = std::unique_ptr<char, std::function<void(char*)>>;
  auto deviceBuffer = [&](uint64_t bytes) {
    return DevicePtr(static_cast<char*>(dev->alloc(bytes ? bytes : 1)),
                     [dev](char* p) { dev->release(p); });
  };
  DevicePtr dsend = dev ? deviceBuffer(maxBytes) : DevicePtr(nullptr, [](char*) {});
  DevicePtr drecv = dev ? deviceBuffer(maxBytes) : DevicePtr(nullptr, [](char*) {});
  using StreamPtr = std::unique_ptr<void, std::function<void(void*)>>;
  StreamPtr stream = dev ? StreamPtr(dev->createStream(),
                                     [dev, &be](void* s) {
                                       be.useStream(nullptr);
                                       dev->destroyStream(s);
                                     })
                         : StreamPtr(nullptr, [](void*) {});
  be.useStream(stream.get());
  // No rank's first call before every rank has its buffers: on a GPU shared
  // by several ranks an allocation can wait for the device's running kernels,
  // among them a faster rank's walk spinning for this one (seen on an H200).
  be.barrier();

  int64_t wrongTotal = 0;
  double busBwSum = 0;
  int busBwCount = 0;
  const std::vector<PerfOp> noOp = {PerfOp::Sum};
  const std::vector<PerfOp>& ops = collReduces(cfg.coll) ? cfg.ops : noOp;

  for (PerfType type : cfg.types) {
    const size_t ts = typeSize(type);
    for (PerfOp op : ops) {
      if (std::string why = be.unsupported(cfg.coll, type, op); !why.empty()) {
        if (printer) std::printf("# skipping %s %s: %s\n", typeName(type), opName(op), why.c_str());
        continue;
      }
      const char* redop = collReduces(cfg.coll) ? opName(op) : "none";
      uint64_t lastBytes = 0;
      for (uint64_t requested : cfg.sizes) {
        const size_t blocks = blocksInSize(cfg.coll, n);
        const size_t count = requested / (ts * blocks);
        const uint64_t bytes = count * ts * blocks;
        if (count == 0 || bytes == lastBytes) continue;  // rounding made it empty or a repeat
        lastBytes = bytes;

        Measurement results[2];
        for (int inPlace = 0; inPlace < 2; ++inPlace) {
          Measurement& m = results[inPlace];
          if (inPlace && !be.hasInPlace(cfg.coll)) continue;
          const Layout lay =
              be.layout(cfg.coll, inPlace, send.get(), recv.get(), count, ts, cfg.root);
          const Layout run =
              dev ? be.layout(cfg.coll, inPlace, dsend.get(), drecv.get(), count, ts, cfg.root)
                  : lay;
          const Call call{cfg.coll, inPlace != 0, run.input, run.output, count, type, op, cfg.root};
          const PerfOp fillOp = collReduces(cfg.coll) ? op : PerfOp::Sum;
          if (cfg.check) {
            fillInput(type, lay.input, inputElems(cfg.coll, count, n), rank, fillOp);
            if (dev) {
              dev->copy(dsend.get(), send.get(), bytes, true, stream.get());
              dev->copy(drecv.get(), recv.get(), bytes, true, stream.get());
            }
            be.run(call);
            if (dev) {
              dev->copy(send.get(), dsend.get(), bytes, false, stream.get());
              dev->copy(recv.get(), drecv.get(), bytes, false, stream.get());
            }
            ExpectContext ctx{cfg.coll,
                              fillOp,
                              rank,
                              n,
                              cfg.root,
                              count,
                              reducedTable(fillOp, n, isIntegerType(type))};
            const int64_t local =
                countWrong(type, lay.output, outputElems(cfg.coll, count, n), ctx);
            m.wrong = be.sumOverRanks(local);
            wrongTotal += m.wrong;
          }
          for (int i = 0; i < cfg.warmup; ++i) be.run(call);
          be.barrier();
          const int64_t sentBefore = be.bytesSentSoFar();
          const auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < cfg.iters; ++i) be.run(call);
          if (dev) dev->synchronize(stream.get());
          const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
          const int64_t sentAfter = be.bytesSentSoFar();
          if (sentBefore >= 0 && sentAfter >= sentBefore && cfg.iters > 0) {
            m.wireBytes =
                static_cast<double>(be.sumOverRanks(sentAfter - sentBefore)) / n / cfg.iters;
          }
          const double seconds = be.combineTime(elapsed.count() / cfg.iters, cfg.avgMode);
          m.available = true;
          m.timeUs = seconds * 1e6;
          m.algBw = seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
          m.busBw = m.algBw * busFactor(cfg.coll, n);
          busBwSum += m.busBw;
          ++busBwCount;
        }
        if (printer) {
          printRow(bytes, bytes / ts, typeName(type), redop, root, results[0], results[1]);
          csv.row(bytes, results[0]);
        }
      }
    }
  }
  if (printer) printSummary(wrongTotal, busBwCount ? busBwSum / busBwCount : 0.0);
  return wrongTotal;
}

}  // namespace perf

#endif  // LOOM_PERF_COMMON_RUNNER_H_
