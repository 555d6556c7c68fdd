/* The NCCL API on CUDA device buffers, as an NCCL program uses it: each rank
 * (a process started by loomrun) on its GPU (rank % devices), its own stream,
 * calls that return at once and a cudaStreamSynchronize before the results
 * are read. All-reduce (sum, avg), all-gather, reduce-scatter, broadcast,
 * reduce, and a send/recv ring in a group, at counts 1, 7 and 4099, checked
 * against values computed here, into memory from ncclMemAlloc (device memory
 * in a CUDA program); a PreMulSum on device buffers is refused. Exits 77 without a CUDA
 * device. Run on a GPU by scripts/gpu-check.sh and in CI on the emulated runtime
 * (tests/emulated_cuda). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#define CHECK_CUDA(call)                                                    \
  do {                                                                      \
    cudaError_t check_cuda_ = (call);                                       \
    if (check_cuda_ != cudaSuccess) {                                       \
      testFail(__FILE__, __LINE__, #call, cudaGetErrorString(check_cuda_)); \
    }                                                                       \
  } while (0)

typedef struct {
  int rank, nranks;
  ncclComm_t comm;
  cudaStream_t stream;
  float* host; /* nranks * count floats: inputs in, results out */
  float* send; /* device, nranks * count */
  float* recv; /* device, nranks * count */
} Job;

/* Rank r's element i: small integers, so every sum and average is exact. */
static float valueOf(int rank, size_t i) { return (float)((rank * 7 + (int)(i * 3)) % 17); }

static void upload(Job* job, size_t elements) {
  for (size_t i = 0; i < elements; ++i) job->host[i] = valueOf(job->rank, i);
  CHECK_CUDA(cudaMemcpyAsync(job->send, job->host, elements * sizeof(float), cudaMemcpyHostToDevice,
                             job->stream));
  CHECK_CUDA(cudaMemsetAsync(job->recv, 0, elements * sizeof(float), job->stream));
}

/* Waits for the stream (the NCCL call returned before its work was done) and
 * copies `elements` results back. */
static void download(Job* job, size_t elements) {
  CHECK_CUDA(cudaStreamSynchronize(job->stream));
  CHECK_CUDA(cudaMemcpy(job->host, job->recv, elements * sizeof(float), cudaMemcpyDeviceToHost));
}

static void expectEqual(const Job* job, size_t i, float want, const char* what, size_t count) {
  if (job->host[i] != want) {
    char detail[256];
    snprintf(detail, sizeof detail, "%s count %zu: element %zu is %g, want %g", what, count, i,
             (double)job->host[i], (double)want);
    testFail(__FILE__, __LINE__, what, detail);
  }
}

static float sumAt(int nranks, size_t i) {
  float sum = 0;
  for (int r = 0; r < nranks; ++r) sum += valueOf(r, i);
  return sum;
}

