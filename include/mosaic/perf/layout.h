// A parallel layout of a training job, written "tp=1,pp=1,ep=64,fsdp=64,mbs=16" (a missing key is
// 1; recompute defaults to none):
//   tp   tensor parallel (sequence parallel activations), inside a scale-up domain
//   pp   pipeline stages (1F1B; uneven stages allowed: 61 layers on 16 stages)
//   vpp  virtual stages per pipeline rank (interleaved 1F1B)
//   cp   context parallel (the sequence split over cp ranks)
//   dp   replicated data parallel with ZeRO-1 (optimizer states sharded over dp)
//   fsdp fully sharded data parallel (weights, gradients, optimizer states); with dp it is hybrid:
//        sharded inside an fsdp group, replicated across the dp groups
//   ep, etp  expert parallel and expert tensor parallel, folded over the attention's tp·cp·dp·fsdp
//        ranks as in Megatron-Core's MoE parallel folding (arXiv 2504.14960): ep·etp divides it
//   mbs  micro-batch in sequences
//   recompute  none | selective | modules | full:
//        selective  Megatron's --recompute-granularity selective (core attention): with flash
//                   attention it frees only the softmax statistics and repeats the attention
//                   forward (Korthikanti et al. 2022's large saving is the s×s scores flash
//                   attention never stores)
//        modules    Megatron-Core's --recompute-modules for norms, activation functions and MLA
//                   up-projections, as Megatron-Bridge's recipes run: frees the norm outputs, the
//                   activation inputs of the FFNs and experts and the expanded MLA q/k/v, and
//                   repeats the up-projection GEMMs
//        full       the whole layer, from its stored input
//   moe_chunk  expert weights gathered in this many sequential chunks (FSDP-sharded experts)
// Rank order, innermost first: tp, cp, fsdp, dp, pp (experts: etp, ep, expert-dp, pp), so a group
// of the first k dimensions occupies consecutive ranks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mosaic/model/model_config.h"

namespace mosaic {

enum class Recompute { kNone, kSelective, kModules, kFull };
// "none", "selective", "modules", "full"
std::string_view ToString(Recompute recompute);
std::optional<Recompute> RecomputeFromString(std::string_view text);

// The largest degree, and the largest GPU count, a layout string may give: 2^24, as `--gpus`.
inline constexpr int64_t kMaxLayoutDegree = int64_t{1} << 24;

struct Layout {
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t vpp = 1;
  int64_t cp = 1;
  int64_t dp = 1;
  int64_t fsdp = 1;
  int64_t ep = 1;
  int64_t etp = 1;
  int64_t mbs = 1;
  Recompute recompute = Recompute::kNone;
  int64_t moe_chunk = 1;

  int64_t gpus() const { return tp * pp * cp * dp * fsdp; }
  // Ranks of one pipeline stage that share the attention weights: tp·cp·dp·fsdp.
  int64_t stage_group() const { return tp * cp * dp * fsdp; }
  // Expert data parallel: replicas of each expert shard inside a stage, stage_group / (ep·etp).
  int64_t expert_dp() const { return stage_group() / (ep * etp); }
  int64_t data_parallel() const { return dp * fsdp; }

  bool operator==(const Layout&) const = default;
};

// "tp=2,pp=8,vpp=4,ep=64,dp=64,mbs=1,recompute=selective" with every key, in the order above.
std::string ToString(const Layout& layout);

// Parses "key=value,key=value" (spaces around items are ignored). Throws InputError naming the
// key and the rule: unknown key (did you mean), a value that is not a positive integer, an unknown
// recompute policy, a repeated key, a degree above kMaxLayoutDegree or a layout of more GPUs
// (tp·pp·cp·dp·fsdp) than that; messages open with `label` and the text ("--layout tp=0: ...").
// Within these bounds every product of the layout's degrees fits in 64 bits.
Layout ParseLayout(std::string_view text, std::string_view label = "--layout");

// The job a layout runs: batch and sequence length.
struct JobShape {
  int64_t gpus = 0;
  int64_t global_batch = 0;  // sequences per optimizer step
  int64_t seq_len = 0;       // tokens per sequence
};

// What kind of rule a layout breaks, for the search's rejection counts.
enum class RejectKind { kIndivisible, kDomain, kMemory };
std::string_view ToString(RejectKind kind);  // "does not divide", "exceeds a domain", "out of memory"

struct LayoutViolation {
  RejectKind kind = RejectKind::kIndivisible;
  std::string rule;  // e.g. "tp·pp·cp·dp·fsdp = GPUs (2·1·1·1·1 = 2 != 64)"
};

// Checks the layout against the model and the job; returns the first broken rule:
//   tp·pp·cp·dp·fsdp = GPUs;  tp divides heads;  tp divides kv heads or kv heads divide tp;
//   ep divides experts (ep = 1 for a dense model);  ep·etp divides tp·cp·dp·fsdp;
//   etp divides the expert width;  moe_chunk divides experts / ep;  pp·vpp <= layers;  vpp = 1 when
//   pp = 1;  cp divides seq_len;  dp·fsdp·mbs divides global_batch;  with vpp > 1, pp divides the
//   micro-batches per pipeline, global_batch / (dp·fsdp·mbs) (Megatron-Core's interleaved 1F1B
//   refuses other counts);
//   tp <= the scale-up domain (`domain_gpus`; kind kDomain);  etp <= the scale-up domain.
std::optional<LayoutViolation> CheckLayout(const Layout& layout, const ModelConfig& model,
                                           const JobShape& job, int64_t domain_gpus);

}  // namespace mosaic
