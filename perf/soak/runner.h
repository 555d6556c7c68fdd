// Runs one soak operation on one rank: lays out buffers (with guard bytes
// around everything Loom may write), fills the inputs, calls Loom, and checks
// every output element, the guards, untouched buffers and unchanged inputs.
#ifndef LOOM_PERF_SOAK_RUNNER_H_
#define LOOM_PERF_SOAK_RUNNER_H_

#include <loom/loom.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "op_gen.h"
#include "values.h"

namespace soak {

class Runner {
 public:
  Runner(loomComm_t comm, int rank, int nranks, size_t maxBytes);

  /// Runs and checks `op`. A Loom error or a wrong element prints what
  /// happened (op index, collective, type, count, rank) and exits with 1.
  void run(const SoakOp& op);

  /// Self-test of the checker: on the last rank, flip one received byte of
  /// the first non-empty op at or after `index` (the run must then fail).
  void injectErrorAt(uint64_t index) { injectAt_ = index; }

 private:
  // Where one call's buffers are and what to re-check in its send buffer.
  struct Slot {
    const char* send = nullptr;
    char* recv = nullptr;
    char* area = nullptr;  // everything in the recv arena Loom may touch
    size_t areaBytes = 0;
    size_t sendCheck = 0;  // elements of an out-of-place input to re-check (0: none)
    uint64_t sendFirst = 0;
  };
  // The first wrong element of the current op, and how many there were.
  struct Mismatch {
    size_t wrong = 0;
    std::string where;
    double expected = 0, got = 0;
  };

  Slot prepare(const SoakOp& op, size_t j);
  void issue(const SoakOp& op, const std::vector<Slot>& slots);
  void verify(const SoakOp& op, size_t j, const Slot& slot);
  ReductionInputs inputsOf(const Call& call) const;

  void fillReduction(const ReductionInputs& in, char* dst, uint64_t first, size_t n) const;
  void fillCopy(const Call& call, int src, char* dst, uint64_t first, size_t n) const;
  void checkReduction(const ReductionInputs& in, const char* got, uint64_t first, size_t n,
                      const char* what);
  void checkOwnInput(const ReductionInputs& in, const char* got, uint64_t first, size_t n,
                     const char* what);
  void checkCopy(const Call& call, int src, const char* got, uint64_t first, size_t n,
                 const char* what);
  void checkCanary(const char* p, size_t bytes, const char* what);
  void note(const char* what, size_t index, double expected, double got);
  // Encoded bits of every value in [kMinValue, kMaxValue], per type: encoding
  // is then a table lookup in the element loops.
  uint64_t encoded(loomDataType_t t, int64_t v) const {
    return tables_[t][static_cast<size_t>(v - kMinValue)];
  }

  [[noreturn]] void fail(const SoakOp& op, const std::string& why) const;
  void check(loomResult_t r, const SoakOp& op, const char* call) const;

  loomComm_t comm_;
  int rank_, nranks_;
  size_t regionStride_;
  std::vector<char> send_, recv_;
  Mismatch bad_;
  uint64_t injectAt_ = UINT64_MAX;
  std::array<std::array<uint64_t, kMaxValue - kMinValue + 1>, loomNumTypes> tables_;
};

}  // namespace soak

#endif  // LOOM_PERF_SOAK_RUNNER_H_
