// The Python module loom.torch._C: the backend's constructor for
// torch.distributed.Backend.register_backend.
#include <pybind11/chrono.h>
#include <torch/extension.h>

#include "loom_backend.h"

namespace {

c10::intrusive_ptr<c10d::Backend> createBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                int rank, int size,
                                                const std::chrono::duration<float>& timeout) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  return c10::make_intrusive<loom::torch_backend::LoomBackend>(store, rank, size, ms);
}

/// The DDP comm hooks' entry (loom/torch/hooks.py): `backend` is the
/// process group's CPU backend, which must be Loom's.
void compressedAverage(const c10::intrusive_ptr<c10d::Backend>& backend, at::Tensor tensor,
                       int kind, int block, double ratio, bool feedback, int64_t key) {
  auto* loomBackend = dynamic_cast<loom::torch_backend::LoomBackend*>(backend.get());
  TORCH_CHECK_VALUE(loomBackend != nullptr,
                    "loom hooks need a process group of the \"loom\" "
                    "backend, not \"",
                    backend->getBackendName(), "\"");
  loomCompression codec{};
  codec.kind = static_cast<loomCompressionKind_t>(kind);
  codec.block = block;
  codec.ratio = ratio;
  loomBackend->compressedAverage(tensor, codec, feedback, key);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "Loom's torch.distributed backend (CPU tensors)";
  m.def("create_backend", &createBackend, "Makes the backend of one process group",
        pybind11::arg("store"), pybind11::arg("rank"), pybind11::arg("size"),
        pybind11::arg("timeout"));
  m.def("compressed_average", &compressedAverage,
        "Averages a tensor over the group with in-flight compression (DDP hooks)",
        pybind11::arg("backend"), pybind11::arg("tensor"), pybind11::arg("kind"),
        pybind11::arg("block"), pybind11::arg("ratio"), pybind11::arg("feedback"),
        pybind11::arg("key"));
}
