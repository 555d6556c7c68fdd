// Throughput of the host reduction kernels (dst = a + b, out of place) against
// two baselines: memcpy of the same buffer and a scalar `a[i] += b[i]` loop.
// Bytes/s counts the payload (one buffer of `bytes`) per call, so the numbers
// read as "how fast a rank can fold an incoming chunk into its own"; the memory
// traffic behind it is three buffers for a reduction and two for memcpy.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/types.h"
#include "math/reducer.h"
#include "math/reducer_isa.h"

namespace loom {
namespace {

constexpr int64_t kSizes[] = {4 << 10, 256 << 10, 16 << 20};

void applySizes(benchmark::internal::Benchmark* b) {
  for (int64_t s : kSizes) b->Arg(s);
}

// Small positive values: no denormals, NaNs or infinities, which some CPUs
// handle on slow paths and which would not represent training data.
std::vector<uint8_t> makeBuffer(DataType type, size_t bytes, int seed) {
  std::vector<uint8_t> buf(bytes);
  const size_t n = bytes / dataTypeSize(type);
  for (size_t i = 0; i < n; ++i) {
    const float v = static_cast<float>((i * 7 + seed) % 64) * 0.125f + 1.0f;
    switch (type) {
      case DataType::Float32:
        reinterpret_cast<float*>(buf.data())[i] = v;
        break;
      case DataType::Float64:
        reinterpret_cast<double*>(buf.data())[i] = v;
        break;
      case DataType::Float16:  // 1.0 .. 1.5, ordinary normal values
        reinterpret_cast<uint16_t*>(buf.data())[i] = 0x3c00 | static_cast<uint16_t>(i % 512);
        break;
      case DataType::Bfloat16:
        reinterpret_cast<uint16_t*>(buf.data())[i] = 0x3f80 | static_cast<uint16_t>(i % 64);
        break;
      default:
        buf[i * dataTypeSize(type)] = static_cast<uint8_t>(i + seed);
        break;
    }
  }
  return buf;
}

void runReduce(benchmark::State& state, DataType type, ReduceFn fn) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t n = bytes / dataTypeSize(type);
  std::vector<uint8_t> a = makeBuffer(type, bytes, 1);
  std::vector<uint8_t> b = makeBuffer(type, bytes, 2);
  std::vector<uint8_t> d(bytes);
  for (auto _ : state) {
    fn(d.data(), a.data(), b.data(), n);
    benchmark::DoNotOptimize(d.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

/// reducerFor's choice (AVX2 where the CPU has it).
void BM_ReduceSum(benchmark::State& state, DataType type) {
  runReduce(state, type, reducerFor(type, ReduceOp::Sum));
}

/// The baseline-ISA build, to show what the AVX2 build buys.
void BM_ReduceSumGeneric(benchmark::State& state, DataType type) {
  runReduce(state, type, reducer_isa::genericReducer(type, ReduceOp::Sum));
}

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(bytes, 1), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

// Kept scalar on purpose (vectorisation off), as the "naive loop" reference point.
__attribute__((noinline, optimize("no-tree-vectorize"))) void scalarAdd(float* a, const float* b,
                                                                        size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] += b[i];
}

void BM_ScalarAddFloat32(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t n = bytes / sizeof(float);
  std::vector<float> a(n, 1.0f), b(n, 0.0f);  // adding 0 keeps values stable across iterations
  for (auto _ : state) {
    scalarAdd(a.data(), b.data(), n);
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

BENCHMARK_CAPTURE(BM_ReduceSum, float32, DataType::Float32)->Apply(applySizes);
BENCHMARK_CAPTURE(BM_ReduceSum, bf16, DataType::Bfloat16)->Apply(applySizes);
BENCHMARK_CAPTURE(BM_ReduceSum, float16, DataType::Float16)->Apply(applySizes);
BENCHMARK_CAPTURE(BM_ReduceSum, int32, DataType::Int32)->Apply(applySizes);
BENCHMARK_CAPTURE(BM_ReduceSum, float64, DataType::Float64)->Apply(applySizes);
BENCHMARK_CAPTURE(BM_ReduceSumGeneric, float32, DataType::Float32)->Apply(applySizes);
BENCHMARK_CAPTURE(BM_ReduceSumGeneric, bf16, DataType::Bfloat16)->Apply(applySizes);
BENCHMARK_CAPTURE(BM_ReduceSumGeneric, float16, DataType::Float16)->Apply(applySizes);
BENCHMARK(BM_Memcpy)->Apply(applySizes);
BENCHMARK(BM_ScalarAddFloat32)->Apply(applySizes);

}  // namespace
}  // namespace loom
