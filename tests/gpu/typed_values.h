// Typed test values for the GPU tests: small integers that every element
// type holds exactly, encoded as a DataType stores them, and the host
// reference of a reduction over ranks. Shared by the in-process suite
// (test_device_collectives.cc) and the two-process check (ipc_allreduce.cc).
#pragma once

#include <loom/loom.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "math/half.h"

namespace loom::gpu_test {

inline constexpr loomDataType_t kTypes[] = {loomInt8,    loomUint8,   loomInt32,   loomUint32,
                                            loomInt64,   loomUint64,  loomFloat16, loomFloat32,
                                            loomFloat64, loomBfloat16};

// 1..11, so sums over 8 ranks fit every type exactly (int8 included).
inline double valueOf(int rank, size_t i) {
  return static_cast<double>((rank * 3 + i * 7) % 11 + 1);
}

inline void store(loomDataType_t t, double v, unsigned char* out) {
  switch (t) {
    case loomInt8: {
      auto x = static_cast<int8_t>(v);
      std::memcpy(out, &x, 1);
      break;
    }
    case loomUint8: {
      auto x = static_cast<uint8_t>(v);
      std::memcpy(out, &x, 1);
      break;
    }
    case loomInt32: {
      auto x = static_cast<int32_t>(v);
      std::memcpy(out, &x, 4);
      break;
    }
    case loomUint32: {
      auto x = static_cast<uint32_t>(v);
      std::memcpy(out, &x, 4);
      break;
    }
    case loomInt64: {
      auto x = static_cast<int64_t>(v);
      std::memcpy(out, &x, 8);
      break;
    }
    case loomUint64: {
      auto x = static_cast<uint64_t>(v);
      std::memcpy(out, &x, 8);
      break;
    }
    case loomFloat16: {
      uint16_t x = floatToHalf(static_cast<float>(v));
      std::memcpy(out, &x, 2);
      break;
    }
    case loomFloat32: {
      auto x = static_cast<float>(v);
      std::memcpy(out, &x, 4);
      break;
    }
    case loomFloat64:
      std::memcpy(out, &v, 8);
      break;
    case loomBfloat16: {
      uint16_t x = floatToBf16(static_cast<float>(v));
      std::memcpy(out, &x, 2);
      break;
    }
    default:
      break;
  }
}

inline std::vector<unsigned char> encode(loomDataType_t t, const std::vector<double>& values) {
  const size_t es = loomTypeSize(t);
  std::vector<unsigned char> out(values.size() * es);
  for (size_t i = 0; i < values.size(); ++i) store(t, values[i], out.data() + i * es);
  return out;
}

inline double reduce(loomRedOp_t op, const std::vector<double>& xs) {
  double acc = xs[0];
  for (size_t k = 1; k < xs.size(); ++k) {
    acc = op == loomMax ? std::max(acc, xs[k]) : op == loomMin ? std::min(acc, xs[k]) : acc + xs[k];
  }
  return op == loomAvg ? acc / static_cast<double>(xs.size()) : acc;
}

}  // namespace loom::gpu_test
