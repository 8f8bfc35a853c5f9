#include "mosaic/perf/layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>

#include <algorithm>
#include <charconv>
#include <vector>

#include "mosaic/util/enum_names.h"
#include "mosaic/util/error.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/text_input.h"

namespace mosaic {

std::string_view ToString(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kModules: return "modules";
    case Recompute::kMoe: return "moe";
    case Recompute::kFull: return "full";
  }
  return "?";
}

std::optional<Recompute> RecomputeFromString(std::string_view text) {
  return EnumFromString<Recompute>(
      text, {Recompute::kNone, Recompute::kSelective, Recompute::kModules, Recompute::kMoe,
             Recompute::kFull});
}

std::string_view ToString(Dispatch dispatch) {
  switch (dispatch) {
    case Dispatch::kProfile: return "profile";
    case Dispatch::kFlat: return "flat";
    case Dispatch::kHierarchical: return "hierarchical";
  }
  return "?";
}

std::optional<Dispatch> DispatchFromString(std::string_view text) {
  return EnumFromString<Dispatch>(text, {Dispatch::kFlat, Dispatch::kHierarchical});
}

std::string_view ToString(RejectKind kind) {
  switch (kind) {
    case RejectKind::kIndivisible: return "does not divide";
    case RejectKind::kDomain: return "exceeds a domain";
    case RejectKind::kMemory: return "out of memory";
    case RejectKind::kUnsupported: return "not supported";
  }
  return "?";
}

std::string OffloadModulesText(uint32_t modules) {
  std::vector<std::string_view> names;
  for (size_t i = 0; i < std::size(kOffloadModuleNames); ++i) {
    if (modules & (1u << i)) names.push_back(kOffloadModuleNames[i]);
  }
  return fmt::format("{}", fmt::join(names, "+"));
}

std::optional<uint32_t> ParseOffloadModuleNames(std::string_view names, std::string* why) {
  const std::vector<std::string> known(std::begin(kOffloadModuleNames),
                                       std::end(kOffloadModuleNames));
  uint32_t modules = 0;
  size_t from = 0;
  while (true) {
    const size_t plus = names.find('+', from);
    const std::string_view name =
        TrimSpaces(names.substr(from, plus == std::string_view::npos ? plus : plus - from));
    const auto it = std::ranges::find(known, name);
    if (it == known.end()) {
      *why = fmt::format("(not '{}'){}", Printable(name), DidYouMean(std::string(name), known));
      return std::nullopt;
    }
    const uint32_t bit = 1u << (it - known.begin());
    if (modules & bit) {
      *why = fmt::format("({} is given twice; each module at most once)", *it);
      return std::nullopt;
    }
    modules |= bit;
    if (plus == std::string_view::npos) return modules;
    from = plus + 1;
  }
}

std::string ToString(const Layout& l) {
  // A degree of 0 is one left unknown; every layout that runs has each degree at least 1.
  const auto degree = [](int64_t d) { return d == 0 ? std::string("?") : std::to_string(d); };
  std::string text = fmt::format(
      "tp={},pp={},vpp={},cp={},dp={},fsdp={},ep={},etp={},mbs={},recompute={},moe_chunk={}",
      degree(l.tp), degree(l.pp), degree(l.vpp), degree(l.cp), degree(l.dp), degree(l.fsdp),
      degree(l.ep), degree(l.etp), degree(l.mbs), ToString(l.recompute), degree(l.moe_chunk));
  if (l.pp_first > 0) text += fmt::format(",pp_first={}", l.pp_first);
  if (l.pp_last > 0) text += fmt::format(",pp_last={}", l.pp_last);
  if (l.pp_embed > 0) text += ",pp_embed=1";
  if (l.pp_loss > 0) text += ",pp_loss=1";
  if (l.a2a_overlap > 0) text += ",a2a_overlap=1";
  if (l.dispatch != Dispatch::kProfile) text += fmt::format(",dispatch={}", ToString(l.dispatch));
  if (l.offload_layers > 0) text += fmt::format(",offload_layers={}", l.offload_layers);
  if (l.offload_modules != 0) text += ",offload_modules=" + OffloadModulesText(l.offload_modules);
  if (l.pp_layout[0] != '\0') text += fmt::format(",pp_layout={}", l.pp_layout_text());
  return text;
}

