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
//   recompute  none | selective | modules | moe | full (Recompute below):
//        selective  Megatron's --recompute-granularity selective (core attention): with flash
//                   attention it frees only the softmax statistics and repeats the attention
//                   forward (Korthikanti et al. 2022's large saving is the s×s scores flash
//                   attention never stores)
//        modules    Megatron-Core's --recompute-modules for norms, activation functions and MLA
//                   up-projections, as Megatron-Bridge's recipes run: frees the norm outputs, the
//                   activation inputs of the FFNs and experts and the expanded MLA q/k/v, and
//                   repeats the up-projection GEMMs
//        moe        --recompute-modules layernorm moe: the norms and the whole MoE layer, only
//                   its input stored (MoE models only)
//        full       the whole layer, from its stored input
//   moe_chunk  expert weights gathered in this many sequential chunks (FSDP-sharded experts)
// Uneven pipeline stages, as Megatron-Core splits them (megatron/core/transformer/
// transformer_layer.py, get_transformer_layer_offset; megatron/core/transformer/
// transformer_block.py, get_num_layers_to_build):
//   pp_first  layers on the first pipeline stage (--decoder-first-pipeline-num-layers)
//   pp_last   layers on the last pipeline stage (--decoder-last-pipeline-num-layers); the other
//             layers are split evenly over the middle stages, and with vpp each stage's layers
//             evenly over its virtual chunks
//   pp_embed  1: the embedding counts as one layer in the split (--account-for-embedding-in-
//             pipeline-split), so the first virtual chunk of the first stage holds one layer less
//   pp_loss   1: the output layer and loss count as one layer (--account-for-loss-in-pipeline-
//             split), so the last virtual chunk of the last stage holds one layer less
//   DeepSeek-V3's 61 layers on 16 stages: pp_first=3,pp_last=2 (an embedding stage one layer
//   light, the MTP and loss stage two light); Qwen3-235B's 94 layers on pp=32,vpp=3:
//   pp_embed=1,pp_loss=1 (96 slots of one layer). Counts are layer passes (layers × loops).
//   pp_layout Megatron-Core's layout string (--pipeline-model-parallel-layout, as Megatron-Bridge's
//             DeepSeek-V3 recipes set pipeline_model_parallel_layout): one group of layers per
//             virtual stage, separated by '|', stage s on rank s mod pp as virtual chunk s / pp;
//             E the embedding, t a decoder layer, m an MTP layer, L the loss; "(…)*N" and "x*N"
//             repeat. DeepSeek-V3 on pp=8,vpp=4: pp_layout=Et|(tt|)*30mL (ranks 0-7 hold 7, 8, …,
//             8, 6 decoder layers; the MTP layer and the loss on rank 7). Megatron's commas are
//             cosmetic: "Et*3|(tt|)*29,m|L" may be written with or without them.
//   a2a_overlap  1: Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm,
//             as Megatron-Bridge's Qwen3 recipes on H100 and B200 set moe_a2a_overlap): the
//             forward of one micro-batch is merged with the backward of another, each one's
//             dispatch and combine hidden under the other's compute. Needs ep > 1, the
//             interleaved schedule when pp > 1, and no full or MoE-layer recompute.
//   dispatch  how the EP all-to-all crosses scale-up domains, where the profile's stack default
//             (PerfProfile::hierarchical_dispatch) is not what the run used:
//             flat          every copy of a token bound for an expert in another domain goes
//                           over the NIC (NCCL all-to-all: Megatron-Core's
//                           --moe-token-dispatcher-type alltoall, Megatron-Bridge's recipes on
//                           H100 for Qwen3-235B-A22B and on B200 for gpt-oss-120b)
//             hierarchical  each token crosses the NIC once per remote domain holding one of its
//                           experts and is forwarded over NVLink there (DeepEP, HybridEP:
//                           --moe-token-dispatcher-type flex)
//             Left out: the profile's. Needs an MoE model; it changes nothing where the EP
//             group (ep·etp ranks) fits in one scale-up domain, or at ep = 1 (Megatron-Core takes
//             the dispatcher flag there too).
//   offload_layers  N: the activations N layers of each pipeline rank keep for their backward
//             (what the recompute policy keeps: under full recompute the layer input) are held
//             in host memory, copied out during the forward and back during the backward beside
//             the compute: Megatron-Core's --cpu-offloading-num-layers (Transformer Engine's CPU
//             offload, transformer_engine/pytorch/cpu_offload.py) and MaxText's remat policies
//             that offload the decoder layer input to the host. A rank with fewer layers
//             offloads all of them. Needs a device file with host_link_gb_per_s and
//             host_memory_gb. Megatron-Core's layer offload itself refuses pp > 1 and activation
//             recompute (megatron/core/transformer/transformer_config.py); MaxText combines it
//             with recompute.
//   offload_modules  the modules whose inputs (what each keeps for its backward) are held in
//             host memory at every layer, joined by '+': Megatron-Core's fine-grained
//             activation offloading (--fine-grained-activation-offloading --offload-modules;
//             docs/source/api-guide/fine_grained_activation_offloading.md): attn_norm (the
//             layer input), qkv_linear (the normed input of the q/k/v projections), core_attn
//             (q, k and v), attn_proj (the attention output), mlp_norm (the attention block's
//             output), expert_fc1 (each routed token, as dispatched) and moe_act (the experts'
//             fc1 output). E.g. offload_modules=expert_fc1+moe_act. A module whose input the
//             recompute policy does not store offloads nothing (qkv_linear under modules or moe,
//             whose norms are recomputed; expert_fc1 and moe_act under moe). Needs an MoE
//             model for expert_fc1 and moe_act, a policy other than full, no offload_layers,
//             and the device's host link and memory.
// Rank order, innermost first: tp, cp, fsdp, dp, pp (experts: etp, ep, expert-dp, pp), so a group
// of the first k dimensions occupies consecutive ranks.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include "mosaic/hardware/hardware.h"
#include "mosaic/model/model_config.h"

