#include "cli/commands/slurm_up.h"

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/listen_address.h"

namespace onset::cli {
namespace {

namespace fs = std::filesystem;

std::string Absolute(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

bool IsFile(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

}  // namespace

WorkerAccess ResolveWorkerAccess(const std::string& coordinator, const common::TokenSources& token,
                                 const std::string& tls_ca) {
  WorkerAccess access;
  access.coordinator = coordinator;
  const common::TokenSource source = common::ChooseTokenSource(token);
  switch (source.kind) {
    case common::TokenSource::Kind::kFlagFile:
      access.token_file = Absolute(source.file);
      access.drop_env_token = !token.env_token.empty();
      break;
    case common::TokenSource::Kind::kEnvToken:
      access.token_from_env = true;
      break;
    case common::TokenSource::Kind::kEnvTokenFile:
      access.token_file = Absolute(source.file);
      break;
    case common::TokenSource::Kind::kDefaultFile: {
      std::error_code ec;
      if (fs::exists(source.file, ec)) access.token_file = Absolute(source.file);
      break;
    }
    case common::TokenSource::Kind::kNone:
      break;
  }
  access.tls_ca = Absolute(tls_ca);
  return access;
}

int64_t QueuedCells(const v1::GetStudyResponse& study) {
  int64_t queued = 0;
  for (const v1::Cell& cell : study.cells()) {
    if (cell.state() != v1::CELL_STATE_QUEUED && cell.state() != v1::CELL_STATE_BACKOFF) continue;
    if (cell.waiting_for_trunk()) continue;
    ++queued;
  }
  return queued;
}

int ArraySize(int64_t queued, int cells_per_job, int max_jobs) {
  if (queued <= 0 || max_jobs <= 0) return 0;
  const int64_t per_job = std::max(cells_per_job, 1);
  return static_cast<int>(std::min<int64_t>(max_jobs, (queued + per_job - 1) / per_job));
}

absl::StatusOr<std::string> FindWorkerScript(const std::string& flag, const std::string& env,
                                             const std::string& executable) {
  if (!flag.empty()) {
    if (!IsFile(flag)) return absl::NotFoundError(absl::StrCat("--script: no file ", flag));
    return Absolute(flag);
  }
  if (!env.empty()) {
    if (!IsFile(env)) {
      return absl::NotFoundError(absl::StrCat("ONSET_SLURM_SCRIPT: no file ", env));
    }
    return Absolute(env);
  }
  std::vector<std::string> tried;
  if (!executable.empty()) {
    const fs::path dir = fs::path(Absolute(executable)).parent_path();
    for (const char* relative : {kBuildTreeScript, kInstalledScript}) {
      const std::string candidate = (dir / relative).lexically_normal().string();
      if (IsFile(candidate)) return candidate;
      tried.push_back(candidate);
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "no worker job script", tried.empty() ? "" : " at ", absl::StrJoin(tried, " or "),
      ": pass --script PATH or set ONSET_SLURM_SCRIPT (onset's source tree has it in "
      "deploy/slurm/onset-worker.sbatch)"));
}

SbatchPlan PlanSbatch(const SlurmUpOptions& options, int workers, const std::string& script,
                      const WorkerAccess& access) {
  SbatchPlan plan;
  plan.argv = {options.sbatch.empty() ? "sbatch" : options.sbatch, "--parsable",
               absl::StrCat("--array=0-", workers - 1),
               absl::StrCat("--job-name=onset-", options.study)};
  // The job script's #SBATCH lines ask for GPUs, which a CPU partition may not have at all.
  if (options.cpu) plan.argv.push_back("--gres=none");
  if (!options.partition.empty()) plan.argv.push_back("--partition=" + options.partition);
  plan.argv.insert(plan.argv.end(), options.sbatch_args.begin(), options.sbatch_args.end());
  plan.argv.push_back(script);

  plan.set["ONSET_COORDINATOR"] = access.coordinator;
  if (!access.token_file.empty()) {
    plan.set["ONSET_TOKEN_FILE"] = access.token_file;
  }
  if (access.drop_env_token) plan.unset.push_back("ONSET_TOKEN");
  if (!access.tls_ca.empty()) plan.set["ONSET_TLS_CA"] = access.tls_ca;
  if (!options.env_bin.empty()) {
    plan.set["ONSET_BIN"] = options.env_bin;
  } else if (!options.executable.empty()) {
    plan.set["ONSET_BIN"] = fs::path(Absolute(options.executable)).parent_path().string();
  }
  plan.set["ONSET_EXIT_WHEN_IDLE"] = std::to_string(options.exit_when_idle_s);
  if (options.cpu) plan.set["ONSET_DEVICES"] = "cpu";
  return plan;
}

bool IsLoopbackAddress(const std::string& address) {
  if (absl::StartsWith(address, "unix:")) return true;
  std::string target = address;
  if (absl::StartsWith(target, "dns:///")) target = target.substr(7);
  std::string host = common::HostOf(target);
  if (host.empty()) host = target;  // no port
  host = absl::AsciiStrToLower(host);
  // The wildcards reach this machine only, when a client dials them.
  return host == "0.0.0.0" || host == "[::]" || common::IsLoopbackHost(host);
}

absl::StatusOr<std::string> ParseJobId(const std::string& sbatch_output) {
  const std::string line(absl::StripAsciiWhitespace(sbatch_output));
  const std::string id = line.substr(0, line.find(';'));
  uint64_t number = 0;
  if (id.empty() || line.find('\n') != std::string::npos ||
      id.find_first_not_of("0123456789") != std::string::npos || !absl::SimpleAtoi(id, &number)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sbatch printed \"", line.substr(0, 200), "\", not a job id"));
  }
  return id;
}

std::string ShellCommand(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (const std::string& arg : argv) {
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyz"
                                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789-_=+/.,:@%") == std::string::npos;
    if (plain) {
      words.push_back(arg);
      continue;
    }
    std::string quoted = "'";
    for (char c : arg) {
      if (c == '\'') {
        quoted += "'\\''";
      } else {
        quoted += c;
      }
    }
    words.push_back(quoted + "'");
  }
  return absl::StrJoin(words, " ");
}

std::string DescribePlan(const SbatchPlan& plan, const WorkerAccess& access) {
  std::string text = absl::StrCat(ShellCommand(plan.argv), "\n");
  for (const auto& [name, value] : plan.set) {
    absl::StrAppend(&text, "  ", name, "=", ShellCommand({value}), "\n");
  }
  if (access.token_from_env) absl::StrAppend(&text, "  ONSET_TOKEN (passed on as it is set)\n");
  for (const std::string& name : plan.unset) {
    absl::StrAppend(&text, "  ", name, " removed (the token file comes first)\n");
  }
  return text;
}

}  // namespace onset::cli
