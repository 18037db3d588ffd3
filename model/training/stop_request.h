// A request to stop training early and cleanly: SIGTERM (a worker handing its job back, a
// preempted cluster job) or SIGINT. The trainer polls it between steps, writes a checkpoint and
// exits with trainer::kExitStopped, so the run resumes later exactly where it stopped. Torch-free.
#pragma once

#include <cstdint>
#include <optional>

namespace onset::model {

// Routes SIGTERM and SIGINT to the request flag (async-signal-safe). A second signal while the
// first is being handled is ignored: the checkpoint in progress is the point of stopping.
void InstallStopHandlers();

// Watches `fd`, one end of a socket (or pipe) whose other end the trainer's supervisor holds
// (onset-train --supervisor-fd), on a thread of its own: once it reports hang-up (the supervisor
// died, however it was killed) the process group is killed at once (the trainer leads its own
// group, so its ranks go too) or, when this process does not lead one, the process exits. Nothing
// it would write meanwhile is recorded by anyone, so there is nothing to save.
//
// With `read_acknowledgements` (the one process of a run that writes checkpoints; the others
// only watch for the hang-up, since its bytes reach one reader) it also reads the lines the
// supervisor writes: "recorded TOKENS" once the coordinator has recorded the checkpoint at
// TOKENS (base/trainer_contract.h kSupervisorRecorded).
void DieWithSupervisor(int fd, bool read_acknowledgements);

// Which checkpoints pruning must keep: nullopt when no supervisor watches (prune as configured);
// else those at the returned tokens or more: the newest checkpoint the coordinator recorded (0
// while none is: keep them all), which is what the next attempt of the cell would resume.
std::optional<int64_t> KeepCheckpointsFrom();

bool StopRequested();
void RequestStop();       // what the handlers do; tests call it
void ClearStopRequest();  // tests

}  // namespace onset::model
