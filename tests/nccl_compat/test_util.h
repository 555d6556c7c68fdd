/* Shared by the NCCL C test programs: failure reporting, joining the job that
 * loomrun started, and reading/writing elements of every NCCL data type. */
#ifndef LOOM_NCCL_TEST_UTIL_H_
#define LOOM_NCCL_TEST_UTIL_H_

#include <nccl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Every failure names the file, line, call and, for NCCL calls, the library's
 * own explanation; then the process exits 1 (loomrun stops the other ranks). */
void testFail(const char* file, int line, const char* what, const char* detail);

#define CHECK_NCCL(call)                                                         \
  do {                                                                           \
    ncclResult_t check_result_ = (call);                                         \
    if (check_result_ != ncclSuccess) testFail(__FILE__, __LINE__, #call, NULL); \
  } while (0)

/* `call` must fail with `expected` and leave a new ncclGetLastError message
 * (one that differs from the message before the call, so consecutive expected
 * failures must differ in what they report). */
#define EXPECT_RESULT(expected, call)                                               \
  do {                                                                              \
    char expect_before_[1024];                                                      \
    snprintf(expect_before_, sizeof(expect_before_), "%s", ncclGetLastError(NULL)); \
    ncclResult_t expect_result_ = (call);                                           \
    if (expect_result_ != (expected)) {                                             \
      testFail(__FILE__, __LINE__, #call, ncclGetErrorString(expect_result_));      \
    }                                                                               \
    if (strcmp(expect_before_, ncclGetLastError(NULL)) == 0) {                      \
      testFail(__FILE__, __LINE__, #call, "no new ncclGetLastError message");       \
    }                                                                               \
  } while (0)

#define EXPECT(cond, detail)                                    \
  do {                                                          \
    if (!(cond)) testFail(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)

/* This rank and the world size, from loomrun's LOOM_RANK / LOOM_WORLD_SIZE. */
void jobPlace(int* rank, int* nranks);

/* Rank 0 creates an id with ncclGetUniqueId and publishes it in the file named
 * by $SHIM_TEST_ID_FILE plus `suffix`; the other ranks wait for it (60 s). */
void shareUniqueId(ncclUniqueId* id, int rank, const char* suffix);

/* A communicator over every rank of the job, made with ncclCommInitRank. */
ncclComm_t joinJob(int* rank, int* nranks, const char* suffix);

size_t typeSize(ncclDataType_t type);
const char* typeName(ncclDataType_t type);
int isSigned(ncclDataType_t type);
int isFloat(ncclDataType_t type);

/* Element i of `buffer` as a double, and back; values in tests are exact in every type. */
double loadElement(const void* buffer, size_t i, ncclDataType_t type);
void storeElement(void* buffer, size_t i, ncclDataType_t type, double value);

/* Fills `bytes` bytes of `buffer` with a sentinel, and checks them untouched. */
void fillSentinel(void* buffer, size_t bytes);
int sentinelIntact(const void* buffer, size_t bytes);

/* Compares `count` elements with `expected(i)`, failing with the first mismatch:
 * a difference over `tolerance` times the expected magnitude (0: exact). */
void expectElements(const char* what, const void* buffer, size_t count, ncclDataType_t type,
                    double (*expected)(size_t i, const void* context), const void* context,
                    double tolerance);

/* Half a unit in the last place, relative, of the type (0 for integers). */
double roundingError(ncclDataType_t type);

#endif /* LOOM_NCCL_TEST_UTIL_H_ */
