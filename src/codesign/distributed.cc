#include "mosaic/codesign/distributed.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#ifdef MOSAIC_HAVE_MPI
#include <mpi.h>
#endif

#include "mosaic/util/error.h"

namespace mosaic {

bool BuiltWithMpi() {
#ifdef MOSAIC_HAVE_MPI
  return true;
#else
  return false;
#endif
}

MpiSession::MpiSession() {
#ifdef MOSAIC_HAVE_MPI
  const bool launched = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
                        std::getenv("PMI_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
  if (!launched) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  active_ = true;
#endif
}

MpiSession::~MpiSession() {
#ifdef MOSAIC_HAVE_MPI
  if (active_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
#endif
}

namespace {

static_assert(std::is_trivially_copyable_v<Architecture>);
static_assert(std::is_trivially_copyable_v<Layout>);
static_assert(std::is_trivially_copyable_v<StepEstimate>);

template <typename T>
void Put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
T Take(std::string_view& in) {
  if (in.size() < sizeof(T)) throw InputError("truncated co-design results");
  T value;
  std::memcpy(&value, in.data(), sizeof(T));
  in.remove_prefix(sizeof(T));
  return value;
}

// FNV-1a over bytes, chained.
uint64_t Fnv1a(std::string_view bytes, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace

uint64_t SpaceFingerprint(const SpaceConfig& space, const std::vector<Architecture>& architectures) {
  std::string text;
  for (const std::string* field : {&space.name, &space.base, &space.hardware, &space.law.name,
                                   &space.search.profile, &space.search.format,
                                   &space.search.routing}) {
    text += *field;
    text += '\0';
  }
  for (const auto& [name, value] : space.law.params) {
    text += name;
    Put(text, value);
  }
  Put(text, space.gpus);
  Put(text, space.budget.gpu_hours);
  Put(text, space.budget.days);
  Put(text, space.budget.model_flops);
  Put(text, space.budget.reference_mfu);
  Put(text, space.search.capacity_factor);
  Put(text, space.search.batch_seqs);
  Put(text, space.search.seq_len);
  Put(text, space.search.max_cp);
  Put(text, space.search.max_vpp);
  for (const Architecture& a : architectures) Put(text, a);
  return Fnv1a(text);
}

std::string EncodeResults(const std::vector<ArchitectureResult>& results, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    const ArchitectureResult& r = results[i];
    Put(out, r.arch);
    Put(out, static_cast<int32_t>(r.rejected));
    Put(out, static_cast<uint64_t>(r.rule.size()));
    out += r.rule;
    Put(out, r.active_params);
    Put(out, r.total_params);
    Put(out, r.sparsity);
    Put(out, r.granularity);
    Put(out, r.model_flops_per_token);
    Put(out, r.layout);
    Put(out, r.estimate);
    Put(out, r.layouts_evaluated);
  }
  return out;
}

void DecodeResults(std::string_view in, std::vector<ArchitectureResult>& out, size_t begin) {
  for (size_t i = begin; !in.empty(); ++i) {
    if (i >= out.size()) throw InputError("more co-design results than architectures");
    ArchitectureResult& r = out[i];
    r.arch = Take<Architecture>(in);
    r.rejected = static_cast<ArchRejection>(Take<int32_t>(in));
    const uint64_t length = Take<uint64_t>(in);
    if (in.size() < length) throw InputError("truncated co-design results");
    r.rule.assign(in.substr(0, length));
    in.remove_prefix(length);
    r.active_params = Take<int64_t>(in);
    r.total_params = Take<int64_t>(in);
    r.sparsity = Take<double>(in);
    r.granularity = Take<double>(in);
    r.model_flops_per_token = Take<double>(in);
    r.layout = Take<Layout>(in);
    r.estimate = Take<StepEstimate>(in);
    r.layouts_evaluated = Take<int64_t>(in);
  }
}

int LowestFailingRank(const MpiSession& session, bool failed) {
#ifdef MOSAIC_HAVE_MPI
  if (session.size() > 1) {
    // The minimum over ranks of (rank if failed, else size): size when none failed.
    const int mine = failed ? session.rank() : session.size();
    int lowest = mine;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return lowest < session.size() ? lowest : -1;
  }
#endif
  (void)session;
  return failed ? 0 : -1;
}

std::optional<CodesignResult> RunCodesignDistributed(const SpaceConfig& space,
                                                     const CodesignOptions& options,
                                                     const MpiSession& session) {
  if (session.size() <= 1) return RunCodesign(space, options);
#ifdef MOSAIC_HAVE_MPI
  const std::vector<Architecture> all = EnumerateArchitectures(space);
  // Every rank sweeps its share of rank 0's space: a rank that loaded another (a file edited
  // during the launch, or another file on its node) would mix its results into rank 0's.
  uint64_t fingerprint = SpaceFingerprint(space, all);
  const uint64_t mine_fingerprint = fingerprint;
  MPI_Bcast(&fingerprint, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  const int differing = LowestFailingRank(session, mine_fingerprint != fingerprint);
  if (differing >= 0) {
    if (session.rank() != 0) return std::nullopt;
    throw InputError(fmt::format("rank {} of {} loaded another space than rank 0's ({}: {} "
                                 "architectures). Violated constraint: every rank sweeps the same "
                                 "space (the same file, unchanged during the launch)",
                                 differing, session.size(), space.origin, all.size()));
  }
  const auto context = PrepareSweep(space);
  std::vector<ArchitectureResult> out(all.size());
  const size_t n = all.size(), size = size_t(session.size()), rank = size_t(session.rank());
  const auto share_begin = [&](size_t r) { return n * r / size; };
  const size_t begin = share_begin(rank), end = share_begin(rank + 1);
  // Only rank 0 shows its progress: the ranks share one terminal.
  CodesignOptions share;
  share.threads = options.threads;
  if (rank == 0) share.progress = options.progress;
  EvaluateShare(*context, all, begin, end, share, out);
  const std::string mine = EncodeResults(out, begin, end);
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size), offsets(size);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string gathered;
  if (rank == 0) {
    size_t total = 0;
    for (size_t r = 0; r < size; ++r) {
      offsets[r] = static_cast<int>(total);
      total += size_t(lengths[r]);
    }
    gathered.resize(total);
  }
  MPI_Gatherv(mine.data(), length, MPI_CHAR, gathered.data(), lengths.data(), offsets.data(),
              MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank != 0) return std::nullopt;
  for (size_t r = 1; r < size; ++r) {
    DecodeResults(std::string_view(gathered).substr(size_t(offsets[r]), size_t(lengths[r])), out,
                  share_begin(r));
  }
  return Summarize(space, std::move(out));
#else
  return RunCodesign(space, options);
#endif
}

}  // namespace mosaic
