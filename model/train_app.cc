#include "model/train_app.h"

#include <fcntl.h>

#include <csignal>
#include <cstdio>
#include <exception>

#include <ATen/Parallel.h>
#if __has_include(<ATen/cuda/CUDAContext.h>)
#include <ATen/cuda/CUDAContext.h>
#define ONSET_HAVE_ATEN_CUDA 1
#endif
#include <torch/cuda.h>

#include "model/export_app.h"
#include "model/flops.h"
#include "model/metrics_writer.h"
#include "model/prepare_app.h"
#include "model/train_flags.h"
#include "model/trainer.h"

namespace onset::model {

int TrainMain(int argc, char** argv) {
  // A closed metrics pipe must surface as a write error (exit 1), not kill us silently.
  std::signal(SIGPIPE, SIG_IGN);
  if (IsExportCommand(argc, argv)) return ExportMain(argc, argv);
  if (IsPrepareCommand(argc, argv)) return PrepareMain(argc, argv);

  TrainFlags flags;
  if (auto error = ParseTrainFlags(argc, argv, &flags)) {
    std::fprintf(stderr, "onset-train: %s\n%s\n", error->c_str(), kTrainUsage);
    return kExitUsage;
  }
  if (flags.help) {
    std::fprintf(stdout, "%s\n", kTrainUsage);
    return kExitOk;
  }
  if (::fcntl(flags.metrics_fd, F_GETFD) == -1) {
    std::fprintf(stderr, "onset-train: --metrics-fd %d: not an open file descriptor\n",
                 flags.metrics_fd);
    return kExitUsage;
  }
  CellConfig config;
  if (auto error = LoadCellConfig(flags.config_path, &config)) {
    std::fprintf(stderr, "onset-train: %s\n", error->c_str());
    return kExitUsage;
  }

  try {
    const bool cuda = torch::cuda::is_available();
    if (flags.device == "cuda" && !cuda) {
      std::fprintf(stderr, "onset-train: --device cuda: no CUDA device is available\n");
      return kExitUsage;
    }
    const at::Device device = (flags.device != "cpu" && cuda) ? at::kCUDA : at::kCPU;
    const int threads = flags.threads.value_or(config.train.threads);
    if (threads > 0) at::set_num_threads(threads);

    JsonLinesSink sink(flags.metrics_fd);
    Trainer trainer(config, device, &sink, flags.checkpoint_dir);
#ifdef ONSET_HAVE_ATEN_CUDA
    if (device.is_cuda()) {
      const std::string name = at::cuda::getCurrentDeviceProperties()->name;
      if (std::optional<double> peak = PeakBf16Flops(name)) {
        trainer.set_peak_flops(*peak);
      } else {
        std::fprintf(stderr, "onset-train: no published bf16 peak for %s: no MFU\n", name.c_str());
      }
    }
#endif
    if (flags.resume) {
      if (auto error = trainer.Resume()) {
        std::fprintf(stderr, "onset-train: %s\n", error->c_str());
        return kExitUsage;
      }
    }
    TrainResult result = trainer.Run();
    return result.outcome == TrainOutcome::kDiverged ? kExitDiverged : kExitOk;
  } catch (const DataError& e) {
    std::fprintf(stderr, "onset-train: %s: %s\n", flags.config_path.c_str(), e.what());
    return kExitUsage;
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "onset-train: %s: %s\n", flags.config_path.c_str(),
                 e.what_without_backtrace());
    return kExitRuntimeError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onset-train: %s: %s\n", flags.config_path.c_str(), e.what());
    return kExitRuntimeError;
  }
}

}  // namespace onset::model
