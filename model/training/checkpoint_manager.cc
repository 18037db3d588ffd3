#include "model/training/checkpoint_manager.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "model/training/stop_request.h"
#include "model/training/trunk_progress.h"

namespace onset::model {

CheckpointManager::CheckpointManager(std::string dir, const CellConfig& config,
                                     int64_t tokens_per_step, const at::Device& device)
    : dir_(std::move(dir)),
      config_(config),
      device_(device),
      every_(config.train.resolved_checkpoint_every_tokens()) {
  for (int64_t at : config.train.keep_checkpoints_at) {
    pinned_.insert((at + tokens_per_step - 1) / tokens_per_step * tokens_per_step);
  }
  ScheduleAfter(0);
}

void CheckpointManager::ServeTrunk(const std::vector<int64_t>& branch_points,
                                   const std::vector<int64_t>& eval_at) {
  pinned_.insert(branch_points.begin(), branch_points.end());
  trunk_ = true;
  trunk_evals_ = eval_at;
  match_ = ConfigMatch::kStablePhase;
}

ProgressCheck CheckpointManager::OwnCheck(const std::string& path) const {
  if (!trunk_) return nullptr;
  return [this, path](TrainProgress* p) { return TrunkResumeRefusal(path, trunk_evals_, *p); };
}

void CheckpointManager::ScheduleAfter(int64_t tokens) {
  next_ = (tokens / every_ + 1) * every_;  // the first multiple of every_ beyond tokens
}

bool CheckpointManager::Due(int64_t tokens, bool last) const {
  return tokens >= next_ || pinned_.count(tokens) > 0 || last;
}

std::optional<CheckpointManager::Saved> CheckpointManager::Save(
    const TrainProgress& progress, const torch::nn::Module& model,
    const torch::optim::Optimizer& optimizer) {
  if (dir_.empty()) return std::nullopt;
  const auto t0 = std::chrono::steady_clock::now();
  Saved saved;
  saved.path = dir_ + "/" + CheckpointFileName(progress.tokens);
  saved.bytes = SaveCheckpoint(dir_, config_, progress, model, optimizer, device_);
  // Under a worker, a checkpoint goes only once a newer one is recorded by the coordinator: the
  // newest recorded one is what the next attempt resumes (stop_request.h).
  PruneCheckpoints(dir_, config_.train.keep_checkpoints, pinned_,
                   KeepCheckpointsFrom().value_or(std::numeric_limits<int64_t>::max()));
  saved.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return saved;
}

CheckpointManager::Resumed CheckpointManager::Resume(DataParallel& parallel,
                                                     torch::nn::Module* model,
                                                     torch::optim::Optimizer* optimizer,
                                                     const StartFrom& from) {
  Resumed resumed;
  bool branched = false;
  int named = -1;  // which of from.files it loaded
  if (parallel.lead()) {
    const bool say_fresh = from.branch_from.empty();
    if (!from.files.empty()) {
      resumed = LoadFirstOf(from.files, model, optimizer, say_fresh, &named);
    } else if (from.own) {
      resumed = LoadNewest(model, optimizer, say_fresh);
    }
    if (!resumed.error && !resumed.progress && !from.branch_from.empty()) {
      resumed = LoadBranch(from.branch_from, model, optimizer);
      branched = true;
    }
  }
  if (!parallel.distributed()) return resumed;

  // Rank 0 alone looks through the files, skipping damaged ones; the others load the file it
  // settled on (its own, a named one or the trunk's), so ranks cannot settle on different ones.
  enum Decision : int64_t { kFresh = 0, kLoaded = 1, kRefused = 2, kBranched = 3, kNamed = 4 };
  const int64_t decision = resumed.error       ? kRefused
                           : !resumed.progress ? kFresh
                           : branched          ? kBranched
                           : named >= 0        ? kNamed
                                               : kLoaded;
  const int64_t chosen = named >= 0 ? named : resumed.progress ? resumed.progress->tokens : -1;
  const std::vector<int64_t> message = parallel.FromLead({decision, chosen});
  if (!parallel.lead()) {
    switch (message[0]) {
      case kRefused:
        resumed.error = "rank 0 could not resume (its message says why)";
        break;
      case kLoaded:
        resumed = LoadFrom(dir_ + "/" + CheckpointFileName(message[1]), model, optimizer);
        break;
      case kNamed:
        if (message[1] >= 0 && message[1] < static_cast<int64_t>(from.files.size())) {
          resumed = LoadFrom(from.files[message[1]], model, optimizer);
        } else {
          resumed.error = "rank 0 chose a checkpoint this rank was not given";
        }
        break;
      case kBranched:
        resumed = LoadBranch(from.branch_from, model, optimizer);
        break;
      default:
        break;
    }
  }
  // Go on only if every rank restored the same state.
  const bool any_failed = parallel.AnyRank(resumed.error.has_value());
  if (any_failed && !resumed.error) {
    resumed.error =
        "another rank could not load the checkpoint rank 0 chose (its message says why)";
  }
  return resumed;
}

CheckpointManager::Resumed CheckpointManager::LoadNewest(torch::nn::Module* model,
                                                         torch::optim::Optimizer* optimizer,
                                                         bool say_fresh) {
  const std::vector<CheckpointFile> files = ListCheckpoints(dir_);
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    TrainProgress p;
    auto error = LoadCheckpoint(it->path, config_, device_, &p, model, optimizer, match_,
                                OwnCheck(it->path));
    if (error && error->kind == CheckpointError::Kind::kOtherConfig) {
      return {std::nullopt, {}, error->message};
    }
    if (error) {
      std::fprintf(stderr, "onset-train: %s, skipping\n", error->message.c_str());
      continue;
    }
    std::fprintf(stderr, "onset-train: resuming from %s at %lld tokens (step %lld)\n",
                 it->path.c_str(), static_cast<long long>(p.tokens),
                 static_cast<long long>(p.steps));
    return {std::move(p), it->path, std::nullopt};
  }
  std::fprintf(stderr, "onset-train: no valid checkpoint in %s%s\n",
               dir_.empty() ? "(no checkpoint directory)" : dir_.c_str(),
               say_fresh ? ", starting fresh" : "");
  return {};
}