std::vector<PipelineLayoutStage> PipelineLayoutStages(std::string_view text) {
  constexpr size_t kMaxExpanded = size_t{1} << 20;
  auto fail = [&](std::string_view rule) {
    return InputError(
        fmt::format("pp_layout = {}. Violated constraint: {}", Printable(text), rule));
  };
  // The count N of a "*N" whose digits start at s[i]; advances `i` past them.
  auto repeat_count = [&](std::string_view s, size_t& i) {
    const size_t start = i;
    size_t n = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      n = n * 10 + static_cast<size_t>(s[i] - '0');
      if (n > kMaxExpanded) throw fail("at most 2^20 characters once repeated");
      ++i;
    }
    if (i == start) throw fail("'*' is followed by a count (x*N, (group)*N)");
    return n;
  };
  auto append = [&](std::string& out, std::string_view piece, size_t times) {
    if (out.size() + piece.size() * times > kMaxExpanded) {
      throw fail("at most 2^20 characters once repeated");
    }
    for (size_t k = 0; k < times; ++k) out += piece;
  };
  // Commas are cosmetic; "(group)*N" first, as Megatron-Core unrolls it.
  std::string groups;
  for (size_t i = 0; i < text.size();) {
    const char ch = text[i];
    if (ch == ',') {
      ++i;
    } else if (ch == '(') {
      const size_t close = text.find_first_of("()", i + 1);
      if (close == std::string_view::npos) throw fail("each '(' is closed by ')'");
      if (text[close] == '(') {
        throw fail("each '(' is closed by ')' before another '(' (groups do not nest)");
      }
      std::string inner;
      for (char g : text.substr(i + 1, close - i - 1)) {
        if (g != ',') inner += g;
      }
      if (inner.empty()) throw fail("a group holds at least one character");
      if (close + 1 >= text.size() || text[close + 1] != '*') {
        throw fail("a group is followed by *N");
      }
      i = close + 2;
      append(groups, inner, repeat_count(text, i));
    } else if (ch == ')') {
      throw fail("each ')' closes a '('");
    } else {
      append(groups, std::string_view(&text[i], 1), 1);
      ++i;
    }
  }
  // Then "x*N".
  std::string expanded;
  for (size_t i = 0; i < groups.size();) {
    if (i + 1 < groups.size() && groups[i + 1] == '*' && groups[i] != '*') {
      size_t j = i + 2;
      const size_t n = repeat_count(groups, j);
      append(expanded, std::string_view(groups).substr(i, 1), n);
      i = j;
    } else {
      append(expanded, std::string_view(&groups[i], 1), 1);
      ++i;
    }
  }
  for (char ch : expanded) {
    if (std::string_view("|EtmL").find(ch) == std::string_view::npos) {
      throw fail(fmt::format("'{}' is not a layer: E (embedding), t (decoder layer), m (MTP "
                             "layer), L (loss), '|' between stages, (group)*N and x*N",
                             Printable(std::string(1, ch))));
    }
  }
  if (expanded.empty() || expanded.front() != 'E') {
    throw fail("the first layer is the embedding (E)");
  }
  if (expanded.back() != 'L') throw fail("the last layer is the loss (L)");
  if (std::count(expanded.begin(), expanded.end(), 'E') != 1) {
    throw fail("the embedding (E) appears once");
  }
  if (std::count(expanded.begin(), expanded.end(), 'L') != 1) {
    throw fail("the loss (L) appears once");
  }
  if (const size_t first_mtp = expanded.find('m');
      first_mtp != std::string::npos && expanded.find('t', first_mtp) != std::string::npos) {
    throw fail("the MTP layers (m) follow every decoder layer (t)");
  }
  std::vector<PipelineLayoutStage> stages(1);
  for (char ch : expanded) {
    switch (ch) {
      case '|': stages.emplace_back(); break;
      case 'E': ++stages.back().embedding; break;
      case 't': ++stages.back().decoder; break;
      case 'm': ++stages.back().mtp; break;
      case 'L': ++stages.back().loss; break;
      default: break;  // every other character was refused above
    }
  }
  return stages;
}

namespace {

// SplitPipeline's layer counts per rank (first, middle, last, MTP), nothing else.
PipelineSplit SplitPipelineCounts(const Layout& l, int64_t layer_passes);

// A middle rank's decoder layer passes, placed MTP layers and MoE layer passes.
struct RankLayers {
  int64_t layers = 0, mtp = 0, moe = 0, rank = 1;
};

// The cost of `layers` decoder layer passes, `moe` of them MoE, and `mtp` MTP layers.
double LayersCost(int64_t layers, int64_t moe, int64_t mtp, LayerCosts costs) {
  return static_cast<double>(layers - moe) * costs.dense + static_cast<double>(moe) * costs.moe +
         static_cast<double>(mtp) * costs.mtp;
}

// Sets s.slowest…, s.rank_loads and s.other_load_ratio from rank 0, `middle` (a rank 1 … pp−2)
// and rank pp−1, each rank's layers costing `costs`, of `moe_passes` MoE passes among s.total;
// `by_count` (a model of one kind, or no model): each decoder layer costs 1, an MTP layer
// costs.mtp in those units.
void SetSlowest(PipelineSplit& s, int64_t pp, RankLayers middle, int64_t moe_passes,
                LayerCosts costs, bool by_count) {
  struct Rank {
    int64_t rank, layers, mtp, moe;
    double cost;
  };
  const auto rank = [&](int64_t index, int64_t layers, int64_t mtp, int64_t moe) {
    return Rank{index, layers, mtp, moe,
                by_count ? static_cast<double>(layers) + static_cast<double>(mtp) * costs.mtp
                         : LayersCost(layers, moe, mtp, costs)};
  };
  std::array<Rank, PipelineSplit::kMaxRankLoads> ranks{};
  int count = 0;
  ranks[count++] = rank(0, s.first, s.first_mtp, s.first_moe);
  if (pp > 2) ranks[count++] = rank(middle.rank, middle.layers, middle.mtp, middle.moe);
  if (pp > 1) ranks[count++] = rank(pp - 1, s.last, s.last_mtp, s.last_moe);
  Rank slowest = ranks[0];
  for (int i = 1; i < count; ++i) {
    const Rank& r = ranks[i];
    if (r.cost > slowest.cost || (r.cost == slowest.cost && r.moe > slowest.moe)) slowest = r;
  }
  s.slowest = slowest.layers;
  s.slowest_mtp = slowest.mtp;
  s.slowest_moe = slowest.moe;
  s.slowest_rank = slowest.rank;
  s.rank_load_count = count;
  for (int i = 0; i < count; ++i) {
    const Rank& r = ranks[i];
    s.rank_loads[i] = {.rank = r.rank,
                       .layers = r.layers,
                       .moe = r.moe,
                       .mtp = r.mtp,
                       .load_ratio = slowest.cost > 0 ? r.cost / slowest.cost : 1.0,
                       .moe_passes = static_cast<double>(r.moe),
                       .slowest_layers = r.layers == slowest.layers && r.moe == slowest.moe &&
                                         r.mtp == slowest.mtp,
                       .is_last = pp > 1 && r.rank == pp - 1};
  }
  if (pp == 1) {
    s.other_load_ratio = 0;
    return;
  }
  const double all = by_count ? static_cast<double>(s.total)
                              : LayersCost(s.total, moe_passes, 0, costs);
  const double stage = rank(slowest.rank, s.slowest, 0, s.slowest_moe).cost;
  s.other_load_ratio = (all - stage) / static_cast<double>(pp - 1) / stage;
}

}  // namespace

