// NCCL exports every ncclXxx also as pncclXxx, so a profiling layer can define
// ncclXxx itself and forward to pncclXxx (as PMPI does for MPI). nccl.h declares
// both; the shim defines ncclXxx and makes pncclXxx an alias of it, which must
// sit in the translation unit that defines ncclXxx.
#pragma once

#define LOOM_NCCL_PROFILING_ALIAS(name) \
  extern "C" __attribute__((alias(#name))) decltype(name) p##name;
