#include "mosaic/codesign/codesign.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

#include "mosaic/model/flops.h"
#include "mosaic/model/param_count.h"
#include "mosaic/scaling/fit.h"
#include "mosaic/study/study_config.h"
#include "mosaic/util/embedded_data.h"
#include "mosaic/util/input_path.h"
#include "mosaic/util/parallel_for.h"
#include "mosaic/util/text_input.h"

namespace mosaic {

std::string Architecture::Name() const {
  // A field not known (kUnknownField: the model was invalid before it was derived or taken from
  // the base model) reads "?"; so do a depth and an expert width of 0.
  auto known = [](int64_t v) { return v >= 0 ? std::to_string(v) : std::string("?"); };
  auto positive = [](int64_t v) { return v > 0 ? std::to_string(v) : std::string("?"); };
  std::string name =
      fmt::format("d{} L{} E{} k{} w{} s{}", known(d_model), positive(layers), known(experts),
                  known(top_k), positive(expert_width), known(shared_experts));
  if (latent_dim > 0) name += fmt::format(" l{}", latent_dim);
  return name;
}

std::string_view ToString(ArchRejection kind) {
  switch (kind) {
    case ArchRejection::kNone: return "";
    case ArchRejection::kModel: return "model";
    case ArchRejection::kMemory: return "memory";
    case ArchRejection::kDomain: return "domain";
    case ArchRejection::kDivisibility: return "divisibility";
    case ArchRejection::kBudget: return "budget";
  }
  return "?";
}

struct SweepContext {
  std::string base_text;
  std::string base_origin;
  ModelSpec base;
  PerfSetup setup;
  SearchOptions search;
  AxesSpec axes;
};

namespace {

// The TOML text of a model preset or file, read once.
std::pair<std::string, std::string> ModelText(const std::string& name_or_path) {
  if (IsPathArgument(name_or_path)) {
    return {ReadTextFile(name_or_path), name_or_path};
  }
  auto text = FindEmbeddedFile("models/" + name_or_path + ".toml");
  if (!text) LoadModel(name_or_path);  // throws the unknown-preset error
  return {std::string(*text), "preset " + name_or_path};
}

int64_t Resolve(const AxisValue& value, std::string_view field, int64_t d_model) {
  ArmOverride o;
  o.field = std::string(field);
  o.value = value;
  return std::stoll(ResolveOverride(o, d_model));
}

template <typename T>
std::vector<T> OrOne(const std::vector<T>& axis, T missing) {
  return axis.empty() ? std::vector<T>{missing} : axis;
}

constexpr int64_t kUnset = -1;

}  // namespace

std::vector<Architecture> EnumerateArchitectures(const SpaceConfig& space) {
  const AxesSpec& a = space.axes;
  std::vector<Architecture> all;
  // kUnset: the base model's (or its family's derived) value; filled in by EvaluateRange.
  for (int64_t d : OrOne(a.d_model, kUnset)) {
    std::vector<int64_t> layer_values = OrOne(a.layers, kUnset);
    if (a.aspect_ratio > 0 && d != kUnset) {
      layer_values = {std::max<int64_t>(1, LayersForAspectRatio(d, a.aspect_ratio))};
    }
    for (int64_t layers : layer_values) {
      for (int64_t experts : OrOne(a.experts, kUnset)) {
        for (int64_t top_k : OrOne(a.top_k, kUnset)) {
          std::vector<int64_t> widths;
          if (!a.granularity.empty()) {
            for (int64_t g : a.granularity) widths.push_back(-1000 - g);  // decoded below
          } else if (!a.expert_width.empty()) {
            for (size_t i = 0; i < a.expert_width.size(); ++i) widths.push_back(-2000 - int64_t(i));
          } else {
            widths.push_back(kUnset);
          }
          for (int64_t width : widths) {
            for (int64_t shared : OrOne(a.shared_experts, kUnset)) {
              const size_t latents = std::max<size_t>(1, a.latent_dim.size());
              for (size_t l = 0; l < latents; ++l) {
                Architecture arch;
                arch.d_model = d;
                arch.layers = layers;
                arch.experts = experts;
                arch.top_k = top_k;
                arch.expert_width = width;
                arch.shared_experts = shared;
                arch.latent_dim = a.latent_dim.empty() ? kUnset : -2000 - int64_t(l);
                all.push_back(arch);
              }
            }
          }
        }
      }
    }
  }
  return all;
}

namespace {

// The performance job of the space's base model: what every architecture's layout search runs.
PerfRequest SweepRequest(const SpaceConfig& space) {
  PerfRequest request;
  request.model = space.base;
  request.hardware = space.hardware;
  request.gpus = space.gpus;
  request.batch = space.search.batch_seqs;
  request.seq = space.search.seq_len;
  SetFormatAndRouting(request, space.search.format, space.search.routing);
  request.capacity_factor = space.search.capacity_factor;
  request.profile = space.search.profile;
  return request;
}

}  // namespace

std::shared_ptr<const SweepContext> PrepareSweep(const SpaceConfig& space) {
  auto context = std::make_shared<SweepContext>();
  std::tie(context->base_text, context->base_origin) = ModelText(space.base);
  context->base = LoadModelFromToml(context->base_text, context->base_origin);
  context->setup = PreparePerf(SweepRequest(space));
  context->search.top = 1;
  context->search.max_cp = space.search.max_cp;
  context->search.max_vpp = space.search.max_vpp;
  context->search.examples_per_reason = 1;
  context->axes = space.axes;
  return context;
}

void EvaluateRange(const SweepContext& c, const std::vector<Architecture>& all, size_t begin,
                   size_t end, std::vector<ArchitectureResult>& out) {
  const PerfSetup& setup = c.setup;
  for (size_t i = begin; i < end; ++i) {
    ArchitectureResult& r = out[i];
    r = ArchitectureResult();
    r.arch = all[i];
    Architecture& a = r.arch;
    std::vector<FieldOverride> overrides;
    // Each value is the architecture's, from the space's [axes].
    auto set = [&](std::string_view field, int64_t value) {
      overrides.push_back({std::string(field), std::to_string(value), {"[axes]", 0, 0, ""}});
    };
    const int64_t d = a.d_model != kUnset ? a.d_model : c.base.config.d_model;
    try {
      if (a.d_model != kUnset) set("d_model", a.d_model);
      if (a.layers != kUnset) set("layers", a.layers);
      if (a.experts != kUnset) set("experts", a.experts);
      if (a.top_k != kUnset) set("top_k", a.top_k);
      if (a.expert_width <= -2000) {
        set("expert_width", Resolve(c.axes.expert_width[size_t(-2000 - a.expert_width)],
                                    "expert_width", d));
      } else if (a.expert_width <= -1000) {
        const int64_t g = -1000 - a.expert_width;
        if ((4 * d) % g != 0) {
          throw InputError(fmt::format("granularity {}: 4·d_model = {} is not a multiple of it",
                                       g, 4 * d));
        }
        set("expert_width", 4 * d / g);
      }
      if (a.shared_experts != kUnset) set("shared_experts", a.shared_experts);
      if (a.latent_dim != kUnset) {
        set("latent_dim", Resolve(c.axes.latent_dim[size_t(-2000 - a.latent_dim)], "latent_dim", d));
      }
    } catch (const InputError& error) {
      r.rejected = ArchRejection::kModel;
      r.rule = error.what();
    }
    ModelSpec spec;
    if (r.feasible()) {
      try {
        spec = LoadModelFromToml(c.base_text, c.base_origin, overrides);
      } catch (const InputError& error) {
        r.rejected = ArchRejection::kModel;
        r.rule = error.what();
      }
    }
    // The architecture as the model has it (derived fields included).
    const ModelConfig& m = r.feasible() ? spec.config : c.base.config;
    if (r.feasible()) {
      a.d_model = m.d_model;
      a.layers = m.layers;
      a.experts = m.experts;
      a.top_k = m.top_k;
      a.expert_width = m.expert_width;
      a.shared_experts = m.shared_experts;
      a.latent_dim = m.latent_dim;
    } else {
      for (int64_t* field : {&a.d_model, &a.layers, &a.experts, &a.top_k, &a.expert_width,
                             &a.shared_experts, &a.latent_dim}) {
        if (*field < 0) *field = kUnknownField;
      }
    }
    r.cluster_loss = r.flops_loss = NAN;
    if (!r.feasible()) continue;
    const ParamCount params = CountParams(m);
    r.active_params = params.active_params;
    r.total_params = params.total_params;
    r.sparsity = params.sparsity;
    r.granularity = m.expert_width > 0 ? 4.0 * double(m.d_model) / double(m.expert_width) : 0;
    r.model_flops_per_token =
        3.0 * double(CountFlops(m, {FlopConvention::kPhysical, setup.job.seq_len}).forward_flops_per_token);
    // Exact prune: the weights, gradients and optimizer states alone, sharded perfectly over every
    // GPU, exceed the cluster's memory.
    const double state_bytes =
        double(r.total_params) *
        (2 + setup.profile.grad_bytes_per_param + setup.profile.optimizer_bytes_per_param);
    const double cluster_bytes = setup.hardware.hbm_gb * 1e9 * double(setup.cluster.gpus);
    if (state_bytes > cluster_bytes) {
      r.rejected = ArchRejection::kMemory;
      r.rule = fmt::format("weights, gradients and optimizer states alone need {:.1f} TB; the "
                           "cluster has {:.1f} TB",
                           state_bytes / 1e12, cluster_bytes / 1e12);
      continue;
    }
    ModelShape shape;
    try {
      shape = MakeModelShape(m, setup.job.seq_len);
    } catch (const InputError& error) {
      r.rejected = ArchRejection::kModel;
      r.rule = error.what();
      continue;
    }
    const SearchResult found = SearchLayouts(shape, setup.cluster, setup.job, setup.profiles.shared,
                                             setup.profile, setup.drop, c.search);
    r.layouts_evaluated = found.evaluated;
    if (!found.unsearchable.empty()) {
      // No layout can divide the job: the search says why without enumerating.
      r.rejected = ArchRejection::kDivisibility;
      r.rule = found.unsearchable;
      continue;
    }
    if (found.best.empty()) {
      // The reason met furthest along: memory, then domain, then the layout rules (a framework
      // rule or a degree that does not divide, both "divisibility" for the architecture).
      auto count = [&](RejectKind k) { return found.rejected[static_cast<int>(k)]; };
      const RejectKind pick = count(RejectKind::kMemory) > 0   ? RejectKind::kMemory
                              : count(RejectKind::kDomain) > 0 ? RejectKind::kDomain
                              : count(RejectKind::kIndivisible) > 0 ? RejectKind::kIndivisible
                                                                    : RejectKind::kUnsupported;
      r.rejected = pick == RejectKind::kMemory   ? ArchRejection::kMemory
                   : pick == RejectKind::kDomain ? ArchRejection::kDomain
                                                 : ArchRejection::kDivisibility;
      r.rule = "no layout fits: " + found.RejectedText();
      for (const Rejection& x : found.examples) {
        if (x.violation.kind == pick) {
          r.rule += fmt::format(" (e.g. {}: {})", ToString(x.layout), x.violation.rule);
          break;
        }
      }
      continue;
    }
    r.layout = found.best[0].layout;
    r.estimate = found.best[0].estimate;
  }
}

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double Loss(const scaling::Law& law, const std::vector<double>& theta, const ArchitectureResult& r,
            double tokens) {
  if (!(tokens > 0)) return NAN;
  std::vector<double> x(law.inputs.size());
  for (size_t i = 0; i < law.inputs.size(); ++i) {
    const std::string& name = law.inputs[i].name;
    if (name == "N") {
      x[i] = law.name == "abnar" ? double(r.total_params) : double(r.active_params);
    } else if (name == "D") {
      x[i] = tokens;
    } else if (name == "S") {
      x[i] = r.sparsity;
    } else if (name == "G") {
      x[i] = r.granularity;
    } else if (name == "E_count") {
      x[i] = double(r.arch.experts);
    } else if (name == "C") {
      x[i] = tokens * r.model_flops_per_token;
    } else {
      return NAN;
    }
    if (!law.ValidateInput(int(i), x[i]).empty()) return NAN;
  }
  return law.Predict(x.data(), theta.data());
}

std::vector<CurvePoint> Curve(const std::vector<ArchitectureResult>& archs,
                              double (*key)(const ArchitectureResult&)) {
  std::map<double, CurvePoint> points;
  for (size_t i = 0; i < archs.size(); ++i) {
    const ArchitectureResult& r = archs[i];
    if (!r.valid_model()) continue;
    const double x = std::round(key(r) * 1e9) / 1e9;
    auto [it, fresh] = points.try_emplace(x);
    CurvePoint& p = it->second;
    if (fresh) {
      p.x = x;
      p.cluster_loss = NAN;
      p.flops_loss = NAN;
    }
    if (!std::isnan(r.flops_loss) && !(r.flops_loss >= p.flops_loss)) {
      p.flops_loss = r.flops_loss;
      p.flops_index = i;
    }
    if (r.feasible() && !std::isnan(r.cluster_loss) && !(r.cluster_loss >= p.cluster_loss)) {
      p.cluster_loss = r.cluster_loss;
      p.cluster_index = i;
    }
  }
  std::vector<CurvePoint> curve;
  for (const auto& [x, p] : points) curve.push_back(p);
  return curve;
}

OptimumPlacement Place(double value, const std::vector<double>& eligible) {
  OptimumPlacement p;
  p.value = value;
  p.low = *std::min_element(eligible.begin(), eligible.end());
  p.high = *std::max_element(eligible.begin(), eligible.end());
  const double eps = 1e-9;
  p.interior = value > p.low + eps && value < p.high - eps;
  return p;
}

}  // namespace

