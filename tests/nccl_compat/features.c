/* The rest of the NCCL API with several ranks under loomrun: queries,
 * send/recv in groups, comm split, PreMulSum ops, config init, memory and
 * registration, the host half of the device API, finalize, and the error paths (every rank makes
 * the same bad call, so none is left waiting for a peer). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

typedef struct {
  int rank, nranks;
  ncclComm_t comm;
} Job;

/* The host half of NCCL's device API (the nccl_device headers are CUDA C++, so not
 * includable from C): its C ABI, declared here, with ncclTeam_t's three ints. */
typedef struct {
  int nRanks, rank, stride;
} TeamAbi;
TeamAbi ncclTeamWorld(ncclComm_t comm);
TeamAbi ncclTeamLsa(ncclComm_t comm);
TeamAbi ncclTeamRail(ncclComm_t comm);
int ncclTeamRankToWorld(ncclComm_t comm, TeamAbi team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, TeamAbi team, int rank);
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void* requirements, void* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void* devComm);
int ncclLLA2ACalcSlots(int maxElements, int maxElementSize);

static void queries(const Job* job) {
  int value = -1;
  CHECK_NCCL(ncclCommCount(job->comm, &value));
  EXPECT(value == job->nranks, "ncclCommCount");
  CHECK_NCCL(ncclCommUserRank(job->comm, &value));
  EXPECT(value == job->rank, "ncclCommUserRank");
  CHECK_NCCL(ncclCommCuDevice(job->comm, &value));
  EXPECT(value == 0, "ncclCommCuDevice without a CUDA context");
  ncclResult_t async = ncclInternalError;
  CHECK_NCCL(ncclCommGetAsyncError(job->comm, &async));
  EXPECT(async == ncclSuccess, "ncclCommGetAsyncError");
  CHECK_NCCL(ncclGetVersion(&value));
  EXPECT(value == NCCL_VERSION_CODE, "ncclGetVersion is the header's version");
}

/* Each rank sends `count` int64 to the next and receives from the previous, in one group. */
static void ringExchange(const Job* job, size_t count) {
  const int next = (job->rank + 1) % job->nranks;
  const int prev = (job->rank + job->nranks - 1) % job->nranks;
  int64_t* send = (int64_t*)malloc((count + 1) * sizeof(int64_t));
  int64_t* recv = (int64_t*)malloc((count + 1) * sizeof(int64_t));
  for (size_t i = 0; i < count; ++i) send[i] = (int64_t)job->rank * 1000003 + (int64_t)i;
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclSend(send, count, ncclInt64, next, job->comm, NULL));
  CHECK_NCCL(ncclRecv(recv, count, ncclInt64, prev, job->comm, NULL));
  CHECK_NCCL(ncclGroupEnd());
  for (size_t i = 0; i < count; ++i) {
    EXPECT(recv[i] == (int64_t)prev * 1000003 + (int64_t)i, "ring exchange");
  }
  free(recv);
  free(send);
}

/* Every rank sends a distinct block to every other rank, all in one (nested) group. */
static void allPairs(const Job* job) {
  enum { kCount = 777 };
  const int n = job->nranks;
  float* send = (float*)malloc(sizeof(float) * kCount * n);
  float* recv = (float*)malloc(sizeof(float) * kCount * n);
  for (int to = 0; to < n; ++to) {
    for (int i = 0; i < kCount; ++i) send[to * kCount + i] = (float)(job->rank * 100 + to + i);
  }
  CHECK_NCCL(ncclGroupStart());
  for (int peer = 0; peer < n; ++peer) {
    if (peer == job->rank) continue;
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclSend(send + peer * kCount, kCount, ncclFloat32, peer, job->comm, NULL));
    CHECK_NCCL(ncclRecv(recv + peer * kCount, kCount, ncclFloat32, peer, job->comm, NULL));
    CHECK_NCCL(ncclGroupEnd());
  }
  CHECK_NCCL(ncclGroupEnd());
  for (int from = 0; from < n; ++from) {
    for (int i = 0; from != job->rank && i < kCount; ++i) {
      EXPECT(recv[from * kCount + i] == (float)(from * 100 + job->rank + i), "all-pairs exchange");
    }
  }
  free(recv);
  free(send);
}

