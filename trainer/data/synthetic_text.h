// A deterministic synthetic corpus with structure a small model can learn, so
// the demo and tests need no download: sentences from a tiny grammar with
// subject-verb agreement ("the red fox sees a cat." / "two dogs see the owl."),
// counting runs ("three four five six.") and one-digit sums ("3 + 4 = 7.").
// Spelling, word order, agreement and arithmetic are each a lower loss to find.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::train {

/// About `bytes` characters of text; the same for the same seed.
std::string syntheticText(uint64_t seed, size_t bytes);

}  // namespace loom::train
