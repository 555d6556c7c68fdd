// The words that name an enum's values in logs, environment variables and
// option strings, kept in one table per enum so that printing, parsing and the
// "is not one of" message of a bad value cannot drift apart.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace loom {

template <typename E>
struct Named {
  E value;
  std::string_view name;
};

/// The word for `value`, or `absent` when the table has none.
template <typename E, size_t N>
constexpr std::string_view nameIn(const Named<E> (&table)[N], E value,
                                  std::string_view absent = "?") {
  for (const Named<E>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return absent;
}

/// The value that `text` names, or nullopt when no word in the table is `text`.
template <typename E, size_t N>
constexpr std::optional<E> valueIn(const Named<E> (&table)[N], std::string_view text) {
  for (const Named<E>& entry : table) {
    if (entry.name == text) return entry.value;
  }
  return std::nullopt;
}

/// Every word of the table, in order, separated by ", " (for error messages).
template <typename E, size_t N>
std::string namesIn(const Named<E> (&table)[N]) {
  std::string out;
  for (const Named<E>& entry : table) {
    if (!out.empty()) out += ", ";
    out += entry.name;
  }
  return out;
}

}  // namespace loom
