// Two ranks of one process on one device (loomCommInitAll, one thread driving
// both in a group) whose kernels could not both run at once: one on the
// legacy default stream (which waits for every other blocking stream of the
// device), or both on one stream (one walk queues behind the other, which
// spins waiting for it). Such calls must be staged, not walked, and still
// be right; on two streams of their own the same calls walk. Prints
// "stream conflicts: staged, then walked" on success. Run with
// LOOM_CUDA_PATH=kernel; the log is checked by run_emulated.sh.
#include <cuda_runtime_api.h>
#include <loom/loom.h>

#include <array>
#include <cstdio>
#include <vector>

namespace {

constexpr int kRanks = 2;
constexpr size_t kCount = 1031;

int fail(const char* what) {
  std::fprintf(stderr, "stream_conflicts: %s (%s)\n", what, loomGetLastError(nullptr));
  return 1;
}

/// `calls` in-place all-reduces on every rank, rank r's on streams[r], in one
/// group; returns whether every rank got the right sums (rank r starts with
/// r + 1 + i % 7 at element i: the first sum is 3 + 2 (i % 7), and each
/// further call doubles it).
bool sumsOn(const std::array<loomComm_t, kRanks>& comms, const std::array<float*, kRanks>& data,
            const std::array<cudaStream_t, kRanks>& streams, int calls) {
  std::vector<float> input(kCount);
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kCount; ++i) input[i] = static_cast<float>(r + 1 + i % 7);
    cudaMemcpy(data[r], input.data(), kCount * sizeof(float), cudaMemcpyHostToDevice);
  }
  if (loomGroupStart() != loomSuccess) return false;
  for (int r = 0; r < kRanks; ++r) {
    for (int c = 0; c < calls; ++c) {
      if (loomAllReduce(data[r], data[r], kCount, loomFloat32, loomSum, comms[r], streams[r]) !=
          loomSuccess) {
        loomGroupEnd();
        return false;
      }
    }
  }
  if (loomGroupEnd() != loomSuccess) return false;
  std::vector<float> out(kCount);
  for (int r = 0; r < kRanks; ++r) {
    if (cudaStreamSynchronize(streams[r]) != cudaSuccess) return false;
    cudaMemcpy(out.data(), data[r], kCount * sizeof(float), cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < kCount; ++i) {
      if (out[i] != static_cast<float>((3 + 2 * (i % 7)) << (calls - 1))) return false;
    }
  }
  return true;
}

}  // namespace

int main() {
  int devices = 0;
  // Also loads CUDA before the communicators are made, so they may walk.
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping\n");
    return 77;
  }
  std::array<loomComm_t, kRanks> comms{};
  if (loomCommInitAll(comms.data(), kRanks, nullptr) != loomSuccess) return fail("init");
  std::array<float*, kRanks> data{};
  std::array<cudaStream_t, kRanks> own{};
  for (int r = 0; r < kRanks; ++r) {
    if (cudaMalloc(reinterpret_cast<void**>(&data[r]), kCount * sizeof(float)) != cudaSuccess) {
      return fail("cudaMalloc");
    }
    cudaStreamCreateWithFlags(&own[r], cudaStreamNonBlocking);
  }
  if (!sumsOn(comms, data, {nullptr, own[1]}, 1))
    return fail("legacy default stream beside another");
  std::printf("legacy default stream: right\n");
  if (!sumsOn(comms, data, {own[0], own[0]}, 1)) return fail("one stream for both ranks");
  std::printf("one stream: right\n");
  // Two calls per rank, so that the log says the group walked in one launch.
  if (!sumsOn(comms, data, own, 2)) return fail("a stream each");
  std::printf("stream conflicts: staged, then walked\n");
  for (int r = 0; r < kRanks; ++r) {
    cudaFree(data[r]);
    cudaStreamDestroy(own[r]);
    loomCommDestroy(comms[r]);
  }
  return 0;
}
