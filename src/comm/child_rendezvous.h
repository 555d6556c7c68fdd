// A rendezvous for a communicator made from a live one (split, grow): one
// member starts it, and the others learn it over the parent's bootstrap as an
// "offer": a fresh salt and the id without its secret. The parent's bootstrap
// is authenticated but not encrypted, so the secret never crosses it: every
// member derives it from the parent's secret and the salt, which alone tells
// an eavesdropper nothing.
#pragma once

#include <string>
#include <string_view>

#include "bootstrap/unique_id.h"
#include "comm/comm.h"

namespace loom {

struct ChildRendezvous {
  UniqueId id;        ///< secret included
  std::string offer;  ///< what the other members are told (no secret)
};

/// Starts the rendezvous where `parent`'s links listen (loopback for a job on
/// one host, else the interface that reaches its peers). `label` keeps the
/// secrets of different uses apart.
ChildRendezvous startChildRendezvous(const Comm& parent, std::string_view label);

/// The id `offer` (sent by rank `from`) describes, secret derived. Throws
/// InternalError for a malformed offer.
UniqueId childIdFromOffer(const Comm& parent, std::string_view label, const std::string& offer,
                          int from);

/// The deadline every wait of a communicator made from `parent` keeps.
CommOverrides inheritedOverrides(const Comm& parent);

}  // namespace loom
