// onset-train: trains one cell described by a resolved cell config (JSON) and writes metrics
// as JSON lines. See train_app.h for the exit codes and metrics_writer.h for the protocol.
#include "model/train_app.h"

int main(int argc, char** argv) { return onset::model::TrainMain(argc, argv); }
