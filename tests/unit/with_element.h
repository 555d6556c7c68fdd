// Dispatch from a DataType to the walker's element type (device/
// element_types.cuh), for running PlanWalker on host threads: the walker tests
// and the emulated CUDA plugin.
#pragma once

#include <cstdint>

#include "core/types.h"
#include "device/element_types.cuh"

namespace loom::walk {

/// Runs `run(E{})` with the device element type of `type`.
template <typename Fn>
inline bool withElement(DataType type, Fn&& run) {
  switch (type) {
    case DataType::Int8:
      return run(cuda::NativeElem<int8_t>{});
    case DataType::Uint8:
      return run(cuda::NativeElem<uint8_t>{});
    case DataType::Int32:
      return run(cuda::NativeElem<int32_t>{});
    case DataType::Uint32:
      return run(cuda::NativeElem<uint32_t>{});
    case DataType::Int64:
      return run(cuda::NativeElem<int64_t>{});
    case DataType::Uint64:
      return run(cuda::NativeElem<uint64_t>{});
    case DataType::Float16:
      return run(cuda::HalfElem{});
    case DataType::Float32:
      return run(cuda::NativeElem<float>{});
    case DataType::Float64:
      return run(cuda::NativeElem<double>{});
    case DataType::Bfloat16:
      return run(cuda::Bf16Elem{});
  }
  return false;
}

}  // namespace loom::walk
