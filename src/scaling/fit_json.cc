#include "mosaic/scaling/fit_json.h"

#include <cmath>

namespace mosaic::scaling {
namespace {

using Json = nlohmann::ordered_json;

// JSON has no NaN or infinity: non-finite values are written as null.
Json Number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

}  // namespace

nlohmann::ordered_json FitJson(const Law& law, const FittedArm& arm) {
  const FitSummary& s = arm.fit;
  Json j;
  j["law"] = law.name;
  j["formula"] = law.formula;
  j["termination"] = ToString(s.termination);
  j["message"] = s.message;
  j["cautions"] = s.cautions;
  if (arm.bootstrap) {
    for (const std::string& c : arm.bootstrap->cautions) j["cautions"].push_back(c);
  }
  j["objective"] = Number(s.objective);
  Json params = Json::object();
  for (const FittedParam& p : s.params) params[p.name] = Number(p.value);
  j["params"] = params;
  Json pinned = Json::array();
  for (const FittedParam& p : s.params) {
    if (p.pinned) pinned.push_back(p.name);
  }
  j["pinned"] = pinned;
  if (arm.bootstrap) {
    Json intervals = Json::object();
    for (size_t i = 0; i < s.params.size(); ++i) {
      intervals[s.params[i].name] = {Number(arm.bootstrap->params[i].low),
                                     Number(arm.bootstrap->params[i].high)};
    }
    j["intervals"] = intervals;
    j["bootstrap"] = {{"resamples", arm.bootstrap->resamples},
                      {"failed", arm.bootstrap->failed},
                      {"underdetermined", arm.bootstrap->underdetermined},
                      {"confidence", arm.bootstrap->confidence},
                      {"by", "run"}};
  }
  j["points"] = s.points;
  j["runs"] = s.runs;
  j["convergence"] = {{"starts", s.starts},
                      {"converged_starts", s.converged_starts},
                      {"tolerance", 1e-6},
                      {"cut_short_starts", s.cut_short_starts},
                      {"inferred_starts", s.inferred_starts},
                      {"failed_starts", s.failed_starts},
                      {"iterations", s.iterations}};
  const FitRecipe& r = s.recipe;
  Json pins = Json::object();
  for (const auto& [name, value] : r.pins) pins[name] = value;
  j["recipe"] = {{"law", r.law},         {"formula", r.formula},   {"citation", r.citation},
                 {"data", r.data},       {"subset_rule", r.subset_rule},
                 {"objective", r.loss},  {"space", r.space},       {"delta", r.delta},
                 {"grid", r.grid},       {"pins", pins},           {"solver", r.solver}};
  return j;
}

}  // namespace mosaic::scaling
