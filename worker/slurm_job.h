// The Slurm job a worker runs in, read from the environment Slurm gives every job step, so that
// `onset workers` can say which batch job each worker is.
#pragma once

#include <functional>
#include <string>

namespace onset::worker {

// Looks an environment variable up: its value, or nullptr when it is not set.
using EnvLookup = std::function<const char*(const char* name)>;

// "ARRAYJOBID_TASKID" (e.g. "1234_5") for a task of a job array (SLURM_ARRAY_JOB_ID and
// SLURM_ARRAY_TASK_ID), else "JOBID" (SLURM_JOB_ID), else "" (not in a Slurm job). A value that
// is not a job id (empty, not all digits, more than 20 of them) is passed over as if unset.
std::string SlurmJobFromEnvironment(const EnvLookup& getenv);

}  // namespace onset::worker
