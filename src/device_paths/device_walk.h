// Collectives on device buffers run by the plan walker on the GPU
// (collectives/walker/, collectives/cuda/walk_kernel.cu): each rank launches
// one kernel on its stream, one thread block per channel, and the blocks of
// all ranks move the plan's messages through FIFOs in each other's device
// memory (pointers within a process, CUDA IPC mappings across processes);
// peers on other hosts, and peers of this host whose device memory is out of
// reach, through pinned host mailboxes that a proxy thread moves over the
// communicator's links. The call returns once the kernel is enqueued. The
// default device path (LOOM_CUDA_PATH=kernel; docs/cuda.md).
#pragma once

#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "collectives/walker/walk_program.h"
#include "comm/operation.h"
#include "device_paths/peer_arenas.h"
#include "device_paths/walk_proxy_runner.h"

namespace loom {

/// A communicator's walker memory on its device, made on first use.
struct DeviceWalkState {
  int device = -1;
  std::vector<int> devices;  ///< every rank's device when the state was made
  /// Why too many ranks share a device for their walks to be sure to run
  /// together (crowding()), or empty; send/recv walks check it.
  std::string crowded;
  walk::FifoGeometry geometry;
  /// Whether the walks order their FIFO words at system scope: some peer is
  /// on another device, in another process or behind the proxy (every rank
  /// of a communicator answers alike).
  bool systemScope = true;
  void* arena = nullptr;  ///< this rank's FIFOs (device memory)
  /// Every rank's arena as this rank addresses it (null: proxied), and the
  /// IPC mappings behind them, closed last.
  cuda_p2p::PeerArenas peers;
  /// Programs rotate through a few slots: the host writes slot i into pinned
  /// memory and enqueues its upload, so a call never waits for its stream
  /// (an upload from pageable memory may); slot i is written again only once
  /// its previous upload ran, normally long before.
  static constexpr int kProgramSlots = 4;
  char* programs = nullptr;                  ///< device: kProgramSlots x programCapacity
  char* programStaging = nullptr;            ///< pinned host: the same
  size_t programCapacity = 0;                ///< bytes per slot
  void* uploaded[kProgramSlots] = {};        ///< events after each slot's upload
  walk::WalkStatus* statusMirror = nullptr;  ///< pinned host copy of the last walk's statuses
  uint32_t* abortWord = nullptr;             ///< pinned host word the kernels poll
  /// Peers reached through the proxy (nonzero): those on other hosts, and
  /// those of this host that this rank and the peer cannot both write to
  /// (walk_proxy.h proxiedPairs); their pinned host mailboxes (walk_program.h
  /// FifoRoutes) and the proxy thread serving them.
  std::vector<uint8_t> proxied;
  char* outbox = nullptr;
  char* inbox = nullptr;
  std::unique_ptr<WalkProxyRunner> proxy;
  /// Compressed calls' encoded blocks and fp32 sums (device memory), grown by
  /// every rank together between calls (device_walk_compressed.h), and the
  /// event after the last compressed call's final kernel: the next one
  /// overwrites the scratch only after it.
  char* codecScratch = nullptr;
  size_t codecScratchBytes = 0;
  void* codecDone = nullptr;
  bool codecUsed = false;
  /// Pinned host copy of the last compressed call's decode statuses (2 per
  /// rank), and how many it used and were not read yet.
  int* codecStatusMirror = nullptr;
  size_t codecStatusCount = 0;
  void* done = nullptr;  ///< event recorded after the last walk
  bool pending = false;  ///< a walk whose statuses were not read yet
  std::string failure;   ///< what the first failed walk said; the FIFOs are unusable after it
  /// Guards pending, failure and the status mirror against
  /// loomCommGetAsyncError's thread.
  std::mutex statusMutex;
  uint64_t walks = 0;                  ///< walks enqueued, for messages
  bool announcedPointToPoint = false;  ///< the log said send/recv groups walk
  bool announcedFusion = false;        ///< the log said a group's calls share a launch
  bool announcedMixedGroup = false;    ///< the log said collectives and send/recv walked together
  bool announcedTree = false;          ///< the log said a call walked the double binary tree
  /// Bit 8 x CodecKind + 2 x algorithm + (ring fused): the log said that compressed form runs here.
  uint32_t announcedCodecs = 0;
  bool announcedDeviceFeedback = false;  ///< ... and that error feedback does too

  DeviceWalkState() = default;
  DeviceWalkState(const DeviceWalkState&) = delete;
  DeviceWalkState& operator=(const DeviceWalkState&) = delete;
  /// Waits for the last walk, then frees everything.
  ~DeviceWalkState();
};

/// What runDeviceWalk did with a group.
struct DeviceWalkOutcome {
  /// Whether it decided which calls walk; then `rest` is what another path
  /// runs (after the walk), else the whole group is.
  bool handled = false;
  bool walked = false;          ///< a walk was enqueued
  std::vector<Operation> rest;  ///< calls for another path
  std::string failure;          ///< a failure to report once `rest` has run
};

/// Runs `ops` with the device plan walker, or leaves them (having run
/// nothing) when they must take another path: not asked for, no kernels, a
/// group with collectives on host buffers, a compressed form the kernels do
/// not run. Where every rank has a process of its own, each rank decides
/// alone from the call and from the devices named at creation, the same way
/// on every rank (no exchange per call); buffers on another device than that
/// one are refused (InvalidUsage). Where some ranks share a process, the
/// ranks agree per call, since two of them on one stream (or the legacy
/// default stream beside another) would queue behind each other: such calls
/// are staged. For a collective, throws RemoteError when this rank's previous
/// walk failed (on every rank, where they agree per call).
/// A send/recv group may be split: the pairs whose both ends can walk are
/// walked, the others go to another path, and pairs with an end whose
/// kernel path failed earlier run nowhere and are reported.
DeviceWalkOutcome runDeviceWalk(Comm& comm, std::span<const Operation> ops);

/// With LOOM_CUDA_PATH=kernel, decides at communicator creation (collective)
/// whether its device calls can walk and whether they agree per call, and
/// makes the walker's FIFOs on every rank's current device, so that send/recv
/// groups can walk before any collective ran; makes nothing when a rank has
/// no CUDA loaded or cannot walk.
void prepareDeviceWalk(Comm& comm);

/// Waits until the proxy of `comm`'s device walks has moved everything, so the
/// host may use the network links again (every call starts with this).
/// Throws RemoteError when the proxy failed or timed out.
void quiesceDeviceWalkProxy(Comm& comm);

/// Reads the last walk's statuses if it has finished, and records a failure
/// in comm.asyncError (loomCommGetAsyncError; safe beside a running call).
void pollDeviceWalk(Comm& comm);

/// Makes every kernel of `comm` still waiting give up (loomCommAbort).
void abortDeviceWalks(Comm& comm);

/// What a failed walk's statuses say, for an error message; empty when none failed.
std::string describeWalkFailure(std::span<const walk::WalkStatus> statuses);

}  // namespace loom
