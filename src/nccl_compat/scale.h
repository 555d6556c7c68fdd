// Element-wise scaling of host buffers, for PreMulSum ops.
#pragma once

#include <loom/loom.h>

#include <cstddef>
#include <memory>

namespace loom_nccl {

/// A new buffer holding input[i] * scalar for i < count, in `type` (the scalar
/// is one element of `type`). Integers wrap like unsigned arithmetic; float16
/// and bfloat16 are multiplied in float and rounded to nearest even, which is
/// the correctly rounded product. count == 0 gives nullptr.
std::unique_ptr<std::byte[]> scaledCopy(const void* input, size_t count, loomDataType_t type,
                                        const void* scalar);

}  // namespace loom_nccl