CheckpointManager::Resumed CheckpointManager::LoadFirstOf(const std::vector<std::string>& files,
                                                          torch::nn::Module* model,
                                                          torch::optim::Optimizer* optimizer,
                                                          bool say_fresh, int* index) {
  *index = -1;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i];
    if (::access(path.c_str(), R_OK) != 0) {
      std::fprintf(stderr, "onset-train: %s cannot be read (%s), skipping\n", path.c_str(),
                   std::strerror(errno));
      continue;
    }
    TrainProgress p;
    auto error =
        LoadCheckpoint(path, config_, device_, &p, model, optimizer, match_, OwnCheck(path));
    if (error && error->kind == CheckpointError::Kind::kOtherConfig) {
      return {std::nullopt, {}, error->message};
    }
    if (error) {
      std::fprintf(stderr, "onset-train: %s, skipping\n", error->message.c_str());
      continue;
    }
    std::fprintf(stderr, "onset-train: resuming from %s at %lld tokens (step %lld)\n", path.c_str(),
                 static_cast<long long>(p.tokens), static_cast<long long>(p.steps));
    *index = static_cast<int>(i);
    return {std::move(p), path, std::nullopt};
  }
  std::fprintf(stderr, "onset-train: none of the %zu checkpoints named could be resumed%s\n",
               files.size(), say_fresh ? ", starting over" : "");
  return {};
}

CheckpointManager::Resumed CheckpointManager::LoadFrom(const std::string& path,
                                                       torch::nn::Module* model,
                                                       torch::optim::Optimizer* optimizer) {
  TrainProgress p;
  auto error = LoadCheckpoint(path, config_, device_, &p, model, optimizer, match_, OwnCheck(path));
  if (error) return {std::nullopt, {}, error->message};
  return {std::move(p), path, std::nullopt};
}

CheckpointManager::Resumed CheckpointManager::LoadBranch(const std::string& path,
                                                         torch::nn::Module* model,
                                                         torch::optim::Optimizer* optimizer) {
  if (auto refusal = BranchRefusal(path, config_)) return {std::nullopt, {}, *refusal};
  TrainProgress p;
  // Damaged or missing is an error too: a branch never starts afresh in its trunk's stead.
  auto error = LoadCheckpoint(
      path, config_, device_, &p, model, optimizer, ConfigMatch::kStablePhase,
      [&](TrainProgress* progress) { return AdoptTrunkProgress(path, config_, progress); });
  if (error) return {std::nullopt, {}, error->message};
  std::fprintf(stderr, "onset-train: branching from %s at %lld tokens (step %lld)\n", path.c_str(),
               static_cast<long long>(p.tokens), static_cast<long long>(p.steps));
  return {std::move(p), path, std::nullopt};
}

}  // namespace onset::model