namespace mosaic {

// Activation recompute, from least to most (Megatron-Core's --recompute-granularity and
// --recompute-modules):
//   kNone       every activation stored
//   kSelective  core attention recomputed (recompute_modules core_attn)
//   kModules    norms, the experts' activation function and MLA's up-projections recomputed
//               (layernorm, moe_act, mla_up_proj: Megatron-Bridge's MoE recipes)
//   kMoe        norms and the whole MoE layer recomputed, token dispatch included (layernorm,
//               moe): only the MoE layer's input is stored
//   kFull       every layer recomputed from its input (--recompute-granularity full)
enum class Recompute { kNone, kSelective, kModules, kMoe, kFull };
// "none", "selective", "modules", "moe", "full"
std::string_view ToString(Recompute recompute);
std::optional<Recompute> RecomputeFromString(std::string_view text);

// The EP all-to-all's path across scale-up domains (Layout::dispatch): the profile's stack default
// (PerfProfile::hierarchical_dispatch), or set for the run.
enum class Dispatch { kProfile, kFlat, kHierarchical };
// "profile", "flat", "hierarchical"
std::string_view ToString(Dispatch dispatch);
// "flat" or "hierarchical"; nullopt for anything else ("profile" is not written by users: a left
// out key means it).
std::optional<Dispatch> DispatchFromString(std::string_view text);
// The path `dispatch` takes (kFlat or kHierarchical): itself, or for kProfile the profile's
// default, kHierarchical when `profile_hierarchical` (PerfProfile::hierarchical_dispatch).
inline Dispatch ResolveDispatch(Dispatch dispatch, bool profile_hierarchical) {
  if (dispatch != Dispatch::kProfile) return dispatch;
  return profile_hierarchical ? Dispatch::kHierarchical : Dispatch::kFlat;
}

// The policies from the least extra compute to the most, the order in which "the least recompute
// that fits" tries them: module recompute repeats only memory-bound kernels (and MLA's
// up-projections) and frees more than selective, which repeats the attention forward to free
// only its softmax statistics under flash attention.
inline constexpr Recompute kRecomputeByCost[] = {Recompute::kNone, Recompute::kModules,
                                                 Recompute::kSelective, Recompute::kMoe,
                                                 Recompute::kFull};

// The modules of fine-grained activation offloading (Layout::offload_modules), one bit each, in
// Megatron-Core's order.
enum class OffloadModule : uint32_t {
  kAttnNorm = 1u << 0,
  kQkvLinear = 1u << 1,
  kCoreAttn = 1u << 2,
  kAttnProj = 1u << 3,
  kMlpNorm = 1u << 4,
  kExpertFc1 = 1u << 5,
  kMoeAct = 1u << 6,
};
// Megatron-Core's names: "attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm",
// "expert_fc1", "moe_act", in the order of the bits.
inline constexpr std::string_view kOffloadModuleNames[] = {
    "attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act"};
// The modules of the routed experts (no such input in a dense model, none stored under
// recompute=moe).
inline constexpr uint32_t kMoeOffloadModules = static_cast<uint32_t>(OffloadModule::kExpertFc1) |
                                               static_cast<uint32_t>(OffloadModule::kMoeAct);

// The names of the OffloadModule bits set in `modules`, in Megatron-Core's order, joined by '+'
// as the layout string writes them ("expert_fc1+moe_act"); "" for none.
std::string OffloadModulesText(uint32_t modules);

// The OffloadModule bits of `names`, Megatron-Core's --offload-modules names (kOffloadModuleNames)
// joined by '+', the spaces around each ignored: the inverse of OffloadModulesText. nullopt when
// one is not a module name or one is given twice; `why` (not null) then says which, as it follows
// a rule in an error: "(not 'fc2') (did you mean 'expert_fc1'?)", or "(moe_act is given twice;
// each module at most once)".
std::optional<uint32_t> ParseOffloadModuleNames(std::string_view names, std::string* why);

// The largest degree, and the largest GPU count, a layout string may give: 2^24, as `--gpus`.
inline constexpr int64_t kMaxLayoutDegree = int64_t{1} << 24;
// The longest pp_layout string (Megatron-Bridge's recipes use up to 20 characters).
inline constexpr size_t kMaxPpLayoutChars = 63;

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
  // The modules whose saved inputs are held in host memory at every layer: OffloadModule bits;
  // 0: none. (Beside `recompute`, in its padding.)
  uint32_t offload_modules = 0;
  int64_t moe_chunk = 1;
  int64_t pp_first = 0;  // 0: not set (Megatron's None)
  int64_t pp_last = 0;   // 0: not set
  int64_t pp_embed = 0;  // 0 or 1
  int64_t pp_loss = 0;   // 0 or 1
  // Megatron-Core's EP all-to-all overlap (overlap_moe_expert_parallel_comm): the forward of one
  // micro-batch runs beside the backward of another, each one's dispatch and combine hidden under
  // the other's compute. 0 or 1.
  int64_t a2a_overlap = 0;
  // The EP all-to-all's path across scale-up domains; kProfile: the profile's.
  Dispatch dispatch = Dispatch::kProfile;
  // Layers per pipeline rank whose saved activations are held in host memory; 0: none.
  int64_t offload_layers = 0;
  // Megatron-Core's pipeline layout string (--pipeline-model-parallel-layout), its cosmetic
  // commas removed, NUL-padded; empty = not set. See PipelineLayoutStages. A fixed array keeps
  // Layout trivially copyable (co-design sends layouts between MPI ranks as bytes).
  std::array<char, kMaxPpLayoutChars + 1> pp_layout{};
  std::string_view pp_layout_text() const { return std::string_view(pp_layout.data()); }