/* Sum of `value` over the ranks of `comm`. */
static int sumOver(ncclComm_t comm, int value) {
  int result = 0;
  CHECK_NCCL(ncclAllReduce(&value, &result, 1, ncclInt32, ncclSum, comm, NULL));
  return result;
}

static void split(const Job* job) {
  /* Odd and even ranks, each ordered by descending old rank (key = -rank). */
  ncclComm_t half = NULL;
  CHECK_NCCL(ncclCommSplit(job->comm, job->rank % 2, -job->rank, &half, NULL));
  int size = 0, rank = -1, higher = 0, expectedSum = 0;
  for (int r = job->rank % 2; r < job->nranks; r += 2) {
    ++size;
    if (r > job->rank) ++higher;
    expectedSum += r;
  }
  int value = -1;
  CHECK_NCCL(ncclCommCount(half, &value));
  EXPECT(value == size, "split size");
  CHECK_NCCL(ncclCommUserRank(half, &rank));
  EXPECT(rank == higher, "split order follows key");
  EXPECT(sumOver(half, job->rank) == expectedSum, "all-reduce in a split communicator");
  CHECK_NCCL(ncclCommDestroy(half));

  /* The last rank opts out and gets no communicator. */
  const int out = job->rank == job->nranks - 1;
  ncclComm_t rest = (ncclComm_t)&value; /* must be overwritten */
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "rest";
  CHECK_NCCL(ncclCommSplit(job->comm, out ? NCCL_SPLIT_NOCOLOR : 7, 0, &rest, &config));
  if (out) {
    EXPECT(rest == NULL, "NCCL_SPLIT_NOCOLOR gives NULL");
  } else {
    CHECK_NCCL(ncclCommCount(rest, &value));
    EXPECT(value == job->nranks - 1, "split without the last rank");
    EXPECT(sumOver(rest, 1) == job->nranks - 1, "all-reduce without the last rank");
    CHECK_NCCL(ncclCommDestroy(rest));
  }
}

static double moved(int rank, size_t i) { return (double)(((size_t)rank * 131 + i * 7) % 16); }

/* all-reduce with a PreMulSum op: sum over ranks of scalar(rank) * input. */
static void preMulAllReduce(const Job* job, ncclDataType_t type, double (*scalarOf)(int rank),
                            size_t count, int inPlace, int grouped) {
  const size_t bytes = count * typeSize(type);
  char* send = (char*)malloc(bytes + 1);
  char* recv = inPlace ? send : (char*)malloc(bytes + 1);
  char scalar[8];
  storeElement(scalar, 0, type, scalarOf(job->rank));
  ncclRedOp_t op;
  CHECK_NCCL(ncclRedOpCreatePreMulSum(&op, scalar, type, ncclScalarHostImmediate, job->comm));
  EXPECT((int)op >= (int)ncclNumOps, "PreMulSum op number");
  memset(scalar, 0, sizeof(scalar)); /* read at creation: later changes do not count */
  for (size_t i = 0; i < count; ++i) storeElement(send, i, type, moved(job->rank, i));
  if (grouped) CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclAllReduce(send, recv, count, type, op, job->comm, NULL));
  if (grouped) CHECK_NCCL(ncclGroupEnd());
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < job->nranks; ++r) want += scalarOf(r) * moved(r, i);
    EXPECT(loadElement(recv, i, type) == want, typeName(type));
  }
  CHECK_NCCL(ncclRedOpDestroy(op, job->comm));
  if (!inPlace) free(recv);
  free(send);
}

static double rankPlusOne(int rank) { return rank + 1; }
static double negative(int rank) { return -(rank + 2); }
static double halves(int rank) { return 0.5 * (rank + 1); }

