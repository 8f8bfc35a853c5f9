#include "mosaic/scaling/objective.h"

#include <fmt/format.h>

#include <cmath>

#include "location.h"
#include "mosaic/util/error.h"

namespace mosaic::scaling {

std::string_view ToString(LossKind kind) {
  switch (kind) {
    case LossKind::kHuber:
      return "huber";
    case LossKind::kSquared:
      return "squared";
  }
  return "";
}

std::string_view ToString(ResidualSpace space) {
  switch (space) {
    case ResidualSpace::kLog:
      return "log";
    case ResidualSpace::kLinear:
      return "linear";
  }
  return "";
}

LossKind LossKindFromString(std::string_view text) {
  if (text == "huber") return LossKind::kHuber;
  if (text == "squared") return LossKind::kSquared;
  throw FieldError(At("--objective"), "objective", text, "one of huber, squared");
}

ResidualSpace ResidualSpaceFromString(std::string_view text) {
  if (text == "log") return ResidualSpace::kLog;
  if (text == "linear") return ResidualSpace::kLinear;
  throw FieldError(At("--space"), "space", text, "one of log, linear");
}

void Objective::Validate() const {
  if (loss == LossKind::kHuber && !(delta > 0 && std::isfinite(delta))) {
    throw FieldError(At("--delta"), "delta", fmt::format("{}", delta), "delta > 0");
  }
}

double Objective::Rho(double r) const {
  switch (loss) {
    case LossKind::kHuber: {
      const double a = std::fabs(r);
      return a <= delta ? 0.5 * r * r : delta * (a - 0.5 * delta);
    }
    case LossKind::kSquared:
      return r * r;
  }
  return 0;
}

double Objective::RhoFirst(double r) const {
  switch (loss) {
    case LossKind::kHuber:
      return std::fabs(r) <= delta ? r : (r > 0 ? delta : -delta);
    case LossKind::kSquared:
      return 2 * r;
  }
  return 0;
}

double Objective::RhoSecond(double r) const {
  switch (loss) {
    case LossKind::kHuber:
      return std::fabs(r) <= delta ? 1 : 0;
    case LossKind::kSquared:
      return 2;
  }
  return 0;
}

std::string Objective::Describe() const {
  switch (loss) {
    case LossKind::kHuber:
      return fmt::format("huber(delta={}) on {} loss", delta, ToString(space));
    case LossKind::kSquared:
      return fmt::format("squared error on {} loss", ToString(space));
  }
  return "";
}

}  // namespace mosaic::scaling
