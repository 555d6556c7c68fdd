// loom-train --elastic under `loomrun --respawn`: growing a shrunk world back
// to its starting size. Ranks that wait to join (replacements, started with
// LOOM_REPLACEMENT=1, and ranks whose replica broke) announce themselves in
// the launcher's directory LOOM_GROW_DIR as "waiting.<pid>". At the start of
// every step the world's rank 0 counts them; once a whole replica's worth
// (tp x pp ranks) waits while the world is below its starting data-parallel
// size, rank 0 publishes a grow id and the chosen pids in a "grow.*" file, the
// members grow the world (loomCommGrow) and the chosen ranks join it as the
// ranks above. The grown world is then reordered so that the new ranks form
// new replicas of the grid.
#pragma once

#include <chrono>
#include <functional>
#include <loom/loom.hpp>
#include <optional>
#include <string>
#include <vector>

#include "parallel/grid.h"

namespace loom::train {

/// LOOM_GROW_DIR, or empty when not running under `loomrun --respawn`.
std::string growDirectory();
/// Whether this process was started as a replacement (LOOM_REPLACEMENT=1).
bool startedAsReplacement();

/// Who joins the grown world where: pids[i] becomes rank firstNewRank + i.
struct GrowPlan {
  int nranks = 0;
  int firstNewRank = 0;
  std::vector<int> pids;
  loomUniqueId id{};
};

/// The files in the meeting directory.
class GrowChannel {
 public:
  explicit GrowChannel(std::string directory) : directory_(std::move(directory)) {}
  bool enabled() const { return !directory_.empty(); }
  const std::string& directory() const { return directory_; }

  /// The pids waiting to join, in the order they announced themselves. A
  /// process that died waiting (or while it was being taken in) is dropped,
  /// and its file removed, so that a grow never waits for it.
  std::vector<int> waiting() const;
  /// Writes `plan` (atomically: a reader never sees half of it) and removes
  /// the chosen ranks' waiting files.
  void publish(const GrowPlan& plan) const;
  /// Announces this process and waits until a plan names it (nullopt once
  /// the members finished training: close()); throws std::runtime_error
  /// after `timeout`.
  std::optional<GrowPlan> awaitPlan(std::chrono::milliseconds timeout) const;
  /// The members are done: ranks still waiting give up at once.
  void close() const;

 private:
  std::string directory_;
};

/// Members, at a step boundary (collective over `world`): grows the world by
/// `pids`, which must be a whole number of replicas, and returns it ordered as
/// the grid `before` with the new replicas added (dp + pids / (tp x pp)).
loom::Comm growAsMember(const loom::Comm& world, const GrowChannel& channel,
                        const std::vector<int>& pids, const GridShape& before, int step);

/// A waiting rank: joins the world a plan names it in. Returns the world
/// ordered as the grid, and sets `shape` (its dp) and `step` from the
/// members; nullopt when the members finished without taking it in.
/// `joined` runs once the grown communicator exists, before this rank's
/// first call on it (the elastic tests' fault injection).
std::optional<loom::Comm> joinAsNewRank(const GrowChannel& channel, GridShape& shape, int& step,
                                        std::chrono::milliseconds timeout,
                                        const std::function<void()>& joined = {});

}  // namespace loom::train
