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

// The flags of `onset-train` (training one cell), as the worker passes them; each takes a value
// ("--flag value" or "--flag=value") but --resume. model/training/train_flags.h says what they do.
inline constexpr const char* kFlagConfig = "--config";         // the cell's JSON
inline constexpr const char* kFlagMetricsFd = "--metrics-fd";  // metrics_line.h's lines
inline constexpr const char* kFlagCheckpointDir = "--checkpoint-dir";
inline constexpr const char* kFlagResume = "--resume";  // no value
inline constexpr const char* kFlagDevice = "--device";  // auto, cpu or cuda
inline constexpr const char* kFlagThreads = "--threads";
inline constexpr const char* kFlagNproc = "--nproc";               // ranks on this machine
inline constexpr const char* kFlagDistTimeout = "--dist-timeout";  // seconds
inline constexpr const char* kFlagAttentionBackend = "--attention-backend";
// A WSD branch (model/config/wsd_trunk.h): the trunk checkpoint file the cell starts from when
// it has no checkpoint of its own to resume.
inline constexpr const char* kFlagBranchFrom = "--branch-from";
// A checkpoint file the run may resume from; given several times, the first that is intact and
// of this run is taken, in the order given (the worker names the newest first). It reports where
// it resumed with a "resume" event, at 0 tokens when it could use none of them and starts over.
inline constexpr const char* kFlagResumeFrom = "--resume-from";
// A descriptor whose other end the supervising worker holds: when it reports hang-up (the worker
// died, whatever killed it) the trainer kills its process group at once. What it would write
// since is not recorded by anyone.
inline constexpr const char* kFlagSupervisorFd = "--supervisor-fd";
// What the worker writes on that descriptor, one line each: "recorded TOKENS" once the
// coordinator has recorded the checkpoint at TOKENS. A trainer so supervised deletes (prunes) no
// checkpoint at or past the newest recorded one (none at all before the first): that is the one
// the next attempt of the cell resumes, whatever this one does after it lost its lease.
inline constexpr const char* kSupervisorRecorded = "recorded";

// The descriptors the worker hands the trainer (its own copies are closed): the attempt's
// trainer lock (worker/trainer_lock.h), which the trainer and its ranks hold by inheriting it,
// and the trainer's end of the supervisor socket (kFlagSupervisorFd).
inline constexpr int kTrainerLockFd = 3;
inline constexpr int kSupervisorFd = 4;

}  // namespace onset::trainer
