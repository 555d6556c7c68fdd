// Byte-level tokenizer: token = byte (vocabulary 256). Any file is valid input
// and nothing has to be trained or downloaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::train {

constexpr int kByteVocabulary = 256;

std::vector<int32_t> encodeBytes(const std::string& text);
std::string decodeBytes(const std::vector<int32_t>& tokens);

}  // namespace loom::train
