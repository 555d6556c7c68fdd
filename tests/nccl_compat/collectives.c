/* Every collective through the NCCL API on host buffers, run by loomrun with
 * several ranks: all of Loom's data types, every built-in op, counts 0, 1, odd
 * and large, in place and out of place, every root. Results are compared with
 * values computed here from the closed-form inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static const ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,
                                        ncclInt64,   ncclUint64,  ncclFloat16, ncclFloat32,
                                        ncclFloat64, ncclBfloat16};
static const ncclRedOp_t kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
static const size_t kCounts[] = {0, 1, 7, 4099};
/* Odd and over one 256 KiB slot for every type. */
static const size_t kLarge = 262147;

#define LENGTH(a) (sizeof(a) / sizeof((a)[0]))

typedef struct {
  int rank, nranks;
  ncclComm_t comm;
} Job;

/* What one reduction combines: rank r contributes reductionInput(r, j) at input index j. */
typedef struct {
  const Job* job;
  ncclDataType_t type;
  ncclRedOp_t op;
  size_t offset; /* input index of output element 0 */
} Reduction;

/* Inputs keep every partial result exact in every type: products stay within
 * +-81 (int8), sums within +-60, and floats are multiples of 1/2. */
static double reductionInput(int rank, size_t j, ncclDataType_t type, ncclRedOp_t op) {
  if (op == ncclProd) {
    const double v = (double)(((size_t)rank + j) % 3 + 1);
    return isSigned(type) && ((size_t)rank * 3 + j) % 4 == 0 ? -v : v;
  }
  double v = (double)(((size_t)rank * 37 + j * 11) % 23);
  if (isSigned(type)) v -= 7;
  if (isFloat(type)) v /= 2;
  return v;
}

static double reduced(size_t i, const void* context) {
  const Reduction* r = (const Reduction*)context;
  const size_t j = r->offset + i;
  double acc = reductionInput(0, j, r->type, r->op);
  for (int rank = 1; rank < r->job->nranks; ++rank) {
    const double v = reductionInput(rank, j, r->type, r->op);
    switch (r->op) {
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = v > acc ? v : acc;
        break;
      case ncclMin:
        acc = v < acc ? v : acc;
        break;
      default:
        acc += v;
        break;
    }
  }
  if (r->op == ncclAvg) {
    acc /= r->job->nranks;
    if (!isFloat(r->type)) acc = (double)(long long)acc; /* truncated toward zero */
  }
  return acc;
}

/* Averages over a rank count that is not a power of two are rounded once,
 * by however the library divides; everything else is exact. */
static double tolerance(const Job* job, ncclDataType_t type, ncclRedOp_t op) {
  const int powerOfTwo = (job->nranks & (job->nranks - 1)) == 0;
  return op == ncclAvg && !powerOfTwo ? 2 * roundingError(type) : 0;
}

static void fillInputs(void* buffer, size_t count, const Job* job, ncclDataType_t type,
                       ncclRedOp_t op) {
  for (size_t j = 0; j < count; ++j) {
    storeElement(buffer, j, type, reductionInput(job->rank, j, type, op));
  }
}

/* Data that collectives move unchanged: element i of the block `source` produced. */
static double movedValue(size_t source, size_t i) { return (double)((source * 131 + i * 7) % 97); }

typedef struct {
  size_t source;
} Block;

static double blockValue(size_t i, const void* context) {
  return movedValue(((const Block*)context)->source, i);
}

static void fillBlock(void* buffer, size_t count, ncclDataType_t type, size_t source) {
  for (size_t i = 0; i < count; ++i) storeElement(buffer, i, type, movedValue(source, i));
}

/* malloc that never returns NULL, even for 0 bytes. */
static char* alloc(size_t bytes) {
  char* p = (char*)malloc(bytes + 1);
  EXPECT(p != NULL, "out of memory");
  return p;
}

static void allReduce(const Job* job, ncclDataType_t type, ncclRedOp_t op, size_t count,
                      int inPlace) {
  const size_t bytes = count * typeSize(type);
  char* send = alloc(bytes);
  char* recv = inPlace ? send : alloc(bytes);
  fillInputs(send, count, job, type, op);
  if (!inPlace) fillSentinel(recv, bytes);
  CHECK_NCCL(ncclAllReduce(send, recv, count, type, op, job->comm, NULL));
  const Reduction r = {job, type, op, 0};
  expectElements(inPlace ? "allreduce in place" : "allreduce", recv, count, type, reduced, &r,
                 tolerance(job, type, op));
  if (!inPlace) free(recv);
  free(send);
}

