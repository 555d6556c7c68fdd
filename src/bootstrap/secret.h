// The bootstrap's secret and job: random for loomGetUniqueId, or derived from
// texts every rank knows (LOOM_SECRET, the job key) when no id can be shipped.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace loom {

/// 16 bytes from getrandom (the kernel's CSPRNG).
std::array<uint8_t, 16> randomSecret();
/// The same 16 bytes on every rank for the same `text` (SHA-256 of it). Only
/// as secret as the text: a job key that other users can read (an MPI job id,
/// a Slurm job number) gives them the secret.
std::array<uint8_t, 16> derivedSecret(const std::string& text);
/// A random job tag, for a fresh unique id.
uint64_t randomJob();
/// The same job tag on every rank of the job named `jobKey`.
uint64_t derivedJob(const std::string& jobKey);
/// The secret of a communicator made from `parent`'s (split, shrink): a MAC
/// of a fresh public salt under the parent's secret, so the salt may cross
/// the network and only members of the parent can derive the child's secret.
/// `label` keeps secrets of different uses apart.
std::array<uint8_t, 16> childSecret(const std::array<uint8_t, 16>& parent, std::string_view label,
                                    std::span<const uint8_t> salt);
/// A job tag derived the same way.
uint64_t childJob(const std::array<uint8_t, 16>& parent, std::string_view label,
                  std::span<const uint8_t> salt);

}  // namespace loom
