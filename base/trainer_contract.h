// The contract between onset-train and the programs that start it (the worker, which runs it
// and relays what it says, and the coordinator, which classifies how an attempt ended). One
// definition, read by both sides, so that they cannot drift apart.
#pragma once

namespace onset::trainer {

// onset-train's exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;  // anything that went wrong while running
inline constexpr int kExitUsage = 2;         // bad flags, unreadable or invalid config
inline constexpr int kExitDiverged = 3;      // a NaN or infinite training loss
inline constexpr int kExitStopped = 4;       // asked to stop (SIGTERM/SIGINT): checkpointed

}  // namespace onset::trainer