static void preMulSum(const Job* job) {
  preMulAllReduce(job, ncclFloat32, rankPlusOne, 1000, 0, 0);
  preMulAllReduce(job, ncclFloat32, rankPlusOne, 1000, 1, 1);
  preMulAllReduce(job, ncclInt32, negative, 4099, 1, 0);
  preMulAllReduce(job, ncclFloat16, halves, 333, 0, 1);
  preMulAllReduce(job, ncclBfloat16, rankPlusOne, 333, 1, 0);
  preMulAllReduce(job, ncclFloat64, halves, 0, 0, 0);

  /* ncclScalarDevice: the scalar is read when the collective runs (host memory here). */
  double scalar = 2;
  ncclRedOp_t op;
  CHECK_NCCL(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat64, ncclScalarDevice, job->comm));
  scalar = job->rank + 3;
  double one = 1, sum = 0;
  CHECK_NCCL(ncclAllReduce(&one, &sum, 1, ncclFloat64, op, job->comm, NULL));
  double want = 0;
  for (int r = 0; r < job->nranks; ++r) want += r + 3;
  EXPECT(sum == want, "ncclScalarDevice scalar read at the call");

  /* Reduce-scatter in place and reduce to a root, with the same op. */
  enum { kBlock = 5 };
  double* data = (double*)malloc(sizeof(double) * kBlock * job->nranks);
  for (int i = 0; i < kBlock * job->nranks; ++i) data[i] = i;
  double* mine = data + kBlock * job->rank;
  CHECK_NCCL(ncclReduceScatter(data, mine, kBlock, ncclFloat64, op, job->comm, NULL));
  for (int i = 0; i < kBlock; ++i) {
    EXPECT(mine[i] == want * (kBlock * job->rank + i), "PreMulSum reduce-scatter in place");
  }
  double reducedValue = -1;
  CHECK_NCCL(ncclReduce(&one, &reducedValue, 1, ncclFloat64, op, 1 % job->nranks, job->comm, NULL));
  if (job->rank == 1 % job->nranks) EXPECT(reducedValue == want, "PreMulSum reduce");
  free(data);

  /* An op belongs to its type and communicator and dies with ncclRedOpDestroy. */
  float f = 0;
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(&f, &f, 1, ncclFloat32, op, job->comm, NULL));
  CHECK_NCCL(ncclRedOpDestroy(op, job->comm));
  EXPECT_RESULT(ncclInvalidArgument,
                ncclAllReduce(&one, &sum, 1, ncclFloat64, op, job->comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclRedOpDestroy(op, job->comm));
  EXPECT_RESULT(ncclInvalidArgument, ncclRedOpDestroy(ncclSum, job->comm));
  EXPECT_RESULT(ncclInvalidArgument, ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat64,
                                                              (ncclScalarResidence_t)7, job->comm));
  EXPECT_RESULT(ncclInvalidArgument, ncclRedOpCreatePreMulSum(&op, NULL, ncclFloat64,
                                                              ncclScalarHostImmediate, job->comm));
}

static void configInit(const Job* job) {
  ncclUniqueId id;
  shareUniqueId(&id, job->rank, "config");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "nonblocking";
  config.maxCTAs = 4;
  ncclComm_t comm = NULL;
  const ncclResult_t result = ncclCommInitRankConfig(&comm, job->nranks, id, job->rank, &config);
  EXPECT(result == ncclSuccess || result == ncclInProgress, "ncclCommInitRankConfig");
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
  EXPECT(state == ncclSuccess, "non-blocking init completes");
  EXPECT(sumOver(comm, job->rank) == job->nranks * (job->nranks - 1) / 2, "config comm works");
  CHECK_NCCL(ncclCommDestroy(comm));

  /* Scalable init with one id per rank... all ranks pass the same list. */
  ncclUniqueId ids[2];
  shareUniqueId(&ids[0], job->rank, "scalable0");
  shareUniqueId(&ids[1], job->rank, "scalable1");
  CHECK_NCCL(ncclCommInitRankScalable(&comm, job->nranks, job->rank, 2, ids, NULL));
  EXPECT(sumOver(comm, 2) == 2 * job->nranks, "scalable init comm works");
  CHECK_NCCL(ncclCommDestroy(comm));

  ncclConfig_t garbage;
  memset(&garbage, 0, sizeof(garbage));
  EXPECT_RESULT(ncclInvalidArgument,
                ncclCommInitRankConfig(&comm, job->nranks, id, job->rank, &garbage));
}

