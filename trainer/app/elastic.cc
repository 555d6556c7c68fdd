#include "app/elastic.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "app/grow_back.h"
#include "app/trainer.h"

namespace loom::train {
namespace {

/// A failure the survivors can go on from: a peer died, stalled or revoked.
bool peerFailure(const loom::Exception& e) {
  return e.result() == loomRemoteError || e.result() == loomRevoked;
}

/// The replicas (DP indices) all of whose ranks are among `alive` (world ranks
/// of the grid `shape`).
std::set<int> completeReplicas(const GridShape& shape, const std::vector<int>& alive) {
  std::set<int> complete;
  const std::set<int> living(alive.begin(), alive.end());
  for (int d = 0; d < shape.dp; ++d) {
    bool whole = true;
    for (int p = 0; p < shape.pp && whole; ++p) {
      for (int t = 0; t < shape.tp && whole; ++t) {
        whole = living.count(worldRankOf(shape, {d, t, p})) != 0;
      }
    }
    if (whole) complete.insert(d);
  }
  return complete;
}

/// Snapshots of the state at the start of the current step and the one
/// before: survivors may disagree by one step on how far they got (a peer can
/// finish the step's last collective before another sees the death).
struct StepStates {
  int step = -1;  // `current` is the state at the start of this step
  Trainer::Snapshot current;
  Trainer::Snapshot previous;

