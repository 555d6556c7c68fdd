// Throughput of the codecs against memcpy of the same fp32 payload. Bytes/s
// counts the uncompressed fp32 (or fp16/bf16) chunk per call, so every number
// reads as "how fast a rank turns a chunk of this many input bytes into wire
// bytes, or wire bytes back into it", directly comparable with memcpy.
// The int8 runs sweep the block size (32..512): docs/compression.md picks the
// default from them.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "compression/codec.h"
#include "math/half.h"

namespace loom {
namespace {

constexpr size_t kElems = 1 << 20;  // 4 MiB of fp32: one large all-reduce chunk

std::vector<float> gradients() {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1e-3f);
  std::vector<float> x(kElems);
  for (float& v : x) v = dist(rng);
  return x;
}

std::unique_ptr<Codec> codecFor(const char* kind, int64_t param) {
  CodecConfig c = parseCodecConfig(kind);
  if (c.kind == CodecKind::Int8 && param > 0) c.block = static_cast<uint32_t>(param);
  return makeCodec(c);
}

void setThroughput(benchmark::State& state, size_t elemBytes, size_t wireBytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kElems * elemBytes));
  state.counters["ratio"] = static_cast<double>(kElems * elemBytes) / wireBytes;
}

void BM_Memcpy(benchmark::State& state) {
  const std::vector<float> x = gradients();
  std::vector<float> y(kElems);
  for (auto _ : state) {
    std::memcpy(y.data(), x.data(), kElems * sizeof(float));
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kElems * sizeof(float)));
}
BENCHMARK(BM_Memcpy);

void runEncode(benchmark::State& state, const char* kind, DataType type) {
  auto codec = codecFor(kind, state.range(0));
  const std::vector<float> x = gradients();
  std::vector<uint16_t> narrow(kElems);
  for (size_t i = 0; i < kElems; ++i) {
    narrow[i] = type == DataType::Float16 ? floatToHalf(x[i]) : floatToBf16(x[i]);
  }
  const void* src = type == DataType::Float32 ? static_cast<const void*>(x.data()) : narrow.data();
  std::vector<uint8_t> wire(codec->encodedBytes(kElems));
  size_t used = 0;
  uint64_t counter = 0;
  for (auto _ : state) {
    used = codec->encode(src, type, kElems, wire.data(), wire.size(), {0, counter++});
    benchmark::DoNotOptimize(wire.data());
  }
  setThroughput(state, dataTypeSize(type), used);
}

void runDecode(benchmark::State& state, const char* kind, bool accumulate) {
  auto codec = codecFor(kind, state.range(0));
  const std::vector<float> x = gradients();
  std::vector<uint8_t> wire(codec->encodedBytes(kElems));
  const size_t used = codec->encode(x.data(), DataType::Float32, kElems, wire.data(), wire.size());
  std::vector<float> out(kElems, 0.0f);
  for (auto _ : state) {
    if (accumulate) {
      codec->decodeAccumulate(wire.data(), used, kElems, out.data());
    } else {
      codec->decode(wire.data(), used, kElems, DataType::Float32, out.data());
    }
    benchmark::DoNotOptimize(out.data());
  }
  setThroughput(state, sizeof(float), used);
}

void blocks(benchmark::internal::Benchmark* b) {
  for (int64_t block : {32, 64, 128, 256, 512}) b->Arg(block);
}

BENCHMARK_CAPTURE(runEncode, int8_fp32, "int8", DataType::Float32)->Apply(blocks);
BENCHMARK_CAPTURE(runDecode, int8_fp32, "int8", false)->Apply(blocks);
BENCHMARK_CAPTURE(runDecode, int8_accumulate, "int8", true)->Apply(blocks);
BENCHMARK_CAPTURE(runEncode, int8_fp16, "int8", DataType::Float16)->Arg(256);
BENCHMARK_CAPTURE(runEncode, int8_bf16, "int8", DataType::Bfloat16)->Arg(256);
BENCHMARK_CAPTURE(runEncode, int8_stochastic, "int8:stochastic,seed=1", DataType::Float32)
    ->Arg(256);
BENCHMARK_CAPTURE(runEncode, topk_1pct, "topk:0.01", DataType::Float32)->Arg(0);
BENCHMARK_CAPTURE(runDecode, topk_1pct, "topk:0.01", false)->Arg(0);
BENCHMARK_CAPTURE(runDecode, topk_1pct_accumulate, "topk:0.01", true)->Arg(0);
BENCHMARK_CAPTURE(runEncode, none_fp32, "none", DataType::Float32)->Arg(0);

}  // namespace
}  // namespace loom