CodesignResult Summarize(const SpaceConfig& space, std::vector<ArchitectureResult> archs) {
  CodesignResult result;
  result.space = space;
  result.law = scaling::FindLaw(space.law.name);
  const scaling::Law& law = result.law;
  // As `mosaic fit --pin` reads values (a scale of 0 drops its terms: θ = −inf).
  const std::vector<std::optional<double>> pinned = scaling::PinnedTheta(law, space.law.params);
  result.theta.resize(law.params.size());
  for (size_t j = 0; j < law.params.size(); ++j) result.theta[j] = pinned[j].value_or(0);
  const HardwareSpec hardware = LoadHardware(space.hardware);
  result.device = hardware.name;
  {
    // The profile every layout search used, and what perf would say of it.
    const PerfSetup setup = PreparePerf(SweepRequest(space));
    result.profile = setup.profile.name;
    result.profile_calibration = CalibrationText(setup.profile);
    result.perf_notes = PerfCautions(setup);
  }
  result.peak_flops_per_gpu = hardware.peak_bf16_tflops * 1e12;
  std::vector<double> mfus;
  for (const ArchitectureResult& r : archs) {
    if (r.feasible()) mfus.push_back(r.estimate.mfu);
  }
  const BudgetSpec& b = space.budget;
  if (b.reference_mfu > 0) {
    result.reference_mfu = b.reference_mfu;
    result.reference_mfu_rule = "[budget] reference_mfu";
  } else if (!mfus.empty()) {
    result.reference_mfu = Median(mfus);
    result.reference_mfu_rule =
        mfus.size() == 1 ? std::string("the MFU of the one architecture that fits")
                         : fmt::format("the median MFU of the {} architectures that fit",
                                       mfus.size());
  } else {
    // Nothing fits, so there is no MFU to convert the cluster's time into FLOPs.
    result.reference_mfu = 0;
    result.reference_mfu_rule = "no architecture fits the cluster, so there is no MFU to take "
                                "the median of: give [budget] reference_mfu";
  }
  const double gpus = double(space.gpus);
  const double cluster_flops_per_s = gpus * result.peak_flops_per_gpu * result.reference_mfu;
  if (b.gpu_hours > 0) {
    result.cluster_seconds = b.gpu_hours * 3600 / gpus;
    result.flops_budget = result.cluster_seconds * cluster_flops_per_s;
  } else if (b.days > 0) {
    result.cluster_seconds = b.days * 86400;
    result.flops_budget = result.cluster_seconds * cluster_flops_per_s;
  } else {
    result.flops_budget = b.model_flops;
    result.cluster_seconds = cluster_flops_per_s > 0 ? b.model_flops / cluster_flops_per_s : 0;
  }
  // Every kind of budget is held to the bound days has (a century of the cluster's wall-clock).
  constexpr double kMostDays = 36525;
  if (result.cluster_seconds > kMostDays * 86400) {
    SourceLocation at = b.where;
    if (at.origin.empty()) {
      at = SourceLocation();
      at.origin = space.origin;
    }
    throw LocatedError(
        at, fmt::format("[budget] {} is {:.4g} days of the cluster's wall-clock ({} GPUs{}). "
                        "Violated constraint: at most {:g} days (a century, as for days)",
                        b.gpu_hours > 0 ? fmt::format("gpu_hours = {:g}", b.gpu_hours)
                                        : fmt::format("model_flops = {:g}", b.model_flops),
                        result.cluster_seconds / 86400, space.gpus,
                        b.model_flops > 0
                            ? fmt::format(" at MFU {:.3g}", result.reference_mfu)
                            : "",
                        kMostDays));
  }
  // An architecture whose one optimizer step outlasts the cluster budget trains no whole step:
  // its tokens would be a fraction of one batch, which no run trains.
  for (ArchitectureResult& r : archs) {
    if (r.feasible() && r.estimate.step_seconds > result.cluster_seconds) {
      r.rejected = ArchRejection::kBudget;
      r.rule = fmt::format(
          "one optimizer step ({:.4g} s) is longer than the cluster budget ({:.4g} s): it trains "
          "no whole step",
          r.estimate.step_seconds, result.cluster_seconds);
    }
  }
  // Likewise a FLOPs-only budget that buys an architecture less than one global batch of tokens
  // gives it no loss: the law would be read at a fraction of one step.
  const double batch_tokens =
      static_cast<double>(space.search.batch_seqs) * static_cast<double>(space.search.seq_len);
  result.batch_tokens = batch_tokens;
  int64_t& under_one_batch = result.flops_under_one_batch;
  for (ArchitectureResult& r : archs) {
    r.cluster_loss = r.flops_loss = NAN;
    r.cluster_tokens = r.flops_tokens = 0;
    if (!r.valid_model() || !(result.flops_budget > 0)) continue;
    r.flops_tokens = result.flops_budget / r.model_flops_per_token;
    const bool flops_ranked = r.flops_tokens >= batch_tokens;
    if (flops_ranked) {
      r.flops_loss = Loss(law, result.theta, r, r.flops_tokens);
    } else {
      ++under_one_batch;
    }
    if (r.feasible()) {
      r.cluster_tokens = r.estimate.tokens_per_s_per_gpu * gpus * result.cluster_seconds;
      r.cluster_loss = Loss(law, result.theta, r, r.cluster_tokens);
    }
    // A loss the law cannot give as a number ranks nothing: the law's values are at fault.
    const bool flops_bad = flops_ranked && !std::isfinite(r.flops_loss);
    const double loss = flops_bad ? r.flops_loss : r.cluster_loss;
    if (flops_bad || (r.feasible() && !std::isfinite(r.cluster_loss))) {
      throw InputError(fmt::format(
          "[law] {} ({}) gives a loss of {} for {}. Violated constraint: a finite loss for every "
          "architecture (the law's values are out of their range)",
          space.law.name, space.law.origin, loss, r.arch.Name()));
    }
  }
  for (const ArchitectureResult& r : archs) result.layouts_evaluated += r.layouts_evaluated;
  for (size_t i = 0; i < archs.size(); ++i) {
    if (archs[i].feasible() && !std::isnan(archs[i].cluster_loss)) result.ranking.push_back(i);
    if (!std::isnan(archs[i].flops_loss) &&
        (!result.flops_optimum || archs[i].flops_loss < archs[*result.flops_optimum].flops_loss)) {
      result.flops_optimum = i;
    }
  }
  std::stable_sort(result.ranking.begin(), result.ranking.end(), [&](size_t x, size_t y) {
    return archs[x].cluster_loss < archs[y].cluster_loss;
  });
  if (!result.ranking.empty()) result.cluster_optimum = result.ranking[0];
  result.by_sparsity = Curve(archs, [](const ArchitectureResult& r) { return r.sparsity; });
  result.by_experts = Curve(archs, [](const ArchitectureResult& r) { return double(r.arch.experts); });

  // The cluster optimum is placed in the range of sparsity the space sweeps (every valid model):
  // at the sparsest architecture that fits it is interior when sparser ones exist. The FLOPs-only
  // optimum is placed among the architectures that budget ranks.
  std::vector<double> valid_s, flops_s;
  for (const ArchitectureResult& r : archs) {
    if (r.valid_model()) valid_s.push_back(r.sparsity);
    if (!std::isnan(r.flops_loss)) flops_s.push_back(r.sparsity);
  }
  if (result.flops_optimum) {
    result.flops_sparsity = Place(archs[*result.flops_optimum].sparsity, flops_s);
  }
  if (result.cluster_optimum) {
    result.cluster_sparsity = Place(archs[*result.cluster_optimum].sparsity, valid_s);
  }
  // Along the experts axis: the eligible architectures that differ from the optimum in their
  // expert count alone.
  const auto experts_placement = [&](size_t optimum, auto eligible) {
    const Architecture& o = archs[optimum].arch;
    std::vector<double> swept;
    for (const ArchitectureResult& r : archs) {
      const Architecture& a = r.arch;
      if (eligible(r) && a.d_model == o.d_model && a.layers == o.layers && a.top_k == o.top_k &&
          a.expert_width == o.expert_width && a.shared_experts == o.shared_experts &&
          a.latent_dim == o.latent_dim) {
        swept.push_back(double(a.experts));
      }
    }
    return Place(double(o.experts), swept);
  };
  if (result.flops_optimum) {
    result.flops_experts = experts_placement(
        *result.flops_optimum,
        [](const ArchitectureResult& r) { return !std::isnan(r.flops_loss); });
  }
  if (result.cluster_optimum) {
    result.cluster_experts = experts_placement(
        *result.cluster_optimum, [](const ArchitectureResult& r) { return r.valid_model(); });
  }
  double sparsest_fit = -1;
  for (size_t i : result.ranking) sparsest_fit = std::max(sparsest_fit, archs[i].sparsity);
  const bool over_budget = std::ranges::any_of(
      archs, [](const ArchitectureResult& r) { return r.rejected == ArchRejection::kBudget; });
  if (!result.cluster_optimum && over_budget) {
    result.finding = fmt::format(
        "every architecture that fits the cluster takes longer than the cluster budget ({:.4g} s) "
        "for one optimizer step: nothing to compare",
        result.cluster_seconds);
  } else if (!result.cluster_optimum) {
    result.finding = "no architecture of the space fits the cluster: nothing to compare";
  } else if (!result.flops_optimum) {
    result.finding =
        under_one_batch > 0
            ? fmt::format("no architecture has a loss under the FLOPs-only budget ({:.4g} model "
                          "FLOPs): it buys {} of them less than one batch of {:.4g} tokens",
                          result.flops_budget, under_one_batch, batch_tokens)
            : "no architecture has a loss under the FLOPs-only budget";
  } else {
    const OptimumPlacement& f = *result.flops_sparsity;
    const OptimumPlacement& c = *result.cluster_sparsity;
    const auto where = [](const OptimumPlacement& p) {
      return p.interior ? std::string("interior")
                        : fmt::format("at the {} edge", p.value <= p.low + 1e-9 ? "low" : "high");
    };
    const std::string both = fmt::format(
        "under the FLOPs-only budget the best sparsity is {:.4f} ({} of the range {:.4f}–{:.4f}); "
        "under the cluster budget it is {:.4f} ({}{})",
        f.value, where(f), f.low, f.high, c.value, where(c),
        c.interior && c.value >= sparsest_fit - 1e-12
            ? ", the sparsest architecture that fits: memory sets the bound"
            : c.interior ? ", where throughput lost to sparsity outweighs its loss gain" : "");
    if (!f.interior && c.interior) {
      result.finding = "The MOSAIC effect holds for these inputs: " + both + ".";
    } else {
      result.finding = "For these inputs the MOSAIC effect does not appear (the FLOPs-only "
                       "optimum is not at an edge with an interior cluster optimum): " + both + ".";
    }
    // Where each optimum's expert count sits among those swept for the same model: sparsity
    // compares across model sizes, so an optimum inside the sparsity range may still take the
    // most experts its model was swept with (the cluster then moved it to another model size).
    const OptimumPlacement& fe = *result.flops_experts;
    const OptimumPlacement& ce = *result.cluster_experts;
    const auto on_axis = [&](const OptimumPlacement& p) {
      if (p.low == p.high) return fmt::format("E{:.0f}, the one expert count swept", p.value);
      return fmt::format("E{:.0f} of E{:.0f}–E{:.0f}, {}", p.value, p.low, p.high,
                         p.interior ? std::string("inside")
                                    : p.value <= p.low ? "the fewest" : "the most");
    };
    result.finding += fmt::format(
        " Along the expert counts swept at each optimum's other dimensions: FLOPs-only {} ({}); "
        "cluster {} ({}).",
        archs[*result.flops_optimum].arch.Name(), on_axis(fe),
        archs[*result.cluster_optimum].arch.Name(), on_axis(ce));
    if (c.interior && !ce.interior && ce.low < ce.high && ce.value >= ce.high &&
        archs[*result.cluster_optimum].arch.d_model != archs[*result.flops_optimum].arch.d_model) {
      result.finding += " The cluster optimum takes the most experts swept for its model: the "
                        "cluster moves the optimum to another model size, not to fewer experts.";
    }
    if (under_one_batch > 0) {
      result.finding += fmt::format(
          " The FLOPs-only budget ({:.4g} model FLOPs) ranks only part of the space: it buys {} "
          "architecture{} less than one batch of {:.4g} tokens.",
          result.flops_budget, under_one_batch, under_one_batch == 1 ? "" : "s", batch_tokens);
    }
  }
  result.architectures = std::move(archs);
  return result;
}

