#include "mosaic/perf/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <iterator>
#include <numeric>
#include <optional>

#include "mosaic/util/enum_names.h"
#include "mosaic/util/error.h"

namespace mosaic {

int64_t SearchResult::RankOf(double tokens_per_s) const {
  // Count those strictly faster (with a relative margin).
  int64_t faster = 0;
  for (double v : feasible_tokens_per_s) {
    if (v > tokens_per_s * (1 + 1e-9)) ++faster;
  }
  return faster + 1;
}

std::string SearchResult::RejectedText() const {
  auto count = [&](RejectKind k) { return rejected[static_cast<int>(k)]; };
  return fmt::format("{} do not divide, {} exceed a domain, {} out of memory, {} not supported",
                     count(RejectKind::kIndivisible), count(RejectKind::kDomain),
                     count(RejectKind::kMemory), count(RejectKind::kUnsupported));
}

namespace {

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= n; ++i) {
    if (n % i == 0) v.push_back(i);
  }
  return v;
}

std::vector<int64_t> PowersOfTwo(int64_t max) {
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= max; i *= 2) v.push_back(i);
  return v;
}

}  // namespace

std::string_view ToString(OffloadSearch offload) {
  switch (offload) {
    case OffloadSearch::kNone: return "none";
    case OffloadSearch::kModules: return "modules";
    case OffloadSearch::kLayers: return "layers";
  }
  return "?";
}

std::optional<OffloadSearch> OffloadSearchFromString(std::string_view text) {
  return EnumFromString<OffloadSearch>(
      text, {OffloadSearch::kNone, OffloadSearch::kModules, OffloadSearch::kLayers});
}

std::optional<std::string> UnsearchableReason(const ModelConfig& c, const JobShape& job,
                                              int64_t domain_gpus, const SearchOptions& options) {
  const int64_t N = job.gpus;
  const int64_t passes = c.layers * c.loops;
  int64_t smallest_dp = N;
  for (int64_t tp = 1; tp <= std::min(domain_gpus, c.heads); ++tp) {
    if (c.heads % tp != 0 || N % tp != 0) continue;
    for (int64_t cp = 1; cp <= options.max_cp; cp *= 2) {
      if (job.seq_len % cp != 0 || (N / tp) % cp != 0) continue;
      const int64_t M = N / (tp * cp);
      const int64_t pp = M / std::gcd(M, job.global_batch);  // the smallest pp that divides
      if (pp <= passes) return std::nullopt;
      // With the most stages the layers allow, what data-parallel size remains.
      for (int64_t p = std::min(passes, M); p >= 1; --p) {
        if (M % p == 0) {
          smallest_dp = std::min(smallest_dp, M / p);
          break;
        }
      }
    }
  }
  return fmt::format(
      "no layout divides the batch: every layout needs dp·fsdp = GPUs/(tp·pp·cp) to divide "
      "the batch of {} sequences, and on {} GPUs (tp dividing {} heads within the {}-GPU "
      "scale-up domain, cp <= {}, pp <= {} layers) dp·fsdp is at least {}",
      job.global_batch, N, c.heads, domain_gpus, options.max_cp, passes, smallest_dp);
}

