// An emulated CUDA runtime for testing Loom's device paths on machines without
// a GPU: built as libcudart.so.<major> with the toolkit's symbol versions, so
// the GPU test programs and libloom's dlopen find it first through
// LD_LIBRARY_PATH. It implements only what those need — memory, streams,
// events, IPC, peer access — with host memory and threads; kernels come from
// the emulated plugin (emulated_kernels.cc). It proves the host-side logic of
// the device paths (agreements, stream order, FIFO exchange, program upload,
// statuses); it proves nothing about real kernels, PCIe or memory ordering on
// a GPU (docs/cuda.md).
//
// Settings: LOOM_EMULATED_DEVICES (default 1), LOOM_EMULATED_PEER_ACCESS (0:
// devices cannot reach each other), LOOM_EMULATED_IPC (0: every IPC mapping
// is refused, as in a container without a shared IPC namespace),
// LOOM_EMULATED_REFUSE_MALLOC_FROM (bytes, read at each call: cudaMalloc of
// at least that much fails with cudaErrorMemoryAllocation, as on a full GPU).
#include "emulated_cuda/emulated_runtime.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "emulated_cuda/emulated_memory.h"

// From the emulated libcuda.so.1, which must be loaded whenever this runtime
// is (libloom asks for the driver first): calling it keeps the dependency.
extern "C" int loomEmulatedDriver(void);

namespace loom::emulated {
namespace {

int setting(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

int deviceCount() { return loomEmulatedDriver() != 0 ? setting("LOOM_EMULATED_DEVICES", 1) : 0; }

thread_local int currentDevice = 0;
thread_local cudaError_t lastError = cudaSuccess;

cudaError_t fail(cudaError_t error) {
  lastError = error;
  return error;
}

/// The emulated context: the default streams, every stream (blocking ones are
/// what the legacy default stream's synchronous copies wait for) and the
/// peer access enabled. As in CUDA, each device has its legacy default
/// stream, each thread its per-thread default stream on each device, and a
/// device's synchronisations wait only for that device's streams: ranks that
/// are threads of one process on devices of their own do not wait for each
/// other's work.
struct Context {
  std::mutex mutex;
  /// Owned here; a synchronisation holds its own references, so a stream
  /// destroyed meanwhile outlives it.
  std::map<Stream*, std::shared_ptr<Stream>> streams;
  std::set<std::pair<int, int>> peerAccess;
  /// Default streams, made on first use and never freed: they outlive static
  /// destruction. Keyed by device (legacy), and by thread and device.
  std::map<int, Stream*> legacy;
  std::map<std::pair<std::thread::id, int>, Stream*> perThread;
};

Context& context() {
  // Never destroyed: destroying it at exit would finish, and wait for, the
  // queues of streams the application never destroyed.
  static Context& c = *new Context;
  return c;
}

bool isDefault(void* stream) {
  const auto handle = reinterpret_cast<uintptr_t>(stream);
  return handle == 0 || handle == 1 || handle == 2;  // legacy and per-thread handles
}

/// The default stream a handle names on the current device.
Stream& defaultStream(uintptr_t handle) {
  Context& c = context();
  const std::lock_guard<std::mutex> lock(c.mutex);
  Stream*& s = handle == 2 ? c.perThread[{std::this_thread::get_id(), currentDevice}]
                           : c.legacy[currentDevice];
  if (s == nullptr) s = new Stream(false, currentDevice);
  return *s;
}

/// Waits for every stream of the current device (cudaDeviceSynchronize,
/// cudaFree), or with `blockingOnly` for those the legacy default stream
/// waits for (cudaMemcpy).
void synchronizeAll(bool blockingOnly = false) {
  Context& c = context();
  std::vector<std::shared_ptr<Stream>> streams;
  std::vector<Stream*> defaults;
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    for (const auto& [handle, stream] : c.streams) {
      if (stream->device() == currentDevice) streams.push_back(stream);
    }
    for (const auto& [device, stream] : c.legacy) {
      if (device == currentDevice) defaults.push_back(stream);
    }
    for (const auto& [key, stream] : c.perThread) {
      if (key.second == currentDevice) defaults.push_back(stream);
    }
  }
  for (const std::shared_ptr<Stream>& s : streams) {
    if (!blockingOnly || s->blocking()) s->synchronize();
  }
  for (Stream* s : defaults) s->synchronize();
}

}  // namespace

Event& eventOf(void* event) { return **static_cast<std::shared_ptr<Event>*>(event); }

Stream& streamOf(void* stream) {
  return isDefault(stream) ? defaultStream(reinterpret_cast<uintptr_t>(stream))
                           : *static_cast<Stream*>(stream);
}

}  // namespace loom::emulated

