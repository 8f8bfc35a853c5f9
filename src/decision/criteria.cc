#include "mosaic/decision/criteria.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "mosaic/util/number_format.h"

namespace mosaic {

std::string_view ToString(CriterionStatus status) {
  switch (status) {
    case CriterionStatus::kPass: return "PASS";
    case CriterionStatus::kFail: return "FAIL";
    case CriterionStatus::kUnknown: return "UNKNOWN";
  }
  return "?";
}

namespace {

std::string Percent(double fraction) { return FormatSignedPercent(fraction); }

CriterionResult Make(std::string_view name, std::string title) {
  CriterionResult r;
  r.name = std::string(name);
  r.title = std::move(title);
  return r;
}

}  // namespace

CriterionResult ProjectedAdvantage(const AdvantageInputs& in, const RuleSpec& rule) {
  const bool as_loss = rule.measure == "loss";
  CriterionResult r = Make(
      "projected_advantage",
      fmt::format("projected advantage at the target >= {:g}% ({})", 100 * rule.threshold,
                  as_loss ? "as loss, same wall-clock" : "as wall-clock effective compute"));
  if (!in.missing_fit.empty() || !in.effective_compute || !std::isfinite(*in.effective_compute)) {
    r.status = CriterionStatus::kUnknown;
    r.missing = in.missing_fit.empty() ? "no scaling-law projection" : in.missing_fit;
    r.settle = !in.settle_fit.empty()
                   ? in.settle_fit
                   : fmt::format("ladder results of {} and {} at the same rungs",
                                 rule.default_arm, rule.challenger);
    r.reason = r.missing;
    return r;
  }
  const double e = *in.effective_compute;
  std::string interval;
  if (in.effective_compute_interval && std::isfinite(in.effective_compute_interval->low)) {
    interval = fmt::format(" [{:.3f}, {:.3f}]", in.effective_compute_interval->low,
                           in.effective_compute_interval->high);
  }
  if (!in.missing_throughput.empty() || !in.tokens_per_s_ratio ||
      !std::isfinite(*in.tokens_per_s_ratio) || !(*in.tokens_per_s_ratio > 0)) {
    r.status = CriterionStatus::kUnknown;
    r.missing = in.missing_throughput.empty() ? "no tokens/s ratio" : in.missing_throughput;
    r.settle = fmt::format("tokens/s of {} and {} on the target cluster ([throughput] measured "
                           "rows, or model = true)",
                           rule.default_arm, rule.challenger);
    r.reason = fmt::format("effective compute {:.3f}×{} at the target; {}", e, interval,
                           r.missing);
    return r;
  }
  const double ratio = *in.tokens_per_s_ratio;
  const double wall = e * ratio;
  const double advantage = as_loss ? in.loss_advantage.value_or(NAN) : wall - 1;
  const std::string loss_text =
      in.loss_advantage ? fmt::format("{:.2f}% {} loss at the same wall-clock",
                                      100 * std::abs(*in.loss_advantage),
                                      *in.loss_advantage >= 0 ? "lower" : "higher")
                        : "loss advantage unknown";
  r.reason = fmt::format(
      "wall-clock advantage {:.3f}× = effective compute {:.3f}×{} × tokens/s ratio {:.3f} ({}); "
      "as loss: {}",
      wall, e, interval, ratio, in.throughput_source, loss_text);
  if (!std::isfinite(advantage)) {
    r.status = CriterionStatus::kUnknown;
    r.missing = "the loss at the challenger's wall-clock-matched budget";
    r.settle = "a fit of the challenger's arm";
    return r;
  }
  r.status = advantage >= rule.threshold ? CriterionStatus::kPass : CriterionStatus::kFail;
  r.reason += fmt::format("; {} {} {:g}% needed", Percent(advantage),
                          advantage >= rule.threshold ? ">=" : "<", 100 * rule.threshold);
  if (!as_loss && in.effective_compute_interval &&
      std::isfinite(in.effective_compute_interval->low)) {
    const double low = in.effective_compute_interval->low * ratio - 1;
    if ((low >= rule.threshold) != (advantage >= rule.threshold)) {
      r.reason += fmt::format("; the interval's low end gives {}", Percent(low));
      if (r.status == CriterionStatus::kPass) {
        r.caveat = fmt::format("the interval's low end gives {}, short of the {:g}% needed",
                               Percent(low), 100 * rule.threshold);
      }
    }
  }
  if (r.status == CriterionStatus::kPass && !in.effective_compute_interval &&
      !in.no_interval.empty()) {
    r.caveat = fmt::format("no interval ({}): how far the projection may be off is not known",
                           in.no_interval);
  }
  if (r.status == CriterionStatus::kPass && in.noise_effective_compute &&
      std::abs(e - 1) < *in.noise_effective_compute) {
    if (!r.caveat.empty()) r.caveat += "; ";
    r.caveat += fmt::format("the effective-compute gain {} is inside the run-to-run noise ({:.1f}%)",
                            Percent(e - 1), 100 * *in.noise_effective_compute);
  }
  return r;
}

CriterionResult WinsAtLargestRung(const LargestRungInputs& in, const RuleSpec& rule) {
  CriterionResult r =
      Make("wins_at_largest_rung", fmt::format("{} wins at the largest rung (d{})",
                                               rule.challenger, in.d_model));
  if (!in.default_loss || !in.challenger_loss) {
    r.status = CriterionStatus::kUnknown;
    std::vector<std::string> missing, settle;
    if (!in.default_loss) {
      missing.push_back(fmt::format("no {} loss at d{}", rule.default_arm, in.d_model));
      settle.push_back(in.settle_default);
    }
    if (!in.challenger_loss) {
      missing.push_back(fmt::format("no {} loss at d{}", rule.challenger, in.d_model));
      settle.push_back(in.settle_challenger);
    }
    r.missing = fmt::format("{}", fmt::join(missing, "; "));
    r.settle = fmt::format("{}", fmt::join(settle, "; "));
    r.reason = r.missing;
    if (in.common_d_model > 0) {
      r.reason += fmt::format(" (at d{}, the largest rung both have: {} {:.4f} vs {} {:.4f})",
                              in.common_d_model, rule.challenger, in.common_challenger_loss,
                              rule.default_arm, in.common_default_loss);
    }
    return r;
  }
  const double gap = *in.default_loss - *in.challenger_loss;
  r.status = gap > 0 ? CriterionStatus::kPass : CriterionStatus::kFail;
  r.reason = fmt::format("{} {:.4f} vs {} {:.4f}: {}", rule.challenger, *in.challenger_loss,
                         rule.default_arm, *in.default_loss,
                         gap > 0   ? fmt::format("lower by {:.4f}", gap)
                         : gap < 0 ? fmt::format("higher by {:.4f}", -gap)
                                   : std::string("equal, not lower"));
  if (in.loss_spread > 0 && std::abs(gap) < in.loss_spread) {
    r.reason += fmt::format(" (inside the run-to-run spread {:.4f})", in.loss_spread);
  }
  return r;
}

CriterionResult ContextExtensionSmooth(const std::vector<ContextExtension>& entries,
                                       const RuleSpec& rule, int64_t largest_d_model) {
  CriterionResult r = Make("context_extension",
                           fmt::format("{}'s context extension is smooth", rule.challenger));
  std::vector<std::string> seen;
  int smooth = 0, not_smooth = 0;
  for (const ContextExtension& e : entries) {
    if (e.arm != rule.challenger) continue;
    std::string line = fmt::format("{}{}{}: {}", e.variant.empty() ? e.arm : e.variant,
                                   e.d_model > 0 ? fmt::format(" d{}", e.d_model) : "",
                                   e.seq_len > 0 ? fmt::format(" at {} tokens", e.seq_len) : "",
                                   ToString(e.outcome));
    if (!e.note.empty()) line += " (" + e.note + ")";
    seen.push_back(std::move(line));
    smooth += e.outcome == ExtensionOutcome::kSmooth;
    not_smooth += e.outcome == ExtensionOutcome::kNotSmooth;
  }
  const std::string runs = fmt::format("{}", fmt::join(seen, "; "));
  if (not_smooth > 0) {
    r.status = CriterionStatus::kFail;
    r.reason = runs;
  } else if (smooth > 0) {
    r.status = CriterionStatus::kPass;
    r.reason = runs;
  } else {
    r.status = CriterionStatus::kUnknown;
    r.missing = seen.empty() ? fmt::format("no context-extension run of {}", rule.challenger)
                             : fmt::format("no completed, compared context extension of {}: {}",
                                           rule.challenger, runs);
    r.settle = fmt::format("a context extension of {} from the d{} checkpoint run to the end, "
                           "with its loss and dropped share compared against {}",
                           rule.challenger, largest_d_model, rule.default_arm);
    r.reason = r.missing;
  }
  return r;
}

CriterionResult NoAnomalies(bool logs_read, int runs_read, const std::vector<std::string>& anomalies,
                            const RuleSpec& rule,
                            const std::vector<std::string>& runs_without_grad_norm) {
  CriterionResult r = Make("no_anomalies",
                           fmt::format("no gradient or loss anomalies in {}'s runs",
                                       rule.challenger));
  if (!logs_read || runs_read == 0) {
    r.status = CriterionStatus::kUnknown;
    r.missing = fmt::format("no training logs of {}'s runs were read", rule.challenger);
    r.settle = fmt::format("point [results] logs at the ladder runs of {} (gradient norm and "
                           "loss tags)",
                           rule.challenger);
    r.reason = r.missing;
    return r;
  }
  if (anomalies.empty() && !runs_without_grad_norm.empty()) {
    // No gradient norm logged: its non-finite values (skipped updates) and spikes cannot be seen.
    r.status = CriterionStatus::kUnknown;
    r.missing = fmt::format(
        "{} of {}'s {} {} read log{} no gradient norm (a tag containing grad_norm, gradnorm or "
        "grad/norm): {}; their losses show no anomaly, but their gradients cannot be checked",
        runs_without_grad_norm.size(), rule.challenger, runs_read,
        runs_read == 1 ? "run" : "runs", runs_without_grad_norm.size() == 1 ? "s" : "",
        fmt::join(runs_without_grad_norm, ", "));
    r.settle = fmt::format("log the gradient norm in {}'s runs (or point [results] logs at runs "
                           "that do)",
                           rule.challenger);
    r.reason = r.missing;
    return r;
  }
  if (anomalies.empty()) {
    r.status = CriterionStatus::kPass;
    r.reason = fmt::format("{} {} read: no non-finite values, skipped updates or spikes",
                           runs_read, runs_read == 1 ? "run" : "runs");
  } else {
    r.status = CriterionStatus::kFail;
    r.reason = fmt::format("{}", fmt::join(anomalies, "; "));
  }
  return r;
}

Verdict ApplyRule(const std::vector<CriterionResult>& criteria, const RuleSpec& rule) {
  Verdict v;
  std::vector<std::string> failed, unknown;
  for (const CriterionResult& c : criteria) {
    if (c.status == CriterionStatus::kFail) failed.push_back(c.name);
    if (c.status == CriterionStatus::kUnknown) unknown.push_back(c.name);
  }
  if (failed.empty() && unknown.empty()) {
    v.chosen_arm = rule.challenger;
    v.challenger_picked = true;
    for (const CriterionResult& c : criteria) v.decided_by.push_back(c.name);
    v.summary = criteria.empty()
                    ? fmt::format("pick {}: the rule lists no criteria", rule.challenger)
                    : fmt::format("pick {}: every criterion passes ({})", rule.challenger,
                                  fmt::join(v.decided_by, ", "));
    for (const CriterionResult& c : criteria) {
      if (!c.caveat.empty()) v.caveats.push_back(fmt::format("{}: {}", c.name, c.caveat));
    }
    if (!v.caveats.empty()) v.summary += fmt::format("; but {}", fmt::join(v.caveats, "; "));
    return v;
  }
  v.chosen_arm = rule.default_arm;
  if (!failed.empty()) {
    v.decided_by = failed;
    v.summary = fmt::format("keep {}: {} {}", rule.default_arm, fmt::join(failed, ", "),
                            failed.size() == 1 ? "fails" : "fail");
    if (!unknown.empty()) {
      v.summary += fmt::format(" ({} also unknown)", fmt::join(unknown, ", "));
    }
  } else {
    v.decided_by = unknown;
    v.summary = fmt::format("keep {} for now: {} {} unknown, and the default stands until {} "
                            "settled",
                            rule.default_arm, fmt::join(unknown, ", "),
                            unknown.size() == 1 ? "is" : "are",
                            unknown.size() == 1 ? "it is" : "they are");
  }
  return v;
}

}  // namespace mosaic