static void reduceScatter(const Job* job, ncclDataType_t type, ncclRedOp_t op, size_t count,
                          int inPlace) {
  const size_t blockBytes = count * typeSize(type);
  char* send = alloc(blockBytes * job->nranks);
  char* recv = inPlace ? send + blockBytes * job->rank : alloc(blockBytes);
  fillInputs(send, count * job->nranks, job, type, op);
  if (!inPlace) fillSentinel(recv, blockBytes);
  CHECK_NCCL(ncclReduceScatter(send, recv, count, type, op, job->comm, NULL));
  const Reduction r = {job, type, op, count * job->rank};
  expectElements("reducescatter", recv, count, type, reduced, &r, tolerance(job, type, op));
  if (!inPlace) free(recv);
  free(send);
}

static void reduce(const Job* job, ncclDataType_t type, ncclRedOp_t op, size_t count, int root,
                   int inPlace) {
  const size_t bytes = count * typeSize(type);
  char* send = alloc(bytes);
  char* recv = inPlace ? send : alloc(bytes);
  fillInputs(send, count, job, type, op);
  if (!inPlace) fillSentinel(recv, bytes);
  CHECK_NCCL(ncclReduce(send, recv, count, type, op, root, job->comm, NULL));
  if (job->rank == root) {
    const Reduction r = {job, type, op, 0};
    expectElements("reduce at root", recv, count, type, reduced, &r, tolerance(job, type, op));
  } else if (!inPlace) {
    EXPECT(sentinelIntact(recv, bytes), "reduce wrote a non-root recvbuff");
  }
  if (!inPlace) free(recv);
  free(send);
}

static void allGather(const Job* job, ncclDataType_t type, size_t count, int inPlace) {
  const size_t blockBytes = count * typeSize(type);
  char* recv = alloc(blockBytes * job->nranks);
  char* send = inPlace ? recv + blockBytes * job->rank : alloc(blockBytes);
  fillSentinel(recv, blockBytes * job->nranks);
  fillBlock(send, count, type, (size_t)job->rank);
  CHECK_NCCL(ncclAllGather(send, recv, count, type, job->comm, NULL));
  for (int r = 0; r < job->nranks; ++r) {
    const Block b = {(size_t)r};
    expectElements("allgather", recv + blockBytes * r, count, type, blockValue, &b, 0);
  }
  if (!inPlace) free(send);
  free(recv);
}

static void broadcast(const Job* job, ncclDataType_t type, size_t count, int root, int inPlace,
                      int deprecatedBcast) {
  const size_t bytes = count * typeSize(type);
  char* send = alloc(bytes);
  char* recv = inPlace ? send : alloc(bytes);
  fillSentinel(recv, bytes);
  if (job->rank == root) fillBlock(send, count, type, (size_t)root + 5);
  if (deprecatedBcast) {
    CHECK_NCCL(ncclBcast(send, count, type, root, job->comm, NULL));
  } else {
    CHECK_NCCL(ncclBroadcast(send, recv, count, type, root, job->comm, NULL));
  }
  const Block b = {(size_t)root + 5};
  expectElements("broadcast", recv, count, type, blockValue, &b, 0);
  if (!inPlace) free(recv);
  free(send);
}

static void allToAll(const Job* job, ncclDataType_t type, size_t count) {
  const size_t blockBytes = count * typeSize(type);
  const size_t n = (size_t)job->nranks;
  char* send = alloc(blockBytes * n);
  char* recv = alloc(blockBytes * n);
  for (size_t to = 0; to < n; ++to) {
    fillBlock(send + blockBytes * to, count, type, (size_t)job->rank * n + to);
  }
  fillSentinel(recv, blockBytes * n);
  CHECK_NCCL(ncclAlltoAll(send, recv, count, type, job->comm, NULL));
  for (size_t from = 0; from < n; ++from) {
    const Block b = {from * n + (size_t)job->rank};
    expectElements("alltoall", recv + blockBytes * from, count, type, blockValue, &b, 0);
  }
  free(recv);
  free(send);
}

static void gather(const Job* job, ncclDataType_t type, size_t count, int root, int inPlace) {
  const size_t blockBytes = count * typeSize(type);
  const int isRoot = job->rank == root;
  char* recv = alloc(blockBytes * job->nranks);
  char* send = inPlace && isRoot ? recv + blockBytes * root : alloc(blockBytes);
  fillSentinel(recv, blockBytes * job->nranks);
  fillBlock(send, count, type, (size_t)job->rank + 11);
  CHECK_NCCL(ncclGather(send, recv, count, type, root, job->comm, NULL));
  for (int r = 0; isRoot && r < job->nranks; ++r) {
    const Block b = {(size_t)r + 11};
    expectElements("gather", recv + blockBytes * r, count, type, blockValue, &b, 0);
  }
  if (!isRoot) EXPECT(sentinelIntact(recv, blockBytes * job->nranks), "gather wrote a non-root");
  if (!(inPlace && isRoot)) free(send);
  free(recv);
}