  int64_t gpus() const { return tp * pp * cp * dp * fsdp; }
  // Ranks of one pipeline stage that share the attention weights: tp·cp·dp·fsdp.
  int64_t stage_group() const { return tp * cp * dp * fsdp; }
  // Expert data parallel: replicas of each expert shard inside a stage, stage_group / (ep·etp).
  int64_t expert_dp() const { return stage_group() / (ep * etp); }
  // The FSDP shard count of the expert weights: with FSDP (fsdp > 1) each expert shard's
  // expert-data-parallel replicas split into dp groups of expert_dp / dp shards; 1 when there is
  // no FSDP, or the replicas do not split evenly or are none (ep·etp past the stage group: an
  // invalid layout), so the experts are not FSDP-sharded.
  int64_t expert_fsdp() const {
    const int64_t edp = expert_dp();
    return fsdp > 1 && edp > 0 && edp % dp == 0 ? edp / dp : 1;
  }
  int64_t data_parallel() const { return dp * fsdp; }
  // Whether the pipeline split is given explicitly (pp_first, pp_last, pp_embed, pp_loss or
  // pp_layout).
  bool explicit_split() const {
    return pp_first > 0 || pp_last > 0 || pp_embed > 0 || pp_loss > 0 || pp_layout[0] != '\0';
  }

  bool operator==(const Layout&) const = default;
};

