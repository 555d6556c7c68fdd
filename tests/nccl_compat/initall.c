/* One process driving several ranks from one thread, as single-process NCCL
 * programs do: ncclCommInitAll, communicators created with ncclCommInitRank
 * inside one group, splits inside one group, and collectives grouped over
 * every rank. Needs no launcher. */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

enum { kRanks = 4, kCount = 1001 };

/* All-reduce of rank-dependent data over `comms`, grouped, checked on every rank. */
static void groupedAllReduce(ncclComm_t* comms, int n) {
  float* buffers[kRanks];
  for (int r = 0; r < n; ++r) {
    buffers[r] = (float*)malloc(sizeof(float) * kCount);
    for (int i = 0; i < kCount; ++i) buffers[r][i] = (float)(r * 10 + i % 7);
  }
  CHECK_NCCL(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    CHECK_NCCL(ncclAllReduce(buffers[r], buffers[r], kCount, ncclFloat32, ncclSum, comms[r], NULL));
  }
  CHECK_NCCL(ncclGroupEnd());
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < kCount; ++i) {
      EXPECT(buffers[r][i] == (float)(10 * n * (n - 1) / 2 + n * (i % 7)), "grouped all-reduce");
    }
    free(buffers[r]);
  }
}

static void initAll(void) {
  ncclComm_t comms[kRanks];
  const int devices[kRanks] = {3, 2, 1, 0};
  CHECK_NCCL(ncclCommInitAll(comms, kRanks, devices));
  for (int r = 0; r < kRanks; ++r) {
    int value = -1;
    CHECK_NCCL(ncclCommUserRank(comms[r], &value));
    EXPECT(value == r, "ncclCommInitAll rank order");
    CHECK_NCCL(ncclCommCuDevice(comms[r], &value));
    EXPECT(value == devices[r], "ncclCommCuDevice is the devlist entry");
  }
  groupedAllReduce(comms, kRanks);
  for (int r = 0; r < kRanks; ++r) CHECK_NCCL(ncclCommDestroy(comms[r]));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitAll(comms, 0, NULL));
}

/* One thread creates every rank inside a group; Loom creates them at ncclGroupEnd. */
static void initRanksInGroup(void) {
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  ncclComm_t comms[kRanks];
  CHECK_NCCL(ncclGroupStart());
  for (int r = 0; r < kRanks; ++r) CHECK_NCCL(ncclCommInitRank(&comms[r], kRanks, id, r));
  ncclResult_t state = ncclSuccess;
  CHECK_NCCL(ncclCommGetAsyncError(comms[0], &state));
  EXPECT(state == ncclInProgress, "a communicator is in progress until ncclGroupEnd");
  int count = 0;
  EXPECT_RESULT(ncclInvalidUsage, ncclCommCount(comms[0], &count));
  CHECK_NCCL(ncclGroupEnd());
  for (int r = 0; r < kRanks; ++r) {
    CHECK_NCCL(ncclCommGetAsyncError(comms[r], &state));
    EXPECT(state == ncclSuccess, "created at ncclGroupEnd");
  }
  groupedAllReduce(comms, kRanks);

  /* Splits from one thread must be grouped too: pairs {0,1} and {2,3}, reversed. */
  ncclComm_t halves[kRanks];
  CHECK_NCCL(ncclGroupStart());
  for (int r = 0; r < kRanks; ++r) {
    CHECK_NCCL(ncclCommSplit(comms[r], r / 2, kRanks - r, &halves[r], NULL));
  }
  CHECK_NCCL(ncclGroupEnd());
  for (int r = 0; r < kRanks; ++r) {
    int rank = -1;
    CHECK_NCCL(ncclCommUserRank(halves[r], &rank));
    EXPECT(rank == 1 - r % 2, "split order by key inside a group");
  }
  ncclComm_t pair[2] = {halves[1], halves[0]};
  groupedAllReduce(pair, 2);

  /* PreMulSum ops, one per rank's communicator, in one group. */
  double values[kRanks];
  ncclRedOp_t ops[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    const double scalar = r + 1;
    values[r] = 10;
    CHECK_NCCL(ncclRedOpCreatePreMulSum(&ops[r], (void*)&scalar, ncclFloat64,
                                        ncclScalarHostImmediate, comms[r]));
  }
  CHECK_NCCL(ncclGroupStart());
  for (int r = 0; r < kRanks; ++r) {
    CHECK_NCCL(ncclAllReduce(&values[r], &values[r], 1, ncclFloat64, ops[r], comms[r], NULL));
  }
  CHECK_NCCL(ncclGroupEnd());
  for (int r = 0; r < kRanks; ++r) {
    EXPECT(values[r] == 10.0 * (1 + 2 + 3 + 4), "PreMulSum in a group");
    CHECK_NCCL(ncclRedOpDestroy(ops[r], comms[r]));
    CHECK_NCCL(ncclCommDestroy(halves[r]));
    CHECK_NCCL(ncclCommDestroy(comms[r]));
  }
}

/* A creation that fails inside a group fails ncclGroupEnd and leaves a handle to destroy. */
static void failedCreationInGroup(void) {
  ncclUniqueId garbage;
  for (size_t i = 0; i < sizeof(garbage.internal); ++i) garbage.internal[i] = (char)i;
  ncclComm_t comm = NULL;
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclCommInitRank(&comm, 1, garbage, 0));
  const ncclResult_t result = ncclGroupEnd();
  EXPECT(result != ncclSuccess, "ncclGroupEnd reports the failed creation");
  ncclResult_t state = ncclSuccess;
  CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
  EXPECT(state == result, "the handle carries the creation error");
  float x = 0;
  EXPECT_RESULT(ncclInvalidUsage, ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL));
  CHECK_NCCL(ncclCommDestroy(comm));
}

int main(void) {
  initAll();
  initRanksInGroup();
  failedCreationInGroup();
  printf("nccl_compat_initall: passed\n");
  return 0;
}
