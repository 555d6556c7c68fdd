// The codecs' fp32 working-value kernels (compression/cuda/device_fp32.h)
// against the host's math, bit for bit: compensation with a residual (and
// the residual it leaves for dropped elements), top-k's forgetting of the
// kept entries, and the narrowing of an fp32 sum to the output type; every
// float type, sizes 0, 1, odd and large, with inf/NaN/denormal inputs
// (values()), and a preload that loads every kernel the device path uses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "compression/codec.h"
#include "compression/cuda/device_fp32.h"
#include "compression/cuda/device_topk.h"
#include "compression/element_io.h"
#include "compression/error_feedback.h"
#include "compression/topk_codec.h"
#include "tests/gpu/device_buffer.h"
#include "tests/gpu/float_inputs.h"

namespace loom::gpu_test {
namespace {

constexpr size_t kSizes[] = {0, 1, 1001, (size_t{1} << 18) + 3};

std::vector<float> residualFor(size_t n) {
  std::vector<float> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = 0.02f * static_cast<float>(i % 13) - 0.1f;
  return r;
}

class Fp32Kernels : public testing::TestWithParam<DataType> {};

TEST_P(Fp32Kernels, CompensateMatchesTheHost) {
  const DataType type = GetParam();
  for (const size_t n : kSizes) {
    SCOPED_TRACE(testing::Message() << dataTypeName(type) << " n=" << n);
    const auto src = values(type, n, 21);
    std::vector<float> residual = residualFor(n);
    std::vector<float> want(n);
    feedback::compensate(src.data(), type, residual.data(), want);
    std::vector<float> wantResidual(n);
    for (size_t i = 0; i < n; ++i) wantResidual[i] = std::isfinite(want[i]) ? want[i] : 0.0f;

    DeviceBuffer dsrc(src.size()), dres(n * sizeof(float)), dout(n * sizeof(float));
    dsrc.upload(src.data());
    dres.upload(residual.data());
    LOOM_CUDA_OK(loom::cuda::launchCompensate(dsrc.get(), type, n, dres.as<float>(),
                                              dout.as<float>(), nullptr));
    LOOM_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(firstDifference(DataType::Float32, dout.download().data(), want.data(), n), n);
    EXPECT_EQ(firstDifference(DataType::Float32, dres.download().data(), wantResidual.data(), n),
              n);
  }
}

TEST_P(Fp32Kernels, NarrowMatchesTheHost) {
  const DataType type = GetParam();
  for (const size_t n : kSizes) {
    SCOPED_TRACE(testing::Message() << dataTypeName(type) << " n=" << n);
    const auto bytes = values(DataType::Float32, n, 22);
    std::vector<float> src(n);
    if (n > 0) std::memcpy(src.data(), bytes.data(), n * sizeof(float));
    std::vector<unsigned char> want(n * dataTypeSize(type));
    codec::withStorer(want.data(), type, [&](auto store) {
      for (size_t i = 0; i < n; ++i) store(i, src[i]);
    });
    DeviceBuffer dsrc(n * sizeof(float)), dout(want.size());
    dsrc.upload(src.data());
    LOOM_CUDA_OK(loom::cuda::launchNarrow(dsrc.as<float>(), n, type, dout.get(), nullptr));
    LOOM_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(firstDifference(type, dout.download().data(), want.data(), n), n);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, Fp32Kernels,
                         testing::Values(DataType::Float32, DataType::Float16, DataType::Bfloat16));

// Forgetting the kept entries after compensation is ErrorFeedback::update of
// a top-k encoding, bit for bit: the residual is the compensated value where
// the element was dropped (0 if not finite), and +0 where it went out.
TEST(TopkForgetKept, CompletesTheHostUpdate) {
  CodecConfig config;
  config.kind = CodecKind::Topk;
  config.ratio = 0.05;
  const TopkCodec codec(config);
  for (const size_t n : kSizes) {
    SCOPED_TRACE(testing::Message() << "n=" << n);
    const auto src = values(DataType::Float32, n, 23);
    const std::vector<float> residual = residualFor(n);
    std::vector<float> compensated(n), decoded(n);
    feedback::compensate(src.data(), DataType::Float32, residual.data(), compensated);
    const size_t bytes = codec.encodedBytes(n);
    std::vector<unsigned char> encoding(bytes);
    codec.encode(compensated.data(), DataType::Float32, n, encoding.data(), bytes, {0, 0});
    codec.decode(encoding.data(), bytes, n, DataType::Float32, decoded.data());
    std::vector<float> want = residual;
    feedback::update(compensated, decoded, want.data());

    DeviceBuffer dsrc(src.size()), dres(n * sizeof(float)), dcomp(n * sizeof(float)), denc(bytes);
    dsrc.upload(src.data());
    dres.upload(residual.data());
    denc.upload(encoding.data());
    LOOM_CUDA_OK(loom::cuda::launchCompensate(dsrc.get(), DataType::Float32, n, dres.as<float>(),
                                              dcomp.as<float>(), nullptr));
    LOOM_CUDA_OK(loom::cuda::launchTopkForgetKept(denc.get(), bytes, n, dres.as<float>(), nullptr));
    LOOM_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(firstDifference(DataType::Float32, dres.download().data(), want.data(), n), n);
  }
}

TEST(TopkPreload, RunsEveryPathOnce) { LOOM_CUDA_OK(loom::cuda::preloadTopkKernels()); }

TEST(Fp32Preload, LoadsEveryKernel) { LOOM_CUDA_OK(loom::cuda::preloadFp32Kernels()); }

}  // namespace
}  // namespace loom::gpu_test
