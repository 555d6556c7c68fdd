// What one rank tells a peer so that the peer can connect a reliable-connected
// queue pair to it and write into its receive ring. Sent through the
// bootstrap, so every byte is untrusted: decode checks every field.
//
// Free of <infiniband/verbs.h> on purpose: the fuzzer builds it without rdma-core.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

/// Link layer of the sender's port; decides how the receiver addresses it.
enum class IbvLinkLayer : uint8_t { InfiniBand = 1, Ethernet = 2 };

struct IbvConnection {
  static constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'I', 'B', 'V', 'C'};
  static constexpr uint16_t kVersion = 1;
  static constexpr size_t kBytes = 80;
  /// Limits the receiver enforces. Messages are at most 2^24 - 1 bytes because
  /// their length travels in the immediate (ibv_work_requests.h).
  static constexpr uint32_t kMaxSlots = 1024;
  static constexpr uint64_t kMaxSlotBytes = uint64_t{1} << 23;

  uint64_t commTag = 0;
  uint32_t rank = 0;              ///< sender
  uint32_t toRank = 0;            ///< the one peer this record is for
  uint32_t qpNum = 0;             ///< 24 bits
  uint32_t psn = 0;               ///< first packet sequence number, 24 bits
  uint16_t lid = 0;               ///< InfiniBand only: 1..0xbfff (unicast)
  std::array<uint8_t, 16> gid{};  ///< RoCE: must not be zero
  uint8_t gidIndex = 0;
  uint8_t port = 1;  ///< >= 1
  uint8_t mtu = 0;   ///< enum ibv_mtu: 1 (256 bytes) .. 5 (4096 bytes)
  IbvLinkLayer linkLayer = IbvLinkLayer::InfiniBand;
  uint64_t ringAddress = 0;  ///< receive ring: slots x slotBytes, remotely writable
  uint32_t rkey = 0;
  uint32_t slots = 0;      ///< 1 .. kMaxSlots
  uint64_t slotBytes = 0;  ///< 1 .. kMaxSlotBytes

  /// kBytes bytes, little-endian, every byte meaningful (no padding).
  std::string encode() const;
  /// Throws Error(RemoteError) naming the field when `bytes` is not exactly one
  /// valid record. Accepted bytes re-encode to themselves.
  static IbvConnection decode(std::string_view bytes);

  bool operator==(const IbvConnection&) const = default;
};

/// A rank's records for all its peers, as one blob for an all-gather.
std::string encodeIbvConnections(const std::vector<IbvConnection>& records);
/// Throws Error(RemoteError) if the blob is not a whole number of valid records.
std::vector<IbvConnection> decodeIbvConnections(std::string_view bytes);

}  // namespace loom