std::string EvenSplitPipelineLayout(const Layout& l, int64_t layer_passes, int64_t mtp_layers) {
  const int64_t chunks = l.pp * l.vpp;
  if (l.pp < 2 || l.explicit_split() || layer_passes % chunks == 0 || layer_passes < chunks) {
    return "";
  }
  // As SplitPipelineCounts deals them: the first `short_chunks` virtual stages one layer short.
  const int64_t per_chunk = (layer_passes + chunks - 1) / chunks;
  const int64_t short_chunks = chunks * per_chunk - layer_passes;
  const auto group = [](int64_t layers) {
    return layers == 1 ? std::string("t") : fmt::format("t*{}", layers);
  };
  // A run of n stages of one size after the first: "(g|)*n", or "g|" for one.
  const auto run = [](const std::string& g, int64_t n) {
    return n == 0 ? std::string() : n == 1 ? g + "|" : fmt::format("({}|)*{}", g, n);
  };
  // The first stage (short) and the last (full) carry E and L; the rest repeat.
  const std::string mtp = mtp_layers == 0   ? ""
                          : mtp_layers == 1 ? "m"
                                            : fmt::format("m*{}", mtp_layers);
  const std::string text = "E" + group(per_chunk - 1) + "|" +
                           run(group(per_chunk - 1), short_chunks - 1) +
                           run(group(per_chunk), chunks - short_chunks - 1) + group(per_chunk) +
                           mtp + "L";
  return text.size() <= kMaxPpLayoutChars ? text : "";
}

PipelineSplit SplitPipeline(const Layout& l, int64_t layer_passes) {
  PipelineSplit s = SplitPipelineCounts(l, layer_passes);
  SetSlowest(s, l.pp, {s.middle, s.middle_mtp, 0, s.middle_rank}, 0, {}, true);
  return s;
}

namespace {

PipelineSplit SplitPipelineCounts(const Layout& l, int64_t layer_passes) {
  PipelineSplit s;
  s.total = layer_passes;
  if (l.pp_layout[0] != '\0') {
    const std::vector<PipelineLayoutStage> stages = PipelineLayoutStages(l.pp_layout_text());
    // Rank r holds stages r, r + pp, …; a rank past the stages (pp > stages, which CheckLayout
    // refuses) holds none.
    const size_t pp = static_cast<size_t>(l.pp);
    std::vector<int64_t> decoder(std::min(pp, stages.size()), 0), mtp(decoder);
    for (size_t i = 0; i < stages.size(); ++i) {
      decoder[i % pp] += stages[i].decoder;
      mtp[i % pp] += stages[i].mtp;
    }
    auto at = [](const std::vector<int64_t>& v, size_t r) { return r < v.size() ? v[r] : 0; };
    s.mtp_placed = true;
    s.first = at(decoder, 0);
    s.first_mtp = at(mtp, 0);
    s.last = at(decoder, pp - 1);
    s.last_mtp = at(mtp, pp - 1);
    for (size_t i = 1; i + 1 < std::min(pp, decoder.size() + 1); ++i) {
      if (i == 1 || decoder[i] + mtp[i] > s.middle + s.middle_mtp) {
        s.middle_rank = static_cast<int64_t>(i);
        s.middle = decoder[i];
        s.middle_mtp = mtp[i];
      }
    }
    return s;
  }
  if (l.pp == 1) {
    s.first = s.last = layer_passes;
    s.middle = 0;
    return s;
  }
  if (l.pp_first > 0 || l.pp_last > 0) {
    const int64_t given = (l.pp_first > 0 ? 1 : 0) + (l.pp_last > 0 ? 1 : 0);
    const int64_t middle_stages = l.pp - given;
    const int64_t per_middle =
        middle_stages > 0 ? (layer_passes - l.pp_first - l.pp_last) / middle_stages : 0;
    s.first = l.pp_first > 0 ? l.pp_first : per_middle;
    s.last = l.pp_last > 0 ? l.pp_last : per_middle;
    s.middle = l.pp > 2 ? per_middle : 0;
    return s;
  }
  if (l.pp_embed > 0 || l.pp_loss > 0) {
    const int64_t per_rank = (layer_passes + l.pp_embed + l.pp_loss) / l.pp;
    s.first = per_rank - l.pp_embed;
    s.last = per_rank - l.pp_loss;
    s.middle = l.pp > 2 ? per_rank : 0;
    return s;
  }
  const int64_t chunks = l.pp * l.vpp;
  if (layer_passes % chunks == 0) {
    s.first = s.last = layer_passes / l.pp;
    s.middle = l.pp > 2 ? s.first : 0;
    return s;
  }
  // Short chunks (one layer less) dealt round-robin to the ranks from rank 0.
  const int64_t per_chunk = (layer_passes + chunks - 1) / chunks;
  const int64_t short_chunks = chunks * per_chunk - layer_passes;
  auto rank_layers = [&](int64_t rank) {
    return per_chunk * l.vpp - short_chunks / l.pp - (rank < short_chunks % l.pp ? 1 : 0);
  };
  s.first = rank_layers(0);
  s.last = rank_layers(l.pp - 1);
  if (l.pp > 2) {
    // Ranks holding the full count start right after the short ones.
    s.middle_rank = std::clamp<int64_t>(short_chunks % l.pp, 1, l.pp - 2);
    s.middle = rank_layers(s.middle_rank);
  }
  return s;
}

// Calls visit(rank, first_pass, passes) for each virtual stage of `l` in pipeline order: the
// decoder layer passes [first_pass, first_pass + passes) it holds (SplitPipeline's placement).
template <typename Visit>
void ForEachVirtualStage(const Layout& l, int64_t layer_passes, Visit visit) {
  int64_t pass = 0;
  const auto stage = [&](int64_t rank, int64_t passes) {
    visit(rank, pass, passes);
    pass += passes;
  };
  if (l.pp_layout[0] != '\0') {
    const std::vector<PipelineLayoutStage> stages = PipelineLayoutStages(l.pp_layout_text());
    for (size_t i = 0; i < stages.size(); ++i) {
      stage(static_cast<int64_t>(i) % l.pp, stages[i].decoder);
    }
    return;
  }
  const int64_t chunks = l.pp * l.vpp;
  if (l.pp_first > 0 || l.pp_last > 0) {
    const PipelineSplit s = SplitPipelineCounts(l, layer_passes);
    for (int64_t v = 0; v < l.vpp; ++v) {
      for (int64_t r = 0; r < l.pp; ++r) {
        stage(r, (r == 0 ? s.first : r == l.pp - 1 ? s.last : s.middle) / l.vpp);
      }
    }
    return;
  }
  if (l.pp_embed > 0 || l.pp_loss > 0) {
    const int64_t per_chunk = (layer_passes + l.pp_embed + l.pp_loss) / chunks;
    for (int64_t j = 0; j < chunks; ++j) {
      stage(j % l.pp, per_chunk - (j == 0 ? l.pp_embed : 0) - (j == chunks - 1 ? l.pp_loss : 0));
    }
    return;
  }
  const int64_t per_chunk = (layer_passes + chunks - 1) / chunks;
  const int64_t short_chunks = chunks * per_chunk - layer_passes;
  for (int64_t j = 0; j < chunks; ++j) stage(j % l.pp, per_chunk - (j < short_chunks ? 1 : 0));
}

// The MoE layers among layer passes [0, passes) of `c`: layer i is MoE iff i >= dense_layers and
// (i − dense_layers + 1) is a multiple of interleave_moe_layer_step (ModelConfig::is_moe_layer).
int64_t MoePassesBefore(const ModelConfig& c, int64_t passes) {
  if (!c.is_moe()) return 0;
  const int64_t in_layer = passes % c.layers;
  const int64_t partial =
      in_layer <= c.dense_layers ? 0 : (in_layer - c.dense_layers) / c.interleave_moe_layer_step;
  return passes / c.layers * c.moe_layers() + partial;
}

}  // namespace

