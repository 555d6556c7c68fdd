// Device collectives in steady state make no host exchange (two processes on
// the emulated runtime, loomrun): once the first calls have set up what they
// need (the codec scratch of compressed calls is grown by all ranks
// together), loomCommStats::agreements stays where it is through a mix of
// all-reduce sizes, all-gather, reduce-scatter, broadcast, a group of two
// all-reduces on two streams, int8-compressed all-reduce, and host-buffer
// all-reduce on the same communicator, while every result is checked against
// sums computed here. Prints "steady state: no agreements" on success. Run
// with LOOM_CUDA_PATH=kernel (the default). With --threads, one process runs
// both ranks as threads, each on a device of its own (LOOM_EMULATED_DEVICES=2):
// they decide alone too, as no two of them share a device.
#include <cuda_runtime_api.h>
#include <loom/loom.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/emulated_cuda/emulated_rank.h"

using loom::emulated_test::fail;

namespace {

constexpr int kRanks = 2;
constexpr size_t kLarge = size_t{1} << 16;

/// Rank r's input element i: small integers, exact in fp32 sums.
float valueOf(int rank, size_t i) { return static_cast<float>(rank + 1 + static_cast<int>(i % 5)); }

float sumOf(size_t i) {
  float s = 0;
  for (int r = 0; r < kRanks; ++r) s += valueOf(r, i);
  return s;
}

struct DeviceBuffer {
  explicit DeviceBuffer(size_t count) : count(count) {
    cudaMalloc(reinterpret_cast<void**>(&ptr), count * sizeof(float));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void fill(int rank) const {
    std::vector<float> host(count);
    for (size_t i = 0; i < count; ++i) host[i] = valueOf(rank, i);
    cudaMemcpy(ptr, host.data(), count * sizeof(float), cudaMemcpyHostToDevice);
  }
  std::vector<float> read() const {
    std::vector<float> host(count);
    cudaMemcpy(host.data(), ptr, count * sizeof(float), cudaMemcpyDeviceToHost);
    return host;
  }
  float* ptr = nullptr;
  size_t count;
};

uint64_t agreements(loomComm_t comm) {
  loomCommStats stats{};
  loomCommGetStats(comm, &stats);
  return stats.agreements;
}

/// One round of every kind of call, each result checked; false on the first
/// wrong one (named on stderr).
bool round(loomComm_t comm, int rank, cudaStream_t stream, cudaStream_t other) {
  for (size_t count : {size_t{1}, size_t{4099}, kLarge}) {
    DeviceBuffer data(count);
    data.fill(rank);
    if (loomAllReduce(data.ptr, data.ptr, count, loomFloat32, loomSum, comm, stream) != 0) {
      return false;
    }
    cudaStreamSynchronize(stream);
    const std::vector<float> got = data.read();
    for (size_t i = 0; i < count; ++i) {
      if (got[i] != sumOf(i)) return fail(rank, "all-reduce: wrong sum") == 0;
    }
  }
  constexpr size_t kPiece = 1031;
  DeviceBuffer piece(kPiece);
  DeviceBuffer whole(kPiece * kRanks);
  piece.fill(rank);
  if (loomAllGather(piece.ptr, whole.ptr, kPiece, loomFloat32, comm, stream) != 0) return false;
  cudaStreamSynchronize(stream);
  std::vector<float> got = whole.read();
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kPiece; ++i) {
      if (got[r * kPiece + i] != valueOf(r, i)) return fail(rank, "all-gather: wrong piece") == 0;
    }
  }
  whole.fill(rank);
  if (loomReduceScatter(whole.ptr, piece.ptr, kPiece, loomFloat32, loomSum, comm, stream) != 0) {
    return false;
  }
  cudaStreamSynchronize(stream);
  got = piece.read();
  for (size_t i = 0; i < kPiece; ++i) {
    if (got[i] != sumOf(rank * kPiece + i)) return fail(rank, "reduce-scatter: wrong sum") == 0;
  }
  piece.fill(rank);
  if (loomBroadcast(piece.ptr, piece.ptr, kPiece, loomFloat32, 1, comm, stream) != 0) return false;
  cudaStreamSynchronize(stream);
  got = piece.read();
  for (size_t i = 0; i < kPiece; ++i) {
    if (got[i] != valueOf(1, i)) return fail(rank, "broadcast: wrong value") == 0;
  }
  // A group on two streams: two launches, one after the other.
  DeviceBuffer a(kPiece);
  DeviceBuffer b(kPiece);
  a.fill(rank);
  b.fill(rank);
  if (loomGroupStart() != 0 ||
      loomAllReduce(a.ptr, a.ptr, kPiece, loomFloat32, loomSum, comm, stream) != 0 ||
      loomAllReduce(b.ptr, b.ptr, kPiece, loomFloat32, loomMax, comm, other) != 0 ||
      loomGroupEnd() != 0) {
    return false;
  }
  cudaStreamSynchronize(stream);
  cudaStreamSynchronize(other);
  const std::vector<float> sums = a.read();
  const std::vector<float> maxima = b.read();
  for (size_t i = 0; i < kPiece; ++i) {
    if (sums[i] != sumOf(i) || maxima[i] != valueOf(kRanks - 1, i)) {
      return fail(rank, "group on two streams: wrong result") == 0;
    }
  }
  // int8-compressed: within the codec's error of the exact sum.
  loomCompression int8{};
  int8.kind = loomCompressInt8;
  DeviceBuffer compressed(4099);
  compressed.fill(rank);
  if (loomAllReduceEx(compressed.ptr, compressed.ptr, 4099, loomFloat32, loomSum, &int8, comm,
                      stream) != 0) {
    return false;
  }
  cudaStreamSynchronize(stream);
  got = compressed.read();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(got[i] - sumOf(i)) > 0.1f) return fail(rank, "int8 all-reduce: off") == 0;
  }
  // Host buffers on the same communicator: the host executor, no device decision.
  std::vector<float> host(kPiece);
  for (size_t i = 0; i < kPiece; ++i) host[i] = valueOf(rank, i);
  if (loomAllReduce(host.data(), host.data(), kPiece, loomFloat32, loomSum, comm, nullptr) != 0) {
    return false;
  }
  for (size_t i = 0; i < kPiece; ++i) {
    if (host[i] != sumOf(i)) return fail(rank, "host all-reduce: wrong sum") == 0;
  }
  return true;
}