SearchResult SearchLayouts(const ModelShape& model, const Cluster& cluster, const PerfJob& job,
                           const SharedPerfParams& shared, const PerfProfile& profile,
                           const DropParams& drop, const SearchOptions& options) {
  const ModelConfig& c = model.config;
  const int64_t N = cluster.gpus;
  const int64_t domain = cluster.device.domain_gpus();
  const double capacity = cluster.device.hbm_gb * 1e9;
  const double host_capacity = cluster.device.host_memory_gb * 1e9;
  JobShape shape{N, job.global_batch, job.seq_len};
  if (options.offload != OffloadSearch::kNone &&
      (cluster.device.host_link_gb_per_s <= 0 || cluster.device.host_memory_gb <= 0)) {
    throw InputError(fmt::format(
        "offload {} needs the device's host link and host memory (host_link_gb_per_s = {:g}, "
        "host_memory_gb = {:g} in {})",
        ToString(options.offload), cluster.device.host_link_gb_per_s,
        cluster.device.host_memory_gb, cluster.device.origin));
  }
  SearchResult result;
  result.dispatch = options.dispatch;
  if (auto reason = UnsearchableReason(c, shape, domain, options)) {
    result.unsearchable = std::move(*reason);
    return result;
  }
  std::array<int64_t, kRejectKinds> per_reason{};
  const std::vector<int64_t> divisors = Divisors(N);
  const std::vector<int64_t> experts = c.is_moe() ? Divisors(c.experts) : std::vector<int64_t>{1};
  const std::vector<int64_t> cps = PowersOfTwo(options.max_cp);
  const std::vector<int64_t> vpps = PowersOfTwo(options.max_vpp);
  const std::vector<int64_t> chunks = c.is_moe() ? PowersOfTwo(8) : std::vector<int64_t>{1};
  // Faster first; at the same speed (the same 13 leading bits of the tokens/s: within about
  // 1e-4, which the printed figures do not tell apart), the layout without the all-to-all
  // overlap (the simpler one to run gains nothing from it), then the one with the more memory to
  // spare, then the faster.
  auto speed_class = [](double tokens_per_s) {  // positive: its bits order as it does
    return std::bit_cast<uint64_t>(tokens_per_s) >> 39;
  };
  auto ranks_before = [&](const Layout& a, const StepEstimate& ea, const Layout& b,
                          const StepEstimate& eb) {
    const uint64_t class_a = speed_class(ea.tokens_per_s_per_gpu);
    const uint64_t class_b = speed_class(eb.tokens_per_s_per_gpu);
    if (class_a != class_b) return class_a > class_b;
    if (a.a2a_overlap != b.a2a_overlap) return a.a2a_overlap < b.a2a_overlap;
    if (ea.memory.peak_bytes != eb.memory.peak_bytes) {
      return ea.memory.peak_bytes < eb.memory.peak_bytes;
    }
    return ea.tokens_per_s_per_gpu > eb.tokens_per_s_per_gpu;
  };
  auto better = [&](const SearchCandidate& a, const SearchCandidate& b) {
    return ranks_before(a.layout, a.estimate, b.layout, b.estimate);
  };
  std::vector<SearchCandidate>& best = result.best;  // kept as a min-heap of size `top`
  // A kept layout names only the offload modules its policy lets move something.
  const bool mla = c.uses_mla();
  auto kept = [&](const Layout& l) {
    Layout k = l;
    k.offload_modules &= ModulesWithStoredInput(l.recompute, mla);
    return k;
  };
  auto keep = [&](const Layout& l, const StepEstimate& e) {
    result.feasible_tokens_per_s.push_back(e.tokens_per_s_per_gpu);
    if (static_cast<int64_t>(best.size()) < options.top) {
      best.push_back({kept(l), e});
      std::push_heap(best.begin(), best.end(), better);
    } else if (options.top > 0 &&
               ranks_before(l, e, best.front().layout, best.front().estimate)) {
      std::pop_heap(best.begin(), best.end(), better);
      best.back() = {kept(l), e};
      std::push_heap(best.begin(), best.end(), better);
    }
  };
  const bool moe = c.is_moe();
  // Evaluates `l` (its micro-batch set), whose memory is `memory`, under each recompute policy it
  // may use, in order of cost: its memory, rejected when over the HBM; the step model `step` is
  // built once the first policy fits (many layouts fit under none), unless given, and evaluates
  // that policy and each later one that fits. False when no policy fits.
  auto try_policies = [&](Layout& l, const LayoutDerivation& derived, const LayoutMemory& memory,
                          std::optional<LayoutStep>& step) {
    auto allowed = [&](Recompute r) {
      if (r == Recompute::kMoe && !moe) return false;
      if (l.offload_modules != 0 && r == Recompute::kFull) return false;
      return l.a2a_overlap == 0 || (r != Recompute::kFull && r != Recompute::kMoe);
    };
    const bool offloads = l.offload_modules != 0 || l.offload_layers > 0;
    auto fits = [&](Recompute r, MemoryBreakdown* mem) {
      l.recompute = r;
      if (l.mbs > 1 || r != Recompute::kNone || l.a2a_overlap > 0 || offloads) {
        ++result.evaluated;
      }
      *mem = memory.For(r);
      if (mem->peak_bytes <= capacity && mem->host_activation_bytes <= host_capacity) return true;
      ++result.rejected[static_cast<int>(RejectKind::kMemory)];
      result.least_memory_without_activations_bytes =
          std::min(result.least_memory_without_activations_bytes,
                   mem->peak_bytes - mem->activation_bytes);
      if (per_reason[static_cast<int>(RejectKind::kMemory)] < options.examples_per_reason) {
        ++per_reason[static_cast<int>(RejectKind::kMemory)];
        result.examples.push_back(
            {l, {RejectKind::kMemory,
                 fmt::format("peak memory <= HBM ({:.2f} GB > {:.2f} GB)", mem->peak_bytes / 1e9,
                             capacity / 1e9)}});
      }
      return false;
    };
    size_t first_fit = 0;
    MemoryBreakdown mem;
    for (; first_fit < std::size(kRecomputeByCost); ++first_fit) {
      const Recompute r = kRecomputeByCost[first_fit];
      if (allowed(r) && fits(r, &mem)) break;
    }
    if (first_fit == std::size(kRecomputeByCost)) return false;
    if (!step) step.emplace(model, cluster, l, job, shared, profile, derived);
    for (size_t i = first_fit; i < std::size(kRecomputeByCost); ++i) {
      const Recompute r = kRecomputeByCost[i];
      if (!allowed(r) || (i > first_fit && !fits(r, &mem))) continue;
      keep(l, step->Evaluate(r, &mem, nullptr));
    }
    return true;
  };
  // The same with the memory and step model of `l` built here (offload changes the memory).
  auto try_policies_anew = [&](Layout& l, const LayoutDerivation& derived) {
    const LayoutMemory memory(model, l, job, profile, derived);
    std::optional<LayoutStep> step;
    return try_policies(l, derived, memory, step);
  };
  // Module offload's variants, the least first: the experts' fc1 and activation inputs (the
  // largest of an MoE layer, as Megatron-MoE-ModelZoo's recipes offload them), then every module
  // the model has.
  const uint32_t all_modules =
      moe ? (1u << std::size(kOffloadModuleNames)) - 1
          : ((1u << std::size(kOffloadModuleNames)) - 1) & ~kMoeOffloadModules;
  std::vector<uint32_t> module_sets;
  if (moe) module_sets.push_back(kMoeOffloadModules);
  module_sets.push_back(all_modules);
  // `l`, which fits under no recompute policy, with the offload asked for; the offload fields
  // are left cleared.
  const bool offload = options.offload != OffloadSearch::kNone;
  auto try_offload = [&](Layout& l, const LayoutDerivation& derived) {
    bool fitted = false;
    if (options.offload == OffloadSearch::kModules) {
      for (uint32_t modules : module_sets) {
        l.offload_modules = modules;
        if (try_policies_anew(l, derived)) {
          fitted = true;
          break;
        }
      }
      l.offload_modules = 0;
    } else if (options.offload == OffloadSearch::kLayers) {
      const PipelineSplit& s = derived.split;
      l.offload_layers = std::max({s.first, s.middle, s.last});
      fitted = try_policies_anew(l, derived);
      l.offload_layers = 0;
    }
    return fitted;
  };
  // Progress: the share of the (tp, pp, cp, fsdp, etp, vpp) combinations that reach the step
  // model behind each (tp, pp) pair. Pairs that the first rules reject at once (tp·pp not
  // dividing the GPUs, tp past the domain or not dividing the heads, pp·vpp past the layers)
  // count for nothing, the wide ones (tp = pp = 1 holds most) for what they hold.
  std::vector<double> pair_work;
  double total_work = 0;
  if (options.progress) {
    for (int64_t tp : divisors) {
      const bool tp_ok = tp <= domain && c.heads % tp == 0;
      const double etps = static_cast<double>(std::ranges::count_if(divisors, [&](int64_t etp) {
        return etp <= tp && etp <= domain && (etp == 1 || c.is_moe());
      }));
      for (int64_t pp : divisors) {
        double work = 0;
        const double stage_splits = static_cast<double>(std::ranges::count_if(
            vpps, [&](int64_t vpp) { return (pp == 1 ? vpp == 1 : pp * vpp <= c.layers); }));
        if (tp_ok && N % (tp * pp) == 0) {
          for (int64_t cp : cps) {
            if (N % (tp * pp * cp) == 0) {
              work += static_cast<double>(Divisors(N / (tp * pp * cp)).size());
            }
          }
          work *= etps * stage_splits;
        }
        pair_work.push_back(work);
        total_work += work;
      }
    }
  }
  size_t pair = 0;
  double work_done = 0;
  // Each (pp, vpp, split kind)'s pipeline split, computed for the first layout that reaches the
  // step model.
  std::vector<std::optional<PipelineSplit>> splits(divisors.size() * vpps.size() * 2);
  // And the stages LayoutMemory compares for each, composed once (their layer mixes).
  std::vector<StageCompositions> stage_compositions(splits.size());
  const int64_t layer_passes = c.layers * c.loops;
  // The split of (pp, vpp, split kind) and its stage compositions, made on first use (a split
  // depends on the pipeline keys alone); its index in `splits`.
  auto split_index_of = [&](size_t pp_index, size_t vpp_index, int split_kind) {
    const size_t index = (pp_index * vpps.size() + vpp_index) * 2 + split_kind;
    std::optional<PipelineSplit>& split = splits[index];
    if (!split) {
      Layout pipeline{.pp = divisors[pp_index], .vpp = vpps[vpp_index]};
      pipeline.pp_embed = pipeline.pp_loss = split_kind;
      split = SplitPipeline(pipeline, c, model.layer_costs());
      stage_compositions[index] = ComposeStages(model, job, *split, pipeline.pp);
    }
    return index;
  };
  // Whether (pp, vpp)'s split with the embedding and the loss counted equals the default one.
  auto same_split = [&](size_t pp_index, size_t vpp_index) {
    return splits[split_index_of(pp_index, vpp_index, 0)] ==
           splits[split_index_of(pp_index, vpp_index, 1)];
  };
  for (int64_t tp : divisors) {
    for (size_t pp_index = 0; pp_index < divisors.size(); ++pp_index) {
      const int64_t pp = divisors[pp_index];
      if (options.progress) {
        if (work_done > 0 && work_done < total_work) {
          options.progress(work_done / total_work, result.evaluated);
        }
        work_done += pair_work[pair++];
      }
      if (N % (tp * pp) != 0) continue;
      for (int64_t cp : cps) {
        if (N % (tp * pp * cp) != 0) continue;
        const int64_t rest = N / (tp * pp * cp);
        for (int64_t fsdp : Divisors(rest)) {
          const int64_t dp = rest / fsdp;
          for (int64_t ep : experts) {
            for (int64_t etp : divisors) {
              // A dense model has no experts to split (CheckLayout refuses etp > 1 for it).
              if (etp > tp || (etp > 1 && !c.is_moe())) break;
              for (size_t vpp_index = 0; vpp_index < vpps.size(); ++vpp_index) {
                const int64_t vpp = vpps[vpp_index];
                if (pp == 1 && vpp > 1) break;
                // Besides the default split, the embedding and the loss counted as a layer each
                // (pp_embed=1,pp_loss=1, as Megatron-Bridge's recipes for Qwen3-235B and Llama
                // 3.1 405B split): it unloads the first and last ranks where pp·vpp divides the
                // layers with those two slots and not without them.
                const int64_t chunks_total = pp * vpp;
                const int split_kinds = pp > 1 && layer_passes % chunks_total != 0 &&
                                                (layer_passes + 2) % chunks_total == 0
                                            ? 2
                                            : 1;
                for (int split_kind = 0; split_kind < split_kinds; ++split_kind) {
                  // Counting the embedding and the loss may leave every rank what the default
                  // split gives it (pp 2: each rank one slot lighter either way): the same
                  // layout twice, not evaluated again.
                  if (split_kind == 1 && same_split(pp_index, vpp_index)) break;
                  for (int64_t chunk : chunks) {
                    Layout l{.tp = tp, .pp = pp, .vpp = vpp, .cp = cp, .dp = dp, .fsdp = fsdp,
                             .ep = ep, .etp = etp, .moe_chunk = chunk};
                    l.pp_embed = l.pp_loss = split_kind;
                    if (ep > 1) l.dispatch = options.dispatch;
                    // moe_chunk only matters for FSDP-sharded experts.
                    if (chunk > 1 && l.expert_fsdp() == 1) break;
                    ++result.evaluated;
                    // The rule's text only for the examples kept.
                    if (auto kind = LayoutRejectKind(l, c, shape, domain)) {
                      const int k = static_cast<int>(*kind);
                      ++result.rejected[k];
                      if (per_reason[k] < options.examples_per_reason) {
                        ++per_reason[k];
                        result.examples.push_back(
                            {l, std::move(*CheckLayout(l, c, shape, domain))});
                      }
                      continue;
                    }
                    for (int64_t mbs = 1; job.global_batch % (dp * fsdp * mbs) == 0; mbs *= 2) {
                      l.mbs = mbs;
                      // Interleaving needs a multiple of pp micro-batches; fewer (larger
                      // micro-batches) cannot regain it.
                      if (vpp > 1 && (job.global_batch / (dp * fsdp * mbs)) % pp != 0) {
                        if (mbs > 1) {
                          ++result.evaluated;
                          ++result.rejected[static_cast<int>(RejectKind::kIndivisible)];
                        }
                        break;
                      }
                      const size_t split_index = split_index_of(pp_index, vpp_index, split_kind);
                      LayoutDerivation derived = DeriveLayout(model, l, job, *splits[split_index]);
                      derived.compositions = &stage_compositions[split_index];
                      l.a2a_overlap = 0;
                      const LayoutMemory memory(model, l, job, profile, derived);
                      std::optional<LayoutStep> step;
                      // Larger micro-batches need more memory.
                      if (!try_policies(l, derived, memory, step) &&
                          !(offload && try_offload(l, derived))) {
                        break;
                      }
                      // Megatron-Core's EP all-to-all overlap, where the stack runs it and it
                      // can run (CheckLayout's rules: ep > 1, interleaving when pp > 1, no full or
                      // MoE recompute) and its schedule pairs a pass (otherwise it hides nothing
                      // more and holds more); its memory and step model are those above but for
                      // what the overlap changes.
                      if (profile.paired_a2a_overlap && ep > 1 && (pp == 1 || vpp > 1) &&
                          A2aOverlapPairedShare(pp, vpp, derived.micro_batches) > 0) {
                        l.a2a_overlap = 1;
                        std::optional<LayoutStep> overlap_step;
                        if (step) overlap_step.emplace(step->WithA2aOverlap());
                        if (!try_policies(l, derived, memory.WithA2aOverlap(), overlap_step) &&
                            offload) {
                          try_offload(l, derived);
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  if (options.progress) options.progress(1.0, result.evaluated);
  std::sort_heap(best.begin(), best.end(), better);
  // The dropped share is only computed for the reported candidates (it does not change speed).
  for (SearchCandidate& cand : best) {
    cand.estimate.dropped_fraction = LayoutDroppedFraction(model, cand.layout, job, drop);
  }
  return result;
}

}  // namespace mosaic
