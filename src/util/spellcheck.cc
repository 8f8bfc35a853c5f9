#include "mosaic/util/spellcheck.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <vector>

namespace mosaic {

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

namespace {

bool EqualIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<std::string> ClosestMatch(std::string_view word,
                                        std::span<const std::string> candidates) {
  // The same name in other case ("runb" for "runB") is what was meant, whatever else is near.
  for (const std::string& candidate : candidates) {
    if (EqualIgnoringCase(word, candidate)) return candidate;
  }
  const int max_distance = std::max<int>(2, static_cast<int>(word.size()) / 3);
  std::optional<std::string> best;
  int best_distance = max_distance + 1;
  for (const std::string& candidate : candidates) {
    // A prefix ("mixtral" for "mixtral-8x7b", "gb200" for "gb200-nvl72") beats any edit.
    int distance = word.size() >= 3 && candidate.starts_with(word) ? 0 : EditDistance(word, candidate);
    // A candidate that keeps no character of the word ("C" for "N") is no suggestion.
    if (distance >= static_cast<int>(std::max(word.size(), candidate.size()))) continue;
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string DidYouMean(std::string_view word, std::span<const std::string> candidates) {
  std::optional<std::string> match = ClosestMatch(word, candidates);
  return match ? " (did you mean '" + *match + "'?)" : "";
}

}  // namespace mosaic