// "tp=2,pp=8,vpp=4,ep=64,dp=64,mbs=1,recompute=selective" with every key, in the order above;
// pp_first, pp_last, pp_embed, pp_loss, a2a_overlap, dispatch, offload_layers and offload_modules
// are appended only when set. A degree of
// 0 stands for one left unknown and is written "?" (a measured row whose GPUs give no
// data-parallel size: "dp=?,fsdp=?").
std::string ToString(const Layout& layout);

// The relative cost of one dense-FFN layer pass, of one MoE layer pass and of one MTP layer (its
// projection and block), e.g. their forward FLOPs per token, which SplitPipeline uses to find the
// slowest rank. The default: every layer costs the same.
struct LayerCosts {
  double dense = 1;
  double moe = 1;
  double mtp = 1;
};

// The layer passes each pipeline rank holds (all its virtual chunks), for a layout that passes
// CheckLayout:
//   explicit first/last: rank 0 holds pp_first, rank pp−1 pp_last (when given), each other rank
//     (layers − pp_first − pp_last) / (pp − stages given);
//   pp_embed / pp_loss: (layers + pp_embed + pp_loss) / pp slots per rank, rank 0 one layer less
//     with pp_embed, rank pp−1 one less with pp_loss (Megatron-Core);
//   pp_layout: the decoder layers ('t') of each rank's virtual stages; `middle` is the rank
//     1 … pp−2 with the most decoder and MTP layers together, and the MTP layers are placed;
//   otherwise ceil(layers / (pp·vpp))·vpp on the heaviest rank and, when pp·vpp does not divide
//     the layers, the chunks one layer short on the first ranks (round-robin over the ranks;
//     with vpp = 1 as --decoder-first-pipeline-num-layers would place them).
struct PipelineSplit {
  int64_t first = 0;        // rank 0 (holds the embedding)
  int64_t middle = 0;       // the most any rank 1 … pp−2 holds (0 when pp <= 2)
  int64_t middle_rank = 1;  // the first such rank holding `middle`
  int64_t last = 0;         // rank pp−1 (holds the output layer); equals `first` when pp = 1
  int64_t total = 0;        // all layer passes
  // MTP layers on rank 0, rank `middle_rank` and rank pp−1 when pp_layout places them (its 'm');
  // without pp_layout, Megatron-Core builds them all on rank pp−1 (SplitPipeline with the model;
  // the layer-count overload leaves them unplaced, mtp_placed false, as with pp = 1).
  bool mtp_placed = false;
  int64_t first_mtp = 0, middle_mtp = 0, last_mtp = 0;
  // The MoE layer passes among rank 0's, rank `middle_rank`'s and rank pp−1's decoder layer
  // passes (filled by the overload taking the model; 0 from the one taking a layer count).
  int64_t first_moe = 0, middle_moe = 0, last_moe = 0;
  // The middle ranks that can hold the memory peak (filled by the overload taking the model): a
  // rank holds no more micro-batches than an earlier one, so only a rank holding more dense
  // layers, more MoE layers or more MTP layers than every earlier rank (rank 0 included) can;
  // with one layer kind, `middle_rank` when it holds more layers than rank 0. In rank order;
  // past kMaxPeakCandidates the first ones are kept.
  struct PeakCandidate {
    int64_t rank = 0, layers = 0, moe = 0, mtp = 0;
    bool operator==(const PeakCandidate&) const = default;
  };
  static constexpr int kMaxPeakCandidates = 2;
  std::array<PeakCandidate, kMaxPeakCandidates> peak_candidates{};
  int peak_candidate_count = 0;
  // The slowest of rank 0, the middle rank whose layers cost the most (LayerCosts; the first of
  // equals; `middle_rank` when every layer costs the same) and rank pp−1: the one whose layers
  // (and placed MTP layers) cost the most, of equals the one with the most MoE layers, then the
  // first; its decoder layer passes, placed MTP layers and MoE layer passes. Without costs (or
  // for a model of one layer kind) the cost is the layer count.
  int64_t slowest = 0, slowest_mtp = 0, slowest_moe = 0;
  // The mean cost of the other pp − 1 ranks' decoder layers over the slowest rank's (0 when
  // pp = 1): what the pipeline bubble scales by.
  double other_load_ratio = 0;
  int64_t slowest_rank = 0;
  // The ranks whose time can be the longest when more than LayerCosts counts is charged: rank 0,
  // the costliest middle rank (pp > 2) and rank pp−1 (pp > 1), in rank order (the slowest rank
  // among them), each with its decoder layer passes, MoE layer passes and placed MTP layers, and
  // the cost of its layers (MTP layers included) over the slowest rank's. Rank pp−1 also runs
  // the output layer (and its MTP layers' passes through it), and a MoE layer pass costs more
  // than its FLOPs (its all-to-all, host sync and expert kernels): the step model times each of
  // these ranks with them and takes the longest (LayoutStep::Evaluate, step_model.h).
  struct RankLoad {
    int64_t rank = 0, layers = 0, moe = 0, mtp = 0;
    double load_ratio = 1;
    // Its MoE layer passes with the MTP layers' routed experts (where they are placed: by
    // pp_layout, else on rank pp−1; spread with the layers when pp = 1, the same thing; 0 from
    // the layer-count overload).
    double moe_passes = 0;
    bool slowest_layers = false;  // it holds as many layers of each kind as the slowest rank
    bool is_last = false;         // rank pp−1 (pp > 1)
    bool operator==(const RankLoad&) const = default;
  };
  static constexpr int kMaxRankLoads = 3;
  std::array<RankLoad, kMaxRankLoads> rank_loads{};
  int rank_load_count = 0;
  // The MoE layer passes of all ranks, with the MTP layers' routed experts (0 from the
  // layer-count overload).
  int64_t total_moe = 0;
  // Rank pp−1's entry of rank_loads (pp > 1).
  const RankLoad& last_rank_load() const { return rank_loads[rank_load_count - 1]; }
  // Whether the slowest rank is rank pp−1 (pp > 1).
  bool slowest_is_last() const {
    return rank_load_count > 0 && last_rank_load().is_last && last_rank_load().rank == slowest_rank;
  }
  // Every field equal: the step model, which reads a layout's stages only through its split,
  // times two layouts with equal splits alike.
  bool operator==(const PipelineSplit&) const = default;
};

