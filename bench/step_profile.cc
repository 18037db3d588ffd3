// Where a training step's time goes: onset-train's own loop (model::Trainer) on a cell config,
// timed by the profiler scopes the trainer and the model open (step/data, step/forward with
// forward/mixer X, forward/mlp and forward/logits inside, step/backward, step/clip,
// step/optimizer, eval). Only those scopes are observed, so the run costs what it costs
// without the profile.
//
//   onset-step-profile --config CELL.json [--threads 1] [--tokens N] [--keep-eval] [--ops N]
//                      [--composite] [--default-malloc] [--attention-backend NAME]
//
// --composite runs the composite ATen forms instead of the fused CPU kernels (fused_cpu_ops.h),
// the control of what they save; --default-malloc leaves glibc's allocator as it is (heap_reuse.h:
// onset-train keeps freed memory for the next step); --attention-backend picks the F and S layers'
// attention as onset-train's flag does (sdpa-band: LibTorch's SDPA, the control of the tiled
// kernel). --ops N adds the N ATen operators (forward and
// backward) with the most self time in the training steps: each operator's time less that of the
// operators it called. Observing every operator costs time of its own, so the scope table of an
// --ops run reads slower. prints, per scope, its milliseconds per step and its share of the
// training wall time; the config's evaluations but the last and its checkpoints are switched off
// unless --keep-eval. The model's scopes count training steps only (an evaluation's forwards are in
// "eval").
#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "model/config/cell_config.h"
#include "model/nn/attention_backend.h"
#include "model/nn/fused_cpu_ops.h"
#include "model/training/heap_reuse.h"
#include "model/training/metrics_writer.h"
#include "model/training/trainer.h"

