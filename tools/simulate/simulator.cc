// The simulation engine. Each rank's job is run by cursors that follow the
// executor's rules: a step is cut into slices of sliceElements, slice i of
// every step of a cursor runs before slice i+1, steps with nothing left in an
// iteration are skipped, and a (step, slice) is atomic: it runs only when its
// message has arrived and its outgoing link has room. Cursors take turns, one
// (step, slice) per round each, which makes the round count a latency
// estimate; a round in which nothing moves is a deadlock.
#include "tools/simulate/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>

#include "collectives/executor/slice_cursor.h"
#include "core/error.h"

namespace loom {
namespace {

double combine(ReduceOp op, double a, double b) {
  // NaN marks never-written output; make sure it survives max/min.
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return a + b;
    case ReduceOp::Prod:
      return a * b;
    case ReduceOp::Max:
      return std::max(a, b);
    case ReduceOp::Min:
      return std::min(a, b);
  }
  return a;
}

struct Message {
  std::vector<double> data;
  size_t visibleRound = 0;
  const Step* step = nullptr;  // the sender's step, for error messages
};

// A directed link; with independent streams each stream has its own.
struct LinkKey {
  int from;
  int to;
  int stream;
  // clang-tidy 14 reads the defaulted <=> as a literal 0 compared with a pointer.
  auto operator<=>(const LinkKey&) const = default;  // NOLINT(modernize-use-nullptr)
};

struct Cursor : SliceCursor {
  int rank = 0;
  size_t job = 0;
  int stream = -1;  // -1: all streams of the job, merged
  std::vector<int> streamOf;
};

class Simulation {
 public:
  Simulation(std::vector<std::vector<SimJob>>& jobs, const SimOptions& options)
      : jobs_(jobs), options_(options), nranks_(static_cast<int>(jobs.size())) {
    if (options.sliceElements == 0 || options.fifoDepth == 0) {
      raise(ErrorCode::InvalidArgument,
            "simulation needs slice >= 1 and FIFO depth >= 1, got {}/{}", options.sliceElements,
            options.fifoDepth);
    }
    stats_.messagesSent.assign(jobs.size(), 0);
    stats_.elementsSent.assign(jobs.size(), 0);
    scratch_.resize(jobs.size());
    for (int r = 0; r < nranks_; ++r) {
      size_t steps = 0;
      for (size_t j = 0; j < jobs[r].size(); ++j) {
        const RankPlan& plan = jobs[r][j].plan;
        scratch_[r].emplace_back(plan.scratchElements, std::nan(""));
        checkBuffers(r, jobs[r][j].buffers);
        for (const auto& stream : plan.streams) steps += stream.size();
        addCursors(r, j, plan);
      }
      stats_.maxSteps = std::max(stats_.maxSteps, steps);
    }
  }

  SimStats run() {
    for (;;) {
      bool allDone = true;
      bool moved = false;
      for (Cursor& c : cursors_) {
        c.skipEmpty();
        if (c.done()) continue;
        allDone = false;
        if (tryStep(c)) {
          moved = true;
          c.advance();
          c.skipEmpty();
        }
      }
      if (allDone) break;
      ++round_;
      if (!moved) raise(ErrorCode::InternalError, "simulated plans deadlock: {}", describeWaits());
    }
    for (const auto& [id, queue] : links_) {
      if (!queue.empty()) {
        raise(ErrorCode::InternalError,
              "{} message(s) from rank {} to rank {} (stream/channel {}) never received",
              queue.size(), id.from, id.to, id.stream);
      }
    }
    stats_.rounds = round_;
    return stats_;
  }

 private:
  void checkBuffers(int rank, const SimBuffers& b) const {
    if (b.inputOffset + b.inputElements > b.memory.size() ||
        b.outputOffset + b.outputElements > b.memory.size()) {
      raise(ErrorCode::InvalidArgument, "rank {}: input/output ranges exceed its {} elements", rank,
            b.memory.size());
    }
  }

  void addCursors(int rank, size_t job, const RankPlan& plan) {
    // channel -1: steps of every channel (independent streams each stay on theirs).
    auto make = [&](int stream, int channel) {
      Cursor c;
      c.rank = rank;
      c.job = job;
      c.stream = stream;
      c.sliceElements = options_.sliceElements;
      for (size_t s = 0; s < plan.streams.size(); ++s) {
        if (stream >= 0 && static_cast<size_t>(stream) != s) continue;
        for (const Step& step : plan.streams[s]) {
          if (channel >= 0 && step.channel != channel) continue;
          c.add(step);
          c.streamOf.push_back(static_cast<int>(s));
        }
      }
      if (!c.steps.empty()) cursors_.push_back(std::move(c));
    };
    if (options_.streamOrder == SimStreamOrder::Merged) {
      std::set<int> channels;
      for (const auto& stream : plan.streams) {
        for (const Step& step : stream) channels.insert(step.channel);
      }
      for (int channel : channels) make(-1, channel);
    } else {
      for (size_t s = 0; s < plan.streams.size(); ++s) make(static_cast<int>(s), -1);
    }
  }

  std::string where(const Cursor& c) const {
    const Step& s = *c.steps[c.stepIndex];
    return fmt::format("rank {} job {} stream {} step {} {} slice {}", c.rank, c.job,
                       c.streamOf[c.stepIndex], c.stepIndex, toString(s), c.iteration);
  }

