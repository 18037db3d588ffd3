// A request to stop training early and cleanly: SIGTERM (a worker handing its job back, a
// preempted cluster job) or SIGINT. The trainer polls it between steps, writes a checkpoint and
// exits with trainer::kExitStopped, so the run resumes later exactly where it stopped. Torch-free.
#pragma once

namespace onset::model {

// Routes SIGTERM and SIGINT to the request flag (async-signal-safe). A second signal while the
// first is being handled is ignored: the checkpoint in progress is the point of stopping.
void InstallStopHandlers();

bool StopRequested();
void RequestStop();       // what the handlers do; tests call it
void ClearStopRequest();  // tests

}  // namespace onset::model