static void memoryAndRegistration(const Job* job) {
  void* buffer = NULL;
  CHECK_NCCL(ncclMemAlloc(&buffer, 1 << 20));
  EXPECT(buffer != NULL && ((uintptr_t)buffer % NCCL_WIN_REQUIRED_ALIGNMENT) == 0, "ncclMemAlloc");
  memset(buffer, 1, 1 << 20); /* host memory under the host-buffer extension */
  void* handle = NULL;
  CHECK_NCCL(ncclCommRegister(job->comm, buffer, 1 << 20, &handle));
  int* ints = (int*)buffer;
  ints[0] = job->rank;
  CHECK_NCCL(ncclAllReduce(ints, ints, 1, ncclInt32, ncclSum, job->comm, NULL));
  EXPECT(ints[0] == job->nranks * (job->nranks - 1) / 2, "all-reduce on ncclMemAlloc memory");
  CHECK_NCCL(ncclCommDeregister(job->comm, handle));
  ncclWindow_t window = NULL;
  EXPECT_RESULT(ncclInvalidUsage,
                ncclCommWindowRegister(job->comm, buffer, 1 << 20, &window, NCCL_WIN_DEFAULT));
  CHECK_NCCL(ncclMemFree(buffer));
  EXPECT_RESULT(ncclInvalidArgument, ncclMemAlloc(NULL, 16));
}

/* Teams answer for the world (and the caller alone for Lsa and Rail); device
 * communicators are refused with a message. */
static void deviceApi(const Job* job) {
  const TeamAbi world = ncclTeamWorld(job->comm);
  EXPECT(world.nRanks == job->nranks && world.rank == job->rank && world.stride == 1,
         "ncclTeamWorld");
  for (int r = 0; r < job->nranks; ++r) {
    EXPECT(ncclTeamRankToWorld(job->comm, world, r) == r, "world rank r is world rank r");
    EXPECT(ncclTeamRankToLsa(job->comm, world, r) == (r == job->rank ? 0 : -1),
           "only the caller is in its Lsa team");
  }
  EXPECT(ncclTeamRankToWorld(job->comm, world, job->nranks) == -1, "a rank past the team");
  const TeamAbi teams[] = {ncclTeamLsa(job->comm), ncclTeamRail(job->comm)};
  for (int t = 0; t < 2; ++t) {
    EXPECT(teams[t].nRanks == 1 && teams[t].rank == 0, "Lsa and Rail: the caller alone");
    EXPECT(ncclTeamRankToWorld(job->comm, teams[t], 0) == job->rank, "its member is the caller");
    EXPECT(ncclTeamRankToWorld(job->comm, teams[t], 1) == -1, "it has no second member");
    EXPECT(ncclTeamRankToLsa(job->comm, teams[t], 1) == -1, "no second member in Lsa");
  }
  EXPECT(ncclTeamWorld(NULL).nRanks == 0, "a NULL communicator has an empty team");
  char devComm[256];
  EXPECT_RESULT(ncclInvalidUsage, ncclDevCommCreate(job->comm, NULL, devComm));
  EXPECT(strstr(ncclGetLastError(job->comm), "no device-side API") != NULL,
         "ncclDevCommCreate says why");
  EXPECT_RESULT(ncclInvalidUsage, ncclDevCommDestroy(job->comm, devComm));
  EXPECT(ncclLLA2ACalcSlots(64, 4) == 0, "no slots without a device API");
}