  void checkPeer(const Cursor& c, int peer) const {
    if (peer < 0 || peer >= nranks_) {
      raise(ErrorCode::InternalError, "{} names peer {} of {} ranks", where(c), peer, nranks_);
    }
  }

  LinkKey key(const Cursor& c, int from, int to) const {
    const bool perStream = options_.streamOrder == SimStreamOrder::Independent;
    return LinkKey{from, to, perStream ? c.streamOf[c.stepIndex] : c.steps[c.stepIndex]->channel};
  }

  std::deque<Message>& link(const Cursor& c, int from, int to) { return links_[key(c, from, to)]; }

  const std::deque<Message>* findLink(const Cursor& c, int from, int to) const {
    auto it = links_.find(key(c, from, to));
    return it == links_.end() ? nullptr : &it->second;
  }

  double* at(const Cursor& c, BufferRef ref, size_t count, bool write) {
    SimBuffers& b = jobs_[c.rank][c.job].buffers;
    const size_t begin = ref.offset + c.first();
    auto check = [&](size_t size, const char* name) {
      if (begin + count > size) {
        raise(ErrorCode::InternalError, "{} touches {}[{}, {}) of {} elements", where(c), name,
              begin, begin + count, size);
      }
    };
    switch (ref.buffer) {
      case BufferId::Input:
        if (write) raise(ErrorCode::InternalError, "{} writes into the input", where(c));
        check(b.inputElements, "input");
        return b.memory.data() + b.inputOffset + begin;
      case BufferId::Output:
        check(b.outputElements, "output");
        return b.memory.data() + b.outputOffset + begin;
      case BufferId::Scratch: {
        auto& scratch = scratch_[c.rank][c.job];
        check(scratch.size(), "scratch");
        return scratch.data() + begin;
      }
    }
    return nullptr;
  }

  bool tryStep(Cursor& c) {
    const Step& s = *c.steps[c.stepIndex];
    const size_t count = c.sliceCount(s);
    std::deque<Message>* in = nullptr;
    std::deque<Message>* out = nullptr;
    if (stepReceives(s.kind)) {
      checkPeer(c, s.recvPeer);
      in = &link(c, s.recvPeer, c.rank);
      if (in->empty() || in->front().visibleRound > round_) return false;
      const Message& m = in->front();
      if (m.data.size() != count) {
        raise(ErrorCode::InternalError,
              "{} expects {} elements but the message from rank {} ({}) has {}", where(c), count,
              s.recvPeer, toString(*m.step), m.data.size());
      }
    }
    if (stepSends(s.kind)) {
      checkPeer(c, s.sendPeer);
      out = &link(c, c.rank, s.sendPeer);
      if (out->size() >= options_.fifoDepth) return false;
    }

    // Read every operand before writing, so aliased src/dst behave like the
    // executor's element-wise kernels.
    std::vector<double> value;
    const std::vector<double>* received = in != nullptr ? &in->front().data : nullptr;
    switch (s.kind) {
      case StepKind::Copy:
      case StepKind::Send: {
        const double* src = at(c, s.src, count, false);
        value.assign(src, src + count);
        break;
      }
      case StepKind::Recv:
      case StepKind::RecvCopySend:
        value = *received;
        break;
      case StepKind::RecvReduce:
      case StepKind::RecvReduceSend:
      case StepKind::RecvReduceCopySend: {
        const double* src = at(c, s.src, count, false);
        value.resize(count);
        for (size_t i = 0; i < count; ++i) value[i] = combine(options_.op, src[i], (*received)[i]);
        if (s.finalize && options_.op == ReduceOp::Avg) {
          for (double& v : value) v /= nranks_;
        }
        break;
      }
    }
    if (s.kind != StepKind::Send && s.kind != StepKind::RecvReduceSend) {
      std::copy(value.begin(), value.end(), at(c, s.dst, count, true));
    }
    if (in != nullptr) in->pop_front();
    if (out != nullptr) {
      stats_.messagesSent[c.rank] += 1;
      stats_.elementsSent[c.rank] += count;
      out->push_back(Message{std::move(value), round_ + 1, &s});
    }
    return true;
  }

  std::string describeWaits() const {
    std::string text;
    int shown = 0;
    for (const Cursor& c : cursors_) {
      if (c.done()) continue;
      if (++shown > 8) {
        text += "; ...";
        break;
      }
      const Step& s = *c.steps[c.stepIndex];
      if (!text.empty()) text += "; ";
      text += where(c);
      const std::deque<Message>* in =
          stepReceives(s.kind) ? findLink(c, s.recvPeer, c.rank) : nullptr;
      if (stepReceives(s.kind) && (in == nullptr || in->empty())) {
        text += fmt::format(" waits for data from rank {}", s.recvPeer);
      } else if (stepSends(s.kind)) {
        text += fmt::format(" waits for room on link {}->{}", c.rank, s.sendPeer);
      }
    }
    return text;
  }

  std::vector<std::vector<SimJob>>& jobs_;
  const SimOptions& options_;
  int nranks_;
  std::vector<std::vector<std::vector<double>>> scratch_;  // [rank][job]
  // Created on first use, so thousands of simulated ranks do not allocate
  // nranks^2 queues.
  std::map<LinkKey, std::deque<Message>> links_;
  std::vector<Cursor> cursors_;
  SimStats stats_;
  size_t round_ = 0;
};

}  // namespace

SimStats simulatePlans(std::vector<std::vector<SimJob>>& jobs, const SimOptions& options) {
  Simulation simulation(jobs, options);
  return simulation.run();
}

}  // namespace loom
