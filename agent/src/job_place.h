// The process's place in a distributed job, read from its launcher's environment for the session
// header (SessionHeader.job), so that `cutriage report rank*.pb` can read one job's files as its
// ranks. The launchers and their order are the schema's (proto/cutriage/v1/cutriage.proto,
// JobPlace); docs/multi-gpu.md lists them for users.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "cutriage/wire/records.h"

namespace cutriage::agent {

// One environment variable's value; nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// The place named by the first launcher whose rank variable holds a non-negative decimal integer
// (digits only, at most 2^32 - 1); nullopt when none does. A local rank or world size that is not
// such a number is left unknown, and so is a world size not above the rank: a half-read place
// still names the rank, which is what joins the files of a job.
std::optional<wire::JobPlace> job_place_from(const EnvLookup& getenv);

}  // namespace cutriage::agent
