// A small fixed-size value from every rank, over the communicator's own
// links: how the device paths agree on a path and trade pointers, events and
// IPC handles before they touch the GPU.
#pragma once

#include <type_traits>
#include <vector>

#include "comm/operation.h"

namespace loom {

/// Every rank's `mine`, indexed by rank (collective over `comm`).
template <typename T>
std::vector<T> allGatherValue(Comm& comm, const T& mine) {
  static_assert(std::is_trivially_copyable_v<T>, "values travel as bytes");
  std::vector<T> all(static_cast<size_t>(comm.nranks));
  Operation op;
  op.collective = Collective::AllGather;
  op.send = &mine;
  op.recv = all.data();
  op.count = sizeof(T);
  op.type = DataType::Uint8;
  runCollective(comm, op);
  return all;
}

}  // namespace loom
