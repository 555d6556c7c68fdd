#include "data/synthetic_text.h"

#include <array>
#include <string_view>
#include <vector>

#include "core/rng.h"

namespace loom::train {
namespace {

constexpr std::array<std::string_view, 6> kAdjectives = {"red",   "old",   "quick",
                                                         "small", "happy", "grey"};
constexpr std::array<std::string_view, 8> kNouns = {"fox",  "cat",  "dog",   "owl",
                                                    "bird", "frog", "horse", "robot"};
constexpr std::array<std::string_view, 6> kVerbs = {"see",  "chase", "like",
                                                    "find", "help",  "watch"};
constexpr std::array<std::string_view, 5> kPlaces = {
    "in the garden", "near the river", "on the hill", "at the station", "under the bridge"};
constexpr std::array<std::string_view, 10> kNumbers = {"one", "two",   "three", "four", "five",
                                                       "six", "seven", "eight", "nine", "ten"};

/// Draws the choices of one sentence from the counter RNG.
class Chooser {
 public:
  Chooser(uint64_t seed, uint64_t sentence) : seed_(seed), sentence_(sentence) {}
  size_t below(size_t n) { return uniformBelow(seed_, sentence_, draw_++, n); }
  template <typename Words>
  std::string_view pick(const Words& words) {
    return words[below(words.size())];
  }

 private:
  uint64_t seed_;
  uint64_t sentence_;
  uint64_t draw_ = 0;
};

/// Appends " word" (or just "word" to an empty string).
void addWord(std::string& s, std::string_view word) {
  if (!s.empty()) s += ' ';
  s += word;
}

std::string nounPhrase(Chooser& c, bool plural) {
  std::string s;
  if (plural) {
    addWord(s, kNumbers[1 + c.below(4)]);  // two .. five
  } else {
    addWord(s, c.below(2) == 0 ? "the" : "a");
  }
  if (c.below(2) == 0) addWord(s, c.pick(kAdjectives));
  addWord(s, c.pick(kNouns));
  if (plural) s += 's';
  return s;
}

std::string grammarSentence(Chooser& c) {
  const bool plural = c.below(3) == 0;
  std::string s = nounPhrase(c, plural);
  addWord(s, c.pick(kVerbs));
  if (!plural) s += 's';
  addWord(s, nounPhrase(c, c.below(3) == 0));
  if (c.below(2) == 0) addWord(s, c.pick(kPlaces));
  return s + ".";
}

std::string countingSentence(Chooser& c) {
  const size_t first = c.below(6);
  const size_t length = 2 + c.below(4);
  std::string s;
  for (size_t i = first; i < first + length && i < kNumbers.size(); ++i) addWord(s, kNumbers[i]);
  return s + ".";
}

std::string sumSentence(Chooser& c) {
  const size_t a = c.below(5);
  const size_t b = c.below(5);
  return std::to_string(a) + " + " + std::to_string(b) + " = " + std::to_string(a + b) + ".";
}

}  // namespace

std::string syntheticText(uint64_t seed, size_t bytes) {
  std::string text;
  text.reserve(bytes + 64);
  for (uint64_t sentence = 0; text.size() < bytes; ++sentence) {
    Chooser c(seed, sentence);
    const size_t kind = c.below(10);
    if (kind < 6) {
      text += grammarSentence(c);
    } else if (kind < 8) {
      text += countingSentence(c);
    } else {
      text += sumSentence(c);
    }
    text += c.below(4) == 0 ? "\n" : " ";
  }
  return text;
}

}  // namespace loom::train
