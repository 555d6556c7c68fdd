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

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "Loom's torch.distributed backend (CPU tensors)";
  m.def("create_backend", &createBackend, "Makes the backend of one process group",
        pybind11::arg("store"), pybind11::arg("rank"), pybind11::arg("size"),
        pybind11::arg("timeout"));
}