// (This overload counts no MoE layers and ranks the stages by layer count.)
PipelineSplit SplitPipeline(const Layout& layout, int64_t layer_passes);
// The same for `model`'s layers × loops layer passes, with the MoE layers each rank holds. Layer
// pass p runs layer p mod layers; the virtual stages hold consecutive passes in pipeline order
// (virtual stage j on rank j mod pp, as Megatron-Core's interleaved schedule places model chunks:
// megatron/core/transformer/transformer_block.py, get_num_layers_to_build and the layer offset),
// each rank's layers split evenly over its vpp chunks; with pp_embed / pp_loss the embedding
// takes a layer's slot in the first virtual stage and the loss one in the last; one layer short
// chunks are the first virtual stages. Among the ranks 1 … pp−2 holding `middle` layer passes
// (with their MTP layers when placed), `middle_rank` is the first holding the most MoE layers:
// the one with the most parameters. The costliest middle rank weighs each rank's layers by
// `costs` (an MTP layer as a MoE layer when the model's last layer is MoE). The model must pass
// Validate and the layout CheckLayout.
PipelineSplit SplitPipeline(const Layout& layout, const ModelConfig& model, LayerCosts costs = {});

// One virtual stage of a pipeline layout string: its embedding, decoder, MTP and loss layers.
struct PipelineLayoutStage {
  int64_t embedding = 0, decoder = 0, mtp = 0, loss = 0;
  bool operator==(const PipelineLayoutStage&) const = default;
};

// The virtual stages of Megatron-Core's layout string, as parse_str_to_list in
// megatron/core/transformer/pipeline_parallel_layer_layout.py reads it: commas removed, each
// "(group)*N" repeated N times (groups do not nest), then each "x*N", then split at '|'; the
// characters E, t, m, L. Throws InputError naming the text and the rule: an unknown character, a
// nested or unclosed group, a group without "*N", or more than 2^20 characters once repeated.
std::vector<PipelineLayoutStage> PipelineLayoutStages(std::string_view text);

// Megatron-Core's layout string (pp_layout's grammar) of the split SplitPipeline makes without an
// explicit one where pp·vpp does not divide the `layer_passes`: one layer short virtual stages
// first, then full ones; the embedding in the first, the loss in the last, and `mtp_layers` MTP
// layers before the loss (on the last stage, where Megatron-Core builds them without a string and
// SplitPipeline places them). Megatron-Core runs such a split only through
// --pipeline-model-parallel-layout.
// E.g. 94 layers on pp 8 × vpp 3: "Et*3|t*3|(t*4|)*21t*4L". Empty where pp = 1, where pp·vpp
// divides the passes, where the split is explicit (Layout::explicit_split), or where the string
// would be longer than kMaxPpLayoutChars.
std::string EvenSplitPipelineLayout(const Layout& layout, int64_t layer_passes,
                                    int64_t mtp_layers);

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

