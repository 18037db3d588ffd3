#include "worker/slurm_job.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace onset::worker {
namespace {

// The variable's value when it is a Slurm id: 1 to 20 digits.
std::optional<std::string> Id(const EnvLookup& getenv, const char* name) {
  const char* value = getenv(name);
  if (value == nullptr) return std::nullopt;
  const std::string id = value;
  if (id.empty() || id.size() > 20) return std::nullopt;
  if (!std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  return id;
}

}  // namespace

std::string SlurmJobFromEnvironment(const EnvLookup& getenv) {
  const std::optional<std::string> array = Id(getenv, "SLURM_ARRAY_JOB_ID");
  const std::optional<std::string> task = Id(getenv, "SLURM_ARRAY_TASK_ID");
  if (array && task) return *array + "_" + *task;
  return Id(getenv, "SLURM_JOB_ID").value_or("");
}

}  // namespace onset::worker
