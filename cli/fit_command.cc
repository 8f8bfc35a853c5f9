// mosaic fit DATA.csv --law NAME: scaling-law fit with the Approach-3 recipe by default, bootstrap
// intervals, predictions, the compute-optimal frontier, held-out validation and two-arm comparison.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "mosaic/runs/run.h"
#include "mosaic/scaling/bootstrap.h"
#include "mosaic/scaling/data_table.h"
#include "mosaic/scaling/expression_law.h"
#include "mosaic/scaling/fit.h"
#include "mosaic/scaling/fit_json.h"
#include "mosaic/scaling/fit_request.h"
#include "mosaic/scaling/log_losses.h"
#include "mosaic/scaling/projection.h"
#include "mosaic/util/error.h"
#include "mosaic/util/json_output.h"
#include "mosaic/util/number_format.h"

namespace mosaic::cli {
namespace {

using namespace mosaic::scaling;
using Json = nlohmann::ordered_json;

struct FitCliOptions {
  std::string data;
  std::string law = "chinchilla";
  std::string law_expr;
  std::vector<std::string> params;
  std::vector<std::string> columns;
  std::string where;
  int drop_highest_loss = 0;
  std::string loss_column = "loss";
  std::vector<std::string> logs;
  std::string tag;
  int last_k = 1;
  std::string run_column = "run";
  std::string weight_column = "weight";
  std::string objective = "huber";
  std::string space = "log";
  std::optional<double> delta;  // the Huber threshold, when given
  std::vector<std::string> pins;
  int threads = 2;
  bool no_cut_short = false;
  int bootstrap = 0;
  uint64_t seed = 0;
  double confidence = 0.95;
  std::vector<std::string> predict;
  std::vector<double> frontier;
  double flops_per_param_token = 6;
  bool holdout = false;
  double holdout_ratio = 1.5;
  double holdout_fraction = 0;
  double holdout_above = 0;
  std::string compare;
  double at_flops = 0;
  double tps_ratio = 1;
  bool json = false;
  std::string output;
};

SourceLocation Flag(std::string name) {
  SourceLocation where;
  where.origin = std::move(name);
  return where;
}

// JSON has no NaN or infinity: non-finite values are written as null.
Json Number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

using Arm = FittedArm;

// The library's fit request for the flags.
FitRequest Request(const FitCliOptions& o) {
  FitRequest r;
  r.columns = o.columns;
  r.where = o.where;
  r.drop_highest_loss = o.drop_highest_loss;
  r.loss_column = o.loss_column;
  r.run_column = o.run_column;
  r.weight_column = o.weight_column;
  r.logs = o.logs;
  r.tag = o.tag;
  r.last_k = o.last_k;
  r.objective = o.objective;
  r.space = o.space;
  if (o.delta) {
    if (o.objective != "huber") {
      throw UsageError(fmt::format(
          "--delta {:g} is the Huber threshold: it needs --objective huber, not {}", *o.delta,
          o.objective));
    }
    r.delta = *o.delta;
  }
  r.threads = o.threads;
  r.cut_short = !o.no_cut_short;
  r.bootstrap = o.bootstrap;
  r.seed = o.seed;
  r.confidence = o.confidence;
  // Every field comes from a flag: a value or combination the library refuses is a usage error.
  try {
    for (const std::string& p : o.pins) r.pins.push_back(ParsePin(p));
    CheckFitRequest(r, RequestNames::kFlags);
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
  return r;
}

// The built-in law --law names (a usage error, with "did you mean", when there is none).
const Law& LawOfFlag(const std::string& name) {
  try {
    return FindLaw(name);
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
}

DataTable LoadTable(const std::string& path, const FitCliOptions& o) {
  DataTable table = ReadCsv(path);
  PrepareTable(table, Request(o));
  return table;
}

std::string Interval(const std::optional<scaling::Interval>& i) {
  if (!i) return "";
  return fmt::format("  [{:.6g}, {:.6g}]", i->low, i->high);
}

// A multiplier's interval, to the multiplier's own four significant digits.
std::string MultiplierInterval(const std::optional<scaling::Interval>& i) {
  if (!i) return "";
  return fmt::format("  [{:#.4g}, {:#.4g}]", i->low, i->high);
}

std::string FitText(const Law& law, const Arm& arm, const std::string& title) {
  const FitSummary& s = arm.fit;
  std::string out = fmt::format("{}{} fit: {}\n", title, law.name, law.formula);
  out += fmt::format("  {}\n", s.message);
  out += fmt::format("  objective {:.10g} ({}) on {} points, {} runs\n", s.objective,
                     s.recipe.objective, s.points, s.runs);
  for (const std::string& caution : s.cautions) out += "  caution: " + caution + "\n";
  if (arm.bootstrap) {
    for (const std::string& caution : arm.bootstrap->cautions) out += "  caution: " + caution + "\n";
  }
  out += "\nParameters";
  if (arm.bootstrap) {
    out += fmt::format(" ({:g}% percentile intervals, bootstrap by run, {} resamples{}{})",
                       arm.bootstrap->confidence * 100, arm.bootstrap->resamples,
                       arm.bootstrap->failed > 0
                           ? fmt::format(", {} not converged and dropped", arm.bootstrap->failed)
                           : "",
                       arm.bootstrap->underdetermined > 0
                           ? fmt::format(", {} with too few distinct points dropped",
                                         arm.bootstrap->underdetermined)
                           : "");
  }
  out += "\n";
  for (size_t i = 0; i < s.params.size(); ++i) {
    const FittedParam& p = s.params[i];
    out += fmt::format("  {:<8} {:>14.6g}{}{}\n", p.name, p.value, p.pinned ? "  (pinned)" : "",
                       arm.bootstrap ? Interval(arm.bootstrap->params[i]) : "");
  }
  out += "\nRecipe\n";
  out += fmt::format("  data       {} ({})\n", s.recipe.data, s.recipe.subset_rule);
  out += fmt::format("  objective  {}\n", s.recipe.objective);
  out += fmt::format("  grid       {}\n", s.recipe.grid);
  out += fmt::format("  solver     {}\n", s.recipe.solver);
  out += fmt::format("  starts     {} certified to reach the best objective within 1e-6, {} "
                     "counting starts cut short early ({} cut short on entering a known basin, "
                     "{} failed)\n",
                     s.converged_starts, s.inferred_starts, s.cut_short_starts, s.failed_starts);
  out += fmt::format("  source     {}\n", law.citation);
  return out;
}

std::string PointText(const InputPoint& point) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : point) parts.push_back(fmt::format("{}={:g}", name, value));
  return fmt::format("{}", fmt::join(parts, ","));
}

// --law-expr: fit, print and predict; the projections that need a built-in law's structure
// (bootstrap warm starts, frontier, holdout, comparison) are refused.
void RunExpression(const FitCliOptions& o) {
  const FitOptions fit_options = MakeFitOptions(Request(o));
  const auto refuse = [](bool given, const char* flag) {
    if (given) {
      throw UsageError(fmt::format("{} is not supported with --law-expr (only the fit and "
                                   "--predict are)",
                                   flag));
    }
  };
  refuse(o.bootstrap > 0, "--bootstrap");
  refuse(!o.frontier.empty(), "--frontier");
  refuse(o.holdout || o.holdout_fraction > 0 || o.holdout_above > 0, "--holdout");
  refuse(!o.compare.empty(), "--compare");
  std::vector<ExpressionParam> params;
  for (const std::string& text : o.params) {
    for (ExpressionParam& p : ParseExpressionParams(text)) params.push_back(std::move(p));
  }
  std::vector<std::string> pinned;
  for (const auto& [name, value] : fit_options.pins) pinned.push_back(name);
  const DataTable table = LoadTable(o.data, o);
  const ExpressionLaw expression = MakeExpressionLaw(o.law_expr, params, table.names, pinned);
  if (std::find(expression.inputs.begin(), expression.inputs.end(), o.loss_column) !=
      expression.inputs.end()) {
    throw FieldError(Flag("--law-expr"), "--law-expr", "'" + o.law_expr + "'",
                     fmt::format("an expression of the inputs, not of the loss column '{}' it "
                                 "is fitted to",
                                 o.loss_column));
  }
  const Law law = expression.Describe();
  Arm arm;
  arm.data = SelectFitData(table, law,
                           {.loss_column = o.loss_column,
                            .run_column = o.run_column,
                            .weight_column = o.weight_column});
  arm.fit = FitExpression(expression, arm.data, fit_options);
  ExpressionEvaluator evaluate(expression);
  std::vector<std::pair<InputPoint, double>> predictions;
  for (const std::string& text : o.predict) {
    const InputPoint point = ParseInputPoint(text);
    std::vector<double> x(law.inputs.size(), NAN);
    for (const auto& [name, value] : point) {
      const int i = law.InputIndex(name);
      if (i < 0) {
        throw UsageError(fmt::format("--predict {}: the expression has no input '{}'; inputs: {}",
                                     text, name, fmt::join(expression.inputs, ", ")));
      }
      x[i] = value;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        throw UsageError(fmt::format("--predict {}: missing input {} (the expression's inputs: "
                                     "{})",
                                     text, law.inputs[i].name, fmt::join(expression.inputs, ", ")));
      }
    }
    const double loss = evaluate(x.data(), arm.fit.theta.data());
    if (!std::isfinite(loss)) {
      throw InputError(fmt::format("--predict {}: the fitted expression gives {} there. Violated "
                                   "constraint: a finite loss (an input outside the range the "
                                   "law holds for)",
                                   text, loss));
    }
    predictions.emplace_back(point, loss);
  }
  if (o.json) {
    Json j = FitJson(law, arm);
    Json preds = Json::array();
    for (const auto& [point, loss] : predictions) {
      preds.push_back({{"at", PointText(point)}, {"loss", Number(loss)}});
    }
    j["predictions"] = preds;
    EmitOutput(o.output, DumpJson(j) + "\n");
    return;
  }
  std::string out = FitText(law, arm, "");
  if (!predictions.empty()) {
    out += "\nPredictions\n";
    for (const auto& [point, loss] : predictions) {
      out += fmt::format("  {:<24} loss {}\n", PointText(point), FormatFixed(loss, 5));
    }
  }
  EmitText(o.output, out);
}

// A flag's expression given but blank ('--where ""') is a malformed flag, not "no filter".
CLI::Validator NonEmptyExpression() {
  return CLI::Validator(
      [](const std::string& text) {
        return text.find_first_not_of(" \t") == std::string::npos
                   ? std::string("an expression, not empty")
                   : std::string();
      },
      "EXPRESSION");
}

// The files the fit reads: the data, the second arm and the log files under --logs.
std::vector<std::string> InputFiles(const FitCliOptions& o) {
  std::vector<std::string> files = {o.data, o.compare};
  if (!o.logs.empty()) {
    for (std::string& file : runs::LogFiles(runs::DiscoverRuns(o.logs))) {
      files.push_back(std::move(file));
    }
  }
  return files;
}

void Run(const FitCliOptions& o) {
  CheckOutputIsNotInput(o.output, InputFiles(o));
  if (!o.law_expr.empty()) {
    RunExpression(o);
    return;
  }
  if (!o.params.empty()) throw UsageError("--param needs --law-expr (a built-in law has its grid)");
  const Law& law = LawOfFlag(o.law);
  const FitRequest request = Request(o);
  const FitOptions fit_options = MakeFitOptions(request);
  try {
    PinnedTheta(law, fit_options.pins);  // a pin against the law's form is a bad --pin value
  } catch (const InputError& error) {
    throw AsUsageError(error);
  }
  if (!(o.flops_per_param_token > 0)) {
    throw FlagError("--flops-per-param-token", fmt::format("{}", o.flops_per_param_token),
                    "> 0");
  }
  if (!o.frontier.empty() && !HasComputeOptimalFrontier(law)) {
    throw FlagError("--frontier", fmt::format("{:g}", o.frontier.front()),
                    fmt::format("the compute-optimal frontier needs the chinchilla law (inputs N "
                                "and D), not --law {}",
                                law.name));
  }

  const Arm base = FitFile(law, o.data, request, 0);
  const BootstrapResult* boot = base.bootstrap ? &*base.bootstrap : nullptr;
  std::vector<Prediction> predictions;
  for (const std::string& text : o.predict) {
    // A point the law cannot take (an input it lacks or needs, a value out of its range) is a
    // --predict value out of range: a usage error, as a malformed one is.
    try {
      predictions.push_back(
          Predict(law, base.fit, boot, ParseInputPoint(text), o.flops_per_param_token));
    } catch (const InputError& e) {
      throw AsUsageError(e);
    }
  }
  std::vector<FrontierPoint> frontier;
  for (double c : o.frontier) {
    frontier.push_back(ComputeOptimal(law, base.fit.theta, c, o.flops_per_param_token));
  }
  std::optional<HoldoutResult> holdout;
  HoldoutSelection selection;
  selection.budget_ratio = o.holdout_ratio;
  selection.fraction = o.holdout_fraction;
  selection.above_flops = o.holdout_above;
  if (o.holdout || o.holdout_fraction > 0 || o.holdout_above > 0) {
    FitOptions h = fit_options;
    h.subset_rule = SubsetRule(request) + "; held out: the largest budgets";
    holdout = Holdout(law, base.data, h, selection, o.flops_per_param_token);
    holdout->fit.recipe.subset_rule =
        SubsetRule(request) + "; held out: " + selection.Describe(holdout->threshold_flops);
  }
  std::optional<Arm> other;
  std::optional<Comparison> comparison;
  if (!o.compare.empty()) {  // with --at > 0: the flags need each other
    other = FitFile(law, o.compare, request, 1);
    comparison = CompareArms(law, base.fit, other->fit, o.at_flops, o.tps_ratio, boot,
                             other->bootstrap ? &*other->bootstrap : nullptr, o.confidence,
                             o.flops_per_param_token);
  }

  if (o.json) {
    Json j = FitJson(law, base);
    Json preds = Json::array();
    for (const Prediction& p : predictions) {
      Json inputs = Json::object();
      for (size_t i = 0; i < law.inputs.size(); ++i) inputs[law.inputs[i].name] = p.inputs[i];
      Json e = {{"at", PointText(p.point)}, {"inputs", inputs}, {"loss", Number(p.loss)}};
      if (p.interval) e["interval"] = {Number(p.interval->low), Number(p.interval->high)};
      preds.push_back(e);
    }
    j["predictions"] = preds;
    if (!frontier.empty()) {
      Json f = Json::array();
      for (const FrontierPoint& p : frontier) {
        f.push_back({{"C", p.compute_flops}, {"N", p.params}, {"D", p.tokens},
                     {"loss", Number(p.loss)}});
      }
      j["frontier"] = {{"flops_per_param_token", o.flops_per_param_token}, {"points", f}};
    }
    if (holdout) {
      j["holdout"] = {{"threshold_flops", holdout->threshold_flops},
                      {"rule", selection.Describe(holdout->threshold_flops)},
                      {"train_points", holdout->train_points},
                      {"held_out_points", holdout->held_out_points},
                      {"objective", Number(holdout->fit.objective)},
                      {"mean_abs_error", Number(holdout->mean_abs_error)},
                      {"mean_rel_error", Number(holdout->mean_rel_error)},
                      {"rms_log_error", Number(holdout->rms_log_error)}};
    }
    if (comparison) {
      Json c = {{"arm", FitJson(law, *other)},
                {"at_flops", comparison->compute_flops},
                {"base_loss", Number(comparison->base_loss)},
                {"arm_loss", Number(comparison->arm_loss)},
                {"effective_compute_multiplier", Number(comparison->multiplier)},
                {"multiplier_definition", comparison->definition},
                {"multiplier_undefined_reason", comparison->undefined_reason.empty()
                                                    ? Json(nullptr)
                                                    : Json(comparison->undefined_reason)},
                {"tokens_per_s_ratio", o.tps_ratio},
                {"wall_clock_multiplier", Number(comparison->wall_clock_multiplier)}};
      if (comparison->multiplier_interval) {
        c["multiplier_interval"] = {Number(comparison->multiplier_interval->low),
                                    Number(comparison->multiplier_interval->high)};
        c["wall_clock_interval"] = {Number(comparison->wall_clock_interval->low),
                                    Number(comparison->wall_clock_interval->high)};
      }
      j["comparison"] = c;
    }
    EmitOutput(o.output, DumpJson(j) + "\n");
    return;
  }

  std::string out = FitText(law, base, "");
  if (!predictions.empty()) {
    out += "\nPredictions\n";
    for (const Prediction& p : predictions) {
      std::vector<std::string> inputs;
      for (size_t i = 0; i < law.inputs.size(); ++i) {
        inputs.push_back(fmt::format("{}={}", law.inputs[i].name, FormatScientific(p.inputs[i], 4)));
      }
      out += fmt::format("  {:<24} loss {}{}   ({})\n", PointText(p.point), FormatFixed(p.loss, 5),
                         Interval(p.interval), fmt::join(inputs, ", "));
    }
  }
  if (!frontier.empty()) {
    out += fmt::format("\nCompute-optimal frontier (C = {:g}·N·D)\n", o.flops_per_param_token);
    out += fmt::format("  {:>10} {:>10} {:>10} {:>10} {:>8}\n", "C", "N*", "D*", "D*/N*", "loss");
    for (const FrontierPoint& p : frontier) {
      out += fmt::format("  {:>10} {:>10} {:>10} {:>10} {:>8}\n",
                         FormatScientific(p.compute_flops), FormatCount(p.params),
                         FormatCount(p.tokens), FormatFixed(p.tokens / p.params, 1),
                         FormatFixed(p.loss, 4));
    }
  }
  if (holdout) {
    out += fmt::format(
        "\nHeld out: {} {} with {}; fit on the other {}: objective {:.6g}, {}\n  error on the "
        "held-out {}: mean |L̂ − L| {:.4f} nats, mean relative {:.2f}%, RMS log error {:.4f}\n",
        holdout->held_out_points, holdout->held_out_points == 1 ? "point" : "points",
        selection.Describe(holdout->threshold_flops), holdout->train_points,
        holdout->fit.objective, holdout->fit.message,
        holdout->held_out_points == 1 ? "point" : "points",
        holdout->mean_abs_error, 100 * holdout->mean_rel_error, holdout->rms_log_error);
  }
  if (comparison) {
    out += "\n" + FitText(law, *other, "Arm (" + o.compare + "): ");
    out += fmt::format("\nComparison at C = {}: base loss {:.5f}, arm loss {:.5f}\n",
                       FormatScientific(comparison->compute_flops), comparison->base_loss,
                       comparison->arm_loss);
    if (comparison->undefined_reason.empty()) {
      out += fmt::format("  effective-compute multiplier {:#.4g}{}  ({})\n",
                         comparison->multiplier,
                         MultiplierInterval(comparison->multiplier_interval),
                         comparison->definition);
      out += fmt::format("  wall-clock multiplier        {:#.4g}{}  (× tokens/s ratio {:g})\n",
                         comparison->wall_clock_multiplier,
                         MultiplierInterval(comparison->wall_clock_interval), o.tps_ratio);
    } else {
      out += fmt::format("  effective-compute multiplier undefined: {}\n",
                         comparison->undefined_reason);
      out += "  wall-clock multiplier        undefined\n";
    }
  }
  EmitText(o.output, out);
}

}  // namespace

