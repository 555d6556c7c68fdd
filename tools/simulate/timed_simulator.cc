// Discrete-event engine. Cursors are processed in time order from a min-heap;
// a cursor that cannot run yet either moves its clock to the moment it can
// (message arrives, link frees) and goes back into the heap, or parks on the
// FIFO it waits for until the peer acts. Processing in time order is what
// makes a link's messages leave in the order they were ready.
#include "tools/simulate/timed_simulator.h"

#include <algorithm>
#include <deque>
#include <queue>
#include <unordered_map>

#include "collectives/executor/slice_cursor.h"
#include "core/error.h"

namespace loom {
namespace {

struct Fifo {
  std::deque<double> arrivals;  // messages sent, not yet received
  int waitingReceiver = -1;     // cursor parked until a message is sent
  int waitingSender = -1;       // cursor parked until a message is received
};

struct Cursor : SliceCursor {
  int rank = 0;
  int channel = 0;
  int stream = 0;  // FIFO namespace: 0 when streams are merged
  double clock = 0.0;
};

class Engine {
 public:
  Engine(const std::vector<std::vector<TimedJob>>& jobs, const LinkCostFn& costs,
         const TimedSimOptions& options)
      : costs_(costs), options_(options), nranks_(static_cast<int>(jobs.size())) {
    if (options.elementBytes == 0 || options.sliceBytes < options.elementBytes ||
        options.fifoDepth == 0) {
      raise(ErrorCode::InvalidArgument,
            "timed simulation needs element >= 1 byte, slice >= element, FIFO depth >= 1; got "
            "{}/{}/{}",
            options.elementBytes, options.sliceBytes, options.fifoDepth);
    }
    for (int r = 0; r < nranks_; ++r) {
      for (const TimedJob& job : jobs[r]) addCursors(r, job);
    }
  }

  TimedResult run() {
    for (size_t id = 0; id < cursors_.size(); ++id) schedule(static_cast<int>(id));
    while (!heap_.empty()) {
      const int id = heap_.top().second;
      heap_.pop();
      ++result_.events;
      step(id);
    }
    for (const Cursor& c : cursors_) {
      if (!c.done()) {
        raise(ErrorCode::InternalError, "timed simulation deadlocks: {}", describeWaits());
      }
    }
    return result_;
  }

 private:
  void addCursors(int rank, const TimedJob& job) {
    auto make = [&](int stream) {
      Cursor c;
      c.rank = rank;
      c.channel = job.channel;
      c.stream = stream < 0 ? 0 : stream;
      c.sliceElements = std::max<size_t>(1, options_.sliceBytes / options_.elementBytes);
      for (size_t s = 0; s < job.plan.streams.size(); ++s) {
        if (stream >= 0 && static_cast<size_t>(stream) != s) continue;
        for (const Step& step : job.plan.streams[s]) c.add(step);
      }
      if (!c.steps.empty()) cursors_.push_back(std::move(c));
    };
    if (options_.streamOrder == SimStreamOrder::Merged) {
      make(-1);
    } else {
      for (size_t s = 0; s < job.plan.streams.size(); ++s) make(static_cast<int>(s));
    }
  }

  // Channel, stream and the pair in one key; FIFOs and links are created on
  // first use so thousands of ranks do not allocate nranks^2 of them.
  uint64_t key(const Cursor& c, int from, int to, bool perStream) const {
    const uint64_t pair =
        static_cast<uint64_t>(from) * static_cast<uint64_t>(nranks_) + static_cast<uint64_t>(to);
    const uint64_t stream = perStream ? static_cast<uint64_t>(c.stream) : 0;
    return ((pair << 16 | static_cast<uint64_t>(c.channel & 0xffff)) << 16) | (stream & 0xffff);
  }
  Fifo& fifo(const Cursor& c, int from, int to) { return fifos_[key(c, from, to, true)]; }
  double& linkFree(const Cursor& c, int to) { return links_[key(c, c.rank, to, false)]; }

  void schedule(int id) { heap_.push({cursors_[id].clock, id}); }
  void wake(int& parked, double at) {
    if (parked < 0) return;
    Cursor& c = cursors_[parked];
    c.clock = std::max(c.clock, at);
    schedule(parked);
    parked = -1;
  }

  void checkPeer(const Cursor& c, int peer) const {
    if (peer < 0 || peer >= nranks_) {
      raise(ErrorCode::InternalError, "rank {} step names peer {} of {} ranks", c.rank, peer,
            nranks_);
    }
  }

  void step(int id) {
    Cursor& c = cursors_[id];
    c.skipEmpty();
    if (c.done()) {
      result_.microseconds = std::max(result_.microseconds, c.clock);
      return;
    }
    const Step& s = *c.steps[c.stepIndex];
    const double now = c.clock;
    Fifo* in = nullptr;
    if (stepReceives(s.kind)) {
      checkPeer(c, s.recvPeer);
      in = &fifo(c, s.recvPeer, c.rank);
      if (in->arrivals.empty()) {
        in->waitingReceiver = id;
        return;
      }
      if (in->arrivals.front() > now) {
        c.clock = in->arrivals.front();
        schedule(id);
        return;
      }
    }
    if (stepSends(s.kind)) {
      checkPeer(c, s.sendPeer);
      Fifo& out = fifo(c, c.rank, s.sendPeer);
      if (out.arrivals.size() >= options_.fifoDepth) {
        out.waitingSender = id;
        return;
      }
      const double free = linkFree(c, s.sendPeer);
      if (free > now) {
        c.clock = free;
        schedule(id);
        return;
      }
    }
    // Runs now: take the message, then send.
    if (in != nullptr) {
      in->arrivals.pop_front();
      wake(in->waitingSender, now);
    }
    if (stepSends(s.kind)) send(c, s, now);
    c.advance();
    schedule(id);
  }

  void send(Cursor& c, const Step& s, double now) {
    const LinkCost cost = costs_(c.channel, c.rank, s.sendPeer);
    if (!(cost.bandwidth > 0) || !(cost.latency >= 0)) {
      raise(ErrorCode::InvalidArgument,
            "link {} -> {} (channel {}) has bandwidth {} GB/s and latency {} us", c.rank,
            s.sendPeer, c.channel, cost.bandwidth, cost.latency);
    }
    const double bytes = static_cast<double>(c.sliceCount(s) * options_.elementBytes);
    const double busy = bytes / (cost.bandwidth * 1e3);
    linkFree(c, s.sendPeer) = now + busy;
    Fifo& out = fifo(c, c.rank, s.sendPeer);
    out.arrivals.push_back(now + busy + cost.latency);
    ++result_.messages;
    c.clock = now + busy;
    wake(out.waitingReceiver, now);
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
      text += fmt::format("{}rank {} channel {} step {} ({}) slice {}", text.empty() ? "" : "; ",
                          c.rank, c.channel, c.stepIndex, toString(s), c.iteration);
    }
    return text;
  }

  const LinkCostFn& costs_;
  const TimedSimOptions& options_;
  int nranks_;
  std::vector<Cursor> cursors_;
  std::unordered_map<uint64_t, Fifo> fifos_;
  std::unordered_map<uint64_t, double> links_;
  std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>, std::greater<>>
      heap_;
  TimedResult result_;
};

}  // namespace

TimedResult simulateTime(const std::vector<std::vector<TimedJob>>& jobs, const LinkCostFn& costs,
                         const TimedSimOptions& options) {
  return Engine(jobs, costs, options).run();
}

}  // namespace loom