PipelineSplit SplitPipeline(const Layout& l, const ModelConfig& c, LayerCosts costs) {
  const int64_t passes = c.layers * c.loops;
  PipelineSplit s = SplitPipelineCounts(l, passes);
  // Without a layout string Megatron-Core builds every MTP layer on the last pipeline stage
  // (megatron/core/transformer/multi_token_prediction.py, mtp_on_this_rank and
  // get_mtp_num_layers_to_build).
  if (!s.mtp_placed && c.mtp_layers > 0 && l.pp > 1) {
    s.mtp_placed = true;
    s.last_mtp = c.mtp_layers;
  }
  s.total_moe = MoePassesBefore(c, passes) + c.mtp_moe_layers();
  // Each rank's MTP layers with routed experts: as placed, or spread with the layers (pp = 1).
  const auto add_mtp_moe = [&] {
    const double per_mtp = c.mtp_layers > 0 ? static_cast<double>(c.mtp_moe_layers()) /
                                                  static_cast<double>(c.mtp_layers)
                                            : 0.0;
    for (int i = 0; i < s.rank_load_count; ++i) {
      PipelineSplit::RankLoad& r = s.rank_loads[i];
      r.moe_passes += s.mtp_placed ? static_cast<double>(r.mtp) * per_mtp
                                   : static_cast<double>(c.mtp_moe_layers()) *
                                         static_cast<double>(r.layers) /
                                         static_cast<double>(passes);
    }
  };
  const auto by_count = [&] {
    // Every layer costs the same (one kind): an MTP layer in layers of that kind.
    const double layer = c.is_moe() ? costs.moe : costs.dense;
    const LayerCosts units = layer > 0 ? LayerCosts{1, 1, costs.mtp / layer} : LayerCosts{};
    SetSlowest(s, l.pp, {s.middle, s.middle_mtp, s.middle_moe, s.middle_rank}, 0, units, true);
    add_mtp_moe();
    if (l.pp > 2 && s.middle > s.first) {
      s.peak_candidates[s.peak_candidate_count++] = {s.middle_rank, s.middle, s.middle_moe,
                                                     s.middle_mtp};
    }
    return s;
  };
  if (!c.is_moe()) return by_count();
  if (c.moe_layers() == c.layers) {  // every layer routed
    s.first_moe = s.first;
    s.middle_moe = s.middle;
    s.last_moe = s.last;
    return by_count();
  }
  std::vector<int64_t> layers(static_cast<size_t>(l.pp), 0), moe(layers), mtp(layers);
  ForEachVirtualStage(l, passes, [&](int64_t rank, int64_t first_pass, int64_t count) {
    const auto r = static_cast<size_t>(rank);
    layers[r] += count;
    moe[r] += MoePassesBefore(c, first_pass + count) - MoePassesBefore(c, first_pass);
  });
  if (s.mtp_placed && l.pp_layout[0] != '\0') {
    const std::vector<PipelineLayoutStage> stages = PipelineLayoutStages(l.pp_layout_text());
    for (size_t i = 0; i < stages.size(); ++i) mtp[i % layers.size()] += stages[i].mtp;
  } else if (s.mtp_placed) {
    mtp.back() = c.mtp_layers;
  }
  s.first_moe = moe.front();
  s.last_moe = moe.back();
  RankLayers costliest_middle;
  if (l.pp > 2) {
    // The placement holds s.middle layers (and s.middle_mtp MTP layers) on some middle rank.
    s.middle_moe = -1;
    for (size_t r = 1; r + 1 < layers.size(); ++r) {
      if (layers[r] == s.middle && mtp[r] == s.middle_mtp && moe[r] > s.middle_moe) {
        s.middle_rank = static_cast<int64_t>(r);
        s.middle_moe = moe[r];
      }
    }
    const auto cost = [&](size_t r) {
      return LayersCost(layers[r], moe[r], mtp[r], costs);
    };
    size_t costliest = static_cast<size_t>(s.middle_rank);
    for (size_t r = 1; r + 1 < layers.size(); ++r) {
      if (cost(r) > cost(costliest)) costliest = r;
    }
    costliest_middle = {layers[costliest], mtp[costliest], moe[costliest],
                        static_cast<int64_t>(costliest)};
    // The memory peak's candidates: ranks not dominated by an earlier one (as many or more
    // dense, MoE and MTP layers, and at least as many micro-batches in flight).
    std::vector<size_t> kept = {0};
    for (size_t r = 1; r + 1 < layers.size(); ++r) {
      const bool dominated = std::ranges::any_of(kept, [&](size_t k) {
        return layers[k] - moe[k] >= layers[r] - moe[r] && moe[k] >= moe[r] && mtp[k] >= mtp[r];
      });
      if (dominated) continue;
      kept.push_back(r);
      if (s.peak_candidate_count < PipelineSplit::kMaxPeakCandidates) {
        s.peak_candidates[s.peak_candidate_count++] = {static_cast<int64_t>(r), layers[r], moe[r],
                                                       mtp[r]};
      }
    }
  }
  SetSlowest(s, l.pp, costliest_middle, MoePassesBefore(c, passes), costs, false);
  add_mtp_moe();
  return s;
}