  void record(int at, Trainer::Snapshot s) {
    previous = std::move(current);
    current = std::move(s);
    step = at;
  }
  const Trainer::Snapshot& startOf(int at) const { return at == step ? current : previous; }
};

/// Who is left after a failure, and what this rank does about it.
struct Recovery {
  bool leave = false;  // this rank's replica lost a rank
  int redoStep = 0;
};

/// Shrinks `world` (ordered as the grid options.grid) to the ranks of complete
/// replicas (collective over the survivors) and agrees on the step to redo.
/// `done` is the steps this rank completed.
Recovery shrinkToCompleteReplicas(loom::Comm& world, TrainOptions& options, int done) {
  Recovery recovery;
  const int oldRank = world.rank();  // still answered by a revoked communicator
  loom::Comm survivors = world.shrink({}, LOOM_SHRINK_ABORT);
  std::vector<int32_t> mine = {oldRank};
  std::vector<int32_t> alive(static_cast<size_t>(survivors.size()));
  survivors.allGather(std::span<const int32_t>(mine), std::span<int32_t>(alive));
  const GridShape shape = options.grid;
  const std::set<int> complete = completeReplicas(shape, {alive.begin(), alive.end()});
  std::vector<int> leaving;  // ranks of `survivors` whose replica is broken
  for (int r = 0; r < survivors.size(); ++r) {
    if (complete.count(coordsOf(shape, alive[static_cast<size_t>(r)]).dp) == 0)
      leaving.push_back(r);
  }
  if (complete.count(coordsOf(shape, oldRank).dp) == 0) {
    recovery.leave = true;  // the others exclude this rank; it takes no part
    return recovery;
  }
  if (complete.empty()) {
    throw std::runtime_error("no data-parallel replica is complete any more");
  }
  world = leaving.empty() ? std::move(survivors) : survivors.shrink(leaving);
  const int perReplica = options.samplesPerRank();
  options.grid.dp = static_cast<int>(complete.size());
  options.batch = perReplica * options.grid.dp;
  // The step to redo: the first one not every survivor completed.
  std::vector<double> least = {static_cast<double>(done)};
  world.allReduce(std::span<double>(least), loomMin);
  recovery.redoStep = static_cast<int>(least[0]);
  return recovery;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// How long a rank waits to be taken back in: LOOM_TIMEOUT (seconds), else 300 s.
std::chrono::milliseconds growTimeout() {
  const char* text = std::getenv("LOOM_TIMEOUT");
  const double seconds = text != nullptr ? std::atof(text) : 0;
  return std::chrono::milliseconds(static_cast<int64_t>((seconds > 0 ? seconds : 300) * 1000));
}

/// Collective: how many waiting ranks join now (rank 0 looks; whole replicas
/// only, at most `missing` of them).
int ranksWaitingToJoin(const loom::Comm& world, const GrowChannel& channel, int perReplica,
                       int missing) {
  std::array<int32_t, 1> joiners = {0};
  if (world.rank() == 0) {
    const int replicas = std::min(static_cast<int>(channel.waiting().size()) / perReplica, missing);
    joiners[0] = replicas * perReplica;
  }
  world.broadcast(std::span<int32_t>(joiners), 0);
  return joiners[0];
}

/// Grows `world` by the first `joiners` waiting ranks and updates the grid.
/// False when a rank was lost on the way (a new one, or a member): then every
/// member keeps `world` as it was, and a later step may try again. The
/// members agree on the outcome over `world`, since a rank can see its part
/// of the grow succeed while another's failed. If a member died, that
/// agreement fails too, and the step's recovery (shrink) takes over.
bool growWithWaitingRanks(loom::Comm& world, const GrowChannel& channel, TrainOptions& options,
                          int step, int joiners) {
  std::vector<int> pids(static_cast<size_t>(joiners));
  if (world.rank() == 0) {
    pids = channel.waiting();
    pids.resize(static_cast<size_t>(joiners));
  }
  std::optional<loom::Comm> grown;
  try {
    grown = growAsMember(world, channel, pids, options.grid, step);
  } catch (const loom::Exception& e) {
    if (!peerFailure(e)) throw;
    std::fprintf(stderr, "loom-train: rank %d: growing back at step %d failed (%s)\n", world.rank(),
                 step, e.what());
    std::fflush(stderr);
  }
  std::array<int32_t, 1> everywhere = {grown ? 1 : 0};
  world.allReduce(std::span<int32_t>(everywhere), loomMin);
  if (everywhere[0] == 0) return false;
  world = std::move(*grown);
  options.grid.dp += joiners / (options.grid.tp * options.grid.pp);
  return true;
}

/// The replacement SIGKILLs itself as it joins, once per job: the marker in
/// the grow directory keeps its own replacement alive.
void dieOnceAsJoiner(const std::string& growDirectory) {
  const std::string marker = growDirectory + "/killed-joiner";
  if (::access(marker.c_str(), F_OK) == 0) return;
  std::fclose(std::fopen(marker.c_str(), "w"));
  ::kill(::getpid(), SIGKILL);
}

/// Collective: every rank takes the state of replica 0's rank at its place
/// in the grid (the members' copies are alike; new ranks have none yet).
/// `mine` is a member's state, nullptr on a new rank.
void shareReplicaState(const loom::Comm& world, const GridShape& shape, Trainer& trainer,
                       const Trainer::Snapshot* mine) {
  const GridCoords coords = coordsOf(shape, world.rank());
  const loom::Comm replicas = world.split(coords.tp + shape.tp * coords.pp, coords.dp);
  Trainer::Snapshot state = mine != nullptr ? *mine : trainer.snapshot();
  replicas.broadcast(std::span<float>(state.params), 0);
  replicas.broadcast(std::span<float>(state.optimizer.m), 0);
  replicas.broadcast(std::span<float>(state.optimizer.v), 0);
  replicas.broadcast(std::span<uint32_t>(state.optimizer.held), 0);
  std::array<int32_t, 1> steps = {state.optimizer.steps};
  replicas.broadcast(std::span<int32_t>(steps), 0);
  state.optimizer.steps = steps[0];
  trainer.restore(state);
}

}  // namespace

InjectedFault injectedFault() {
  InjectedFault fault;
  const char* text = std::getenv("LOOM_TRAIN_KILL");
  if (text == nullptr) return fault;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item == "joiner") {
      fault.joiner = true;
    } else if (std::sscanf(item.c_str(), "%d:%d", &fault.rank, &fault.step) != 2) {
      fault.rank = fault.step = -1;
    }
  }
  return fault;
}

