// Device reduction, Avg finalisation and copy kernels against the host reducers,
// bit for bit, for every type x op at sizes 0, 1, odd and large, aligned and not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/cuda/device_reduce.h"
#include "core/types.h"
#include "math/reducer.h"
#include "tests/gpu/device_buffer.h"

namespace loom::gpu_test {
namespace {

using namespace loom::cuda;

constexpr size_t kSizes[] = {0, 1, 7, 1001, (1u << 20) + 3};

/// Random bytes that are finite values for float types (NaN payloads after
/// arithmetic differ between CPUs and GPUs by design; NaN ordering in min/max
/// is covered by the host tests of the shared operators).
std::vector<unsigned char> randomData(DataType type, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> real(-4.0, 4.0);
  std::vector<unsigned char> out(n * dataTypeSize(type));
  for (size_t i = 0; i < n; ++i) {
    unsigned char* p = out.data() + i * dataTypeSize(type);
    switch (type) {
      case DataType::Float32: {
        const float v = static_cast<float>(real(rng));
        std::memcpy(p, &v, 4);
        break;
      }
      case DataType::Float64: {
        const double v = real(rng);
        std::memcpy(p, &v, 8);
        break;
      }
      case DataType::Float16:
      case DataType::Bfloat16: {
        // Sign, a small exponent range and random mantissa bits: always finite.
        const uint16_t v =
            type == DataType::Float16
                ? static_cast<uint16_t>((rng() & 0x83ffu) | (0x3800u + (rng() % 4) * 0x400u))
                : static_cast<uint16_t>((rng() & 0x807fu) | (0x3e80u + (rng() % 4) * 0x80u));
        std::memcpy(p, &v, 2);
        break;
      }
      default:
        for (size_t b = 0; b < dataTypeSize(type); ++b) p[b] = static_cast<unsigned char>(rng());
    }
  }
  return out;
}

class ReduceKernel : public testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(ReduceKernel, MatchesHostReducerBitForBit) {
  const auto type = static_cast<DataType>(std::get<0>(GetParam()));
  const auto op = static_cast<ReduceOp>(std::get<1>(GetParam()));
  const size_t es = dataTypeSize(type);
  for (size_t n : kSizes) {
    // offset 1 element: buffers no longer 16-byte aligned, the scalar path runs.
    for (size_t offset : {size_t{0}, size_t{1}}) {
      SCOPED_TRACE(testing::Message() << dataTypeName(type) << " " << reduceOpName(op) << " n=" << n
                                      << " offset=" << offset);
      const auto a = randomData(type, n + offset, 1);
      const auto b = randomData(type, n + offset, 2);
      std::vector<unsigned char> want(a.size());
      reducerFor(type, op)(want.data(), a.data(), b.data(), n + offset);
      if (FinalizeFn f = finalizerFor(type, op)) f(want.data() + offset * es, n, 3);

      DeviceBuffer da(a.size()), db(b.size()), dd(a.size());
      da.upload(a.data());
      db.upload(b.data());
      char* d = dd.as<char>() + offset * es;
      LOOM_CUDA_OK(launchReduce(dd.get(), da.get(), db.get(), offset, type, op, nullptr));
      LOOM_CUDA_OK(launchReduce(d, da.as<char>() + offset * es, db.as<char>() + offset * es, n,
                                type, op, nullptr));
      if (op == ReduceOp::Avg) {
        LOOM_CUDA_OK(launchAvgFinalize(d, n, type, 3, nullptr));
      }
      LOOM_CUDA_OK(cudaDeviceSynchronize());
      EXPECT_TRUE(dd.download() == want);

      // In place (dst == a) gives the same bytes.
      LOOM_CUDA_OK(launchReduce(da.get(), da.get(), db.get(), n + offset, type, op, nullptr));
      if (op == ReduceOp::Avg) {
        LOOM_CUDA_OK(launchAvgFinalize(da.as<char>() + offset * es, n, type, 3, nullptr));
      }
      LOOM_CUDA_OK(cudaDeviceSynchronize());
      EXPECT_TRUE(da.download() == want);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypesOps, ReduceKernel,
                         testing::Combine(testing::Range(0, kNumDataTypes),
                                          testing::Range(0, kNumReduceOps)));

TEST(CopyKernel, CopiesEveryByteAlignedOrNot) {
  for (size_t n : kSizes) {
    for (size_t offset : {0, 3}) {
      const auto src = randomData(DataType::Uint8, n + offset, 5);
      DeviceBuffer ds(src.size()), dd(src.size());
      ds.upload(src.data());
      LOOM_CUDA_OK(cudaMemset(dd.get(), 0, src.size()));
      LOOM_CUDA_OK(launchCopy(dd.as<char>() + offset, ds.as<char>() + offset, n, nullptr));
      LOOM_CUDA_OK(cudaDeviceSynchronize());
      auto got = dd.download();
      for (size_t i = 0; i < offset && i < got.size(); ++i) EXPECT_EQ(got[i], 0);
      EXPECT_TRUE(std::equal(got.begin() + offset, got.end(), src.begin() + offset));
    }
  }
}

TEST(ReduceKernel, RejectsBadArguments) {
  EXPECT_EQ(launchReduce(nullptr, nullptr, nullptr, 4, DataType::Float32, static_cast<ReduceOp>(9),
                         nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launchAvgFinalize(nullptr, 4, DataType::Float32, 0, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchReduce(nullptr, nullptr, nullptr, 0, DataType::Float32, ReduceOp::Sum, nullptr),
            cudaSuccess);
}

}  // namespace
}  // namespace loom::gpu_test
