// loom_gpu_bench: bandwidth of Loom's device kernels next to the device's own
// device-to-device copy, in the same run (issue 6's kernel targets: reduction
// >= 85 % of the copy, int8 quantize and dequantize-accumulate >= 80 %), and
// the time of a top-k selection (perf/gpu/topk_vs_torch.py times torch.topk on
// the same sizes). Exit 77 without a device, like the GPU tests.
//
//   loom_gpu_bench [--iters N]
// Bandwidth counts every byte a kernel reads plus every byte it writes.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "collectives/cuda/device_reduce.h"
#include "compression/codec.h"
#include "compression/cuda/device_int8.h"
#include "compression/cuda/device_topk.h"
#include "perf/gpu/int8_encode_candidates.h"

namespace {

using loom::CodecConfig;
using loom::CodecKind;
using loom::DataType;

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "loom_gpu_bench: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

/// Mean milliseconds of `iters` launches after two warm-ups.
double timeMs(const std::function<cudaError_t()>& launch, int iters) {
  for (int i = 0; i < 2; ++i) {
    if (!ok(launch(), "warm-up")) std::exit(1);
  }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int i = 0; i < iters; ++i) {
    if (!ok(launch(), "launch")) std::exit(1);
  }
  cudaEventRecord(stop);
  if (!ok(cudaEventSynchronize(stop), "synchronize")) std::exit(1);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / iters;
}

void* deviceAlloc(size_t bytes) {
  void* p = nullptr;
  if (!ok(cudaMalloc(&p, bytes + 256), "cudaMalloc")) std::exit(1);
  cudaMemset(p, 0, bytes + 256);
  return p;
}

/// Fills n floats with values of varied magnitude (so top-k has work to do).
void fillFloats(float* device, size_t n) {
  std::vector<float> host(n);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    host[i] = (static_cast<float>(x >> 8) / 16777216.0f - 0.5f) * static_cast<float>(1 + (i % 97));
  }
  cudaMemcpy(device, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
}

std::vector<unsigned char> download(const void* device, size_t bytes) {
  std::vector<unsigned char> host(bytes);
  if (!ok(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost), "download")) std::exit(1);
  return host;
}