using loom::emulated::eventOf;
using loom::emulated::fail;
using loom::emulated::streamOf;
namespace emu = loom::emulated;

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = emu::deviceCount();
  return cudaSuccess;
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error (emulated)";
    case cudaErrorInvalidValue:
      return "invalid argument (emulated)";
    case cudaErrorMemoryAllocation:
      return "out of memory (emulated)";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal (emulated)";
    case cudaErrorMapBufferObjectFailed:
      return "mapping of buffer object failed (emulated: LOOM_EMULATED_IPC=0)";
    case cudaErrorPeerAccessUnsupported:
      return "peer access is not supported between these two devices (emulated)";
    case cudaErrorPeerAccessAlreadyEnabled:
      return "peer access is already enabled (emulated)";
    case cudaErrorNotReady:
      return "device not ready (emulated)";
    default:
      return "unknown error (emulated)";
  }
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = emu::lastError;
  emu::lastError = cudaSuccess;
  return e;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  *device = emu::currentDevice;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= emu::deviceCount()) return fail(cudaErrorInvalidDevice);
  emu::currentDevice = device;
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return fail(cudaErrorInvalidValue);
  std::memset(attributes, 0, sizeof *attributes);
  const emu::Lookup found = emu::lookup(ptr);
  attributes->type = static_cast<cudaMemoryType>(found.kind);
  attributes->device = found.kind == emu::Kind::Unregistered ? -2 : found.device;
  if (found.kind != emu::Kind::Unregistered) {
    attributes->devicePointer = const_cast<void*>(ptr);
    if (found.kind == emu::Kind::PinnedHost) attributes->hostPointer = const_cast<void*>(ptr);
  }
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  if (ptr == nullptr) return fail(cudaErrorInvalidValue);
  if (const char* limit = std::getenv("LOOM_EMULATED_REFUSE_MALLOC_FROM");
      limit != nullptr && bytes >= std::strtoull(limit, nullptr, 10)) {
    *ptr = nullptr;
    return fail(cudaErrorMemoryAllocation);
  }
  *ptr = emu::allocateDevice(bytes, emu::currentDevice);
  return *ptr != nullptr ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  emu::synchronizeAll();  // cudaFree waits for the device
  return emu::release(ptr) ? cudaSuccess : fail(cudaErrorInvalidValue);
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  if (ptr == nullptr) return fail(cudaErrorInvalidValue);
  *ptr = emu::allocatePinned(bytes, emu::currentDevice);
  return *ptr != nullptr ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  return emu::release(ptr) ? cudaSuccess : fail(cudaErrorInvalidValue);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  emu::synchronizeAll(true);
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

