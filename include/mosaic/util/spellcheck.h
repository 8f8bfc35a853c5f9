// "Did you mean" suggestions for misspelled names (subcommands, presets, fields), after ninja's
// SpellcheckStringV (ninja-build/ninja src/util.h).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mosaic {

// Levenshtein distance between `a` and `b` (insertions, deletions, substitutions, each cost 1).
int EditDistance(std::string_view a, std::string_view b);

// The first candidate equal to `word` ignoring ASCII case; otherwise the candidate closest to
// `word` by EditDistance, if that distance is at most max(2, word.size() / 3); a candidate that
// `word` (3+ characters) is a prefix of counts as distance 0. Ties go to the earlier candidate.
// nullopt when nothing is close.
std::optional<std::string> ClosestMatch(std::string_view word,
                                        std::span<const std::string> candidates);

// " (did you mean 'x'?)" when ClosestMatch finds one, else "".
std::string DidYouMean(std::string_view word, std::span<const std::string> candidates);

}  // namespace mosaic
