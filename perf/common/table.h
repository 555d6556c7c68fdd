// The result table in nccl-tests' layout (written from its documented columns), the
// summary lines, and the CSV side file. Only rank 0 prints.
#ifndef LOOM_PERF_COMMON_TABLE_H_
#define LOOM_PERF_COMMON_TABLE_H_

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace perf {

/// One timed variant (out-of-place or in-place) of one size.
struct Measurement {
  bool available = false;  // false: the variant does not exist for this collective
  double timeUs = 0;
  double algBw = 0;  // GB/s (1e9 bytes)
  double busBw = 0;
  int64_t wrong = -1;     // -1: not checked
  double wireBytes = -1;  // mean bytes each rank sent per call; -1: unknown
};

inline void printTableHeader() {
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s   %-34s   %-34s\n", "", "", "", "", "",
              "             out-of-place", "               in-place");
  // The wire column comes last so scripts that read the nccl-tests columns by
  // position keep working.
  std::printf("# %10s  %12s  %8s  %6s  %6s  %9s %8s %8s %6s  %9s %8s %8s %6s  %12s\n", "size",
              "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
              "busbw", "#wrong", "wire");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %9s %8s %8s %6s  %9s %8s %8s %6s  %12s\n", "(B)",
              "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
              "", "(B/rank)");
  std::fflush(stdout);
}

inline void printMeasurement(const Measurement& m) {
  if (!m.available) {
    std::printf("  %9s %8s %8s %6s", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  std::printf("  %9.2f %8.3f %8.3f", m.timeUs, m.algBw, m.busBw);
  if (m.wrong < 0) {
    std::printf(" %6s", "N/A");
  } else {
    std::printf(" %6lld", static_cast<long long>(m.wrong));
  }
}

inline void printRow(uint64_t bytes, uint64_t elems, const char* type, const char* redop, int root,
                     const Measurement& outOfPlace, const Measurement& inPlace) {
  std::printf("  %10llu  %12llu  %8s  %6s  %6d", static_cast<unsigned long long>(bytes),
              static_cast<unsigned long long>(elems), type, redop, root);
  printMeasurement(outOfPlace);
  printMeasurement(inPlace);
  if (outOfPlace.available && outOfPlace.wireBytes >= 0) {
    std::printf("  %12.0f", outOfPlace.wireBytes);
  } else {
    std::printf("  %12s", "N/A");
  }
  std::printf("\n");
  std::fflush(stdout);
}

inline void printSummary(int64_t wrongTotal, double avgBusBw) {
  std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrongTotal),
              wrongTotal == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %g\n", avgBusBw);
  std::printf("#\n");
  std::fflush(stdout);
}

/// size,time_us,algbw,busbw,wrong for each out-of-place row, for scripts.
class CsvWriter {
 public:
  explicit CsvWriter(const std::string& path) {
    if (path.empty()) return;
    file_ = std::fopen(path.c_str(), "w");
    if (!file_) throw std::runtime_error("cannot write CSV file '" + path + "'");
    std::fprintf(file_, "size,time_us,algbw,busbw,wrong\n");
  }
  ~CsvWriter() {
    if (file_) std::fclose(file_);
  }
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  void row(uint64_t bytes, const Measurement& m) {
    if (!file_) return;
    std::fprintf(file_, "%llu,%.3f,%.6f,%.6f,%lld\n", static_cast<unsigned long long>(bytes),
                 m.timeUs, m.algBw, m.busBw, static_cast<long long>(m.wrong));
    std::fflush(file_);
  }

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace perf

#endif  // LOOM_PERF_COMMON_TABLE_H_