static void errors(const Job* job) {
  float in[4] = {1, 2, 3, 4}, out[4];
  fillSentinel(out, sizeof(out));
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(in, out, 4, ncclFloat32, ncclSum, NULL, NULL));
  EXPECT(strstr(ncclGetLastError(NULL), "NULL") != NULL, "message names the NULL comm");
  EXPECT_RESULT(ncclInvalidArgument,
                ncclAllReduce(in, out, 4, (ncclDataType_t)ncclNumTypes, ncclSum, job->comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument,
                ncclAllReduce(in, out, 4, (ncclDataType_t)-1, ncclSum, job->comm, NULL));
  EXPECT_RESULT(ncclInvalidUsage,
                ncclAllReduce(in, out, 4, ncclFloat8e4m3, ncclSum, job->comm, NULL));
  EXPECT(strstr(ncclGetLastError(NULL), "float8") != NULL, "message names float8");
  EXPECT_RESULT(ncclInvalidArgument,
                ncclAllReduce(in, out, 4, ncclFloat32, (ncclRedOp_t)99, job->comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument,
                ncclAllReduce(in, out, 4, ncclFloat32, (ncclRedOp_t)-3, job->comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument,
                ncclAllReduce(in, NULL, 4, ncclFloat32, ncclSum, job->comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument,
                ncclBroadcast(in, out, 4, ncclFloat32, job->nranks, job->comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument,
                ncclReduce(in, out, 4, ncclFloat32, ncclSum, -1, job->comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclSend(in, 4, ncclFloat32, job->nranks, job->comm, NULL));
  EXPECT(sentinelIntact(out, sizeof(out)), "a refused call wrote recvbuff");

  int value = 0;
  EXPECT_RESULT(ncclInvalidArgument, ncclCommCount(NULL, &value));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommCount(job->comm, NULL));
  ncclResult_t async;
  EXPECT_RESULT(ncclInvalidArgument, ncclCommGetAsyncError(NULL, &async));
  EXPECT_RESULT(ncclInvalidArgument, ncclGetUniqueId(NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclGetVersion(NULL));
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  ncclComm_t comm = NULL;
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRank(&comm, job->nranks, id, job->nranks));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRank(&comm, 0, id, 0));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommSplit(job->comm, -5, 0, &comm, NULL));
  EXPECT_RESULT(ncclInvalidUsage, ncclGroupEnd());
  EXPECT_RESULT(ncclInvalidArgument, ncclCommShrink(job->comm, NULL, 0, &comm, NULL, 7));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommShrink(job->comm, NULL, 1, &comm, NULL, 0));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommRevoke(job->comm, 7));

  /* Loom cannot simulate a group: refused, and the group stays open until ncclGroupEnd. */
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclAllReduce(in, out, 4, ncclFloat32, ncclSum, job->comm, NULL));
  EXPECT_RESULT(ncclInvalidUsage, ncclGroupSimulateEnd(&sim));
  CHECK_NCCL(ncclGroupEnd());
  for (int i = 0; i < 4; ++i) EXPECT(out[i] == in[i] * job->nranks, "group after simulate");

  for (int r = 0; r < ncclNumResults; ++r) {
    EXPECT(ncclGetErrorString((ncclResult_t)r)[0] != '\0', "error string");
  }
  EXPECT(strstr(ncclGetErrorString((ncclResult_t)99), "unknown") != NULL, "unknown result");
  CHECK_NCCL(ncclCommDestroy(NULL));
  CHECK_NCCL(ncclCommAbort(NULL));
}

/* A revoked communicator refuses every later call and can still be shrunk and
 * destroyed; the communicator it was split from is untouched. */
static void revoke(const Job* job) {
  ncclComm_t copy = NULL;
  CHECK_NCCL(ncclCommSplit(job->comm, 0, job->rank, &copy, NULL));
  EXPECT(sumOver(copy, 1) == job->nranks, "all-reduce before revoke");
  CHECK_NCCL(ncclCommRevoke(copy, NCCL_REVOKE_DEFAULT));
  float x = 1;
  const ncclResult_t after = ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, copy, NULL);
  EXPECT(after != ncclSuccess, "all-reduce on a revoked communicator");
  EXPECT(x == 1, "a refused call on a revoked communicator wrote its buffer");
  EXPECT(strstr(ncclGetLastError(copy), "revoked") != NULL, "a refused call says it was revoked");
  ncclResult_t async = ncclInternalError;
  CHECK_NCCL(ncclCommGetAsyncError(copy, &async));
  EXPECT(async == ncclSuccess, "a revoked communicator is quiescent: ncclSuccess, as NCCL says");
  /* Its survivors go on without the last rank, which does not take part (NCCL's form). */
  int last = job->nranks - 1;
  const int excluded = job->nranks > 1 ? 1 : 0;
  if (excluded == 0 || job->rank != last) {
    ncclComm_t shrunk = NULL;
    CHECK_NCCL(ncclCommShrink(copy, &last, excluded, &shrunk, NULL, NCCL_SHRINK_DEFAULT));
    int count = 0;
    int rank = -1;
    CHECK_NCCL(ncclCommCount(shrunk, &count));
    CHECK_NCCL(ncclCommUserRank(shrunk, &rank));
    EXPECT(count == job->nranks - excluded && rank == job->rank, "shrunk size and rank");
    EXPECT(sumOver(shrunk, 1) == count, "all-reduce on the shrunk communicator");
    CHECK_NCCL(ncclCommDestroy(shrunk));
  }
  CHECK_NCCL(ncclCommDestroy(copy));
  EXPECT(sumOver(job->comm, 1) == job->nranks, "the parent works after a split is revoked");
}

