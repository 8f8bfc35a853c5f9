// The co-design sweep over many processes with MPI: `mpirun -n N mosaic codesign SPACE.toml`
// gives each rank a contiguous share of the architectures, evaluates it (with the rank's own
// threads) and gathers every result on rank 0, which summarizes and prints. The output is
// byte-identical to a single-process run. Without MPI (built without it, or not started by an MPI
// launcher) the session has one rank and the sweep runs locally.
#pragma once

#include <optional>

#include "mosaic/codesign/codesign.h"

namespace mosaic {

// True when mosaic was built with MPI.
bool BuiltWithMpi();

// MPI for the lifetime of the object: initialised only when the process was started by an MPI
// launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK in the environment) and mosaic was built
// with MPI; finalised on destruction.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool active() const { return active_; }

 private:
  int rank_ = 0;
  int size_ = 1;
  bool active_ = false;
};

// Collective: every rank of the session calls it once, at the same point, with whether it failed.
// Returns the lowest rank that failed, or -1 when none did. With one rank (no MPI): 0 when
// `failed`, else -1.
int LowestFailingRank(const MpiSession& session, bool failed);

// The sweep sharded over the session's ranks: the result on rank 0, nullopt on the others.
// With one rank it is RunCodesign. `options.progress` is called on rank 0 only, for its own
// share (done, size of the share). Before sweeping, the ranks compare SpaceFingerprint with rank
// 0's: when one differs, rank 0 throws InputError naming the lowest such rank and the others
// return nullopt, so that no rank's results are mixed into another space's.
std::optional<CodesignResult> RunCodesignDistributed(const SpaceConfig& space,
                                                     const CodesignOptions& options,
                                                     const MpiSession& session);

// A 64-bit FNV-1a hash of what a sweep's results depend on: the space's names (base, hardware,
// law, search options), numbers (GPUs, budget, law parameters, search bounds) and every
// architecture it enumerates, byte for byte.
uint64_t SpaceFingerprint(const SpaceConfig& space, const std::vector<Architecture>& architectures);

// The evaluated part of results (not the losses, which Summarize computes) as bytes and back;
// exact (doubles bit for bit). Used to gather results over MPI; DecodeResults throws
// InputError on a malformed buffer.
std::string EncodeResults(const std::vector<ArchitectureResult>& results, size_t begin, size_t end);
void DecodeResults(std::string_view bytes, std::vector<ArchitectureResult>& out, size_t begin);

}  // namespace mosaic
