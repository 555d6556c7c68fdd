// The kernel plugin of the emulated CUDA runtime (emulated_runtime.cc): the
// same C table as libloom_cuda_kernels.so (base/device/cuda_kernels_abi.h),
// whose "kernels" run on the emulated stream's thread. The element kernels
// use the host reducers and the int8 codec the host's; a walk runs the real plan walker
// (collectives/walker/plan_walker.h) with one team of host threads per
// channel (tests/unit/host_team.h), as a thread block per channel on a GPU.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/walker/plan_walker.h"
#include "compression/codec_config.h"
#include "compression/element_io.h"
#include "compression/error_feedback.h"
#include "compression/int8_codec.h"
#include "compression/topk_codec.h"
#include "core/error.h"
#include "device/cuda_kernels_abi.h"
#include "emulated_cuda/emulated_runtime.h"
#include "math/reducer.h"
#include "unit/host_team.h"
#include "unit/with_element.h"

namespace {

using loom::DataType;
using loom::ReduceOp;
namespace emu = loom::emulated;
namespace walk = loom::walk;

/// Threads per emulated thread block: enough for the team logic to meet
/// real concurrency, few enough for two cores. Both are one group of lanes
/// (a warp), so the codec steps' lane-strided passes run as on a GPU.
constexpr int kTeamThreads = 2;

bool validType(int type) { return type >= 0 && type <= static_cast<int>(DataType::Bfloat16); }

int reduce(void* dst, const void* a, const void* b, size_t n, int type, int op, void* stream) {
  if (!validType(type) || op < 0 || op > static_cast<int>(ReduceOp::Avg)) return 1;
  const loom::ReduceFn fn =
      loom::reducerFor(static_cast<DataType>(type), static_cast<ReduceOp>(op));
  emu::streamOf(stream).enqueue([=] { fn(dst, a, b, n); });
  return 0;
}

int avgFinalize(void* data, size_t n, int type, int nranks, void* stream) {
  if (!validType(type) || nranks < 1) return 1;
  const loom::FinalizeFn fn = loom::finalizerFor(static_cast<DataType>(type), ReduceOp::Avg);
  emu::streamOf(stream).enqueue([=] { fn(data, n, nranks); });
  return 0;
}

void runWalk(const walk::WalkArgs* args, DataType type, unsigned channels) {
  std::vector<std::unique_ptr<walk::HostTeamShared>> teams;
  std::vector<std::thread> threads;
  for (unsigned ch = 0; ch < channels; ++ch) {
    teams.push_back(std::make_unique<walk::HostTeamShared>(kTeamThreads, kTeamThreads));
    walk::HostTeamShared* shared = teams.back().get();
    for (int t = 0; t < kTeamThreads; ++t) {
      threads.emplace_back([shared, t, args, ch, type] {
        walk::withElement(type, [&](auto e) {
          walk::HostTeam team(*shared, t);
          walk::PlanWalker<walk::HostTeam, decltype(e)> walker(team, *args, ch);
          return walker.run();
        });
      });
    }
  }
  for (std::thread& t : threads) t.join();
}

int walkKernel(const void* args, int type, unsigned channels, void* stream) {
  if (args == nullptr || channels == 0 || !validType(type)) return 1;
  const auto* walkArgs = static_cast<const walk::WalkArgs*>(args);
  // LOOM_EMULATED_LOSE_WALKS=1 (read at each launch): the walk is accepted
  // and never runs, as if this rank's GPU stopped; its peers must time out.
  const char* lose = std::getenv("LOOM_EMULATED_LOSE_WALKS");
  if (lose != nullptr && std::string(lose) == "1") return 0;
  emu::streamOf(stream).enqueue([=] { runWalk(walkArgs, static_cast<DataType>(type), channels); });
  return 0;
}

int prepareWalk() { return 0; }

bool codecType(int type) {
  return type == static_cast<int>(DataType::Float32) ||
         type == static_cast<int>(DataType::Float16) ||
         type == static_cast<int>(DataType::Bfloat16);
}

/// The host codec of the kernels' arguments; null for a configuration the
/// codec refuses (the real kernels answer cudaErrorInvalidValue).
std::shared_ptr<const loom::Int8Codec> int8Codec(uint32_t block, int stochastic, uint64_t seed) {
  const loom::CodecConfig config = loom::int8CodecConfig(block, stochastic != 0, seed);
  try {
    loom::validateCodecConfig(config);
  } catch (const loom::Error&) {
    return nullptr;
  }
  return std::make_shared<const loom::Int8Codec>(config);
}

int int8Encode(const void* src, int type, size_t n, void* dst, uint32_t block, int stochastic,
               uint64_t seed, uint64_t firstIndex, uint64_t counter, void* stream) {
  auto codec = int8Codec(block, stochastic, seed);
  if (!codecType(type) || codec == nullptr) return 1;
  emu::streamOf(stream).enqueue([=] {
    codec->encode(src, static_cast<DataType>(type), n, dst, codec->encodedBytes(n),
                  {firstIndex, counter});
  });
  return 0;
}

int int8EncodeFeedback(const void* src, int type, size_t n, float* residual, void* dst,
                       uint32_t block, int stochastic, uint64_t seed, uint64_t firstIndex,
                       uint64_t counter, void* stream) {
  auto codec = int8Codec(block, stochastic, seed);
  if (!codecType(type) || codec == nullptr) return 1;
  emu::streamOf(stream).enqueue([=] {
    // The host's steps (compressed_common.cc): compensate in fp32, encode,
    // decode, keep what was lost.
    std::vector<float> compensated(n);
    std::vector<float> decoded(n);
    loom::feedback::compensate(src, static_cast<DataType>(type), residual, compensated);
    const size_t bytes = codec->encodedBytes(n);
    codec->encode(compensated.data(), DataType::Float32, n, dst, bytes, {firstIndex, counter});
    codec->decode(dst, bytes, n, DataType::Float32, decoded.data());
    loom::feedback::update(compensated, decoded, residual);
  });
  return 0;
}

int int8Decode(const void* src, size_t n, uint32_t block, int type, void* out, void* stream) {
  auto codec = int8Codec(block, 0, 0);
  if (!codecType(type) || codec == nullptr) return 1;
  emu::streamOf(stream).enqueue(
      [=] { codec->decode(src, codec->encodedBytes(n), n, static_cast<DataType>(type), out); });
  return 0;
}

int int8DecodeAccumulate(const void* src, size_t n, uint32_t block, float* acc, void* stream) {
  auto codec = int8Codec(block, 0, 0);
  if (codec == nullptr) return 1;
  emu::streamOf(stream).enqueue(
      [=] { codec->decodeAccumulate(src, codec->encodedBytes(n), n, acc); });
  return 0;
}

int int8DecodeSum(const void* src, size_t stride, int sources, size_t n, uint32_t block, float* sum,
                  void* stream) {
  auto codec = int8Codec(block, 0, 0);
  if (codec == nullptr || sources < 0) return 1;
  emu::streamOf(stream).enqueue([=] {
    std::fill_n(sum, n, 0.0f);
    for (int r = 0; r < sources; ++r) {
      codec->decodeAccumulate(static_cast<const char*>(src) + static_cast<size_t>(r) * stride,
                              codec->encodedBytes(n), n, sum);
    }
  });
  return 0;
}

std::shared_ptr<const loom::TopkCodec> topkCodec(double ratio) {
  loom::CodecConfig config;
  config.kind = loom::CodecKind::Topk;
  config.ratio = ratio;
  try {
    loom::validateCodecConfig(config);
  } catch (const loom::Error&) {
    return nullptr;
  }
  return std::make_shared<const loom::TopkCodec>(config);
}

int topkEncode(const void* src, int type, size_t n, void* dst, double ratio, void* /*work*/,
               void* stream) {
  auto codec = topkCodec(ratio);
  if (!codecType(type) || codec == nullptr) return 1;
  emu::streamOf(stream).enqueue([=] {
    codec->encode(src, static_cast<DataType>(type), n, dst, codec->encodedBytes(n), {0, 0});
  });
  return 0;
}

/// The real encode's selection state; a token amount, so that the caller's
/// scratch layout is exercised.
size_t topkEncodeWorkBytes(size_t n) { return 256 + n / 64; }

/// Runs a decoder on the host codec; a malformed encoding sets *status, as the
/// device's checks do, instead of throwing on the stream's thread.
template <typename Decode>
void checkedDecode(int* status, Decode decode) {
  try {
    decode();
    *status = 0;
  } catch (const loom::Error&) {
    *status = 1;
  }
}

int topkDecodeAccumulate(const void* src, size_t srcBytes, size_t n, float* acc, int* status,
                         void* stream) {
  auto codec = topkCodec(1.0);
  emu::streamOf(stream).enqueue(
      [=] { checkedDecode(status, [&] { codec->decodeAccumulate(src, srcBytes, n, acc); }); });
  return 0;
}

int topkDecode(const void* src, size_t srcBytes, size_t n, int type, void* out, int* status,
               void* stream) {
  auto codec = topkCodec(1.0);
  if (!codecType(type)) return 1;
  emu::streamOf(stream).enqueue([=] {
    checkedDecode(status,
                  [&] { codec->decode(src, srcBytes, n, static_cast<DataType>(type), out); });
  });
  return 0;
}

int compensate(const void* src, int type, size_t n, float* residual, float* out, void* stream) {
  if (!codecType(type)) return 1;
  emu::streamOf(stream).enqueue([=] {
    loom::feedback::compensate(src, static_cast<DataType>(type), residual, {out, n});
    for (size_t i = 0; i < n; ++i) residual[i] = std::isfinite(out[i]) ? out[i] : 0.0f;
  });
  return 0;
}

int topkForgetKept(const void* encoding, size_t encodedBytes, size_t n, float* residual,
                   void* stream) {
  if (encodedBytes < sizeof(uint32_t)) return 1;
  emu::streamOf(stream).enqueue([=] {
    const auto* bytes = static_cast<const unsigned char*>(encoding);
    uint32_t count = 0;
    std::memcpy(&count, bytes, sizeof count);
    const size_t capacity = (encodedBytes - sizeof(uint32_t)) / (2 * sizeof(uint32_t));
    for (size_t j = 0; j < count && j < capacity; ++j) {
      uint32_t index = 0;
      std::memcpy(&index, bytes + sizeof(uint32_t) * (1 + j), sizeof index);
      if (index < n) residual[index] = 0.0f;
    }
  });
  return 0;
}

int narrowFloats(const float* src, size_t n, int type, void* out, void* stream) {
  if (!codecType(type)) return 1;
  emu::streamOf(stream).enqueue([=] {
    loom::codec::withStorer(out, static_cast<DataType>(type), [&](auto store) {
      for (size_t i = 0; i < n; ++i) store(i, src[i]);
    });
  });
  return 0;
}

/// LOOM_EMULATED_WALK_BLOCKS (default 8): the walk blocks the emulated
/// device holds at once, which bounds the channels of ranks sharing it. Few,
/// since each emulated block is kTeamThreads host threads.
int walkResidentBlocks(int* blocks) {
  const char* set = std::getenv("LOOM_EMULATED_WALK_BLOCKS");
  *blocks = set != nullptr ? std::atoi(set) : 8;
  return 0;
}

// Every entry by its name in the ABI struct (base/device/cuda_kernels_abi.h):
// the compiler checks this table and the plugin's (collectives/cuda/
// kernel_plugin.cc) against that one list.
constexpr LoomCudaKernels kTable = {.abiVersion = LOOM_CUDA_KERNELS_ABI_VERSION,
                                    .reduce = &reduce,
                                    .avgFinalize = &avgFinalize,
                                    .walk = &walkKernel,
                                    .prepareWalk = &prepareWalk,
                                    .int8Encode = &int8Encode,
                                    .int8Decode = &int8Decode,
                                    .int8DecodeAccumulate = &int8DecodeAccumulate,
                                    .walkResidentBlocks = &walkResidentBlocks,
                                    .int8DecodeSum = &int8DecodeSum,
                                    .int8EncodeFeedback = &int8EncodeFeedback,
                                    .topkEncode = &topkEncode,
                                    .topkEncodeWorkBytes = &topkEncodeWorkBytes,
                                    .topkDecodeAccumulate = &topkDecodeAccumulate,
                                    .topkDecode = &topkDecode,
                                    .compensate = &compensate,
                                    .topkForgetKept = &topkForgetKept,
                                    .narrowFloats = &narrowFloats};

}  // namespace

extern "C" const LoomCudaKernels* loomCudaKernels(void) { return &kTable; }
