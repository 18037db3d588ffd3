// The train command of onset-train as a function: flags -> config -> device -> Trainer -> exit
// code (base/trainer_contract.h). model/train_main.cc routes `onset-train export|dump-logits`
// to ExportMain (model/export/export_app.h), `onset-train prepare` to PrepareMain
// (model/data/prepare_app.h) and everything else here.
#pragma once

namespace onset::model {

int TrainMain(int argc, char** argv);

}  // namespace onset::model
