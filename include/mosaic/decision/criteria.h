// The criteria of a decision rule and the rule itself (seed 000, "Decision Point"): each
// criterion is PASS, FAIL or UNKNOWN with its reason; UNKNOWN names the missing data and the run
// that would settle it. The challenger is picked only if every listed criterion passes; a FAIL
// keeps the default arm (decided by the failing criteria), and so does an UNKNOWN (the default
// stands until the named runs settle it). Each function takes plain numbers so that its logic is
// tested on its own (criteria_test.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/scaling/bootstrap.h"
#include "mosaic/study/decision_spec.h"

namespace mosaic {

enum class CriterionStatus { kPass, kFail, kUnknown };
std::string_view ToString(CriterionStatus status);  // "PASS", "FAIL", "UNKNOWN"

struct CriterionResult {
  std::string name;     // one of kCriterionNames
  std::string title;    // what it asks, e.g. "projected advantage at the target >= 5%"
  CriterionStatus status = CriterionStatus::kUnknown;
  std::string reason;   // the numbers behind the status
  std::string missing;  // UNKNOWN: the data that is missing
  std::string settle;   // UNKNOWN: the run or measurement that would settle it
  std::string caveat;   // PASS: what weakens it (an interval end short of the threshold, a gain
                        // inside the run-to-run noise); "" when nothing does
};

// (a) The projected advantage of the challenger at the target budget C.
//   effective compute: E = C'/C, the compute the default arm needs to reach the challenger's
//                      loss at C, divided by C; wall-clock advantage W = E × r, r the
//                      challenger's tokens/s over the default's; passes when W − 1 >= threshold.
//   loss:              ΔL = (L_default(C) − L_challenger(r·C)) / L_default(C), the challenger
//                      training r× the compute in the same wall-clock; passes when ΔL >= threshold.
// Both numbers are always given in the reason. Missing fits or throughput make it UNKNOWN.
struct AdvantageInputs {
  std::optional<double> effective_compute;       // E at the target
  std::optional<scaling::Interval> effective_compute_interval;
  // Why there is no interval though one was asked for ("ep64 is fitted on one rung"); a PASS
  // without one carries it as a caveat. "" when there is one or none was asked.
  std::string no_interval;
  std::optional<double> tokens_per_s_ratio;      // r
  std::optional<double> loss_advantage;          // ΔL (needs r)
  std::string missing_fit;         // why a fit is missing ("" when both fitted)
  std::string settle_fit;          // what would settle it ("": results at the same rungs)
  std::string missing_throughput;  // why r is missing ("" when known)
  std::string throughput_source;   // "measured", "model (best layout)", ...
  // The run-to-run noise of identical runs as effective compute (NoiseSummary::
  // used_effective_compute); a PASS on a gain |E − 1| inside it carries a caveat.
  std::optional<double> noise_effective_compute;
};
CriterionResult ProjectedAdvantage(const AdvantageInputs& in, const RuleSpec& rule);

// (b) The challenger's loss at the study's largest rung is below the default's.
struct LargestRungInputs {
  int64_t d_model = 0;                  // the study's largest rung
  std::optional<double> default_loss;   // at that rung
  std::optional<double> challenger_loss;
  std::string settle_default;           // the run that would fill a missing default loss
  std::string settle_challenger;
  // The largest rung where both arms have a loss, for the reason of an UNKNOWN (0: none).
  int64_t common_d_model = 0;
  double common_default_loss = 0, common_challenger_loss = 0;
  double loss_spread = 0;               // run-to-run noise in loss (0: unknown)
};
CriterionResult WinsAtLargestRung(const LargestRungInputs& in, const RuleSpec& rule);

// (c) The challenger's context extension: PASS when at least one of its runs is "smooth" and none
// is "not_smooth"; FAIL on any "not_smooth"; UNKNOWN when its runs were interrupted, completed
// without the comparison, or not run. `largest_d_model` names the checkpoint a settling run
// starts from.
CriterionResult ContextExtensionSmooth(const std::vector<ContextExtension>& entries,
                                       const RuleSpec& rule, int64_t largest_d_model);

// (d) No gradient or loss anomaly (non-finite values, skipped updates, spikes) in the
// challenger's runs, from the run reader's health findings. `logs_read` is false when the results
// came without logs (UNKNOWN); `anomalies` lists "run: finding" lines (any: FAIL);
// `runs_without_grad_norm` names the runs read whose logs have no gradient-norm tag
// (runs::IsGradNormTag): with no anomaly found, any such run leaves the criterion UNKNOWN, since
// their gradients were never checked.
CriterionResult NoAnomalies(bool logs_read, int runs_read, const std::vector<std::string>& anomalies,
                            const RuleSpec& rule,
                            const std::vector<std::string>& runs_without_grad_norm = {});

struct Verdict {
  std::string chosen_arm;
  bool challenger_picked = false;
  std::vector<std::string> decided_by;  // the criteria that decided it
  std::string summary;                  // one sentence with the reasons
  std::vector<std::string> caveats;     // the passing criteria's caveats, when it picks the
                                        // challenger (also at the end of `summary`)
};

// Applies the rule to evaluated criteria (in the rule's order).
Verdict ApplyRule(const std::vector<CriterionResult>& criteria, const RuleSpec& rule);

}  // namespace mosaic