namespace {

using Clock = std::chrono::steady_clock;

struct ScopeStart : at::ObserverContext {
  Clock::time_point at;
};

std::mutex totals_mutex;
std::map<std::string, double> totals;  // scope -> seconds

// Operators: self seconds by name, from a stack of the open operators' child time.
struct OpStart : at::ObserverContext {
  Clock::time_point at;
  double children = 0;
};
std::map<std::string, double> op_self;  // operator -> self seconds
std::map<std::string, int64_t> op_calls;
thread_local std::vector<OpStart*> op_stack;

// Inside an evaluation, the model's scopes are the evaluation's, counted in "eval" alone.
thread_local bool in_eval = false;

std::unique_ptr<at::ObserverContext> OnEnter(const at::RecordFunction& fn) {
  const bool eval = std::string_view(fn.name()) == "eval";
  if (in_eval && !eval) return nullptr;
  in_eval = in_eval || eval;
  auto start = std::make_unique<ScopeStart>();
  start->at = Clock::now();
  return start;
}

void OnExit(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (context == nullptr) return;
  if (std::string_view(fn.name()) == "eval") in_eval = false;
  const double seconds =
      std::chrono::duration<double>(Clock::now() - static_cast<ScopeStart*>(context)->at).count();
  std::lock_guard<std::mutex> lock(totals_mutex);
  totals[fn.name()] += seconds;
}

std::unique_ptr<at::ObserverContext> OnOpEnter(const at::RecordFunction&) {
  if (in_eval) return nullptr;
  auto start = std::make_unique<OpStart>();
  start->at = Clock::now();
  op_stack.push_back(start.get());
  return start;
}

void OnOpExit(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (context == nullptr) return;
  auto* start = static_cast<OpStart*>(context);
  const double seconds = std::chrono::duration<double>(Clock::now() - start->at).count();
  if (!op_stack.empty() && op_stack.back() == start) op_stack.pop_back();
  if (!op_stack.empty()) op_stack.back()->children += seconds;
  std::lock_guard<std::mutex> lock(totals_mutex);
  op_self[fn.name()] += seconds - start->children;
  op_calls[fn.name()] += 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Where a training step's time goes, by the trainer's profiler scopes");
  std::string config_path;
  int threads = 1;
  int64_t tokens = 0;
  bool keep_eval = false;
  int ops = 0;
  bool composite = false;
  bool default_malloc = false;
  std::string attention = "auto";
  app.add_option("--config", config_path, "a cell config (JSON), e.g. a cell's config.json")
      ->required();
  app.add_option("--threads", threads, "intra-op threads")->check(CLI::PositiveNumber);
  app.add_option("--tokens", tokens, "train this many tokens instead of the config's");
  app.add_flag("--keep-eval", keep_eval, "keep the config's evaluation and checkpoints");
  app.add_option("--ops", ops, "also list the N operators with the most self time");
  app.add_flag("--composite", composite, "the composite ATen forms, not the fused CPU kernels");
  app.add_flag("--default-malloc", default_malloc,
               "leave glibc's thresholds as they are (onset-train keeps freed memory)");
  app.add_option("--attention-backend", attention,
                 "F and S layers' attention: " + onset::model::AttentionBackendNames())
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const auto backend = onset::model::ParseAttentionBackend(attention);
  if (!backend) {
    std::fprintf(stderr, "--attention-backend: unknown '%s' (one of %s)\n", attention.c_str(),
                 onset::model::AttentionBackendNames().c_str());
    return 2;
  }
  if (auto why = onset::model::AttentionBackendUnavailable(*backend, at::Device(at::kCPU))) {
    std::fprintf(stderr, "--attention-backend %s: %s\n", attention.c_str(), why->c_str());
    return 2;
  }

  std::ifstream in(config_path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::fprintf(stderr, "--config: %s is not JSON\n", config_path.c_str());
    return 2;
  }
  if (tokens > 0) {
    j["train"]["tokens"] = tokens;
    const int64_t warmup = j["train"].value("warmup_tokens", int64_t{0});
    if (warmup >= tokens) j["train"]["warmup_tokens"] = tokens / 10;
  }
  if (!keep_eval) {  // one evaluation, at the end (a run always ends with one)
    j["eval"]["log_points"] = 0;
    j["eval"]["every_tokens"] = j["train"].value("tokens", int64_t{0});
    j["train"]["checkpoint_every_tokens"] = 0;
  }
  onset::model::CellConfig cell;
  if (auto error = onset::model::ParseCellConfig(j, &cell)) {
    std::fprintf(stderr, "--config: %s\n", error->ToString().c_str());
    return 2;
  }
  at::set_num_threads(threads);
  onset::model::SetFusedCpuOps(!composite);
  onset::model::SetAttentionBackend(*backend);
  if (!default_malloc) onset::model::KeepFreedMemory();  // as onset-train does
  at::addGlobalCallback(at::RecordFunctionCallback(OnEnter, OnExit)
                            .scopes({at::RecordScope::USER_SCOPE})
                            .needsInputs(false)
                            .needsOutputs(false));
  if (ops > 0) {
    at::addGlobalCallback(
        at::RecordFunctionCallback(OnOpEnter, OnOpExit)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION})
            .needsInputs(false)
            .needsOutputs(false));
  }
  onset::model::MemorySink sink;
  onset::model::Trainer trainer(cell, at::kCPU, &sink);
  const auto t0 = Clock::now();
  const onset::model::TrainResult result = trainer.Run();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const int64_t steps = static_cast<int64_t>(result.step_losses.size());
  if (steps == 0) {
    std::fprintf(stderr, "no step was trained\n");
    return 1;
  }
  std::printf(
      "%s %s d_model=%d T=%d micro_batch=%d, %lld steps of %lld tokens, %d thread(s), "
      "%s, attention %s: %.1f s, %.0f tokens/s\n",
      cell.model.arch.c_str(), cell.model.pattern.c_str(), cell.model.d_model, cell.model.seq_len,
      cell.train.micro_batch, static_cast<long long>(steps),
      static_cast<long long>(cell.train.batch_tokens), threads,
      composite ? (default_malloc ? "composite ops, default malloc" : "composite ops")
                : (default_malloc ? "fused CPU ops, default malloc" : "fused CPU ops"),
      attention.c_str(), wall, static_cast<double>(steps * cell.train.batch_tokens) / wall);
  std::printf("| scope | ms/step | share |\n|---|---|---|\n");
  double outer = 0;
  for (const auto& [name, seconds] : totals) {
    const bool nested = name.rfind("forward/", 0) == 0;
    if (!nested) outer += seconds;
    std::printf("| %s%s | %.3f | %.1f%% |\n", nested ? "  " : "", name.c_str(),
                1e3 * seconds / steps, 100 * seconds / wall);
  }
  std::printf("| other (loop, reports, schedule) | %.3f | %.1f%% |\n", 1e3 * (wall - outer) / steps,
              100 * (wall - outer) / wall);
  if (ops > 0) {
    std::vector<std::pair<double, std::string>> ranked;
    for (const auto& [name, seconds] : op_self) ranked.emplace_back(seconds, name);
    std::sort(ranked.rbegin(), ranked.rend());
    std::printf("\n| operator (self time) | ms/step | calls/step | share |\n|---|---|---|---|\n");
    for (int i = 0; i < ops && i < static_cast<int>(ranked.size()); ++i) {
      const auto& [seconds, name] = ranked[i];
      std::printf("| %s | %.3f | %.1f | %.1f%% |\n", name.c_str(), 1e3 * seconds / steps,
                  static_cast<double>(op_calls[name]) / steps, 100 * seconds / wall);
    }
  }
  return 0;
}
