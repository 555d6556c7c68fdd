// Collective cases on host memory and their expected results, computed element
// by element: the independent reference for the tests of plans that run
// without the host executor (direct plans, the plan walker).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collectives/plan.h"
#include "core/types.h"

namespace loom::testing_cases {

inline constexpr DataType kTypes[] = {
    DataType::Int8,   DataType::Uint8,   DataType::Int32,   DataType::Uint32,  DataType::Int64,
    DataType::Uint64, DataType::Float16, DataType::Float32, DataType::Float64, DataType::Bfloat16};

struct Case {
  Collective collective;
  int nranks;
  size_t count;
  DataType type;
  ReduceOp op;
  int root;
  bool inPlace;
};

std::string describe(const Case& c);

/// Elements each rank sends and receives, in the C API's layouts.
size_t sendElements(const Case& c);
size_t recvElements(const Case& c);

/// One rank's send and receive pointers.
struct RankBuffers {
  const char* send = nullptr;
  char* recv = nullptr;
};

/// Rank buffers: a separate send and recv, or one allocation in the API's
/// in-place layout; inputs hold small integers exact in every type.
struct World {
  std::vector<std::vector<char>> memory;
  std::vector<RankBuffers> buffers;
};
World makeWorld(const Case& c);

/// The expected receive buffer of `rank`.
std::vector<char> expected(const Case& c, int rank);

/// Whether `rank` has a result (reduce and gather: the root only).
bool receives(const Case& c, int rank);

}  // namespace loom::testing_cases
