// Top-k device encode, decode and decode-accumulate against TopkCodec, bit
// for bit: fp32/fp16/bf16 input; kept fractions from one element to all;
// sizes 0, 1, odd, several tiles, large; inputs with inf/NaN/denormals and
// inputs made of heavy ties (where "lowest index first" decides the set);
// and encodings from another process that are malformed, which must leave the
// output untouched and say so.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "compression/codec.h"
#include "compression/cuda/device_topk.h"
#include "compression/topk_codec.h"
#include "tests/gpu/device_buffer.h"
#include "tests/gpu/float_inputs.h"

namespace loom::gpu_test {
namespace {

/// Few distinct magnitudes with both signs: most of the threshold's equals
/// are split between kept and dropped.
std::vector<unsigned char> ties(DataType type, size_t n) {
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) {
    f[i] = static_cast<float>((i * 7919) % 5) * ((i % 3) == 0 ? -1.0f : 1.0f);
  }
  return stored(type, f);
}

/// Encodes on the device; the bytes.
std::vector<unsigned char> deviceEncode(const std::vector<unsigned char>& src, DataType type,
                                        size_t n, const CodecConfig& config) {
  const size_t bytes = loom::cuda::topkEncodedBytes(n, config);
  DeviceBuffer dsrc(src.size()), denc(bytes), scratch(loom::cuda::topkEncodeScratchBytes(n));
  dsrc.upload(src.data());
  EXPECT_EQ(
      loom::cuda::launchTopkEncode(dsrc.get(), type, n, denc.get(), config, scratch.get(), nullptr),
      cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return denc.download();
}

class TopkKernels : public testing::TestWithParam<std::tuple<DataType, double>> {};

TEST_P(TopkKernels, MatchHostCodecBitForBit) {
  const auto [type, ratio] = GetParam();
  CodecConfig config;
  config.kind = CodecKind::Topk;
  config.ratio = ratio;
  const TopkCodec codec(config);
  for (size_t n :
       {size_t{0}, size_t{1}, size_t{1001}, size_t{2048 * 3 + 17}, size_t{(1u << 22) + 5}}) {
    for (const bool tied : {false, true}) {
      SCOPED_TRACE(testing::Message() << dataTypeName(type) << " ratio=" << ratio << " n=" << n
                                      << (tied ? " ties" : " normal"));
      const auto src = tied ? ties(type, n) : values(type, n, 5);
      const size_t bytes = codec.encodedBytes(n);
      ASSERT_EQ(loom::cuda::topkEncodedBytes(n, config), bytes);
      std::vector<unsigned char> want(bytes);
      codec.encode(src.data(), type, n, want.data(), bytes, {});
      ASSERT_EQ(deviceEncode(src, type, n, config), want);

      // Decode-accumulate the host's bytes onto the same accumulator on both sides.
      std::vector<float> acc(n);
      for (size_t i = 0; i < n; ++i) acc[i] = 0.25f * static_cast<float>(i % 17);
      DeviceBuffer dacc(n * sizeof(float)), denc(bytes), status(sizeof(int));
      dacc.upload(acc.data());
      denc.upload(want.data());
      codec.decodeAccumulate(want.data(), bytes, n, acc.data());
      LOOM_CUDA_OK(loom::cuda::launchTopkDecodeAccumulate(denc.get(), bytes, n, dacc.as<float>(),
                                                          status.as<int>(), nullptr));
      LOOM_CUDA_OK(cudaDeviceSynchronize());
      EXPECT_EQ(firstDifference(DataType::Float32, dacc.download().data(), acc.data(), n), n);
      int flag = -1;
      std::memcpy(&flag, status.download().data(), sizeof flag);
      EXPECT_EQ(flag, 0);

      // Decode into the input's type.
      std::vector<unsigned char> out(n * dataTypeSize(type));
      codec.decode(want.data(), bytes, n, type, out.data());
      DeviceBuffer dout(out.size());
      LOOM_CUDA_OK(loom::cuda::launchTopkDecode(denc.get(), bytes, n, type, dout.get(),
                                                status.as<int>(), nullptr));
      LOOM_CUDA_OK(cudaDeviceSynchronize());
      EXPECT_EQ(firstDifference(type, dout.download().data(), out.data(), n), n);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TypesRatios, TopkKernels,
                         testing::Combine(testing::Values(DataType::Float32, DataType::Float16,
                                                          DataType::Bfloat16),
                                          testing::Values(1e-6, 0.01, 0.3, 1.0)));

/// Three entries for n = 100, then `change` applied to the bytes.
std::vector<unsigned char> encodingOf(void (*change)(uint32_t* header, uint32_t* indices)) {
  std::vector<unsigned char> bytes(4 + 3 * 8);
  uint32_t header = 3;
  uint32_t indices[3] = {2, 50, 99};
  const float values[3] = {1.0f, -2.0f, 3.0f};
  change(&header, indices);
  std::memcpy(bytes.data(), &header, 4);
  std::memcpy(bytes.data() + 4, indices, sizeof indices);
  std::memcpy(bytes.data() + 16, values, sizeof values);
  return bytes;
}

TEST(TopkKernelsBadInput, MalformedEncodingsLeaveTheOutputUntouched) {
  constexpr size_t kN = 100;
  const std::vector<std::vector<unsigned char>> bad = {
      encodingOf([](uint32_t* h, uint32_t*) { *h = 2; }),      // count disagrees with size
      encodingOf([](uint32_t*, uint32_t* i) { i[2] = 100; }),  // index out of range
      encodingOf([](uint32_t*, uint32_t* i) { i[1] = 2; }),    // repeated index
      encodingOf([](uint32_t*, uint32_t* i) { std::swap(i[0], i[1]); }),  // descending
  };
  const std::vector<float> before(kN, 7.0f);
  for (size_t b = 0; b < bad.size(); ++b) {
    SCOPED_TRACE(testing::Message() << "case " << b);
    DeviceBuffer denc(bad[b].size()), dacc(kN * sizeof(float)), status(sizeof(int));
    denc.upload(bad[b].data());
    dacc.upload(before.data());
    LOOM_CUDA_OK(loom::cuda::launchTopkDecodeAccumulate(
        denc.get(), bad[b].size(), kN, dacc.as<float>(), status.as<int>(), nullptr));
    LOOM_CUDA_OK(loom::cuda::launchTopkDecode(denc.get(), bad[b].size(), kN, DataType::Float32,
                                              dacc.get(), status.as<int>(), nullptr));
    LOOM_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(std::memcmp(dacc.download().data(), before.data(), kN * sizeof(float)), 0);
    int flag = 0;
    std::memcpy(&flag, status.download().data(), sizeof flag);
    EXPECT_EQ(flag, 1);
  }
  // The good encoding is accepted: the control for the cases above.
  const auto good = encodingOf([](uint32_t*, uint32_t*) {});
  DeviceBuffer denc(good.size()), dacc(kN * sizeof(float)), status(sizeof(int));
  denc.upload(good.data());
  dacc.upload(before.data());
  LOOM_CUDA_OK(loom::cuda::launchTopkDecodeAccumulate(denc.get(), good.size(), kN, dacc.as<float>(),
                                                      status.as<int>(), nullptr));
  LOOM_CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> got(kN);
  std::memcpy(got.data(), dacc.download().data(), kN * sizeof(float));
  EXPECT_EQ(got[2], 8.0f);
  EXPECT_EQ(got[50], 5.0f);
  EXPECT_EQ(got[99], 10.0f);
  EXPECT_EQ(got[3], 7.0f);
}

TEST(TopkKernelsBadInput, ImpossibleArgumentsAreRefusedBeforeAnyLaunch) {
  CodecConfig config;
  config.kind = CodecKind::Topk;
  DeviceBuffer buffer(1024), scratch(loom::cuda::topkEncodeScratchBytes(16)), status(sizeof(int));
  config.ratio = 0.0;
  EXPECT_EQ(loom::cuda::launchTopkEncode(buffer.get(), DataType::Float32, 16, buffer.get(), config,
                                         scratch.get(), nullptr),
            cudaErrorInvalidValue);
  config.ratio = 0.5;
  EXPECT_EQ(loom::cuda::launchTopkEncode(buffer.get(), DataType::Int32, 16, buffer.get(), config,
                                         scratch.get(), nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(loom::cuda::launchTopkEncode(buffer.get(), DataType::Float32, 16, buffer.as<char>() + 1,
                                         config, scratch.get(), nullptr),
            cudaErrorInvalidValue);
  // 3 bytes, 13 bytes: no encoding has these sizes; 4 + 8 * 17 entries exceed n = 16.
  for (size_t bytes : {size_t{3}, size_t{13}, size_t{4 + 8 * 17}}) {
    EXPECT_EQ(loom::cuda::launchTopkDecodeAccumulate(buffer.get(), bytes, 16, buffer.as<float>(),
                                                     status.as<int>(), nullptr),
              cudaErrorInvalidValue)
        << bytes;
  }
}

}  // namespace
}  // namespace loom::gpu_test
