// Real TCP links between ranks that are threads of the test, all to all.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "transports/tcp/tcp_transport.h"

namespace loom {

using Links = std::vector<std::unique_ptr<Link>>;

/// Connects `nranks` ranks (threads) all-to-all; links[r] holds rank r's links
/// to every other rank in rank order. tags[r] is rank r's commTag, keys[r]
/// its link key (empty: one shared key). Failures go to `errors` when given,
/// else they fail the test.
std::vector<Links> connectAll(int nranks, const TcpConfig& config, std::vector<uint64_t> tags,
                              std::vector<std::string>* errors = nullptr,
                              std::chrono::milliseconds timeout = std::chrono::seconds(5),
                              const std::vector<Digest>& keys = {});

/// The key every rank of connectAll shares unless told otherwise.
Digest sharedTestKey();

}  // namespace loom