Layout ParseLayout(std::string_view text, std::string_view label) {
  static const std::vector<std::string> kKeys = {"tp",  "pp",  "vpp", "cp",        "dp",
                                                 "fsdp", "ep", "etp", "mbs", "recompute",
                                                 "moe_chunk", "pp_first", "pp_last",
                                                 "pp_embed", "pp_loss", "a2a_overlap",
                                                 "dispatch", "offload_layers", "offload_modules",
                                                 "pp_layout"};
  // The user's text as messages echo it, control characters escaped (terminal_text.h).
  const std::string shown_label = Printable(label);
  const std::string shown = Printable(text);
  Layout l;
  std::vector<std::string> seen;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const size_t start = pos;
    const std::string_view item = TrimSpaces(text.substr(pos, end - pos));
    pos = end + 1;
    if (item.empty()) {
      // A blank text is refused below as holding no key=value; ",," is a key left out.
      if (text.find_first_not_of(' ') == std::string_view::npos) break;
      throw InputError(fmt::format("{} {}: an empty item ({}). Violated constraint: items are "
                                   "KEY=VALUE separated by single commas",
                                   shown_label, shown,
                                   end == text.size() ? "a ',' at the end"
                                   : start == 0       ? "a ',' at the start"
                                                      : "two ',' in a row"));
    }
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      throw InputError(fmt::format(
          "{} {}: '{}' is not key=value (for example tp=2,pp=4,ep=8,dp=8,mbs=1)", shown_label,
          shown, Printable(item)));
    }
    // Spaces around '=' are allowed ("dp = 16"), as around ','.
    const std::string key(TrimSpaces(item.substr(0, eq)));
    const std::string_view value = TrimSpaces(item.substr(eq + 1));
    bool known = false;
    for (const std::string& k : kKeys) known = known || k == key;
    if (key.empty()) {
      throw InputError(fmt::format("{} {}: a value without its key ('={}'). Violated constraint: "
                                   "KEY=VALUE, KEY one of {}",
                                   shown_label, shown, Printable(value), fmt::join(kKeys, ", ")));
    }
    if (!known) {
      std::string lower = key;
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      const std::string suggestion = DidYouMean(lower, kKeys);
      throw InputError(fmt::format("{} {}: unknown layout key '{}'{}", shown_label, shown,
                                   Printable(key),
                                   suggestion.empty()
                                       ? fmt::format("; keys: {}", fmt::join(kKeys, ", "))
                                       : suggestion));
    }
    for (const std::string& s : seen) {
      if (s == key) {
        throw InputError(fmt::format("{} {}: {} is given twice. Violated constraint: each key "
                                     "at most once",
                                     shown_label, shown, key));
      }
    }
    seen.push_back(key);
    if (key == "pp_layout") {
      // Megatron's cosmetic commas split the string into items without '=': they continue it.
      std::string layout;
      for (char ch : value) layout += ch;
      while (pos < text.size()) {
        size_t next = text.find(',', pos);
        if (next == std::string_view::npos) next = text.size();
        const std::string_view more = TrimSpaces(text.substr(pos, next - pos));
        if (more.find('=') != std::string_view::npos) break;
        layout += more;
        pos = next + 1;
      }
      if (layout.empty()) {
        throw InputError(fmt::format("{} {}: pp_layout is empty (for example "
                                     "pp_layout=Et|(tt|)*30mL)",
                                     shown_label, shown));
      }
      if (layout.size() > kMaxPpLayoutChars) {
        throw InputError(fmt::format("{} {}: pp_layout = {}. Violated constraint: at most {} "
                                     "characters (write repeats as (group)*N)",
                                     shown_label, shown, Printable(layout), kMaxPpLayoutChars));
      }
      // The layout is kept NUL-terminated (Layout::pp_layout): a control character, NUL among
      // them, is no part of the grammar and would cut it short.
      if (std::any_of(layout.begin(), layout.end(), [](char ch) {
            return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
          })) {
        throw InputError(fmt::format("{} {}: pp_layout = {}. Violated constraint: no control "
                                     "characters",
                                     shown_label, shown, Printable(layout)));
      }
      try {
        (void)PipelineLayoutStages(layout);
      } catch (const InputError& e) {
        throw InputError(fmt::format("{} {}: {}", shown_label, shown, e.what()));
      }
      std::copy(layout.begin(), layout.end(), l.pp_layout.begin());
      continue;
    }
    if (key == "offload_modules") {
      // Megatron's --offload-modules names, joined by '+' (',' separates the layout's keys).
      std::string why;
      const std::optional<uint32_t> modules = ParseOffloadModuleNames(value, &why);
      if (!modules) {
        throw InputError(fmt::format(
            "{} {}: offload_modules = {}. Violated constraint: module names joined by '+', each "
            "one of {} {}",
            shown_label, shown, Printable(value), fmt::join(kOffloadModuleNames, ", "), why));
      }
      l.offload_modules = *modules;
      continue;
    }
    if (key == "recompute") {
      auto r = RecomputeFromString(value);
      if (!r) {
        throw InputError(fmt::format(
            "{} {}: recompute = {}. Violated constraint: recompute is none, selective, modules, "
            "moe or full",
            shown_label, shown, Printable(value)));
      }
      l.recompute = *r;
      continue;
    }
    if (key == "dispatch") {
      const std::optional<Dispatch> d = DispatchFromString(value);
      if (!d) {
        throw InputError(fmt::format(
            "{} {}: dispatch = {}. Violated constraint: dispatch is flat or hierarchical "
            "(Megatron-Core's --moe-token-dispatcher-type alltoall is flat; flex, with DeepEP or "
            "HybridEP, is hierarchical)",
            shown_label, shown, Printable(value)));
      }
      l.dispatch = *d;
      continue;
    }
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (key == "pp_embed" || key == "pp_loss" || key == "a2a_overlap") {
      if (ec != std::errc() || ptr != value.data() + value.size() || (v != 0 && v != 1)) {
        throw InputError(fmt::format("{} {}: {} = {}. Violated constraint: {} is 0 or 1",
                                     shown_label, shown, key, Printable(value), key));
      }
      (key == "pp_embed" ? l.pp_embed : key == "pp_loss" ? l.pp_loss : l.a2a_overlap) = v;
      continue;
    }
    if (ec == std::errc::result_out_of_range && ptr == value.data() + value.size() &&
        value.front() != '-') {
      // A whole number too large for any count: the rule it breaks is the cap.
      throw InputError(fmt::format("{} {}: {} = {}. Violated constraint: {} <= {}", shown_label,
                                   shown, key, Printable(value), key, kMaxLayoutDegree));
    }
    if (ec != std::errc() || ptr != value.data() + value.size() || v < 1) {
      throw InputError(fmt::format(
          "{} {}: {} = {}. Violated constraint: {} is a positive integer", shown_label, shown, key,
          Printable(value), key));
    }
    if (v > kMaxLayoutDegree) {
      throw InputError(fmt::format("{} {}: {} = {}. Violated constraint: {} <= {}", shown_label,
                                   shown, key, Printable(value), key, kMaxLayoutDegree));
    }
    if (key == "tp") l.tp = v;
    else if (key == "pp") l.pp = v;
    else if (key == "vpp") l.vpp = v;
    else if (key == "cp") l.cp = v;
    else if (key == "dp") l.dp = v;
    else if (key == "fsdp") l.fsdp = v;
    else if (key == "ep") l.ep = v;
    else if (key == "etp") l.etp = v;
    else if (key == "mbs") l.mbs = v;
    else if (key == "moe_chunk") l.moe_chunk = v;
    else if (key == "pp_first") l.pp_first = v;
    else if (key == "pp_last") l.pp_last = v;
    else if (key == "offload_layers") l.offload_layers = v;
  }
  if (seen.empty()) {
    throw InputError(fmt::format("{} '{}': no key=value (for example tp=2,pp=4,ep=8,dp=8,mbs=1)",
                                 shown_label, shown));
  }
  // Each degree is at most 2^24, so the running product stays below 2^48 until it passes the bound.
  int64_t gpus = 1;
  for (int64_t degree : {l.tp, l.pp, l.cp, l.dp, l.fsdp}) {
    gpus *= degree;
    if (gpus > kMaxLayoutDegree) {
      throw InputError(fmt::format(
          "{} {}: tp·pp·cp·dp·fsdp = {}·{}·{}·{}·{}. Violated constraint: at most {} GPUs",
          shown_label, shown, l.tp, l.pp, l.cp, l.dp, l.fsdp, kMaxLayoutDegree));
    }
  }
  return l;
}