bool runElasticTraining(loom::Comm& world, TrainOptions options, const Corpus& corpus,
                        const ElasticCallbacks& callbacks, bool joining) {
  const GrowChannel channel(growDirectory());
  const int startingDp = options.grid.dp;  // the command line's: what growing restores
  const int samplesPerReplica = options.samplesPerRank();
  const int ranksPerReplica = options.grid.tp * options.grid.pp;
  const InjectedFault fault = injectedFault();
  const int startRank = joining ? -1 : world.rank();  // -1: a replacement
  // A replacement's LOOM_RANK is the dead rank's: that rank's fault is not its own.
  const bool diesAtFaultStep = !joining && startRank == fault.rank;
  int step = 0;
  std::unique_ptr<Trainer> trainer;
  const std::function<void()> joinedHook = [&] {
    if (fault.joiner) dieOnceAsJoiner(channel.directory());
  };
  // Waits to be taken into the world, then takes replica 0's state. False
  // when the others finished without it. A grow that fails on the way (a
  // rank lost: the members go on without this one) sends it back to waiting.
  const auto waitToBeTakenIn = [&] {
    const auto joinedAt = std::chrono::steady_clock::now();
    for (;;) {
      try {
        std::optional<loom::Comm> joined =
            joinAsNewRank(channel, options.grid, step, growTimeout(), joinedHook);
        if (!joined) return false;
        world = std::move(*joined);
        options.batch = samplesPerReplica * options.grid.dp;
        trainer = std::make_unique<Trainer>(world.get(), options, corpus);
        shareReplicaState(world, options.grid, *trainer, nullptr);
        break;
      } catch (const loom::Exception& e) {
        if (!peerFailure(e)) throw;
        std::fprintf(stderr, "loom-train: pid %d: being taken in failed (%s); waiting again\n",
                     static_cast<int>(::getpid()), e.what());
        std::fflush(stderr);
        trainer.reset();
        world = loom::Comm();
      }
    }
    if (callbacks.onGrown)
      callbacks.onGrown(step, world.size(), options.grid.dp, secondsSince(joinedAt), false);
    return true;
  };
  if (joining) {
    if (!waitToBeTakenIn()) return false;
  } else {
    trainer = std::make_unique<Trainer>(world.get(), options, corpus);
    if (callbacks.onStart) callbacks.onStart(*trainer, startRank == 0);
  }
  StepStates states;
  while (step < options.steps) {
    if (states.step != step) states.record(step, trainer->snapshot());
    try {
      if (channel.enabled() && options.grid.dp < startingDp) {
        const int joiners =
            ranksWaitingToJoin(world, channel, ranksPerReplica, startingDp - options.grid.dp);
        if (joiners > 0) {
          const auto grewAt = std::chrono::steady_clock::now();
          trainer.reset();
          const bool grew = growWithWaitingRanks(world, channel, options, step, joiners);
          options.batch = samplesPerReplica * options.grid.dp;
          trainer = std::make_unique<Trainer>(world.get(), options, corpus);
          if (grew) {
            shareReplicaState(world, options.grid, *trainer, &states.current);
            states = {};
            states.record(step, trainer->snapshot());
            if (callbacks.onGrown) {
              callbacks.onGrown(step, world.size(), options.grid.dp, secondsSince(grewAt),
                                world.rank() == 0);
            }
          } else {
            // The world as it was, from the step's start.
            trainer->restore(states.current);
            if (callbacks.onGrowFailed) {
              callbacks.onGrowFailed(step, world.size(), options.grid.dp, world.rank() == 0);
            }
          }
        }
      }
      if (diesAtFaultStep && step == fault.step) ::kill(::getpid(), SIGKILL);
      const StepStats stats = trainer->step(step);
      callbacks.onStep(stats, world.rank() == 0);
      ++step;
      continue;
    } catch (const loom::Exception& e) {
      // The trainer is null only while growing: a member lost then.
      if (!peerFailure(e)) throw;
      std::fprintf(stderr, "loom-train: rank %d: step %d failed (%s); recovering\n", startRank,
                   step, e.what());
      std::fflush(stderr);
    }
    const auto failedAt = std::chrono::steady_clock::now();
    if (trainer != nullptr) trainer->revokeAll();
    trainer.reset();
    const Recovery recovery = shrinkToCompleteReplicas(world, options, step);
    if (recovery.leave) {
      // Its replica is gone: under loomrun --respawn it waits to be taken
      // back in with the replacement of the rank that died; else it leaves.
      if (!channel.enabled()) return false;
      std::fprintf(stderr, "loom-train: rank %d: its replica lost a rank; waiting to rejoin\n",
                   startRank);
      std::fflush(stderr);
      world = loom::Comm();
      if (!waitToBeTakenIn()) return false;
      states = {};
      continue;
    }
    // Survivors are at most one step apart: the redo step is this one or the one before.
    if (recovery.redoStep != step && recovery.redoStep != step - 1) {
      throw std::runtime_error("survivors disagree on the step to redo");
    }
    trainer = std::make_unique<Trainer>(world.get(), options, corpus);
    trainer->restore(states.startOf(recovery.redoStep));
    step = recovery.redoStep;
    states = {};
    if (callbacks.onRecovered) {
      callbacks.onRecovered(step, world.size(), options.grid.dp, secondsSince(failedAt),
                            world.rank() == 0);
    }
  }
  if (channel.enabled() && world.rank() == 0) channel.close();
  return true;
}

}  // namespace loom::train