// As CUDA documents for pageable (unregistered) host memory: a copy from it
// has taken its source by the time the call returns (CUDA stages it), so the
// caller may reuse the buffer at once; a copy into it is synchronous. Only
// copies between device and pinned memory stay queued on the stream.
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind,
                            cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  emu::Stream& s = streamOf(stream);
  if (emu::lookup(dst).kind == emu::Kind::Unregistered) {
    s.synchronize();
    std::memmove(dst, src, bytes);
  } else if (emu::lookup(src).kind == emu::Kind::Unregistered) {
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + bytes);
    s.enqueue([=] { std::memmove(dst, staged->data(), bytes); });
  } else {
    s.enqueue([=] { std::memmove(dst, src, bytes); });
  }
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) {
  if (bytes > 0) streamOf(stream).enqueue([=] { std::memset(ptr, value, bytes); });
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, 0); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (stream == nullptr) return fail(cudaErrorInvalidValue);
  const bool blocking = (flags & cudaStreamNonBlocking) == 0;
  auto s = std::make_shared<emu::Stream>(blocking, emu::currentDevice);
  emu::Context& c = emu::context();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.streams[s.get()] = s;
  *stream = reinterpret_cast<cudaStream_t>(s.get());
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (emu::isDefault(stream)) return fail(cudaErrorInvalidResourceHandle);
  std::shared_ptr<emu::Stream> owned;
  {
    emu::Context& c = emu::context();
    const std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.streams.find(reinterpret_cast<emu::Stream*>(stream));
    if (it == c.streams.end()) return fail(cudaErrorInvalidResourceHandle);
    owned = std::move(it->second);
    c.streams.erase(it);
  }
  // The last reference runs what is queued first, as CUDA finishes a
  // destroyed stream's work.
  owned.reset();
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  emu::synchronizeAll();
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  streamOf(stream).synchronize();
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  if (event == nullptr) return fail(cudaErrorInvalidValue);
  // The handle owns one reference; pending tasks own the others.
  *event = reinterpret_cast<cudaEvent_t>(new std::shared_ptr<emu::Event>(new emu::Event()));
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle);
  delete reinterpret_cast<std::shared_ptr<emu::Event>*>(event);  // pending records keep it alive
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle);
  eventOf(event).record(streamOf(stream));
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle);
  return eventOf(event).done() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle);
  eventOf(event).wait();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle);
  eventOf(event).enqueueWait(streamOf(stream));
  return cudaSuccess;
}

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* ptr) {
  static_assert(sizeof(emu::SharedHandle) <= sizeof(cudaIpcMemHandle_t));
  if (handle == nullptr) return fail(cudaErrorInvalidValue);
  emu::SharedHandle shared{};
  if (!emu::shareDevice(ptr, &shared)) return fail(cudaErrorInvalidValue);
  std::memset(handle, 0, sizeof *handle);
  std::memcpy(handle, &shared, sizeof shared);
  return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void** ptr, cudaIpcMemHandle_t handle, unsigned int) {
  if (ptr == nullptr) return fail(cudaErrorInvalidValue);
  if (emu::setting("LOOM_EMULATED_IPC", 1) == 0) return fail(cudaErrorMapBufferObjectFailed);
  emu::SharedHandle shared{};
  std::memcpy(&shared, &handle, sizeof shared);
  *ptr = emu::openShared(shared);
  return *ptr != nullptr ? cudaSuccess : fail(cudaErrorMapBufferObjectFailed);
}

cudaError_t cudaIpcCloseMemHandle(void* ptr) {
  return emu::release(ptr) ? cudaSuccess : fail(cudaErrorInvalidValue);
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  if (can == nullptr) return fail(cudaErrorInvalidValue);
  const int n = emu::deviceCount();
  if (device < 0 || device >= n || peer < 0 || peer >= n) return fail(cudaErrorInvalidDevice);
  *can = device != peer && emu::setting("LOOM_EMULATED_PEER_ACCESS", 1) != 0 ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int) {
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, emu::currentDevice, peer) != cudaSuccess) {
    return fail(cudaErrorInvalidDevice);
  }
  if (can == 0) return fail(cudaErrorPeerAccessUnsupported);
  emu::Context& c = emu::context();
  const std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.peerAccess.insert({emu::currentDevice, peer}).second) {
    return fail(cudaErrorPeerAccessAlreadyEnabled);
  }
  return cudaSuccess;
}