// What kind of rule a layout breaks, for the search's rejection counts: a degree that does not
// divide what it splits; a group larger than its interconnect domain; a peak over the HBM; or a
// combination of options the framework does not run (e.g. vpp > 1 with pp = 1, a2a_overlap
// without expert parallelism, a pp_layout string that does not match the model).
enum class RejectKind { kIndivisible, kDomain, kMemory, kUnsupported };
inline constexpr int kRejectKinds = 4;
// "does not divide", "exceeds a domain", "out of memory", "not supported"
std::string_view ToString(RejectKind kind);

struct LayoutViolation {
  RejectKind kind = RejectKind::kIndivisible;
  std::string rule;  // e.g. "tp·pp·cp·dp·fsdp = GPUs (2·1·1·1·1 = 2 != 64)"
};

// Checks the layout against the model and the job; returns the first broken rule:
//   tp·pp·cp·dp·fsdp = GPUs;  tp divides heads and the KV heads of every layer kind (Megatron-Core
//   splits the query groups over tp, never replicates them);
//   ep divides experts (ep = 1 for a dense model);  ep·etp divides tp·cp·dp·fsdp;
//   etp divides the expert width;  moe_chunk divides experts / ep;  recompute=moe only with MoE
//   layers;  pp·vpp <= layers (without an explicit split);  vpp = 1 when pp = 1;  with cp > 1,
//   2·cp divides seq_len (Megatron-Core's load-balanced causal split into 2·cp chunks);  tp
//   divides seq_len / cp (sequence-parallel activations);  dp·fsdp·mbs divides global_batch;
//   with vpp > 1, pp divides the micro-batches per pipeline, global_batch / (dp·fsdp·mbs) (Megatron-Core's interleaved 1F1B
//   refuses other counts);
//   tp <= the scale-up domain (`domain_gpus`; kind kDomain);  etp <= the scale-up domain.
//   Uneven stages: pp_first/pp_last and pp_embed/pp_loss need pp > 1 and exclude each other (as in
//   Megatron-Core); pp_first + pp_last < layers with the rest divisible by the middle stages (0
//   layers when there are none); with vpp, pp_first, pp_last and each middle stage's count
//   divisible by vpp; with pp_embed/pp_loss, pp·vpp divides layers + pp_embed + pp_loss.
//   a2a_overlap: MoE with ep > 1, vpp > 1 when pp > 1, recompute neither full nor moe
//   (megatron/core/transformer/transformer_config.py, __post_init__).
//   dispatch: an MoE model.
//   offload_layers <= the layer passes of the heaviest pipeline rank.
//   offload_modules: no offload_layers, recompute not full, routed experts for expert_fc1 and
//   moe_act.
//   pp_layout (validate_layer_layout in pipeline_parallel_layer_layout.py): pp divides its
//   stages and vpp = stages / pp; E first and once, L last and once; as many t as layers × loops
//   and as many m as MTP layers, each in its rank's last virtual stage; excludes pp_first,
//   pp_last, pp_embed and pp_loss.
//   cp may span nodes (ring attention over the scale-out network); tp·cp is not bounded.
std::optional<LayoutViolation> CheckLayout(const Layout& layout, const ModelConfig& model,
                                           const JobShape& job, int64_t domain_gpus);
// CheckLayout's verdict without the rule's text: the kind of the first rule `layout` breaks, or
// nullopt (the layout search's test of each layout it enumerates, most of which fail).
std::optional<RejectKind> LayoutRejectKind(const Layout& layout, const ModelConfig& model,
                                           const JobShape& job, int64_t domain_gpus);
// The same on a device (its domain_gpus), and activation offload's need of it: offload_layers
// and offload_modules need a device that gives host_link_gb_per_s and host_memory_gb
// (kUnsupported).
std::optional<LayoutViolation> CheckLayout(const Layout& layout, const ModelConfig& model,
                                           const JobShape& job, const HardwareSpec& device);

}  // namespace mosaic