namespace {

// CheckLayout, with the rule's text (kExplain) or only its kind: the search rejects most of the
// layouts it enumerates and keeps a few examples, so it formats no text for the others.
template <bool kExplain>
std::optional<LayoutViolation> CheckLayoutRules(const Layout& l, const ModelConfig& m,
                                                const JobShape& job, int64_t domain_gpus) {
  auto fail = [](RejectKind kind, auto&& rule) {
    LayoutViolation v{kind, {}};
    if constexpr (kExplain) v.rule = rule();
    return std::optional<LayoutViolation>(std::move(v));
  };
  using enum RejectKind;
  if (l.gpus() != job.gpus) {
    return fail(kIndivisible, [&] {
      return fmt::format("tp·pp·cp·dp·fsdp = GPUs ({}·{}·{}·{}·{} = {} != {})", l.tp, l.pp, l.cp,
                         l.dp, l.fsdp, l.gpus(), job.gpus);
    });
  }
  if (m.heads % l.tp != 0) {
    return fail(kIndivisible,
                [&] { return fmt::format("tp divides heads ({} % {} != 0)", m.heads, l.tp); });
  }
  if (!m.uses_mla()) {
    const int64_t kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
    // Megatron-Core splits the KV heads (query groups) over tp, never replicates them
    // (TransformerConfig: num_query_groups a multiple of tensor_model_parallel_size; attention.py:
    // divide(num_query_groups, tp)).
    if (kv % l.tp != 0) {
      return fail(kIndivisible,
                  [&] { return fmt::format("tp divides kv_heads ({} % {} != 0)", kv, l.tp); });
    }
    for (const auto& [field, heads] : {std::pair{"kv_heads_local", m.kv_heads_local},
                                       std::pair{"kv_heads_global", m.kv_heads_global}}) {
      if (heads > 0 && heads % l.tp != 0) {
        return fail(kIndivisible, [&] {
          return fmt::format("tp divides {} ({} % {} != 0)", field, heads, l.tp);
        });
      }
    }
  }
  if (!m.is_moe() && (l.ep != 1 || l.etp != 1)) {
    return fail(kUnsupported, [&] {
      return fmt::format("ep = etp = 1 for a dense model (ep {}, etp {})", l.ep, l.etp);
    });
  }
  if (m.is_moe() && m.experts % l.ep != 0) {
    return fail(kIndivisible,
                [&] { return fmt::format("ep divides experts ({} % {} != 0)", m.experts, l.ep); });
  }
  if (l.stage_group() % (l.ep * l.etp) != 0) {
    return fail(kIndivisible, [&] {
      return fmt::format("ep·etp divides tp·cp·dp·fsdp ({}·{} = {} does not divide {})", l.ep,
                         l.etp, l.ep * l.etp, l.stage_group());
    });
  }
  if (m.is_moe() && m.expert_width % l.etp != 0) {
    return fail(kIndivisible, [&] {
      return fmt::format("etp divides expert_width ({} % {} != 0)", m.expert_width, l.etp);
    });
  }
  if (m.is_moe() && (m.experts / l.ep) % l.moe_chunk != 0) {
    return fail(kIndivisible, [&] {
      return fmt::format("moe_chunk divides experts / ep ({} % {} != 0)", m.experts / l.ep,
                         l.moe_chunk);
    });
  }
  if (!m.is_moe() && l.moe_chunk != 1) {
    return fail(kUnsupported, [&] { return std::string("moe_chunk = 1 for a dense model"); });
  }
  if (m.is_moe() && l.moe_chunk > 1) {
    // Chunks split the gather of FSDP-sharded expert weights; without such a gather (fsdp = 1,
    // or experts replicated within the FSDP group) there is nothing to chunk.
    if (l.expert_fsdp() == 1) {
      return fail(kUnsupported, [&] {
        return fmt::format(
            "moe_chunk > 1 needs expert weights sharded by FSDP (fsdp {}, "
            "expert-data-parallel {} over dp {})",
            l.fsdp, l.expert_dp(), l.dp);
      });
    }
  }
  if (!m.is_moe() && l.recompute == Recompute::kMoe) {
    return fail(kUnsupported, [&] {
      return std::string("recompute=moe needs MoE layers (a dense model has none)");
    });
  }
  const int64_t passes = m.layers * m.loops;
  if ((l.pp_first > 0 || l.pp_last > 0 || l.pp_embed > 0 || l.pp_loss > 0) && l.pp == 1) {
    return fail(kUnsupported,
                [&] { return std::string("pp_first, pp_last, pp_embed and pp_loss need pp > 1"); });
  }
  if (l.pp_layout[0] != '\0') {
    if (l.pp_first > 0 || l.pp_last > 0 || l.pp_embed > 0 || l.pp_loss > 0) {
      return fail(kUnsupported, [&] {
        return std::string(
            "pp_layout excludes pp_first, pp_last, pp_embed and pp_loss (as in "
            "Megatron-Core)");
      });
    }
    const std::vector<PipelineLayoutStage> stages = PipelineLayoutStages(l.pp_layout_text());
    const int64_t count = static_cast<int64_t>(stages.size());
    if (count % l.pp != 0) {
      return fail(kIndivisible, [&] {
        return fmt::format(
            "pp divides the stages of pp_layout ({} stages, "
            "pp {})",
            count, l.pp);
      });
    }
    if (l.vpp != count / l.pp) {
      return fail(kUnsupported, [&] {
        return fmt::format(
            "vpp = stages of pp_layout / pp ({} / {} = {}, "
            "vpp {})",
            count, l.pp, count / l.pp, l.vpp);
      });
    }
    int64_t decoder = 0, mtp = 0;
    for (const PipelineLayoutStage& s : stages) {
      decoder += s.decoder;
      mtp += s.mtp;
    }
    if (decoder != passes) {
      return fail(kUnsupported, [&] {
        return fmt::format("pp_layout holds one t per layer ({} t, {} layers)", decoder, passes);
      });
    }
    if (mtp != m.mtp_layers) {
      return fail(kUnsupported, [&] {
        return fmt::format(
            "pp_layout holds one m per MTP layer ({} m, "
            "mtp_layers {})",
            mtp, m.mtp_layers);
      });
    }
    for (int64_t i = 0; i < count; ++i) {
      if (stages[static_cast<size_t>(i)].mtp > 0 && i / l.pp != l.vpp - 1) {
        return fail(kUnsupported, [&] {
          return fmt::format(
              "pp_layout puts MTP layers (m) in their rank's last virtual stage "
              "(stage {} is virtual stage {} of {} on rank {})",
              i, i / l.pp, l.vpp, i % l.pp);
        });
      }
    }
  }
  if ((l.pp_first > 0 || l.pp_last > 0) && (l.pp_embed > 0 || l.pp_loss > 0)) {
    return fail(kUnsupported, [&] {
      return std::string(
          "pp_first/pp_last and pp_embed/pp_loss exclude each other (as in Megatron-Core)");
    });
  }
  if (l.pp_first > 0 || l.pp_last > 0) {
    const int64_t given = (l.pp_first > 0 ? 1 : 0) + (l.pp_last > 0 ? 1 : 0);
    const int64_t middle_stages = l.pp - given;
    const int64_t middle = passes - l.pp_first - l.pp_last;
    const std::string given_text = l.pp_first > 0 && l.pp_last > 0
                                       ? fmt::format("{} + {}", l.pp_first, l.pp_last)
                                       : fmt::format("{}", l.pp_first + l.pp_last);
    // The stages neither key gives (a stage not given holds as many layers as each of them, as in
    // Megatron-Core): with pp = 2 and both given there are none, and the two hold every layer.
    if (middle_stages == 0) {
      if (middle != 0) {
        return fail(kIndivisible, [&] {
          return fmt::format(
              "with pp = {} and both given, pp_first + pp_last = layers ({} = "
              "{} of {} layers)",
              l.pp, given_text, l.pp_first + l.pp_last, passes);
        });
      }
    } else {
      const std::string others =
          fmt::format("{} other stage{}", middle_stages, middle_stages == 1 ? "" : "s");
      if (middle < middle_stages) {
        return fail(kUnsupported, [&] {
          return fmt::format(
              "pp_first + pp_last leave at least one layer per other stage "
              "({} of {} layers, {})",
              given_text, passes, others);
        });
      }
      if (middle % middle_stages != 0) {
        return fail(kIndivisible, [&] {
          return fmt::format("the other stages divide the remaining layers ({} layers on {})",
                             middle, others);
        });
      }
    }
    const int64_t per_middle = middle_stages > 0 ? middle / middle_stages : 0;
    const int64_t first = l.pp_first > 0 ? l.pp_first : per_middle;
    const int64_t last = l.pp_last > 0 ? l.pp_last : per_middle;
    if (first % l.vpp != 0 || last % l.vpp != 0 || per_middle % l.vpp != 0) {
      // The middle stages are those between the first and the last (pp > 2).
      return fail(kIndivisible, [&] {
        return l.pp > 2 ? fmt::format(
                              "vpp divides each stage's layers (first {}, middle {}, "
                              "last {}, vpp {})",
                              first, per_middle, last, l.vpp)
                        : fmt::format(
                              "vpp divides each stage's layers (first {}, last {}, vpp "
                              "{})",
                              first, last, l.vpp);
      });
    }
  } else if (l.pp_embed > 0 || l.pp_loss > 0) {
    const int64_t slots = passes + l.pp_embed + l.pp_loss;
    if (slots % (l.pp * l.vpp) != 0) {
      return fail(kIndivisible, [&] {
        return fmt::format(
            "pp·vpp divides layers + pp_embed + pp_loss ({}·{} = {} does not "
            "divide {})",
            l.pp, l.vpp, l.pp * l.vpp, slots);
      });
    }
  } else if (l.pp_layout[0] == '\0' && l.pp * l.vpp > passes) {
    return fail(kUnsupported, [&] {
      return fmt::format("pp·vpp <= layers ({}·{} = {} > {})", l.pp, l.vpp, l.pp * l.vpp, passes);
    });
  }
  if (l.a2a_overlap > 0) {
    // Megatron-Core's TransformerConfig checks for overlap_moe_expert_parallel_comm.
    if (!m.is_moe() || l.ep < 2) {
      return fail(kUnsupported, [&] {
        return m.is_moe() ? fmt::format("a2a_overlap needs expert parallelism (ep {})", l.ep)
                          : std::string(
                                "a2a_overlap needs expert parallelism, and the model "
                                "has no routed experts");
      });
    }
    if (l.recompute == Recompute::kFull || l.recompute == Recompute::kMoe) {
      return fail(kUnsupported, [&] {
        return fmt::format(
            "a2a_overlap excludes recompute={} (Megatron-Core "
            "refuses full and MoE-layer recompute with it)",
            ToString(l.recompute));
      });
    }
    if (l.pp > 1 && l.vpp < 2) {
      return fail(kUnsupported, [&] {
        return std::string("a2a_overlap with pp > 1 needs the interleaved schedule (vpp > 1)");
      });
    }
  }
  if (l.dispatch != Dispatch::kProfile && !m.is_moe()) {
    return fail(kUnsupported, [&] {
      return std::string("dispatch needs routed experts, and the model has none");
    });
  }
  if (l.pp == 1 && l.vpp != 1) {
    return fail(kUnsupported, [&] { return fmt::format("vpp = 1 when pp = 1 (vpp {})", l.vpp); });
  }
  if (l.offload_layers > 0) {
    const PipelineSplit split = SplitPipeline(l, passes);
    const int64_t most = std::max({split.first, split.middle, split.last});
    if (l.offload_layers > most) {
      return fail(kUnsupported, [&] {
        return fmt::format("offload_layers <= the layer passes of a pipeline rank ({} > {})",
                           l.offload_layers, most);
      });
    }
  }
  if (l.offload_modules != 0) {
    if (l.offload_layers > 0) {
      return fail(kUnsupported, [&] {
        return std::string(
            "offload_modules excludes offload_layers (Megatron-Core's "
            "fine-grained and layer-wise offloading are two ways to offload; "
            "give one)");
      });
    }
    if (l.recompute == Recompute::kFull) {
      return fail(kUnsupported, [&] {
        return std::string(
            "offload_modules excludes recompute=full (a fully recomputed "
            "layer keeps no module's input to offload)");
      });
    }
    if ((l.offload_modules & kMoeOffloadModules) != 0 && !m.is_moe()) {
      return fail(kUnsupported, [&] {
        return std::string(
            "offload_modules expert_fc1 and moe_act need routed experts, and "
            "the model has none");
      });
    }
  }
  // Megatron-Core splits each sequence into 2·cp chunks, rank r taking chunks r and 2·cp − 1 − r
  // so that causal attention balances (get_batch_on_this_cp_rank, megatron/core/utils.py); the
  // sequence-parallel activations then split each rank's seq / cp tokens over tp
  // (_split_along_first_dim, megatron/core/tensor_parallel/mappings.py, asserts divisibility).
  if (l.cp > 1 && job.seq_len % (2 * l.cp) != 0) {
    return fail(kIndivisible, [&] {
      return fmt::format(
          "2·cp divides seq (the load-balanced causal split: {} % "
          "{} != 0)",
          job.seq_len, 2 * l.cp);
    });
  }
  if ((job.seq_len / l.cp) % l.tp != 0) {
    return fail(kIndivisible, [&] {
      return fmt::format(
          "tp divides seq / cp (sequence-parallel activations: {} "
          "% {} != 0)",
          job.seq_len / l.cp, l.tp);
    });
  }
  const int64_t per_step = l.data_parallel() * l.mbs;
  if (job.global_batch % per_step != 0) {
    return fail(kIndivisible, [&] {
      return fmt::format(
          "dp·fsdp·mbs divides batch ({}·{}·{} = {} does not "
          "divide {})",
          l.dp, l.fsdp, l.mbs, per_step, job.global_batch);
    });
  }
  if (l.vpp > 1 && (job.global_batch / per_step) % l.pp != 0) {
    return fail(kIndivisible, [&] {
      return fmt::format(
          "vpp > 1 needs micro-batches per pipeline a multiple of pp, as "
          "Megatron-Core's interleaved schedule ({} % {} != 0)",
          job.global_batch / per_step, l.pp);
    });
  }
  if (l.tp > domain_gpus) {
    return fail(kDomain, [&] {
      return fmt::format("tp <= scale-up domain ({} > {} GPUs)", l.tp, domain_gpus);
    });
  }
  if (l.etp > domain_gpus) {
    return fail(kDomain, [&] {
      return fmt::format("etp <= scale-up domain ({} > {} GPUs)", l.etp, domain_gpus);
    });
  }
  return std::nullopt;
}

}  // namespace

