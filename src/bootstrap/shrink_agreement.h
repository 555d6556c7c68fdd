// How the survivors of a failure agree on who is out (loomCommShrink). The
// rendezvous server is the coordinator: each rank that shrinks names the ranks
// it excludes; the server waits until every rank has either asked, died
// (disconnected without leaving) or left, or until the first asker's window
// has passed, and then answers every asker with the same verdict: the union of
// the excluded, the dead, the departed and the ranks that never asked. A rank
// that dies during the agreement simply joins the dead. Verdicts accumulate:
// a rank out of one shrink is out of every later one, and learns so if it asks.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/rendezvous_protocol.h"

namespace loom {

inline constexpr size_t kShrinkSaltBytes = 16;
using ShrinkSalt = std::array<uint8_t, kShrinkSaltBytes>;
/// The survivors' rendezvous takes its secret and job from the parent's secret
/// and the verdict's salt (childSecret, childJob), at the server and each rank.
inline constexpr std::string_view kShrinkSecretLabel = "loom shrink secret";
inline constexpr std::string_view kShrinkJobLabel = "loom shrink job";

/// What a rank asks for (the Shrink message).
struct ShrinkRequest {
  std::chrono::milliseconds window{0};  ///< how long the server waits for silent ranks
  std::vector<uint32_t> excluded;       ///< ranks this rank says are out
};

/// The server's answer (the Agreed frame).
struct ShrinkVerdict {
  uint16_t port = 0;          ///< the survivors' new rendezvous; 0: none was started
  ShrinkSalt salt{};          ///< derives the new rendezvous's secret and job
  std::vector<uint32_t> out;  ///< every rank out, ascending
};

namespace rendezvous {

inline constexpr size_t kShrinkHeaderBytes = 8;
inline constexpr size_t kAgreedHeaderBytes = 4 + kShrinkSaltBytes + 4;
inline constexpr uint32_t kMaxShrinkBytes = kShrinkHeaderBytes + 4 * kMaxRanks;

std::string encodeShrinkRequest(const ShrinkRequest& request);
/// Throws Error(RemoteError) unless the payload is well formed with every rank
/// below `nranks`.
ShrinkRequest decodeShrinkRequest(std::string_view payload, int nranks);
std::string encodeShrinkVerdict(const ShrinkVerdict& verdict);
/// Throws Error(RemoteError) unless the payload is well formed with every rank
/// below `nranks`, ascending.
ShrinkVerdict decodeShrinkVerdict(std::string_view payload, int nranks);

}  // namespace rendezvous

/// The server's bookkeeping for shrinks of one communicator. Pure: the server
/// feeds it events and asks when a round is decided.
class ShrinkAgreement {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ShrinkAgreement(int nranks);

  /// A rank that is already out gets its verdict at once (closeFor); any other
  /// opens a round, or joins the open one.
  bool isOut(int rank) const { return out_[rank] != 0; }
  void ask(int rank, const ShrinkRequest& request, Clock::time_point now);
  /// The rank disconnected or left: it will never ask, so nobody waits for it.
  void markGone(int rank);
  /// True when a round is open and every rank not out has asked or is gone,
  /// or the round's window has passed.
  bool decided(Clock::time_point now) const;
  bool open() const { return closesAt_.has_value(); }

  /// Closes the round: returns the ranks that asked in it (to be answered) and
  /// fills `out` with every rank out, ascending.
  std::vector<int> close(std::vector<uint32_t>* out);
  /// Every rank out, ascending.
  std::vector<uint32_t> outRanks() const;
  /// Ranks that are not out.
  int survivors() const;

 private:
  std::vector<uint8_t> out_;    // out of the communicator, for good
  std::vector<uint8_t> gone_;   // disconnected or left
  std::vector<uint8_t> asked_;  // asked in the open round
  std::vector<uint8_t> named_;  // excluded by an asker in the open round
  std::optional<Clock::time_point> closesAt_;
};

}  // namespace loom