/// Runs the rounds on one rank; 0 when every result was right and the
/// agreements stopped after the first round.
int steadyState(loomComm_t comm, int rank, cudaStream_t stream) {
  cudaStream_t other = nullptr;
  cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
  // The first round sets up what later calls reuse (the codec scratch).
  if (!round(comm, rank, stream, other)) return fail(rank, "first round");
  const uint64_t settled = agreements(comm);
  for (int i = 0; i < 5; ++i) {
    if (!round(comm, rank, stream, other)) return fail(rank, "a later round");
  }
  const uint64_t after = agreements(comm);
  if (after != settled) {
    std::fprintf(stderr, "rank %d: %llu host exchanges in steady state (after %llu to set up)\n",
                 rank, static_cast<unsigned long long>(after - settled),
                 static_cast<unsigned long long>(settled));
    return 1;
  }
  std::printf("rank %d: %llu agreements to set up, none in 5 later rounds\n", rank,
              static_cast<unsigned long long>(settled));
  cudaStreamDestroy(other);
  return 0;
}

/// Both ranks as threads of this process, rank r on device r.
int runAsThreads() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < kRanks) {
    std::fprintf(stderr, "--threads needs %d devices (LOOM_EMULATED_DEVICES)\n", kRanks);
    return 1;
  }
  loomUniqueId id{};
  if (loomGetUniqueId(&id) != loomSuccess) return fail(-1, "unique id");
  int failed[kRanks] = {};
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(r);  // before the communicator: its device collectives run there
      loomComm_t comm = nullptr;
      if (loomCommInitRank(&comm, kRanks, id, r) != loomSuccess) {
        failed[r] = fail(r, "init");
        return;
      }
      cudaStream_t stream = nullptr;
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      failed[r] = steadyState(comm, r, stream);
      cudaStreamDestroy(stream);
      loomCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    if (failed[r] != 0) return 1;
  }
  std::printf("steady state: no agreements\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--threads") == 0) return runAsThreads();
  const auto [comm, rank, stream] = loom::emulated_test::joinJob();
  int nranks = 0;
  loomCommCount(comm, &nranks);
  if (nranks != kRanks) return fail(rank, "run with loomrun -n 2");
  if (steadyState(comm, rank, stream) != 0) return 1;
  std::printf("steady state: no agreements\n");
  cudaStreamDestroy(stream);
  loomCommDestroy(comm);
  return 0;
}
