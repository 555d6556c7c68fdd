#include "test_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void testFail(const char* file, int line, const char* what, const char* detail) {
  fprintf(stderr, "FAIL %s:%d: %s", file, line, what);
  if (detail != NULL) fprintf(stderr, ": %s", detail);
  fprintf(stderr, " [last error: %s]\n", ncclGetLastError(NULL));
  exit(1);
}

static int envInt(const char* name) {
  const char* value = getenv(name);
  if (value == NULL) {
    fprintf(stderr, "%s is not set: run this program under loomrun\n", name);
    exit(2);
  }
  return atoi(value);
}

void jobPlace(int* rank, int* nranks) {
  *rank = envInt("LOOM_RANK");
  *nranks = envInt("LOOM_WORLD_SIZE");
}

static void idPath(char* path, size_t size, const char* suffix) {
  const char* base = getenv("SHIM_TEST_ID_FILE");
  if (base == NULL) {
    fprintf(stderr, "SHIM_TEST_ID_FILE is not set\n");
    exit(2);
  }
  snprintf(path, size, "%s.%s", base, suffix);
}

void shareUniqueId(ncclUniqueId* id, int rank, const char* suffix) {
  char path[4096], partial[4200];
  idPath(path, sizeof(path), suffix);
  if (rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(id));
    /* Written aside and renamed, so a reader never sees half an id. */
    snprintf(partial, sizeof(partial), "%s.partial", path);
    FILE* f = fopen(partial, "wb");
    EXPECT(f != NULL, strerror(errno));
    EXPECT(fwrite(id, sizeof(*id), 1, f) == 1, "short write");
    EXPECT(fclose(f) == 0, strerror(errno));
    EXPECT(rename(partial, path) == 0, strerror(errno));
    return;
  }
  for (int attempt = 0; attempt < 6000; ++attempt) {
    FILE* f = fopen(path, "rb");
    if (f != NULL) {
      const size_t got = fread(id, sizeof(*id), 1, f);
      fclose(f);
      EXPECT(got == 1, "short unique id file");
      return;
    }
    const struct timespec tenMs = {0, 10 * 1000 * 1000};
    nanosleep(&tenMs, NULL);
  }
  testFail(__FILE__, __LINE__, "waiting for rank 0's unique id", path);
}

ncclComm_t joinJob(int* rank, int* nranks, const char* suffix) {
  jobPlace(rank, nranks);
  ncclUniqueId id;
  shareUniqueId(&id, *rank, suffix);
  ncclComm_t comm = NULL;
  CHECK_NCCL(ncclCommInitRank(&comm, *nranks, id, *rank));
  return comm;
}

size_t typeSize(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

const char* typeName(ncclDataType_t type) {
  static const char* const names[] = {"int8",   "uint8",   "int32",   "uint32",  "int64",
                                      "uint64", "float16", "float32", "float64", "bfloat16"};
  return (int)type >= 0 && (int)type < 10 ? names[type] : "?";
}

int isSigned(ncclDataType_t type) {
  return type == ncclInt8 || type == ncclInt32 || type == ncclInt64 || isFloat(type);
}

int isFloat(ncclDataType_t type) {
  return type == ncclFloat16 || type == ncclFloat32 || type == ncclFloat64 || type == ncclBfloat16;
}

/* bfloat16 is the top half of a float32 (test values are exact, so truncation is enough
 * to write them, and this stays independent of the library's rounding code). */
static uint16_t toBf16(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return (uint16_t)(bits >> 16);
}

static float fromBf16(uint16_t half) {
  const uint32_t bits = (uint32_t)half << 16;
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}

double loadElement(const void* buffer, size_t i, ncclDataType_t type) {
  const char* p = (const char*)buffer + i * typeSize(type);
  switch (type) {
    case ncclInt8:
      return *(const int8_t*)p;
    case ncclUint8:
      return *(const uint8_t*)p;
    case ncclInt32:
      return *(const int32_t*)p;
    case ncclUint32:
      return *(const uint32_t*)p;
    case ncclInt64:
      return (double)*(const int64_t*)p;
    case ncclUint64:
      return (double)*(const uint64_t*)p;
    case ncclFloat16:
      return (double)*(const _Float16*)p;
    case ncclFloat32:
      return *(const float*)p;
    case ncclFloat64:
      return *(const double*)p;
    case ncclBfloat16:
      return fromBf16(*(const uint16_t*)p);
    default:
      testFail(__FILE__, __LINE__, "loadElement", "unknown type");
  }
  return 0;
}

void storeElement(void* buffer, size_t i, ncclDataType_t type, double value) {
  char* p = (char*)buffer + i * typeSize(type);
  switch (type) {
    case ncclInt8:
      *(int8_t*)p = (int8_t)value;
      break;
    case ncclUint8:
      *(uint8_t*)p = (uint8_t)value;
      break;
    case ncclInt32:
      *(int32_t*)p = (int32_t)value;
      break;
    case ncclUint32:
      *(uint32_t*)p = (uint32_t)value;
      break;
    case ncclInt64:
      *(int64_t*)p = (int64_t)value;
      break;
    case ncclUint64:
      *(uint64_t*)p = (uint64_t)value;
      break;
    case ncclFloat16:
      *(_Float16*)p = (_Float16)value;
      break;
    case ncclFloat32:
      *(float*)p = (float)value;
      break;
    case ncclFloat64:
      *(double*)p = value;
      break;
    case ncclBfloat16:
      *(uint16_t*)p = toBf16((float)value);
      break;
    default:
      testFail(__FILE__, __LINE__, "storeElement", "unknown type");
  }
}

double roundingError(ncclDataType_t type) {
  switch (type) {
    case ncclFloat16:
      return ldexp(1, -11);
    case ncclBfloat16:
      return ldexp(1, -8);
    case ncclFloat32:
      return ldexp(1, -24);
    case ncclFloat64:
      return ldexp(1, -53);
    default:
      return 0;
  }
}

enum { kSentinel = 0xA5 };

void fillSentinel(void* buffer, size_t bytes) { memset(buffer, kSentinel, bytes); }

int sentinelIntact(const void* buffer, size_t bytes) {
  const unsigned char* p = (const unsigned char*)buffer;
  for (size_t i = 0; i < bytes; ++i) {
    if (p[i] != kSentinel) return 0;
  }
  return 1;
}

void expectElements(const char* what, const void* buffer, size_t count, ncclDataType_t type,
                    double (*expected)(size_t i, const void* context), const void* context,
                    double tolerance) {
  for (size_t i = 0; i < count; ++i) {
    const double want = expected(i, context);
    const double got = loadElement(buffer, i, type);
    if (fabs(got - want) > tolerance * fabs(want) || (tolerance == 0 && got != want)) {
      char detail[512];
      snprintf(detail, sizeof(detail), "%s (%s): element %zu of %zu is %.17g, expected %.17g", what,
               typeName(type), i, count, got, want);
      testFail(__FILE__, __LINE__, "expectElements", detail);
    }
  }
}
