// int8 device encode, decode and decode-accumulate against Int8Codec, bit for bit:
// fp32/fp16/bf16 input, nearest and stochastic rounding, blocks of 8 .. 4096,
// sizes 0, 1, odd, large, plus tiny and non-finite blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compression/codec.h"
#include "compression/cuda/device_int8.h"
#include "compression/error_feedback.h"
#include "compression/int8_codec.h"
#include "math/half.h"
#include "tests/gpu/device_buffer.h"
#include "tests/gpu/float_inputs.h"

namespace loom::gpu_test {
namespace {

class Int8Kernels : public testing::TestWithParam<std::tuple<DataType, uint32_t, bool>> {
 protected:
  /// The int8 configuration of this test's block and rounding.
  CodecConfig config(uint64_t seed) const {
    return int8CodecConfig(std::get<1>(GetParam()), std::get<2>(GetParam()), seed);
  }
};

TEST_P(Int8Kernels, MatchHostCodecBitForBit) {
  const auto [type, block, stochastic] = GetParam();
  const CodecConfig config = this->config(42);
  const Int8Codec codec(config);
  const EncodeContext context{1000, 7};
  for (size_t n : {size_t{0}, size_t{1}, size_t{1001}, size_t{(1u << 20) + 5}}) {
    SCOPED_TRACE(testing::Message() << dataTypeName(type) << " block=" << block
                                    << " stochastic=" << stochastic << " n=" << n);
    const auto src = values(type, n, 3);
    const size_t bytes = codec.encodedBytes(n);
    ASSERT_EQ(loom::cuda::int8EncodedBytes(n, config), bytes);
    std::vector<unsigned char> want(bytes);
    codec.encode(src.data(), type, n, want.data(), bytes, context);

    DeviceBuffer dsrc(src.size()), denc(bytes + 1);
    dsrc.upload(src.data());
    // Encode at an odd address: the format promises no alignment.
    LOOM_CUDA_OK(loom::cuda::launchInt8Encode(dsrc.get(), type, n, denc.as<char>() + 1, config,
                                              context, nullptr));
    LOOM_CUDA_OK(cudaDeviceSynchronize());
    const auto got = denc.download();
    ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin() + 1));

    // Decode-accumulate the host's bytes into the same accumulator on both sides.
    std::vector<float> acc(n);
    for (size_t i = 0; i < n; ++i) acc[i] = 0.25f * static_cast<float>(i % 17);
    DeviceBuffer dacc(n * sizeof(float));
    dacc.upload(acc.data());
    codec.decodeAccumulate(want.data(), bytes, n, acc.data());
    LOOM_CUDA_OK(loom::cuda::launchInt8DecodeAccumulate(denc.as<char>() + 1, n, config,
                                                        dacc.as<float>(), nullptr));
    LOOM_CUDA_OK(cudaDeviceSynchronize());
    const auto accBytes = dacc.download();
    EXPECT_EQ(firstDifference(DataType::Float32, accBytes.data(), acc.data(), n), n);

    // Decode into the input's type.
    std::vector<unsigned char> out(n * dataTypeSize(type));
    codec.decode(want.data(), bytes, n, type, out.data());
    DeviceBuffer dout(out.size());
    LOOM_CUDA_OK(
        loom::cuda::launchInt8Decode(denc.as<char>() + 1, n, config, type, dout.get(), nullptr));
    LOOM_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(firstDifference(type, dout.download().data(), out.data(), n), n);
  }
}