static void checkCount(Job* job, size_t count) {
  const int n = job->nranks;
  upload(job, count * n);
  CHECK_NCCL(
      ncclAllReduce(job->send, job->recv, count, ncclFloat32, ncclSum, job->comm, job->stream));
  download(job, count);
  for (size_t i = 0; i < count; ++i) expectEqual(job, i, sumAt(n, i), "allreduce sum", count);

  upload(job, count * n);
  CHECK_NCCL(
      ncclAllReduce(job->send, job->recv, count, ncclFloat32, ncclAvg, job->comm, job->stream));
  download(job, count);
  for (size_t i = 0; i < count; ++i) {
    expectEqual(job, i, sumAt(n, i) / (float)n, "allreduce avg", count);
  }

  upload(job, count * n);
  CHECK_NCCL(ncclAllGather(job->send, job->recv, count, ncclFloat32, job->comm, job->stream));
  download(job, count * n);
  for (size_t i = 0; i < count * n; ++i) {
    expectEqual(job, i, valueOf((int)(i / count), i % count), "allgather", count);
  }

  upload(job, count * n);
  CHECK_NCCL(
      ncclReduceScatter(job->send, job->recv, count, ncclFloat32, ncclSum, job->comm, job->stream));
  download(job, count);
  for (size_t i = 0; i < count; ++i) {
    expectEqual(job, i, sumAt(n, job->rank * count + i), "reducescatter", count);
  }

  const int root = n - 1;
  upload(job, count);
  CHECK_NCCL(ncclBroadcast(job->send, job->recv, count, ncclFloat32, root, job->comm, job->stream));
  download(job, count);
  for (size_t i = 0; i < count; ++i) expectEqual(job, i, valueOf(root, i), "broadcast", count);

  upload(job, count);
  CHECK_NCCL(
      ncclReduce(job->send, job->recv, count, ncclFloat32, ncclSum, 0, job->comm, job->stream));
  download(job, count);
  if (job->rank == 0) {
    for (size_t i = 0; i < count; ++i) expectEqual(job, i, sumAt(n, i), "reduce", count);
  }

  /* Send/recv around the ring in one group: rank r gets rank r-1's values. */
  const int next = (job->rank + 1) % n;
  const int prev = (job->rank + n - 1) % n;
  upload(job, count);
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclSend(job->send, count, ncclFloat32, next, job->comm, job->stream));
  CHECK_NCCL(ncclRecv(job->recv, count, ncclFloat32, prev, job->comm, job->stream));
  CHECK_NCCL(ncclGroupEnd());
  download(job, count);
  for (size_t i = 0; i < count; ++i) expectEqual(job, i, valueOf(prev, i), "sendrecv", count);
}

int main(void) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("no CUDA device: skipping the NCCL device-buffer test\n");
    return 77;
  }
  Job job;
  /* As NCCL programs do: pick the GPU, then make the communicator on it. */
  jobPlace(&job.rank, &job.nranks);
  CHECK_CUDA(cudaSetDevice(job.rank % devices));
  job.comm = joinJob(&job.rank, &job.nranks, "");
  CHECK_CUDA(cudaStreamCreateWithFlags(&job.stream, cudaStreamNonBlocking));
  const size_t largest = 4099 * (size_t)job.nranks;
  job.host = (float*)malloc(largest * sizeof(float));
  EXPECT(job.host != NULL, "out of host memory");
  CHECK_CUDA(cudaMalloc((void**)&job.send, largest * sizeof(float)));
  /* The results land in memory from ncclMemAlloc, which a CUDA program gets
   * on its current device, as from NCCL. */
  CHECK_NCCL(ncclMemAlloc((void**)&job.recv, largest * sizeof(float)));
  struct cudaPointerAttributes where;
  CHECK_CUDA(cudaPointerGetAttributes(&where, job.recv));
  EXPECT(where.type == cudaMemoryTypeDevice, "ncclMemAlloc in a CUDA program gives device memory");
  const size_t counts[] = {1, 7, 4099};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) checkCount(&job, counts[c]);
  /* PreMulSum scales inputs on the host, so on a device sendbuff it is refused,
   * leaving the output untouched. */
  upload(&job, 16);
  CHECK_CUDA(cudaStreamSynchronize(job.stream));
  ncclRedOp_t premul;
  const float scalar = 2.0f;
  CHECK_NCCL(ncclRedOpCreatePreMulSum(&premul, (void*)&scalar, ncclFloat32, ncclScalarHostImmediate,
                                      job.comm));
  EXPECT_RESULT(ncclInvalidUsage,
                ncclAllReduce(job.send, job.recv, 16, ncclFloat32, premul, job.comm, job.stream));
  download(&job, 16);
  for (size_t i = 0; i < 16; ++i) expectEqual(&job, i, 0.0f, "untouched after refusal", 16);
  CHECK_NCCL(ncclRedOpDestroy(premul, job.comm));
  CHECK_NCCL(ncclCommDestroy(job.comm));
  CHECK_CUDA(cudaFree(job.send));
  CHECK_NCCL(ncclMemFree(job.recv));
  CHECK_CUDA(cudaStreamDestroy(job.stream));
  free(job.host);
  printf("rank %d: device buffers through the NCCL API: all values match\n", job.rank);
  return 0;
}
