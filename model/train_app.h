// onset-train as a function: flags -> config -> device -> Trainer -> exit code. train_main.cc
// only calls TrainMain. `onset-train export ...` and `onset-train dump-logits ...` go to
// ExportMain (export_app.h), `onset-train prepare ...` to PrepareMain (prepare_app.h).
#pragma once

namespace onset::model {

// Exit codes of onset-train.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;  // anything that went wrong while running
inline constexpr int kExitUsage = 2;         // bad flags, unreadable or invalid config
inline constexpr int kExitDiverged = 3;      // a NaN or infinite training loss
inline constexpr int kExitStopped = 4;       // asked to stop (SIGTERM/SIGINT): checkpointed

int TrainMain(int argc, char** argv);

}  // namespace onset::model
