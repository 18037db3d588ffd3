// onset-train, the trainer program. Its subcommands live with their concepts:
//   onset-train [train flags]            trains one cell (model/training/train_app.h)
//   onset-train export|dump-logits ...   exports a checkpoint (model/export/export_app.h)
//   onset-train prepare ...              tokenises a corpus (model/data/prepare_app.h)
// Exit codes and flags are the contract in base/trainer_contract.h, the metrics line in
// base/metrics_line.h.
#include <csignal>

#include "model/data/prepare_app.h"
#include "model/export/export_app.h"
#include "model/training/heap_reuse.h"
#include "model/training/train_app.h"

int main(int argc, char** argv) {
  // A closed metrics pipe must surface as a write error (exit 1), not kill us silently.
  std::signal(SIGPIPE, SIG_IGN);
  // Each step's tensors reuse the last step's memory instead of faulting in fresh pages.
  onset::model::KeepFreedMemory();
  if (onset::model::IsExportCommand(argc, argv)) return onset::model::ExportMain(argc, argv);
  if (onset::model::IsPrepareCommand(argc, argv)) return onset::model::PrepareMain(argc, argv);
  return onset::model::TrainMain(argc, argv);
}