void EvaluateShare(const SweepContext& context, const std::vector<Architecture>& all,
                   size_t begin, size_t end, const CodesignOptions& options,
                   std::vector<ArchitectureResult>& out) {
  CheckThreadCount(options.threads);
  constexpr size_t kChunk = 8;
  const size_t total = end - begin;
  std::atomic<size_t> done{0};
  std::mutex progress_mutex;  // one progress call at a time
  auto next_report = std::chrono::steady_clock::now();
  ParallelFor((total + kChunk - 1) / kChunk, options.threads, [&](size_t chunk) {
    const size_t b = begin + chunk * kChunk, e = std::min(end, b + kChunk);
    EvaluateRange(context, all, b, e, out);
    done += e - b;
    if (options.progress && progress_mutex.try_lock()) {
      const std::lock_guard<std::mutex> lock(progress_mutex, std::adopt_lock);
      const auto now = std::chrono::steady_clock::now();
      if (now >= next_report) {
        options.progress(done.load(), total);
        next_report = now + std::chrono::milliseconds(250);
      }
    }
  });
  if (options.progress) options.progress(total, total);
}

CodesignResult RunCodesign(const SpaceConfig& space, const CodesignOptions& options) {
  const std::vector<Architecture> all = EnumerateArchitectures(space);
  const std::shared_ptr<const SweepContext> context = PrepareSweep(space);
  std::vector<ArchitectureResult> out(all.size());
  EvaluateShare(*context, all, 0, all.size(), options, out);
  return Summarize(space, std::move(out));
}

}  // namespace mosaic
