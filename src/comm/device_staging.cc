#include "comm/device_staging.h"

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
  for (Operation& op : hostOps_) {
    if (!op.onDevice) continue;
    const size_t es = dataTypeSize(op.type);
    const size_t inBytes =
        inputElements(op.collective, op.count, comm.nranks, comm.rank, op.root) * es;
    const size_t outBytes =
        outputElements(op.collective, op.count, comm.nranks, comm.rank, op.root) * es;
    auto* in = static_cast<char*>(const_cast<void*>(op.send));
    auto* out = static_cast<char*>(op.recv);
    const bool hasIn = inBytes > 0 && in != nullptr;
    const bool hasOut = outBytes > 0 && out != nullptr;
    if (hasIn && hasOut && in < out + outBytes && out < in + inBytes) {
      // In place: one host range keeps the two pointers' layout.
      char* begin = std::min(in, out);
      const size_t bytes = static_cast<size_t>(std::max(in + inBytes, out + outBytes) - begin);
      char* host = stage(begin, bytes, true, static_cast<size_t>(out - begin), outBytes, op.stream);
      op.send = host + (in - begin);
      op.recv = host + (out - begin);
      continue;
    }
    if (hasIn) op.send = stage(in, inBytes, true, 0, 0, op.stream);
    // Every collective writes all of its output, so it needs no copy in.
    if (hasOut) op.recv = stage(out, outBytes, false, 0, outBytes, op.stream);
  }
  synchronize();
}

char* DeviceStaging::stage(char* device, size_t bytes, bool copyIn, size_t outputOffset,
                           size_t outputBytes, void* stream) {
  Region& r = regions_.emplace_back();
  r.device = device;
  r.host.resize(bytes);
  r.stream = stream;
  r.outputOffset = outputOffset;
  r.outputBytes = outputBytes;
  if (copyIn) {
    const device::DeviceRuntime& rt = runtime();
    rt.check(rt.memcpyAsync(r.host.data(), device, bytes, CopyKind::DeviceToHost, stream),
             "copying a device buffer to host memory");
  }
  if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) {
    streams_.push_back(stream);
  }
  return r.host.data();
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
    if (r.outputBytes == 0) continue;
    rt.check(rt.memcpyAsync(r.device + r.outputOffset, r.host.data() + r.outputOffset,
                            r.outputBytes, CopyKind::HostToDevice, r.stream),
             "copying results to the device buffer");
  }
  // The host copies must outlive the transfers.
  synchronize();
}

}  // namespace loom
