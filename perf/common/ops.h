// Reduction operators and the deterministic data the checker can predict.
#ifndef LOOM_PERF_COMMON_OPS_H_
#define LOOM_PERF_COMMON_OPS_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace perf {

enum class PerfOp { Sum, Prod, Max, Min, Avg };

inline const char* opName(PerfOp op) {
  switch (op) {
    case PerfOp::Sum:
      return "sum";
    case PerfOp::Prod:
      return "prod";
    case PerfOp::Max:
      return "max";
    case PerfOp::Min:
      return "min";
    case PerfOp::Avg:
      return "avg";
  }
  return "?";
}

inline std::vector<PerfOp> parseOps(const std::string& name) {
  if (name == "all") return {PerfOp::Sum, PerfOp::Prod, PerfOp::Max, PerfOp::Min, PerfOp::Avg};
  for (PerfOp op : {PerfOp::Sum, PerfOp::Prod, PerfOp::Max, PerfOp::Min, PerfOp::Avg}) {
    if (name == opName(op)) return {op};
  }
  throw std::invalid_argument("unknown op '" + name + "' (sum prod min max avg all)");
}

/// Input element `index` of `rank`. Small positive integers: exact in every type,
/// half and bf16 included, and sums over up to 23 ranks stay exact in bf16 (<= 256)
/// and in int8 for up to 11 ranks. Products use 1s and 2s so they stay powers of two
/// (exact in floating point). The value depends on rank and index so a block landing
/// at the wrong place or from the wrong peer shows up as wrong.
inline int inputValue(int rank, size_t index, PerfOp op) {
  if (op == PerfOp::Prod) return 1 + ((index + 2 * static_cast<size_t>(rank)) % 3 == 0);
  return 1 + static_cast<int>((index * 7 + static_cast<size_t>(rank) * 13) % 11);
}

/// inputValue repeats in `index` with this period (lcm of 11 and 3).
inline constexpr size_t kValuePeriod = 33;

/// The reduction of inputValue over all ranks, one entry per index modulo
/// kValuePeriod. Integer avg truncates toward zero, as loom.h specifies.
inline std::array<double, kValuePeriod> reducedTable(PerfOp op, int nranks, bool integer) {
  std::array<double, kValuePeriod> table{};
  for (size_t i = 0; i < kValuePeriod; ++i) {
    int64_t acc = inputValue(0, i, op);
    for (int r = 1; r < nranks; ++r) {
      const int64_t v = inputValue(r, i, op);
      switch (op) {
        case PerfOp::Sum:
        case PerfOp::Avg:
          acc += v;
          break;
        case PerfOp::Prod:
          acc *= v;
          break;
        case PerfOp::Max:
          acc = std::max(acc, v);
          break;
        case PerfOp::Min:
          acc = std::min(acc, v);
          break;
      }
    }
    if (op != PerfOp::Avg) {
      table[i] = static_cast<double>(acc);
    } else {
      table[i] = integer ? static_cast<double>(acc / nranks)
                         : static_cast<double>(acc) / static_cast<double>(nranks);
    }
  }
  return table;
}

}  // namespace perf

#endif  // LOOM_PERF_COMMON_OPS_H_
