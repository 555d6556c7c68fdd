#include "device_paths/device_staging.h"

#include <algorithm>

#include "device/cuda_runtime.h"

namespace loom {
namespace {

using device::CopyKind;

const device::DeviceRuntime& runtime() {
  const device::DeviceRuntime& r = device::deviceRuntime();
  if (!r.available) {
    raise(ErrorCode::InvalidUsage, "device buffers without a CUDA runtime: {}", r.reason);
  }
  return r;
}

}  // namespace

void waitForStreamOrderedHostBuffers(std::span<const Operation> ops) {
  std::vector<void*> waited;
  for (const Operation& op : ops) {
    if (!op.streamOrdered || op.onDevice) continue;
    if (std::find(waited.begin(), waited.end(), op.stream) != waited.end()) continue;
    const device::DeviceRuntime& rt = runtime();
    rt.check(rt.streamSynchronize(op.stream), "waiting for the caller's stream");
    waited.push_back(op.stream);
  }
}

DeviceStaging::DeviceStaging(const Comm& comm, std::span<const Operation> ops)
    : hostOps_(ops.begin(), ops.end()) {
  std::vector<Use> uses;
  for (const Operation& op : hostOps_) {
    if (!op.onDevice) continue;
    const size_t es = dataTypeSize(op.type);
    const size_t inBytes =
        inputElements(op.collective, op.count, comm.nranks, comm.rank, op.root) * es;
    const size_t outBytes =
        outputElements(op.collective, op.count, comm.nranks, comm.rank, op.root) * es;
    auto* in = static_cast<char*>(const_cast<void*>(op.send));
    auto* out = static_cast<char*>(op.recv);
    if (inBytes > 0 && in != nullptr) uses.push_back({in, inBytes, true, false, op.stream});
    // Every collective writes all of its output, so it needs no copy in.
    if (outBytes > 0 && out != nullptr) uses.push_back({out, outBytes, false, true, op.stream});
  }
  stageRegions(uses);
  // Every pointer into a staged range moves to its host copy, keeping its
  // place: an in-place call stays in place, and a later call of the group
  // reads what an earlier one wrote to the same memory, as on the stream.
  for (Operation& op : hostOps_) {
    if (!op.onDevice) continue;
    op.send = hostAddress(static_cast<const char*>(op.send));
    op.recv = const_cast<char*>(hostAddress(static_cast<const char*>(op.recv)));
  }
  synchronize();
}

void DeviceStaging::stageRegions(std::vector<Use>& uses) {
  std::sort(uses.begin(), uses.end(),
            [](const Use& a, const Use& b) { return a.device < b.device; });
  for (const Use& use : uses) {
    if (regions_.empty() || use.device >= regions_.back().device + regions_.back().host.size()) {
      Region& r = regions_.emplace_back();
      r.device = use.device;
      r.stream = use.stream;
      r.host.resize(use.bytes);
    }
    Region& r = regions_.back();
    const size_t end = static_cast<size_t>(use.device - r.device) + use.bytes;
    if (end > r.host.size()) r.host.resize(end);
    r.copyIn = r.copyIn || use.input;
    if (use.output) {
      r.outputs.push_back({static_cast<size_t>(use.device - r.device), use.bytes, use.stream});
    }
  }
  // A region's copy runs on one stream, but the calls that share it may be
  // on others, whose earlier work may still be writing it: every stream of
  // the group is done before any copy starts.
  for (const Use& use : uses) noteStream(use.stream);
  synchronize();
  const device::DeviceRuntime& rt = runtime();
  for (Region& r : regions_) {
    if (r.copyIn) {
      rt.check(
          rt.memcpyAsync(r.host.data(), r.device, r.host.size(), CopyKind::DeviceToHost, r.stream),
          "copying a device buffer to host memory");
    }
  }
}

void DeviceStaging::noteStream(void* stream) {
  if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) {
    streams_.push_back(stream);
  }
}

const char* DeviceStaging::hostAddress(const char* device) const {
  if (device == nullptr) return nullptr;
  for (const Region& r : regions_) {
    if (device >= r.device && device < r.device + r.host.size()) {
      return r.host.data() + (device - r.device);
    }
  }
  return device;  // an empty operand: never read or written
}

void DeviceStaging::synchronize() {
  if (regions_.empty()) return;
  const device::DeviceRuntime& rt = runtime();
  for (void* stream : streams_) {
    rt.check(rt.streamSynchronize(stream), "waiting for the caller's stream");
  }
}

void DeviceStaging::finish() {
  if (regions_.empty()) return;
  const device::DeviceRuntime& rt = runtime();
  for (Region& r : regions_) {
    for (const Output& o : r.outputs) {
      rt.check(rt.memcpyAsync(r.device + o.offset, r.host.data() + o.offset, o.bytes,
                              CopyKind::HostToDevice, o.stream),
               "copying results to the device buffer");
    }
  }
  // The host copies must outlive the transfers.
  synchronize();
}

}  // namespace loom
