// Small fixed-size values from every rank, or from a few peers, over the
// communicator's own links: how the device paths agree on a path and trade
// pointers, events and IPC handles before they touch the GPU. Each exchange
// counts in loomCommStats::agreements, so tests can hold the steady state of
// a device path to none.
#pragma once

#include <span>
#include <type_traits>
#include <vector>

#include "comm/comm.h"
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
  op.internal = true;
  CommStats::add(comm.stats.agreements, 1);
  runCollective(comm, op);
  return all;
}

/// `mine[i]` to `peers[i]`, and each peer's value for this rank back, over
/// the links: only this rank and those peers take part (send/recv groups).
template <typename T>
std::vector<T> exchangeWithPeers(Comm& comm, std::span<const int> peers, std::span<const T> mine) {
  static_assert(std::is_trivially_copyable_v<T>, "values travel as bytes");
  std::vector<T> theirs(peers.size());
  std::vector<Operation> ops;
  ops.reserve(2 * peers.size());
  for (size_t i = 0; i < peers.size(); ++i) {
    Operation send;
    send.collective = Collective::Send;
    send.send = &mine[i];
    send.count = sizeof(T);
    send.type = DataType::Uint8;
    send.root = peers[i];
    ops.push_back(send);
    Operation recv = send;
    recv.collective = Collective::Recv;
    recv.send = nullptr;
    recv.recv = &theirs[i];
    ops.push_back(recv);
  }
  std::vector<const Operation*> pointers;
  pointers.reserve(ops.size());
  for (const Operation& op : ops) pointers.push_back(&op);
  CommStats::add(comm.stats.agreements, 1);
  runPointToPoint(comm, pointers);
  return theirs;
}

}  // namespace loom