// Encode with error feedback: the host's compensate, encode, decode, update
// (compression/error_feedback.h) against the one kernel, bytes and residual
// bit for bit; the residual starts non-zero and one block overflows (an inf
// input there leaves a zero residual). The residual sits at an odd float
// offset once (the kernel without quads).
TEST_P(Int8Kernels, WithFeedbackMatchesTheHostSteps) {
  const auto [type, block, stochastic] = GetParam();
  const CodecConfig config = this->config(9);
  const Int8Codec codec(config);
  const EncodeContext context{64, 3};
  for (size_t n : {size_t{0}, size_t{1}, size_t{1001}, size_t{(1u << 18) + 8}}) {
    for (const size_t shift : {size_t{0}, size_t{1}}) {
      SCOPED_TRACE(testing::Message() << dataTypeName(type) << " block=" << block << " stochastic="
                                      << stochastic << " n=" << n << " residual shift=" << shift);
      const auto src = values(type, n, 5);
      std::vector<float> residual(n + shift);
      for (size_t i = 0; i < n; ++i)
        residual[shift + i] = 0.01f * static_cast<float>(i % 9) - 0.04f;
      const size_t bytes = codec.encodedBytes(n);
      // The host's steps.
      std::vector<float> compensated(n), decoded(n);
      std::vector<float> wantResidual = residual;
      feedback::compensate(src.data(), type, residual.data() + shift, compensated);
      std::vector<unsigned char> want(bytes);
      codec.encode(compensated.data(), DataType::Float32, n, want.data(), bytes, context);
      codec.decode(want.data(), bytes, n, DataType::Float32, decoded.data());
      feedback::update(compensated, decoded, wantResidual.data() + shift);

      DeviceBuffer dsrc(src.size()), denc(bytes), dres(residual.size() * sizeof(float));
      dsrc.upload(src.data());
      dres.upload(residual.data());
      LOOM_CUDA_OK(loom::cuda::launchInt8EncodeWithFeedback(
          dsrc.get(), type, n, dres.as<float>() + shift, denc.get(), config, context, nullptr));
      LOOM_CUDA_OK(cudaDeviceSynchronize());
      const auto got = denc.download();
      EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin()));
      EXPECT_EQ(firstDifference(DataType::Float32, dres.download().data(), wantResidual.data(),
                                residual.size()),
                residual.size());
    }
  }
}

// The compressed reduce-scatter's sum: every rank's encoding added in rank
// order in one kernel, equal bit for bit to a zeroed sum decode-accumulated
// once per encoding on the host; packed (stride = encoding) and padded to an
// odd stride (the scalar kernel), 0 to 8 sources, tiny and non-finite blocks
// included (values()).
TEST(Int8DecodeSum, MatchesRankOrderDecodeAccumulate) {
  for (const uint32_t block : {8u, 256u}) {
    CodecConfig config;
    config.kind = CodecKind::Int8;
    config.block = block;
    const Int8Codec codec(config);
    for (const size_t n : {size_t{0}, size_t{1}, size_t{1001}, size_t{(1u << 18) + 4}}) {
      const size_t bytes = codec.encodedBytes(n);
      for (const size_t pad : {size_t{0}, size_t{3}}) {
        for (const int sources : {0, 1, 3, 8}) {
          SCOPED_TRACE(testing::Message() << "block=" << block << " n=" << n << " pad=" << pad
                                          << " sources=" << sources);
          const size_t stride = bytes + pad;
          std::vector<unsigned char> encodings(stride * static_cast<size_t>(sources) + 1);
          std::vector<float> want(n, 0.0f);
          for (int r = 0; r < sources; ++r) {
            const auto x = values(DataType::Float32, n, static_cast<uint32_t>(11 + r));
            unsigned char* at = encodings.data() + static_cast<size_t>(r) * stride;
            codec.encode(x.data(), DataType::Float32, n, at, bytes, EncodeContext{0, 0});
            codec.decodeAccumulate(at, bytes, n, want.data());
          }
          DeviceBuffer denc(encodings.size()), dsum(n * sizeof(float) + 1);
          denc.upload(encodings.data());
          LOOM_CUDA_OK(loom::cuda::launchInt8DecodeSum(denc.get(), stride, sources, n, config,
                                                       dsum.as<float>(), nullptr));
          LOOM_CUDA_OK(cudaDeviceSynchronize());
          EXPECT_EQ(firstDifference(DataType::Float32, dsum.download().data(), want.data(), n), n);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TypesBlocksRounding, Int8Kernels,
                         testing::Combine(testing::Values(DataType::Float32, DataType::Float16,
                                                          DataType::Bfloat16),
                                          testing::Values(8u, 256u, 4096u), testing::Bool()));

}  // namespace
}  // namespace loom::gpu_test