void row(const char* kernel, size_t bytes, double ms, double movedBytes, double copyGBs) {
  const double gbs = movedBytes / (ms * 1e-3) / 1e9;
  std::printf("%-28s %10zu %10.1f %9.1f", kernel, bytes, ms * 1e3, gbs);
  if (copyGBs > 0) {
    std::printf(" %7.1f %%\n", 100.0 * gbs / copyGBs);
  } else {
    std::printf("       --\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      iters = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: loom_gpu_bench [--iters N]\n");
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("# %s, %d SMs; %d iterations per point\n", prop.name, prop.multiProcessorCount,
              iters);
  std::printf("%-28s %10s %10s %9s %9s\n", "kernel", "bytes", "time_us", "GB/s", "of_copy");

  bool candidatesDiffer = false;
  for (size_t bytes : {size_t{1} << 20, size_t{16} << 20, size_t{256} << 20}) {
    const size_t n = bytes / sizeof(float);
    auto* a = static_cast<float*>(deviceAlloc(bytes));
    auto* b = static_cast<float*>(deviceAlloc(bytes));
    auto* c = static_cast<float*>(deviceAlloc(bytes));
    void* d = deviceAlloc(bytes);
    fillFloats(a, n);
    fillFloats(b, n);

    const double copyMs =
        timeMs([&] { return cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice); }, iters);
    const double copyGBs = 2.0 * bytes / (copyMs * 1e-3) / 1e9;
    row("cudaMemcpy D2D (reference)", bytes, copyMs, 2.0 * bytes, 0);
    row("copy kernel", bytes,
        timeMs([&] { return loom::cuda::launchCopy(c, a, bytes, nullptr); }, iters), 2.0 * bytes,
        copyGBs);
    row("reduce fp32 sum", bytes,
        timeMs(
            [&] {
              return loom::cuda::launchReduce(c, a, b, n, DataType::Float32, loom::ReduceOp::Sum,
                                              nullptr);
            },
            iters),
        3.0 * bytes, copyGBs);
    row("reduce bf16 sum", bytes,
        timeMs(
            [&] {
              return loom::cuda::launchReduce(c, a, b, 2 * n, DataType::Bfloat16,
                                              loom::ReduceOp::Sum, nullptr);
            },
            iters),
        3.0 * bytes, copyGBs);

    CodecConfig int8;
    int8.kind = CodecKind::Int8;
    const size_t encoded = loom::cuda::int8EncodedBytes(n, int8);
    row("int8 quantize (block 256)", bytes,
        timeMs(
            [&] {
              return loom::cuda::launchInt8Encode(a, DataType::Float32, n, c, int8, {0, 0},
                                                  nullptr);
            },
            iters),
        static_cast<double>(bytes + encoded), copyGBs);
    // The candidates for a faster encode (int8_encode_candidates.cu), each
    // checked to write the shipped kernel's bytes.
    const std::vector<unsigned char> shipped = download(c, encoded);
    for (const auto candidate : loom::bench::kInt8EncodeCandidates) {
      const double ms =
          timeMs([&] { return loom::bench::launchInt8EncodeCandidate(candidate, a, n, d); }, iters);
      row(loom::bench::int8EncodeCandidateName(candidate), bytes, ms,
          static_cast<double>(bytes + encoded), copyGBs);
      if (download(d, encoded) != shipped) {
        std::printf("  ^ differs from the shipped kernel's bytes\n");
        candidatesDiffer = true;
      }
    }
    row("int8 dequantize-accumulate", bytes,
        timeMs([&] { return loom::cuda::launchInt8DecodeAccumulate(c, n, int8, b, nullptr); },
               iters),
        static_cast<double>(encoded + 2 * bytes), copyGBs);

    // The 8-rank reduce-scatter's sum: 8 encodings of n / 8 elements each,
    // summed in rank order in one pass, against a zeroed sum and one
    // dequantize-accumulate per encoding (what the kernel path did before).
    constexpr int kSources = 8;
    const size_t part = n / kSources;
    const size_t stride = loom::cuda::int8EncodedBytes(part, int8);
    const double sumBytes = static_cast<double>(kSources * stride + part * sizeof(float));
    row("int8 decode-sum of 8", bytes,
        timeMs(
            [&] {
              return loom::cuda::launchInt8DecodeSum(c, stride, kSources, part, int8, b, nullptr);
            },
            iters),
        sumBytes, copyGBs);
    row("int8 8 x dequant-accumulate", bytes,
        timeMs(
            [&] {
              cudaError_t status = cudaMemsetAsync(b, 0, part * sizeof(float));
              for (int r = 0; r < kSources && status == cudaSuccess; ++r) {
                status = loom::cuda::launchInt8DecodeAccumulate(
                    reinterpret_cast<const char*>(c) + r * stride, part, int8, b, nullptr);
              }
              return status;
            },
            iters),
        sumBytes, copyGBs);

    CodecConfig topk;
    topk.kind = CodecKind::Topk;
    topk.ratio = 0.01;
    void* scratch = deviceAlloc(loom::cuda::topkEncodeScratchBytes(n));
    // Selection reads the input four times (three histogram passes, the
    // counts) and once more to compact; bandwidth here counts one read.
    row("top-k 1 % encode", bytes,
        timeMs(
            [&] {
              return loom::cuda::launchTopkEncode(a, DataType::Float32, n, c, topk, scratch,
                                                  nullptr);
            },
            iters),
        static_cast<double>(bytes), 0);
    cudaFree(scratch);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(d);
  }
  if (candidatesDiffer) {
    std::fprintf(stderr, "loom_gpu_bench: an int8 encode candidate wrote other bytes\n");
    return 1;
  }
  return ok(cudaGetLastError(), "final") ? 0 : 1;
}
