#include "job_place.h"

#include <array>
#include <cstdint>

namespace cutriage::agent {
namespace {

struct Launcher {
  std::string_view rank;
  std::string_view local_rank;  // empty: the launcher has none
  std::string_view world_size;
};

// torchrun first: under Slurm or mpirun it sets RANK per worker process, while SLURM_PROCID and
// the OMPI variables then number the launcher's own tasks (often one per host), not the workers.
constexpr std::array<Launcher, 4> kLaunchers = {{
    {"RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
    {"PMI_RANK", "", "PMI_SIZE"},
}};

std::optional<uint32_t> parse_count(const std::optional<std::string>& value) {
  if (!value || value->empty()) return std::nullopt;
  uint64_t n = 0;
  for (const char c : *value) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
    if (n > UINT32_MAX) return std::nullopt;
  }
  return static_cast<uint32_t>(n);
}

}  // namespace

std::optional<wire::JobPlace> job_place_from(const EnvLookup& getenv) {
  if (!getenv) return std::nullopt;
  for (const Launcher& l : kLaunchers) {
    const std::optional<uint32_t> rank = parse_count(getenv(l.rank));
    if (!rank) continue;
    wire::JobPlace place;
    place.rank = *rank;
    place.rank_variable = std::string(l.rank);
    if (const std::optional<uint32_t> size = parse_count(getenv(l.world_size)); size && *size > *rank) {
      place.world_size = *size;
    }
    if (!l.local_rank.empty()) {
      if (const std::optional<uint32_t> local = parse_count(getenv(l.local_rank))) {
        place.local_rank = *local;
        place.has_local_rank = true;
      }
    }
    return place;
  }
  return std::nullopt;
}

}  // namespace cutriage::agent