std::optional<LayoutViolation> CheckLayout(const Layout& l, const ModelConfig& m,
                                           const JobShape& job, int64_t domain_gpus) {
  return CheckLayoutRules<true>(l, m, job, domain_gpus);
}

std::optional<RejectKind> LayoutRejectKind(const Layout& l, const ModelConfig& m,
                                           const JobShape& job, int64_t domain_gpus) {
  if (auto v = CheckLayoutRules<false>(l, m, job, domain_gpus)) return v->kind;
  return std::nullopt;
}

std::optional<LayoutViolation> CheckLayout(const Layout& l, const ModelConfig& m,
                                           const JobShape& job, const HardwareSpec& device) {
  if (auto v = CheckLayout(l, m, job, device.domain_gpus())) return v;
  if ((l.offload_layers > 0 || l.offload_modules != 0) &&
      (device.host_link_gb_per_s <= 0 || device.host_memory_gb <= 0)) {
    return LayoutViolation{
        RejectKind::kUnsupported,
        fmt::format("{} needs the device's host link and host memory "
                    "(host_link_gb_per_s = {:g}, host_memory_gb = {:g} in {}; 0 = not given: set "
                    "them in the device file or with --set hardware.FIELD=VALUE)",
                    l.offload_layers > 0 ? "offload_layers" : "offload_modules",
                    device.host_link_gb_per_s, device.host_memory_gb, device.origin)};
  }
  return std::nullopt;
}

}  // namespace mosaic