static void scatter(const Job* job, ncclDataType_t type, size_t count, int root, int inPlace) {
  const size_t blockBytes = count * typeSize(type);
  const int isRoot = job->rank == root;
  char* send = alloc(blockBytes * job->nranks);
  char* recv = inPlace && isRoot ? send + blockBytes * root : alloc(blockBytes);
  for (int r = 0; isRoot && r < job->nranks; ++r) {
    fillBlock(send + blockBytes * r, count, type, (size_t)r + 23);
  }
  if (!(inPlace && isRoot)) fillSentinel(recv, blockBytes);
  CHECK_NCCL(ncclScatter(send, recv, count, type, root, job->comm, NULL));
  const Block b = {(size_t)job->rank + 23};
  expectElements("scatter", recv, count, type, blockValue, &b, 0);
  if (!(inPlace && isRoot)) free(recv);
  free(send);
}

static void reductions(const Job* job) {
  for (size_t t = 0; t < LENGTH(kTypes); ++t) {
    for (size_t o = 0; o < LENGTH(kOps); ++o) {
      for (size_t c = 0; c < LENGTH(kCounts); ++c) {
        for (int inPlace = 0; inPlace < 2; ++inPlace) {
          allReduce(job, kTypes[t], kOps[o], kCounts[c], inPlace);
          reduceScatter(job, kTypes[t], kOps[o], kCounts[c], inPlace);
        }
      }
    }
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      allReduce(job, kTypes[t], ncclSum, kLarge, inPlace);
      allReduce(job, kTypes[t], ncclMax, kLarge, inPlace);
      reduceScatter(job, kTypes[t], ncclMin, kLarge / 4, inPlace);
    }
  }
  const ncclDataType_t rootTypes[] = {ncclInt32, ncclFloat32, ncclBfloat16};
  for (int root = 0; root < job->nranks; ++root) {
    for (size_t t = 0; t < LENGTH(rootTypes); ++t) {
      for (size_t o = 0; o < LENGTH(kOps); ++o) {
        for (int inPlace = 0; inPlace < 2; ++inPlace) {
          reduce(job, rootTypes[t], kOps[o], 7, root, inPlace);
          reduce(job, rootTypes[t], kOps[o], 4099, root, inPlace);
        }
      }
    }
    reduce(job, ncclUint8, ncclSum, 0, root, 0);
    reduce(job, ncclFloat64, ncclSum, kLarge, root, 1);
  }
  /* NCCL lets non-root ranks pass no recvbuff at all. */
  const size_t count = 5;
  float send[5] = {1, 2, 3, 4, 5}, recv[5];
  CHECK_NCCL(ncclReduce(send, job->rank == 0 ? recv : NULL, count, ncclFloat32, ncclSum, 0,
                        job->comm, NULL));
  for (size_t i = 0; job->rank == 0 && i < count; ++i) {
    EXPECT(recv[i] == send[i] * job->nranks, "reduce with NULL recvbuff off the root");
  }
}

static void dataMovement(const Job* job) {
  const size_t counts[] = {0, 1, 7, 4099, kLarge};
  const ncclDataType_t types[] = {ncclInt8, ncclFloat16, ncclFloat64, ncclUint64};
  for (size_t t = 0; t < LENGTH(types); ++t) {
    for (size_t c = 0; c < LENGTH(counts); ++c) {
      for (int inPlace = 0; inPlace < 2; ++inPlace) {
        allGather(job, types[t], counts[c], inPlace);
        for (int root = 0; root < job->nranks; ++root) {
          broadcast(job, types[t], counts[c], root, inPlace, 0);
          if (counts[c] != kLarge) {
            gather(job, types[t], counts[c], root, inPlace);
            scatter(job, types[t], counts[c], root, inPlace);
          }
        }
      }
      allToAll(job, types[t], counts[c] == kLarge ? kLarge / 4 : counts[c]);
    }
  }
  for (int root = 0; root < job->nranks; ++root) broadcast(job, ncclInt32, 4099, root, 1, 1);
}

int main(void) {
  Job job;
  job.comm = joinJob(&job.rank, &job.nranks, "collectives");
  reductions(&job);
  dataMovement(&job);
  CHECK_NCCL(ncclCommDestroy(job.comm));
  if (job.rank == 0) printf("nccl_compat_collectives: %d ranks passed\n", job.nranks);
  return 0;
}
