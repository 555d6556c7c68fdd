#include "data/tokenizer.h"

namespace loom::train {

std::vector<int32_t> encodeBytes(const std::string& text) {
  std::vector<int32_t> tokens(text.size());
  for (size_t i = 0; i < text.size(); ++i) tokens[i] = static_cast<unsigned char>(text[i]);
  return tokens;
}

std::string decodeBytes(const std::vector<int32_t>& tokens) {
  std::string text(tokens.size(), '\0');
  for (size_t i = 0; i < tokens.size(); ++i) text[i] = static_cast<char>(tokens[i] & 0xff);
  return text;
}

}  // namespace loom::train