void AddFitCommand(CLI::App& root) {
  auto o = std::make_shared<FitCliOptions>();
  CLI::App* cmd = root.add_subcommand(
      "fit",
      "Fit a scaling law to a CSV of runs (one row per run or checkpoint; columns named after the "
      "law's inputs and 'loss', optionally 'run' and 'weight'). Defaults reproduce Hoffmann et "
      "al.'s Approach 3: Huber delta=1e-3 on log loss, the 4500-start grid.\n\nExamples:\n"
      "  mosaic fit chinchilla.csv --law chinchilla --column 'N=Model Size' \\\n"
      "      --column 'C=Training FLOP' --column 'D=C/(6*N)' --drop-highest-loss 5\n"
      "  mosaic fit runs.csv --law chinchilla --bootstrap 1000 --predict N=70e9,D=1.4e12 "
      "--frontier 1e24\n"
      "  mosaic fit fsdp.csv --law compute --pin E=1.6 --pin alpha=0.0941 --compare ep.csv "
      "--at 1e21 --tps-ratio 1.2\n"
      "  mosaic fit runs.csv --law chinchilla --holdout --json");
  cmd->add_option("data", o->data, "CSV file of runs")->required();
  CLI::Option* law_option =
      cmd->add_option("--law", o->law,
                      "law: compute, chinchilla, sparse, abnar, krajewski, clark, ludziejewski")
          ->default_val("chinchilla");
  cmd->add_option("--law-expr", o->law_expr,
                  "a user-written law over data columns and parameters (muparser), e.g. "
                  "'E + A*N^(-alpha) + B*D^(-beta)'; parameters need --param")
      ->excludes(law_option)
      ->check(NonEmptyExpression());
  cmd->add_option("--param", o->params,
                  "start values of --law-expr parameters: NAME=START or NAME=LO:HI:STEP (a start "
                  "grid), comma separated, e.g. E=1.5,A=400,alpha=0:2:0.5 (repeatable)")
      ->take_all();
  cmd->add_option("--column", o->columns,
                  "NAME=COLUMN or NAME=EXPRESSION (muparser), applied in order (repeatable)")
      ->take_all();
  cmd->add_option("--where", o->where, "keep rows where the expression is true, e.g. 'C < 1e21'")
      ->check(NonEmptyExpression());
  cmd->add_option("--drop-highest-loss", o->drop_highest_loss,
                  "drop the K rows with the highest loss, before --where filters the rest "
                  "(Epoch's Chinchilla subset: 5)")
      ->check(InRange(0, 1e6));
  cmd->add_option("--loss-column", o->loss_column, "column of the observed loss")
      ->default_val("loss");
  CLI::Option* logs =
      cmd->add_option("--logs", o->logs,
                      "take each row's loss from training logs: LOGDIR (repeatable); the CSV's "
                      "run column names the run (as `mosaic runs` prints it)")
          ->take_all();
  cmd->add_option("--tag", o->tag, "with --logs: the scalar tag holding the loss")->needs(logs);
  cmd->add_option("--last-k", o->last_k,
                  "with --logs: average the last K finite points of each run (1: the final value)")
      ->check(InRange(1, 1e6))
      ->needs(logs);
  cmd->add_option("--run-column", o->run_column, "column naming the run of each row")
      ->default_val("run");
  cmd->add_option("--weight-column", o->weight_column, "column of point weights")
      ->default_val("weight");
  cmd->add_option("--objective", o->objective, "huber or squared")->default_val("huber");
  cmd->add_option("--space", o->space, "residuals of log loss or linear loss")->default_val("log");
  cmd->add_option("--delta", o->delta, "Huber threshold (default 1e-3; --objective huber only)")
      ->check(InRange(0, 1e6, true));
  cmd->add_option("--pin", o->pins, "fix a parameter: NAME=VALUE, e.g. E=1.6 (repeatable)")
      ->take_all();
  cmd->add_option("--threads", o->threads, "threads for the multi-start and the bootstrap")
      ->check(InRange(1, 1024))
      ->default_val(2);
  cmd->add_flag("--no-cut-short", o->no_cut_short,
                "run every start to the end (no basin memo): slower, and every start that "
                "reaches the best objective is certified");
  cmd->add_option("--bootstrap", o->bootstrap, "bootstrap resamples (by run); 0: none")
      ->check(InRange(0, 1e6));
  cmd->add_option("--seed", o->seed, "bootstrap seed")->default_val(0);
  cmd->add_option("--confidence", o->confidence, "interval confidence")->default_val(0.95)->check(InRange(0, 1, true, true));
  cmd->add_option("--predict", o->predict,
                  "predict loss at INPUT=V[,INPUT=V]: N=70e9,D=1.4e12 or C=1e24 (repeatable)")
      ->take_all();
  cmd->add_option("--frontier", o->frontier, "compute-optimal N*, D*, loss at budget C")
      ->take_all()
      ->check(InRange(0, 1e300, true));
  cmd->add_option("--flops-per-param-token", o->flops_per_param_token,
                  "k in C = k·N·D (6: the 6ND convention)")
      ->default_val(6)
      ->check(InRange(0, 1e6, true));
  cmd->add_flag("--holdout", o->holdout,
                "fit on the smaller budgets, report the error on the largest");
  CLI::Option* ratio =
      cmd->add_option("--holdout-ratio", o->holdout_ratio,
                      "held out: the points within this factor of the largest compute (default; "
                      "implies --holdout)")
          ->default_val(1.5)
          ->check(InRange(1, 1e300))
          ->each([o](const std::string&) { o->holdout = true; });
  CLI::Option* fraction =
      cmd->add_option("--holdout-fraction", o->holdout_fraction,
                      "held out: this fraction of the points, those with the largest compute "
                      "(implies --holdout)")
          ->check(InRange(0, 1, true, true));
  CLI::Option* above = cmd->add_option("--holdout-above", o->holdout_above,
                                       "held out: the points with compute >= C FLOPs (implies "
                                       "--holdout)")
                           ->check(InRange(0, 1e300, true));
  fraction->excludes(ratio);
  above->excludes(ratio);
  above->excludes(fraction);
  CLI::Option* compare =
      cmd->add_option("--compare", o->compare, "second arm's CSV: effective-compute multiplier");
  CLI::Option* at = cmd->add_option("--at", o->at_flops, "matched budget C (FLOPs) for --compare")
                        ->check(InRange(0, 1e300, true))
                        ->needs(compare);
  compare->needs(at);
  cmd->add_option("--tps-ratio", o->tps_ratio, "arm tokens/s over base tokens/s")
      ->default_val(1)
      ->needs(compare)
      ->check(InRange(0, 1e300, true));
  cmd->add_flag("--json", o->json, "machine-readable output");
  AddOutputOption(cmd, &o->output);
  cmd->callback([o] { Run(*o); });
}

}  // namespace mosaic::cli