/* NCCL 2.29's grow, which the toolkit's 2.28 nccl.h does not declare. */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config);

typedef struct {
  ncclUniqueId id;
  int nranks; /* of the grown communicator */
  int sum;
} NewRank;

static void* joinAsNewRank(void* arg) {
  NewRank* newRank = (NewRank*)arg;
  ncclComm_t grown = NULL;
  CHECK_NCCL(ncclCommGrow(NULL, newRank->nranks, &newRank->id, newRank->nranks - 1, &grown, NULL));
  newRank->sum = sumOver(grown, 1);
  CHECK_NCCL(ncclCommDestroy(grown));
  return NULL;
}

/* One new rank (a thread of rank 0's process) joins; members keep their ranks. */
static void grow(const Job* job) {
  NewRank newRank;
  newRank.nranks = job->nranks + 1;
  newRank.sum = 0;
  pthread_t thread;
  if (job->rank == 0) {
    CHECK_NCCL(ncclCommGetUniqueId(job->comm, &newRank.id));
    EXPECT(pthread_create(&thread, NULL, joinAsNewRank, &newRank) == 0, "pthread_create");
  }
  ncclComm_t grown = NULL;
  CHECK_NCCL(ncclCommGrow(job->comm, newRank.nranks, NULL, -1, &grown, NULL));
  int rank = -1;
  CHECK_NCCL(ncclCommUserRank(grown, &rank));
  EXPECT(rank == job->rank, "a member keeps its rank when the communicator grows");
  EXPECT(sumOver(grown, 1) == newRank.nranks, "all-reduce on the grown communicator");
  CHECK_NCCL(ncclCommDestroy(grown));
  if (job->rank == 0) {
    pthread_join(thread, NULL);
    EXPECT(newRank.sum == newRank.nranks, "all-reduce on the new rank");
  }
}

/* After ncclCommFinalize, calls are refused and ncclCommDestroy frees the communicator. */
static void finalize(Job* job) {
  CHECK_NCCL(ncclCommFinalize(job->comm));
  ncclResult_t async = ncclInternalError;
  CHECK_NCCL(ncclCommGetAsyncError(job->comm, &async));
  EXPECT(async == ncclSuccess, "async error after finalize");
  float x = 1;
  EXPECT_RESULT(ncclInvalidUsage, ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, job->comm, NULL));
  CHECK_NCCL(ncclCommDestroy(job->comm));
  job->comm = NULL;
}

int main(void) {
  Job job;
  job.comm = joinJob(&job.rank, &job.nranks, "features");
  queries(&job);
  ringExchange(&job, 0);
  ringExchange(&job, 1);
  ringExchange(&job, 100003);
  allPairs(&job);
  split(&job);
  revoke(&job);
  grow(&job);
  preMulSum(&job);
  configInit(&job);
  memoryAndRegistration(&job);
  deviceApi(&job);
  errors(&job);
  EXPECT(sumOver(job.comm, 1) == job.nranks, "the communicator still works after errors");
  finalize(&job);
  if (job.rank == 0) printf("nccl_compat_features: %d ranks passed\n", job.nranks);
  return 0;
}
