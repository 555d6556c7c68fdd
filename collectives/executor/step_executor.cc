#include "collectives/executor/step_executor.h"

#include <algorithm>
#include <cstring>

#include "collectives/executor/slice_cursor.h"
#include "core/error.h"

namespace loom {

// Steps of all streams, concatenated.
struct StepExecutor::Cursor : SliceCursor {
  const PlanJob* job = nullptr;
};

StepExecutor::StepExecutor(std::span<const std::vector<Link*>> channelLinks, size_t sliceBytes,
                           Waiter& waiter)
    : channels_(channelLinks), sliceBytes_(sliceBytes), waiter_(waiter) {}

Link* StepExecutor::link(int peer, const Step& step) const {
  if (step.channel >= channels_.size()) {
    raise(ErrorCode::InternalError, "plan step {} runs on channel {} of {}", toString(step),
          step.channel, channels_.size());
  }
  const std::vector<Link*>& links = channels_[step.channel];
  if (peer < 0 || static_cast<size_t>(peer) >= links.size() || links[peer] == nullptr) {
    raise(ErrorCode::InternalError, "plan step {} names rank {} which has no link", toString(step),
          peer);
  }
  return links[peer];
}

namespace {

const char* bufferAt(const PlanBuffers& b, BufferRef ref, size_t elementSize) {
  switch (ref.buffer) {
    case BufferId::Input:
      return b.input + ref.offset * elementSize;
    case BufferId::Output:
      return b.output + ref.offset * elementSize;
    case BufferId::Scratch:
      return b.scratch + ref.offset * elementSize;
  }
  return nullptr;
}

char* mutableBufferAt(const PlanBuffers& b, BufferRef ref, size_t elementSize) {
  if (ref.buffer == BufferId::Input) {
    raise(ErrorCode::InternalError, "plan writes into the input buffer");
  }
  return const_cast<char*>(bufferAt(b, ref, elementSize));
}

void copyBytes(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
}

}  // namespace

bool StepExecutor::tryStep(const PlanJob& job, const Step& step, size_t first, size_t count) {
  const size_t es = job.elementSize;
  const size_t bytes = count * es;
  BufferRef src = step.src;
  BufferRef dst = step.dst;
  src.offset += first;
  dst.offset += first;
  const ReduceContext& rc = job.reduce;
  auto finalize = [&](void* data) {
    if (step.finalize && rc.finalize != nullptr) rc.finalize(data, count, rc.nranks);
  };

  switch (step.kind) {
    case StepKind::Copy:
      copyBytes(mutableBufferAt(job.buffers, dst, es), bufferAt(job.buffers, src, es), bytes);
      return true;
    case StepKind::Send: {
      Link* out = link(step.sendPeer, step);
      void* slot = out->trySendSlot(bytes);
      if (slot == nullptr) return false;
      std::memcpy(slot, bufferAt(job.buffers, src, es), bytes);
      out->stampSends(job.stamp);
      out->commitSend(bytes);
      bytesSent_ += bytes;
      return true;
    }
    case StepKind::Recv:
    case StepKind::RecvReduce: {
      Link* in = link(step.recvPeer, step);
      in->expectStamp(job.stamp);
      const void* data = in->tryRecv(bytes);
      if (data == nullptr) return false;
      char* target = mutableBufferAt(job.buffers, dst, es);
      if (step.kind == StepKind::Recv) {
        std::memcpy(target, data, bytes);
      } else {
        rc.reduce(target, bufferAt(job.buffers, src, es), data, count);
        finalize(target);
      }
      in->releaseRecv();
      return true;
    }
    case StepKind::RecvReduceSend:
    case StepKind::RecvReduceCopySend:
    case StepKind::RecvCopySend: {
      Link* in = link(step.recvPeer, step);
      Link* out = link(step.sendPeer, step);
      in->expectStamp(job.stamp);
      const void* data = in->tryRecv(bytes);
      if (data == nullptr) return false;
      auto* slot = static_cast<char*>(out->trySendSlot(bytes));
      if (slot == nullptr) return false;
      if (step.kind == StepKind::RecvReduceSend) {
        rc.reduce(slot, bufferAt(job.buffers, src, es), data, count);
        finalize(slot);
      } else if (step.kind == StepKind::RecvReduceCopySend) {
        char* target = mutableBufferAt(job.buffers, dst, es);
        rc.reduce(target, bufferAt(job.buffers, src, es), data, count);
        finalize(target);
        std::memcpy(slot, target, bytes);
      } else {
        std::memcpy(mutableBufferAt(job.buffers, dst, es), data, bytes);
        std::memcpy(slot, data, bytes);
      }
      out->stampSends(job.stamp);
      out->commitSend(bytes);
      bytesSent_ += bytes;
      in->releaseRecv();
      return true;
    }
  }
  return false;
}

bool StepExecutor::attempt(Cursor& c) {
  bool moved = false;
  c.skipEmpty();
  while (!c.done()) {
    const Step& step = *c.steps[c.stepIndex];
    if (!tryStep(*c.job, step, c.iteration * c.sliceElements, c.sliceCount(step))) break;
    moved = true;
    c.advance();
    c.skipEmpty();
  }
  return moved;
}

std::string StepExecutor::describeWaits(std::span<const Cursor> cursors) const {
  std::string out;
  for (const Cursor& c : cursors) {
    if (c.done()) continue;
    const Step& s = *c.steps[c.stepIndex];
    if (!out.empty()) out += "; ";
    const bool receives = s.kind != StepKind::Send && s.kind != StepKind::Copy;
    const bool sends =
        s.kind != StepKind::Recv && s.kind != StepKind::RecvReduce && s.kind != StepKind::Copy;
    if (receives) out += fmt::format("data from rank {}", s.recvPeer);
    if (receives && sends) out += " or ";
    if (sends) out += fmt::format("room to send to rank {}", s.sendPeer);
    out += fmt::format(" (step {} of {}, slice {} of {})", c.stepIndex, c.steps.size(), c.iteration,
                       c.iterations);
  }
  return out.empty() ? "network sends to drain" : out;
}

void StepExecutor::run(std::span<const PlanJob> jobs) {
  std::vector<Cursor> cursors;
  for (const PlanJob& job : jobs) {
    // One cursor per channel the plan uses (streams name one channel each).
    const size_t first = cursors.size();
    for (const auto& stream : job.plan->streams) {
      if (stream.empty()) continue;
      const uint8_t channel = stream.front().channel;
      auto it = std::find_if(cursors.begin() + static_cast<ptrdiff_t>(first), cursors.end(),
                             [&](const Cursor& c) { return c.steps.front()->channel == channel; });
      if (it == cursors.end()) {
        Cursor c;
        c.job = &job;
        c.sliceElements = std::max<size_t>(1, sliceBytes_ / job.elementSize);
        cursors.push_back(std::move(c));
        it = cursors.end() - 1;
      }
      for (const Step& s : stream) it->add(s);
    }
  }

  auto allDone = [&] {
    return std::all_of(cursors.begin(), cursors.end(), [](const Cursor& c) { return c.done(); });
  };
  auto describe = [&] { return describeWaits(cursors); };
  while (!allDone()) {
    const uint32_t seen = waiter_.snapshot();
    bool moved = waiter_.progressNetwork();
    for (Cursor& c : cursors) moved |= attempt(c);
    if (moved) {
      waiter_.madeProgress();
    } else {
      waiter_.idle(seen, describe);
    }
  }
  drainSends(describe);
}

// Network links may still hold committed bytes; the caller's buffers are
// already copied into staging, but the peer needs them to finish.
void StepExecutor::drainSends(FunctionRef<std::string()> describe) {
  for (const std::vector<Link*>& links : channels_) {
    for (Link* l : links) {
      while (l != nullptr && !l->sendsDrained()) {
        const uint32_t seen = waiter_.snapshot();
        if (l->progress()) {
          waiter_.madeProgress();
        } else {
          waiter_.idle(seen, describe);
        }
      }
    }
  }
}

}  // namespace loom
