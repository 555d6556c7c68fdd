// Two processes on one GPU, or one GPU each where there are several (started
// by `loomrun -n 2`): every collective that
// the device paths run, on device buffers, checked against values computed on
// the host. With LOOM_CUDA_PATH=kernel the ranks' kernels exchange data through
// FIFOs mapped with CUDA IPC handles; staged, through host memory. Exits 77
// (skipped) without a device, 1 on a wrong value or error, 0 when all match.
#include <cuda_runtime_api.h>
#include <loom/loom.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

#define CHECK_LOOM(expr)                                                         \
  do {                                                                           \
    if ((expr) != loomSuccess) {                                                 \
      std::fprintf(stderr, "%s failed: %s\n", #expr, loomGetLastError(nullptr)); \
      return 1;                                                                  \
    }                                                                            \
  } while (0)
#define CHECK_CUDA(expr)                                                     \
  do {                                                                       \
    if (cudaError_t e = (expr); e != cudaSuccess) {                          \
      std::fprintf(stderr, "%s failed: %s\n", #expr, cudaGetErrorString(e)); \
      return 1;                                                              \
    }                                                                        \
  } while (0)

float valueOf(int rank, size_t i) {
  return static_cast<float>((static_cast<size_t>(rank) * 5 + i * 3) % 13 + 1);
}

/// All-reduce (sum), all-gather, broadcast and a send/recv ring of `count` floats.
int check(loomComm_t comm, int rank, int nranks, size_t count, cudaStream_t stream) {
  std::vector<float> mine(count * nranks);
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = valueOf(rank, i);
  float* send = nullptr;
  float* recv = nullptr;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&send), (mine.size() + 1) * sizeof(float)));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&recv), (mine.size() + 1) * sizeof(float)));
  // On the stream the collectives use: a cudaMemcpy from pageable memory may
  // return before its DMA lands, and a non-blocking stream does not wait for it
  // (the staged path read stale input that way on an H200).
  CHECK_CUDA(cudaMemcpyAsync(send, mine.data(), mine.size() * sizeof(float), cudaMemcpyHostToDevice,
                             stream));
  std::vector<float> got(count * nranks);
  int wrong = 0;

  CHECK_LOOM(loomAllReduce(send, recv, count, loomFloat32, loomSum, comm, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemcpy(got.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int p = 0; p < nranks; ++p) want += valueOf(p, i);
    wrong += got[i] != want;
  }

  CHECK_LOOM(loomAllGather(send, recv, count, loomFloat32, comm, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemcpy(got.data(), recv, count * nranks * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count * nranks; ++i) wrong += got[i] != valueOf(int(i / count), i % count);

  CHECK_LOOM(loomBroadcast(send, recv, count, loomFloat32, 1, comm, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemcpy(got.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; ++i) wrong += got[i] != valueOf(1, i);

  // Send/recv in one group around the ring: rank r gets rank r-1's values.
  const int next = (rank + 1) % nranks;
  const int prev = (rank + nranks - 1) % nranks;
  CHECK_LOOM(loomGroupStart());
  CHECK_LOOM(loomSend(send, count, loomFloat32, next, comm, stream));
  CHECK_LOOM(loomRecv(recv, count, loomFloat32, prev, comm, stream));
  CHECK_LOOM(loomGroupEnd());
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemcpy(got.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; ++i) wrong += got[i] != valueOf(prev, i);

  cudaFree(send);
  cudaFree(recv);
  if (wrong != 0) {
    std::fprintf(stderr, "rank %d: %d wrong values at count %zu\n", rank, wrong, count);
    return 1;
  }
  return 0;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping the two-process device test\n");
    return 77;
  }
  loomComm_t comm = nullptr;
  CHECK_LOOM(loomCommInitFromEnv(&comm));
  int rank = 0;
  int nranks = 0;
  CHECK_LOOM(loomCommUserRank(comm, &rank));
  CHECK_LOOM(loomCommCount(comm, &nranks));
  // One GPU each where there are several (peer access or the proxy between
  // them), both on one GPU otherwise.
  CHECK_CUDA(cudaSetDevice(rank % devices));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int status = 0;
  for (size_t count : {size_t{1}, size_t{1031}, size_t{1} << 20}) {
    status |= check(comm, rank, nranks, count, stream);
  }
  cudaStreamDestroy(stream);
  CHECK_LOOM(loomCommDestroy(comm));
  if (status == 0) std::printf("rank %d: all values match\n", rank);
  return status;
}
