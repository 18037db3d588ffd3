// The exit codes of `onset`, one meaning each across subcommands (docs/cli.md lists them).
#pragma once

namespace onset::cli {

inline constexpr int kExitOk = 0;
// It could not be done: the coordinator is unreachable, the study or cell is unknown, a file
// cannot be read.
inline constexpr int kExitFailure = 1;
// Bad input: a bad flag or study file, or a submission that would change stored cells.
inline constexpr int kExitBadInput = 2;
// `onset run` and `onset watch`: the study ended, but some cells failed or were cancelled
// (diverged cells are results, not failures).
inline constexpr int kExitCellsFailed = 3;
// Interrupted by SIGINT/SIGTERM (128 + SIGINT, as shells report it).
inline constexpr int kExitInterrupted = 130;

}  // namespace onset::cli
